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

import ctypes
import gc
import os
import threading
import time
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from rich.console import Console

from cairn.codegraph.build import IndexResult
from cairn.codegraph.cache import code_fingerprint
from cairn.codegraph.console import (
    checkpoint_held,
    index_folder,
    index_once,
    release_held,
    stamp_round,
)
from cairn.codegraph.handoff import (
    STOP_ANY,
    STOP_BACKGROUND,
    HandoffServer,
    ask_to_stop,
    handoff_options,
    refusal,
)
from cairn.codegraph.limits import DEFAULT_EXCLUDED_DIRS
from cairn.codegraph.scan import ScanResult, scan_repository
from cairn.codegraph.stamp import compare_since, files_read, remove_stamp, written
from cairn.codegraph.wire import gc_paused
from cairn.errors import CairnError, ValidationError

__all__ = [
    "DEFAULT_DEBOUNCE_MS",
    "MAX_DEBOUNCE_MS",
    "MAX_IDLE_EXIT_S",
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

MAX_IDLE_EXIT_S = 7 * 24 * 3600
"""Upper bound on ``--idle-exit`` (a week)."""

IDLE_YIELD_MS = 250
"""How long the watcher waits, idle, before handing control back (a quiet pass)."""

STAMP_AFTER_S = 2.0
"""A round is stamped on the first quiet pass this long after it (or as the watch
stops): the stamp's tallies walk the graph (~0.5 s on the whole Django sdist), which an
edit made in a burst of edits must not wait for."""

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

LeaveReport = Callable[[str], None]
"""Told why a background watch (``idle_exit``) ended of its own accord."""

RoundReport = Callable[[Mapping[str, Any]], None]
"""Told every round's record (round 0 is the first, full index)."""

Stamper = Callable[[IndexResult, Mapping[str, Any], str | None], None]
"""Stamps a round's outputs as ``cairn index`` stamps its own (``stamp_round``), with
the fixed generated_at the round wrote (None: this process's default)."""


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
    asked_by: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "round": number,
        "asked_by": None if asked_by is None else dict(asked_by),
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
    idle_exit: float | None = None,
    on_leave: LeaveReport | None = None,
) -> int:
    """Index ``path``, then re-index after every batch of changes until ``stop`` is set
    (or ``rounds`` re-indexes were done); returns how many re-indexes ran.

    ``idle_exit`` makes it a background watch (the one ``cairn index`` leaves): it ends
    once no ``cairn index`` asked it for a round for that many seconds (from its start),
    once its socket is removed (its index folder deleted) or taken, or once ``path`` is
    gone, and tells ``on_leave`` why. A watch starting where a background watch runs
    stops that one and takes over."""
    import watchfiles

    if type(debounce_ms) is not int or not 1 <= debounce_ms <= MAX_DEBOUNCE_MS:
        raise ValidationError(
            f"debounce must be an integer in 1..{MAX_DEBOUNCE_MS} ms, got {debounce_ms!r}"
        )
    if idle_exit is not None and not 0 < idle_exit <= MAX_IDLE_EXIT_S:
        raise ValidationError(
            f"idle exit must be in (0, {MAX_IDLE_EXIT_S}] seconds, got {idle_exit!r}"
        )
    root = Path(path).resolve()
    if not root.is_dir():
        raise ValidationError(f"{path} is not a directory", details={"path": str(path)})
    quiet = console or Console(quiet=True)
    # The first index (a minute on a large tree) shows its phases on a terminal, as
    # ``cairn index`` does; the rounds after it are a line each.
    first_round = console is not None and console.is_terminal

    def once(
        generated_at: str | None = None, tallies: bool = False, scan: ScanResult | None = None
    ) -> tuple[dict[str, Any], IndexResult]:
        nonlocal first_round
        show_progress, first_round = first_round, False
        remove_stamp(folder)  # a round that writes voids the stamp first, as cairn index does
        return index_once(
            root,
            console=quiet,
            out=out,
            workers=workers,
            excludes=excludes,
            generated_at=generated_at,
            show_progress=show_progress,
            load=load,
            embedder=embedder,
            remember=True,
            tallies=tallies,
            scan=scan,
        )

    folder = index_folder(root, out)
    # Of the code this watch runs, read before any upgrade of the installed package.
    mine = handoff_options(
        root, folder, code=code_fingerprint(), excludes=excludes, load=load, embedder=embedder
    )

    ignored = watchfiles.DefaultFilter(
        ignore_dirs=sorted(DEFAULT_EXCLUDED_DIRS | set(watchfiles.DefaultFilter.ignore_dirs)),
        ignore_paths=[folder.resolve()],
    )

    def rescan() -> ScanResult:
        return scan_repository(root, excludes=excludes)

    def stamp(result: IndexResult, summary: Mapping[str, Any], at: str | None) -> None:
        stamp_round(root, folder, result, summary, excludes=excludes, load=load, generated_at=at)

    server = HandoffServer(folder)
    ask_to_stop(folder, STOP_BACKGROUND)  # a background watch gives way to this one
    server.bind()  # a second watch of the folder is refused here, before any work
    stop = stop if stop is not None else threading.Event()
    batches = surviving_undecodable(
        lambda: watchfiles.watch(
            root,
            watch_filter=ignored,
            debounce=debounce_ms,
            step=POLL_STEP_MS,
            stop_event=stop,
            raise_interrupt=False,
            rust_timeout=IDLE_YIELD_MS,
            yield_on_timeout=True,
        )
    )
    leave = _Leave(idle_exit, server, root, on_leave) if idle_exit is not None else None
    try:
        return _rounds(
            batches, once, on_round, rounds, server, mine, folder, rescan, stamp, stop, leave
        )
    finally:
        server.close()  # the socket goes last: ``ask_to_stop`` waits for it
        batches.close()


