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
from codegraph_expect import ROUND_TIMEOUT_S, long_package, session_processes

from cairn import orphans

GONE_BOUND_S = 10.0
"""Workers end well within this after their starter (a pidfd wakes them at once)."""


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
        deadline = time.monotonic() + GONE_BOUND_S
        while session_processes(process.pid):
            assert time.monotonic() < deadline, session_processes(process.pid)
            time.sleep(0.05)
    finally:
        for pid in session_processes(process.pid):
            os.kill(pid, signal.SIGKILL)
