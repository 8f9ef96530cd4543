"""Python resolution across ``cairn watch`` rounds: re-emit only the modules an edit can
reach, replay the others.

Python resolution gives every module the same facts whatever order the modules are
visited in, and whatever was memoised before (``cairn.codegraph.resolve``). So one
module's facts can be computed alone, from no memo at all, and while that runs every
whole-program table it reads is watched: which modules (by path or by name), which
argument flows, which subclass lists. A round keeps, per module, the emitter calls its
facts came from and what it read. The next round rebuilds the whole-program part (every
module's nodes, the subclass table, the argument flows) as a clean build does, then
replays the calls of each module whose extract is the same object and which read
nothing that changed; the rest are emitted again alone. The calls reach the emitter in
the same order as in a clean build, so the graph is the same.

The first round emits every module alone (slower than a clean build's shared memos:
Django package 2.2 s against 0.74 s for the emission). An added, removed or renamed
module is a change like any other (a module that looked a name up and found nothing
read that name too); a new or lost top-level package starts over.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from cairn.codegraph.emit import GraphEmitter
from cairn.codegraph.records import FileExtract
from cairn.codegraph.resolve import PythonResolver

__all__ = [
    "ModuleRecord",
    "PythonRounds",
    "forget_round",
    "keep_round",
    "last_round",
    "resolve_rounds",
]

Token = tuple[str, object]
"""What a module's resolution read: ``("m", path)``, ``("n", module name)``, ``("f", flow
key)``, ``("s", class node ID)``; ``("*", table)`` when it walked a whole table."""

_TABLES = ("m", "n", "f", "s")
"""The token tags of ``PythonResolver.tables()``, in its order."""

_ALL = "*"

BATCH_SHARE = 0.3
"""A round emits its dirty modules one at a time, from no memo, while that costs less
than this share of emitting every module so; else in one batch. Emitting all of the
Django package's modules alone took 2.2-2.9 s against 0.74 s for one batch (the whole
sdist: 17.5 s against 4.3 s), so a batch of every module costs about this share."""

ALONE_OVER_BATCH = 3.5
"""The guess of a module's cost alone from its cost in a batch (the ratio above)."""

Call = tuple[str, tuple[Any, ...], dict[str, Any]]
"""One emitter call: method name, positional and keyword arguments."""


class _Watched(dict[Any, Any]):
    """A table that notes each key read (and a walk of the whole table) in ``reads``."""

    def __init__(self, data: Mapping[Any, Any], tag: str) -> None:
        super().__init__(data)
        self._tag = tag
        self._reads: set[Token] = set()

    def note_into(self, reads: set[Token]) -> None:
        """Note the reads from now on into ``reads``."""
        self._reads = reads

    def __getitem__(self, key: Any) -> Any:
        self._reads.add((self._tag, key))
        return super().__getitem__(key)

    def get(self, key: Any, default: Any = None) -> Any:
        self._reads.add((self._tag, key))
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        self._reads.add((self._tag, key))
        return super().__contains__(key)

    def __iter__(self) -> Iterator[Any]:
        self._reads.add((_ALL, self._tag))
        return super().__iter__()

    def keys(self) -> Any:
        self._reads.add((_ALL, self._tag))
        return super().keys()

    def values(self) -> Any:
        self._reads.add((_ALL, self._tag))
        return super().values()

    def items(self) -> Any:
        self._reads.add((_ALL, self._tag))
        return super().items()


