"""Printed graph.cairn sections kept between writes, a segment of records at a time, for
a process that writes the artifact again and again (``cairn watch``).

A watch round builds its graph again from the records of the modules it did not resolve
again, so almost every node, fact and occurrence is the very object the last round
wrote. ``PrintedSegments`` cuts each section's sorted records into segments that end
after a record whose ID hashes to a multiple of ``SEGMENT_RECORDS`` (so an edit moves no
boundary but its own) and keeps, per segment, the JSON each column prints for it and its
rows' entries in the shared tables (endpoint identities, discriminators, occurrence
owners) as a small local table. A write prints only the segments holding a record it
has not printed, numbers the tables again from the local ones (a new entry moves the
rows of later entries) and joins each column from the kept pieces (one copy per column:
hashing and writing many small pieces costs more). A graph made by the next merge of the
lineage the held segments were printed from names the records that changed
(``SemanticGraph.changes``): its write lists no table and cuts again only the segments
holding a named record, spliced into the held lists in place.

The bytes equal ``encode_artifact``'s: a JSON array printed whole is its elements'
texts joined by commas, which is what the kept pieces are; a property test compares the
two over edits. Memory: about one more copy of the printed sections (the size of
graph.cairn), in some thousands of buffers.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from itertools import pairwise
from operator import attrgetter, is_
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson

from cairn.artifact.format import (
    _FACT_FIELDS,
    _IDENTITY_KEY,
    _NODE_FIELDS,
    _OWNER,
    _OWNER_KEY,
    _SOURCE,
    _TARGET,
    _columns_of,
    _discriminator_table,
    _members,
    _normalized,
    _sorted_dumps,
    _table,
    _Writer,
)
from cairn.artifact.seal import Chunked, Piece, digest_tail
from cairn.graph.model import EndpointIdentity, OccurrenceOwner
from cairn.graph.multigraph import GraphChanges, SemanticGraph

__all__ = ["SEGMENT_RECORDS", "PrintedSegments"]

SEGMENT_RECORDS = 16
"""Records per segment on average (a power of two): fewer makes more buffers, more
prints more records again per edit (an edit's records are scattered over the sorted
order: fact and occurrence IDs are hashes)."""

JOIN_SEGMENTS = 256
"""Segments per chunk of a printed column (``_joined``): about a megabyte on Django."""

_ID = attrgetter("id")
_MARK = orjson.Fragment(b"\x00")
"""Stands in for a section while the rest prints (orjson escapes every NUL in strings)."""

_Rows = npt.NDArray[np.int64]
_Local = tuple[tuple[bytes, ...], _Rows]
"""A segment's local table (sorted entries) and each record's row in it."""


@dataclass(frozen=True, slots=True)
class _Section:
    """How one record section prints: its printed columns, its table columns (each
    naming the shared table it points into) and the function printing a segment."""

    name: str
    printed: tuple[str, ...]
    tables: tuple[tuple[str, str], ...]
    print_segment: Callable[[Sequence[Any]], tuple[dict[str, Any], tuple[_Local, ...]]]


@dataclass(slots=True)
class _Segment:
    """One segment's records, the inner text each printed column has for them (between
    the brackets), their local tables, whether all that text is proven NFC (ASCII, or
    checked: each text starts with an ASCII byte, where no normalisation reaches across),
    and each table column's rows as last mapped into a shared table."""

    records: tuple[Any, ...]
    texts: tuple[bytes, ...]
    locals: tuple[_Local, ...]
    nfc: bool
    mapped: list[tuple[object, _Rows] | None]


def _local(entries: list[bytes], rows: list[int]) -> _Local:
    return tuple(entries), np.asarray(rows, dtype=np.int64)


def _print_nodes(records: Sequence[Any]) -> tuple[dict[str, Any], tuple[_Local, ...]]:
    columns = _columns_of(records, _NODE_FIELDS)
    identity = _table(list(columns[2]), _IDENTITY_KEY, EndpointIdentity.to_json)
    return _Writer(fast=True).node_columns(columns, []), (_local(*identity),)


