"""Weighted text field lists (BM25F), checked against a test-owned arithmetic oracle."""

from __future__ import annotations

import math

import pytest
from store_helpers import cmd

from cairn.errors import PermissionDeniedError, ValidationError
from cairn.index import Database
from cairn.index.text import MAX_TEXT_FIELDS, weighted_fields
from cairn.store import (
    Capability,
    ConfigureCollection,
    ConfigurePolicy,
    ConfigurePrincipal,
    DeleteDocument,
    FieldPolicy,
    Grant,
    PutDocument,
)

READER = Grant("main", "docs", frozenset({Capability.DOCUMENTS_READ}))

# Plain lowercase words, so the oracle tokenises with str.split.
CORPUS = {
    "a": {"title": "parse url", "text": "split the string at every slash and colon"},
    "b": {"title": "render template", "text": "parse the template source then render it"},
    "c": {"title": "helper", "text": "a url parse helper parse parse parse"},
    "d": {"text": "nothing but parse and url words in a long body of many words here"},
    "e": {"title": "other", "text": "unrelated"},
}
FIELDS = ("/title", "/text")


def oracle(
    docs: dict[str, dict[str, str]], weights: dict[str, float], query: str
) -> list[tuple[str, float]]:
    """Textbook BM25F (Robertson and Zaragoza): per term, ``x`` sums each field's
    ``weight * tf / (1 - b + b * len / avg_len)``; the score sums
    ``idf * x * (k1 + 1) / (k1 + x)`` with ``idf = ln(1 + (N - df + .5)/(df + .5))`` and
    ``df`` the documents holding the term in any listed field. Ranked, ties by ID."""
    k1, b = 1.2, 0.75
    n = len(docs)
    words = {
        (doc_id, field): body.get(field, "").split()
        for doc_id, body in docs.items()
        for field in weights
    }
    average = {field: sum(len(words[d, field]) for d in docs) / n for field in weights}
    scores: dict[str, float] = {}
    for term in dict.fromkeys(query.split()):
        holding = [d for d in docs if any(term in words[d, field] for field in weights)]
        if not holding:
            continue
        idf = math.log(1 + (n - len(holding) + 0.5) / (len(holding) + 0.5))
        for doc_id in holding:
            x = 0.0
            for field, weight in weights.items():
                tf = words[doc_id, field].count(term)
                if tf:
                    x += weight * tf / (1 - b + b * len(words[doc_id, field]) / average[field])
            scores[doc_id] = scores.get(doc_id, 0.0) + idf * x * (k1 + 1) / (k1 + x)
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def _load(db: Database, docs: dict[str, dict[str, str]]) -> None:
    db.command(cmd(ConfigureCollection("docs", FIELDS)))
    db.command(cmd(*(PutDocument("docs", doc_id, body) for doc_id, body in docs.items())))


@pytest.fixture
def fields_db(db: Database) -> Database:
    _load(db, CORPUS)
    return db


@pytest.mark.parametrize("query", ["parse url", "url", "parse template render", "zebra parse"])
@pytest.mark.parametrize(
    ("spec", "weights"),
    [
        ("/title^2 /text", {"/title": 2.0, "/text": 1.0}),
        ("/text /title", {"/title": 1.0, "/text": 1.0}),
        ("/title^0.5 /text^3", {"/title": 0.5, "/text": 3.0}),
        ("/title^2.5", {"/title": 2.5}),
    ],
)
def test_scores_and_order_match_the_oracle(
    fields_db: Database, spec: str, weights: dict[str, float], query: str
) -> None:
    docs = {d: {f"/{k}": v for k, v in body.items()} for d, body in CORPUS.items()}
    expected = oracle(docs, weights, query)
    hits = fields_db.text_search("docs", spec, query)
    assert [h.ref.id for h in hits] == [doc_id for doc_id, _ in expected]
    assert [h.score for h in hits] == pytest.approx([s for _, s in expected], rel=1e-12)


