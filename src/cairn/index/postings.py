"""Grouping a first load's postings by term in two passes over the rows (a counting sort).

A text field's base postings are every ``(slot, count)`` of the field grouped by
ascending term ID, each term's postings in slot order. Built the plain way (read every
row, concatenate, sort by term) a large file holds each posting four or five times at
once: the rows' parts, the joined arrays, a sort order and the reordered copies. Here a
first pass over the ``doc_terms`` rows counts the postings of each term, which fixes
where every term's postings go; a second pass reads the rows again and writes each
batch's postings straight into place. Memory is the final arrays plus one batch.
"""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Iterator
from operator import itemgetter
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from cairn.errors import CorruptionError
from cairn.index.limits import TEXT_LOAD_ROWS
from cairn.store.checksums import posting_checksum, stored_bytes

__all__ = [
    "FIRST_PASS",
    "GroupedField",
    "RowLayout",
    "checked_postings",
    "group_order",
    "grouped_fields",
    "narrowest",
    "top_term_id",
]

_NARROW = (np.uint8, np.uint16, np.uint32)
_KEY = itemgetter(0, 1)


class GroupedField(NamedTuple):
    """One ``(collection, field)``'s rows: per document its slot and length; per term
    (ascending) the bounds of its postings in ``slots`` / ``counts``."""

    doc_slots: npt.NDArray[np.int64]
    lengths: npt.NDArray[np.float64]
    terms: npt.NDArray[np.int64]
    bounds: npt.NDArray[np.int64]
    slots: npt.NDArray[Any]  # narrowest unsigned type holding every slot
    counts: npt.NDArray[Any]  # narrowest unsigned type holding every count


def group_order(terms: npt.NDArray[Any]) -> npt.NDArray[np.intp]:
    """A stable order grouping equal term IDs (radix sorts on 16-bit halves: linear)."""
    if len(terms) == 0:
        return np.zeros(0, dtype=np.intp)
    if int(terms.max()) < 2**16 and int(terms.min()) >= 0:
        return np.argsort(terms.astype(np.uint16), kind="stable")
    if int(terms.max()) < 2**32 and int(terms.min()) >= 0:
        low = np.argsort((terms & 0xFFFF).astype(np.uint16), kind="stable")
        high = np.argsort((terms[low] >> 16).astype(np.uint16), kind="stable")
        found: npt.NDArray[np.intp] = low[high]
        return found
    return np.argsort(terms, kind="stable")


def narrowest(top: int) -> type[np.generic]:
    """The smallest unsigned integer type holding ``0..top`` (int64 beyond 32 bits)."""
    for kind in _NARROW:
        if top <= np.iinfo(kind).max:
            return kind
    return np.int64


def _batches(
    conn: sqlite3.Connection, columns: str, where: str, params: tuple[Any, ...]
) -> Iterator[tuple[tuple[str, str], list[tuple[Any, ...]]]]:
    """The rows of each ``(collection, field)`` run, ``TEXT_LOAD_ROWS`` rows at a time."""
    cursor = conn.execute(
        f"SELECT s.collection, d.field, {columns} FROM doc_terms AS d "
        f"JOIN slots AS s ON s.slot = d.slot WHERE {where} "
        "ORDER BY s.collection, d.field, d.slot",
        params,
    )
    while rows := cursor.fetchmany(TEXT_LOAD_ROWS):
        for key, items in itertools.groupby(rows, key=_KEY):
            yield key, list(items)


class RowLayout(NamedTuple):
    """Where a query puts each ``doc_terms`` column in its rows."""

    slot: int
    length: int
    terms: int
    counts: int
    checksum: int


