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

Graph edges (``cairn.index.adjacency``) are one append-only row table per graph with
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
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeVar

import numpy as np
import numpy.typing as npt

from cairn.errors import CorruptionError
from cairn.index.adjacency import GraphColumn, GraphView
from cairn.index.halves import encode_units
from cairn.index.limits import (
    COLUMN_MEMO_SIZE,
    IMPACT_MEMO_BYTES,
    LIVE_NODE_CACHE_SIZE,
    QUANTIZE_SYNC_VALUES,
    TEXT_LOAD_ROWS,
)
from cairn.index.memo import ArrayMemo, Arrays
from cairn.index.postings import (
    GroupedField,
    RowLayout,
    checked_postings,
    group_order,
    grouped_fields,
    narrowest,
    top_term_id,
)
from cairn.index.quantized import encode_rows
from cairn.index.snapshot import read_snapshot
from cairn.store.cache import Memo
from cairn.store.vectorstore import iter_blocks, spaces

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
VECTOR_LOAD_RUN_ROWS = 4096
"""Most vector rows a load appends in one step (bounds the temporary copy of a run)."""

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

    @classmethod
    def of(cls, values: npt.NDArray[Any], dtype: type[np.generic], fill: int | float) -> _Growable:
        """A growable holding a writable copy of ``values``."""
        grown = cls(dtype, fill)
        grown._data = np.array(values, dtype=dtype, copy=True)
        grown.size = len(grown._data)
        return grown


class _Matrix:
    """Append-only rows of one dimension and dtype that double their capacity."""

    __slots__ = ("_data", "size")

    def __init__(self, dimension: int, dtype: type[np.generic] = np.float32) -> None:
        self._data: npt.NDArray[Any] = np.zeros((_INITIAL_CAPACITY, dimension), dtype=dtype)
        self.size = 0

    def extend(self, rows: npt.NDArray[Any]) -> None:
        """Append ``rows`` (shape ``(n, dimension)``) at the end."""
        needed = self.size + len(rows)
        if needed > len(self._data):
            shape = (max(needed, 2 * len(self._data)), self._data.shape[1])
            grown = np.zeros(shape, self._data.dtype)
            grown[: self.size] = self._data[: self.size]
            self._data = grown
        self._data[self.size : needed] = rows
        self.size = needed

    def view(self) -> npt.NDArray[Any]:
        """The filled rows (a view; later appends never change what it shows)."""
        return self._data[: self.size]

    @property
    def dimension(self) -> int:
        """Values per row."""
        return int(self._data.shape[1])


VectorKey = tuple[str, str, bytes]
"""``(collection, vector field, canonical space JSON)``: one matrix per key."""


class _Derived:
    """Per-row arrays derived from a column's rows on first use and extended as rows
    arrive, never stored: a column nobody scans that way costs nothing for them.

    Rows never change once appended, so what was derived stays valid. A few missing
    rows (at most ``QUANTIZE_SYNC_VALUES`` values) are encoded on the spot; more are
    encoded by a background thread while callers scan the float32 rows, so no search
    waits for a whole column (~0.13 s per 100k x 256 rows, and far more while the host
    backs the new arrays' fresh memory).
    """

    __slots__ = ("_busy", "_encode", "_lock", "dimension", "parts")

    def __init__(
        self,
        parts: tuple[_Matrix | _Growable, ...],
        encode: Callable[[int, int], tuple[npt.NDArray[Any], ...]],
        dimension: int,
    ) -> None:
        self.parts = parts
        self.dimension = dimension
        self._encode = encode  # rows ``begin:end`` (already appended: immutable)
        self._lock = threading.Lock()
        self._busy = False  # a background thread is encoding rows

    def of(self, size: int) -> tuple[npt.NDArray[Any], ...] | None:
        """The derived arrays of the first ``size`` rows, or None while a background
        thread derives them."""
        with self._lock:
            done = self.parts[0].size
            if done < size and (size - done) * self.dimension <= QUANTIZE_SYNC_VALUES:
                self._append(done, self._encode(done, size))
                done = size
            if done >= size:
                return tuple(part.view()[:size] for part in self.parts)
            if not self._busy:
                self._busy = True
                threading.Thread(target=self._behind, args=(done, size), daemon=True).start()
            return None

    def _append(self, begin: int, encoded: tuple[npt.NDArray[Any], ...]) -> None:
        """Append encoded rows that start at row ``begin`` (caller holds the lock)."""
        if self.parts[0].size == begin:  # else another caller got there first
            for part, values in zip(self.parts, encoded, strict=True):
                part.extend(values)

    def _behind(self, begin: int, end: int) -> None:
        """The background thread: encode rows ``begin:end`` without the lock, then append."""
        try:
            encoded = self._encode(begin, end)
            with self._lock:
                self._append(begin, encoded)
        finally:
            with self._lock:
                self._busy = False


