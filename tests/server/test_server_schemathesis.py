"""Schemathesis against the app's own OpenAPI document: no input yields a 5xx.

Every operation gets a bounded number of generated requests (positive mode: bodies
that match the documented schemas), sent with a valid admin key so they reach the
parsers, admission and the store rather than stopping at authentication.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from server_helpers import GRAPH, open_corpus

from cairn.server.bootstrap import ensure_admin
from cairn.server.http import create_app

EXAMPLES_PER_OPERATION = 20
"""Generated requests per operation: enough to reach every parser, bounded for speed."""

AIM = {"database": "main", "collection": "docs", "graph": GRAPH}
"""Names of the corpus that aimed requests use."""


@pytest.fixture
def fuzzed(tmp_path: Path) -> Iterator[tuple[schemathesis.BaseSchema, str]]:
    db, _ = open_corpus(tmp_path / "cairn.db")
    try:
        token = ensure_admin(db, {}).token
        assert token is not None
        yield schemathesis.openapi.from_asgi("/openapi.json", create_app(db)), token
    finally:
        db.close()


def _aim(case: Any) -> Any:
    """Point a generated body at the corpus (database, collection, graph), so that
    half of the requests get past name lookups into admission, the engine and the store."""
    body = case.body
    for part in (body, body.get("search") if isinstance(body, dict) else None):
        if isinstance(part, dict):
            for key, value in AIM.items():
                if key in part:
                    part[key] = value
    return case


def _fuzz(operation: Any, token: str, failures: list[str]) -> None:
    """Send generated requests to one operation; record every 5xx."""
    generated = operation.as_strategy()

    @settings(
        max_examples=EXAMPLES_PER_OPERATION,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(case=st.one_of(generated, generated.map(_aim)))
    def check(case: Any) -> None:
        response = case.call(headers={"Authorization": f"Bearer {token}"})
        if response.status_code >= 500:
            failures.append(f"{case.method} {case.formatted_path}: {response.text[:300]}")

    check()


def test_no_operation_answers_5xx(fuzzed: tuple[schemathesis.BaseSchema, str]) -> None:
    schema, token = fuzzed
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 15
    failures: list[str] = []
    for operation in operations:
        _fuzz(operation, token, failures)
    assert not failures, "\n".join(failures[:10])
