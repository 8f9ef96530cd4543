"""Text postings load on the first text question, not with the slots: a cut that ranks
no text never reads them, and every text answer equals eagerly loaded columns'."""

from __future__ import annotations

from pathlib import Path

from store_helpers import cmd, put, setup_docs

import cairn.index as index
from cairn.index import Database
from cairn.index.columns import Columns
from cairn.index.text import text_branch
from cairn.store import DeleteDocument

WORDS = ("alpha", "beta", "gamma", "delta")


def _write(db: Database, start: int, count: int) -> None:
    db.command(
        cmd(*(put("docs", f"d{i}", " ".join(WORDS[: 1 + i % 4])) for i in range(start, count)))
    )


def _answer(cut: object, query: str = "alpha gamma") -> list[tuple[str, float]]:
    return [(h.ref.id, h.score) for h in text_branch(cut, "docs", "/text", query, limit=50)]  # type: ignore[arg-type]


def _eager(db_path: Path, position: int) -> list[tuple[str, float]]:
    """The answer at ``position`` (the file's latest) from columns that load postings
    with the slots."""
    reference = index.open(db_path)
    try:
        reference._columns = Columns(text=True)
        with reference.read_cut() as cut:
            assert cut.position == position
            return _answer(cut)
    finally:
        reference.close()


def test_a_cut_without_text_questions_loads_no_postings(db: Database, db_path: Path) -> None:
    setup_docs(db)
    _write(db, 0, 30)
    with db.read_cut() as cut:
        assert cut.columns.ids[1:]  # the slots are there
        assert cut.columns.source._text == {}  # the postings are not
        lazy = _answer(cut)
    assert lazy and lazy == _eager(db_path, db.position)


def test_an_older_cut_loads_what_its_snapshot_holds(db: Database, db_path: Path) -> None:
    # A newer cut catches the columns up before the older one asks its first text
    # question: the older cut loads the postings of its own snapshot's slots, the newer
    # one the rest, and each answers as eager columns at its position would.
    setup_docs(db)
    _write(db, 0, 10)
    with db.read_cut() as old:
        older_position = old.position
        _write(db, 10, 25)
        db.command(cmd(DeleteDocument("docs", "d2")))
        with db.read_cut() as new:  # catches the columns up: slots 11-25, no postings
            assert new.position > older_position
            old_answer = _answer(old)
            new_answer = _answer(new)
        assert {doc for doc, _ in old_answer} <= {f"d{i}" for i in range(10)}
    assert "d2" not in {doc for doc, _ in new_answer}
    assert new_answer == _eager(db_path, db.position)
    assert any(doc == "d20" for doc, _ in new_answer)
    with db.read_cut():  # later catch-ups keep the postings whole
        _write(db, 25, 30)
    with db.read_cut() as latest:
        assert _answer(latest) == _eager(db_path, db.position)


def test_a_checkpoint_before_any_text_question_holds_every_posting(
    db: Database, db_path: Path
) -> None:
    setup_docs(db)
    _write(db, 0, 20)
    with db.read_cut() as cut:
        assert cut.columns.source._text == {}
    db.checkpoint_columns()  # the live columns cannot export: a full build does
    reopened = index.open(db_path)
    try:
        with reopened.read_cut() as cut:
            assert cut.columns.source.snapshot_position == db.position
            assert _answer(cut) == _eager(db_path, db.position)
    finally:
        reopened.close()