def _print_facts(records: Sequence[Any]) -> tuple[dict[str, Any], tuple[_Local, ...]]:
    columns = _columns_of(records, _FACT_FIELDS)
    ends = columns[7]
    source = _table(list(map(_SOURCE, ends)), _IDENTITY_KEY, EndpointIdentity.to_json)
    target = _table(list(map(_TARGET, ends)), _IDENTITY_KEY, EndpointIdentity.to_json)
    discriminator = _discriminator_table(columns[8])
    printed = _Writer(fast=True).fact_columns(columns, [], [], [])
    return printed, (_local(*discriminator), _local(*source), _local(*target))


def _print_occurrences(records: Sequence[Any]) -> tuple[dict[str, Any], tuple[_Local, ...]]:
    owner = _table(list(map(_OWNER, records)), _OWNER_KEY, OccurrenceOwner.to_json)
    return _Writer(fast=True).occurrence_columns(records, []), (_local(*owner),)


_NODES = _Section(
    "nodes", ("attributes", "id", "kind"), (("identity", "identities"),), _print_nodes
)
_FACTS = _Section(
    "facts",
    ("annotation_variants", "direction", "id", "occurrence_ids", "relation", "source", "target"),
    (
        ("discriminator", "discriminators"),
        ("source_identity", "identities"),
        ("target_identity", "identities"),
    ),
    _print_facts,
)
_OCCURRENCES = _Section(
    "occurrences",
    (
        "adapter_evidence_key",
        "confidence_observations",
        "diagnostics",
        "fact_id",
        "id",
        "metadata_variants",
        "provenance",
        "site_kind",
        "source_file",
        "source_range",
        "target_file",
        "target_range",
    ),
    (("owner", "owners"),),
    _print_occurrences,
)
_SECTIONS = (_FACTS, _NODES, _OCCURRENCES)
"""In the order their members print (sorted keys: facts, nodes, occurrences)."""


@dataclass(slots=True)
class _Held:
    """One section's held segments in order: each one's key (its first record's ID), the
    segments, and per printed column each segment's text (a column joins them in C)."""

    keys: list[str]
    segments: list[_Segment]
    columns: list[list[bytes]]

    @classmethod
    def of(cls, section: _Section, segments: list[_Segment]) -> _Held:
        columns = [
            [item.texts[index] for item in segments] for index in range(len(section.printed))
        ]
        return cls([item.records[0].id for item in segments], segments, columns)

    def splice(self, start: int, stop: int, fresh: list[_Segment]) -> list[_Segment]:
        """Put ``fresh`` in the place of the segments ``[start, stop)``; those."""
        removed = self.segments[start:stop]
        self.keys[start:stop] = [item.records[0].id for item in fresh]
        self.segments[start:stop] = fresh
        for index, column in enumerate(self.columns):
            column[start:stop] = [item.texts[index] for item in fresh]
        return removed


_Prepared = tuple[dict[str, _Held], dict[str, list[bytes]], dict[tuple[str, str], _Rows]]
"""Each section's held segments, each shared table, each table column's rows."""


