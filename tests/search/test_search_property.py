"""graph_search on random small corpora and graphs equals an independent brute force."""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from fractions import Fraction
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from brute_force import Corpus, bfs, bm25, cosine, fuse, ranked
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from search_helpers import GRAPH, SPACE, TEXT, VECTOR, open_db, put_docs, put_edges, ref

from cairn.index.adjacency import GraphView
from cairn.index.columns import ColumnsView
from cairn.search.contracts import (
    GraphExpansion,
    GraphRetriever,
    GraphScope,
    GraphSearchRequest,
    GraphWalkSpec,
    SearchRequest,
)

WORDS = ["alpha", "beta", "gamma", "delta"]
DIRECTIONS = [(1, 0), (0, 1), (-1, 0), (0, -1), (1, 1), (1, -1), (-1, 1), (-1, -1), (2, 1), (1, 2)]
WEIGHTS = [0.0, 0.5, 1.0, 2.0]
RELATIONS = ["calls", "imports"]
COLLECTIONS = ["docs", "seeds"]


@st.composite
def scenarios(draw: Any) -> dict[str, Any]:
    ids = {
        c: draw(st.lists(st.sampled_from("abcdef"), min_size=1, max_size=5, unique=True))
        for c in COLLECTIONS
    }
    refs = [(c, i) for c in COLLECTIONS for i in ids[c]]
    corpus = Corpus()
    for item in refs:
        corpus.texts[item] = " ".join(
            draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=4))
        )
        if draw(st.booleans()):
            corpus.vectors[item] = draw(st.sampled_from(DIRECTIONS))
    addressed: dict[tuple[str, str, str], tuple[Any, Any]] = {}
    for _ in range(draw(st.integers(0, 10))):
        source, target = draw(st.sampled_from(refs)), draw(st.sampled_from(refs))
        relation = draw(st.sampled_from(RELATIONS))
        # A fact's ID addresses document IDs, not collections: the store refuses a
        # second fact with the same IDs and relation between other collections.
        if addressed.setdefault((source[1], target[1], relation), (source, target)) != (
            source,
            target,
        ):
            continue
        corpus.edges.append((source, target, relation))
    seeds = draw(st.lists(st.sampled_from(refs), min_size=1, max_size=2, unique=True))
    return {
        "corpus": corpus,
        "seeds": seeds,
        "text": draw(st.none() | st.lists(st.sampled_from(WORDS), min_size=1, max_size=2)),
        "vector": draw(st.none() | st.sampled_from(DIRECTIONS)),
        "weights": [draw(st.sampled_from(WEIGHTS)) for _ in range(3)],
        "use_scope": draw(st.booleans()),
        "use_retriever": draw(st.booleans()),
        "use_expansion": draw(st.booleans()),
        "depth": draw(st.integers(0, 3)),
        "labels": draw(st.none() | st.sets(st.sampled_from(RELATIONS)).map(tuple)),
        "allowed": draw(st.none() | st.lists(st.sampled_from("abcdef"), unique=True, max_size=4)),
        "limit": draw(st.integers(1, 6)),
        "k": draw(st.sampled_from([1, 10, 60])),
    }


def expected(
    s: dict[str, Any],
) -> tuple[list[tuple[str, Fraction]], list[tuple[tuple[str, str], int]]]:
    corpus: Corpus = s["corpus"]
    labels = None if s["labels"] is None else frozenset(s["labels"])
    candidates = {i for (c, i) in corpus.texts if c == "docs"}
    if s["allowed"] is not None:
        candidates &= set(s["allowed"])
    if s["use_scope"]:
        reach = bfs(corpus, s["seeds"], s["depth"], labels)
        candidates &= {i for (c, i) in reach if c == "docs"}
    w_text, w_vector, w_graph = (Fraction(w) for w in s["weights"])
    branches: list[tuple[Fraction, list[str]]] = []
    if s["text"] is not None:
        scores = bm25(corpus, "docs", " ".join(s["text"]))
        branches.append((w_text, [d for d in ranked(scores) if d in candidates]))
    if s["vector"] is not None:
        scores = cosine(corpus, "docs", s["vector"])
        branches.append((w_vector, [d for d in ranked(scores) if d in candidates]))
    if s["use_retriever"]:
        reach = bfs(corpus, s["seeds"], s["depth"], labels)
        order = sorted(
            (r for r in reach if r[0] == "docs" and r[1] in candidates), key=lambda r: (reach[r], r)
        )
        branches.append((w_graph, [i for _, i in order]))
    hits = fuse(branches, s["k"], s["limit"])
    context: list[tuple[tuple[str, str], int]] = []
    if s["use_expansion"]:
        hit_refs = [("docs", doc_id) for doc_id, _ in hits]
        reach = bfs(corpus, hit_refs, 1, labels)
        context = sorted(
            ((r, h) for r, h in reach.items() if r not in hit_refs),
            key=lambda item: (item[1], item[0]),
        )
    return hits, context


