"""The indexing pipeline: scan, extract in parallel, resolve globally, build the graph.

Phase one reads and parses each accepted file on its own (in worker processes when
``workers > 1``) and yields a ``FileExtract`` that depends on that file's bytes and path
only. Phase two runs in this process over every extract in path order: module maps,
name resolution, routes, document links. Results are merged by path, never by arrival
order, so the graph and its artifact are byte-identical for any worker count, file
order or hash seed (code-graph §7).
"""

from __future__ import annotations

import multiprocessing
import os
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable, Generator, Hashable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import closing
from dataclasses import dataclass, field, replace
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from cairn.codegraph.cache import (
    CacheStats,
    ExtractCache,
    FreshRow,
    Row,
    dump_extract,
    load_extract,
)
from cairn.codegraph.deep import run_deep
from cairn.codegraph.emit import EmittedShare, Emitter, GraphEmitter, node_of
from cairn.codegraph.incremental import (
    CODE_SHARE,
    code_round,
    keep_round,
    last_round,
    resolve_rounds,
    take_round,
)
from cairn.codegraph.limits import (
    ADAPTER_VERSION,
    DEFAULT_OUT_DIRNAME,
    GITIGNORE_BYTES,
    GITIGNORE_FILENAME,
    GRAPH_FILENAME,
    MANIFEST_FILENAME,
    MAX_ERROR_CHARS,
    PYTHON_RESOLUTION_RECURSION_LIMIT,
    PYTHON_RESOLUTION_STACK_BYTES,
)
from cairn.codegraph.records import FileExtract
from cairn.codegraph.resolve import PythonResolver, module_names, python_node_specs
from cairn.codegraph.scan import (
    INDEXED,
    FileOutcome,
    Manifest,
    ScannedFile,
    ScanResult,
    read_source,
    scan_repository,
)
from cairn.codegraph.slots import JobSlots, make_slots, slot, take_slots
from cairn.codegraph.tsconfig import TSCONFIG_LANGUAGE, extract_tsconfig
from cairn.codegraph.wire import gc_paused, worker_initializer, worker_tick
from cairn.codegraph.workspaces import PACKAGE_LANGUAGE, extract_package
from cairn.errors import CairnError, ValidationError, os_error
from cairn.graph import Node, SemanticGraph, build_receipt, fully_stable_facts

if TYPE_CHECKING:
    from cairn.artifact.segments import PrintedSegments
    from cairn.embed import Embedder
    from cairn.store.load import PreparedDocuments

__all__ = [
    "INDEX_PHASES",
    "MAX_WORKERS",
    "PREPARE_CHUNK_FILES",
    "IndexResult",
    "PhaseCallback",
    "Preparing",
    "ProgressCallback",
    "WrittenIndex",
    "default_workers",
    "extract_file",
    "index_repository",
    "index_summary",
    "repository_revision",
    "write_index",
]

MAX_WORKERS = 64
"""Upper bound on ``--workers``."""

CHUNK_FILES = 4
"""Files handed to one worker at a time (amortises inter-process overhead).

Jobs go out largest file first, so small chunks keep both workers busy to the end."""

FAILED = "failed:"
"""Outcome prefix of a file nothing could be extracted from (``failed:SyntaxError``)."""

PARTIAL = "partial:"
"""Outcome prefix of a file extracted around its broken lines (``partial:SyntaxError``)."""

IN_PROCESS_MAX_BYTES = 512 * 1024
"""Files to parse that add up to no more than this are parsed in this process, whatever
the worker count: starting a pool of workers costs ~0.23 s (measured on the 2-core
development machine), more than parsing half of 512 KiB of Python in this process saves
(~0.9 us a byte). A watch round of ten edited files (75 KB of Django's ``utils``) took
0.26-0.28 s to extract through the pool and 0.065-0.07 s here."""

PREPARE_CHUNK_FILES = 64
"""Python files one documents job covers: a worker's heap holds one job's extracts and
documents at a time, not its whole share."""

