"""Faults of the environment are named truthfully and lose nothing (issue 18).

A full disk, a held lock, a read-only connection and I/O errors each get their own
typed error (never ``corruption``); an open that fails leaves no half-made file; a new
file is private (0600); a damaged stored receipt is a ``CorruptionError`` naming the
command, never a parser's traceback.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import stat
from contextlib import closing
from pathlib import Path

import pytest
from store_helpers import cmd, put, rows, setup_docs

import cairn.store as store
import cairn.store.database as store_database
from cairn.errors import (
    CorruptionError,
    NotFoundError,
    StorageError,
    StorageFullError,
    StorageIOError,
    StorageLockedError,
    StoragePermissionError,
    StorageReadOnlyError,
    os_error,
)
from cairn.graph import EndpointIdentity, SemanticGraph
from cairn.store import Database
from cairn.store.faults import sqlite_error
from cairn.store.load import load_semantic_graph

_BIG_TEXT = "x" * 3000


def _full_error(tmp_path: Path) -> sqlite3.OperationalError:
    """A real SQLITE_FULL raised by SQLite itself (a page limit reached)."""
    with closing(sqlite3.connect(tmp_path / "full-probe.db")) as conn:
        conn.execute("CREATE TABLE t (v BLOB)")
        conn.execute("PRAGMA max_page_count = 3")
        try:
            conn.execute("INSERT INTO t VALUES (?)", (b"x" * 100_000,))
        except sqlite3.OperationalError as exc:
            return exc
    raise AssertionError("SQLite accepted a row beyond its page limit")


def _fill_until_full(db: Database) -> tuple[int, StorageFullError]:
    """Put documents until the file refuses; how many commands landed, and the error."""
    landed = 0
    while True:
        try:
            db.command(cmd(*(put("docs", f"d{landed}-{i}", _BIG_TEXT) for i in range(20))))
        except StorageFullError as exc:
            return landed, exc
        landed += 1
        assert landed < 10_000, "the page limit never stopped the writes"


def test_disk_full_is_its_own_error_and_loses_nothing(db: Database) -> None:
    setup_docs(db)
    pages = rows(db.path, "PRAGMA page_count")[0][0]
    db._writer.execute(f"PRAGMA max_page_count = {pages + 40}")  # a small disk, really full
    landed, error = _fill_until_full(db)
    assert landed >= 1
    assert isinstance(error, StorageError) and not isinstance(error, CorruptionError)
    assert (error.code, error.http_status) == ("storage_full", 507)
    assert error.details["sqlite_error"] == "SQLITE_FULL"
    assert isinstance(error.__cause__, sqlite3.OperationalError)
    position = db.position
    for index in range(landed):  # every acknowledged command is there, whole
        assert db.get_document("docs", f"d{index}-19").body == {"text": _BIG_TEXT}
    with pytest.raises(NotFoundError):
        db.get_document("docs", f"d{landed}-0")  # the refused command left no part behind
    db._writer.execute("PRAGMA max_page_count = 1073741823")  # space returns
    db.command(cmd(put("docs", "after", "space is back")))
    assert db.position == position + 1
    assert db.get_document("docs", "after").body == {"text": "space is back"}


def test_a_held_lock_is_storage_locked(db: Database) -> None:
    setup_docs(db)
    db._writer.execute("PRAGMA busy_timeout = 20")  # the default waits 30 s
    with closing(sqlite3.connect(db.path, isolation_level=None)) as other:
        other.execute("BEGIN IMMEDIATE")
        with pytest.raises(StorageLockedError) as caught:
            db.command(cmd(put("docs", "a", "held")))
        other.execute("ROLLBACK")
    assert (caught.value.code, caught.value.http_status) == ("storage_locked", 423)
    db.command(cmd(put("docs", "a", "free again")))
    assert db.get_document("docs", "a").body == {"text": "free again"}


def test_a_read_only_connection_is_storage_read_only(db: Database) -> None:
    setup_docs(db)
    db._writer.execute("PRAGMA query_only = ON")
    with pytest.raises(StorageReadOnlyError) as caught:
        db.command(cmd(put("docs", "a", "refused")))
    assert (caught.value.code, caught.value.http_status) == ("storage_read_only", 503)
    db._writer.execute("PRAGMA query_only = OFF")
    db.command(cmd(put("docs", "a", "accepted")))


def test_sqlite_corruption_codes_stay_corruption(tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not a database file at all" * 200)
    with pytest.raises(CorruptionError) as caught:
        store.open(junk)
    assert caught.value.code == "corruption"
    assert caught.value.details["sqlite_error"] == "SQLITE_NOTADB"


def test_a_failed_open_of_a_new_file_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    full = _full_error(tmp_path)

    def refuse(*args: object) -> None:
        raise full

    monkeypatch.setattr(store_database, "_initialise", refuse)
    target = tmp_path / "new.db"
    with pytest.raises(StorageFullError) as caught:
        store.open(target)
    assert caught.value.__cause__ is full
    assert sorted(path.name for path in tmp_path.iterdir()) == ["full-probe.db"]


def test_a_failed_open_never_removes_an_existing_file(
    db_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with store.open(db_path) as db:
        setup_docs(db)
        db.command(cmd(put("docs", "kept", "still here")))
    full = _full_error(tmp_path)

    def refuse(*args: object) -> None:
        raise full

    monkeypatch.setattr(store_database, "_initialise", refuse)
    with pytest.raises(StorageFullError):
        store.open(db_path)
    monkeypatch.undo()
    with store.open(db_path) as db:
        assert db.get_document("docs", "kept").body == {"text": "still here"}


def test_a_new_database_file_is_private(db_path: Path) -> None:
    with store.open(db_path) as db:
        setup_docs(db)
        db.command(cmd(put("docs", "a", "secret")))
        for suffix in ("", "-wal", "-shm"):
            mode = stat.S_IMODE(os.stat(f"{db_path}{suffix}").st_mode)
            assert mode == 0o600, (suffix, oct(mode))


def test_an_existing_file_keeps_its_mode(db_path: Path) -> None:
    store.open(db_path).close()
    os.chmod(db_path, 0o640)
    store.open(db_path).close()
    assert stat.S_IMODE(os.stat(db_path).st_mode) == 0o640


@pytest.mark.parametrize(
    ("number", "expected", "code"),
    [
        (errno.ENOSPC, StorageFullError, "storage_full"),
        (errno.EDQUOT, StorageFullError, "storage_full"),
        (errno.EROFS, StorageReadOnlyError, "storage_read_only"),
        (errno.EACCES, StoragePermissionError, "storage_permission"),
        (errno.EPERM, StoragePermissionError, "storage_permission"),
        (errno.EIO, StorageIOError, "storage_io"),
    ],
)
def test_os_errors_map_by_errno(number: int, expected: type[StorageError], code: str) -> None:
    error = os_error(OSError(number, os.strerror(number)), "write graph.cairn", "/x/graph.cairn")
    assert type(error) is expected
    assert error.code == code
    assert error.details == {"errno": errno.errorcode[number], "path": "/x/graph.cairn"}
    assert error.message.startswith("write graph.cairn: ")


def test_an_error_without_a_code_is_read_from_its_message() -> None:
    # sqlite3 errors raised outside the C library (older paths) carry no code.
    full = sqlite_error(sqlite3.OperationalError("database or disk is full"), "command")
    assert isinstance(full, StorageFullError)
    locked = sqlite_error(sqlite3.OperationalError("database is locked"), "command")
    assert isinstance(locked, StorageLockedError)
    other = sqlite_error(sqlite3.DatabaseError("no such table: documents"), "read")
    assert type(other) is CorruptionError


def _graph() -> SemanticGraph:
    graph = SemanticGraph()
    stable = EndpointIdentity.stable()
    graph.add_node("file:a.py", "file", identity=stable, attributes={"path": "a.py"})
    graph.add_node("function:a.py#f", "function", identity=stable, attributes={"name": "f"})
    graph.add_fact("file:a.py", "function:a.py#f", "contains")
    return graph


def test_a_damaged_stored_receipt_is_named_not_a_traceback(db: Database) -> None:
    receipt = load_semantic_graph(db, _graph(), checkpoint=False, pack=False)
    command_id = str(receipt.command_id)
    (outcome,) = rows(db.path, "SELECT outcome FROM commands WHERE command_id = ?", command_id)
    stored = bytes(outcome[0])
    assert stored.startswith(b"{")  # a small receipt is stored plain
    damaged = stored.replace(b'"', b"#", 1)  # one flipped byte: no longer JSON
    with closing(sqlite3.connect(db.path)) as conn:
        conn.execute("UPDATE commands SET outcome = ? WHERE command_id = ?", (damaged, command_id))
        conn.commit()
    with pytest.raises(CorruptionError) as caught:
        load_semantic_graph(db, _graph(), checkpoint=False, pack=False)
    assert caught.value.details == {"table": "commands", "command_id": command_id}
    assert command_id in caught.value.message
