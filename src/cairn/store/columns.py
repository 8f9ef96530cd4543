"""In-memory columnar indexes derived from SQLite and bound to read positions (design §3).

Every document revision the store ever wrote is a *slot* with a birth position and,
once replaced or deleted, a death position. Rows are only ever appended, and a death is
only ever set to a position later than any reader that could still see the slot alive,
so one set of arrays serves every read position: a slot is alive at ``P`` iff
``birth <= P < death``. Text postings per ``(collection, text field)`` are per-term
numpy arrays of ``(slot, term frequency)`` plus a length per slot. Vectors per
``(collection, field, space)`` are one append-only float32 matrix whose rows carry the
document slot they are bound to and their own birth and death positions (a row dies
when the same slot and field get a new vector); a vector is seen at ``P`` iff its row
and its slot are both alive at ``P``, so vectors of older revisions are never seen.

``Columns.catch_up`` runs inside a read cut's SQLite transaction and loads whatever the
snapshot holds beyond what is already in memory (cold open loads everything; writes by
another process are picked up the same way). ``Columns.view`` then hands out a
consistent snapshot of array references for that cut.
"""

from __future__ import annotations

import itertools
import sqlite3
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from cairn.errors import CorruptionError

__all__ = ["ALIVE", "Columns", "ColumnsView", "TextFieldView", "VectorColumnView", "VectorKey"]

ALIVE = np.iinfo(np.int64).max
"""The death position of a slot nobody has replaced or deleted yet."""

_INITIAL_CAPACITY = 64


class _Growable:
    """An append-only numpy array that doubles its capacity (old views stay valid)."""

    __slots__ = ("_data", "_fill", "size")

    def __init__(self, dtype: type[np.generic], fill: int | float = 0) -> None:
        self._fill = fill
        self._data = np.full(_INITIAL_CAPACITY, fill, dtype=dtype)
        self.size = 0

    def reserve(self, size: int) -> None:
        """Make room for ``size`` elements; new room holds the fill value."""
        if size <= len(self._data):
            return
        capacity = max(size, 2 * len(self._data))
        grown = np.full(capacity, self._fill, dtype=self._data.dtype)
        grown[: self.size] = self._data[: self.size]
        self._data = grown

    def extend(self, values: npt.ArrayLike) -> None:
        """Append ``values`` at the end."""
        array = np.asarray(values, dtype=self._data.dtype)
        self.reserve(self.size + len(array))
        self._data[self.size : self.size + len(array)] = array
        self.size += len(array)

    def put(self, index: npt.ArrayLike, values: npt.ArrayLike) -> None:
        """Set elements at ``index`` (growing the logical size to cover them)."""
        where = np.asarray(index, dtype=np.int64)
        if len(where) == 0:
            return
        self.reserve(int(where.max()) + 1)
        self._data[where] = values
        self.size = max(self.size, int(where.max()) + 1)

    def view(self) -> npt.NDArray[np.generic]:
        """The filled prefix (a view; later appends never change what it shows)."""
        return self._data[: self.size]


class _Matrix:
    """Append-only float32 rows of one dimension that double their capacity."""

    __slots__ = ("_data", "size")

    def __init__(self, dimension: int) -> None:
        self._data = np.zeros((_INITIAL_CAPACITY, dimension), dtype=np.float32)
        self.size = 0

    def extend(self, rows: npt.NDArray[np.float32]) -> None:
        """Append ``rows`` (shape ``(n, dimension)``) at the end."""
        needed = self.size + len(rows)
        if needed > len(self._data):
            grown = np.zeros((max(needed, 2 * len(self._data)), self._data.shape[1]), np.float32)
            grown[: self.size] = self._data[: self.size]
            self._data = grown
        self._data[self.size : needed] = rows
        self.size = needed

    def view(self) -> npt.NDArray[np.float32]:
        """The filled rows (a view; later appends never change what it shows)."""
        return self._data[: self.size]


