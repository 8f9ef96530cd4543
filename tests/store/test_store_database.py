"""Opening a database file: WAL and FULL sync, incarnation, name, position, lifecycle."""

from __future__ import annotations

import sqlite3
import threading
import uuid
from contextlib import closing
from pathlib import Path

import pytest
from store_helpers import cmd, put, rows, setup_docs

import cairn.store as store
from cairn.errors import ConflictError, NotFoundError, ValidationError
from cairn.store import ConfigureCollection, Database


def test_file_is_in_wal_mode_and_the_writer_syncs_fully(db: Database, db_path: Path) -> None:
    assert rows(db_path, "PRAGMA journal_mode") == [("wal",)]
    # 2 is FULL; the writer connection is the one that commits.
    assert db._writer.execute("PRAGMA synchronous").fetchone() == (2,)


def test_a_new_file_keeps_document_bodies_of_two_kib_in_their_page(tmp_path: Path) -> None:
    """8 KiB pages: a ~1.8 KB body no longer spills into an overflow page of its own."""
    path = tmp_path / "a.db"
    with store.open(path) as db:
        setup_docs(db)
        db.command(cmd(*(put("docs", f"d{i}", "word " * 360) for i in range(20))))
    assert rows(path, "PRAGMA page_size") == [(8192,)]
    assert len(rows(path, "SELECT body FROM documents WHERE id = 'd0'")[0][0]) > 1_700
    overflow = "SELECT count(*) FROM dbstat WHERE name = 'documents' AND pagetype = 'overflow'"
    assert rows(path, overflow) == [(0,)]


def test_an_existing_file_keeps_its_page_size(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("PRAGMA page_size = 4096")
        conn.execute("VACUUM")  # an empty file that has its page size, as older files do
    with store.open(path) as db:
        setup_docs(db)
        db.command(cmd(put("docs", "a", "some words")))
        assert db.get_document("docs", "a").body["text"] == "some words"
    assert rows(path, "PRAGMA page_size") == [(4096,)]


def test_incarnation_is_minted_once_and_survives_reopen(tmp_path: Path) -> None:
    with store.open(tmp_path / "a.db") as first:
        minted = first.incarnation
        assert isinstance(minted, uuid.UUID) and minted.version == 4
    with store.open(tmp_path / "a.db") as again:
        assert again.incarnation == minted
    with store.open(tmp_path / "b.db") as other:
        assert other.incarnation != minted
    assert rows(tmp_path / "a.db", "SELECT value FROM meta WHERE key = 'incarnation'") == [
        (str(minted),)
    ]


def test_name_defaults_to_main_and_is_fixed_at_creation(tmp_path: Path) -> None:
    with store.open(tmp_path / "a.db") as db:
        assert db.name == "main"
    with store.open(tmp_path / "b.db", database="code") as db:
        assert db.name == "code"
    with store.open(tmp_path / "b.db") as db:
        assert db.name == "code"
    with pytest.raises(ConflictError, match="holds database 'code'"):
        store.open(tmp_path / "b.db", database="other")


def test_position_grows_by_one_per_commit_and_survives_reopen(db_path: Path) -> None:
    with store.open(db_path) as db:
        assert db.position == 0
        setup_docs(db)
        assert db.position == 1
        receipt = db.command(cmd(put("docs", "a"), put("docs", "b")))
        assert receipt.token.position == 2
        assert db.position == 2
    with store.open(db_path) as db:
        assert db.position == 2
        assert db.command(cmd(put("docs", "c"))).token.position == 3


def test_a_second_handle_on_the_file_sees_commits(db_path: Path) -> None:
    with store.open(db_path) as writer, store.open(db_path) as other:
        setup_docs(writer)
        assert other.position == 1
        # The other handle writes too; positions stay one sequence for the file.
        assert other.command(cmd(put("docs", "x"))).token.position == 2
        assert writer.position == 2


def test_concurrent_commands_from_threads_get_distinct_positions(db: Database) -> None:
    setup_docs(db)
    positions: list[int] = []
    lock = threading.Lock()

    def write(index: int) -> None:
        receipt = db.command(cmd(put("docs", f"doc-{index}")))
        with lock:
            positions.append(receipt.token.position)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(positions) == list(range(2, 10))


def test_wrong_database_name_is_refused_before_any_read(db: Database, db_path: Path) -> None:
    request = cmd(ConfigureCollection("docs"), database="elsewhere")
    before = db.read_cut_acquisitions
    with pytest.raises(ValidationError, match="names database 'elsewhere'") as caught:
        db.command(request)
    assert caught.value.details == {"field": "database", "database": "elsewhere"}
    assert "main" not in caught.value.message  # the served database is not named
    assert db.read_cut_acquisitions == before
    assert rows(db_path, "SELECT count(*) FROM commands") == [(0,)]
    assert db.position == 0


def test_close_is_idempotent_and_a_closed_database_refuses_work(db_path: Path) -> None:
    db = store.open(db_path)
    db.close()
    db.close()
    with pytest.raises(ValidationError, match="closed"):
        db.command(cmd(ConfigureCollection("docs")))
    with pytest.raises(ValidationError, match="closed"):
        _ = db.position


def test_memory_and_missing_directories_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="file path"):
        store.open(":memory:")
    with pytest.raises(NotFoundError, match="does not exist"):
        store.open(tmp_path / "missing" / "cairn.db")


def test_reader_connections_cannot_write(db: Database) -> None:
    with db._reader() as conn, pytest.raises(sqlite3.OperationalError):
        conn.execute("DELETE FROM meta")
    assert db.position == 0


def test_file_stays_consistent_after_reopen_with_wal_checkpoint(db_path: Path) -> None:
    with store.open(db_path) as db:
        setup_docs(db)
        db.command(cmd(put("docs", "a", "alpha")))
    with closing(sqlite3.connect(db_path)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def _main_file_position(db_path: Path, tmp_path: Path) -> int:
    """The position the database file alone holds (its write-ahead log left out)."""
    import shutil

    alone = tmp_path / "alone" / "copy.db"
    alone.parent.mkdir(exist_ok=True)
    alone.unlink(missing_ok=True)
    shutil.copyfile(db_path, alone)
    with closing(sqlite3.connect(alone)) as conn:
        return int(conn.execute("SELECT value FROM meta WHERE key = 'position'").fetchone()[0])


def test_checkpoint_wal_copies_committed_pages_into_the_file(db_path: Path, tmp_path: Path) -> None:
    with store.open(db_path) as db:
        setup_docs(db)
        db.checkpoint_wal()
        assert _main_file_position(db_path, tmp_path) == 1
        db.command(cmd(put("docs", "a", "alpha")))
        assert _main_file_position(db_path, tmp_path) == 1  # committed to the log only
        db.checkpoint_wal()
        assert _main_file_position(db_path, tmp_path) == 2
        assert db.position == 2
    db.close()
    with pytest.raises(ValidationError, match="closed"):
        db.checkpoint_wal()


def test_the_package_root_exports_open_and_database(tmp_path: Path) -> None:
    import cairn

    with cairn.open(tmp_path / "root.db") as db:
        assert isinstance(db, cairn.Database)
        assert "open" in cairn.__all__ and "Database" in cairn.__all__
