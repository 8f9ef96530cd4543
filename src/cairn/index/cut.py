"""``IndexCut``: the store's read cut with the in-memory columns viewed at its position.

The store pins a read (one SQLite read transaction at position ``P``, the principal
resolved inside it); the index catches its columns up to ``P`` inside that same
transaction and hands out this cut, so the text, vector and graph branches read arrays
and rows of one position.
"""

from __future__ import annotations

from dataclasses import dataclass

from cairn.index.columns import ColumnsView
from cairn.store.reads import ReadCut

__all__ = ["IndexCut"]


@dataclass(frozen=True, slots=True)
class IndexCut(ReadCut):
    """One pinned read (``ReadCut``) plus the columns viewed at its position."""

    columns: ColumnsView
