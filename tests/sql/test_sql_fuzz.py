"""Fuzz: random token sequences and random text only ever give Validation/BudgetExceeded."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cairn.errors import BudgetExceededError, ValidationError
from cairn.search.admission import admit_graph_search
from cairn.search.contracts import QueryRequest, SqlGraphSearchRequest
from cairn.sql import lower_sql

VOCABULARY = [
    "SEARCH",
    "FROM",
    "TEXT",
    "VECTOR",
    "MATCH",
    "WEIGHT",
    "SPACE",
    "SCOPE",
    "RETRIEVE",
    "EXPAND",
    "GRAPH",
    "SEEDS",
    "DEPTH",
    "VERTICES",
    "EDGES",
    "LABELS",
    "ALLOW",
    "IDS",
    "LIMIT",
    "FUSION",
    "cosine",
    "docs",
    "g",
    '"/text"',
    '"q""x"',
    "'a'",
    "'it''s'",
    "''",
    "@p",
    "@v",
    "@missing",
    "0",
    "1",
    "2",
    "16",
    "17",
    "-1",
    "1.5",
    "1e999",
    "1e3",
    "99999999999999999999",
    "(",
    ")",
    ",",
    ";",
    "'",
    '"',
    "@",
    "#",
    "\n",
]
PARAMETERS: dict[str, Any] = {"p": "a", "v": [0.5, 0.5]}


def run(sql: str, parameters: dict[str, Any]) -> None:
    try:
        lowered = lower_sql(SqlGraphSearchRequest(QueryRequest(sql, parameters)), database="main")
        admit_graph_search(lowered)
    except (ValidationError, BudgetExceededError):
        pass


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(VOCABULARY), max_size=60), st.booleans())
def test_random_token_sequences(tokens: list[str], with_params: bool) -> None:
    run(" ".join(tokens), PARAMETERS if with_params else {})


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_random_text(sql: str) -> None:
    run(sql, {})


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes_decoded(raw: bytes) -> None:
    run(raw.decode("utf-8", "replace"), {})
    run(raw.decode("latin-1"), {})


@settings(max_examples=150, deadline=None)
@given(
    st.dictionaries(
        st.text(max_size=5),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
            lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
            max_leaves=6,
        ),
        max_size=4,
    )
)
def test_random_parameters(parameters: dict[str, Any]) -> None:
    run(
        "SEARCH FROM docs TEXT t MATCH @a VECTOR v MATCH @b SPACE (s, 2, dot, m, '1') "
        "EXPAND GRAPH g DEPTH 1 VERTICES 1 EDGES 1",
        parameters,
    )