RESOLVER_CORES = 1
"""Cores this process's Python resolution takes while the workers make documents: that
many fewer workers make them at once (``prepare_slots``, ``cairn.codegraph.slots``). The
index waits for the resolution; the documents are needed only once graph.cairn is
written. With both workers on them, three busy processes shared two cores, and the
Django package's resolution phase took 2.66-2.75 s; with one, 2.37-2.46 s, and the
documents still came before the load asked (docs/benchmarks.md)."""

PYTHON = "python"
"""The language resolved first (while the workers extract every other file)."""

WORKER_PRELOAD = (
    "cairn.codegraph.wire",
    "cairn.codegraph.python",
    "cairn.codegraph.markdown",
    "cairn.codegraph.treesitter",
)
"""Modules the forkserver imports once, so each worker starts without importing them."""

ProgressCallback = Callable[[int, int], None]
"""Told ``(files done, files in all)`` as extraction goes."""
PhaseCallback = Callable[[str], None]
"""Told the name of each indexing phase as it starts (one of ``INDEX_PHASES``)."""
INDEX_PHASES = ("scanning", "extracting", "resolving python", "resolving")
"""In order: scanning the tree; extracting (until every Python file is parsed); resolving
Python (while the workers parse the other languages); resolving the rest."""


@dataclass(frozen=True, slots=True)
class IndexResult:
    """The product of indexing: the graph, the manifest, the wall time it took and what
    the extraction cache did (``None`` without one)."""

    root: Path
    graph: SemanticGraph
    manifest: Manifest
    seconds: float
    cache: CacheStats | None = None
    preparing: Preparing | None = None
    """The workers' jobs making the Python nodes' documents (see ``prepared``)."""
    python_rounds: Mapping[str, int] | None = None
    """A remembering index (``cairn watch``): the Python modules in all, and how many
    each per-module phase computed again (the rest were reused from the round before)."""
    scan: ScanResult | None = None
    """What the scan found (each file's signature before it was read: ``cairn.codegraph.
    stamp``)."""
    started_ns: int = 0
    """Wall clock (``time.time_ns``) when the scan began."""

    @property
    def prepared(self) -> PreparedDocuments | None:
        """Documents of the Python nodes made by the workers while the graph was resolved
        (``index_repository(embedder=...)`` with workers), for the load to take; waits
        for the workers' jobs the first time it is read."""
        return None if self.preparing is None else self.preparing.result()


def extract_file(path: str, language: str, data: bytes) -> FileExtract:
    """Local extraction of one file by the adapter of its language (pure, cacheable)."""
    if language == "python":
        from cairn.codegraph.python import extract_python

        return extract_python(path, data)
    if language == "markdown":
        from cairn.codegraph.markdown import extract_markdown

        return extract_markdown(path, data)
    if language == TSCONFIG_LANGUAGE:
        return extract_tsconfig(path, data)
    if language == PACKAGE_LANGUAGE:
        return extract_package(path, data)
    if language in ("javascript", "typescript", "go", "gomod"):
        from cairn.codegraph.treesitter import extract_treesitter

        return extract_treesitter(path, language, data)
    raise ValidationError(f"no adapter for language {language!r}")


Job = tuple[FileOutcome, bytes]
"""One file to parse: its outcome so far (path, language, size, hash) and its bytes."""
Extracted = tuple[FileOutcome, FileExtract]


def _parse(job: Job) -> Extracted:
    outcome, data = job
    try:
        extract = extract_file(outcome.path, outcome.language, data)
    except (SyntaxError, ValueError, UnicodeDecodeError, RecursionError, MemoryError) as exc:
        failed = replace(outcome, outcome=f"{FAILED}{type(exc).__name__}", error=_error(exc))
        return failed, FileExtract(outcome.path, outcome.language)
    if extract.parse_error is not None:
        error, line = extract.parse_error
        kind = error.split(":", 1)[0]
        outcome = replace(outcome, outcome=f"{PARTIAL}{kind}", error=f"line {line}: {error}")
    return outcome, extract


def _error(exc: BaseException) -> str:
    if isinstance(exc, SyntaxError):
        return f"line {exc.lineno}: {type(exc).__name__}: {exc.msg}"
    return f"{type(exc).__name__}: {exc}"[:MAX_ERROR_CHARS]


