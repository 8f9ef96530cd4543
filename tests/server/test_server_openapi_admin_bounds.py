"""Commands and admin bodies: the published schema accepts exactly what the server
accepts (issue 18, item 12).

Before, ``PrincipalSettings``, ``Policy``, ``ApiKeyRequest``, ``Grant`` and
``FieldPolicy`` were written out by hand and stated no bounds (257 projects, a blank
owner, a key ID with a dot, a policy path without ``/`` were valid by the schema and
refused by the server), and the mutations carried no bound at all. Each case sends
values at and just past a rule to the running app and validates the same body against
the schema the app publishes at ``/openapi.json``. The bounds are the spec's and the
store's documented limits (spec §1-§2, docs/store.md), written here independently.
"""

from __future__ import annotations

import uuid
from typing import Any

import jsonschema
import pytest
from conftest import Corpus
from fastapi.testclient import TestClient
from server_helpers import with_value

from cairn.store import issue_api_key

VERIFIER = issue_api_key().verifier.verifier
GRANT = {"database": "main", "resource": "docs", "capabilities": ["query"]}
SETTINGS = {"grants": [GRANT], "projects": ["team"], "owner_id": "ann"}
POLICY = {"fields": [{"path": "/secret", "read_grant": "secrets"}]}
SPACE = {"id": "toy", "dimension": 2, "metric": "cosine", "model": "m", "version": "1"}

PRINCIPAL = {"kind": "configure_principal", "id": "reader", **SETTINGS}
COLLECTION = {
    "kind": "configure_collection",
    "name": "fresh",
    "text_fields": ["/text"],
    "vector_fields": [{"name": "embedding", "space": SPACE}],
}
CONFIGURE_POLICY = {"kind": "configure_policy", "resource": "docs", **POLICY}


def _paths(count: int) -> list[dict[str, Any]]:
    return [{"path": f"/f{index}"} for index in range(count)]


def _names(count: int) -> list[str]:
    return [f"p{index}" for index in range(count)]


# (route, schema, base body, path into the body, values around a rule)
Case = tuple[str, str, Any, tuple[Any, ...], list[Any]]
ADMIN = "/v1/admin"
CASES: list[Case] = [
    # PUT a principal's settings.
    (
        f"{ADMIN}/principals/reader",
        "PrincipalSettings",
        SETTINGS,
        ("projects",),
        [_names(256), _names(257)],
    ),
    (
        f"{ADMIN}/principals/reader",
        "PrincipalSettings",
        SETTINGS,
        ("owner_id",),
        ["", " ", None, "ann"],
    ),
    (
        f"{ADMIN}/principals/reader",
        "PrincipalSettings",
        SETTINGS,
        ("field_grants",),
        [["secrets"], ["se\u0001crets"], [""]],
    ),
    (
        f"{ADMIN}/principals/reader",
        "PrincipalSettings",
        SETTINGS,
        ("grants", 0, "capabilities"),
        [[], ["query"], ["fly"]],
    ),
    (
        f"{ADMIN}/principals/reader",
        "PrincipalSettings",
        SETTINGS,
        ("grants", 0, "resource"),
        ["*", "", "docs"],
    ),
    (
        f"{ADMIN}/principals/reader",
        "PrincipalSettings",
        SETTINGS,
        ("grants",),
        [[GRANT] * 256, [GRANT] * 257],
    ),
    (f"{ADMIN}/principals/reader", "PrincipalSettings", SETTINGS, ("revoked",), [False, "yes"]),
    # PUT a resource's field policies.
    (f"{ADMIN}/policies/docs", "Policy", POLICY, ("fields",), [_paths(256), _paths(257)]),
    (
        f"{ADMIN}/policies/docs",
        "Policy",
        POLICY,
        ("fields", 0, "path"),
        ["secret", "/a~2b", "/a~1b", "/secret"],
    ),
    (f"{ADMIN}/policies/docs", "Policy", POLICY, ("fields", 0, "read_grant"), ["", None, "s"]),
    # POST a key: minted here ({}) or registered (both fields).
    (f"{ADMIN}/principals/reader/keys", "ApiKeyRequest", {}, ("key_id",), ["k1"]),
    (
        f"{ADMIN}/principals/reader/keys",
        "ApiKeyRequest",
        {"key_id": "k2", "verifier": VERIFIER},
        ("key_id",),
        ["a.b", " ", "k2"],
    ),
    # Commands.
    ("/v1/commands", "CommandRequest", [PRINCIPAL], (), [[], [PRINCIPAL], [PRINCIPAL] * 257]),
    ("/v1/commands", "CommandRequest", [PRINCIPAL], (0, "id"), ["", "\t", "reader"]),
    ("/v1/commands", "CommandRequest", [PRINCIPAL], (0, "projects"), [_names(257), ["x"]]),
    (
        "/v1/commands",
        "CommandRequest",
        [COLLECTION],
        (0, "text_fields"),
        [["/a", "/a"], ["text"], [f"/f{i}" for i in range(64)], [f"/f{i}" for i in range(65)]],
    ),
    (
        "/v1/commands",
        "CommandRequest",
        [COLLECTION],
        (0, "vector_fields", 0, "space", "dimension"),
        [0, 1, 4096, 4097],
    ),
    ("/v1/commands", "CommandRequest", [COLLECTION], (0, "vector_fields", 0, "name"), ["", "e"]),
    (
        "/v1/commands",
        "CommandRequest",
        [CONFIGURE_POLICY],
        (0, "fields", 0, "path"),
        ["nope", "/secret"],
    ),
    (
        "/v1/commands",
        "CommandRequest",
        [{"kind": "configure_graph", "name": "g2"}],
        (0, "name"),
        ["\u0085", "g2"],
    ),
]


