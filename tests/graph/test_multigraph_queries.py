"""Spec §8: indexes, plural queries, immutability, counts, copy and subgraph."""

from __future__ import annotations

import random
from dataclasses import FrozenInstanceError

import pytest
from graph_helpers import CALL, CONSTRUCT, site, stable_graph
from hypothesis import given, settings
from hypothesis import strategies as st

from cairn.errors import ConflictError, MissingEndpointError, NotFoundError, ValidationError
from cairn.graph import Direction, EndpointIdentity, Hyperedge, SemanticGraph

IMPORT = {
    "specifier": "b",
    "binding_kind": "named",
    "imported_name": "f",
    "phase": "runtime",
    "form": "static",
    "resolution": "internal",
}


def build_multi() -> SemanticGraph:
    """Three nodes; a->b carries 3 facts (2 calls, 1 imports) with 2+ occurrences each."""
    graph = stable_graph("a", "b", "c")
    for line in (1, 2):
        graph.add_fact("a", "b", "calls", CALL, occurrence=site(line))
        graph.add_fact("a", "b", "calls", CONSTRUCT, occurrence=site(10 + line))
        graph.add_fact("a", "b", "imports", IMPORT, occurrence=site(20 + line))
    graph.add_fact("b", "c", "calls", CALL, occurrence=site(30))
    graph.add_fact("c", "a", "contains", occurrence=site(40))
    return graph


def test_plural_queries_return_every_fact_in_id_order() -> None:
    graph = build_multi()
    between = graph.facts_between("a", "b")
    assert len(between) == 3
    assert [f.id for f in between] == sorted(f.id for f in between)
    assert graph.relations_between("a", "b") == ("calls", "imports")
    assert len(graph.facts_between("a", "b", relations=["calls"])) == 2
    assert graph.facts_between("b", "a") == ()
    assert len(graph.facts_from("a")) == 3
    assert len(graph.facts_from("a", relations={"imports"})) == 1
    assert len(graph.facts_to("b")) == 3
    assert len(graph.facts_to("a")) == 1
    assert len(graph.facts_by_relation("calls")) == 3
    assert graph.facts_by_relation("mentions") == ()
    for fact in between:
        occurrences = graph.occurrences_of(fact.id)
        assert len(occurrences) == 2
        assert all(o.fact_id == fact.id for o in occurrences)


def test_named_counts() -> None:
    graph = build_multi()
    counts = graph.counts()
    assert counts.to_json() == {
        "node_count": 3,
        "fact_count": 5,
        "endpoint_pair_count": 3,
        "occurrence_count": 8,
        "hyperedge_count": 0,
    }
    assert graph.admission_counts == {
        "new_fact": 5,
        "additional_occurrence": 3,
        "exact_duplicate_merged": 0,
        "unresolved": 0,
    }


def test_endpoint_pairs_each_once_with_relation_filter() -> None:
    graph = build_multi()
    assert graph.endpoint_pairs() == (("a", "b"), ("b", "c"), ("c", "a"))
    assert graph.endpoint_pairs(relations=["imports"]) == (("a", "b"),)
    assert graph.endpoint_pairs(relations=["contains"]) == (("c", "a"),)


def test_undirected_facts_sort_endpoints_and_match_either_order() -> None:
    graph = stable_graph("x", "y")
    one = graph.add_fact("y", "x", "related_to")
    two = graph.add_fact("x", "y", "related_to")
    assert one.fact_id == two.fact_id
    fact = graph.fact(one.fact_id or "")
    assert (fact.source, fact.target) == ("x", "y")
    assert graph.facts_between("y", "x") == (fact,)
    assert graph.facts_between("x", "y") == (fact,)


def test_returned_values_are_immutable() -> None:
    graph = build_multi()
    fact = graph.facts()[0]
    with pytest.raises(FrozenInstanceError):
        fact.relation = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        fact.discriminator.value["invocation"] = "x"  # type: ignore[index]
    node = graph.node("a")
    with pytest.raises(TypeError):
        node.attributes["k"] = 1  # type: ignore[index]
    assert isinstance(fact.occurrence_ids, tuple)
    assert graph.facts()[0] == fact