def _parse_in_worker(job: Job) -> tuple[FileOutcome, bytes]:
    """A worker's parse, sent back as the cache's bytes (the parent both uses and keeps
    them: one pickling serves the hand-off and the cache)."""
    try:
        outcome, extract = _parse(job)
        return outcome, dump_extract(extract)
    finally:
        worker_tick()


PrepareJob = tuple[list[tuple[str, str, bytes]], "Embedder"]
"""Python files to make documents of: (path, module name, the extract's bytes) each."""


def _prepare_in_worker(job: PrepareJob) -> PreparedDocuments:
    """The documents of the nodes the resolver will emit for these files (a worker's
    job while the parent resolves: the same nodes, by ``python_node_specs``)."""
    from cairn.store.load import prepare_documents

    files, embedder = job
    with slot():  # ``prepare_slots`` of the pool's workers at a time
        nodes: dict[str, Node] = {}
        for _path, name, blob in files:
            for node_id, kind, attributes in python_node_specs(name, load_extract(blob)):
                if node_id not in nodes:  # the emitter keeps the first of an ID, as here
                    nodes[node_id] = node_of(node_id, kind, attributes)
        return prepare_documents(list(nodes.values()), embedder)


def prepare_slots(workers: int) -> int:
    """How many of ``workers`` make documents at once: all but the cores this process's
    resolution takes meanwhile (``RESOLVER_CORES``), at least one."""
    return max(1, workers - RESOLVER_CORES)


def _start_worker(starter: int, slots: tuple[str, ...]) -> None:
    """``worker_initializer``, then the pool's job slots opened (``take_slots``)."""
    worker_initializer(starter)
    take_slots(slots)


class Preparing:
    """What the parent asks the pool to make ahead: the embedder, the module names, and
    the jobs once they are sent (``PREPARE_CHUNK_FILES`` files each)."""

    def __init__(self, embedder: Embedder | None, names: dict[str, str]) -> None:
        self.embedder = embedder
        self.names = names
        self.futures: list[Future[PreparedDocuments]] = []
        self._merged: PreparedDocuments | None = None

    def hold(self, slots: JobSlots) -> bool:
        """Keep ``slots`` until every job sent so far has ended, then remove them (a
        worker that starts late still finds them); False when none is left to end."""
        running = [future for future in self.futures if not future.done()]
        if not running:
            return False
        left = [len(running)]
        lock = threading.Lock()

        def ended(_: Future[PreparedDocuments]) -> None:
            with lock:
                left[0] -= 1
                last = left[0] == 0
            if last:
                slots.remove()

        for future in running:
            future.add_done_callback(ended)  # at once, here, if it has just ended
        return True

    def send(self, pool: ProcessPoolExecutor, parsed: list[tuple[str, bytes]]) -> None:
        """Queue the documents of the freshly parsed Python files (cached ones have no
        bytes here; their documents are made by the load as before), in path order cut
        into contiguous jobs, so merging them in order keeps the first node of an ID."""
        if self.embedder is None:
            return
        files = sorted(
            (path, self.names[path], blob) for path, blob in parsed if path in self.names
        )
        for start in range(0, len(files), PREPARE_CHUNK_FILES):
            job = (files[start : start + PREPARE_CHUNK_FILES], self.embedder)
            self.futures.append(pool.submit(_prepare_in_worker, job))

    def result(self) -> PreparedDocuments | None:
        """The prepared documents (waiting for the jobs), or None."""
        if not self.futures:
            return None
        if self._merged is None:
            from cairn.store.load import merge_prepared

            try:
                self._merged = merge_prepared([future.result() for future in self.futures])
            except BrokenProcessPool:  # a killed worker costs time only: the load makes them
                self.futures = []
                return None
        return self._merged


def _pool_context() -> multiprocessing.context.BaseContext:
    methods = multiprocessing.get_all_start_methods()
    if "forkserver" in methods:
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(list(WORKER_PRELOAD))
        return context
    return multiprocessing.get_context("spawn")


@dataclass(slots=True)
class _Phase:
    """One phase's files: those already known (cached, unreadable) and those to parse."""

    ready: list[Extracted] = field(default_factory=list)
    jobs: list[Job] = field(default_factory=list)


