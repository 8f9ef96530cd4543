"""Schema versioning: fresh files, migration of older files, refusal of newer or foreign ones."""

from __future__ import annotations

import json
import sqlite3
import uuid
from contextlib import closing
from pathlib import Path

import pytest
from store_helpers import (
    SPACE,
    cmd,
    current_vectors,
    fact_records,
    occurrence_records,
    put,
    rows,
    setup_docs,
    vector_values,
)
from test_store_load import build

import cairn.store as store
from cairn.canonical import canonical_bytes
from cairn.errors import CorruptionError, UnsupportedCapabilityError
from cairn.index import open as open_indexed
from cairn.store import PutVector
from cairn.store.load import load_semantic_graph
from cairn.store.schema import LATEST_SCHEMA_VERSION, MIGRATIONS, migrate, schema_version

CORE_TABLES = {
    "meta",
    "schema_version",
    "collections",
    "graphs",
    "documents",
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
    assert LATEST_SCHEMA_VERSION == 8
    assert len({m.name for m in MIGRATIONS}) == len(MIGRATIONS)


def test_fresh_file_has_every_table_and_the_latest_version(db_path: Path) -> None:
    with store.open(db_path) as db:
        assert db.schema_version == LATEST_SCHEMA_VERSION
    assert tables(db_path) >= CORE_TABLES | {"slots", "terms", "doc_terms", "vector_rows"}
    assert {"vector_spaces", "vector_blocks"} <= tables(db_path)
    assert "vectors" not in tables(db_path)  # schema 4 keeps one copy of each vector
    assert rows(db_path, "SELECT version, name FROM schema_version ORDER BY version") == [
        (1, "initial"),
        (2, "text_index"),
        (3, "vector_index"),
        (4, "lean_vectors"),
        (5, "lean_facts"),
        (6, "document_checksums"),
        (7, "fact_checksums"),
        (8, "record_checksums"),
    ]
    assert {"fact_shapes", "occurrence_shapes"} <= tables(db_path)


_V1_VECTORS = """CREATE TABLE vectors (
    collection TEXT NOT NULL, id TEXT NOT NULL, field TEXT NOT NULL,
    revision INTEGER NOT NULL, space BLOB NOT NULL, dimension INTEGER NOT NULL,
    data BLOB NOT NULL, position INTEGER NOT NULL,
    PRIMARY KEY (collection, id, field)
) WITHOUT ROWID"""
_V3_VECTOR_ROWS = (
    """CREATE TABLE vector_rows (
        row INTEGER PRIMARY KEY, collection TEXT NOT NULL, field TEXT NOT NULL,
        space BLOB NOT NULL, dimension INTEGER NOT NULL, slot INTEGER NOT NULL,
        birth INTEGER NOT NULL, death INTEGER, data BLOB NOT NULL
    )""",
    "CREATE INDEX vector_rows_by_slot ON vector_rows (slot, field)",
    "CREATE INDEX vector_rows_by_death ON vector_rows (death)",
)


_V4_FACTS = (
    """CREATE TABLE facts (
        graph TEXT NOT NULL, id TEXT NOT NULL, source_collection TEXT NOT NULL,
        source_id TEXT NOT NULL, target_collection TEXT NOT NULL, target_id TEXT NOT NULL,
        relation TEXT NOT NULL, record BLOB NOT NULL, revision INTEGER NOT NULL,
        deleted INTEGER NOT NULL DEFAULT 0, position INTEGER NOT NULL,
        PRIMARY KEY (graph, id)
    ) WITHOUT ROWID""",
    "CREATE INDEX facts_by_source ON facts (graph, source_collection, source_id)",
    "CREATE INDEX facts_by_target ON facts (graph, target_collection, target_id)",
    """CREATE TABLE occurrences (
        graph TEXT NOT NULL, id TEXT NOT NULL, fact_id TEXT NOT NULL, record BLOB NOT NULL,
        PRIMARY KEY (graph, id)
    ) WITHOUT ROWID""",
    "CREATE INDEX occurrences_by_fact ON occurrences (graph, fact_id)",
)
_DELETED_RECORD = b'{"a deleted fact":"schema 4 kept its last record"}'


def _downgrade_checksums(path: Path) -> None:
    """Rewrite a file the way schema 5 stored it: records without checksums."""
    records = ("collections", "graphs", "principals", "policies", "api_keys", "commands")
    records += ("fact_shapes", "occurrence_shapes", "doc_terms")
    with closing(sqlite3.connect(path)) as conn:
        for table in ("documents", "facts", "occurrences", *records):
            conn.execute(f"ALTER TABLE {table} DROP COLUMN checksum")
        conn.execute("DELETE FROM schema_version WHERE version > 5")
        conn.commit()


def _downgrade_facts(path: Path) -> None:
    """Rewrite a file's facts and occurrences the way schema 4 stored them: the whole
    canonical record in every row (a deleted fact too)."""
    _downgrade_checksums(path)
    records = {item[0]: item[5] for item in fact_records(path)}
    occurrences = occurrence_records(path)
    with closing(sqlite3.connect(path)) as conn:
        facts = conn.execute(
            "SELECT graph, id, source_collection, source_id, target_collection, target_id, "
            "relation, revision, deleted, position FROM facts"
        ).fetchall()
        graphs = dict(conn.execute("SELECT fact_id, graph FROM occurrences"))
        for table in ("facts", "occurrences", "fact_shapes", "occurrence_shapes"):
            conn.execute(f"DROP TABLE {table}")
        for statement in _V4_FACTS:
            conn.execute(statement)
        conn.executemany(
            "INSERT INTO facts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(*row[:7], _DELETED_RECORD if row[8] else records[row[1]], *row[7:]) for row in facts],
        )
        conn.executemany(
            "INSERT INTO occurrences VALUES (?, ?, ?, ?)",
            [(graphs[fact_id], oid, fact_id, record) for oid, fact_id, record in occurrences],
        )
        conn.execute("DELETE FROM schema_version WHERE version > 4")
        conn.commit()


def test_version_four_records_become_shapes_and_parts_and_read_back_the_same(
    db_path: Path,
) -> None:
    with store.open(db_path) as db:
        load_semantic_graph(db, build(extra=True))
        smaller = build()  # without the extra node: its facts are deleted
        load_semantic_graph(db, smaller)
    facts, occurrences = fact_records(db_path), occurrence_records(db_path)
    assert rows(db_path, "SELECT count(*) FROM facts WHERE deleted = 1") != [(0,)]
    _downgrade_facts(db_path)
    # A record whose parts disagree with its columns (made by hand) must come back whole.
    with closing(sqlite3.connect(db_path)) as conn:
        fact_id, record = conn.execute(
            "SELECT id, record FROM facts WHERE deleted = 0 ORDER BY id LIMIT 1"
        ).fetchone()
        odd = json.loads(record)
        odd["source"] = "written by hand"
        conn.execute("UPDATE facts SET record = ? WHERE id = ?", (canonical_bytes(odd), fact_id))
        conn.commit()
    facts = [(*f[:5], canonical_bytes(odd)) if f[0] == fact_id else f for f in facts]
    with store.open(db_path) as db:
        assert db.schema_version == LATEST_SCHEMA_VERSION
        again = load_semantic_graph(db, smaller)
    assert [(m.kind, m.id) for m in again.mutations] == [("put_fact", fact_id)]  # the odd one
    assert occurrence_records(db_path) == occurrences
    assert rows(db_path, "SELECT count(*) FROM facts WHERE record IS NOT NULL") == [(0,)]
    migrated = {f[0]: f for f in fact_records(db_path)}
    assert [migrated[f[0]] for f in facts if f[0] != fact_id] == [
        f for f in facts if f[0] != fact_id
    ]


def test_a_file_that_cannot_be_migrated_is_refused_untouched_with_what_to_do(
    db_path: Path,
) -> None:
    with store.open(db_path) as db:
        load_semantic_graph(db, build())
    _downgrade_facts(db_path)
    with closing(sqlite3.connect(db_path)) as conn:
        conn.execute(
            "UPDATE occurrences SET fact_id = 'sf_not_a_live_fact' "
            "WHERE id = (SELECT min(id) FROM occurrences)"
        )
        conn.commit()
    before = db_path.read_bytes()
    with pytest.raises(CorruptionError) as caught:
        store.open(db_path)
    message = caught.value.message
    assert "from schema 4 to 8" in message and "not live" in message
    assert "cairn index" in message and "Nothing was changed" in message
    assert caught.value.details["schema_version"] == 4
    with closing(sqlite3.connect(db_path)) as conn:
        assert schema_version(conn) == 4
    assert db_path.read_bytes() == before


def _downgrade_vectors(path: Path, version: int) -> None:
    """Rewrite a file's vectors the way schema ``version`` (1..3) stored them: the
    current ones in ``vectors`` (values inline, space JSON per row) and, from version 3,
    every vector row with its values in ``vector_rows``."""
    _downgrade_facts(path)
    current = current_vectors(path)
    with closing(sqlite3.connect(path)) as conn:
        values = {row: data for row, _, data in vector_values(conn)}
        history = conn.execute(
            "SELECT v.row, p.collection, p.field, p.space, p.dimension, v.slot, v.birth, "
            "v.death FROM vector_rows AS v JOIN vector_spaces AS p ON p.id = v.space"
        ).fetchall()
        births = dict(
            conn.execute(
                "SELECT s.collection || '/' || s.id || '/' || p.field, v.birth "
                "FROM vector_rows AS v JOIN vector_spaces AS p ON p.id = v.space "
                "JOIN slots AS s ON s.slot = v.slot WHERE v.death IS NULL"
            )
        )
        for table in ("vector_rows", "vector_spaces", "vector_blocks"):
            conn.execute(f"DROP TABLE {table}")
        conn.execute(_V1_VECTORS)
        conn.executemany(
            "INSERT INTO vectors VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [(*item, births[f"{item[0]}/{item[1]}/{item[2]}"]) for item in current],
        )
        if version >= 3:
            for statement in _V3_VECTOR_ROWS:
                conn.execute(statement)
            conn.executemany(
                "INSERT INTO vector_rows VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(*row, values[row[0]]) for row in history],
            )
        conn.execute("DELETE FROM schema_version WHERE version > ?", (version,))
        conn.commit()


def test_version_three_vector_rows_move_into_blocks_and_keep_their_history(
    db_path: Path,
) -> None:
    with open_indexed(db_path) as db:
        setup_docs(db)
        db.command(cmd(put("docs", "a"), put("docs", "b"), put("docs", "c")))
        db.command(cmd(PutVector("docs", "a", "embedding", (1.0, 0.0))))
        db.command(cmd(PutVector("docs", "b", "embedding", (0.6, 0.8))))
        db.command(cmd(PutVector("docs", "b", "embedding", (0.0, 1.0))))  # b's first dies
        db.command(cmd(PutVector("docs", "c", "embedding", (0.8, 0.6))))
        db.command(cmd(put("docs", "c", "new revision")))  # c's vector is stale now
        before = db.vector_search("docs", "embedding", (1.0, 1.0), SPACE)
    history = rows(db_path, "SELECT row, slot, birth, death FROM vector_rows ORDER BY row")
    current = current_vectors(db_path)
    assert [item[:2] for item in current] == [("docs", "a"), ("docs", "b")]
    _downgrade_vectors(db_path, 3)
    assert "vectors" in tables(db_path) and "vector_spaces" not in tables(db_path)

    with open_indexed(db_path) as db:
        assert db.schema_version == LATEST_SCHEMA_VERSION
        after = db.vector_search("docs", "embedding", (1.0, 1.0), SPACE)
    assert [(hit.ref, hit.score) for hit in after] == [(hit.ref, hit.score) for hit in before]
    assert rows(db_path, "SELECT row, slot, birth, death FROM vector_rows ORDER BY row") == history
    assert current_vectors(db_path) == current
    assert "vectors" not in tables(db_path)
    assert rows(db_path, "SELECT count(*) FROM vector_spaces") == [(1,)]


def test_older_file_is_migrated_and_keeps_its_data(db_path: Path) -> None:
    with store.open(db_path) as db:
        setup_docs(db)
        db.command(cmd(put("docs", "a", "kept")))
        incarnation = db.incarnation
    # Turn the file into what version 1 wrote: no text-index tables, one version row.
    _downgrade_vectors(db_path, 1)
    with closing(sqlite3.connect(db_path)) as conn:
        conn.execute("DROP TABLE slots")
        conn.execute("DROP TABLE terms")
        conn.execute("DROP TABLE doc_terms")
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
    with open_indexed(db_path) as db:
        setup_docs(db)
        db.command(cmd(put("docs", "a"), put("docs", "b")))
        db.command(cmd(PutVector("docs", "a", "embedding", (1.0, 0.0))))
        db.command(cmd(PutVector("docs", "b", "embedding", (0.0, 1.0))))
        db.command(cmd(put("docs", "b", "new revision")))  # b's vector is stale now
    _downgrade_vectors(db_path, 2)
    with open_indexed(db_path) as db:
        hits = db.vector_search("docs", "embedding", (1.0, 1.0), SPACE)
        assert [hit.ref.id for hit in hits] == ["a"]
    assert rows(db_path, "SELECT slot, birth, death FROM vector_rows") == [(1, 3, None)]


def test_migrate_reports_before_and_after_and_is_idempotent(db_path: Path) -> None:
    with closing(sqlite3.connect(db_path, isolation_level=None)) as conn:
        assert migrate(conn, target=1) == (0, 1)
        assert schema_version(conn) == 1
        assert "terms" not in {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        assert migrate(conn, target=2) == (1, 2)
        assert migrate(conn, target=3) == (2, 3)
        assert migrate(conn, target=4) == (3, 4)
        assert migrate(conn, target=5) == (4, 5)
        assert migrate(conn, target=6) == (5, 6)
        assert migrate(conn, target=7) == (6, 7)
        assert migrate(conn) == (7, 8)
        assert migrate(conn) == (8, 8)


def test_newer_file_is_refused_and_left_untouched(db_path: Path) -> None:
    with store.open(db_path):
        pass
    with closing(sqlite3.connect(db_path)) as conn:
        conn.execute("INSERT INTO schema_version (version, name) VALUES (9, 'from_the_future')")
        conn.commit()
    with pytest.raises(UnsupportedCapabilityError, match="schema version 9") as info:
        store.open(db_path)
    assert info.value.details == {"schema_version": 9, "supported": 8}
    assert rows(db_path, "SELECT max(version) FROM schema_version") == [(9,)]


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


def test_version_seven_rows_get_their_record_checksums(db_path: Path) -> None:
    from cairn.store import ConfigurePrincipal, Grant, issue_api_key
    from cairn.store.check import check_file
    from cairn.store.policy import Capability

    with store.open(db_path) as db:
        setup_docs(db)
        grant = Grant("main", "docs", frozenset({Capability.QUERY}))
        issued = issue_api_key()
        db.command(cmd(ConfigurePrincipal("reader", (grant,), api_keys=(issued.verifier,))))
        db.command(cmd(put("docs", "a", "alpha")))
        outcomes = rows(db_path, "SELECT command_id, outcome FROM commands ORDER BY position")
    with closing(sqlite3.connect(db_path)) as conn:  # the file as schema 7 wrote it
        for table in (
            *("collections", "graphs", "principals", "policies", "api_keys", "commands"),
            *("fact_shapes", "occurrence_shapes", "doc_terms"),
        ):
            conn.execute(f"ALTER TABLE {table} DROP COLUMN checksum")
        conn.execute("DELETE FROM schema_version WHERE version = 8")
        conn.commit()
    with store.open(db_path) as db:
        assert db.schema_version == 8
        assert db.principal("reader").id == "reader"
        assert db.authenticate(issued.token).id == "reader"
        for command_id, outcome in outcomes:
            assert db.stored_outcome(uuid.UUID(command_id)) == store_unpacked(outcome)
    report = check_file(db_path)
    assert report.ok and report.tables["commands"].rows == len(outcomes) == 3
    assert report.tables["principals"].rows == 1 and report.tables["api_keys"].rows == 1


def store_unpacked(outcome: bytes) -> bytes:
    """A stored outcome as ``stored_outcome`` returns it (packed ones are zlib)."""
    import zlib

    data = bytes(outcome)
    return data if data.startswith(b"{") else zlib.decompress(data)
