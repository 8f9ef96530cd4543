"""``admit_apart`` + ``SemanticGraph.add_pieces``: the same state as ``add_fact`` one by one."""

from __future__ import annotations

from itertools import pairwise

import pytest
from graph_helpers import CALL, site
from hypothesis import given, settings
from hypothesis import strategies as st
from test_multigraph_bulk import (
    MAX_CANDIDATES,
    NODES,
    UNKNOWN_NODE,
    admit_one_by_one,
    base_graph,
    candidates,
)

from cairn.errors import IdentityCollisionError, MissingEndpointError, ValidationError
from cairn.graph import OccurrenceInput, SemanticGraph
from cairn.graph.multigraph import FactCandidate, admit_apart

located = candidates().filter(lambda candidate: candidate[4] is not None)
"""Candidates that carry an occurrence (what a piece holds)."""


def split(batch: list[FactCandidate], cuts: list[int]) -> list[list[FactCandidate]]:
    """``batch`` cut at ``cuts`` (positions, any order, repeats give empty pieces)."""
    bounds = [0, *sorted(cut % (len(batch) + 1) for cut in cuts), len(batch)]
    return [batch[start:end] for start, end in pairwise(bounds)]


def assert_same(actual: SemanticGraph, expected: SemanticGraph) -> None:
    assert actual == expected
    assert actual.counts() == expected.counts()
    assert actual.admission_counts == expected.admission_counts
    assert actual.unregistered_relation_admissions == expected.unregistered_relation_admissions
    for node in NODES:
        assert actual.facts_from(node) == expected.facts_from(node)
        assert actual.facts_to(node) == expected.facts_to(node)
    assert actual.occurrences() == expected.occurrences()


@settings(max_examples=300, deadline=None)
@given(
    st.lists(located, max_size=MAX_CANDIDATES),
    st.lists(st.integers(0, MAX_CANDIDATES), max_size=6),
    st.lists(candidates(), max_size=MAX_CANDIDATES // 2),
    st.booleans(),
)
def test_pieces_equal_one_by_one(
    batch: list[FactCandidate],
    cuts: list[int],
    before: list[FactCandidate],
    tell_identities: bool,
) -> None:
    """Any cut of the candidates into pieces, merged in order onto any prior state, gives
    the graph (merged occurrences, endpoint identities, indexes, counters) that admitting
    them one by one gives."""
    expected, actual = base_graph(), base_graph()
    admit_one_by_one(expected, before)
    admit_one_by_one(actual, before)
    actual.facts_from("a")  # a built index must be kept up to date as well
    admit_one_by_one(expected, batch)
    identities = {node.id: node.identity for node in actual.nodes()} if tell_identities else None
    pieces = [admit_apart(part, identities) for part in split(batch, cuts)]
    counts = actual.add_pieces(pieces)
    assert_same(actual, expected)
    assert sum(counts.values()) == len(batch)


def test_a_fact_only_one_piece_holds_is_stored_as_that_object() -> None:
    """Merging derives nothing again: what a single piece made is what the graph keeps."""
    piece = admit_apart([("a", "b", "calls", CALL, site(1))])
    graph = base_graph()
    graph.add_pieces([piece])
    (fact_id,) = piece.facts
    (occurrence_id,) = piece.occurrences
    assert graph.fact(fact_id) is piece.facts[fact_id]
    assert graph.occurrence(occurrence_id) is piece.occurrences[occurrence_id]


def test_pieces_need_occurrences() -> None:
    with pytest.raises(ValidationError, match="occurrence"):
        admit_apart([("a", "b", "calls", CALL, None)])


def test_merge_refuses_a_missing_endpoint_and_changes_nothing() -> None:
    """Endpoints are checked at the merge (a piece cannot know the graph's nodes)."""
    good = admit_apart([("a", "b", "calls", CALL, site(1))])
    bad = admit_apart([("a", UNKNOWN_NODE, "calls", CALL, site(2))])
    graph = base_graph()
    untouched = graph.copy()
    with pytest.raises(MissingEndpointError, match=UNKNOWN_NODE):
        graph.add_pieces([good, bad])
    assert graph == untouched


def test_merge_refuses_two_payloads_under_one_fact_id() -> None:
    """A piece whose fact disagrees with the stored fact of its ID is refused."""
    piece = admit_apart([("a", "b", "calls", CALL, site(1))])
    (fact_id, fact) = next(iter(piece.facts.items()))
    forged = type(piece)(
        {
            fact_id: type(fact)(
                fact_id,
                fact.direction,
                "a",
                "c",
                "calls",
                fact.discriminator,
                fact.endpoint_identity,
                fact.occurrence_ids,
            )
        },
        piece.occurrences,
        piece.admitted,
        piece.unregistered,
    )
    graph = base_graph()
    graph.add_pieces([piece])
    untouched = graph.copy()
    with pytest.raises(IdentityCollisionError):
        graph.add_pieces([forged])
    assert graph == untouched


def test_unregistered_relations_are_counted_not_stored() -> None:
    occurrence = OccurrenceInput(adapter_id="x", strategy="s", source_file="a.py")
    piece = admit_apart([("a", "b", "unregistered_relation", None, occurrence)])
    assert piece.facts == {}
    graph = base_graph()
    counts = graph.add_pieces([piece])
    assert counts["unresolved"] == 1
    assert graph.unregistered_relation_admissions == {"unregistered_relation": 1}