class _Fresh:
    """The rows parsed in this index, for the cache (kept only when there is one)."""

    def __init__(self, keep: bool) -> None:
        self.keep = keep
        self.rows: list[FreshRow] = []

    def add(self, outcome: FileOutcome, blob: bytes) -> None:
        if self.keep and outcome.sha256 is not None:
            sha256, error = outcome.sha256, outcome.error
            row = (outcome.path, outcome.language, sha256, outcome.outcome, error, blob)
            self.rows.append(row)


def _extract_phases(
    phases: Sequence[_Phase],
    workers: int,
    progress: ProgressCallback | None,
    fresh: _Fresh,
    preparing: Preparing | None = None,
) -> Generator[list[Extracted], None, None]:
    """Parse each phase's jobs, yielding one phase's results at a time (any order).

    With workers, every phase is queued at once, first phase first, so the caller can
    resolve the first phase (Python) while the workers are still on later ones; within a
    phase, files go out largest first (longest-processing-time scheduling). Results are
    re-sorted by path by the caller, so neither order shows in the graph.
    """
    total = sum(len(phase.ready) + len(phase.jobs) for phase in phases)
    seen = [0]

    def tick(results: list[Extracted], item: Extracted) -> None:
        results.append(item)
        seen[0] += 1
        if progress is not None:
            progress(seen[0], total)

    def in_process(phase: _Phase) -> list[Extracted]:
        results: list[Extracted] = []
        for item in phase.ready:
            tick(results, item)
        for job in phase.jobs:
            outcome, extract = _parse(job)
            if fresh.keep:
                fresh.add(outcome, dump_extract(extract))
            tick(results, (outcome, extract))
        return results

    jobs = [job for phase in phases for job in phase.jobs]
    if workers <= 1 or len(jobs) < 2 or sum(len(data) for _, data in jobs) <= IN_PROCESS_MAX_BYTES:
        for phase in phases:
            yield in_process(phase)
        return
    preparing_any = preparing is not None and preparing.embedder is not None
    slots = make_slots(prepare_slots(workers)) if preparing_any else None
    try:
        pool = ProcessPoolExecutor(
            max_workers=workers,
            mp_context=_pool_context(),
            initializer=_start_worker,
            # A worker ends with this process, however it ends; documents jobs take a slot.
            initargs=(os.getpid(), slots.paths if slots is not None else ()),
        )
    except BaseException:
        if slots is not None:
            slots.remove()
        raise
    delivered = False
    try:
        streams = []
        for phase in phases:
            ordered = sorted(phase.jobs, key=lambda job: (-len(job[1]), job[0].path))
            streams.append(pool.map(_parse_in_worker, ordered, chunksize=CHUNK_FILES))
        for number, (phase, stream) in enumerate(zip(phases, streams, strict=True)):
            results: list[Extracted] = []
            parsed: list[tuple[str, bytes]] = []
            for item in phase.ready:
                tick(results, item)
            for outcome, blob in stream:
                fresh.add(outcome, blob)
                parsed.append((outcome.path, blob))
                tick(results, (outcome, load_extract(blob)))
            if number == 0 and preparing is not None:
                preparing.send(pool, parsed)  # the workers make them while we resolve
            delivered = number == len(phases) - 1
            yield results
    finally:
        # Once every file is delivered the pool only finishes the documents' jobs, which
        # the load waits for; the caller need not wait for the workers to exit. On an
        # error the queued work is cancelled and the workers are waited for.
        pool.shutdown(wait=not delivered, cancel_futures=not delivered)
        # The slots outlive the pool's last documents job: a worker opens them when it
        # starts, which on a small tree can be after every file was delivered.
        if slots is not None and not (preparing is not None and preparing.hold(slots)):
            slots.remove()


