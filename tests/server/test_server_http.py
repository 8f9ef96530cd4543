"""The HTTP API in process: authentication, problem documents, bodies, routes, admin."""

from __future__ import annotations

import logging
import uuid
from typing import Any
from urllib.parse import quote

import orjson
import pytest
from conftest import Corpus
from fastapi.testclient import TestClient
from server_helpers import GRAPH, run

from cairn.canonical import canonical_bytes
from cairn.search.contracts import SearchRequest
from cairn.search.traverse import TraverseRequest
from cairn.search.wire import to_wire
from cairn.server.http import create_app
from cairn.server.limits import MAX_BODY_BYTES, MAX_BODY_DEPTH
from cairn.store import (
    CommandRequest,
    ConfigureCollection,
    ConfigurePrincipal,
    EntityRef,
    PutDocument,
    issue_api_key,
)

PROTECTED = [
    ("POST", "/v1/commands"),
    ("GET", "/v1/documents/docs/root"),
    ("POST", "/v1/search"),
    ("POST", "/v1/search/graph"),
    ("POST", "/v1/query/search"),
    ("POST", "/v1/graph/traverse"),
    ("GET", "/v1/stats"),
    ("GET", "/v1/principal"),
    ("GET", "/v1/admin/principals"),
    ("GET", "/v1/admin/principals/reader"),
    ("PUT", "/v1/admin/principals/reader"),
    ("POST", "/v1/admin/principals/reader/keys"),
    ("DELETE", "/v1/admin/principals/reader/keys/x"),
    ("GET", "/v1/admin/policies/docs"),
    ("PUT", "/v1/admin/policies/docs"),
]


