"""Commands: receipts, revisions, atomicity, idempotency, limits and stored outcomes (§2)."""

from __future__ import annotations

import json
import sqlite3
import sys
import unicodedata
import uuid
import zlib
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from store_helpers import SPACE, cmd, current_vectors, new_id, put, rows, setup_docs

from cairn.canonical import canonical_bytes, digest_bytes
from cairn.errors import (
    BudgetExceededError,
    CanonicalizationError,
    ConflictError,
    CorruptionError,
    NotFoundError,
    ValidationError,
)
from cairn.store import (
    CommandRequest,
    CommitReceipt,
    ConfigureCollection,
    ConfigureGraph,
    ConfigurePolicy,
    Database,
    DeleteDocument,
    DocumentAccess,
    FieldPolicy,
    MutationOutcome,
    PatchDocument,
    PatchOperation,
    PutDocument,
    PutVector,
    VectorField,
    VectorSpace,
    command_from_json,
)
from cairn.store.commands import OUTCOME_PACK_BYTES
from cairn.store.limits import MAX_DOCUMENT_BYTES, MAX_MUTATIONS


def doc_row(path: Path, doc_id: str, collection: str = "docs") -> tuple[object, ...]:
    found = rows(
        path,
        "SELECT revision, body, owner, project, deleted FROM documents "
        "WHERE collection = ? AND id = ?",
        collection,
        doc_id,
    )
    assert len(found) == 1
    return found[0]


# ----------------------------------------------------------------- receipts
def test_receipt_names_command_token_mutations_and_durability(db: Database) -> None:
    command_id = new_id()
    receipt = db.command(
        cmd(ConfigureCollection("docs", ("/text",)), put("docs", "a"), command_id=command_id)
    )
    assert receipt.command_id == command_id
    assert receipt.token.incarnation == db.incarnation
    assert receipt.token.database == "main"
    assert receipt.token.position == 1
    assert receipt.mutations == (
        MutationOutcome("configure_collection", "docs", "docs", 1),
        MutationOutcome("put_document", "docs", "a", 1),
    )
    assert receipt.durability == "process_durable"
    assert CommitReceipt.from_json(json.loads(json.dumps(receipt.to_json()))) == receipt


def test_body_is_stored_as_canonical_json(db: Database, db_path: Path) -> None:
    setup_docs(db)
    db.command(cmd(PutDocument("docs", "a", {"b": 1, "a": ["é", 2.5]})))
    assert doc_row(db_path, "a")[1] == '{"a":["é",2.5],"b":1}'.encode()


# ---------------------------------------------------------------- revisions
def test_revisions_grow_on_every_change_and_deletes_leave_tombstones(
    db: Database, db_path: Path
) -> None:
    setup_docs(db)
    assert db.command(cmd(put("docs", "a", "one"))).mutations[0].revision == 1
    assert db.command(cmd(put("docs", "a", "two"))).mutations[0].revision == 2
    assert db.command(cmd(DeleteDocument("docs", "a"))).mutations[0].revision == 3
    assert doc_row(db_path, "a") == (3, None, None, None, 1)
    # Re-creating continues after the tombstone; expected_revision 0 means "create".
    again = db.command(cmd(put("docs", "a", "three", expected_revision=0)))
    assert again.mutations[0].revision == 4
    assert doc_row(db_path, "a")[4] == 0


def test_expected_revision_conflicts_are_typed(db: Database) -> None:
    setup_docs(db)
    db.command(cmd(put("docs", "a")))
    with pytest.raises(ConflictError, match="already exists at revision 1"):
        db.command(cmd(put("docs", "a", expected_revision=0)))
    with pytest.raises(ConflictError, match="at revision 1, not 5"):
        db.command(cmd(put("docs", "a", expected_revision=5)))
    with pytest.raises(NotFoundError):
        db.command(cmd(put("docs", "new", expected_revision=2)))
    assert db.command(cmd(put("docs", "a", expected_revision=1))).mutations[0].revision == 2


def test_delete_of_a_missing_or_deleted_document_is_not_found(db: Database) -> None:
    setup_docs(db)
    with pytest.raises(NotFoundError):
        db.command(cmd(DeleteDocument("docs", "nope")))
    db.command(cmd(put("docs", "a")))
    db.command(cmd(DeleteDocument("docs", "a")))
    with pytest.raises(NotFoundError):
        db.command(cmd(DeleteDocument("docs", "a")))


