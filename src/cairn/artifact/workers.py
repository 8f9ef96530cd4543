"""Forked helper processes that share the parent's parsed data instead of pickling it.

``SharedWork`` publishes one state object, then forks a ``ProcessPoolExecutor``; the
children inherit the state copy-on-write, so a task's arguments are only small
ranges. The parent keeps working meanwhile and, when done, runs every task a worker
has not started yet itself (``drain``), so neither side idles. Where forking is not
safe (see ``runtime.fork_available``) every task runs in the parent.
"""

from __future__ import annotations

import mmap
import multiprocessing
import os
import tempfile
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from types import TracebackType
from typing import Any

from cairn.artifact.runtime import fork_available
from cairn.orphans import worker_of

__all__ = ["SharedWork", "Spool"]

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
                max_workers=self.workers,
                mp_context=multiprocessing.get_context("fork"),
                initializer=worker_of,  # ends with this process, however it ends; no SIGINT
                initargs=(os.getpid(),),
            )
        return self

    def submit(self, function: Callable[..., Any], *args: Any) -> None:
        """Queue one task; a forked worker may start it at once."""
        future = self._pool.submit(_run_shared, function, args) if self._pool else None
        self._tasks.append((future, function, args))

    def drain(self, local_state: Any = None, *, from_end: bool = False) -> list[Any]:
        """Every task's result, in submission order; unstarted tasks run here.

        ``local_state`` replaces the shared state for tasks run in this process (for
        example the same data already parsed here). With ``from_end`` this process
        takes unstarted tasks from the back while the worker works from the front
        (the worker starts tasks in order, so once the last one has started, all have).
        """
        state = self.state if local_state is None else local_state
        results: dict[int, Any] = {}
        if from_end:
            for index in range(len(self._tasks) - 1, -1, -1):
                future, function, args = self._tasks[index]
                if future is not None and not future.cancel():
                    break
                results[index] = function(state, *args)
        for index, (future, function, args) in enumerate(self._tasks):
            if index in results:
                continue
            if future is None or future.cancel():
                results[index] = function(state, *args)
                continue
            try:
                results[index] = future.result()
            except BrokenProcessPool:  # the worker died (for example OOM): redo it here
                results[index] = function(state, *args)
        self._tasks.clear()
        return [results[index] for index in range(len(results))]

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


class Spool:
    """An anonymous file opened before the fork, for handing large bytes back.

    A forked worker inherits the descriptor, writes its result there and returns only
    the size; the parent maps it (``view``) without copying. Sending the bytes through the pool's
    pipe instead costs a pickle, many pipe writes and reads, and an unpickle copy
    (about 0.5 s for 84 MB on the 2-core development machine).
    """

    def __init__(self) -> None:
        memfd_create = getattr(os, "memfd_create", None)
        if memfd_create is not None:
            self.fd: int = memfd_create("cairn-spool", 0)
        else:  # pragma: no cover - non-Linux platforms never fork workers
            with tempfile.TemporaryFile() as handle:
                self.fd = os.dup(handle.fileno())

    def write(self, *pieces: bytes) -> int:
        """Store ``pieces`` one after another from offset 0 (in whichever process holds
        the descriptor), without joining them first; returns the bytes written."""
        done = 0
        for piece in pieces:
            view = memoryview(piece)
            written = 0
            while written < len(view):
                written += os.pwrite(self.fd, view[written:], done + written)
            done += written
        return done

    def view(self, size: int) -> memoryview:
        """The ``size`` bytes written by ``write``, mapped instead of copied."""
        if size == 0:
            return memoryview(b"")
        if os.fstat(self.fd).st_size < size:
            raise EOFError(f"the spool holds fewer than {size} bytes")
        return memoryview(mmap.mmap(self.fd, size, prot=mmap.PROT_READ))

    def close(self) -> None:
        """Release the descriptor (in this process)."""
        os.close(self.fd)

    def __enter__(self) -> Spool:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
