"""Cheap process hand-off for extraction results: compact pickling and a paused collector.

Worker processes return one ``FileExtract`` tree per file; with default pickling every
frozen, slotted record travels as ``__newobj__`` plus a state list that is replayed
through ``object.__setattr__`` one field at a time, and the cyclic collector rescans the
growing heap on every allocation burst. Registering a reducer that sends a record as
``(cls, field values)`` (rebuilt by the dataclass constructor, the same value) and
pausing the collector while results stream in cut the main process's unpickling of the
Django package from ~5.7 s to ~0.9 s. Importing this module registers the reducers;
both the workers and the indexing process import it, so both sides agree.
"""

from __future__ import annotations

import copyreg
import dataclasses
import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from cairn.codegraph import records, scan
from cairn.orphans import worker_of

__all__ = ["WORKER_GC_EVERY_FILES", "gc_paused", "register_reducers", "worker_initializer"]

WORKER_GC_EVERY_FILES = 64
"""A worker (collector paused) runs one full collection after this many files."""

_Reducer = Callable[[Any], tuple[type, tuple[Any, ...]]]
_REGISTERED: set[type] = set()


def _reducer(names: tuple[str, ...]) -> _Reducer:
    def reduce(obj: Any) -> tuple[type, tuple[Any, ...]]:
        return type(obj), tuple([getattr(obj, name) for name in names])

    return reduce


def _record_classes() -> Iterator[type]:
    for module in (records, scan):
        for name in module.__all__:
            value = getattr(module, name)
            if isinstance(value, type) and dataclasses.is_dataclass(value):
                yield value


def register_reducers() -> None:
    """Pickle every extraction record as ``(cls, field values)`` (idempotent)."""
    for cls in _record_classes():
        if cls in _REGISTERED:
            continue
        names = tuple(f.name for f in dataclasses.fields(cls) if f.init)
        if len(names) != len(dataclasses.fields(cls)):
            continue  # a field outside __init__ cannot travel through the constructor
        copyreg.pickle(cls, _reducer(names))
        _REGISTERED.add(cls)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Disable the cyclic garbage collector inside the block (restoring its prior state)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class _WorkerState:
    """Whether this process is an extraction worker, and how many files it has done."""

    active = False
    files = 0


def worker_initializer(starter: int | None = None) -> None:
    """Set up an extraction worker: compact reducers, collector paused (see
    ``worker_tick``), and, given ``starter`` (the pid of the process that started the
    pool), its end when that process ends and SIGINT left to it
    (``cairn.orphans.worker_of``)."""
    if starter is not None:
        worker_of(starter)
    register_reducers()
    gc.disable()
    _WorkerState.active = True


def worker_tick() -> None:
    """In a worker, collect cyclic garbage once every ``WORKER_GC_EVERY_FILES`` files.

    The worker's heap is small (one file's syntax tree at a time), so a full collection
    is cheap; the indexing process itself never collects here (its heap holds every
    extract and would be rescanned for nothing).
    """
    if not _WorkerState.active:
        return
    _WorkerState.files += 1
    if _WorkerState.files % WORKER_GC_EVERY_FILES == 0:
        gc.collect()


register_reducers()
