"""Python resolution across ``cairn watch`` rounds: compute again only each module's
share that an edit can reach, reuse the others.

Python resolution gives every module the same facts whatever order the modules are
visited in, and whatever was memoised before (``cairn.codegraph.resolve``). So one
module's share of a phase can be computed on its own, and while that runs every
whole-program table it reads is watched: which modules (by path or by name), which
argument flows, which subclass lists. Modules are computed one after another with one
memo, whose entries carry what computing them read (``PythonResolver.note_reads``): a
module answered from an entry reads what the entry read, so its reads are what it would
read from no memo at all. A round keeps, per module and per phase (the argument flows'
two rounds, then the emission of its facts), what the phase made of it (its flows; its
nodes and facts emitted apart, by ``cairn.codegraph.emit.ShareEmitter``) and what that
read. The next round keeps the nodes of every module whose extract is the same object,
rebuilds the subclass table as a clean build does, then runs each phase: a module whose
extract is the same object and which read nothing that changed keeps its share, the
rest are computed again. Early cut-off: a module that read something changed only
through memo entries that can be computed on their own (a name in a module's
namespace, a function's return) keeps its share when each such entry, computed again,
gives the same answer (``PythonResolver.reads_again``); an edit of a function's body
that leaves its return as it was then reaches none of the modules that call it. Each
phase's memo is kept for the next round, whose same phase answers from every entry none
of whose reads changed (``PythonResolver.carry``). The flow tables are merged in path
order and the shares are merged into the graph in the order a clean build emits them,
so the graph is the same; a kept share derives no ID again (its fact and occurrence
records are the graph's).

An added, removed or renamed module is a change like any other (a module that looked a
name up and found nothing read that name too); a new or lost top-level package starts
over.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

from cairn.codegraph.emit import EmittedShare, ShareEmitter, interned
from cairn.codegraph.records import FileExtract
from cairn.codegraph.resolve import PythonResolver, merge_flows, merge_flows_again, reaches
from cairn.codegraph.watched import ALL, Token, WatchedModules, WatchedTable, module_changes
from cairn.graph.multigraph import PartsMerge

__all__ = [
    "CodeRound",
    "ModuleRecord",
    "PythonRounds",
    "code_round",
    "forget_round",
    "keep_round",
    "last_round",
    "resolve_rounds",
    "take_round",
]

_TABLES = ("p", "n", "f", "s", "a")
"""The token tags of ``PythonResolver.tables()``, in its order (``cairn.codegraph.watched``)."""

_MODULE_TABLES = ("p", "n")
"""The tables whose values are modules (found as ``ModuleView``s while watched)."""

_WALKS = frozenset((ALL, tag) for tag in _TABLES)
"""The tokens of a walk of a whole-program table."""

SHARED_MEMO = True
"""A round computes its modules with one memo whose entries carry their reads; False
computes each from no memo at all (slower: the reference the tests compare with)."""

CARRIED_MEMO = True
"""A round's memo entries whose reads did not change answer the next round too (each
phase's from the same phase's); False starts every phase from an empty memo (the
reference the tests compare with)."""

EARLY_CUTOFF = True
"""A module that read something an edit changed keeps its share when every answer it
read is the same (``PythonResolver.reads_again``); False computes it again (the
reference the tests compare with)."""


@dataclass(frozen=True, slots=True)
class ModuleRecord:
    """One module's share of one phase of a round: its extract, what the phase made of
    it (its facts emitted apart, or its argument flows), what that read and its call
    counts (the emission only)."""

    extract: FileExtract
    output: Any
    reads: AbstractSet[Token]
    stats: Counter[str] | None
    walked: bool = False
    """Whether it walked a whole table (any change then touches it)."""
    node: Any = None
    """``reads`` as read: tokens and the memo entries that answered, with their answers
    (``PythonResolver.reads_again``)."""
    extra: tuple[Any, ...] = ()
    """The memo entries computed again in its place by early cut-off (``node`` holds
    them): what they read is read too, beside ``reads``, which may then also hold what
    the entries they replaced read (a superset: it can only make a later round judge
    the module again)."""


FLOWS_FIRST = "flows 1"
FLOWS_SECOND = "flows 2"
EMISSION = "emission"
STRUCTURE = "structure"
CODE_SHARE = ("code", "")
"""The merge key of the JavaScript, TypeScript and Go share (``code_round``)."""
"""The key of a module's nodes and ``contains`` facts among the shares a round merges."""
PHASES = (FLOWS_FIRST, FLOWS_SECOND, EMISSION)
"""The per-module phases of a round: the argument flows' two rounds, then the facts."""


