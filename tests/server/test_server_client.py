"""The SDK in process: exceptions mirror the embedded ones; lost replies are unknown outcomes."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable

import httpx
import orjson
import pytest
from conftest import Corpus
from server_helpers import GRAPH, ref

from cairn.client import AsyncClient, Client, pending_command
from cairn.errors import (
    BudgetExceededError,
    CairnError,
    ConflictError,
    CorruptionError,
    NotFoundError,
    PermissionDeniedError,
    UnauthenticatedError,
    UnknownWriteOutcomeError,
    ValidationError,
    error_classes,
)
from cairn.search.contracts import (
    GraphRetriever,
    GraphSearchRequest,
    GraphWalkSpec,
    SearchRequest,
)
from cairn.search.traverse import TraverseRequest
from cairn.server.http import create_app
from cairn.store import CommandRequest, FieldPolicy, Grant, PutDocument
from cairn.store.commands import CommitReceipt

URL = "http://cairn.test"


def _async(corpus: Corpus, principal: str) -> AsyncClient:
    transport = httpx.ASGITransport(app=create_app(corpus.db))
    return AsyncClient(URL, corpus.keys[principal], transport=transport)


def _mock(handler: Callable[[httpx.Request], httpx.Response]) -> Client:
    return Client(URL, "cairn_k.s", database="main", transport=httpx.MockTransport(handler))


def _put(doc_id: str = "sdk") -> CommandRequest:
    return CommandRequest(uuid.uuid4(), "main", (PutDocument("docs", doc_id, {"text": "sdk"}),))


def test_async_client_mirrors_the_database(corpus: Corpus) -> None:
    db = corpus.db
    search = SearchRequest(db.name, "docs", "/text", "needle", explain=True)
    walk = GraphWalkSpec(GRAPH, (ref("docs", "root"),), 2, 100, 100)
    graph = GraphSearchRequest(1, search, retriever=GraphRetriever(walk))
    neighbours = TraverseRequest(db.name, GRAPH, (ref("docs", "root"),))

    async def scenario() -> None:
        async with _async(corpus, "reader") as client:
            assert (await client.health())["database"] == db.name == client.name
            assert await client.search(search) == db.search(search, "reader")
            assert await client.graph_search(graph) == db.graph_search(graph, "reader")
            assert await client.get_document("docs", "delta") == db.get_document(
                "docs", "delta", "reader"
            )
            assert (await client.traverse(neighbours)).vertices
            assert (await client.stats()).position == db.position
            assert (await client.principal()).id == "reader"
            with pytest.raises(NotFoundError):
                await client.get_document("docs", "nothing")
            with pytest.raises(PermissionDeniedError):
                await client.command(_put())
            with pytest.raises(PermissionDeniedError):
                await client.list_principals()

    asyncio.run(scenario())


def test_async_admin_helpers(corpus: Corpus) -> None:
    async def scenario() -> None:
        async with _async(corpus, "admin") as client:
            await client.health()
            grant = Grant(client.name, "docs", frozenset({"query"}))  # type: ignore[arg-type]
            await client.configure_principal("bot", grants=(grant,))
            token = await client.issue_api_key("bot")
            assert corpus.db.authenticate(token).id == "bot"
            (key_id,) = (await client.get_principal("bot")).key_ids
            assert token.startswith(f"cairn_{key_id}.")
            assert "bot" in [r.principal.id for r in await client.list_principals()]
            await client.revoke_api_key("bot", key_id)
            with pytest.raises(UnauthenticatedError):
                corpus.db.authenticate(token)
            await client.configure_policy("notes", (FieldPolicy("/text", read_grant="t"),))
            assert await client.get_policy("notes") == (FieldPolicy("/text", read_grant="t"),)
            receipt = await client.command(_put())
            assert await client.retry_command(_put_same(receipt)) == receipt

    asyncio.run(scenario())


def _put_same(receipt: CommitReceipt) -> CommandRequest:
    return CommandRequest(
        receipt.command_id, "main", (PutDocument("docs", "sdk", {"text": "sdk"}),)
    )


def test_async_name_needs_health_first(corpus: Corpus) -> None:
    async def scenario() -> None:
        async with _async(corpus, "reader") as client:
            with pytest.raises(ValidationError):
                _ = client.name

    asyncio.run(scenario())


@pytest.mark.parametrize("cls", [cls for cls in error_classes() if cls is not CairnError])
def test_every_problem_code_raises_its_own_class(cls: type[CairnError]) -> None:
    problem = cls("from the server", details={"k": "v"}).to_problem()

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(cls.http_status, content=orjson.dumps(problem))

    with _mock(handler) as client, pytest.raises(cls) as caught:
        client.stats()
    assert type(caught.value) is cls
    assert caught.value.message == "from the server" and caught.value.details == {"k": "v"}


@pytest.mark.parametrize(
    "failure",
    [
        httpx.ReadError("connection reset"),
        httpx.RemoteProtocolError("server disconnected"),
        httpx.WriteError("broken pipe"),
        httpx.ReadTimeout("slow"),
        httpx.ConnectError("refused"),
    ],
)
def test_a_command_without_a_reply_is_an_unknown_outcome(failure: Exception) -> None:
    sent: list[bytes] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request.content)
        raise failure

    request = _put()
    with _mock(handler) as client:
        with pytest.raises(UnknownWriteOutcomeError) as caught:
            client.command(request)
        assert pending_command(caught.value) == (
            request.canonical_bytes(),
            str(request.command_id),
        )
        with pytest.raises(UnknownWriteOutcomeError):
            client.retry_command(caught.value)
    assert sent == [request.canonical_bytes()] * 2


@pytest.mark.parametrize(
    ("status", "body"),
    [(502, b"<html>bad gateway</html>"), (500, b'{"code": "cairn_error", "detail": "x"}')],
)
def test_a_command_answered_by_a_bare_5xx_is_an_unknown_outcome(status: int, body: bytes) -> None:
    with _mock(lambda request: httpx.Response(status, content=body)) as client:
        with pytest.raises(UnknownWriteOutcomeError):
            client.command(_put())
        with pytest.raises(CairnError) as read:
            client.stats()
    assert type(read.value) is CairnError


def test_a_definite_command_error_is_raised_as_itself() -> None:
    problem = ConflictError("used").to_problem()
    reply = httpx.Response(409, content=orjson.dumps(problem))
    with _mock(lambda r: reply) as client, pytest.raises(ConflictError):
        client.command(_put())


def test_read_failures_are_typed() -> None:
    def timeout(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("slow")

    def refused(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused")

    with _mock(timeout) as client, pytest.raises(BudgetExceededError):
        client.stats()
    with _mock(refused) as client, pytest.raises(CairnError) as caught:
        client.get_document("docs", "x")
    assert type(caught.value) is CairnError
    with _mock(lambda r: httpx.Response(200, content=b"not json")) as client:
        with pytest.raises(CorruptionError):
            client.stats()
        with pytest.raises(UnknownWriteOutcomeError):
            client.command(_put())


def test_retry_command_takes_errors_requests_and_bytes() -> None:
    seen: list[bytes] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.content)
        data = orjson.loads(request.content)
        receipt = {
            "command_id": data["command_id"],
            "token": {"incarnation": str(uuid.UUID(int=1)), "database": "main", "position": 1},
            "mutations": [],
            "durability": "process_durable",
        }
        return httpx.Response(200, content=orjson.dumps(receipt))

    request = _put()
    with _mock(handler) as client:
        by_request = client.retry_command(request)
        by_bytes = client.retry_command(request.canonical_bytes())
        for bad in (b"junk", "text", UnknownWriteOutcomeError("no details")):
            with pytest.raises(ValidationError):
                client.retry_command(bad)  # type: ignore[arg-type]
        with pytest.raises(ValidationError):
            client.command("not a request")  # type: ignore[arg-type]
    assert by_request == by_bytes and by_request.command_id == request.command_id
    assert seen == [request.canonical_bytes()] * 2


def test_client_needs_a_key() -> None:
    with pytest.raises(ValidationError):
        Client(URL, "")


def test_documents_are_addressed_with_escaped_segments() -> None:
    paths: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        paths.append(request.url.raw_path.decode())
        return httpx.Response(404, content=orjson.dumps(NotFoundError("no").to_problem()))

    with _mock(handler) as client, pytest.raises(NotFoundError):
        client.get_document("team/x", "src/a b.py")
    assert paths == ["/v1/documents/team%2Fx/src%2Fa%20b.py"]
