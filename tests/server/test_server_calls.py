"""Who calls X and show X through HTTP and the SDK (issue 19): the same answers as the
embedded API, field for field, with call sites and source lines; bad bodies refused by
the schema's own rules; names never guessed.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import jsonschema
import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

import cairn
from cairn.cli import app as cli
from cairn.client import AsyncClient
from cairn.search.calls import CallsRequest, calls
from cairn.search.impact import ImpactRequest, impact
from cairn.search.show import ShowRequest, show_request
from cairn.search.wire import to_json
from cairn.server.bootstrap import ensure_admin
from cairn.server.http import create_app
from cairn.store.commands import EntityRef

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "flask_app"
URL = "http://cairn.test"


@dataclass
class Served:
    db: cairn.Database
    http: TestClient
    key: str
    checkout: Path

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    checkout = tmp_path / "checkout"
    shutil.copytree(FIXTURE, checkout)
    indexed = CliRunner().invoke(cli, ["index", str(checkout), "--workers", "1", "--json"])
    assert indexed.exit_code == 0, indexed.output
    with cairn.open(checkout / ".cairn" / "cairn.db") as db:
        boot = ensure_admin(db, {})
        assert boot.token is not None
        with TestClient(create_app(db)) as http:
            yield Served(db, http, boot.token, checkout)


def _sdk(served: Served) -> AsyncClient:
    transport = httpx.ASGITransport(app=create_app(served.db))
    return AsyncClient(URL, served.key, transport=transport)


def test_callers_are_the_same_through_every_door(served: Served) -> None:
    request = CallsRequest(served.db.name, "load_user")
    embedded = calls(served.db, request)
    reply = served.http.post("/v1/graph/calls", json=to_json(request), headers=served.headers())
    assert reply.status_code == 200, reply.text
    assert reply.json() == to_json(embedded)
    (edge,) = reply.json()["edges"]
    assert edge["caller"]["id"] == "function:app/views.py#get_user"
    assert [(s["file"], s["range"][0]) for s in edge["evidence"]["sites"]] == [("app/views.py", 12)]

    async def sdk() -> object:
        async with _sdk(served) as client:
            return await client.calls(request)

    assert asyncio.run(sdk()) == embedded  # decoded back into the same records


def test_show_is_the_same_through_every_door(served: Served) -> None:
    request = ShowRequest(served.db.name, "get_user")
    embedded = show_request(served.db, request)
    assert embedded.source is not None and embedded.source.lines[0] == "def get_user(user_id):"
    reply = served.http.post("/v1/symbols/show", json=to_json(request), headers=served.headers())
    assert reply.status_code == 200, reply.text
    assert reply.json() == to_json(embedded)

    async def sdk() -> object:
        async with _sdk(served) as client:
            return await client.show(request)

    assert asyncio.run(sdk()) == embedded
    views = served.checkout / "app" / "views.py"
    views.write_text(views.read_text() + "\n# edited\n")
    stale = served.http.post("/v1/symbols/show", json=to_json(request), headers=served.headers())
    assert (stale.json()["stale"], stale.json()["source"]) == (True, None)


def test_impact_is_the_same_through_every_door(served: Served) -> None:
    request = ImpactRequest(served.db.name, "load_user")
    embedded = impact(served.db, request)
    assert embedded.complete and embedded.dependents >= 1
    reply = served.http.post("/v1/graph/impact", json=to_json(request), headers=served.headers())
    assert reply.status_code == 200, reply.text
    assert reply.json() == to_json(embedded)
    partial = ImpactRequest(served.db.name, "load_user", max_edges=1)
    cut = served.http.post("/v1/graph/impact", json=to_json(partial), headers=served.headers())
    assert (cut.json()["complete"], cut.json()["stopped_by"]) == (False, "max_edges")

    async def sdk() -> object:
        async with _sdk(served) as client:
            return await client.impact(request)

    assert asyncio.run(sdk()) == embedded


def test_ambiguous_names_return_candidates_on_http(served: Served) -> None:
    body = {"database": served.db.name, "name": "validate"}
    reply = served.http.post("/v1/graph/calls", json=body, headers=served.headers()).json()
    assert reply["resolution"]["status"] == "ambiguous"
    assert reply["edges"] == []
    assert len(reply["resolution"]["candidates"]) == 2


@pytest.mark.parametrize(
    ("route", "schema", "field", "values"),
    [
        ("/v1/graph/calls", "CallsRequest", "direction", ["callers", "callees", "sideways"]),
        ("/v1/graph/calls", "CallsRequest", "depth", [0, 1, 16, 17]),
        ("/v1/graph/calls", "CallsRequest", "sites", [-1, 0, 100, 101]),
        ("/v1/graph/calls", "CallsRequest", "name", ["", " ", "load_user"]),
        ("/v1/symbols/show", "ShowRequest", "max_bytes", [-1, 0, 1_000_000, 1_000_001]),
        ("/v1/graph/impact", "ImpactRequest", "max_depth", [-1, 0, 16, 17]),
        ("/v1/graph/impact", "ImpactRequest", "top", [-1, 0, 500, 501]),
        ("/v1/graph/impact", "ImpactRequest", "relations", [[], ["calls"], [" "]]),
    ],
)
def test_the_schema_accepts_exactly_what_the_server_accepts(
    served: Served, route: str, schema: str, field: str, values: list[object]
) -> None:
    components = served.http.get("/openapi.json").json()["components"]
    validator = jsonschema.Draft202012Validator(
        {**components["schemas"][schema], "components": components}
    )
    verdicts = set()
    for value in values:
        body = {"database": served.db.name, "name": "load_user", field: value}
        status = served.http.post(route, json=body, headers=served.headers()).status_code
        assert status in (200, 400), (value, status)
        assert validator.is_valid(body) == (status == 200), (field, value, status)
        verdicts.add(status)
    assert verdicts == {200, 400}


def test_traverse_edges_carry_their_sites_on_request(served: Served) -> None:
    from cairn.search.traverse import TraverseRequest, traverse

    seed = EntityRef("symbols", "function:app/views.py#get_user")
    plain = TraverseRequest(served.db.name, "code", (seed,), relations=("calls",))
    assert all(edge.evidence is None for edge in traverse(served.db, plain).edges)
    request = TraverseRequest(served.db.name, "code", (seed,), relations=("calls",), evidence=2)
    embedded = traverse(served.db, request)
    sites = {
        edge.target.id: [(s.file, s.line) for s in edge.evidence.sites]
        for edge in embedded.edges
        if edge.evidence is not None
    }
    assert sites == {
        "function:app/services.py#load_user": [("app/views.py", 12)],
        "external:python:flask.jsonify": [("app/views.py", 13)],
    }
    reply = served.http.post("/v1/graph/traverse", json=request.to_json(), headers=served.headers())
    assert reply.status_code == 200, reply.text
    assert reply.json() == embedded.to_json()

    async def sdk() -> object:
        async with _sdk(served) as client:
            return await client.traverse(request)

    assert asyncio.run(sdk()) == embedded
    too_many = {**request.to_json(), "evidence": 101}
    refused = served.http.post("/v1/graph/traverse", json=too_many, headers=served.headers())
    assert refused.status_code == 400


def test_the_database_embeds_the_query_through_every_door(served: Served) -> None:
    from cairn.embed import HashingEmbedder
    from cairn.search.contracts import SearchRequest
    from cairn.search.wire import to_wire
    from cairn.store.load import VECTOR_FIELD

    asked = SearchRequest(served.db.name, "symbols", "/text", "load user", embed=True)
    embedded = served.db.search(asked)
    # The oracle brings its own vector, made by the embedder the index was loaded with.
    embedder = HashingEmbedder()
    (row,) = embedder.embed(["load user"])
    brought = SearchRequest(
        served.db.name,
        "symbols",
        "/text",
        "load user",
        VECTOR_FIELD,
        tuple(float(x) for x in row),
        embedder.space,
    )
    assert embedded == served.db.search(brought)
    assert embedded != served.db.search(
        SearchRequest(served.db.name, "symbols", "/text", "load user")
    )
    reply = served.http.post("/v1/search", json=to_wire(asked), headers=served.headers())
    assert reply.status_code == 200, reply.text
    assert reply.json() == {"hits": [to_wire(hit) for hit in embedded]}

    async def sdk() -> object:
        async with _sdk(served) as client:
            return await client.search(asked)

    assert asyncio.run(sdk()) == embedded