class PrintedSegments:
    """The printed segments of the last graph written, per section (see the module)."""

    def __init__(self) -> None:
        self._held: dict[str, _Held] = {}
        self._tables: dict[str, list[bytes]] = {}
        # Per shared table, how many held segments list each entry (a table missing
        # here is counted afresh), and the tables whose entries came or went since.
        self._counts: dict[str, Counter[bytes]] = {}
        self._moved: set[str] = set()
        self._source: GraphChanges | None = None
        self._reset()

    def _reset(self) -> None:
        """Hold nothing: the next write prints every segment."""
        self._held = {section.name: _Held.of(section, []) for section in _SECTIONS}
        self._tables = {}
        self._counts = {}
        self._source = None

    @property
    def empty(self) -> bool:
        """Whether nothing is held yet (no graph printed)."""
        return not any(held.keys for held in self._held.values())

    def update(self, graph: SemanticGraph) -> None:
        """Print the segments of ``graph`` not held yet, drop those it no longer has and
        number the tables (``body`` does it too)."""
        self._prepared(graph)

    def body(self, graph: SemanticGraph, meta: dict[str, Any]) -> tuple[list[Piece], bool, bytes]:
        """What ``format._fast_body`` gives for ``graph``: the body as pieces, whether
        all of it is proven NFC (``_fast_body`` says whether it is ASCII: either spares
        the whole-body check), and the digest tail."""
        held, tables, rows = self._prepared(graph)
        identities = tables["identities"]
        width = max(1, len(identities))
        keys = rows["facts", "source_identity"] * width + rows["facts", "target_identity"]
        found, counts = np.unique(keys, return_counts=True)
        pairs = Counter(
            {
                (key // width, key % width): count
                for key, count in zip(found.tolist(), counts.tolist(), strict=True)
            }
        )
        writer = _Writer(fast=True)
        payload = _members(graph, meta, writer, identities, pairs)
        payload["discriminators"] = writer.table(tables["discriminators"])
        payload["occurrence_owners"] = writer.table(tables["owners"])
        for section in _SECTIONS:
            payload[section.name] = _MARK
        rest = _sorted_dumps(payload)
        view = memoryview(rest)
        pieces: list[Piece] = []
        start = 0
        for section in _SECTIONS:
            mark = rest.index(b"\x00", start)
            pieces.append(view[start:mark])
            pieces.extend(_section_pieces(section, held[section.name], rows))
            start = mark + 1
        pieces.append(view[start:])
        proven = (rest.isascii() or _normalized([rest])) and all(
            segment.nfc for section in _SECTIONS for segment in held[section.name].segments
        )
        return pieces, proven, digest_tail(payload, _sorted_dumps)

    def _prepared(self, graph: SemanticGraph) -> _Prepared:
        """Each section's held segments, each shared table, and each table column's rows.

        A graph made by the next merge of the lineage the held segments were printed
        from (``SemanticGraph.changes``) is not listed: only the segments where its
        journals name a record are cut and printed again (``_cut_changes``)."""
        changes = graph.changes()
        changed = self._changed(changes)
        if changed is not None:
            for section, ids in zip(_SECTIONS, changed, strict=True):
                self._cut_changes(section, graph, ids)
        else:
            for section in _SECTIONS:
                self._cut(section, _records(graph, section.name))
        self._source = changes
        held = self._held
        segments = {name: item.segments for name, item in held.items()}
        tables = {name: self._table(name, segments) for name in _TABLE_SOURCES}
        rows = {
            (section.name, column): _global_rows(segments[section.name], index, tables[table])
            for section in _SECTIONS
            for index, (column, table) in enumerate(section.tables)
        }
        return held, tables, rows

    def _changed(self, changes: GraphChanges | None) -> tuple[set[str], ...] | None:
        """Per section (in ``_SECTIONS`` order), the IDs of the records that may not be
        the very objects the held segments hold, when ``changes`` come from the next
        merge of the lineage they were printed from; else None (every record listed)."""
        source = self._source
        if (
            source is None
            or changes is None
            or changes.merged is None
            or changes.lineage is not source.lineage
            or changes.generation != source.generation + 1
            or self.empty
        ):
            return None
        nodes, facts, occurrences = (
            set().union(*parts)
            for parts in zip(changes.merged, changes.written, source.written, strict=True)
        )
        return facts, nodes, occurrences

    def _cut_changes(
        self, section: _Section, graph: SemanticGraph, changed: AbstractSet[str]
    ) -> None:
        """Cut and print again the held segments of ``section`` that hold a changed
        record (or where a new one sorts), from the graph's records. A run of such
        segments takes in the next one while its last record ends no segment (the
        record that ended it was taken out), so the cut stays the module's rule."""
        held = self._held[section.name]
        keys, segments = held.keys, held.segments
        count = len(keys)
        lookup = _RECORD_OF[section.name]
        present = sorted(record_id for record_id in changed if lookup(graph, record_id) is not None)
        runs: list[tuple[int, int, list[Any]]] = []
        if not count:
            runs.append((0, 0, [lookup(graph, record_id) for record_id in present]))
        dirty = (
            {max(bisect_right(keys, record_id) - 1, 0) for record_id in changed} if count else set()
        )
        index = taken = 0
        for start in sorted(dirty):
            if start < index:
                continue  # taken in by the run before
            index = start
            records: list[Any] = []
            while True:
                records.extend(item for item in segments[index].records if item.id not in changed)
                index += 1
                upper = bisect_left(present, keys[index]) if index < count else len(present)
                records.extend(lookup(graph, record_id) for record_id in present[taken:upper])
                taken = upper
                records.sort(key=_ID)
                if index >= count or (
                    index not in dirty and (not records or _ends_segment(records[-1].id))
                ):
                    break
            runs.append((start, index, records))
        for start, stop, records in reversed(runs):  # from the end: the starts stay valid
            listed = tuple(records)
            fresh = [_printed(section, listed[begin:end]) for begin, end in _bounds(listed)]
            self._counted(section, held.splice(start, stop, fresh), fresh)

    def _cut(self, section: _Section, records: tuple[Any, ...]) -> None:
        """Cut all of ``records`` into segments, reusing the held ones that hold the
        very same records; the held set becomes exactly these."""
        held = self._held[section.name]
        by_key = dict(zip(held.keys, held.segments, strict=True))
        found: list[_Segment] = []
        for begin, end in _bounds(records):
            part = records[begin:end]
            key = part[0].id
            segment = by_key.get(key)
            # Only the very records: equal ones can still print apart (True == 1 == 1.0,
            # 0.0 == -0.0), so a record built again prints its segment again.
            if segment is None or not (
                len(segment.records) == len(part) and all(map(is_, segment.records, part))
            ):
                segment = _printed(section, part)
            found.append(segment)
        self._held[section.name] = _Held.of(section, found)
        self._uncounted(section)

    def _counted(self, section: _Section, removed: list[_Segment], added: list[_Segment]) -> None:
        """Count the entries of segments put in and taken out of ``section``."""
        for index, (_, name) in enumerate(section.tables):
            counts = self._counts.get(name)
            if counts is None:
                continue  # counted afresh when the table is next made
            for segment in removed:
                for entry in segment.locals[index][0]:
                    counts[entry] -= 1
                    if not counts[entry]:
                        del counts[entry]
                        self._moved.add(name)
            for segment in added:
                for entry in segment.locals[index][0]:
                    if entry not in counts:
                        self._moved.add(name)
                    counts[entry] += 1

    def _uncounted(self, section: _Section) -> None:
        """Count the tables ``section``'s columns point into afresh next time."""
        for _, name in section.tables:
            self._counts.pop(name, None)

    def _table(self, name: str, segments: dict[str, list[_Segment]]) -> list[bytes]:
        """The shared table ``name``: the sorted union of the local entries of the
        columns pointing into it (kept counted as segments come and go); the last one's
        very list when the entries are the same, so the rows mapped into it stay valid."""
        counts = self._counts.get(name)
        moved = name in self._moved or counts is None
        self._moved.discard(name)
        if counts is None:
            counts = Counter()
            for section, index in _TABLE_SOURCES[name]:
                for segment in segments[section]:
                    counts.update(segment.locals[index][0])
            self._counts[name] = counts
        last = self._tables.get(name)
        if last is not None and not moved:
            return last
        entries = sorted(counts)
        if last is not None and last == entries:
            return last
        self._tables[name] = entries
        return entries


def _records(graph: SemanticGraph, name: str) -> tuple[Any, ...]:
    if name == "nodes":
        return graph.nodes()
    if name == "facts":
        return graph.facts()
    return graph.occurrences()


def _bounds(records: tuple[Any, ...]) -> list[tuple[int, int]]:
    """``[begin, end)`` of each segment: each ends after a record whose ID's hash is a
    multiple of ``SEGMENT_RECORDS`` (the hash of a string is kept in it: no rehash)."""
    count = len(records)
    if not count:
        return []
    hashes = np.fromiter(map(hash, map(_ID, records)), dtype=np.int64, count=count)
    ends = np.flatnonzero((hashes & (SEGMENT_RECORDS - 1)) == 0) + 1
    edges = [0, *ends.tolist()]
    if edges[-1] != count:
        edges.append(count)
    return list(pairwise(edges))


def _ends_segment(record_id: str) -> bool:
    """Whether a record with this ID ends its segment (``_bounds``'s rule)."""
    return hash(record_id) & (SEGMENT_RECORDS - 1) == 0


def _node_of(graph: SemanticGraph, record_id: str) -> Any:
    return graph.node(record_id) if graph.has_node(record_id) else None


def _fact_of(graph: SemanticGraph, record_id: str) -> Any:
    return graph.fact(record_id) if graph.has_fact(record_id) else None


def _occurrence_of(graph: SemanticGraph, record_id: str) -> Any:
    return graph.occurrence(record_id) if graph.has_occurrence(record_id) else None


_RECORD_OF: dict[str, Callable[[SemanticGraph, str], Any]] = {
    "nodes": _node_of,
    "facts": _fact_of,
    "occurrences": _occurrence_of,
}
"""A section's record of an ID in a graph, or None."""


def _printed(section: _Section, part: tuple[Any, ...]) -> _Segment:
    columns, locals_ = section.print_segment(part)
    texts = tuple(_sorted_dumps(columns[name])[1:-1] for name in section.printed)
    nfc = all(text.isascii() for text in texts) or _normalized(texts)
    return _Segment(part, texts, locals_, nfc, [None] * len(locals_))


def _table_sources() -> dict[str, list[tuple[str, int]]]:
    """Each shared table's columns, as (section, index of the column's local table)."""
    sources: dict[str, list[tuple[str, int]]] = {}
    for section in _SECTIONS:
        for index, (_, table) in enumerate(section.tables):
            sources.setdefault(table, []).append((section.name, index))
    return sources


_TABLE_SOURCES = _table_sources()


def _global_rows(segments: Sequence[_Segment], index: int, table: list[bytes]) -> _Rows:
    """Every record's row in ``table`` for one table column, segment after segment
    (a segment's rows are mapped once per table list)."""
    row_of: dict[bytes, int] | None = None
    arrays: list[_Rows] = []
    for segment in segments:
        mapped = segment.mapped[index]
        if mapped is None or mapped[0] is not table:
            if row_of is None:
                row_of = {entry: row for row, entry in enumerate(table)}
            entries, local = segment.locals[index]
            lookup = np.asarray([row_of[entry] for entry in entries], dtype=np.int64)
            mapped = (table, lookup[local])
            segment.mapped[index] = mapped
        arrays.append(mapped[1])
    return np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int64)


