"""Int8 unit rows: a quarter-size copy of a vector matrix for cosine scans.

The exact vector branch ranks by float64 cosine computed from the float32 rows, and a
scan that reads every float32 row is bound by memory bandwidth. So each row is also
kept as its unit vector ``u`` quantised to int8 codes ``c`` with one scale ``s`` per
row (``s = max|u_j| / 127``, ``c = round(u / s)``), with the L2 norm of what that lost
(the row's *residual* ``r = |u - s c|``). The query's unit ``q`` is quantised the same
way (scale ``t``, codes ``k``, residual ``rho``). The integer dot product ``c . k`` is
exact (int32 sums: ``MAX_VECTOR_DIMENSION * 127**2 < 2**31``), so the approximation
``s t (c . k)`` of every row's cosine is within a proven bound (``quantized_bound``)::

    |u . q - (s c) . (t k)| <= |(u - s c) . q| + |(s c) . (q - t k)| <= r + (1 + r) rho

The ranking (``ApproxRanking``) then scores exactly only the rows that bound cannot
place, with the float32 rows as a tighter refinement first.

The kernel is NumKong's int8 dot product. ``int8_kernel_ready`` checks on first use
that it sums exactly, with inputs that saturating 16-bit or float32 sums would get
wrong; when NumKong is missing or fails the check, the caller falls back to the float32
scan.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from cairn.index.kernels import checked_dot
from cairn.index.limits import QUANTIZED_BOUND_MARGIN, QUANTIZED_ENCODE_CHUNK
from cairn.store.limits import MAX_VECTOR_DIMENSION

__all__ = [
    "encode_query",
    "encode_rows",
    "int8_kernel_ready",
    "quantized_bound",
    "quantized_scan",
]

LEVELS = 127
"""Codes lie in ``[-127, 127]`` (never -128, which some kernels handle apart)."""

assert MAX_VECTOR_DIMENSION * LEVELS * LEVELS < 2**31  # int32 sums stay exact

Dot = Callable[[npt.NDArray[np.int8], npt.NDArray[np.int8], npt.NDArray[np.float64]], None]
"""``(codes, query, out)``: the integer dot product of each row of ``codes`` with
``query`` into ``out`` (float64, one value per row)."""


def _quantize(
    units: npt.NDArray[np.float64],
) -> tuple[npt.NDArray[np.int8], npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Codes, scales and residuals of unit vectors (rows of ``units``; zero rows: 0)."""
    scales = np.abs(units).max(axis=1) / LEVELS
    inverse = np.zeros(len(scales), dtype=np.float64)
    np.divide(1.0, scales, out=inverse, where=scales > 0)
    codes = np.rint(units * inverse[:, None])
    np.clip(codes, -LEVELS, LEVELS, out=codes)  # rounding can never pass 127; kept certain
    lost = units - codes * scales[:, None]
    residuals = np.sqrt(np.einsum("ij,ij->i", lost, lost))
    return codes.astype(np.int8), scales, residuals


def encode_rows(
    rows: npt.NDArray[np.float32], norms: npt.NDArray[np.float64]
) -> tuple[npt.NDArray[np.int8], npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Each row's unit vector as int8 codes, its scale and the L2 norm of its error.

    A zero row has zero codes, scale and residual. Rows are converted in chunks so that
    the float64 intermediates stay small.
    """
    count = len(rows)
    codes = np.empty(rows.shape, dtype=np.int8)
    scales = np.empty(count, dtype=np.float64)
    residuals = np.empty(count, dtype=np.float64)
    inverse = np.zeros(count, dtype=np.float64)
    np.divide(1.0, norms, out=inverse, where=norms > 0)
    for begin in range(0, count, QUANTIZED_ENCODE_CHUNK):
        end = min(count, begin + QUANTIZED_ENCODE_CHUNK)
        units = rows[begin:end].astype(np.float64)
        units *= inverse[begin:end, None]
        codes[begin:end], scales[begin:end], residuals[begin:end] = _quantize(units)
    return codes, scales, residuals


def encode_query(query: npt.NDArray[np.float64]) -> tuple[npt.NDArray[np.int8], float, float]:
    """The query's unit vector as int8 codes, its scale and residual (zero query: 0s)."""
    norm = float(np.linalg.norm(query))
    unit = query / norm if norm > 0 else np.zeros_like(query)
    codes, scales, residuals = _quantize(unit[None, :])
    return codes[0], float(scales[0]), float(residuals[0])


def quantized_bound(max_residual: float, query_residual: float) -> float:
    """The largest error of a quantised scan's cosine given the worst row residual.

    ``QUANTIZED_BOUND_MARGIN`` covers the float64 rounding of the exact cosine, of the
    unit vectors and of ``s * t * dot`` (about ``1e-14``), far below the bound.
    """
    return max_residual + (1.0 + max_residual) * query_residual + QUANTIZED_BOUND_MARGIN


def _probe(dot: Dot) -> bool:
    """Whether ``dot`` sums int8 products exactly, past what float32 or int16 can hold.

    ``2047 * 127 * 127 = 33_016_063`` is odd and above ``2**24``: a float32 sum rounds
    it, a saturating 16-bit one clips it; the second row checks the negative side.
    """
    size = 2048
    rows = np.full((2, size), LEVELS, dtype=np.int8)
    rows[1] = -LEVELS
    rows[:, -1] = 1
    query = np.full(size, LEVELS, dtype=np.int8)
    query[-1] = 0
    found = np.full(2, np.nan, dtype=np.float64)
    dot(rows, query, found)
    expected = rows.astype(np.int64) @ query.astype(np.int64)
    return bool(np.array_equal(found, expected.astype(np.float64)))


@functools.cache
def int8_kernel_ready() -> Dot | None:
    """The checked int8 kernel, or None (then scans stay float32); memoised."""
    return checked_dot(_probe)


def quantized_scan(
    codes: npt.NDArray[np.int8], query: npt.NDArray[np.int8], out: npt.NDArray[np.float64]
) -> None:
    """Every row's exact integer dot product with ``query``, into ``out`` (one value per
    row). Callers check ``int8_kernel_ready()`` first and split large scans by rows: the
    sums are exact, so a split never changes a value."""
    dot = int8_kernel_ready()
    assert dot is not None  # callers check first
    dot(codes, query, out)