def _plan(scan: ScanResult, cache: ExtractCache | None) -> tuple[_Phase, _Phase]:
    """Read every accepted file once; a file whose bytes the cache knows is ready, the
    rest are jobs. Python files make the first phase, every other language the second."""
    python, other = _Phase(), _Phase()
    rows = cache.rows() if cache is not None else {}
    started = time.time_ns()
    for scanned in scan.files:
        phase = python if scanned.language == PYTHON else other
        unread = _known(cache, rows, scanned)
        if unread is not None:
            phase.ready.append(unread)
            continue
        read = read_source(scan.root, scanned)
        outcome = read.outcome
        if cache is not None and outcome.sha256 is not None:
            cache.remember_read(scanned.path, scanned.signature, outcome.sha256, started)
        if read.data is None or outcome.sha256 is None:
            phase.ready.append((outcome, FileExtract(scanned.path, scanned.language)))
            continue
        hit = (
            None
            if cache is None
            else cache.lookup(rows, outcome.path, outcome.language, outcome.sha256)
        )
        if hit is None:
            phase.jobs.append((outcome, read.data))
        else:
            known = replace(outcome, outcome=hit.outcome, error=hit.error)
            phase.ready.append((known, hit.extract))
    return python, other


def _known(
    cache: ExtractCache | None, rows: Mapping[str, Row], scanned: ScannedFile
) -> Extracted | None:
    """The cached extract of a file this process read before and that was not written
    since (same signature), without reading it; None when it must be read."""
    if cache is None:
        return None
    sha = cache.known_sha(scanned.path, scanned.signature)
    hit = None if sha is None else cache.lookup(rows, scanned.path, scanned.language, sha)
    if hit is None:
        return None
    known = FileOutcome(scanned.path, scanned.language, hit.outcome, scanned.size, sha)
    return replace(known, error=hit.error), hit.extract


def _resolve_python(
    python: PythonResolver,
    root_package: str | None,
    cache: ExtractCache | None,
    shared: Sequence[tuple[Hashable, EmittedShare]] = (),
) -> dict[str, int] | None:
    """Run Python resolution on a thread deep enough for it; an index that keeps its
    extracts for the next round (``cairn watch``) keeps what each module read and
    emitted too, and re-emits only what an edit can reach (``cairn.codegraph.incremental``;
    the modules in all and those each phase computed again are returned), merging the
    ``shared`` parts with the modules' (``resolve_rounds``)."""
    if cache is None or not cache.remember:
        _resolving(python.run)
        return None
    index = str(cache.path)
    previous = take_round(index)  # a round that fails leaves nothing half-made to trust
    kept = _resolving(lambda: resolve_rounds(python, root_package, previous, shared))
    keep_round(index, kept)
    return {"modules": len(kept.modules), **kept.redone}


_T = TypeVar("_T")


def _resolving(work: Callable[[], _T]) -> _T:
    """``work()`` on a thread with the stack and recursion limit Python resolution needs."""
    return run_deep(
        work,
        stack_bytes=PYTHON_RESOLUTION_STACK_BYTES,
        recursion_limit=PYTHON_RESOLUTION_RECURSION_LIMIT,
        name="cairn-resolve-python",
    )


def _resolve_code(code: list[FileExtract]) -> Callable[[Emitter], dict[str, Counter[str]]]:
    """JavaScript, TypeScript and Go resolution of ``code`` onto an emitter; returns the
    call counts per file."""

    def resolve(emitter: Emitter) -> dict[str, Counter[str]]:
        from cairn.codegraph.tsresolve import CodeResolver

        resolver = CodeResolver(code, emitter)
        resolver.run()
        return resolver.call_stats

    return resolve


CODE_LANGUAGES = ("javascript", "typescript", "go", "gomod", TSCONFIG_LANGUAGE, PACKAGE_LANGUAGE)
"""Languages ``CodeResolver`` resolves together."""


def _by_language(extracts: Iterable[FileExtract], *languages: str) -> list[FileExtract]:
    return sorted((e for e in extracts if e.language in languages), key=lambda e: e.path)


