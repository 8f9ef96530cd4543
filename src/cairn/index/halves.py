"""Float16 unit rows: a half-size copy of a vector matrix for scans fused with text.

Fusion reads exact ranks deep in the vector ranking (the text leaders' places), and
each resolves a band of near-equal scores: the narrower a scan's error bound, the fewer
rows are scored again. The int8 copy (``cairn.index.quantized``) reads a quarter of the
bytes but its bound (~0.02 at 256 dimensions) leaves thousands of rows in such a band;
the float32 rows are tight but read twice the bytes of this copy. Here each row is kept
as its unit vector rounded to float16, with the L2 norm of what the rounding lost (the
row's *residual*). A scan of these units against the query's float16 unit, by a kernel
that accumulates in float32, gives every row's cosine within a proven bound
(``half_bound``)::

    |cos_i - approx_i| <= r + (1 + r) s + gamma_d (1 + r) (1 + s)

with ``r`` the largest row residual, ``s`` the query's, and ``gamma_d = d u / (1 - d u)``
for ``u = 2**-24``: the product of two halves is exact in float32, so only the float32
sum of ``d`` terms rounds, in whatever order the kernel adds them. At 256 dimensions the
bound is ~5e-4 (~15x the float32 scan's), so a deep band holds a few hundred rows, which
the float32 rows refine before anything is scored exactly.

The kernel is NumKong's dot product, documented to accumulate float16 inputs in float32.
``half_kernel_ready`` checks that on first use with inputs a float16 sum would get
visibly wrong; when NumKong is missing or fails the check, callers scan float32 rows.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from cairn.index.kernels import checked_dot
from cairn.index.limits import HALF_BOUND_MARGIN, HALF_ENCODE_CHUNK

__all__ = [
    "encode_units",
    "half_bound",
    "half_kernel_ready",
    "half_query",
    "half_scan",
]

UNIT_ROUNDOFF = 2.0**-24
"""Unit roundoff of float32, the kernel's accumulator."""

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
    gamma = _gamma(dimension)
    rows = 1.0 + max_residual
    return (
        max_residual
        + rows * query_residual
        + gamma * rows * (1.0 + query_residual)
        + HALF_BOUND_MARGIN
    )


def _gamma(dimension: int) -> float:
    """The relative error bound of a float32 sum of ``dimension`` terms, in any order."""
    return dimension * UNIT_ROUNDOFF / (1 - dimension * UNIT_ROUNDOFF)


def _probe(dot: Dot) -> bool:
    """Whether ``dot`` sums halves in float32 or wider, never in float16.

    Two checks: ``1 * 1 + 255 * (2**-6 * 2**-6)`` is ``1.062255859375`` exactly, which a
    float16 sum cannot hold (its spacing at 1 is ``2**-10``); and random rows of
    1024 dimensions must be within the float32 bound of their exact dot products,
    which a kernel keeping float16 partial sums in lanes would miss.
    """
    row = np.full(256, 2.0**-6, dtype=np.float16)
    row[0] = 1.0
    found = np.full(1, np.nan, dtype=np.float64)
    dot(row[None, :], row, found)
    exact = 1.0 + 255 * 2.0**-12
    if not abs(float(found[0]) - exact) <= _gamma(256) * exact:
        return False
    rng = np.random.default_rng(0)
    units = rng.standard_normal((16, 1024)).astype(np.float16)
    query = rng.standard_normal(1024).astype(np.float16)
    found = np.full(len(units), np.nan, dtype=np.float64)
    dot(units, query, found)
    wide = units.astype(np.float64)
    exact_dots = wide @ query.astype(np.float64)
    magnitude = np.abs(wide) @ np.abs(query.astype(np.float64))
    return bool(np.all(np.abs(found - exact_dots) <= _gamma(1024) * magnitude))


@functools.cache
def half_kernel_ready() -> Dot | None:
    """The checked half-scan kernel, or None (then scans stay float32); memoised."""
    return checked_dot(_probe)


def half_scan(
    units: npt.NDArray[np.float16], query: npt.NDArray[np.float16], out: npt.NDArray[np.float64]
) -> None:
    """Every row's dot product with ``query`` (within ``half_bound`` of its cosine), into
    ``out``. Callers check ``half_kernel_ready()`` first and split large scans by rows: a
    split never moves a value beyond the bound, so never changes a ranking."""
    dot = half_kernel_ready()
    assert dot is not None  # callers check first
    dot(units, query, out)
