"""``admit_apart`` + ``SemanticGraph.add_pieces``: the same state as ``add_fact`` one by one."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

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

from cairn.errors import CairnError, IdentityCollisionError, MissingEndpointError, ValidationError
from cairn.graph import (
    EndpointIdentity,
    IdentityReason,
    Node,
    OccurrenceInput,
    SemanticGraph,
)
from cairn.graph.multigraph import FactCandidate, Part, PartsMerge, admit_apart

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


PART_KEYS = ("p", "q", "r")
IDENTITIES = (
    EndpointIdentity.stable(),
    EndpointIdentity.context_bound(IdentityReason.COLLISION_SUFFIX_DERIVED),
)
part_specs = st.tuples(
    st.sampled_from(PART_KEYS),
    st.booleans(),  # the last round's very part under this key, when there is one
    st.lists(st.tuples(st.sampled_from(NODES), st.integers(0, 1)), max_size=4),
    st.lists(located, max_size=6),
    st.booleans(),  # tell admit_apart the part's node identities
)


def _part(key: str, nodes: list[tuple[str, int]], batch: list[FactCandidate], tell: bool) -> Part:
    held: dict[str, Node] = {}
    for node_id, identity in nodes:
        held.setdefault(node_id, Node(node_id, "function", IDENTITIES[identity], {}))
    told = {node_id: node.identity for node_id, node in held.items()} if tell else None
    return key, tuple(held.values()), admit_apart(batch, told)


def _merged(parts: list[Part], last: PartsMerge | None) -> tuple[object, PartsMerge | None]:
    """The graph ``merge_parts`` makes of ``parts`` (or the type of its error), and what it
    leaves for the next merge."""
    graph = SemanticGraph()
    try:
        kept = graph.merge_parts(parts, last)
    except CairnError as exc:
        return type(exc), None
    return graph, kept


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(part_specs, max_size=4), min_size=1, max_size=5))
def test_parts_merged_by_difference_equal_parts_merged_afresh(rounds: list[list[Any]]) -> None:
    """Round after round, merging parts by difference from the last merge (the parts not
    the very same objects taken out and put in again) gives the graph, counters and
    errors of merging every part afresh: parts sharing nodes (the first in part order
    wins), changing a node's identity under facts other parts keep, dropping a node facts
    end at, sharing facts (merged afresh from then on)."""
    _check_rounds(rounds)


def _check_rounds(rounds: list[list[Any]]) -> None:
    """Merge each round's parts by difference and afresh; the two agree. A graph made by
    a merge by difference names every record that is not the very object the graph of
    the merge before held (``SemanticGraph.changes``)."""
    last_parts: dict[str, Part] = {}
    kept: PartsMerge | None = None
    before: SemanticGraph | None = None
    for specs in rounds:
        parts = [
            last_parts[key] if same and key in last_parts else _part(key, nodes, batch, tell)
            for key, same, nodes, batch, tell in specs
        ]
        expected, _ = _merged(parts, None)
        actual, kept = _merged(parts, kept)
        if isinstance(expected, SemanticGraph):
            assert isinstance(actual, SemanticGraph)
            assert_same(actual, expected)
            _check_changes(before, actual)
            _check_listings_and_pairs(actual)
            if before is not None:
                _check_listings_and_pairs(before)  # a graph whose merge has moved on
            before = actual
        else:
            assert actual is expected
            before = None
        last_parts = {part[0]: part for part in parts}


def _check_listings_and_pairs(graph: SemanticGraph) -> None:
    """Listings in ID order and the endpoint pair count, against plain Python."""
    nodes, facts, occurrences = graph.nodes(), graph.facts(), graph.occurrences()
    assert [node.id for node in nodes] == sorted(node.id for node in nodes)
    assert [fact.id for fact in facts] == sorted(fact.id for fact in facts)
    assert [item.id for item in occurrences] == sorted(item.id for item in occurrences)
    assert len(occurrences) == sum(len(fact.occurrence_ids) for fact in facts)
    assert graph.endpoint_pair_count == len({(fact.source, fact.target) for fact in facts})


def _records(graph: SemanticGraph) -> tuple[dict[str, object], ...]:
    """The graph's nodes, facts and occurrences by ID (through the public listings)."""
    return (
        {node.id: node for node in graph.nodes()},
        {fact.id: fact for fact in graph.facts()},
        {item.id: item for item in graph.occurrences()},
    )


