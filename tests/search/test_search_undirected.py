"""Undirected facts (``related_to``) are walked from both endpoints (issue 18, item 10).

An undirected fact is stored once with its endpoints sorted, so ``b related_to a`` is
stored as ``a -> b``. Every walk (traverse out, in and both; graph search reachability;
the SQLite path used when the columns cannot answer a cut) must reach ``a`` from ``b``
as well as ``b`` from ``a``, and report the fact once in its stored orientation.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from search_helpers import GRAPH, open_db, put_docs, put_edges, ref

from cairn.database import Database
from cairn.index import graphs
from cairn.search.contracts import (
    GraphRetriever,
    GraphSearchRequest,
    GraphWalkSpec,
    SearchRequest,
)
from cairn.search.traverse import TraverseRequest, traverse

A, B, C, D = (ref("docs", name) for name in ("a", "b", "c", "d"))


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = open_db(tmp_path)
    put_docs(database, "docs", {"a": "alpha", "b": "beta", "c": "gamma", "d": "delta"})
    # b -- a is undirected (stored a -> b); c -> b directed; d -- d an undirected loop.
    put_edges(database, [(B, A, "related_to"), (C, B, "calls"), (D, D, "related_to")])
    yield database
    database.close()


def _walk(db: Database, seed: object, direction: str = "out") -> dict[str, int]:
    request = TraverseRequest("main", GRAPH, (seed,), direction=direction, max_depth=3)  # type: ignore[arg-type]
    return {vertex.ref.id: vertex.hops for vertex in traverse(db, request).vertices}


def test_traverse_out_reaches_both_ends(db: Database) -> None:
    assert _walk(db, A) == {"a": 0, "b": 1}
    assert _walk(db, B) == {"b": 0, "a": 1}  # was only {"b": 0}
    assert _walk(db, C) == {"c": 0, "b": 1, "a": 2}


def test_traverse_in_and_both(db: Database) -> None:
    assert _walk(db, A, "in") == {"a": 0, "b": 1, "c": 2}
    assert _walk(db, B, "in") == {"b": 0, "a": 1, "c": 1}
    assert _walk(db, A, "both") == {"a": 0, "b": 1, "c": 2}


def test_the_fact_is_reported_once_in_stored_orientation(db: Database) -> None:
    for seed, direction in ((A, "out"), (B, "out"), (B, "in"), (A, "both"), (B, "both")):
        request = TraverseRequest("main", GRAPH, (seed,), direction=direction, max_depth=1)  # type: ignore[arg-type]
        related = [e for e in traverse(db, request).edges if e.relation == "related_to"]
        assert [(e.source, e.target) for e in related] == [(A, B)], (seed, direction)


def test_a_self_loop_is_one_edge(db: Database) -> None:
    request = TraverseRequest("main", GRAPH, (D,), direction="both", max_depth=2)
    result = traverse(db, request)
    assert [v.ref for v in result.vertices] == [D]
    assert [(e.source, e.target) for e in result.edges] == [(D, D)]
    assert result.edges_examined == 1


def test_graph_search_reachability_walks_both_ends(db: Database) -> None:
    walk = GraphWalkSpec(GRAPH, (B,), max_depth=2)
    request = GraphSearchRequest(1, SearchRequest("main", "docs"), retriever=GraphRetriever(walk))
    assert {hit.document.ref.id for hit in db.graph_search(request).hits} == {"a", "b"}


def test_the_sqlite_path_agrees_with_the_columns(db: Database) -> None:
    with db.read_cut() as cut:
        for vertex in (A, B, C, D):
            for outgoing in (True, False):
                columns = graphs._edges(cut, GRAPH, vertex, outgoing=outgoing)
                assert graphs._sql_edges(cut, GRAPH, vertex, outgoing=outgoing) == columns
        assert [e.neighbour for e in graphs.out_edges(cut, GRAPH, B)] == [A]
        assert [e.neighbour for e in graphs.in_edges(cut, GRAPH, A)] == [B]
