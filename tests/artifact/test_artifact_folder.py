"""Folder activation, the four folder states, reader precedence, old readers, crash safety."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from artifact_support import FIXED_TIME, rich_graph, v1_reader
from test_artifact_legacy import networkx_v1

from cairn.artifact import (
    TOMBSTONE,
    FileKind,
    FolderState,
    activate_folder,
    classify_file,
    folder_status,
    load_graph,
    read_artifact,
    read_folder,
    write_artifact,
)
from cairn.artifact.atomic import atomic_write_bytes, read_bounded, read_prefix
from cairn.errors import (
    ArtifactCorruptError,
    ArtifactError,
    ArtifactMovedError,
    LegacyArtifactError,
    NotFoundError,
    StorageIOError,
)
from cairn.graph import SemanticGraph

SRC = Path(__file__).resolve().parents[2] / "src"


def test_tombstone_bytes_are_exact() -> None:
    assert TOMBSTONE == b"CAIRN_GRAPH_MOVED/2\nUse graph.cairn with cairn >= 0.1.0.\n"


def test_old_readers_reject_graph_cairn_and_the_tombstone(tmp_path: Path) -> None:
    path = tmp_path / "graph.cairn"
    write_artifact(path, rich_graph(), generated_at=FIXED_TIME)
    for data in (path.read_bytes(), TOMBSTONE):
        text = data.decode("utf-8")
        with pytest.raises(json.JSONDecodeError):
            json.loads(text)
        with pytest.raises(json.JSONDecodeError):
            v1_reader(text)
    # Even a reader that skipped the header line would not see a node-link graph.
    body = json.loads(path.read_text(encoding="utf-8").split("\n", 1)[1])
    with pytest.raises((TypeError, KeyError, AttributeError)):
        v1_reader(json.dumps(body))


def test_cairn_reads_v2_and_reads_v1_as_degraded(tmp_path: Path) -> None:
    v2 = tmp_path / "graph.cairn"
    write_artifact(v2, rich_graph(), generated_at=FIXED_TIME)
    v1 = tmp_path / "graph.json"
    v1.write_bytes(networkx_v1())
    assert load_graph(v2).graph == rich_graph()
    legacy = load_graph(v1)
    assert legacy.degraded and legacy.graph.fact_count == 3
    with pytest.raises(LegacyArtifactError):
        load_graph(v1, strict=True)


def test_activation_preserves_v1_byte_identically_and_leaves_a_tombstone(tmp_path: Path) -> None:
    original = networkx_v1()
    (tmp_path / "graph.json").write_bytes(original)
    assert folder_status(tmp_path).state is FolderState.LEGACY_V1
    result = activate_folder(tmp_path, rich_graph(), generated_at=FIXED_TIME)
    assert (tmp_path / "graph.v1.json").read_bytes() == original
    assert (tmp_path / "graph.json").read_bytes() == TOMBSTONE
    assert result.preserved_v1 and result.tombstone_written
    assert result.status.state is FolderState.CURRENT_V2
    assert read_folder(tmp_path).graph == rich_graph()
    with pytest.raises(ArtifactMovedError):
        read_artifact(tmp_path / "graph.json")
    with pytest.raises(ArtifactMovedError):
        load_graph(tmp_path / "graph.json")
    # Activating again is idempotent: nothing preserved twice, the same bytes.
    before = (tmp_path / "graph.cairn").read_bytes()
    again = activate_folder(tmp_path, rich_graph(), generated_at=FIXED_TIME)
    assert not again.preserved_v1 and not again.tombstone_written
    assert (tmp_path / "graph.cairn").read_bytes() == before
    assert (tmp_path / "graph.v1.json").read_bytes() == original


def test_activation_of_an_empty_folder(tmp_path: Path) -> None:
    folder = tmp_path / "out"
    assert folder_status(folder).state is FolderState.MISSING
    result = activate_folder(folder, SemanticGraph(), generated_at=FIXED_TIME)
    assert not result.preserved_v1 and not result.tombstone_written
    assert sorted(path.name for path in folder.iterdir()) == ["graph.cairn"]
    assert folder_status(folder).state is FolderState.CURRENT_V2


def test_a_left_tombstone_is_kept_as_is(tmp_path: Path) -> None:
    (tmp_path / "graph.json").write_bytes(TOMBSTONE)
    result = activate_folder(tmp_path, SemanticGraph(), generated_at=FIXED_TIME)
    assert not result.tombstone_written
    assert (tmp_path / "graph.json").read_bytes() == TOMBSTONE
    assert result.to_json()["folder"]["state"] == "current_v2"


def test_activation_refuses_to_replace_an_unknown_graph_json(tmp_path: Path) -> None:
    (tmp_path / "graph.json").write_bytes(b"this is not a graph")
    with pytest.raises(ArtifactCorruptError, match="refusing to replace"):
        activate_folder(tmp_path, rich_graph(), generated_at=FIXED_TIME)
    assert (tmp_path / "graph.json").read_bytes() == b"this is not a graph"
    assert not (tmp_path / "graph.cairn").exists()


def test_check_activation_refuses_what_activation_refuses_and_writes_nothing(
    tmp_path: Path,
) -> None:
    from cairn.artifact.folder import check_activation

    check_activation(tmp_path / "absent")  # nothing there: nothing to refuse
    assert not (tmp_path / "absent").exists()
    for name, data in (("tombstone", TOMBSTONE), ("v1", networkx_v1("links"))):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "graph.json").write_bytes(data)
        check_activation(folder)
        assert sorted(path.name for path in folder.iterdir()) == ["graph.json"]
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "graph.json").write_bytes(b"this is not a graph")
    with pytest.raises(ArtifactCorruptError, match="refusing to replace"):
        check_activation(foreign)
    assert sorted(path.name for path in foreign.iterdir()) == ["graph.json"]


def test_activation_never_overwrites_a_different_preserved_v1(tmp_path: Path) -> None:
    (tmp_path / "graph.json").write_bytes(networkx_v1("links"))
    (tmp_path / "graph.v1.json").write_bytes(networkx_v1("edges"))
    with pytest.raises(ArtifactError, match="different v1 graph"):
        activate_folder(tmp_path, rich_graph(), generated_at=FIXED_TIME)
    assert (tmp_path / "graph.v1.json").read_bytes() == networkx_v1("edges")
    assert (tmp_path / "graph.json").read_bytes() == networkx_v1("links")


def test_the_four_folder_states_and_reader_precedence(tmp_path: Path) -> None:
    # missing
    status = folder_status(tmp_path)
    assert status.state is FolderState.MISSING and status.reader_path is None
    with pytest.raises(NotFoundError):
        read_folder(tmp_path)
    # legacy_v1 (graph.v1.json alone is still a v1 folder)
    (tmp_path / "graph.v1.json").write_bytes(networkx_v1())
    status = folder_status(tmp_path)
    assert status.state is FolderState.LEGACY_V1 and status.reader_path.name == "graph.v1.json"
    (tmp_path / "graph.json").write_bytes(networkx_v1("edges"))
    status = folder_status(tmp_path)
    assert status.state is FolderState.LEGACY_V1 and status.reader_path.name == "graph.json"
    assert read_folder(tmp_path).provenance["links_key"] == "edges"
    with pytest.raises(LegacyArtifactError):
        read_folder(tmp_path, strict=True)
    # moved_without_canonical
    (tmp_path / "graph.json").write_bytes(TOMBSTONE)
    status = folder_status(tmp_path)
    assert status.state is FolderState.MOVED_WITHOUT_CANONICAL and status.reader_path is None
    with pytest.raises(ArtifactMovedError, match=r"graph\.v1\.json"):
        read_folder(tmp_path)
    # current_v2 wins over everything else, and is never silently skipped
    write_artifact(tmp_path / "graph.cairn", rich_graph(), generated_at=FIXED_TIME)
    status = folder_status(tmp_path)
    assert status.state is FolderState.CURRENT_V2 and status.reader_path.name == "graph.cairn"
    assert status.to_json()["files"] == {
        "graph.cairn": "artifact",
        "graph.json": "tombstone",
        "graph.v1.json": "legacy_json",
    }
    assert load_graph(tmp_path).graph == rich_graph()
    (tmp_path / "graph.cairn").write_bytes(b"CAIRN_GRAPH_ARTIFACT/2\n{broken\n")
    with pytest.raises(ArtifactCorruptError):
        read_folder(tmp_path)


def test_classify_and_load_graph_edge_cases(tmp_path: Path) -> None:
    assert classify_file(tmp_path / "absent") is FileKind.ABSENT
    assert classify_file(tmp_path) is FileKind.ABSENT
    odd = tmp_path / "odd.bin"
    odd.write_bytes(b"\x00\x01")
    assert classify_file(odd) is FileKind.UNKNOWN
    with pytest.raises(ArtifactCorruptError):
        load_graph(odd)
    with pytest.raises(NotFoundError):
        load_graph(tmp_path / "absent")
    with pytest.raises(NotFoundError):
        read_artifact(tmp_path / "absent")


def test_atomic_write_keeps_mode_and_cleans_up(tmp_path: Path, monkeypatch) -> None:
    target = tmp_path / "sub" / "file.bin"
    atomic_write_bytes(target, b"one")
    assert target.read_bytes() == b"one"
    os.chmod(target, 0o640)
    atomic_write_bytes(target, b"two")
    assert target.read_bytes() == b"two" and target.stat().st_mode & 0o777 == 0o640
    fresh = tmp_path / "fresh.bin"
    atomic_write_bytes(fresh, b"x")
    assert fresh.stat().st_mode & 0o777 == 0o666 & ~_umask()
    assert read_prefix(tmp_path / "nothing", 4) is None
    assert read_bounded(fresh, 1, "file") == b"x"


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def test_failure_before_rename_leaves_the_previous_artifact(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "graph.cairn"
    write_artifact(path, rich_graph(), generated_at=FIXED_TIME)
    previous = path.read_bytes()

    def broken_replace(source: str, target: object) -> None:
        raise OSError(errno.EIO, "disk vanished")

    monkeypatch.setattr(os, "replace", broken_replace)
    # A failed write is the storage's refusal (issue 18), typed by its errno.
    with pytest.raises(StorageIOError, match="disk vanished"):
        write_artifact(path, SemanticGraph(), generated_at=FIXED_TIME)
    monkeypatch.undo()
    assert path.read_bytes() == previous
    assert sorted(p.name for p in tmp_path.iterdir()) == ["graph.cairn"]  # temp removed


def test_crash_between_temp_write_and_rename_leaves_the_previous_artifact(tmp_path: Path) -> None:
    # A real crash: the child process dies (os._exit, no cleanup) right when it would
    # rename the fully written and fsynced temporary file over the artifact.
    path = tmp_path / "graph.cairn"
    write_artifact(path, rich_graph(), generated_at=FIXED_TIME)
    previous = path.read_bytes()
    script = textwrap.dedent(
        f"""
        import os, sys
        sys.path.insert(0, {str(SRC)!r})
        from cairn.artifact import write_artifact
        from cairn.graph import SemanticGraph

        def crash(source, target):
            assert os.path.getsize(source) > 0  # the temporary file is complete
            os._exit(17)

        os.replace = crash
        write_artifact({str(path)!r}, SemanticGraph(), generated_at="2030-01-01T00:00:00Z")
        """
    )
    completed = subprocess.run([sys.executable, "-c", script], check=False, timeout=120)
    assert completed.returncode == 17
    assert path.read_bytes() == previous
    leftovers = [p.name for p in tmp_path.iterdir() if p.name != "graph.cairn"]
    assert len(leftovers) == 1 and leftovers[0].endswith(".tmp")  # the orphaned temp file
    assert folder_status(tmp_path).state is FolderState.CURRENT_V2
    assert read_folder(tmp_path).graph == rich_graph()