@dataclass(frozen=True, slots=True)
class PythonRounds:
    """What one round leaves for the next."""

    tops: frozenset[str]
    """The top-level package names (another set makes every import read differently)."""
    modules_by_name: Mapping[str, str]
    """Module name -> path, as the resolver looked them up."""
    root_package: str | None
    subclasses: Mapping[str, tuple[Any, ...]]
    attributes: Mapping[str, frozenset[tuple[str, str]]]
    """The self-attribute table (``resolve.self_attribute_table``)."""
    flows: tuple[Mapping[Any, Any], Mapping[Any, Any]]
    """The flow table after each of its two rounds."""
    phases: Mapping[str, Mapping[str, ModuleRecord]]
    redone: Mapping[str, int]
    """Modules each phase computed this round (the rest were reused)."""
    structure: Mapping[str, EmittedShare]
    """Per module: its nodes and ``contains`` facts, made from ``module_tables[path]``."""
    module_tables: Mapping[str, Any]
    """The resolver's tables of each module (``PythonResolver(known=...)``): its extract
    and name too."""
    merged: PartsMerge | None = None
    """The merge of every module's shares into the graph, for the next round to merge by
    difference (``SemanticGraph.merge_parts``); consumed by it."""
    memos: Mapping[str, Any] | None = None
    """Each phase's memo (``PythonResolver.take_memo``): the next round answers from the
    entries whose reads did not change (``PythonResolver.carry``)."""

    @property
    def modules(self) -> Mapping[str, ModuleRecord]:
        """Every module's share of the emission."""
        return self.phases[EMISSION]

    @property
    def emitted(self) -> int:
        """Modules whose facts were emitted again this round (the rest were replayed)."""
        return self.redone[EMISSION]


_KEPT: dict[str, PythonRounds] = {}
"""The last round of each index this process re-indexes (``cairn watch``), by the path of
its extraction cache: one index per folder."""


@dataclass(frozen=True, slots=True)
class CodeRound:
    """The JavaScript, TypeScript and Go resolution of one round: its extracts, what it
    emitted (apart) and its call counts per file. It reads those extracts alone (no
    Python node, no graph), so a round with the very same extract objects reuses it."""

    extracts: tuple[FileExtract, ...]
    share: EmittedShare
    call_stats: Mapping[str, Counter[str]]


_KEPT_CODE: dict[str, CodeRound] = {}
"""The last code round of each index, as ``_KEPT``."""


def code_round(
    index: str,
    extracts: list[FileExtract],
    resolve: Callable[[ShareEmitter], Mapping[str, Counter[str]]],
) -> CodeRound:
    """The code round for ``extracts`` (in path order): the last one of ``index`` when
    its extracts are these very objects, else ``resolve`` run on a ``ShareEmitter``
    (which returns the call counts); kept for the next round either way."""
    held = _KEPT_CODE.pop(index, None)
    if held is None or not _same_objects(held.extracts, extracts):
        emitter = ShareEmitter()
        stats = resolve(emitter)
        held = CodeRound(tuple(extracts), emitter.share(), stats)
    _KEPT_CODE[index] = held
    return held


def _same_objects(before: tuple[FileExtract, ...], now: list[FileExtract]) -> bool:
    return len(before) == len(now) and all(a is b for a, b in zip(before, now, strict=True))


def last_round(index: str) -> PythonRounds | None:
    """The round this process last kept for ``index``, if any."""
    return _KEPT.get(index)


def keep_round(index: str, rounds: PythonRounds) -> None:
    """Keep ``rounds`` as the last round of ``index`` (replacing the one before)."""
    _KEPT[index] = rounds