def _section_pieces(
    section: _Section, held: _Held, rows: dict[tuple[str, str], _Rows]
) -> list[Piece]:
    """The section's object, ``{"column":[...],...}`` in sorted key order, as pieces."""
    columns: dict[str, list[Piece]] = {}
    for position, name in enumerate(section.printed):
        columns[name] = [b"[", _joined(held.columns[position]), b"]"]
    for column, _ in section.tables:
        printed = orjson.dumps(rows[section.name, column], option=orjson.OPT_SERIALIZE_NUMPY)
        columns[column] = [printed]
    pieces: list[Piece] = [b"{"]
    for name in sorted(columns):
        pieces.append(b'"%s":' % name.encode())
        pieces.extend(columns[name])
        pieces.append(b",")
    pieces[-1] = b"}"
    return pieces


def _joined(texts: Sequence[bytes]) -> Chunked:
    """One column's segment texts joined by commas, in chunks of ``JOIN_SEGMENTS`` (a
    segment with nothing in the column has no text): hashing and writing tens of
    thousands of small pieces cost more than copying them into a few large ones."""
    present = list(filter(None, texts))
    size = sum(map(len, present)) + max(len(present) - 1, 0)

    def chunks() -> Iterator[bytes]:
        for start in range(0, len(present), JOIN_SEGMENTS):
            if start:
                yield b","
            yield b",".join(present[start : start + JOIN_SEGMENTS])

    return Chunked(size, chunks)
