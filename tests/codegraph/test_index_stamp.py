"""``cairn index`` says "nothing changed" without indexing when nothing it read or wrote
changed since its last whole run (``cairn.codegraph.stamp``), and indexes whole on any
doubt: a changed, added or removed file, changed outputs, another database position,
other options or other code."""

from __future__ import annotations

import os
import shutil
import sqlite3
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

import cairn.codegraph.stamp as stamp_module
from cairn.codegraph.console import index_and_write
from cairn.codegraph.stamp import STAMP_FILENAME, UNCHANGED

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PAST_NS = 1_600_000_000 * 10**9
"""A modification time long before any run (so a file's signature can be trusted)."""


def _repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(FIXTURES / "flask_app", root)
    return root


def _age(root: Path) -> None:
    """Give every file a modification time far in the past (its signature is trusted)."""
    for path in root.rglob("*"):
        if path.is_file():
            os.utime(path, ns=(PAST_NS, PAST_NS))


def _index(root: Path, **options: Any) -> dict[str, Any]:
    return index_and_write(root, workers=1, as_json=True, **options)


def _outputs(root: Path) -> dict[str, tuple[int, int, bytes]]:
    found = {}
    for name in ("graph.cairn", "manifest.json"):
        status = (root / ".cairn" / name).stat()
        found[name] = (status.st_ino, status.st_mtime_ns, (root / ".cairn" / name).read_bytes())
    return found


def _position(root: Path) -> int:
    with closing(sqlite3.connect(root / ".cairn" / "cairn.db")) as conn:
        return int(conn.execute("SELECT value FROM meta WHERE key = 'position'").fetchone()[0])