def index_repository(
    root: Path | str,
    *,
    excludes: Sequence[str] = (),
    workers: int = 1,
    progress: ProgressCallback | None = None,
    phase: PhaseCallback | None = None,
    cache: Path | str | None = None,
    embedder: Embedder | None = None,
    remember: bool = False,
    scan: ScanResult | None = None,
) -> IndexResult:
    """Index the repository at ``root`` into a semantic graph plus manifest.

    ``progress`` follows the files extracted; ``phase`` is told each phase as it starts.
    With ``cache`` (an extraction cache file, see ``cairn.codegraph.cache``), a file
    whose bytes, path and language match a cached row is not parsed again, and the
    cache is brought up to date; the graph is the same either way. With ``remember``
    as well, the extracts stay in this process for its next index (``cairn watch``:
    an unchanged file is then not even unpickled); without it they are freed with the
    result. With ``embedder``
    and workers, the workers make the documents of the freshly parsed Python files' nodes
    while this process resolves (``IndexResult.prepared``, for
    ``load_semantic_graph(prepared=...)`` with the same embedder). ``scan``: a scan of
    ``root`` with these ``excludes`` the caller just made (to see whether anything
    changed), used instead of walking the tree again.
    """
    if type(workers) is not int or not 1 <= workers <= MAX_WORKERS:
        raise ValidationError(f"workers must be an integer in [1, {MAX_WORKERS}], got {workers!r}")
    started = time.perf_counter()
    tell = phase or _quiet
    with gc_paused():  # ~10^5 acyclic records: the collector would only rescan them
        tell("scanning")
        if scan is None or scan.root != Path(root).resolve():
            scan = scan_repository(root, excludes=excludes)
        opened, stats = _open_cache(cache, remember)
        try:
            tell("extracting")
            manifest, graph, preparing, rounds = _index(
                scan, workers, progress, tell, opened, embedder
            )
        finally:
            if opened is not None:
                opened.close()
    seconds = time.perf_counter() - started
    return IndexResult(
        scan.root, graph, manifest, seconds, stats, preparing, rounds, scan, scan.started_ns
    )


def _root_package(root: Path) -> str | None:
    """The indexed folder's own package name when it is a package (``__init__.py`` at
    its top and a name Python can import), else None."""
    name = root.name
    return name if (root / "__init__.py").is_file() and name.isidentifier() else None


def _open_cache(
    path: Path | str | None, remember: bool = False
) -> tuple[ExtractCache | None, CacheStats | None]:
    """The cache at ``path`` and its stats; a cache that cannot be opened (a read-only
    folder, a full disk) is done without, and says why: it only saves time."""
    if path is None:
        return None, None
    try:
        opened = ExtractCache.open(path, remember=remember)
    except (sqlite3.Error, OSError, CairnError) as exc:
        return None, CacheStats(reset=f"cache unavailable ({exc}); every file parsed")
    return opened, opened.stats


def _quiet(name: str) -> None:
    """The phases of an index nobody watches."""


