"""``cairn check``: verify a whole database file, record by record, in one read snapshot.

It runs SQLite's own ``integrity_check`` (pages, indexes), then reads every row that
carries a checksum (documents, facts, occurrences, vector blocks) and checks it, and
reports each damaged record by table and key, up to ``MAX_REPORTED_DAMAGE`` per table
with the full count. Nothing is written; a damaged record is repaired by re-running the
load or ``cairn index`` that wrote it (which rewrites it and says so) or by restoring a
backup.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cairn.errors import CorruptionError, UnsupportedCapabilityError, ValidationError
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
from cairn.store.faults import sqlite_error
from cairn.store.limits import MAX_REPORTED_DAMAGE
from cairn.store.load import GraphAgreement, compare_semantic_graph
from cairn.store.schema import LATEST_SCHEMA_VERSION, schema_version
from cairn.store.vectorstore import decode_block, spaces

if TYPE_CHECKING:
    from cairn.graph.multigraph import SemanticGraph

__all__ = ["CHECKED_TABLES", "CheckProgress", "CheckReport", "check_file"]

CHECKED_TABLES = (
    "documents",
    "slots",
    "facts",
    "occurrences",
    "vector_blocks",
    "collections",
    "graphs",
    "principals",
    "policies",
    "api_keys",
    "commands",
    "fact_shapes",
    "occurrence_shapes",
    "doc_terms",
)
"""The tables whose every row ``check_file`` verifies, in the order it reads them
(``slots`` against the documents: no checksum of its own)."""

CheckProgress = Callable[[str, int], None]
"""Told ``(table, rows checked so far)`` as a check goes (every ``_PROGRESS_EVERY`` rows)."""

_PROGRESS_EVERY = 10_000


@dataclass
class TableReport:
    """One table's rows checked, how many were damaged, and the first damaged keys."""

    rows: int = 0
    damaged: int = 0
    examples: list[str] = field(default_factory=list)

    def damage(self, key: str) -> None:
        self.damaged += 1
        if len(self.examples) < MAX_REPORTED_DAMAGE:
            self.examples.append(key)


