"""Endpoint identities on stored facts: given identities are recorded, omitted ones unknown."""

from __future__ import annotations

import json

import pytest
from store_helpers import cmd, fact_records, put, setup_docs

from cairn.errors import ValidationError
from cairn.graph import EndpointIdentity, IdentityReason, SemanticGraph
from cairn.store import Database, EntityRef, PutFact, command_from_json

A, B = EntityRef("docs", "file:a.py"), EntityRef("docs", "file:b.py")
IMPORT = {"specifier": "b", "binding_kind": "module", "phase": "runtime", "form": "static"}


@pytest.fixture
def graph_db(db: Database) -> Database:
    setup_docs(db, graph="code")
    db.command(cmd(put("docs", A.id), put("docs", B.id)))
    return db


def _stored_identity(db: Database) -> dict[str, object]:
    [(*_, record)] = fact_records(db.path)
    return json.loads(record)["endpoint_identity"]  # type: ignore[no-any-return]


def test_given_identities_are_recorded_like_the_graph_records_them(graph_db: Database) -> None:
    bound = EndpointIdentity.context_bound(IdentityReason.COLLISION_SUFFIX_DERIVED)
    mutation = PutFact(
        "code",
        A,
        B,
        "imports",
        IMPORT,
        source_identity=EndpointIdentity.stable(),
        target_identity=bound,
    )
    receipt = graph_db.command(cmd(mutation))
    reference = SemanticGraph()
    reference.add_node(A.id, "file", identity=EndpointIdentity.stable())
    reference.add_node(B.id, "file", identity=bound)
    fact_id = reference.add_fact(A.id, B.id, "imports", IMPORT).fact_id
    assert receipt.mutations[0].id == fact_id
    assert _stored_identity(graph_db) == reference.fact(fact_id).endpoint_identity.to_json()


def test_omitted_identities_are_unknown(graph_db: Database) -> None:
    graph_db.command(cmd(PutFact("code", A, B, "imports", IMPORT)))
    unknown = EndpointIdentity.undeclared().to_json()
    assert _stored_identity(graph_db) == {"source": unknown, "target": unknown}


def test_identities_round_trip_and_old_commands_keep_their_bytes() -> None:
    plain = PutFact("code", A, B, "imports", IMPORT)
    assert "source_identity" not in plain.to_json()
    given = PutFact("code", A, B, "imports", IMPORT, source_identity=EndpointIdentity.stable())
    request = cmd(given)
    assert command_from_json(json.loads(request.canonical_bytes())) == request
    with pytest.raises(ValidationError):
        PutFact("code", A, B, "imports", source_identity="stable")  # type: ignore[arg-type]


def test_a_self_fact_cannot_carry_two_identities(graph_db: Database) -> None:
    with pytest.raises(ValidationError, match="two identities"):
        graph_db.command(
            cmd(
                PutFact(
                    "code",
                    A,
                    A,
                    "imports",
                    IMPORT,
                    source_identity=EndpointIdentity.stable(),
                    target_identity=EndpointIdentity.legacy(),
                )
            )
        )
