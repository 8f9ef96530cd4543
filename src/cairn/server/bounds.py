"""Bounded MCP replies: no tool answer is larger than the caller's character budget.

An agent's context is the scarce resource. Every tool call takes ``max_chars`` (default
``DEFAULT_MAX_CHARS``); a reply over it is cut deterministically and says so. The
structured content keeps its shape: the longest array in it is halved, again and again,
until the whole fits, and ``_truncated`` names every array cut (its JSON path, the
items kept and the total). The text content is cut at the budget with a marker that
tells how to get the rest (raise ``max_chars`` or narrow the request).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from cairn.errors import ValidationError

__all__ = [
    "BUDGET_ARGUMENT",
    "DEFAULT_MAX_CHARS",
    "MAX_MAX_CHARS",
    "MIN_MAX_CHARS",
    "TRUNCATED_KEY",
    "bound_reply",
    "budget_schema",
    "take_budget",
]

BUDGET_ARGUMENT = "max_chars"
DEFAULT_MAX_CHARS = 25_000
"""Characters a reply's text, and its structured JSON, may hold unless asked otherwise."""
MIN_MAX_CHARS, MAX_MAX_CHARS = 1_000, 1_000_000
TRUNCATED_KEY = "_truncated"

_MARKER = "… [cut at {budget} of {total} characters: raise max_chars or narrow the request]"


def budget_schema() -> dict[str, Any]:
    """The JSON Schema of the ``max_chars`` argument every tool takes."""
    return {
        "type": "integer",
        "minimum": MIN_MAX_CHARS,
        "maximum": MAX_MAX_CHARS,
        "default": DEFAULT_MAX_CHARS,
        "description": "Most characters the reply may hold; a longer one is cut and says so.",
    }


def take_budget(arguments: dict[str, Any]) -> int:
    """Remove and check ``max_chars`` from a call's arguments (default when absent)."""
    value = arguments.pop(BUDGET_ARGUMENT, DEFAULT_MAX_CHARS)
    if type(value) is not int or not MIN_MAX_CHARS <= value <= MAX_MAX_CHARS:
        raise ValidationError(
            f"{BUDGET_ARGUMENT} must be an integer in {MIN_MAX_CHARS}..{MAX_MAX_CHARS}, "
            f"got {value!r}",
            details={"field": BUDGET_ARGUMENT},
        )
    return value


def _size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False))


def _arrays(value: Any, path: str) -> Iterator[tuple[str, list[Any]]]:
    if isinstance(value, list):
        yield path, value
        for index, item in enumerate(value):
            yield from _arrays(item, f"{path}/{index}")
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _arrays(item, f"{path}/{key}")


def _trim(structured: dict[str, Any], budget: int) -> dict[str, Any]:
    data = json.loads(json.dumps(structured, ensure_ascii=False))  # a private copy
    cuts: dict[str, dict[str, int]] = {}
    while _size(data) + _size({TRUNCATED_KEY: cuts}) > budget:
        candidates = [(len(items), path, items) for path, items in _arrays(data, "") if items]
        if not candidates:
            break  # nothing left to cut: the reply is as small as it gets
        # The longest array (ties: the first path) loses its second half.
        _, path, items = max(candidates, key=lambda item: (_size(item[2]), item[1]))
        total = cuts.get(path, {}).get("total", len(items))
        del items[len(items) // 2 :]
        cuts[path] = {"kept": len(items), "total": total}
    return {**data, TRUNCATED_KEY: dict(sorted(cuts.items()))} if cuts else data


def bound_reply(structured: dict[str, Any], text: str, budget: int) -> tuple[dict[str, Any], str]:
    """``(structured, text)`` cut to ``budget`` characters each, saying what was cut."""
    if _size(structured) > budget:
        structured = _trim(structured, budget)
    if len(text) > budget:
        marker = _MARKER.format(budget=budget, total=len(text))
        text = text[: max(0, budget - len(marker))] + marker
    return structured, text