def test_unknown_collection_is_not_found(db: Database) -> None:
    with pytest.raises(NotFoundError, match="no collection 'docs'"):
        db.command(cmd(put("docs", "a")))


def test_access_is_stored_with_the_row(db: Database, db_path: Path) -> None:
    setup_docs(db)
    db.command(cmd(put("docs", "a", access=DocumentAccess("alice", "apollo"))))
    assert doc_row(db_path, "a")[2:4] == ("alice", "apollo")


# -------------------------------------------------------------------- patch
def test_patch_sets_and_removes_at_pointers(db: Database, db_path: Path) -> None:
    setup_docs(db)
    db.command(cmd(PutDocument("docs", "a", {"text": "x", "tags": ["a"], "meta": {"k": 1}})))
    receipt = db.command(
        cmd(
            PatchDocument(
                "docs",
                "a",
                (
                    PatchOperation("set", "/tags/-", "b"),
                    PatchOperation("set", "/meta/n", {"deep": True}),
                    PatchOperation("remove", "/meta/k"),
                    PatchOperation("set", "/text", "y"),
                ),
                expected_revision=1,
            )
        )
    )
    assert receipt.mutations[0].revision == 2
    assert json.loads(doc_row(db_path, "a")[1]) == {  # type: ignore[arg-type]
        "text": "y",
        "tags": ["a", "b"],
        "meta": {"n": {"deep": True}},
    }


def test_patch_needs_the_current_revision_and_a_live_document(db: Database) -> None:
    setup_docs(db)
    db.command(cmd(put("docs", "a")))
    op = (PatchOperation("set", "/text", "y"),)
    with pytest.raises(ConflictError):
        db.command(cmd(PatchDocument("docs", "a", op, expected_revision=7)))
    with pytest.raises(NotFoundError):
        db.command(cmd(PatchDocument("docs", "missing", op, expected_revision=1)))
    bad = (PatchOperation("set", "/no/such", 1),)
    with pytest.raises(ValidationError, match="does not exist"):
        db.command(cmd(PatchDocument("docs", "a", bad, expected_revision=1)))
    gone = (PatchOperation("remove", "/absent"),)
    with pytest.raises(ValidationError, match="nothing is there"):
        db.command(cmd(PatchDocument("docs", "a", gone, expected_revision=1)))


# ---------------------------------------------------------------- atomicity
def test_a_failing_mutation_rolls_back_the_whole_command(db: Database, db_path: Path) -> None:
    setup_docs(db)
    request = cmd(put("docs", "a"), put("docs", "b"), put("nowhere", "c"))
    with pytest.raises(NotFoundError) as info:
        db.command(request)
    assert info.value.details["mutation"] == 2
    assert rows(db_path, "SELECT id FROM documents") == []
    assert rows(db_path, "SELECT count(*) FROM changes WHERE position > 1") == [(0,)]
    assert db.position == 1
    # The failure itself is the command's stored outcome.
    assert rows(
        db_path, "SELECT ok FROM commands WHERE command_id = ?", str(request.command_id)
    ) == [(0,)]


def test_mutations_in_one_command_see_each_other(db: Database) -> None:
    receipt = db.command(
        cmd(
            ConfigureCollection("docs"),
            put("docs", "a", "one"),
            put("docs", "a", "two", expected_revision=1),
            DeleteDocument("docs", "a", expected_revision=2),
        )
    )
    assert [m.revision for m in receipt.mutations] == [1, 1, 2, 3]


def test_changes_log_records_slots_in_order(db: Database, db_path: Path) -> None:
    setup_docs(db)
    db.command(cmd(put("docs", "a"), put("docs", "a", "again")))
    db.command(cmd(DeleteDocument("docs", "a")))
    assert rows(
        db_path,
        "SELECT position, ordinal, kind, id, revision, slot, previous_slot FROM changes "
        "WHERE kind = 'document' ORDER BY position, ordinal",
    ) == [
        (2, 0, "document", "a", 1, 1, None),
        (2, 1, "document", "a", 2, 2, 1),
        (3, 0, "document", "a", 3, None, 2),
    ]


