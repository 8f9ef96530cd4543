"""Half-precision unit rows: a second, smaller copy of a vector matrix for cosine scans.

The exact vector branch ranks by float64 cosine computed from the float32 rows, and a
scan that reads every float32 row is bound by memory bandwidth. So each row is also
kept as its unit vector rounded to float16 (half the bytes), with the L2 norm of what
the rounding lost (the row's *residual*). A scan of these units against the query's
unit, by a kernel that accumulates in float32, gives every row's cosine within a proven
bound (``half_bound``)::

    |cos_i - approx_i| <= r_i + (1 + r_i) * s + gamma_d * (1 + r_i) * (1 + s)

where ``r_i`` is row ``i``'s residual, ``s`` the query's, and ``gamma_d = d*u / (1 - d*u)``
with ``u = 2**-24``: the product of two halves is exact in float32, so only the float32
summation of ``d`` terms rounds, in whatever order the kernel adds them. The ranking
(``ApproxRanking``) then scores exactly only the rows that bound cannot place.

The kernel is NumKong's dot product, whose documented contract is that float16 inputs
accumulate in float32. ``half_kernel_ready`` checks that on first use with inputs whose
float16 accumulation would be visibly wrong; when NumKong is missing or fails the check,
the caller falls back to the float32 scan.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import numpy.typing as npt

from cairn.store.limits import HALF_BOUND_MARGIN, HALF_ENCODE_CHUNK

__all__ = [
    "encode_units",
    "half_bound",
    "half_kernel_ready",
    "half_query",
    "half_scan",
]

_UNIT = 2.0**-24
"""Unit roundoff of float32."""

Dot = Callable[[npt.NDArray[np.float16], npt.NDArray[np.float16], npt.NDArray[np.float64]], None]
"""``(units, query, out)``: the dot product of each row of ``units`` with ``query`` into
``out`` (float64, one value per row)."""


def encode_units(
    rows: npt.NDArray[np.float32], norms: npt.NDArray[np.float64]
) -> tuple[npt.NDArray[np.float16], npt.NDArray[np.float64]]:
    """Each row's unit vector in float16 and the L2 norm of its rounding error.

    A zero row has a zero unit and residual. Rows are converted in chunks so that the
    float64 intermediates stay small.
    """
    count = len(rows)
    units = np.empty(rows.shape, dtype=np.float16)
    residuals = np.empty(count, dtype=np.float64)
    inverse = np.zeros(count, dtype=np.float64)
    np.divide(1.0, norms, out=inverse, where=norms > 0)
    for begin in range(0, count, HALF_ENCODE_CHUNK):
        end = min(count, begin + HALF_ENCODE_CHUNK)
        exact = rows[begin:end].astype(np.float64)
        exact *= inverse[begin:end, None]
        rounded = exact.astype(np.float16)
        units[begin:end] = rounded
        exact -= rounded
        residuals[begin:end] = np.sqrt(np.einsum("ij,ij->i", exact, exact))
    return units, residuals


def half_query(query: npt.NDArray[np.float64]) -> tuple[npt.NDArray[np.float16], float]:
    """The query's unit vector in float16 and its residual (zero query: zeros, 0)."""
    norm = float(np.linalg.norm(query))
    unit = query / norm if norm > 0 else np.zeros_like(query)
    rounded = unit.astype(np.float16)
    return rounded, float(np.linalg.norm(unit - rounded))


def half_bound(max_residual: float, query_residual: float, dimension: int) -> float:
    """The largest error of a half scan's cosine given the worst row residual.

    ``HALF_BOUND_MARGIN`` covers the float64 rounding of the exact cosine and of the
    unit vectors themselves (about ``1e-14``), far below the bound.
    """
    gamma = dimension * _UNIT / (1 - dimension * _UNIT)
    rows = 1.0 + max_residual
    return (
        max_residual
        + rows * query_residual
        + gamma * rows * (1.0 + query_residual)
        + HALF_BOUND_MARGIN
    )


def _probe(dot: Dot) -> bool:
    """Whether ``dot`` sums halves in float32 or wider: a float16 sum would lose the tail.

    ``1*1 + 255 * (2**-6 * 2**-6)`` is ``1.062255859375`` exactly; float16 accumulation
    cannot hold it (its spacing at 1 is ``2**-10``).
    """
    row = np.full(256, 2.0**-6, dtype=np.float16)
    row[0] = 1.0
    found = np.full(1, np.nan, dtype=np.float64)
    dot(row[None, :], row, found)
    exact = 1.0 + 255 * 2.0**-12
    gamma = 256 * _UNIT / (1 - 256 * _UNIT)
    return abs(float(found[0]) - exact) <= gamma * exact


def _numkong_dot() -> Dot | None:
    """NumKong's float16 dot product of each row with the query, or None without it."""
    try:
        import numkong
    except ImportError:  # pragma: no cover - numkong is a dependency
        return None

    def dot(
        units: npt.NDArray[np.float16],
        query: npt.NDArray[np.float16],
        out: npt.NDArray[np.float64],
    ) -> None:
        numkong.cdist(query[None, :], units, metric="dot", out=out[None, :])

    return dot


@functools.cache
def half_kernel_ready() -> Dot | None:
    """The checked half-scan kernel, or None (then scans stay float32); memoised."""
    dot = _numkong_dot()
    if dot is None or not _probe(dot):
        return None
    return dot


def half_scan(
    units: npt.NDArray[np.float16],
    query: npt.NDArray[np.float16],
    pool: ThreadPoolExecutor | None,
    threads: int,
) -> npt.NDArray[np.float64]:
    """Every row's approximate cosine (within ``half_bound``), split across ``threads``.

    Callers check ``half_kernel_ready()`` first. A split never changes a row's value
    beyond the bound, so it never changes a ranking or a score.
    """
    dot = half_kernel_ready()
    assert dot is not None  # callers check first
    out = np.empty(len(units), dtype=np.float64)
    if pool is None or threads <= 1:
        dot(units, query, out)
        return out
    bounds = np.linspace(0, len(units), threads + 1).astype(int).tolist()
    jobs = [
        pool.submit(dot, units[begin:end], query, out[begin:end])
        for begin, end in itertools.pairwise(bounds)
    ]
    for job in jobs:
        job.result()
    return out
