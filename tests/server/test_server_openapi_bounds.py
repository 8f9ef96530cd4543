"""The published OpenAPI document is never looser than the server (issue 18, item 12).

For every bounded field of the search, graph search and traverse bodies, values at and
just past each bound are sent to the running app and also validated against the
schema the app itself publishes at ``/openapi.json``: the schema accepts exactly what
the server accepts. (Before, the document stated no bounds at all: ``limit: 1001`` or
``max_depth: 17`` were valid by the schema and refused by the server.)
"""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from conftest import Corpus
from fastapi.testclient import TestClient
from server_helpers import GRAPH, with_value

SEED = {"collection": "docs", "id": "root"}

SEARCH = {"database": "main", "collection": "docs", "text_field": "/text", "text": "root"}
WALK = {"graph": GRAPH, "seeds": [SEED], "max_depth": 1}
GRAPH_SEARCH = {
    "version": 1,
    "search": SEARCH,
    "retriever": {"walk": WALK, "weight": 1.0},
    "expansion": {"graph": GRAPH, "max_depth": 1},
}
TRAVERSE = {"database": "main", "graph": GRAPH, "seeds": [SEED], "max_depth": 1}

ENDPOINTS = {
    "search": ("/v1/search", "SearchRequestBody", SEARCH),
    "graph": ("/v1/search/graph", "GraphSearchRequestBody", GRAPH_SEARCH),
    "traverse": ("/v1/graph/traverse", "TraverseRequestBody", TRAVERSE),
}

# (endpoint, path to the field, values around its bounds); the bounds are the spec's
# (graph-search.md §4), written here independently of the code under test.
CASES: list[tuple[str, tuple[str, ...], list[Any]]] = [
    ("search", ("limit",), [0, 1, 1000, 1001]),
    ("search", ("fusion_k",), [0, 1, 10_000]),
    ("search", ("text_weight",), [-0.5, 0, 2.5]),
    ("search", ("vector_weight",), [-1, 0]),
    ("graph", ("retriever", "weight"), [-0.25, 0, 3]),
    ("graph", ("retriever", "walk", "max_depth"), [-1, 0, 16, 17]),
    ("graph", ("retriever", "walk", "max_vertices"), [0, 1, 10_000, 10_001]),
    ("graph", ("retriever", "walk", "max_edges"), [0, 1, 50_000, 50_001]),
    ("graph", ("retriever", "walk", "seeds"), [[], [SEED]]),
    ("graph", ("retriever", "walk", "labels"), [["calls"] * 64, ["calls"] * 65]),
    ("graph", ("expansion", "max_depth"), [-1, 0, 16, 17]),
    ("graph", ("expansion", "max_vertices"), [0, 10_000, 10_001]),
    ("graph", ("expansion", "max_edges"), [0, 50_000, 50_001]),
    ("graph", ("expansion", "labels"), [["calls"] * 64, ["calls"] * 65]),
    ("traverse", ("max_depth",), [-1, 0, 16, 17]),
    ("traverse", ("max_vertices",), [0, 1, 10_000, 10_001]),
    ("traverse", ("max_edges",), [0, 1, 50_000, 50_001]),
    ("traverse", ("seeds",), [[], [SEED]]),
    ("traverse", ("relations",), [["calls"] * 64, ["calls"] * 65]),
    # Names: non-blank, no control character (check_identifier).
    ("search", ("collection",), ["", "   ", "do\u0001cs", "docs"]),
    ("search", ("text_field",), ["", "/te\u007fxt", "/text"]),
    ("graph", ("retriever", "walk", "graph"), ["", "\t", GRAPH]),
    ("graph", ("retriever", "walk", "seeds"), [[{"collection": "docs", "id": " "}], [SEED]]),
    ("traverse", ("graph",), ["", "co\u0085de", GRAPH]),
    ("traverse", ("seeds",), [[{"collection": "", "id": "root"}], [SEED]]),
]


