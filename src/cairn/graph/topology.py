"""Topology on unique endpoint pairs (spec §9): hops, paths, centrality, communities, bridges.

Every algorithm here sees a *pair view* of a ``SemanticGraph``: each unique endpoint pair
once, never each fact or occurrence, so a pair backed by five facts and twenty
occurrences weighs exactly what a pair backed by one fact weighs (weight 1.0 always).

- **Arcs** (directed view): one arc ``s -> t`` per pair from ``graph.endpoint_pairs``; a
  pair carrying an undirected fact is an arc both ways. Self-loops are kept as arcs.
- **Links** (undirected simple view): each unordered pair ``{a, b}`` with ``a != b`` once.
  Communities and bridges run on links.
- **Relation filter**: with ``relations``, a pair is present when at least one of its
  facts has an allowed relation; each endpoint is still one node, visited once.

Determinism: node indices follow sorted node IDs and arcs/links are added in sorted
order, so results (floats included) do not depend on insertion order or
``PYTHONHASHSEED``. Returned mappings are keyed in node-ID order. Randomised steps
(betweenness pivots, Leiden) take explicit seeds with named defaults.

``to_networkx`` is for interchange only: it is fact-keyed (one edge per fact), not the
pair view the algorithms use.
"""

from __future__ import annotations

import math
import random
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

import graspologic_native as gn
import networkx as nx
import numpy as np
import numpy.typing as npt
import rustworkx as rx

from cairn.arrays import distinct
from cairn.canonical import fits_float
from cairn.errors import BudgetExceededError, ValidationError
from cairn.graph.model import Direction, SemanticFact
from cairn.graph.multigraph import SemanticGraph

__all__ = [
    "DEFAULT_BETWEENNESS_SAMPLES",
    "DEFAULT_BETWEENNESS_SEED",
    "DEFAULT_COMMUNITY_RESOLUTION",
    "DEFAULT_COMMUNITY_SEED",
    "EXACT_BETWEENNESS_MAX_NODES",
    "LEIDEN_ITERATIONS",
    "LEIDEN_RANDOMNESS",
    "LEIDEN_TRIALS",
    "MIN_BETWEENNESS_SAMPLES",
    "PAGERANK_DAMPING",
    "PAGERANK_MAX_ITERATIONS",
    "PAGERANK_TOLERANCE",
    "PAIR_WEIGHT",
    "TRAVERSAL_DIRECTIONS",
    "PairDegree",
    "TraversalDirection",
    "betweenness",
    "bridges",
    "communities",
    "degree",
    "pagerank",
    "shortest_hops",
    "shortest_path",
    "to_networkx",
]

PAIR_WEIGHT = 1.0
"""The weight of every endpoint pair; never a count of facts or occurrences."""

EXACT_BETWEENNESS_MAX_NODES = 5_000
"""Betweenness is exact (all sources) up to this many nodes, sampled above it."""
DEFAULT_BETWEENNESS_SAMPLES = 256
"""Source pivots drawn when betweenness is sampled."""
MIN_BETWEENNESS_SAMPLES = 2
"""The sampled estimator rescales source pivots by ``1 / (k - 1)``, so ``k >= 2``."""
DEFAULT_BETWEENNESS_SEED = 0
"""Seed of the pivot sample."""

PAGERANK_DAMPING = 0.85
PAGERANK_TOLERANCE = 1e-6
PAGERANK_MAX_ITERATIONS = 100

DEFAULT_COMMUNITY_SEED = 0
DEFAULT_COMMUNITY_RESOLUTION = 1.0
LEIDEN_RANDOMNESS = 0.001
LEIDEN_ITERATIONS = 1
LEIDEN_TRIALS = 1

_MAX_SEED = 2**64 - 1
_SEQUENTIAL_ONLY = 2**62
"""``parallel_threshold`` that keeps rustworkx sequential: parallel sums reorder floats."""

TraversalDirection = Literal["out", "in", "both"]
TRAVERSAL_DIRECTIONS: tuple[TraversalDirection, ...] = ("out", "in", "both")
_REVERSED: dict[TraversalDirection, TraversalDirection] = {
    "out": "in",
    "in": "out",
    "both": "both",
}

_IntArray = npt.NDArray[np.int64]
_FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class PairDegree:
    """A node's degrees counted over unique endpoint pairs, never over facts."""

    in_degree: int
    """Distinct nodes with an arc into this node (a self-loop counts once)."""
    out_degree: int
    """Distinct nodes this node has an arc to (a self-loop counts once)."""
    neighbour_count: int
    """Distinct other nodes joined to this node in either direction."""


