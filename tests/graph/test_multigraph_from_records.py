"""``SemanticGraph.from_records``: the bulk build equals admission and names the first offender.

The graph built by admission (``add_fact``) is the oracle for the indexes; the typed
errors are the ones the record-by-record checks raise, for the first bad record.
"""

from __future__ import annotations

import dataclasses
import unicodedata
from typing import Any

import pytest
from graph_helpers import CALL, CONSTRUCT, site, stable_graph
from hypothesis import given, settings
from hypothesis import strategies as st

from cairn.errors import ConflictError, MissingEndpointError
from cairn.graph import SemanticGraph

NODES = ("a", "b", "c", "d")


def admitted() -> SemanticGraph:
    """Parallel facts, an undirected fact, several occurrences per fact, a fact without any."""
    graph = stable_graph(*NODES)
    graph.add_fact("a", "b", "calls", CALL, occurrence=site(1))
    graph.add_fact("a", "b", "calls", CALL, occurrence=site(2))
    graph.add_fact("a", "b", "calls", CONSTRUCT, occurrence=site(3))
    graph.add_fact("b", "a", "calls", CALL, occurrence=site(4))
    graph.add_fact("c", "a", "related_to", None, occurrence=site(5))
    graph.add_fact("b", "c", "contains", None)
    return graph


def rebuild(graph: SemanticGraph, **records: Any) -> SemanticGraph:
    given = {
        "nodes": graph.nodes(),
        "facts": graph.facts(),
        "occurrences": graph.occurrences(),
        "admission_counts": graph.admission_counts,
        "unregistered_relation_admissions": graph.unregistered_relation_admissions,
        **records,
    }
    return SemanticGraph.from_records(**given)


def test_bulk_build_equals_admission_including_every_index() -> None:
    graph = admitted()
    rebuilt = rebuild(graph)
    assert rebuilt == graph
    assert rebuilt.counts() == graph.counts()
    for node in NODES:
        assert rebuilt.facts_from(node) == graph.facts_from(node)
        assert rebuilt.facts_to(node) == graph.facts_to(node)
        for other in NODES:
            assert rebuilt.facts_between(node, other) == graph.facts_between(node, other)
    for relation in ("calls", "related_to", "contains", "imports"):
        assert rebuilt.facts_by_relation(relation) == graph.facts_by_relation(relation)
    assert rebuilt.endpoint_pairs() == graph.endpoint_pairs()
    assert rebuilt.endpoint_pairs(["contains"]) == (("b", "c"),)


def test_the_rebuilt_indexes_keep_working_after_more_admissions() -> None:
    graph = admitted()
    rebuilt = rebuild(graph)
    for target in (graph, rebuilt):
        target.add_fact("a", "b", "calls", CALL, occurrence=site(9))
        target.add_fact("d", "a", "calls", CALL)
    assert rebuilt == graph
    assert rebuilt.facts_from("d") == graph.facts_from("d")
    assert rebuilt.facts_to("a") == graph.facts_to("a")
    assert len(rebuilt.facts_to("a")) == 2  # b->a and d->a calls (related_to is stored a-c)


def test_records_may_come_in_any_order_and_from_generators() -> None:
    graph = admitted()
    rebuilt = SemanticGraph.from_records(
        nodes=(node for node in reversed(graph.nodes())),
        facts=iter(reversed(graph.facts())),
        occurrences=reversed(graph.occurrences()),
        admission_counts=graph.admission_counts,
    )
    assert rebuilt == graph


def test_a_node_given_twice_is_a_conflict() -> None:
    graph = admitted()
    with pytest.raises(ConflictError, match=r"^node 'b' given twice$"):
        rebuild(graph, nodes=[*graph.nodes(), graph.node("b")])


def test_a_fact_given_twice_is_a_conflict() -> None:
    graph = admitted()
    fact = graph.facts()[2]
    with pytest.raises(ConflictError, match=f"^fact {fact.id} given twice$"):
        rebuild(graph, facts=[*graph.facts(), fact])


@pytest.mark.parametrize("missing", ["a", "b", "c"])
def test_a_missing_endpoint_is_named_with_its_role(missing: str) -> None:
    graph = admitted()
    kept = [node for node in graph.nodes() if node.id != missing]
    first = next(f for f in graph.facts() if missing in (f.source, f.target))
    role = "source" if first.source == missing else "target"
    with pytest.raises(MissingEndpointError, match=f"^{role} node '{missing}' does not exist"):
        rebuild(graph, nodes=kept)
    with pytest.raises(MissingEndpointError) as caught:
        rebuild(graph, nodes=kept)
    assert caught.value.details == {"role": role, "node_id": missing}


def test_the_first_missing_endpoint_in_record_order_is_named() -> None:
    graph = admitted()
    kept = [node for node in graph.nodes() if node.id not in {"a", "c"}]
    facts = [*graph.facts_between("b", "c"), *graph.facts_from("a")]
    with pytest.raises(MissingEndpointError) as caught:
        rebuild(graph, nodes=kept, facts=facts, occurrences=())
    assert caught.value.details == {"role": "target", "node_id": "c"}
    with pytest.raises(MissingEndpointError) as caught:
        rebuild(graph, nodes=kept, facts=facts[::-1], occurrences=())
    assert caught.value.details == {"role": "source", "node_id": "a"}