def build_request(s: dict[str, Any]) -> GraphSearchRequest:
    seeds = tuple(ref(c, i) for c, i in s["seeds"])
    walk = GraphWalkSpec(GRAPH, seeds, s["depth"], 50, 500, s["labels"])
    w_text, w_vector, w_graph = s["weights"]
    search = SearchRequest(
        "main",
        "docs",
        text_field=TEXT if s["text"] else None,
        text=" ".join(s["text"]) if s["text"] else None,
        vector_field=VECTOR if s["vector"] else None,
        vector=tuple(float(x) for x in s["vector"]) if s["vector"] else None,
        space=SPACE if s["vector"] else None,
        limit=s["limit"],
        text_weight=w_text,
        vector_weight=w_vector,
        fusion_k=s["k"],
        allowed_ids=tuple(s["allowed"]) if s["allowed"] is not None else None,
    )
    return GraphSearchRequest(
        1,
        search,
        scope=GraphScope(walk) if s["use_scope"] else None,
        retriever=GraphRetriever(walk, w_graph) if s["use_retriever"] else None,
        expansion=GraphExpansion(GRAPH, 1, 50, 500, s["labels"]) if s["use_expansion"] else None,
    )


@contextmanager
def forced_sql_edges() -> Iterator[None]:
    """Every adjacency view reports itself inexact, so walks read edges from SQLite."""
    original = ColumnsView.graph

    def inexact(view: ColumnsView, conn: Any, name: str) -> GraphView:
        return dataclasses.replace(original(view, conn, name), exact=False)

    with mock.patch.object(ColumnsView, "graph", inexact):
        yield


def valid(s: dict[str, Any]) -> bool:
    has_branch = s["text"] is not None or s["vector"] is not None
    has_graph = s["use_scope"] or s["use_retriever"] or s["use_expansion"]
    return has_graph and (has_branch or s["use_retriever"])


@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(scenarios().filter(valid))
def test_graph_search_matches_brute_force(s: dict[str, Any]) -> None:
    corpus: Corpus = s["corpus"]
    with tempfile.TemporaryDirectory() as folder:
        db = open_db(Path(folder))
        try:
            for collection in COLLECTIONS:
                texts = {i: t for (c, i), t in corpus.texts.items() if c == collection}
                vectors = {i: v for (c, i), v in corpus.vectors.items() if c == collection}
                put_docs(db, collection, texts, vectors)
            if corpus.edges:
                put_edges(db, [(ref(*a), ref(*b), rel) for a, b, rel in corpus.edges])
            result = db.graph_search(build_request(s))
            with forced_sql_edges():  # the walk's other path must agree exactly
                assert db.graph_search(build_request(s)) == result
        finally:
            db.close()
    hits, context = expected(s)
    assert [h.document.ref.id for h in result.hits] == [doc_id for doc_id, _ in hits]
    for hit, (_, score) in zip(result.hits, hits, strict=True):
        assert hit.score == pytest.approx(float(score), rel=1e-9)
    if s["use_expansion"]:
        assert result.expansion is not None
        got = [
            ((d.document.ref.collection, d.document.ref.id), d.shortest_hops)
            for d in result.expansion.documents
        ]
        assert got == context
    else:
        assert result.expansion is None