def take_round(index: str) -> PythonRounds | None:
    """The Python round this process last kept for ``index``, no longer kept (a round
    that fails then leaves nothing half-made to trust)."""
    return _KEPT.pop(index, None)


def forget_round(index: str) -> None:
    """Keep nothing for ``index`` (its next round resolves everything again)."""
    _KEPT.pop(index, None)
    _KEPT_CODE.pop(index, None)


def resolve_rounds(
    resolver: PythonResolver,
    root_package: str | None,
    previous: PythonRounds | None,
    shared: Sequence[tuple[Hashable, EmittedShare]] = (),
) -> PythonRounds:
    """``resolver.run()``, computing again only each module's share that ``previous``
    cannot vouch for; returns what the next round needs. Run it where deep recursion
    is allowed. ``shared`` (under keys of their own: ``CODE_SHARE``) are merged after
    the modules' shares, in the same merge: a share that is the very object of the
    round before is then no change of the graph (``SemanticGraph.changes``)."""
    structure = _structure(resolver, previous)
    resolver.subclass_table()
    tables = resolver.tables()
    subclasses = {key: tuple(value) for key, value in tables[3].items()}
    attributes = tables[4]
    tops = frozenset(resolver.tops)
    usable = (
        previous is not None and previous.root_package == root_package and previous.tops == tops
    )
    before = previous if usable else None
    changed = _changed(resolver, subclasses, attributes, before)
    paths = sorted(resolver.by_path)
    phases: dict[str, dict[str, ModuleRecord]] = {}
    redone: dict[str, int] = {}
    memos: dict[str, Any] = {}
    flows: list[Mapping[Any, Any]] = []
    table: Mapping[Any, Any] = {}
    for number, phase in enumerate((FLOWS_FIRST, FLOWS_SECOND)):
        resolver.flows = dict(table)  # the first round reads no flows, the second the first's
        held = before.phases[phase] if before is not None else {}
        memo = before.memos.get(phase) if before is not None and before.memos else None
        done, redone[phase], memos[phase] = _phase(
            resolver, paths, held, changed, _flows_of, memo=memo
        )
        phases[phase] = done
        if before is not None and _same_outputs(done, held):
            table = before.flows[number]  # the merge of the same parts in the same order
        elif before is not None:  # gathered again only for the keys changed parts name
            outputs = {path: record.output for path, record in held.items()}
            table = merge_flows_again(
                before.flows[number], outputs, {path: done[path].output for path in paths}
            )
            changed |= _table_changes("f", before.flows[number], table)
        else:
            table = merge_flows([done[path].output for path in paths])
            changed |= _table_changes("f", None, table)
        flows.append(table)
    resolver.flows = dict(table)
    held = before.phases[EMISSION] if before is not None else {}
    memo = before.memos.get(EMISSION) if before is not None and before.memos else None
    phases[EMISSION], redone[EMISSION], memos[EMISSION] = _phase(
        resolver, paths, held, changed, _emission_of, replay=_replay, keep=interned, memo=memo
    )
    merged = resolver.emit.merge_shares(
        [((STRUCTURE, path), structure[path]) for path in paths]
        + [((EMISSION, path), phases[EMISSION][path].output) for path in paths]
        + list(shared),
        previous.merged if previous is not None else None,
    )
    resolver.forget()  # the routes read from no memo made under another flow table
    resolver.finish()
    by_name = {name: module.path for name, module in resolver.by_name.items()}
    return PythonRounds(
        tops,
        by_name,
        root_package,
        subclasses,
        attributes,
        (flows[0], flows[1]),
        phases,
        redone,
        structure,
        dict(resolver.by_path),
        merged,
        memos if CARRIED_MEMO else None,
    )


def _structure(resolver: PythonResolver, previous: PythonRounds | None) -> dict[str, EmittedShare]:
    """Every module's nodes and ``contains`` facts, emitted apart: a function of the
    module alone (its extract and name), so a module whose tables the resolver reused
    (the same extract object under the same name) keeps what it emitted the round
    before."""
    tables = previous.module_tables if previous is not None else {}
    made: dict[str, EmittedShare] = {}
    for path in sorted(resolver.by_path):
        if tables.get(path) is resolver.by_path[path]:
            assert previous is not None
            made[path] = previous.structure[path]
        else:
            before = previous.structure.get(path) if previous is not None else None
            made[path] = interned(_apart(resolver, resolver.emit_structure, path), before)
    return made


