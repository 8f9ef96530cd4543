"""One table of requests and four ways to send it: embedded, raw HTTP, Client, AsyncClient.

Each surface's reply is reduced to the same normal JSON (the wire form the HTTP API
returns) or ``{"error": <code>}``, so a parity test compares them with ``==``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import quote

import httpx
import orjson
from server_helpers import GRAPH, SPACE, TEXT, VECTOR, normal, ref

from cairn.client import AsyncClient, Client
from cairn.errors import CairnError
from cairn.search.contracts import (
    GraphExpansion,
    GraphRetriever,
    GraphScope,
    GraphSearchRequest,
    GraphWalkSpec,
    QueryRequest,
    SearchRequest,
    SqlGraphSearchRequest,
)
from cairn.search.traverse import TraverseRequest, traverse
from cairn.search.wire import to_wire
from cairn.store import Database
from cairn.store.stats import database_stats

Row = tuple[str, str, Any]
"""(label, kind, payload): kind names the operation, payload its request or arguments."""

SQL = (
    'SEARCH FROM docs TEXT "/text" MATCH @q '
    "RETRIEVE GRAPH code SEEDS ((docs, 'root')) DEPTH 3 VERTICES 100 EDGES 100 "
    "EXPAND GRAPH code DEPTH 1 VERTICES 100 EDGES 100 LIMIT 5"
)


def table(database: str) -> list[Row]:
    """The parity table: every read operation, with redaction, context and errors."""
    walk = GraphWalkSpec(GRAPH, (ref("docs", "root"),), 3, 100, 100)
    labelled = GraphWalkSpec(GRAPH, (ref("docs", "root"),), 3, 100, 100, ("calls",))
    text = SearchRequest(database, "docs", TEXT, "needle", limit=10, explain=True)
    vector = SearchRequest(
        database, "docs", vector_field=VECTOR, vector=(1.0, 0.0), space=SPACE, explain=True
    )
    hybrid = SearchRequest(
        database, "docs", TEXT, "needle", VECTOR, (0.8, 0.6), SPACE, 5, 2.0, 1.0, 10
    )
    return [
        ("text search", "search", text),
        ("vector search", "search", vector),
        ("hybrid search", "search", hybrid),
        (
            "filtered search",
            "search",
            SearchRequest(database, "docs", TEXT, "needle", limit=10, exclude_tests=True),
        ),
        (
            # The corpus's vectors come from a toy model no embedder here makes.
            "embed refused",
            "search",
            SearchRequest(database, "docs", TEXT, "needle", vector_field=VECTOR, embed=True),
        ),
        (
            "retriever with expansion",
            "graph_search",
            GraphSearchRequest(
                1,
                SearchRequest(database, "docs", TEXT, "needle", explain=True),
                retriever=GraphRetriever(walk, 2.0),
                expansion=GraphExpansion(GRAPH, 1, 100, 100),
            ),
        ),
        (
            "scope with labels",
            "graph_search",
            GraphSearchRequest(1, text, scope=GraphScope(labelled)),
        ),
        (
            "hidden seed",
            "graph_search",
            GraphSearchRequest(
                1, text, scope=GraphScope(GraphWalkSpec(GRAPH, (ref("docs", "private"),)))
            ),
        ),
        (
            "sql search",
            "search_sql",
            SqlGraphSearchRequest(QueryRequest(SQL, {"q": "needle"})),
        ),
        ("redacted document", "get_document", ("docs", "delta")),
        ("slash in id", "get_document", ("docs", "a/b")),
        ("row-hidden document", "get_document", ("docs", "private")),
        (
            "neighbours out",
            "traverse",
            TraverseRequest(
                database, GRAPH, (ref("docs", "root"),), max_depth=2, include_documents=True
            ),
        ),
        (
            "neighbours both by label",
            "traverse",
            TraverseRequest(
                database, GRAPH, (ref("docs", "alpha"),), direction="both", relations=("calls",)
            ),
        ),
        (
            "neighbours filtered",
            "traverse",
            TraverseRequest(database, GRAPH, (ref("docs", "root"),), max_depth=2, kinds=("x",)),
        ),
        (
            "shortest path",
            "traverse",
            TraverseRequest(
                database, GRAPH, (ref("docs", "root"),), target=ref("notes", "n1"), max_depth=6
            ),
        ),
        ("stats", "stats", None),
    ]


def _encode(kind: str, result: Any) -> Any:
    if kind == "search":
        return normal({"hits": [to_wire(hit) for hit in result]})
    if kind in ("traverse", "stats"):
        return normal(result.to_json())
    return normal(to_wire(result))


def _error(error: CairnError) -> dict[str, str]:
    return {"error": error.code}


def embedded(db: Database, kind: str, payload: Any, principal: str) -> Any:
    """The embedded API's answer."""
    calls: dict[str, Callable[[], Any]] = {
        "search": lambda: db.search(payload, principal),
        "graph_search": lambda: db.graph_search(payload, principal),
        "search_sql": lambda: db.search_sql(payload, principal),
        "get_document": lambda: db.get_document(*payload, principal),
        "traverse": lambda: traverse(db, payload, principal),
        "stats": lambda: database_stats(db, principal),
    }
    try:
        return _encode(kind, calls[kind]())
    except CairnError as error:
        return _error(error)


