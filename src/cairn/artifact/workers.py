"""Forked helper processes that share the parent's parsed data instead of pickling it.

``SharedWork`` publishes one state object, then forks a ``ProcessPoolExecutor``; the
children inherit the state copy-on-write, so a task's arguments are only small
ranges. The parent keeps working meanwhile and, when done, runs every task a worker
has not started yet itself (``drain``), so neither side idles. Where forking is not
safe (see ``runtime.fork_available``) every task runs in the parent.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from types import TracebackType
from typing import Any

from cairn.artifact.runtime import fork_available

__all__ = ["SharedWork"]

_SHARED: Any = None


def _run_shared(function: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    return function(_SHARED, *args)


class SharedWork:
    """Run ``function(state, *args)`` tasks in forked workers, or in-process when asked."""

    def __init__(self, state: Any, workers: int, *, parallel: bool) -> None:
        self.state = state
        self.workers = workers
        self.parallel = parallel and workers > 0 and fork_available()
        self._pool: ProcessPoolExecutor | None = None
        self._tasks: list[tuple[Future[Any] | None, Callable[..., Any], tuple[Any, ...]]] = []

    def __enter__(self) -> SharedWork:
        global _SHARED
        if self.parallel:
            _SHARED = self.state
            self._pool = ProcessPoolExecutor(
                max_workers=self.workers, mp_context=multiprocessing.get_context("fork")
            )
        return self

    def submit(self, function: Callable[..., Any], *args: Any) -> None:
        """Queue one task; a forked worker may start it at once."""
        future = self._pool.submit(_run_shared, function, args) if self._pool else None
        self._tasks.append((future, function, args))

    def drain(self, local_state: Any = None) -> list[Any]:
        """Every task's result, in submission order; unstarted tasks run here.

        ``local_state`` replaces the shared state for tasks run in this process (for
        example the same data already parsed here).
        """
        state = self.state if local_state is None else local_state
        results: list[Any] = []
        for future, function, args in self._tasks:
            if future is None or future.cancel():
                results.append(function(state, *args))
                continue
            try:
                results.append(future.result())
            except BrokenProcessPool:  # the worker died (for example OOM): redo it here
                results.append(function(state, *args))
        self._tasks.clear()
        return results

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        global _SHARED
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        _SHARED = None
