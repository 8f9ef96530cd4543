"""Row-split scans: every range once, on the workers and the caller, errors kept."""

from __future__ import annotations

import itertools
import threading

import numpy as np
import pytest

import cairn.index.scanning as scanning
from cairn.index.scanning import split_rows
from cairn.index.vectors import scaled_scan, scan


@pytest.fixture(autouse=True)
def _split_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scanning, "PARALLEL_SCAN_MIN_ROWS", 1)
    monkeypatch.setattr(scanning, "scan_threads", lambda: 2)


def test_every_row_is_scanned_once_on_the_worker_and_the_caller() -> None:
    seen = np.zeros(10_007, dtype=np.int64)
    threads: set[str] = set()
    lock = threading.Lock()
    caller = threading.current_thread()
    # The caller's first range (the last one) waits until a worker has begun the first:
    # both threads scan, however slowly the worker wakes up.
    worker_began = threading.Event()

    def kernel(begin: int, end: int) -> None:
        with lock:
            threads.add(threading.current_thread().name)
        if threading.current_thread() is caller:
            assert worker_began.wait(10)
        else:
            worker_began.set()
        seen[begin:end] += 1

    split_rows(len(seen), kernel)
    assert seen.tolist() == [1] * len(seen)
    assert threading.current_thread().name in threads
    assert any(name.startswith("cairn-scan") for name in threads)


def test_a_kernel_error_is_raised_after_the_other_ranges() -> None:
    done: list[tuple[int, int]] = []
    lock = threading.Lock()

    def kernel(begin: int, end: int) -> None:
        if begin == 0:
            raise ValueError("bad range")
        with lock:
            done.append((begin, end))

    with pytest.raises(ValueError, match="bad range"):
        split_rows(8_000, kernel)
    assert len(done) == len(scanning.SCAN_RANGE_WEIGHTS) - 1


def test_small_scans_run_here_in_one_range(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scanning, "PARALLEL_SCAN_MIN_ROWS", 1_000)
    ranges: list[tuple[int, int, str]] = []
    split_rows(
        999,
        lambda begin, end: ranges.append((begin, end, threading.current_thread().name)),
    )
    assert ranges == [(0, 999, threading.current_thread().name)]


def test_a_scaled_scan_multiplies_each_range_by_its_rows_scale() -> None:
    rng = np.random.default_rng(5)
    rows = 1001  # split across the worker and the caller (see the fixture)
    matrix = rng.standard_normal((rows, 8)).astype(np.float32)
    query = rng.standard_normal(8).astype(np.float32)
    scale = rng.uniform(0.5, 2.0, rows)
    found = scaled_scan(matrix, query, scale)
    assert found.dtype == np.float64 and len(found) == rows
    # Each value is the float32 product of its row, widened, times its own scale.
    assert np.array_equal(found, scan(matrix, query).astype(np.float64) * scale)
    exact = matrix.astype(np.float64) @ query.astype(np.float64) * scale
    bound = 11 * 2.0**-24 * np.abs(matrix).sum(axis=1) * np.abs(query).max() * scale
    assert np.all(np.abs(found - exact) <= bound)


@pytest.mark.parametrize("count", [1, 7, 99, 100_003])
def test_ranges_cover_the_rows_in_order_small_in_the_middle(count: int) -> None:
    ranges = scanning._ranges(count)
    assert ranges[0][0] == 0 and ranges[-1][1] == count
    assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges))  # no gap, no overlap
    assert all(end > begin for begin, end in ranges)
    if count >= sum(scanning.SCAN_RANGE_WEIGHTS):
        sizes = [end - begin for begin, end in ranges]
        middle = len(sizes) // 2
        assert max(sizes[middle - 1 : middle + 1]) < min(sizes[0], sizes[-1])


def test_a_scan_never_waits_for_a_worker_busy_with_another_scan() -> None:
    release = threading.Event()
    scanning._pool().submit(release.wait, 10)  # the only worker is busy elsewhere
    seen = np.zeros(1_000, dtype=np.int64)

    def kernel(begin: int, end: int) -> None:
        seen[begin:end] += 1

    try:
        split_rows(len(seen), kernel)  # the caller does every range and returns
        assert seen.tolist() == [1] * len(seen)
    finally:
        release.set()


