"""The exact vector branch: cosine, dot or euclidean over the live vectors of one space.

A query only sees vectors of the exact same ``VectorSpace`` (id, dimension, metric,
model, version) that are bound to the current revision of a live document; stale
vectors (written for an older revision) are ignored. Row policy and allowed IDs mask
candidates before ranking; ties break by document ID.

The scan runs over the in-memory float32 matrix of ``(collection, field, space)``
(``cairn.index.columns``) viewed at the cut: a row counts iff it and the slot (document
revision) it is bound to are alive at the cut's position, the row is visible to the
principal and allowed. Scores are float64 (cosine: a float32 scan with a proven error
bound picks the rows whose float64 score matters); the best ``limit`` are chosen with
``argpartition`` (keeping every tie at the boundary) and ordered by score, then ID.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from cairn.canonical import canonical_bytes
from cairn.errors import PermissionDeniedError, ValidationError
from cairn.index.columns import Halves, Quantized, VectorColumnView
from cairn.index.cut import IndexCut
from cairn.index.halves import half_bound, half_kernel_ready, half_query, half_scan
from cairn.index.limits import (
    COSINE_ERROR_FACTOR,
    HALF_SCAN_MIN_ROWS,
    PARALLEL_GATHER_MIN_ROWS,
    QUANTIZED_SCAN_MIN_ROWS,
    SCAN_MAX_MAGNITUDE,
    SCAN_MIN_MAGNITUDE,
    SIMILARITY_CHUNK,
)
from cairn.index.masks import visible_everything, visible_mask
from cairn.index.quantized import (
    encode_query,
    int8_kernel_ready,
    quantized_bound,
    quantized_scan,
)
from cairn.index.ranking import ApproxRanking, Refine, SlotRanking
from cairn.index.scanning import Meanwhile, Once, split_rows
from cairn.store.apply import vector_pointer
from cairn.store.commands import EntityRef, Metric, VectorSpace
from cairn.store.limits import MAX_VECTOR_VALUE, SQLITE_PARAMETER_BATCH, check_identifier
from cairn.store.policy import Capability, field_allowed
from cairn.store.reads import field_policies, require_collection

_Value = TypeVar("_Value", bound=np.generic)
_Copy = TypeVar("_Copy", Halves, Quantized)

__all__ = ["VectorHit", "cosine", "similarity", "vector_branch", "vector_ranking"]


@dataclass(frozen=True, slots=True)
class VectorHit:
    """One ranked vector hit: one-based rank and the metric's native score."""

    ref: EntityRef
    rank: int
    score: float


