"""Printed segments (``cairn.artifact.segments``): graph.cairn written from the segments
an earlier write printed has the bytes ``encode_artifact`` prints for the same graph,
and only segments with a changed record are printed again."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from artifact_support import FIXED_TIME, build, graph_specs, rich_graph, site
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cairn.artifact import encode_artifact, segments
from cairn.artifact.format import write_artifact
from cairn.artifact.segments import PrintedSegments
from cairn.errors import CairnError, ValidationError
from cairn.graph import EndpointIdentity, Node
from cairn.graph.multigraph import FactCandidate, Part, PartsMerge, SemanticGraph, admit_apart


def _written(graph: SemanticGraph, printed: PrintedSegments | None) -> bytes:
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "graph.cairn"
        size = write_artifact(path, graph, generated_at=FIXED_TIME, printed=printed)
        data = path.read_bytes()
    assert size == len(data)
    return data


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(graph_specs(), min_size=1, max_size=4),
    st.sampled_from([1, 2, 4]),
    st.lists(st.booleans(), min_size=4, max_size=4),
    st.sampled_from([1, 3, segments.JOIN_SEGMENTS]),
)
def test_a_write_from_printed_segments_equals_encode_artifact(
    specs: list[dict[str, Any]], size: int, updates: list[bool], chunk: int
) -> None:
    # One PrintedSegments across a sequence of graphs (records equal or not between
    # them, tables growing and shrinking), updated before some writes and not others;
    # columns joined in chunks of a few segments or of the default count.
    printed = PrintedSegments()
    with (
        mock.patch.object(segments, "SEGMENT_RECORDS", size),
        mock.patch.object(segments, "JOIN_SEGMENTS", chunk),
    ):
        for spec, update in zip(specs, updates, strict=False):
            graph = build(spec)
            if update:
                printed.update(graph)
            assert _written(graph, printed) == encode_artifact(graph, generated_at=FIXED_TIME)


def _counting_prints() -> tuple[list[int], Any]:
    """A stand-in for ``segments._printed`` that notes each printed segment's size."""
    calls: list[int] = []
    real = segments._printed

    def counted(section: Any, part: Any) -> Any:
        calls.append(len(part))
        return real(section, part)

    return calls, counted


def test_the_same_records_print_no_segment_again() -> None:
    graph = rich_graph()
    printed = PrintedSegments()
    assert printed.empty
    calls, counted = _counting_prints()
    with (
        mock.patch.object(segments, "SEGMENT_RECORDS", 2),
        mock.patch.object(segments, "_printed", counted),
    ):
        printed.update(graph)
        first = sum(calls)
        assert not printed.empty
        assert first == graph.node_count + graph.fact_count + graph.occurrence_count
        calls.clear()
        assert _written(graph, printed) == encode_artifact(graph, generated_at=FIXED_TIME)
        assert calls == []  # every segment reused: the very records
        again = rich_graph()  # equal records, other objects: printed again
        assert _written(again, printed) == encode_artifact(again, generated_at=FIXED_TIME)
        assert sum(calls) == first


def test_equal_records_that_print_apart_are_printed_again() -> None:
    # True == 1 == 1.0 and 0.0 == -0.0: a record built again with such a value is
    # equal to the old one but prints differently, so only the very record is reused.
    printed = PrintedSegments()
    outputs = []
    for value in (1, True, 1.0, 0.0, -0.0, 0, False):
        graph = SemanticGraph()
        graph.add_node("n1", "function", attributes={"flag": value})
        data = _written(graph, printed)
        assert data == encode_artifact(graph, generated_at=FIXED_TIME)
        outputs.append(data)
    assert outputs[0] != outputs[1] and outputs[5] != outputs[6]  # 1 / true, 0 / false


def test_a_record_the_artifact_refuses_is_refused_from_segments_too(tmp_path: Path) -> None:
    graph = SemanticGraph()
    graph.add_node("n1", "file", attributes={"path": "/etc/passwd"})
    printed = PrintedSegments()
    with pytest.raises(ValidationError, match="absolute path"):
        encode_artifact(graph, generated_at=FIXED_TIME)
    with pytest.raises(ValidationError, match="absolute path"):
        printed.update(graph)
    assert printed.empty  # nothing kept for a graph the artifact refuses


NODE_IDS = [f"function:m.f{number}" for number in range(6)]
_CALL = {"invocation": "call", "dispatch": "direct", "resolution": "resolved"}

part_specs = st.tuples(
    st.sampled_from(["p", "q", "r"]),
    st.booleans(),  # the very part of the round before, when there was one
    st.booleans(),  # its nodes carry the round's number (other node objects, other text)
    st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5), st.integers(1, 40)), max_size=6),
)
round_specs = st.tuples(
    st.lists(part_specs, max_size=3, unique_by=lambda spec: spec[0]),
    st.booleans(),  # a node and a fact written after the merge
)


