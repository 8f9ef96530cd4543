"""graph.cairn v2: byte-identical round trips, the canonical oracle, and what survives."""

from __future__ import annotations

import itertools
import random

import orjson
import pytest
from artifact_support import FIXED_TIME, body_of, build, graph_specs, rich_graph
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cairn.artifact import (
    ARTIFACT_HEADER,
    ENDPOINT_IDENTITY_POLICY,
    FORMAT_V2,
    artifact_payload,
    decode_artifact,
    encode_artifact,
    read_artifact,
    write_artifact,
)
from cairn.artifact.tally import receipt_from_pairs
from cairn.canonical import canonical_bytes_reference
from cairn.errors import CanonicalizationError, ValidationError
from cairn.graph import REGISTRY_ID, EndpointIdentity, SemanticGraph, build_receipt
from cairn.graph.model import SourceRange

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(graph_specs())
def test_write_read_write_is_byte_identical(spec: dict) -> None:
    graph = build(spec)
    first = encode_artifact(graph, generated_at=FIXED_TIME, repository_revision="abc123")
    loaded = decode_artifact(first)
    assert loaded.graph == graph
    second = encode_artifact(
        loaded.graph, generated_at=loaded.generated_at, repository_revision="abc123"
    )
    assert second == first


@SETTINGS
@given(graph_specs())
def test_bytes_equal_the_reference_canonical_form(spec: dict) -> None:
    # Oracle: the pure-Python reference canonicaliser over the plain payload, which is
    # built from each record's own to_json-equivalent fields.
    graph = build(spec)
    data = encode_artifact(graph, generated_at=FIXED_TIME)
    payload = artifact_payload(graph, generated_at=FIXED_TIME)
    payload["payload_sha256"] = orjson.loads(body_of(data))["payload_sha256"]
    assert data == ARTIFACT_HEADER + canonical_bytes_reference(payload) + b"\n"


@SETTINGS
@given(graph_specs(), st.randoms(use_true_random=False))
def test_same_graph_same_bytes_whatever_the_insertion_order(spec: dict, rng: random.Random) -> None:
    order = list(range(len(spec["facts"])))
    rng.shuffle(order)
    assert encode_artifact(build(spec), generated_at=FIXED_TIME) == encode_artifact(
        build(spec, order), generated_at=FIXED_TIME
    )


@SETTINGS
@given(graph_specs())
def test_receipt_fast_path_equals_build_receipt(spec: dict) -> None:
    graph = build(spec)
    payload = artifact_payload(graph, generated_at=FIXED_TIME)
    assert payload["integrity_receipt"] == build_receipt(graph)


def test_receipt_from_pairs_counts_each_fact_once() -> None:
    stable, legacy = EndpointIdentity.stable(), EndpointIdentity.legacy()
    from collections import Counter

    receipt = receipt_from_pairs(Counter({(0, 1): 3, (1, 1): 2}), [stable, legacy], {"x": 4})
    cells = receipt["endpoint_identity"]["fact_pair_counts"]
    assert cells["stable"]["legacy"] == 3
    assert cells["legacy"]["legacy"] == 2
    assert sum(sum(row.values()) for row in cells.values()) == 5
    assert receipt["endpoint_identity"]["reason_fact_counts"] == {"legacy_identity_policy": 5}
    assert receipt["storage_admission"]["unregistered_relation_admissions"] == {"x": 4}


