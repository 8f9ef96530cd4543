"""Record checksums: every stored document, fact and occurrence row carries a CRC-32 of
what a reader is served, verified whenever the row is read (issue 18).

SQLite's ``integrity_check`` sees pages, not meaning: a flipped bit inside a body is a
valid page holding a wrong answer. So each row stores ``crc32(body, crc32(header))``
where the header binds the row's key and the columns that decide what is served and to
whom (collection, ID, revision, owner, project, tombstone): a damaged body, a row
swapped with another, or an owner flipped to expose the row to someone else all fail
the check and read as ``CorruptionError`` naming the table and key, never as an answer.
CRC-32 (zlib, in C) costs about a microsecond per row at the sizes stored here.
"""

from __future__ import annotations

import zlib
from typing import Any

import orjson

from cairn.errors import CorruptionError

__all__ = [
    "CONFIG_KEYS",
    "FACT_ROW",
    "SHAPE_TABLES",
    "command_checksum",
    "config_checksum",
    "damaged",
    "document_checksum",
    "fact_checksum",
    "fact_row_checksum",
    "key_checksum",
    "occurrence_checksum",
    "posting_checksum",
    "shape_checksum",
    "stored_bytes",
    "verify_command",
    "verify_config",
    "verify_document",
    "verify_fact",
    "verify_key",
    "verify_shape",
]


def stored_bytes(value: object) -> bytes | None:
    """A BLOB column's value as bytes (None stays None), whatever type SQLite hands back.

    A damaged record header can turn a BLOB into TEXT or a number; its bytes then go to
    the checksum like any others (and fail it), never to a ``TypeError``.
    """
    if value is None:
        return None
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    return repr(value).encode("ascii")


def document_checksum(
    collection: str,
    doc_id: str,
    revision: int,
    owner: str | None,
    project: str | None,
    deleted: bool,
    body: bytes | None,
) -> int:
    """The checksum stored with a document row (``body`` None for a tombstone)."""
    header = orjson.dumps([collection, doc_id, revision, owner, project, deleted, body is None])
    return zlib.crc32(body or b"", zlib.crc32(header))


def verify_document(
    collection: str,
    doc_id: str,
    revision: int,
    owner: str | None,
    project: str | None,
    deleted: bool,
    body: bytes | None,
    stored: int | None,
) -> None:
    """Raise ``CorruptionError`` unless ``stored`` is the row's checksum."""
    actual = document_checksum(collection, doc_id, revision, owner, project, deleted, body)
    if stored != actual:
        raise damaged("documents", collection, doc_id, what=f"document {collection}/{doc_id}")


def _row_checksum(header: list[object], payload: bytes | None) -> int:
    """CRC-32 of ``payload`` seeded with the CRC-32 of the row's JSON header."""
    return zlib.crc32(payload or b"", zlib.crc32(orjson.dumps([*header, payload is None])))


def fact_checksum(
    graph: str,
    fact_id: str,
    endpoints: tuple[str, str, str, str],
    relation: str,
    shape: int | None,
    record: bytes | None,
    revision: int,
    deleted: bool,
) -> int:
    """The checksum stored with a fact row: its key, endpoints ``(source collection,
    source ID, target collection, target ID)``, relation, shape number, record (None when
    a shape stands for it or the fact is deleted), revision and tombstone flag."""
    header: list[object] = ["facts", graph, fact_id, *endpoints, relation, shape, revision]
    return _row_checksum([*header, deleted], record)


FACT_ROW = (
    "graph, id, source_collection, source_id, target_collection, target_id, relation, "
    "shape, record, revision, deleted"
)
"""The ``facts`` columns a fact row's checksum covers, in ``fact_row_checksum``'s order."""


def fact_row_checksum(row: tuple[Any, ...]) -> int:
    """``fact_checksum`` of a row read as ``SELECT {FACT_ROW} FROM facts``."""
    graph, fact_id, sc, si, tc, ti, relation, shape, record, revision, deleted = row
    return fact_checksum(
        graph,
        fact_id,
        (sc, si, tc, ti),
        relation,
        shape,
        stored_bytes(record),
        revision,
        bool(deleted),
    )


def occurrence_checksum(
    graph: str, fact_id: str, occurrence_id: str, shape: int | None, parts: bytes
) -> int:
    """The checksum stored with an occurrence row: its key, shape number and parts."""
    return _row_checksum(["occurrences", graph, fact_id, occurrence_id, shape], parts)


def damaged(table: str, resource: str, key: str, *, what: str) -> CorruptionError:
    """The error for a row whose checksum fails (``what``: how the row is named)."""
    column = "graph" if table in ("facts", "occurrences") else "collection"
    return CorruptionError(
        f"{what} is damaged: its stored checksum does not match its contents (restore a "
        "backup, or re-run the load or `cairn index --force` that wrote it)",
        details={"table": table, column: resource, "id": key},
    )