VectorKey = tuple[str, str, bytes]
"""``(collection, vector field, canonical space JSON)``: one matrix per key."""


class _VectorColumn:
    """The matrix of one ``(collection, field, space)`` and its rows' slots and positions."""

    __slots__ = ("birth", "death", "matrix", "slots")

    def __init__(self, dimension: int) -> None:
        self.matrix = _Matrix(dimension)
        self.slots = _Growable(np.int64)
        self.birth = _Growable(np.int64, ALIVE)
        self.death = _Growable(np.int64, ALIVE)

    def extend(
        self,
        rows: npt.NDArray[np.float32],
        slots: npt.NDArray[np.int64],
        births: npt.NDArray[np.int64],
    ) -> int:
        """Append rows born at ``births``; return the index of the first one."""
        first = self.slots.size
        self.matrix.extend(rows)
        self.slots.extend(slots)
        self.death.extend(np.full(len(slots), ALIVE, dtype=np.int64))
        self.birth.extend(births)  # last: a row is never alive before it is complete
        return first

    def view(self) -> VectorColumnView:
        """A consistent prefix of every array."""
        size = min(self.birth.size, self.slots.size, self.matrix.size, self.death.size)
        return VectorColumnView(
            self.matrix.view()[:size],
            self.slots.view()[:size],  # type: ignore[arg-type]
            self.birth.view()[:size],  # type: ignore[arg-type]
            self.death.view()[:size],  # type: ignore[arg-type]
        )


@dataclass(frozen=True, slots=True)
class VectorColumnView:
    """One vector matrix as seen by a read cut: rows, their slots, births and deaths."""

    matrix: npt.NDArray[np.float32]
    slots: npt.NDArray[np.int64]
    birth: npt.NDArray[np.int64]
    death: npt.NDArray[np.int64]

    def alive(self, position: int) -> npt.NDArray[np.bool_]:
        """Rows alive at ``position`` (their slot's liveness is checked separately)."""
        mask: npt.NDArray[np.bool_] = (self.birth <= position) & (self.death > position)
        return mask


class _TextField:
    """Postings and lengths of one ``(collection, text field)``."""

    __slots__ = ("lengths", "postings")

    def __init__(self) -> None:
        self.lengths = _Growable(np.float64)
        self.postings: dict[int, tuple[_Growable, _Growable]] = {}

    def add(
        self,
        slots: npt.NDArray[np.int64],
        lengths: npt.NDArray[np.float64],
        terms: npt.NDArray[np.int64],
        term_slots: npt.NDArray[np.int64],
        counts: npt.NDArray[np.float64],
    ) -> None:
        """Add new slots' lengths and their postings (grouped per term in one sort)."""
        self.lengths.put(slots, lengths)
        order = np.argsort(terms, kind="stable")
        terms, term_slots, counts = terms[order], term_slots[order], counts[order]
        starts: list[int] = []
        if len(terms):
            starts = [int(i) for i in np.flatnonzero(np.r_[True, terms[1:] != terms[:-1]])]
        bounds = [*starts, len(terms)]
        for begin, end in itertools.pairwise(bounds):
            term = int(terms[begin])
            found = self.postings.get(term)
            if found is None:
                found = (_Growable(np.int64), _Growable(np.float64))
                self.postings[term] = found
            found[0].extend(term_slots[begin:end])
            found[1].extend(counts[begin:end])


class TextFieldView:
    """One text field as seen by a view: lengths by slot and per-term postings.

    Postings are read from the live append-only arrays; entries of slots born after the
    view's position are dropped by the view's alive mask, so they never leak into a cut.
    """

    __slots__ = ("_field", "lengths")

    def __init__(self, field: _TextField) -> None:
        self._field = field
        self.lengths: npt.NDArray[np.float64] = field.lengths.view()  # type: ignore[assignment]

    def postings(self, term: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        """Slots containing ``term`` and its frequency in each (possibly empty)."""
        found = self._field.postings.get(term)
        if found is None:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64)
        slots, tfs = found
        size = min(slots.size, tfs.size)
        return slots.view()[:size], tfs.view()[:size]  # type: ignore[return-value]


