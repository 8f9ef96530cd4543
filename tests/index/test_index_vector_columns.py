"""The in-memory vector matrices: exact against a brute-force oracle, MVCC, catch-up."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from store_helpers import cmd, put, rows

import cairn.index as index
from cairn.index import Database
from cairn.index.vectors import vector_branch
from cairn.store import (
    ConfigureCollection,
    DeleteDocument,
    Metric,
    PutVector,
    VectorField,
    VectorSpace,
)

DIMENSION = 6


def _space(metric: Metric) -> VectorSpace:
    return VectorSpace("rand", DIMENSION, metric, "random", "1")


def _oracle(
    vectors: dict[str, np.ndarray], query: np.ndarray, metric: Metric, limit: int
) -> list[tuple[str, float]]:
    """Brute force in plain numpy over float32-rounded vectors, ties by ID."""
    scored = []
    for doc_id, vector in vectors.items():
        v = vector.astype(np.float32).astype(np.float64)
        if metric is Metric.DOT:
            score = float(v @ query)
        elif metric is Metric.EUCLIDEAN:
            score = -float(np.sqrt(((v - query) ** 2).sum()))
        else:
            norm = float(np.sqrt((v * v).sum()) * np.sqrt((query * query).sum()))
            score = float(v @ query) / norm if norm else 0.0
        scored.append((doc_id, score))
    return sorted(scored, key=lambda item: (-item[1], item[0]))[:limit]


@pytest.mark.parametrize("metric", list(Metric))
def test_scan_matches_brute_force_with_rewrites_deletes_and_stale(
    db: Database, metric: Metric
) -> None:
    rng = np.random.default_rng(7)
    space = _space(metric)
    db.command(cmd(ConfigureCollection("docs", ("/text",), (VectorField("embedding", space),))))
    ids = [f"d{i:03d}" for i in range(120)]
    db.command(cmd(*(put("docs", doc_id) for doc_id in ids)))
    current: dict[str, np.ndarray] = {}
    for batch in range(3):  # each document gets up to three vectors over time
        chosen = ids if batch == 0 else [str(x) for x in rng.choice(ids, 40, replace=False)]
        mutations = []
        for doc_id in chosen:
            vector = rng.normal(size=DIMENSION).round(2)
            current[doc_id] = vector
            mutations.append(PutVector("docs", doc_id, "embedding", tuple(vector)))
        db.command(cmd(*mutations))
    # Stale: a new revision of d000..d009 leaves their vectors behind; deletes remove others.
    db.command(cmd(*(put("docs", doc_id, "new") for doc_id in ids[:10])))
    db.command(cmd(*(DeleteDocument("docs", doc_id) for doc_id in ids[10:20])))
    for doc_id in ids[:20]:
        del current[doc_id]
    # Ties: two live documents share one vector.
    db.command(cmd(PutVector("docs", "d050", "embedding", tuple(current["d051"]))))
    current["d050"] = current["d051"]
    for _ in range(5):
        query = rng.normal(size=DIMENSION)
        for limit in (1, 7, 200):
            hits = db.vector_search("docs", "embedding", tuple(query), space, limit=limit)
            expected = _oracle(current, query, metric, limit)
            assert [hit.ref.id for hit in hits] == [doc_id for doc_id, _ in expected]
            assert [hit.score for hit in hits] == pytest.approx([s for _, s in expected], abs=1e-9)
            assert [hit.rank for hit in hits] == list(range(1, len(hits) + 1))
    allowed = ["d050", "d051", "d000", "d099", "missing"]
    hits = db.vector_search(
        "docs", "embedding", tuple(current["d051"]), space, limit=10, allowed_ids=allowed
    )
    kept = {doc_id: current[doc_id] for doc_id in allowed if doc_id in current}
    assert [h.ref.id for h in hits] == [d for d, _ in _oracle(kept, current["d051"], metric, 10)]


def test_ties_at_the_limit_break_by_id(db: Database) -> None:
    space = _space(Metric.COSINE)
    db.command(cmd(ConfigureCollection("docs", (), (VectorField("embedding", space),))))
    names = ["e", "b", "d", "a", "c"]
    db.command(cmd(*(put("docs", name) for name in names)))
    same = (1.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    db.command(cmd(*(PutVector("docs", name, "embedding", same) for name in names)))
    hits = db.vector_search("docs", "embedding", same, space, limit=2)
    assert [hit.ref.id for hit in hits] == ["a", "b"]


def test_an_old_cut_keeps_its_vectors(db: Database) -> None:
    space = _space(Metric.DOT)
    db.command(cmd(ConfigureCollection("docs", (), (VectorField("embedding", space),))))
    db.command(cmd(put("docs", "a"), PutVector("docs", "a", "embedding", (1.0,) * DIMENSION)))
    with db.read_cut() as old:
        db.command(cmd(PutVector("docs", "a", "embedding", (2.0,) * DIMENSION)))
        db.command(cmd(put("docs", "b"), PutVector("docs", "b", "embedding", (3.0,) * DIMENSION)))
        newer = db.vector_search("docs", "embedding", (1.0,) * DIMENSION, space)
        assert [(h.ref.id, h.score) for h in newer] == [("b", 18.0), ("a", 12.0)]
        seen = vector_branch(old, "docs", "embedding", (1.0,) * DIMENSION, space, limit=10)
        assert [(h.ref.id, h.score) for h in seen] == [("a", 6.0)]
    assert rows(db.path, "SELECT birth, death FROM vector_rows ORDER BY row") == [
        (2, 3),
        (3, None),
        (4, None),
    ]


def test_vectors_written_by_another_handle_are_seen(db_path: Path) -> None:
    space = _space(Metric.COSINE)
    unit = (1.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    with index.open(db_path) as first, index.open(db_path) as second:
        first.command(cmd(ConfigureCollection("docs", (), (VectorField("embedding", space),))))
        first.command(cmd(put("docs", "a"), PutVector("docs", "a", "embedding", unit)))
        assert [h.ref.id for h in first.vector_search("docs", "embedding", unit, space)] == ["a"]
        second.command(cmd(put("docs", "b"), PutVector("docs", "b", "embedding", unit)))
        second.command(cmd(put("docs", "a", "stale now")))
        hits = first.vector_search("docs", "embedding", unit, space)
        assert [h.ref.id for h in hits] == ["b"]


def test_vectors_written_by_another_process_are_seen(db_path: Path) -> None:
    space = _space(Metric.COSINE)
    unit = (0.0, 1.0, 0.0, 0.0, 0.0, 0.0)
    script = f"""