def _merge_part(key: str, number: int, touched: bool, calls: list[Any]) -> Part:
    """A part holding the functions its calls join, and those calls."""
    ids = sorted({NODE_IDS[end] for source, target, _ in calls for end in (source, target)})
    attributes = {"round": number} if touched else {}
    nodes = tuple(
        Node(node_id, "function", EndpointIdentity.stable(), attributes) for node_id in ids
    )
    candidates: list[FactCandidate] = [
        (NODE_IDS[source], NODE_IDS[target], "calls", _CALL, site(line))
        for source, target, line in calls
    ]
    return key, nodes, admit_apart(candidates, {node.id: node.identity for node in nodes})


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(round_specs, min_size=1, max_size=6), st.sampled_from([1, 2, 4]))
def test_graphs_made_by_merges_print_only_what_their_journals_name(
    rounds: list[Any], size: int
) -> None:
    """Round after round of graphs merged by difference (parts kept, changed, gone,
    sharing nodes or facts), some written to after the merge, written from one holder
    (as ``cairn watch`` does): every write has the bytes ``encode_artifact`` prints."""
    printed = PrintedSegments()
    kept: PartsMerge | None = None
    last_parts: dict[str, Part] = {}
    with mock.patch.object(segments, "SEGMENT_RECORDS", size):
        for number, (specs, written) in enumerate(rounds):
            parts = [
                last_parts[key]
                if same and key in last_parts
                else _merge_part(key, number, touched, calls)
                for key, same, touched, calls in specs
            ]
            last_parts = {part[0]: part for part in parts}
            graph = SemanticGraph()
            try:
                kept = graph.merge_parts(parts, kept)
            except CairnError:
                kept = None
                continue
            if written and graph.node_count:
                graph.add_node(f"section:doc#{number % 2}", "section")
                target = graph.nodes()[number % graph.node_count].id
                graph.add_fact(
                    f"section:doc#{number % 2}", target, "mentions", occurrence=site(number + 1)
                )
            assert _written(graph, printed) == encode_artifact(graph, generated_at=FIXED_TIME)
            _check_cut(printed, graph)


def _check_cut(holder: PrintedSegments, graph: SemanticGraph) -> None:
    """The held segments are the ones the module's rule cuts the sorted records into:
    each ends after a record whose ID hashes to a multiple of ``SEGMENT_RECORDS``."""
    for name, records in (
        ("nodes", graph.nodes()),
        ("facts", graph.facts()),
        ("occurrences", graph.occurrences()),
    ):
        ends = [
            index + 1
            for index, record in enumerate(records)
            if hash(record.id) % segments.SEGMENT_RECORDS == 0
        ]
        starts = sorted({0, *ends} - {len(records)}) if records else []
        held = holder._held[name]
        assert held.keys == [records[start].id for start in starts]
        assert [item for segment in held.segments for item in segment.records] == list(records)
        assert held.columns == [
            [segment.texts[index] for segment in held.segments]
            for index in range(len(held.columns))
        ]


def test_a_graph_merged_by_difference_is_not_listed_and_prints_only_its_changed_parts() -> None:
    """The write after a merge by difference lists no table (the journal names what
    changed) and prints only the segments that hold a changed record."""
    same = _merge_part("p", 0, False, [(0, 1, 1), (1, 2, 2), (2, 3, 3)])
    other = _merge_part("q", 0, False, [(4, 5, 4)])
    printed = PrintedSegments()
    first = SemanticGraph()
    kept = first.merge_parts([same, other])
    one = mock.patch.object(segments, "SEGMENT_RECORDS", 1)  # a segment per record
    with one:
        assert _written(first, printed) == encode_artifact(first, generated_at=FIXED_TIME)
    changed = _merge_part("q", 1, True, [(4, 5, 9)])
    second = SemanticGraph()
    assert second.merge_parts([same, changed], kept) is kept
    calls, counted = _counting_prints()
    with (
        one,
        mock.patch.object(segments, "_records", side_effect=AssertionError("listed")),
        mock.patch.object(segments, "_printed", counted),
    ):
        assert _written(second, printed) == encode_artifact(second, generated_at=FIXED_TIME)
    # q's two nodes (other attributes), its fact (another occurrence listed) and that
    # occurrence, and at most one record of p per new record (the segment it sorts into
    # is cut again): p's other records stay printed.
    records = second.node_count + second.fact_count + second.occurrence_count
    assert 4 <= sum(calls) <= 4 + 2 < records
