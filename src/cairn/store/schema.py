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
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from cairn.errors import CorruptionError, UnsupportedCapabilityError

__all__ = [
    "LATEST_SCHEMA_VERSION",
    "MIGRATIONS",
    "Migration",
    "migrate",
    "schema_version",
]


@dataclass(frozen=True, slots=True)
class Migration:
    """One schema step: its version number, a short name and the DDL it runs."""

    version: int
    name: str
    statements: tuple[str, ...]


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

MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "initial", _INITIAL),
    Migration(2, "text_index", _TEXT_INDEX),
    Migration(3, "vector_index", _VECTOR_INDEX),
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
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO schema_version (version, name) VALUES (?, ?)",
                    (migration.version, migration.name),
                )
        after = max(before, target)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return before, after
