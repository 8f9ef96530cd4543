"""Worker processes end with the process that started them.

A process pool's workers hold their own task queue's pipe open (a forkserver passes
both ends to each of them; a fork copies them), so when the process that started the
pool dies without shutting it down (SIGTERM's default action, SIGKILL, an ``os._exit``,
an agent's timeout killing ``cairn index``) they never read end-of-file and wait
forever, ~90 MB each, with the forkserver beside them. ``follow(pid)``, called in a
worker's initializer, starts a daemon thread that waits for ``pid`` to end and then
ends the worker at once. The wait is a pidfd where the kernel has one (Linux 5.3+: no
polling, woken by the exit itself), else a check every ``POLL_S``.

The other way round, a process that ends while a pool still works must not wait for
it: ``leave_at_once`` kills them and ends without multiprocessing's exit handler,
which joins the pool's queue threads (a pool whose workers are gone never releases
them). And a worker leaves Ctrl-C to its starter (``worker_of``): a
terminal's SIGINT reaches the whole process group, and a worker interrupted while it
writes a result leaves half a message in the pipe that the starter's pool then waits
on forever.
"""

from __future__ import annotations

import atexit
import os
import select
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any, NoReturn

__all__ = [
    "ORPHANED_EXIT_STATUS",
    "POLL_S",
    "exit_flushed",
    "follow",
    "leave_at_once",
    "running_children",
    "wait_for_exit",
    "worker_of",
]

POLL_S = 1.0
"""Without a pidfd, how often a worker checks that its starter still runs."""

ORPHANED_EXIT_STATUS = 3
"""A worker ended because the process that started it was gone."""


def follow(pid: int) -> None:
    """End this process once process ``pid`` has ended (on a daemon thread)."""
    threading.Thread(target=_leave_after, args=(pid,), name="cairn-follow", daemon=True).start()


def worker_of(pid: int) -> None:
    """Set up a pool worker of process ``pid``: it ends once ``pid`` has ended
    (``follow``) and ignores SIGINT, which ``pid`` acts on for the whole pool."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    follow(pid)


def running_children() -> list[Any]:
    """This process's multiprocessing children that still run (none if it never
    started any: multiprocessing is not imported for that)."""
    multiprocessing = sys.modules.get("multiprocessing")
    return [] if multiprocessing is None else list(multiprocessing.active_children())


def exit_flushed(status: int) -> NoReturn:
    """Flush the standard streams and end the process with ``status`` (1 if a stream
    could not be flushed: a closed pipe, ``cairn ... | head``), skipping the
    interpreter's teardown."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            status = status or 1
    os._exit(status)


def leave_at_once(status: int) -> NoReturn:
    """End this process with ``status`` while a pool of it may still be working: its
    semaphores are unlinked, its workers killed, the other exit handlers run, the
    streams flushed, and the interpreter's teardown skipped.

    multiprocessing's own exit handler is left out: it joins the pool's queue threads,
    which a pool whose workers are gone never releases (a feeder blocked on a full
    pipe, a manager reading half a result). Only for a process whose work is
    abandoned: what it wrote must already be whole (Cairn's writes are atomic)."""
    util = sys.modules.get("multiprocessing.util")
    if util is not None:
        atexit.unregister(util._exit_function)
        # What that handler does first, without its joins: the finalizers of priority
        # 0 and up close queues and unlink semaphores (else the resource tracker warns
        # of leaked ones as it cleans them up); those that join threads have negative
        # priorities. They run before the workers are killed: a pool that then finds
        # them gone drops its queues on another thread, whose finalizers could be cut
        # off there between a semaphore's unlink and the tracker being told.
        util._run_finalizers(0)
    for child in running_children():
        child.kill()
    atexit._run_exitfuncs()
    exit_flushed(status)


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
