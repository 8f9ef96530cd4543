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

Graph edges (``cairn.store.adjacency``) are one append-only row table per graph with
CSR indexes by source and by target node, where a node is a document key
``(collection, id)``; a graph is loaded on its first use inside a cut and caught up from
the ``changes`` log inside later cuts, like everything else.

``Columns.catch_up`` runs inside a read cut's SQLite transaction and loads whatever the
snapshot holds beyond what is already in memory (cold open loads everything; writes by
another process are picked up the same way). ``Columns.view`` then hands out a
consistent snapshot of array references for that cut.
"""

from __future__ import annotations

import dataclasses
import itertools
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from cairn.errors import CorruptionError
from cairn.store.adjacency import GraphColumn, GraphView
from cairn.store.limits import COLUMN_MEMO_SIZE, LIVE_NODE_CACHE_SIZE

__all__ = [
    "ALIVE",
    "Columns",
    "ColumnsView",
    "GraphView",
    "TextFieldView",
    "VectorColumnView",
    "VectorKey",
]

ALIVE = np.iinfo(np.int64).max
"""The death position of a slot nobody has replaced or deleted yet."""

_T = TypeVar("_T")

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

    __slots__ = ("birth", "death", "matrix", "norms", "slots")

    def __init__(self, dimension: int) -> None:
        self.matrix = _Matrix(dimension)
        self.norms = _Growable(np.float64)
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
        # float32 products are exact in float64; only the float64 sums round.
        self.norms.extend(np.sqrt(np.einsum("ij,ij->i", rows, rows, dtype=np.float64)))
        self.slots.extend(slots)
        self.death.extend(np.full(len(slots), ALIVE, dtype=np.int64))
        self.birth.extend(births)  # last: a row is never alive before it is complete
        return first

    def view(self) -> VectorColumnView:
        """A consistent prefix of every array."""
        size = min(
            self.birth.size, self.slots.size, self.matrix.size, self.death.size, self.norms.size
        )
        return VectorColumnView(
            self.matrix.view()[:size],
            self.norms.view()[:size],  # type: ignore[arg-type]
            self.slots.view()[:size],  # type: ignore[arg-type]
            self.birth.view()[:size],  # type: ignore[arg-type]
            self.death.view()[:size],  # type: ignore[arg-type]
        )


@dataclass(frozen=True, slots=True)
class VectorColumnView:
    """One vector matrix as seen by a read cut: rows, L2 norms, slots, births, deaths."""

    matrix: npt.NDArray[np.float32]
    norms: npt.NDArray[np.float64]
    slots: npt.NDArray[np.int64]
    birth: npt.NDArray[np.int64]
    death: npt.NDArray[np.int64]

    def alive(self, position: int) -> npt.NDArray[np.bool_]:
        """Rows alive at ``position`` (their slot's liveness is checked separately)."""
        mask: npt.NDArray[np.bool_] = (self.birth <= position) & (self.death > position)
        return mask


class _TextField:
    """Postings and lengths of one ``(collection, text field)``.

    The first load (cold open) becomes one base array of postings grouped by term, each
    term a slice of it; postings added later go to small per-term tails.
    """

    __slots__ = ("_base", "_bounds", "lengths", "postings")

    def __init__(self) -> None:
        self.lengths = _Growable(np.float64)
        self.postings: dict[int, tuple[_Growable, _Growable]] = {}
        self._base: tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], dict[int, int]] | None
        self._base = None
        self._bounds = np.zeros(1, dtype=np.int64)

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
        order = _group_order(terms)
        terms, term_slots, counts = terms[order], term_slots[order], counts[order]
        starts: list[int] = []
        if len(terms):
            starts = np.flatnonzero(np.r_[True, terms[1:] != terms[:-1]]).tolist()
        bounds = [*starts, len(terms)]
        if self._base is None and not self.postings and len(terms):
            firsts = dict(zip(terms[starts].tolist(), range(len(starts)), strict=True))
            self._bounds = np.asarray(bounds, dtype=np.int64)  # before the base: readers
            self._base = (term_slots, counts, firsts)
            return
        for begin, end in itertools.pairwise(bounds):
            term = int(terms[begin])
            found = self.postings.get(term)
            if found is None:
                found = (_Growable(np.int64), _Growable(np.float64))
                self.postings[term] = found
            found[0].extend(term_slots[begin:end])
            found[1].extend(counts[begin:end])

    def base(self, term: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]] | None:
        """The term's postings from the first load, or None."""
        if self._base is None:
            return None
        slots, counts, firsts = self._base
        index = firsts.get(term)
        if index is None:
            return None
        begin, end = int(self._bounds[index]), int(self._bounds[index + 1])
        return slots[begin:end], counts[begin:end]


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
        base = self._field.base(term)
        found = self._field.postings.get(term)
        if found is None:
            if base is not None:
                return base
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64)
        slots, tfs = found
        size = min(slots.size, tfs.size)
        tail = slots.view()[:size], tfs.view()[:size]
        if base is None:
            return tail  # type: ignore[return-value]
        return np.concatenate((base[0], tail[0])), np.concatenate((base[1], tail[1]))


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
    source: Columns
    nodes: Mapping[tuple[str, str], int]
    node_keys: Sequence[tuple[str, str]]
    _graphs: dict[str, GraphView] = dataclasses.field(default_factory=dict)
    _live: list[npt.NDArray[np.int64]] = dataclasses.field(default_factory=list)

    def graph(self, conn: sqlite3.Connection, name: str) -> GraphView:
        """The adjacency of graph ``name`` at this position (loaded and caught up on demand).

        ``conn`` must be the cut's own connection: a graph's first load and its catch-up
        read that snapshot. Cached for the life of the view.
        """
        found = self._graphs.get(name)
        if found is None:
            found = self.source.graph_view(conn, name, self.position)
            self._graphs[name] = found
        return found

    def live_slots(self) -> npt.NDArray[np.int64]:
        """Per node, the slot alive at this position (0: no live document)."""
        if not self._live:
            self._live.append(self.source.live_slots(self.position))
        return self._live[0]

    def alive(self, collection: str) -> npt.NDArray[np.bool_]:
        """Mask over slots: in ``collection`` and alive at this view's position (read-only).

        Liveness at a position never changes once the columns reached it, so the mask is
        memoised per ``(collection, position)``.
        """
        code = self.codes.get(collection)
        if code is None:
            return np.zeros(len(self.birth), dtype=bool)

        def compute() -> npt.NDArray[np.bool_]:
            mask: npt.NDArray[np.bool_] = (
                (self.collection == code)
                & (self.birth <= self.position)
                & (self.death > self.position)
            )
            mask.flags.writeable = False
            return mask

        found: npt.NDArray[np.bool_] = self.source.memo(
            ("alive", collection, self.position), compute
        )
        return found

    def memo(self, key: Hashable, compute: Callable[[], _T]) -> _T:
        """A value derived from this view's position, memoised in the columns.

        ``key`` must include the position (or everything else the value depends on).
        """
        return self.source.memo(key, compute)

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
        self._nodes: dict[tuple[str, str], int] = {}
        self._node_keys: list[tuple[str, str]] = []
        self._slot_node = _Growable(np.int64, -1)  # slot -> node of its document key
        self._graphs: dict[str, GraphColumn] = {}
        self._live_cache: dict[int, npt.NDArray[np.int64]] = {}
        self._memo: OrderedDict[Hashable, object] = OrderedDict()
        self._memo_lock = threading.Lock()
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

    def _node(self, collection: str, doc_id: str) -> int:
        """The node number of a document key, minted on first sight (call under the lock)."""
        key = (collection, doc_id)
        node = self._nodes.get(key)
        if node is None:
            node = len(self._node_keys)
            self._nodes[key] = node
            self._node_keys.append(key)
        return node

    def graph_view(self, conn: sqlite3.Connection, name: str, position: int) -> GraphView:
        """Graph ``name`` at ``position``, loading or catching it up from ``conn``'s snapshot."""
        with self._lock:
            column = self._graphs.get(name)
            if column is None:
                column = GraphColumn(name)
                self._graphs[name] = column
            try:
                if column.position < 0:
                    column.load(conn, position, self.horizon, self._node)
                elif column.position < position:
                    column.catch_up(conn, position, self._node)
            except sqlite3.Error as exc:
                raise CorruptionError(f"cannot load the adjacency of {name!r}: {exc}") from exc
            column.reindex(len(self._node_keys))
            return column.view(position)

    def memo(self, key: Hashable, compute: Callable[[], _T]) -> _T:
        """``compute()`` memoised under ``key`` (least recently used first out)."""
        with self._memo_lock:
            if key in self._memo:
                self._memo.move_to_end(key)
                return self._memo[key]  # type: ignore[return-value]
        value = compute()
        with self._memo_lock:
            self._memo[key] = value
            while len(self._memo) > COLUMN_MEMO_SIZE:
                self._memo.popitem(last=False)
        return value

    def live_slots(self, position: int) -> npt.NDArray[np.int64]:
        """Per node, the slot alive at ``position`` (0 when none); cached per position."""
        with self._lock:
            found = self._live_cache.get(position)
            if found is not None:  # nodes minted later have no slot alive at ``position``
                return found
            birth: npt.NDArray[np.int64] = self._birth.view()  # type: ignore[assignment]
            death: npt.NDArray[np.int64] = self._death.view()  # type: ignore[assignment]
            alive = np.flatnonzero((birth <= position) & (death > position))
            nodes = self._slot_node.view()[alive]
            slots = np.zeros(len(self._node_keys), dtype=np.int64)
            slots[nodes] = alive
            if len(self._live_cache) >= LIVE_NODE_CACHE_SIZE:
                self._live_cache.pop(next(iter(self._live_cache)))
            self._live_cache[position] = slots
            return slots

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
        self._slot_node.put(slots, [self._node(row[1], row[2]) for row in rows])
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
                matrix.reshape(len(items), dimension).astype(np.float32, copy=False),
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
                source=self,
                nodes=self._nodes,
                node_keys=self._node_keys,
            )


def _group_order(terms: npt.NDArray[np.int64]) -> npt.NDArray[np.intp]:
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
