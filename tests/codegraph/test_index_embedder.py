"""Which embedder `cairn index` loads with: the one asked for, else the one the index was
built with, else the default; never a silent switch."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from cairn.codegraph.console import choose_embedder, index_once
from cairn.embed import HASHING_MODEL, HashingEmbedder
from cairn.errors import UnsupportedCapabilityError
from cairn.store.load import loaded_space


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "mod.py").write_text("def greet(name):\n    return 'hello ' + name\n")
    return repo


def _index(repo: Path, embedder: str | None = None) -> dict[str, object]:
    summary, _ = index_once(repo, console=Console(quiet=True), workers=1, embedder=embedder)
    return summary


def test_a_named_embedder_is_used_and_recorded(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    summary = _index(repo, "hashing-256")
    assert summary["embedder"]["dimension"] == 256  # type: ignore[index]
    space = loaded_space(repo / ".cairn" / "cairn.db")
    assert space is not None and (space.model, space.dimension) == (HASHING_MODEL, 256)


def test_a_reindex_keeps_the_embedder_the_index_was_built_with(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    _index(repo, "hashing-256")
    (repo / "mod.py").write_text("def greet(name):\n    return 'hi ' + name\n")
    summary = _index(repo)  # no --embedder: the recorded one, not the 512-d default
    assert summary["embedder"]["dimension"] == 256  # type: ignore[index]
    assert summary["load"]["changes"] > 0  # type: ignore[index]


def test_without_an_index_the_default_is_the_hashing_embedder(tmp_path: Path) -> None:
    chosen = choose_embedder(None, tmp_path / "missing.db")
    assert chosen.space == HashingEmbedder().space


def test_a_file_that_is_no_database_records_no_space(tmp_path: Path) -> None:
    junk = tmp_path / "cairn.db"
    junk.write_bytes(b"not a database at all")
    assert loaded_space(junk) is None
    assert choose_embedder(None, junk).space == HashingEmbedder().space


def test_an_unknown_embedder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(UnsupportedCapabilityError, match="unknown embedder"):
        choose_embedder("no-such-model", tmp_path / "cairn.db")


def test_a_graph_json_that_is_no_v1_graph_stops_the_index_before_the_database(
    tmp_path: Path,
) -> None:
    from cairn.errors import ArtifactCorruptError

    repo = _repo(tmp_path)
    folder = repo / ".cairn"
    folder.mkdir()
    (folder / "graph.json").write_text("{ not a graph")
    with pytest.raises(ArtifactCorruptError, match="refusing to replace"):
        _index(repo)
    names = {p.name for p in folder.iterdir()}
    assert "cairn.db" not in names and "graph.cairn" not in names  # stopped before both
