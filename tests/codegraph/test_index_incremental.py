"""Re-indexing (issue 20): the extraction cache reuses unchanged files and never changes
the graph; a re-index that changes nothing says so.

The oracle is always a clean build of the same tree without a cache: the artifact and
the manifest written with a fixed time must be byte-identical.
"""

from __future__ import annotations

import pickle
import shutil
import sqlite3
import zlib
from pathlib import Path

import pytest
from codegraph_expect import FIXTURES
from typer.testing import CliRunner

import cairn.codegraph.build as build
from cairn.cli import app
from cairn.codegraph import index_repository, write_index
from cairn.codegraph.cache import CACHE_FILENAME, ExtractCache, load_extract

FIXED_TIME = "2024-01-01T00:00:00Z"


def _copy(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURES, repo)
    return repo


def _bytes(repo: Path, out: Path, *, cache: Path | None, workers: int = 1) -> tuple[bytes, bytes]:
    result = index_repository(repo, workers=workers, cache=cache)
    written = write_index(result, out, generated_at=FIXED_TIME)
    return written.graph_path.read_bytes(), written.manifest_path.read_bytes()


def _edit(repo: Path) -> None:
    """A changed body, a new file calling across modules, a deleted module, a rename."""
    view = repo / "flask_app" / "app" / "views.py"
    view.write_text(view.read_text() + "\n\ndef added():\n    return index()\n")
    (repo / "flask_app" / "app" / "extra.py").write_text(
        "from app.views import added\n\n\ndef uses():\n    return added()\n"
    )
    doomed = sorted((repo / "fastapi_app").rglob("*.py"))[-1]
    doomed.unlink()
    moved = sorted((repo / "go_service").rglob("*.go"))[0]
    moved.rename(moved.with_name("renamed_" + moved.name))


