"""Every operator alone and in every combination, each request taking exactly one read cut."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest
from search_helpers import GRAPH, SPACE, TEXT, VECTOR, open_db, put_docs, put_edges, ref

from cairn.errors import NotFoundError, ValidationError
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
from cairn.search.traverse import TraverseRequest, traverse
from cairn.store import Database

ROOT = ref("seeds", "root")
WALK = GraphWalkSpec(GRAPH, (ROOT,), max_depth=2)


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    database = open_db(tmp_path_factory.mktemp("operators"))
    put_docs(database, "seeds", {"root": "root"})
    put_docs(
        database,
        "docs",
        {"a": "needle", "b": "needle needle", "c": "hay", "d": "needle hay"},
        vectors={"a": [1.0, 0.0], "b": [0.0, 1.0], "c": [1.0, 1.0], "d": [-1.0, 0.0]},
    )
    put_edges(
        database,
        [
            (ROOT, ref("docs", "a"), "calls"),
            (ref("docs", "a"), ref("docs", "c"), "calls"),
            (ref("docs", "c"), ref("docs", "d"), "imports"),
        ],
    )
    yield database
    database.close()


TEXT_PART = {"text_field": TEXT, "text": "needle"}
VECTOR_PART = {"vector_field": VECTOR, "vector": (1.0, 0.0), "space": SPACE}
OPERATORS = ["scope", "retriever", "expansion"]
BRANCHES = [(), ("text",), ("vector",), ("text", "vector")]


def make(branches: tuple[str, ...], operators: tuple[str, ...]) -> GraphSearchRequest:
    fields: dict[str, object] = {}
    if "text" in branches:
        fields.update(TEXT_PART)
    if "vector" in branches:
        fields.update(VECTOR_PART)
    return GraphSearchRequest(
        1,
        SearchRequest("main", "docs", explain=True, **fields),  # type: ignore[arg-type]
        scope=GraphScope(WALK) if "scope" in operators else None,
        retriever=GraphRetriever(WALK) if "retriever" in operators else None,
        expansion=GraphExpansion(GRAPH) if "expansion" in operators else None,
    )


COMBINATIONS = [
    (branches, operators)
    for branches in BRANCHES
    for size in range(1, 4)
    for operators in itertools.combinations(OPERATORS, size)
]


@pytest.mark.parametrize(("branches", "operators"), COMBINATIONS, ids=str)
def test_each_combination_takes_exactly_one_read_cut(
    db: Database, branches: tuple[str, ...], operators: tuple[str, ...]
) -> None:
    request = make(branches, operators)
    before = db.read_cut_acquisitions
    if not branches and "retriever" not in operators:
        with pytest.raises(ValidationError):
            db.graph_search(request)
        assert db.read_cut_acquisitions == before  # admission refuses before any read
        return
    result = db.graph_search(request)
    assert db.read_cut_acquisitions == before + 1
    ids = [hit.document.ref.id for hit in result.hits]
    reach = {"a", "c"}  # docs reachable from root within two hops
    if "scope" in operators:
        assert set(ids) <= reach
    if "retriever" in operators and not branches:
        assert ids == ["a", "c"]
    if "expansion" in operators:
        assert result.expansion is not None
        assert result.expansion.completeness == "selected_hits"
        context = {d.document.ref for d in result.expansion.documents}
        assert not context & {hit.document.ref for hit in result.hits}
    else:
        assert result.expansion is None
    for hit in result.hits:
        assert hit.explanation is not None
        branch_names = {c.branch.value for c in hit.explanation.contributions}
        assert branch_names <= {*branches, "graph"}


def test_scope_alone_with_text_filters_before_ranking(db: Database) -> None:
    result = db.graph_search(make(("text",), ("scope",)))
    # Text matches a, b, d; scope keeps a (and c, which has no "needle").
    assert [h.document.ref.id for h in result.hits] == ["a"]
    explanation = result.hits[0].explanation
    assert explanation is not None
    assert [(c.branch.value, c.native_rank) for c in explanation.contributions] == [("text", 1)]


def test_expansion_alone_gives_context_of_hits(db: Database) -> None:
    result = db.graph_search(make(("text",), ("expansion",)))
    assert [h.document.ref.id for h in result.hits] == ["b", "a", "d"]
    assert result.expansion is not None
    assert [(d.document.ref.id, d.shortest_hops) for d in result.expansion.documents] == [("c", 1)]


def test_plain_search_takes_one_cut_and_fuses(db: Database) -> None:
    before = db.read_cut_acquisitions
    hits = db.search(SearchRequest("main", "docs", **TEXT_PART, **VECTOR_PART))  # type: ignore[arg-type]
    assert db.read_cut_acquisitions == before + 1
    assert [h.document.ref.id for h in hits][:2] == ["a", "b"]


def test_sql_takes_one_cut_and_equals_the_direct_form(db: Database) -> None:
    sql = SqlGraphSearchRequest(
        QueryRequest(
            "SEARCH FROM docs TEXT \"/text\" MATCH 'needle' "
            "RETRIEVE GRAPH code SEEDS ((seeds, 'root')) DEPTH 2 VERTICES 1000 EDGES 5000"
        )
    )
    before = db.read_cut_acquisitions
    via_sql = db.search_sql(sql)
    assert db.read_cut_acquisitions == before + 1
    direct = db.graph_search(
        GraphSearchRequest(
            1, SearchRequest("main", "docs", **TEXT_PART), retriever=GraphRetriever(WALK)
        )  # type: ignore[arg-type]
    )
    assert via_sql == direct


def test_unknown_database_collection_and_graph(db: Database) -> None:
    before = db.read_cut_acquisitions
    with pytest.raises(ValidationError, match="names database 'other'") as caught:
        db.graph_search(
            GraphSearchRequest(1, SearchRequest("other", "docs"), retriever=GraphRetriever(WALK))
        )
    assert "main" not in caught.value.message  # the served database is not named
    with pytest.raises(ValidationError, match="names database 'other'"):
        db.search(SearchRequest("other", "docs", text_field="/text", text="x"))
    with pytest.raises(ValidationError, match="names database 'other'"):
        traverse(db, TraverseRequest("other", GRAPH, (ref("docs", "a"),)))
    assert db.read_cut_acquisitions == before  # refused in admission, before any read
    with pytest.raises(NotFoundError, match="collection"):
        db.graph_search(
            GraphSearchRequest(1, SearchRequest("main", "nope"), retriever=GraphRetriever(WALK))
        )
    with pytest.raises(NotFoundError, match="graph"):
        db.graph_search(
            GraphSearchRequest(
                1,
                SearchRequest("main", "docs"),
                retriever=GraphRetriever(GraphWalkSpec("nope", (ROOT,))),
            )
        )