def test_a_second_run_with_nothing_changed_touches_nothing(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    first = _index(root)  # it creates .cairn/, which no scan lists: the next run is stamped
    assert not first.get("unchanged")
    assert (root / ".cairn" / STAMP_FILENAME).is_file()
    before, position = _outputs(root), _position(root)
    second = _index(root)
    assert second["unchanged"] is True
    assert second["load"]["compared"] == UNCHANGED
    assert second["load"]["changes"] == 0 and second["load"]["up_to_date"] is True
    assert second["load"]["position"] == position == _position(root)
    assert _outputs(root) == before  # same files (inode, mtime), same bytes
    for key in ("files", "nodes_by_kind", "facts_by_relation", "counts", "calls", "problems"):
        assert second[key] == first[key], key
    assert second["graph_path"] == first["graph_path"]


def test_trusted_signatures_are_not_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Aging a file sets its ctime to now: without a margin, "now" is before the run.
    monkeypatch.setattr(stamp_module, "RACY_MARGIN_NS", 0)
    root = _repo(tmp_path)
    _age(root)
    _index(root)
    _index(root)

    def no_read(*_: Any) -> Any:
        raise AssertionError("a file with a trusted signature was read again")

    monkeypatch.setattr(stamp_module, "read_source", no_read)
    assert _index(root)["unchanged"] is True


def test_files_written_just_before_the_stamped_run_are_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Within ``RACY_MARGIN_NS`` of the stamped run, a second write could keep the
    signature: such files are hashed again, whatever their signature says."""
    root = _repo(tmp_path)
    _index(root)
    _index(root)
    real_read = stamp_module.read_source
    read: list[str] = []

    def counting(base: Path, scanned: Any) -> Any:
        read.append(scanned.path)
        return real_read(base, scanned)

    monkeypatch.setattr(stamp_module, "read_source", counting)
    assert _index(root)["unchanged"] is True
    assert "app/views.py" in read


def test_a_file_rewritten_with_the_same_bytes_is_no_change(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    _age(root)
    _index(root)
    _index(root)
    views = root / "app" / "views.py"
    views.write_bytes(views.read_bytes())  # a new mtime: hashed again, same bytes
    assert _index(root)["unchanged"] is True


def _edit(root: Path) -> None:
    views = root / "app" / "views.py"
    views.write_text(views.read_text() + "\n\ndef stamped_later():\n    return 1\n")


def _add(root: Path) -> None:
    (root / "app" / "extra.py").write_text("def extra():\n    return 2\n")


def _remove(root: Path) -> None:
    (root / "app" / "views.py").unlink()


def _same_size_edit(root: Path) -> None:
    views = root / "app" / "views.py"
    data = views.read_bytes()
    at = data.index(b"def ") + 4
    swapped = data[:at] + (b"x" if data[at : at + 1] != b"x" else b"y") + data[at + 1 :]
    views.write_bytes(swapped)
    os.utime(views, ns=(PAST_NS, PAST_NS))  # same size and mtime: only ctime tells


def _graph_removed(root: Path) -> None:
    (root / ".cairn" / "graph.cairn").unlink()


def _manifest_touched(root: Path) -> None:
    manifest = root / ".cairn" / "manifest.json"
    manifest.write_bytes(manifest.read_bytes())


def _database_removed(root: Path) -> None:
    for name in ("cairn.db", "cairn.db-wal", "cairn.db-shm"):
        (root / ".cairn" / name).unlink(missing_ok=True)


def _stamp_garbled(root: Path) -> None:
    (root / ".cairn" / STAMP_FILENAME).write_bytes(b'{"format": "cairn.codegraph.stamp/1", ')


def _other_code(root: Path) -> None:
    stamp_module.code_fingerprint = lambda: "0" * 64  # type: ignore[assignment]


@pytest.mark.parametrize(
    "change",
    [
        _edit,
        _add,
        _remove,
        _same_size_edit,
        _graph_removed,
        _manifest_touched,
        _database_removed,
        _stamp_garbled,
        _other_code,
    ],
    ids=lambda change: change.__name__.strip("_"),
)
def test_any_change_indexes_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: Callable[[Path], None]
) -> None:
    # Put back after the test whatever ``_other_code`` puts in its place.
    monkeypatch.setattr(stamp_module, "code_fingerprint", stamp_module.code_fingerprint)
    root = _repo(tmp_path)
    _age(root)
    _index(root)
    _index(root)
    change(root)
    again = _index(root)
    assert not again.get("unchanged")
    assert again["load"]["compared"] != UNCHANGED
    # The whole run stamped what it saw: with nothing changed since, the next is a no-op.
    assert _index(root)["unchanged"] is True


def test_a_change_of_the_database_position_indexes_whole(tmp_path: Path) -> None:
    import uuid

    from cairn import store
    from cairn.store import CommandRequest, ConfigureCollection

    root = _repo(tmp_path)
    _index(root)
    _index(root)
    before = _position(root)
    with store.open(root / ".cairn" / "cairn.db") as db:
        db.command(CommandRequest(uuid.uuid4(), "main", (ConfigureCollection("notes"),)))
    assert _position(root) == before + 1
    again = _index(root)
    assert not again.get("unchanged")
    assert again["load"]["position"] == _position(root)


@pytest.mark.parametrize(
    "options",
    [
        {"excludes": ["app/models.py"]},
        {"generated_at": "2030-01-01T00:00:00Z"},
        {"load": False},
    ],
    ids=["excludes", "generated_at", "no_load"],
)
def test_other_options_index_whole(tmp_path: Path, options: dict[str, Any]) -> None:
    root = _repo(tmp_path)
    _index(root)
    _index(root)
    assert not _index(root, **options).get("unchanged")


def test_a_stamp_is_not_written_by_a_watch_round_and_its_outputs_void_it(tmp_path: Path) -> None:
    from rich.console import Console

    from cairn.codegraph.console import index_once, release_held

    root = _repo(tmp_path)
    _index(root)
    _index(root)
    _edit(root)
    try:
        index_once(root, console=Console(quiet=True), workers=1, remember=True)
    finally:
        release_held()
    time.sleep(0.01)
    again = _index(root)  # the watch round rewrote graph.cairn and loaded: not the stamp's
    assert not again.get("unchanged")
    assert again["load"]["changes"] == 0  # the watch round had loaded the edit already


def test_force_indexes_whole_with_nothing_changed(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    _index(root)
    _index(root)
    forced = _index(root, force=True)
    assert not forced.get("unchanged")
    assert forced["load"]["compared"] != UNCHANGED
    assert _index(root)["unchanged"] is True  # the forced run stamped what it saw


def test_the_cli_says_nothing_changed(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from cairn.cli import app

    root = _repo(tmp_path)
    for _ in range(2):
        assert CliRunner().invoke(app, ["index", str(root), "--workers", "1"]).exit_code == 0
    done = CliRunner().invoke(app, ["index", str(root), "--workers", "1"])
    assert done.exit_code == 0, done.output
    assert "nothing changed since the last index" in done.output
    assert "already up to date" in done.output
    forced = CliRunner().invoke(app, ["index", str(root), "--workers", "1", "--force"])
    assert "nothing changed since the last index" not in forced.output
    assert "wrote " in forced.output


def test_a_named_embedder_is_loaded_once_a_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import cairn.embed as embed_module

    real_load = embed_module.load_embedder
    loaded: list[str] = []

    def counting(name: str = "hashing") -> Any:
        loaded.append(name)
        return real_load(name)

    monkeypatch.setattr(embed_module, "load_embedder", counting)
    root = _repo(tmp_path)
    summary = _index(root, embedder="hashing-64")
    assert loaded == ["hashing-64"]  # the stamp's fingerprint and the index share it
    assert summary["embedder"]["dimension"] == 64


def test_no_stamp_when_another_writer_came_in_after_the_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write between the run's load and its stamp (position moved) leaves no stamp:
    the run cannot vouch for what another writer put in the database."""
    import uuid

    from cairn import store
    from cairn.store import CommandRequest, ConfigureCollection

    root = _repo(tmp_path)
    _index(root)
    real_write = stamp_module.write_stamp

    def interleaved(folder: Path, *args: Any) -> bool:
        with store.open(folder / "cairn.db") as db:
            db.command(CommandRequest(uuid.uuid4(), "main", (ConfigureCollection("notes"),)))
        return real_write(folder, *args)

    monkeypatch.setattr(stamp_module, "write_stamp", interleaved)
    _index(root, force=True)
    assert not (root / ".cairn" / STAMP_FILENAME).exists()
    monkeypatch.setattr(stamp_module, "write_stamp", real_write)
    assert not _index(root).get("unchanged")


def test_a_run_after_an_edit_walks_the_tree_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The scan that found the edit (against the stamp) is the scan the index uses: the
    tree is walked once, and what it indexed is the edited file."""
    import cairn.codegraph.build as build_module
    from cairn.codegraph.scan import scan_repository

    root = _repo(tmp_path)
    _age(root)
    _index(root)
    _index(root)
    _edit(root)
    walks: list[str] = []

    def counted(where: str) -> Callable[..., Any]:
        def scan(*args: Any, **kwargs: Any) -> Any:
            walks.append(where)
            return scan_repository(*args, **kwargs)

        return scan

    monkeypatch.setattr(stamp_module, "scan_repository", counted("stamp"))
    monkeypatch.setattr(build_module, "scan_repository", counted("index"))
    again = _index(root)
    assert walks == ["stamp"]
    assert not again.get("unchanged")
    assert b"stamped_later" in (root / ".cairn" / "graph.cairn").read_bytes()
    assert _index(root)["unchanged"] is True


def test_nothing_changed_is_known_without_loading_the_embedder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A re-index naming no embedder compares the space the database was loaded with,
    and the installed versions of what its embedder needs, without loading it (a
    transformer takes seconds to load); a new version of that package is a change."""
    import cairn.embed as embed_module
    import cairn.installed as installed_module

    root = _repo(tmp_path)
    _age(root)
    _index(root, embedder="wordllama")
    _index(root, embedder="wordllama")
    chosen: list[str] = []
    real_for, real_load = embed_module.embedder_for, embed_module.load_embedder
    monkeypatch.setattr(
        embed_module, "embedder_for", lambda space: chosen.append("for") or real_for(space)
    )
    monkeypatch.setattr(
        embed_module, "load_embedder", lambda name: chosen.append(name) or real_load(name)
    )
    quiet = _index(root)
    assert quiet["unchanged"] is True and not chosen
    assert quiet["embedder"]["model"].startswith("wordllama/")
    real_version = installed_module.installed_version
    monkeypatch.setattr(
        installed_module,
        "installed_version",
        lambda name: "99.0" if name == "wordllama" else real_version(name),
    )
    upgraded = _index(root)
    assert not upgraded.get("unchanged") and chosen == ["for"]
    assert _index(root)["unchanged"] is True


def test_a_named_embedder_the_database_was_loaded_with_is_not_loaded_to_find_nothing_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``cairn index --embedder wordllama`` again, nothing changed: the name says which
    table it is and its installed version which space, so the model is not loaded (it
    took ~0.5 s of a ~1 s run); a name of another space loads and indexes whole."""
    import cairn.embed as embed_module

    root = _repo(tmp_path)
    _age(root)
    _index(root, embedder="wordllama")
    _index(root, embedder="wordllama")
    loaded: list[str] = []
    real_load = embed_module.load_embedder
    monkeypatch.setattr(
        embed_module, "load_embedder", lambda name="hashing": loaded.append(name) or real_load(name)
    )
    quiet = _index(root, embedder="wordllama")
    assert quiet["unchanged"] is True and loaded == []
    other = _index(root, embedder="hashing-64")
    assert not other.get("unchanged") and "hashing-64" in loaded
    assert other["embedder"]["dimension"] == 64


def test_names_space_needs_the_very_space() -> None:
    from cairn.embed import HashingEmbedder, load_embedder, names_space
    from cairn.store.commands import VectorSpace

    hashing = HashingEmbedder().space
    assert names_space("hashing", hashing)
    assert not names_space("hashing-64", hashing)
    static = load_embedder("wordllama").space
    assert names_space("wordllama", static)
    assert not names_space("hashing", static)
    assert not names_space("minilm", static)  # a transformer is never vouched for unloaded
    older = VectorSpace(static.id, static.dimension, static.metric, static.model, "0.0.1")
    assert not names_space("wordllama", older)
    assert not names_space("wordllama", hashing)


def test_the_same_fixed_time_named_either_way_is_no_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--generated-at T`` and a ``SOURCE_DATE_EPOCH`` of T write the same graph.cairn:
    a run with one after a run with the other finds nothing changed; another time, or
    none, indexes whole."""
    root = _repo(tmp_path)
    _age(root)
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    _index(root, generated_at="2024-01-01T00:00:00Z")
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1704067200")  # 2024-01-01T00:00:00Z
    assert _index(root)["unchanged"] is True
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1704067201")
    assert not _index(root).get("unchanged")
    monkeypatch.delenv("SOURCE_DATE_EPOCH")
    assert not _index(root).get("unchanged")
