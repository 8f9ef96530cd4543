"""Time every topology algorithm on a synthetic multigraph with parallel facts (spec §9).

Builds a clustered code-like graph (default 20,000 nodes, ~60,000 facts over ~30,000
endpoint pairs, 1-2 occurrences per fact), then prints one table of timings, with
networkx measured side by side in the same run where that is affordable. Run with
``make bench`` or ``python bench/topology_bench.py [--nodes N --facts F --seed S]``.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable
from typing import Any

import networkx as nx

from cairn.graph import topology
from cairn.graph.model import EndpointIdentity, SourceRange
from cairn.graph.multigraph import OccurrenceInput, SemanticGraph

DEFAULT_NODES = 20_000
DEFAULT_FACTS = 60_000
DEFAULT_SEED = 1
MODULE_SIZE = 50
CROSS_MODULE_SHARE = 0.15
UNDIRECTED_SHARE = 0.05
MAX_FACTS_PER_PAIR = 3
MAX_OCCURRENCES_PER_FACT = 2
HOP_SEEDS = 10
EXACT_SUBGRAPH_NODES = topology.EXACT_BETWEENNESS_MAX_NODES

CALL_VARIANTS = tuple(
    {"invocation": invocation, "dispatch": dispatch}
    for invocation in ("call", "construct")
    for dispatch in ("direct", "method", "attribute", "dynamic")
)


def build_graph(node_count: int, fact_target: int, seed: int) -> SemanticGraph:
    """A clustered graph: most pairs stay inside a module, each pair has 1-3 facts."""
    rng = random.Random(seed)
    names = [f"pkg/mod{i // MODULE_SIZE:04d}.py::fn{i:06d}" for i in range(node_count)]
    graph = SemanticGraph()
    for name in names:
        graph.add_node(name, "function", identity=EndpointIdentity.stable())
    facts = 0
    while facts < fact_target:
        source = rng.randrange(node_count)
        if rng.random() < CROSS_MODULE_SHARE:
            target = rng.randrange(node_count)
        else:
            base = source - source % MODULE_SIZE
            target = min(node_count - 1, base + rng.randrange(MODULE_SIZE))
        facts += _admit_pair(graph, rng, names[source], names[target])
    return graph


def _admit_pair(graph: SemanticGraph, rng: random.Random, source: str, target: str) -> int:
    if rng.random() < UNDIRECTED_SHARE:
        variants: list[tuple[str, dict[str, str] | None]] = [("related_to", None)]
    else:
        count = rng.randint(1, MAX_FACTS_PER_PAIR)
        variants = [("calls", variant) for variant in rng.sample(CALL_VARIANTS, count)]
    for relation, discriminator in variants:
        for site in range(rng.randint(1, MAX_OCCURRENCES_PER_FACT)):
            line = rng.randint(1, 5_000) + site
            graph.add_fact(
                source,
                target,
                relation,
                discriminator,
                occurrence=OccurrenceInput(
                    adapter_id="bench",
                    strategy="synthetic",
                    source_file="pkg/mod.py",
                    source_range=SourceRange(line, 1, line, 20),
                ),
            )
    return len(variants)


def timed(action: Callable[[], Any]) -> tuple[float, Any]:
    """Wall-clock seconds of one call, and its result."""
    started = time.perf_counter()
    result = action()
    return time.perf_counter() - started, result


def oracle_digraph(graph: SemanticGraph) -> nx.DiGraph:
    """The same pair view as a networkx DiGraph (for side-by-side timings)."""
    simple = nx.DiGraph()
    simple.add_nodes_from(graph.node_ids())
    for fact in graph.facts():
        simple.add_edge(fact.source, fact.target)
        if fact.direction.value == "undirected":
            simple.add_edge(fact.target, fact.source)
    return simple


def run(node_count: int, fact_target: int, seed: int) -> list[tuple[str, float, str]]:
    """Every measurement as (name, seconds, note)."""
    rows: list[tuple[str, float, str]] = []
    took, graph = timed(lambda: build_graph(node_count, fact_target, seed))
    counts = graph.counts()
    rows.append(
        (
            "build graph (admission)",
            took,
            f"{counts.node_count} nodes, {counts.fact_count} facts, "
            f"{counts.endpoint_pair_count} pairs, {counts.occurrence_count} occurrences",
        )
    )
    ids = graph.node_ids()
    # Internal step, timed to show the fixed cost every public call pays first.
    took, view = timed(lambda: topology._pair_view(graph, None))
    rows.append(("pair view (built by each call)", took, f"{len(view.arcs)} arcs"))
    seeds = random.Random(seed).sample(ids, HOP_SEEDS)
    took, hops = timed(lambda: topology.shortest_hops(graph, seeds, direction="both"))
    rows.append(("shortest_hops (10 seeds, both)", took, f"{len(hops)} reached"))
    took, path = timed(lambda: topology.shortest_path(graph, ids[0], ids[-1], direction="both"))
    rows.append(("shortest_path", took, f"{len(path) if path else 0} nodes on path"))
    took, _ = timed(lambda: topology.degree(graph))
    rows.append(("degree", took, ""))
    took, ranks = timed(lambda: topology.pagerank(graph))
    rows.append(("pagerank", took, f"sum {sum(ranks.values()):.6f}"))
    took, _ = timed(lambda: topology.betweenness(graph))
    rows.append(("betweenness (sampled)", took, f"k={topology.DEFAULT_BETWEENNESS_SAMPLES} pivots"))
    density = fact_target / node_count
    at_limit = build_graph(EXACT_SUBGRAPH_NODES, int(EXACT_SUBGRAPH_NODES * density), seed)
    took, _ = timed(lambda: topology.betweenness(at_limit))
    rows.append(
        (
            "betweenness (exact, at limit)",
            took,
            f"{at_limit.node_count} nodes, {at_limit.endpoint_pair_count} pairs",
        )
    )
    took, found = timed(lambda: topology.communities(graph))
    rows.append(("communities (leiden)", took, f"{len(set(found.values()))} communities"))
    took, cut = timed(lambda: topology.bridges(graph))
    rows.append(("bridges", took, f"{len(cut)} bridges"))
    took, exported = timed(lambda: topology.to_networkx(graph))
    rows.append(("to_networkx (interchange)", took, f"{exported.number_of_edges()} fact edges"))
    rows.extend(_networkx_side_by_side(graph, rows, seed))
    return rows


def _networkx_side_by_side(
    graph: SemanticGraph, rows: list[tuple[str, float, str]], seed: int
) -> list[tuple[str, float, str]]:
    mine = {name: seconds for name, seconds, _ in rows}
    simple = oracle_digraph(graph)
    took_pr, _ = timed(lambda: nx.pagerank(simple))
    pivots = topology.DEFAULT_BETWEENNESS_SAMPLES // 8
    took_bc, _ = timed(lambda: nx.betweenness_centrality(simple, k=pivots, seed=seed))
    took_ours, _ = timed(lambda: topology.betweenness(graph, samples=pivots, seed=seed))
    return [
        ("networkx pagerank", took_pr, f"networkx / cairn = {took_pr / mine['pagerank']:.2f}"),
        (
            f"networkx betweenness k={pivots}",
            took_bc,
            f"cairn {took_ours:.3f}s; networkx / cairn = {took_bc / took_ours:.2f}",
        ),
    ]


def main() -> None:
    """Parse arguments, run, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=DEFAULT_NODES)
    parser.add_argument("--facts", type=int, default=DEFAULT_FACTS)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    args = parser.parse_args()
    rows = run(args.nodes, args.facts, args.seed)
    width = max(len(name) for name, _, _ in rows)
    print(f"{'measurement':<{width}}  {'seconds':>9}  note")
    print(f"{'-' * width}  {'-' * 9}  {'-' * 40}")
    for name, seconds, note in rows:
        print(f"{name:<{width}}  {seconds:>9.3f}  {note}")


if __name__ == "__main__":
    main()
