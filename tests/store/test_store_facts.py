"""Facts in the store: endpoints, identity shared with SemanticGraph, evidence, deletion."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from store_helpers import cmd, fact_records, put, rows, setup_docs

from cairn.errors import ConflictError, MissingEndpointError, NotFoundError, ValidationError
from cairn.graph import OccurrenceInput, SemanticGraph, SourceRange
from cairn.store import (
    ConfigureCollection,
    Database,
    DeleteDocument,
    DeleteFact,
    EntityRef,
    MutationOutcome,
    PutFact,
)

CALL = {"invocation": "call", "dispatch": "direct", "optional_chaining": False}
A, B = EntityRef("docs", "pkg.a"), EntityRef("docs", "pkg.b")


def site(line: int) -> OccurrenceInput:
    return OccurrenceInput(
        adapter_id="python",
        strategy="ast",
        source_file="pkg/a.py",
        source_range=SourceRange(line, 1, line, 9),
        site_kind="call",
    )


@pytest.fixture
def graph_db(db: Database) -> Database:
    setup_docs(db, graph="code")
    db.command(cmd(put("docs", "pkg.a"), put("docs", "pkg.b")))
    return db


def expected_graph() -> SemanticGraph:
    graph = SemanticGraph()
    graph.add_node("pkg.a", "function")
    graph.add_node("pkg.b", "function")
    return graph


def test_fact_and_occurrence_ids_match_semantic_graph_admission(
    graph_db: Database, db_path: Path
) -> None:
    reference = expected_graph()
    first = reference.add_fact("pkg.a", "pkg.b", "calls", CALL, occurrence=site(3))
    second = reference.add_fact("pkg.a", "pkg.b", "calls", CALL, occurrence=site(9))
    assert first.fact_id == second.fact_id

    receipt = graph_db.command(
        cmd(PutFact("code", A, B, "calls", CALL, occurrences=(site(3), site(9))))
    )
    assert receipt.mutations == (MutationOutcome("put_fact", "code", first.fact_id, 1),)
    [(fact_id, relation)] = rows(db_path, "SELECT id, relation FROM facts")
    [(*_, record)] = fact_records(db_path)
    assert (fact_id, relation) == (first.fact_id, "calls")
    stored = json.loads(record)
    assert stored["discriminator"]["completeness"] == "partial"
    assert stored["discriminator"]["reasons"] == ["resolution_missing"]
    assert stored["occurrence_ids"] == sorted([first.occurrence_id, second.occurrence_id])
    occurrence_ids = [r[0] for r in rows(db_path, "SELECT id FROM occurrences ORDER BY id")]
    assert occurrence_ids == sorted([first.occurrence_id, second.occurrence_id])


def test_discriminator_is_normalised_by_the_registry(graph_db: Database) -> None:
    shouted = {**CALL, "invocation": "  CALL ", "resolution": "Resolved"}
    calm = {**CALL, "resolution": "resolved"}
    one = graph_db.command(cmd(PutFact("code", A, B, "calls", shouted)))
    two = graph_db.command(cmd(PutFact("code", A, B, "calls", calm)))
    assert one.mutations[0].id == two.mutations[0].id
    assert two.mutations[0].revision == 2


def test_different_discriminators_are_different_facts(graph_db: Database, db_path: Path) -> None:
    graph_db.command(
        cmd(
            PutFact("code", A, B, "calls", CALL),
            PutFact("code", A, B, "calls", {**CALL, "invocation": "construct"}),
        )
    )
    assert rows(db_path, "SELECT count(*) FROM facts") == [(2,)]


def test_endpoints_must_be_existing_live_documents(graph_db: Database) -> None:
    with pytest.raises(MissingEndpointError, match="target docs/ghost"):
        graph_db.command(cmd(PutFact("code", A, EntityRef("docs", "ghost"), "contains")))
    graph_db.command(cmd(DeleteDocument("docs", "pkg.b")))
    with pytest.raises(MissingEndpointError, match=r"target docs/pkg\.b"):
        graph_db.command(cmd(PutFact("code", A, B, "contains")))


def test_unregistered_relations_are_never_stored(graph_db: Database, db_path: Path) -> None:
    with pytest.raises(ValidationError, match="'injects' is not registered"):
        graph_db.command(cmd(PutFact("code", A, B, "injects")))
    with pytest.raises(ValidationError, match="no discriminator fields"):
        graph_db.command(cmd(PutFact("code", A, B, "calls", {"colour": "red"})))
    assert rows(db_path, "SELECT count(*) FROM facts") == [(0,)]


def test_graph_must_be_configured(graph_db: Database) -> None:
    with pytest.raises(NotFoundError, match="no graph 'other'"):
        graph_db.command(cmd(PutFact("other", A, B, "contains")))


def test_put_again_replaces_evidence_and_bumps_the_revision(
    graph_db: Database, db_path: Path
) -> None:
    graph_db.command(cmd(PutFact("code", A, B, "calls", CALL, occurrences=(site(3), site(4)))))
    receipt = graph_db.command(cmd(PutFact("code", A, B, "calls", CALL, occurrences=(site(5),))))
    assert receipt.mutations[0].revision == 2
    reference = expected_graph()
    only = reference.add_fact("pkg.a", "pkg.b", "calls", CALL, occurrence=site(5))
    assert rows(db_path, "SELECT id FROM occurrences") == [(only.occurrence_id,)]


def test_undirected_facts_sort_their_endpoints(graph_db: Database, db_path: Path) -> None:
    forward = graph_db.command(cmd(PutFact("code", B, A, "related_to")))
    backward = graph_db.command(cmd(PutFact("code", A, B, "related_to")))
    assert forward.mutations[0].id == backward.mutations[0].id
    assert rows(db_path, "SELECT source_id, target_id FROM facts") == [("pkg.a", "pkg.b")]


def test_same_ids_in_other_collections_cannot_share_a_fact(graph_db: Database) -> None:
    graph_db.command(cmd(ConfigureCollection("other"), put("other", "pkg.b")))
    graph_db.command(cmd(PutFact("code", A, B, "contains")))
    with pytest.raises(ConflictError, match="other collections"):
        graph_db.command(cmd(PutFact("code", A, EntityRef("other", "pkg.b"), "contains")))


def test_delete_fact_removes_its_occurrences(graph_db: Database, db_path: Path) -> None:
    receipt = graph_db.command(cmd(PutFact("code", A, B, "calls", CALL, occurrences=(site(1),))))
    fact_id = receipt.mutations[0].id
    deleted = graph_db.command(cmd(DeleteFact("code", fact_id)))
    assert deleted.mutations == (MutationOutcome("delete_fact", "code", fact_id, 2),)
    assert rows(db_path, "SELECT deleted FROM facts") == [(1,)]
    assert rows(db_path, "SELECT count(*) FROM occurrences") == [(0,)]
    with pytest.raises(NotFoundError):
        graph_db.command(cmd(DeleteFact("code", fact_id)))


def test_bad_evidence_paths_are_refused(graph_db: Database) -> None:
    escaping = OccurrenceInput(adapter_id="python", strategy="ast", source_file="../etc/passwd")
    with pytest.raises(ValidationError, match="stay inside the repository"):
        graph_db.command(cmd(PutFact("code", A, B, "contains", occurrences=(escaping,))))
