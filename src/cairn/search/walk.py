"""Authorised, bounded multi-seed reachability inside one read cut (spec §5.3).

Breadth-first over outgoing edges, layer by layer. Every seed must be visible to the
principal (else ``NotFoundError``, the same answer as a missing seed); a hidden, deleted
or unreadable vertex met on the way is neither entered nor reported, so traversal does
not pass through it. A label filter keeps edges of the allowed relations. Vertices of
any collection are walked; collection filters belong to the caller. Each vertex keeps
its first (shortest) hop. Every fact record read counts against ``max_edges`` and the
shared budget, filtered and hidden ones included; going past ``max_edges`` or
``max_vertices`` fails with ``BudgetExceededError``, never a truncated success.

Each reached vertex also gets its deterministic shortest path: among all shortest
paths, the lexicographically smallest sequence of references from a seed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from cairn.errors import BudgetExceededError, CorruptionError, NotFoundError
from cairn.index.adjacency import GraphView
from cairn.index.cut import IndexCut
from cairn.index.graphs import out_edges
from cairn.search.budget import ReadBudget
from cairn.store.apply import load_document
from cairn.store.commands import EntityRef
from cairn.store.policy import Capability

__all__ = ["Reachability", "VertexVisibility", "WalkLimits", "walk"]

_READ = (Capability.DOCUMENTS_READ, Capability.QUERY)


@dataclass(frozen=True, slots=True)
class WalkLimits:
    """The walk shape: graph, depth, caps and label filter (``None`` = any relation)."""

    graph: str
    max_depth: int
    max_vertices: int
    max_edges: int
    labels: frozenset[str] | None


@dataclass(frozen=True, slots=True)
class Reachability:
    """Refs and hops only: ``hops`` in output order (hops, then ref) and paths."""

    hops: dict[EntityRef, int]
    predecessor: dict[EntityRef, EntityRef]
    edges_examined: int

    def ordered(self) -> list[EntityRef]:
        """Reached vertices ordered by hops, then full ordinal ref."""
        return sorted(self.hops, key=lambda ref: (self.hops[ref], ref))

    def path(self, ref: EntityRef) -> tuple[EntityRef, ...]:
        """The lexicographically smallest shortest path from a seed to ``ref``."""
        chain = [ref]
        while chain[-1] in self.predecessor:
            chain.append(self.predecessor[chain[-1]])
        return tuple(reversed(chain))


class VertexVisibility:
    """Whether the principal may see a vertex at the cut; cached per request.

    Liveness and the row policy come from the cut's in-memory columns (the slot alive at
    the cut for the document key, and that slot's owner and project); SQLite is read
    only to tell a deleted document from a row that does not exist at all.
    """

    def __init__(self, cut: IndexCut, budget: ReadBudget) -> None:
        self._cut = cut
        self._budget = budget
        self._known: dict[EntityRef, bool] = {}
        self._known_nodes: dict[int, bool] = {}
        self._readable: dict[str, bool] = {}
        self._restricted: dict[str, bool] = {}

    def visible(self, ref: EntityRef, *, missing_is_corrupt: bool = False) -> bool:
        """True when the document is live, readable and row-visible to the principal."""
        node = self._cut.columns.nodes.get((ref.collection, ref.id))
        if node is not None:
            return self.visible_node(node, missing_is_corrupt=missing_is_corrupt)
        cached = self._known.get(ref)  # never stored in the columns: no live slot
        if cached is None:
            self._budget.examine()
            if missing_is_corrupt:
                self._check_row(ref.collection, ref.id)
            cached = self._known[ref] = False
        return cached

    def visible_node(self, node: int, *, missing_is_corrupt: bool = False) -> bool:
        """``visible`` for the document key the columns numbered ``node``."""
        cached = self._known_nodes.get(node)
        if cached is not None:
            return cached
        self._budget.examine()
        view = self._cut.columns
        live = view.live_slots()
        slot = int(live[node]) if node < len(live) else 0
        collection, doc_id = view.node_keys[node]
        if slot == 0:
            if missing_is_corrupt:
                self._check_row(collection, doc_id)
            seen = False
        else:
            seen = self._may_read(collection) and self._row_visible(collection, slot)
        self._known_nodes[node] = seen
        return seen

    def _check_row(self, collection: str, doc_id: str) -> None:
        """A fact endpoint without any document row is corruption, not a hidden vertex."""
        if load_document(self._cut.conn, collection, doc_id) is None:
            raise CorruptionError(
                f"a fact points at {collection}/{doc_id}, which has no document row",
                details={"collection": collection, "id": doc_id},
            )

    def _may_read(self, collection: str) -> bool:
        found = self._readable.get(collection)
        if found is None:
            cut = self._cut
            held = cut.principal.capabilities(cut.database, collection)
            found = any(cap in held for cap in _READ)
            self._readable[collection] = found
        return found

    def _row_visible(self, collection: str, slot: int) -> bool:
        """``row_visible`` on the slot's owner and project codes."""
        cut = self._cut
        principal = cut.principal
        restricted = self._restricted.get(collection)
        if restricted is None:
            restricted = principal.restrict_rows and not principal.is_admin(
                cut.database, collection
            )
            self._restricted[collection] = restricted
        if not restricted:
            return True
        view = cut.columns
        if principal.owner_id is not None and view.owner[slot] == view.code(principal.owner_id):
            return True
        project = int(view.project[slot])
        return project > 0 and any(view.code(name) == project for name in principal.projects)


