"""Endpoint-identity rules (spec §3), record forms, and the relation registry (spec §5)."""

from __future__ import annotations

import pytest

from cairn.errors import CanonicalizationError, InvariantError, ValidationError
from cairn.graph import REGISTRY, REGISTRY_ID, ConfidenceObservation, EndpointIdentity
from cairn.graph.model import IdentityStatus, Node, freeze, thaw
from cairn.graph.registry import LEGACY_RELATION, Policy, normalize_route_path


@pytest.mark.parametrize(
    ("status", "reasons"),
    [
        ("stable", ["source_location_derived"]),
        ("context_bound", []),
        ("context_bound", ["identity_policy_not_declared"]),
        ("unknown", []),
        ("unknown", ["source_ordinal_derived"]),
        ("legacy", []),
        ("legacy", ["legacy_identity_policy", "source_location_derived"]),
        ("stable-ish", []),
        ("stable", ["made_up_reason"]),
    ],
)
def test_inconsistent_status_reason_pairs_are_invariant_errors(
    status: str, reasons: list[str]
) -> None:
    with pytest.raises(InvariantError):
        EndpointIdentity(status, tuple(reasons))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("status", "reasons"),
    [
        ("stable", []),
        ("context_bound", ["collision_suffix_derived"]),
        ("context_bound", ["source_location_derived", "absolute_workspace_path_derived"]),
        ("context_bound", ["source_ordinal_derived", "adapter_local_synthetic_identity"]),
        ("unknown", ["identity_policy_not_declared"]),
        ("unknown", ["identity_policy_not_audited"]),
        ("legacy", ["legacy_identity_policy"]),
    ],
)
def test_consistent_pairs_round_trip(status: str, reasons: list[str]) -> None:
    identity = EndpointIdentity(status, tuple(reasons))  # type: ignore[arg-type]
    assert identity.status is IdentityStatus(status)
    assert EndpointIdentity.from_json(identity.to_json()) == identity
    assert identity.to_json()["reasons"] == sorted(reasons)


def test_malformed_identity_json() -> None:
    with pytest.raises(InvariantError):
        EndpointIdentity.from_json({"status": "stable"})


def test_node_rejects_blank_ids() -> None:
    with pytest.raises(ValidationError):
        Node(" ", "file", EndpointIdentity.stable())
    with pytest.raises(ValidationError):
        Node("x", "", EndpointIdentity.stable())


def test_freeze_thaw_and_rejections() -> None:
    value = {"b": [1, {"c": 2.5}], "a": None}
    frozen = freeze(value)
    assert thaw(frozen) == {"a": None, "b": [1, {"c": 2.5}]}
    with pytest.raises(CanonicalizationError):
        freeze({"x": float("nan")})
    with pytest.raises(CanonicalizationError):
        freeze({1: "x"})
    with pytest.raises(CanonicalizationError):
        freeze({"x": {1, 2}})


def test_confidence_observation_bounds() -> None:
    assert ConfidenceObservation.from_json({"value": 1, "method": "m"}).value == 1
    for bad in (1.5, -0.1, float("nan"), float("inf"), True, "0.5", 10**400):
        with pytest.raises(ValidationError):  # typed, never an OverflowError
            ConfidenceObservation(bad, "m")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="past float range"):
        ConfidenceObservation(10**5000, "m")  # its digits are never formatted
    with pytest.raises(ValidationError):
        ConfidenceObservation.from_json({"method": "m"})


CODE_GRAPH_RELATIONS = [
    "contains",
    "imports",
    "calls",
    "inherits",
    "decorates",
    "handles_route",
    "references",
    "mentions",
]


def test_registry_covers_the_code_graph_relations() -> None:
    assert REGISTRY.identifier == REGISTRY_ID == "cairn.relation-registry/1"
    for relation in CODE_GRAPH_RELATIONS:
        assert relation in REGISTRY
    assert REGISTRY.get("contains").policy is Policy.ENDPOINT_ONLY  # type: ignore[union-attr]
    assert REGISTRY.get("mentions").policy is Policy.ENDPOINT_ONLY  # type: ignore[union-attr]
    assert REGISTRY.get("calls").policy is Policy.BEHAVIOURAL  # type: ignore[union-attr]
    assert REGISTRY.get("nope") is None
    assert list(REGISTRY.names()) == sorted(REGISTRY.names())
    described = REGISTRY.to_json()
    assert {r["name"] for r in described["relations"]} == set(REGISTRY.names())


def test_handles_route_normalisation() -> None:
    spec = REGISTRY.get("handles_route")
    assert spec is not None
    disc = spec.discriminator(
        {
            "method": " get",
            "path": "users//<int:id>/",
            "framework": "Flask",
            "registration": "decorator",
        }
    )
    assert disc.completeness == "full"
    assert dict(disc.value) == {
        "method": "GET",
        "path": "/users/{id}",
        "framework": "flask",
        "registration": "decorator",
    }


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("/", "/"),
        ("", "/"),
        ("/users/:id", "/users/{id}"),
        ("/files/{path:path}", "/files/{path}"),
        ("/a/<slug>/b/", "/a/{slug}/b"),
        ("//x///y", "/x/y"),
    ],
)
def test_route_paths(raw: str, expected: str) -> None:
    assert normalize_route_path(raw) == expected


def test_endpoint_only_relations_ignore_nothing_silently() -> None:
    spec = REGISTRY.get("contains")
    assert spec is not None
    assert spec.discriminator(None).completeness == "endpoint_only"
    with pytest.raises(ValidationError):
        spec.discriminator({"anything": 1})


def test_legacy_relation_requires_both_fields() -> None:
    spec = REGISTRY.get(LEGACY_RELATION)
    assert spec is not None
    disc = spec.discriminator({"legacy_link_fingerprint": "abc", "legacy_duplicate_ordinal": 0})
    assert disc.completeness == "legacy"
    with pytest.raises(ValidationError):
        spec.discriminator({"legacy_link_fingerprint": "abc"})
    with pytest.raises(ValidationError):
        spec.discriminator({"legacy_link_fingerprint": "abc", "legacy_duplicate_ordinal": "0"})


def test_blank_text_fields_are_rejected() -> None:
    spec = REGISTRY.get("decorates")
    assert spec is not None
    with pytest.raises(ValidationError):
        spec.discriminator({"decorator": "  "})


def test_discriminator_cache_keeps_bool_and_int_apart() -> None:
    spec = REGISTRY.get("calls")
    assert spec is not None
    good = {
        "invocation": "call",
        "dispatch": "direct",
        "optional_chaining": True,
        "resolution": "resolved",
    }
    assert spec.discriminator(good).value["optional_chaining"] is True
    with pytest.raises(ValidationError, match="must be a bool"):
        spec.discriminator({**good, "optional_chaining": 1})
    # Cached results are shared but immutable.
    assert spec.discriminator(good) is spec.discriminator(dict(good))


def test_unhashable_discriminator_values_get_a_validation_error() -> None:
    spec = REGISTRY.get("decorates")
    assert spec is not None
    with pytest.raises(ValidationError):
        spec.discriminator({"decorator": ["app", "route"]})
