"""One nesting bound for every JSON entry point: deep values are a typed error, never a
``RecursionError`` (issue 18, item 5; HTTP has its own 64-level body limit on top)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import cairn
from cairn.canonical import MAX_DEPTH, canonical_bytes
from cairn.errors import CanonicalizationError, ValidationError
from cairn.graph.model import freeze
from cairn.search.contracts import QueryRequest, SqlGraphSearchRequest
from cairn.search.wire import to_json
from cairn.store.commands import (
    CommandRequest,
    ConfigureCollection,
    ConfigureGraph,
    PutDocument,
    command_from_json,
)


def _nested(levels: int, container: type = list) -> Any:
    """A value whose containers nest ``levels`` deep (``[]`` is one level)."""
    value: Any = container()
    for _ in range(levels - 1):
        value = [value] if container is list else {"k": value}
    return value


@pytest.mark.parametrize("container", [list, dict])
def test_freeze_agrees_with_the_canonical_encoder_at_the_bound(container: type) -> None:
    for levels in (MAX_DEPTH - 1, MAX_DEPTH):
        canonical_bytes(_nested(levels, container))  # the oracle accepts ...
        freeze(_nested(levels, container))  # ... and so does freeze
    with pytest.raises(CanonicalizationError):
        canonical_bytes(_nested(MAX_DEPTH + 1, container))
    with pytest.raises(CanonicalizationError, match="nesting deeper"):
        freeze(_nested(MAX_DEPTH + 1, container))


_DEEP = 5000  # far past Python's recursion limit


def _command_json(body: Any) -> dict[str, Any]:
    return {
        "command_id": str(uuid.uuid4()),
        "database": "main",
        "mutations": [
            {
                "kind": "put_document",
                "collection": "c",
                "id": "a",
                "body": body,
                "expected_revision": None,
                "access": None,
            }
        ],
    }


ENTRY_POINTS: dict[str, Callable[[Any], object]] = {
    "PutDocument": lambda deep: PutDocument("c", "a", {"x": deep}),
    "command_from_json": lambda deep: command_from_json(_command_json({"x": deep})),
    "QueryRequest": lambda deep: to_json(QueryRequest("SEARCH c", {"q": deep})),
    "wire.to_json": lambda deep: to_json({"x": deep}),
}


@pytest.mark.parametrize("name", sorted(ENTRY_POINTS))
@pytest.mark.parametrize("container", [list, dict])
def test_deep_values_are_validation_errors(name: str, container: type) -> None:
    with pytest.raises(ValidationError):
        ENTRY_POINTS[name](_nested(_DEEP, container))


def test_a_deep_sql_parameter_is_named(tmp_path: Path) -> None:
    with cairn.open(tmp_path / "cairn.db") as db:
        setup = (ConfigureCollection("c", ("/text",)), ConfigureGraph("g"))
        db.command(CommandRequest(uuid.uuid4(), db.name, setup))
        request = QueryRequest("SEARCH c USING GRAPH g WHERE TEXT(text, :q) LIMIT 1", {"q": []})
        deep = QueryRequest(request.sql, {"q": _nested(_DEEP)})
        with pytest.raises(ValidationError, match="nesting deeper"):
            db.search_sql(SqlGraphSearchRequest(deep))