def _check_seeds(seeds: Sequence[EntityRef], visibility: VertexVisibility) -> list[EntityRef]:
    unique = sorted(set(seeds))
    for seed in unique:
        if not visibility.visible(seed):
            raise NotFoundError(
                f"no document {seed.id!r} in {seed.collection!r}",
                details={"collection": seed.collection, "id": seed.id},
            )
    return unique


def walk(
    cut: IndexCut,
    limits: WalkLimits,
    seeds: Iterable[EntityRef],
    budget: ReadBudget,
    visibility: VertexVisibility,
    *,
    check_seeds: bool = True,
) -> Reachability:
    """Walk outgoing edges from ``seeds`` within ``limits``; see the module docstring."""
    layer = _check_seeds(list(seeds), visibility) if check_seeds else sorted(set(seeds))
    if len(layer) > limits.max_vertices:
        raise _vertex_budget(limits)
    adjacency = cut.columns.graph(cut.conn, limits.graph)
    if adjacency.exact:
        return _walk_columns(cut, adjacency, limits, layer, budget, visibility)
    return _walk_edges(cut, limits, layer, budget, visibility)


def _charge_edges(limits: WalkLimits, budget: ReadBudget, examined: int, count: int) -> int:
    """Charge one vertex's fact records; fail past ``max_edges``. Returns the new total."""
    examined += count
    budget.examine(count)
    if examined > limits.max_edges:
        raise BudgetExceededError(
            f"the walk over {limits.graph!r} examined more than {limits.max_edges} edges",
            details={"limit": limits.max_edges, "budget": "max_edges"},
        )
    return examined


