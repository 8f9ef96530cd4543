"""Compaction by generation swap: same answers, less memory, old cuts finish on the old one."""

from __future__ import annotations

import pytest
from store_helpers import SPACE, cmd, put, setup_docs

from cairn.errors import CorruptionError
from cairn.index import Database
from cairn.index.text import text_branch
from cairn.index.vectors import vector_branch
from cairn.store import DeleteDocument, PutVector


def _postings(db: Database) -> int:
    with db.read_cut() as cut:
        index = cut.columns.text_field("docs", "/text", cut.conn)
        assert index is not None
        return sum(len(index.postings(term)[0]) for term in cut.columns.terms.values())


def _vector_rows(db: Database) -> int:
    with db.read_cut() as cut:
        return sum(len(column.slots) for column in cut.columns.vectors.values())


def _answers(db: Database) -> tuple[object, ...]:
    return (
        db.text_search("docs", "/text", "alpha beta gamma", limit=50),
        db.vector_search("docs", "embedding", (1.0, 0.5), SPACE, limit=50),
    )


def _churn(db: Database) -> None:
    setup_docs(db)
    words = ["alpha", "beta", "gamma", "delta"]
    for round_ in range(4):
        db.command(
            cmd(*(put("docs", f"d{i}", " ".join(words[: 1 + (i + round_) % 4])) for i in range(20)))
        )
        db.command(
            cmd(*(PutVector("docs", f"d{i}", "embedding", (1.0, i + round_)) for i in range(20)))
        )
    db.command(cmd(*(DeleteDocument("docs", f"d{i}") for i in range(5))))
    db.command(cmd(PutVector("docs", "d7", "embedding", (0.0, 1.0))))


def test_compaction_keeps_answers_and_drops_dead_rows(db: Database) -> None:
    _churn(db)
    before, postings, vectors = _answers(db), _postings(db), _vector_rows(db)
    position = db.compact()
    assert position == db.position
    assert db.columns_generation == 1
    assert _answers(db) == before
    assert _postings(db) < postings
    assert _vector_rows(db) == 15  # one live vector per live document
    assert vectors > 15
    db.command(cmd(put("docs", "new", "alpha alpha"), put("docs", "d8", "gamma")))
    db.command(cmd(PutVector("docs", "new", "embedding", (1.0, 0.5))))
    hits = db.text_search("docs", "/text", "alpha")
    assert hits[0].ref.id == "new"
    assert db.vector_search("docs", "embedding", (1.0, 0.5), SPACE)[0].ref.id == "new"


def test_an_open_cut_finishes_on_the_old_generation(db: Database) -> None:
    _churn(db)
    with db.read_cut() as old:
        db.command(cmd(put("docs", "d9", "delta"), DeleteDocument("docs", "d10")))
        db.compact()
        text = text_branch(old, "docs", "/text", "alpha", limit=50)
        vectors = vector_branch(old, "docs", "embedding", (1.0, 0.5), SPACE, limit=50)
    assert {h.ref.id for h in text} >= {"d9", "d10"}
    assert {h.ref.id for h in vectors} >= {"d9", "d10"}
    now = {h.ref.id for h in db.text_search("docs", "/text", "alpha", limit=50)}
    assert "d10" not in now
    assert "d9" not in now


def test_a_compacted_generation_refuses_older_positions(db: Database) -> None:
    _churn(db)
    db.compact()
    with db.read_cut() as cut:
        columns = db._columns  # the generation the cut used
        with pytest.raises(CorruptionError, match="serve positions"):
            columns.view(cut.position - 1)
