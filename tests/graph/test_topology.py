"""Topology runs on unique endpoint pairs (spec §9), checked against hand fixtures and networkx.

Fixtures put N > 1 facts and N > 1 occurrences on endpoint pairs (gates 1 and 5), and
oracles are built independently from ``graph.facts()`` with networkx's simple graphs,
which collapse parallel facts the way the spec requires.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections.abc import Iterable, Sequence
from typing import Any

import graspologic_native as gn
import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cairn.errors import BudgetExceededError, NotFoundError, ValidationError
from cairn.graph import topology
from cairn.graph.model import Direction, EndpointIdentity, SourceRange
from cairn.graph.multigraph import OccurrenceInput, SemanticGraph
from cairn.graph.topology import (
    PairDegree,
    betweenness,
    bridges,
    communities,
    degree,
    pagerank,
    shortest_hops,
    shortest_path,
    to_networkx,
)

Edge = tuple[str, str, str]

# Distinct valid "calls" discriminators: each one is a separate fact on the same pair.
CALL_VARIANTS: tuple[dict[str, str], ...] = tuple(
    {"invocation": invocation, "dispatch": dispatch}
    for invocation in ("call", "construct")
    for dispatch in ("direct", "method", "attribute", "dynamic")
)


def build(
    nodes: Iterable[str],
    edges: Iterable[Edge],
    *,
    facts: int = 1,
    occurrences: int = 1,
    order: int | None = None,
) -> SemanticGraph:
    """Admit ``edges`` with ``facts`` facts per calls pair and ``occurrences`` sites per fact.

    ``order`` shuffles both node and fact admission order with that seed.
    """
    node_list = list(nodes)
    steps: list[tuple[str, str, str, dict[str, str] | None, int]] = []
    for source, target, relation in edges:
        variants: Sequence[dict[str, str] | None] = (
            CALL_VARIANTS[:facts] if relation == "calls" else [None]
        )
        for discriminator in variants:
            for site in range(occurrences):
                steps.append((source, target, relation, discriminator, site))
    if order is not None:
        rng = random.Random(order)
        rng.shuffle(node_list)
        rng.shuffle(steps)
    graph = SemanticGraph()
    for node in node_list:
        graph.add_node(node, "function", identity=EndpointIdentity.stable())
    for source, target, relation, discriminator, site in steps:
        graph.add_fact(
            source,
            target,
            relation,
            discriminator,
            occurrence=OccurrenceInput(
                adapter_id="test",
                strategy="fixture",
                source_file="src/app.py",
                source_range=SourceRange(site + 1, 1, site + 1, 9),
            ),
        )
    return graph


def oracle_digraph(graph: SemanticGraph, relations: Iterable[str] | None = None) -> nx.DiGraph:
    """networkx simple DiGraph from facts: parallel facts collapse, undirected go both ways."""
    wanted = None if relations is None else set(relations)
    simple = nx.DiGraph()
    simple.add_nodes_from(graph.node_ids())
    for fact in graph.facts():
        if wanted is not None and fact.relation not in wanted:
            continue
        simple.add_edge(fact.source, fact.target)
        if fact.direction is Direction.UNDIRECTED:
            simple.add_edge(fact.target, fact.source)
    return simple


def oracle_graph(graph: SemanticGraph) -> nx.Graph:
    """networkx simple undirected Graph without self-loops."""
    simple = nx.Graph(oracle_digraph(graph))
    simple.remove_edges_from(list(nx.selfloop_edges(simple)))
    return simple


def everything(graph: SemanticGraph) -> dict[str, Any]:
    """Every topology result on ``graph`` in a comparable (ordered) form."""
    first = graph.node_ids()[0]
    last = graph.node_ids()[-1]
    return {
        "hops": list(shortest_hops(graph, [first], direction="both").items()),
        "path": shortest_path(graph, first, last, direction="both"),
        "degree": list(degree(graph).items()),
        "pagerank": list(pagerank(graph).items()),
        "betweenness": list(betweenness(graph).items()),
        "sampled": list(betweenness(graph, exact_limit=0, samples=2, seed=9).items()),
        "communities": list(communities(graph).items()),
        "bridges": bridges(graph),
    }


# A hand fixture: a 4-clique, a triangle, a bridge between them, a tail, isolated nodes.
CLIQUE = ("d", "e", "f", "g")
TRIANGLE = ("a", "b", "c")
HAND_NODES = (*TRIANGLE, *CLIQUE, "h", "y", "z")
HAND_EDGES: tuple[Edge, ...] = (
    ("a", "b", "calls"),
    ("b", "c", "calls"),
    ("c", "a", "calls"),
    ("a", "c", "contains"),
    ("c", "d", "calls"),
    ("d", "e", "calls"),
    ("d", "e", "contains"),
    ("d", "f", "calls"),
    ("d", "g", "calls"),
    ("e", "f", "calls"),
    ("e", "g", "calls"),
    ("f", "g", "related_to"),
    ("g", "h", "contains"),
    ("z", "z", "calls"),
)


@pytest.fixture
def hand() -> SemanticGraph:
    graph = build(HAND_NODES, HAND_EDGES, facts=3, occurrences=2)
    # Proof of multiplicity: 10 calls pairs x 3 facts + 4 other facts, 2 sites each.
    assert graph.endpoint_pair_count == 13
    assert graph.fact_count == 10 * 3 + 4
    assert graph.occurrence_count == 2 * graph.fact_count
    return graph


# ------------------------------------------------------------------ gate 1
def test_each_pair_counts_once_under_a_fact_keyed_store(hand: SemanticGraph) -> None:
    pairs = hand.endpoint_pairs()
    assert len(pairs) == len(set(pairs)) == hand.endpoint_pair_count
    assert len(hand.facts_between("a", "b")) == 3
    assert hand.relations_between("d", "e") == ("calls", "contains")
    # a -> b carries three facts and six occurrences, yet counts as one successor.
    assert degree(hand)["a"] == PairDegree(in_degree=1, out_degree=2, neighbour_count=2)


def test_results_identical_to_one_fact_per_pair(hand: SemanticGraph) -> None:
    single = build(HAND_NODES, [edge for edge in HAND_EDGES if edge != ("d", "e", "contains")])
    assert single.fact_count == single.endpoint_pair_count == hand.endpoint_pair_count
    assert single.occurrence_count == single.fact_count
    assert hand.fact_count > single.fact_count
    assert everything(hand) == everything(single)


def test_community_weights_do_not_inflate_with_multiplicity() -> None:
    # Two 4-cliques joined by one pair that carries 8 facts with 4 sites each.
    left, right = ("a", "b", "c", "d"), ("e", "f", "g", "h")
    edges = [(x, y, "contains") for group in (left, right) for x in group for y in group if x < y]
    graph = build((*left, *right), [*edges, ("d", "e", "calls")], facts=8, occurrences=4)
    assert len(graph.facts_between("d", "e")) == 8
    expected = dict.fromkeys(left, 0) | dict.fromkeys(right, 1)
    assert communities(graph) == expected
    # Sensitivity check: weighting that pair by its fact count would merge d and e.
    weighted = [(x, y, 1.0) for x, y, _ in edges] + [("d", "e", 8.0)]
    _, inflated = gn.leiden(weighted, seed=topology.DEFAULT_COMMUNITY_SEED)
    assert inflated["d"] == inflated["e"]


# --------------------------------------------------------------- traversal
def test_shortest_hops_on_hand_fixture(hand: SemanticGraph) -> None:
    assert shortest_hops(hand, ["a"]) == {
        "a": 0,
        "b": 1,
        "c": 1,
        "d": 2,
        "e": 3,
        "f": 3,
        "g": 3,
        "h": 4,
    }
    assert shortest_hops(hand, ["g"]) == {"f": 1, "g": 0, "h": 1}  # f-g is undirected
    assert shortest_hops(hand, ["h"], direction="in", max_depth=2) == {
        "d": 2,
        "e": 2,
        "f": 2,
        "g": 1,
        "h": 0,
    }
    assert shortest_hops(hand, ["y"], direction="both") == {"y": 0}
    assert shortest_hops(hand, ["z"]) == {"z": 0}  # a self-loop reaches nothing new


def test_shortest_hops_multi_seed_takes_nearest_seed(hand: SemanticGraph) -> None:
    hops = shortest_hops(hand, ["h", "b", "b"], direction="both", max_depth=1)
    assert hops == {"a": 1, "b": 0, "c": 1, "g": 1, "h": 0}
    assert list(hops) == sorted(hops)
    assert shortest_hops(hand, ["a", "c"], max_depth=0) == {"a": 0, "c": 0}
    assert shortest_hops(hand, []) == {}


def test_relation_filter_keeps_pairs_with_one_matching_fact(hand: SemanticGraph) -> None:
    # a -> c has only a "contains" fact; a -> b is calls only; d -> e has both.
    assert shortest_hops(hand, ["a"], relations=["contains"]) == {"a": 0, "c": 1}
    assert shortest_hops(hand, ["d"], relations=["contains"]) == {"d": 0, "e": 1}
    assert shortest_hops(hand, ["d"], relations=["calls", "contains"])["h"] == 2
    assert shortest_hops(hand, ["a"], relations=("calls",))["c"] == 2
    assert shortest_hops(hand, ["f"], relations={"related_to"}, direction="out") == {
        "f": 0,
        "g": 1,
    }
    assert shortest_hops(hand, ["a"], relations=[]) == {"a": 0}


def test_shortest_path_is_lexicographically_smallest(hand: SemanticGraph) -> None:
    assert shortest_path(hand, "a", "h") == ("a", "c", "d", "g", "h")
    assert shortest_path(hand, "b", "a") == ("b", "c", "a")
    assert shortest_path(hand, "h", "a") is None
    assert shortest_path(hand, "h", "a", direction="in") == ("h", "g", "d", "c", "a")
    assert shortest_path(hand, "e", "d", direction="both") == ("e", "d")
    assert shortest_path(hand, "y", "y") == ("y",)
    assert shortest_path(hand, "a", "d", relations=["contains"]) is None


def test_shortest_path_breaks_ties_by_node_id() -> None:
    nodes = ("s", "m1", "m2", "m3", "t")
    edges = [("s", m, "calls") for m in ("m3", "m2", "m1")] + [
        (m, "t", "calls") for m in ("m2", "m3")
    ]
    for order in range(5):
        graph = build(nodes, edges, facts=2, occurrences=2, order=order)
        assert shortest_path(graph, "s", "t") == ("s", "m2", "t")


# -------------------------------------------------------------- centrality
def test_degree_on_hand_fixture(hand: SemanticGraph) -> None:
    found = degree(hand)
    assert list(found) == sorted(HAND_NODES)
    assert found["c"] == PairDegree(2, 2, 3)
    assert found["f"] == PairDegree(3, 1, 3)  # f-g undirected: both an in and an out arc
    assert found["g"] == PairDegree(3, 2, 4)
    assert found["y"] == PairDegree(0, 0, 0)
    assert found["z"] == PairDegree(1, 1, 0)  # self-loop: one arc, no other neighbour


def test_pagerank_matches_networkx(hand: SemanticGraph) -> None:
    mine = pagerank(hand, tolerance=1e-13, max_iterations=1000)
    expected = nx.pagerank(oracle_digraph(hand), tol=1e-13, max_iter=1000)
    assert mine == pytest.approx(expected, abs=1e-9)
    assert sum(mine.values()) == pytest.approx(1.0)
    assert list(mine) == sorted(mine)
    damped = pagerank(hand, damping=0.5, tolerance=1e-13, max_iterations=1000)
    assert damped == pytest.approx(
        nx.pagerank(oracle_digraph(hand), alpha=0.5, tol=1e-13, max_iter=1000), abs=1e-9
    )


def test_pagerank_reports_non_convergence(hand: SemanticGraph) -> None:
    with pytest.raises(BudgetExceededError) as caught:
        pagerank(hand, tolerance=1e-15, max_iterations=1)
    assert caught.value.details["max_iterations"] == 1


def test_betweenness_exact_matches_networkx(hand: SemanticGraph) -> None:
    mine = betweenness(hand)
    assert mine == pytest.approx(nx.betweenness_centrality(oracle_digraph(hand)), abs=1e-12)
    assert mine["d"] > 0.0
    assert mine["y"] == 0.0


def test_betweenness_sampling_is_seeded_and_matches_networkx(hand: SemanticGraph) -> None:
    sampled = betweenness(hand, exact_limit=5, samples=4, seed=11)
    expected = nx.betweenness_centrality(oracle_digraph(hand), k=4, seed=11)
    assert sampled == pytest.approx(expected, abs=1e-12)
    assert sampled == betweenness(hand, exact_limit=5, samples=4, seed=11)
    assert sampled != betweenness(hand, exact_limit=5, samples=4, seed=12)
    # Sampling every node is the exact answer.
    everyone = betweenness(hand, exact_limit=0, samples=len(HAND_NODES))
    assert everyone == pytest.approx(betweenness(hand), abs=1e-12)


def test_betweenness_defaults_sample_above_the_limit() -> None:
    rng = random.Random(8)
    names = [f"v{i:03d}" for i in range(topology.DEFAULT_BETWEENNESS_SAMPLES + 40)]
    edges = [(rng.choice(names), rng.choice(names), "calls") for _ in range(3 * len(names))]
    graph = build(names, edges, facts=2)
    expected = nx.betweenness_centrality(
        oracle_digraph(graph),
        k=topology.DEFAULT_BETWEENNESS_SAMPLES,
        seed=topology.DEFAULT_BETWEENNESS_SEED,
    )
    assert betweenness(graph, exact_limit=len(names) - 1) == pytest.approx(expected, abs=1e-12)
    exact = betweenness(graph, exact_limit=len(names))
    assert exact == pytest.approx(nx.betweenness_centrality(oracle_digraph(graph)), abs=1e-12)
    assert exact != betweenness(graph, exact_limit=len(names) - 1)


def test_small_and_empty_graphs() -> None:
    empty = SemanticGraph()
    assert pagerank(empty) == {}
    assert betweenness(empty) == {}
    assert communities(empty) == {}
    assert bridges(empty) == ()
    assert degree(empty) == {}
    pair = build(("p", "q"), [("p", "q", "calls")], facts=2, occurrences=2)
    assert betweenness(pair) == {"p": 0.0, "q": 0.0}
    assert communities(pair) == {"p": 0, "q": 0}
    assert bridges(pair) == (("p", "q"),)


# ------------------------------------------------------------- communities
def test_communities_canonical_numbering(hand: SemanticGraph) -> None:
    found = communities(hand)
    assert list(found) == sorted(HAND_NODES)
    # Largest group first, ties by smallest member ID; isolated nodes are singletons.
    assert found == {
        "a": 1,
        "b": 1,
        "c": 1,
        "d": 0,
        "e": 0,
        "f": 0,
        "g": 0,
        "h": 0,
        "y": 2,
        "z": 3,
    }


def test_communities_ignore_library_labels(monkeypatch: pytest.MonkeyPatch) -> None:
    graph = build(("a", "b", "c", "d"), [("a", "b", "calls"), ("c", "d", "calls")], facts=2)
    real = gn.leiden

    def relabelled(edges: Any, **options: Any) -> tuple[float, dict[str, int]]:
        quality, labels = real(edges, **options)
        return quality, {node: 100 - label for node, label in labels.items()}

    monkeypatch.setattr(topology.gn, "leiden", relabelled)
    assert communities(graph) == {"a": 0, "b": 0, "c": 1, "d": 1}


def test_communities_translate_library_errors(
    monkeypatch: pytest.MonkeyPatch, hand: SemanticGraph
) -> None:
    def broken(edges: Any, **options: Any) -> tuple[float, dict[str, int]]:
        raise gn.ParameterRangeError("bad")

    monkeypatch.setattr(topology.gn, "leiden", broken)
    with pytest.raises(ValidationError) as caught:
        communities(hand)
    assert isinstance(caught.value.__cause__, ValueError)


def test_communities_resolution_changes_granularity(hand: SemanticGraph) -> None:
    fine = communities(hand, resolution=50.0)
    coarse = communities(hand, resolution=0.01)
    assert len(set(fine.values())) > len(set(coarse.values()))
    assert communities(hand, seed=7) == communities(hand, seed=7)


# ----------------------------------------------------------------- bridges
def test_bridges_on_hand_fixture(hand: SemanticGraph) -> None:
    # c-d and g-h are bridges; parallel facts on c -> d do not hide it.
    assert len(hand.facts_between("c", "d")) == 3
    assert bridges(hand) == (("c", "d"), ("g", "h"))
    assert bridges(hand) == tuple(sorted(tuple(sorted(e)) for e in nx.bridges(oracle_graph(hand))))
    assert bridges(hand, relations=["contains"]) == (("a", "c"), ("d", "e"), ("g", "h"))


def test_reciprocal_arcs_are_one_link() -> None:
    graph = build(("a", "b", "c"), [("a", "b", "calls"), ("b", "a", "calls"), ("b", "c", "calls")])
    assert bridges(graph) == (("a", "b"), ("b", "c"))
    assert degree(graph)["b"] == PairDegree(1, 2, 2)


# ------------------------------------------------------------- interchange
def test_to_networkx_keeps_one_edge_per_fact(hand: SemanticGraph) -> None:
    exported = to_networkx(hand)
    assert isinstance(exported, nx.MultiDiGraph)
    assert list(exported.nodes) == sorted(HAND_NODES)
    assert exported.nodes["a"] == {"kind": "function", "identity_status": "stable"}
    assert exported.number_of_edges() == hand.fact_count
    between = exported.get_edge_data("a", "b")
    assert sorted(between) == [fact.id for fact in hand.facts_between("a", "b")]
    assert {data["relation"] for data in between.values()} == {"calls"}
    assert {data["occurrence_count"] for data in between.values()} == {2}
    undirected = next(iter(exported.get_edge_data("f", "g").values()))
    assert undirected["direction"] == "undirected"
    assert exported.get_edge_data("g", "f") is None


# --------------------------------------------------------------- validation
@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda g: shortest_hops(g, ["nope"]), NotFoundError),
        (lambda g: shortest_hops(g, "a"), ValidationError),
        (lambda g: shortest_hops(g, ["a"], direction="up"), ValidationError),
        (lambda g: shortest_hops(g, ["a"], max_depth=-1), ValidationError),
        (lambda g: shortest_hops(g, ["a"], max_depth=True), ValidationError),
        (lambda g: shortest_hops(g, ["a"], relations="calls"), ValidationError),
        (lambda g: shortest_hops(g, ["a"], relations=["teleports"]), ValidationError),
        (lambda g: shortest_path(g, "a", "nope"), NotFoundError),
        (lambda g: shortest_path(g, "a", "b", direction="sideways"), ValidationError),
        (lambda g: pagerank(g, damping=1.0), ValidationError),
        (lambda g: pagerank(g, damping=0), ValidationError),
        (lambda g: pagerank(g, damping=True), ValidationError),
        (lambda g: pagerank(g, damping="0.5"), ValidationError),
        (lambda g: pagerank(g, tolerance=0.0), ValidationError),
        (lambda g: pagerank(g, tolerance=float("nan")), ValidationError),
        (lambda g: pagerank(g, max_iterations=0), ValidationError),
        (lambda g: pagerank(g, max_iterations=2.0), ValidationError),
        (lambda g: betweenness(g, samples=1), ValidationError),
        (lambda g: betweenness(g, exact_limit=-1), ValidationError),
        (lambda g: betweenness(g, seed=-1), ValidationError),
        (lambda g: communities(g, seed=2**64), ValidationError),
        (lambda g: communities(g, resolution=0.0), ValidationError),
        (lambda g: communities(g, resolution=float("inf")), ValidationError),
        (lambda g: communities(g, resolution=10**400), ValidationError),  # no OverflowError
        (lambda g: pagerank(g, tolerance=10**400), ValidationError),
        (lambda g: degree(g, relations=["nope"]), ValidationError),
        (lambda g: bridges(g, relations="contains"), ValidationError),
    ],
)
def test_bad_arguments_raise_typed_errors(
    hand: SemanticGraph, call: Any, error: type[Exception]
) -> None:
    with pytest.raises(error):
        call(hand)


# ------------------------------------------------------ properties / oracles
NAMES = tuple(f"n{i:02d}" for i in range(10))
RELATIONS = ("calls", "contains", "related_to")
edge_lists = st.lists(
    st.tuples(st.sampled_from(NAMES), st.sampled_from(NAMES), st.sampled_from(RELATIONS)),
    min_size=1,
    max_size=30,
)


@settings(max_examples=40, deadline=None)
@given(edges=edge_lists, orders=st.tuples(st.integers(0, 10**6), st.integers(0, 10**6)))
def test_results_independent_of_insertion_order_and_multiplicity(
    edges: list[Edge], orders: tuple[int, int]
) -> None:
    first = build(NAMES, edges, facts=3, occurrences=2, order=orders[0])
    second = build(NAMES, edges, facts=2, occurrences=3, order=orders[1])
    single = build(NAMES, edges)
    assert everything(first) == everything(second) == everything(single)


@settings(max_examples=40, deadline=None)
@given(
    edges=edge_lists,
    seeds=st.sets(st.sampled_from(NAMES), min_size=1, max_size=3),
    depth=st.one_of(st.none(), st.integers(0, 4)),
    relations=st.one_of(st.none(), st.sets(st.sampled_from(RELATIONS))),
)
def test_traversal_matches_networkx(
    edges: list[Edge], seeds: set[str], depth: int | None, relations: set[str] | None
) -> None:
    graph = build(NAMES, edges, facts=2, occurrences=2)
    forwards = oracle_digraph(graph, relations)
    views = {"out": forwards, "in": forwards.reverse(), "both": forwards.to_undirected()}
    for direction, view in views.items():
        expected = nx.multi_source_dijkstra_path_length(view, seeds, cutoff=depth)
        found = shortest_hops(
            graph, seeds, relations=relations, max_depth=depth, direction=direction
        )
        assert found == expected
    source, target = sorted(seeds)[0], NAMES[-1]
    path = shortest_path(graph, source, target, relations=relations)
    if nx.has_path(forwards, source, target):
        assert path == min(tuple(p) for p in nx.all_shortest_paths(forwards, source, target))
    else:
        assert path is None


@settings(max_examples=30, deadline=None)
@given(edges=edge_lists)
def test_centrality_and_bridges_match_networkx(edges: list[Edge]) -> None:
    graph = build(NAMES, edges, facts=3, occurrences=2)
    directed, undirected = oracle_digraph(graph), oracle_graph(graph)
    found = degree(graph)
    assert {node: (d.in_degree, d.out_degree) for node, d in found.items()} == {
        node: (directed.in_degree(node), directed.out_degree(node)) for node in NAMES
    }
    assert {node: d.neighbour_count for node, d in found.items()} == dict(undirected.degree)
    assert betweenness(graph) == pytest.approx(nx.betweenness_centrality(directed), abs=1e-12)
    assert betweenness(graph, exact_limit=0, samples=4, seed=5) == pytest.approx(
        nx.betweenness_centrality(directed, k=4, seed=5), abs=1e-12
    )
    assert pagerank(graph, tolerance=1e-13, max_iterations=2000) == pytest.approx(
        nx.pagerank(directed, tol=1e-13, max_iter=2000), abs=1e-9
    )
    expected_bridges = sorted(tuple(sorted(edge)) for edge in nx.bridges(undirected))
    assert list(bridges(graph)) == expected_bridges
    # Each community is a subset of one connected component.
    labels = communities(graph)
    for component in nx.connected_components(undirected):
        for other in set(NAMES) - component:
            assert all(labels[node] != labels[other] for node in component)


_HASH_SEED_SCRIPT = """
import json, random
from cairn.graph.model import EndpointIdentity
from cairn.graph.multigraph import SemanticGraph
from cairn.graph import topology as t
rng = random.Random(4)
names = [f"m{i:03d}" for i in range(120)]
graph = SemanticGraph()
for name in names:
    graph.add_node(name, "function", identity=EndpointIdentity.stable())
for _ in range(400):
    a, b = rng.choice(names), rng.choice(names)
    graph.add_fact(a, b, "calls", {"invocation": rng.choice(["call", "construct"])})
print(json.dumps({
    "pagerank": t.pagerank(graph),
    "betweenness": t.betweenness(graph),
    "sampled": t.betweenness(graph, exact_limit=10, samples=16),
    "communities": t.communities(graph),
    "bridges": t.bridges(graph),
    "hops": t.shortest_hops(graph, names[:3]),
}))
"""


def test_results_independent_of_hash_seed() -> None:
    outputs = []
    for hash_seed in ("0", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        done = subprocess.run(
            [sys.executable, "-c", _HASH_SEED_SCRIPT],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        )
        outputs.append(json.loads(done.stdout))
    assert outputs[0] == outputs[1]
    assert len(set(outputs[0]["communities"].values())) > 1
