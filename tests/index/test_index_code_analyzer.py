"""The ``code_english_v1`` analyzer: stop words and plurals, on the collections that name it.

Expected tokens are written by hand from the rules in ``cairn.store.text``; scores come
from the same textbook BM25 oracle as ``test_index_text.py`` over hand-tokenised texts.
"""

from __future__ import annotations

import pytest
from store_helpers import SPACE, cmd, put
from test_index_text import oracle

from cairn.errors import ValidationError
from cairn.index import Database
from cairn.store import ConfigureCollection, VectorField
from cairn.store.text import CODE_ANALYZER, DEFAULT_ANALYZER, analyze, light_stem


@pytest.mark.parametrize(
    ("word", "stem"),
    [
        ("requests", "request"),
        ("policies", "policy"),
        ("classes", "class"),
        ("boxes", "box"),
        ("matches", "match"),
        ("wishes", "wish"),
        ("routes", "route"),
        ("class", "class"),
        ("status", "status"),
        ("analysis", "analysis"),
        ("ids", "ids"),  # too short to stem
        ("has", "has"),
        ("request", "request"),
    ],
)
def test_light_stem_strips_plural_endings_only(word: str, stem: str) -> None:
    assert light_stem(word) == stem


def test_code_analyzer_splits_drops_stop_words_and_stems_every_token() -> None:
    text = "Registers the URL handlers of getUserNames; is_active 2 items __init__"
    assert analyze(text, CODE_ANALYZER) == [
        "register",
        "url",
        "handler",
        "get",  # an identifier gives its parts only
        "user",
        "name",
        "active",  # the part "is" is a stop word
        "2",
        "item",
        "init",
    ]


def test_the_default_analyzer_is_unchanged() -> None:
    assert analyze("Registers the handlers") == ["registers", "the", "handlers"]


def _configure(db: Database, analyzer: str) -> None:
    vector = (VectorField("embedding", SPACE),)
    db.command(cmd(ConfigureCollection("docs", ("/text",), vector, analyzer)))


CODE_CORPUS = {
    "a": "register url handlers",
    "b": "the handler of the request",
    "c": "requests and responses",
}
TOKENS = {  # CODE_CORPUS under code_english_v1, by hand
    "a": "register url handler",
    "b": "handler request",
    "c": "request response",
}


def test_a_code_collection_scores_its_postings_with_its_analyzer(db: Database) -> None:
    _configure(db, CODE_ANALYZER)
    db.command(cmd(*(put("docs", key, text) for key, text in CODE_CORPUS.items())))
    hits = db.text_search("docs", "/text", "The handlers of requests")
    expected = oracle(TOKENS, "handler request")
    assert [(h.ref.id, h.score) for h in hits] == [
        (key, pytest.approx(score, rel=1e-12)) for key, score in expected
    ]
    assert db.text_search("docs", "/text", "the of and") == ()  # only stop words


def test_changing_the_analyzer_reindexes_the_collection(db: Database) -> None:
    _configure(db, DEFAULT_ANALYZER)
    db.command(cmd(*(put("docs", key, text) for key, text in CODE_CORPUS.items())))
    assert [h.ref.id for h in db.text_search("docs", "/text", "handler")] == ["b"]
    _configure(db, CODE_ANALYZER)
    stemmed = [key for key, _ in oracle(TOKENS, "handler")]
    assert stemmed == ["b", "a"]  # b is the shorter text
    assert [h.ref.id for h in db.text_search("docs", "/text", "handler")] == stemmed
    _configure(db, DEFAULT_ANALYZER)
    assert [h.ref.id for h in db.text_search("docs", "/text", "handler")] == ["b"]


def test_an_unknown_analyzer_is_refused(db: Database) -> None:
    with pytest.raises(ValidationError, match="analyzer"):
        _configure(db, "klingon_v1")


def test_the_default_analyzer_is_not_written_into_the_command() -> None:
    vector = (VectorField("embedding", SPACE),)
    plain = ConfigureCollection("docs", ("/text",), vector)
    assert "analyzer" not in plain.to_json()  # commands written before it keep their bytes
    code = ConfigureCollection("docs", ("/text",), vector, CODE_ANALYZER)
    assert code.to_json()["analyzer"] == CODE_ANALYZER
    assert ConfigureCollection.from_json(code.to_json()) == code
    assert ConfigureCollection.from_json(plain.to_json()) == plain
