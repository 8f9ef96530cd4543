"""The compact copies of a vector column (int8 codes, float16 units) are derived on first
use, extended as rows arrive, and derived behind while searches scan float32."""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np
import pytest
from store_helpers import cmd, put
from vector_helpers import (
    DIMENSION,
    SPACE,
    count_calls,
    doc_ids,
    exact_cosines,
    vector_db,
    wait_for_column,
)

import cairn.index.columns as columns
import cairn.index.vectors as vectors
from cairn.index import Database
from cairn.index.columns import VectorColumnView
from cairn.index.vectors import vector_ranking
from cairn.store import PutVector


@dataclass(frozen=True)
class Copy:
    """One compact copy: how it is encoded, scanned, chosen and seen as ready."""

    encoder: str  # the ``columns`` function that derives it
    kernel: str  # the ``vectors`` function that scans it
    threshold: str  # the ``vectors`` row count from which it is scanned
    deep: bool  # read by a fused ranking (float16) or a vector-only one (int8)

    def ready(self, column: VectorColumnView) -> bool:
        return (column.halves() if self.deep else column.quantized()) is not None


COPIES = {
    "int8": Copy("encode_rows", "quantized_scan", "QUANTIZED_SCAN_MIN_ROWS", deep=False),
    "float16": Copy("encode_units", "half_scan", "HALF_SCAN_MIN_ROWS", deep=True),
}


def top(db: Database, query: np.ndarray, count: int, copy: Copy) -> list[str]:
    """The first ``count`` IDs of the vector ranking that reads ``copy``."""
    with db.read_cut() as cut:
        ranking = vector_ranking(cut, "docs", "embedding", tuple(query), SPACE, deep=copy.deep)
        return [cut.columns.ids[slot] for slot, _ in ranking.top(count)]


def oracle(vectors_: np.ndarray, names: list[str], query: np.ndarray, count: int) -> list[str]:
    exact = exact_cosines(vectors_, query)
    return [names[i] for i in sorted(range(len(names)), key=lambda i: (-exact[i], names[i]))][
        :count
    ]


@pytest.mark.parametrize("name", list(COPIES))
def test_a_copy_follows_rows_written_after_its_first_use(
    db: Database, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    copy = COPIES[name]
    monkeypatch.setattr(vectors, copy.threshold, 1)
    calls = count_calls(monkeypatch, vectors, copy.kernel)
    rng = np.random.default_rng(21)
    stored = vector_db(db, rng, 200)
    ids = doc_ids(len(stored))
    query = stored[7] + 0.01 * rng.standard_normal(DIMENSION)
    assert top(db, query, 20, copy) == oracle(stored, ids, query, 20)
    extra = [f"e{i:03d}" for i in range(30)]
    fresh = (query + 0.05 * rng.standard_normal((30, DIMENSION))).astype(np.float32)
    db.command(cmd(*(put("docs", doc_id) for doc_id in extra)))
    db.command(
        cmd(
            *(
                PutVector("docs", extra[i], "embedding", tuple(map(float, fresh[i])))
                for i in range(30)
            )
        )
    )
    replaced = stored.copy()
    replaced[7] = -replaced[7]  # the query's nearest row moves away
    db.command(cmd(PutVector("docs", ids[7], "embedding", tuple(map(float, replaced[7])))))
    everything = np.concatenate([replaced, fresh])
    assert top(db, query, 40, copy) == oracle(everything, ids + extra, query, 40)
    assert calls  # the copy answered


@pytest.mark.parametrize("name", list(COPIES))
def test_a_large_derivation_runs_behind_while_rankings_scan_float32(
    db: Database, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """Past ``QUANTIZE_SYNC_VALUES`` a copy is derived by a background thread; rankings
    before it finishes scan float32, and every answer is the oracle's."""
    copy = COPIES[name]
    monkeypatch.setattr(vectors, copy.threshold, 1)
    monkeypatch.setattr(columns, "QUANTIZE_SYNC_VALUES", 0)
    started = threading.Event()
    release = threading.Event()
    real_encode = getattr(columns, copy.encoder)

    def held(*args: object) -> object:
        started.set()
        assert release.wait(30)
        return real_encode(*args)

    monkeypatch.setattr(columns, copy.encoder, held)
    calls = count_calls(monkeypatch, vectors, copy.kernel)
    rng = np.random.default_rng(17)
    stored = vector_db(db, rng, 300)
    ids = doc_ids(len(stored))
    query = stored[9] + 0.02 * rng.standard_normal(DIMENSION)
    expected = oracle(stored, ids, query, 20)
    assert top(db, query, 20, copy) == expected  # float32 while the derivation is held
    assert started.wait(30) and not calls
    assert top(db, query, 20, copy) == expected  # still float32: one derivation at a time
    assert not calls
    release.set()
    wait_for_column(db, SPACE, copy.ready)
    assert top(db, query, 20, copy) == expected
    assert calls  # the copy answered once it was there