# -------------------------------------------------------------- idempotency
def test_same_id_and_content_returns_the_stored_receipt(db: Database, db_path: Path) -> None:
    setup_docs(db)
    request = cmd(put("docs", "a"))
    first = db.command(request)
    stored = db.stored_outcome(request.command_id)
    again = db.command(request)
    assert again == first
    assert db.stored_outcome(request.command_id) == stored
    assert stored == canonical_bytes({"ok": True, "receipt": first.to_json()})
    assert db.position == 2
    assert doc_row(db_path, "a")[0] == 1


def test_a_long_outcome_is_stored_compressed_and_replays_byte_identically(
    db: Database, db_path: Path
) -> None:
    setup_docs(db)
    request = cmd(*(put("docs", f"doc-{index:04d}") for index in range(200)))
    first = db.command(request)
    expected = canonical_bytes({"ok": True, "receipt": first.to_json()})
    assert len(expected) > OUTCOME_PACK_BYTES
    [(raw,)] = rows(
        db_path, "SELECT outcome FROM commands WHERE position = ?", first.token.position
    )
    assert zlib.decompress(raw) == expected and len(raw) < len(expected) / 4
    assert db.stored_outcome(request.command_id) == expected
    assert db.command(request) == first
    with closing(sqlite3.connect(db_path)) as conn:
        conn.execute("UPDATE commands SET outcome = ? WHERE position = 2", (raw[:-9],))
        conn.commit()
    # The row's checksum names the damage before the bytes are even unpacked.
    with pytest.raises(CorruptionError, match=r"stored outcome of command .* is damaged") as caught:
        db.command(request)
    assert caught.value.details == {"table": "commands", "command_id": str(request.command_id)}


def test_same_id_from_a_rebuilt_request_is_still_the_same_command(db: Database) -> None:
    setup_docs(db)
    request = cmd(PutDocument("docs", "a", {"x": 1, "y": [1, 2]}))
    first = db.command(request)
    rebuilt = command_from_json(json.loads(json.dumps(request.to_json())))
    assert rebuilt == request
    assert db.command(rebuilt) == first


def test_a_sparse_command_leaves_out_defaulted_fields_and_is_the_same_command(
    db: Database,
) -> None:
    setup_docs(db)
    command_id = new_id()
    full = CommandRequest(
        command_id,
        "main",
        (
            PutDocument("docs", "a", {"x": 1}, None, DocumentAccess("ann", None)),
            ConfigurePolicy("docs", (FieldPolicy("/x", read_grant="g"),)),
        ),
    )
    sparse = {
        "command_id": str(command_id),
        "database": "main",
        "mutations": [
            {"kind": "put_document", "collection": "docs", "id": "a", "body": {"x": 1},
             "access": {"owner": "ann"}},
            {"kind": "configure_policy", "resource": "docs",
             "fields": [{"path": "/x", "read_grant": "g"}]},
        ],
    }  # fmt: skip
    assert command_from_json(sparse) == full
    receipt = db.command(command_from_json(sparse))
    assert db.command(full) == receipt  # a retry in the full form replays, no conflict
    with pytest.raises(ValidationError, match="malformed command: 'id'"):
        command_from_json({**sparse, "mutations": [{"kind": "put_document", "collection": "d"}]})


def test_same_id_with_other_content_is_a_conflict(db: Database) -> None:
    setup_docs(db)
    command_id = new_id()
    db.command(cmd(put("docs", "a", "one"), command_id=command_id))
    with pytest.raises(ConflictError, match="already used with other content"):
        db.command(cmd(put("docs", "a", "two"), command_id=command_id))
    assert db.position == 2


def test_stored_errors_replay_byte_identically_even_after_state_changes(
    db: Database,
) -> None:
    request = cmd(put("docs", "a"))
    with pytest.raises(NotFoundError) as first:
        db.command(request)
    stored = db.stored_outcome(request.command_id)
    assert stored == canonical_bytes({"ok": False, "error": first.value.to_problem()})
    setup_docs(db)  # now the collection exists, but the outcome of this ID is decided
    with pytest.raises(NotFoundError) as again:
        db.command(request)
    assert canonical_bytes(again.value.to_problem()) == canonical_bytes(first.value.to_problem())
    assert db.stored_outcome(request.command_id) == stored


