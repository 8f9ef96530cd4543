"""Printed rows kept between writes of ``graph.cairn``, for a process that writes it again
and again (``cairn watch``).

A watch round rebuilds the graph from the records of the modules it did not resolve
again, so almost every node, fact and occurrence is the very object the last round
wrote. ``PrintedRows`` keeps, per record object, the printed JSON of each of its cells
and the canonical bytes of the table entries it points at (endpoint identities,
discriminator, occurrence owner). A write then prints only the records it has not seen,
joins every column from the kept cells, and numbers the tables again (a new entry moves
the rows of later ones). The bytes equal ``encode_artifact``'s: each column is the
array one ``orjson.dumps`` of the whole column prints, its elements printed one by one
by the same writer; a property test compares the two over edits.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import partial
from itertools import chain, compress, repeat
from operator import is_, itemgetter
from typing import Any, cast

import orjson

from cairn.artifact.format import (
    _FACT_FIELDS,
    _IDENTITY_KEY,
    _NODE_FIELDS,
    _OCCURRENCE_KEYS,
    _OWNER,
    _OWNER_KEY,
    _SOURCE,
    _TARGET,
    _columns_of,
    _discriminator_table,
    _members,
    _sorted_dumps,
    _table,
    _Writer,
)
from cairn.graph.model import EndpointIdentity, OccurrenceOwner
from cairn.graph.multigraph import SemanticGraph

__all__ = ["PrintedRows"]

_NODE_CELLS = ("attributes", "id", "kind")
"""The node columns kept printed (sorted); ``identity`` is a table row."""
_FACT_CELLS = (
    "annotation_variants",
    "direction",
    "id",
    "occurrence_ids",
    "relation",
    "source",
    "target",
)
"""The fact columns kept printed; ``discriminator`` and the two identities are rows."""
_OCCURRENCE_CELLS = _OCCURRENCE_KEYS
"""The occurrence columns kept printed; ``owner`` is a table row."""

_Held = dict[int, tuple[Any, ...]]
"""``id(record)`` -> ``(record, *cells, *entries)``: the record keeps its ``id`` its own."""
_Printer = Callable[[Sequence[Any]], list[tuple[Any, ...]]]


class PrintedRows:
    """Each node, fact and occurrence record's printed cells and table entries, by record
    object, as the last write left them."""

    def __init__(self) -> None:
        self._nodes: _Held = {}
        self._facts: _Held = {}
        self._occurrences: _Held = {}

    def update(self, graph: SemanticGraph) -> None:
        """Print the records of ``graph`` not held yet and forget those it no longer has
        (``payload`` does it too; a forked writer's rows die with it, so the watching
        process updates its own between rounds)."""
        self._nodes = _updated(self._nodes, graph.nodes(), _print_nodes)
        self._facts = _updated(self._facts, graph.facts(), _print_facts)
        self._occurrences = _updated(self._occurrences, graph.occurrences(), _print_occurrences)

    def payload(self, graph: SemanticGraph, meta: dict[str, Any]) -> dict[str, Any]:
        """The fast payload of ``graph`` (as ``format._payload(fast=True)`` with its
        occurrences), printing only the records not held."""
        self.update(graph)
        writer = _Writer(fast=True)
        nodes = _rows(self._nodes, graph.nodes())
        facts = _rows(self._facts, graph.facts())
        occurrences = _rows(self._occurrences, graph.occurrences())
        node_identity = _column(nodes, len(_NODE_CELLS) + 1)
        source, target = _column(facts, 8), _column(facts, 9)
        identities, (node_rows, source_rows, target_rows) = _numbered(node_identity, source, target)
        discriminators, (discriminator_rows,) = _numbered(_column(facts, 10))
        owners, (owner_rows,) = _numbered(_column(occurrences, len(_OCCURRENCE_CELLS) + 1))
        payload = _members(graph, meta, writer, identities, source_rows, target_rows)
        payload["discriminators"] = writer.table(discriminators)
        payload["occurrence_owners"] = writer.table(owners)
        payload["nodes"] = {**_arrays(nodes, _NODE_CELLS), "identity": node_rows}
        payload["facts"] = {
            **_arrays(facts, _FACT_CELLS),
            "discriminator": discriminator_rows,
            "source_identity": source_rows,
            "target_identity": target_rows,
        }
        payload["occurrences"] = {**_arrays(occurrences, _OCCURRENCE_CELLS), "owner": owner_rows}
        return payload


def _updated(held: _Held, records: Sequence[Any], print_batch: _Printer) -> _Held:
    """``held`` narrowed to ``records``, with every record it lacked printed.

    A held row keeps its record alive, so no other record can have its ``id``: a record
    whose ``id`` is held is that very record. Every step over all records runs in C (a
    watch round of the whole Django sdist holds ~436,000).
    """
    ids = list(map(id, records))
    found = list(map(held.get, ids))
    missing = list(compress(range(len(found)), map(_is_none, found)))
    for at, row in zip(missing, print_batch([records[at] for at in missing]), strict=True):
        found[at] = row
    return dict(zip(ids, cast(list[tuple[Any, ...]], found), strict=True))


_is_none = partial(is_, None)


def _rows(held: _Held, records: Sequence[Any]) -> list[tuple[Any, ...]]:
    """The held row of each record, in the records' order."""
    return list(map(held.__getitem__, map(id, records)))