class _Recorder:
    """Stands for the emitter while one module is emitted: forwards each call and keeps
    a copy of it (mappings copied: callers may reuse theirs)."""

    def __init__(self, emitter: GraphEmitter) -> None:
        self._emitter = emitter
        self.calls: list[Call] = []

    def node(self, node_id: str, kind: str, attributes: Mapping[str, Any], *rest: Any) -> str:
        self.calls.append(("node", (node_id, kind, dict(attributes), *rest), {}))
        return self._emitter.node(node_id, kind, attributes, *rest)

    def external(self, language: str, dotted: str) -> str:
        self.calls.append(("external", (language, dotted), {}))
        return self._emitter.external(language, dotted)

    def fact(
        self,
        source: str,
        target: str,
        relation: str,
        discriminator: Mapping[str, Any] | None,
        **keywords: Any,
    ) -> None:
        if keywords.get("metadata") is not None:
            keywords["metadata"] = dict(keywords["metadata"])
        copied = dict(discriminator) if discriminator else None
        self.calls.append(("fact", (source, target, relation, copied), keywords))
        self._emitter.fact(source, target, relation, discriminator, **keywords)


@dataclass(frozen=True, slots=True)
class ModuleRecord:
    """One module's share of a round: its extract, the emitter calls its facts came
    from, what its resolution read, and its call counts."""

    extract: FileExtract
    calls: tuple[Call, ...]
    reads: frozenset[Token]
    stats: Counter[str]
    seconds: float
    """What emitting it alone took (the cost guess ``_cheaper_alone`` weighs)."""


@dataclass(frozen=True, slots=True)
class PythonRounds:
    """What one round leaves for the next."""

    tops: frozenset[str]
    """The top-level package names (another set makes every import read differently)."""
    modules_by_name: Mapping[str, str]
    """Module name -> path, as the resolver looked them up."""
    root_package: str | None
    flows: Mapping[Any, Any]
    subclasses: Mapping[str, tuple[Any, ...]]
    modules: Mapping[str, ModuleRecord]
    emitted: int
    """Modules emitted alone this round (the rest were replayed)."""


_KEPT: dict[str, PythonRounds] = {}
"""The last round of each index this process re-indexes (``cairn watch``), by the path of
its extraction cache: one index per folder."""


def last_round(index: str) -> PythonRounds | None:
    """The round this process last kept for ``index``, if any."""
    return _KEPT.get(index)


def keep_round(index: str, rounds: PythonRounds) -> None:
    """Keep ``rounds`` as the last round of ``index`` (replacing the one before)."""
    _KEPT[index] = rounds


def forget_round(index: str) -> None:
    """Keep nothing for ``index`` (its next round emits every module)."""
    _KEPT.pop(index, None)


def resolve_rounds(
    resolver: PythonResolver,
    root_package: str | None,
    previous: PythonRounds | None,
) -> PythonRounds:
    """``resolver.run()``, re-emitting only the modules ``previous`` cannot vouch for;
    returns what the next round needs. Run it where deep recursion is allowed."""
    resolver.prepare()
    subclasses = {key: tuple(value) for key, value in resolver.tables()[3].items()}
    held: Mapping[str, ModuleRecord] = {}
    changed: set[Token] = set()
    tops = frozenset(resolver.tops)
    if previous is not None and previous.root_package == root_package and previous.tops == tops:
        held = previous.modules
        changed = _changed(resolver, subclasses, previous)
    paths = sorted(resolver.by_path)
    dirty = {
        path
        for path in paths
        if (record := held.get(path)) is None
        or record.extract is not resolver.by_path[path].extract
        or _touched(record.reads, changed)
    }
    alone = _cheaper_alone(dirty, held)
    shared: set[Token] = set()
    if not alone:
        resolver.forget()  # one batch from no memo: what it reads is all in ``shared``
    made: dict[str, tuple[tuple[Call, ...], set[Token], Counter[str], float]] = {}
    plain = resolver.tables()
    tables = (plain, tuple(_Watched(t, tag) for t, tag in zip(plain, _TABLES, strict=True)))
    for path in paths:
        if path in dirty:
            reads = set() if alone else shared
            made[path] = _emit_watched(resolver, tables, path, reads, forget=alone)
        else:
            record = held[path]
            _replay(resolver.emit, record.calls)
            resolver.call_stats[path] = Counter(record.stats)
    resolver.finish()
    for path in made:
        shared.update((("m", path), ("n", resolver.by_path[path].name)))
    frozen = frozenset(shared)
    modules: dict[str, ModuleRecord] = {}
    for path in paths:
        if path not in made:
            modules[path] = held[path]
            continue
        calls, reads, stats, seconds = made[path]
        if alone:
            reads.update((("m", path), ("n", resolver.by_path[path].name)))
        elif path in held:
            seconds = held[path].seconds  # still the best guess of its cost alone
        else:
            seconds *= ALONE_OVER_BATCH
        extract = resolver.by_path[path].extract
        modules[path] = ModuleRecord(
            extract, calls, frozenset(reads) if alone else frozen, stats, seconds
        )
    by_name = {name: module.path for name, module in resolver.by_name.items()}
    return PythonRounds(tops, by_name, root_package, resolver.flows, subclasses, modules, len(made))