@dataclass(frozen=True, slots=True)
class ColumnsView:
    """Array references frozen for one read cut; masks select what is alive at ``position``."""

    position: int
    collection: npt.NDArray[np.int32]
    birth: npt.NDArray[np.int64]
    death: npt.NDArray[np.int64]
    owner: npt.NDArray[np.int32]
    project: npt.NDArray[np.int32]
    ids: Sequence[str]
    codes: Mapping[str, int]
    terms: Mapping[str, int]
    text: Mapping[tuple[str, str], _TextField]
    vectors: Mapping[VectorKey, VectorColumnView]

    def alive(self, collection: str) -> npt.NDArray[np.bool_]:
        """Mask over slots: in ``collection`` and alive at this view's position."""
        code = self.codes.get(collection)
        if code is None:
            return np.zeros(len(self.birth), dtype=bool)
        mask: npt.NDArray[np.bool_] = (
            (self.collection == code) & (self.birth <= self.position) & (self.death > self.position)
        )
        return mask

    def code(self, name: str | None) -> int:
        """The integer code of an owner/project/collection name (0 for None, -1 unknown)."""
        if name is None:
            return 0
        return self.codes.get(name, -1)

    def text_field(self, collection: str, field: str) -> TextFieldView | None:
        """The text index of ``(collection, field)``, or None when nothing was indexed."""
        found = self.text.get((collection, field))
        return None if found is None else TextFieldView(found)

    def vector_column(self, collection: str, field: str, space: bytes) -> VectorColumnView | None:
        """The vector matrix of ``(collection, field, space)``, or None when it has no rows."""
        return self.vectors.get((collection, field, space))


