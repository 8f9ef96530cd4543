"""The words of a definition's body, for the text branch: what the code does, in its own
identifiers, string literals and comments.

A name and a signature say what a function is called; its body says what it does
("Register a URL rule" finds ``add_url_rule`` through ``self.url_map.add(rule)``).
Every word of the body's source counts once, in order of first appearance, without the
language's keywords, up to ``MAX_BODY_TERMS`` words: a pure function of the file's
bytes, so clean and incremental builds agree.
"""

from __future__ import annotations

import keyword
import re

__all__ = ["GO_KEYWORDS", "JS_KEYWORDS", "MAX_BODY_TERMS", "PYTHON_KEYWORDS", "body_terms"]

MAX_BODY_TERMS = 16
"""Distinct words kept per body: each costs bytes in graph.cairn, the document, its
postings and its vector; 16 keeps cairn.db within the lean-index bound (measured in
docs/benchmarks.md: 16 to 128 words score within 0.01 MRR of each other)."""

PYTHON_KEYWORDS = frozenset((*keyword.kwlist, *keyword.softkwlist, "self", "cls"))
"""Words every Python body repeats: they describe none of them."""

_JS_WORDS = """async await break case catch class const continue debugger default delete do
else export extends false finally for function if import in instanceof let new null of
return static super switch this throw true try typeof undefined var void while with yield
abstract any as boolean declare enum implements interface keyof namespace never number
private protected public readonly string type unknown"""
JS_KEYWORDS = frozenset(_JS_WORDS.split())
"""JavaScript and TypeScript keywords and the type names every typed body repeats."""

_GO_WORDS = """break case chan const continue default defer else fallthrough false for func go
goto if import interface iota map nil package range return select struct switch true type
var"""
GO_KEYWORDS = frozenset(_GO_WORDS.split())
"""Go keywords and predeclared constants."""

_IDENTIFIER = re.compile(r"[^\W\d]\w*")


def body_terms(text: str, keywords: frozenset[str]) -> str | None:
    """The distinct words of ``text`` (identifiers, words in strings and comments) that are
    not ``keywords``, in order of first appearance, space-separated, at most
    ``MAX_BODY_TERMS``; None when there are none."""
    kept: dict[str, None] = {}
    for match in _IDENTIFIER.finditer(text):  # stops at the bound: long bodies end early
        word = match.group()
        if word not in keywords and word not in kept:
            kept[word] = None
            if len(kept) == MAX_BODY_TERMS:
                break
    return " ".join(kept) if kept else None