def test_mutating_inputs_after_admission_cannot_change_the_graph() -> None:
    graph = stable_graph("a", "b")
    attributes = {"tags": ["x"]}
    graph.add_node("n", "file", identity=EndpointIdentity.stable(), attributes=attributes)
    attributes["tags"].append("y")
    discriminator = dict(CALL)
    graph.add_fact("a", "b", "calls", discriminator)
    discriminator["invocation"] = "construct"
    assert graph.node("n").attributes["tags"] == ("x",)
    assert graph.facts()[0].discriminator.value["invocation"] == "call"


def test_copy_preserves_everything_and_is_independent() -> None:
    graph = build_multi()
    graph.add_fact("a", "b", "injects")
    graph.add_hyperedge("h1", "module_group", ["a", "b"], {"name": "core"})
    graph.set_community_label("0", "core")
    clone = graph.copy()
    assert clone == graph
    assert clone.admission_counts == graph.admission_counts
    assert clone.unregistered_relation_admissions == {"injects": 1}
    clone.add_node("d", "function", identity=EndpointIdentity.stable())
    clone.add_fact("c", "d", "calls", CALL)
    assert not graph.has_node("d")
    assert graph.fact_count == 5 and clone.fact_count == 6
    assert clone != graph


def test_subgraph_keeps_induced_facts_occurrences_qualifications_and_counters() -> None:
    graph = build_multi()
    graph.add_node("u", "function", identity=EndpointIdentity.undeclared())
    graph.add_fact("u", "a", "calls", CALL, occurrence=site(50))
    graph.add_fact("a", "b", "injects")
    graph.add_hyperedge("h1", "group", ["a", "b"])
    graph.add_hyperedge("h2", "group", ["a", "c"])
    view = graph.subgraph(["a", "b", "u"])
    assert view.node_ids() == ("a", "b", "u")
    assert view.node("u").identity == EndpointIdentity.undeclared()
    assert view.fact_count == 4  # the three a->b facts and u->a
    assert view.occurrence_count == 7
    assert [h.id for h in view.hyperedges()] == ["h1"]
    assert view.admission_counts == graph.admission_counts
    assert view.unregistered_relation_admissions == graph.unregistered_relation_admissions
    for fact in view.facts():
        assert fact == graph.fact(fact.id)
    with pytest.raises(NotFoundError):
        graph.subgraph(["a", "nope"])


def test_hyperedges_validate_members_and_conflicts() -> None:
    graph = stable_graph("a", "b")
    edge = graph.add_hyperedge("h", "group", ["b", "a", "b"])
    assert edge.members == ("a", "b")
    assert graph.add_hyperedge("h", "group", ["a", "b"]) == edge
    with pytest.raises(ConflictError):
        graph.add_hyperedge("h", "group", ["a"])
    with pytest.raises(MissingEndpointError):
        graph.add_hyperedge("g", "group", ["a", "zz"])
    with pytest.raises(ValidationError):
        Hyperedge("e", "group", ())
    with pytest.raises(ValidationError):
        graph.set_community_label("", "x")


def test_from_records_round_trip_and_structural_checks() -> None:
    graph = build_multi()
    graph.add_hyperedge("h", "group", ["a", "b"])
    graph.set_community_label("1", "one")
    rebuilt = SemanticGraph.from_records(
        nodes=graph.nodes(),
        facts=graph.facts(),
        occurrences=graph.occurrences(),
        hyperedges=graph.hyperedges(),
        community_labels=graph.community_labels,
        admission_counts=graph.admission_counts,
        unregistered_relation_admissions=graph.unregistered_relation_admissions,
    )
    assert rebuilt == graph
    with pytest.raises(ConflictError):
        SemanticGraph.from_records(
            nodes=[*graph.nodes(), graph.node("a")], facts=(), occurrences=()
        )
    with pytest.raises(MissingEndpointError):
        SemanticGraph.from_records(
            nodes=graph.nodes(), facts=graph.facts(), occurrences=graph.occurrences()[1:]
        )
    with pytest.raises(MissingEndpointError):
        SemanticGraph.from_records(
            nodes=[graph.node("a")], facts=graph.facts(), occurrences=graph.occurrences()
        )


