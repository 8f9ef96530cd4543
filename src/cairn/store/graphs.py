"""Graph adjacency read through one read cut: the outgoing and incoming facts of a vertex.

Walks (``cairn.search.walk``) read edges only through these functions, so the storage
behind them (SQLite rows today, in-memory CSR columns later) can change without
touching traversal semantics. Every edge is one live fact record at the cut's
position; results are ordered by (neighbour, relation, fact ID) for determinism.
"""

from __future__ import annotations

from dataclasses import dataclass

from cairn.store.commands import EntityRef
from cairn.store.reads import ReadCut

__all__ = ["Edge", "graph_exists", "in_edges", "out_edges"]


@dataclass(frozen=True, slots=True, order=True)
class Edge:
    """One fact seen from one endpoint: the other endpoint, the relation, the fact ID."""

    neighbour: EntityRef
    relation: str
    fact_id: str


def graph_exists(cut: ReadCut, graph: str) -> bool:
    """Whether ``graph`` is configured at the cut."""
    row = cut.conn.execute("SELECT 1 FROM graphs WHERE name = ?", (graph,)).fetchone()
    return row is not None


def out_edges(cut: ReadCut, graph: str, source: EntityRef) -> tuple[Edge, ...]:
    """Every live fact whose source is ``source``, as edges to its targets."""
    rows = cut.conn.execute(
        "SELECT target_collection, target_id, relation, id FROM facts "
        "WHERE graph = ? AND source_collection = ? AND source_id = ? AND deleted = 0",
        (graph, source.collection, source.id),
    ).fetchall()
    return tuple(sorted(Edge(EntityRef(c, i), relation, fid) for c, i, relation, fid in rows))


def in_edges(cut: ReadCut, graph: str, target: EntityRef) -> tuple[Edge, ...]:
    """Every live fact whose target is ``target``, as edges to its sources."""
    rows = cut.conn.execute(
        "SELECT source_collection, source_id, relation, id FROM facts "
        "WHERE graph = ? AND target_collection = ? AND target_id = ? AND deleted = 0",
        (graph, target.collection, target.id),
    ).fetchall()
    return tuple(sorted(Edge(EntityRef(c, i), relation, fid) for c, i, relation, fid in rows))
