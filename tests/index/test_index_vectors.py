"""The exact vector branch: metrics, same-space only, stale vectors ignored, masks."""

from __future__ import annotations

import math

import pytest
from store_helpers import SPACE, cmd, put, setup_docs

from cairn.errors import PermissionDeniedError, ValidationError
from cairn.index import Database
from cairn.store import (
    Capability,
    ConfigureCollection,
    ConfigurePrincipal,
    DocumentAccess,
    Grant,
    Metric,
    PutVector,
    VectorField,
    VectorSpace,
)

VECTORS = {"a": (0.8, 0.6), "b": (1.0, 0.0), "c": (0.0, 1.0), "d": (-1.0, 0.0)}


@pytest.fixture
def vec_db(db: Database) -> Database:
    setup_docs(db)
    db.command(cmd(*(put("docs", doc_id) for doc_id in VECTORS)))
    db.command(cmd(*(PutVector("docs", k, "embedding", v) for k, v in VECTORS.items())))
    return db


def test_cosine_ranks_the_spec_fixture(vec_db: Database) -> None:
    hits = vec_db.vector_search("docs", "embedding", (1.0, 0.0), SPACE)
    assert [(h.ref.id, h.rank) for h in hits] == [("b", 1), ("a", 2), ("c", 3), ("d", 4)]
    # float32 storage: 0.8 is not exact, so compare within float32 precision.
    assert [h.score for h in hits] == pytest.approx([1.0, 0.8, 0.0, -1.0], abs=1e-7)


@pytest.mark.parametrize(
    ("metric", "query", "expected"),
    [
        (Metric.DOT, (2.0, 0.0), [("b", 2.0), ("a", 1.6), ("c", 0.0), ("d", -2.0)]),
        (
            Metric.EUCLIDEAN,
            (1.0, 0.0),
            [("b", 0.0), ("a", -math.sqrt(0.4)), ("c", -math.sqrt(2)), ("d", -2.0)],
        ),
    ],
)
def test_dot_and_euclidean(
    db: Database, metric: Metric, query: tuple[float, float], expected: list[tuple[str, float]]
) -> None:
    space = VectorSpace("toy", 2, metric, "toy-model", "1")
    db.command(cmd(ConfigureCollection("docs", ("/text",), (VectorField("embedding", space),))))
    db.command(cmd(*(put("docs", doc_id) for doc_id in VECTORS)))
    db.command(cmd(*(PutVector("docs", k, "embedding", v) for k, v in VECTORS.items())))
    hits = db.vector_search("docs", "embedding", query, space)
    assert [h.ref.id for h in hits] == [doc_id for doc_id, _ in expected]
    assert [h.score for h in hits] == pytest.approx([s for _, s in expected], abs=1e-6)


def test_stale_vectors_are_ignored_and_other_spaces_refused(vec_db: Database) -> None:
    vec_db.command(cmd(put("docs", "b", "rewritten")))  # b's vector is now stale
    assert [h.ref.id for h in vec_db.vector_search("docs", "embedding", (1.0, 0.0), SPACE)] == [
        "a",
        "c",
        "d",
    ]
    # A query only sees vectors of the field's exact space; one from another embedder
    # (here the next version of the model) is refused by name instead of seeing nothing.
    other = VectorSpace("toy", 2, Metric.COSINE, "toy-model", "2")
    with pytest.raises(ValidationError, match=r"toy-model 2.*toy-model 1"):
        vec_db.vector_search("docs", "embedding", (1.0, 0.0), other)


def test_masks_apply_before_ranking(vec_db: Database) -> None:
    hits = vec_db.vector_search("docs", "embedding", (1.0, 0.0), SPACE, allowed_ids=["c", "d"])
    assert [(h.ref.id, h.rank) for h in hits] == [("c", 1), ("d", 2)]
    vec_db.command(
        cmd(
            put("docs", "a", access=DocumentAccess("alice")),
            PutVector("docs", "a", "embedding", (0.8, 0.6)),
            ConfigurePrincipal(
                "searcher",
                grants=(Grant("main", "docs", frozenset({Capability.VECTOR_SEARCH})),),
                owner_id="bob",
                restrict_rows=True,
            ),
        )
    )
    assert vec_db.vector_search("docs", "embedding", (1.0, 0.0), SPACE, "searcher") == ()


def test_vector_search_needs_its_capability_and_a_matching_query(vec_db: Database) -> None:
    reader = Grant("main", "docs", frozenset({Capability.DOCUMENTS_READ}))
    vec_db.command(cmd(ConfigurePrincipal("reader", grants=(reader,))))
    with pytest.raises(PermissionDeniedError, match="vector_search"):
        vec_db.vector_search("docs", "embedding", (1.0, 0.0), SPACE, "reader")
    with pytest.raises(ValidationError, match="2 finite values"):
        vec_db.vector_search("docs", "embedding", (1.0, 0.0, 0.0), SPACE)
    with pytest.raises(ValidationError, match="no vector field"):
        vec_db.vector_search("docs", "other", (1.0, 0.0), SPACE)
