"""Graph adjacency read through one read cut: the outgoing and incoming facts of a vertex.

Walks (``cairn.search.walk``) read edges only through these functions, so the storage
behind them can change without touching traversal semantics. Edges come from the
in-memory CSR adjacency of the cut's columns (``cairn.index.adjacency``); when those
arrays cannot answer for the cut's position exactly (a range that only the SQLite
history knows), the cut's own SQLite snapshot answers instead. Every edge is one live
fact record at the cut's position; results are ordered by (neighbour, relation, fact ID)
for determinism.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import orjson

from cairn.errors import CorruptionError, NotFoundError
from cairn.index.adjacency import FACT_ROW_COLUMNS, UNDIRECTED_RELATIONS, verify_fact_row
from cairn.index.cut import IndexCut
from cairn.store.checksums import stored_bytes
from cairn.store.commands import EntityRef
from cairn.store.limits import SQLITE_PARAMETER_BATCH
from cairn.store.policy import Capability, field_allowed, holds_any, require
from cairn.store.reads import ReadCut, field_policies
from cairn.store.records import read_shapes, shape_of

__all__ = [
    "LABEL_FIELD",
    "Edge",
    "fact_discriminators",
    "graph_exists",
    "in_edges",
    "labels_usable",
    "out_edges",
    "require_graph",
]

LABEL_FIELD = "/label"
"""The field of a graph resource that governs traversal by relation label."""


@dataclass(frozen=True, slots=True, order=True)
class Edge:
    """One fact seen from one endpoint: the other endpoint, the relation, the fact ID."""

    neighbour: EntityRef
    relation: str
    fact_id: str


def graph_exists(cut: ReadCut, graph: str) -> bool:
    """Whether ``graph`` is configured at the cut."""

    def exists() -> bool:
        row = cut.conn.execute("SELECT 1 FROM graphs WHERE name = ?", (graph,)).fetchone()
        return row is not None

    # Graphs are configured only by commits, and every commit moves the position.
    found: bool = cut.memo.get(("graph-exists", graph, cut.position), exists)
    return found


def require_graph(cut: ReadCut, graph: str, *any_of: Capability) -> None:
    """Refuse ``graph`` unless it exists and the principal holds one of ``any_of`` on it.

    Existence is protected: a graph the principal holds no capability on gets the very
    answer a missing one gets (``NotFoundError``, same message and details).
    """
    if not graph_exists(cut, graph) or not holds_any(cut.principal, cut.database, graph):
        raise NotFoundError(f"no graph {graph!r}", details={"graph": graph})
    require(cut.principal, cut.database, graph, *any_of)


def labels_usable(cut: ReadCut, graph: str) -> bool:
    """Whether the principal may follow ``graph``'s facts by relation: the ``/label``
    use grant, where a field policy asks for one (a labelled walk, the kind prior)."""
    policies = field_policies(cut, graph)
    return field_allowed(cut.principal, cut.database, graph, policies, LABEL_FIELD, "use")


def _edges(cut: IndexCut, graph: str, vertex: EntityRef, *, outgoing: bool) -> tuple[Edge, ...]:
    view = cut.columns
    adjacency = view.graph(cut.conn, graph)
    if not adjacency.exact:
        return _sql_edges(cut, graph, vertex, outgoing=outgoing)
    node = view.nodes.get((vertex.collection, vertex.id))
    if node is None:
        return ()
    rows, ends = adjacency.walk(node, outgoing=outgoing)
    if len(rows) == 0:
        return ()
    relations = adjacency.relation[rows].tolist()
    keys, names, fact_ids = view.node_keys, adjacency.relations, adjacency.fact_ids
    return tuple(
        sorted(
            Edge(EntityRef(*keys[end]), names[relation], fact_ids[row])
            for end, relation, row in zip(ends.tolist(), relations, rows.tolist(), strict=True)
        )
    )


def _sql_edges(cut: IndexCut, graph: str, vertex: EntityRef, *, outgoing: bool) -> tuple[Edge, ...]:
    """The same edges read from the cut's SQLite snapshot (always exact; every row read
    is checked against its checksum)."""
    near, far = ("source", "target") if outgoing else ("target", "source")
    rows = _checked(
        cut,
        graph,
        f"WHERE graph = ? AND {near}_collection = ? AND {near}_id = ? AND deleted = 0",
        (graph, vertex.collection, vertex.id),
    )
    found = [(row[far], row) for row in rows]
    # Undirected facts leave both endpoints (stored once, endpoints sorted): the walk
    # also takes them from the far side, a self-loop once (as ``GraphView.walk``).
    back = _checked(
        cut,
        graph,
        f"WHERE graph = ? AND {far}_collection = ? AND {far}_id = ? AND deleted = 0 "
        f"AND NOT ({near}_collection = ? AND {near}_id = ?)",
        (graph, vertex.collection, vertex.id, vertex.collection, vertex.id),
    )
    found.extend((row[near], row) for row in back if row["relation"] in UNDIRECTED_RELATIONS)
    return tuple(sorted(Edge(end, row["relation"], row["id"]) for end, row in found))


def _checked(
    cut: IndexCut, graph: str, where: str, parameters: tuple[str, ...]
) -> list[dict[str, Any]]:
    """The fact rows ``where`` selects, each verified against its checksum."""
    found: list[dict[str, Any]] = []
    for (
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
    ) in cut.conn.execute(f"SELECT {FACT_ROW_COLUMNS} FROM facts {where}", parameters):
        ends = (sc, si, tc, ti)
        verify_fact_row(graph, fid, ends, relation, shape, record, revision, deleted, checksum)
        found.append(
            {
                "id": fid,
                "relation": relation,
                "source": EntityRef(sc, si),
                "target": EntityRef(tc, ti),
                "shape": shape,
                "record": record,
            }
        )
    return found


_FACT_SHAPES = "fact_shapes"


def fact_discriminators(
    cut: IndexCut, graph: str, fact_ids: Iterable[str]
) -> dict[str, dict[str, Any]]:
    """The discriminator values of live facts of ``graph`` by ID, from the cut's SQLite
    snapshot (each fact row and shape checked against its checksum).

    The IDs come from the cut's own edges, so an ID without a live row, a missing shape
    or a record that is no fact is damage (``CorruptionError``), never a fact skipped.
    """
    wanted = sorted(set(fact_ids))
    rows: list[dict[str, Any]] = []
    for start in range(0, len(wanted), SQLITE_PARAMETER_BATCH):
        batch = wanted[start : start + SQLITE_PARAMETER_BATCH]
        marks = ", ".join("?" * len(batch))
        where = f"WHERE graph = ? AND id IN ({marks}) AND deleted = 0"
        rows.extend(_checked(cut, graph, where, (graph, *batch)))
    missing = set(wanted) - {row["id"] for row in rows}
    if missing:
        first = min(missing)
        raise CorruptionError(
            f"fact {first} of graph {graph!r} has an edge but no live row",
            details={"graph": graph, "id": first},
        )
    numbers = {row["shape"] for row in rows if row["record"] is None}
    shapes = read_shapes(cut.conn, _FACT_SHAPES, (n for n in numbers if isinstance(n, int)))
    found: dict[str, dict[str, Any]] = {}
    for row in rows:
        record = stored_bytes(row["record"])
        fact_id = row["id"]
        data = record if record is not None else shape_of(shapes, row["shape"], f"fact {fact_id}")
        found[fact_id] = _discriminator(data, fact_id, graph)
    return found


def _discriminator(data: bytes | None, fact_id: str, graph: str) -> dict[str, Any]:
    """The discriminator value of a fact's record or shape bytes."""
    try:
        parsed = orjson.loads(data) if data is not None else None
    except orjson.JSONDecodeError:
        parsed = None
    discriminator = parsed.get("discriminator") if isinstance(parsed, dict) else None
    value = discriminator.get("value") if isinstance(discriminator, dict) else None
    if not isinstance(value, dict):
        raise CorruptionError(
            f"fact {fact_id} of graph {graph!r} has no readable discriminator",
            details={"graph": graph, "id": fact_id},
        )
    return value


def out_edges(cut: IndexCut, graph: str, source: EntityRef) -> tuple[Edge, ...]:
    """Every live fact whose source is ``source``, as edges to its targets."""
    return _edges(cut, graph, source, outgoing=True)


def in_edges(cut: IndexCut, graph: str, target: EntityRef) -> tuple[Edge, ...]:
    """Every live fact whose target is ``target``, as edges to its sources."""
    return _edges(cut, graph, target, outgoing=False)
