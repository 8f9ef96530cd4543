"""The three worked examples of spec §5, checked against a test-owned arithmetic oracle."""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path

import pytest
from search_helpers import GRAPH, SPACE, TEXT, VECTOR, open_db, put_docs, put_edges, ref

from cairn.search.contracts import (
    GraphRetriever,
    GraphScope,
    GraphSearchRequest,
    GraphWalkSpec,
    SearchRequest,
)
from cairn.store import Database

ROOT = ref("seeds", "root")


def rrf(parts: list[tuple[float, int]], k: int) -> float:
    """Test-owned oracle: sum of weight / (k + one-based rank)."""
    return float(sum(Fraction(weight) / (k + rank) for weight, rank in parts))


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = open_db(tmp_path)
    yield database
    database.close()


def retriever(
    *seeds: object, labels: tuple[str, ...] | None = None, weight: float = 1.0
) -> GraphRetriever:
    return GraphRetriever(GraphWalkSpec(GRAPH, tuple(seeds), labels=labels), weight)  # type: ignore[arg-type]


def test_example_1_retriever_ranks_by_hops_then_ref(db: Database) -> None:
    put_docs(db, "seeds", {"root": "root"})
    put_docs(db, "docs", {name: name for name in ("alpha", "beta", "gamma", "delta")})
    put_edges(
        db,
        [
            (ROOT, ref("docs", "alpha"), "calls"),
            (ROOT, ref("docs", "beta"), "calls"),
            (ref("docs", "alpha"), ref("docs", "gamma"), "calls"),
        ],
    )
    request = GraphSearchRequest(1, SearchRequest(db.name, "docs"), retriever=retriever(ROOT))
    before = db.graph_search(request)
    assert [h.document.ref.id for h in before.hits] == ["alpha", "beta", "gamma"]
    put_edges(db, [(ROOT, ref("docs", "delta"), "calls")])  # the later write
    after = db.graph_search(request)
    assert [h.document.ref.id for h in after.hits] == ["alpha", "beta", "delta", "gamma"]
    assert [h.score for h in after.hits] == pytest.approx(
        [1 / 61, 1 / 62, 1 / 63, 1 / 64], abs=1e-15
    )
    assert after.expansion is None


def test_example_2_three_branches_add_up(db: Database) -> None:
    put_docs(db, "seeds", {"root": "root"})
    put_docs(
        db,
        "docs",
        {"a-hit": "needle needle", "b-hit": "needle"},
        vectors={"a-hit": [1.0, 0.1], "b-hit": [0.5, 0.9]},
    )
    put_edges(db, [(ROOT, ref("docs", "a-hit"), "calls"), (ROOT, ref("docs", "b-hit"), "calls")])
    only_graph = GraphSearchRequest(1, SearchRequest(db.name, "docs"), retriever=retriever(ROOT))
    hits = db.graph_search(only_graph).hits
    assert [(h.document.ref.id, h.score) for h in hits] == [
        ("a-hit", pytest.approx(1 / 61)),
        ("b-hit", pytest.approx(1 / 62)),
    ]
    search = SearchRequest(
        db.name,
        "docs",
        text_field=TEXT,
        text="needle",
        vector_field=VECTOR,
        vector=(1.0, 0.0),
        space=SPACE,
    )
    fused = db.graph_search(GraphSearchRequest(1, search, retriever=retriever(ROOT))).hits
    assert [h.document.ref.id for h in fused] == ["a-hit", "b-hit"]
    assert [h.score for h in fused] == pytest.approx([3 / 61, 3 / 62], abs=1e-15)


def example_3(db: Database) -> None:
    put_docs(db, "seeds", {"root": "root"})
    put_docs(
        db,
        "docs",
        {"a": "needle needle", "b": "needle", "c": "other", "d": "other"},
        vectors={"a": [0.8, 0.6], "b": [1.0, 0.0], "c": [0.0, 1.0], "d": [-1.0, 0.0]},
    )
    put_edges(
        db,
        [
            (ROOT, ref("docs", "c"), "calls"),
            (ROOT, ref("docs", "d"), "imports"),
            (ref("docs", "c"), ref("docs", "b"), "calls"),
        ],
    )


