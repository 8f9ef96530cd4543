"""Terminal side of ``cairn index``: a progress bar on a terminal, quiet otherwise, a summary.

The CLI stays thin: it parses options and calls ``index_and_write``, which indexes,
writes the artifact and the manifest, loads the database next to them, and prints
readable tables unless JSON was asked for.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

from cairn.codegraph.build import (
    IndexResult,
    WrittenIndex,
    default_workers,
    index_repository,
    index_summary,
    write_index,
)
from cairn.codegraph.cache import CACHE_FILENAME
from cairn.codegraph.handoff import folder_of
from cairn.codegraph.report import print_repairs, print_summary
from cairn.codegraph.wire import gc_paused
from cairn.store.locate import DATABASE_FILE

if TYPE_CHECKING:
    from cairn.artifact.segments import PrintedSegments
    from cairn.codegraph.scan import ScanResult
    from cairn.embed import Embedder
    from cairn.store.commands import VectorSpace
    from cairn.store.database import Database
    from cairn.store.load import LoadProgress
    from cairn.store.loadkeys import KeyMemo

__all__ = [
    "checkpoint_held",
    "choose_embedder",
    "index_and_write",
    "index_folder",
    "index_once",
    "print_repairs",
    "print_summary",
    "release_held",
    "stamp_round",
]


class _Steps:
    """What ``cairn index`` is doing, as one line: the phase, and the files while
    extracting; and when each phase began, for the summary's ``phase_seconds``."""

    def __init__(self, bar: Progress | None) -> None:
        self.bar = bar
        self.task = bar.add_task("starting", total=None) if bar is not None else None
        self.marks: list[tuple[str, float]] = []

    def phase(self, name: str) -> None:
        self.marks.append((name, time.perf_counter()))
        if self.bar is not None and self.task is not None:
            self.bar.update(self.task, description=name, completed=0, total=None)

    def seconds(self) -> dict[str, float]:
        """Wall seconds of each phase so far, in the order they ran (to now)."""
        ends = [at for _, at in self.marks[1:]] + [time.perf_counter()]
        spent: dict[str, float] = {}
        for (name, began), ended in zip(self.marks, ends, strict=True):
            spent[name] = round(spent.get(name, 0.0) + ended - began, 3)
        return spent

    def files(self, done: int, total: int) -> None:
        if self.bar is not None and self.task is not None:
            self.bar.update(self.task, completed=done, total=total)

    def loading(self, step: str) -> None:
        self.phase(f"loading: {step}")


@contextmanager
def _progress(console: Console, enabled: bool) -> Iterator[_Steps]:
    """A transient progress line on a terminal (every phase: scan to load); nothing else."""
    if not enabled:
        yield _Steps(None)
        return
    bar = Progress(
        SpinnerColumn(),
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )
    with bar:
        yield _Steps(bar)


