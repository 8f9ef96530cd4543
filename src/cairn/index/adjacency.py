"""In-memory graph adjacency bound to read positions: fact rows and CSR indexes (design §3).

Each graph is one append-only table of edge rows (source node, target node, relation,
fact ID) with a birth and a death position, so one set of arrays serves every read
position: an edge is seen at ``P`` iff ``birth <= P < death``. Nodes are the document
keys ``(collection, id)`` of the owning ``Columns`` (a fact names documents, not slots).
Two CSR indexes (rows by source node and by target node) cover the rows up to the last
rebuild; rows appended since then form a short tail that is scanned with numpy, and the
index is rebuilt once the tail grows past a fraction of the whole.

The ``facts`` table keeps only the latest state of each fact, so history comes from the
``changes`` log: a fact changed once since the last catch-up is exact (its old row dies
and its new row is born at that position). A fact changed several times in one window,
and a graph loaded whole from ``facts`` on first use, leave position ranges whose edges
the arrays do not know; a view at such a position reports itself *inexact* and the
caller reads that cut's SQLite snapshot instead, which is always right.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from cairn.graph.model import Direction
from cairn.graph.registry import REGISTRY
from cairn.index.limits import ADJACENCY_REBUILD_FRACTION, ADJACENCY_REBUILD_MIN_TAIL
from cairn.store.checksums import damaged, stored_bytes, verify_fact

__all__ = [
    "ALIVE",
    "FACT_ROW_COLUMNS",
    "UNDIRECTED_RELATIONS",
    "GraphColumn",
    "GraphView",
    "undirected_codes",
    "verify_fact_row",
]


UNDIRECTED_RELATIONS = frozenset(
    spec.name
    for spec in map(REGISTRY.get, REGISTRY.names())
    if spec is not None and spec.direction is Direction.UNDIRECTED
)
"""Relations whose facts join their endpoints both ways (stored once, endpoints sorted)."""


def undirected_codes(relations: Sequence[str]) -> npt.NDArray[np.int64]:
    """The codes (positions in ``relations``) of the undirected relations."""
    return np.asarray(
        [code for code, name in enumerate(relations) if name in UNDIRECTED_RELATIONS],
        dtype=np.int64,
    )


ALIVE = np.iinfo(np.int64).max
"""The death position of an edge nobody has deleted yet."""

NodeOf = Callable[[str, str], int]
"""Maps a document key ``(collection, id)`` to its node number (minting new ones)."""

_INITIAL_CAPACITY = 64


class _Array:
    """An append-only int64 numpy array that doubles its capacity (old views stay valid)."""

    __slots__ = ("_data", "size")

    def __init__(self, fill: int = 0) -> None:
        self._data = np.full(_INITIAL_CAPACITY, fill, dtype=np.int64)
        self.size = 0

    def extend(self, values: npt.ArrayLike) -> None:
        """Append ``values`` at the end."""
        array = np.asarray(values, dtype=np.int64)
        needed = self.size + len(array)
        if needed > len(self._data):
            grown = np.empty(max(needed, 2 * len(self._data)), dtype=np.int64)
            grown[: self.size] = self._data[: self.size]
            self._data = grown
        self._data[self.size : needed] = array
        self.size = needed

    def set(self, index: int, value: int) -> None:
        """Overwrite one element that already exists."""
        self._data[index] = value

    def view(self) -> npt.NDArray[np.int64]:
        """The filled prefix (a view; later appends never change what it shows)."""
        return self._data[: self.size]


@dataclass(frozen=True, slots=True)
class _Csr:
    """Rows ``0..rows`` grouped by one endpoint: ``order[offsets[n]:offsets[n + 1]]``."""

    rows: int
    order: npt.NDArray[np.int64]
    offsets: npt.NDArray[np.int64]

    @staticmethod
    def build(keys: npt.NDArray[np.int64], nodes: int) -> _Csr:
        """Group the row numbers of ``keys`` (one endpoint per row) by node, stably."""
        order = np.argsort(keys, kind="stable").astype(np.int64)
        counts = np.bincount(keys, minlength=nodes)
        offsets = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        return _Csr(len(keys), order, offsets)

    def rows_of(self, node: int) -> npt.NDArray[np.int64]:
        """Rows (below ``rows``) whose endpoint is ``node``."""
        if node + 1 >= len(self.offsets):
            return self.order[:0]
        return self.order[self.offsets[node] : self.offsets[node + 1]]


@dataclass(frozen=True, slots=True)
class GraphView:
    """One graph as one read cut sees it; ``exact`` False means: read SQLite instead."""

    position: int
    exact: bool
    source: npt.NDArray[np.int64]
    target: npt.NDArray[np.int64]
    relation: npt.NDArray[np.int64]
    birth: npt.NDArray[np.int64]
    death: npt.NDArray[np.int64]
    fact_ids: Sequence[str]
    relations: Sequence[str]
    by_source: _Csr
    by_target: _Csr
    undirected: npt.NDArray[np.int64]  # codes of the undirected relations

    def _rows(self, csr: _Csr, ends: npt.NDArray[np.int64], node: int) -> npt.NDArray[np.int64]:
        rows = csr.rows_of(node)
        if csr.rows < len(ends):
            tail = np.flatnonzero(ends[csr.rows :] == node) + csr.rows
            rows = np.concatenate((rows, tail)) if len(rows) else tail
        if len(rows) == 0:
            return rows
        alive = (self.birth[rows] <= self.position) & (self.death[rows] > self.position)
        found: npt.NDArray[np.int64] = rows[alive]
        return found

    def out_rows(self, node: int) -> npt.NDArray[np.int64]:
        """Edge rows alive at the view's position whose source is ``node``."""
        return self._rows(self.by_source, self.source, node)

    def in_rows(self, node: int) -> npt.NDArray[np.int64]:
        """Edge rows alive at the view's position whose target is ``node``."""
        return self._rows(self.by_target, self.target, node)

    def walk(
        self, node: int, *, outgoing: bool
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """The alive rows leaving ``node`` the way ``outgoing`` says, and their far ends.

        An undirected fact (``related_to``) is stored once, endpoints sorted, yet leaves
        both of them: it is walked from its stored target too (a self-loop only once).
        """
        near, far = (self.out_rows, self.target) if outgoing else (self.in_rows, self.source)
        rows = near(node)
        ends = far[rows]
        undirected = self.undirected
        if not len(undirected):
            return rows, ends
        back, back_ends = (self.in_rows, self.source) if outgoing else (self.out_rows, self.target)
        reverse = back(node)
        if len(reverse):
            reverse = reverse[np.isin(self.relation[reverse], undirected)]
            reverse = reverse[back_ends[reverse] != node]
        if not len(reverse):
            return rows, ends
        return np.concatenate((rows, reverse)), np.concatenate((ends, back_ends[reverse]))

    def alive(self) -> npt.NDArray[np.bool_]:
        """Mask over every row: alive at the view's position."""
        mask: npt.NDArray[np.bool_] = (self.birth <= self.position) & (self.death > self.position)
        return mask


FACT_ROW_COLUMNS = (
    "id, source_collection, source_id, target_collection, target_id, relation, shape, "
    "record, revision, deleted, checksum"
)
"""The fact columns the adjacency reads: the edge, and what its checksum covers."""


def verify_fact_row(
    graph: str,
    fact_id: str,
    ends: tuple[str, str, str, str],
    relation: str,
    shape: int | None,
    record: bytes | None,
    revision: int,
    deleted: int,
    checksum: int | None,
) -> None:
    """``verify_fact`` of one stored row as SQLite hands it over."""
    data = stored_bytes(record)
    verify_fact(graph, fact_id, ends, relation, shape, data, revision, bool(deleted), checksum)


class GraphColumn:
    """The edge rows of one graph, caught up from SQLite on demand (under the owner's lock)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.position = -1  # -1: never loaded
        self._source = _Array()
        self._target = _Array()
        self._relation = _Array()
        self._birth = _Array(ALIVE)
        self._death = _Array(ALIVE)
        self._fact_ids: list[str] = []
        self._relations: list[str] = []
        self._relation_codes: dict[str, int] = {}
        self._alive_row: dict[str, int] = {}
        self._inexact: list[tuple[int, int]] = []  # [start, end) ranges the rows do not know
        self._by_source = _Csr.build(np.empty(0, dtype=np.int64), 0)
        self._by_target = self._by_source

    @property
    def rows(self) -> int:
        """How many edge rows were ever appended."""
        return self._birth.size

    def _code(self, relation: str) -> int:
        code = self._relation_codes.get(relation)
        if code is None:
            code = len(self._relations)
            self._relations.append(relation)
            self._relation_codes[relation] = code
        return code

    def _append(self, rows: Sequence[tuple[str, int, int, str]], births: npt.ArrayLike) -> None:
        """Append ``(fact_id, source node, target node, relation)`` rows born at ``births``."""
        first = self.rows
        self._source.extend([row[1] for row in rows])
        self._target.extend([row[2] for row in rows])
        self._relation.extend([self._code(row[3]) for row in rows])
        self._death.extend(np.full(len(rows), ALIVE, dtype=np.int64))
        self._fact_ids.extend(row[0] for row in rows)
        for index, row in enumerate(rows, start=first):
            self._alive_row[row[0]] = index
        self._birth.extend(births)  # last: a row is never alive before it is complete

    def load(self, conn: sqlite3.Connection, position: int, horizon: int, node: NodeOf) -> None:
        """First use: every live fact of the snapshot, exact from ``position`` on."""
        # The whole table, filtered after each row is verified: a filter in SQL would
        # silently skip a row whose tombstone or graph bytes were damaged (and a damaged
        # key stops a key-range scan early), where the checksum names it.
        rows = conn.execute(f"SELECT graph, {FACT_ROW_COLUMNS} FROM facts NOT INDEXED").fetchall()
        edges = []
        for graph, fid, sc, si, tc, ti, rel, shape, record, revision, deleted, checksum in rows:
            verify_fact_row(
                graph, fid, (sc, si, tc, ti), rel, shape, record, revision, deleted, checksum
            )
            if graph == self.name and not deleted:
                edges.append((fid, node(sc, si), node(tc, ti), rel))
        edges.sort(key=lambda edge: edge[0])
        self._append(edges, np.full(len(edges), position, dtype=np.int64))
        if position > horizon:
            self._inexact.append((horizon, position))
        self.position = position

    def catch_up(self, conn: sqlite3.Connection, position: int, node: NodeOf) -> None:
        """Apply the fact changes of the snapshot after ``self.position`` (see module doc)."""
        columns = ", ".join(f"f.{name}" for name in FACT_ROW_COLUMNS.split(", "))
        rows = conn.execute(
            f"SELECT c.position, c.id, {columns} FROM changes AS c LEFT JOIN facts AS f "
            "ON f.graph = c.resource AND f.id = c.id "
            "WHERE c.kind = 'fact' AND c.resource = ? AND c.position > ? "
            "ORDER BY c.position, c.ordinal",
            (self.name, self.position),
        ).fetchall()
        first: dict[str, int] = {}
        last: dict[str, tuple[int, tuple[str, str, str, str, str], bool]] = {}
        for (
            at,
            named,
            fid,
            sc,
            si,
            tc,
            ti,
            relation,
            shape,
            record,
            revision,
            deleted,
            checksum,
        ) in rows:
            if fid is None:  # the change log names a fact the table does not hold
                raise damaged(
                    "facts", self.name, named, what=f"fact {named} of graph {self.name!r}"
                )
            ends = (sc, si, tc, ti)
            verify_fact_row(
                self.name, fid, ends, relation, shape, record, revision, deleted, checksum
            )
            first.setdefault(fid, at)
            last[fid] = (at, (sc, si, tc, ti, relation), bool(deleted))
        born: list[tuple[str, int, int, str]] = []
        births: list[int] = []
        for fid, (at, (sc, si, tc, ti, relation), deleted) in sorted(
            last.items(), key=lambda item: item[1][0]
        ):
            start = first[fid]
            if start < at:
                self._inexact.append((start, at))
            edge = (fid, node(sc, si), node(tc, ti), relation)
            old = self._alive_row.get(fid)
            if old is not None:
                same = (
                    start == at
                    and not deleted
                    and int(self._source.view()[old]) == edge[1]
                    and int(self._target.view()[old]) == edge[2]
                )
                if same:
                    continue  # annotations changed; the edge itself did not
                self._death.set(old, start)
                del self._alive_row[fid]
            if not deleted:
                born.append(edge)
                births.append(at)
        if born:
            self._append(born, births)
        self.position = position

    def reindex(self, nodes: int) -> None:
        """Rebuild the CSR indexes once the unindexed tail is long enough."""
        tail = self.rows - self._by_source.rows
        if tail == 0 or tail < max(
            ADJACENCY_REBUILD_MIN_TAIL, self.rows * ADJACENCY_REBUILD_FRACTION
        ):
            return
        self._by_source = _Csr.build(self._source.view()[: self.rows], nodes)
        self._by_target = _Csr.build(self._target.view()[: self.rows], nodes)

    def view(self, position: int) -> GraphView:
        """The rows as seen at ``position`` (references, no copies)."""
        size = self.rows
        exact = not any(start <= position < end for start, end in self._inexact)
        return GraphView(
            position,
            exact,
            self._source.view()[:size],
            self._target.view()[:size],
            self._relation.view()[:size],
            self._birth.view()[:size],
            self._death.view()[:size],
            self._fact_ids,
            self._relations,
            self._by_source,
            self._by_target,
            undirected_codes(self._relations),
        )