def _column(rows: Sequence[tuple[Any, ...]], index: int) -> list[Any]:
    """Item ``index`` of every row (``0`` is the record; cells start at 1)."""
    return list(map(itemgetter(index), rows))


def _arrays(rows: Sequence[tuple[Any, ...]], names: Sequence[str]) -> dict[str, Any]:
    """Each named column (cells ``1..``, in ``names`` order) as one printed array."""
    return {
        name: orjson.Fragment(b"[" + b",".join(_column(rows, number)) + b"]")
        for number, name in enumerate(names, start=1)
    }


def _numbered(*columns: list[bytes]) -> tuple[list[bytes], list[list[int]]]:
    """One table of the entries of ``columns`` sorted by their bytes, and each column's
    rows into it (as ``format._keyed_table`` numbers them)."""
    entries = sorted(set().union(*columns))
    row_of = {entry: row for row, entry in enumerate(entries)}
    return entries, [list(map(row_of.__getitem__, column)) for column in columns]


_CUT = orjson.Fragment(b"\x00")
"""Printed between a column's values: orjson escapes every NUL inside strings, so a raw
NUL is only ever this mark."""


def _printed(columns: Iterable[Sequence[Any]]) -> list[tuple[bytes, ...]]:
    """Per record, each column value printed as ``orjson.dumps`` prints it in an array:
    the column is printed once with a mark between values and cut at the marks (one
    ``dumps`` per value costs ~10 us, one per column ~0.1 us a value)."""
    return list(zip(*map(_cut_column, columns), strict=True))


def _cut_column(column: Sequence[Any]) -> list[bytes]:
    if not column:
        return []
    marked = list(chain.from_iterable(zip(column, repeat(_CUT))))
    printed = _sorted_dumps(marked)  # b"[v0,\x00,v1,\x00,...,vn,\x00]"
    found = printed[1:-3].split(b",\x00,")
    if len(found) != len(column):
        raise AssertionError("a printed value held the column mark")
    return found


def _entries(rows: Sequence[int], entries: Sequence[bytes]) -> list[bytes]:
    return list(map(entries.__getitem__, rows))


def _print_nodes(nodes: Sequence[Any]) -> list[tuple[Any, ...]]:
    if not nodes:
        return []
    columns = _columns_of(nodes, _NODE_FIELDS)
    identities, rows = _table(list(columns[2]), _IDENTITY_KEY, EndpointIdentity.to_json)
    printed = _Writer(fast=True).node_columns(columns, rows)
    cells = _printed(printed[name] for name in _NODE_CELLS)
    return [
        (node, *cell, entry)
        for node, cell, entry in zip(nodes, cells, _entries(rows, identities), strict=True)
    ]


def _print_facts(facts: Sequence[Any]) -> list[tuple[Any, ...]]:
    if not facts:
        return []
    columns = _columns_of(facts, _FACT_FIELDS)
    ends = columns[7]
    sides = [*map(_SOURCE, ends), *map(_TARGET, ends)]
    identities, rows = _table(sides, _IDENTITY_KEY, EndpointIdentity.to_json)
    discriminators, disc_rows = _discriminator_table(columns[8])
    count = len(facts)
    printed = _Writer(fast=True).fact_columns(columns, rows[:count], rows[count:], disc_rows)
    cells = _printed(printed[name] for name in _FACT_CELLS)
    sources = _entries(rows[:count], identities)
    targets = _entries(rows[count:], identities)
    kinds = _entries(disc_rows, discriminators)
    return [
        (fact, *cell, source, target, disc)
        for fact, cell, source, target, disc in zip(
            facts, cells, sources, targets, kinds, strict=True
        )
    ]


def _print_occurrences(occurrences: Sequence[Any]) -> list[tuple[Any, ...]]:
    if not occurrences:
        return []
    owners, rows = _table(list(map(_OWNER, occurrences)), _OWNER_KEY, OccurrenceOwner.to_json)
    printed = _Writer(fast=True).occurrence_columns(occurrences, rows)
    cells = _printed(printed[name] for name in _OCCURRENCE_CELLS)
    return [
        (item, *cell, entry)
        for item, cell, entry in zip(occurrences, cells, _entries(rows, owners), strict=True)
    ]
