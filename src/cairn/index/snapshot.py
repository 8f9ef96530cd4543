"""Column snapshots: the built in-memory arrays, persisted inside the database file.

A cold open used to rebuild every column (slots, text postings) from the packed SQLite
rows, regrouped in numpy. A snapshot stores the arrays as they are once built at some
position P, in the table
``column_snapshot`` of the same file, so the next cold open maps
them with ``np.frombuffer`` and catches up from the ``changes`` log after P exactly as
before.

The snapshot is derived data and never the truth:

- it is bound to the file's incarnation and to its position P, and carries a format
  version; anything else (another incarnation, a P beyond the reading cut, another
  format) is ignored;
- every array carries its dtype, shape and CRC-32; a missing part, a wrong size or a
  wrong checksum makes the whole snapshot ignored;
- it is checked against the rows it claims to summarise: the last slot at P must be the
  last one born at or before P, and the last term must be the stored term with that ID;
- a reader that ignores it loads everything from the rows, as without a snapshot.

It is written by ``Database.checkpoint_columns()`` (and after a bulk load) in one
write transaction that replaces the previous snapshot; it never moves the position.
The table is created by the first checkpoint rather than by a schema migration (see
``_TABLE``), so older builds still open the file.
Vector matrices are not in it (format 2): schema 4 stores each vector once, in blocks
the columns load directly (``cairn.store.vectorstore``), as fast as a snapshot copy.
Arrays are split into parts of at most ``SNAPSHOT_PART_BYTES`` (SQLite's blob limit
is 1 GB).
"""

from __future__ import annotations

import sqlite3
import zlib
from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson

__all__ = [
    "SNAPSHOT_FORMAT",
    "SNAPSHOT_PART_BYTES",
    "clear_snapshot",
    "read_snapshot",
    "snapshot_position",
    "write_snapshot",
]

SNAPSHOT_FORMAT = "cairn.columns/2"
"""The layout of a snapshot; a reader ignores any other."""

SNAPSHOT_PART_BYTES = 256 * 1024 * 1024
"""Largest blob one array part is stored in."""

_HEADER = "header"

# Not a schema migration on purpose: the table holds derived data only, so it is
# created by the first checkpoint, and a file stays readable (and writable) by builds
# that predate snapshots; they ignore the table, and their later writes are caught up
# from the rows like any write after P.
_TABLE = """CREATE TABLE IF NOT EXISTS column_snapshot (
    name TEXT NOT NULL,
    part INTEGER NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (name, part)
)"""


def _has_table(conn: sqlite3.Connection) -> bool:
    row = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'column_snapshot'"
    ).fetchone()
    return row is not None


def _incarnation(conn: sqlite3.Connection) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = 'incarnation'").fetchone()
    return None if row is None else str(row[0])


def _header(conn: sqlite3.Connection) -> dict[str, Any] | None:
    if not _has_table(conn):
        return None
    row = conn.execute(
        "SELECT data FROM column_snapshot WHERE name = ? AND part = 0", (_HEADER,)
    ).fetchone()
    if row is None:
        return None
    try:
        header = orjson.loads(row[0])
    except orjson.JSONDecodeError:
        return None
    return header if isinstance(header, dict) else None


def snapshot_position(conn: sqlite3.Connection) -> int | None:
    """The position of the file's snapshot of this incarnation and format, or None."""
    header = _header(conn)
    if header is None or header.get("format") != SNAPSHOT_FORMAT:
        return None
    if header.get("incarnation") != _incarnation(conn):
        return None
    position = header.get("scalars", {}).get("position")
    return position if type(position) is int else None