def _differing(before: SemanticGraph, after: SemanticGraph) -> list[set[str]]:
    """Per table, the IDs whose record is not the very same object in both graphs."""
    return [
        {key for key in old.keys() | new.keys() if old.get(key) is not new.get(key)}
        for old, new in zip(_records(before), _records(after), strict=True)
    ]


def _check_changes(before: SemanticGraph | None, after: SemanticGraph) -> None:
    changes = after.changes()
    if changes is None:
        return
    if changes.generation == 0:
        assert changes.merged is None  # the first merge of a lineage put in everything
        return
    assert before is not None
    last = before.changes()
    assert last is not None and last.lineage is changes.lineage
    assert last.generation == changes.generation - 1
    assert changes.merged is not None
    for differing, merged, written, written_before in zip(
        _differing(before, after), changes.merged, changes.written, last.written, strict=True
    ):
        assert differing <= set(merged) | set(written) | set(written_before)


A_TO_B = [("a", "b", "calls", CALL, site(1))]
C_TO_A = [("c", "a", "calls", CALL, site(2))]
A_TO_B_ELSEWHERE = [("a", "b", "calls", CALL, site(5))]


@pytest.mark.parametrize(
    "rounds",
    [
        pytest.param(
            [
                [
                    ("p", False, [("a", 0), ("b", 0)], [], True),
                    ("q", False, [("c", 0)], C_TO_A, True),
                ],
                [("p", False, [("a", 1), ("b", 0)], [], True), ("q", True, [], [], True)],
            ],
            id="a node's identity changes under facts another part keeps",
        ),
        pytest.param(
            [
                [("p", False, [("a", 0), ("b", 0)], A_TO_B, True), ("q", False, [], [], True)],
                [("p", True, [], [], True), ("q", False, [], A_TO_B_ELSEWHERE, True)],
            ],
            id="a changed part holds a fact another part keeps",
        ),
        pytest.param(
            [
                [
                    ("p", False, [("a", 0), ("b", 0)], [], True),
                    ("q", False, [("c", 0)], C_TO_A, True),
                ],
                [("p", False, [("b", 0)], [], True), ("q", True, [], [], True)],
            ],
            id="a node no part holds now, that a kept fact ends at",
        ),
        pytest.param(
            [
                [
                    ("p", False, [("a", 0)], [], True),
                    ("q", False, [("a", 1), ("b", 0)], A_TO_B, True),
                ],
                [("p", False, [("c", 0)], [], True), ("q", True, [], [], True)],
            ],
            id="the first holder of a node lets it go: the next one's node stands",
        ),
    ],
)
def test_parts_merged_by_difference_in_the_cases_that_need_care(rounds: list[list[Any]]) -> None:
    _check_rounds(rounds)


def test_a_merge_by_difference_takes_out_and_puts_in_only_the_parts_that_changed() -> None:
    """Only a part that is not the very same object is merged again; the records of the
    others stay the objects the last merge stored."""
    same = _part("p", [("a", 0), ("b", 0)], [("a", "b", "calls", CALL, site(1))], True)
    changed = _part("q", [("c", 0)], [("c", "a", "calls", CALL, site(2))], True)
    graph = SemanticGraph()
    kept = graph.merge_parts([same, changed])
    assert kept is not None
    again = _part("q", [("c", 0)], [("c", "a", "calls", CALL, site(3))], True)
    taken: list[object] = []
    from unittest import mock

    import cairn.graph.multigraph as multigraph

    by_difference = multigraph._by_difference

    def spy(last: PartsMerge, listed: list[Part]) -> PartsMerge | None:
        found = by_difference(last, listed)
        taken.append(found)
        return found

    second = SemanticGraph()
    with mock.patch.object(multigraph, "_by_difference", spy):
        assert second.merge_parts([same, again], kept) is kept
    assert taken == [kept]
    fresh = SemanticGraph()
    fresh.merge_parts([same, again])
    assert_same(second, fresh)
    (fact_id,) = same[2].facts
    assert second.fact(fact_id) is graph.fact(fact_id)


