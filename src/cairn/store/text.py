"""The text analyzer: the tokens the store writes as postings and queries look up (§3).

One analyzer serves indexing and queries: NFKC, then word tokens; each token is kept
whole (lowercased) and, when it is an identifier, also split into its parts
(``getUserName`` -> ``getusername get user name``; ``snake_case`` -> ``snake_case
snake case``; ``HTTPServer2`` -> ``httpserver2 http server 2``). BM25 scoring over the
postings is the index's (``cairn.index.bm25``).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Sequence

from cairn.store.limits import WORD_CACHE_SIZE

__all__ = ["analyze", "identifier_words", "term_counts"]

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


def analyze(text: str) -> list[str]:
    """Tokens of ``text``: each word lowercased, followed by its identifier parts if any."""
    tokens: list[str] = []
    for word in _WORD.findall(unicodedata.normalize("NFKC", text)):
        tokens.extend(_word_tokens(word))
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