@pytest.fixture
def validators(http: TestClient) -> dict[str, jsonschema.Draft202012Validator]:
    document = http.get("/openapi.json").json()
    components = document["components"]["schemas"]
    root = {"components": {"schemas": components}}
    found = {}
    for name, (_, schema_name, _) in ENDPOINTS.items():
        schema = {**components[schema_name], "components": root["components"]}
        found[name] = jsonschema.Draft202012Validator(schema)
    return found


@pytest.mark.parametrize(("endpoint", "path", "values"), CASES)
def test_the_schema_accepts_exactly_what_the_server_accepts(
    http: TestClient,
    corpus: Corpus,
    validators: dict[str, jsonschema.Draft202012Validator],
    endpoint: str,
    path: tuple[str, ...],
    values: list[Any],
) -> None:
    url, _, base = ENDPOINTS[endpoint]
    verdicts = []
    for value in values:
        body = with_value(base, path, value)
        response = http.post(url, json=body, headers=corpus.auth("admin"))
        # Admitted: answered, or stopped later by its own budget (a tiny max_edges).
        assert response.status_code in (200, 400, 429), response.text
        admitted = response.status_code != 400
        by_schema = validators[endpoint].is_valid(body)
        verdicts.append((value if not isinstance(value, list) else len(value), by_schema))
        assert by_schema == admitted, (
            f"{'.'.join(path)} = {verdicts[-1][0]}: schema says {by_schema}, server "
            f"{response.status_code}: {response.text[:200]}"
        )
    assert {ok for _, ok in verdicts} == {True, False}  # each case crosses a bound


def _mutations() -> list[Any]:
    from datetime import UTC, datetime

    from cairn.store import commands as c
    from cairn.store import issue_api_key
    from cairn.store.policy import Capability, FieldPolicy, Grant

    space = c.VectorSpace("toy", 2, c.Metric.COSINE, "toy-model", "1")
    grant = Grant("main", "docs", frozenset({Capability.QUERY}))
    return [
        c.PutDocument("docs", "a", {"text": "x"}, 0, c.DocumentAccess("ann", "team")),
        c.PatchDocument("docs", "a", (c.PatchOperation("set", "/text", "y"),), 1),
        c.DeleteDocument("docs", "a"),
        c.PutVector("docs", "a", "embedding", (1.0, 0.5)),
        c.PutFact("code", c.EntityRef("docs", "a"), c.EntityRef("docs", "b"), "calls", None, {}),
        c.DeleteFact("code", "fact:1"),
        c.ConfigureCollection("docs", ("/text",), (c.VectorField("embedding", space),)),
        c.ConfigureGraph("code"),
        c.ConfigurePrincipal(
            "reader",
            (grant,),
            api_keys=(issue_api_key().verifier,),
            expires_at=datetime(2030, 1, 1, tzinfo=UTC),
        ),
        c.ConfigurePolicy("docs", (FieldPolicy("/secret", read_grant="secrets"),)),
    ]


def test_every_mutation_the_server_parses_is_valid_by_the_command_schema(
    http: TestClient,
) -> None:
    import json
    import uuid

    from cairn.store.commands import MUTATION_TYPES, CommandRequest, command_from_json

    components = http.get("/openapi.json").json()["components"]
    schema = {**components["schemas"]["CommandRequest"], "components": components}
    validator = jsonschema.Draft202012Validator(schema)
    mutations = _mutations()
    assert {m.kind for m in mutations} == set(MUTATION_TYPES)  # every kind is covered
    for mutation in mutations:
        body = json.loads(json.dumps(CommandRequest(uuid.uuid4(), "main", (mutation,)).to_json()))
        command_from_json(body)  # the server's parser takes it
        errors = [error.message for error in validator.iter_errors(body)]
        assert not errors, (mutation.kind, errors[:3])
        # The schema now says what a mutation holds (it used to accept any object with a kind).
        for broken in ({**body["mutations"][0], "kind": "put_everything"}, {"kind": mutation.kind}):
            assert not validator.is_valid({**body, "mutations": [broken]}), broken
