"""Job slots shared by a pool's worker processes: at most N of them run a gated job at once.

The parent of an index resolves Python on its own core while the workers make documents
for the load (``cairn.codegraph.build.Preparing``); with every worker on documents, the
busy processes outnumber the cores and the resolution the whole index waits for slows
down. So the documents jobs take a slot first: one of N files, each locked with ``flock``
by at most one process at a time. A lock is the kernel's: it is released when its holder
ends, however it ends, so a killed worker never keeps a slot.

The files are anonymous where Linux allows (``memfd_create``; a worker opens each again
through ``/proc/PARENT/fd/N``, a lock of its own), so nothing is left behind even when the
parent is killed; elsewhere they are files in a new temporary folder. A worker opens them
once, when it starts, so the parent keeps them until the last gated job has ended
(``cairn.codegraph.build.Preparing.hold``). A worker that cannot open them runs its jobs
without a slot: slower to overlap, never wrong.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

__all__ = ["JobSlots", "make_slots", "slot", "take_slots"]

_PREFIX = "cairn-slots-"
"""Name of the anonymous files, and prefix of the temporary folder where there are none."""


class JobSlots:
    """``count`` lock files for a pool's workers to open (``paths``, passed to
    ``take_slots`` in their initializer); ``remove`` closes or deletes them."""

    def __init__(self, count: int) -> None:
        if count < 1:
            raise ValueError("a pool needs at least one job slot")
        self.descriptors: list[int] = []
        self.folder: Path | None = None
        try:
            if hasattr(os, "memfd_create") and Path(f"/proc/{os.getpid()}/fd").is_dir():
                self.descriptors = [os.memfd_create(_PREFIX, os.MFD_CLOEXEC) for _ in range(count)]
                self.paths = tuple(f"/proc/{os.getpid()}/fd/{fd}" for fd in self.descriptors)
            else:
                self.folder = Path(tempfile.mkdtemp(prefix=_PREFIX))
                self.paths = tuple(str(self.folder / f"slot-{n}") for n in range(count))
                for path in self.paths:
                    Path(path).touch()
        except OSError:
            self.remove()
            raise

    def remove(self) -> None:
        """Close or delete the lock files (the workers that opened them keep theirs)."""
        for descriptor in self.descriptors:
            os.close(descriptor)
        self.descriptors = []
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)


def make_slots(count: int) -> JobSlots | None:
    """``JobSlots(count)``, or None where they cannot be made (the pool's jobs then run
    without slots: slower to overlap, never wrong)."""
    try:
        return JobSlots(count)
    except OSError:
        return None


class _Held:
    """This process's open lock files (a worker's, after ``take_slots``)."""

    descriptors: tuple[int, ...] = ()


def take_slots(paths: Sequence[str]) -> None:
    """In a worker, open the pool's lock files for ``slot`` (those that still exist), in
    place of any this process held."""
    for descriptor in _Held.descriptors:
        os.close(descriptor)
    _Held.descriptors = ()
    descriptors = []
    for path in paths:
        try:
            descriptors.append(os.open(path, os.O_RDWR | os.O_CLOEXEC))
        except OSError:  # closed already: this worker runs its jobs without a slot
            continue
    _Held.descriptors = tuple(descriptors)


@contextlib.contextmanager
def slot() -> Iterator[None]:
    """Hold one of this worker's slots for the body: a free one if any, else wait for
    one (the one this process's ID picks); no slot at all without ``take_slots``."""
    descriptors = _Held.descriptors
    if not descriptors:
        yield
        return
    held = _free(descriptors)
    if held is None:
        held = descriptors[os.getpid() % len(descriptors)]
        fcntl.flock(held, fcntl.LOCK_EX)
    try:
        yield
    finally:
        fcntl.flock(held, fcntl.LOCK_UN)


def _free(descriptors: Sequence[int]) -> int | None:
    """The first of ``descriptors`` locked here without waiting, or None."""
    for descriptor in descriptors:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            continue
        return descriptor
    return None
