"""Fact and occurrence records stored compactly: shared shapes plus the parts that vary.

A fact record (``SemanticFact.to_json()``) repeats what the ``facts`` columns already
hold (its ID, relation and endpoint IDs) and its occurrence IDs (the keys of its
``occurrences`` rows); the rest (direction, discriminator, endpoint identities,
annotations) takes a few thousand distinct values over a whole repository. So schema 5
stores that rest once per distinct value in ``fact_shapes`` and refers to it by integer;
the record is rebuilt exactly (canonical JSON) from the shape and the columns.
Occurrences likewise: ``occurrence_shapes`` holds the record without its ID, fact ID,
site and ranges (two distinct values for all of Django: the adapter), and each row keeps
the varying parts as one small canonical JSON list.

A record whose repeated parts do not match its columns (a caller-made record, say) is
stored whole instead, so nothing is ever rebuilt wrong. A deleted fact keeps no record:
its occurrences are gone with it, and nothing reads a deleted fact's record.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from cairn.canonical import canonical_bytes
from cairn.errors import CorruptionError
from cairn.store.checksums import shape_checksum, stored_bytes, verify_shape
from cairn.store.limits import SQLITE_PARAMETER_BATCH

__all__ = [
    "FACT_COLUMNS",
    "OCCURRENCE_COLUMNS",
    "OCCURRENCE_PARTS",
    "Shapes",
    "StoredFact",
    "StoredOccurrence",
    "fact_record",
    "occurrence_record",
    "read_shapes",
    "shape_of",
    "split_fact",
    "split_occurrence",
]

FACT_COLUMNS = ("id", "occurrence_ids", "relation", "source", "target")
"""Fact record keys rebuilt from the ``facts`` columns and the fact's occurrence IDs."""
OCCURRENCE_COLUMNS = ("fact_id", "id")
"""Occurrence record keys rebuilt from the ``occurrences`` key columns."""
OCCURRENCE_PARTS = ("site_kind", "source_file", "source_range", "target_file", "target_range")
"""Occurrence record keys that vary per site, kept per row as one JSON list."""

Encode = Callable[[Any], bytes]


@dataclass(frozen=True, slots=True)
class StoredOccurrence:
    """An occurrence as stored: its ID and either a shape and parts, or the whole record."""

    id: str
    shape: bytes | None
    parts: bytes
    """The canonical list of ``OCCURRENCE_PARTS`` values, or the whole record if no shape."""


@dataclass(frozen=True, slots=True)
class StoredFact:
    """A live fact's record as stored: a shape, or the whole record, and its occurrences."""

    shape: bytes | None
    record: bytes | None
    occurrences: tuple[StoredOccurrence, ...]


def split_occurrence(
    occurrence_id: str, fact_id: str, data: Mapping[str, Any], encode: Encode = canonical_bytes
) -> StoredOccurrence:
    """The stored form of an occurrence record (``data``: its JSON object)."""
    if (
        data.get("id") == occurrence_id
        and data.get("fact_id") == fact_id
        and all(key in data for key in OCCURRENCE_PARTS)
    ):
        rest = {k: v for k, v in data.items() if k not in OCCURRENCE_COLUMNS}
        parts = [rest.pop(key) for key in OCCURRENCE_PARTS]
        return StoredOccurrence(occurrence_id, encode(rest), encode(parts))
    return StoredOccurrence(occurrence_id, None, encode(dict(data)))


def split_fact(
    data: Mapping[str, Any],
    fact_id: str,
    relation: str,
    endpoint_ids: tuple[str, str],
    occurrences: Sequence[StoredOccurrence],
    encode: Encode = canonical_bytes,
) -> StoredFact:
    """The stored form of a fact record (``data``: its JSON object) with its occurrences."""
    ordered = tuple(sorted(occurrences, key=lambda item: item.id))
    if (
        data.get("id") == fact_id
        and data.get("relation") == relation
        and data.get("source") == endpoint_ids[0]
        and data.get("target") == endpoint_ids[1]
        and data.get("occurrence_ids") == [item.id for item in ordered]
    ):
        rest = {k: v for k, v in data.items() if k not in FACT_COLUMNS}
        return StoredFact(encode(rest), None, ordered)
    return StoredFact(None, encode(dict(data)), ordered)


