"""``cairn.orphans``: a pool's workers end with the process that started them, however
it ends (before, a ``cairn index`` killed mid-extraction left its workers, forkserver
and resource tracker waiting forever)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from codegraph_expect import ROUND_TIMEOUT_S, long_package, session_processes, wait_session_gone

from cairn import orphans

GONE_BOUND_S = 10.0
"""Workers end well within this after their starter (a pidfd wakes them at once)."""

RESOLVING_AFTER_S = 7.0
"""After its pool is up, how long until the first index of ``long_package`` resolves
(it extracts for ~5 s here, then resolves for ~11 s)."""


def _sleeper() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])


@pytest.mark.parametrize("pidfd", [True, False])
def test_wait_for_exit_returns_once_the_process_has_ended(
    pidfd: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not pidfd:
        monkeypatch.delattr(os, "pidfd_open", raising=False)
        monkeypatch.setattr(orphans, "POLL_S", 0.05)
    child = _sleeper()
    try:
        started = time.monotonic()
        # The child still runs: the wait must not return before it is killed.
        timer = threading.Timer(0.5, child.kill)
        timer.start()
        orphans.wait_for_exit(child.pid)  # a zombie until reaped below: ended all the same
        assert time.monotonic() - started >= 0.5
    finally:
        child.kill()
        child.wait()
    started = time.monotonic()
    orphans.wait_for_exit(child.pid)  # gone already: at once
    assert time.monotonic() - started < 1.0


def test_a_killed_index_leaves_no_worker_behind(tmp_path: Path) -> None:
    repo = long_package(tmp_path / "repo")
    process = subprocess.Popen(
        [sys.executable, "-c", "from cairn.cli import main; main()", "index", str(repo)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + ROUND_TIMEOUT_S
        # Its pool is up: the index itself, the forkserver and the resource tracker
        # beside it, and two workers.
        while len(session_processes(process.pid)) < 4:
            assert process.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(0.5)
        process.kill()  # as an agent's timeout does: no handler runs
        process.wait()
        wait_session_gone(process.pid, GONE_BOUND_S)  # no worker outlives it
    finally:
        for pid in session_processes(process.pid):
            os.kill(pid, signal.SIGKILL)


_WORKING_POOL = """
import sys, time
from concurrent.futures import ProcessPoolExecutor
import multiprocessing
from cairn.orphans import worker_of

def work(seconds):
    time.sleep(seconds)
    return b"x" * 1_000_000

if __name__ == "__main__":
    pool = ProcessPoolExecutor(
        max_workers=2,
        mp_context=multiprocessing.get_context("forkserver"),
        initializer=worker_of,
        initargs=(__import__("os").getpid(),),
    )
    # Jobs still running and queued, and the pool told not to wait: what an index
    # leaves when Ctrl-C ends it.
    futures = [pool.submit(work, 60) for _ in range(8)]
    time.sleep(1.0)
    pool.shutdown(wait=False)
    print("ready", flush=True)
    {leave}
"""


def _ending(tmp_path: Path, leave: str) -> tuple[int, str, float]:
    """Run ``_WORKING_POOL`` ending with ``leave``: its status, stderr and seconds (a
    file, so that the forkserver's workers can import its ``work``)."""
    script = tmp_path / "working_pool.py"
    script.write_text(_WORKING_POOL.replace("{leave}", leave))
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=60,
        start_new_session=True,
    )
    assert "ready" in done.stdout, done.stderr
    return done.returncode, done.stderr, time.monotonic() - started


@pytest.mark.parametrize(
    "leave",
    [
        "from cairn.orphans import leave_at_once; leave_at_once(130)",
        # The CLI's own exit (``cairn.cli.main``): before, it ran multiprocessing's exit
        # handler, which waited on the pool's workers (here a minute; after Ctrl-C in
        # ``cairn watch``, forever).
        "from cairn.cli import _leave; _leave(130)",
    ],
)
def test_a_process_whose_pool_still_works_ends_at_once(tmp_path: Path, leave: str) -> None:
    status, stderr, seconds = _ending(tmp_path, leave)
    assert status == 130, stderr
    assert seconds < 1.0 + GONE_BOUND_S, stderr
    assert "leaked" not in stderr  # its semaphores were unlinked, not left to the tracker
    assert "Traceback" not in stderr


def test_a_pool_worker_leaves_sigint_to_its_starter() -> None:
    from concurrent.futures import ProcessPoolExecutor

    from cairn.codegraph.wire import worker_initializer

    with ProcessPoolExecutor(
        max_workers=1, initializer=worker_initializer, initargs=(os.getpid(),)
    ) as pool:
        assert pool.submit(signal.getsignal, signal.SIGINT).result() == signal.SIG_IGN


@pytest.mark.parametrize(
    ("command", "whole_group", "after_s"),
    [
        ("index", True, 1.0),
        ("index", False, 1.0),
        ("watch", True, 1.0),
        ("watch", False, RESOLVING_AFTER_S),
    ],
)
def test_ctrl_c_ends_an_index_at_once(
    tmp_path: Path, command: str, whole_group: bool, after_s: float
) -> None:
    """SIGINT, ``after_s`` after the pool is up, to the whole group (a terminal's
    Ctrl-C) or to the command alone (a supervisor): it ends with status 130, no worker's
    traceback, nothing left running. Before, ``cairn watch`` interrupted while it
    resolved waited forever for its pool, and a worker interrupted mid-result could
    hang ``cairn index``."""
    repo = long_package(tmp_path / "repo")
    process = subprocess.Popen(
        [sys.executable, "-c", "from cairn.cli import main; main()", command, str(repo)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        # A shell's background job inherits SIGINT ignored; a terminal's does not.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        deadline = time.monotonic() + ROUND_TIMEOUT_S
        while len(session_processes(process.pid)) < 4:  # its pool is up
            assert process.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(after_s)
        if whole_group:
            os.killpg(process.pid, signal.SIGINT)
        else:
            process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=GONE_BOUND_S)
        assert process.returncode == 130, stderr
        assert "Traceback" not in stderr and "leaked" not in stderr, stderr
        wait_session_gone(process.pid, GONE_BOUND_S)  # no worker outlives it
    finally:
        for pid in session_processes(process.pid):
            os.kill(pid, signal.SIGKILL)
