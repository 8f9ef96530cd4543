"""Printed rows kept between writes (``cairn watch``) give ``encode_artifact``'s bytes."""

from __future__ import annotations

from pathlib import Path

import pytest
from artifact_support import build, graph_specs, rich_graph
from hypothesis import given, settings
from hypothesis import strategies as st

from cairn.artifact.format import encode_artifact, write_artifact
from cairn.artifact.rows import PrintedRows
from cairn.errors import ValidationError
from cairn.graph import SemanticGraph
from cairn.graph.model import EndpointIdentity

TIME = "2024-01-01T00:00:00Z"


def _written(path: Path, graph: SemanticGraph, rows: PrintedRows | None) -> bytes:
    write_artifact(path, graph, generated_at=TIME, rows=rows)
    return path.read_bytes()


def _same_records(graph: SemanticGraph) -> SemanticGraph:
    """A graph holding ``graph``'s very record objects (as a watch round reuses them)."""
    return SemanticGraph.from_records(
        nodes=graph.nodes(),
        facts=graph.facts(),
        occurrences=graph.occurrences(),
        hyperedges=graph.hyperedges(),
        community_labels=graph.community_labels,
    )


@settings(max_examples=120, deadline=None)
@given(st.lists(graph_specs(), min_size=1, max_size=4))
def test_every_write_equals_the_writer_without_rows(
    tmp_path_factory: pytest.TempPathFactory, specs: list[dict[str, object]]
) -> None:
    path = tmp_path_factory.mktemp("rows") / "graph.cairn"
    rows = PrintedRows()
    for spec in specs:
        for graph in (build(spec), _same_records(build(spec))):
            rows.update(graph)
            assert _written(path, graph, rows) == encode_artifact(graph, generated_at=TIME)


def test_kept_rows_are_reused_and_dropped_with_their_records(tmp_path: Path) -> None:
    first = rich_graph()
    rows = PrintedRows()
    rows.update(first)
    held = {id(node) for node in first.nodes()}
    again = _same_records(first)
    again.add_node("function:src/new.py#f", "function", identity=EndpointIdentity.stable())
    rows.update(again)
    assert _written(tmp_path / "a", again, rows) == encode_artifact(again, generated_at=TIME)
    # The reused records kept their printed rows (the same row objects); the new one
    # was printed; a graph without it drops it again.
    assert held < set(rows._nodes) and len(rows._nodes) == len(held) + 1
    rows.update(first)
    assert set(rows._nodes) == held
    assert _written(tmp_path / "b", first, rows) == encode_artifact(first, generated_at=TIME)


def test_a_non_nfc_graph_takes_the_slow_path_with_rows_too(tmp_path: Path) -> None:
    graph = SemanticGraph()
    graph.add_node("file:cafe\u0301.py", "file", identity=EndpointIdentity.stable())
    graph.add_node("file:b.py", "file", attributes={"title": "re\u0301sume\u0301"})
    rows = PrintedRows()
    rows.update(graph)
    assert _written(tmp_path / "g", graph, rows) == encode_artifact(graph, generated_at=TIME)


def test_an_absolute_path_is_refused_with_rows_too() -> None:
    graph = SemanticGraph()
    graph.add_node("file:a.py", "file", attributes={"path": "/home/me/a.py"})
    with pytest.raises(ValidationError, match="absolute path"):
        PrintedRows().update(graph)