def index_and_write(
    path: str | Path,
    *,
    out: str | Path | None = None,
    workers: int | None = None,
    excludes: Sequence[str] = (),
    generated_at: str | None = None,
    as_json: bool = False,
    load: bool = True,
    embedder: str | None = None,
    force: bool = False,
) -> dict[str, Any]:
    """Index ``path``, write ``graph.cairn`` and the manifest, load the database, summarise.

    The database is ``cairn.db`` next to ``graph.cairn`` (``PATH/.cairn/cairn.db`` by
    default); loading applies only what changed, as one atomic command. On a terminal
    (and without ``as_json``) one transient line shows each phase as it runs.
    ``embedder`` names the embedder (``cairn.embed.load_embedder``; see ``choose_embedder``).
    A run whose inputs and outputs are all as the last whole run left them says so and
    does nothing else, unless ``force`` (``cairn.codegraph.stamp``).
    """
    from cairn.codegraph import stamp
    from cairn.embed import names_space
    from cairn.store.load import loaded_space

    console = Console(stderr=as_json)
    folder = index_folder(path, out)

    def fingerprint_for(space: VectorSpace | None) -> str:
        return stamp.inputs_fingerprint(
            Path(path),
            folder,
            excludes=excludes,
            generated_at=generated_at,
            load=load,
            space=None if space is None else _space_input(space),
        )

    # A re-index naming no embedder takes the one the database was loaded with: its
    # recorded space is compared, without loading the model, to know nothing changed;
    # so is a named one whose space is the recorded one (``names_space``).
    recorded = loaded_space(folder / DATABASE_FILE) if load else None
    chosen = None
    if load and embedder and (recorded is None or not names_space(embedder, recorded)):
        chosen = choose_embedder(embedder, folder / DATABASE_FILE)
    known = chosen.space if chosen is not None else recorded
    unchanged, scan = (None, None)
    if not force and (known is not None or not load):
        unchanged, scan = stamp.unchanged_summary(
            Path(path), folder, fingerprint_for(known), excludes
        )
    if unchanged is not None:
        unchanged["workers"] = workers if workers is not None else default_workers()
        if not as_json:
            print_summary(console, unchanged)
        return unchanged
    if load and chosen is None:
        chosen = (
            choose_embedder(embedder, folder / DATABASE_FILE)
            if embedder
            else _recorded_embedder(recorded)
        )
    fingerprint = fingerprint_for(None if chosen is None else chosen.space)
    stamp.remove_stamp(folder)
    with gc_paused():
        summary, result = index_once(
            path,
            console=console,
            out=out,
            workers=workers,
            excludes=excludes,
            generated_at=generated_at,
            show_progress=console.is_terminal and not as_json,
            load=load,
            embedder=chosen,
            scan=scan,
        )
        stamp.write_stamp(folder, fingerprint, result, summary)
        del result  # only the summary outlives the work
        # Everything allocated while the collector was off sits in its youngest
        # generation: the first collection after it is back on would walk those ~10^6
        # objects (~0.3 s on the Django package) to find no cycles. Moved to the
        # permanent generation, they are skipped; reference counting still frees them.
        gc.freeze()
    if not as_json:
        print_summary(console, summary)
    return summary


def stamp_round(
    root: Path,
    folder: Path,
    result: IndexResult,
    summary: Mapping[str, Any],
    *,
    excludes: Sequence[str],
    load: bool,
    generated_at: str | None,
) -> bool:
    """Stamp a ``cairn watch`` round as ``cairn index`` stamps its run, so that a ``cairn
    index`` once the watch has stopped says "nothing changed" when nothing did, instead
    of indexing whole. ``generated_at``: the fixed one the round wrote, or None when it
    wrote this process's ``SOURCE_DATE_EPOCH`` or the time (``stamp.fixed_time``). The
    stamped summary gets the tallies a round leaves out (``index_summary``). False when
    it cannot be stamped (``write_stamp``)."""
    from cairn.codegraph import stamp
    from cairn.store.commands import VectorSpace

    space = summary.get("embedder")
    fingerprint = stamp.inputs_fingerprint(
        root,
        folder,
        excludes=excludes,
        generated_at=generated_at,
        load=load,
        space=None if space is None else _space_input(VectorSpace.from_json(space)),
    )
    # As a one-shot's summary: its keys in their order, tallies included, no rounds.
    whole = {**index_summary(result), **summary, "python_rounds": None}
    return stamp.write_stamp(folder, fingerprint, result, whole)


def _space_input(space: VectorSpace) -> dict[str, Any]:
    """What the stamp's fingerprint holds of the embedder: its space and the installed
    versions of what it needs to run here (``cairn.embed.space_requirements``)."""
    from cairn.embed import space_requirements

    return {**space.to_json(), "requires": space_requirements(space)}


def index_folder(path: str | Path, out: str | Path | None) -> Path:
    """Where ``cairn index`` writes: ``out``, else ``PATH/.cairn``."""
    return folder_of(path, out)


