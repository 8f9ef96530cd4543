"""Fact-level diff (gate 2) and the storage-only integrity receipt (spec §10)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from graph_helpers import CALL, CONSTRUCT, site, stable_graph

from cairn.errors import ArtifactCorruptError
from cairn.graph import (
    EndpointIdentity,
    SemanticGraph,
    build_receipt,
    diff_graphs,
    fully_stable_facts,
    validate_receipt,
)
from cairn.graph.receipt import STATUS_ORDER


def test_diff_distinguishes_facts_differing_only_by_discriminator() -> None:
    before = stable_graph("a", "b")
    after = stable_graph("a", "b")
    for graph in (before, after):
        graph.add_fact("a", "b", "calls", CALL, occurrence=site(1))
        graph.add_fact("a", "b", "calls", CALL, occurrence=site(2))
    kept = before.facts()[0].id
    construct = after.add_fact("a", "b", "calls", CONSTRUCT, occurrence=site(3))
    diff = diff_graphs(before, after)
    assert diff.added_facts == (construct.fact_id,)
    assert diff.removed_facts == ()
    assert kept not in diff.added_facts
    reverse = diff_graphs(after, before)
    assert reverse.removed_facts == (construct.fact_id,)


def test_diff_reports_evidence_nodes_and_changed_occurrences() -> None:
    before = stable_graph("a", "b")
    before.add_fact("a", "b", "calls", CALL, occurrence=site(1))
    before.add_fact("a", "b", "calls", CALL, occurrence=site(2, metadata={"t": "x"}))
    after = stable_graph("a", "b", "c")
    after.add_fact("a", "b", "calls", CALL, occurrence=site(2, metadata={"t": "y"}))
    after.add_fact("a", "b", "calls", CALL, occurrence=site(7))
    fact_id = after.facts()[0].id
    diff = diff_graphs(before, after)
    assert diff.added_nodes == ("c",)
    assert diff.added_facts == () and diff.removed_facts == ()
    (change,) = diff.evidence_changes
    assert change.fact_id == fact_id
    assert len(change.added_occurrences) == 1 and len(change.removed_occurrences) == 1
    assert len(diff.changed_occurrences) == 1
    assert not diff.is_empty
    payload = diff.to_json()
    assert payload["added_nodes"] == ["c"]
    assert payload["evidence_changes"][0]["fact_id"] == fact_id


def test_diff_of_equal_graphs_is_empty_and_changed_nodes_are_seen() -> None:
    graph = stable_graph("a", "b")
    graph.add_fact("a", "b", "calls", CALL, occurrence=site(1))
    assert diff_graphs(graph, graph.copy()).is_empty
    other = SemanticGraph()
    other.add_node("a", "class", identity=EndpointIdentity.stable())
    diff = diff_graphs(stable_graph("a"), other)
    assert diff.changed_nodes == ("a",)


def mixed_graph() -> SemanticGraph:
    graph = SemanticGraph()
    graph.add_node("s", "function", identity=EndpointIdentity.stable())
    graph.add_node(
        "c",
        "section",
        identity=EndpointIdentity.context_bound(
            "collision_suffix_derived", "source_ordinal_derived"
        ),
    )
    graph.add_node("u", "function")
    graph.add_node("l", "function", identity=EndpointIdentity.legacy())
    graph.add_fact("s", "s", "calls", CALL, occurrence=site(1))
    graph.add_fact("s", "c", "mentions", occurrence=site(2))
    graph.add_fact("s", "c", "mentions", occurrence=site(3))
    graph.add_fact("c", "u", "calls", CALL)
    graph.add_fact("u", "l", "calls", CALL)
    graph.add_fact("l", "s", "calls", CONSTRUCT)
    graph.add_fact("u", "s", "related_to")  # undirected: stored as ("s", "u")
    graph.add_fact("u", "s", "injects")
    return graph


def test_receipt_partition_and_reason_counts() -> None:
    graph = mixed_graph()
    receipt = build_receipt(graph)
    assert receipt["accounting_scope"] == "storage_only"
    assert receipt["status"] == "degraded"
    assert receipt["reasons"] == ["full_emission_accounting_not_available"]
    identity = receipt["endpoint_identity"]
    assert identity["statuses"] == ["stable", "context_bound", "unknown", "legacy"]
    cells = identity["fact_pair_counts"]
    assert all(len(cells[src]) == 4 for src in STATUS_ORDER) and len(cells) == 4
    total = sum(cells[s][t] for s in STATUS_ORDER for t in STATUS_ORDER)
    assert total == graph.fact_count == 6
    assert cells["stable"]["stable"] == 1
    assert cells["stable"]["context_bound"] == 1
    assert cells["context_bound"]["unknown"] == 1
    assert cells["unknown"]["legacy"] == 1
    assert cells["legacy"]["stable"] == 1
    assert cells["stable"]["unknown"] == 1  # the undirected fact, canonical order s < u
    assert identity["reason_fact_counts"] == {
        "collision_suffix_derived": 2,
        "identity_policy_not_declared": 3,
        "legacy_identity_policy": 2,
        "source_ordinal_derived": 2,
    }
    assert receipt["storage_admission"] == {"unregistered_relation_admissions": {"injects": 1}}
    assert fully_stable_facts(receipt) == 1
    validate_receipt(receipt, graph)


def test_receipt_validation_failures() -> None:
    graph = mixed_graph()
    good = build_receipt(graph)
    with pytest.raises(ArtifactCorruptError, match="valid"):
        validate_receipt({**good, "status": "valid"}, graph)
    with pytest.raises(ArtifactCorruptError, match="not an object"):
        validate_receipt([good], graph)
    broken = build_receipt(graph)
    del broken["endpoint_identity"]["fact_pair_counts"]["legacy"]
    with pytest.raises(ArtifactCorruptError, match="16 cells"):
        validate_receipt(broken, graph)
    inflated = build_receipt(graph)
    inflated["endpoint_identity"]["fact_pair_counts"]["stable"]["stable"] += 1
    with pytest.raises(ArtifactCorruptError, match="sum to"):
        validate_receipt(inflated, graph)
    moved = build_receipt(graph)
    cells = moved["endpoint_identity"]["fact_pair_counts"]
    cells["stable"]["stable"] -= 1
    cells["legacy"]["legacy"] += 1
    with pytest.raises(ArtifactCorruptError, match="disagrees"):
        validate_receipt(moved, graph)


def test_receipt_never_claims_valid_even_when_all_stable() -> None:
    graph = stable_graph("a", "b")
    graph.add_fact("a", "b", "calls", CALL)
    receipt = build_receipt(graph)
    assert receipt["status"] == "degraded"
    assert fully_stable_facts(receipt) == graph.fact_count


def test_receipt_follows_copy() -> None:
    graph = mixed_graph()
    assert build_receipt(graph.copy()) == build_receipt(graph)
    forged = graph.copy()
    fact = next(f for f in forged.facts() if f.source == "s" and f.target == "c")
    forged._facts[fact.id] = replace(
        fact, endpoint_identity=replace(fact.endpoint_identity, source=EndpointIdentity.legacy())
    )
    assert build_receipt(forged) != build_receipt(graph)