def test_everything_survives_a_round_trip(tmp_path) -> None:
    graph = rich_graph()
    path = tmp_path / "graph.cairn"
    write_artifact(path, graph, generated_at=FIXED_TIME, provenance={"producer": "test"})
    loaded = read_artifact(path)
    again = loaded.graph
    assert again == graph
    assert loaded.source_format == FORMAT_V2
    assert loaded.provenance == {"producer": "test"}
    assert dict(loaded.integrity_receipt) is not None
    assert (
        loaded.integrity_receipt["endpoint_identity"]["fact_pair_counts"]
        == (build_receipt(graph)["endpoint_identity"]["fact_pair_counts"])
    )
    main, helper = "function:src/app.py#main", "function:src/app.py#helper"
    # Discriminators: two facts on one pair, one call and one construct.
    invocations = sorted(
        f.discriminator.value["invocation"] for f in again.facts_between(main, helper, ["calls"])
    )
    assert invocations == ["call", "construct"]
    partial = again.facts_between(main, "external:python:requests.get")[0]
    assert partial.discriminator.completeness == "partial"
    assert partial.discriminator.reasons == ("resolution_missing",)
    route = again.facts_by_relation("handles_route")[0]
    assert route.discriminator.value["path"] == "/users/{id}"
    # Occurrences, provenance, confidence, metadata variants and diagnostics.
    call = next(
        f
        for f in again.facts_between(main, helper, ["calls"])
        if f.discriminator.value["invocation"] == "call"
    )
    occurrences = again.occurrences_of(call.id)
    assert len(occurrences) == 3
    first = next(o for o in occurrences if o.source_range == SourceRange(3, 5, 3, 20))
    assert [dict(p) for p in first.provenance] == [{"pass": 2}, {"rule": "ast.Call"}]
    assert sorted(o.value for o in first.confidence_observations) == [0.00001, 0.9, 1.0]
    assert first.metadata["args"] == (1, 2.5)
    conflicted = next(o for o in occurrences if o.source_range == SourceRange(20, 5, 20, 20))
    assert len(conflicted.metadata_variants) == 2
    assert "metadata_conflict" in conflicted.diagnostics
    assert call.annotations == {"note": "hot path"}
    # Hyperedges, community labels, admission counters.
    assert [h.id for h in again.hyperedges()] == ["community:0", "module:src"]
    assert again.hyperedges()[0].attributes == {"score": 0.5, "size": 2}
    assert dict(again.community_labels) == {
        "community:0": "Application core",
        "community:1": "Docs",
    }
    assert again.unregistered_relation_admissions == {"no_such_relation": 1}
    assert again.admission_counts == graph.admission_counts
    # Qualifications of nodes and fact endpoints.
    assert again.node(helper).identity == EndpointIdentity.context_bound("source_location_derived")
    assert again.node("external:python:requests.get").identity == EndpointIdentity.undeclared()
    assert again.facts_by_relation("related_to")[0].source == helper  # sorted endpoints


def test_payload_declares_every_version_and_is_ordered() -> None:
    graph = rich_graph()
    payload = orjson.loads(body_of(encode_artifact(graph, generated_at=FIXED_TIME)))
    assert payload["versions"] == {
        "graph_artifact": 2,
        "fact_identity": 1,
        "occurrence_identity": 1,
        "relation_registry": REGISTRY_ID,
        "endpoint_identity_policy": ENDPOINT_IDENTITY_POLICY,
        "receipt_schema": 1,
    }
    assert payload["generated_at"] == FIXED_TIME
    assert payload["generation_mode"] == "full"
    for section in ("nodes", "facts", "occurrences"):
        ids = payload[section]["id"]
        assert ids == sorted(ids) and len(set(ids)) == len(ids)
    for listed in payload["facts"]["occurrence_ids"]:
        assert listed == sorted(listed)
    for table in ("endpoint_identities", "discriminators", "occurrence_owners"):
        encoded = [canonical_bytes_reference(entry) for entry in payload[table]]
        assert encoded == sorted(set(encoded))
    assert payload["counts"] == graph.counts().to_json()
    assert payload["admission"]["unregistered_relation_admissions"] == {"no_such_relation": 1}


def test_generated_at_is_injectable_and_defaults_to_now_or_source_date_epoch(monkeypatch) -> None:
    from datetime import UTC, datetime, timedelta, timezone

    from cairn.artifact import resolve_generated_at

    assert resolve_generated_at("fixed") == "fixed"
    plus_two = datetime(2024, 5, 1, 12, 0, tzinfo=timezone(timedelta(hours=2)))
    assert resolve_generated_at(plus_two) == "2024-05-01T10:00:00Z"
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "0")
    assert resolve_generated_at(None) == "1970-01-01T00:00:00Z"
    monkeypatch.delenv("SOURCE_DATE_EPOCH")
    now = resolve_generated_at(None)
    assert now.endswith("Z") and now[:4] == str(datetime.now(UTC).year)
    with pytest.raises(ValidationError):
        resolve_generated_at(datetime(2024, 1, 1))  # naive
    with pytest.raises(ValidationError):
        resolve_generated_at("  ")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"repository_revision": " "},
        {"generation_mode": ""},
        {"directed": 1},
        {"provenance": ["not", "an", "object"]},
    ],
)
def test_bad_metadata_is_refused(kwargs: dict) -> None:
    with pytest.raises(ValidationError):
        encode_artifact(SemanticGraph(), generated_at=FIXED_TIME, **kwargs)


@pytest.mark.parametrize(
    ("where", "build_graph"),
    [
        ("nodes", lambda g: g.add_node("n", "file", attributes={"path": "/home/me/repo/a.py"})),
        ("nodes", lambda g: g.add_node("n", "file", attributes={"x": {"file": "C:\\repo\\a.py"}})),
        (
            "hyperedges",
            lambda g: (
                g.add_node("n", "file"),
                g.add_hyperedge("h", "group", ["n"], {"root_dir": "~/x"}),
            ),
        ),
    ],
)
def test_absolute_paths_are_refused_at_write(where: str, build_graph) -> None:
    graph = SemanticGraph()
    build_graph(graph)
    with pytest.raises(ValidationError, match="absolute path") as caught:
        encode_artifact(graph, generated_at=FIXED_TIME)
    assert where in caught.value.message