UNDECODABLE_EVENT = ("rescan", "a path that is not UTF-8 changed")
"""The event a batch holds for a change the watcher could not name (see
``surviving_undecodable``): any batch makes a round, which scans the whole tree."""


def surviving_undecodable(
    start: Callable[[], Generator[set[Any], None, None]],
) -> Generator[set[Any], None, None]:
    """The batches of the watcher ``start()`` makes, across its failures on a path that
    is not UTF-8 (watchfiles raises ``Unable to decode path ...`` and its watcher
    ends): a new watcher is subscribed and its first batch comes with
    ``UNDECODABLE_EVENT``, so the round that follows scans what the lost batch held
    (the scan skips that path as ``skipped:undecodable_name``). Before, such a file
    saved in the tree ended ``cairn watch`` with a traceback."""
    batches = start()
    try:
        while True:
            try:
                batch = next(batches)
            except StopIteration:
                return
            except RuntimeError as exc:
                if "decode path" not in str(exc):
                    raise
                batches.close()
                batches = start()
                first = next(batches, None)  # subscribed again before the round scans
                if first is None:
                    return
                batch = first | {UNDECODABLE_EVENT}
            yield batch
    finally:
        batches.close()


def _rounds(
    batches: Iterator[set[Any]],
    once: Callable[..., tuple[dict[str, Any], IndexResult]],
    on_round: RoundReport,
    rounds: int | None,
    server: HandoffServer | None = None,
    mine: Mapping[str, Any] | None = None,
    folder: Path | None = None,
    rescan: Callable[[], ScanResult] | None = None,
    stamp: Stamper | None = None,
    stop: threading.Event | None = None,
    leave: _Leave | None = None,
) -> int:
    """Round 0 (the full index) once the watcher is subscribed, then one round per batch;
    a round that fails is reported with its error and tried again after ``_Retry``'s
    wait (an edit's round comes first if there is one). A failing first index ends the
    watch: there is nothing yet to keep fresh. With ``server``, once round 0 is done a
    ``cairn index`` of the same folder is answered by a round too (``_Rounds.asked``),
    never at the same time as another round; a stop request sets ``stop``. With
    ``leave``, the watch ends (between rounds) when ``leave`` says it is time."""
    # The watcher subscribes before the first index, so an edit made while (or right
    # after) round 0 runs is seen by a later round instead of being lost; what came
    # before the subscription is in round 0's own scan.
    state = _Rounds(once, on_round, folder, rescan, stamp, stop, leave is not None)
    if server is not None and mine is not None:
        # Served from the start: a caller asking during the first index hears progress
        # and is answered after it, instead of waiting in the backlog unheard.
        options = mine
        server.serve(lambda request: state.asked(request, options), state.status)
    try:
        if next(batches, None) is None:
            return 0
        state.first()
        for batch in batches:
            quiet = not batch and not state.retry.due()  # nothing changed, nothing due
            if quiet:
                state.idle()
            # Before a batch's round too: the batch of a removed tree has nothing to index.
            if leave is not None and leave.due(state):
                break
            if quiet:
                continue
            state.batch(len(batch))
            if rounds is not None and state.done >= rounds:
                break
        return state.done
    finally:
        state.started.set()  # a caller still waiting for the first index is refused
        if server is not None:
            server.close(keep_path=True)  # waits for a round it is running
        with state.lock:
            try:
                state.stamp_last()  # a round not yet stamped (stopped right after it)
            finally:
                state.heap.release()
                release_held()