import uuid
import cairn.store as store
from cairn.store import CommandRequest, PutDocument, PutVector
with store.open({str(db_path)!r}) as db:
    db.command(CommandRequest(uuid.uuid4(), "main", (
        PutDocument("docs", "z", {{"text": ""}}),
        PutVector("docs", "z", "embedding", {unit!r}),
    )))
"""
    with index.open(db_path) as db:
        db.command(cmd(ConfigureCollection("docs", (), (VectorField("embedding", space),))))
        assert db.vector_search("docs", "embedding", unit, space) == ()
        subprocess.run([sys.executable, "-c", script], check=True, timeout=60)
        hits = db.vector_search("docs", "embedding", unit, space)
        assert [(h.ref.id, h.score) for h in hits] == [("z", pytest.approx(1.0))]


def test_cold_open_loads_the_matrix(db_path: Path) -> None:
    space = _space(Metric.DOT)
    with index.open(db_path) as db:
        db.command(cmd(ConfigureCollection("docs", (), (VectorField("embedding", space),))))
        db.command(cmd(*(put("docs", f"d{i}") for i in range(100))))
        db.command(
            cmd(
                *(
                    PutVector("docs", f"d{i}", "embedding", (float(i),) * DIMENSION)
                    for i in range(100)
                )
            )
        )
    with index.open(db_path) as db:
        hits = db.vector_search("docs", "embedding", (1.0,) * DIMENSION, space, limit=3)
        assert [(h.ref.id, h.score) for h in hits] == [
            ("d99", 594.0),
            ("d98", 588.0),
            ("d97", 582.0),
        ]
