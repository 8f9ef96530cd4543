"""Vectors stored once, as checksummed blocks the in-memory matrices load directly.

Schema 4 keeps every vector the store ever wrote exactly once:

- ``vector_spaces``: one row per ``(collection, field, space)`` (the canonical space JSON
  and its dimension), referred to by integer everywhere else;
- ``vector_rows``: one small row per vector (row number, space, document slot, birth and
  death positions), the history the read positions mask;
- ``vector_blocks``: the float32 values of consecutive rows of one space, little-endian,
  row after row, stored raw or zlib-compressed (whichever is smaller by
  ``MIN_COMPRESSION_GAIN``; the default hashing embedder's rows are mostly zeros and
  shrink about tenfold), each with the CRC-32 of its raw bytes, checked on every read.

A bulk write puts up to ``VECTOR_BLOCK_ROWS`` rows in one block; a single write is a
block of one. Blocks are append-only like the rows: a row's death never rewrites its
block.
"""

from __future__ import annotations

import sqlite3
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from cairn.errors import CorruptionError

__all__ = [
    "CODEC_RAW",
    "CODEC_ZLIB",
    "MIN_COMPRESSION_GAIN",
    "VECTOR_BLOCK_ROWS",
    "ZLIB_LEVEL",
    "Block",
    "SpaceRow",
    "decode_block",
    "encode_block",
    "end_vector_rows",
    "iter_blocks",
    "next_vector_row",
    "read_vectors",
    "space_id",
    "spaces",
    "write_vectors",
]

VECTOR_BLOCK_ROWS = 1024
"""Most rows per block (2 MiB raw at dimension 512): bounds the memory of one read."""
CODEC_RAW = 0
"""Block codec: the raw little-endian float32 bytes."""
CODEC_ZLIB = 1
"""Block codec: those bytes zlib-compressed."""
ZLIB_LEVEL = 1
"""Fastest zlib level: 10x on hashing vectors already; higher levels cost 3x the time."""
MIN_COMPRESSION_GAIN = 0.9
"""A block is stored compressed only if that is at most this fraction of its raw size."""


@dataclass(frozen=True, slots=True)
class SpaceRow:
    """One stored vector space: its number, collection, field, space JSON and dimension."""

    id: int
    collection: str
    field: str
    space: bytes
    dimension: int


@dataclass(frozen=True, slots=True)
class Block:
    """Decoded rows ``first .. first + len(matrix) - 1`` of one space."""

    first: int
    space: int
    matrix: npt.NDArray[np.float32]


def encode_block(matrix: npt.NDArray[np.float32]) -> tuple[int, int, bytes]:
    """``(codec, checksum, data)`` of the rows of ``matrix`` (float32, C order)."""
    raw = np.ascontiguousarray(matrix, dtype="<f4").tobytes()
    packed = zlib.compress(raw, ZLIB_LEVEL)
    checksum = zlib.crc32(raw)
    if len(packed) <= MIN_COMPRESSION_GAIN * len(raw):
        return CODEC_ZLIB, checksum, packed
    return CODEC_RAW, checksum, raw


def decode_block(
    first: int, codec: int, checksum: int, data: bytes, rows: int, dimension: int
) -> npt.NDArray[np.float32]:
    """The ``(rows, dimension)`` float32 matrix of a stored block; ``CorruptionError``
    if it does not decode, has the wrong size or fails its checksum."""
    try:
        if codec == CODEC_ZLIB:
            raw = zlib.decompress(data)
        elif codec == CODEC_RAW:
            raw = bytes(data)
        else:
            raise CorruptionError(f"vector block {first} has unknown codec {codec}")
    except zlib.error as exc:
        raise CorruptionError(f"vector block {first} does not decompress: {exc}") from exc
    if len(raw) != 4 * rows * dimension:
        raise CorruptionError(
            f"vector block {first} holds {len(raw)} bytes, not {rows} rows of {dimension}"
        )
    if zlib.crc32(raw) != checksum:
        raise CorruptionError(f"vector block {first} fails its checksum")
    matrix: npt.NDArray[np.float32] = np.frombuffer(raw, dtype="<f4").reshape(rows, dimension)
    return matrix


def spaces(conn: sqlite3.Connection) -> dict[int, SpaceRow]:
    """Every stored vector space by number."""
    return {
        int(row[0]): SpaceRow(int(row[0]), row[1], row[2], bytes(row[3]), int(row[4]))
        for row in conn.execute(
            "SELECT id, collection, field, space, dimension FROM vector_spaces ORDER BY id"
        )
    }