def _walk_columns(
    cut: IndexCut,
    adjacency: GraphView,
    limits: WalkLimits,
    seeds: list[EntityRef],
    budget: ReadBudget,
    visibility: VertexVisibility,
) -> Reachability:
    """The walk over the in-memory adjacency, in the columns' node numbers.

    The same visits, charges and order as ``_walk_edges``: one vertex's edges may be
    taken in any order, since every target they reach gets that vertex as predecessor,
    and node keys sort exactly as refs do.
    """
    view = cut.columns
    keys, nodes = view.node_keys, view.nodes
    numbered = [(ref, nodes.get((ref.collection, ref.id))) for ref in seeds]
    layer = [node for _, node in numbered if node is not None]
    unnumbered = len(numbered) - len(layer)  # seeds the columns never saw have no edges
    hops = dict.fromkeys(layer, 0)
    predecessor: dict[int, int] = {}
    allowed = _relation_codes(adjacency, limits.labels)
    examined = 0
    for depth in range(1, limits.max_depth + 1):
        if not layer:
            break
        candidates: dict[int, int] = {}
        for vertex in layer:
            rows, ends = adjacency.walk(vertex, outgoing=True)
            examined = _charge_edges(limits, budget, examined, len(rows))
            if allowed is not None and len(rows):
                ends = ends[np.isin(adjacency.relation[rows], allowed)]
            for target in ends.tolist():
                if target in hops or target in candidates:
                    continue
                if visibility.visible_node(target, missing_is_corrupt=True):
                    candidates[target] = vertex
        rank = {vertex: index for index, vertex in enumerate(layer)}
        layer = sorted(candidates, key=lambda node: (rank[candidates[node]], keys[node]))
        for target in layer:
            hops[target] = depth
            predecessor[target] = candidates[target]
        if len(hops) + unnumbered > limits.max_vertices:
            raise _vertex_budget(limits)
    refs = {node: EntityRef(*keys[node]) for node in hops}
    reached = {ref: 0 for ref, node in numbered if node is None}
    reached.update((refs[node], hop) for node, hop in hops.items())
    paths = {refs[node]: refs[before] for node, before in predecessor.items()}
    return Reachability(reached, paths, examined)


def _relation_codes(
    adjacency: GraphView, labels: frozenset[str] | None
) -> npt.NDArray[np.int64] | None:
    """The adjacency's codes of the allowed relations (None: every relation)."""
    if labels is None:
        return None
    codes = [code for code, name in enumerate(adjacency.relations) if name in labels]
    return np.asarray(codes, dtype=np.int64)


def _walk_edges(
    cut: IndexCut,
    limits: WalkLimits,
    layer: list[EntityRef],
    budget: ReadBudget,
    visibility: VertexVisibility,
) -> Reachability:
    """The walk through ``out_edges`` (for cuts the in-memory adjacency cannot answer)."""
    hops = dict.fromkeys(layer, 0)
    predecessor: dict[EntityRef, EntityRef] = {}
    examined = 0
    for depth in range(1, limits.max_depth + 1):
        if not layer:
            break
        candidates: dict[EntityRef, EntityRef] = {}
        # Layer order is the order of the vertices' smallest paths, so the first
        # predecessor that reaches a vertex gives its lexicographically smallest path.
        for vertex in layer:
            edges = out_edges(cut, limits.graph, vertex)
            examined = _charge_edges(limits, budget, examined, len(edges))
            for edge in edges:
                target = edge.neighbour
                if limits.labels is not None and edge.relation not in limits.labels:
                    continue
                if target in hops or target in candidates:
                    continue
                if not visibility.visible(target, missing_is_corrupt=True):
                    continue
                candidates[target] = vertex
        layer = _next_layer(candidates, layer)
        for target in layer:
            hops[target] = depth
            predecessor[target] = candidates[target]
        if len(hops) > limits.max_vertices:
            raise _vertex_budget(limits)
    return Reachability(hops, predecessor, examined)


def _next_layer(candidates: dict[EntityRef, EntityRef], layer: list[EntityRef]) -> list[EntityRef]:
    """Order the next layer by (rank of its best predecessor, ref): path order."""
    rank = {vertex: index for index, vertex in enumerate(layer)}
    return sorted(candidates, key=lambda ref: (rank[candidates[ref]], ref))


def _vertex_budget(limits: WalkLimits) -> BudgetExceededError:
    return BudgetExceededError(
        f"the walk over {limits.graph!r} reached more than {limits.max_vertices} vertices",
        details={"limit": limits.max_vertices, "budget": "max_vertices"},
    )