_ROUTES = {
    "search": "/v1/search",
    "graph_search": "/v1/search/graph",
    "search_sql": "/v1/query/search",
    "traverse": "/v1/graph/traverse",
}


def raw_http(http: httpx.Client, key: str, kind: str, payload: Any) -> Any:
    """The HTTP API's answer, with no SDK in between."""
    headers = {"Authorization": f"Bearer {key}"}
    if kind == "get_document":
        collection, doc_id = payload
        path = f"/v1/documents/{quote(collection, safe='')}/{quote(doc_id, safe='')}"
        response = http.get(path, headers=headers)
    elif kind == "stats":
        response = http.get("/v1/stats", headers=headers)
    else:
        body = payload.to_json() if kind == "traverse" else to_wire(payload)
        response = http.post(_ROUTES[kind], content=orjson.dumps(body), headers=headers)
    data = orjson.loads(response.content)
    if response.is_success:
        return data
    assert response.headers["content-type"] == "application/problem+json"
    assert data["type"] == f"urn:cairn:error:{data['code']}"
    assert data["status"] == response.status_code
    return {"error": data["code"]}


def via_client(client: Client, kind: str, payload: Any) -> Any:
    """The synchronous SDK's answer."""
    calls: dict[str, Callable[[], Any]] = {
        "search": lambda: client.search(payload),
        "graph_search": lambda: client.graph_search(payload),
        "search_sql": lambda: client.search_sql(payload),
        "get_document": lambda: client.get_document(*payload),
        "traverse": lambda: client.traverse(payload),
        "stats": client.stats,
    }
    try:
        return _encode(kind, calls[kind]())
    except CairnError as error:
        return _error(error)


async def via_async(client: AsyncClient, kind: str, payload: Any) -> Any:
    """The asynchronous SDK's answer."""
    calls: dict[str, Callable[[], Awaitable[Any]]] = {
        "search": lambda: client.search(payload),
        "graph_search": lambda: client.graph_search(payload),
        "search_sql": lambda: client.search_sql(payload),
        "get_document": lambda: client.get_document(*payload),
        "traverse": lambda: client.traverse(payload),
        "stats": client.stats,
    }
    try:
        return _encode(kind, await calls[kind]())
    except CairnError as error:
        return _error(error)


# ------------------------------------------------------------------- MCP
_TOOLS = {
    "search": "cairn_search",
    "graph_search": "cairn_search_graph",
    "search_sql": "cairn_search_graph",  # with sql
    "get_document": "cairn_show",  # with refs
    "traverse": "cairn_traverse",
}
MCP_UNSERVED = frozenset({"stats"})
"""Rows MCP has no tool for (its six tools answer an agent's questions; counts are on
the CLI, HTTP and the SDK)."""
NOT_SERVED = {"not_served": "mcp"}


def mcp_arguments(kind: str, payload: Any) -> dict[str, Any]:
    """The tool arguments for one table row."""
    if kind == "get_document":
        collection, doc_id = payload
        return {"refs": [{"collection": collection, "id": doc_id}]}
    if kind == "traverse":
        body = payload.to_json()
    elif kind == "search_sql":
        body = to_wire(payload.query)
    else:
        body = to_wire(payload)
    return {key: value for key, value in body.items() if key != "type"}


async def via_mcp(session: Any, kind: str, payload: Any) -> Any:
    """An MCP session's answer (official client), reduced like the other surfaces."""
    if kind in MCP_UNSERVED:
        return NOT_SERVED
    reply = await session.call_tool(_TOOLS[kind], mcp_arguments(kind, payload))
    content = reply.structured_content
    if reply.is_error:
        assert content["type"] == f"urn:cairn:error:{content['code']}"
        return {"error": content["code"]}
    if kind == "get_document":
        (document,) = content["documents"]
        return normal(document)
    return normal(content)
