"""No existence oracle: a resource the principal holds no grant on answers exactly as a
missing one does (issue 18, item 9; the seed rule documents already follow).

Before, a principal could tell an existing collection or graph it may not see
(``PermissionDeniedError``) from a missing one (``NotFoundError``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from search_helpers import GRAPH, TEXT, grant, open_db, put_docs, put_edges, ref

from cairn.database import Database
from cairn.errors import CairnError, NotFoundError, PermissionDeniedError
from cairn.search.contracts import GraphRetriever, GraphSearchRequest, GraphWalkSpec, SearchRequest
from cairn.search.traverse import TraverseRequest, traverse


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = open_db(tmp_path, collections=("docs", "seeds", "private"))
    put_docs(database, "docs", {"a": "needle"})
    put_docs(database, "private", {"p": "needle"})
    put_edges(database, [(ref("docs", "a"), ref("docs", "a"), "calls")])
    grant(database, "outsider", {"docs": ("query",)})  # nothing on private or the graph
    writes = {"docs": ("query",), "private": ("documents_write",), GRAPH: ("graph_write",)}
    grant(database, "writer", writes)
    yield database
    database.close()


def _problem(call: Callable[[], Any], name: str) -> dict[str, Any]:
    """The problem ``call`` raises, with the resource's name replaced (for comparing)."""
    with pytest.raises(CairnError) as caught:
        call()
    problem = caught.value.to_problem()
    problem["detail"] = problem["detail"].replace(repr(name), "NAME")
    problem["details"] = {k: "NAME" if v == name else v for k, v in problem["details"].items()}
    return {"class": type(caught.value).__name__, "problem": problem}


def _search(db: Database, collection: str, principal: str) -> Callable[[], Any]:
    request = SearchRequest("main", collection, text_field=TEXT, text="needle")
    return lambda: db.search(request, principal)


def _walk(db: Database, graph: str, principal: str) -> Callable[[], Any]:
    walk = GraphWalkSpec(graph, (ref("docs", "a"),), max_depth=1)
    request = GraphSearchRequest(1, SearchRequest("main", "docs"), retriever=GraphRetriever(walk))
    return lambda: db.graph_search(request, principal)


def _traverse(db: Database, graph: str, principal: str) -> Callable[[], Any]:
    request = TraverseRequest("main", graph, (ref("docs", "a"),))
    return lambda: traverse(db, request, principal)


def _document(db: Database, collection: str, principal: str) -> Callable[[], Any]:
    return lambda: db.get_document(collection, "p", principal)


@pytest.mark.parametrize(
    ("make", "hidden", "missing"),
    [
        (_search, "private", "ghost"),
        (_document, "private", "ghost"),
        (_walk, GRAPH, "nograph"),
        (_traverse, GRAPH, "nograph"),
    ],
)
def test_a_resource_without_any_grant_answers_like_a_missing_one(
    db: Database, make: Any, hidden: str, missing: str
) -> None:
    seen = _problem(make(db, hidden, "outsider"), hidden)
    assert seen == _problem(make(db, missing, "outsider"), missing)
    assert seen["class"] == NotFoundError.__name__


@pytest.mark.parametrize(("make", "resource"), [(_search, "private"), (_walk, GRAPH)])
def test_a_principal_with_some_grant_learns_what_it_lacks(
    db: Database, make: Any, resource: str
) -> None:
    # "writer" may write the collection and the graph, so it knows they exist.
    with pytest.raises(PermissionDeniedError):
        make(db, resource, "writer")()