def _cheaper_alone(dirty: set[str], held: Mapping[str, ModuleRecord]) -> bool:
    """Whether emitting ``dirty`` one module at a time (exact reads) costs less than one
    batch (every module in it then reads what the whole batch read)."""
    if not held:
        return True  # the first round: exact reads for every module, once
    total = sum(record.seconds for record in held.values())
    known = [held[path].seconds for path in dirty if path in held]
    mean = total / len(held)
    alone = sum(known) + mean * (len(dirty) - len(known))
    return alone <= BATCH_SHARE * total


def _changed(
    resolver: PythonResolver,
    subclasses: Mapping[str, tuple[Any, ...]],
    previous: PythonRounds | None,
) -> set[Token]:
    """The tokens whose value differs from ``previous``'s round."""
    assert previous is not None
    changed: set[Token] = set()
    for path in resolver.by_path.keys() | previous.modules.keys():
        module = resolver.by_path.get(path)
        held = previous.modules.get(path)
        if module is None or held is None or not _same_extract(held.extract, module.extract):
            changed.add(("m", path))  # changed, added or removed
    for name in resolver.by_name.keys() | previous.modules_by_name.keys():
        found = resolver.by_name.get(name)
        if (
            found is None
            or found.path != previous.modules_by_name.get(name)
            or ("m", found.path) in changed
        ):
            changed.add(("n", name))
    tables: tuple[tuple[str, Mapping[Any, Any], Mapping[Any, Any]], ...] = (
        ("f", resolver.flows, previous.flows),
        ("s", subclasses, previous.subclasses),
    )
    for tag, now, before in tables:
        for key in now.keys() | before.keys():
            if now.get(key) != before.get(key):
                changed.add((tag, key))
    return changed


def _same_extract(before: FileExtract, now: FileExtract) -> bool:
    return before is now or before == now


def _touched(reads: frozenset[Token], changed: set[Token]) -> bool:
    if not changed:
        return False
    if not reads.isdisjoint(changed):
        return True
    return any(tag == _ALL for tag, _ in reads)


def _emit_watched(
    resolver: PythonResolver,
    tables: tuple[tuple[dict[Any, Any], ...], tuple[_Watched, ...]],
    path: str,
    reads: set[Token],
    *,
    forget: bool,
) -> tuple[tuple[Call, ...], set[Token], Counter[str], float]:
    """Emit one module with ``tables`` (the resolver's and their watched copies) watching
    what it reads (into ``reads``) and recording its calls; from no memo when
    ``forget``. Returns the calls, ``reads``, its call counts and the seconds it took."""
    started = time.perf_counter()
    plain, watched = tables
    for table in watched:
        table.note_into(reads)
    recorder = _Recorder(resolver.emit)
    emitter = resolver.emit
    if forget:
        resolver.forget()
    resolver.set_tables(watched)
    resolver.emit = recorder  # type: ignore[assignment]
    try:
        resolver.emit_module(path)
    finally:
        resolver.emit = emitter
        resolver.set_tables(plain)
    stats = Counter(resolver.call_stats[path])
    return tuple(recorder.calls), reads, stats, time.perf_counter() - started


def _replay(emitter: GraphEmitter, calls: tuple[Call, ...]) -> None:
    for method, args, keywords in calls:
        getattr(emitter, method)(*args, **keywords)
