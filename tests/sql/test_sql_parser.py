"""SEARCH lowering: every clause alone and in every legal combination, compared whole."""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Any

import pytest

from cairn.errors import ValidationError
from cairn.search.contracts import (
    EntityRef,
    GraphExpansion,
    GraphRetriever,
    GraphScope,
    GraphSearchRequest,
    GraphWalkSpec,
    QueryRequest,
    SearchRequest,
    SqlGraphSearchRequest,
    VectorSpace,
)
from cairn.sql import lower_sql, parse_search, tokenize
from cairn.sql.tokenizer import TokenKind

DB = "main"
PARAMS: dict[str, Any] = {"q": [0.6, 0.8]}

# Each optional clause: its SQL text, and the fields it sets on the expected request.
CLAUSES: dict[str, tuple[str, dict[str, Any]]] = {
    "TEXT": (
        "TEXT \"/text\" MATCH 'needle' WEIGHT 2",
        {"text_field": "/text", "text": "needle", "text_weight": 2.0},
    ),
    "VECTOR": (
        'VECTOR "/embedding" MATCH @q SPACE (hash, 2, cosine, "cairn-hash", "1") WEIGHT 0.5',
        {
            "vector_field": "/embedding",
            "vector": (0.6, 0.8),
            "space": VectorSpace("hash", 2, "cosine", "cairn-hash", "1"),
            "vector_weight": 0.5,
        },
    ),
    "SCOPE": (
        "SCOPE GRAPH code SEEDS ((files, 'a.py'), (symbols, 'f')) DEPTH 2 VERTICES 100 "
        "EDGES 500 LABELS ('calls')",
        {
            "scope": GraphScope(
                GraphWalkSpec(
                    "code",
                    (EntityRef("files", "a.py"), EntityRef("symbols", "f")),
                    2,
                    100,
                    500,
                    ("calls",),
                )
            )
        },
    ),
    "RETRIEVE": (
        "RETRIEVE GRAPH code SEEDS ((files, 'a.py')) DEPTH 3 VERTICES 10 EDGES 20 WEIGHT 0",
        {
            "retriever": GraphRetriever(
                GraphWalkSpec("code", (EntityRef("files", "a.py"),), 3, 10, 20, None), 0.0
            )
        },
    ),
    "EXPAND": (
        "EXPAND GRAPH code DEPTH 1 VERTICES 5 EDGES 7 LABELS ()",
        {"expansion": GraphExpansion("code", 1, 5, 7, ())},
    ),
    "ALLOW": ("ALLOW IDS ('x', 'y')", {"allowed_ids": ("x", "y")}),
    "KINDS": ("KINDS ('function', 'method')", {"kinds": ("function", "method")}),
    "PATHS": ("PATHS ('src/*')", {"paths": ("src/*",)}),
    "EXCLUDE": ("EXCLUDE TESTS", {"exclude_tests": True}),
    "PRIOR": ("PRIOR 'code_kinds_v1'", {"prior": "code_kinds_v1"}),
    "LIMIT": ("LIMIT 3", {"limit": 3}),
    "FUSION": ("FUSION 10", {"fusion_k": 10}),
}
GRAPH_CLAUSES = {"SCOPE", "RETRIEVE", "EXPAND"}
ORDER = list(CLAUSES)


def expected(chosen: tuple[str, ...]) -> GraphSearchRequest:
    search = SearchRequest(DB, "symbols")
    graph: dict[str, Any] = {"scope": None, "retriever": None, "expansion": None}
    for name in chosen:
        for key, value in CLAUSES[name][1].items():
            if key in graph:
                graph[key] = value
            else:
                search = replace(search, **{key: value})
    return GraphSearchRequest(1, search, **graph)


LEGAL = [
    combo
    for size in range(1, len(ORDER) + 1)
    for combo in itertools.combinations(ORDER, size)
    if GRAPH_CLAUSES & set(combo)
]


@pytest.mark.parametrize("combo", LEGAL, ids=lambda c: "+".join(c))
def test_every_legal_combination_lowers_exactly(combo: tuple[str, ...]) -> None:
    sql = "SEARCH FROM symbols " + " ".join(CLAUSES[name][0] for name in combo)
    params = PARAMS if "VECTOR" in combo else {}
    assert parse_search(sql, params, database=DB) == expected(combo)


def test_prior_takes_a_string_parameter_and_is_admitted_like_the_direct_field() -> None:
    walk = "EXPAND GRAPH g DEPTH 1 VERTICES 2 EDGES 3"
    lowered = parse_search(f"SEARCH FROM docs {walk} PRIOR @p", {"p": "code_kinds_v1"}, database=DB)
    assert lowered.search.prior == "code_kinds_v1"
    assert parse_search(f"SEARCH FROM docs {walk}", {}, database=DB).search.prior is None
    with pytest.raises(ValidationError, match="JSON string"):
        parse_search(f"SEARCH FROM docs {walk} PRIOR @p", {"p": 1}, database=DB)
    with pytest.raises(ValidationError, match="before"):
        parse_search(f"SEARCH FROM docs {walk} LIMIT 3 PRIOR 'code_kinds_v1'", {}, database=DB)


