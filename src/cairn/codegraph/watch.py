"""``cairn watch``: keep the index following the files as they change.

One full index first (with the extraction cache), then, for every debounced batch of
file events under the repository (``watchfiles``, inotify on Linux), one more index,
write and load: only changed files are parsed again, and the load commits only what
changed, so a running ``cairn serve`` or ``cairn mcp`` on the same database sees the new
position at its next read. Events inside the index folder itself and in the directories
indexing never descends into are ignored, so the watcher's own writes never wake it.
Each round is reported as a plain record: the files added, removed and changed (by
content hash against the previous round), the load's changes and position, the files
not fully indexed, and the round's time by phase. A round that fails (the database
busy, a full disk) is reported with its error and tried again a moment later, so the
watch goes on and no edit waits for the next one.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from cairn.codegraph.build import IndexResult
from cairn.codegraph.console import checkpoint_held, index_folder, index_once, release_held
from cairn.codegraph.limits import DEFAULT_EXCLUDED_DIRS
from cairn.codegraph.wire import gc_paused
from cairn.errors import CairnError, ValidationError

__all__ = [
    "DEFAULT_DEBOUNCE_MS",
    "MAX_DEBOUNCE_MS",
    "FileChanges",
    "RoundReport",
    "file_changes",
    "watch_repository",
]

DEFAULT_DEBOUNCE_MS = 100
"""The longest a batch of events (one re-index) gathers before it is re-indexed."""

MAX_DEBOUNCE_MS = 60_000
"""Upper bound on ``--debounce``."""

POLL_STEP_MS = 20
"""A batch closes once no new event came for this long (and the watcher checks for a
stop request this often). An editor's save (write, or temporary file and rename) sends
its events within a few milliseconds; each millisecond here is one more an edit waits
before it is searchable (50 ms, watchfiles' default, was half the time from a save to
the start of its re-index)."""

IDLE_YIELD_MS = 250
"""How long the watcher waits, idle, before handing control back (a quiet pass)."""

RETRY_FIRST_S = 1.0
"""A round that failed (the database busy, a full disk) is tried again this long after,
edit or not: its files must not wait for the next edit to be indexed."""

RETRY_MAX_S = 30.0
"""Each next failure in a row doubles the wait, up to this."""

FULL_COLLECT_GROWTH = 0.25
"""Between rounds only the objects a round left behind are searched for garbage cycles;
the whole heap is searched again once the objects kept since its last full search have
grown by this share (the rule CPython applies to its oldest generation). A full search
of the whole Django sdist's heap takes ~2.5 s, longer than a round, and finds almost
nothing: rounds free what they replace by reference counting."""

RoundReport = Callable[[Mapping[str, Any]], None]
"""Told every round's record (round 0 is the first, full index)."""


@dataclass(frozen=True, slots=True)
class FileChanges:
    """Which indexed files a round added, removed or changed (by content hash)."""

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()

    def to_json(self) -> dict[str, list[str]]:
        """Plain JSON form."""
        return {
            "added": list(self.added),
            "removed": list(self.removed),
            "changed": list(self.changed),
        }


def _hashes(result: IndexResult) -> dict[str, tuple[str, str | None]]:
    # Files only: a pruned directory's row (``.cairn/`` once the first round made it)
    # is no edit.
    rows = result.manifest.entries
    return {row.path: (row.outcome, row.sha256) for row in rows if not row.path.endswith("/")}


def file_changes(
    before: Mapping[str, tuple[str, str | None]], after: Mapping[str, tuple[str, str | None]]
) -> FileChanges:
    """The difference of two manifests' ``path -> (outcome, sha256)`` maps."""
    return FileChanges(
        tuple(sorted(set(after) - set(before))),
        tuple(sorted(set(before) - set(after))),
        tuple(sorted(path for path in set(before) & set(after) if before[path] != after[path])),
    )


def _record(
    number: int,
    events: int,
    changes: FileChanges,
    summary: Mapping[str, Any],
    seconds: float,
    error: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "round": number,
        "events": events,
        "files": changes.to_json(),
        "load": summary.get("load"),
        "problems": summary.get("problems", []),
        "counts": summary.get("counts"),
        "python_rounds": summary.get("python_rounds"),
        "phase_seconds": summary.get("phase_seconds"),
        "searchable_seconds": summary.get("searchable_seconds"),
        "seconds": round(seconds, 3),
        "error": None if error is None else dict(error),
    }


def _failed(exc: CairnError, retry_seconds: float) -> dict[str, Any]:
    """A failed round's ``error``: what failed, and when the round is tried again."""
    return {"code": exc.code, "message": exc.message, "retry_seconds": retry_seconds}


class _Retry:
    """When a failed round is tried again without an edit: ``RETRY_FIRST_S`` after a
    first failure, twice as long after each next one in a row, at most ``RETRY_MAX_S``."""

    def __init__(self) -> None:
        self.delay: float | None = None
        self.at: float | None = None

    def failed(self) -> float:
        """Note a failure; the seconds until the next try."""
        self.delay = RETRY_FIRST_S if self.delay is None else min(2 * self.delay, RETRY_MAX_S)
        self.at = time.monotonic() + self.delay
        return self.delay

    def due(self) -> bool:
        return self.at is not None and time.monotonic() >= self.at

    def clear(self) -> None:
        self.delay = self.at = None