@dataclass
class CheckReport:
    """What ``check_file`` found: SQLite's own findings, every table's damage and, when
    asked, how the database differs from a graph (``against``)."""

    path: str
    integrity: list[str]
    tables: dict[str, TableReport]
    against: GraphAgreement | None = None

    @property
    def ok(self) -> bool:
        """Whether nothing at all was found wrong."""
        sound = self.integrity == ["ok"] and not any(t.damaged for t in self.tables.values())
        return sound and (self.against is None or self.against.agrees)

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form (``cairn check --json``)."""
        return {
            "path": self.path,
            "ok": self.ok,
            "integrity_check": self.integrity,
            "tables": {
                name: {"rows": t.rows, "damaged": t.damaged, "examples": t.examples}
                for name, t in self.tables.items()
            },
            **({} if self.against is None else {"against": self.against.to_json()}),
        }


def _quiet(table: str, rows: int) -> None:
    """The progress of a check nobody watches."""


def check_file(
    path: str | Path,
    progress: CheckProgress = _quiet,
    *,
    against: SemanticGraph | None = None,
) -> CheckReport:
    """Verify the database file ``path`` (read only; it must exist and be a Cairn file),
    and with ``against`` how it differs from that graph (what a load would change), all
    in one read snapshot."""
    target = Path(path)
    if not target.is_file():
        raise CorruptionError(f"{str(target)!r} is not a database file")
    try:
        conn = sqlite3.connect(f"file:{target}?mode=ro", uri=True, isolation_level=None)
    except sqlite3.Error as exc:
        raise sqlite_error(exc, "check", target) from exc
    with closing(conn):
        try:
            conn.execute("BEGIN")  # one snapshot for every table
            _check_version(conn, target)
            integrity = [str(row[0]) for row in conn.execute("PRAGMA integrity_check")]
            tables = {
                "documents": _walk(progress, "documents", _documents(conn)),
                "slots": _walk(progress, "slots", _slots(conn)),
                "facts": _walk(progress, "facts", _facts(conn)),
                "occurrences": _walk(progress, "occurrences", _occurrences(conn)),
                "vector_blocks": _walk(progress, "vector_blocks", _blocks(conn)),
                **{table: _walk(progress, table, _configs(conn, table)) for table in CONFIG_KEYS},
                "api_keys": _walk(progress, "api_keys", _keys(conn)),
                "commands": _walk(progress, "commands", _commands(conn)),
                **{table: _walk(progress, table, _shapes(conn, table)) for table in SHAPE_TABLES},
                "doc_terms": _walk(progress, "doc_terms", _postings(conn)),
            }
            agreement = None
            if against is not None:
                progress("against the graph", 0)
                agreement = compare_semantic_graph(conn, against)
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            raise sqlite_error(exc, "check", target) from exc
    return CheckReport(str(target), integrity, tables, agreement)


def _check_version(conn: sqlite3.Connection, target: Path) -> None:
    """Refuse a file this build cannot check as it is (never misread an older layout)."""
    try:
        found = schema_version(conn)
    except CorruptionError as exc:
        raise CorruptionError(f"{str(target)!r} is not a Cairn database: {exc.message}") from exc
    if found < LATEST_SCHEMA_VERSION:
        raise ValidationError(
            f"the database has schema version {found}; this Cairn checks version "
            f"{LATEST_SCHEMA_VERSION}. Open it once (for example `cairn stats --db PATH`) to "
            "migrate it, then check it.",
            details={"schema_version": found, "supported": LATEST_SCHEMA_VERSION},
        )
    if found > LATEST_SCHEMA_VERSION:
        raise UnsupportedCapabilityError(
            f"the database has schema version {found}; this Cairn reads versions up to "
            f"{LATEST_SCHEMA_VERSION}. Upgrade Cairn to check it.",
            details={"schema_version": found, "supported": LATEST_SCHEMA_VERSION},
        )


def _walk(progress: CheckProgress, table: str, rows: Iterator[tuple[str, bool]]) -> TableReport:
    report = TableReport()
    for key, good in rows:
        report.rows += 1
        if not good:
            report.damage(key)
        if report.rows % _PROGRESS_EVERY == 0:
            progress(table, report.rows)
    progress(table, report.rows)
    return report


def _documents(conn: sqlite3.Connection) -> Iterator[tuple[str, bool]]:
    for collection, doc_id, revision, owner, project, deleted, body, checksum in conn.execute(
        "SELECT collection, id, revision, owner, project, deleted, body, checksum "
        "FROM documents ORDER BY collection, id"
    ):
        data = stored_bytes(body)
        expected = document_checksum(
            collection, doc_id, revision, owner, project, bool(deleted), data
        )
        yield f"{collection}/{doc_id}", checksum == expected


def _slots(conn: sqlite3.Connection) -> Iterator[tuple[str, bool]]:
    """Every slot row, judged against the documents (whose checksums cover the same key,
    revision, owner and project): a live slot must be its live document's slot with the
    same values, a dead one is history; then every live document without such a slot."""
    for row in conn.execute(
        "SELECT s.slot, s.collection, s.id, s.revision, s.owner, s.project, s.death, "
        "d.collection, d.id, d.revision, d.owner, d.project, d.deleted "
        "FROM slots AS s LEFT JOIN documents AS d ON d.slot = s.slot ORDER BY s.slot"
    ):
        slot, death, document = row[0], row[6], row[7:]
        live = death is None
        yield f"slot {slot}", not live or (document[:5] == row[1:6] and document[5] == 0)
    for collection, doc_id, slot in conn.execute(
        "SELECT d.collection, d.id, d.slot FROM documents AS d WHERE d.deleted = 0 "
        "AND NOT EXISTS (SELECT 1 FROM slots AS s WHERE s.slot = d.slot AND s.death IS NULL)"
    ):
        yield f"{collection}/{doc_id} (slot {slot} missing or ended)", False


def _facts(conn: sqlite3.Connection) -> Iterator[tuple[str, bool]]:
    for *row, checksum in conn.execute(
        f"SELECT {FACT_ROW}, checksum FROM facts ORDER BY graph, id"
    ):
        yield f"{row[0]}/{row[1]}", checksum == fact_row_checksum(tuple(row))


def _occurrences(conn: sqlite3.Connection) -> Iterator[tuple[str, bool]]:
    for graph, fact_id, occurrence_id, shape, parts, checksum in conn.execute(
        "SELECT graph, fact_id, id, shape, parts, checksum FROM occurrences "
        "ORDER BY graph, fact_id, id"
    ):
        data = stored_bytes(parts) or b""
        expected = occurrence_checksum(graph, fact_id, occurrence_id, shape, data)
        yield f"{graph}/{fact_id}/{occurrence_id}", checksum == expected


def _blocks(conn: sqlite3.Connection) -> Iterator[tuple[str, bool]]:
    known = spaces(conn)
    for first, space, count, codec, checksum, data in conn.execute(
        "SELECT first_row, space, rows, codec, checksum, data FROM vector_blocks ORDER BY first_row"
    ):
        found = known.get(space)
        try:
            if found is None:
                raise CorruptionError(f"vector block {first} names unknown space {space}")
            decode_block(first, codec, checksum, stored_bytes(data) or b"", count, found.dimension)
        except CorruptionError:
            yield f"block {first}", False
            continue
        yield f"block {first}", True


def _configs(conn: sqlite3.Connection, table: str) -> Iterator[tuple[str, bool]]:
    key = CONFIG_KEYS[table]
    column = "config" if table in ("collections", "graphs") else "record"
    for name, revision, record, checksum in conn.execute(
        f"SELECT {key}, revision, {column}, checksum FROM {table} ORDER BY {key}"
    ):
        yield str(name), checksum == config_checksum(table, name, revision, stored_bytes(record))


def _keys(conn: sqlite3.Connection) -> Iterator[tuple[str, bool]]:
    for key_id, principal, verifier, checksum in conn.execute(
        "SELECT key_id, principal, verifier, checksum FROM api_keys ORDER BY key_id"
    ):
        yield str(key_id), checksum == key_checksum(key_id, principal, verifier)


def _commands(conn: sqlite3.Connection) -> Iterator[tuple[str, bool]]:
    for (
        principal,
        database,
        command_id,
        fingerprint,
        ok,
        position,
        outcome,
        checksum,
    ) in conn.execute(
        "SELECT principal, database, command_id, fingerprint, ok, position, outcome, "
        "checksum FROM commands ORDER BY position, command_id"
    ):
        expected = command_checksum(
            principal, database, command_id, fingerprint, ok, position, stored_bytes(outcome)
        )
        yield f"{principal}/{command_id}", checksum == expected


def _shapes(conn: sqlite3.Connection, table: str) -> Iterator[tuple[str, bool]]:
    for number, data, checksum in conn.execute(
        f"SELECT id, data, checksum FROM {table} ORDER BY id"
    ):
        yield f"shape {number}", checksum == shape_checksum(table, number, stored_bytes(data))


def _postings(conn: sqlite3.Connection) -> Iterator[tuple[str, bool]]:
    for slot, name, length, term_ids, counts, checksum in conn.execute(
        "SELECT slot, field, length, term_ids, counts, checksum FROM doc_terms ORDER BY slot, field"
    ):
        expected = posting_checksum(
            slot, name, length, stored_bytes(term_ids) or b"", stored_bytes(counts) or b""
        )
        yield f"slot {slot} {name}", checksum == expected
