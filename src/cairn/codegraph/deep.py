"""Run a deeply recursive computation on a thread with a large stack and a high limit.

Reading a generated 600-level expression and following a long chain of aliases, returns
and parameters through a whole program both recurse far past Python's default limit of
1,000 frames. Raising the limit on the main thread is unsafe (its stack is fixed), so the
work runs on a thread of its own whose stack is sized for the limit. The stack is address
space: only the pages the recursion touches are ever in memory.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import TypeVar

__all__ = ["run_deep"]

T = TypeVar("T")

_LOCK = threading.Lock()
"""One deep run at a time raises the process-wide limit and thread stack size: two would
restore each other's values out of order."""

_INSIDE = threading.local()
"""Set on a deep run's own thread: a deep run started from there runs in place (its
stack is already large), where waiting for the lock would never end."""


def run_deep(work: Callable[[], T], *, stack_bytes: int, recursion_limit: int, name: str) -> T:
    """``work()`` on a thread named ``name`` with a ``stack_bytes`` stack, the recursion
    limit raised to ``recursion_limit`` while it runs; its result, or its exception.

    A machine that cannot give such a stack raises ``RecursionError`` naming why.
    """
    if getattr(_INSIDE, "limit", 0) >= recursion_limit:
        return work()
    done: list[T] = []
    failed: list[BaseException] = []

    def run() -> None:
        _INSIDE.limit = recursion_limit
        try:
            done.append(work())
        except BaseException as exc:  # handed to the caller's thread below
            failed.append(exc)

    with _LOCK:
        previous_stack = threading.stack_size(stack_bytes)
        previous_limit = sys.getrecursionlimit()
        try:
            sys.setrecursionlimit(max(previous_limit, recursion_limit))
            worker = threading.Thread(target=run, name=name)
            try:
                worker.start()
            except (RuntimeError, MemoryError) as exc:  # no room for such a stack here
                raise RecursionError(
                    f"no thread with a {stack_bytes >> 20} MiB stack can start here ({exc})"
                ) from exc
            finally:
                threading.stack_size(previous_stack)
            worker.join()
        finally:
            sys.setrecursionlimit(previous_limit)
    if failed:
        raise failed[0]
    return done[0]
