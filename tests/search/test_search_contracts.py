"""Contracts: aliases are unique and well-formed; every record round-trips through JSON."""

from __future__ import annotations

import dataclasses
import json

import pytest

from cairn.errors import ValidationError
from cairn.search import contracts
from cairn.search.aliases import ALIAS_PATTERN, CONTRACT_ALIASES, alias_of, kebab
from cairn.search.contracts import (
    BranchContribution,
    DocumentResult,
    EntityRef,
    GraphContextDocument,
    GraphExpansion,
    GraphExpansionResult,
    GraphRetriever,
    GraphScope,
    GraphSearchRequest,
    GraphSearchResult,
    GraphWalkSpec,
    QueryRequest,
    RankedDocument,
    SearchExplanation,
    SearchRequest,
    SqlGraphSearchRequest,
    VectorSpace,
)
from cairn.search.wire import contract_types, from_wire, to_wire

SPACE = VectorSpace("space-a", 2, "cosine", "hash", "1")
WALK = GraphWalkSpec("code", (EntityRef("files", "a.py"), EntityRef("symbols", "f")), 2, 50, 80, ())
SEARCH = SearchRequest(
    "main",
    "symbols",
    text_field="/text",
    text="needle",
    vector_field="/embedding",
    vector=(0.5, -1.0),
    space=SPACE,
    limit=7,
    text_weight=2.0,
    vector_weight=0.0,
    fusion_k=10,
    allowed_ids=("x", "y"),
    explain=True,
)
DOC = DocumentResult(EntityRef("symbols", "f"), 3, {"name": "f", "tags": ["a"]}, True, ("/secret",))

SAMPLES = [
    EntityRef("files", "a.py"),
    SPACE,
    WALK,
    GraphScope(WALK),
    GraphRetriever(WALK, 0.25),
    GraphExpansion("code", 1, 10, 20, ("calls", "imports")),
    SEARCH,
    GraphSearchRequest(1, SEARCH, GraphScope(WALK), GraphRetriever(WALK), GraphExpansion("code")),
    QueryRequest("SEARCH FROM x", {"v": [1, 2], "s": "t"}),
    SqlGraphSearchRequest(QueryRequest("SEARCH FROM x")),
    DOC,
    BranchContribution("text", 1, 2.5, 1.0, 1 / 61),
    SearchExplanation(
        60,
        (BranchContribution("graph", 2, 0.5, 1.0, 1 / 62),),
        0.5,
        hops=1,
        path=(EntityRef("files", "a.py"), EntityRef("symbols", "f")),
    ),
    RankedDocument(DOC, 0.03, None),
    GraphContextDocument(DOC, 2),
    GraphExpansionResult((GraphContextDocument(DOC, 1),)),
    GraphSearchResult((RankedDocument(DOC, 0.1),), GraphExpansionResult(())),
]


def test_aliases_are_unique_well_formed_and_cover_every_contract() -> None:
    aliases = list(CONTRACT_ALIASES.values())
    assert len(aliases) == len(set(aliases))
    for name, alias in CONTRACT_ALIASES.items():
        assert ALIAS_PATTERN.match(alias), alias
        assert alias == f"cairn.contract.{kebab(name)}.v1"
        assert dataclasses.is_dataclass(getattr(contracts, name))
    assert alias_of("GraphSearchRequest") == "cairn.contract.graph-search-request.v1"
    assert alias_of("SqlGraphSearchRequest") == "cairn.contract.sql-graph-search-request.v1"
    assert {type(sample).__name__ for sample in SAMPLES} == set(CONTRACT_ALIASES)
    assert set(contract_types()) == set(aliases)


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda s: type(s).__name__)
def test_round_trip_through_json_text(sample: object) -> None:
    wire = to_wire(sample)
    assert wire["type"] == alias_of(type(sample).__name__)
    text = json.dumps(wire)
    assert from_wire(type(sample), json.loads(text)) == sample


def test_records_are_immutable_and_coerce_lists() -> None:
    walk = GraphWalkSpec("code", [EntityRef("files", "a")], labels=["calls"])  # type: ignore[arg-type]
    assert walk.seeds == (EntityRef("files", "a"),)
    assert walk.labels == ("calls",)
    with pytest.raises(dataclasses.FrozenInstanceError):
        walk.graph = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        DOC.body["name"] = "g"  # type: ignore[index]
    assert DOC.body["tags"] == ("a",)


def test_defaults_match_the_spec() -> None:
    walk = GraphWalkSpec("g", (EntityRef("c", "i"),))
    assert (walk.max_depth, walk.max_vertices, walk.max_edges, walk.labels) == (3, 1000, 5000, None)
    expansion = GraphExpansion("g")
    assert (expansion.max_depth, expansion.max_vertices, expansion.max_edges) == (1, 1000, 5000)
    search = SearchRequest("db", "c")
    assert (search.limit, search.text_weight, search.vector_weight, search.fusion_k) == (
        10,
        1.0,
        1.0,
        60,
    )
    assert search.allowed_ids is None and search.explain is False
    assert GraphRetriever(walk).weight == 1.0
    assert GraphExpansionResult(()).completeness == "selected_hits"
    sql = SqlGraphSearchRequest(QueryRequest("x"))
    assert sql.version == 1 and sql.query.cursor is None and sql.query.allow_full_scan is True


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"type": "cairn.contract.search-request.v1", "database": "db"}, "collection is required"),
        ({"database": "db", "collection": "c", "bogus": 1}, "unknown fields"),
        ({"database": "db", "collection": 5}, "must be str"),
        ({"database": "db", "collection": "c", "limit": True}, "must be int"),
        ({"database": "db", "collection": "c", "limit": 1.5}, "must be int"),
        ({"database": "db", "collection": "c", "vector": "x"}, "must be an array"),
        # Any-size integers (JSON parsers other than orjson): typed, not OverflowError.
        ({"database": "db", "collection": "c", "text_weight": 10**400}, "float can hold"),
        ({"database": "db", "collection": "c", "vector": [1.0, -(10**400)]}, "float can hold"),
        ({"type": "cairn.contract.graph-scope.v1", "database": "db"}, "expected type"),
        (["not", "an", "object"], "must be a JSON object"),
        (
            {
                "database": "db",
                "collection": "c",
                "space": {
                    "id": "s",
                    "dimension": 2,
                    "metric": "hamming",
                    "model": "m",
                    "version": "1",
                },
            },
            "metric",
        ),
    ],
)
def test_strict_decoding(payload: object, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        from_wire(SearchRequest, payload)


def test_weights_accept_integers_on_the_wire() -> None:
    decoded = from_wire(SearchRequest, {"database": "db", "collection": "c", "text_weight": 2})
    assert decoded.text_weight == 2.0 and type(decoded.text_weight) is float


def test_non_contracts_are_refused() -> None:
    with pytest.raises(ValidationError):
        to_wire(object())
    with pytest.raises(ValidationError):
        from_wire(dict, {})


def test_non_json_parameters_are_kept_for_admission_to_name() -> None:
    query = QueryRequest("x", {"bad": float("nan")})
    with pytest.raises(TypeError):
        query.parameters["bad"] = 1  # type: ignore[index]
