"""Spec §7: the duplicate and conflict policy, one test per table row, plus admission."""

from __future__ import annotations

import pytest
from graph_helpers import CALL, CONSTRUCT, site, stable_graph

from cairn.errors import (
    AmbiguousEdgeError,
    ConflictError,
    IdentityCollisionError,
    MissingEndpointError,
    NotFoundError,
    UnknownEdgeError,
    ValidationError,
)
from cairn.graph import (
    AdmissionOutcome,
    ConfidenceObservation,
    EndpointIdentity,
    IdentityStatus,
    OccurrenceInput,
    SemanticGraph,
    SourceRange,
)
from cairn.graph.multigraph import (
    DIAGNOSTIC_ADAPTER_VERSION_CONFLICT,
    DIAGNOSTIC_METADATA_CONFLICT,
    DIAGNOSTIC_MULTIPLICITY_UNKNOWN,
)


def test_same_fact_same_occurrence_twice_from_one_adapter_merges() -> None:
    graph = stable_graph("a", "b")
    first = graph.add_fact(
        "a",
        "b",
        "calls",
        CALL,
        occurrence=site(
            3, provenance=({"source": "pass-1"},), confidence=(ConfidenceObservation(0.9, "ast"),)
        ),
    )
    second = graph.add_fact(
        "a",
        "b",
        "calls",
        CALL,
        occurrence=site(
            3,
            provenance=({"source": "pass-2"}, {"source": "pass-1"}),
            confidence=(ConfidenceObservation(0.5, "heuristic"),),
        ),
    )
    assert first.outcome is AdmissionOutcome.NEW_FACT
    assert second.outcome is AdmissionOutcome.EXACT_DUPLICATE_MERGED
    assert first.fact_id == second.fact_id and first.occurrence_id == second.occurrence_id
    assert graph.fact_count == 1 and graph.occurrence_count == 1
    occurrence = graph.occurrence(first.occurrence_id or "")
    assert [dict(p) for p in occurrence.provenance] == [{"source": "pass-1"}, {"source": "pass-2"}]
    # Canonical order of the observations' JSON: method "ast" sorts before "heuristic".
    observations = occurrence.confidence_observations
    assert [(o.method, o.value) for o in observations] == [("ast", 0.9), ("heuristic", 0.5)]
    # A located site is an exact duplicate, not an unknown multiplicity.
    assert DIAGNOSTIC_MULTIPLICITY_UNKNOWN not in occurrence.diagnostics


def test_same_fact_and_site_from_two_adapters_gives_two_occurrences() -> None:
    graph = stable_graph("a", "b")
    one = graph.add_fact("a", "b", "calls", CALL, occurrence=site(3, adapter="python"))
    two = graph.add_fact("a", "b", "calls", CALL, occurrence=site(3, adapter="scip"))
    assert two.outcome is AdmissionOutcome.ADDITIONAL_OCCURRENCE
    assert one.fact_id == two.fact_id and one.occurrence_id != two.occurrence_id
    assert graph.fact_count == 1 and graph.occurrence_count == 2
    assert graph.fact(one.fact_id or "").occurrence_ids == tuple(
        sorted([one.occurrence_id or "", two.occurrence_id or ""])
    )


def test_same_fact_two_locations_stable_endpoints_one_fact_two_occurrences() -> None:
    graph = stable_graph("a", "b")
    one = graph.add_fact("a", "b", "calls", CALL, occurrence=site(3))
    two = graph.add_fact("a", "b", "calls", CALL, occurrence=site(9))
    assert one.fact_id == two.fact_id
    assert one.occurrence_id != two.occurrence_id
    assert graph.fact(one.fact_id or "").endpoint_identity.movement_stable
    assert len(graph.occurrences_of(one.fact_id or "")) == 2


def test_different_valid_discriminators_give_two_facts_one_pair() -> None:
    graph = stable_graph("a", "b")
    one = graph.add_fact("a", "b", "calls", CALL, occurrence=site(3))
    two = graph.add_fact("a", "b", "calls", CONSTRUCT, occurrence=site(4))
    assert one.fact_id != two.fact_id
    assert graph.fact_count == 2 and graph.endpoint_pair_count == 1
    assert len(graph.facts_between("a", "b")) == 2


def test_missing_discriminator_data_gives_one_partial_fact_with_reasons() -> None:
    graph = stable_graph("a", "b")
    result = graph.add_fact("a", "b", "calls", {"invocation": "call"})
    assert result.outcome is AdmissionOutcome.NEW_FACT
    fact = graph.fact(result.fact_id or "")
    assert fact.discriminator.completeness == "partial"
    assert fact.discriminator.reasons == (
        "dispatch_missing",
        "optional_chaining_missing",
        "resolution_missing",
    )
    assert dict(fact.discriminator.value) == {"invocation": "call"}
    assert result.reasons == fact.discriminator.reasons