@pytest.mark.parametrize("workers", [1, 2])
def test_a_cached_reindex_is_byte_identical_to_a_clean_build(
    tmp_path: Path, workers: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(build, "IN_PROCESS_MAX_BYTES", 0)  # small files: to workers all the same
    repo = _copy(tmp_path)
    cache = tmp_path / CACHE_FILENAME
    first = index_repository(repo, workers=workers, cache=cache)
    assert first.cache is not None and first.cache.hits == 0
    parsed = first.cache.misses
    assert parsed > 20
    _edit(repo)
    again = index_repository(repo, workers=workers, cache=cache)
    assert again.cache is not None
    # One file changed, one new, one renamed: those three are parsed; of the first
    # build's files, the changed, the deleted and the renamed one are not reused.
    assert (again.cache.misses, again.cache.damaged) == (3, 0)
    assert again.cache.hits == parsed - 3
    cached = write_index(again, tmp_path / "cached", generated_at=FIXED_TIME)
    clean = _bytes(repo, tmp_path / "clean", cache=None)
    assert (cached.graph_path.read_bytes(), cached.manifest_path.read_bytes()) == clean
    # Rows of deleted and renamed paths are dropped; every remaining row is a live file.
    with sqlite3.connect(cache) as conn:
        paths = {row[0] for row in conn.execute("SELECT path FROM extracts")}
    indexed = {row.path for row in again.manifest.entries if row.sha256 is not None}
    assert paths == indexed


def _damage(cache: Path, statement: str, *args: object) -> None:
    with sqlite3.connect(cache) as conn:
        conn.execute(statement, args)


def test_a_damaged_row_is_parsed_again_and_the_graph_is_unchanged(tmp_path: Path) -> None:
    repo = _copy(tmp_path)
    cache = tmp_path / CACHE_FILENAME
    clean = _bytes(repo, tmp_path / "clean", cache=cache)
    with sqlite3.connect(cache) as conn:
        path, data = conn.execute("SELECT path, data FROM extracts ORDER BY path").fetchone()
    flipped = bytearray(data)
    flipped[len(flipped) // 2] ^= 0x01
    _damage(cache, "UPDATE extracts SET data = ? WHERE path = ?", bytes(flipped), path)
    result = index_repository(repo, cache=cache)
    assert result.cache is not None
    assert (result.cache.damaged, result.cache.misses) == (1, 1)
    written = write_index(result, tmp_path / "again", generated_at=FIXED_TIME)
    assert (written.graph_path.read_bytes(), written.manifest_path.read_bytes()) == clean


class _Boom:
    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (print, ("planted code ran",))


def test_a_planted_pickle_cannot_run_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blob = zlib.compress(pickle.dumps(_Boom()))  # deflated, as the cache keeps rows
    with pytest.raises(pickle.UnpicklingError, match=r"builtins\.print"):
        load_extract(blob)
    repo = _copy(tmp_path)
    cache = tmp_path / CACHE_FILENAME
    clean = _bytes(repo, tmp_path / "clean", cache=cache)
    with sqlite3.connect(cache) as conn:
        path, language, sha, outcome = conn.execute(
            "SELECT path, language, sha256, outcome FROM extracts ORDER BY path"
        ).fetchone()
    # A row with a valid checksum over planted bytes: the checksum is no defence, the
    # unpickler is.
    head = "\x00".join((path, language, sha, outcome, "")).encode()  # no error text
    checksum = zlib.crc32(blob, zlib.crc32(head))
    _damage(
        cache, "UPDATE extracts SET data = ?, checksum = ? WHERE path = ?", blob, checksum, path
    )
    result = index_repository(repo, cache=cache)
    assert "planted code ran" not in capsys.readouterr().out
    assert result.cache is not None and result.cache.damaged == 1
    written = write_index(result, tmp_path / "again", generated_at=FIXED_TIME)
    assert written.graph_path.read_bytes() == clean[0]


def test_a_foreign_file_or_another_extractor_empties_the_cache(tmp_path: Path) -> None:
    repo = _copy(tmp_path)
    cache = tmp_path / CACHE_FILENAME
    cache.write_bytes(b"not a database at all, just some bytes" * 200)
    first = index_repository(repo, cache=cache)
    assert first.cache is not None and first.cache.reset is not None
    assert "unreadable cache file" in first.cache.reset
    assert first.cache.hits == 0
    _damage(cache, "UPDATE meta SET value = 'an older extractor' WHERE key = 'extractor'")
    second = index_repository(repo, cache=cache)
    assert second.cache is not None
    assert (second.cache.reset, second.cache.hits) == ("the extractor changed", 0)
    third = index_repository(repo, cache=cache)
    assert third.cache is not None
    assert (third.cache.reset, third.cache.misses) == (None, 0)
    opened = ExtractCache.open(cache)
    try:
        assert opened.stats.reset is None
    finally:
        opened.close()


def test_cli_reindex_reuses_the_cache_and_says_nothing_changed(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURES / "flask_app", repo)
    runner = CliRunner()
    args = ["index", str(repo), "--workers", "1", "--generated-at", FIXED_TIME]
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    assert "0 files reused" in first.output
    assert (repo / ".cairn" / CACHE_FILENAME).is_file()
    # --force: past the stamp, which would otherwise say "nothing changed" unread.
    again = runner.invoke(app, [*args, "--json", "--force"])
    assert again.exit_code == 0, again.output
    import json

    summary = json.loads(again.stdout)
    assert summary["cache"]["misses"] == 0 and summary["cache"]["hits"] > 0
    # Nothing changed: the load says so (it used to repeat the first load's changes).
    assert summary["load"]["changes"] == 0
    assert summary["load"]["up_to_date"] is True
    assert summary["load"]["position"] == 1
    assert summary["load"]["mutations"] == {}


def test_a_cache_that_cannot_be_opened_is_done_without(tmp_path: Path) -> None:
    repo = _copy(tmp_path)
    blocked = tmp_path / "a-folder-not-a-file"
    blocked.mkdir()
    result = index_repository(repo, cache=blocked)
    assert result.cache is not None and result.cache.reset is not None
    assert result.cache.reset.startswith("cache unavailable")
    written = write_index(result, tmp_path / "out", generated_at=FIXED_TIME)
    assert (written.graph_path.read_bytes(), written.manifest_path.read_bytes()) == _bytes(
        repo, tmp_path / "clean", cache=None
    )


def test_only_a_remembering_index_keeps_its_extracts_in_the_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``cairn watch`` keeps the extracts between rounds (an unchanged file is not even
    unpickled again); a one-shot index frees them with its result."""
    from cairn.codegraph import cache as cache_module

    memo: dict[object, object] = {}
    monkeypatch.setattr(cache_module, "_MEMO", memo)
    unpickled: list[str] = []

    def counting(blob: bytes) -> object:
        extract = load_extract(blob)
        unpickled.append(extract.path)
        return extract

    monkeypatch.setattr(cache_module, "load_extract", counting)
    repo = _copy(tmp_path)
    cache = tmp_path / CACHE_FILENAME
    first = index_repository(repo, cache=cache)
    assert first.cache is not None and first.cache.misses > 20 and not memo
    again = index_repository(repo, cache=cache)
    assert again.cache is not None and again.cache.hits == first.cache.misses
    assert len(unpickled) == first.cache.misses and not memo  # every row unpickled
    index_repository(repo, cache=cache, remember=True)
    assert len(memo) == first.cache.misses
    unpickled.clear()
    last = index_repository(repo, cache=cache, remember=True)
    assert last.cache is not None and last.cache.hits == first.cache.misses
    assert unpickled == []  # answered from memory
    assert last.graph.fact_count == first.graph.fact_count


def test_a_first_remembering_index_leaves_its_load_keys_beside_the_new_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The memo writes the keys file on a thread; a slow write must still end beside the
    # database the aside build moved in place, or the next round compares every record.
    import threading

    from rich.console import Console

    from cairn.codegraph.console import index_once
    from cairn.store import loadkeys
    from cairn.store.load import COMPARED_BY_KEYS

    written = loadkeys.write_keys

    def slow(path: Path, keys: loadkeys.LoadKeys) -> None:
        if threading.current_thread() is not threading.main_thread():
            threading.Event().wait(0.3)
        written(path, keys)

    monkeypatch.setattr(loadkeys, "write_keys", slow)
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURES / "flask_app", repo)
    quiet = Console(quiet=True)
    index_once(repo, console=quiet, workers=1, remember=True)
    folder = repo / ".cairn"
    assert (folder / ("cairn.db" + loadkeys.LOAD_KEYS_SUFFIX)).is_file()
    assert not list(folder.glob("*.building*"))
    (repo / "app" / "views.py").write_text(
        (repo / "app" / "views.py").read_text() + "\n\ndef added():\n    return 1\n"
    )
    summary, _ = index_once(repo, console=quiet, workers=1, remember=True)
    assert summary["load"]["compared"] == COMPARED_BY_KEYS


def test_a_remembering_index_leaves_out_the_tallies_a_watch_round_never_reports(
    tmp_path: Path,
) -> None:
    # A watch round reports counts, load, problems and phases; the per-kind and
    # per-relation tallies and the stable share walk every record, so it skips them.
    from rich.console import Console

    from cairn.codegraph.console import index_once

    repo = tmp_path / "repo"
    shutil.copytree(FIXTURES / "flask_app", repo)
    quiet = Console(quiet=True)
    once, result = index_once(repo, console=quiet, workers=1, load=False)
    kept, _ = index_once(repo, console=quiet, workers=1, load=False, remember=True)
    tallies = {"nodes_by_kind", "facts_by_relation", "stable_fact_share"}
    assert tallies <= set(once) and not tallies & set(kept)
    assert set(once) - set(kept) == tallies
    assert kept["counts"] == once["counts"] == result.graph.counts().to_json()
    assert sum(once["nodes_by_kind"].values()) == result.graph.node_count
    assert kept["problems"] == once["problems"]


def test_a_remembering_index_reads_only_files_written_since_it_read_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``cairn watch`` keeps each file's SHA-256 with its signature (size, mtime, ctime,
    inode): a later round reads only the files whose signature changed (written, moved
    in, replaced) and is still a clean build's bytes; a file written just before it was
    read (within ``RACY_MARGIN_NS``) is read again whatever its signature says."""
    import cairn.codegraph.cache as cache_module

    repo = _copy(tmp_path)
    cache = tmp_path / CACHE_FILENAME
    read: list[str] = []
    real = build.read_source

    def reading(root: Path, scanned: object) -> object:
        read.append(scanned.path)  # type: ignore[attr-defined]
        return real(root, scanned)  # type: ignore[arg-type]

    monkeypatch.setattr(build, "read_source", reading)
    index_repository(repo, cache=cache, remember=True)  # written just now: racily clean
    everything = len(read)
    read.clear()
    index_repository(repo, cache=cache, remember=True)
    assert len(read) == everything > 20  # so each is read again

    monkeypatch.setattr(cache_module, "RACY_MARGIN_NS", 0)  # as if written long before
    index_repository(repo, cache=cache, remember=True)
    read.clear()
    index_repository(repo, cache=cache, remember=True)
    assert read == []
    _edit(repo)
    ours = index_repository(repo, cache=cache, remember=True)
    renamed = [path for path in read if "renamed_" in path]
    assert sorted(read) == sorted(["flask_app/app/views.py", "flask_app/app/extra.py", *renamed])
    assert len(renamed) == 1
    mine = write_index(ours, tmp_path / "ours", generated_at=FIXED_TIME)
    assert (mine.graph_path.read_bytes(), mine.manifest_path.read_bytes()) == _bytes(
        repo, tmp_path / "clean", cache=None
    )