class _Rounds:
    """What the rounds of one watch share (the last manifest's hashes, the retry, the
    heap collector), and the lock that keeps them one at a time: an edit's batch and a
    ``cairn index`` asking through the socket may come together."""

    def __init__(
        self,
        once: Callable[..., tuple[dict[str, Any], IndexResult]],
        on_round: RoundReport,
        folder: Path | None = None,
        rescan: Callable[[], ScanResult] | None = None,
        stamp: Stamper | None = None,
        stop: threading.Event | None = None,
        background: bool = False,
    ) -> None:
        self.once = once
        self.stop = stop
        self.background = background
        self.asked_at = time.monotonic()  # the last answered request (or the start)
        self.stamp = stamp
        # The last round's result, summary and fixed generated_at (None: this process's
        # default), stamped on a quiet pass (``idle``); None once stamped, or when what
        # the round wrote cannot be named by a ``cairn index``'s inputs.
        self.unstamped: tuple[IndexResult, dict[str, Any], str | None] | None = None
        self.stamp_due = 0.0  # time.monotonic() from which a quiet pass stamps it
        self.on_round = on_round
        self.folder = folder
        self.rescan = rescan
        self.lock = threading.Lock()
        # A caller asking goes before the next batch: the watch's own rounds wait while
        # one is waiting (``asking``), so a multi-batch edit does not keep it waiting.
        self.turn = threading.Condition(self.lock)
        self.asking = 0
        self._counting = threading.Lock()
        self.heap = HeapCollector()
        self.retry = _Retry()
        self.previous: dict[str, tuple[str, str | None]] = {}
        self.done = 0
        # A round's tidying (``_tidy``) waits for a quiet pass while a caller waits for
        # its answer: the collection and the checkpoint are not what it asked for.
        self.untidy = False
        # Set once the first index is done (or the watch is over without it): callers
        # asking before wait for it.
        self.started = threading.Event()
        self.ready = False  # the first index was done
        self.running: int | None = None  # the round running, for progress lines
        # What the last round that did not fail read, wrote and said, and the
        # generated_at it wrote (None: this process's now): a caller asking while
        # nothing changed since is answered from these, without a round.
        self.read: dict[str, Any] | None = None
        self.wrote: dict[str, Any] | None = None
        self.summary: dict[str, Any] | None = None
        self.written_at: str | None = None

    def _kept(
        self,
        result: IndexResult,
        summary: dict[str, Any],
        at: str | None,
        stamp_at: str | Literal[False] | None = None,
    ) -> None:
        """Remember a round that did not fail (for ``_unchanged``), and to stamp it with
        ``stamp_at``: the fixed generated_at it wrote, None for this process's default,
        False when it is not to be stamped."""
        self.unstamped = None
        if self.stamp is not None and stamp_at is not False:
            self.unstamped = (result, summary, stamp_at)
            self.stamp_due = time.monotonic() + STAMP_AFTER_S
        if self.folder is None:
            return
        self.read = files_read(result)
        self.wrote = written(self.folder)
        self.summary = summary
        self.written_at = at if at is not None else _default_at()

    def _unchanged(self, asked_at: str | None) -> tuple[dict[str, Any] | None, ScanResult | None]:
        """The last round's summary as "nothing changed" when the tree, the outputs and
        the database are as it left them and the caller's generated_at is the one it
        wrote (or none was asked for: graph.cairn is kept, as a stamped one-shot keeps
        it); else None. With it, the scan made to know, if one was (the round that
        follows uses it)."""
        folder, rescan, read, summary = self.folder, self.rescan, self.read, self.summary
        if folder is None or rescan is None or read is None or summary is None:
            return None, None
        if asked_at is not None and asked_at != self.written_at:
            return None, None
        return compare_since(lambda: written(folder) == self.wrote, rescan, read, summary)

    def first(self) -> None:
        """Round 0: the whole index (its failure ends the watch)."""
        with self.lock:
            self.running = 0
            try:
                with gc_paused():
                    started = time.perf_counter()
                    summary, result = self.once()
                    self.previous = _hashes(result)
                    self._kept(result, summary, None)
                self.ready = True
            finally:
                self.running = None
                self.started.set()
            # The first index's garbage is collected before it is reported (a full
            # collection of its heap takes ~0.5 s on the Django package): an edit made
            # right after the report must not wait for it.
            self.heap.collect()
            trim_heap()
            self.on_round(_record(0, 0, FileChanges(), summary, _since(started)))

    def batch(self, events: int) -> bool:
        """The round of a batch of ``events`` file events (or of a due retry), once no
        caller is waiting to ask; none when the tree, the outputs and the database are
        as the last round left them (a touch, a save of the same bytes, an edit a round
        for a ``cairn index`` already indexed: graph.cairn is not written again for a
        new timestamp). Whether a round ran."""
        with self.turn:
            self.turn.wait_for(lambda: self.asking == 0)
            unchanged, scan = self._unchanged(None)
            if unchanged is not None:
                self.retry.clear()  # what a failed round was to index is indexed
                return False
            try:
                self._round(events, None, scan=scan)
            finally:
                self._tidy_unless_asked()
            return True

    def asked(
        self, request: Mapping[str, Any], options: Mapping[str, Any]
    ) -> dict[str, Any] | None:
        """The reply to a ``cairn index`` asking through the socket: a round indexed with
        its ``generated_at`` and its summary, tallies included; a refusal when its options
        differ from the watch's (``options``); the error a failed round raised; None (no
        answer: the caller indexes itself) when the watch ended before its first index
        was done."""
        if "stop" in request:
            return self._stop_asked(request.get("stop"))
        reason = refusal(options, request)
        if reason is not None:  # a background watch is then stopped and started anew
            return {"refused": reason, "background": self.background}
        self.asked_at = time.monotonic()
        self.started.wait()
        if not self.ready:  # the first index failed, or the watch stopped first
            return None
        try:
            generated_at = _generated_at(request)
        except CairnError as exc:
            return {"error": exc.to_problem(), "round": None}
        named = request.get("generated_at") is not None or bool(request.get("source_date_epoch"))
        pid = request.get("pid")
        asker = {"pid": pid if isinstance(pid, int) else None}
        with self._counting:
            self.asking += 1
        try:
            with self.lock:
                unchanged, scan = self._unchanged(generated_at if named else None)
                if unchanged is not None:
                    return {"summary": unchanged, "round": self.done}
                number, summary, problem = self._round(
                    0,
                    asker,
                    _stamp_at(generated_at, named),
                    generated_at=generated_at,
                    tallies=True,
                    scan=scan,
                )
                self.untidy = True  # tidied on the next quiet pass, after the reply
        finally:
            self.asked_at = time.monotonic()
            with self._counting:
                self.asking -= 1
            with self.turn:
                self.turn.notify_all()
        if summary is None:
            return {"error": problem, "round": number}
        return {"summary": summary, "round": number}

    def _stop_asked(self, which: object) -> dict[str, Any]:
        """The reply to a stop request: ``stopping`` (the watch ends after the round it
        is running), or a refusal (a foreground watch asked to stop as a background one,
        a watch that cannot be stopped this way, an unknown request)."""
        if which not in (STOP_ANY, STOP_BACKGROUND):
            return {"refused": f"unknown stop request {which!r}"}
        if self.stop is None:
            return {"refused": "this watch cannot be stopped through its socket"}
        if which == STOP_BACKGROUND and not self.background:
            return {"refused": "this watch runs in the foreground"}
        self.stop.set()  # the loop ends at its next pass, after the round it runs
        return {"stopping": True, "background": self.background}

    def _round(
        self,
        events: int,
        asker: dict[str, Any] | None,
        stamp_at: str | Literal[False] | None = None,
        **options: Any,
    ) -> tuple[int, dict[str, Any] | None, dict[str, Any] | None]:
        """One round after round 0 (the lock held): its number, and its summary or, when
        it failed, the error's problem document (it is then tried again after
        ``_Retry``'s wait). ``stamp_at``: as ``_kept``'s."""
        self.done += 1
        number = self.running = self.done
        with gc_paused():
            started = time.perf_counter()
            try:
                summary, result = self.once(**options)
            except CairnError as exc:
                # A failed round leaves nothing half-made (its Python round state,
                # printed segments and database handle are dropped); what it was to
                # index is indexed by the retry or the next edit's round.
                self.unstamped = None  # what it wrote before failing is no round's
                error = _failed(exc, self.retry.failed())
                seconds = _since(started)
                self.on_round(_record(number, events, FileChanges(), {}, seconds, error, asker))
                return number, None, exc.to_problem()
            finally:
                self.running = None
            self.retry.clear()
            self._kept(result, summary, options.get("generated_at"), stamp_at)
            current = _hashes(result)
            changes = file_changes(self.previous, current)
            self.previous = current
            seconds = _since(started)
            self.on_round(_record(number, events, changes, summary, seconds, None, asker))
            return number, summary, None

    def status(self) -> str:
        """What the watch is doing, for a waiting caller's progress line."""
        running = self.running
        if running == 0 or not self.started.is_set():
            return "its first index"
        if running is not None:
            return f"round {running}"
        return "between rounds"

    def idle(self) -> None:
        """A quiet pass of the watch's loop: tidy after a round whose tidying waited,
        then stamp the last round (nothing happens while a caller is asking or a round
        runs)."""
        stamping = self.unstamped is not None and time.monotonic() >= self.stamp_due
        if not (self.untidy or stamping) or self.asking:
            return
        if self.lock.acquire(blocking=False):
            try:
                if self.untidy and not self.asking:
                    self._tidy()
                elif stamping and not self.asking:
                    self.stamp_last()
            finally:
                self.lock.release()

    def stamp_last(self) -> None:
        """Stamp the last round (``cairn.codegraph.console.stamp_round``): a ``cairn
        index`` once the watch stopped then finds nothing changed. On a quiet pass
        ``STAMP_AFTER_S`` after the round, or as the watch stops."""
        unstamped, self.unstamped = self.unstamped, None
        if unstamped is None or self.stamp is None or self.folder is None:
            return
        if written(self.folder) == self.wrote:  # no other writer came in since the round
            result, summary, at = unstamped
            self.stamp(result, summary, at)

    def _tidy_unless_asked(self) -> None:
        """After the watch's own round: tidy now, or on a quiet pass when a caller is
        waiting to ask (on the sdist the collection alone took 0.34-0.42 s, which the
        caller waited for before its answer)."""
        if self.asking:
            self.untidy = True
        else:
            self._tidy()

    def _tidy(self) -> None:
        """Between rounds, while idle: the round's garbage cycles, the log's pages."""
        self.untidy = False
        self.heap.collect()
        trim_heap()
        checkpoint_held()  # the round's log pages into the file, while idle


