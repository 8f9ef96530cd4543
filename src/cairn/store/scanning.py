"""Row-split vector scans: the scan threads, and the calling thread working beside them.

A scan of a large matrix is split into row ranges sized by ``SCAN_RANGE_WEIGHTS``: large
at both ends, small in the middle. The process's scan pool (one thread fewer than the
cores it may use) takes ranges from the front while the calling thread takes the
unstarted ones from the back; they meet near the middle, where a range is short, so the
thread that finishes first waits little for the other. Every core is busy and none is
oversubscribed; numpy and NumKong release the GIL inside their kernels. (Measured in
one process on the 100k benchmark: hybrid median p50 12.87 ms with two pool threads and
an idle caller, 11.92 ms this way. Running the text branch on the calling thread while
one worker scanned, before joining, gained nothing: 11.98 ms.)

Each range's results depend on its rows only (row-wise kernels writing disjoint slices
of one output), so a split never changes a value beyond what the caller's error bound
already covers.
"""

from __future__ import annotations

import functools
import itertools
import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from cairn.store.limits import MAX_SCAN_THREADS, PARALLEL_SCAN_MIN_ROWS, SCAN_RANGE_WEIGHTS

__all__ = ["scan_threads", "split_rows"]

Kernel = Callable[[int, int], None]
"""``(begin, end)``: scan rows ``begin:end`` into their slice of the output."""

_POOL: list[ThreadPoolExecutor] = []
_POOL_LOCK = threading.Lock()


@functools.cache
def scan_threads() -> int:
    """Threads one scan may keep busy: one per core, at most ``MAX_SCAN_THREADS``
    (memoised: ``os.cpu_count`` costs ~30 us a call)."""
    return max(1, min(os.cpu_count() or 1, MAX_SCAN_THREADS))


def _pool() -> ThreadPoolExecutor:
    """The process's scan workers (one fewer than ``scan_threads``), started on first use."""
    with _POOL_LOCK:
        if not _POOL:
            workers = scan_threads() - 1
            _POOL.append(ThreadPoolExecutor(workers, thread_name_prefix="cairn-scan"))
        return _POOL[0]


def split_rows(count: int, kernel: Kernel) -> None:
    """Run ``kernel`` over rows ``0:count`` in ranges, on the workers and on this thread;
    an error of any range is raised once every range has finished."""
    threads = scan_threads()
    if threads == 1 or count < PARALLEL_SCAN_MIN_ROWS:
        kernel(0, count)
        return
    ranges = _ranges(count)
    pool = _pool()
    futures: list[Future[None]] = [pool.submit(kernel, begin, end) for begin, end in ranges]
    _steal_from_the_back(futures, ranges, kernel)


def _ranges(count: int) -> list[tuple[int, int]]:
    """Rows ``0:count`` cut into consecutive ranges in the shares ``SCAN_RANGE_WEIGHTS``
    (empty ranges dropped)."""
    total = sum(SCAN_RANGE_WEIGHTS)
    ends = [count * share // total for share in itertools.accumulate(SCAN_RANGE_WEIGHTS)]
    return [(begin, end) for begin, end in itertools.pairwise([0, *ends]) if end > begin]


def _steal_from_the_back(
    futures: list[Future[None]], ranges: list[tuple[int, int]], kernel: Kernel
) -> None:
    """Run unstarted ranges here, last first, then wait for the workers' ranges.

    Workers start ranges in order, so once one cannot be cancelled (it has started),
    every range before it has started too.
    """
    failure: BaseException | None = None
    for future, (begin, end) in zip(reversed(futures), reversed(ranges), strict=True):
        if not future.cancel():
            break
        try:
            kernel(begin, end)
        except BaseException as error:
            failure = failure or error
    for future in futures:
        if future.cancelled():
            continue
        try:
            future.result()
        except BaseException as error:
            failure = failure or error
    if failure is not None:
        raise failure