class Columns:
    """The in-memory columns of one database, caught up from SQLite on demand.

    ``horizon`` > 0 makes a compacted generation: rows that died at or before it (slots,
    their postings and vectors, replaced vector rows) are never loaded, so it only
    serves read positions >= ``horizon``. Slot numbers keep indexing the arrays.
    """

    def __init__(self, horizon: int = 0) -> None:
        self._lock = threading.Lock()
        self.horizon = horizon
        self.position = 0
        self._last_slot = 0
        self._collection = _Growable(np.int32, -1)
        self._birth = _Growable(np.int64, ALIVE)
        self._death = _Growable(np.int64, ALIVE)
        self._owner = _Growable(np.int32, 0)
        self._project = _Growable(np.int32, 0)
        self._ids: list[str] = [""]
        self._codes: dict[str, int] = {}
        self._terms: dict[str, int] = {}
        self._text: dict[tuple[str, str], _TextField] = {}
        self._vectors: dict[VectorKey, _VectorColumn] = {}
        self._vector_keys: list[VectorKey] = []
        self._vector_key_codes: dict[VectorKey, int] = {}
        self._row_column = _Growable(np.int32, -1)  # vector_rows.row -> key code
        self._row_index = _Growable(np.int64, -1)  # vector_rows.row -> index in its column
        self._last_vector_row = 0
        # Slot 0 is never used: it belongs to no collection and is never alive.
        self._collection.put([0], [-1])
        self._birth.put([0], [ALIVE])
        self._death.put([0], [0])
        self._owner.put([0], [0])
        self._project.put([0], [0])

    def _code(self, name: str | None) -> int:
        if name is None:
            return 0
        code = self._codes.get(name)
        if code is None:
            code = len(self._codes) + 1
            self._codes[name] = code
        return code

    def catch_up(self, conn: sqlite3.Connection, position: int) -> None:
        """Load every slot, death and posting the snapshot of ``conn`` holds beyond memory."""
        with self._lock:
            if position <= self.position:
                return
            try:
                self._load_slots(conn)
                self._load_deaths(conn)
                self._load_terms(conn)
                self._load_text(conn)
                self._load_vectors(conn)
                self._load_vector_deaths(conn)
            except (sqlite3.Error, ValueError) as exc:
                raise CorruptionError(f"cannot load the in-memory columns: {exc}") from exc
            self._last_slot = len(self._ids) - 1
            self._last_vector_row = max(self._last_vector_row, _max_row(conn))
            self.position = position

    def _load_slots(self, conn: sqlite3.Connection) -> None:
        rows = conn.execute(
            "SELECT slot, collection, id, owner, project, birth FROM slots "
            "WHERE slot > ? AND (death IS NULL OR death > ?) ORDER BY slot",
            (self._last_slot, self.horizon),
        ).fetchall()
        if not rows:
            return
        slots = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
        if self.horizon == 0 and (slots[0] != len(self._ids) or np.any(np.diff(slots) != 1)):
            raise CorruptionError("document slots are not contiguous")
        self._collection.put(slots, [self._code(row[1]) for row in rows])
        self._owner.put(slots, [self._code(row[3]) for row in rows])
        self._project.put(slots, [self._code(row[4]) for row in rows])
        self._birth.put(slots, [row[5] for row in rows])
        self._death.put(slots, np.full(len(rows), ALIVE, dtype=np.int64))
        if self.horizon == 0:
            self._ids.extend(row[2] for row in rows)
            return
        # A compacted generation skips dead slots: their places hold never-alive rows.
        self._ids.extend([""] * (int(slots[-1]) + 1 - len(self._ids)))
        for row in rows:
            self._ids[row[0]] = row[2]
        gaps = np.setdiff1d(np.arange(self._last_slot + 1, int(slots[-1]) + 1), slots)
        self._death.put(gaps, 0)

    def _load_deaths(self, conn: sqlite3.Connection) -> None:
        rows = conn.execute(
            "SELECT slot, death FROM slots WHERE death > ?", (max(self.position, self.horizon),)
        ).fetchall()
        if rows:
            self._death.put([row[0] for row in rows], [row[1] for row in rows])

    def _load_terms(self, conn: sqlite3.Connection) -> None:
        known = len(self._terms)
        for term_id, term in conn.execute(
            "SELECT id, term FROM terms WHERE id > ? ORDER BY id", (known,)
        ):
            self._terms[term] = term_id

    def _load_text(self, conn: sqlite3.Connection) -> None:
        rows = conn.execute(
            "SELECT d.slot, s.collection, d.field, d.length, d.term_ids, d.counts "
            "FROM doc_terms AS d JOIN slots AS s ON s.slot = d.slot "
            "WHERE d.slot > ? AND (s.death IS NULL OR s.death > ?) "
            "ORDER BY s.collection, d.field, d.slot",
            (self._last_slot, self.horizon),
        ).fetchall()
        groups: dict[tuple[str, str], list[tuple[int, int, bytes, bytes]]] = {}
        for slot, collection, field, length, term_ids, counts in rows:
            groups.setdefault((collection, field), []).append((slot, length, term_ids, counts))
        for key, items in groups.items():
            self._text.setdefault(key, _TextField()).add(*_unpack(items))

    def _load_vectors(self, conn: sqlite3.Connection) -> None:
        rows = conn.execute(
            "SELECT v.row, v.collection, v.field, v.space, v.dimension, v.slot, v.birth, v.data "
            "FROM vector_rows AS v JOIN slots AS s ON s.slot = v.slot WHERE v.row > ? "
            "AND (v.death IS NULL OR v.death > ?) AND (s.death IS NULL OR s.death > ?) "
            "ORDER BY v.row",
            (self._last_vector_row, self.horizon, self.horizon),
        ).fetchall()
        if not rows:
            return
        groups: dict[VectorKey, list[tuple[int, int, int, bytes]]] = {}
        dimensions: dict[VectorKey, int] = {}
        for row, collection, field, space, dimension, slot, birth, data in rows:
            key = (collection, field, bytes(space))
            groups.setdefault(key, []).append((row, slot, birth, data))
            dimensions[key] = dimension
        for key, items in groups.items():
            dimension = dimensions[key]
            column = self._vectors.get(key)
            if column is None:
                column = _VectorColumn(dimension)
                self._vectors[key] = column
                self._vector_key_codes[key] = len(self._vector_keys)
                self._vector_keys.append(key)
            matrix = np.frombuffer(b"".join(item[3] for item in items), dtype="<f4")
            if len(matrix) != dimension * len(items):
                raise CorruptionError(f"vector rows of {key[0]}/{key[1]} have the wrong size")
            row_ids = np.asarray([item[0] for item in items], dtype=np.int64)
            first = column.extend(
                matrix.reshape(len(items), dimension).astype(np.float32),
                np.asarray([item[1] for item in items], dtype=np.int64),
                np.asarray([item[2] for item in items], dtype=np.int64),
            )
            self._row_column.put(row_ids, self._vector_key_codes[key])
            self._row_index.put(row_ids, np.arange(first, first + len(items), dtype=np.int64))
        self._last_vector_row = int(rows[-1][0])

    def _load_vector_deaths(self, conn: sqlite3.Connection) -> None:
        rows = conn.execute(
            "SELECT row, death FROM vector_rows WHERE death > ?",
            (max(self.position, self.horizon),),
        ).fetchall()
        columns = self._row_column.view()
        indexes = self._row_index.view()
        for row, death in rows:
            code = int(columns[row]) if row < len(columns) else -1
            if code < 0:
                if self.horizon:
                    continue  # compacted away: its slot died at or before the horizon
                raise CorruptionError(f"vector row {row} ended but was never loaded")
            self._vectors[self._vector_keys[code]].death.put([int(indexes[row])], [death])

    def view(self, position: int) -> ColumnsView:
        """The arrays masked at ``position`` (cheap: references, no copies).

        ``position`` must not be ahead of what was caught up; a view for an older
        position is always valid because rows are append-only.
        """
        with self._lock:
            if not self.horizon <= position <= self.position:
                raise CorruptionError(
                    f"columns serve positions {self.horizon}..{self.position}, not {position}"
                )
            return ColumnsView(
                position=position,
                collection=self._collection.view(),  # type: ignore[arg-type]
                birth=self._birth.view(),  # type: ignore[arg-type]
                death=self._death.view(),  # type: ignore[arg-type]
                owner=self._owner.view(),  # type: ignore[arg-type]
                project=self._project.view(),  # type: ignore[arg-type]
                ids=self._ids,
                codes=self._codes,
                terms=self._terms,
                text=self._text,
                vectors={key: column.view() for key, column in self._vectors.items()},
            )


def _max_row(conn: sqlite3.Connection) -> int:
    """The highest vector row in the snapshot (skipped rows are never loaded later)."""
    row = conn.execute("SELECT max(row) FROM vector_rows").fetchone()
    return int(row[0] or 0)


def _unpack(
    items: Iterable[tuple[int, int, bytes, bytes]],
) -> tuple[
    npt.NDArray[np.int64],
    npt.NDArray[np.float64],
    npt.NDArray[np.int64],
    npt.NDArray[np.int64],
    npt.NDArray[np.float64],
]:
    """Concatenate packed ``doc_terms`` rows into flat arrays with one numpy pass each."""
    listed = list(items)
    slots = np.asarray([item[0] for item in listed], dtype=np.int64)
    lengths = np.asarray([item[1] for item in listed], dtype=np.float64)
    terms = np.frombuffer(b"".join(item[2] for item in listed), dtype="<u4").astype(np.int64)
    counts = np.frombuffer(b"".join(item[3] for item in listed), dtype="<u4").astype(np.float64)
    sizes = np.asarray([len(item[2]) // 4 for item in listed], dtype=np.int64)
    return slots, lengths, terms, np.repeat(slots, sizes), counts
