"""Authorisation inside graph search: seeds, intermediates, labels, fields, rows."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from search_helpers import (
    GRAPH,
    READER,
    SPACE,
    TEXT,
    VECTOR,
    grant,
    open_db,
    policy,
    put_docs,
    put_edges,
    ref,
    run,
)

from cairn.errors import NotFoundError, PermissionDeniedError, UnauthenticatedError
from cairn.search.contracts import (
    GraphExpansion,
    GraphRetriever,
    GraphScope,
    GraphSearchRequest,
    GraphWalkSpec,
    SearchRequest,
)
from cairn.store import (
    Database,
    DeleteDocument,
    DocumentAccess,
    FieldPolicy,
)

ROOT = ref("seeds", "root")


MINE = DocumentAccess(owner="reader")
THEIRS = DocumentAccess(owner="someone-else")


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = open_db(tmp_path, collections=("docs", "seeds", "private"))
    put_docs(
        database,
        "seeds",
        {"root": "root", "hidden-seed": "x"},
        access={"root": MINE, "hidden-seed": THEIRS},
    )
    put_docs(database, "private", {"p": "private"}, access={"p": MINE})
    put_docs(
        database,
        "docs",
        {"a": "needle", "b": "needle", "c": "needle", "h": "needle", "z": "needle"},
        vectors={"a": [1.0, 0.0]},
        access={"a": MINE, "b": MINE, "c": MINE, "h": THEIRS, "z": MINE},
        extra={"a": {"secret": "s3"}, "c": {"secret": "s4"}},
    )
    put_edges(
        database,
        [
            (ROOT, ref("docs", "a"), "calls"),
            (ROOT, ref("docs", "h"), "calls"),  # h is hidden from the reader
            (ref("docs", "h"), ref("docs", "b"), "calls"),  # only reachable through h
            (ROOT, ref("private", "p"), "calls"),  # p: a collection the reader can't read
            (ref("private", "p"), ref("docs", "z"), "calls"),
            (ROOT, ref("seeds", "hidden-seed"), "calls"),
            (ref("docs", "a"), ref("docs", "c"), "imports"),
        ],
    )
    grant(database, "reader", READER, restrict_rows=True, owner_id="reader")
    yield database
    database.close()


def retrieve(
    *seeds: object,
    labels: tuple[str, ...] | None = None,
    weight: float = 1.0,
    text: bool = False,
    depth: int = 3,
) -> GraphSearchRequest:
    search = SearchRequest(
        "main", "docs", text_field=TEXT if text else None, text="needle" if text else None
    )
    walk = GraphWalkSpec(GRAPH, tuple(seeds), max_depth=depth, labels=labels)  # type: ignore[arg-type]
    return GraphSearchRequest(1, search, retriever=GraphRetriever(walk, weight))


def ids(result: object) -> list[str]:
    return [hit.document.ref.id for hit in result.hits]  # type: ignore[attr-defined]


def test_owner_sees_everything_reachable(db: Database) -> None:
    assert ids(db.graph_search(retrieve(ROOT))) == ["a", "h", "b", "c", "z"]


def test_hidden_intermediates_stop_traversal_silently(db: Database) -> None:
    # h (row-hidden) and p (collection without grants) are neither hits nor passed through.
    assert ids(db.graph_search(retrieve(ROOT), "reader")) == ["a", "c"]


def test_hidden_and_missing_seeds_are_not_found(db: Database) -> None:
    with pytest.raises(NotFoundError):
        db.graph_search(retrieve(ref("seeds", "hidden-seed")), "reader")
    with pytest.raises(NotFoundError):
        db.graph_search(retrieve(ref("private", "p")), "reader")
    with pytest.raises(NotFoundError):
        db.graph_search(retrieve(ref("seeds", "ghost")), "reader")
    # Same answer for hidden and missing: no existence leak.
    assert db.graph_search(retrieve(ref("seeds", "hidden-seed"))).hits == ()


def test_deleted_intermediate_stops_traversal(db: Database) -> None:
    run(db, DeleteDocument("docs", "a"))
    assert ids(db.graph_search(retrieve(ROOT))) == ["h", "b", "z"]


def test_other_collection_intermediates_are_walked(db: Database) -> None:
    # root (seeds) -> p (private) -> z (docs): z is reached at two hops through another
    # collection, and the collection filter applies only to the branch output.
    request = retrieve(ROOT)
    request = GraphSearchRequest(
        1, SearchRequest("main", "docs", explain=True), retriever=request.retriever
    )
    hits = {hit.document.ref.id: hit for hit in db.graph_search(request).hits}
    explanation = hits["z"].explanation
    assert explanation is not None
    assert explanation.hops == 2
    assert explanation.path == (ROOT, ref("private", "p"), ref("docs", "z"))
    assert "p" not in hits
    scoped = GraphSearchRequest(
        1,
        SearchRequest("main", "docs", text_field=TEXT, text="needle"),
        scope=GraphScope(GraphWalkSpec(GRAPH, (ROOT,), max_depth=2)),
    )
    assert "z" in ids(db.graph_search(scoped))


def test_revoked_grant_and_revoked_principal(db: Database) -> None:
    grant(db, "reader", {"docs": ("query",), GRAPH: ("graph_read",)})
    # The seed's collection is no longer readable: the seed itself is hidden.
    with pytest.raises(NotFoundError):
        db.graph_search(retrieve(ROOT), "reader")
    grant(db, "reader", READER, revoked=True)
    with pytest.raises(UnauthenticatedError):
        db.graph_search(retrieve(ROOT), "reader")


def test_graph_read_and_collection_grants_are_required(db: Database) -> None:
    # Without any grant on the graph or the collection, it answers as if missing (issue 18).
    grant(db, "nograph", {"docs": ("query",), "seeds": ("query",)})
    with pytest.raises(NotFoundError, match="no graph 'code'"):
        db.graph_search(retrieve(ROOT), "nograph")
    grant(db, "nodocs", {"seeds": ("query",), GRAPH: ("graph_read",)})
    with pytest.raises(NotFoundError, match="no collection 'docs'"):
        db.graph_search(retrieve(ROOT), "nodocs")
    # With some grant on the graph, the missing capability is named.
    grant(db, "graphwriter", {"docs": ("query",), "seeds": ("query",), GRAPH: ("graph_write",)})
    with pytest.raises(PermissionDeniedError, match="graph_read"):
        db.graph_search(retrieve(ROOT), "graphwriter")


def test_label_use_grant_needed_even_for_empty_labels_and_zero_weight(db: Database) -> None:
    policy(db, GRAPH, FieldPolicy("/label", use_grant="traverse-labels"))
    assert ids(db.graph_search(retrieve(ROOT), "reader")) == ["a", "c"]  # labels=None: fine
    for request in (
        retrieve(ROOT, labels=()),
        retrieve(ROOT, labels=("calls",), weight=0.0, text=True),
        GraphSearchRequest(
            1,
            SearchRequest("main", "docs", text_field=TEXT, text="needle"),
            expansion=GraphExpansion(GRAPH, labels=()),
        ),
    ):
        with pytest.raises(PermissionDeniedError, match="by label"):
            db.graph_search(request, "reader")
    grant(db, "labeller", READER, field_grants=("traverse-labels",))
    assert ids(db.graph_search(retrieve(ROOT, labels=()), "labeller")) == []
    # labeller sees every row (no restrict_rows) but not the private collection, and the
    # "calls" filter drops a -> c (imports).
    assert ids(db.graph_search(retrieve(ROOT, labels=("calls",)), "labeller")) == ["a", "h", "b"]


def test_zero_weight_text_branch_still_authorises_its_field(db: Database) -> None:
    policy(db, "docs", FieldPolicy("/text", use_grant="search-text"))
    request = GraphSearchRequest(
        1,
        SearchRequest("main", "docs", text_field=TEXT, text="needle", text_weight=0.0),
        retriever=GraphRetriever(GraphWalkSpec(GRAPH, (ROOT,))),
    )
    with pytest.raises(PermissionDeniedError):
        db.graph_search(request, "reader")


def test_vector_branch_needs_vector_search(db: Database) -> None:
    grant(db, "novec", {"docs": ("query",), "seeds": ("query",), GRAPH: ("graph_read",)})
    request = GraphSearchRequest(
        1,
        SearchRequest("main", "docs", vector_field=VECTOR, vector=(1.0, 0.0), space=SPACE),
        scope=GraphScope(GraphWalkSpec(GRAPH, (ROOT,))),
    )
    with pytest.raises(PermissionDeniedError, match="vector_search"):
        db.graph_search(request, "novec")


def test_field_redaction_in_hits_and_context(db: Database) -> None:
    policy(db, "docs", FieldPolicy("/secret", read_grant="see-secrets"))
    request = GraphSearchRequest(
        1,
        SearchRequest("main", "docs", text_field=TEXT, text="needle", allowed_ids=("a",)),
        scope=GraphScope(GraphWalkSpec(GRAPH, (ROOT,))),
        expansion=GraphExpansion(GRAPH),
    )
    result = db.graph_search(request, "reader")
    (hit,) = result.hits
    assert hit.document.redacted and hit.document.redacted_fields == ("/secret",)
    assert "secret" not in hit.document.body and hit.document.body["text"] == "needle"
    assert result.expansion is not None
    (context,) = result.expansion.documents
    assert context.document.ref == ref("docs", "c") and context.shortest_hops == 1
    assert context.document.redacted and "secret" not in context.document.body
    owner = db.graph_search(request)
    assert owner.hits[0].document.body["secret"] == "s3" and not owner.hits[0].document.redacted


def test_row_policy_filters_branches_before_ranking(db: Database) -> None:
    search = SearchRequest("main", "docs", text_field=TEXT, text="needle", limit=10)
    request = GraphSearchRequest(1, search, expansion=GraphExpansion(GRAPH))
    assert "h" not in ids(db.graph_search(request, "reader"))
    assert "h" in ids(db.graph_search(request))