K = 10
W_TEXT, W_VECTOR, W_GRAPH = 2.0, 1.0, 13 / 132


def example_3_search(allowed: tuple[str, ...] | None = None) -> SearchRequest:
    return SearchRequest(
        "main",
        "docs",
        text_field=TEXT,
        text="needle",
        vector_field=VECTOR,
        vector=(1.0, 0.0),
        space=SPACE,
        text_weight=W_TEXT,
        vector_weight=W_VECTOR,
        fusion_k=K,
        allowed_ids=allowed,
        explain=True,
    )


def test_example_3_weighted_tie_breaks_by_id(db: Database) -> None:
    example_3(db)
    # Declared branch orders of the corpus: text a, b (a has tf 2); cosine to [1, 0]:
    # b (1), a (0.8), c (0), d (-1); graph from root: c, d at 1 hop, b at 2 hops.
    expected = {
        "a": rrf([(W_TEXT, 1), (W_VECTOR, 2)], K),
        "b": rrf([(W_TEXT, 2), (W_VECTOR, 1), (W_GRAPH, 3)], K),
        "c": rrf([(W_VECTOR, 3), (W_GRAPH, 1)], K),
        "d": rrf([(W_VECTOR, 4), (W_GRAPH, 2)], K),
    }
    assert expected["a"] == pytest.approx(35 / 132) and expected["b"] == pytest.approx(35 / 132)
    request = GraphSearchRequest(1, example_3_search(), retriever=retriever(ROOT, weight=W_GRAPH))
    hits = db.graph_search(request).hits
    assert [h.document.ref.id for h in hits] == ["a", "b", "c", "d"]
    for hit in hits:
        assert hit.score == pytest.approx(expected[hit.document.ref.id], rel=1e-12)
    assert hits[0].score == hits[1].score
    explanation = hits[1].explanation
    assert explanation is not None
    assert [(c.branch, c.native_rank) for c in explanation.contributions] == [
        ("text", 2),
        ("vector", 1),
        ("graph", 3),
    ]
    assert explanation.hops == 2
    assert explanation.path == (ROOT, ref("docs", "c"), ref("docs", "b"))
    ceiling = (W_TEXT + W_VECTOR + W_GRAPH) / (K + 1)
    assert explanation.normalized_score == pytest.approx(expected["b"] / ceiling)
    assert hits[0].explanation is not None and hits[0].explanation.hops is None


def test_example_3_scope_and_allowed_ids(db: Database) -> None:
    example_3(db)
    scope = GraphScope(GraphWalkSpec(GRAPH, (ROOT,), labels=("calls",)))
    request = GraphSearchRequest(
        1,
        example_3_search(("b", "c", "d")),
        scope=scope,
        retriever=retriever(ROOT, weight=W_GRAPH),
    )
    hits = db.graph_search(request).hits
    # Candidates: scope reach {root, c, b} within docs, intersected with [b, c, d].
    expected = {
        "b": rrf([(W_TEXT, 1), (W_VECTOR, 1), (W_GRAPH, 2)], K),
        "c": rrf([(W_VECTOR, 2), (W_GRAPH, 1)], K),
    }
    assert [h.document.ref.id for h in hits] == ["b", "c"]
    for hit in hits:
        assert hit.score == pytest.approx(expected[hit.document.ref.id], rel=1e-12)


def test_example_3_all_zero_weights_give_no_hits(db: Database) -> None:
    example_3(db)
    search = SearchRequest(
        "main",
        "docs",
        text_field=TEXT,
        text="needle",
        vector_field=VECTOR,
        vector=(1.0, 0.0),
        space=SPACE,
        text_weight=0.0,
        vector_weight=0.0,
        fusion_k=K,
    )
    request = GraphSearchRequest(1, search, retriever=retriever(ROOT, weight=0.0))
    assert db.graph_search(request).hits == ()