def _apart(resolver: PythonResolver, emit: Callable[[str], None], path: str) -> EmittedShare:
    """``emit(path)`` with the resolver's emitter calls kept apart (``ShareEmitter``)."""
    emitter = resolver.emit
    apart = ShareEmitter()
    resolver.emit = apart  # type: ignore[assignment]
    try:
        emit(path)
    finally:
        resolver.emit = emitter
    return apart.share()


Work = Callable[[PythonResolver, str], tuple[Any, "Counter[str] | None"]]
"""One module's share of a phase: ``(output, call counts or None)``."""


def _flows_of(resolver: PythonResolver, path: str) -> tuple[Any, Counter[str] | None]:
    return resolver.flow_parts(path), None


def _emission_of(resolver: PythonResolver, path: str) -> tuple[Any, Counter[str] | None]:
    return _apart(resolver, resolver.emit_module, path), Counter(resolver.call_stats[path])


def _phase(
    resolver: PythonResolver,
    paths: list[str],
    held: Mapping[str, ModuleRecord],
    changed: set[Token],
    work: Work,
    replay: Callable[[PythonResolver, ModuleRecord], None] | None = None,
    keep: Callable[[Any, Any], Any] | None = None,
    memo: Any = None,
) -> tuple[dict[str, ModuleRecord], int, Any]:
    """One phase over every module in path order: a module whose extract is the same
    object and which read nothing in ``changed`` keeps its record (``replay`` is told);
    the others are computed again, in path order, with one memo whose entries carry
    what computing them read (``PythonResolver.note_reads``), so each module's reads are
    what it read itself and what the entries that answered it read. ``keep`` is given
    a module's new output and its last one, and says which to hold (``interned``).
    ``memo`` is the last round's memo of the phase, answering each entry whose reads did
    not change (``PythonResolver.carry``); returns the records, how many modules were
    computed again, and this round's memo."""
    dirty: set[str] = set()
    touched: list[str] = []
    reached: dict[int, bool] = {}  # memo entries found to read something changed or not
    for path in paths:
        record = held.get(path)
        if record is None or record.extract is not resolver.by_path[path].extract:
            dirty.add(path)
        elif _touched(record, changed, reached):
            touched.append(path)
    plain = resolver.tables()
    log: list[Any] = []
    views: dict[str, Any] = {}
    watched = tuple(
        WatchedModules(table, tag, log, views)
        if tag in _MODULE_TABLES
        else WatchedTable(table, tag, log)
        for table, tag in zip(plain, _TABLES, strict=True)
    )
    records: dict[str, ModuleRecord] = {}
    answered: list[Any] = []
    resolver.note_reads(log, answered)
    if CARRIED_MEMO and SHARED_MEMO:
        resolver.carry(memo, changed | _WALKS)
    try:
        resolver.set_tables(watched)
        try:
            again = _answers_again(resolver, touched, held, changed, log, answered, reached)
        finally:
            resolver.set_tables(plain)
        dirty.update(path for path in touched if path not in again)
        for path in paths:
            if path not in dirty:
                record = again.get(path) or held[path]
                if replay is not None:
                    replay(resolver, record)
                records[path] = record
                continue
            if not SHARED_MEMO:
                resolver.note_reads(log, answered)  # the reference: every module from no memo
            log.clear()
            answered.clear()
            resolver.set_tables(watched)
            try:
                output, stats = work(resolver, path)
            finally:
                resolver.set_tables(plain)
            if keep is not None and (last := held.get(path)) is not None:
                output = keep(output, last.output)
            module = resolver.by_path[path]
            node = resolver.module_reads(log, answered, (("m", path), ("n", module.name)))
            reads = resolver.reads_set(node)
            walked = not reads.isdisjoint(_WALKS)
            records[path] = ModuleRecord(module.extract, output, reads, stats, walked, node)
        taken = resolver.take_memo()
    finally:
        resolver.note_reads(None)
    return records, len(dirty), taken


