"""SEARCH rejections: each a Validation (or BudgetExceeded) error, limits at their boundary."""

from __future__ import annotations

from typing import Any

import pytest

from cairn.errors import BudgetExceededError, ValidationError
from cairn.search.contracts import QueryRequest, SqlGraphSearchRequest
from cairn.sql import lower_sql, parse_search, tokenize
from cairn.sql.tokenizer import MAX_SQL_BYTES, MAX_SQL_DEPTH, MAX_SQL_PARAMETERS, MAX_SQL_TOKENS

DB = "main"
EXPAND = "EXPAND GRAPH g DEPTH 1 VERTICES 2 EDGES 3"
RETRIEVE = "RETRIEVE GRAPH g SEEDS ((docs, 'a')) DEPTH 1 VERTICES 2 EDGES 3"
VECTOR = "VECTOR v MATCH @q SPACE (s, 2, cosine, m, '1')"


def sql_request(sql: str, parameters: dict[str, Any] | None = None, **query: Any) -> Any:
    return SqlGraphSearchRequest(QueryRequest(sql, parameters or {}, **query))


@pytest.mark.parametrize(
    ("sql", "params", "message"),
    [
        (f"SEARCH FROM docs LIMIT 1 LIMIT 2 {EXPAND}", {}, "duplicate LIMIT"),
        (f"SEARCH FROM docs {EXPAND} {EXPAND}", {}, "duplicate EXPAND"),
        (f"SEARCH FROM docs {EXPAND} TEXT t MATCH 'x'", {}, "TEXT clause must come before"),
        (f"SEARCH FROM docs LIMIT 3 {RETRIEVE}", {}, "RETRIEVE clause must come before LIMIT"),
        (f"SEARCH FROM docs ORDER BY x {EXPAND}", {}, "expected a clause"),
        (f"SEARCH FROM docs {EXPAND} ;;", {}, "expected end of statement"),
        (f"SEARCH FROM docs {EXPAND} 42", {}, "expected end of statement"),
        (f"SEARCH FROM docs {EXPAND} LIMIT 1 extra", {}, "expected a clause"),
        ("SEARCH FROM docs TEXT t MATCH 'x'", {}, "at least one graph clause"),
        ("SEARCH FROM docs", {}, "at least one graph clause"),
        ("SELECT x FROM docs", {}, "expected SEARCH"),
        ("SEARCH docs", {}, "expected FROM"),
        ("SEARCH FROM 'docs' " + EXPAND, {}, "collection"),
        (
            "SEARCH FROM docs RETRIEVE GRAPH g SEEDS () DEPTH 1 VERTICES 2 EDGES 3",
            {},
            "SEEDS needs",
        ),
        (
            "SEARCH FROM docs SCOPE GRAPH g SEEDS ((docs, @s)) DEPTH 1 VERTICES 2 EDGES 3",
            {},
            "@s is not supplied",
        ),
        (
            "SEARCH FROM docs SCOPE GRAPH g SEEDS ((docs, @s)) DEPTH 1 VERTICES 2 EDGES 3",
            {"s": 5},
            "must be a JSON string",
        ),
        ("SEARCH FROM docs TEXT t MATCH @t " + EXPAND, {"t": ["x"]}, "must be a JSON string"),
        ("SEARCH FROM docs TEXT t MATCH 'x' " + EXPAND, {"unused": "x"}, "never used"),
        ("SEARCH FROM docs " + VECTOR + " " + EXPAND, {"q": "not an array"}, "JSON array"),
        ("SEARCH FROM docs " + VECTOR + " " + EXPAND, {"q": [1.0]}, "declared dimension is 2"),
        ("SEARCH FROM docs " + VECTOR + " " + EXPAND, {"q": [1.0, 2.0, 3.0]}, "dimension"),
        ("SEARCH FROM docs " + VECTOR + " " + EXPAND, {"q": [1.0, "2"]}, "finite numbers"),
        ("SEARCH FROM docs " + VECTOR + " " + EXPAND, {"q": [1.0, True]}, "finite numbers"),
        ("SEARCH FROM docs " + VECTOR + " " + EXPAND, {"q": [1.0, 10**400]}, "finite numbers"),
        (
            "SEARCH FROM docs VECTOR v MATCH 'text' SPACE (s, 2, cosine, m, '1') " + EXPAND,
            {},
            "vector @parameter",
        ),
        (
            "SEARCH FROM docs VECTOR v MATCH @q SPACE (s, 2, hamming, m, '1') " + EXPAND,
            {"q": [1, 0]},
            "metric",
        ),
        ("SEARCH FROM docs TEXT t MATCH 'x' WEIGHT 1e999 " + EXPAND, {}, "not finite"),
        ("SEARCH FROM docs TEXT t MATCH 'x' WEIGHT inf " + EXPAND, {}, "a number"),
        ("SEARCH FROM docs EXPAND GRAPH g DEPTH 99999999999 VERTICES 2 EDGES 3", {}, "overflows"),
        ("SEARCH FROM docs EXPAND GRAPH g DEPTH 1.5 VERTICES 2 EDGES 3", {}, "integer"),
        ("SEARCH FROM docs EXPAND GRAPH g DEPTH 1 VERTICES 2", {}, "expected EDGES"),
        ("SEARCH FROM docs EXPAND GRAPH g VERTICES 2 DEPTH 1 EDGES 3", {}, "expected DEPTH"),
        (
            "SEARCH FROM docs EXPAND GRAPH g DEPTH 1 VERTICES 2 EDGES 3 LABELS (calls)",
            {},
            "quoted string",
        ),
        (
            "SEARCH FROM docs EXPAND GRAPH g SEEDS ((d, 'a')) DEPTH 1 VERTICES 2 EDGES 3",
            {},
            "expected DEPTH",
        ),
        ("SEARCH FROM docs TEXT t MATCH 'unterminated " + EXPAND, {}, "unterminated string"),
        ('SEARCH FROM "docs ' + EXPAND, {}, "unterminated quoted identifier"),
        ("SEARCH FROM docs # " + EXPAND, {}, "unexpected character"),
        ("SEARCH FROM docs @ " + EXPAND, {}, "parameter name"),
        ("SEARCH FROM docs ) " + EXPAND, {}, "unbalanced"),
        ("SEARCH FROM docs TEXT t MATCH 'x' WEIGHT 1.2.3 " + EXPAND, {}, "malformed number"),
        ('SEARCH FROM "" ' + EXPAND, {}, "blank"),
    ],
)
def test_rejections_are_validation_errors(sql: str, params: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        parse_search(sql, params, database=DB)


def test_errors_name_line_and_column() -> None:
    with pytest.raises(ValidationError) as info:
        parse_search("SEARCH FROM docs\n  LIMIT x", {}, database=DB)
    assert info.value.details == {"line": 2, "column": 9}
    assert "expected LIMIT (an integer), found word 'x' at line 2, column 9" in str(info.value)


def test_envelope_rejections() -> None:
    ok = f"SEARCH FROM docs {EXPAND}"
    lower_sql(sql_request(ok), database=DB)
    with pytest.raises(ValidationError, match="cursor"):
        lower_sql(sql_request(ok, cursor="abc"), database=DB)
    with pytest.raises(ValidationError, match="allow_full_scan"):
        lower_sql(sql_request(ok, allow_full_scan=False), database=DB)
    with pytest.raises(ValidationError, match="version"):
        lower_sql(SqlGraphSearchRequest(QueryRequest(ok), version=2), database=DB)
    with pytest.raises(ValidationError, match="not JSON"):
        lower_sql(sql_request(ok, {"x": float("nan")}), database=DB)
    with pytest.raises(ValidationError, match="SqlGraphSearchRequest"):
        lower_sql("SEARCH", database=DB)  # type: ignore[arg-type]


def test_token_limit_boundary() -> None:
    assert len(tokenize("x " * MAX_SQL_TOKENS)) == MAX_SQL_TOKENS + 1  # plus the END sentinel
    with pytest.raises(BudgetExceededError, match="tokens"):
        tokenize("x " * (MAX_SQL_TOKENS + 1))


def test_depth_limit_boundary() -> None:
    tokenize("(" * MAX_SQL_DEPTH + ")" * MAX_SQL_DEPTH)
    with pytest.raises(BudgetExceededError, match="deeper"):
        tokenize("(" * (MAX_SQL_DEPTH + 1))


def test_byte_limit_boundary() -> None:
    head = f"SEARCH FROM docs {EXPAND}"
    exact = head + " " * (MAX_SQL_BYTES - len(head))
    assert len(exact.encode()) == MAX_SQL_BYTES
    parse_search(exact, {}, database=DB)
    with pytest.raises(BudgetExceededError):
        parse_search(exact + " ", {}, database=DB)


def test_parameter_count_boundary() -> None:
    def statement(count: int) -> tuple[str, dict[str, Any]]:
        names = [f"p{i}" for i in range(count)]
        ids = ", ".join("@" + name for name in names)
        return f"SEARCH FROM docs {EXPAND} ALLOW IDS ({ids})", {n: n for n in names}

    sql, params = statement(MAX_SQL_PARAMETERS)
    lowered = lower_sql(sql_request(sql, params), database=DB)
    assert lowered.search.allowed_ids is not None
    assert len(lowered.search.allowed_ids) == MAX_SQL_PARAMETERS
    sql, params = statement(MAX_SQL_PARAMETERS + 1)
    with pytest.raises(BudgetExceededError, match="parameters"):
        lower_sql(sql_request(sql, params), database=DB)


def test_whole_request_size_is_checked_before_parsing() -> None:
    big = {"q": "x" * MAX_SQL_BYTES}
    with pytest.raises(BudgetExceededError, match="SQL request"):
        lower_sql(sql_request("SEARCH FROM docs TEXT t MATCH @q " + EXPAND, big), database=DB)
