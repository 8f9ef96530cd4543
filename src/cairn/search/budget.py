"""One shared budget per request: records examined, bytes read, output bytes, deadline.

Every operator of a request (branches, walks, projection, expansion) charges the same
``ReadBudget``; a local cap such as a walk's ``max_edges`` is checked on top of it and
never resets it. Exhaustion raises ``BudgetExceededError`` (never a truncated success);
cancellation raises its subclass ``RequestCancelledError``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from cairn.errors import BudgetExceededError, RequestCancelledError
from cairn.search.limits import DEADLINE_SECONDS, MAX_OUTPUT_BYTES, MAX_RAW_READ_BYTES

__all__ = [
    "MAX_RECORDS_EXAMINED",
    "CancelToken",
    "ReadBudget",
]

MAX_RECORDS_EXAMINED = 2_000_000
"""Records (documents, postings rows, fact records) one request may examine."""

# How many charges pass between clock reads: time.monotonic() is cheap, not free.
_CLOCK_EVERY = 256


class CancelToken:
    """A thread-safe flag a caller sets to stop a running request."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        """Ask the request to stop at its next check."""
        self._event.set()

    @property
    def cancelled(self) -> bool:
        """Whether ``cancel`` was called."""
        return self._event.is_set()


@dataclass(slots=True)
class ReadBudget:
    """The shared, monotonic budget of one request."""

    max_records: int = MAX_RECORDS_EXAMINED
    max_raw_bytes: int = MAX_RAW_READ_BYTES
    max_output_bytes: int = MAX_OUTPUT_BYTES
    deadline_seconds: float = DEADLINE_SECONDS
    cancel: CancelToken | None = None
    clock: Callable[[], float] = time.monotonic
    records: int = 0
    raw_bytes: int = 0
    output_bytes: int = 0
    _started: float = field(default=0.0, init=False)
    _charges: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        self._started = self.clock()

    def check(self) -> None:
        """Raise if the request was cancelled or its deadline passed."""
        if self.cancel is not None and self.cancel.cancelled:
            raise RequestCancelledError("the request was cancelled")
        elapsed = self.clock() - self._started
        if elapsed > self.deadline_seconds:
            raise BudgetExceededError(
                f"the request ran past its {self.deadline_seconds:g} s deadline",
                details={"limit_seconds": self.deadline_seconds},
            )

    def _tick(self) -> None:
        self._charges += 1
        if self._charges % _CLOCK_EVERY == 0:
            self.check()

    def examine(self, count: int = 1) -> None:
        """Charge ``count`` examined records."""
        self.records += count
        if self.records > self.max_records:
            raise BudgetExceededError(
                f"the request examined more than {self.max_records} records",
                details={"limit": self.max_records, "budget": "records"},
            )
        self._tick()

    def read(self, size: int) -> None:
        """Charge ``size`` raw bytes read from the store."""
        self.raw_bytes += size
        if self.raw_bytes > self.max_raw_bytes:
            raise BudgetExceededError(
                f"the request read more than {self.max_raw_bytes} bytes",
                details={"limit": self.max_raw_bytes, "budget": "raw_bytes"},
            )
        self._tick()

    def emit(self, size: int) -> None:
        """Charge ``size`` bytes of reply (hits plus context)."""
        self.output_bytes += size
        if self.output_bytes > self.max_output_bytes:
            raise BudgetExceededError(
                f"the reply would exceed {self.max_output_bytes} bytes",
                details={"limit": self.max_output_bytes, "budget": "output_bytes"},
            )
        self._tick()