def write_snapshot(
    conn: sqlite3.Connection,
    scalars: Mapping[str, Any],
    arrays: Mapping[str, npt.NDArray[Any]],
) -> None:
    """Replace the snapshot with ``arrays`` (inside the caller's write transaction)."""
    incarnation = _incarnation(conn)
    manifest: dict[str, Any] = {}
    rows: list[tuple[str, int, memoryview]] = []
    for name, array in sorted(arrays.items()):
        data = np.ascontiguousarray(array)
        dtype = data.dtype.newbyteorder("<") if data.dtype.byteorder == ">" else data.dtype
        data = data.astype(dtype, copy=False)
        raw = data.data.cast("B")  # the array's own bytes: no copy per array
        parts = max(1, -(-len(raw) // SNAPSHOT_PART_BYTES))
        manifest[name] = {
            "dtype": data.dtype.str,
            "shape": list(data.shape),
            "parts": parts,
            "crc32": zlib.crc32(raw),
        }
        for part in range(parts):
            chunk = raw[part * SNAPSHOT_PART_BYTES : (part + 1) * SNAPSHOT_PART_BYTES]
            rows.append((name, part, chunk))
    header = {
        "format": SNAPSHOT_FORMAT,
        "incarnation": incarnation,
        "scalars": dict(scalars),
        "arrays": manifest,
    }
    conn.execute(_TABLE)
    clear_snapshot(conn)
    conn.executemany("INSERT INTO column_snapshot (name, part, data) VALUES (?, ?, ?)", rows)
    conn.execute(
        "INSERT INTO column_snapshot (name, part, data) VALUES (?, 0, ?)",
        (_HEADER, orjson.dumps(header)),
    )


def clear_snapshot(conn: sqlite3.Connection) -> None:
    """Remove the snapshot, if any (inside the caller's write transaction)."""
    if _has_table(conn):
        conn.execute("DELETE FROM column_snapshot")


def read_snapshot(
    conn: sqlite3.Connection, position: int
) -> tuple[dict[str, Any], dict[str, npt.NDArray[Any]]] | None:
    """The snapshot's ``(scalars, arrays)`` if it is valid for a cut at ``position``.

    Runs inside the cut's read transaction. Returns None for a missing, foreign,
    stale-format, too-new or damaged snapshot (then the caller loads from rows).
    """
    try:
        return _read(conn, position)
    except (sqlite3.Error, ValueError, KeyError, TypeError, OverflowError):
        return None


def _read(
    conn: sqlite3.Connection, position: int
) -> tuple[dict[str, Any], dict[str, npt.NDArray[Any]]] | None:
    header = _header(conn)
    if header is None or header.get("format") != SNAPSHOT_FORMAT:
        return None
    if header.get("incarnation") != _incarnation(conn):
        return None
    scalars = header["scalars"]
    at = scalars["position"]
    if type(at) is not int or not 0 < at <= position:
        return None
    manifest: dict[str, Any] = header["arrays"]
    chunks: dict[str, list[bytes]] = {}
    for name, part, data in conn.execute(
        "SELECT name, part, data FROM column_snapshot WHERE name != ? ORDER BY name, part",
        (_HEADER,),
    ):
        if part != len(chunks.setdefault(name, [])):
            return None
        chunks[name].append(data)
    if set(chunks) != set(manifest):
        return None
    arrays: dict[str, npt.NDArray[Any]] = {}
    for name, entry in manifest.items():
        parts = chunks[name]
        if len(parts) != entry["parts"]:
            return None
        raw = parts[0] if len(parts) == 1 else b"".join(parts)
        if zlib.crc32(raw) != entry["crc32"]:
            return None
        dtype = np.dtype(entry["dtype"])
        shape = tuple(int(size) for size in entry["shape"])
        if len(raw) != dtype.itemsize * int(np.prod(shape, dtype=np.int64)):
            return None
        arrays[name] = np.frombuffer(raw, dtype=dtype).reshape(shape)
    if not _matches_rows(conn, scalars, arrays):
        return None
    return scalars, arrays


def _born_at_or_before(conn: sqlite3.Connection, sql: str, key: int, position: int) -> bool:
    row = conn.execute(sql, (key,)).fetchone()
    return row is not None and int(row[0]) <= position


def _matches_rows(
    conn: sqlite3.Connection, scalars: Mapping[str, Any], arrays: Mapping[str, Any]
) -> bool:
    """Whether the snapshot's last slot and term are the file's at its P."""
    at = int(scalars["position"])
    last_slot = int(scalars["last_slot"])
    slot_birth = "SELECT birth FROM slots WHERE slot = ?"
    if last_slot and not _born_at_or_before(conn, slot_birth, last_slot, at):
        return False
    after = conn.execute(slot_birth, (last_slot + 1,)).fetchone()
    if after is not None and int(after[0]) <= at:
        return False
    terms = int(scalars["counts"]["terms"])
    if terms:
        packed = bytes(arrays["terms"])
        last = packed[packed.rfind(b"\x00") + 1 :].decode("utf-8")
        row = conn.execute("SELECT term FROM terms WHERE id = ?", (terms,)).fetchone()
        if row is None or row[0] != last:
            return False
    return True
