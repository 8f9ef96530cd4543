"""``write_index`` activates its output folder: a v1 graph.json there is moved safely."""

from __future__ import annotations

import json
from pathlib import Path

import networkx as nx
import pytest

from cairn.artifact.folder import FolderState, folder_status
from cairn.artifact.reader import read_artifact
from cairn.codegraph import index_repository, write_index
from cairn.errors import ArtifactError, ArtifactMovedError

TOMBSTONE_START = b"CAIRN_GRAPH_MOVED/2\n"


def repository(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "app.py").write_text("def helper():\n    return 1\n\n\ndef main():\n    helper()\n")
    return root


def v1_bytes() -> bytes:
    graph = nx.DiGraph()
    graph.add_edge("a", "b", relation="calls")
    return json.dumps(nx.node_link_data(graph, edges="links")).encode()


def test_a_v1_graph_json_is_preserved_and_tombstoned(tmp_path: Path) -> None:
    root = repository(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    original = v1_bytes()
    (out / "graph.json").write_bytes(original)
    written = write_index(index_repository(root), out, generated_at="2026-01-01T00:00:00Z")
    assert (out / "graph.v1.json").read_bytes() == original
    assert (out / "graph.json").read_bytes().startswith(TOMBSTONE_START)
    assert folder_status(out).state is FolderState.CURRENT_V2
    assert written.graph_path == out / "graph.cairn"
    assert written.graph_bytes == (out / "graph.cairn").stat().st_size
    assert any(
        node.id.endswith("main") for node in read_artifact(out / "graph.cairn").graph.nodes()
    )
    with pytest.raises(ArtifactMovedError):
        read_artifact(out / "graph.json")


def test_a_fresh_folder_gets_the_artifact_and_the_tombstone(tmp_path: Path) -> None:
    root = repository(tmp_path)
    written = write_index(index_repository(root), generated_at="2026-01-01T00:00:00Z")
    folder = root / ".cairn"
    assert written.graph_path == folder / "graph.cairn"
    assert (folder / "graph.json").read_bytes().startswith(TOMBSTONE_START)
    assert not (folder / "graph.v1.json").exists()


def test_a_foreign_graph_json_stops_the_write_before_anything_is_written(
    tmp_path: Path,
) -> None:
    root = repository(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "graph.json").write_bytes(b"not a graph at all")
    with pytest.raises(ArtifactError):
        write_index(index_repository(root), out, generated_at="2026-01-01T00:00:00Z")
    assert (out / "graph.json").read_bytes() == b"not a graph at all"
    assert sorted(p.name for p in out.iterdir()) == ["graph.json"]