def test_a_short_name_outranks_the_same_word_in_a_long_body(fields_db: Database) -> None:
    # Plain BM25 over the body alone ranks "c" (four "parse") first; the weighted title
    # field puts the document named "parse url" ahead of it.
    plain = fields_db.text_search("docs", "/text", "parse url")
    weighted = fields_db.text_search("docs", "/title^3 /text", "parse url")
    assert plain[0].ref.id == "c"
    assert weighted[0].ref.id == "a"


def test_the_field_order_never_changes_a_float(fields_db: Database) -> None:
    one = fields_db.text_search("docs", "/title^2 /text^0.75", "parse url template")
    other = fields_db.text_search("docs", "/text^0.75  /title^2", "parse url template")
    assert [(h.ref.id, h.score) for h in one] == [(h.ref.id, h.score) for h in other]


def test_one_field_of_weight_one_is_plain_bm25(fields_db: Database) -> None:
    plain = fields_db.text_search("docs", "/text", "parse url")
    listed = fields_db.text_search("docs", "/text^1", "parse url")
    assert [h.ref.id for h in listed] == [h.ref.id for h in plain]
    assert [h.score for h in listed] == pytest.approx([h.score for h in plain], rel=1e-12)


def test_statistics_follow_the_live_documents_and_masks_never_narrow_them(
    fields_db: Database,
) -> None:
    fields_db.command(cmd(DeleteDocument("docs", "e")))
    live = {d: {f"/{k}": v for k, v in body.items()} for d, body in CORPUS.items() if d != "e"}
    weights = {"/title": 2.0, "/text": 1.0}
    expected = dict(oracle(live, weights, "parse url"))
    hits = fields_db.text_search("docs", "/title^2 /text", "parse url", allowed_ids=["b", "d"])
    assert [h.ref.id for h in hits] == sorted(["b", "d"], key=lambda d: -expected[d])
    assert [h.score for h in hits] == pytest.approx([expected[h.ref.id] for h in hits], rel=1e-12)


def test_a_declared_field_whose_name_looks_like_a_list_is_that_field(db: Database) -> None:
    db.command(cmd(ConfigureCollection("docs", ("/a^2",))))
    db.command(cmd(PutDocument("docs", "x", {"a^2": "needle"})))
    assert [h.ref.id for h in db.text_search("docs", "/a^2", "needle")] == ["x"]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("/title^2 /body", "no text field '/body'"),
        ("/title^0", "must be a positive number"),
        ("/title^-1", "must be a positive number"),
        ("/title^x", "must be a positive number"),
        ("/title^inf", "must be a positive number"),
        ("/title^nan", "must be a positive number"),
        ("/title /title^2", "named twice"),
        ("title^2 /text", "JSON pointer"),
        (" ".join(f"/f{n}" for n in range(MAX_TEXT_FIELDS + 1)), "at most 16"),
    ],
)
def test_bad_field_lists_are_refused_with_the_cause(
    fields_db: Database, spec: str, message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        fields_db.text_search("docs", spec, "parse")


def test_every_listed_field_needs_its_use_grant(fields_db: Database) -> None:
    fields_db.command(
        cmd(
            ConfigurePolicy("docs", (FieldPolicy("/title", use_grant="rank"),)),
            ConfigurePrincipal("reader", grants=(READER,)),
            ConfigurePrincipal("ranker", grants=(READER,), field_grants=frozenset({"rank"})),
        )
    )
    assert fields_db.text_search("docs", "/text", "parse", "reader")
    with pytest.raises(PermissionDeniedError, match="may not use field /title"):
        fields_db.text_search("docs", "/text /title^2", "parse", "reader")
    assert fields_db.text_search("docs", "/text /title^2", "parse", "ranker")


def test_weighted_fields_parse_sorted_with_default_weights() -> None:
    assert weighted_fields("/text /name^2 /sig^0.25") == (
        ("/name", 2.0),
        ("/sig", 0.25),
        ("/text", 1.0),
    )
    with pytest.raises(ValidationError, match="blank"):
        weighted_fields("   ")