def test_idempotency_is_keyed_by_principal(db: Database) -> None:
    from cairn.store import Capability, ConfigurePrincipal, Grant

    setup_docs(db)
    writer = Grant("main", "docs", frozenset({Capability.DOCUMENTS_WRITE}))
    db.command(cmd(ConfigurePrincipal("bot", grants=(writer,))))
    command_id = new_id()
    owner_receipt = db.command(cmd(put("docs", "a"), command_id=command_id))
    bot_receipt = db.command(cmd(put("docs", "a"), command_id=command_id), principal="bot")
    assert owner_receipt.token.position == 3
    assert bot_receipt.token.position == 4
    assert bot_receipt.mutations[0].revision == 2


def test_fingerprint_is_sha256_of_the_canonical_command() -> None:
    request = CommandRequest(uuid.UUID(int=7), "main", (put("docs", "a", "x"),))
    expected = digest_bytes(
        canonical_bytes(
            {
                "command_id": "00000000-0000-0000-0000-000000000007",
                "database": "main",
                "mutations": [
                    {
                        "kind": "put_document",
                        "collection": "docs",
                        "id": "a",
                        "body": {"text": "x"},
                        "expected_revision": None,
                        "access": None,
                    }
                ],
            }
        )
    )
    assert request.fingerprint() == expected
    other = CommandRequest(uuid.UUID(int=7), "main", (put("docs", "a", "y"),))
    assert other.fingerprint() != expected


# ------------------------------------------------------------------ limits
def test_mutation_count_limit_is_exact(db: Database) -> None:
    setup_docs(db)
    ok = cmd(*(put("docs", f"d{i}") for i in range(MAX_MUTATIONS)))
    assert len(db.command(ok).mutations) == 256
    with pytest.raises(ValidationError, match="at most 256 mutations"):
        db.command(cmd(*(put("docs", f"e{i}") for i in range(MAX_MUTATIONS + 1))))
    with pytest.raises(ValidationError, match="at least one mutation"):
        db.command(cmd())


def test_document_size_limit_is_exact(db: Database) -> None:
    setup_docs(db)
    overhead = len(canonical_bytes({"t": ""}))
    exact = {"t": "x" * (MAX_DOCUMENT_BYTES - overhead)}
    assert len(canonical_bytes(exact)) == MAX_DOCUMENT_BYTES
    db.command(cmd(PutDocument("docs", "big", exact)))
    over = {"t": "x" * (MAX_DOCUMENT_BYTES - overhead + 1)}
    with pytest.raises(BudgetExceededError, match="document body is 1048577 bytes"):
        db.command(cmd(PutDocument("docs", "bigger", over)))


def test_command_size_limit(db: Database) -> None:
    setup_docs(db)
    body = {"t": "x" * (MAX_DOCUMENT_BYTES - 100)}
    request = cmd(*(PutDocument("docs", f"d{i}", body) for i in range(9)))
    with pytest.raises(BudgetExceededError, match="command is"):
        db.command(request)


def test_document_depth_limit_is_exact(db: Database) -> None:
    setup_docs(db)

    def nested(depth: int) -> dict[str, object]:
        value: dict[str, object] = {}
        for _ in range(depth - 1):
            value = {"a": value}
        return value

    db.command(cmd(PutDocument("docs", "deep", nested(32))))
    with pytest.raises(ValidationError, match="deeper than 32"):
        db.command(cmd(PutDocument("docs", "deeper", nested(33))))


@pytest.mark.parametrize(
    ("doc_id", "message"),
    [
        ("", "blank"),
        ("   ", "blank"),
        ("bell\x07", "control character"),
        ("line\nbreak", "control character"),
        ("é" * 128 + "a", "257 UTF-8 bytes"),
    ],
)
def test_identifier_rules(db: Database, doc_id: str, message: str) -> None:
    setup_docs(db)
    with pytest.raises(ValidationError, match=message):
        db.command(cmd(put("docs", doc_id)))


def test_identifiers_at_the_limit_and_with_inner_spaces_pass(db: Database) -> None:
    setup_docs(db)
    receipt = db.command(cmd(put("docs", "é" * 128), put("docs", "has inner spaces")))
    assert [m.id for m in receipt.mutations] == ["é" * 128, "has inner spaces"]