class _VectorColumn:
    """The matrix of one ``(collection, field, space)`` and its rows' slots and positions.

    Beside the float32 rows it can keep two smaller copies of their unit vectors, each
    derived on first use (``_Derived``): int8 codes with each row's scale and
    quantisation residual (``cairn.index.quantized``) for vector-only scans, and float16
    units with each row's rounding residual (``cairn.index.halves``) for scans fused
    with other branches.
    """

    __slots__ = ("birth", "codes", "death", "halves", "matrix", "norms", "slots")

    def __init__(self, dimension: int) -> None:
        self.matrix = _Matrix(dimension)
        self.norms = _Growable(np.float64)
        self.slots = _Growable(np.int64)
        self.birth = _Growable(np.int64, ALIVE)
        self.death = _Growable(np.int64, ALIVE)
        self.codes = _Derived(
            (_Matrix(dimension, np.int8), _Growable(np.float64), _Growable(np.float64)),
            lambda begin, end: encode_rows(*self._rows(begin, end)),
            dimension,
        )
        self.halves = _Derived(
            (_Matrix(dimension, np.float16), _Growable(np.float64)),
            lambda begin, end: encode_units(*self._rows(begin, end)),
            dimension,
        )

    def _rows(
        self, begin: int, end: int
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float64]]:
        """Rows ``begin:end`` and their norms, the input of every derived copy."""
        rows: npt.NDArray[np.float32] = self.matrix.view()[begin:end]
        norms: npt.NDArray[np.float64] = self.norms.view()[begin:end]  # type: ignore[assignment]
        return rows, norms

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

    def quantized(self, size: int) -> Quantized | None:
        """The int8 codes, scales and residuals of the first ``size`` rows, or None while
        a background thread derives them (``_Derived.of``)."""
        found = self.codes.of(size)
        return None if found is None else Quantized(*found)

    def halved(self, size: int) -> Halves | None:
        """The float16 units and residuals of the first ``size`` rows, or None while a
        background thread derives them (``_Derived.of``)."""
        found = self.halves.of(size)
        return None if found is None else Halves(*found)

    def parts(self) -> tuple[_Growable | _Matrix, ...]:
        """Every append-only array that grows with each row (the copies lag, on demand)."""
        return (self.matrix, self.norms, self.slots, self.birth, self.death)

    def view(self) -> VectorColumnView:
        """A consistent prefix of every array."""
        size = min(part.size for part in self.parts())
        return VectorColumnView(
            self.matrix.view()[:size],
            self.norms.view()[:size],  # type: ignore[arg-type]
            self.slots.view()[:size],  # type: ignore[arg-type]
            self.birth.view()[:size],  # type: ignore[arg-type]
            self.death.view()[:size],  # type: ignore[arg-type]
            self.quantized,
            self.halved,
        )


class Quantized(NamedTuple):
    """Rows' unit vectors as int8 ``codes`` (one row each) with per-row ``scales`` and
    ``residuals`` (``cairn.index.quantized``)."""

    codes: npt.NDArray[np.int8]
    scales: npt.NDArray[np.float64]
    residuals: npt.NDArray[np.float64]


class Halves(NamedTuple):
    """Rows' unit vectors in float16 (``units``, one row each) with per-row rounding
    ``residuals`` (``cairn.index.halves``)."""

    units: npt.NDArray[np.float16]
    residuals: npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class VectorColumnView:
    """One vector matrix as seen by a read cut: rows, L2 norms, slots, births, deaths,
    and access to the rows' int8 and float16 unit vectors (``quantized``, ``halves``)."""

    matrix: npt.NDArray[np.float32]
    norms: npt.NDArray[np.float64]
    slots: npt.NDArray[np.int64]
    birth: npt.NDArray[np.int64]
    death: npt.NDArray[np.int64]
    quantized_of: Callable[[int], Quantized | None]
    halves_of: Callable[[int], Halves | None]

    def quantized(self) -> Quantized | None:
        """The int8 codes, scales and residuals of this view's rows (derived on first use;
        None while a background thread derives them)."""
        return self.quantized_of(len(self.matrix))

    def halves(self) -> Halves | None:
        """The float16 units and residuals of this view's rows (derived on first use;
        None while a background thread derives them)."""
        return self.halves_of(len(self.matrix))

    def alive(self, position: int) -> npt.NDArray[np.bool_]:
        """Rows alive at ``position`` (their slot's liveness is checked separately)."""
        mask: npt.NDArray[np.bool_] = (self.birth <= position) & (self.death > position)
        return mask


