"""The float16 scan: its proven bound holds, its kernel is checked, rankings unchanged."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
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
from cairn.index.halves import (
    _probe,
    encode_units,
    half_bound,
    half_kernel_ready,
    half_query,
    half_scan,
)
from cairn.index.scanning import split_rows
from cairn.index.vectors import vector_ranking


def test_numkong_passes_the_accumulation_probe() -> None:
    assert half_kernel_ready() is not None


def test_the_probe_rejects_kernels_that_sum_in_float16() -> None:
    def half_sum(units: np.ndarray, query: np.ndarray, out: np.ndarray) -> None:
        for i, row in enumerate(units):
            total = np.float16(0)
            for a, b in zip(row, query, strict=True):
                total = np.float16(total + np.float16(a) * np.float16(b))
            out[i] = float(total)

    def lane_sums(units: np.ndarray, query: np.ndarray, out: np.ndarray) -> None:
        """32 float16 partial sums (one per lane), added in float64 at the end."""
        products = (units.astype(np.float32) * query.astype(np.float32)).astype(np.float16)
        lanes = np.zeros((len(units), 32), dtype=np.float16)
        for start in range(0, units.shape[1], 32):
            block = products[:, start : start + 32]
            lanes[:, : block.shape[1]] += block
        out[:] = lanes.astype(np.float64).sum(axis=1)

    def wide_sum(units: np.ndarray, query: np.ndarray, out: np.ndarray) -> None:
        out[:] = units.astype(np.float64) @ query.astype(np.float64)

    assert not _probe(half_sum)
    assert not _probe(lane_sums)
    assert _probe(wide_sum)


def scan_cosines(rows: np.ndarray, query: np.ndarray, split: bool = False) -> tuple:
    """The half scan's approximate cosines of ``rows`` and its bound, as the branch
    does (``split``: in row ranges across the scan threads and this one)."""
    norms = np.sqrt(np.einsum("ij,ij->i", rows, rows, dtype=np.float64))
    units, residuals = encode_units(rows, norms)
    unit, query_residual = half_query(query)
    approx = np.full(len(rows), np.nan)
    if split:

        def kernel(begin: int, end: int) -> None:
            half_scan(units[begin:end], unit, approx[begin:end])

        split_rows(len(rows), kernel)
    else:
        half_scan(units, unit, approx)
    return approx, half_bound(float(residuals.max()), query_residual, rows.shape[1])


@settings(max_examples=200, deadline=None)
@given(matrices())
def test_the_half_scan_is_within_its_bound(drawn: tuple[np.ndarray, np.ndarray]) -> None:
    rows, query = drawn
    approx, bound = scan_cosines(rows, query)
    assert np.all(np.abs(exact_cosines(rows, query) - approx) <= bound)
    assert bound < 2e-3  # tight enough to be worth scanning with


def test_the_bound_is_about_15_float32_bounds_at_256_dims() -> None:
    rng = np.random.default_rng(5)
    rows = rng.standard_normal((2000, 256)).astype(np.float32)
    query = rng.standard_normal(256)
    approx, bound = scan_cosines(rows, query)
    assert np.all(np.abs(exact_cosines(rows, query) - approx) <= bound)
    float32_bound = 2.0 * (256 + 3) * 2.0**-24  # the float32 scan's (COSINE_ERROR_FACTOR)
    assert 5 * float32_bound < bound < 25 * float32_bound


def test_the_split_scan_is_within_the_bound_for_4096_dims(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = np.random.default_rng(7)
    rows = rng.standard_normal((3000, 4096)).astype(np.float32)
    rows[0] = 0.0
    rows[1, :] = 1e-3
    rows[1, 5] = 40.0  # one large component: the rest fall below float16's normal range
    query = rng.standard_normal(4096)
    monkeypatch.setattr(scanning, "PARALLEL_SCAN_MIN_ROWS", 1)
    split, bound = scan_cosines(rows, query, split=True)
    assert np.all(np.abs(exact_cosines(rows, query) - split) <= bound)


def test_encode_units_of_zero_rows_is_zero() -> None:
    rows = np.zeros((3, 4), dtype=np.float32)
    units, residuals = encode_units(rows, np.zeros(3))
    assert not units.any()
    assert not residuals.any()
    unit, query_residual = half_query(np.zeros(4))
    assert not unit.any() and query_residual == 0.0


def test_units_rebuild_the_unit_rows_within_their_residuals() -> None:
    rng = np.random.default_rng(13)
    rows = (rng.standard_normal((500, 33)) * rng.choice([1e-20, 1.0, 1e20], (500, 1))).astype(
        np.float32
    )
    norms = np.sqrt(np.einsum("ij,ij->i", rows, rows, dtype=np.float64))
    units, residuals = encode_units(rows, norms)
    assert units.dtype == np.float16
    exact = rows.astype(np.float64) / norms[:, None]
    lost = np.linalg.norm(exact - units.astype(np.float64), axis=1)
    assert np.allclose(lost, residuals, rtol=1e-9, atol=1e-15)
    assert residuals.max() < 2.0**-10  # float16 keeps 11 significant bits


# --------------------------------------------------------------- rankings equal
def deep_ranking(db: Database, query: np.ndarray, half: bool, mp: pytest.MonkeyPatch) -> object:
    """The vector ranking fusion reads (``deep``), over the float16 units or not."""
    mp.setattr(vectors, "HALF_SCAN_MIN_ROWS", 1 if half else 10**12)
    with db.read_cut() as cut:
        return vector_ranking(cut, "docs", "embedding", tuple(query), SPACE, deep=True)


def test_half_and_float_rankings_answer_every_question_alike(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(3)
    stored = vector_db(db, rng, 600)
    ids = doc_ids(len(stored))
    calls = count_calls(monkeypatch, vectors, "half_scan")
    for trial in range(4):
        query = stored[trial * 5] + 0.01 * rng.standard_normal(DIMENSION)
        exact = exact_cosines(stored, query)
        oracle = sorted(range(len(ids)), key=lambda i: (-exact[i], ids[i]))
        half = deep_ranking(db, query, True, monkeypatch)
        flat = deep_ranking(db, query, False, monkeypatch)
        assert half.eps > 5 * flat.eps  # the half path really ran
        for ranking in (half, flat):
            top = ranking.top(40)
            assert [ids_of(db, slot) for slot, _ in top] == [ids[i] for i in oracle[:40]]
            slots = [slot for slot, _ in flat.top(len(ids))]
            assert [r for r, _ in ranking.ranks_of(slots)] == list(range(1, len(ids) + 1))
        assert half.ranks_of(slots) == flat.ranks_of(slots)
    assert calls