def test_only_control_characters_are_refused_not_other_unprintables(db: Database) -> None:
    setup_docs(db)
    # Not printable, yet no control character: a format char, a no-break space, a
    # private-use char and a line separator.
    ids = ["zero\u200bwidth", "no\u00a0break", "private\ue000", "line\u2028sep"]
    receipt = db.command(cmd(*(put("docs", doc_id) for doc_id in ids)))
    assert [m.id for m in receipt.mutations] == ids
    # The fast path's premise, over every code point: a printable character is never Cc.
    assert not any(
        chr(code).isprintable() and unicodedata.category(chr(code)) == "Cc"
        for code in range(sys.maxunicode + 1)
    )


def test_bodies_must_be_json_objects() -> None:
    with pytest.raises(ValidationError, match="JSON object"):
        PutDocument("docs", "a", ["not", "an", "object"])  # type: ignore[arg-type]
    with pytest.raises(CanonicalizationError):
        PutDocument("docs", "a", {"x": float("nan")})
    with pytest.raises(CanonicalizationError):
        PutDocument("docs", "a", {"x": {1, 2}})


def test_contracts_are_frozen_and_bodies_read_only() -> None:
    mutation = put("docs", "a", "x")
    with pytest.raises(AttributeError):
        mutation.id = "b"  # type: ignore[misc]
    with pytest.raises(TypeError):
        mutation.body["text"] = "changed"  # type: ignore[index]


# ------------------------------------------------------------------ vectors
def test_vectors_are_stored_as_float32_bound_to_the_document_revision(
    db: Database, db_path: Path
) -> None:
    setup_docs(db)
    db.command(cmd(put("docs", "a"), put("docs", "a", "v2")))
    receipt = db.command(cmd(PutVector("docs", "a", "embedding", (0.6, 0.8))))
    assert receipt.mutations == (MutationOutcome("put_vector", "docs", "a", 2),)
    [(_, _, _, revision, space, dimension, data)] = current_vectors(db_path)
    assert (revision, dimension) == (2, 2)
    assert np.frombuffer(data, dtype="<f4").tolist() == pytest.approx([0.6, 0.8])
    assert json.loads(space) == SPACE.to_json()


def test_vector_shape_and_field_are_checked(db: Database) -> None:
    setup_docs(db)
    db.command(cmd(put("docs", "a")))
    with pytest.raises(ValidationError, match="dimension 2"):
        db.command(cmd(PutVector("docs", "a", "embedding", (1.0, 2.0, 3.0))))
    with pytest.raises(ValidationError, match="no vector field 'other'"):
        db.command(cmd(PutVector("docs", "a", "other", (1.0, 2.0))))
    with pytest.raises(ValidationError, match="finite"):
        db.command(cmd(PutVector("docs", "a", "embedding", (1.0, float("inf")))))
    with pytest.raises(ValidationError, match="float32"):
        PutVector("docs", "a", "embedding", (1.0, 10**400))  # no float holds it: typed, no crash
    with pytest.raises(NotFoundError):
        db.command(cmd(PutVector("docs", "missing", "embedding", (1.0, 2.0))))


def test_vector_space_rules(db: Database) -> None:
    for dimension in (0, 4097):
        space = VectorSpace("s", dimension, "cosine", "m", "1")  # type: ignore[arg-type]
        with pytest.raises(
            ValidationError, match=r"space dimension must be an integer in 1\.\.4096"
        ):
            db.command(cmd(ConfigureCollection("c", (), (VectorField("v", space),))))
    wide = VectorSpace("s", 4096, "dot", "m", "1")  # type: ignore[arg-type]
    db.command(cmd(ConfigureCollection("c", (), (VectorField("v", wide),))))
    with pytest.raises(ValidationError, match="unknown metric"):
        VectorSpace("s", 2, "manhattan", "m", "1")  # type: ignore[arg-type]


def test_collections_and_graphs_share_one_namespace(db: Database) -> None:
    db.command(cmd(ConfigureCollection("code")))
    with pytest.raises(ConflictError, match="names a collection"):
        db.command(cmd(ConfigureGraph("code")))
    db.command(cmd(ConfigureGraph("g")))
    with pytest.raises(ConflictError, match="names a graph"):
        db.command(cmd(ConfigureCollection("g")))