class _TextField:
    """Postings and lengths of one ``(collection, text field)``.

    The first load (cold open) becomes one base array of postings grouped by term, each
    term a slice of it; postings added later go to small per-term tails.
    """

    __slots__ = ("_base", "_bounds", "_wide", "lengths", "postings")

    def __init__(self) -> None:
        self.lengths = _Growable(np.float64)
        self.postings: dict[int, tuple[_Growable, _Growable]] = {}
        # Slots and counts as stored (a snapshot keeps them in small unsigned types).
        self._base: tuple[npt.NDArray[Any], npt.NDArray[Any], dict[int, int]] | None = None
        self._bounds = np.zeros(1, dtype=np.int64)
        # Per term, its base postings as int64 slots and float64 counts, on first use.
        self._wide: dict[int, tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]] = {}

    def add(
        self,
        slots: npt.NDArray[np.int64],
        lengths: npt.NDArray[np.float64],
        terms: npt.NDArray[Any],
        term_slots: npt.NDArray[Any],
        counts: npt.NDArray[Any],
    ) -> None:
        """Add new slots' lengths and their postings (grouped per term in one sort).

        Postings may come in narrow integer types (the first load keeps them so, as a
        snapshot does); ``base`` widens a term's slice on first use."""
        self.lengths.put(slots, lengths)
        order = group_order(terms)
        # One array reordered at a time: a large first load holds one spare copy, not three.
        terms = terms[order]
        term_slots = term_slots[order]
        counts = counts[order]
        del order
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

    def export(self) -> dict[str, npt.NDArray[Any]]:
        """Lengths and every posting grouped by term, tails merged after the base."""
        if self._base is not None and not self.postings:
            # The base alone is already grouped by ascending term: exported as it is,
            # without the regrouping sort (a copy and two order arrays per posting).
            slots, counts, firsts = self._base
            return {
                "lengths": self.lengths.view(),
                "terms": np.asarray(sorted(firsts, key=firsts.__getitem__), dtype=np.int64),
                "bounds": self._bounds.astype(np.int64),
                "slots": _compact(slots),
                "counts": _compact(counts),
            }
        parts_terms: list[npt.NDArray[np.int64]] = []
        parts_slots: list[npt.NDArray[np.int64]] = []
        parts_counts: list[npt.NDArray[np.float64]] = []
        if self._base is not None:
            slots, counts, firsts = self._base
            ordered = sorted(firsts, key=firsts.__getitem__)
            sizes = np.diff(self._bounds)
            parts_terms.append(np.repeat(np.asarray(ordered, dtype=np.int64), sizes))
            parts_slots.append(slots)
            parts_counts.append(counts)
        for term, (tail_slots, tail_counts) in self.postings.items():
            size = min(tail_slots.size, tail_counts.size)
            parts_terms.append(np.full(size, term, dtype=np.int64))
            parts_slots.append(tail_slots.view()[:size])  # type: ignore[arg-type]
            parts_counts.append(tail_counts.view()[:size])  # type: ignore[arg-type]
        terms = np.concatenate(parts_terms) if parts_terms else np.zeros(0, np.int64)
        order = group_order(terms)  # stable: a term's base entries stay before its tail
        terms = terms[order]
        starts: npt.NDArray[np.intp] = np.zeros(0, dtype=np.intp)
        if len(terms):
            starts = np.flatnonzero(np.r_[True, terms[1:] != terms[:-1]])
        return {
            "lengths": self.lengths.view(),
            "terms": terms[starts] if len(terms) else np.zeros(0, np.int64),
            "bounds": np.append(starts, len(terms)).astype(np.int64),
            "slots": _compact((np.concatenate(parts_slots) if parts_slots else terms)[order]),
            "counts": _compact(
                (np.concatenate(parts_counts) if parts_counts else np.zeros(0, np.float64))[order]
            ),
        }

    @classmethod
    def grouped(cls, grouped: GroupedField) -> _TextField:
        """A field whose base is postings already grouped by ascending term."""
        field = cls()
        field.lengths.put(grouped.doc_slots, grouped.lengths)
        if len(grouped.terms):
            firsts = dict(zip(grouped.terms.tolist(), range(len(grouped.terms)), strict=True))
            field._bounds = grouped.bounds
            field._base = (grouped.slots, grouped.counts, firsts)
        return field

    @classmethod
    def restored(cls, arrays: Mapping[str, npt.NDArray[Any]]) -> _TextField:
        """A field over snapshot arrays: one base, no tails."""
        field = cls()
        field.lengths = _Growable.of(arrays["lengths"], np.float64, 0)
        terms = arrays["terms"]
        if len(terms):
            firsts = dict(zip(terms.tolist(), range(len(terms)), strict=True))
            field._bounds = np.asarray(arrays["bounds"], dtype=np.int64)
            # Kept as stored: widening every posting at once allocates ~120 MB per 100k
            # documents, which cost 1.7 s of a cold open on a host that had reclaimed
            # the process's free memory; each term is widened on first use instead.
            field._base = (arrays["slots"], arrays["counts"], firsts)
        return field

    def base(self, term: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]] | None:
        """The term's postings from the first load (int64 slots, float64 counts), or None."""
        found = self._wide.get(term)
        if found is not None or self._base is None:
            return found
        slots, counts, firsts = self._base
        index = firsts.get(term)
        if index is None:
            return None
        begin, end = int(self._bounds[index]), int(self._bounds[index + 1])
        found = (
            slots[begin:end].astype(np.int64, copy=False),
            counts[begin:end].astype(np.float64, copy=False),
        )
        self._wide[term] = found  # the base never changes once set
        return found


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

    def memo_arrays(self, key: Hashable, compute: Callable[[], Arrays]) -> Arrays:
        """Arrays derived from this view's position, memoised under a byte budget
        (``IMPACT_MEMO_BYTES``); ``key`` as for ``memo``."""
        return self.source.arrays.get(key, compute)

    def code(self, name: str | None) -> int:
        """The integer code of an owner/project/collection name (0 for None, -1 unknown)."""
        if name is None:
            return 0
        return self.codes.get(name, -1)

    def text_field(
        self, collection: str, field: str, conn: sqlite3.Connection
    ) -> TextFieldView | None:
        """The text index of ``(collection, field)``, or None when nothing was indexed.

        ``conn`` is the cut's own connection: the postings are loaded from its snapshot
        on the first text question (``Columns.ensure_text``)."""
        self.source.ensure_text(conn)
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
    ``vectors=False`` builds columns for a snapshot only (``export``): the vector
    matrices, which a snapshot does not hold, are never read. Text postings are loaded
    on the first text question (``ensure_text``; ``text=True`` loads them with the
    slots): a cut that never ranks text (callers, impact, show) does not pay for them
    (0.33 s of a 0.58 s first cut on the Django package).
    """

    def __init__(self, horizon: int = 0, *, vectors: bool = True, text: bool = False) -> None:
        self._lock = threading.Lock()
        self.horizon = horizon
        self.vectors = vectors
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
        self._text_on = text  # False: postings load on the first text question
        self._text_slot = 0  # the postings of every slot up to here are in ``_text``
        self._vectors: dict[VectorKey, _VectorColumn] = {}
        self._vector_keys: list[VectorKey] = []
        self._vector_key_codes: dict[VectorKey, int] = {}
        self._row_column = _Growable(np.int32, -1)  # vector_rows.row -> key code
        self._row_index = _Growable(np.int64, -1)  # vector_rows.row -> index in its column
        self._last_vector_row = 0
        self._vector_position = 0  # vector deaths up to here are in the columns
        self._nodes: dict[tuple[str, str], int] = {}
        self._node_keys: list[tuple[str, str]] = []
        self._slot_node = _Growable(np.int64, -1)  # slot -> node of its document key
        self._graphs: dict[str, GraphColumn] = {}
        self._live_cache: dict[int, npt.NDArray[np.int64]] = {}
        self._memo = Memo(COLUMN_MEMO_SIZE)
        self.arrays = ArrayMemo(IMPACT_MEMO_BYTES)
        self._snapshot_position: int | None = None  # -1: tried, none usable
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
        return self._memo.get(key, compute)

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
        """Load every slot, death and posting the snapshot of ``conn`` holds beyond memory.

        Empty full-history columns first try the file's column snapshot
        (``cairn.index.snapshot``): arrays built at some position P <= ``position``,
        mapped with numpy; the rows after P are then caught up as usual. A missing,
        stale or invalid snapshot is ignored and everything is loaded from the rows.
        """
        with self._lock:
            if position <= self.position:
                return
            first_load = self.position == 0  # from the rows, or a snapshot and the rows
            if self.position == 0 and self.horizon == 0 and self._snapshot_position is None:
                self._snapshot_position = -1  # tried once per generation
                found = read_snapshot(conn, position)
                if found is not None:
                    try:
                        restored = Columns()
                        restored._restore(*found)
                        restored._check()
                    except (ValueError, KeyError, TypeError, IndexError):
                        pass  # inconsistent arrays: ignored, everything loads from rows
                    else:
                        # Vectors are not in the snapshot: their blocks load as fast.
                        self._adopt(restored)
            with self._loading():
                self._load_slots(conn)
                self._load_deaths(conn)
                if first_load:
                    self._verify_live_slots(conn, position)
                self._load_terms(conn)
                if self._text_on:
                    self._load_text(conn, len(self._ids) - 1)
                if self.vectors:
                    self._load_vectors(conn)
                    self._load_vector_deaths(conn)
            self._last_slot = len(self._ids) - 1
            self._last_vector_row = max(self._last_vector_row, _max_row(conn))
            self.position = self._vector_position = position

    @property
    def snapshot_position(self) -> int | None:
        """The position these columns were restored from a snapshot at, or None."""
        found = self._snapshot_position
        return None if found is None or found < 0 else found

    def export(self) -> tuple[dict[str, Any], dict[str, npt.NDArray[Any]]]:
        """``(scalars, arrays)`` of everything caught up, for a snapshot at ``position``.

        Only full-history columns (horizon 0) without loaded graphs can be exported
        (``ValueError`` otherwise): the snapshot holds slots, text and vectors.
        """
        with self._lock:
            if self.horizon or self._graphs:
                raise ValueError("only fresh full-history columns can be exported")
            if not self._text_on or self._text_slot != self._last_slot:
                raise ValueError("the text postings are not loaded")
            if sorted(self._terms.values()) != list(range(1, len(self._terms) + 1)):
                raise ValueError("term ids are not contiguous")
            arrays: dict[str, npt.NDArray[Any]] = {
                "slots.collection": self._collection.view(),
                "slots.birth": self._birth.view(),
                "slots.death": self._death.view(),
                "slots.owner": self._owner.view(),
                "slots.project": self._project.view(),
                "slots.node": self._slot_node.view(),
                "ids": _pack_strings(self._ids),
                "codes": _pack_strings(sorted(self._codes, key=self._codes.__getitem__)),
                "terms": _pack_strings(sorted(self._terms, key=self._terms.__getitem__)),
                "nodes.collection": _pack_strings([key[0] for key in self._node_keys]),
                "nodes.id": _pack_strings([key[1] for key in self._node_keys]),
            }
            text_keys = sorted(self._text)
            for index, key in enumerate(text_keys):
                for name, array in self._text[key].export().items():
                    arrays[f"text.{index}.{name}"] = array
            scalars: dict[str, Any] = {
                "position": self.position,
                "last_slot": self._last_slot,
                "counts": {
                    "ids": len(self._ids),
                    "codes": len(self._codes),
                    "terms": len(self._terms),
                    "nodes": len(self._node_keys),
                },
                "text": [list(key) for key in text_keys],
            }
            return scalars, arrays

    def _restore(self, scalars: Mapping[str, Any], arrays: Mapping[str, npt.NDArray[Any]]) -> None:
        """Take the state of a snapshot (call under the lock, on empty columns)."""
        counts = scalars["counts"]
        self._collection = _Growable.of(arrays["slots.collection"], np.int32, -1)
        self._birth = _Growable.of(arrays["slots.birth"], np.int64, ALIVE)
        self._death = _Growable.of(arrays["slots.death"], np.int64, ALIVE)
        self._owner = _Growable.of(arrays["slots.owner"], np.int32, 0)
        self._project = _Growable.of(arrays["slots.project"], np.int32, 0)
        self._slot_node = _Growable.of(arrays["slots.node"], np.int64, -1)
        self._ids = _unpack_strings(arrays["ids"], counts["ids"])
        codes = _unpack_strings(arrays["codes"], counts["codes"])
        self._codes = {name: code for code, name in enumerate(codes, start=1)}
        terms = _unpack_strings(arrays["terms"], counts["terms"])
        self._terms = {term: term_id for term_id, term in enumerate(terms, start=1)}
        self._node_keys = list(
            zip(
                _unpack_strings(arrays["nodes.collection"], counts["nodes"]),
                _unpack_strings(arrays["nodes.id"], counts["nodes"]),
                strict=True,
            )
        )
        self._nodes = dict(zip(self._node_keys, range(len(self._node_keys)), strict=True))
        self._text = {}
        for index, (collection, field) in enumerate(scalars["text"]):
            prefix = f"text.{index}."
            parts = {k[len(prefix) :]: v for k, v in arrays.items() if k.startswith(prefix)}
            self._text[(collection, field)] = _TextField.restored(parts)
        self._last_slot = int(scalars["last_slot"])
        self._text_on = True  # the snapshot's postings are whole up to its last slot
        self._text_slot = self._last_slot
        self.position = int(scalars["position"])
        self._snapshot_position = self.position

    def _check(self) -> None:
        """``ValueError`` unless the restored arrays fit together."""
        size = len(self._ids)
        if size != self._last_slot + 1 or size < 1:
            raise ValueError("slot count")
        for column in (self._collection, self._birth, self._death, self._owner, self._project):
            if column.size != size:
                raise ValueError("slot column size")
        nodes: npt.NDArray[np.int64] = self._slot_node.view()  # type: ignore[assignment]
        if self._slot_node.size != size or (size > 1 and int(nodes[1:].max()) >= len(self._nodes)):
            raise ValueError("slot nodes")
        if len(self._nodes) != len(self._node_keys):
            raise ValueError("node keys are not unique")
        for field in self._text.values():
            if field.lengths.size > size:
                raise ValueError("text lengths")
            if field._base is not None:
                slots, counts, firsts = field._base
                bounds = field._bounds
                if len(bounds) != len(firsts) + 1 or bounds[0] != 0 or bounds[-1] != len(slots):
                    raise ValueError("posting bounds")
                if len(counts) != len(slots) or np.any(np.diff(bounds) <= 0):
                    raise ValueError("posting sizes")
                if len(slots) and (int(slots.min()) < 1 or int(slots.max()) >= size):
                    raise ValueError("posting slots")
        rows = self._row_column.size
        if self._row_index.size != rows or rows > self._last_vector_row + 1:
            raise ValueError("vector row map")
        for vectors in self._vectors.values():
            count = vectors.matrix.size
            if any(part.size != count for part in vectors.parts()):
                raise ValueError("vector column sizes")
            bound = vectors.slots.view()
            if count and (int(bound.min()) < 1 or int(bound.max()) >= size):
                raise ValueError("vector slots")

    @contextmanager
    def _loading(self) -> Iterator[None]:
        """A load step (under the lock): a failure drops what it half did (``_forget``);
        an SQLite or decoding error is named as the damage it is."""
        try:
            yield
        except (sqlite3.Error, ValueError) as exc:
            self._forget()
            raise CorruptionError(f"cannot load the in-memory columns: {exc}") from exc
        except BaseException:
            self._forget()
            raise

    def _forget(self) -> None:
        """Drop a half-done load (call under the lock): the next read loads again from
        nothing and meets the same error, never a half-loaded state's consequences."""
        self._adopt(Columns(self.horizon, vectors=self.vectors))

    def _adopt(self, other: Columns) -> None:
        """Take ``other``'s state (call under the lock; locks and memos stay ours)."""
        keep = {"_lock", "_memo", "arrays", "vectors"}
        for name, value in vars(other).items():
            if name not in keep:
                setattr(self, name, value)

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

    def _verify_live_slots(self, conn: sqlite3.Connection, position: int) -> None:
        """Hold the slots alive at ``position`` to the live documents (first load only).

        Slots decide which document every search hit and walk names, and the row policy
        of every hit; they carry no checksum of their own, so a first load checks them
        against the documents table (one pass, about 20 ms for 19k documents): the live
        slots must be exactly the live documents' slots, with the same collection, ID,
        owner and project. A damaged slot key, owner, death or document slot then reads
        as ``CorruptionError``, never as a hit on a document that is not there, a
        document that silently drops out, or a hit shown to the wrong principal.
        """
        live: dict[int, tuple[str, str, str | None, str | None]] = {
            int(slot): (collection, doc_id, owner, project)
            for slot, collection, doc_id, owner, project in conn.execute(
                "SELECT slot, collection, id, owner, project FROM documents NOT INDEXED "
                "WHERE deleted = 0"
            )
        }
        birth: npt.NDArray[np.int64] = self._birth.view()  # type: ignore[assignment]
        death: npt.NDArray[np.int64] = self._death.view()  # type: ignore[assignment]
        alive = np.flatnonzero((birth <= position) & (death > position)).tolist()
        names: dict[int, str | None] = {code: name for name, code in self._codes.items()}
        names[0] = None
        collections = self._collection.view()
        owners, projects = self._owner.view(), self._project.view()
        for slot in alive:
            found = live.pop(slot, None)
            held = (
                names.get(int(collections[slot])),
                self._ids[slot],
                names.get(int(owners[slot]), ""),
                names.get(int(projects[slot]), ""),
            )
            if found != held:
                raise CorruptionError(
                    f"slot {slot} is damaged: it does not name the live document that holds "
                    "it (restore a backup, or re-run the load or `cairn index --force` that "
                    "wrote it)",
                    details={"table": "slots", "slot": slot},
                )
        if live:
            slot, (collection, doc_id, _, _) = min(live.items())
            raise CorruptionError(
                f"document {collection}/{doc_id} is damaged: its slot {slot} is not alive "
                "(restore a backup, or re-run the load or `cairn index --force` that wrote it)",
                details={"table": "documents", "collection": collection, "id": doc_id},
            )

    def _load_terms(self, conn: sqlite3.Connection) -> None:
        known = len(self._terms)
        for term_id, term in conn.execute(
            "SELECT id, term FROM terms WHERE id > ? ORDER BY id", (known,)
        ):
            self._terms[term] = term_id

    def ensure_text(self, conn: sqlite3.Connection) -> None:
        """Load the postings of every slot the snapshot of ``conn`` holds that are not in
        memory yet, and keep them loaded with every later catch-up.

        ``conn`` must be a cut's own connection: a cut at position P only ever ranks
        slots born at or before P, and its snapshot holds them all. Slots these columns
        know beyond that snapshot (another cut caught them up) are loaded by the next
        call whose snapshot holds them.
        """
        with self._lock:
            self._text_on = True
            known = len(self._ids) - 1
            if self._text_slot >= known:
                return
            row = conn.execute("SELECT max(slot) FROM slots").fetchone()
            top = min(known, int(row[0] or 0))
            if top <= self._text_slot:
                return
            with self._loading():
                self._load_text(conn, top)

    def _load_text(self, conn: sqlite3.Connection, top: int) -> None:
        """Add the postings of the slots after ``_text_slot`` up to ``top``.

        A first load (no text yet) groups them by term in two passes over the rows
        (``cairn.index.postings``: final arrays plus one batch in memory); later
        catch-ups are small and go to the per-term tails, read ``TEXT_LOAD_ROWS`` rows
        at a time.
        """
        bounds = (self._text_slot, top, self.horizon)
        if not self._text:
            where = "d.slot > ? AND d.slot <= ? AND (s.death IS NULL OR s.death > ?)"
            for key, grouped in grouped_fields(conn, where, bounds).items():
                self._text[key] = _TextField.grouped(grouped)
            self._text_slot = top
            return
        cursor = conn.execute(
            "SELECT d.slot, s.collection, d.field, d.length, d.term_ids, d.counts, d.checksum "
            "FROM doc_terms AS d JOIN slots AS s ON s.slot = d.slot "
            "WHERE d.slot > ? AND d.slot <= ? AND (s.death IS NULL OR s.death > ?) "
            "ORDER BY s.collection, d.field, d.slot",
            bounds,
        )
        packed: dict[tuple[str, str], list[_Packed]] = {}
        top_term = top_term_id(conn)
        while rows := cursor.fetchmany(TEXT_LOAD_ROWS):
            for key, items in itertools.groupby(rows, key=_text_key):
                packed.setdefault(key, []).append(_unpack(key, list(items), top_term))
            del rows
        for key, parts in packed.items():
            self._text.setdefault(key, _TextField()).add(*_joined(parts))
        self._text_slot = top

    def _load_vectors(self, conn: sqlite3.Connection) -> None:
        """Append the vector rows stored after the last loaded one, a block at a time
        (``cairn.store.vectorstore``): only the rows a reader at or after the horizon
        can see are kept."""
        meta = conn.execute(
            "SELECT v.row, v.space, v.slot, v.birth FROM vector_rows AS v "
            "JOIN slots AS s ON s.slot = v.slot WHERE v.row > ? "
            "AND (v.death IS NULL OR v.death > ?) AND (s.death IS NULL OR s.death > ?) "
            "ORDER BY v.row",
            (self._last_vector_row, self.horizon, self.horizon),
        ).fetchall()
        if not meta:
            return
        wanted = np.asarray(meta, dtype=np.int64)
        numbers, row_spaces = wanted[:, 0], wanted[:, 1]
        if np.any(np.diff(numbers) <= 0) or any(type(row[0]) is not int for row in meta):
            raise CorruptionError("vector rows are damaged: their numbers are not whole and unique")
        known = spaces(conn)
        loaded = np.zeros(len(numbers), dtype=np.bool_)
        # Consecutive blocks of one key are appended together: a history of single-row
        # writes is thousands of one-row blocks, and each append has a fixed cost.
        run: list[tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]] = []
        run_key: VectorKey | None = None
        run_dimension = run_rows = 0
        for block in iter_blocks(conn, self._last_vector_row, known):
            count = len(block.matrix)
            begin, end = np.searchsorted(numbers, [block.first, block.first + count])
            if begin == end:
                continue
            if np.any(row_spaces[begin:end] != block.space):
                raise CorruptionError(f"vector block {block.first} and its rows disagree")
            stored = known[block.space]
            key: VectorKey = (stored.collection, stored.field, stored.space)
            if run_key is not None and (key != run_key or run_rows >= VECTOR_LOAD_RUN_ROWS):
                self._append_vectors(run_key, run_dimension, run)
                run, run_rows = [], 0
            run_key, run_dimension = key, stored.dimension
            picked = wanted[begin:end]
            run.append((block.matrix[picked[:, 0] - block.first], picked))
            run_rows += len(picked)
            loaded[begin:end] = True
        if run_key is not None:
            self._append_vectors(run_key, run_dimension, run)
        if not loaded.all():
            missing = int(numbers[np.argmin(loaded)])
            raise CorruptionError(f"vector row {missing} has no stored values")
        self._last_vector_row = int(numbers[-1])

    def _append_vectors(
        self,
        key: VectorKey,
        dimension: int,
        run: list[tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]],
    ) -> None:
        """Append the picked rows of a run of blocks of ``key`` (each ``(values, meta)``,
        meta rows ``(row, space, slot, birth)``) to its column in one step."""
        column = self._vectors.get(key)
        if column is None:
            column = _VectorColumn(dimension)
            self._vectors[key] = column
            self._vector_key_codes[key] = len(self._vector_keys)
            self._vector_keys.append(key)
        values = run[0][0] if len(run) == 1 else np.concatenate([part[0] for part in run])
        picked = run[0][1] if len(run) == 1 else np.concatenate([part[1] for part in run])
        first = column.extend(values, picked[:, 2].copy(), picked[:, 3].copy())
        row_ids = picked[:, 0]
        self._row_column.put(row_ids, self._vector_key_codes[key])
        self._row_index.put(row_ids, np.arange(first, first + len(picked), dtype=np.int64))

    def _load_vector_deaths(self, conn: sqlite3.Connection) -> None:
        rows = conn.execute(
            "SELECT row, death FROM vector_rows WHERE death > ?",
            (max(self._vector_position, self.horizon),),
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


def _compact(values: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """``values`` in the smallest unsigned integer type that holds them exactly (term
    counts are mostly below 256: a quarter of the bytes to store, read and checksum)."""
    if len(values) == 0 or values.min() < 0:
        return values
    kind = narrowest(int(values.max()))
    if kind is np.int64 or values.dtype == kind:
        return values  # too wide to narrow, or already the narrowest: no copy
    compact = values.astype(kind)
    return compact if np.array_equal(compact, values) else values


def _pack_strings(strings: Sequence[str]) -> npt.NDArray[np.uint8]:
    """Strings as UTF-8 bytes joined by NUL (identifiers and terms hold no NUL)."""
    return np.frombuffer("\x00".join(strings).encode("utf-8"), dtype=np.uint8)


def _unpack_strings(data: npt.NDArray[Any], count: int) -> list[str]:
    """The ``count`` strings ``_pack_strings`` joined (``ValueError`` if the count differs)."""
    if count == 0:
        if len(data):
            raise ValueError("a packed string list has the wrong count")
        return []
    found = bytes(data).decode("utf-8").split("\x00")
    if len(found) != count:
        raise ValueError("a packed string list has the wrong count")
    return found


def _max_row(conn: sqlite3.Connection) -> int:
    """The highest vector row in the snapshot (skipped rows are never loaded later)."""
    row = conn.execute("SELECT max(row) FROM vector_rows").fetchone()
    return int(row[0] or 0)


class _Packed(NamedTuple):
    """``doc_terms`` rows as flat arrays: per row its slot and length, per posting its
    term, slot and count (32-bit, as stored)."""

    slots: npt.NDArray[np.int64]
    lengths: npt.NDArray[np.float64]
    terms: npt.NDArray[np.uint32]
    term_slots: npt.NDArray[Any]  # uint32 while slot numbers fit, else int64
    counts: npt.NDArray[np.uint32]


def _joined(parts: list[_Packed]) -> _Packed:
    """The parts of one field as one ``_Packed``, array by array."""
    if len(parts) == 1:
        return parts[0]
    return _Packed(*(np.concatenate(column) for column in zip(*parts, strict=True)))


def _text_key(row: tuple[Any, ...]) -> tuple[str, str]:
    return row[1], row[2]


_CATCH_UP = RowLayout(slot=0, length=3, terms=4, counts=5, checksum=6)
"""The catch-up's ``doc_terms`` rows: slot, collection, field, length, arrays, checksum."""


def _unpack(key: tuple[str, str], listed: list[tuple[Any, ...]], top_term: int) -> _Packed:
    """Concatenate packed ``doc_terms`` rows into flat arrays with one numpy pass each
    (``CorruptionError`` if they cannot be postings: ``postings.checked_postings``)."""
    slots = np.asarray([item[0] for item in listed], dtype=np.int64)
    lengths = np.asarray([item[3] for item in listed], dtype=np.float64)
    found_terms, found_counts = checked_postings(key, listed, _CATCH_UP, top_term)
    terms = found_terms.astype(np.uint32)
    counts = found_counts.astype(np.uint32)
    sizes = np.asarray([len(item[4]) // 4 for item in listed], dtype=np.int64)
    narrow = len(slots) == 0 or int(slots.max()) <= _MAX_UINT32
    posting_slots = slots.astype(np.uint32) if narrow else slots
    return _Packed(slots, lengths, terms, np.repeat(posting_slots, sizes), counts)


_MAX_UINT32 = 2**32 - 1