def test_same_occurrence_different_confidence_keeps_every_observation() -> None:
    graph = stable_graph("a", "b")
    for value in (0.2, 0.7, 0.2):
        graph.add_fact(
            "a",
            "b",
            "calls",
            CALL,
            occurrence=site(3, confidence=(ConfidenceObservation(value, "model"),)),
        )
    (occurrence,) = graph.occurrences()
    assert sorted(o.value for o in occurrence.confidence_observations) == [0.2, 0.7]


def test_conflicting_metadata_keeps_all_variants_with_diagnostic() -> None:
    graph = stable_graph("a", "b")
    graph.add_fact("a", "b", "calls", CALL, occurrence=site(3, metadata={"text": "x()"}))
    graph.add_fact("a", "b", "calls", CALL, occurrence=site(3, metadata={"text": "y()"}))
    graph.add_fact("a", "b", "calls", CALL, occurrence=site(3, metadata={"text": "x()"}))
    (occurrence,) = graph.occurrences()
    assert [dict(v) for v in occurrence.metadata_variants] == [{"text": "x()"}, {"text": "y()"}]
    assert DIAGNOSTIC_METADATA_CONFLICT in occurrence.diagnostics
    assert dict(occurrence.metadata) == {}


def test_single_metadata_variant_is_exposed_directly() -> None:
    graph = stable_graph("a", "b")
    graph.add_fact("a", "b", "calls", CALL, occurrence=site(3, metadata={"text": "x()"}))
    (occurrence,) = graph.occurrences()
    assert dict(occurrence.metadata) == {"text": "x()"}
    assert occurrence.diagnostics == ()


def test_unlocated_indistinguishable_emissions_merge_with_multiplicity_diagnostic() -> None:
    graph = stable_graph("a", "b")
    bare = OccurrenceInput("python", "ast", source_file="app.py")
    first = graph.add_fact("a", "b", "calls", CALL, occurrence=bare)
    second = graph.add_fact("a", "b", "calls", CALL, occurrence=bare)
    assert first.occurrence_id == second.occurrence_id
    (occurrence,) = graph.occurrences()
    assert occurrence.diagnostics == (DIAGNOSTIC_MULTIPLICITY_UNKNOWN,)


def test_adapter_versions_disagreeing_are_kept_visible() -> None:
    graph = stable_graph("a", "b")
    graph.add_fact("a", "b", "calls", CALL, occurrence=site(3, adapter_version="1.0"))
    graph.add_fact("a", "b", "calls", CALL, occurrence=site(3, adapter_version="2.0"))
    (occurrence,) = graph.occurrences()
    assert DIAGNOSTIC_ADAPTER_VERSION_CONFLICT in occurrence.diagnostics
    assert occurrence.owner.adapter_version is None
    versions = sorted(p["adapter_version"] for p in occurrence.provenance)
    assert versions == ["1.0", "2.0"]


def test_no_case_selects_first_or_last_writer_for_annotations() -> None:
    graph = stable_graph("a", "b")
    graph.add_fact("a", "b", "calls", CALL, annotations={"note": "second"})
    graph.add_fact("a", "b", "calls", CALL, annotations={"note": "first"})
    (fact,) = graph.facts()
    assert [dict(v) for v in fact.annotation_variants] == [{"note": "first"}, {"note": "second"}]
    assert dict(fact.annotations) == {}


def test_unregistered_relation_is_unresolved_and_counted() -> None:
    graph = stable_graph("a", "b")
    result = graph.add_fact("a", "b", "injects")
    graph.add_fact("a", "b", "injects")
    assert result.outcome is AdmissionOutcome.UNRESOLVED and result.fact_id is None
    assert graph.fact_count == 0
    assert dict(graph.unregistered_relation_admissions) == {"injects": 2}
    assert graph.admission_counts["unresolved"] == 2


def test_missing_endpoints_raise_and_are_never_created() -> None:
    graph = stable_graph("a")
    with pytest.raises(MissingEndpointError) as info:
        graph.add_fact("a", "ghost", "calls", CALL)
    assert info.value.details == {"role": "target", "node_id": "ghost"}
    with pytest.raises(MissingEndpointError):
        graph.add_fact("ghost", "a", "calls", CALL)
    assert graph.node_ids() == ("a",)


