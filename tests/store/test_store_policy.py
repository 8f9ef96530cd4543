"""Principals, API keys, grants with wildcards, row policy, field policies, revocation, expiry."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from store_helpers import cmd, put, rows, setup_docs

from cairn.errors import (
    ConflictError,
    MissingEndpointError,
    NotFoundError,
    PermissionDeniedError,
    UnauthenticatedError,
    ValidationError,
)
from cairn.store import (
    OWNER,
    ApiKeyVerifier,
    Capability,
    ConfigurePolicy,
    ConfigurePrincipal,
    Database,
    DocumentAccess,
    EntityRef,
    FieldPolicy,
    Grant,
    PatchDocument,
    PatchOperation,
    Principal,
    PutDocument,
    PutFact,
    issue_api_key,
    make_verifier,
)
from cairn.store.policy import field_allowed, pattern_matches, redact, row_visible, verify_secret

T0 = datetime(2030, 1, 1, tzinfo=UTC)
ALL_DOCS = frozenset({Capability.DOCUMENTS_READ, Capability.DOCUMENTS_WRITE})


def grant(resource: str, *caps: Capability, database: str = "main") -> Grant:
    return Grant(database, resource, frozenset(caps))


# -------------------------------------------------------------- wildcards
@pytest.mark.parametrize(
    ("pattern", "value", "matches"),
    [
        ("*", "anything", True),
        ("docs", "docs", True),
        ("docs", "docs2", False),
        ("doc*", "docs", True),
        ("doc*", "doc", True),
        ("doc*", "adoc", False),
        ("*s", "docs", True),
        ("a*c", "abbbc", True),
        ("a*c", "abcd", False),
        ("a.c", "abc", False),
    ],
)
def test_wildcard_patterns(pattern: str, value: str, matches: bool) -> None:
    assert pattern_matches(pattern, value) is matches


def test_grants_apply_to_matching_database_and_resource() -> None:
    principal = Principal(
        "p",
        grants=(
            grant("doc*", Capability.DOCUMENTS_READ),
            Grant("*", "shared", frozenset({Capability.QUERY})),
        ),
    )
    assert principal.capabilities("main", "docs") == {Capability.DOCUMENTS_READ}
    assert principal.capabilities("other", "docs") == frozenset()
    assert principal.capabilities("other", "shared") == {Capability.QUERY}
    assert not principal.is_admin("main", "docs")


def test_admin_implies_every_capability() -> None:
    admin = Principal("a", grants=(grant("docs", Capability.ADMIN),))
    assert admin.capabilities("main", "docs") == frozenset(Capability)
    assert admin.capabilities("main", "other") == frozenset()
    assert OWNER.is_admin("any-db", "any-resource")


def test_grant_validation() -> None:
    with pytest.raises(ValidationError, match="unknown capability"):
        Grant("main", "docs", frozenset({"fly"}))  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="at least one capability"):
        Grant("main", "docs", frozenset())
    with pytest.raises(ValidationError, match="blank"):
        Grant("main", " ", frozenset({Capability.QUERY}))


# --------------------------------------------------------------- API keys
def test_issued_keys_authenticate_and_only_verifiers_are_stored(
    db: Database, db_path: Path
) -> None:
    issued = issue_api_key("k1")
    secret = issued.token.rpartition(".")[2]
    assert issued.token.startswith("cairn_k1.")
    assert secret not in issued.verifier.verifier
    db.command(cmd(ConfigurePrincipal("bot", api_keys=(issued.verifier,))))
    assert db.authenticate(issued.token).id == "bot"
    stored = rows(db_path, "SELECT key_id, principal, verifier FROM api_keys")
    assert stored == [("k1", "bot", "sha256$" + hashlib.sha256(secret.encode()).hexdigest())]
    dump = b"".join(bytes(r[0]) for r in rows(db_path, "SELECT outcome FROM commands"))
    everything = repr(rows(db_path, "SELECT * FROM principals")) + repr(stored) + dump.decode()
    assert secret not in everything


@pytest.mark.parametrize(
    "token", ["", "nope", "cairn_", "cairn_k1", "cairn_.secret", "cairn_k1.wrong", "cairn_zz.x"]
)
def test_bad_keys_are_unauthenticated(db: Database, token: str) -> None:
    db.command(cmd(ConfigurePrincipal("bot", api_keys=(issue_api_key("k1").verifier,))))
    with pytest.raises(UnauthenticatedError):
        db.authenticate(token)


def test_pbkdf2_verifiers_match_an_independent_derivation() -> None:
    salt = bytes(range(16))
    verifier = make_verifier("correct horse", slow=True, salt=salt, iterations=1000)
    derived = hashlib.pbkdf2_hmac("sha256", b"correct horse", salt, 1000).hex()
    assert verifier == f"pbkdf2_sha256$1000${salt.hex()}${derived}"
    assert verify_secret("correct horse", verifier)
    assert not verify_secret("correct horsf", verifier)


def test_pbkdf2_keys_authenticate(db: Database) -> None:
    verifier = make_verifier("chosen-secret", slow=True, iterations=1000)
    db.command(cmd(ConfigurePrincipal("human", api_keys=(ApiKeyVerifier("h1", verifier),))))
    assert db.authenticate("cairn_h1.chosen-secret").id == "human"


def test_malformed_verifiers_are_refused() -> None:
    for verifier in ("plain", "sha256$zz", "md5$00", "pbkdf2_sha256$x$00$00"):
        with pytest.raises(ValidationError, match="verifier"):
            ApiKeyVerifier("k", verifier)


def test_leaving_a_key_out_revokes_it_and_key_ids_are_unique(db: Database) -> None:
    first, second = issue_api_key("k1"), issue_api_key("k2")
    db.command(cmd(ConfigurePrincipal("bot", api_keys=(first.verifier, second.verifier))))
    db.command(cmd(ConfigurePrincipal("bot", api_keys=(second.verifier,))))
    with pytest.raises(UnauthenticatedError):
        db.authenticate(first.token)
    assert db.authenticate(second.token).id == "bot"
    with pytest.raises(ConflictError, match="another principal"):
        db.command(cmd(ConfigurePrincipal("thief", api_keys=(second.verifier,))))


# ---------------------------------------------------- revocation and expiry
def test_revoked_principals_cannot_authenticate_or_write(db: Database, db_path: Path) -> None:
    setup_docs(db)
    issued = issue_api_key("k1")
    writer = grant("docs", Capability.DOCUMENTS_WRITE)
    db.command(cmd(ConfigurePrincipal("bot", grants=(writer,), api_keys=(issued.verifier,))))
    request = cmd(put("docs", "a"))
    revoked = ConfigurePrincipal("bot", grants=(writer,), revoked=True, api_keys=(issued.verifier,))
    db.command(cmd(revoked))
    with pytest.raises(UnauthenticatedError, match="revoked"):
        db.authenticate(issued.token)
    with pytest.raises(UnauthenticatedError, match="revoked"):
        db.command(request, principal="bot")
    # Authentication failures are not the command's outcome: nothing is stored.
    assert rows(db_path, "SELECT count(*) FROM commands WHERE principal = 'bot'") == [(0,)]


def test_expiry_is_judged_at_the_time_passed_in(db: Database) -> None:
    setup_docs(db)
    writer = grant("docs", Capability.DOCUMENTS_WRITE)
    db.command(cmd(ConfigurePrincipal("temp", grants=(writer,), expires_at=T0)))
    before = T0 - timedelta(seconds=1)
    assert db.command(cmd(put("docs", "a")), principal="temp", now=before).mutations
    with pytest.raises(UnauthenticatedError, match="expired"):
        db.command(cmd(put("docs", "b")), principal="temp", now=T0)
    assert db.principal("temp", now=before).expires_at == T0
    with pytest.raises(UnauthenticatedError):
        db.principal("temp", now=T0 + timedelta(days=1))


def test_expires_at_must_be_timezone_aware() -> None:
    with pytest.raises(ValidationError, match="timezone-aware"):
        ConfigurePrincipal("p", expires_at=datetime(2030, 1, 1))


def test_unknown_principals_are_unauthenticated(db: Database) -> None:
    with pytest.raises(UnauthenticatedError, match="unknown principal 'ghost'"):
        db.command(cmd(put("docs", "a")), principal="ghost")


def test_the_owner_is_built_in_and_fixed(db: Database) -> None:
    with pytest.raises(ValidationError, match="built in"):
        db.command(cmd(ConfigurePrincipal("owner")))
    assert db.principal() is OWNER


def test_policy_epoch_grows_on_each_reconfiguration(db: Database) -> None:
    db.command(cmd(ConfigurePrincipal("bot")))
    assert db.principal("bot").policy_epoch == 1
    db.command(cmd(ConfigurePrincipal("bot", projects=frozenset({"p"}))))
    assert db.principal("bot").policy_epoch == 2


# ------------------------------------------------------------------ grants
def test_writes_need_documents_write_on_the_collection(db: Database) -> None:
    setup_docs(db)
    db.command(cmd(ConfigurePrincipal("reader", grants=(grant("*", Capability.DOCUMENTS_READ),))))
    with pytest.raises(PermissionDeniedError, match="needs documents_write on 'docs'"):
        db.command(cmd(put("docs", "a")), principal="reader")
    db.command(cmd(ConfigurePrincipal("w", grants=(grant("do*", Capability.DOCUMENTS_WRITE),))))
    assert db.command(cmd(put("docs", "a")), principal="w").mutations[0].revision == 1


def test_configuration_needs_admin(db: Database) -> None:
    setup_docs(db)
    db.command(cmd(ConfigurePrincipal("w", grants=(Grant("main", "docs", ALL_DOCS),))))
    with pytest.raises(PermissionDeniedError, match="admin"):
        db.command(cmd(ConfigurePrincipal("other")), principal="w")
    with pytest.raises(PermissionDeniedError, match="admin"):
        db.command(cmd(ConfigurePolicy("docs")), principal="w")
    db.command(cmd(ConfigurePrincipal("docadmin", grants=(grant("docs", Capability.ADMIN),))))
    db.command(cmd(ConfigurePolicy("docs")), principal="docadmin")
    with pytest.raises(PermissionDeniedError):
        db.command(cmd(ConfigurePrincipal("other")), principal="docadmin")


def test_a_denied_command_is_a_stored_outcome(db: Database) -> None:
    setup_docs(db)
    db.command(cmd(ConfigurePrincipal("reader", grants=(grant("*", Capability.DOCUMENTS_READ),))))
    request = cmd(put("docs", "a"))
    with pytest.raises(PermissionDeniedError):
        db.command(request, principal="reader")
    writer = grant("*", Capability.DOCUMENTS_WRITE)
    db.command(cmd(ConfigurePrincipal("reader", grants=(writer,))))
    with pytest.raises(PermissionDeniedError):
        db.command(request, principal="reader")


# -------------------------------------------------------------- row policy
def test_row_visibility_rule_clauses() -> None:
    restricted = Principal(
        "r", owner_id="alice", projects=frozenset({"apollo"}), restrict_rows=True
    )
    assert row_visible(restricted, "main", "docs", "alice", None)
    assert row_visible(restricted, "main", "docs", None, "apollo")
    assert not row_visible(restricted, "main", "docs", "bob", "gemini")
    assert not row_visible(restricted, "main", "docs", None, None)
    admin = Principal("a", grants=(grant("docs", Capability.ADMIN),), restrict_rows=True)
    assert row_visible(admin, "main", "docs", "bob", None)
    open_rows = Principal("o")
    assert row_visible(open_rows, "main", "docs", "bob", None)


@pytest.fixture
def rows_db(db: Database) -> Database:
    setup_docs(db, graph="code")
    db.command(
        cmd(
            put("docs", "alices", access=DocumentAccess("alice")),
            put("docs", "bobs", access=DocumentAccess("bob")),
            put("docs", "shared", access=DocumentAccess("bob", "apollo")),
            ConfigurePrincipal(
                "alice",
                grants=(
                    Grant("main", "docs", ALL_DOCS),
                    grant("code", Capability.GRAPH_WRITE),
                ),
                owner_id="alice",
                projects=frozenset({"apollo"}),
                restrict_rows=True,
            ),
        )
    )
    return db


def test_hidden_rows_look_missing_to_writers(rows_db: Database) -> None:
    with pytest.raises(NotFoundError, match="no document 'bobs'"):
        rows_db.command(cmd(put("docs", "bobs", access=DocumentAccess("alice"))), "alice")
    op = (PatchOperation("set", "/text", "x"),)
    with pytest.raises(NotFoundError):
        rows_db.command(cmd(PatchDocument("docs", "bobs", op, 1)), "alice")
    mine = rows_db.command(cmd(put("docs", "alices", access=DocumentAccess("alice"))), "alice")
    assert mine.mutations[0].revision == 2
    shared = rows_db.command(
        cmd(PatchDocument("docs", "shared", (PatchOperation("set", "/text", "x"),), 1)), "alice"
    )
    assert shared.mutations[0].revision == 2


def test_restricted_writers_cannot_create_rows_they_could_not_see(rows_db: Database) -> None:
    with pytest.raises(PermissionDeniedError, match="could not see"):
        rows_db.command(cmd(put("docs", "new", access=DocumentAccess("bob"))), "alice")
    with pytest.raises(PermissionDeniedError):
        rows_db.command(cmd(put("docs", "new")), "alice")
    assert rows_db.command(cmd(put("docs", "new", access=DocumentAccess(None, "apollo"))), "alice")


def test_fact_endpoints_must_be_visible_to_the_writer(rows_db: Database) -> None:
    alices, bobs = EntityRef("docs", "alices"), EntityRef("docs", "bobs")
    with pytest.raises(MissingEndpointError, match="target docs/bobs"):
        rows_db.command(cmd(PutFact("code", alices, bobs, "contains")), "alice")
    shared = EntityRef("docs", "shared")
    assert rows_db.command(cmd(PutFact("code", alices, shared, "contains")), "alice")
    assert rows_db.command(cmd(PutFact("code", alices, bobs, "contains")))  # the owner sees all


# ---------------------------------------------------------- field policies
SECRET = FieldPolicy("/secret", read_grant="pii", use_grant="pii-use", write_grant="pii-write")


@pytest.fixture
def fields_db(db: Database) -> Database:
    setup_docs(db)
    db.command(
        cmd(
            ConfigurePolicy("docs", (SECRET,)),
            PutDocument("docs", "a", {"text": "t", "secret": "s"}),
            ConfigurePrincipal("plain", grants=(Grant("main", "docs", ALL_DOCS),)),
            ConfigurePrincipal(
                "cleared",
                grants=(Grant("main", "docs", ALL_DOCS),),
                field_grants=frozenset({"pii-write"}),
            ),
        )
    )
    return db


def test_writing_a_guarded_field_needs_its_write_grant(fields_db: Database) -> None:
    change = PatchDocument("docs", "a", (PatchOperation("set", "/secret", "new"),), 1)
    with pytest.raises(PermissionDeniedError, match="write field /secret"):
        fields_db.command(cmd(change), "plain")
    drop = PatchDocument("docs", "a", (PatchOperation("remove", "/secret"),), 1)
    with pytest.raises(PermissionDeniedError):
        fields_db.command(cmd(drop), "plain")
    other = PatchDocument("docs", "a", (PatchOperation("set", "/text", "u"),), 1)
    assert fields_db.command(cmd(other), "plain").mutations[0].revision == 2
    again = PatchDocument("docs", "a", (PatchOperation("set", "/secret", "new"),), 2)
    assert fields_db.command(cmd(again), "cleared").mutations[0].revision == 3


def test_field_read_and_use_checks() -> None:
    plain = Principal("p")
    cleared = Principal("c", field_grants=frozenset({"pii", "pii-use"}))
    admin = Principal("a", grants=(grant("docs", Capability.ADMIN),))
    policies = (SECRET,)
    body = {"text": "t", "secret": {"ssn": "1"}, "other": 1}
    assert redact(plain, "main", "docs", policies, body) == (
        {"text": "t", "other": 1},
        ("/secret",),
    )
    assert redact(cleared, "main", "docs", policies, body) == (body, ())
    assert redact(admin, "main", "docs", policies, body) == (body, ())
    assert body == {"text": "t", "secret": {"ssn": "1"}, "other": 1}  # input untouched
    assert not field_allowed(plain, "main", "docs", policies, "/secret/ssn", "use")
    assert not field_allowed(plain, "main", "docs", policies, "", "use")
    assert field_allowed(plain, "main", "docs", policies, "/text", "use")
    assert field_allowed(cleared, "main", "docs", policies, "/secret", "use")
    assert field_allowed(admin, "main", "docs", policies, "/secret", "write")


def test_policies_need_an_existing_resource(db: Database) -> None:
    with pytest.raises(NotFoundError, match="no collection or graph 'docs'"):
        db.command(cmd(ConfigurePolicy("docs", (SECRET,))))
    setup_docs(db)
    with pytest.raises(ValidationError, match="unique"):
        db.command(cmd(ConfigurePolicy("docs", (SECRET, SECRET))))
