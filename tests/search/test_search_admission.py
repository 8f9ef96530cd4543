"""Admission (spec §4): every rule, at its exact boundary, before any read."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from cairn.canonical import canonical_bytes_reference
from cairn.errors import BudgetExceededError, ValidationError
from cairn.search.admission import admit_graph_search, admit_search, request_size
from cairn.search.contracts import (
    EntityRef,
    GraphExpansion,
    GraphRetriever,
    GraphScope,
    GraphSearchRequest,
    GraphWalkSpec,
    SearchRequest,
    VectorSpace,
)
from cairn.search.wire import to_wire

SEED = EntityRef("files", "a.py")
WALK = GraphWalkSpec("code", (SEED,))
TEXT = SearchRequest("main", "symbols", text_field="/text", text="needle")
BARE = SearchRequest("main", "symbols")


def graph(search: SearchRequest = TEXT, **parts: Any) -> GraphSearchRequest:
    return GraphSearchRequest(1, search, **parts)


def admits(request: GraphSearchRequest) -> bool:
    admit_graph_search(request)
    return True


def test_a_well_formed_request_is_admitted_and_sized() -> None:
    request = graph(scope=GraphScope(WALK))
    size = admit_graph_search(request)
    assert size == len(canonical_bytes_reference(to_wire(request)))
    assert size == request_size(request)


@pytest.mark.parametrize("version", [0, 2, True, "1"])
def test_version_must_be_one(version: Any) -> None:
    with pytest.raises(ValidationError, match="version"):
        admit_graph_search(replace(graph(scope=GraphScope(WALK)), version=version))


def test_needs_a_graph_operator() -> None:
    with pytest.raises(ValidationError, match="at least one of"):
        admit_graph_search(graph())


def test_text_and_vector_may_be_omitted_only_with_a_retriever() -> None:
    assert admits(graph(BARE, retriever=GraphRetriever(WALK)))
    with pytest.raises(ValidationError, match="retriever"):
        admit_graph_search(graph(BARE, scope=GraphScope(WALK)))
    with pytest.raises(ValidationError, match="retriever"):
        admit_graph_search(graph(BARE, expansion=GraphExpansion("code")))


@pytest.mark.parametrize(
    ("field", "good", "bad"),
    [
        ("max_depth", [0, 16], [-1, 17, True, 1.0]),
        ("max_vertices", [1, 10_000], [0, 10_001]),
        ("max_edges", [1, 50_000], [0, 50_001]),
    ],
)
def test_walk_caps_exact_boundaries(field: str, good: list[int], bad: list[Any]) -> None:
    for value in good:
        assert admits(graph(scope=GraphScope(replace(WALK, **{field: value}))))
        assert admits(graph(expansion=replace(GraphExpansion("code"), **{field: value})))
    for value in bad:
        with pytest.raises(ValidationError, match=field):
            admit_graph_search(graph(retriever=GraphRetriever(replace(WALK, **{field: value}))))
        with pytest.raises(ValidationError, match=field):
            admit_graph_search(graph(expansion=replace(GraphExpansion("code"), **{field: value})))


def test_seed_rules() -> None:
    with pytest.raises(ValidationError, match="non-empty"):
        admit_graph_search(graph(scope=GraphScope(replace(WALK, seeds=()))))
    with pytest.raises(ValidationError, match="blank"):
        admit_graph_search(graph(scope=GraphScope(replace(WALK, seeds=(EntityRef("files", " "),)))))
    with pytest.raises(ValidationError, match="entity refs"):
        admit_graph_search(graph(scope=GraphScope(replace(WALK, seeds=(("files", "a"),)))))
    three = tuple(EntityRef("files", f"{i}.py") for i in range(3))
    assert admits(graph(scope=GraphScope(replace(WALK, seeds=three, max_vertices=3))))
    with pytest.raises(ValidationError, match="max_vertices"):
        admit_graph_search(graph(scope=GraphScope(replace(WALK, seeds=three, max_vertices=2))))


def test_label_rules() -> None:
    assert admits(graph(scope=GraphScope(replace(WALK, labels=()))))
    labels = tuple(f"rel{i}" for i in range(64))
    assert admits(graph(scope=GraphScope(replace(WALK, labels=labels))))
    with pytest.raises(ValidationError, match="at most 64"):
        admit_graph_search(graph(scope=GraphScope(replace(WALK, labels=(*labels, "one-more")))))
    with pytest.raises(ValidationError, match="control"):
        admit_graph_search(graph(expansion=GraphExpansion("code", labels=("bad\x00",))))


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"limit": 0}, "limit"),
        ({"limit": 1001}, "limit"),
        ({"fusion_k": 0}, "fusion_k"),
        ({"text_weight": -0.5}, "text_weight"),
        ({"text_weight": float("nan")}, "text_weight"),
        ({"vector_weight": float("inf")}, "vector_weight"),
        ({"text_weight": 10**400}, "text_weight"),  # an int no float can hold
        ({"text": "x" * 4097}, "4096"),
        ({"text": None}, "together"),
        ({"text_field": None}, "together"),
        ({"collection": ""}, "blank"),
        ({"database": "x" * 257}, "256"),
        ({"explain": 1}, "explain"),
        ({"allowed_ids": ("ok", "")}, "blank"),
    ],
)
def test_search_field_rules(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        admit_graph_search(graph(replace(TEXT, **changes), scope=GraphScope(WALK)))


def test_search_field_boundaries_pass() -> None:
    for changes in (
        {"limit": 1},
        {"limit": 1000},
        {"fusion_k": 1},
        {"text": "é" * 2048},
        {"text_weight": 0.0},
    ):
        assert admits(graph(replace(TEXT, **changes), scope=GraphScope(WALK)))


def test_retriever_weight_rule() -> None:
    assert admits(graph(retriever=GraphRetriever(WALK, 0.0)))
    with pytest.raises(ValidationError, match=r"retriever\.weight"):
        admit_graph_search(graph(retriever=GraphRetriever(WALK, -1.0)))


SPACE = VectorSpace("s", 2, "cosine", "m", "1")
VECTOR = replace(BARE, vector_field="/embedding", vector=(1.0, 0.0), space=SPACE)


def test_vector_rules() -> None:
    assert admits(graph(VECTOR, scope=GraphScope(WALK)))
    assert admit_search(VECTOR) > 0
    with pytest.raises(ValidationError, match="dimension 2"):
        admit_search(replace(VECTOR, vector=(1.0,)))
    with pytest.raises(ValidationError, match="finite"):
        admit_search(replace(VECTOR, vector=(1.0, float("nan"))))
    with pytest.raises(ValidationError, match="float32"):
        admit_search(replace(VECTOR, vector=(1.0, -1e39)))
    with pytest.raises(ValidationError, match="float32"):
        admit_search(replace(VECTOR, vector=(1.0, -(10**400))))  # past float range: not a crash
    assert admit_search(replace(VECTOR, vector=(1, -(2**53 - 1)))) > 0  # exact integers pass
    with pytest.raises(ValidationError, match="serialisable"):  # canonical JSON refuses it
        admit_search(replace(VECTOR, vector=(1, -(10**38))))
    assert admit_search(replace(VECTOR, vector=(1.0, -3.4028234663852886e38))) > 0
    with pytest.raises(ValidationError, match="together"):
        admit_search(replace(VECTOR, space=None))
    with pytest.raises(ValidationError, match="together"):
        admit_search(replace(VECTOR, vector_field=None))
    with pytest.raises(ValidationError, match="dimension"):
        admit_search(replace(VECTOR, space=VectorSpace("s", 0, "cosine", "m", "1"), vector=()))


def test_plain_search_needs_text_or_vector() -> None:
    with pytest.raises(ValidationError, match="omitted"):
        admit_search(BARE)


def test_allowed_ids_count_is_a_budget() -> None:
    ids = ("x",) * 10_000  # short IDs keep the request under the byte cap
    assert admits(graph(replace(TEXT, allowed_ids=ids), scope=GraphScope(WALK)))
    with pytest.raises(BudgetExceededError, match="allowed_ids"):
        admit_graph_search(
            graph(replace(TEXT, allowed_ids=(*ids, "one-more")), scope=GraphScope(WALK))
        )


def padded(target: int) -> GraphSearchRequest:
    """A request whose reference-canonical wire form is exactly ``target`` bytes."""
    base = graph(replace(TEXT, allowed_ids=("",)), scope=GraphScope(WALK))
    overhead = len(canonical_bytes_reference(to_wire(base)))
    remaining = target - overhead
    ids = ["x" * 200] * (remaining // 203)  # each extra ID adds 200 chars + quotes + comma
    used = len(ids) * 203
    last = "y" * (remaining - used)
    request = graph(replace(TEXT, allowed_ids=(*ids, last or "z")), scope=GraphScope(WALK))
    assert len(canonical_bytes_reference(to_wire(request))) == target
    return request


def test_request_size_boundary_is_exact() -> None:
    assert admit_graph_search(padded(65_536)) == 65_536
    with pytest.raises(BudgetExceededError, match="65536"):
        admit_graph_search(padded(65_537))


def test_wrong_record_types_are_validation_errors() -> None:
    with pytest.raises(ValidationError):
        admit_graph_search("request")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        admit_graph_search(graph(scope=WALK))  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        admit_graph_search(graph(retriever=GraphScope(WALK)))  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        admit_graph_search(graph(expansion=GraphScope(WALK)))  # type: ignore[arg-type]
