"""In-memory columnar indexes derived from SQLite and bound to read positions (design §3).

Every document revision the store ever wrote is a *slot* with a birth position and,
once replaced or deleted, a death position. Rows are only ever appended, and a death is
only ever set to a position later than any reader that could still see the slot alive,
so one set of arrays serves every read position: a slot is alive at ``P`` iff
``birth <= P < death``. Text postings per ``(collection, text field)`` are per-term
numpy arrays of ``(slot, term frequency)`` plus a length per slot.

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

__all__ = ["ALIVE", "Columns", "ColumnsView", "TextFieldView"]

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


class Columns:
    """The in-memory columns of one database, caught up from SQLite on demand."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
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
            except (sqlite3.Error, ValueError) as exc:
                raise CorruptionError(f"cannot load the in-memory columns: {exc}") from exc
            self._last_slot = len(self._ids) - 1
            self.position = position

    def _load_slots(self, conn: sqlite3.Connection) -> None:
        rows = conn.execute(
            "SELECT slot, collection, id, owner, project, birth FROM slots "
            "WHERE slot > ? ORDER BY slot",
            (self._last_slot,),
        ).fetchall()
        if not rows:
            return
        slots = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
        if slots[0] != len(self._ids) or np.any(np.diff(slots) != 1):
            raise CorruptionError("document slots are not contiguous")
        self._collection.put(slots, [self._code(row[1]) for row in rows])
        self._owner.put(slots, [self._code(row[3]) for row in rows])
        self._project.put(slots, [self._code(row[4]) for row in rows])
        self._birth.put(slots, [row[5] for row in rows])
        self._death.put(slots, np.full(len(rows), ALIVE, dtype=np.int64))
        self._ids.extend(row[2] for row in rows)

    def _load_deaths(self, conn: sqlite3.Connection) -> None:
        rows = conn.execute(
            "SELECT slot, death FROM slots WHERE death > ?", (self.position,)
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
            "WHERE d.slot > ? ORDER BY s.collection, d.field, d.slot",
            (self._last_slot,),
        ).fetchall()
        groups: dict[tuple[str, str], list[tuple[int, int, bytes, bytes]]] = {}
        for slot, collection, field, length, term_ids, counts in rows:
            groups.setdefault((collection, field), []).append((slot, length, term_ids, counts))
        for key, items in groups.items():
            self._text.setdefault(key, _TextField()).add(*_unpack(items))

    def view(self, position: int) -> ColumnsView:
        """The arrays masked at ``position`` (cheap: references, no copies).

        ``position`` must not be ahead of what was caught up; a view for an older
        position is always valid because rows are append-only.
        """
        with self._lock:
            if position > self.position:
                raise CorruptionError(
                    f"columns are at position {self.position}, behind the cut at {position}"
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
            )


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
