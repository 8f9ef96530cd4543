"""The store's SQLite schema as an ordered list of migrations (design §3).

A database file records every migration applied to it in ``schema_version``. Opening a
file applies the missing migrations in order, inside one write transaction; a file made
by a newer Cairn (a version this build does not know) is refused, and so is a SQLite
file that is not a Cairn database. Migrations are append-only: a released one is never
edited, a change is a new migration.

Tables (bodies and records are canonical JSON bytes):

- ``meta``: key/value facts about the file: database name, incarnation UUID, commit
  position, next document slot.
- ``collections``, ``graphs``, ``policies``, ``principals``, ``api_keys``: configuration.
- ``documents``: current row per ``(collection, id)`` with its slot, revision, body,
  row access and tombstone flag; ``vectors`` per ``(collection, id, field)`` bound to a
  document revision; ``facts`` and ``occurrences`` per graph.
- ``commands``: the stored outcome (receipt or error) per ``(principal, database,
  command_id)`` with the command's fingerprint.
- ``changes``: the position log the in-memory columns catch up from.
- ``slots``, ``terms`` and ``doc_terms`` (migration 2): every document revision ever
  written (its slot, access, birth and death positions) and its analysed text fields
  as packed arrays; the in-memory columns are loaded from them.
- ``vector_rows`` (migration 3): every vector ever written, append-only, bound to the
  document slot (revision) it was written for, with birth and death positions like
  slots; the in-memory float32 matrices are loaded from it.
- migration 4 (``lean_vectors``) stores each vector once: ``vector_spaces`` (spaces by
  integer), ``vector_rows`` without values, ``vector_blocks`` holding the values of
  consecutive rows, compressed and checksummed (``cairn.store.vectorstore``); the
  ``vectors`` table, a second copy of the current ones, is gone.
- migration 5 (``lean_facts``) stores fact and occurrence records as shared shapes
  (``fact_shapes``, ``occurrence_shapes``) plus the parts that vary
  (``cairn.store.records``); occurrences are keyed by ``(graph, fact_id, id)``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson

from cairn.errors import CorruptionError, UnsupportedCapabilityError
from cairn.store.checksums import (
    CONFIG_KEYS,
    FACT_ROW,
    SHAPE_TABLES,
    command_checksum,
    config_checksum,
    document_checksum,
    fact_row_checksum,
    key_checksum,
    occurrence_checksum,
    posting_checksum,
    shape_checksum,
    stored_bytes,
)
from cairn.store.faults import rollback
from cairn.store.records import Shapes, split_fact, split_occurrence
from cairn.store.vectorstore import write_vectors

__all__ = [
    "LATEST_SCHEMA_VERSION",
    "MIGRATIONS",
    "Migration",
    "migrate",
    "schema_version",
]


@dataclass(frozen=True, slots=True)
class Migration:
    """One schema step: its version number, a short name and what it runs, in order
    (DDL statements, or functions for data a statement cannot convert)."""

    version: int
    name: str
    statements: tuple[str | Callable[[sqlite3.Connection], None], ...]


_INITIAL = (
    """CREATE TABLE meta (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
    ) WITHOUT ROWID""",
    """CREATE TABLE collections (
        name TEXT PRIMARY KEY,
        config BLOB NOT NULL,
        revision INTEGER NOT NULL,
        position INTEGER NOT NULL
    ) WITHOUT ROWID""",
    """CREATE TABLE graphs (
        name TEXT PRIMARY KEY,
        config BLOB NOT NULL,
        revision INTEGER NOT NULL,
        position INTEGER NOT NULL
    ) WITHOUT ROWID""",
    """CREATE TABLE documents (
        collection TEXT NOT NULL,
        id TEXT NOT NULL,
        slot INTEGER NOT NULL UNIQUE,
        revision INTEGER NOT NULL,
        body BLOB,
        owner TEXT,
        project TEXT,
        deleted INTEGER NOT NULL DEFAULT 0,
        position INTEGER NOT NULL,
        PRIMARY KEY (collection, id)
    ) WITHOUT ROWID""",
    """CREATE TABLE vectors (
        collection TEXT NOT NULL,
        id TEXT NOT NULL,
        field TEXT NOT NULL,
        revision INTEGER NOT NULL,
        space BLOB NOT NULL,
        dimension INTEGER NOT NULL,
        data BLOB NOT NULL,
        position INTEGER NOT NULL,
        PRIMARY KEY (collection, id, field)
    ) WITHOUT ROWID""",
    """CREATE TABLE facts (
        graph TEXT NOT NULL,
        id TEXT NOT NULL,
        source_collection TEXT NOT NULL,
        source_id TEXT NOT NULL,
        target_collection TEXT NOT NULL,
        target_id TEXT NOT NULL,
        relation TEXT NOT NULL,
        record BLOB NOT NULL,
        revision INTEGER NOT NULL,
        deleted INTEGER NOT NULL DEFAULT 0,
        position INTEGER NOT NULL,
        PRIMARY KEY (graph, id)
    ) WITHOUT ROWID""",
    "CREATE INDEX facts_by_source ON facts (graph, source_collection, source_id)",
    "CREATE INDEX facts_by_target ON facts (graph, target_collection, target_id)",
    """CREATE TABLE occurrences (
        graph TEXT NOT NULL,
        id TEXT NOT NULL,
        fact_id TEXT NOT NULL,
        record BLOB NOT NULL,
        PRIMARY KEY (graph, id)
    ) WITHOUT ROWID""",
    "CREATE INDEX occurrences_by_fact ON occurrences (graph, fact_id)",
    """CREATE TABLE principals (
        id TEXT PRIMARY KEY,
        record BLOB NOT NULL,
        revision INTEGER NOT NULL,
        position INTEGER NOT NULL
    ) WITHOUT ROWID""",
    """CREATE TABLE api_keys (
        key_id TEXT PRIMARY KEY,
        principal TEXT NOT NULL,
        verifier TEXT NOT NULL,
        position INTEGER NOT NULL
    ) WITHOUT ROWID""",
    "CREATE INDEX api_keys_by_principal ON api_keys (principal)",
    """CREATE TABLE policies (
        resource TEXT PRIMARY KEY,
        record BLOB NOT NULL,
        revision INTEGER NOT NULL,
        position INTEGER NOT NULL
    ) WITHOUT ROWID""",
    """CREATE TABLE commands (
        principal TEXT NOT NULL,
        database TEXT NOT NULL,
        command_id TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        ok INTEGER NOT NULL,
        outcome BLOB NOT NULL,
        position INTEGER NOT NULL,
        PRIMARY KEY (principal, database, command_id)
    ) WITHOUT ROWID""",
    """CREATE TABLE changes (
        position INTEGER NOT NULL,
        ordinal INTEGER NOT NULL,
        kind TEXT NOT NULL,
        resource TEXT NOT NULL,
        id TEXT NOT NULL,
        revision INTEGER NOT NULL,
        slot INTEGER,
        previous_slot INTEGER,
        PRIMARY KEY (position, ordinal)
    ) WITHOUT ROWID""",
)

_TEXT_INDEX = (
    """CREATE TABLE slots (
        slot INTEGER PRIMARY KEY,
        collection TEXT NOT NULL,
        id TEXT NOT NULL,
        revision INTEGER NOT NULL,
        owner TEXT,
        project TEXT,
        birth INTEGER NOT NULL,
        death INTEGER
    )""",
    "CREATE INDEX slots_by_birth ON slots (birth)",
    "CREATE INDEX slots_by_death ON slots (death)",
    # Live documents written before this migration become slots born where they were written.
    """INSERT INTO slots (slot, collection, id, revision, owner, project, birth, death)
        SELECT slot, collection, id, revision, owner, project, position, NULL
        FROM documents WHERE deleted = 0""",
    """CREATE TABLE terms (
        id INTEGER PRIMARY KEY,
        term TEXT NOT NULL UNIQUE
    )""",
    """CREATE TABLE doc_terms (
        slot INTEGER NOT NULL,
        field TEXT NOT NULL,
        length INTEGER NOT NULL,
        term_ids BLOB NOT NULL,
        counts BLOB NOT NULL,
        PRIMARY KEY (slot, field)
    ) WITHOUT ROWID""",
)

_VECTOR_INDEX = (
    """CREATE TABLE vector_rows (
        row INTEGER PRIMARY KEY,
        collection TEXT NOT NULL,
        field TEXT NOT NULL,
        space BLOB NOT NULL,
        dimension INTEGER NOT NULL,
        slot INTEGER NOT NULL,
        birth INTEGER NOT NULL,
        death INTEGER,
        data BLOB NOT NULL
    )""",
    "CREATE INDEX vector_rows_by_slot ON vector_rows (slot, field)",
    "CREATE INDEX vector_rows_by_death ON vector_rows (death)",
    # Vectors bound to the live revision written before this migration become rows born
    # where they were written; stale ones are never visible, so they are not carried.
    """INSERT INTO vector_rows (collection, field, space, dimension, slot, birth, death, data)
        SELECT v.collection, v.field, v.space, v.dimension, d.slot, v.position, NULL, v.data
        FROM vectors AS v JOIN documents AS d ON d.collection = v.collection AND d.id = v.id
        WHERE d.deleted = 0 AND d.revision = v.revision
        ORDER BY v.position, v.collection, v.id, v.field""",
)


def _carry_vector_rows(conn: sqlite3.Connection) -> None:
    """Move schema 3's vector rows (values inline, space JSON per row) into schema 4's
    spaces, rows and blocks, one space and birth at a time in row order."""
    spaces: dict[tuple[str, str, bytes], int] = {}
    for collection, field, space, dimension in conn.execute(
        "SELECT collection, field, space, dimension FROM vector_rows_v3 "
        "GROUP BY collection, field, space ORDER BY min(row)"
    ).fetchall():
        cursor = conn.execute(
            "INSERT INTO vector_spaces (collection, field, space, dimension) VALUES (?, ?, ?, ?)",
            (collection, field, space, dimension),
        )
        assert cursor.lastrowid is not None
        spaces[(collection, field, bytes(space))] = int(cursor.lastrowid)
    run: list[tuple[int, int, bytes]] = []
    key: tuple[int, int] | None = None

    def flush() -> None:
        if key is None or not run:
            return
        space_id, birth = key
        dimension = conn.execute(
            "SELECT dimension FROM vector_spaces WHERE id = ?", (space_id,)
        ).fetchone()[0]
        matrix = np.frombuffer(b"".join(item[2] for item in run), dtype="<f4")
        if len(matrix) != dimension * len(run):
            raise CorruptionError("a schema 3 vector row has the wrong size")
        write_vectors(
            conn,
            space_id,
            [item[0] for item in run],
            [item[1] for item in run],
            birth,
            matrix.reshape(len(run), dimension),
        )
        run.clear()

    deaths: list[tuple[int, int]] = []
    for row, collection, field, space, slot, birth, death, data in conn.execute(
        "SELECT row, collection, field, space, slot, birth, death, data FROM vector_rows_v3 "
        "ORDER BY row"
    ).fetchall():
        here = (spaces[(collection, field, bytes(space))], int(birth))
        if here != key:
            flush()
            key = here
        run.append((int(row), int(slot), bytes(data)))
        if death is not None:
            deaths.append((int(death), int(row)))
    flush()
    conn.executemany("UPDATE vector_rows SET death = ? WHERE row = ?", deaths)


_LEAN_VECTORS: tuple[str | Callable[[sqlite3.Connection], None], ...] = (
    "DROP INDEX vector_rows_by_slot",
    "DROP INDEX vector_rows_by_death",
    "ALTER TABLE vector_rows RENAME TO vector_rows_v3",
    """CREATE TABLE vector_spaces (
        id INTEGER PRIMARY KEY,
        collection TEXT NOT NULL,
        field TEXT NOT NULL,
        space BLOB NOT NULL,
        dimension INTEGER NOT NULL,
        UNIQUE (collection, field, space)
    )""",
    """CREATE TABLE vector_rows (
        row INTEGER PRIMARY KEY,
        space INTEGER NOT NULL,
        slot INTEGER NOT NULL,
        birth INTEGER NOT NULL,
        death INTEGER
    )""",
    """CREATE TABLE vector_blocks (
        first_row INTEGER PRIMARY KEY,
        space INTEGER NOT NULL,
        rows INTEGER NOT NULL,
        codec INTEGER NOT NULL,
        checksum INTEGER NOT NULL,
        data BLOB NOT NULL
    )""",
    _carry_vector_rows,
    "DROP TABLE vector_rows_v3",
    "DROP TABLE vectors",
    "CREATE INDEX vector_rows_by_slot ON vector_rows (slot)",
    "CREATE INDEX vector_rows_by_death ON vector_rows (death)",
)


def _carry_fact_records(conn: sqlite3.Connection) -> None:
    """Move schema 4's fact and occurrence records (whole JSON per row) into schema 5's
    shapes and parts (``cairn.store.records``), fact by fact in key order."""
    fact_shapes = Shapes(conn, "fact_shapes", checksums=False)  # schema 8 adds them
    occurrence_shapes = Shapes(conn, "occurrence_shapes", checksums=False)
    occurrences: dict[tuple[str, str], list[tuple[str, bytes]]] = {}
    for graph, occurrence_id, fact_id, record in conn.execute(
        "SELECT graph, id, fact_id, record FROM occurrences_v4 ORDER BY graph, fact_id, id"
    ):
        occurrences.setdefault((graph, fact_id), []).append((occurrence_id, bytes(record)))
    facts = conn.execute(
        "SELECT graph, id, source_collection, source_id, target_collection, target_id, "
        "relation, record, revision, deleted, position FROM facts_v4 ORDER BY graph, id"
    ).fetchall()
    for graph, fact_id, sc, si, tc, ti, relation, record, revision, deleted, position in facts:
        if deleted:
            # A deleted fact keeps no record (its occurrences went with it).
            conn.execute(
                "INSERT INTO facts VALUES (?, ?, ?, ?, ?, ?, ?, NULL, NULL, ?, 1, ?)",
                (graph, fact_id, sc, si, tc, ti, relation, revision, position),
            )
            continue
        parts = [
            split_occurrence(oid, fact_id, _json_object(data))
            for oid, data in occurrences.pop((graph, fact_id), [])
        ]
        stored = split_fact(_json_object(bytes(record)), fact_id, relation, (si, ti), parts)
        (shape,) = fact_shapes.ids([stored.shape])
        conn.execute(
            "INSERT INTO facts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?)",
            (graph, fact_id, sc, si, tc, ti, relation, shape, stored.record, revision, position),
        )
        numbers = occurrence_shapes.ids(item.shape for item in stored.occurrences)
        conn.executemany(
            "INSERT INTO occurrences VALUES (?, ?, ?, ?, ?)",
            [
                (graph, fact_id, item.id, number, item.parts)
                for item, number in zip(stored.occurrences, numbers, strict=True)
            ],
        )
    if occurrences:
        raise CorruptionError("schema 4 occurrences name facts that are not live")


def _json_object(data: bytes) -> dict[str, Any]:
    found = orjson.loads(data)
    if not isinstance(found, dict):
        raise CorruptionError("a stored fact or occurrence record is not a JSON object")
    return found


_LEAN_FACTS: tuple[str | Callable[[sqlite3.Connection], None], ...] = (
    "DROP INDEX facts_by_source",
    "DROP INDEX facts_by_target",
    "DROP INDEX occurrences_by_fact",
    "ALTER TABLE facts RENAME TO facts_v4",
    "ALTER TABLE occurrences RENAME TO occurrences_v4",
    """CREATE TABLE fact_shapes (
        id INTEGER PRIMARY KEY,
        data BLOB NOT NULL UNIQUE
    )""",
    """CREATE TABLE occurrence_shapes (
        id INTEGER PRIMARY KEY,
        data BLOB NOT NULL UNIQUE
    )""",
    """CREATE TABLE facts (
        graph TEXT NOT NULL,
        id TEXT NOT NULL,
        source_collection TEXT NOT NULL,
        source_id TEXT NOT NULL,
        target_collection TEXT NOT NULL,
        target_id TEXT NOT NULL,
        relation TEXT NOT NULL,
        shape INTEGER,
        record BLOB,
        revision INTEGER NOT NULL,
        deleted INTEGER NOT NULL DEFAULT 0,
        position INTEGER NOT NULL,
        PRIMARY KEY (graph, id)
    ) WITHOUT ROWID""",
    """CREATE TABLE occurrences (
        graph TEXT NOT NULL,
        fact_id TEXT NOT NULL,
        id TEXT NOT NULL,
        shape INTEGER,
        parts BLOB NOT NULL,
        PRIMARY KEY (graph, fact_id, id)
    ) WITHOUT ROWID""",
    _carry_fact_records,
    "DROP TABLE facts_v4",
    "DROP TABLE occurrences_v4",
    "CREATE INDEX facts_by_source ON facts (graph, source_collection, source_id)",
    "CREATE INDEX facts_by_target ON facts (graph, target_collection, target_id)",
)


def _checksum_documents(conn: sqlite3.Connection) -> None:
    """Give every document row (live or tombstone) its checksum (``cairn.store.checksums``)."""
    rows = conn.execute(
        "SELECT collection, id, revision, owner, project, deleted, body FROM documents"
    ).fetchall()
    conn.executemany(
        "UPDATE documents SET checksum = ? WHERE collection = ? AND id = ?",
        [
            (
                document_checksum(
                    collection,
                    doc_id,
                    revision,
                    owner,
                    project,
                    bool(deleted),
                    stored_bytes(body),
                ),
                collection,
                doc_id,
            )
            for collection, doc_id, revision, owner, project, deleted, body in rows
        ],
    )


_DOCUMENT_CHECKSUMS: tuple[str | Callable[[sqlite3.Connection], None], ...] = (
    "ALTER TABLE documents ADD COLUMN checksum INTEGER",
    _checksum_documents,
)


def _checksum_facts(conn: sqlite3.Connection) -> None:
    """Give every fact row and occurrence row its checksum (``cairn.store.checksums``)."""
    facts = conn.execute(f"SELECT {FACT_ROW} FROM facts").fetchall()
    conn.executemany(
        "UPDATE facts SET checksum = ? WHERE graph = ? AND id = ?",
        [(fact_row_checksum(row), row[0], row[1]) for row in facts],
    )
    occurrences = conn.execute("SELECT graph, fact_id, id, shape, parts FROM occurrences")
    conn.executemany(
        "UPDATE occurrences SET checksum = ? WHERE graph = ? AND fact_id = ? AND id = ?",
        [
            (
                occurrence_checksum(graph, fact_id, oid, shape, stored_bytes(parts) or b""),
                graph,
                fact_id,
                oid,
            )
            for graph, fact_id, oid, shape, parts in occurrences.fetchall()
        ],
    )


_FACT_CHECKSUMS: tuple[str | Callable[[sqlite3.Connection], None], ...] = (
    "ALTER TABLE facts ADD COLUMN checksum INTEGER",
    "ALTER TABLE occurrences ADD COLUMN checksum INTEGER",
    _checksum_facts,
)


def _checksum_records(conn: sqlite3.Connection) -> None:
    """Give every configuration, API key and command outcome row its checksum."""
    for table, key in CONFIG_KEYS.items():
        column = "config" if table in ("collections", "graphs") else "record"
        rows = conn.execute(f"SELECT {key}, revision, {column} FROM {table}").fetchall()
        conn.executemany(
            f"UPDATE {table} SET checksum = ? WHERE {key} = ?",
            [
                (config_checksum(table, name, revision, stored_bytes(record)), name)
                for name, revision, record in rows
            ],
        )
    keys = conn.execute("SELECT key_id, principal, verifier FROM api_keys").fetchall()
    conn.executemany(
        "UPDATE api_keys SET checksum = ? WHERE key_id = ?",
        [(key_checksum(key_id, owner, verifier), key_id) for key_id, owner, verifier in keys],
    )
    postings = conn.execute("SELECT slot, field, length, term_ids, counts FROM doc_terms")
    conn.executemany(
        "UPDATE doc_terms SET checksum = ? WHERE slot = ? AND field = ?",
        [
            (
                posting_checksum(
                    slot, name, length, stored_bytes(ids) or b"", stored_bytes(counts) or b""
                ),
                slot,
                name,
            )
            for slot, name, length, ids, counts in postings.fetchall()
        ],
    )
    for table in SHAPE_TABLES:
        shapes = conn.execute(f"SELECT id, data FROM {table}").fetchall()
        conn.executemany(
            f"UPDATE {table} SET checksum = ? WHERE id = ?",
            [
                (shape_checksum(table, number, stored_bytes(data)), number)
                for number, data in shapes
            ],
        )
    commands = conn.execute(
        "SELECT principal, database, command_id, fingerprint, ok, position, outcome FROM commands"
    ).fetchall()
    conn.executemany(
        "UPDATE commands SET checksum = ? WHERE principal = ? AND database = ? AND command_id = ?",
        [
            (
                command_checksum(who, name, cid, fingerprint, ok, at, stored_bytes(outcome)),
                who,
                name,
                cid,
            )
            for who, name, cid, fingerprint, ok, at, outcome in commands
        ],
    )


_RECORD_CHECKSUMS: tuple[str | Callable[[sqlite3.Connection], None], ...] = (
    *(f"ALTER TABLE {table} ADD COLUMN checksum INTEGER" for table in CONFIG_KEYS),
    "ALTER TABLE api_keys ADD COLUMN checksum INTEGER",
    "ALTER TABLE commands ADD COLUMN checksum INTEGER",
    *(f"ALTER TABLE {table} ADD COLUMN checksum INTEGER" for table in SHAPE_TABLES),
    "ALTER TABLE doc_terms ADD COLUMN checksum INTEGER",
    _checksum_records,
)

MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "initial", _INITIAL),
    Migration(2, "text_index", _TEXT_INDEX),
    Migration(3, "vector_index", _VECTOR_INDEX),
    Migration(4, "lean_vectors", _LEAN_VECTORS),
    Migration(5, "lean_facts", _LEAN_FACTS),
    Migration(6, "document_checksums", _DOCUMENT_CHECKSUMS),
    Migration(7, "fact_checksums", _FACT_CHECKSUMS),
    Migration(8, "record_checksums", _RECORD_CHECKSUMS),
)
"""Every migration, in order; versions are 1, 2, ... without gaps."""

LATEST_SCHEMA_VERSION = MIGRATIONS[-1].version
"""The schema version this build writes."""

_VERSION_TABLE = """CREATE TABLE schema_version (
    version INTEGER PRIMARY KEY,
    name TEXT NOT NULL
)"""


def _has_table(conn: sqlite3.Connection, name: str) -> bool:
    row = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
    ).fetchone()
    return row is not None


def schema_version(conn: sqlite3.Connection) -> int:
    """The file's schema version: 0 for an empty file, else the newest applied migration.

    A non-empty file without ``schema_version`` is not a Cairn database
    (``CorruptionError``).
    """
    if not _has_table(conn, "schema_version"):
        tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        if tables:
            raise CorruptionError("the file is a SQLite database but not a Cairn database")
        return 0
    row = conn.execute("SELECT max(version) FROM schema_version").fetchone()
    return int(row[0] or 0)


def migrate(conn: sqlite3.Connection, target: int = LATEST_SCHEMA_VERSION) -> tuple[int, int]:
    """Bring the file up to ``target`` in one transaction; return ``(before, after)``.

    ``conn`` must be in autocommit mode (``isolation_level=None``). A file newer than
    this build is refused with ``UnsupportedCapabilityError`` and left untouched.
    """
    if not 0 <= target <= LATEST_SCHEMA_VERSION:
        raise ValueError(f"target schema version {target} is not between 0 and latest")
    conn.execute("BEGIN IMMEDIATE")
    before: int | None = None
    try:
        before = schema_version(conn)
        if before > LATEST_SCHEMA_VERSION:
            raise UnsupportedCapabilityError(
                f"the database has schema version {before}; this Cairn reads versions up "
                f"to {LATEST_SCHEMA_VERSION}. Upgrade Cairn to open it.",
                details={"schema_version": before, "supported": LATEST_SCHEMA_VERSION},
            )
        if before == 0 and target > 0:
            conn.execute(_VERSION_TABLE)
        for migration in MIGRATIONS:
            if before < migration.version <= target:
                for statement in migration.statements:
                    if isinstance(statement, str):
                        conn.execute(statement)
                    else:
                        statement(conn)
                conn.execute(
                    "INSERT INTO schema_version (version, name) VALUES (?, ?)",
                    (migration.version, migration.name),
                )
        after = max(before, target)
        conn.execute("COMMIT")
    except CorruptionError as exc:
        rollback(conn)
        if before is None or before == 0:
            raise  # not a migration problem (a foreign file, say): the cause as found
        raise _unmigratable(exc, before, target) from exc
    except BaseException:
        rollback(conn)
        raise
    return before, after


def _unmigratable(exc: CorruptionError, before: int, target: int) -> CorruptionError:
    """The error for a file whose data cannot be carried to ``target``: what, and what to do."""
    return CorruptionError(
        f"cannot migrate the database from schema {before} to {target}: {exc.message}. "
        f"Nothing was changed. A code index is derived data: `cairn index PATH` rebuilds "
        f"it after the file is moved away; otherwise restore a backup.",
        details={**exc.details, "schema_version": before, "target": target},
    )