def _index(
    scan: ScanResult,
    workers: int,
    progress: ProgressCallback | None,
    phase: PhaseCallback = _quiet,
    cache: ExtractCache | None = None,
    embedder: Embedder | None = None,
) -> tuple[Manifest, SemanticGraph, Preparing | None, dict[str, int] | None]:
    """Extract, resolve and admit: the body of ``index_repository`` (collector paused)."""
    manifest = Manifest()
    for skipped in scan.skipped:
        manifest.add(skipped)
    emitter = GraphEmitter()
    fresh = _Fresh(cache is not None)
    root_package = _root_package(scan.root)
    names = module_names((f.path for f in scan.files if f.language == PYTHON), root_package)
    preparing = Preparing(embedder, names)
    planned = _plan(scan, cache)
    remember = cache is not None and cache.remember
    shared: list[tuple[Hashable, EmittedShare]] = []
    call_stats: dict[str, Counter[str]] = {}
    with closing(_extract_phases(planned, workers, progress, fresh, preparing)) as phases:
        pairs = next(phases)
        phase("resolving python")
        if remember and cache is not None:
            # A remembering round (small: most files come from this process's cache)
            # resolves its code first, so that one merge holds every share and a code
            # share that did not change is no change of the graph.
            pairs.extend(next(phases))
            code = _by_language([e for _, e in pairs], *CODE_LANGUAGES)
            if code:
                kept = code_round(str(cache.path), code, _resolve_code(code))
                shared.append((CODE_SHARE, kept.share))
                call_stats.update({path: Counter(stats) for path, stats in kept.call_stats.items()})
        last = last_round(str(cache.path)) if remember and cache is not None else None
        python = PythonResolver(
            _by_language([e for _, e in pairs], PYTHON),
            emitter,
            root_package,
            names,
            known=last.module_tables if last is not None else None,
        )
        python_rounds = _resolve_python(python, root_package, cache, shared)
        call_stats.update(python.call_stats)
        del python  # its lookup memos are not needed past here: freed before the graph grows
        # A one-shot run admits the Python facts while the workers finish the other files.
        emitter.flush()
        if not remember:
            pairs.extend(next(phases))
    if cache is not None:
        try:
            cache.save(fresh.rows, (outcome.path for outcome, _ in pairs))
        except sqlite3.Error as exc:  # the graph is whole either way; the next run re-parses
            cache.stats.reset = f"cache not saved ({exc})"
        else:
            for outcome, extract in pairs:
                if outcome.sha256 is not None:
                    cache.remember_written(outcome.path, outcome.sha256, extract)
    phase("resolving")
    pairs.sort(key=lambda pair: pair[0].path)
    extracts = [extract for _, extract in pairs]
    code = _by_language(extracts, *CODE_LANGUAGES)
    if code and not remember:
        call_stats.update(_resolve_code(code)(emitter))
    docs = _by_language(extracts, "markdown")
    all_paths = [outcome.path for outcome, _ in pairs]
    if docs:
        from cairn.codegraph.markdown import MarkdownResolver

        MarkdownResolver(docs, emitter, all_paths).run()
    for outcome, _ in pairs:
        stats = call_stats.get(outcome.path)
        if stats and outcome.outcome == INDEXED:
            outcome = replace(outcome, counts=tuple(sorted(stats.items())))
            manifest.calls.update(stats)
        manifest.add(outcome)
    return manifest, emitter.graph, preparing if preparing.futures else None, python_rounds


def index_summary(result: IndexResult, *, tallies: bool = True) -> dict[str, Any]:
    """The summary ``cairn index`` prints: files, nodes, facts, occurrences, stability, time.

    ``tallies=False`` leaves out ``nodes_by_kind``, ``facts_by_relation`` and
    ``stable_fact_share``, which walk every record (the stable share builds the integrity
    receipt): a ``cairn watch`` round reports none of them, and on the whole Django sdist
    they took ~0.5 s of every round.
    """
    graph = result.graph
    tallied: dict[str, Any] = {}
    if tallies:
        nodes = Counter(map(attrgetter("kind"), graph.nodes()))
        facts = Counter(map(attrgetter("relation"), graph.facts()))
        stable = fully_stable_facts(build_receipt(graph))
        tallied = {
            "nodes_by_kind": dict(sorted(nodes.items())),
            "facts_by_relation": dict(sorted(facts.items())),
            "stable_fact_share": round(stable / graph.fact_count, 6) if graph.fact_count else 1.0,
        }
    calls = dict(sorted(result.manifest.calls.items()))
    return {
        "files": result.manifest.summary(),
        "outcomes": result.manifest.outcome_counts(),
        **tallied,
        "counts": graph.counts().to_json(),
        "calls": calls,
        "unresolved_calls": calls.get("unresolved", 0) + calls.get("dynamic", 0),
        "cache": None if result.cache is None else result.cache.to_json(),
        "python_rounds": None if result.python_rounds is None else dict(result.python_rounds),
        "problems": [
            {"path": row.path, "outcome": row.outcome, "error": row.error}
            for row in result.manifest.sorted_entries()
            if row.outcome.startswith((FAILED, PARTIAL))
        ],
        "seconds": round(result.seconds, 3),
    }


def default_workers() -> int:
    """A sensible default worker count: the CPUs this process may use."""
    try:
        return max(1, min(MAX_WORKERS, len(os.sched_getaffinity(0))))
    except AttributeError:  # pragma: no cover - non-Linux
        return max(1, min(MAX_WORKERS, os.cpu_count() or 1))


def iter_outcomes(result: IndexResult) -> Iterator[FileOutcome]:
    """Manifest rows in path order."""
    yield from result.manifest.sorted_entries()


