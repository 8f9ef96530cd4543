"""Failed authentications limited per client, so no caller can make the server verify
keys without bound.

Each client address may fail ``AUTH_FAILURE_LIMIT`` times within
``AUTH_FAILURE_WINDOW_S``; past that, its requests are refused with
``BudgetExceededError`` (HTTP 429, ``retry_after_s`` in the details) before any key is
looked at, until the oldest failure leaves the window. Success does not erase failures
(an attacker holding one valid key gains nothing). At most ``AUTH_TRACKED_CLIENTS``
addresses are remembered; the least recently failing leave first.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping
from typing import Any

from cairn.database import Database
from cairn.errors import BudgetExceededError, UnauthenticatedError
from cairn.server.limits import AUTH_FAILURE_LIMIT, AUTH_FAILURE_WINDOW_S, AUTH_TRACKED_CLIENTS
from cairn.store.policy import Principal

__all__ = ["FailureLimiter", "authenticated", "client_address"]


_UNKNOWN_CLIENT = "unknown"


class FailureLimiter:
    """Per-client sliding-window count of failed authentications; see the module."""

    def __init__(
        self,
        limit: int = AUTH_FAILURE_LIMIT,
        window_s: float = AUTH_FAILURE_WINDOW_S,
        clients: int = AUTH_TRACKED_CLIENTS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._limit = limit
        self._window = window_s
        self._clients = clients
        self._clock = clock
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()
        self._lock = threading.Lock()

    def _recent(self, client: str, now: float) -> deque[float] | None:
        times = self._failures.get(client)
        if times is None:
            return None
        while times and times[0] <= now - self._window:
            times.popleft()
        if not times:
            del self._failures[client]
            return None
        return times

    def check(self, client: str) -> None:
        """Refuse ``client`` (``BudgetExceededError``) while it is over its failure limit."""
        with self._lock:
            now = self._clock()
            times = self._recent(client, now)
            if times is None or len(times) < self._limit:
                return
            wait = max(1, math.ceil(times[0] + self._window - now))
        raise BudgetExceededError(
            f"too many failed authentications from this client; retry in {wait} s",
            details={"retry_after_s": wait, "limit": self._limit, "window_s": self._window},
        )

    def failed(self, client: str) -> None:
        """Count one failed authentication of ``client``."""
        with self._lock:
            now = self._clock()
            times = self._recent(client, now)
            if times is None:
                times = deque()
                self._failures[client] = times
            times.append(now)
            self._failures.move_to_end(client)
            while len(self._failures) > self._clients:
                self._failures.popitem(last=False)


def client_address(scope: Mapping[str, Any]) -> str:
    """The address an ASGI request came from (``unknown`` when the server gives none)."""
    client = scope.get("client")
    return str(client[0]) if client else _UNKNOWN_CLIENT


def authenticated(db: Database, limiter: FailureLimiter, client: str, api_key: str) -> Principal:
    """The principal of ``api_key`` for ``client``: refused first if the client is over
    its failure limit; a failure counts against it."""
    limiter.check(client)
    try:
        return db.authenticate(api_key)
    except UnauthenticatedError:
        limiter.failed(client)
        raise
