"""Load verification: every kind of damage or forgery gives the right typed error."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest
from artifact_support import FIXED_TIME, body_of, forge, payload_of, reseal, rich_graph
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cairn.artifact import TOMBSTONE, decode_artifact, encode_artifact, read_artifact
from cairn.artifact.limits import ARTIFACT_HEADER
from cairn.errors import (
    ArtifactCorruptError,
    ArtifactError,
    ArtifactIncompatibleError,
    ArtifactMovedError,
    BudgetExceededError,
    LegacyArtifactError,
)
from cairn.graph import EndpointIdentity, SemanticGraph

GOOD = encode_artifact(rich_graph(), generated_at=FIXED_TIME)
PAYLOAD = payload_of(GOOD)


def edited(change: Any) -> bytes:
    """A correctly canonicalised and sealed artifact whose payload ``change`` edited."""
    payload = copy.deepcopy(PAYLOAD)
    change(payload)
    return forge(payload)


def test_the_fixture_itself_verifies() -> None:
    assert decode_artifact(GOOD).graph == rich_graph()
    assert decode_artifact(forge(copy.deepcopy(PAYLOAD))).graph == rich_graph()


# ------------------------------------------------------------------ header
@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"{}",
        b"CAIRN_GRAPH_ARTIFACt/2\n" + body_of(GOOD) + b"\n",
        b" " + GOOD,
        body_of(GOOD) + b"\n",
        ARTIFACT_HEADER,
    ],
)
def test_corrupt_header_is_corrupt(data: bytes) -> None:
    with pytest.raises(ArtifactCorruptError):
        decode_artifact(data)


@pytest.mark.parametrize("header", [b"CAIRN_GRAPH_ARTIFACT/3\n", b"CAIRN_GRAPH_ARTIFACT/1\n"])
def test_unknown_header_version_is_incompatible(header: bytes) -> None:
    with pytest.raises(ArtifactIncompatibleError, match="unsupported artifact header"):
        decode_artifact(header + body_of(GOOD) + b"\n")


def test_tombstone_is_moved() -> None:
    with pytest.raises(ArtifactMovedError):
        decode_artifact(TOMBSTONE)


# ------------------------------------------------------------------- body
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(min_value=len(ARTIFACT_HEADER), max_value=len(GOOD) - 1))
def test_truncated_body_is_corrupt(cut: int) -> None:
    with pytest.raises(ArtifactCorruptError):
        decode_artifact(GOOD[:cut])


def test_trailing_data_is_corrupt() -> None:
    with pytest.raises(ArtifactCorruptError):
        decode_artifact(GOOD + b"\n")
    with pytest.raises(ArtifactCorruptError):
        decode_artifact(GOOD[:-1] + b" \n")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(min_value=len(ARTIFACT_HEADER), max_value=len(GOOD) - 2), st.integers(1, 255))
def test_any_flipped_byte_is_refused(position: int, mask: int) -> None:
    damaged = bytearray(GOOD)
    damaged[position] ^= mask
    with pytest.raises(ArtifactError):
        decode_artifact(bytes(damaged))


def test_a_flipped_byte_outside_ids_is_caught_by_the_payload_digest() -> None:
    damaged = GOOD.replace(b"Application core", b"Application cord")
    with pytest.raises(ArtifactCorruptError, match="digest"):
        decode_artifact(damaged)


def test_non_canonical_body_is_corrupt() -> None:
    pretty = ARTIFACT_HEADER + orjson.dumps(PAYLOAD, option=orjson.OPT_INDENT_2) + b"\n"
    with pytest.raises(ArtifactCorruptError):
        decode_artifact(pretty)
    unsorted_keys = ARTIFACT_HEADER + orjson.dumps(PAYLOAD) + b"\n"  # insertion order
    with pytest.raises(ArtifactCorruptError):
        decode_artifact(unsorted_keys)


def test_not_json_and_not_an_object_are_corrupt() -> None:
    with pytest.raises(ArtifactCorruptError, match="not valid JSON"):
        decode_artifact(ARTIFACT_HEADER + b"{nope\n")
    with pytest.raises(ArtifactCorruptError, match="not a JSON object"):
        decode_artifact(ARTIFACT_HEADER + b"[1,2]\n")


# ------------------------------------------------------------------ IDs
def _first(section: str) -> str:
    value: str = PAYLOAD[section]["id"][0]
    return value


def _flip_id(old: str) -> str:
    return old[:-1] + ("0" if old[-1] != "0" else "1")


@pytest.mark.parametrize("section", ["facts", "occurrences"])
def test_flipped_byte_in_an_id_fails_re_derivation(section: str) -> None:
    old = _first(section)
    new = _flip_id(old)
    # Replace the ID everywhere it is referenced and reseal the digest, so only the
    # re-derivation of the ID from its content can notice.
    damaged = reseal(GOOD.replace(old.encode(), new.encode()))
    with pytest.raises(ArtifactCorruptError, match="does not match its content"):
        decode_artifact(damaged)


def test_flipped_id_is_caught_in_parallel_workers_too(monkeypatch) -> None:
    import cairn.artifact.reader as reader_module

    monkeypatch.setattr(reader_module, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(reader_module, "VERIFY_CHUNK_OBJECTS", 1)
    old = _first("occurrences")
    damaged = reseal(GOOD.replace(old.encode(), _flip_id(old).encode()))
    with pytest.raises(ArtifactCorruptError, match="does not match its content"):
        decode_artifact(damaged, parallel=True)


def test_a_changed_discriminator_is_caught_by_fact_identity() -> None:
    def change(payload: dict[str, Any]) -> None:
        for entry in payload["discriminators"]:
            if entry["value"].get("invocation") == "construct":
                entry["value"]["dispatch"] = "method"

    with pytest.raises(ArtifactCorruptError, match="does not match its content"):
        decode_artifact(edited(change))


def test_a_moved_occurrence_is_caught_by_occurrence_identity() -> None:
    def change(payload: dict[str, Any]) -> None:
        ranges = payload["occurrences"]["source_range"]
        index = next(i for i, value in enumerate(ranges) if value is not None)
        ranges[index] = [ranges[index][0] + 1, 5, ranges[index][0] + 1, 20]

    with pytest.raises(ArtifactCorruptError, match="does not match its content"):
        decode_artifact(edited(change))


# --------------------------------------------------------------- versions
@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("graph_artifact", 3),
        ("fact_identity", 2),
        ("occurrence_identity", 0),
        ("relation_registry", "cairn.relation-registry/2"),
        ("endpoint_identity_policy", "cairn.endpoint-identity/9"),
        ("receipt_schema", "1"),
        ("fact_identity", True),
    ],
)
def test_unknown_version_is_incompatible(field: str, value: Any) -> None:
    with pytest.raises(ArtifactIncompatibleError, match=field):
        decode_artifact(edited(lambda payload: payload["versions"].update({field: value})))


@pytest.mark.parametrize(
    "field",
    [
        "graph_artifact",
        "fact_identity",
        "occurrence_identity",
        "relation_registry",
        "endpoint_identity_policy",
        "receipt_schema",
    ],
)
def test_missing_version_field_is_incompatible(field: str) -> None:
    with pytest.raises(ArtifactIncompatibleError, match="lacks version fields"):
        decode_artifact(edited(lambda payload: payload["versions"].pop(field)))


def test_missing_or_extra_versions_are_incompatible() -> None:
    with pytest.raises(ArtifactIncompatibleError, match="no versions"):
        decode_artifact(edited(lambda payload: payload.pop("versions")))
    with pytest.raises(ArtifactIncompatibleError, match="unknown version fields"):
        decode_artifact(edited(lambda payload: payload["versions"].update(extra=1)))


# ------------------------------------------------------------ structure
def _set(path: tuple[Any, ...], value: Any) -> Any:
    def change(payload: dict[str, Any]) -> None:
        target = payload
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return change


@pytest.mark.parametrize(
    "change",
    [
        lambda p: p.pop("counts"),
        lambda p: p.update(surprise=1),
        _set(("counts", "fact_count"), 1),
        _set(("integrity_receipt", "status"), "valid"),
        _set(
            ("integrity_receipt", "endpoint_identity", "fact_pair_counts", "stable", "stable"), 99
        ),
        _set(("integrity_receipt",), []),
        _set(("admission", "admission_counts", "new_fact"), -1),
        _set(("admission", "admission_counts"), {"new_fact": 1}),
        _set(("admission",), {}),
        _set(("directed",), "yes"),
        _set(("generated_at",), ""),
        _set(("repository_revision",), 7),
        _set(("community_labels",), {"c": 1}),
        _set(("provenance",), {"checkout_root": "/home/me/repo"}),
        _set(("nodes", "attributes", 0), {"path": "/abs/app.py"}),
        _set(("nodes", "attributes", 0), ["not", "an", "object"]),
        _set(("nodes", "identity", 0), 99),
        _set(("nodes", "kind"), []),
        _set(("nodes", "extra"), []),
        _set(("facts", "relation", 0), "unregistered_relation"),
        _set(("facts", "direction", 0), "undirected"),
        _set(("facts", "discriminator", 0), -1),
        _set(("facts", "occurrence_ids"), "nope"),
        _set(("occurrences", "source_file", 0), "../outside.py"),
        _set(("occurrences", "source_range", 0), [9, 9, 1, 1]),
        _set(("occurrences", "site_kind", 0), 5),
        _set(("occurrences", "owner", 0), 42),
        _set(("occurrences", "diagnostics", 0), "x"),
        _set(
            ("occurrences", "confidence_observations", 0),
            [{"value": 2, "method": "m", "observer": None}],
        ),
        _set(
            ("endpoint_identities", 0), {"status": "stable", "reasons": ["legacy_identity_policy"]}
        ),
        _set(("discriminators",), []),
        _set(("occurrence_owners",), [{"adapter_id": "x"}]),
        _set(("hyperedges", 0, "members"), ["no-such-node"]),
        _set(("hyperedges",), {}),
        lambda p: p["endpoint_identities"].reverse(),
        lambda p: p["nodes"]["id"].reverse(),
    ],
)
def test_malformed_or_inconsistent_payloads_are_corrupt(change: Any) -> None:
    with pytest.raises(ArtifactCorruptError):
        decode_artifact(edited(change))


def test_unused_table_rows_are_corrupt() -> None:
    def change(payload: dict[str, Any]) -> None:
        payload["occurrence_owners"].append(
            {"adapter_id": "zzz", "strategy": "unused", "adapter_version": None}
        )

    with pytest.raises(ArtifactCorruptError, match="rows no record uses"):
        decode_artifact(edited(change))


def test_unnormalised_discriminator_is_corrupt() -> None:
    def change(payload: dict[str, Any]) -> None:
        for entry in payload["discriminators"]:
            if entry["value"].get("framework") == "flask":
                entry["value"]["method"] = "get"  # the registry upper-cases methods

    with pytest.raises(ArtifactCorruptError):
        decode_artifact(edited(change))


def test_size_cap_is_enforced(tmp_path) -> None:
    path = tmp_path / "graph.cairn"
    path.write_bytes(GOOD)
    with pytest.raises(BudgetExceededError):
        read_artifact(path, max_bytes=len(GOOD) - 1)
    assert read_artifact(path, max_bytes=len(GOOD)).graph == rich_graph()


def test_strict_mode_refuses_legacy_content_in_v2() -> None:
    graph = SemanticGraph()
    graph.add_node("a", "legacy", identity=EndpointIdentity.legacy())
    data = encode_artifact(graph, generated_at=FIXED_TIME)
    loaded = decode_artifact(data)
    assert loaded.degraded and loaded.warnings == ("legacy_parallel_facts_unrecoverable",)
    with pytest.raises(LegacyArtifactError):
        decode_artifact(data, strict=True)
    assert decode_artifact(encode_artifact(SemanticGraph()), strict=True).degraded is False