def verify_fact(
    graph: str,
    fact_id: str,
    endpoints: tuple[str, str, str, str],
    relation: str,
    shape: int | None,
    record: bytes | None,
    revision: int,
    deleted: bool,
    stored: int | None,
) -> None:
    """Raise ``CorruptionError`` unless ``stored`` is the fact row's checksum."""
    actual = fact_checksum(graph, fact_id, endpoints, relation, shape, record, revision, deleted)
    if stored != actual:
        raise damaged("facts", graph, fact_id, what=f"fact {fact_id} of graph {graph!r}")


CONFIG_KEYS = {"collections": "name", "graphs": "name", "principals": "id", "policies": "resource"}
"""The configuration tables whose rows carry a checksum, and each one's key column."""


def config_checksum(table: str, name: str, revision: int, record: bytes | None) -> int:
    """The checksum stored with a configuration row (collection, graph, principal or
    field policy): its table, key, revision and canonical record."""
    return _row_checksum([table, name, revision], record)


def verify_config(
    table: str, name: str, revision: int, record: bytes | None, stored: int | None
) -> None:
    """Raise ``CorruptionError`` unless ``stored`` is the configuration row's checksum.

    A principal's grants and a collection's fields decide what is served and to whom:
    a damaged one is never read as a looser (or stricter) rule.
    """
    if stored != config_checksum(table, name, revision, record):
        column = CONFIG_KEYS[table]
        raise CorruptionError(
            f"{table[:-1]} {name!r} is damaged: its stored checksum does not match its "
            "contents (restore a backup)",
            details={"table": table, column: name},
        )


def key_checksum(key_id: str, principal: str, verifier: str) -> int:
    """The checksum stored with an API key row: its ID, principal and verifier."""
    return _row_checksum(["api_keys", key_id, principal], verifier.encode("utf-8", "replace"))


def verify_key(key_id: str, principal: str, verifier: str, stored: int | None) -> None:
    """Raise ``CorruptionError`` unless ``stored`` is the API key row's checksum."""
    if stored != key_checksum(key_id, principal, verifier):
        raise CorruptionError(
            f"api key {key_id!r} is damaged: its stored checksum does not match its contents "
            "(issue the principal a new key)",
            details={"table": "api_keys", "key_id": key_id},
        )


def command_checksum(
    principal: str,
    database: str,
    command_id: str,
    fingerprint: str,
    ok: int,
    position: int,
    outcome: bytes | None,
) -> int:
    """The checksum stored with a command's outcome row: its key, fingerprint, success
    flag, position and the stored (possibly packed) outcome bytes."""
    header: list[object] = ["commands", principal, database, command_id, fingerprint, ok]
    return _row_checksum([*header, position], outcome)


def verify_command(
    principal: str,
    database: str,
    command_id: str,
    fingerprint: str,
    ok: int,
    position: int,
    outcome: bytes | None,
    stored: int | None,
) -> None:
    """Raise ``CorruptionError`` unless ``stored`` is the outcome row's checksum: a
    damaged receipt is never replayed as the command's answer."""
    actual = command_checksum(principal, database, command_id, fingerprint, ok, position, outcome)
    if stored != actual:
        raise CorruptionError(
            f"the stored outcome of command {command_id} is damaged: its stored checksum does "
            "not match its contents",
            details={"table": "commands", "command_id": command_id},
        )


SHAPE_TABLES = ("fact_shapes", "occurrence_shapes")
"""The shape tables, whose rows carry a checksum of their number and bytes."""


def shape_checksum(table: str, number: int, data: bytes | None) -> int:
    """The checksum stored with a fact or occurrence shape row: its table, number and
    bytes (the number is what fact and occurrence rows refer to it by)."""
    return _row_checksum([table, number], data)


def verify_shape(table: str, number: int, data: bytes | None, stored: int | None) -> None:
    """Raise ``CorruptionError`` unless ``stored`` is the shape row's checksum."""
    if stored != shape_checksum(table, number, data):
        raise CorruptionError(
            f"shape {number} of {table} is damaged: its stored checksum does not match its "
            "contents (re-run the load or `cairn index --force` that wrote it)",
            details={"table": table, "id": number},
        )


def posting_checksum(slot: int, field: str, length: int, term_ids: bytes, counts: bytes) -> int:
    """The checksum stored with a ``doc_terms`` row: its slot, field, length and both
    packed arrays (a count flipped inside its range would change BM25 scores silently)."""
    header = f"doc_terms\0{slot}\0{field}\0{length}".encode("utf-8", "surrogatepass")
    return zlib.crc32(counts, zlib.crc32(term_ids, zlib.crc32(header)))
