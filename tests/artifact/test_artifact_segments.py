"""Printed segments (``cairn.artifact.segments``): graph.cairn written from the segments
an earlier write printed has the bytes ``encode_artifact`` prints for the same graph,
and only segments with a changed record are printed again."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from artifact_support import FIXED_TIME, build, graph_specs, rich_graph
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cairn.artifact import encode_artifact, segments
from cairn.artifact.format import write_artifact
from cairn.artifact.segments import PrintedSegments
from cairn.errors import ValidationError
from cairn.graph.multigraph import SemanticGraph


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
)
def test_a_write_from_printed_segments_equals_encode_artifact(
    specs: list[dict[str, Any]], size: int, updates: list[bool]
) -> None:
    # One PrintedSegments across a sequence of graphs (records equal or not between
    # them, tables growing and shrinking), updated before some writes and not others.
    printed = PrintedSegments()
    with mock.patch.object(segments, "SEGMENT_RECORDS", size):
        for spec, update in zip(specs, updates, strict=False):
            graph = build(spec)
            if update:
                printed.update(graph)
            assert _written(graph, printed) == encode_artifact(graph, generated_at=FIXED_TIME)


def test_the_same_records_print_no_segment_again() -> None:
    graph = rich_graph()
    printed = PrintedSegments()
    assert printed.empty
    calls: list[int] = []
    real = segments._printed

    def counted(section: Any, part: Any) -> Any:
        calls.append(len(part))
        return real(section, part)

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


def test_a_handback_is_held_as_printed_and_one_that_does_not_fit_empties_the_holder() -> None:
    graph = rich_graph()
    writer = PrintedSegments()
    with mock.patch.object(segments, "SEGMENT_RECORDS", 2):
        writer.update(graph)  # as a forked helper does: every segment is new here
        handback = writer.handback()
        holder = PrintedSegments()
        holder.adopt(graph, handback)
        assert not holder.empty
        with mock.patch.object(segments, "_printed", side_effect=AssertionError("printed")):
            holder.update(graph)  # the very records: nothing printed again
        assert _written(graph, holder) == encode_artifact(graph, generated_at=FIXED_TIME)
        other = SemanticGraph()
        other.add_node("elsewhere", "file")
        holder.adopt(other, handback)  # bounds of another graph's listing: not held
        assert holder.empty
        assert _written(other, holder) == encode_artifact(other, generated_at=FIXED_TIME)