class _Leave:
    """When a background watch ends of its own accord (checked on a quiet pass)."""

    def __init__(
        self, idle_exit: float, server: HandoffServer, root: Path, report: LeaveReport | None
    ) -> None:
        self.idle_exit = idle_exit
        self.server = server
        self.root = root
        self.report = report

    def due(self, state: _Rounds) -> bool:
        """Whether the watch ends now (told to ``report``): idle long enough, its socket
        removed or taken, or its tree gone; never while a caller asks or a round runs."""
        if state.asking or state.running is not None:
            return False
        reason = self._reason(state)
        if reason is None:
            return False
        if self.report is not None:
            self.report(reason)
        return True

    def _reason(self, state: _Rounds) -> str | None:
        idle = time.monotonic() - state.asked_at
        if idle >= self.idle_exit:
            return f"no cairn index asked for {self.idle_exit:g} s"
        if self.server.listener is not None and not self.server.holds_path():
            return f"its socket {self.server.path} was removed or taken"
        if not self.root.is_dir():
            return f"{self.root} is gone"
        return None


def _stamp_at(generated_at: str, named: bool) -> str | Literal[False] | None:
    """What an asked round is stamped with (``_Rounds._kept``): the caller's fixed
    ``generated_at``; None (this process's default) when the caller named none and this
    process has no ``SOURCE_DATE_EPOCH`` either (both write the time of writing); else
    False: the round wrote the time where this process would write its epoch."""
    if named:
        return generated_at
    return None if _default_at() is None else False