def test_the_first_offender_wins_across_kinds_of_problem() -> None:
    graph = admitted()
    facts = graph.facts()
    stranger = dataclasses.replace(facts[-1], source="zz")
    with pytest.raises(ConflictError, match="given twice"):
        rebuild(graph, facts=[facts[0], facts[0], stranger])
    with pytest.raises(MissingEndpointError, match="'zz'"):
        rebuild(graph, facts=[facts[0], stranger, facts[0]])


def test_an_occurrence_its_fact_does_not_list_is_refused() -> None:
    graph = admitted()
    occurrence = graph.occurrences()[0]
    others = [fact for fact in graph.facts() if fact.id != occurrence.fact_id]
    moved = dataclasses.replace(occurrence, fact_id=others[0].id)
    occurrences = [moved if item.id == occurrence.id else item for item in graph.occurrences()]
    with pytest.raises(
        MissingEndpointError,
        match=f"^occurrence {occurrence.id} is not listed by fact {others[0].id}$",
    ):
        rebuild(graph, occurrences=occurrences)


def test_an_occurrence_of_an_unknown_fact_is_refused() -> None:
    graph = admitted()
    occurrence = graph.occurrences()[0]
    with pytest.raises(MissingEndpointError, match="is not listed by fact"):
        rebuild(graph, facts=[f for f in graph.facts() if f.id != occurrence.fact_id])


def test_an_occurrence_given_twice_is_a_conflict() -> None:
    graph = admitted()
    occurrence = graph.occurrences()[1]
    with pytest.raises(ConflictError, match=f"^occurrence {occurrence.id} given twice$"):
        rebuild(graph, occurrences=[*graph.occurrences(), occurrence])


def test_a_listed_occurrence_that_was_not_given_is_refused() -> None:
    graph = admitted()
    with pytest.raises(
        MissingEndpointError, match=r"^a fact lists an occurrence that was not given$"
    ):
        rebuild(graph, occurrences=graph.occurrences()[1:])


def test_an_occurrence_listed_by_two_facts_is_refused() -> None:
    graph = admitted()
    occurrence = graph.occurrences()[0]
    facts = list(graph.facts())
    at = next(i for i, fact in enumerate(facts) if fact.id != occurrence.fact_id)
    facts[at] = dataclasses.replace(
        facts[at], occurrence_ids=tuple(sorted((*facts[at].occurrence_ids, occurrence.id)))
    )
    with pytest.raises(MissingEndpointError, match="lists an occurrence that was not given"):
        rebuild(graph, facts=facts)


def test_an_occurrence_listed_twice_by_its_fact_is_refused() -> None:
    graph = admitted()
    occurrence = graph.occurrences()[0]
    facts = [
        dataclasses.replace(fact, occurrence_ids=(*fact.occurrence_ids, occurrence.id))
        if fact.id == occurrence.fact_id
        else fact
        for fact in graph.facts()
    ]
    with pytest.raises(MissingEndpointError, match="lists an occurrence that was not given"):
        rebuild(graph, facts=facts)


def _outcome(action: Any) -> Any:
    try:
        return ("ok", action())
    except (ConflictError, MissingEndpointError) as exc:
        return (type(exc), str(exc), exc.details)


@settings(max_examples=150, deadline=None)
@given(
    picks=st.lists(st.tuples(st.sampled_from(["node", "fact", "occurrence"]), st.integers(0, 20))),
    drops=st.lists(st.tuples(st.sampled_from(["node", "fact", "occurrence"]), st.integers(0, 20))),
    flip=st.booleans(),
)
def test_bulk_and_record_by_record_checks_agree(
    picks: list[tuple[str, int]], drops: list[tuple[str, int]], flip: bool
) -> None:
    """Random duplicates and omissions: the same graph or the same error, both ways."""
    graph = admitted()
    records: dict[str, list[Any]] = {
        "node": list(graph.nodes()),
        "fact": list(graph.facts()),
        "occurrence": list(graph.occurrences()),
    }
    for kind, index in drops:
        if records[kind]:
            records[kind].pop(index % len(records[kind]))
    for kind, index in picks:
        if records[kind]:
            records[kind].append(records[kind][index % len(records[kind])])
    if flip:
        for items in records.values():
            items.reverse()

    def bulk() -> SemanticGraph:
        return SemanticGraph.from_records(
            nodes=records["node"], facts=records["fact"], occurrences=records["occurrence"]
        )

    def one_by_one() -> SemanticGraph:
        reference = SemanticGraph()
        reference._load_one_by_one(records["node"], records["fact"], records["occurrence"])
        return reference

    assert _outcome(bulk) == _outcome(one_by_one)


def test_community_labels_are_kept_in_nfc() -> None:
    # U+F9FF is a CJK compatibility ideograph; its NFC form is another code point.
    graph = SemanticGraph()
    graph.set_community_label("\uf9ff", "e\u0301")
    assert dict(graph.community_labels) == {unicodedata.normalize("NFC", "\uf9ff"): "\u00e9"}