def test_defaults_weights_limit_fusion() -> None:
    request = parse_search(
        "SEARCH FROM docs RETRIEVE GRAPH g SEEDS ((docs, 'a')) DEPTH 1 VERTICES 2 EDGES 3",
        {},
        database=DB,
    )
    assert request.search.text_weight == 1.0
    assert request.search.vector_weight == 1.0
    assert request.retriever is not None and request.retriever.weight == 1.0
    assert request.search.limit == 10 and request.search.fusion_k == 60
    assert request.search.allowed_ids is None
    assert request.retriever.walk.labels is None


def test_keywords_are_case_insensitive_and_trailing_semicolon_allowed() -> None:
    lower = parse_search(
        "search from docs expand graph g depth 1 vertices 2 edges 3 limit 4;", {}, database=DB
    )
    upper = parse_search(
        "SEARCH FROM docs EXPAND GRAPH g DEPTH 1 VERTICES 2 EDGES 3 LIMIT 4", {}, database=DB
    )
    assert lower == upper


def test_empty_labels_and_allow_ids_keep_empty_set_meaning() -> None:
    request = parse_search(
        "SEARCH FROM docs TEXT body MATCH 'x' SCOPE GRAPH g SEEDS ((docs, 'a')) DEPTH 1 "
        "VERTICES 2 EDGES 3 LABELS () ALLOW IDS ()",
        {},
        database=DB,
    )
    assert request.scope is not None and request.scope.walk.labels == ()
    assert request.search.allowed_ids == ()


def test_parameters_for_text_seeds_labels_and_allowed_ids() -> None:
    params = {"t": "needle", "seed": "b.py", "label": "imports", "id": "z"}
    request = parse_search(
        "SEARCH FROM files TEXT body MATCH @t RETRIEVE GRAPH code SEEDS ((files, 'a.py'), "
        "(other, @seed)) DEPTH 2 VERTICES 9 EDGES 9 LABELS (@label, 'calls') ALLOW IDS (@id)",
        params,
        database=DB,
    )
    assert request.search.text == "needle"
    assert request.retriever is not None
    assert request.retriever.walk.seeds == (EntityRef("files", "a.py"), EntityRef("other", "b.py"))
    assert request.retriever.walk.labels == ("imports", "calls")
    assert request.search.allowed_ids == ("z",)


def test_quoted_identifiers_and_escapes() -> None:
    request = parse_search(
        'SEARCH FROM "my ""odd"" coll" TEXT "/text" MATCH \'it\'\'s\' '
        'EXPAND GRAPH "g 1" DEPTH 0 VERTICES 1 EDGES 1',
        {},
        database=DB,
    )
    assert request.search.collection == 'my "odd" coll'
    assert request.search.text == "it's"
    assert request.expansion is not None and request.expansion.graph == "g 1"


def test_lower_sql_uses_the_envelope() -> None:
    sql = SqlGraphSearchRequest(
        QueryRequest(
            "SEARCH FROM symbols " + CLAUSES["VECTOR"][0] + " " + CLAUSES["EXPAND"][0], PARAMS
        )
    )
    assert lower_sql(sql, database=DB) == expected(("VECTOR", "EXPAND"))


def test_tokens_carry_lines_and_columns() -> None:
    tokens = tokenize("SEARCH\n  FROM x")
    assert [(t.kind, t.text, t.line, t.column) for t in tokens] == [
        (TokenKind.WORD, "SEARCH", 1, 1),
        (TokenKind.WORD, "FROM", 2, 3),
        (TokenKind.WORD, "x", 2, 8),
        (TokenKind.END, "", 2, 9),
    ]


@pytest.mark.parametrize(
    ("clause", "fields"),
    [
        ("VECTOR EMBED", {"embed": True}),
        (
            'VECTOR "embedding" EMBED WEIGHT 2',
            {"embed": True, "vector_field": "embedding", "vector_weight": 2.0},
        ),
        ('VECTOR "EMBED" EMBED', {"embed": True, "vector_field": "EMBED"}),
    ],
)
def test_vector_embed_asks_the_database_for_the_vector(clause: str, fields: dict[str, Any]) -> None:
    graph = "EXPAND GRAPH g DEPTH 1 VERTICES 2 EDGES 3"
    sql = f"SEARCH FROM symbols TEXT \"/text\" MATCH 'q' {clause} {graph}"
    request = parse_search(sql, {}, database=DB)
    wanted = SearchRequest(DB, "symbols", "/text", "q", **fields)
    assert request.search == wanted


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("EXCLUDE EXPAND GRAPH g DEPTH 1 VERTICES 2 EDGES 3", "TESTS"),
        ("EXPAND GRAPH g DEPTH 1 VERTICES 2 EDGES 3 EXCLUDE TESTS KINDS ('f')", "before"),
        ("EXPAND GRAPH g DEPTH 1 VERTICES 2 EDGES 3 KINDS 'f'", "\\("),
        ("VECTOR EMBED MATCH @q EXPAND GRAPH g DEPTH 1 VERTICES 2 EDGES 3", "clause"),
    ],
)
def test_bad_filter_and_embed_clauses_are_refused(sql: str, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        parse_search("SEARCH FROM symbols " + sql, {"q": [1.0]}, database=DB)
