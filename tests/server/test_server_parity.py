"""Parity with a real ``cairn serve`` process on 127.0.0.1 (issue 8 acceptance).

The same table of requests through the embedded API, raw HTTP, ``Client``,
``AsyncClient`` and the official MCP client (over stdio and over HTTP) gives identical
hits, ranks, scores, redaction and context; after a
policy change, a write that changes reachability and a revoked key, every surface
still agrees.
"""

from __future__ import annotations

import asyncio
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from server_helpers import (
    GRAPH,
    MCP_ACCEPT,
    MCP_INITIALIZE,
    ServerProcess,
    open_corpus,
    ref,
    serve_process,
)
from server_surfaces import (
    MCP_UNSERVED,
    NOT_SERVED,
    Row,
    embedded,
    raw_http,
    table,
    via_async,
    via_client,
    via_mcp,
)

from cairn.client import AsyncClient, Client
from cairn.errors import UnauthenticatedError
from cairn.search.contracts import GraphRetriever, GraphSearchRequest, GraphWalkSpec, SearchRequest
from cairn.search.traverse import TraverseRequest
from cairn.store import CommandRequest, Database, PutFact

PRINCIPALS = ("reader", "restricted")


@dataclass
class Stack:
    """The database handle, the running server and its keys."""

    db: Database
    server: ServerProcess
    keys: dict[str, str]
    admin: str


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    folder = tmp_path_factory.mktemp("parity")
    db, keys = open_corpus(folder / "cairn.db")
    try:
        with serve_process(folder / "cairn.db", folder / "server.log") as server:
            assert server.admin_key is not None
            yield Stack(db, server, keys, server.admin_key)
    finally:
        db.close()


def _mcp_stdio(stack: Stack, key: str, rows: list[Row]) -> list[Any]:
    """Every row's answer through the official MCP client over stdio."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "cairn.cli", "mcp", "--db", str(stack.db.path), "--api-key", key],
    )

    async def answers() -> list[Any]:
        async with stdio_client(params) as streams, ClientSession(*streams[:2]) as session:
            await session.initialize()
            return [await via_mcp(session, kind, payload) for _, kind, payload in rows]

    return anyio.run(answers)


def _mcp_http(stack: Stack, key: str, rows: list[Row]) -> list[Any]:
    """Every row's answer through the official MCP client over streamable HTTP."""
    headers = {"Authorization": f"Bearer {key}"}

    async def answers() -> list[Any]:
        async with (
            httpx2.AsyncClient(headers=headers, timeout=60) as http,
            streamable_http_client(f"{stack.server.url}/mcp/", http_client=http) as streams,
            ClientSession(*streams[:2]) as session,
        ):
            await session.initialize()
            return [await via_mcp(session, kind, payload) for _, kind, payload in rows]

    return anyio.run(answers)


def _mcp_answers(stack: Stack, key: str, rows: list[Row]) -> tuple[list[Any], list[Any]]:
    """Every row's answer through the official MCP client, over stdio and over HTTP."""
    return _mcp_stdio(stack, key, rows), _mcp_http(stack, key, rows)


def _answers(stack: Stack, principal: str, rows: list[Row]) -> list[dict[str, Any]]:
    """Every row's answer on every surface, for one principal."""
    key = stack.keys[principal]
    url = stack.server.url

    async def asynchronous() -> list[Any]:
        async with AsyncClient(url, key) as client:
            return [await via_async(client, kind, payload) for _, kind, payload in rows]

    with httpx.Client(base_url=url) as http, Client(url, key) as client:
        raw = [raw_http(http, key, kind, payload) for _, kind, payload in rows]
        sdk = [via_client(client, kind, payload) for _, kind, payload in rows]
    async_sdk = asyncio.run(asynchronous())
    mcp_stdio, mcp_http = _mcp_answers(stack, key, rows)
    local = [embedded(stack.db, kind, payload, principal) for _, kind, payload in rows]
    return [
        {"embedded": a, "http": b, "client": c, "async": d, "mcp_stdio": e, "mcp_http": f}
        for a, b, c, d, e, f in zip(local, raw, sdk, async_sdk, mcp_stdio, mcp_http, strict=True)
    ]


def _assert_agree(rows: list[Row], answers: list[dict[str, Any]]) -> None:
    for (label, kind, _), answer in zip(rows, answers, strict=True):
        expected = answer["embedded"]
        for surface, got in answer.items():
            if surface.startswith("mcp") and kind in MCP_UNSERVED:
                assert got == NOT_SERVED, f"{label}: {surface} answered an unserved row"
                continue
            assert got == expected, f"{label}: {surface} differs from embedded"


@pytest.mark.parametrize("principal", PRINCIPALS)
def test_the_table_agrees_on_every_surface(stack: Stack, principal: str) -> None:
    rows = table(stack.db.name)
    answers = _answers(stack, principal, rows)
    _assert_agree(rows, answers)
    by_label = {
        label: answer["embedded"] for (label, _, _), answer in zip(rows, answers, strict=True)
    }
    # The table exercises what it claims to: ranks and scores, redaction, context, errors.
    text = by_label["text search"]["hits"]
    assert [hit["explanation"]["contributions"][0]["native_rank"] for hit in text] == list(
        range(1, len(text) + 1)
    )
    assert all(isinstance(hit["score"], float) for hit in text)
    delta = by_label["redacted document"]
    expansion = by_label["retriever with expansion"]["expansion"]
    assert expansion["completeness"] == "selected_hits"
    assert expansion["documents"], "expansion returned no context"
    if principal == "reader":
        assert delta["redacted"] is True and delta["redacted_fields"] == ["/secret"]
        assert by_label["row-hidden document"]["body"]["text"] == "private needle"
        assert by_label["shortest path"]["path"][-1] == {"collection": "notes", "id": "n1"}
    else:
        assert delta["redacted"] is False and delta["body"]["secret"] == "s3cr3t"
        assert by_label["row-hidden document"] == {"error": "not_found"}
        assert by_label["hidden seed"] == {"error": "not_found"}
        # The hidden vertex stops the only path to n1.
        assert by_label["shortest path"]["path"] is None
    assert by_label["slash in id"]["ref"] == {"collection": "docs", "id": "a/b"}
    # No document of the corpus has a kind: the filtered walk keeps only its seed.
    filtered = by_label["neighbours filtered"]
    assert [v["ref"]["id"] for v in filtered["vertices"]] == ["root"]
    assert filtered["filtered_out"] > 0 and filtered["edges"] == []
    assert by_label["embed refused"] == {"error": "unsupported_capability"}
    assert by_label["filtered search"]["hits"] == text_without_explanations(by_label)