CANDIDATES = [
    ("a", "b", "calls", CALL, 1),
    ("a", "b", "calls", CONSTRUCT, 2),
    ("a", "b", "calls", CALL, 3),
    ("a", "b", "imports", IMPORT, 4),
    ("b", "a", "calls", CALL, 5),
    ("b", "c", "contains", None, 6),
    ("c", "a", "related_to", None, 7),
    ("a", "c", "related_to", None, 8),
    ("a", "b", "calls", CALL, 1),
]


def build_in_order(order: list[int]) -> SemanticGraph:
    graph = SemanticGraph()
    nodes = ["a", "b", "c"]
    for index in order[: len(nodes)]:
        graph.add_node(nodes[index % 3], "function", identity=EndpointIdentity.stable())
    for node in nodes:
        if not graph.has_node(node):
            graph.add_node(node, "function", identity=EndpointIdentity.stable())
    for index in order:
        source, target, relation, disc, line = CANDIDATES[index]
        graph.add_fact(source, target, relation, disc, occurrence=site(line))
    return graph


def snapshot(graph: SemanticGraph) -> tuple[object, ...]:
    queries: list[object] = []
    for source in ("a", "b", "c"):
        queries.append(graph.facts_from(source))
        queries.append(graph.facts_to(source))
        for target in ("a", "b", "c"):
            queries.append(graph.facts_between(source, target))
            queries.append(graph.relations_between(source, target))
    for relation in ("calls", "imports", "contains", "related_to"):
        queries.append(graph.facts_by_relation(relation))
    return (
        graph.nodes(),
        graph.facts(),
        graph.occurrences(),
        graph.endpoint_pairs(),
        tuple(graph.occurrences_of(f.id) for f in graph.facts()),
        *queries,
    )


@settings(max_examples=60, deadline=None)
@given(st.permutations(list(range(len(CANDIDATES)))))
def test_every_plural_query_is_independent_of_insertion_order(order: list[int]) -> None:
    """Gate 3: ordering of relations_between and every plural query ignores insertion order."""
    assert snapshot(build_in_order(order)) == snapshot(build_in_order(sorted(order)))


def test_random_orders_give_equal_graphs() -> None:
    rng = random.Random(7)
    base = build_in_order(list(range(len(CANDIDATES))))
    for _ in range(10):
        order = list(range(len(CANDIDATES)))
        rng.shuffle(order)
        other = build_in_order(order)
        assert other.facts() == base.facts()
        assert other.occurrences() == base.occurrences()


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5), st.booleans()), max_size=30),
    st.integers(0, 30),
)
def test_indexed_queries_agree_with_a_scan_whenever_the_index_is_first_used(
    edges: list[tuple[int, int, bool]], asked_after: int
) -> None:
    """The index is built on its first query: asked after any prefix of the additions
    (one by one or in bulk), every query equals a filter over ``facts()``."""
    names = [f"n{i}" for i in range(6)]
    graph = stable_graph(*names)
    asked = False

    def check() -> None:
        facts = graph.facts()
        pairs = len({(f.source, f.target) for f in facts})
        assert graph.endpoint_pair_count == pairs  # before the first query, then after
        for name in names:
            assert graph.facts_from(name) == tuple(f for f in facts if f.source == name)
            assert graph.facts_to(name) == tuple(f for f in facts if f.target == name)
            for other in names:
                between = tuple(
                    f
                    for f in facts
                    if (f.source, f.target) == (name, other)
                    or (
                        f.direction is Direction.UNDIRECTED
                        and (f.source, f.target) == (other, name)
                    )
                )
                assert graph.facts_between(name, other) == between
        for relation in ("calls", "contains"):
            assert graph.facts_by_relation(relation) == tuple(
                f for f in facts if f.relation == relation
            )
        assert graph.endpoint_pair_count == len({(f.source, f.target) for f in facts})

    for index, (source, target, bulk) in enumerate(edges):
        if index == asked_after and not asked:
            check()
            asked = True
        relation = "calls" if source <= target else "contains"
        disc = CALL if relation == "calls" else None
        if bulk:
            graph.add_facts([(names[source], names[target], relation, disc, site(index + 1))])
        else:
            graph.add_fact(names[source], names[target], relation, disc, occurrence=site(index + 1))
    check()