def fact_record(
    stored: StoredFact, fact_id: str, relation: str, endpoint_ids: tuple[str, str]
) -> bytes:
    """The canonical record bytes of a stored live fact, rebuilt from its parts."""
    if stored.record is not None:
        return stored.record
    if stored.shape is None:
        raise CorruptionError(f"fact {fact_id} has neither a shape nor a record")
    data = _object(stored.shape, f"the shape of fact {fact_id}")
    data.update(
        id=fact_id,
        relation=relation,
        source=endpoint_ids[0],
        target=endpoint_ids[1],
        occurrence_ids=[item.id for item in stored.occurrences],
    )
    return canonical_bytes(data)


def occurrence_record(stored: StoredOccurrence, fact_id: str) -> bytes:
    """The canonical record bytes of a stored occurrence, rebuilt from its parts."""
    if stored.shape is None:
        return stored.parts
    data = _object(stored.shape, f"the shape of occurrence {stored.id}")
    parts = orjson.loads(stored.parts)
    if not isinstance(parts, list) or len(parts) != len(OCCURRENCE_PARTS):
        raise CorruptionError(f"occurrence {stored.id} has malformed parts")
    data.update(zip(OCCURRENCE_PARTS, parts, strict=True))
    data.update(id=stored.id, fact_id=fact_id)
    return canonical_bytes(data)


def _object(data: bytes, what: str) -> dict[str, Any]:
    try:
        found = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise CorruptionError(f"{what} is not JSON") from exc
    if not isinstance(found, dict):
        raise CorruptionError(f"{what} is not a JSON object")
    return found


class Shapes:
    """Shape numbers of one shape table, interned within a write transaction."""

    def __init__(self, conn: sqlite3.Connection, table: str, *, checksums: bool = True) -> None:
        self.conn = conn
        self.table = table
        self.checksums = checksums  # False only inside migrations before schema 8
        self._ids: dict[bytes, int] = {}

    def ids(self, shapes: Iterable[bytes | None]) -> list[int | None]:
        """The number of each shape (None stays None), storing new ones in first-seen order."""
        found: list[int | None] = []
        for shape in shapes:
            found.append(None if shape is None else self._id(shape))
        return found

    def _id(self, shape: bytes) -> int:
        known = self._ids.get(shape)
        if known is not None:
            return known
        row = self.conn.execute(f"SELECT id FROM {self.table} WHERE data = ?", (shape,)).fetchone()
        if row is None:
            cursor = self.conn.execute(f"INSERT INTO {self.table} (data) VALUES (?)", (shape,))
            assert cursor.lastrowid is not None
            number = int(cursor.lastrowid)
            if self.checksums:  # the number is known once the row is in
                self.conn.execute(
                    f"UPDATE {self.table} SET checksum = ? WHERE id = ?",
                    (shape_checksum(self.table, number, shape), number),
                )
        else:
            number = int(row[0])
        self._ids[shape] = number
        return number


def read_shapes(
    conn: sqlite3.Connection, table: str, numbers: Iterable[int] | None = None
) -> dict[int, bytes]:
    """Every shape of ``table`` by number (only ``numbers`` when given, read by primary
    key), each verified against its checksum."""
    query = f"SELECT id, data, checksum FROM {table}"
    if numbers is None:
        batches: list[list[int]] = [[]]
    else:
        wanted = sorted(set(numbers))
        batches = [
            wanted[start : start + SQLITE_PARAMETER_BATCH]
            for start in range(0, len(wanted), SQLITE_PARAMETER_BATCH)
        ]
    found: dict[int, bytes] = {}
    for batch in batches:
        where = f" WHERE id IN ({', '.join('?' * len(batch))})" if numbers is not None else ""
        for number, data, checksum in conn.execute(query + where, batch):
            held = stored_bytes(data) or b""
            verify_shape(table, int(number), held, checksum)
            found[int(number)] = held
    return found


def shape_of(shapes: Mapping[int, bytes], number: int | None, what: str) -> bytes | None:
    """The shape ``number`` names (None for None); ``CorruptionError`` if it is missing."""
    if number is None:
        return None
    found = shapes.get(number)
    if found is None:
        raise CorruptionError(f"{what} names shape {number}, which is not stored")
    return found