def text_without_explanations(by_label: dict[str, Any]) -> list[Any]:
    """The text search's hits as a search without ``explain`` returns them (none of the
    corpus's paths is test code, so excluding tests keeps every hit)."""
    return [{**hit, "explanation": None} for hit in by_label["text search"]["hits"]]


def _labelled(database: str) -> list[Row]:
    walk = GraphWalkSpec(GRAPH, (ref("docs", "root"),), 3, 100, 100, ("calls",))
    search = SearchRequest(database, "docs", "/text", "needle")
    return [
        ("labels", "graph_search", GraphSearchRequest(1, search, retriever=GraphRetriever(walk))),
        (
            "relations",
            "traverse",
            TraverseRequest(database, GRAPH, (ref("docs", "root"),), relations=("calls",)),
        ),
        ("reach", "traverse", TraverseRequest(database, GRAPH, (ref("docs", "root"),))),
    ]


def test_policy_change_write_and_revoked_key_agree(stack: Stack) -> None:
    rows = _labelled(stack.db.name)
    before = _answers(stack, "reader", rows)
    _assert_agree(rows, before)
    assert "error" not in before[0]["embedded"]
    with Client(stack.server.url, stack.admin) as admin:
        # 1. The label grant is revoked: label filters are denied everywhere.
        record = admin.get_principal("reader")
        admin.configure_principal(
            "reader",
            grants=record.principal.grants,
            field_grants=record.principal.field_grants - {"labels"},
        )
        revoked_labels = _answers(stack, "reader", rows)
        _assert_agree(rows, revoked_labels)
        assert revoked_labels[0]["embedded"] == {"error": "permission_denied"}
        assert revoked_labels[1]["embedded"] == {"error": "permission_denied"}
        # 2. A write adds a neighbour: every surface sees the new reach at once.
        admin.command(
            CommandRequest(
                uuid.uuid4(),
                admin.name,
                (PutFact(GRAPH, ref("docs", "root"), ref("notes", "n2"), "calls"),),
            )
        )
        wrote = _answers(stack, "reader", rows)
        _assert_agree(rows, wrote)
        reached = [v["ref"] for v in wrote[2]["embedded"]["vertices"]]
        assert {"collection": "notes", "id": "n2"} in reached
        assert wrote[2]["embedded"] != before[2]["embedded"]
        # 3. The reader's key is revoked: 401 on HTTP, Unauthenticated in the SDKs.
        (key_id,) = admin.get_principal("reader").key_ids
        admin.revoke_api_key("reader", key_id)
    key = stack.keys["reader"]
    with pytest.raises(UnauthenticatedError):
        stack.db.authenticate(key)
    with httpx.Client(base_url=stack.server.url) as http:
        response = http.get("/v1/stats", headers={"Authorization": f"Bearer {key}"})
    assert response.status_code == 401
    assert response.json()["type"] == "urn:cairn:error:unauthenticated"
    with Client(stack.server.url, key) as client, pytest.raises(UnauthenticatedError):
        client.stats()

    async def asynchronous() -> None:
        async with AsyncClient(stack.server.url, key) as client:
            await client.search(rows[0][2].search)

    with pytest.raises(UnauthenticatedError):
        asyncio.run(asynchronous())
    # MCP over stdio refuses the revoked key on the call; over HTTP the transport itself
    # answers 401 with WWW-Authenticate: no session, no tool list (issue 18).
    assert _mcp_stdio(stack, key, rows[:1]) == [{"error": "unauthenticated"}]
    initialize = MCP_INITIALIZE
    mcp_headers = MCP_ACCEPT
    with httpx.Client(base_url=stack.server.url) as http:
        for headers in ({"Authorization": f"Bearer {key}"}, {}):
            response = http.post("/mcp/", json=initialize, headers={**mcp_headers, **headers})
            assert response.status_code == 401
            assert response.headers["www-authenticate"].startswith("Bearer")
            assert response.json()["type"] == "urn:cairn:error:unauthenticated"
    with pytest.raises(ExceptionGroup) as refused:  # the official client cannot initialize
        _mcp_http(stack, key, rows[:1])
    assert refused.group_contains(MCPError, depth=2)
    # The other principal is untouched.
    with Client(stack.server.url, stack.keys["restricted"]) as other:
        assert other.principal().id == "restricted"


def test_the_server_binds_loopback_and_announces_its_database(stack: Stack, tmp_path: Path) -> None:
    assert stack.server.url.startswith("http://127.0.0.1:")
    listening = stack.server.events[-1]
    assert listening["database"] == stack.db.name
    with httpx.Client(base_url=stack.server.url) as http:
        assert http.get("/v1/health").json()["status"] == "ok"
        assert http.get("/v1/stats").status_code == 401
        assert http.get("/docs").status_code == 200
