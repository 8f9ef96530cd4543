"""The text analyzers: the tokens the store writes as postings and queries look up (§3).

A collection names its analyzer (``ConfigureCollection.analyzer``); the same one serves
its postings and its queries. Both start alike: NFKC, then word tokens; each token is
kept whole (lowercased) and, when it is an identifier, also split into its parts
(``getUserName`` -> ``getusername get user name``; ``snake_case`` -> ``snake_case
snake case``; ``HTTPServer2`` -> ``httpserver2 http server 2``).

* ``words_v1`` (the default) stops there.
* ``code_english_v1`` (code indexes) keeps only the parts of a split identifier
  (``getUserName`` -> ``get user name``), drops English stop words (``STOP_WORDS``) and
  strips plural endings (``light_stem``: ``requests`` -> ``request``, ``classes`` ->
  ``class``), so "Registers the handlers" finds ``register_handler``. Each choice was
  measured on the search bench's tuning projects (``docs/benchmarks.md``); stemming is
  deliberately light: Porter's scored no better on code search.

BM25 scoring over the postings is the index's (``cairn.index.bm25``).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Sequence

from cairn.store.limits import WORD_CACHE_SIZE

__all__ = [
    "ANALYZERS",
    "CODE_ANALYZER",
    "DEFAULT_ANALYZER",
    "STOP_WORDS",
    "analyze",
    "identifier_words",
    "light_stem",
    "term_counts",
]

DEFAULT_ANALYZER = "words_v1"
"""Identifier-aware words, nothing dropped: every collection's unless it names another."""
CODE_ANALYZER = "code_english_v1"
"""``words_v1`` with identifiers as their parts only, without English stop words, and
with plural endings stripped."""
ANALYZERS = (DEFAULT_ANALYZER, CODE_ANALYZER)
"""Every analyzer a collection may name."""

STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "if",
        "in",
        "into",
        "is",
        "it",
        "no",
        "not",
        "of",
        "on",
        "or",
        "such",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "will",
        "with",
    ]
)
"""English stop words (Lucene's classic English set): they match every description."""
MIN_STEM_LENGTH = 4
"""Shorter tokens keep their ending (``has``, ``bus``, ``ids``)."""

_WORD = re.compile(r"\w+")


def _boundary(prev: str, char: str, following: str) -> bool:
    if prev.isdigit() != char.isdigit():
        return True
    if prev.islower() and char.isupper():
        return True
    return prev.isupper() and char.isupper() and following.islower()


def _split_segment(segment: str) -> list[str]:
    parts: list[str] = []
    start = 0
    for index in range(1, len(segment)):
        following = segment[index + 1] if index + 1 < len(segment) else ""
        if _boundary(segment[index - 1], segment[index], following):
            parts.append(segment[start:index])
            start = index
    parts.append(segment[start:])
    return parts


@functools.lru_cache(maxsize=WORD_CACHE_SIZE)
def _word_tokens(word: str) -> tuple[str, ...]:
    """The tokens of one word: lowercased whole, then its identifier parts (if different)."""
    whole = word.lower()
    parts = [
        part.lower() for segment in word.split("_") if segment for part in _split_segment(segment)
    ]
    if not parts:  # a run of underscores only
        return ()
    if parts == [whole]:
        return (whole,)
    return (whole, *parts)


def light_stem(token: str) -> str:
    """``token`` without an English plural ending: ``-ies`` -> ``-y``; ``-sses``, ``-xes``,
    ``-zes``, ``-ches``, ``-shes`` lose ``es``; any other ``-s`` but ``-ss``, ``-us`` and
    ``-is`` loses ``s``."""
    if len(token) < MIN_STEM_LENGTH or not token.endswith("s"):
        return token
    if token.endswith("ies") and len(token) > MIN_STEM_LENGTH:
        return token[:-3] + "y"
    if token.endswith(("sses", "xes", "zes", "ches", "shes")):
        return token[:-2]
    if token.endswith(("ss", "us", "is")):
        return token
    return token[:-1]


@functools.lru_cache(maxsize=WORD_CACHE_SIZE)
def _code_tokens(word: str) -> tuple[str, ...]:
    """The ``code_english_v1`` tokens of one word: an identifier's parts only (its whole
    form is a rare term no description uses, and it lengthens the document), stop words
    dropped, plurals stemmed."""
    tokens = _word_tokens(word)
    parts = tokens[1:] if len(tokens) > 1 else tokens
    return tuple(
        token if token.isdigit() else light_stem(token)
        for token in parts
        if token not in STOP_WORDS
    )


_WORD_ANALYZERS = {DEFAULT_ANALYZER: _word_tokens, CODE_ANALYZER: _code_tokens}


def analyze(text: str, analyzer: str = DEFAULT_ANALYZER) -> list[str]:
    """Tokens of ``text`` under ``analyzer`` (one of ``ANALYZERS``): each word lowercased,
    followed by its identifier parts if any (then filtered and stemmed for code)."""
    tokens_of = _WORD_ANALYZERS[analyzer]
    tokens: list[str] = []
    for word in _WORD.findall(unicodedata.normalize("NFKC", text)):
        tokens.extend(tokens_of(word))
    return tokens


def identifier_words(text: str) -> str:
    """Identifiers of ``text`` split into lowercase words: ``getUserName`` -> ``get user name``."""
    words: list[str] = []
    for word in _WORD.findall(unicodedata.normalize("NFKC", text)):
        tokens = _word_tokens(word)
        words.extend(tokens[1:] if len(tokens) > 1 else tokens)
    return " ".join(words)


def term_counts(tokens: Sequence[str]) -> tuple[list[str], list[int]]:
    """Distinct tokens in order of first appearance and how often each occurs."""
    counts: dict[str, int] = {}
    for token in tokens:
        counts[token] = counts.get(token, 0) + 1
    return list(counts), list(counts.values())