def test_undeclared_identity_is_unknown_never_stable() -> None:
    graph = SemanticGraph()
    node = graph.add_node("x", "function")
    assert node.identity.status is IdentityStatus.UNKNOWN
    assert [r.value for r in node.identity.reasons] == ["identity_policy_not_declared"]


def test_facts_record_both_endpoint_qualifications() -> None:
    graph = SemanticGraph()
    graph.add_node("a", "function", identity=EndpointIdentity.stable())
    graph.add_node(
        "b", "function", identity=EndpointIdentity.context_bound("source_ordinal_derived")
    )
    fact = graph.fact(graph.add_fact("a", "b", "calls", CALL).fact_id or "")
    assert fact.endpoint_identity.source.status is IdentityStatus.STABLE
    assert fact.endpoint_identity.target.status is IdentityStatus.CONTEXT_BOUND
    assert not fact.endpoint_identity.movement_stable


def test_node_conflicts_are_refused_and_identical_re_adds_ignored() -> None:
    graph = stable_graph("a")
    assert graph.add_node("a", "function", identity=EndpointIdentity.stable()).id == "a"
    with pytest.raises(ConflictError):
        graph.add_node("a", "class", identity=EndpointIdentity.stable())
    with pytest.raises(NotFoundError):
        graph.node("zzz")


def test_discriminator_validation_errors() -> None:
    graph = stable_graph("a", "b")
    with pytest.raises(ValidationError, match="no discriminator fields"):
        graph.add_fact("a", "b", "calls", {**CALL, "line": 3})
    with pytest.raises(ValidationError, match="must be one of"):
        graph.add_fact("a", "b", "calls", {**CALL, "dispatch": "teleport"})
    with pytest.raises(ValidationError, match="must be a bool"):
        graph.add_fact("a", "b", "calls", {**CALL, "optional_chaining": "no"})
    assert graph.fact_count == 0


def test_occurrence_paths_must_be_repository_relative() -> None:
    graph = stable_graph("a", "b")
    for bad in ("/abs/app.py", "../escape.py", "a/./b.py", "C:/x.py", "a\\b.py", ""):
        with pytest.raises(ValidationError):
            graph.add_fact(
                "a", "b", "calls", CALL, occurrence=OccurrenceInput("p", "s", source_file=bad)
            )
    assert graph.occurrence_count == 0


def test_edge_attributes_compatibility_projection() -> None:
    graph = stable_graph("a", "b", "c")
    graph.add_fact("a", "b", "calls", CALL, occurrence=site(1))
    graph.add_fact("a", "b", "calls", CALL, occurrence=site(2))
    view = graph.edge_attributes("a", "b")
    assert view["relation"] == "calls" and view["occurrence_count"] == 2
    with pytest.raises(TypeError):
        view["relation"] = "x"  # type: ignore[index]
    graph.add_fact("a", "b", "contains")
    with pytest.raises(AmbiguousEdgeError) as ambiguous:
        graph.edge_attributes("a", "b")
    assert len(ambiguous.value.details["fact_ids"]) == 2
    with pytest.raises(UnknownEdgeError):
        graph.edge_attributes("a", "c")


def test_identity_collision_is_fatal() -> None:
    graph = stable_graph("a", "b")
    result = graph.add_fact("a", "b", "calls", CALL)
    # Forge a stored fact whose payload differs from what its ID was derived from.
    fact = graph.fact(result.fact_id or "")
    from dataclasses import replace

    graph._facts[fact.id] = replace(fact, relation="contains")
    graph._index.by_relation.setdefault("contains", set()).add(fact.id)
    with pytest.raises(IdentityCollisionError):
        graph.add_fact("a", "b", "calls", CALL)


def test_occurrence_identity_collision_is_fatal() -> None:
    graph = stable_graph("a", "b")
    result = graph.add_fact("a", "b", "calls", CALL, occurrence=site(1))
    from dataclasses import replace

    stored = graph.occurrence(result.occurrence_id or "")
    graph._occurrences[stored.id] = replace(stored, site_kind="forged")
    with pytest.raises(IdentityCollisionError):
        graph.add_fact("a", "b", "calls", CALL, occurrence=site(1))


def test_range_validation() -> None:
    with pytest.raises(ValidationError):
        SourceRange(0, 1, 1, 1)
    with pytest.raises(ValidationError):
        SourceRange(5, 1, 4, 1)
    assert SourceRange.from_json([1, 2, 3, 4]) == SourceRange(1, 2, 3, 4)
    assert SourceRange.from_json(None) is None
    with pytest.raises(ValidationError):
        SourceRange.from_json([1, 2])
