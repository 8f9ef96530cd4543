"""The in-memory search structures the store feeds and the search engine reads.

Columns (slots, text postings, vector matrices and their compact unit rows), the CSR
adjacency, the BM25 and vector branches with their scans and rankings, and the column
snapshot: all derived from the store's truth (``cairn.store``) and never the truth
itself. ``Database`` owns them and extends each read cut with their view at its
position. Dependencies point down: this package imports the store, never the engine
(``cairn.search``) or a surface.

Names are imported on first use (PEP 562), as in ``cairn.store``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cairn.index.cut import IndexCut
    from cairn.index.database import Database, open
    from cairn.index.text import TextHit
    from cairn.index.vectors import VectorHit

_EXPORTS: dict[str, str] = {
    "Database": "cairn.index.database",
    "IndexCut": "cairn.index.cut",
    "TextHit": "cairn.index.text",
    "VectorHit": "cairn.index.vectors",
    "open": "cairn.index.database",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'cairn.index' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = ["Database", "IndexCut", "TextHit", "VectorHit", "open"]
