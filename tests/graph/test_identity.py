"""Identity payloads and IDs: the identity fast path equals the reference canonicaliser."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cairn.canonical import MAX_SAFE_INTEGER, canonical_bytes_reference
from cairn.errors import ValidationError
from cairn.graph.identity import (
    FACT_ID_PREFIX,
    check_repo_path,
    fact_identity_payload,
    id_from_payload,
    identity_bytes,
    occurrence_identity_payload,
    ordered_endpoints,
)
from cairn.graph.model import Direction, SourceRange
from cairn.graph.registry import REGISTRY

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-MAX_SAFE_INTEGER, max_value=MAX_SAFE_INTEGER)
    | st.text(max_size=12)
)
payloads = st.dictionaries(
    st.text(max_size=10),
    st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner),
        max_leaves=12,
    ),
    max_size=10,
)


@settings(max_examples=500, deadline=None)
@given(payloads)
def test_identity_bytes_equal_the_reference(payload: dict[str, object]) -> None:
    assert identity_bytes(payload) == canonical_bytes_reference(payload)


def test_fact_id_is_prefix_plus_full_sha256_of_reference_bytes() -> None:
    spec = REGISTRY.get("calls")
    assert spec is not None
    disc = spec.discriminator({"invocation": "call"})
    payload = fact_identity_payload(Direction.DIRECTED, "a", "b", "calls", disc)
    fact_id, witness = id_from_payload(FACT_ID_PREFIX, payload)
    expected = canonical_bytes_reference(payload)
    assert witness == expected
    assert fact_id == "sf_" + hashlib.sha256(expected).hexdigest()
    assert payload["discriminator_completeness"] == "partial"
    assert set(payload) == {
        "identity_schema_version",
        "direction",
        "source",
        "target",
        "relation",
        "discriminator_registry",
        "discriminator_policy_version",
        "discriminator_completeness",
        "discriminator_value",
    }


def test_occurrence_payload_excludes_confidence_versions_and_provenance() -> None:
    payload = occurrence_identity_payload(
        "sf_x", "python", "ast", "a.py", SourceRange(1, 1, 1, 2), None, None, "call", None
    )
    assert payload["source_range"] == [1, 1, 1, 2]
    for excluded in ("confidence", "adapter_version", "provenance", "metadata"):
        assert excluded not in payload


def test_undirected_endpoints_are_sorted() -> None:
    assert ordered_endpoints(Direction.UNDIRECTED, "b", "a") == ("a", "b")
    assert ordered_endpoints(Direction.DIRECTED, "b", "a") == ("b", "a")


def test_unicode_node_ids_use_the_general_path_and_nfc() -> None:
    spec = REGISTRY.get("contains")
    assert spec is not None
    disc = spec.discriminator(None)
    composed = fact_identity_payload(Direction.DIRECTED, "caf\u00e9", "b", "contains", disc)
    decomposed = fact_identity_payload(Direction.DIRECTED, "cafe\u0301", "b", "contains", disc)
    assert id_from_payload(FACT_ID_PREFIX, composed) == id_from_payload(FACT_ID_PREFIX, decomposed)


def test_registry_integers_are_bounded() -> None:
    spec = REGISTRY.get("legacy_link")
    assert spec is not None
    with pytest.raises(ValidationError):
        spec.discriminator(
            {"legacy_link_fingerprint": "f", "legacy_duplicate_ordinal": MAX_SAFE_INTEGER + 1}
        )


def test_repo_paths_are_remembered_only_when_valid() -> None:
    assert check_repo_path("src/ok.py", "f") == "src/ok.py"
    assert check_repo_path("src/ok.py", "f") == "src/ok.py"
    assert check_repo_path(None, "f") is None
    for bad in ("/x", "../x", "x//y"):
        with pytest.raises(ValidationError):
            check_repo_path(bad, "f")
        with pytest.raises(ValidationError):
            check_repo_path(bad, "f")
