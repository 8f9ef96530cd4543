"""SQL and direct requests on a real store give identical replies, denials included."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from search_helpers import (
    GRAPH,
    READER,
    SPACE,
    TEXT,
    VECTOR,
    grant,
    open_db,
    policy,
    put_docs,
    put_edges,
    ref,
)

from cairn.errors import CairnError
from cairn.search.contracts import (
    GraphExpansion,
    GraphRetriever,
    GraphScope,
    GraphSearchRequest,
    GraphWalkSpec,
    QueryRequest,
    SearchRequest,
    SqlGraphSearchRequest,
)
from cairn.store import Database, DocumentAccess, FieldPolicy

ROOT = ref("seeds", "root")
MINE = DocumentAccess(owner="reader")


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    database = open_db(tmp_path_factory.mktemp("parity"), collections=("docs", "seeds", "other"))
    put_docs(
        database, "seeds", {"root": "root", "s2": "second seed"}, access={"root": MINE, "s2": MINE}
    )
    put_docs(database, "other", {"o": "bridge"}, access={"o": MINE})
    put_docs(
        database,
        "docs",
        {"a": "needle thread", "b": "needle", "c": "thread", "d": "needle needle", "h": "needle"},
        vectors={"a": [1.0, 0.0], "b": [0.6, 0.8], "c": [0.0, 1.0], "d": [-1.0, 0.0]},
        access=dict.fromkeys("abcd", MINE) | {"h": DocumentAccess(owner="nobody")},
        extra={"a": {"secret": "x"}, "d": {"secret": "y"}},
    )
    put_edges(
        database,
        [
            (ROOT, ref("docs", "a"), "calls"),
            (ROOT, ref("other", "o"), "imports"),
            (ref("other", "o"), ref("docs", "b"), "calls"),
            (ref("seeds", "s2"), ref("docs", "c"), "calls"),
            (ref("docs", "a"), ref("docs", "d"), "calls"),
            (ref("docs", "a"), ref("docs", "h"), "calls"),
        ],
    )
    policy(database, "docs", FieldPolicy("/secret", read_grant="secrets"))
    readable = {**READER, "other": ("query",)}
    grant(
        database, "reader", readable, restrict_rows=True, owner_id="reader", field_grants=["labels"]
    )
    grant(database, "nolabels", readable, restrict_rows=True, owner_id="reader")
    policy(database, GRAPH, FieldPolicy("/label", use_grant="labels"))
    yield database
    database.close()


WALK = GraphWalkSpec(GRAPH, (ROOT, ref("seeds", "s2")), 2, 100, 100)
TEXT_SEARCH = {"text_field": TEXT, "text": "needle"}
VECTOR_SEARCH = {"vector_field": VECTOR, "vector": (1.0, 0.0), "space": SPACE}
SEEDS_SQL = "SEEDS ((seeds, 'root'), (seeds, 's2')) DEPTH 2 VERTICES 100 EDGES 100"
VECTOR_SQL = 'VECTOR "embedding" MATCH @q SPACE (toy, 2, cosine, "toy-model", "1")'

CASES: list[tuple[str, str, dict[str, Any], GraphSearchRequest]] = [
    (
        "text+scope",
        f"SEARCH FROM docs TEXT \"/text\" MATCH 'needle' SCOPE GRAPH code {SEEDS_SQL}",
        {},
        GraphSearchRequest(1, SearchRequest("main", "docs", **TEXT_SEARCH), scope=GraphScope(WALK)),
    ),
    (
        "retriever only, multi-seed, other-collection intermediate",
        f"SEARCH FROM docs RETRIEVE GRAPH code {SEEDS_SQL}",
        {},
        GraphSearchRequest(1, SearchRequest("main", "docs"), retriever=GraphRetriever(WALK)),
    ),
    (
        "three branches, weights, limit, fusion",
        f'SEARCH FROM docs TEXT "/text" MATCH @t WEIGHT 2 {VECTOR_SQL} WEIGHT 0.5 '
        f"RETRIEVE GRAPH code {SEEDS_SQL} WEIGHT 0.25 LIMIT 3 FUSION 10",
        {"t": "needle", "q": [1.0, 0.0]},
        GraphSearchRequest(
            1,
            SearchRequest(
                "main",
                "docs",
                **TEXT_SEARCH,
                **VECTOR_SEARCH,
                limit=3,
                text_weight=2.0,
                vector_weight=0.5,
                fusion_k=10,
            ),
            retriever=GraphRetriever(WALK, 0.25),
        ),
    ),
    (
        "zero weights",
        f"SEARCH FROM docs TEXT \"/text\" MATCH 'needle' WEIGHT 0 RETRIEVE GRAPH code {SEEDS_SQL} "
        "WEIGHT 0",
        {},
        GraphSearchRequest(
            1,
            SearchRequest("main", "docs", **TEXT_SEARCH, text_weight=0.0),
            retriever=GraphRetriever(WALK, 0.0),
        ),
    ),
    (
        "expansion with labels and allow list",
        "SEARCH FROM docs TEXT \"/text\" MATCH 'needle' EXPAND GRAPH code DEPTH 1 VERTICES 50 "
        "EDGES 50 LABELS ('calls') ALLOW IDS ('a', 'b')",
        {},
        GraphSearchRequest(
            1,
            SearchRequest("main", "docs", **TEXT_SEARCH, allowed_ids=("a", "b")),
            expansion=GraphExpansion(GRAPH, 1, 50, 50, ("calls",)),
        ),
    ),
    (
        "empty labels and empty allow list",
        f"SEARCH FROM docs TEXT \"/text\" MATCH 'needle' SCOPE GRAPH code {SEEDS_SQL} LABELS () "
        "ALLOW IDS ()",
        {},
        GraphSearchRequest(
            1,
            SearchRequest("main", "docs", **TEXT_SEARCH, allowed_ids=()),
            scope=GraphScope(GraphWalkSpec(GRAPH, WALK.seeds, 2, 100, 100, ())),
        ),
    ),
    (
        "kind prior",
        f"SEARCH FROM docs TEXT \"/text\" MATCH 'needle' SCOPE GRAPH code {SEEDS_SQL} "
        "PRIOR 'code_kinds_v1'",
        {},
        GraphSearchRequest(
            1,
            SearchRequest("main", "docs", **TEXT_SEARCH, prior="code_kinds_v1"),
            scope=GraphScope(WALK),
        ),
    ),
    (
        "weighted text field list (BM25F)",
        f"SEARCH FROM docs TEXT \"/text^2\" MATCH 'needle' SCOPE GRAPH code {SEEDS_SQL}",
        {},
        GraphSearchRequest(
            1,
            SearchRequest("main", "docs", text_field="/text^2", text="needle"),
            scope=GraphScope(WALK),
        ),
    ),
]


def outcome(call: Any) -> Any:
    try:
        return ("ok", call())
    except CairnError as error:
        return ("error", type(error), error.code, error.message)


@pytest.mark.parametrize("principal", [None, "reader", "nolabels"])
@pytest.mark.parametrize(("name", "sql", "params", "direct"), CASES, ids=[c[0] for c in CASES])
def test_sql_and_direct_agree(
    db: Database,
    principal: str | None,
    name: str,
    sql: str,
    params: dict[str, Any],
    direct: GraphSearchRequest,
) -> None:
    via_sql = outcome(
        lambda: db.search_sql(SqlGraphSearchRequest(QueryRequest(sql, params)), principal)
    )
    via_direct = outcome(lambda: db.graph_search(direct, principal))
    assert via_sql == via_direct


def test_an_unknown_prior_is_refused_alike(db: Database) -> None:
    sql = (
        f"SEARCH FROM docs TEXT \"/text\" MATCH 'needle' SCOPE GRAPH code {SEEDS_SQL} "
        "PRIOR 'kinds_v0'"
    )
    search = SearchRequest("main", "docs", **TEXT_SEARCH, prior="kinds_v0")
    direct = GraphSearchRequest(1, search, scope=GraphScope(WALK))
    via_sql = outcome(lambda: db.search_sql(SqlGraphSearchRequest(QueryRequest(sql, {}))))
    assert via_sql == outcome(lambda: db.graph_search(direct))
    assert via_sql[0] == "error" and via_sql[2] == "validation"


def test_the_table_covers_hits_redaction_context_and_denials(db: Database) -> None:
    results = {
        name: outcome(lambda d=direct: db.graph_search(d, "reader")) for name, _, _, direct in CASES
    }
    assert all(kind == "ok" for kind, *_ in results.values())
    retrieved = results["retriever only, multi-seed, other-collection intermediate"][1]
    # a and c at one hop (from root and s2), then b (through "other"/o) and d at two.
    assert [h.document.ref.id for h in retrieved.hits] == ["a", "c", "b", "d"]
    expanded = results["expansion with labels and allow list"][1]
    # BM25: the shorter "needle" (b) outranks "needle thread" (a).
    assert [h.document.ref.id for h in expanded.hits] == ["b", "a"]
    assert [h.document.redacted for h in expanded.hits] == [False, True]  # only a has /secret
    context = [
        (c.document.ref.id, c.shortest_hops, c.document.redacted)
        for c in expanded.expansion.documents
    ]
    assert context == [("d", 1, True)]  # a -> h is hidden from the reader
    denied = outcome(lambda: db.graph_search(CASES[4][3], "nolabels"))
    assert denied[0] == "error" and denied[2] == "permission_denied"