def checked_postings(
    key: tuple[str, str], rows: list[tuple[Any, ...]], layout: RowLayout, top_term: int
) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.uint32]]:
    """The term IDs and counts of ``rows``, or ``CorruptionError`` naming ``doc_terms`` if
    they cannot be postings of this file: a row failing its checksum, blobs of unequal
    or ragged length, a term ID past the stored terms (``top_term``), a zero count. A
    damaged blob must never size an allocation, nor change a score."""
    field = key[1]
    term_parts = [stored_bytes(row[layout.terms]) or b"" for row in rows]
    count_parts = [stored_bytes(row[layout.counts]) or b"" for row in rows]
    for row, term_ids, counts in zip(rows, term_parts, count_parts, strict=True):
        expected = posting_checksum(row[layout.slot], field, row[layout.length], term_ids, counts)
        if row[layout.checksum] != expected:
            raise _damaged(key)
    term_bytes, count_bytes = b"".join(term_parts), b"".join(count_parts)
    ragged = len(term_bytes) != len(count_bytes) or len(term_bytes) % 4
    terms = np.frombuffer(term_bytes[: len(term_bytes) // 4 * 4], dtype="<u4")
    counts_array = np.frombuffer(count_bytes[: len(count_bytes) // 4 * 4], dtype="<u4")
    if ragged or (len(terms) and (int(terms.max()) > top_term or int(counts_array.min()) == 0)):
        raise _damaged(key)
    return terms, counts_array


def _damaged(key: tuple[str, str]) -> CorruptionError:
    collection, field = key
    return CorruptionError(
        f"the text postings of {collection!r} field {field} are damaged (doc_terms "
        "rows that no write could have made); re-run the load or `cairn index --force` that "
        "wrote the database, or restore a backup",
        details={"table": "doc_terms", "collection": collection, "field": field},
    )


def top_term_id(conn: sqlite3.Connection) -> int:
    """The largest stored term ID (0 when there are none)."""
    return int(conn.execute("SELECT coalesce(max(id), 0) FROM terms").fetchone()[0])


FIRST_PASS = RowLayout(slot=2, length=5, terms=3, counts=4, checksum=6)
"""The first pass's rows: collection, field, slot, term IDs, counts, length, checksum."""


class _Sizes:
    """First-pass totals of one field: postings per term, the largest slot and count."""

    def __init__(self) -> None:
        self.per_term = np.zeros(0, dtype=np.int64)
        self.top_slot = 0
        self.top_count = 0

    def add(self, key: tuple[str, str], rows: list[tuple[Any, ...]], top_term: int) -> None:
        terms, counts = checked_postings(key, rows, FIRST_PASS, top_term)
        found = np.bincount(terms) if len(terms) else np.zeros(0, dtype=np.int64)
        if len(found) > len(self.per_term):
            found[: len(self.per_term)] += self.per_term
            self.per_term = found
        else:
            self.per_term[: len(found)] += found
        self.top_slot = max(self.top_slot, int(rows[-1][2]))
        if len(counts):
            self.top_count = max(self.top_count, int(counts.max()))


class _Placer:
    """Second-pass state of one field: the final arrays and each term's next place."""

    def __init__(self, sizes: _Sizes) -> None:
        per_term = sizes.per_term
        self.next = (np.cumsum(per_term) - per_term).astype(np.int64)  # each term's start
        total = int(per_term.sum())
        self.slots = np.empty(total, dtype=narrowest(sizes.top_slot))
        self.counts = np.empty(total, dtype=narrowest(sizes.top_count))
        self.present = np.flatnonzero(per_term)
        self.bounds = np.append(self.next[self.present], total)
        self.doc_slots: list[npt.NDArray[np.int64]] = []
        self.lengths: list[npt.NDArray[np.float64]] = []

    def place(self, rows: list[tuple[Any, ...]]) -> None:
        doc_slots = np.fromiter((row[2] for row in rows), dtype=np.int64, count=len(rows))
        self.doc_slots.append(doc_slots)
        self.lengths.append(np.fromiter((row[5] for row in rows), np.float64, len(rows)))
        terms = np.frombuffer(b"".join(row[3] for row in rows), dtype="<u4")
        if not len(terms):
            return
        counts = np.frombuffer(b"".join(row[4] for row in rows), dtype="<u4")
        sizes = np.fromiter((len(row[3]) // 4 for row in rows), dtype=np.int64, count=len(rows))
        posting_slots = np.repeat(doc_slots, sizes)
        order = group_order(terms)  # this batch only: slot order kept within each term
        terms = terms[order]
        starts = np.flatnonzero(np.r_[True, terms[1:] != terms[:-1]])
        runs = np.diff(np.append(starts, len(terms)))
        rank = np.arange(len(terms)) - np.repeat(starts, runs)
        heads = terms[starts]
        places = np.repeat(self.next[heads], runs) + rank
        self.slots[places] = posting_slots[order]
        self.counts[places] = counts[order]
        self.next[heads] += runs

    def done(self) -> GroupedField:
        def joined(parts: list[npt.NDArray[Any]], dtype: type[np.generic]) -> npt.NDArray[Any]:
            return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)

        return GroupedField(
            joined(self.doc_slots, np.int64),
            joined(self.lengths, np.float64),
            self.present.astype(np.int64),
            self.bounds.astype(np.int64),
            self.slots,
            self.counts,
        )


def grouped_fields(
    conn: sqlite3.Connection, where: str, params: tuple[Any, ...]
) -> dict[tuple[str, str], GroupedField]:
    """Every ``(collection, field)`` of the ``doc_terms`` rows matching ``where`` (over
    ``d`` = doc_terms, ``s`` = slots), its postings grouped by term, in two passes."""
    sizes: dict[tuple[str, str], _Sizes] = {}
    top_term = top_term_id(conn)
    first = "d.slot, d.term_ids, d.counts, d.length, d.checksum"
    for key, rows in _batches(conn, first, where, params):
        sizes.setdefault(key, _Sizes()).add(key, rows, top_term)
    placers = {key: _Placer(found) for key, found in sizes.items()}
    columns = "d.slot, d.term_ids, d.counts, d.length"
    for key, rows in _batches(conn, columns, where, params):
        placer = placers.get(key)
        if placer is None:
            raise ValueError(f"text rows of {key} appeared between two reads")
        placer.place(rows)
    for key, placer in placers.items():
        if not np.array_equal(placer.next, np.cumsum(sizes[key].per_term)):
            raise ValueError(f"text rows of {key} changed between two reads")
    return {key: placer.done() for key, placer in placers.items()}
