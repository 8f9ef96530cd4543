"""The analyzer and exact BM25, checked against a test-owned arithmetic oracle."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from store_helpers import cmd, put, setup_docs

from cairn.index import Database
from cairn.index.bm25 import CorpusStats, bm25_scores, bm25_sum
from cairn.store import DeleteDocument, PutDocument
from cairn.store.text import analyze


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("getUserName", ["getusername", "get", "user", "name"]),
        ("snake_case_id", ["snake_case_id", "snake", "case", "id"]),
        ("HTTPServer2", ["httpserver2", "http", "server", "2"]),
        ("plain words, here.", ["plain", "words", "here"]),
        ("\ufb01le", ["file"]),  # NFKC folds the ligature
        ("\uff21\uff22\uff23", ["abc"]),  # full-width letters
        ("Café déjà", ["café", "déjà"]),
        ("__init__", ["__init__", "init"]),
        ("___", []),
        ("", []),
    ],
)
def test_analyzer(text: str, tokens: list[str]) -> None:
    assert analyze(text) == tokens


# The fixture corpus: plain lowercase words, so the oracle tokenises with str.split.
CORPUS = {
    "a": "needle needle haystack",
    "b": "needle",
    "c": "haystack haystack haystack hay",
    "d": "a long document about many things and one needle among them",
    "e": "nothing relevant at all",
}


def oracle(docs: dict[str, str], query: str) -> list[tuple[str, float]]:
    """Textbook BM25 (k1 1.2, b 0.75, ln(1 + (N - df + .5)/(df + .5))), ranked, ties by ID."""
    k1, b = 1.2, 0.75
    tokens = {doc_id: text.split() for doc_id, text in docs.items()}
    n = len(tokens)
    average = sum(len(t) for t in tokens.values()) / n
    scores: dict[str, float] = {}
    for term in dict.fromkeys(query.split()):
        df = sum(1 for t in tokens.values() if term in t)
        if df == 0:
            continue
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        for doc_id, words in tokens.items():
            tf = words.count(term)
            if tf:
                denominator = tf + k1 * (1 - b + b * len(words) / average)
                scores[doc_id] = scores.get(doc_id, 0.0) + idf * tf * (k1 + 1) / denominator
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def test_the_fixture_tokenises_the_same_both_ways() -> None:
    for text in CORPUS.values():
        assert analyze(text) == text.split()


@pytest.fixture
def corpus_db(db: Database) -> Database:
    setup_docs(db)
    db.command(cmd(*(put("docs", doc_id, text) for doc_id, text in CORPUS.items())))
    return db


@pytest.mark.parametrize("query", ["needle", "haystack", "needle haystack", "hay needle zebra"])
def test_scores_and_order_match_the_oracle(corpus_db: Database, query: str) -> None:
    hits = corpus_db.text_search("docs", "/text", query)
    expected = oracle(CORPUS, query)
    assert [h.ref.id for h in hits] == [doc_id for doc_id, _ in expected]
    assert [h.score for h in hits] == pytest.approx([s for _, s in expected], rel=1e-12)
    assert [h.rank for h in hits] == list(range(1, len(expected) + 1))


def test_statistics_follow_the_live_documents_at_the_cut(corpus_db: Database) -> None:
    corpus_db.command(cmd(DeleteDocument("docs", "e"), put("docs", "c", "needle in hay")))
    live = {**CORPUS, "c": "needle in hay"}
    del live["e"]
    hits = corpus_db.text_search("docs", "/text", "needle hay")
    expected = oracle(live, "needle hay")
    assert [(h.ref.id, h.score) for h in hits] == [
        (doc_id, pytest.approx(score, rel=1e-12)) for doc_id, score in expected
    ]


def test_documents_without_the_field_count_with_length_zero(corpus_db: Database) -> None:
    corpus_db.command(cmd(PutDocument("docs", "f", {"title": "no text field"})))
    hits = corpus_db.text_search("docs", "/text", "needle")
    expected = oracle({**CORPUS, "f": ""}, "needle")
    assert [h.score for h in hits] == pytest.approx([s for _, s in expected], rel=1e-12)


def test_allowed_ids_mask_before_ranking_without_changing_statistics(
    corpus_db: Database,
) -> None:
    full = dict(oracle(CORPUS, "needle"))
    hits = corpus_db.text_search("docs", "/text", "needle", allowed_ids=["b", "d", "zzz"])
    assert [(h.ref.id, h.rank) for h in hits] == [("b", 1), ("d", 2)]
    assert [h.score for h in hits] == pytest.approx([full["b"], full["d"]], rel=1e-12)
    assert corpus_db.text_search("docs", "/text", "needle", allowed_ids=[]) == ()


def test_limit_and_ties_break_by_id(db: Database) -> None:
    setup_docs(db)
    db.command(cmd(*(put("docs", doc_id, "same words") for doc_id in ("z", "m", "a"))))
    hits = db.text_search("docs", "/text", "same", limit=2)
    assert [h.ref.id for h in hits] == ["a", "m"]
    assert hits[0].score == hits[1].score


def test_identifier_queries_match_split_parts(db: Database) -> None:
    setup_docs(db)
    db.command(cmd(put("docs", "fn", "def getUserName"), put("docs", "other", "user admin")))
    assert [h.ref.id for h in db.text_search("docs", "/text", "user name")] == ["fn", "other"]
    # The query is analysed like the text: its parts match too, the whole token ranks first.
    whole = db.text_search("docs", "/text", "getUserName")
    assert [h.ref.id for h in whole] == ["fn", "other"]
    assert whole[0].score > whole[1].score


def test_array_fields_are_indexed_as_joined_text(db: Database) -> None:
    setup_docs(db)
    db.command(cmd(PutDocument("docs", "a", {"text": ["alpha", "beta"]})))
    assert [h.ref.id for h in db.text_search("docs", "/text", "beta")] == ["a"]


def test_bm25_kernel_on_hand_made_postings() -> None:
    lengths = np.array([0.0, 2.0, 4.0])
    postings = [(np.array([1, 2]), np.array([1.0, 3.0]))]
    slots, scores = bm25_scores(postings, lengths, CorpusStats(documents=4, average_length=3.0))
    idf = math.log(1 + (4 - 2 + 0.5) / (2 + 0.5))

    def part(tf: float, length: float) -> float:
        return idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / 3.0))

    assert slots.tolist() == [1, 2]
    assert scores.tolist() == pytest.approx([part(1, 2), part(3, 4)], rel=1e-12)
    empty_slots, empty_scores = bm25_scores([], lengths, CorpusStats(4, 3.0))
    assert len(empty_slots) == len(empty_scores) == 0


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.lists(st.tuples(st.integers(0, 49), st.floats(1e-3, 1e3)), max_size=40),
        max_size=5,
    )
)
def test_bm25_sum_is_the_exact_sum_in_any_term_order(
    terms: list[list[tuple[int, float]]],
) -> None:
    weighted = []
    for postings in terms:
        by_slot = dict(postings)  # a term holds a slot at most once
        slots = np.asarray(sorted(by_slot), dtype=np.int64)
        weighted.append((slots, np.asarray([by_slot[s] for s in slots.tolist()])))
    parts: list[list[float]] = [[] for _ in range(50)]
    for slots, weights in weighted:
        for slot, weight in zip(slots.tolist(), weights.tolist(), strict=True):
            parts[slot].append(weight)
    expected = [math.fsum(found) for found in parts]  # the oracle: exact, rounded once
    assert bm25_sum(weighted, 50).tolist() == expected  # the same floats, not just close
    assert bm25_sum(weighted[::-1], 50).tolist() == expected  # whatever the term order


def test_mathematically_tied_scores_tie_and_order_by_reference(db: Database) -> None:
    # Three query terms of equal df; every document holds them with frequencies 1, 2, 3
    # in some order and has the same length: all six scores are the same real number.
    # Added term by term, (s1 + s2) + s3 and (s1 + s3) + s2 differ by an ulp.
    setup_docs(db)
    orders = ["alpha beta gamma", "alpha gamma beta", "beta alpha gamma"]
    orders += ["beta gamma alpha", "gamma alpha beta", "gamma beta alpha"]
    texts = {}
    for number, order in enumerate(orders):
        first, second, third = order.split()
        texts[f"d{5 - number}"] = " ".join([first] + [second] * 2 + [third] * 3)
    db.command(cmd(*(PutDocument("docs", doc_id, {"text": t}) for doc_id, t in texts.items())))
    db.command(cmd(PutDocument("docs", "other", {"text": "delta"})))  # stats with noise
    hits = db.text_search("docs", "/text", "alpha beta gamma", limit=10)
    assert len({hit.score for hit in hits}) == 1
    assert [hit.ref.id for hit in hits] == sorted(texts)  # ties broken by reference


def test_term_weights_are_reused_at_a_position_and_renewed_after_a_write(db: Database) -> None:
    setup_docs(db)
    db.command(cmd(PutDocument("docs", "a", {"text": "needle hay"})))
    db.command(cmd(PutDocument("docs", "b", {"text": "needle needle"})))
    first = [(h.ref.id, h.score) for h in db.text_search("docs", "/text", "needle")]
    held = len(db._columns.arrays)
    again = [(h.ref.id, h.score) for h in db.text_search("docs", "/text", "needle")]
    assert again == first
    assert len(db._columns.arrays) == held  # served from the memo, nothing new derived
    db.command(cmd(PutDocument("docs", "c", {"text": "hay hay hay"})))  # N and avgdl move
    after = {h.ref.id: h.score for h in db.text_search("docs", "/text", "needle")}
    assert after["a"] != dict(first)["a"]
    assert len(db._columns.arrays) == held + 1
