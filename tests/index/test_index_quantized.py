"""The int8 scan: its proven bound holds, its kernel is checked, rankings unchanged."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from store_helpers import cmd, put
from vector_helpers import (
    DIMENSION,
    SPACE,
    count_calls,
    doc_ids,
    exact_cosines,
    ids_of,
    matrices,
    vector_db,
)

import cairn.index.scanning as scanning
import cairn.index.vectors as vectors
from cairn.index import Database
from cairn.index.quantized import (
    _probe,
    encode_query,
    encode_rows,
    int8_kernel_ready,
    quantized_bound,
    quantized_scan,
)
from cairn.index.scanning import split_rows
from cairn.index.vectors import cosine, vector_ranking
from cairn.store import ConfigureCollection, Metric, PutVector, VectorField, VectorSpace


def test_numkong_passes_the_exactness_probe() -> None:
    assert int8_kernel_ready() is not None


def test_the_probe_rejects_kernels_that_sum_in_float32_or_saturate_at_16_bits() -> None:
    def float32_sum(codes: np.ndarray, query: np.ndarray, out: np.ndarray) -> None:
        out[:] = (codes.astype(np.float32) @ query.astype(np.float32)).astype(np.float64)

    def saturating_sum(codes: np.ndarray, query: np.ndarray, out: np.ndarray) -> None:
        wide = codes.astype(np.int64) @ query.astype(np.int64)
        out[:] = np.clip(wide, -(2**15), 2**15 - 1)

    def exact_sum(codes: np.ndarray, query: np.ndarray, out: np.ndarray) -> None:
        out[:] = codes.astype(np.int64) @ query.astype(np.int64)

    assert not _probe(float32_sum)
    assert not _probe(saturating_sum)
    assert _probe(exact_sum)


def scan_cosines(rows: np.ndarray, query: np.ndarray, split: bool = False) -> tuple:
    """The int8 scan's approximate cosines of ``rows`` and its bound, as the branch does
    (``split``: across the scan threads and this one, in row ranges)."""
    norms = np.sqrt(np.einsum("ij,ij->i", rows, rows, dtype=np.float64))
    codes, scales, residuals = encode_rows(rows, norms)
    query_codes, query_scale, query_residual = encode_query(query)
    dots = np.full(len(rows), np.nan)
    if split:

        def kernel(begin: int, end: int) -> None:
            quantized_scan(codes[begin:end], query_codes, dots[begin:end])

        split_rows(len(rows), kernel)
    else:
        quantized_scan(codes, query_codes, dots)
    assert np.array_equal(dots, codes.astype(np.int64) @ query_codes.astype(np.int64))
    bound = quantized_bound(float(residuals.max()), query_residual)
    return dots * scales * query_scale, bound


@settings(max_examples=200, deadline=None)
@given(matrices())
def test_the_int8_scan_is_within_its_bound(drawn: tuple[np.ndarray, np.ndarray]) -> None:
    rows, query = drawn
    approx, bound = scan_cosines(rows, query)
    exact = exact_cosines(rows, query)
    assert np.all(np.abs(exact - approx) <= bound)


def test_the_bound_is_tight_enough_to_scan_with_for_256_dims() -> None:
    rng = np.random.default_rng(5)
    rows = rng.standard_normal((2000, 256)).astype(np.float32)
    query = rng.standard_normal(256)
    approx, bound = scan_cosines(rows, query)
    assert np.all(np.abs(exact_cosines(rows, query) - approx) <= bound)
    # Gaussian rows lose ~0.007 each to int8 (the worst ~0.013), the query as much.
    assert bound < 0.03


def test_the_split_scan_is_exact_and_within_the_bound_for_4096_dims(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = np.random.default_rng(7)
    rows = rng.standard_normal((3000, 4096)).astype(np.float32)
    rows[0] = 0.0
    rows[1, :] = 1e-3
    rows[1, 5] = 40.0  # one large component: the rest round to zero codes
    query = rng.standard_normal(4096)
    monkeypatch.setattr(scanning, "PARALLEL_SCAN_MIN_ROWS", 1)
    split, bound = scan_cosines(rows, query, split=True)
    assert np.all(np.abs(exact_cosines(rows, query) - split) <= bound)


def test_encode_rows_of_zero_rows_is_zero() -> None:
    rows = np.zeros((3, 4), dtype=np.float32)
    codes, scales, residuals = encode_rows(rows, np.zeros(3))
    assert not codes.any()
    assert not scales.any()
    assert not residuals.any()
    query_codes, query_scale, query_residual = encode_query(np.zeros(4))
    assert not query_codes.any() and query_scale == 0.0 and query_residual == 0.0


def test_codes_stay_within_127_and_rebuild_the_unit_within_the_residual() -> None:
    rng = np.random.default_rng(13)
    rows = (rng.standard_normal((500, 33)) * rng.choice([1e-20, 1.0, 1e20], (500, 1))).astype(
        np.float32
    )
    norms = np.sqrt(np.einsum("ij,ij->i", rows, rows, dtype=np.float64))
    codes, scales, residuals = encode_rows(rows, norms)
    assert codes.dtype == np.int8 and int(np.abs(codes.astype(np.int64)).max()) == 127
    units = rows.astype(np.float64) / norms[:, None]
    lost = np.linalg.norm(units - codes * scales[:, None], axis=1)
    assert np.allclose(lost, residuals, rtol=1e-9, atol=1e-15)


# --------------------------------------------------------------- rankings equal
def _ranking(
    db: Database, query: np.ndarray, quantized: bool, monkeypatch: pytest.MonkeyPatch
) -> object:
    monkeypatch.setattr(vectors, "QUANTIZED_SCAN_MIN_ROWS", 1 if quantized else 10**12)
    with db.read_cut() as cut:
        return vector_ranking(cut, "docs", "embedding", tuple(query), SPACE)


def test_int8_and_float_rankings_answer_every_question_alike(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(3)
    stored = vector_db(db, rng, 600)
    ids = doc_ids(len(stored))
    for trial in range(4):
        query = stored[trial * 5] + 0.01 * rng.standard_normal(DIMENSION)
        exact = exact_cosines(stored, query)
        oracle = sorted(range(len(ids)), key=lambda i: (-exact[i], ids[i]))
        coarse = _ranking(db, query, True, monkeypatch)
        flat = _ranking(db, query, False, monkeypatch)
        assert coarse.eps > 10 * flat.eps  # the int8 path really ran
        for ranking in (coarse, flat):
            top = ranking.top(40)
            assert [ids_of(db, slot) for slot, _ in top] == [ids[i] for i in oracle[:40]]
            slots = [slot for slot, _ in flat.top(len(ids))]
            assert [r for r, _ in ranking.ranks_of(slots)] == list(range(1, len(ids) + 1))
        assert coarse.ranks_of(slots) == flat.ranks_of(slots)


def test_a_vector_only_search_reads_the_int8_rows_and_answers_like_the_oracle(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(11)
    stored = vector_db(db, rng, 300)
    ids = doc_ids(len(stored))
    monkeypatch.setattr(vectors, "QUANTIZED_SCAN_MIN_ROWS", 1)
    calls = count_calls(monkeypatch, vectors, "quantized_scan")
    query = stored[2] + 0.02 * rng.standard_normal(DIMENSION)
    hits = db.vector_search("docs", "embedding", tuple(query), SPACE, limit=25)
    exact = exact_cosines(stored, query)
    oracle = sorted(range(len(ids)), key=lambda i: (-exact[i], ids[i]))[:25]
    assert [h.ref.id for h in hits] == [ids[i] for i in oracle]
    assert [h.score for h in hits] == pytest.approx([exact[i] for i in oracle], abs=1e-12)
    assert calls  # the int8 scan answered it
    assert cosine(stored[:1].astype(np.float64), query, float(np.linalg.norm(query)))[0] == (
        pytest.approx(exact[0], abs=1e-15)
    )


# ------------------------------------------------------------ dot and euclidean
@pytest.mark.parametrize("metric", [Metric.DOT, Metric.EUCLIDEAN])
def test_dot_and_euclidean_rank_every_row_like_the_oracle(db: Database, metric: Metric) -> None:
    """Rows of very different norms, duplicates and near-ties: the float32 scan's bounds
    (dot products, and distances from them) keep every rank and score exact."""
    space = VectorSpace("toy-m", DIMENSION, metric, "toy-model", "1")
    db.command(cmd(ConfigureCollection("docs", ("/text",), (VectorField("embedding", space),))))
    rng = np.random.default_rng(5)
    count = 120
    rows = rng.standard_normal((count, DIMENSION)) * rng.choice([1e-3, 1.0, 40.0], (count, 1))
    rows[::9] = rows[3]  # exact duplicates: ties broken by ID
    rows[1::9] = rows[4] * (1 + 1e-7)  # near-ties inside the float32 bound
    stored = rows.astype(np.float32)
    ids = doc_ids(count)
    db.command(cmd(*(put("docs", doc_id) for doc_id in ids)))
    db.command(cmd(*(PutVector("docs", ids[i], "embedding", tuple(rows[i])) for i in range(count))))
    query = rng.standard_normal(DIMENSION) * 3.0
    exact = stored.astype(np.float64)
    if metric is Metric.DOT:
        oracle_scores = (exact * query).sum(axis=1)
    else:
        oracle_scores = -np.sqrt(((exact - query) ** 2).sum(axis=1))
    oracle = sorted(range(count), key=lambda i: (-oracle_scores[i], ids[i]))
    hits = db.vector_search("docs", "embedding", tuple(query), space, limit=count)
    assert [h.ref.id for h in hits] == [ids[i] for i in oracle]
    assert [h.score for h in hits] == pytest.approx([oracle_scores[i] for i in oracle], rel=1e-12)
    with db.read_cut() as cut:
        ranking = vector_ranking(cut, "docs", "embedding", tuple(query), space)
        slots = [slot for slot, _ in ranking.top(count)]
        assert [rank for rank, _ in ranking.ranks_of(slots)] == list(range(1, count + 1))


@pytest.mark.parametrize("metric", [Metric.COSINE, Metric.DOT, Metric.EUCLIDEAN])
@pytest.mark.parametrize(
    ("row_scale", "query_scale"),
    [(1e35, 1.0), (1.0, 1e35), (1e-40, 1.0), (1e-20, 1e-300), (1e30, 1e30), (1e-40, 1e35)],
)
def test_extreme_magnitudes_rank_like_the_oracle(
    db: Database, metric: Metric, row_scale: float, query_scale: float
) -> None:
    """Where float32 products could overflow or underflow, every row is scored in float64."""
    space = VectorSpace("toy-x", DIMENSION, metric, "toy-model", "1")
    db.command(cmd(ConfigureCollection("docs", ("/text",), (VectorField("embedding", space),))))
    rng = np.random.default_rng(9)
    count = 40
    rows = rng.standard_normal((count, DIMENSION)) * row_scale
    rows[5] = rows[2]  # an exact tie
    ids = doc_ids(count)
    db.command(cmd(*(put("docs", doc_id) for doc_id in ids)))
    db.command(cmd(*(PutVector("docs", ids[i], "embedding", tuple(rows[i])) for i in range(count))))
    stored = rows.astype(np.float32).astype(np.float64)
    query = rng.standard_normal(DIMENSION) * query_scale
    if metric is Metric.DOT:
        scores = (stored * query).sum(axis=1)
    elif metric is Metric.EUCLIDEAN:
        scores = -np.linalg.norm(stored - query, axis=1)
    else:
        norms = np.linalg.norm(stored, axis=1) * np.linalg.norm(query)
        scores = np.divide(
            (stored * query).sum(axis=1), norms, out=np.zeros(count), where=norms > 0
        )
    oracle = sorted(range(count), key=lambda i: (-scores[i], ids[i]))
    hits = db.vector_search("docs", "embedding", tuple(query), space, limit=count)
    assert [h.ref.id for h in hits] == [ids[i] for i in oracle]
    assert all(math.isfinite(h.score) for h in hits)


def test_vector_values_beyond_float32_are_refused_and_nothing_is_written(db: Database) -> None:
    from cairn.errors import ValidationError

    db.command(cmd(ConfigureCollection("docs", ("/text",), (VectorField("embedding", SPACE),))))
    db.command(cmd(put("docs", "a")))
    too_big = (1e39,) + (0.0,) * (DIMENSION - 1)
    with pytest.raises(ValidationError, match="float32"):
        db.command(cmd(PutVector("docs", "a", "embedding", too_big)))
    assert db.vector_search("docs", "embedding", (1.0,) * DIMENSION, SPACE) == ()
    with pytest.raises(ValidationError, match="float32"):
        db.vector_search("docs", "embedding", too_big, SPACE)
