"""Re-indexing when a collection's text fields change: same transaction, exact, MVCC-safe."""

from __future__ import annotations

from pathlib import Path

import pytest
from store_helpers import SPACE, cmd, rows

import cairn.index as index
from cairn.errors import ValidationError
from cairn.index import Database
from cairn.index.text import text_branch
from cairn.store import ConfigureCollection, DeleteDocument, PutDocument, PutVector, VectorField

BODIES = {
    "a": {"text": "alpha beta", "title": "load user"},
    "b": {"text": "beta gamma", "title": "getUserName"},
    "c": {"text": "gamma", "title": "parse config user"},
    "gone": {"text": "x", "title": "user"},
}
VECTOR = VectorField("embedding", SPACE)


def _fill(db: Database, fields: tuple[str, ...]) -> None:
    db.command(cmd(ConfigureCollection("docs", fields, (VECTOR,))))
    db.command(cmd(*(PutDocument("docs", k, v) for k, v in BODIES.items())))
    db.command(cmd(DeleteDocument("docs", "gone")))
    db.command(cmd(PutVector("docs", "a", "embedding", (1.0, 0.0))))


def _hits(db: Database, field: str, text: str) -> list[tuple[str, float]]:
    return [(h.ref.id, h.score) for h in db.text_search("docs", field, text)]


def test_adding_a_field_indexes_existing_documents(db: Database, tmp_path: Path) -> None:
    _fill(db, ("/text",))
    with pytest.raises(ValidationError, match="no text field"):
        db.text_search("docs", "/title", "user")
    with db.read_cut() as old:
        db.command(cmd(ConfigureCollection("docs", ("/text", "/title"), (VECTOR,))))
        before = [(h.ref.id, h.score) for h in text_branch(old, "docs", "/text", "beta", limit=9)]
        with pytest.raises(ValidationError, match="no text field"):
            text_branch(old, "docs", "/title", "user", limit=9)
    # Oracle: a database configured with both fields from the start.
    with index.open(tmp_path / "fresh.db") as fresh:
        _fill(fresh, ("/text", "/title"))
        assert _hits(db, "/title", "user") == _hits(fresh, "/title", "user")
        assert _hits(db, "/text", "beta") == _hits(fresh, "/text", "beta") == before
    assert {h.ref.id for h in db.text_search("docs", "/title", "user")} == {"a", "b", "c"}
    assert db.get_document("docs", "a").revision == 1
    hits = db.vector_search("docs", "embedding", (1.0, 0.0), SPACE)
    assert [h.ref.id for h in hits] == ["a"]


def test_reindex_happens_in_the_configure_transaction(db: Database) -> None:
    _fill(db, ("/text",))
    receipt = db.command(cmd(ConfigureCollection("docs", ("/title",), (VECTOR,))))
    position = receipt.token.position
    assert rows(db.path, "SELECT count(*) FROM slots WHERE birth = ?", position) == [(3,)]
    assert rows(db.path, "SELECT count(*) FROM slots WHERE death = ?", position) == [(3,)]
    with pytest.raises(ValidationError, match="no text field"):
        db.text_search("docs", "/text", "beta")
    assert [h.ref.id for h in db.text_search("docs", "/title", "config")] == ["c"]


def test_same_fields_do_not_reindex(db: Database) -> None:
    _fill(db, ("/text", "/title"))
    slots = rows(db.path, "SELECT count(*) FROM slots")
    db.command(cmd(ConfigureCollection("docs", ("/title", "/text"), (VECTOR,))))
    assert rows(db.path, "SELECT count(*) FROM slots") == slots


def test_a_reopened_file_sees_the_reindexed_fields(db_path: Path) -> None:
    with index.open(db_path) as db:
        _fill(db, ("/text",))
        db.command(cmd(ConfigureCollection("docs", ("/text", "/title"), (VECTOR,))))
        expected = _hits(db, "/title", "user")
    with index.open(db_path) as db:
        assert _hits(db, "/title", "user") == expected
