"""A write whose connection is cut after commit and before the reply (issue 8 acceptance).

A TCP proxy in front of a real ``cairn serve`` forwards the command, waits for the
server's whole reply (so the commit happened) and closes the client's socket instead of
relaying it. The SDK raises ``UnknownWriteOutcomeError``; ``retry_command`` re-sends the
same bytes with the same ID and gets the stored outcome: one effect, identical receipt.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest
from server_helpers import CuttingProxy, ServerProcess, body_of, open_corpus, serve_process

from cairn.canonical import canonical_bytes
from cairn.client import AsyncClient, Client, pending_command
from cairn.errors import UnknownWriteOutcomeError
from cairn.store import CommandRequest, CommitReceipt, Database, PutDocument


@dataclass
class Served:
    db: Database
    server: ServerProcess
    admin: str


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    folder = tmp_path_factory.mktemp("cut")
    db, _ = open_corpus(folder / "cairn.db")
    try:
        with serve_process(folder / "cairn.db", folder / "server.log") as server:
            assert server.admin_key is not None
            yield Served(db, server, server.admin_key)
    finally:
        db.close()


def _request(db: Database, doc_id: str) -> CommandRequest:
    return CommandRequest(
        uuid.uuid4(), db.name, (PutDocument("docs", doc_id, {"text": "written once"}),)
    )


def _check_once(
    served: Served, proxy: CuttingProxy, request: CommandRequest, before: int, doc_id: str
) -> bytes:
    """The lost write committed exactly once; return the reply the proxy dropped."""
    assert not proxy.failures, proxy.failures
    assert served.db.position == before + 1
    assert served.db.get_document("docs", doc_id).revision == 1
    (dropped,) = proxy.dropped
    lost = body_of(dropped)
    assert CommitReceipt.from_json(orjson.loads(lost)).command_id == request.command_id
    return lost


def test_client_reconciles_a_cut_write_by_resending_the_same_bytes(served: Served) -> None:
    request = _request(served.db, "cut-sync")
    with (
        CuttingProxy(served.server.port) as proxy,
        Client(proxy.url, served.admin, database=served.db.name) as client,
    ):
        before = served.db.position
        proxy.cuts = 1
        with pytest.raises(UnknownWriteOutcomeError) as caught:
            client.command(request)
        error = caught.value
        assert error.code == "unknown_write_outcome" and error.http_status == 503
        sent, command_id = pending_command(error)
        assert sent == request.canonical_bytes()
        assert command_id == str(request.command_id)
        lost = _check_once(served, proxy, request, before, "cut-sync")
        receipt = client.retry_command(error)
        again = client.retry_command(request)
        # One effect; the retry's receipt is the lost one, byte for byte.
        assert served.db.position == before + 1
        assert served.db.get_document("docs", "cut-sync").revision == 1
        assert canonical_bytes(receipt.to_json()) == lost
        assert again == receipt
        assert served.db.stored_outcome(request.command_id, "admin") is not None
        # Every attempt sent the very same bytes.
        bodies = {body_of(message) for message in proxy.requests}
        assert bodies == {request.canonical_bytes()}


def test_async_client_reconciles_a_cut_write(served: Served) -> None:
    request = _request(served.db, "cut-async")

    async def scenario(proxy: CuttingProxy) -> tuple[UnknownWriteOutcomeError, CommitReceipt]:
        async with AsyncClient(proxy.url, served.admin, database=served.db.name) as client:
            proxy.cuts = 1
            try:
                await client.command(request)
            except UnknownWriteOutcomeError as error:
                return error, await client.retry_command(error)
            raise AssertionError("the cut write did not raise UnknownWriteOutcomeError")

    with CuttingProxy(served.server.port) as proxy:
        before = served.db.position
        error, receipt = asyncio.run(scenario(proxy))
        assert pending_command(error)[0] == request.canonical_bytes()
        lost = _check_once(served, proxy, request, before, "cut-async")
        assert canonical_bytes(receipt.to_json()) == lost
        assert served.db.position == before + 1


def test_a_new_id_for_the_same_content_would_write_twice(served: Served, tmp_path: Path) -> None:
    """Why the retry must reuse the ID: a fresh ID is a fresh command (a second revision)."""
    with Client(served.server.url, served.admin) as client:
        first = client.command(_request(served.db, "twice"))
        second = client.command(_request(served.db, "twice"))
    assert second.token.position == first.token.position + 1
    assert served.db.get_document("docs", "twice").revision == 2
