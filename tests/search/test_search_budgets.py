"""Budgets and shapes: exact walk caps, output bytes, cancellation, recovery, ordering."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from search_helpers import GRAPH, TEXT, open_db, put_docs, put_edges, ref, run

from cairn.errors import BudgetExceededError, RequestCancelledError, ValidationError
from cairn.index.adjacency import GraphView
from cairn.search.budget import CancelToken
from cairn.search.contracts import (
    GraphExpansion,
    GraphRetriever,
    GraphSearchRequest,
    GraphWalkSpec,
    SearchRequest,
)
from cairn.search.limits import MAX_OUTPUT_BYTES
from cairn.store import Database, PutDocument, PutFact

ROOT = ref("seeds", "root")
CHAIN = [f"n{i}" for i in range(1, 6)]  # root -> n1 -> n2 -> ... -> n5


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = open_db(tmp_path)
    put_docs(database, "seeds", {"root": "root"})
    put_docs(database, "docs", {name: name for name in CHAIN})
    refs = [ROOT] + [ref("docs", name) for name in CHAIN]
    put_edges(database, [(a, b, "calls") for a, b in itertools.pairwise(refs)])
    yield database
    database.close()


def retrieve(
    depth: int = 3, vertices: int = 1000, edges: int = 5000, **search: Any
) -> GraphSearchRequest:
    walk = GraphWalkSpec(GRAPH, (ROOT,), depth, vertices, edges)
    return GraphSearchRequest(
        1, SearchRequest("main", "docs", **search), retriever=GraphRetriever(walk)
    )


def ids(result: Any) -> list[str]:
    return [hit.document.ref.id for hit in result.hits]


@pytest.mark.parametrize("depth", [0, 1, 2, 5])
def test_depth_is_exact(db: Database, depth: int) -> None:
    assert ids(db.graph_search(retrieve(depth=depth))) == CHAIN[:depth]


def test_vertex_cap_is_exact(db: Database) -> None:
    # Depth 5 reaches root plus five chain vertices: six in all.
    assert ids(db.graph_search(retrieve(depth=5, vertices=6))) == CHAIN
    with pytest.raises(BudgetExceededError, match="more than 5 vertices"):
        db.graph_search(retrieve(depth=5, vertices=5))


def test_edge_cap_is_exact(db: Database) -> None:
    # Depth 5 reads the out-edges of root and n1..n4: five fact records.
    assert ids(db.graph_search(retrieve(depth=5, edges=5))) == CHAIN
    with pytest.raises(BudgetExceededError, match="more than 4 edges"):
        db.graph_search(retrieve(depth=5, edges=4))


def test_filtered_and_hidden_edges_count_as_examined(db: Database) -> None:
    run(db, PutFact(GRAPH, ROOT, ref("docs", "n3"), "imports"))  # filtered out below
    walk = GraphWalkSpec(GRAPH, (ROOT,), 1, 1000, 1, labels=("calls",))
    request = GraphSearchRequest(1, SearchRequest("main", "docs"), retriever=GraphRetriever(walk))
    with pytest.raises(BudgetExceededError, match="edges"):
        db.graph_search(request)
    wider = GraphWalkSpec(GRAPH, (ROOT,), 1, 1000, 2, labels=("calls",))
    ok = GraphSearchRequest(1, SearchRequest("main", "docs"), retriever=GraphRetriever(wider))
    assert ids(db.graph_search(ok)) == ["n1"]


def test_output_byte_budget_is_exact(tmp_path: Path) -> None:
    db = open_db(tmp_path)
    try:
        put_docs(db, "seeds", {"root": "root"})
        # Each body {"text": "xx..."} is exactly 1 MiB of canonical JSON: eight make 8 MiB.
        filler = MAX_OUTPUT_BYTES // 8 - len('{"text":""}')
        for index in range(8):
            run(db, PutDocument("docs", f"big{index}", {"text": "x" * filler}))
        put_edges(db, [(ROOT, ref("docs", f"big{index}"), "calls") for index in range(8)])
        walk = GraphWalkSpec(GRAPH, (ROOT,), 1)
        request = GraphSearchRequest(
            1, SearchRequest("main", "docs"), retriever=GraphRetriever(walk)
        )
        assert len(db.graph_search(request).hits) == 8
        put_docs(db, "docs", {"tiny": "y"})
        put_edges(db, [(ROOT, ref("docs", "tiny"), "calls")])
        with pytest.raises(BudgetExceededError, match="reply would exceed"):
            db.graph_search(request)
    finally:
        db.close()


def test_cancellation_and_recovery(db: Database) -> None:
    token = CancelToken()
    token.cancel()
    with pytest.raises(RequestCancelledError):
        db.graph_search(retrieve(), cancel=token)
    with pytest.raises(BudgetExceededError):
        db.graph_search(retrieve(depth=5, edges=1))
    # After failures the next request is served normally.
    assert ids(db.graph_search(retrieve(depth=2))) == ["n1", "n2"]


@pytest.mark.parametrize(
    "walk",
    [
        GraphWalkSpec(GRAPH, (ROOT,), -1),
        GraphWalkSpec(GRAPH, (ROOT,), 17),
        GraphWalkSpec(GRAPH, (ROOT,), 1, 0),
        GraphWalkSpec(GRAPH, (ROOT,), 1, 10_001),
        GraphWalkSpec(GRAPH, (ROOT,), 1, 10, 0),
        GraphWalkSpec(GRAPH, (ROOT,), 1, 10, 50_001),
        GraphWalkSpec(GRAPH, ()),
        GraphWalkSpec("", (ROOT,)),
        GraphWalkSpec(GRAPH, (ROOT, ref("docs", "n1")), 1, 1),
        GraphWalkSpec(GRAPH, (ROOT,), labels=("",)),
    ],
)
def test_invalid_walk_shapes_fail_before_any_read(db: Database, walk: GraphWalkSpec) -> None:
    before = db.read_cut_acquisitions
    request = GraphSearchRequest(1, SearchRequest("main", "docs"), retriever=GraphRetriever(walk))
    with pytest.raises(ValidationError):
        db.graph_search(request)
    assert db.read_cut_acquisitions == before


def test_output_order_is_hops_then_full_ordinal_ref(db: Database) -> None:
    # n1 reaches a seeds-collection vertex and a docs vertex at the same hop.
    put_docs(db, "seeds", {"aaa": "s"})
    put_docs(db, "docs", {"zzz": "d"})
    put_edges(
        db,
        [
            (ref("docs", "n1"), ref("seeds", "aaa"), "calls"),
            (ref("docs", "n1"), ref("docs", "zzz"), "calls"),
        ],
    )
    request = GraphSearchRequest(
        1,
        SearchRequest("main", "docs", text_field=TEXT, text="n1", allowed_ids=("n1",)),
        expansion=GraphExpansion(GRAPH, 1),
    )
    result = db.graph_search(request)
    assert ids(result) == ["n1"]
    assert result.expansion is not None
    context = [
        (d.document.ref.collection, d.document.ref.id, d.shortest_hops)
        for d in result.expansion.documents
    ]
    assert context == [("docs", "n2", 1), ("docs", "zzz", 1), ("seeds", "aaa", 1)]


def test_concurrent_write_never_changes_a_running_request(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An edge committed while a request runs is invisible to it and seen by the next."""
    put_docs(db, "docs", {"late": "late"})
    original = GraphView.out_rows
    wrote = threading.Event()

    def write_in_another_thread() -> None:
        run(db, PutFact(GRAPH, ROOT, ref("docs", "late"), "calls"))
        wrote.set()

    def racing_out_rows(view: GraphView, node: int) -> Any:
        if not wrote.is_set():
            writer = threading.Thread(target=write_in_another_thread)
            writer.start()
            writer.join(timeout=30)
            assert wrote.is_set(), "the concurrent write did not commit"
        return original(view, node)

    monkeypatch.setattr(GraphView, "out_rows", racing_out_rows)
    position_before = db.position
    running = db.graph_search(retrieve(depth=1))
    assert db.position == position_before + 1  # the write committed during the request
    assert ids(running) == ["n1"]
    monkeypatch.setattr(GraphView, "out_rows", original)
    assert ids(db.graph_search(retrieve(depth=1))) == ["late", "n1"]