def _answers_again(
    resolver: PythonResolver,
    touched: list[str],
    held: Mapping[str, ModuleRecord],
    changed: set[Token],
    log: list[Any],
    answered: list[Any],
    reached: dict[int, bool],
) -> dict[str, ModuleRecord]:
    """The modules of ``touched`` whose every answer read is the same this round
    (``PythonResolver.reads_again``), each with its record and its reads as they are
    now; the others must be computed again. A module that walked a whole table is
    never kept this way."""
    again: dict[str, ModuleRecord] = {}
    if not EARLY_CUTOFF:
        return again
    seen: dict[int, Any] = {}
    walks: dict[int, bool] = {}
    for path in touched:
        record = held[path]
        if record.walked or record.node is None:
            continue
        judged = resolver.reads_again(record.node, changed, seen, reached)
        log.clear()  # what computing entries again read outside them belongs to no module
        answered.clear()
        if judged is None:
            continue
        node, fresh = judged
        if any(reaches(entry, _WALKS, walks) for entry in fresh):
            continue
        # The entries computed again before and not replaced now stay in ``node``.
        kept = tuple(entry for entry in record.extra if _stays(entry, seen))
        extra = tuple(dict.fromkeys((*fresh, *kept)))
        again[path] = ModuleRecord(
            record.extract, record.output, record.reads, record.stats, False, node, extra
        )
    return again


def _same_outputs(done: Mapping[str, ModuleRecord], held: Mapping[str, ModuleRecord]) -> bool:
    """Whether every module of ``done`` was in ``held``, in the same order, with an
    equal output (computed again or not)."""
    if list(done) != list(held):
        return False
    return all(
        record is held[path] or record.output == held[path].output for path, record in done.items()
    )


def _table_changes(
    tag: str, before: Mapping[Any, Any] | None, now: Mapping[Any, Any]
) -> set[Token]:
    """The keys of a table whose value differs (every key when there was none)."""
    if before is None:
        return {(tag, key) for key in now}
    return {(tag, key) for key in now.keys() | before.keys() if now.get(key) != before.get(key)}


def _changed(
    resolver: PythonResolver,
    subclasses: Mapping[str, tuple[Any, ...]],
    attributes: Mapping[str, frozenset[tuple[str, str]]],
    previous: PythonRounds | None,
) -> set[Token]:
    """The parts of modules, the names, the subclass lists and the self-attribute
    holders that differ from ``previous``'s round (nothing to compare with: none, and
    every module is computed anyway)."""
    changed: set[Token] = set()
    if previous is None:
        return changed
    held = previous.module_tables
    for path in resolver.by_path.keys() | held.keys():
        module = resolver.by_path.get(path)
        before = held.get(path)
        if module is None or before is None or not _same_extract(before.extract, module.extract):
            changed |= module_changes(path, before, module)  # changed, added or removed
    for name in resolver.by_name.keys() | previous.modules_by_name.keys():
        found = resolver.by_name.get(name)
        if found is None or found.path != previous.modules_by_name.get(name):
            changed.add(("n", name))
    changed |= _table_changes("s", previous.subclasses, subclasses)
    changed |= _table_changes("a", previous.attributes, attributes)
    return changed


def _same_extract(before: FileExtract, now: FileExtract) -> bool:
    return before is now or before == now


def _stays(entry: Any, seen: Mapping[int, Any]) -> bool:
    """Whether a judged tree still holds ``entry`` (not judged, or judged to stand)."""
    judged = seen.get(id(entry))
    return judged is None or judged[0] is entry


def _touched(record: ModuleRecord, changed: set[Token], reached: dict[int, bool]) -> bool:
    if not changed:
        return False
    if record.walked or not record.reads.isdisjoint(changed):
        return True
    return any(reaches(entry, changed, reached) for entry in record.extra)


def _replay(resolver: PythonResolver, record: ModuleRecord) -> None:
    """Put back a kept module's call counts (its share is merged with the others')."""
    assert record.stats is not None
    resolver.call_stats[record.extract.path] = Counter(record.stats)
