"""NumKong's dot product of each row with one query: the kernel of the compact scans.

``cairn.index.quantized`` (int8 codes) and ``cairn.index.halves`` (float16 units) each
check it once with their own probe (exact integer sums; float32 accumulation) before
their scans use it, and fall back to the float32 scan when it is missing or fails.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["RowsDot", "checked_dot", "numkong_dot"]

RowsDot = Callable[[npt.NDArray[Any], npt.NDArray[Any], npt.NDArray[np.float64]], None]
"""``(rows, query, out)``: the dot product of each row of ``rows`` with ``query`` into
``out`` (float64, one value per row)."""


def numkong_dot() -> RowsDot | None:
    """NumKong's dot product of each row with the query, or None without NumKong."""
    try:
        import numkong
    except ImportError:  # pragma: no cover - numkong is a dependency
        return None

    def dot(rows: npt.NDArray[Any], query: npt.NDArray[Any], out: npt.NDArray[np.float64]) -> None:
        numkong.cdist(query[None, :], rows, metric="dot", out=out[None, :])

    return dot


def checked_dot(probe: Callable[[RowsDot], bool]) -> RowsDot | None:
    """NumKong's dot product when it passes ``probe``, else None (scans stay float32)."""
    dot = numkong_dot()
    return dot if dot is not None and probe(dot) else None