# -------------------------------------------------------------- determinism
def _state(path: Path) -> dict[str, list[tuple[object, ...]]]:
    tables = {
        "documents": "SELECT * FROM documents ORDER BY collection, id",
        "vector_rows": "SELECT * FROM vector_rows ORDER BY row",
        "vector_spaces": "SELECT * FROM vector_spaces ORDER BY id",
        "vector_blocks": "SELECT * FROM vector_blocks ORDER BY first_row",
        "facts": "SELECT * FROM facts ORDER BY graph, id",
        "occurrences": "SELECT * FROM occurrences ORDER BY graph, id",
        "collections": "SELECT * FROM collections ORDER BY name",
        "changes": "SELECT * FROM changes ORDER BY position, ordinal",
        "commands": "SELECT principal, database, command_id, fingerprint, ok, position "
        "FROM commands ORDER BY command_id",
    }
    return {name: rows(path, sql) for name, sql in tables.items()}


def test_apply_is_a_pure_function_of_the_commands(tmp_path: Path) -> None:
    from cairn.store import EntityRef, PutFact

    requests = [
        cmd(ConfigureCollection("docs", ("/text",), (VectorField("embedding", SPACE),))),
        cmd(ConfigureGraph("code")),
        cmd(put("docs", "a", "alpha"), put("docs", "b", "beta")),
        cmd(PutVector("docs", "a", "embedding", (1.0, 0.0))),
        cmd(PutFact("code", EntityRef("docs", "a"), EntityRef("docs", "b"), "contains")),
        cmd(put("docs", "c"), put("nowhere", "x")),  # a stored failure
        cmd(DeleteDocument("docs", "b")),
    ]
    receipts: list[list[object]] = []
    states = []
    for name in ("one.db", "two.db"):
        import cairn.store as store

        with store.open(tmp_path / name) as db:
            outcomes: list[object] = []
            for request in requests:
                try:
                    outcomes.append(db.command(request).mutations)
                except NotFoundError as exc:
                    outcomes.append(exc.to_problem())
            receipts.append(outcomes)
        states.append(_state(tmp_path / name))
    assert receipts[0] == receipts[1]
    assert states[0] == states[1]
    assert states[0]["documents"]  # the comparison covered real rows


_KINDS = st.sampled_from(["put_document", "put_vector", "put_fact", "delete_document"])
_TEXT = st.text(min_size=1, max_size=12)


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.tuples(_KINDS, _TEXT, _TEXT, st.integers(0, 2**40)), max_size=60),
    st.integers(1, 7),
)
def test_a_receipt_encoded_in_pieces_is_the_whole_encoding(
    items: list[tuple[str, str, str, int]], piece: int
) -> None:
    from cairn.store import commands
    from cairn.store.commands import (
        CommitReceipt,
        CommitToken,
        MutationOutcome,
        encode_receipt,
        pack_outcome,
        pack_pieces,
        receipt_pieces,
        unpack_outcome,
    )

    token = CommitToken(uuid.UUID(int=7), "main", 12)
    receipt = CommitReceipt(
        uuid.UUID(int=99), token, tuple(MutationOutcome(*item) for item in items)
    )
    whole = encode_receipt(receipt)
    saved = commands.RECEIPT_PIECE_MUTATIONS
    commands.RECEIPT_PIECE_MUTATIONS = piece  # pieces of 1..7 mutations: every boundary
    try:
        pieces = list(receipt_pieces(receipt))
    finally:
        commands.RECEIPT_PIECE_MUTATIONS = saved
    assert b"".join(pieces) == whole
    packed = pack_pieces(pieces)
    assert unpack_outcome(packed) == whole
    if len(whole) <= OUTCOME_PACK_BYTES:
        assert packed == pack_outcome(whole) == whole
    else:
        assert not packed.startswith(b"{")


def test_a_long_receipt_packs_in_pieces_to_what_unpacks_whole() -> None:
    from cairn.store.commands import (
        CommitReceipt,
        CommitToken,
        MutationOutcome,
        encode_receipt,
        pack_pieces,
        receipt_pieces,
        unpack_outcome,
    )

    mutations = tuple(
        MutationOutcome("put_fact", "code", f"sf_{index:064x}", 1) for index in range(20_000)
    )
    receipt = CommitReceipt(uuid.UUID(int=5), CommitToken(uuid.UUID(int=6), "main", 3), mutations)
    whole = encode_receipt(receipt)
    assert len(whole) > 2 * OUTCOME_PACK_BYTES
    packed = pack_pieces(receipt_pieces(receipt))  # three pieces of 8,192 mutations or less
    assert unpack_outcome(packed) == whole
    assert len(packed) < len(whole) // 4