def space_id(
    conn: sqlite3.Connection, collection: str, field: str, space: bytes, dimension: int
) -> int:
    """The number of a vector space, stored first if new (inside a write transaction)."""
    row = conn.execute(
        "SELECT id, dimension FROM vector_spaces WHERE collection = ? AND field = ? AND space = ?",
        (collection, field, space),
    ).fetchone()
    if row is not None:
        if int(row[1]) != dimension:
            raise CorruptionError(f"vector space {row[0]} has dimension {row[1]}, not {dimension}")
        return int(row[0])
    cursor = conn.execute(
        "INSERT INTO vector_spaces (collection, field, space, dimension) VALUES (?, ?, ?, ?)",
        (collection, field, space, dimension),
    )
    assert cursor.lastrowid is not None
    return int(cursor.lastrowid)


def next_vector_row(conn: sqlite3.Connection) -> int:
    """The number the next stored vector row gets (row numbers only ever grow)."""
    row = conn.execute("SELECT max(row) FROM vector_rows").fetchone()
    return int(row[0] or 0) + 1


def end_vector_rows(
    conn: sqlite3.Connection, position: int, fields: Sequence[tuple[int, str, str]]
) -> None:
    """End at ``position`` the live vector row of each ``(slot, collection, field)``
    (whatever its space: a field holds one current vector)."""
    conn.executemany(
        "UPDATE vector_rows SET death = ? WHERE slot = ? AND death IS NULL AND space IN "
        "(SELECT id FROM vector_spaces WHERE collection = ? AND field = ?)",
        [(position, slot, collection, field) for slot, collection, field in fields],
    )


def _runs(rows: npt.NDArray[np.int64]) -> Iterator[tuple[int, int]]:
    """``(begin, end)`` index ranges of consecutive row numbers, at most a block each."""
    begin = 0
    for index in range(1, len(rows) + 1):
        if (
            index == len(rows)
            or rows[index] != rows[index - 1] + 1
            or index - begin == VECTOR_BLOCK_ROWS
        ):
            yield begin, index
            begin = index


def write_vectors(
    conn: sqlite3.Connection,
    space: int,
    rows: Sequence[int] | npt.NDArray[np.int64],
    slots: Sequence[int],
    birth: int,
    matrix: npt.NDArray[np.float32],
) -> None:
    """Store new vector rows of one space born at ``birth``: their history rows and
    their values in blocks of consecutive rows (inside a write transaction)."""
    numbers = np.asarray(rows, dtype=np.int64)
    if matrix.shape[0] != len(numbers) or len(slots) != len(numbers):
        raise ValueError("vector rows, slots and values differ in length")
    conn.executemany(
        "INSERT INTO vector_rows (row, space, slot, birth, death) VALUES (?, ?, ?, ?, NULL)",
        [(int(row), space, int(slot), birth) for row, slot in zip(numbers, slots, strict=True)],
    )
    blocks = []
    for begin, end in _runs(numbers):
        codec, checksum, data = encode_block(matrix[begin:end])
        blocks.append((int(numbers[begin]), space, end - begin, codec, checksum, data))
    conn.executemany(
        "INSERT INTO vector_blocks (first_row, space, rows, codec, checksum, data) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        blocks,
    )


def iter_blocks(
    conn: sqlite3.Connection, after: int, known: dict[int, SpaceRow]
) -> Iterator[Block]:
    """Every block holding a row above ``after``, in row order, decoded one at a time
    (``known``: the stored spaces, extended here if a newer one is met)."""
    cursor = conn.execute(
        "SELECT first_row, space, rows, codec, checksum, data FROM vector_blocks "
        "WHERE first_row > ? - ? ORDER BY first_row",
        (after, VECTOR_BLOCK_ROWS),
    )
    for first, space, count, codec, checksum, data in cursor:
        if first + count <= after:
            continue
        found = known.get(space)
        if found is None:
            known.update(spaces(conn))
            found = known.get(space)
            if found is None:
                raise CorruptionError(f"vector block {first} names unknown space {space}")
        matrix = decode_block(first, codec, checksum, data, count, found.dimension)
        yield Block(int(first), int(space), matrix)


def read_vectors(
    conn: sqlite3.Connection, rows: Sequence[int]
) -> dict[int, tuple[int, npt.NDArray[np.float32]]]:
    """``row -> (space, values)`` of the given stored rows (``CorruptionError`` if one
    has no block)."""
    wanted = sorted(set(rows))
    known = spaces(conn)
    found: dict[int, tuple[int, npt.NDArray[np.float32]]] = {}
    for row in wanted:
        if row in found:
            continue
        block = conn.execute(
            "SELECT first_row, space, rows, codec, checksum, data FROM vector_blocks "
            "WHERE first_row <= ? ORDER BY first_row DESC LIMIT 1",
            (row,),
        ).fetchone()
        if block is None or block[0] + block[2] <= row or block[1] not in known:
            raise CorruptionError(f"vector row {row} has no stored values")
        first, space, count, codec, checksum, data = block
        matrix = decode_block(first, codec, checksum, data, count, known[space].dimension)
        for other in wanted:
            if first <= other < first + count:
                found[other] = (int(space), matrix[other - first])
    return found