def test_absolute_paths_in_occurrences_and_provenance_are_refused() -> None:
    from artifact_support import site

    graph = SemanticGraph()
    graph.add_node("a", "function")
    graph.add_node("b", "function")
    graph.add_fact("a", "b", "contains", occurrence=site(1, metadata={"file": "/tmp/x.py"}))
    with pytest.raises(ValidationError, match="metadata_variants"):
        encode_artifact(graph, generated_at=FIXED_TIME)
    with pytest.raises(ValidationError, match="provenance"):
        encode_artifact(SemanticGraph(), provenance={"checkout_root": "/srv/repo"})


def test_route_paths_in_discriminators_are_not_file_paths() -> None:
    graph = rich_graph()  # holds handles_route path "/users/{id}"
    assert b"/users/{id}" in encode_artifact(graph, generated_at=FIXED_TIME)


@pytest.mark.parametrize("value", [2**60, 1e20, -(2.0**53) - 2])
def test_numbers_that_cannot_round_trip_are_refused(value: float) -> None:
    graph = SemanticGraph()
    graph.add_node("n", "file", attributes={"big": value})
    with pytest.raises(CanonicalizationError):
        encode_artifact(graph, generated_at=FIXED_TIME)


def test_non_nfc_schema_strings_take_the_exact_slow_path() -> None:
    from cairn.graph import OccurrenceInput

    graph = SemanticGraph()
    graph.add_node("a", "function")
    graph.add_node("b", "function")
    decomposed = "e\u0301.py"  # not NFC; the graph does not normalise file names
    graph.add_fact(
        "a", "b", "contains", occurrence=OccurrenceInput("x", "y", source_file=decomposed)
    )
    data = encode_artifact(graph, generated_at=FIXED_TIME)
    assert "\u00e9.py".encode() in data and decomposed.encode() not in data
    loaded = decode_artifact(data)
    assert encode_artifact(loaded.graph, generated_at=FIXED_TIME) == data


def test_parallel_and_serial_paths_agree(monkeypatch) -> None:
    import cairn.artifact.format as format_module
    import cairn.artifact.reader as reader_module

    graph = rich_graph()
    serial = encode_artifact(graph, generated_at=FIXED_TIME, parallel=False)
    monkeypatch.setattr(format_module, "PARALLEL_MIN_WRITE_OBJECTS", 0)
    monkeypatch.setattr(reader_module, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(reader_module, "VERIFY_CHUNK_OBJECTS", 2)
    parallel = encode_artifact(graph, generated_at=FIXED_TIME, parallel=True)
    assert parallel == serial
    assert decode_artifact(parallel, parallel=True).graph == graph


def test_empty_graph_round_trips() -> None:
    data = encode_artifact(SemanticGraph(), generated_at=FIXED_TIME)
    loaded = decode_artifact(data)
    assert loaded.graph == SemanticGraph()
    assert encode_artifact(loaded.graph, generated_at=FIXED_TIME) == data
    assert loaded.summary()["counts"]["fact_count"] == 0


@SETTINGS
@given(graph_specs(), st.lists(st.integers(0, 40), max_size=6))
def test_occurrence_chunks_join_into_the_whole_section(spec: dict, cuts: list[int]) -> None:
    """Row chunks printed apart and joined give the bytes of the section printed whole."""
    import cairn.artifact.format as fmt

    occurrences = build(spec).occurrences()
    owners, rows = fmt._table(
        list(map(fmt._OWNER, occurrences)), fmt._OWNER_KEY, fmt.OccurrenceOwner.to_json
    )
    whole = orjson.dumps(
        fmt._Writer(fast=True).occurrence_columns(occurrences, rows),
        option=orjson.OPT_SORT_KEYS,
    )
    edges = sorted({0, len(occurrences), *(min(cut, len(occurrences)) for cut in cuts)})
    ranges = list(itertools.pairwise(edges)) or [(0, 0)]  # the writer's one empty chunk
    chunks, printed = [], []
    for begin, end in ranges:
        entries, owner_rows, columns = fmt._occurrence_chunk(occurrences, begin, end)
        chunks.append(fmt.ChunkResult(entries, owner_rows, [len(c) for c in columns], True))
        printed.append(b"".join(columns))
    joined_owners, pieces = fmt._joined_occurrence_chunks(chunks, printed)
    assert joined_owners == owners
    assert b"".join(pieces) == whole
