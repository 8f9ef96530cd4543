"""A memo of numpy arrays bounded by the bytes it holds, least recently used out first.

The columns memoise small position-bound values by count (``Columns.memo``); derived
arrays whose sizes vary by orders of magnitude, such as the BM25 weights of a term's
postings (a few bytes for a rare term, megabytes for a common one), are held here under
a byte budget instead. Values are never mutated once stored (callers mark them
read-only), so a hit is shared by every thread without a copy.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable

import numpy as np
import numpy.typing as npt

__all__ = ["ArrayMemo", "Arrays"]

Arrays = tuple[npt.NDArray[np.generic], ...]


class ArrayMemo:
    """``compute()`` memoised under a key, evicting least recently used values past
    ``budget`` bytes; a value larger than the whole budget is returned, never kept."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.held = 0
        self._values: OrderedDict[Hashable, tuple[Arrays, int]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._values)

    def get(self, key: Hashable, compute: Callable[[], Arrays]) -> Arrays:
        """The arrays memoised under ``key``, computed (outside the lock) on a miss."""
        with self._lock:
            found = self._values.get(key)
            if found is not None:
                self._values.move_to_end(key)
                return found[0]
        value = compute()
        size = sum(array.nbytes for array in value)
        if size > self.budget:
            return value
        with self._lock:
            if key not in self._values:
                self._values[key] = (value, size)
                self.held += size
            while self.held > self.budget:
                _, (_, dropped) = self._values.popitem(last=False)
                self.held -= dropped
        return value