def test_a_graph_made_by_a_merge_names_what_it_changed_and_what_was_written_since() -> None:
    """``changes`` of the first merge says everything; of a merge by difference, the
    records of the parts taken out and put in; and both add every record written to the
    graph afterwards (one by one, in a batch, or another merge of parts)."""
    same = _part("p", [("a", 0), ("b", 0)], [("a", "b", "calls", CALL, site(1))], True)
    changed = _part("q", [("c", 0)], [("c", "a", "calls", CALL, site(2))], True)
    first = SemanticGraph()
    kept = first.merge_parts([same, changed])
    assert kept is not None
    opened = first.changes()
    assert opened is not None and opened.generation == 0 and opened.merged is None
    assert opened.written == (set(), set(), set())
    again = _part("q", [("c", 0)], [("c", "a", "calls", CALL, site(3))], True)
    second = SemanticGraph()
    assert second.merge_parts([same, again], kept) is kept
    changes = second.changes()
    assert changes is not None
    assert (changes.lineage, changes.generation) == (opened.lineage, 1)
    (fact_id,) = again[2].facts
    assert changes.merged == ({"c"}, {fact_id}, {*changed[2].occurrences, *again[2].occurrences})
    assert changes.written == (set(), set(), set())
    second.add_node("d", "function")
    known = second.add_fact("a", "b", "calls", CALL, occurrence=site(9))
    second.add_facts([("d", "a", "calls", CALL, site(4))])
    other = _part("r", [("e", 0)], [("e", "a", "calls", CALL, site(6))], True)
    more = _part("s", [], [("c", "a", "calls", CALL, site(11))], False)  # a merged fact
    second.merge_parts([other, more], remember=False)
    added = {fact.id for fact in second.facts_from("d")} | {*other[2].facts}
    occurrence_ids = {item.id for fact_id in added for item in second.occurrences_of(fact_id)}
    assert changes.written == (
        {"d", "e"},
        {known.fact_id, *added, fact_id},
        {known.occurrence_id, *occurrence_ids, *more[2].occurrences},
    )
    assert set(more[2].facts) == {fact_id}  # listed again: one more occurrence
    assert SemanticGraph().changes() is None  # not made by a merge
    assert second.copy().changes() is None
    _check_listings_and_pairs(second)
    third = SemanticGraph()
    assert third.merge_parts([same, changed], kept) is kept
    _check_listings_and_pairs(second)  # its merge moved on: counted afresh
    _check_listings_and_pairs(third)
    assert third.endpoint_pair_count == 2


def test_a_merge_by_difference_that_fails_leaves_earlier_graphs_counting_right() -> None:
    """A merge by difference that cannot stand has already updated the merge in part:
    a graph made from that merge before no longer counts its endpoint pairs from it."""
    first_parts = [
        _part("p", [("a", 0), ("b", 0)], [("a", "b", "calls", CALL, site(1))], True),
        _part("q", [("c", 0)], [("c", "a", "calls", CALL, site(2))], True),
    ]
    graph = SemanticGraph()
    kept = graph.merge_parts(first_parts)
    assert kept is not None and graph.endpoint_pair_count == 2
    # "a" is held by no part now, and the kept part q's fact ends at it: merged afresh
    # (where it fails for the missing endpoint), after the pair (a, b) was taken out.
    dropped = [_part("p", [("b", 0)], [], True), first_parts[1]]
    with pytest.raises(MissingEndpointError):
        SemanticGraph().merge_parts(dropped, kept)
    assert graph.endpoint_pair_count == 2
