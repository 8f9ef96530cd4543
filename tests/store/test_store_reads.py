"""Read cuts and documents: one pinned position, catch-up, redaction, row policy."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from store_helpers import cmd, put, setup_docs

from cairn.errors import NotFoundError, PermissionDeniedError, ValidationError
from cairn.index import Database as IndexedDatabase
from cairn.index import open as open_indexed
from cairn.index.text import text_branch
from cairn.store import (
    Capability,
    ConfigurePolicy,
    ConfigurePrincipal,
    Database,
    DeleteDocument,
    DocumentAccess,
    EntityRef,
    FieldPolicy,
    Grant,
    PutDocument,
)
from cairn.store.reads import read_document

READER = Grant("main", "docs", frozenset({Capability.DOCUMENTS_READ}))


@pytest.fixture
def db(indexed: IndexedDatabase) -> IndexedDatabase:
    """The database with its columns: document reads are checked beside the text branch
    in the same cuts."""
    return indexed


def test_get_document_returns_the_live_revision(db: Database) -> None:
    setup_docs(db)
    db.command(cmd(PutDocument("docs", "a", {"text": "one", "n": [1, 2]})))
    db.command(cmd(PutDocument("docs", "a", {"text": "two"})))
    found = db.get_document("docs", "a")
    assert found.ref == EntityRef("docs", "a")
    assert found.revision == 2
    assert dict(found.body) == {"text": "two"}
    assert (found.redacted, found.redacted_fields) == (False, ())
    db.command(cmd(DeleteDocument("docs", "a")))
    with pytest.raises(NotFoundError):
        db.get_document("docs", "a")
    with pytest.raises(NotFoundError, match="no collection"):
        db.get_document("nowhere", "a")
    with pytest.raises(ValidationError):
        db.get_document("docs", "")


def test_each_read_takes_exactly_one_cut(db: Database) -> None:
    setup_docs(db)
    db.command(cmd(put("docs", "a", "alpha")))
    before = db.read_cut_acquisitions
    db.get_document("docs", "a")
    assert db.read_cut_acquisitions == before + 1
    db.text_search("docs", "/text", "alpha")
    assert db.read_cut_acquisitions == before + 2
    with pytest.raises(NotFoundError):
        db.get_document("docs", "missing")
    assert db.read_cut_acquisitions == before + 3


def test_a_cut_stays_at_its_position_while_writes_land(db: Database) -> None:
    setup_docs(db)
    db.command(cmd(put("docs", "a", "old words")))
    with db.read_cut() as cut:
        assert cut.position == 2
        db.command(cmd(put("docs", "a", "new words"), put("docs", "b", "new")))
        # A later cut catches the columns up past this one; this cut is unaffected.
        assert [h.ref.id for h in db.text_search("docs", "/text", "new")] == ["b", "a"]
        assert read_document(cut, "docs", "a").body["text"] == "old words"
        with pytest.raises(NotFoundError):
            read_document(cut, "docs", "b")
        hits = text_branch(cut, "docs", "/text", "new old", limit=10)
        assert [(h.ref.id, h.rank) for h in hits] == [("a", 1)]
    assert db.get_document("docs", "a").body["text"] == "new words"


def test_writes_from_another_handle_are_caught_up(db_path: Path) -> None:
    with open_indexed(db_path) as first, open_indexed(db_path) as second:
        setup_docs(first)
        first.command(cmd(put("docs", "a", "shared term")))
        assert [h.ref.id for h in first.text_search("docs", "/text", "term")] == ["a"]
        second.command(cmd(put("docs", "b", "term term"), DeleteDocument("docs", "a")))
        assert [h.ref.id for h in first.text_search("docs", "/text", "term")] == ["b"]


def test_cold_open_loads_the_text_index_from_sqlite(db_path: Path) -> None:
    with open_indexed(db_path) as db:
        setup_docs(db)
        db.command(cmd(put("docs", "a", "persisted postings"), put("docs", "b", "other")))
        warm = db.text_search("docs", "/text", "postings")
    with open_indexed(db_path) as db:
        assert db.text_search("docs", "/text", "postings") == warm
        assert [h.ref.id for h in warm] == ["a"]


def test_concurrent_readers_and_a_writer(db: Database) -> None:
    setup_docs(db)
    db.command(cmd(put("docs", "seed", "word")))
    errors: list[BaseException] = []

    def read() -> None:
        try:
            for _ in range(20):
                hits = db.text_search("docs", "/text", "word", limit=1000)
                assert hits and hits[0].rank == 1
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    readers = [threading.Thread(target=read) for _ in range(4)]
    for thread in readers:
        thread.start()
    for index in range(20):
        db.command(cmd(put("docs", f"d{index}", "word " * (index + 1))))
    for thread in readers:
        thread.join()
    assert errors == []


# --------------------------------------------------------------- policies
@pytest.fixture
def policed(db: Database) -> Database:
    setup_docs(db)
    db.command(
        cmd(
            ConfigurePolicy("docs", (FieldPolicy("/secret", read_grant="pii"),)),
            PutDocument("docs", "a", {"text": "t", "secret": "s"}, access=DocumentAccess("bob")),
            PutDocument("docs", "b", {"text": "t"}, access=DocumentAccess("alice")),
            ConfigurePrincipal("reader", grants=(READER,)),
            ConfigurePrincipal("alice", grants=(READER,), owner_id="alice", restrict_rows=True),
            ConfigurePrincipal("nobody"),
        )
    )
    return db


def test_reads_redact_fields_without_the_read_grant(policed: Database) -> None:
    seen = policed.get_document("docs", "a", "reader")
    assert dict(seen.body) == {"text": "t"}
    assert (seen.redacted, seen.redacted_fields) == (True, ("/secret",))
    assert dict(policed.get_document("docs", "a").body) == {"text": "t", "secret": "s"}


def test_reads_apply_row_policy_and_grants(policed: Database) -> None:
    with pytest.raises(NotFoundError):
        policed.get_document("docs", "a", "alice")
    assert policed.get_document("docs", "b", "alice").revision == 1
    # No grant at all on the collection: answered as a missing collection (issue 18).
    with pytest.raises(NotFoundError, match="no collection 'docs'") as hidden:
        policed.get_document("docs", "b", "nobody")
    with pytest.raises(NotFoundError) as missing:
        policed.get_document("nothere", "b", "nobody")
    assert hidden.value.details == {"collection": "docs"}
    assert missing.value.details == {"collection": "nothere"}
    # Some grant on it, but not a read one: the missing capability is named.
    writer = Grant("main", "docs", frozenset({Capability.DOCUMENTS_WRITE}))
    policed.command(cmd(ConfigurePrincipal("writer", grants=(writer,))))
    with pytest.raises(PermissionDeniedError):
        policed.get_document("docs", "b", "writer")


def test_text_search_masks_hidden_rows_but_keeps_corpus_statistics(policed: Database) -> None:
    owner_hits = policed.text_search("docs", "/text", "t")
    alice_hits = policed.text_search("docs", "/text", "t", "alice")
    assert [h.ref.id for h in owner_hits] == ["a", "b"]
    assert [h.ref.id for h in alice_hits] == ["b"]
    assert alice_hits[0].score == owner_hits[1].score
    assert alice_hits[0].rank == 1


def test_text_search_needs_the_use_grant_on_its_field(db: Database) -> None:
    setup_docs(db)
    db.command(
        cmd(
            ConfigurePolicy("docs", (FieldPolicy("/text", use_grant="rank"),)),
            ConfigurePrincipal("reader", grants=(READER,)),
            ConfigurePrincipal("ranker", grants=(READER,), field_grants=frozenset({"rank"})),
        )
    )
    with pytest.raises(PermissionDeniedError, match="may not use field /text"):
        db.text_search("docs", "/text", "x", "reader")
    assert db.text_search("docs", "/text", "x", "ranker") == ()
    with pytest.raises(ValidationError, match="no text field '/body'"):
        db.text_search("docs", "/body", "x")