def index_once(
    path: str | Path,
    *,
    console: Console,
    out: str | Path | None = None,
    workers: int | None = None,
    excludes: Sequence[str] = (),
    generated_at: str | None = None,
    show_progress: bool = False,
    load: bool = True,
    embedder: str | Embedder | None = None,
    remember: bool = False,
    tallies: bool | None = None,
    scan: ScanResult | None = None,
) -> tuple[dict[str, Any], IndexResult]:
    """One index, write and load (with the extraction cache), without printing the
    summary: the summary and the index result (``cairn index`` and ``cairn watch``;
    ``remember`` keeps the extracts in this process for the next round, and leaves out
    the summary's tallies, which a watch round does not report, unless ``tallies``:
    ``index_summary``).
    ``embedder``: a name for ``choose_embedder``, or an embedder the caller chose.
    ``scan``: the caller's fresh scan of ``path`` (``index_repository``)."""
    started = time.perf_counter()
    count = workers if workers is not None else default_workers()
    folder = index_folder(path, out)
    chosen = _chosen(embedder, folder) if load else None
    # The collector stays off from the scan to the load's commit: the graph, the
    # artifact's columns and the load's rows are ~10^6 acyclic containers that every
    # full collection would walk again (0.3-0.4 s on the Django package).
    with gc_paused(), _progress(console, show_progress) as steps:
        result = index_repository(
            path,
            excludes=excludes,
            workers=count,
            progress=steps.files,
            phase=steps.phase,
            cache=folder / CACHE_FILENAME,
            embedder=chosen,
            remember=remember,
            scan=scan,
        )
        # graph.cairn from the segments earlier rounds printed (``cairn.artifact.
        # segments``): a round prints only those holding a changed record. Written in
        # process, not in a forked helper beside the load: once the change journal made
        # the load small, the fork's copied pages (in both processes) cost more than the
        # overlap saved (sdist body edit, 6 interleaved rounds each: 1.87 s in process
        # against 2.04 s forked; package 0.61 against 0.72 s).
        if remember:  # refused before the load, as a one-shot write refuses first
            from cairn.artifact.folder import check_activation

            check_activation(folder)
        kept = _kept(folder) if remember else None

        def write() -> WrittenIndex:
            steps.phase("writing graph.cairn")
            printed = kept.printed if kept is not None else None
            try:
                return write_index(result, out, generated_at=generated_at, printed=printed)
            except BaseException:
                if kept is not None:
                    kept.forget_printed()  # half cut: the next round prints anew
                raise

        # A one-shot index writes graph.cairn first: its peak memory (the whole sdist is
        # within ~20 MiB of its bound) is measured with this order. A watch round loads
        # first, so the edit is searchable ~0.5 s sooner on the whole sdist (the 128 MB
        # artifact is written, hashed and synced after the commit).
        written = None if remember else write()
        loaded: dict[str, Any] | None = None
        searchable: float | None = None
        if chosen is not None:
            database = index_folder(result.root, out) / DATABASE_FILE
            loaded = _load(database, result, chosen, steps.loading, kept)
            searchable = round(time.perf_counter() - started, 3)
        if written is None:
            written = write()
        steps.phase("summarising")
        summary = index_summary(result, tallies=not remember if tallies is None else tallies)
        summary["workers"] = count
        if chosen is not None:
            summary["embedder"] = chosen.space.to_json()
            summary["load"] = loaded
            summary["searchable_seconds"] = searchable
        summary["graph_path"] = str(written.graph_path)
        summary["manifest_path"] = str(written.manifest_path)
        summary["graph_bytes"] = written.graph_bytes
        summary["phase_seconds"] = steps.seconds()
    return summary, result


def _chosen(embedder: str | Embedder | None, folder: Path) -> Embedder:
    """``embedder`` itself when it is one (chosen by the caller: a model loads once),
    else ``choose_embedder`` of the name for ``folder``'s database."""
    if embedder is None or isinstance(embedder, str):
        return choose_embedder(embedder, folder / DATABASE_FILE)
    return embedder


def choose_embedder(name: str | None, database: Path) -> Embedder:
    """The embedder an index is loaded with: ``name`` (``cairn.embed.load_embedder``)
    when given; else the one ``database`` was loaded with, when it runs here; else the
    default hashing embedder. A named embedder that cannot run here is an error; a
    re-index without a name never switches an index to another embedder silently
    unless the recorded one cannot run here."""
    from cairn.embed import load_embedder
    from cairn.store.load import loaded_space

    if name is not None:
        return load_embedder(name)
    return _recorded_embedder(loaded_space(database))


def _recorded_embedder(recorded: VectorSpace | None) -> Embedder:
    """The embedder of the ``recorded`` space (a database's) when it runs here, else the
    default hashing embedder."""
    from cairn.embed import HashingEmbedder, embedder_for

    found = embedder_for(recorded) if recorded is not None else None
    return found if found is not None else HashingEmbedder()