@pytest.fixture
def components(http: TestClient) -> dict[str, Any]:
    return dict(http.get("/openapi.json").json()["components"])


def _send(http: TestClient, corpus: Corpus, route: str, body: Any) -> tuple[Any, int]:
    headers = corpus.auth("admin")
    if route == "/v1/commands":
        sent = {"command_id": str(uuid.uuid4()), "database": "main", "mutations": body}
        return sent, http.post(route, json=sent, headers=headers).status_code
    if route.endswith("/keys"):
        return body, http.post(route, json=body, headers=headers).status_code
    return body, http.put(route, json=body, headers=headers).status_code


@pytest.mark.parametrize(("route", "schema", "base", "path", "values"), CASES)
def test_the_schema_accepts_exactly_what_the_server_accepts(
    http: TestClient,
    corpus: Corpus,
    components: dict[str, Any],
    route: str,
    schema: str,
    base: Any,
    path: tuple[Any, ...],
    values: list[Any],
) -> None:
    validator = jsonschema.Draft202012Validator(
        {**components["schemas"][schema], "components": components}
    )
    for value in values:
        sent, status = _send(http, corpus, route, with_value(base, path, value))
        assert status in (200, 400), (value, status)
        shown = len(value) if isinstance(value, list) else value
        assert validator.is_valid(sent) == (status == 200), (
            f"{'.'.join(map(str, path))} = {shown!r}: schema says {validator.is_valid(sent)}, "
            f"server {status}"
        )


def test_the_minted_key_request_is_valid_and_half_of_one_is_not(
    http: TestClient, corpus: Corpus, components: dict[str, Any]
) -> None:
    validator = jsonschema.Draft202012Validator(
        {**components["schemas"]["ApiKeyRequest"], "components": components}
    )
    for body, expected in (({}, 200), ({"verifier": VERIFIER}, 400), ({"key_id": "k9"}, 400)):
        _, status = _send(http, corpus, f"{ADMIN}/principals/reader/keys", body)
        assert (status, validator.is_valid(body)) == (expected, expected == 200), body