def similarity(
    metric: Metric, matrix: npt.NDArray[np.float64], query: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    """Higher-is-better scores: cosine similarity, dot product, or negated L2 distance.

    Each row's score depends on that row and the query only (row-wise reductions, no
    BLAS blocking), so the same vector always gets the same float64 score.
    """
    if metric is Metric.DOT:
        result: npt.NDArray[np.float64] = (matrix * query).sum(axis=1)
        return result
    if metric is Metric.EUCLIDEAN:
        distance: npt.NDArray[np.float64] = np.linalg.norm(matrix - query, axis=1)
        return -distance
    return cosine(matrix, query, float(np.linalg.norm(query)))


def cosine(
    matrix: npt.NDArray[np.float64], query: npt.NDArray[np.float64], query_norm: float
) -> npt.NDArray[np.float64]:
    """Cosine similarity of each row with ``query`` whose L2 norm is ``query_norm``.

    ``similarity`` for cosine, with the query's norm computed once per query by the
    caller (same operations, so the same float64 scores); 0 for a zero row or query.
    """
    norms = np.linalg.norm(matrix, axis=1) * query_norm
    dots = (matrix * query).sum(axis=1)
    found = np.zeros(len(dots), dtype=np.float64)
    np.divide(dots, norms, out=found, where=norms > 0)
    return found


def _named(space: VectorSpace) -> str:
    return (
        f"{space.id!r} ({space.model} {space.version}, {space.dimension} dimensions, "
        f"{space.metric.value})"
    )


def _check_vector_field(
    cut: IndexCut, collection: str, field: str, vector: Sequence[float], space: VectorSpace
) -> npt.NDArray[np.float64]:
    """The vector branch's admission; returns the query as float64."""
    check_identifier(collection, "collection")
    check_identifier(field, "vector field")
    space.validate()
    config = require_collection(cut, collection, Capability.VECTOR_SEARCH)
    declared = {item.name: item.space for item in config.vector_fields}
    if field not in declared:
        raise ValidationError(f"collection {collection!r} has no vector field {field!r}")
    if space != declared[field]:
        # Every stored vector of the field is in its declared space: a query from another
        # embedder would be compared with nothing (or with the wrong vectors).
        wanted = declared[field]
        raise ValidationError(
            f"the query vector is in space {_named(space)}, but {collection!r} field "
            f"{field!r} holds vectors of {_named(wanted)}: embed the query with that "
            "embedder (or ask the database to: embed)",
            details={"field": "space", "expected": wanted.to_json(), "got": space.to_json()},
        )
    policies = field_policies(cut, collection)
    pointer = vector_pointer(field)
    if not field_allowed(cut.principal, cut.database, collection, policies, pointer, "use"):
        raise PermissionDeniedError(
            f"principal {cut.principal.id!r} may not use field {pointer} of {collection!r}",
            details={"principal": cut.principal.id, "resource": collection, "field": pointer},
        )
    query = np.asarray(vector, dtype=np.float64)
    if (
        query.shape != (space.dimension,)
        or not np.all(np.isfinite(query))
        or np.any(np.abs(query) > MAX_VECTOR_VALUE)
    ):
        raise ValidationError(
            f"the query vector needs {space.dimension} finite values within "
            f"±{MAX_VECTOR_VALUE} (vectors are float32)",
            details={"dimension": space.dimension},
        )
    return query


def _live_rows(
    cut: IndexCut, collection: str, key: bytes, column: VectorColumnView
) -> npt.NDArray[np.bool_]:
    """Rows alive at the cut whose slot is a live document of the collection (memoised)."""
    view = cut.columns

    def compute() -> npt.NDArray[np.bool_]:
        documents = view.alive(collection)
        slots = column.slots
        inside = slots < len(documents)
        mask = column.alive(cut.position) & inside
        mask[inside] &= documents[slots[inside]]
        mask.flags.writeable = False
        return mask

    found: npt.NDArray[np.bool_] = view.memo(
        ("vector-rows", collection, key, len(column.slots), cut.position), compute
    )
    return found


def _live_row_indexes(
    cut: IndexCut, collection: str, key: bytes, column: VectorColumnView
) -> npt.NDArray[np.intp]:
    """The indexes of ``_live_rows`` (memoised alike: every unmasked search reads them)."""

    def compute() -> npt.NDArray[np.intp]:
        rows = np.flatnonzero(_live_rows(cut, collection, key, column))
        rows.flags.writeable = False
        return rows

    found: npt.NDArray[np.intp] = cut.columns.memo(
        ("vector-row-indexes", collection, key, len(column.slots), cut.position), compute
    )
    return found


def _live_row_of_slot(
    cut: IndexCut, collection: str, key: bytes, column: VectorColumnView
) -> npt.NDArray[np.intp] | None:
    """Per slot, its row alive at the cut (-1: none), memoised like ``_live_rows``.

    Lets a narrow ``allowed`` mask pick its rows without a pass over every row. None
    when some slot has two live rows (the replaced row's death not caught up yet):
    then the caller masks every row instead.
    """

    def compute() -> npt.NDArray[np.intp] | None:
        rows = np.flatnonzero(_live_rows(cut, collection, key, column))
        owners = column.slots[rows]
        top = int(owners.max()) + 1 if len(owners) else 0
        row_of = np.full(top, -1, dtype=np.intp)
        row_of[owners] = rows
        if np.count_nonzero(row_of >= 0) != len(rows):
            return None
        row_of.flags.writeable = False
        return row_of

    found: npt.NDArray[np.intp] | None = cut.columns.memo(
        ("vector-row-of-slot", collection, key, len(column.slots), cut.position), compute
    )
    return found


def vector_ranking(
    cut: IndexCut,
    collection: str,
    field: str,
    vector: Sequence[float],
    space: VectorSpace,
    *,
    allowed: npt.NDArray[np.bool_] | None = None,
    deep: bool = False,
    meanwhile: Meanwhile | None = None,
) -> SlotRanking:
    """The complete exact ranking of the vector branch; masks applied before ranking.

    Cosine ranks by exact float64 scores, computed only where an approximate scan with
    a proven error bound cannot place a row. Over fewer than ``QUANTIZED_SCAN_MIN_ROWS``
    rows the scan reads the float32 rows (error at most ``COSINE_ERROR_FACTOR * (d + 3)
    * 2**-24`` of ``|row| * |query|``: each product and sum of a ``d``-term float32 dot
    product, plus rounding the query). Above it, a vector-only search reads the int8
    unit rows (a quarter of the bytes; error ``quantized_bound``, ~600x wider). ``deep``
    says the caller will read ranks far below the top (fusion with other branches):
    each such rank resolves a band of near-equal scores, which the int8 bound makes
    thousands of rows wide, so a deep ranking over at least ``HALF_SCAN_MIN_ROWS`` rows
    reads the float16 unit rows instead (half the bytes; ``half_bound``, ~15x wider
    than float32: a few hundred rows a band). Either compact copy has the float32 rows
    as a tighter refinement, and until a copy is derived the float32 rows serve. Every
    way the ranking is the same. Dot products and euclidean distances come from the
    float32 scan (bounds in ``_scanned_ranking``).

    ``meanwhile`` runs once on this thread while the scan threads start on the rows
    (``split_rows``): the caller's other work overlaps the scan. If the ranking fails
    first, ``meanwhile`` still runs before the error is raised, and its own error
    comes first, as if it had run before.
    """
    once = Once(meanwhile)
    try:
        ranking = _vector_ranking(cut, collection, field, vector, space, allowed, deep, once)
    except BaseException:
        once()
        raise
    once()
    return ranking


def _vector_ranking(
    cut: IndexCut,
    collection: str,
    field: str,
    vector: Sequence[float],
    space: VectorSpace,
    allowed: npt.NDArray[np.bool_] | None,
    deep: bool,
    meanwhile: Once,
) -> SlotRanking:
    """``vector_ranking``, calling ``meanwhile`` at most once (from the scan)."""
    query = _check_vector_field(cut, collection, field, vector, space)
    view = cut.columns
    key = canonical_bytes(space.to_json())
    column = view.vector_column(collection, field, key)
    if column is None:
        return SlotRanking(np.empty(0, np.int64), np.empty(0, np.float64), view.ids)
    slots = column.slots
    size = len(view.alive(collection))
    restricted = not visible_everything(cut, collection)
    row_of = None if allowed is None else _live_row_of_slot(cut, collection, key, column)
    if allowed is not None and row_of is not None:
        wanted = np.flatnonzero(allowed[: min(size, len(row_of))])
        rows = row_of[wanted]
        rows = np.sort(rows[rows >= 0])
        if restricted:
            rows = rows[visible_mask(cut, collection, size)[slots[rows]]]
    else:
        mask = _live_rows(cut, collection, key, column)
        if restricted or allowed is not None:
            mask = mask.copy()
            inside = slots < size
            if restricted:
                mask[inside] &= visible_mask(cut, collection, size)[slots[inside]]
            if allowed is not None:
                mask[inside] &= allowed[slots[inside]]
            rows = np.flatnonzero(mask)
        else:
            rows = _live_row_indexes(cut, collection, key, column)
    ascending = _slots_ascending(cut, collection, key, column)
    smallest, largest = _norm_range(cut, collection, key, column)
    magnitude = float(np.linalg.norm(query))
    if space.metric is not Metric.COSINE:
        # Underflow only costs an absolute error the bounds include; overflow is fatal.
        if max(largest * magnitude, magnitude) > SCAN_MAX_MAGNITUDE:
            scores = _chunked_similarity(space.metric, column.matrix, rows, query)
            return SlotRanking(slots[rows], scores, view.ids)
        return _scanned_ranking(
            cut, column, rows, query, magnitude, space.metric, largest, ascending, meanwhile
        )
    # Cosine scans the query's unit vector: products stay below the row norms.
    floats = None
    if _float32_holds(largest, SCAN_MIN_MAGNITUDE if smallest == 0 else smallest):
        inverse = _inverse_norms(cut, collection, key, column)
        floats = _Float32Cosine(column, query, magnitude, inverse)
    refine: Refine | None = None
    compact = _compact_cosines(cut, collection, key, column, rows, query, deep, meanwhile)
    if compact is not None:
        approx, eps = compact
        if floats is not None:
            refine = _refinement(floats, rows)
    elif floats is not None:
        approx, eps = floats.of(rows, meanwhile), floats.eps
    else:
        scores = _chunked_similarity(Metric.COSINE, column.matrix, rows, query)
        return SlotRanking(slots[rows], scores, view.ids)
    return _metric_ranking(
        cut, column, rows, query, magnitude, Metric.COSINE, approx, eps, ascending, refine=refine
    )


def _compact_cosines(
    cut: IndexCut,
    collection: str,
    key: bytes,
    column: VectorColumnView,
    rows: npt.NDArray[np.intp],
    query: npt.NDArray[np.float64],
    deep: bool,
    meanwhile: Meanwhile,
) -> tuple[npt.NDArray[np.float64], float] | None:
    """Cosines of ``rows`` from a compact copy of the unit rows (float16 when ``deep``,
    else int8) and their bound; None when the rows are too few for it to pay, the
    kernel is missing or the copy is still being derived (then the float32 rows serve).
    """
    if deep:
        halves = _usable(len(rows), HALF_SCAN_MIN_ROWS, half_kernel_ready, column.halves)
        if halves is None:
            return None
        worst = _max_residual(cut, collection, key, "half", halves.residuals)
        return _half_cosines(halves, rows, query, worst, meanwhile)
    coded = _usable(len(rows), QUANTIZED_SCAN_MIN_ROWS, int8_kernel_ready, column.quantized)
    if coded is None:
        return None
    worst = _max_residual(cut, collection, key, "int8", coded.residuals)
    return _quantized_cosines(coded, rows, query, worst, meanwhile)


def _usable(
    count: int, minimum: int, ready: Callable[[], object], derived: Callable[[], _Copy | None]
) -> _Copy | None:
    """A compact copy for a scan of ``count`` rows: None below ``minimum`` rows (it does
    not pay), without a checked kernel, or while a background thread derives it."""
    if count < minimum or ready() is None:
        return None
    return derived()


def _refinement(floats: _Float32Cosine, rows: npt.NDArray[np.intp]) -> Refine:
    """Float32 cosines of candidates (indexes into ``rows``): the compact scans' refinement."""

    def refine(index: npt.NDArray[np.intp]) -> tuple[npt.NDArray[np.float64], float]:
        return floats.of(rows[index]), floats.eps

    return refine


def _float32_holds(largest: float, smallest: float) -> bool:
    """Whether float32 products of magnitudes in ``[smallest, largest]`` keep their bound.

    Above ``SCAN_MAX_MAGNITUDE`` a float32 sum could overflow; below
    ``SCAN_MIN_MAGNITUDE`` products underflow, so a relative bound would not hold.
    Outside, the branch scores every row in float64 instead.
    """
    return largest <= SCAN_MAX_MAGNITUDE and smallest >= SCAN_MIN_MAGNITUDE


def scan(
    matrix: npt.NDArray[np.float32],
    query: npt.NDArray[np.float32],
    meanwhile: Meanwhile | None = None,
    rows: npt.NDArray[np.intp] | None = None,
) -> npt.NDArray[np.float32]:
    """``matrix @ query``, split by rows across the scan threads when it is large
    (``split_rows``); with ``rows``, ``matrix[rows] @ query``, each range of ``rows``
    gathered by the thread that multiplies it (the gathers release the GIL: a few
    thousand scattered rows are gathered ~1.3x faster on two threads, so such scans
    split from ``PARALLEL_GATHER_MIN_ROWS``).

    A split may round a row's float32 product differently in the last bits; callers use
    these products only within their proven error bound (exact float64 scores decide),
    so the split never changes a ranking or a score.
    """
    product = _Product(query)
    if rows is not None:
        return _gathered_scan(matrix, rows, product, meanwhile, np.float32)
    return _split_scan(matrix, product, meanwhile, np.float32)


def scaled_scan(
    matrix: npt.NDArray[np.float32],
    query: npt.NDArray[np.float32],
    scale: npt.NDArray[np.float64],
    meanwhile: Meanwhile | None = None,
) -> npt.NDArray[np.float64]:
    """``scan`` with each row's product times ``scale[row]`` in float64, done by the
    thread that scanned the range while it is still in cache (``scale`` per row)."""
    out = np.empty(len(matrix), dtype=np.float64)
    dots = np.empty(len(matrix), dtype=np.float32)

    def kernel(begin: int, end: int) -> None:
        np.matmul(matrix[begin:end], query, out=dots[begin:end])
        np.multiply(dots[begin:end], scale[begin:end], out=out[begin:end])

    split_rows(len(matrix), kernel, meanwhile)
    return out


def _inverse_norms(
    cut: IndexCut, collection: str, key: bytes, column: VectorColumnView
) -> npt.NDArray[np.float64]:
    """``1 / |row|`` per row (0 for a zero row), memoised: rows never change once stored."""

    def compute() -> npt.NDArray[np.float64]:
        norms = column.norms
        inverse = np.zeros(len(norms), dtype=np.float64)
        np.divide(1.0, norms, out=inverse, where=norms > 0)
        inverse.flags.writeable = False
        return inverse

    found: npt.NDArray[np.float64] = cut.columns.memo(
        ("vector-inverse-norms", collection, key, len(column.norms)), compute
    )
    return found


class _Float32Cosine:
    """Cosines from float32 dot products, within ``COSINE_ERROR_FACTOR * (d + 3) * 2**-24``.

    The approximation is ``dot32(row, unit query) * (1 / |row|)`` in float64: a few
    float64 roundings on top of the float32 dot product, far inside the bound. The
    bound holds for any order of the float32 sum, so any split or BLAS blocking, while
    row norms stay within ``SCAN_MIN_MAGNITUDE``..``SCAN_MAX_MAGNITUDE`` (checked by
    the caller).
    """

    def __init__(
        self,
        column: VectorColumnView,
        query: npt.NDArray[np.float64],
        norm: float,
        inverse: npt.NDArray[np.float64],
    ) -> None:
        self.matrix = column.matrix
        self.inverse = inverse
        self.query = (query / norm if norm > 0 else query).astype(np.float32)
        self.eps = COSINE_ERROR_FACTOR * (self.matrix.shape[1] + 3) * 2.0**-24

    def of(
        self, rows: npt.NDArray[np.intp], meanwhile: Meanwhile | None = None
    ) -> npt.NDArray[np.float64]:
        """Approximate cosines of ``rows`` (one scan, or a product of the gathered rows)."""
        if len(rows) == len(self.matrix) == len(self.inverse):
            return scaled_scan(self.matrix, self.query, self.inverse, meanwhile)
        dots = _scan_rows(self.matrix, rows, _Product(self.query), meanwhile, np.float32)
        inverse = self.inverse if len(rows) == len(self.inverse) else self.inverse[rows]
        found: npt.NDArray[np.float64] = np.multiply(dots, inverse, dtype=np.float64)
        return found


ScanRange = Callable[[npt.NDArray[Any], npt.NDArray[Any]], object]
"""``(rows, out)``: a row-wise scan of some rows of a matrix into their slice of ``out``."""


@dataclass(frozen=True, slots=True)
class _Product:
    """The float32 scan's ``ScanRange``: each row's product with ``query``."""

    query: npt.NDArray[np.float32]

    def __call__(self, rows: npt.NDArray[np.float32], out: npt.NDArray[np.float32]) -> None:
        np.matmul(rows, self.query, out=out)


def _scan_rows(
    matrix: npt.NDArray[Any],
    rows: npt.NDArray[np.intp],
    scan_range: ScanRange,
    meanwhile: Meanwhile | None,
    dtype: type[_Value],
) -> npt.NDArray[_Value]:
    """``scan_range`` over ``matrix[rows]``: whole when every row counts, whole then picked
    when at least half do (cheaper than gathering), else gathered range by range."""
    if len(rows) == len(matrix):
        return _split_scan(matrix, scan_range, meanwhile, dtype)
    if 2 * len(rows) >= len(matrix):
        return _split_scan(matrix, scan_range, meanwhile, dtype)[rows]
    return _gathered_scan(matrix, rows, scan_range, meanwhile, dtype)


def _split_scan(
    part: npt.NDArray[Any], scan_range: ScanRange, meanwhile: Meanwhile | None, dtype: type[_Value]
) -> npt.NDArray[_Value]:
    """``scan_range`` over every row of ``part`` in ranges split across the scan threads
    (``split_rows``), into one value per row."""
    out: npt.NDArray[_Value] = np.empty(len(part), dtype=dtype)

    def kernel(begin: int, end: int) -> None:
        scan_range(part[begin:end], out[begin:end])

    split_rows(len(part), kernel, meanwhile)
    return out


def _gathered_scan(
    matrix: npt.NDArray[Any],
    rows: npt.NDArray[np.intp],
    scan_range: ScanRange,
    meanwhile: Meanwhile | None,
    dtype: type[_Value],
) -> npt.NDArray[_Value]:
    """``scan_range`` over ``matrix[rows]``, each range of ``rows`` gathered by the thread
    that scans it (numpy's gathers release the GIL), split from
    ``PARALLEL_GATHER_MIN_ROWS`` rows."""
    out: npt.NDArray[_Value] = np.empty(len(rows), dtype=dtype)

    def kernel(begin: int, end: int) -> None:
        scan_range(matrix[rows[begin:end]], out[begin:end])

    split_rows(len(rows), kernel, meanwhile, minimum=PARALLEL_GATHER_MIN_ROWS)
    return out


def _quantized_cosines(
    coded: Quantized,
    rows: npt.NDArray[np.intp],
    query: npt.NDArray[np.float64],
    max_residual: float,
    meanwhile: Meanwhile | None = None,
) -> tuple[npt.NDArray[np.float64], float]:
    """Cosines of ``rows`` from a scan of the int8 unit rows, and ``quantized_bound``."""
    codes, scales, _ = coded
    query_codes, query_scale, query_residual = encode_query(query)

    def scan_range(part: npt.NDArray[np.int8], out: npt.NDArray[np.float64]) -> None:
        quantized_scan(part, query_codes, out)

    dots = _scan_rows(codes, rows, scan_range, meanwhile, np.float64)
    dots *= scales if len(rows) == len(scales) else scales[rows]
    dots *= query_scale
    return dots, quantized_bound(max_residual, query_residual)


def _half_cosines(
    halves: Halves,
    rows: npt.NDArray[np.intp],
    query: npt.NDArray[np.float64],
    max_residual: float,
    meanwhile: Meanwhile | None = None,
) -> tuple[npt.NDArray[np.float64], float]:
    """Cosines of ``rows`` from a scan of the float16 unit rows, and ``half_bound``."""
    units = halves.units
    unit, query_residual = half_query(query)

    def scan_range(part: npt.NDArray[np.float16], out: npt.NDArray[np.float64]) -> None:
        half_scan(part, unit, out)

    cosines = _scan_rows(units, rows, scan_range, meanwhile, np.float64)
    return cosines, half_bound(max_residual, query_residual, units.shape[1])


def _scanned_ranking(
    cut: IndexCut,
    column: VectorColumnView,
    rows: npt.NDArray[np.intp],
    query: npt.NDArray[np.float64],
    magnitude: float,
    metric: Metric,
    largest: float,
    ascending: bool,
    meanwhile: Meanwhile | None = None,
) -> SlotRanking:
    """Dot products or negated distances from a float32 scan with a proven bound; exact
    float64 scores on demand. ``largest`` bounds the row norms; ``magnitude`` is the
    query's.

    Dot: with ``q32`` the query rounded to float32, ``|x.q - fl32(x.q32)| <= e =
    |x| * (|q - q32| + gamma_d |q32|)`` plus what products lose below float32's normal
    range, for any order of the float32 sum (``gamma_d <= (d + 3) * 2**-24``).

    Euclidean: ``|x - q|**2 = |x|**2 - 2 x.q + |q|**2`` is off by at most ``delta = 2 e +
    2**-49 (|x| + |q|)**2`` (the float64 roundings), so the distance by at most
    ``sqrt(delta)`` (``|sqrt(a) - sqrt(b)| <= sqrt(|a - b|)``): wider, but it only decides
    which rows are scored exactly. ``COSINE_ERROR_FACTOR`` adds margin to both.
    """
    dots, drift = _float32_dots(column.matrix, rows, query, meanwhile)
    error = largest * drift + _underflow(column.matrix)
    if metric is Metric.DOT:
        approx, eps = dots, COSINE_ERROR_FACTOR * error
    else:
        norms = column.norms[rows]
        squared = norms * norms - 2.0 * dots + magnitude * magnitude
        approx = -np.sqrt(np.maximum(squared, 0.0))
        delta = 2.0 * error + 2.0**-49 * (largest + magnitude) ** 2
        eps = COSINE_ERROR_FACTOR * float(np.sqrt(delta))
    return _metric_ranking(cut, column, rows, query, magnitude, metric, approx, eps, ascending)


def _underflow(matrix: npt.NDArray[np.float32]) -> float:
    """The most a float32 dot product can lose to products below float32's normal range."""
    return float(matrix.shape[1]) * 2.0**-149


def _chunked_similarity(
    metric: Metric,
    matrix: npt.NDArray[np.float32],
    rows: npt.NDArray[np.intp],
    query: npt.NDArray[np.float64],
) -> npt.NDArray[np.float64]:
    """``similarity`` over ``matrix[rows]`` in float64, a chunk of rows at a time.

    Each score depends on its own row only, so chunks give the same values as one pass,
    without a float64 copy of every row at once.
    """
    scores = np.empty(len(rows), dtype=np.float64)
    for begin in range(0, len(rows), SIMILARITY_CHUNK):
        part = rows[begin : begin + SIMILARITY_CHUNK]
        scores[begin : begin + len(part)] = similarity(
            metric, matrix[part].astype(np.float64), query
        )
    return scores


def _float32_dots(
    matrix: npt.NDArray[np.float32],
    rows: npt.NDArray[np.intp],
    query: npt.NDArray[np.float64],
    meanwhile: Meanwhile | None = None,
) -> tuple[npt.NDArray[np.float64], float]:
    """``rows`` of ``matrix`` times the query by a float32 scan, and the error per unit
    of row norm: ``|q - q32| + gamma_d |q32|``."""
    query32 = query.astype(np.float32)
    dots = _scan_rows(matrix, rows, _Product(query32), meanwhile, np.float32)
    rounded = query32.astype(np.float64)
    gamma = (matrix.shape[1] + 3) * 2.0**-24
    drift = float(np.linalg.norm(query - rounded)) + gamma * float(np.linalg.norm(rounded))
    return dots.astype(np.float64), drift


def _metric_ranking(
    cut: IndexCut,
    column: VectorColumnView,
    rows: npt.NDArray[np.intp],
    query: npt.NDArray[np.float64],
    magnitude: float,
    metric: Metric,
    approx: npt.NDArray[np.float64],
    eps: float,
    ascending: bool,
    *,
    refine: Refine | None = None,
) -> SlotRanking:
    """An ``ApproxRanking`` of ``approx`` whose exact scores are ``similarity`` in float64
    (for cosine, ``cosine`` with the query's norm ``magnitude``: the same values)."""
    matrix = column.matrix

    def exact(index: npt.NDArray[np.intp]) -> npt.NDArray[np.float64]:
        picked = matrix[rows[index]].astype(np.float64)
        if metric is Metric.COSINE:
            return cosine(picked, query, magnitude)
        return similarity(metric, picked, query)

    slots = column.slots[: len(matrix)] if len(rows) == len(matrix) else column.slots[rows]
    return ApproxRanking(
        slots, approx, eps, exact, cut.columns.ids, ascending=ascending, refine=refine
    )


def _norm_range(
    cut: IndexCut, collection: str, key: bytes, column: VectorColumnView
) -> tuple[float, float]:
    """The smallest nonzero and the largest L2 norm of the column's rows (memoised: rows
    never change; ``(0, 0)`` without nonzero rows)."""
    norms = column.norms

    def compute() -> tuple[float, float]:
        nonzero = norms[norms > 0]
        if not len(nonzero):
            return 0.0, 0.0
        return float(nonzero.min()), float(nonzero.max())

    found: tuple[float, float] = cut.columns.memo(
        ("vector-norm-range", collection, key, len(norms)), compute
    )
    return found


def _max_residual(
    cut: IndexCut, collection: str, key: bytes, copy: str, residuals: npt.NDArray[np.float64]
) -> float:
    """The largest residual of the column's rows in a compact ``copy`` (memoised)."""

    def compute() -> float:
        return float(residuals.max()) if len(residuals) else 0.0

    found: float = cut.columns.memo(
        ("vector-max-residual", copy, collection, key, len(residuals)), compute
    )
    return found


def _slots_ascending(cut: IndexCut, collection: str, key: bytes, column: VectorColumnView) -> bool:
    """Whether the column's row slots strictly ascend (memoised: rows are append-only).

    Then the slots of any ascending selection of rows ascend too, and a ranking finds
    slots by binary search instead of building a lookup.
    """
    slots = column.slots

    def compute() -> bool:
        return bool(np.all(slots[1:] > slots[:-1]))

    found: bool = cut.columns.memo(("vector-slots-ascending", collection, key, len(slots)), compute)
    return found


def vector_branch(
    cut: IndexCut,
    collection: str,
    field: str,
    vector: Sequence[float],
    space: VectorSpace,
    *,
    limit: int,
    allowed_ids: Collection[str] | None = None,
) -> tuple[VectorHit, ...]:
    """Exact scan of the collection's vectors in ``space``, masked before ranking."""
    allowed = None
    if allowed_ids is not None:
        allowed = np.zeros(len(cut.columns.birth), dtype=bool)
        found = _allowed_slots(cut, collection, allowed_ids)
        allowed[found[found < len(allowed)]] = True
    ranking = vector_ranking(cut, collection, field, vector, space, allowed=allowed)
    ids = cut.columns.ids
    return tuple(
        VectorHit(EntityRef(collection, ids[slot]), rank, score)
        for rank, (slot, score) in enumerate(ranking.top(limit), start=1)
    )


def _allowed_slots(
    cut: IndexCut, collection: str, allowed_ids: Collection[str]
) -> npt.NDArray[np.int64]:
    """The live slots (at the cut) of the allowed document IDs, looked up in SQLite."""
    wanted = sorted({doc_id for doc_id in allowed_ids if isinstance(doc_id, str)})
    found: list[int] = []
    for start in range(0, len(wanted), SQLITE_PARAMETER_BATCH):
        batch = wanted[start : start + SQLITE_PARAMETER_BATCH]
        marks = ", ".join("?" * len(batch))
        found.extend(
            row[0]
            for row in cut.conn.execute(
                f"SELECT slot FROM documents WHERE collection = ? AND deleted = 0 "
                f"AND id IN ({marks})",
                (collection, *batch),
            )
        )
    return np.asarray(found, dtype=np.int64)