@dataclass(slots=True)
class _Kept:
    """What this process keeps between the remembering rounds (``cairn watch``) of one
    index folder: the graph.cairn segments the last write printed
    (``cairn.artifact.segments``), the memo of the database's load keys, and the database
    handle the rounds load through, with the identity (device, inode) of the file it
    opened. Closing the last connection copies the write-ahead log into the file
    (0.18-0.26 s a round on the whole Django sdist); ``checkpoint_held`` does that while
    the watch waits for edits instead."""

    printed: PrintedSegments
    keys: KeyMemo
    database: Database | None = None
    identity: tuple[int, int] | None = None

    def forget_printed(self) -> None:
        """Hold no printed segments (the next write prints every one)."""
        from cairn.artifact.segments import PrintedSegments

        self.printed = PrintedSegments()

    def release(self) -> None:
        """Close the held database handle, if any."""
        database, self.database, self.identity = self.database, None, None
        if database is not None:
            database.close()


_KEPT: dict[Path, _Kept] = {}
"""Each index folder this process re-indexes with ``remember`` (by resolved path)."""


def _kept(folder: Path) -> _Kept:
    """This process's record of ``folder`` (made on first use)."""
    from cairn.artifact.segments import PrintedSegments
    from cairn.store.loadkeys import KeyMemo

    key = folder.resolve()
    kept = _KEPT.get(key)
    if kept is None:
        kept = _KEPT[key] = _Kept(PrintedSegments(), KeyMemo())
    return kept


@contextmanager
def _held(kept: _Kept, path: Path) -> Iterator[Database]:
    """The handle ``kept`` holds open for ``path`` (opened again when the file there is
    another one: removed, or replaced by a rebuild); a load that fails through it closes
    it, so the next round starts from a fresh one."""
    from cairn.store import open as open_database

    if kept.database is not None and kept.identity != _identity(path):
        kept.release()
    if kept.database is None:
        kept.database, kept.identity = open_database(path), _identity(path)
    try:
        yield kept.database
    except BaseException:
        kept.release()
        raise


def _identity(path: Path) -> tuple[int, int]:
    status = path.stat()
    return status.st_dev, status.st_ino


def checkpoint_held() -> None:
    """Copy each held database's write-ahead log into its file (``cairn watch`` calls it
    once a round is reported, while it waits for edits)."""
    for kept in _KEPT.values():
        if kept.database is not None:
            kept.database.checkpoint_wal()


def release_held() -> None:
    """Close every database handle this process holds for remembering rounds."""
    for kept in _KEPT.values():
        kept.release()


def _load(
    db_path: Path,
    result: IndexResult,
    embedder: Embedder,
    progress: LoadProgress,
    kept: _Kept | None = None,
) -> dict[str, Any]:
    """Load ``result`` into ``db_path`` (built aside when there is none; with ``kept``,
    a remembering round's, through its memo of the load keys and the handle it holds
    open: ``_held``); its load summary."""
    from cairn.store import open as open_database
    from cairn.store.aside import building
    from cairn.store.load import load_semantic_graph, load_summary, repair_collector
    from cairn.store.loadkeys import LOAD_KEYS_SUFFIX

    progress("opening")
    key_memo = kept.keys if kept is not None else None
    repaired: list[dict[str, str]] = []
    compared: list[str] = []
    # A first index writes each page once, aside, and moves the whole file in place.
    aside = not db_path.exists()
    opened: AbstractContextManager[Database]
    if aside:
        opened = building(db_path, sidecars=(LOAD_KEYS_SUFFIX,))
    elif kept is not None:
        opened = _held(kept, db_path)
    else:
        opened = open_database(db_path)
    with opened as db:
        before = db.position
        # A code index is rebuilt often and read by search: a column snapshot and a packed
        # file cost more at every index (Django package: 1.1 s of 15.6 s) than they save
        # (0.1 s at a cold open, 12% of the file), measured in docs/benchmarks.md.
        receipt = load_semantic_graph(
            db,
            result.graph,
            embedder=embedder,
            prepared=result.prepared,
            progress=progress,
            checkpoint=False,
            pack=False,
            on_repair=repair_collector(repaired),
            incremental=True,
            on_compare=compared.append,
            key_memo=key_memo,
        )
        if aside and key_memo is not None:
            # The memo writes the keys file on a thread: the build moves it beside the
            # new database only if it is there when the build ends.
            key_memo.settle()
    summary = load_summary(receipt, before=before)
    return {"db": str(db_path), **summary, "repaired": repaired, "compared": compared[0]}
