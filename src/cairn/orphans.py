"""Worker processes end with the process that started them.

A process pool's workers hold their own task queue's pipe open (a forkserver passes
both ends to each of them; a fork copies them), so when the process that started the
pool dies without shutting it down (SIGTERM's default action, SIGKILL, an ``os._exit``,
an agent's timeout killing ``cairn index``) they never read end-of-file and wait
forever, ~90 MB each, with the forkserver beside them. ``follow(pid)``, called in a
worker's initializer, starts a daemon thread that waits for ``pid`` to end and then
ends the worker at once. The wait is a pidfd where the kernel has one (Linux 5.3+: no
polling, woken by the exit itself), else a check every ``POLL_S``.
"""

from __future__ import annotations

import os
import select
import threading
import time
from pathlib import Path

__all__ = ["ORPHANED_EXIT_STATUS", "POLL_S", "follow", "wait_for_exit"]

POLL_S = 1.0
"""Without a pidfd, how often a worker checks that its starter still runs."""

ORPHANED_EXIT_STATUS = 3
"""A worker ended because the process that started it was gone."""


def follow(pid: int) -> None:
    """End this process once process ``pid`` has ended (on a daemon thread)."""
    threading.Thread(target=_leave_after, args=(pid,), name="cairn-follow", daemon=True).start()


def _leave_after(pid: int) -> None:
    wait_for_exit(pid)
    os._exit(ORPHANED_EXIT_STATUS)


def wait_for_exit(pid: int) -> None:
    """Return once process ``pid`` no longer runs (at once if it never did)."""
    try:
        handle = os.pidfd_open(pid)
    except (AttributeError, OSError):  # no pidfd here, or the process is already gone
        handle = None
    if handle is not None:
        try:
            select.select([handle], [], [])  # readable once the process has ended
        finally:
            os.close(handle)
        return
    while _running(pid):
        time.sleep(POLL_S)


def _running(pid: int) -> bool:
    """Whether ``pid`` runs: it exists and, where ``/proc`` says, is not a zombie (an
    ended process its parent has not reaped yet)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it runs, as another user (the pid was reused)
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True  # no /proc here: it exists
    return state != "Z"
