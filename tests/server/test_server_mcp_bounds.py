"""Bounded MCP replies (issue 19): a reply over the caller's ``max_chars`` is cut, keeps
its shape, and says what was cut; the budget argument is checked."""

from __future__ import annotations

import json

import pytest

from cairn.errors import ValidationError
from cairn.server.bounds import (
    DEFAULT_MAX_CHARS,
    TRUNCATED_KEY,
    bound_reply,
    take_budget,
)


def _size(value: object) -> int:
    return len(json.dumps(value, ensure_ascii=False))


def test_a_small_reply_is_left_alone() -> None:
    structured, text = {"hits": [1, 2, 3]}, "three hits"
    assert bound_reply(structured, text, 1_000) == (structured, text)


def test_a_long_reply_is_cut_to_the_budget_and_says_so() -> None:
    edges = [{"source": f"s{i}", "target": f"t{i}", "sites": ["a.py:1"] * 3} for i in range(400)]
    structured = {"vertices": [{"id": f"v{i}"} for i in range(50)], "edges": edges, "position": 7}
    text = json.dumps(structured)
    bounded, short = bound_reply(structured, text, 5_000)
    assert _size(bounded) <= 5_000 and len(short) <= 5_000
    cut = bounded[TRUNCATED_KEY]["/edges"]
    assert cut["total"] == 400 and cut["kept"] == len(bounded["edges"]) < 400
    assert bounded["edges"] == edges[: cut["kept"]]  # a prefix: the order is kept
    assert bounded["position"] == 7  # scalars are never touched
    assert short.endswith("raise max_chars or narrow the request]")
    assert "of " + str(len(text)) + " characters" in short
    assert structured["edges"] == edges  # the caller's value is not changed


def test_the_budget_argument_is_taken_and_checked() -> None:
    arguments = {"text": "x", "max_chars": 2_000}
    assert take_budget(arguments) == 2_000 and arguments == {"text": "x"}
    assert take_budget({}) == DEFAULT_MAX_CHARS
    for bad in (999, 1_000_001, "10", True):
        with pytest.raises(ValidationError, match="max_chars"):
            take_budget({"max_chars": bad})
