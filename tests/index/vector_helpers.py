"""Builders and oracles shared by the compact-scan tests (int8 codes, float16 units)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import strategies as st
from store_helpers import cmd, put

from cairn.canonical import canonical_bytes
from cairn.index import Database
from cairn.index.columns import VectorColumnView
from cairn.store import ConfigureCollection, Metric, PutVector, VectorField, VectorSpace

DIMENSION = 8
SPACE = VectorSpace("toy8", DIMENSION, Metric.COSINE, "toy-model", "1")


def exact_cosines(rows: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Test-owned float64 cosine of float32 rows (0 for a zero row or query)."""
    rows64 = rows.astype(np.float64)
    norms = np.sqrt((rows64 * rows64).sum(axis=1)) * math.sqrt(float(query @ query))
    dots = rows64 @ query
    return np.divide(dots, norms, out=np.zeros(len(rows)), where=norms > 0)


MAGNITUDES = st.sampled_from([0.0, 1e-30, 1e-7, 3e-5, 1e-3, 0.5, 1.0, 7.0, 1e6, 1e30])


@st.composite
def matrices(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    """Float32 rows of mixed magnitudes (zero, tiny, huge, components below float16's
    normal range, duplicates) and a query."""
    dimension = draw(st.sampled_from([1, 2, 3, 8, 33, 256]))
    count = draw(st.integers(1, 40))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    scales = np.asarray([draw(MAGNITUDES) for _ in range(count)])[:, None]
    rows = rng.standard_normal((count, dimension)) * scales
    tiny = rng.random((count, dimension)) < draw(st.sampled_from([0.0, 0.3]))
    rows[tiny] *= 1e-6  # components far below float16's normal range
    if draw(st.booleans()):
        rows[0] = rows[min(1, count - 1)]  # duplicate rows: exact ties
    query = rng.standard_normal(dimension) * draw(MAGNITUDES)
    return rows.astype(np.float32), query


def doc_ids(count: int) -> list[str]:
    """The IDs ``vector_db`` and the tests give their documents, in row order."""
    return [f"d{i:04d}" for i in range(count)]


def vector_db(db: Database, rng: np.random.Generator, count: int) -> np.ndarray:
    """``count`` clustered vectors (every 17th a duplicate) in collection ``docs``."""
    db.command(cmd(ConfigureCollection("docs", ("/text",), (VectorField("embedding", SPACE),))))
    centres = rng.standard_normal((4, DIMENSION))
    vectors_ = centres[rng.integers(0, 4, count)] + 0.05 * rng.standard_normal((count, DIMENSION))
    vectors_[::17] = vectors_[1]  # exact duplicates: ties broken by ID
    ids = doc_ids(count)
    for start in range(0, count, 200):
        part = range(start, min(count, start + 200))
        db.command(cmd(*(put("docs", ids[i]) for i in part)))
        db.command(cmd(*(PutVector("docs", ids[i], "embedding", tuple(vectors_[i])) for i in part)))
    return vectors_.astype(np.float32)


def ids_of(db: Database, slot: int) -> str:
    """The document ID of ``slot``."""
    with db.read_cut() as cut:
        return cut.columns.ids[slot]


def count_calls(monkeypatch: Any, module: object, name: str) -> list[int]:
    """A list that grows by one for each call of ``module.name`` (patched to count)."""
    calls: list[int] = []
    real = getattr(module, name)

    def counted(*args: object, **kwargs: object) -> object:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


def wait_for_column(
    db: Database,
    space: VectorSpace,
    ready: Callable[[VectorColumnView], bool],
    collection: str = "docs",
    field: str = "embedding",
    timeout: float = 30.0,
) -> None:
    """Poll fresh read cuts until ``ready`` holds for the vector column of ``space``
    (work a background thread finishes); fail after ``timeout`` seconds."""
    key = canonical_bytes(space.to_json())
    deadline = time.monotonic() + timeout
    while True:
        with db.read_cut() as cut:
            column = cut.columns.vector_column(collection, field, key)
            assert column is not None
            if ready(column):
                return
        assert time.monotonic() < deadline, "the column never became ready"
        time.sleep(0.01)