@dataclass(frozen=True, slots=True)
class WrittenIndex:
    """Where ``write_index`` put the artifact and the manifest, and their sizes."""

    graph_path: Path
    manifest_path: Path
    graph_bytes: int
    manifest_bytes: int


def repository_revision(root: Path) -> str | None:
    """The checked-out Git commit of ``root`` read from ``.git`` files, or None."""
    git = root / ".git"
    try:
        head = (git / "HEAD").read_text("utf-8").strip()
        if not head.startswith("ref: "):
            return head or None
        ref = head[len("ref: ") :]
        ref_file = git / ref
        if ref_file.is_file():
            return ref_file.read_text("utf-8").strip() or None
        packed = git / "packed-refs"
        if packed.is_file():
            for line in packed.read_text("utf-8").splitlines():
                sha, _, name = line.partition(" ")
                if name == ref:
                    return sha
    except OSError:
        return None
    return None


def _ignore_derived(target: Path) -> None:
    """Give a ``.cairn`` folder a ``.gitignore`` of ``*`` unless it has one already."""
    if target.name != DEFAULT_OUT_DIRNAME:
        return
    path = target / GITIGNORE_FILENAME
    try:
        handle = path.open("xb")
    except FileExistsError:
        return  # the user's (or an earlier run's): left as it is
    except OSError as exc:
        raise os_error(exc, f"cannot create {path}", path) from exc
    try:
        with handle:
            handle.write(GITIGNORE_BYTES)
    except OSError as exc:  # a full disk: no half-written file stays to be kept forever
        path.unlink(missing_ok=True)
        raise os_error(exc, f"cannot write {path}", path) from exc


def write_index(
    result: IndexResult,
    out_dir: Path | str | None = None,
    *,
    generated_at: str | None = None,
    printed: PrintedSegments | None = None,
) -> WrittenIndex:
    """Activate ``graph.cairn`` and write the manifest in ``out_dir`` (default ``ROOT/.cairn``).

    The artifact goes through folder activation (``cairn.artifact.activate_folder``): a
    v1 ``graph.json`` already there (Graphify, networkx) is preserved as
    ``graph.v1.json`` and replaced by the tombstone, so old readers fail loudly instead
    of reading a stale graph; a ``graph.json`` that is not a v1 graph stops the write
    with a typed error before anything is written; a folder without one gets none. A
    folder named ``.cairn`` without a ``.gitignore`` gets one that ignores everything
    in it (the index is derived; a user's own ``.gitignore`` is never touched).
    ``generated_at`` is injected for reproducible output; when omitted the writer uses
    ``SOURCE_DATE_EPOCH`` or now. ``printed`` reuses an earlier write's printed
    segments (``cairn.artifact.segments``; the same bytes).
    """
    from cairn.artifact.folder import activate_folder

    target = _index_folder(result, out_dir)
    _ignore_derived(target)
    graph_path = target / GRAPH_FILENAME
    activated = activate_folder(
        target,
        result.graph,
        repository_revision=repository_revision(result.root),
        generated_at=generated_at,
        provenance={"producer": "cairn.codegraph", "adapter_version": ADAPTER_VERSION},
        printed=printed,
    )
    manifest_path, manifest_bytes = _write_manifest(result, target)
    return WrittenIndex(graph_path, manifest_path, activated.artifact_bytes, manifest_bytes)


def _write_manifest(result: IndexResult, target: Path) -> tuple[Path, int]:
    """Write ``result``'s manifest (``manifest.json``) in ``target``; its path and size."""
    from cairn.artifact.atomic import atomic_write_bytes
    from cairn.canonical import canonical_bytes

    manifest = canonical_bytes(result.manifest.to_json()) + b"\n"
    manifest_path = target / MANIFEST_FILENAME
    atomic_write_bytes(manifest_path, manifest)
    return manifest_path, len(manifest)


def _index_folder(result: IndexResult, out_dir: Path | str | None) -> Path:
    """``out_dir``, else ``ROOT/.cairn``, made when missing."""
    target = Path(out_dir) if out_dir is not None else result.root / DEFAULT_OUT_DIRNAME
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise os_error(exc, f"cannot create {target}", target) from exc
    return target