def watch_repository(
    path: str | Path,
    *,
    on_round: RoundReport,
    out: str | Path | None = None,
    workers: int | None = None,
    excludes: Sequence[str] = (),
    debounce_ms: int = DEFAULT_DEBOUNCE_MS,
    load: bool = True,
    stop: threading.Event | None = None,
    rounds: int | None = None,
    console: Console | None = None,
    embedder: str | None = None,
) -> int:
    """Index ``path``, then re-index after every batch of changes until ``stop`` is set
    (or ``rounds`` re-indexes were done); returns how many re-indexes ran."""
    import watchfiles

    if type(debounce_ms) is not int or not 1 <= debounce_ms <= MAX_DEBOUNCE_MS:
        raise ValidationError(
            f"debounce must be an integer in 1..{MAX_DEBOUNCE_MS} ms, got {debounce_ms!r}"
        )
    root = Path(path).resolve()
    if not root.is_dir():
        raise ValidationError(f"{path} is not a directory", details={"path": str(path)})
    quiet = console or Console(quiet=True)

    def once() -> tuple[dict[str, Any], IndexResult]:
        return index_once(
            root,
            console=quiet,
            out=out,
            workers=workers,
            excludes=excludes,
            load=load,
            embedder=embedder,
            remember=True,
        )

    ignored = watchfiles.DefaultFilter(
        ignore_dirs=sorted(DEFAULT_EXCLUDED_DIRS | set(watchfiles.DefaultFilter.ignore_dirs)),
        ignore_paths=[index_folder(root, out).resolve()],
    )
    batches = watchfiles.watch(
        root,
        watch_filter=ignored,
        debounce=debounce_ms,
        step=POLL_STEP_MS,
        stop_event=stop,
        raise_interrupt=False,
        rust_timeout=IDLE_YIELD_MS,
        yield_on_timeout=True,
    )
    try:
        return _rounds(batches, once, on_round, rounds)
    finally:
        batches.close()


def _rounds(
    batches: Iterator[set[Any]],
    once: Callable[[], tuple[dict[str, Any], IndexResult]],
    on_round: RoundReport,
    rounds: int | None,
) -> int:
    """Round 0 (the full index) once the watcher is subscribed, then one round per batch;
    a round that fails is reported with its error and tried again after ``_Retry``'s
    wait (an edit's round comes first if there is one). A failing first index ends the
    watch: there is nothing yet to keep fresh."""
    # The watcher subscribes before the first index, so an edit made while (or right
    # after) round 0 runs is seen by a later round instead of being lost; what came
    # before the subscription is in round 0's own scan.
    if next(batches, None) is None:
        return 0
    heap = HeapCollector()
    try:
        with gc_paused():
            started = time.perf_counter()
            summary, result = once()
            previous = _hashes(result)
        # The first index's garbage is collected before it is reported (a full
        # collection of its heap takes ~0.5 s on the Django package): an edit made
        # right after the report must not wait for it.
        heap.collect()
        on_round(_record(0, 0, FileChanges(), summary, _since(started)))
        done = 0
        retry = _Retry()
        for batch in batches:
            if not batch and not retry.due():  # a quiet pass: nothing changed, nothing due
                continue
            with gc_paused():
                started = time.perf_counter()
                done += 1
                try:
                    summary, result = once()
                except CairnError as exc:
                    # A failed round leaves nothing half-made (its Python round state,
                    # printed segments and database handle are dropped); what it was to
                    # index is indexed by the retry or the next edit's round.
                    error = _failed(exc, retry.failed())
                    on_round(_record(done, len(batch), FileChanges(), {}, _since(started), error))
                else:
                    retry.clear()
                    current = _hashes(result)
                    changes = file_changes(previous, current)
                    previous = current
                    on_round(_record(done, len(batch), changes, summary, _since(started)))
            heap.collect()
            checkpoint_held()  # the round's log pages into the file, while idle
            if rounds is not None and done >= rounds:
                break
        return done
    finally:
        heap.release()
        release_held()


class HeapCollector:
    """Garbage-cycle collection between watch rounds, in time with what a round allocates.

    A round runs with the collector paused and allocates ~10^6 objects; collected after
    its report (while idle), so the first allocation after the pause does not run a
    collection inside the next thing timed. What survives is frozen (``gc.freeze``):
    the next collection searches only what later rounds leave, and the whole heap only
    once the frozen objects have grown by ``growth`` since its last full search.
    """

    def __init__(self, growth: float = FULL_COLLECT_GROWTH) -> None:
        self.growth = growth
        self.searched: int | None = None  # frozen objects after the last full search

    def collect(self) -> int:
        """Collect cycles among the objects left since the last call (or in the whole
        heap, see the class); returns how many unreachable objects were found."""
        full = self.searched is None or gc.get_freeze_count() > self.searched * (1 + self.growth)
        if full:
            gc.unfreeze()
        found = gc.collect()
        gc.freeze()
        if full:
            self.searched = gc.get_freeze_count()
        return found

    def release(self) -> None:
        """Hand every frozen object back to the collector (the watch is over)."""
        gc.unfreeze()
        self.searched = None


def _since(started: float) -> float:
    return time.perf_counter() - started