def _default_at() -> str | None:
    """The generated_at a round writes when none is asked for: this process's
    ``SOURCE_DATE_EPOCH``, or None for "now" (different at every write)."""
    if not os.environ.get("SOURCE_DATE_EPOCH", "").strip().isdigit():
        return None
    from cairn.artifact.format import resolve_generated_at

    return resolve_generated_at(None)


def _generated_at(request: Mapping[str, Any]) -> str:
    """The ``generated_at`` the asking ``cairn index`` would have written: its option,
    else its ``SOURCE_DATE_EPOCH``, else now."""
    from cairn.artifact.format import resolve_generated_at

    given, epoch = request.get("generated_at"), request.get("source_date_epoch")
    if given is not None and not isinstance(given, str):
        raise ValidationError(f"generated_at must be a string, got {given!r}")
    environ = {"SOURCE_DATE_EPOCH": epoch} if isinstance(epoch, str) else {}
    return resolve_generated_at(given, environ=environ)


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


def trim_heap() -> None:
    """Hand the C allocator's free pages back to the system (glibc's ``malloc_trim``;
    nothing where it is missing). A round frees most of what it allocated, but glibc
    keeps the freed pages of its heap mapped: after the first index of the whole Django
    sdist the watch held 1,718 MiB resident, 1,384 MiB once trimmed (~0.1 s)."""
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


def _malloc_trim() -> Callable[[int], int] | None:
    try:
        libc = ctypes.CDLL(None)
        function: Callable[[int], int] = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    return function


_MALLOC_TRIM = _malloc_trim()


def _since(started: float) -> float:
    return time.perf_counter() - started
