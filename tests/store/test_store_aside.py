"""A new database built aside (``cairn.store.aside``): its name only ever names a whole,
synced file; errors, crashes and races leave the real name untouched."""

from __future__ import annotations

import os
import sqlite3
import stat
from contextlib import closing
from pathlib import Path

import pytest
from store_helpers import cmd, rows

from cairn.errors import ConflictError
from cairn.store import ConfigureCollection, PutDocument
from cairn.store import open as open_database
from cairn.store.aside import BUILDING_SUFFIX, building

SIDECAR = ".keys"


def _fill(db: object, count: int = 3) -> None:
    db.command(cmd(ConfigureCollection("notes", ("/text",))))  # type: ignore[attr-defined]
    puts = tuple(PutDocument("notes", f"n{i}", {"text": f"note {i}"}) for i in range(count))
    db.command(cmd(*puts))  # type: ignore[attr-defined]


def _temporary(path: Path) -> Path:
    return path.with_name(path.name + BUILDING_SUFFIX)


def test_a_built_database_appears_whole_with_its_sidecar(tmp_path: Path) -> None:
    path = tmp_path / "cairn.db"
    with building(path, sidecars=(SIDECAR,)) as db:
        _fill(db)
        assert not path.exists()  # nothing under the real name until the build is whole
        Path(f"{db.path}{SIDECAR}").write_text("kept")
        position = db.position
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cairn.db", "cairn.db" + SIDECAR]
    assert (tmp_path / ("cairn.db" + SIDECAR)).read_text() == "kept"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    with closing(sqlite3.connect(path)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    with open_database(path) as reopened:
        assert reopened.position == position
        assert reopened.get_document("notes", "n2").body["text"] == "note 2"
    assert rows(path, "PRAGMA journal_mode") == [("wal",)]  # an ordinary database from now on


def test_an_error_leaves_nothing_behind(tmp_path: Path) -> None:
    path = tmp_path / "cairn.db"

    def interrupted() -> None:
        with building(path, sidecars=(SIDECAR,)) as db:
            _fill(db)
            Path(f"{db.path}{SIDECAR}").write_text("half")
            raise RuntimeError("stop")

    with pytest.raises(RuntimeError, match="stop"):
        interrupted()
    assert list(tmp_path.iterdir()) == []


def test_an_existing_database_is_never_built_over(tmp_path: Path) -> None:
    path = tmp_path / "cairn.db"
    path.write_bytes(b"someone else's file")
    with pytest.raises(ConflictError, match="exists"), building(path):
        pass
    assert path.read_bytes() == b"someone else's file"
    assert not _temporary(path).exists()


def test_a_database_created_during_the_build_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "cairn.db"

    def raced() -> None:
        with building(path) as db:
            _fill(db)
            path.write_bytes(b"made meanwhile")

    with pytest.raises(ConflictError, match="created while"):
        raced()
    assert path.read_bytes() == b"made meanwhile"
    assert not _temporary(path).exists()


def test_a_second_build_of_the_same_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "cairn.db"
    with building(path) as db:
        with pytest.raises(ConflictError, match="another process is building"), building(path):
            pass
        _fill(db)
    with open_database(path) as reopened:
        assert reopened.get_document("notes", "n0").body["text"] == "note 0"


def test_what_a_crashed_build_left_is_replaced(tmp_path: Path) -> None:
    path = tmp_path / "cairn.db"
    _temporary(path).write_bytes(os.urandom(8192))  # a build killed mid-write
    Path(f"{_temporary(path)}-journal").write_bytes(os.urandom(512))
    Path(f"{path}-wal").write_bytes(_live_log(tmp_path / "other.db"))  # a removed one's
    with building(path) as db:
        _fill(db, count=1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cairn.db", "other.db"]
    with open_database(path) as reopened:
        assert reopened.get_document("notes", "n0").body["text"] == "note 0"
    assert rows(path, "PRAGMA integrity_check") == [("ok",)]


def _live_log(other: Path) -> bytes:
    """The write-ahead log of another database, holding pages not checkpointed yet (the
    log SQLite would replay into a new file of that name)."""
    with closing(sqlite3.connect(other)) as conn:
        conn.execute("PRAGMA page_size = 8192")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA wal_autocheckpoint = 0")
        conn.execute("CREATE TABLE meta (key TEXT, value TEXT)")
        conn.execute("INSERT INTO meta VALUES ('database', 'not this one')")
        conn.commit()
        log = Path(f"{other}-wal").read_bytes()
    assert log
    return log