# ------------------------------------------------------------------- meanwhile
def test_meanwhile_runs_once_here_while_a_worker_scans() -> None:
    """The caller's other work runs on the caller while a worker has begun the rows;
    then the caller joins the scan, and every row is still scanned once."""
    seen = np.zeros(10_007, dtype=np.int64)
    worker_began = threading.Event()
    ran: list[str] = []
    caller = threading.current_thread()

    def kernel(begin: int, end: int) -> None:
        if threading.current_thread() is not caller:
            worker_began.set()
        seen[begin:end] += 1

    def meanwhile() -> None:
        assert worker_began.wait(10)  # a worker scans while this runs
        ran.append(threading.current_thread().name)

    split_rows(len(seen), kernel, meanwhile)
    assert ran == [caller.name]
    assert seen.tolist() == [1] * len(seen)


def test_a_meanwhile_error_drops_the_ranges_not_started_and_is_raised() -> None:
    """Nothing is left running: the worker's current range finishes, the rest are
    dropped, and the error of the caller's work is the one raised."""
    started: list[tuple[int, int]] = []
    finished: list[tuple[int, int]] = []
    worker_in_range = threading.Event()
    release = threading.Event()

    def kernel(begin: int, end: int) -> None:
        started.append((begin, end))
        worker_in_range.set()
        assert release.wait(10)
        finished.append((begin, end))

    def meanwhile() -> None:
        assert worker_in_range.wait(10)
        # The worker's range ends only after the ranges left have been dropped.
        threading.Timer(0.2, release.set).start()
        raise KeyError("text branch failed")

    with pytest.raises(KeyError, match="text branch failed"):
        split_rows(8_000, kernel, meanwhile)
    assert started == finished == [started[0]]  # the one range begun was finished
    assert started[0][0] == 0  # the worker's, from the front; the rest were dropped


def test_a_small_scan_runs_meanwhile_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scanning, "PARALLEL_SCAN_MIN_ROWS", 10**9)
    order: list[str] = []
    split_rows(
        10, lambda begin, end: order.append(f"scan {begin}:{end}"), lambda: order.append("m")
    )
    assert order == ["m", "scan 0:10"]


def test_once_runs_its_work_on_the_first_call_only() -> None:
    calls: list[int] = []
    once = scanning.Once(lambda: calls.append(1))
    once()
    once()
    assert calls == [1]
    scanning.Once(None)()  # nothing to run: no error


def test_a_gathered_scan_multiplies_the_picked_rows_across_threads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each range of the picked rows is gathered and multiplied by the thread that
    takes it; the result is the product of the picked rows, in their order."""
    import cairn.index.vectors as vectors

    monkeypatch.setattr(vectors, "PARALLEL_GATHER_MIN_ROWS", 1)
    threads: set[str] = set()
    real = scanning.split_rows
    caller = threading.current_thread()
    worker_began = threading.Event()

    def recorded(count: int, kernel: object, *args: object, **kwargs: object) -> None:
        def watched(begin: int, end: int) -> None:
            threads.add(threading.current_thread().name)
            if threading.current_thread() is caller:
                assert worker_began.wait(10)  # both threads gather, however slow the wake
            else:
                worker_began.set()
            kernel(begin, end)  # type: ignore[operator]

        real(count, watched, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(vectors, "split_rows", recorded)
    rng = np.random.default_rng(3)
    matrix = rng.standard_normal((5000, 16)).astype(np.float32)
    query = rng.standard_normal(16).astype(np.float32)
    rows = np.sort(rng.choice(5000, 2000, replace=False))[::-1].copy()  # any order
    found = scan(matrix, query, rows=rows)
    expected = (matrix[rows].astype(np.float64) @ query.astype(np.float64)).astype(np.float32)
    assert np.allclose(found, expected, rtol=1e-5, atol=1e-5)
    assert len(threads) == 2  # the worker and this thread
