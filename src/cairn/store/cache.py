"""``Memo``: values derived from one read position, kept least recently used first out.

Whatever is read or computed from the database at a position never changes, because
every commit moves the position; so a value keyed by its position can be shared by
every read cut at that position. The store memoises configuration and field policies
this way (``cairn.store.reads``); the index memoises its derived arrays the same way.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import TypeVar

__all__ = ["Memo"]

_T = TypeVar("_T")


class Memo:
    """A thread-safe, size-bounded memo: ``get(key, compute)`` computes once per key.

    ``key`` must include the position (or everything else the value depends on). Two
    threads missing the same key may both compute it; both results are equal.
    """

    def __init__(self, size: int) -> None:
        self._size = size
        self._values: OrderedDict[Hashable, object] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, compute: Callable[[], _T]) -> _T:
        """``compute()`` memoised under ``key`` (least recently used first out)."""
        with self._lock:
            if key in self._values:
                self._values.move_to_end(key)
                return self._values[key]  # type: ignore[return-value]
        value = compute()
        with self._lock:
            self._values[key] = value
            while len(self._values) > self._size:
                self._values.popitem(last=False)
        return value