def _problem(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body: dict[str, Any] = response.json()
    assert body["type"] == f"urn:cairn:error:{code}"
    assert body["code"] == code and body["status"] == status
    assert body["title"] and isinstance(body["detail"], str)
    return body


def _command(db_name: str, *mutations: Any) -> CommandRequest:
    return CommandRequest(uuid.uuid4(), db_name, tuple(mutations))


# ------------------------------------------------------------ authentication
def test_health_is_the_only_open_route(http: TestClient, corpus: Corpus) -> None:
    health = http.get("/v1/health")
    assert health.status_code == 200
    assert health.json()["status"] == "ok" and health.json()["database"] == corpus.db.name
    for method, path in PROTECTED:
        response = http.request(method, path, content=b"{}")
        _problem(response, 401, "unauthenticated")
        assert response.headers["www-authenticate"].startswith("Bearer")


@pytest.mark.parametrize(
    "header",
    [
        "Bearer nonsense",
        "Bearer cairn_nokey.secret",
        "Basic dXNlcjpwYXNz",
        "Bearer ",
    ],
)
def test_bad_credentials_are_401(http: TestClient, header: str) -> None:
    _problem(http.get("/v1/stats", headers={"Authorization": header}), 401, "unauthenticated")


def test_a_wrong_secret_for_a_known_key_id_is_401(http: TestClient, corpus: Corpus) -> None:
    key_id = corpus.keys["reader"].split(".")[0]
    response = http.get("/v1/stats", headers={"Authorization": f"Bearer {key_id}.wrong"})
    _problem(response, 401, "unauthenticated")


def test_whoami_returns_the_key_principal(http: TestClient, corpus: Corpus) -> None:
    response = http.get("/v1/principal", headers=corpus.auth("reader"))
    assert response.status_code == 200
    assert response.json()["id"] == "reader"


# ------------------------------------------------------------------ problems
def test_router_errors_are_problems(http: TestClient, corpus: Corpus) -> None:
    _problem(http.get("/v1/nothing", headers=corpus.auth("reader")), 404, "not_found")
    wrong = http.delete("/v1/health")
    assert wrong.status_code == 405
    assert wrong.headers["content-type"] == "application/problem+json"
    assert wrong.json()["type"] == "about:blank"


def test_unexpected_errors_are_logged_500_problems_without_secrets(
    corpus: Corpus, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    def explode(*args: object, **kwargs: object) -> None:
        raise RuntimeError("kaboom")

    monkeypatch.setattr(corpus.db, "search", explode)
    request = SearchRequest(corpus.db.name, "docs", "/text", "needle")
    with (
        TestClient(create_app(corpus.db)) as http,
        caplog.at_level(logging.ERROR, logger="cairn.server"),
    ):
        response = http.post(
            "/v1/search", content=orjson.dumps(to_wire(request)), headers=corpus.auth("reader")
        )
    body = _problem(response, 500, "cairn_error")
    assert "kaboom" not in body["detail"]
    assert "kaboom" in caplog.text
    assert corpus.keys["reader"] not in caplog.text
    assert corpus.keys["reader"].split(".")[1] not in caplog.text


# -------------------------------------------------------------------- bodies
@pytest.mark.parametrize(
    "body", [b"", b"{", b"not json", b"\xff\xfe", b'{"a": 1} trailing', b"[1, 2"]
)
def test_non_json_bodies_are_validation_errors(
    http: TestClient, corpus: Corpus, body: bytes
) -> None:
    response = http.post("/v1/search", content=body, headers=corpus.auth("reader"))
    _problem(response, 400, "validation")


def test_deeply_nested_bodies_are_refused_before_parsing_into_records(
    http: TestClient, corpus: Corpus
) -> None:
    deep = b"[" * (MAX_BODY_DEPTH + 1) + b"]" * (MAX_BODY_DEPTH + 1)
    body = _problem(
        http.post("/v1/commands", content=deep, headers=corpus.auth("admin")), 400, "validation"
    )
    assert body["details"]["limit"] == MAX_BODY_DEPTH
    very_deep = b"[" * 5000 + b"]" * 5000  # beyond orjson's own nesting limit
    _problem(
        http.post("/v1/commands", content=very_deep, headers=corpus.auth("admin")),
        400,
        "validation",
    )


def test_an_oversized_body_is_refused_by_its_declared_length(
    http: TestClient, corpus: Corpus
) -> None:
    headers = {**corpus.auth("admin"), "Content-Length": str(MAX_BODY_BYTES + 1)}
    response = http.post("/v1/commands", content=b"{}", headers=headers)
    body = _problem(response, 429, "budget_exceeded")
    assert body["details"]["limit"] == MAX_BODY_BYTES


def test_an_oversized_streamed_body_is_refused(http: TestClient, corpus: Corpus) -> None:
    def chunks() -> Any:
        piece = b" " * (1024 * 1024)
        for _ in range(MAX_BODY_BYTES // len(piece) + 2):
            yield piece

    response = http.post("/v1/commands", content=chunks(), headers=corpus.auth("admin"))
    _problem(response, 429, "budget_exceeded")


def test_the_codec_is_strict(http: TestClient, corpus: Corpus) -> None:
    wire = to_wire(SearchRequest(corpus.db.name, "docs", "/text", "needle"))
    response = http.post(
        "/v1/search",
        content=orjson.dumps({**wire, "surprise": 1}),
        headers=corpus.auth("reader"),
    )
    assert "surprise" in _problem(response, 400, "validation")["detail"]
    response = http.post(
        "/v1/search",
        content=orjson.dumps({**wire, "type": "cairn.contract.other.v1"}),
        headers=corpus.auth("reader"),
    )
    _problem(response, 400, "validation")


# ------------------------------------------------------------------ commands
def test_commands_return_canonical_receipts_and_replay_byte_for_byte(
    http: TestClient, corpus: Corpus
) -> None:
    request = _command(corpus.db.name, PutDocument("docs", "fresh", {"text": "new"}))
    data = request.canonical_bytes()
    first = http.post("/v1/commands", content=data, headers=corpus.auth("admin"))
    assert first.status_code == 200
    assert first.content == canonical_bytes(orjson.loads(first.content))
    second = http.post("/v1/commands", content=data, headers=corpus.auth("admin"))
    assert second.content == first.content
    assert corpus.db.get_document("docs", "fresh").revision == 1
    # Same ID, other content: a conflict, and nothing changes.
    other = CommandRequest(
        request.command_id, corpus.db.name, (PutDocument("docs", "fresh", {"text": "x"}),)
    )
    conflict = http.post(
        "/v1/commands", content=other.canonical_bytes(), headers=corpus.auth("admin")
    )
    _problem(conflict, 409, "conflict")


def test_a_rejected_command_replays_the_same_problem(http: TestClient, corpus: Corpus) -> None:
    request = _command(
        corpus.db.name, PutDocument("docs", "root", {"text": "x"}, expected_revision=0)
    )
    replies = [
        http.post("/v1/commands", content=request.canonical_bytes(), headers=corpus.auth("admin"))
        for _ in range(2)
    ]
    _problem(replies[0], 409, "conflict")
    assert replies[0].content == replies[1].content


def test_a_reader_may_not_write(http: TestClient, corpus: Corpus) -> None:
    request = _command(corpus.db.name, PutDocument("docs", "mine", {"text": "x"}))
    response = http.post(
        "/v1/commands", content=request.canonical_bytes(), headers=corpus.auth("reader")
    )
    _problem(response, 403, "permission_denied")


def test_malformed_commands_are_validation_errors(http: TestClient, corpus: Corpus) -> None:
    for body in ([], {"command_id": "nope", "database": "main", "mutations": []}, {"x": 1}):
        response = http.post(
            "/v1/commands", content=orjson.dumps(body), headers=corpus.auth("admin")
        )
        _problem(response, 400, "validation")


# ----------------------------------------------------------------- documents
def test_documents_with_slashes_in_both_names(http: TestClient, corpus: Corpus) -> None:
    run(
        corpus.db,
        ConfigureCollection("team/x"),
        PutDocument("team/x", "src/a.py::f", {"text": "f"}),
    )
    path = f"/v1/documents/{quote('team/x', safe='')}/{quote('src/a.py::f', safe='')}"
    response = http.get(path, headers=corpus.auth("admin"))
    assert response.status_code == 200, response.text
    assert response.json()["ref"] == {"collection": "team/x", "id": "src/a.py::f"}
    plain = http.get("/v1/documents/docs/a/b", headers=corpus.auth("reader"))
    assert plain.json()["ref"] == {"collection": "docs", "id": "a/b"}


def test_documents_are_redacted_and_hidden_like_embedded(http: TestClient, corpus: Corpus) -> None:
    delta = http.get("/v1/documents/docs/delta", headers=corpus.auth("reader")).json()
    assert delta["redacted"] is True and "secret" not in delta["body"]
    hidden = http.get("/v1/documents/docs/private", headers=corpus.auth("restricted"))
    missing = http.get("/v1/documents/docs/nothing", headers=corpus.auth("restricted"))
    assert _problem(hidden, 404, "not_found")["detail"].startswith("no document")
    _problem(missing, 404, "not_found")


# -------------------------------------------------------- one cut per request
def test_each_read_route_takes_exactly_one_read_cut(http: TestClient, corpus: Corpus) -> None:
    name = corpus.db.name
    calls = [
        ("GET", "/v1/documents/docs/root", None),
        ("POST", "/v1/search", to_wire(SearchRequest(name, "docs", "/text", "needle"))),
        (
            "POST",
            "/v1/graph/traverse",
            TraverseRequest(name, GRAPH, (EntityRef("docs", "root"),), max_depth=3).to_json(),
        ),
        ("GET", "/v1/stats", None),
    ]
    for method, path, body in calls:
        before = corpus.db.read_cut_acquisitions
        content = None if body is None else orjson.dumps(body)
        response = http.request(method, path, content=content, headers=corpus.auth("reader"))
        assert response.status_code == 200, (path, response.text)
        assert corpus.db.read_cut_acquisitions == before + 1, path


# --------------------------------------------------------------------- stats
def test_stats_need_a_read_grant(http: TestClient, corpus: Corpus) -> None:
    key = issue_api_key()
    run(corpus.db, ConfigurePrincipal("nobody", api_keys=(key.verifier,)))
    response = http.get("/v1/stats", headers={"Authorization": f"Bearer {key.token}"})
    _problem(response, 403, "permission_denied")
    stats = http.get("/v1/stats", headers=corpus.auth("restricted")).json()
    assert stats["collections"] == [
        {"name": "docs", "documents": 6},
        {"name": "notes", "documents": 2},
    ]


# --------------------------------------------------------------------- admin
def test_admin_routes_refuse_non_admins(http: TestClient, corpus: Corpus) -> None:
    for method, path in PROTECTED[8:]:
        response = http.request(method, path, content=b"{}", headers=corpus.auth("reader"))
        assert response.status_code in (400, 403), (method, path, response.text)
        if response.status_code == 400:  # body rejected before authorisation reads
            assert method in ("PUT", "POST")
    _problem(
        http.get("/v1/admin/principals", headers=corpus.auth("reader")), 403, "permission_denied"
    )


def test_admin_manages_principals_and_keys(http: TestClient, corpus: Corpus) -> None:
    admin = corpus.auth("admin")
    listed = http.get("/v1/admin/principals", headers=admin).json()["principals"]
    assert [item["id"] for item in listed] == ["admin", "reader", "restricted"]
    assert all("verifier" not in orjson.dumps(item).decode() for item in listed)
    # A new principal, then a server-minted key shown once.
    settings = {
        "grants": [{"database": corpus.db.name, "resource": "docs", "capabilities": ["query"]}]
    }
    created = http.put("/v1/admin/principals/bot", content=orjson.dumps(settings), headers=admin)
    assert created.status_code == 200, created.text
    minted = http.post("/v1/admin/principals/bot/keys", content=b"{}", headers=admin).json()
    token = minted["token"]
    assert minted["receipt"]["mutations"][0]["id"] == "bot"
    bot = {"Authorization": f"Bearer {token}"}
    assert http.get("/v1/principal", headers=bot).json()["id"] == "bot"
    # A client-minted key: only its verifier travels; registering it twice is a no-op.
    own = issue_api_key()
    body = orjson.dumps(own.verifier.to_json())
    added = http.post("/v1/admin/principals/bot/keys", content=body, headers=admin).json()
    assert "token" not in added and added["receipt"] is not None
    again = http.post("/v1/admin/principals/bot/keys", content=body, headers=admin).json()
    assert again["receipt"] is None
    clash = orjson.dumps({"key_id": own.verifier.key_id, "verifier": "sha256$" + "0" * 64})
    _problem(
        http.post("/v1/admin/principals/bot/keys", content=clash, headers=admin), 409, "conflict"
    )
    # Changing settings keeps both keys.
    settings["field_grants"] = ["labels"]
    http.put("/v1/admin/principals/bot", content=orjson.dumps(settings), headers=admin)
    record = http.get("/v1/admin/principals/bot", headers=admin).json()
    assert record["field_grants"] == ["labels"]
    assert sorted(record["key_ids"]) == sorted([minted["key_id"], own.verifier.key_id])
    # Revoking the minted key: it no longer authenticates; the other still does.
    revoked = http.delete(f"/v1/admin/principals/bot/keys/{minted['key_id']}", headers=admin)
    assert revoked.status_code == 200
    _problem(http.get("/v1/principal", headers=bot), 401, "unauthenticated")
    own_auth = {"Authorization": f"Bearer {own.token}"}
    assert http.get("/v1/principal", headers=own_auth).status_code == 200
    _problem(http.delete("/v1/admin/principals/bot/keys/unknown", headers=admin), 404, "not_found")
    _problem(http.get("/v1/admin/principals/ghost", headers=admin), 404, "not_found")


@pytest.mark.parametrize(
    "settings",
    [
        {"grants": "all"},
        {"grants": [{"database": "main"}]},
        {"field_grants": "labels"},
        {"expires_at": "yesterday"},
        {"expires_at": "2030-01-01T00:00:00"},
        {"unknown": True},
        ["not", "an", "object"],
    ],
)
def test_bad_principal_settings_are_validation_errors(
    http: TestClient, corpus: Corpus, settings: Any
) -> None:
    response = http.put(
        "/v1/admin/principals/bot", content=orjson.dumps(settings), headers=corpus.auth("admin")
    )
    _problem(response, 400, "validation")


def test_admin_manages_policies(http: TestClient, corpus: Corpus) -> None:
    admin = corpus.auth("admin")
    current = http.get("/v1/admin/policies/docs", headers=admin).json()
    assert current == {
        "resource": "docs",
        "fields": [
            {"path": "/secret", "read_grant": "secrets", "use_grant": None, "write_grant": None}
        ],
    }
    opened = http.put("/v1/admin/policies/docs", content=b'{"fields": []}', headers=admin)
    assert opened.status_code == 200
    delta = http.get("/v1/documents/docs/delta", headers=corpus.auth("reader")).json()
    assert delta["body"]["secret"] == "s3cr3t"
    for bad in (b'{"fields": "x"}', b'{"fields": [{"path": "nope"}]}', b"{}", b'{"fields": [1]}'):
        _problem(http.put("/v1/admin/policies/docs", content=bad, headers=admin), 400, "validation")


# ------------------------------------------------------------------- openapi
def test_openapi_documents_every_route_with_bearer_auth(http: TestClient) -> None:
    schema = http.get("/openapi.json").json()
    paths = schema["paths"]
    for route in (
        "/v1/health",
        "/v1/commands",
        "/v1/documents/{collection}/{doc_id}",
        "/v1/search",
        "/v1/search/graph",
        "/v1/query/search",
        "/v1/graph/traverse",
        "/v1/stats",
        "/v1/admin/principals",
        "/v1/admin/principals/{principal_id}/keys",
        "/v1/admin/policies/{resource}",
    ):
        assert route in paths, route
    assert schema["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"
    body = paths["/v1/search/graph"]["post"]["requestBody"]["content"]["application/json"]
    assert body["schema"]["$ref"] == "#/components/schemas/GraphSearchRequestBody"
    assert "GraphSearchRequest" in schema["components"]["schemas"]
    assert http.get("/docs").status_code == 200
