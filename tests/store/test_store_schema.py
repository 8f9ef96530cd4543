"""Schema versioning: fresh files, migration of older files, refusal of newer or foreign ones."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from store_helpers import SPACE, cmd, put, rows, setup_docs

import cairn.store as store
from cairn.errors import CorruptionError, UnsupportedCapabilityError
from cairn.store import PutVector
from cairn.store.schema import LATEST_SCHEMA_VERSION, MIGRATIONS, migrate, schema_version

CORE_TABLES = {
    "meta",
    "schema_version",
    "collections",
    "graphs",
    "documents",
    "vectors",
    "facts",
    "occurrences",
    "principals",
    "api_keys",
    "policies",
    "commands",
    "changes",
}


def tables(path: Path) -> set[str]:
    return {row[0] for row in rows(path, "SELECT name FROM sqlite_master WHERE type = 'table'")}


def test_migrations_are_numbered_one_to_latest_without_gaps() -> None:
    assert [m.version for m in MIGRATIONS] == list(range(1, len(MIGRATIONS) + 1))
    assert LATEST_SCHEMA_VERSION == 3
    assert len({m.name for m in MIGRATIONS}) == len(MIGRATIONS)


def test_fresh_file_has_every_table_and_the_latest_version(db_path: Path) -> None:
    with store.open(db_path) as db:
        assert db.schema_version == LATEST_SCHEMA_VERSION
    assert tables(db_path) >= CORE_TABLES | {"slots", "terms", "doc_terms", "vector_rows"}
    assert rows(db_path, "SELECT version, name FROM schema_version ORDER BY version") == [
        (1, "initial"),
        (2, "text_index"),
        (3, "vector_index"),
    ]


def test_older_file_is_migrated_and_keeps_its_data(db_path: Path) -> None:
    with store.open(db_path) as db:
        setup_docs(db)
        db.command(cmd(put("docs", "a", "kept")))
        incarnation = db.incarnation
    # Turn the file into what version 1 wrote: no text-index tables, one version row.
    with closing(sqlite3.connect(db_path)) as conn:
        conn.execute("DROP TABLE slots")
        conn.execute("DROP TABLE terms")
        conn.execute("DROP TABLE doc_terms")
        conn.execute("DROP TABLE vector_rows")
        conn.execute("DELETE FROM schema_version WHERE version >= 2")
        conn.commit()
    assert "terms" not in tables(db_path)

    with store.open(db_path) as db:
        assert db.schema_version == LATEST_SCHEMA_VERSION
        assert db.incarnation == incarnation
        assert db.position == 2
    assert {"slots", "terms", "doc_terms"} <= tables(db_path)
    assert rows(db_path, "SELECT id, revision FROM documents") == [("a", 1)]
    assert rows(db_path, "SELECT slot, id, birth, death FROM slots") == [(1, "a", 2, None)]


def test_version_two_vectors_are_carried_into_vector_rows(db_path: Path) -> None:
    with store.open(db_path) as db:
        setup_docs(db)
        db.command(cmd(put("docs", "a"), put("docs", "b")))
        db.command(cmd(PutVector("docs", "a", "embedding", (1.0, 0.0))))
        db.command(cmd(PutVector("docs", "b", "embedding", (0.0, 1.0))))
        db.command(cmd(put("docs", "b", "new revision")))  # b's vector is stale now
    with closing(sqlite3.connect(db_path)) as conn:
        conn.execute("DROP TABLE vector_rows")
        conn.execute("DELETE FROM schema_version WHERE version = 3")
        conn.commit()
    with store.open(db_path) as db:
        hits = db.vector_search("docs", "embedding", (1.0, 1.0), SPACE)
        assert [hit.ref.id for hit in hits] == ["a"]
    assert rows(db_path, "SELECT slot, birth, death FROM vector_rows") == [(1, 3, None)]


def test_migrate_reports_before_and_after_and_is_idempotent(db_path: Path) -> None:
    with closing(sqlite3.connect(db_path, isolation_level=None)) as conn:
        assert migrate(conn, target=1) == (0, 1)
        assert schema_version(conn) == 1
        assert "terms" not in {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        assert migrate(conn, target=2) == (1, 2)
        assert migrate(conn) == (2, 3)
        assert migrate(conn) == (3, 3)


def test_newer_file_is_refused_and_left_untouched(db_path: Path) -> None:
    with store.open(db_path):
        pass
    with closing(sqlite3.connect(db_path)) as conn:
        conn.execute("INSERT INTO schema_version (version, name) VALUES (4, 'from_the_future')")
        conn.commit()
    with pytest.raises(UnsupportedCapabilityError, match="schema version 4") as info:
        store.open(db_path)
    assert info.value.details == {"schema_version": 4, "supported": 3}
    assert rows(db_path, "SELECT max(version) FROM schema_version") == [(4,)]


def test_a_foreign_sqlite_file_is_not_taken_over(db_path: Path) -> None:
    with closing(sqlite3.connect(db_path)) as conn:
        conn.execute("CREATE TABLE customers (id INTEGER)")
        conn.commit()
    with pytest.raises(CorruptionError, match="not a Cairn database"):
        store.open(db_path)
    assert tables(db_path) == {"customers"}


def test_a_file_that_is_not_sqlite_is_corruption(db_path: Path) -> None:
    db_path.write_bytes(b"this is not a database file at all" * 100)
    with pytest.raises(CorruptionError):
        store.open(db_path)