@dataclass(frozen=True, slots=True)
class _PairView:
    """Sorted node IDs plus integer arcs and links over them (see module docstring)."""

    nodes: tuple[str, ...]
    index: dict[str, int]
    arcs: tuple[tuple[int, int], ...]
    links: tuple[tuple[int, int], ...]


# ------------------------------------------------------------------ validation
def _check_relations(
    graph: SemanticGraph, relations: Iterable[str] | None
) -> frozenset[str] | None:
    if relations is None:
        return None
    if isinstance(relations, str):
        raise ValidationError("relations must be an iterable of relation names, not one string")
    wanted = frozenset(relations)
    unknown = sorted(name for name in wanted if name not in graph.registry)
    if unknown:
        raise ValidationError(
            f"unregistered relations {unknown} in relation filter",
            details={"relations": unknown},
        )
    return wanted


def _check_int(value: object, name: str, low: int, high: int | None = None) -> int:
    if type(value) is not int or value < low or (high is not None and value > high):
        bound = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise ValidationError(f"{name} must be an integer {bound}, got {value!r}")
    return value


def _check_number(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValidationError(f"{name} must be a number, got {value!r}")
    if not isinstance(value, float) and not fits_float(value):  # its digits are not echoed
        raise ValidationError(f"{name} must be a number a float can hold")
    return float(value)


def _check_open_unit(value: object, name: str) -> float:
    number = _check_number(value, name)
    if not 0.0 < number < 1.0:
        raise ValidationError(f"{name} must be strictly between 0 and 1, got {value!r}")
    return number


def _check_positive(value: object, name: str) -> float:
    number = _check_number(value, name)
    if not math.isfinite(number) or number <= 0.0:
        raise ValidationError(f"{name} must be a finite number > 0, got {value!r}")
    return number


def _check_direction(direction: object) -> TraversalDirection:
    for allowed in TRAVERSAL_DIRECTIONS:
        if direction == allowed:
            return allowed
    raise ValidationError(f"direction must be one of {list(TRAVERSAL_DIRECTIONS)}")


def _check_seeds(graph: SemanticGraph, seeds: Iterable[str]) -> tuple[str, ...]:
    if isinstance(seeds, str):
        raise ValidationError("seeds must be an iterable of node IDs, not one string")
    found = sorted({graph.node(seed).id for seed in seeds})
    return tuple(found)


# ------------------------------------------------------------------- pair view
def _pair_view(graph: SemanticGraph, relations: Iterable[str] | None) -> _PairView:
    """Build the pair view once: each endpoint pair enumerated exactly once."""
    wanted = _check_relations(graph, relations)
    nodes = graph.node_ids()
    index = {node: position for position, node in enumerate(nodes)}
    symmetric = _undirected_pairs(graph, wanted)
    arcs: set[tuple[int, int]] = set()
    for source, target in graph.endpoint_pairs(wanted):
        arcs.add((index[source], index[target]))
        if (source, target) in symmetric:
            arcs.add((index[target], index[source]))
    links = {(min(a, b), max(a, b)) for a, b in arcs if a != b}
    return _PairView(nodes, index, tuple(sorted(arcs)), tuple(sorted(links)))


def _undirected_pairs(
    graph: SemanticGraph, wanted: frozenset[str] | None
) -> frozenset[tuple[str, str]]:
    """Stored pairs that carry at least one allowed undirected fact."""
    if wanted is None:
        facts: Iterable[SemanticFact] = graph.facts()
    else:
        facts = (fact for name in sorted(wanted) for fact in graph.facts_by_relation(name))
    return frozenset(fact.endpoint_pair for fact in facts if fact.direction is Direction.UNDIRECTED)


def _adjacency(view: _PairView, direction: TraversalDirection) -> list[list[int]]:
    """Neighbour lists in ascending index (= node ID) order, without duplicates."""
    found: list[set[int]] = [set() for _ in view.nodes]
    for source, target in view.arcs:
        if direction != "in":
            found[source].add(target)
        if direction != "out":
            found[target].add(source)
    return [sorted(neighbours) for neighbours in found]


def _digraph(view: _PairView) -> rx.PyDiGraph:
    graph = rx.PyDiGraph(multigraph=False)
    graph.add_nodes_from(range(len(view.nodes)))
    graph.add_edges_from_no_data(list(view.arcs))
    return graph


# ------------------------------------------------------------------ traversal
def _bfs(
    adjacency: list[list[int]],
    seeds: Iterable[int],
    max_depth: int | None = None,
    stop: int | None = None,
) -> dict[int, int]:
    """Multi-source BFS hop counts; halts early once ``stop`` has a hop count."""
    hops = dict.fromkeys(seeds, 0)
    queue = deque(hops)
    while queue and stop not in hops:
        node = queue.popleft()
        depth = hops[node] + 1
        if max_depth is not None and depth > max_depth:
            continue
        for neighbour in adjacency[node]:
            if neighbour not in hops:
                hops[neighbour] = depth
                queue.append(neighbour)
    return hops


def shortest_hops(
    graph: SemanticGraph,
    seeds: Iterable[str],
    *,
    relations: Iterable[str] | None = None,
    max_depth: int | None = None,
    direction: TraversalDirection = "out",
) -> dict[str, int]:
    """Hop count from the nearest seed to every reachable node, over unique pairs.

    Seeds are at hop 0. ``direction`` follows arcs forwards (``out``), backwards (``in``)
    or both ways. ``max_depth`` bounds the hop count. An unknown seed is a
    ``NotFoundError``. Keys are in node-ID order.
    """
    seed_ids = _check_seeds(graph, seeds)
    way = _check_direction(direction)
    depth = None if max_depth is None else _check_int(max_depth, "max_depth", 0)
    view = _pair_view(graph, relations)
    hops = _bfs(_adjacency(view, way), (view.index[seed] for seed in seed_ids), depth)
    return {view.nodes[position]: hops[position] for position in sorted(hops)}


def shortest_path(
    graph: SemanticGraph,
    source: str,
    target: str,
    *,
    relations: Iterable[str] | None = None,
    direction: TraversalDirection = "out",
) -> tuple[str, ...] | None:
    """A shortest path over unique pairs, or None when ``target`` is unreachable.

    Among several shortest paths the lexicographically smallest node-ID sequence is
    returned, so the answer never depends on insertion order.
    """
    start, goal = graph.node(source).id, graph.node(target).id
    way = _check_direction(direction)
    view = _pair_view(graph, relations)
    first, last = view.index[start], view.index[goal]
    # Hops *to* the target, found by walking arcs backwards from it.
    remaining = _bfs(_adjacency(view, _REVERSED[way]), (last,), stop=first)
    if first not in remaining:
        return None
    forwards = _adjacency(view, way)
    path = [first]
    while path[-1] != last:
        wanted = remaining[path[-1]] - 1
        path.append(next(n for n in forwards[path[-1]] if remaining.get(n) == wanted))
    return tuple(view.nodes[position] for position in path)


# ----------------------------------------------------------------- centrality
def degree(
    graph: SemanticGraph, *, relations: Iterable[str] | None = None
) -> dict[str, PairDegree]:
    """In, out and neighbour counts per node over unique pairs (multiplicity ignored)."""
    view = _pair_view(graph, relations)
    size = len(view.nodes)
    inward, outward, neighbours = [0] * size, [0] * size, [0] * size
    for source, target in view.arcs:
        outward[source] += 1
        inward[target] += 1
    for first, second in view.links:
        neighbours[first] += 1
        neighbours[second] += 1
    return {
        node: PairDegree(inward[i], outward[i], neighbours[i]) for i, node in enumerate(view.nodes)
    }


def pagerank(
    graph: SemanticGraph,
    *,
    relations: Iterable[str] | None = None,
    damping: float = PAGERANK_DAMPING,
    tolerance: float = PAGERANK_TOLERANCE,
    max_iterations: int = PAGERANK_MAX_ITERATIONS,
) -> dict[str, float]:
    """PageRank over the arcs of unique pairs, every arc weighing ``PAIR_WEIGHT``.

    Raises ``BudgetExceededError`` when the power iteration does not converge within
    ``max_iterations``; nothing partial is returned.
    """
    alpha = _check_open_unit(damping, "damping")
    tol = _check_positive(tolerance, "tolerance")
    iterations = _check_int(max_iterations, "max_iterations", 1)
    view = _pair_view(graph, relations)
    if not view.nodes:
        return {}
    try:
        ranks = rx.pagerank(
            _digraph(view),
            alpha=alpha,
            weight_fn=lambda _: PAIR_WEIGHT,
            tol=tol,
            max_iter=iterations,
        )
    except rx.FailedToConverge as exc:
        raise BudgetExceededError(
            f"PageRank did not converge within {iterations} iterations",
            details={"max_iterations": iterations, "tolerance": tol},
        ) from exc
    return {node: float(ranks[i]) for i, node in enumerate(view.nodes)}


def betweenness(
    graph: SemanticGraph,
    *,
    relations: Iterable[str] | None = None,
    exact_limit: int = EXACT_BETWEENNESS_MAX_NODES,
    samples: int = DEFAULT_BETWEENNESS_SAMPLES,
    seed: int = DEFAULT_BETWEENNESS_SEED,
) -> dict[str, float]:
    """Normalised directed betweenness over unique pairs; exact up to ``exact_limit`` nodes.

    Above ``exact_limit`` nodes (and when ``samples`` is below the node count) it is
    estimated from ``samples`` source pivots drawn with ``random.Random(seed)`` from the
    sorted node IDs, rescaled as networkx does for ``k`` sources without endpoints
    (pivots by ``1/((k-1)(n-2))``, other nodes by ``1/(k(n-2))``).
    """
    limit = _check_int(exact_limit, "exact_limit", 0)
    count = _check_int(samples, "samples", MIN_BETWEENNESS_SAMPLES)
    rng_seed = _check_int(seed, "seed", 0, _MAX_SEED)
    view = _pair_view(graph, relations)
    size = len(view.nodes)
    if size <= limit or count >= size:
        scores = rx.digraph_betweenness_centrality(
            _digraph(view), normalized=True, endpoints=False, parallel_threshold=_SEQUENTIAL_ONLY
        )
        return {node: float(scores[i]) for i, node in enumerate(view.nodes)}
    pivots = random.Random(rng_seed).sample(range(size), count)
    estimate = _sampled_betweenness(view, pivots).tolist()
    return {node: float(estimate[i]) for i, node in enumerate(view.nodes)}


def _csr(view: _PairView) -> tuple[_IntArray, _IntArray]:
    """Successor lists as CSR arrays (arcs are already sorted by source)."""
    arcs = np.array(view.arcs, dtype=np.int64).reshape(-1, 2)
    counts = np.bincount(arcs[:, 0], minlength=len(view.nodes))
    indptr = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    return indptr, arcs[:, 1].copy()


def _frontier_arcs(
    indptr: _IntArray, heads: _IntArray, frontier: _IntArray
) -> tuple[_IntArray, _IntArray]:
    """Every arc leaving ``frontier`` as (tails, heads), in CSR order."""
    starts = indptr[frontier]
    counts = indptr[frontier + 1] - starts
    offsets = np.repeat(starts - (np.cumsum(counts) - counts), counts)
    positions = offsets + np.arange(int(counts.sum()), dtype=np.int64)
    return np.repeat(frontier, counts), heads[positions]


def _pivot_dependency(indptr: _IntArray, heads: _IntArray, pivot: int) -> _FloatArray:
    """Brandes' dependency of ``pivot`` on every node (level-synchronous BFS)."""
    size = indptr.size - 1
    hops = np.full(size, -1, dtype=np.int64)
    paths = np.zeros(size, dtype=np.float64)
    hops[pivot], paths[pivot] = 0, 1.0
    frontier = np.array([pivot], dtype=np.int64)
    levels: list[tuple[_IntArray, _IntArray]] = []
    while frontier.size:
        tails, ends = _frontier_arcs(indptr, heads, frontier)
        depth = int(hops[frontier[0]]) + 1
        fresh = distinct(ends[hops[ends] < 0])
        hops[fresh] = depth
        onward = hops[ends] == depth
        tails, ends = tails[onward], ends[onward]
        np.add.at(paths, ends, paths[tails])
        levels.append((tails, ends))
        frontier = fresh
    dependency = np.zeros(size, dtype=np.float64)
    for tails, ends in reversed(levels):
        np.add.at(dependency, tails, paths[tails] / paths[ends] * (1.0 + dependency[ends]))
    dependency[pivot] = 0.0
    return dependency


def _sampled_betweenness(view: _PairView, pivots: list[int]) -> _FloatArray:
    indptr, heads = _csr(view)
    total = np.zeros(len(view.nodes), dtype=np.float64)
    for pivot in pivots:
        total += _pivot_dependency(indptr, heads, pivot)
    size, count = len(view.nodes), len(pivots)
    scale = np.full(len(view.nodes), 1.0 / (count * (size - 2)), dtype=np.float64)
    scale[pivots] = 1.0 / ((count - 1) * (size - 2))
    result: _FloatArray = total * scale
    return result


# ---------------------------------------------------------------- communities
def communities(
    graph: SemanticGraph,
    *,
    relations: Iterable[str] | None = None,
    seed: int = DEFAULT_COMMUNITY_SEED,
    resolution: float = DEFAULT_COMMUNITY_RESOLUTION,
) -> dict[str, int]:
    """Seeded Leiden communities on the undirected links of unique pairs, canonically numbered.

    Every link weighs ``PAIR_WEIGHT`` however many facts back it. Community numbers are
    assigned by size (largest first), ties broken by smallest member ID, so they do not
    depend on the library's labels. Nodes without links each get their own community.
    """
    rng_seed = _check_int(seed, "seed", 0, _MAX_SEED)
    scale = _check_positive(resolution, "resolution")
    view = _pair_view(graph, relations)
    labels = _leiden_labels(view, rng_seed, scale)
    groups: dict[tuple[str, int], list[int]] = {}
    for position in range(len(view.nodes)):
        label = labels.get(position)
        key = ("leiden", label) if label is not None else ("alone", position)
        groups.setdefault(key, []).append(position)
    ordered = sorted(groups.values(), key=lambda members: (-len(members), members[0]))
    numbers = {member: number for number, group in enumerate(ordered) for member in group}
    return {node: numbers[i] for i, node in enumerate(view.nodes)}


def _leiden_labels(view: _PairView, seed: int, resolution: float) -> dict[int, int]:
    """Library community labels by node index (linked nodes only)."""
    if not view.links:
        return {}
    edges = [(view.nodes[a], view.nodes[b], PAIR_WEIGHT) for a, b in view.links]
    try:
        _, found = gn.leiden(
            edges,
            resolution=resolution,
            randomness=LEIDEN_RANDOMNESS,
            iterations=LEIDEN_ITERATIONS,
            use_modularity=True,
            seed=seed,
            trials=LEIDEN_TRIALS,
        )
    except ValueError as exc:  # graspologic-native errors are ValueError subclasses
        raise ValidationError(f"community detection rejected its input: {exc}") from exc
    return {view.index[node]: int(label) for node, label in found.items()}


# -------------------------------------------------------------------- bridges
def bridges(
    graph: SemanticGraph, *, relations: Iterable[str] | None = None
) -> tuple[tuple[str, str], ...]:
    """Links whose removal disconnects the undirected simple pair view, sorted.

    Each bridge is ``(smaller ID, larger ID)``; parallel facts never hide or create one.
    """
    view = _pair_view(graph, relations)
    simple = rx.PyGraph(multigraph=False)
    simple.add_nodes_from(range(len(view.nodes)))
    simple.add_edges_from_no_data(list(view.links))
    # The rustworkx stub types each bridge as tuple[int]; at run time it is an index pair.
    found = sorted((min(edge), max(edge)) for edge in rx.bridges(simple))
    return tuple((view.nodes[a], view.nodes[b]) for a, b in found)


# ---------------------------------------------------------------- interchange
def to_networkx(graph: SemanticGraph) -> nx.MultiDiGraph:
    """A networkx ``MultiDiGraph`` with one edge per *fact*, for interchange only.

    Nodes (in ID order) carry ``kind`` and ``identity_status``. Each fact is one edge
    ``source -> target`` keyed by its fact ID, carrying ``relation``, ``direction`` and
    ``occurrence_count``; an undirected fact stays one edge in its canonical endpoint
    order with ``direction="undirected"``. Occurrences, discriminators and annotations
    are not exported (lossy). Do not run topology on it: parallel edges are facts, not
    pairs; the functions in this module are the pair-based ones.
    """
    exported = nx.MultiDiGraph()
    for node in graph.nodes():
        exported.add_node(node.id, kind=node.kind, identity_status=node.identity.status.value)
    for fact in graph.facts():
        exported.add_edge(
            fact.source,
            fact.target,
            key=fact.id,
            relation=fact.relation,
            direction=fact.direction.value,
            occurrence_count=len(fact.occurrence_ids),
        )
    return exported
