"""Hybrid searches over the compact vector copies answer like the brute-force oracle.

The fused search scans float16 unit rows (the vector-only one int8 codes) while its text
branch runs on the searching thread; thresholds are lowered here so that a small corpus
takes those paths, with a tiny sorted head so that fusion reads ranks deep in the
vector ranking, where the float16 bound leaves wide bands of near-equal scores.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from brute_force import Corpus, bm25, cosine, fuse, ranked
from search_helpers import SPACE, open_db, put_docs

import cairn.index.ranking as ranking
import cairn.index.scanning as scanning
import cairn.index.vectors as vectors
import cairn.search.engine as engine
from cairn.errors import CairnError
from cairn.search.contracts import SearchRequest
from cairn.store import Database

WORDS = ("alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "theta")
COUNT = 400


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = open_db(tmp_path)
    yield database
    database.close()


@pytest.fixture
def compact_paths(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """Every scan compact and split; records which kernels ran and where the text
    branch ran relative to the scan."""
    monkeypatch.setattr(vectors, "HALF_SCAN_MIN_ROWS", 1)
    monkeypatch.setattr(vectors, "QUANTIZED_SCAN_MIN_ROWS", 1)
    monkeypatch.setattr(scanning, "PARALLEL_SCAN_MIN_ROWS", 1)
    monkeypatch.setattr(scanning, "scan_threads", lambda: 2)
    monkeypatch.setattr(ranking.SlotRanking, "head_size", 8)
    monkeypatch.setattr(ranking.ApproxRanking, "refine_min_band", 2)
    seen: dict[str, list[str]] = {"kernels": [], "text": []}
    real_half, real_int8 = vectors.half_scan, vectors.quantized_scan
    real_text = engine.text_ranking

    def half(*args: object) -> None:
        seen["kernels"].append("half")
        real_half(*args)  # type: ignore[arg-type]

    def int8(*args: object) -> None:
        seen["kernels"].append("int8")
        real_int8(*args)  # type: ignore[arg-type]

    def text(*args: object, **kwargs: object) -> object:
        seen["text"].append(threading.current_thread().name)
        return real_text(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(vectors, "half_scan", half)
    monkeypatch.setattr(vectors, "quantized_scan", int8)
    monkeypatch.setattr(engine, "text_ranking", text)
    return seen


def corpus(db: Database, seed: int) -> Corpus:
    """``COUNT`` documents of a few words each, with 2-d vectors full of near-ties."""
    rng = np.random.default_rng(seed)
    model = Corpus()
    texts: dict[str, str] = {}
    vecs: dict[str, tuple[float, float]] = {}
    for i in range(COUNT):
        doc_id = f"d{i:03d}"
        texts[doc_id] = " ".join(rng.choice(WORDS, int(rng.integers(1, 6))))
        angle = float(rng.integers(0, 40)) * 0.05 + float(rng.normal(0, 1e-5))
        # float32 values, as the store keeps them: the oracle sees the same numbers.
        vecs[doc_id] = (float(np.float32(np.cos(angle))), float(np.float32(np.sin(angle))))
        model.texts[("docs", doc_id)] = texts[doc_id]
        model.vectors[("docs", doc_id)] = vecs[doc_id]
    ids = list(texts)
    for start in range(0, COUNT, 100):  # a command holds at most 256 mutations
        part = ids[start : start + 100]
        put_docs(db, "docs", {i: texts[i] for i in part}, vectors={i: vecs[i] for i in part})
    return model


def test_a_fused_search_scans_halves_beside_its_text_branch_and_matches_the_oracle(
    db: Database, compact_paths: dict[str, list[str]]
) -> None:
    model = corpus(db, 7)
    for query, vector, weights in [
        ("alpha", (1.0, 0.2), (1.0, 1.0)),
        ("beta gamma", (0.3, 1.0), (2.0, 1.0)),
        ("omega kappa theta", (-1.0, 0.5), (1.0, 3.0)),
    ]:
        compact_paths["kernels"].clear()
        compact_paths["text"].clear()
        request = SearchRequest(
            db.name,
            "docs",
            text_field="/text",
            text=query,
            vector_field="embedding",
            vector=vector,
            space=SPACE,
            text_weight=weights[0],
            vector_weight=weights[1],
            limit=15,
            explain=True,
        )
        hits = db.search(request)
        text_order = ranked(bm25(model, "docs", query))
        vector_order = ranked(cosine(model, "docs", vector))
        expected = fuse(
            [(Fraction(weights[0]), text_order), (Fraction(weights[1]), vector_order)], 60, 15
        )
        assert [(h.document.ref.id, h.score) for h in hits] == [
            (doc_id, float(score)) for doc_id, score in expected
        ]
        for hit in hits:
            assert hit.explanation is not None
            places = {c.branch.value: c.native_rank for c in hit.explanation.contributions}
            doc_id = hit.document.ref.id
            assert places.get("vector") == vector_order.index(doc_id) + 1
            if doc_id in text_order:
                assert places.get("text") == text_order.index(doc_id) + 1
        assert compact_paths["kernels"] and set(compact_paths["kernels"]) == {"half"}
        assert compact_paths["text"] == [threading.current_thread().name]


def test_a_vector_only_search_still_scans_int8(
    db: Database, compact_paths: dict[str, list[str]]
) -> None:
    model = corpus(db, 3)
    hits = db.search(
        SearchRequest(
            db.name, "docs", vector_field="embedding", vector=(0.5, 0.5), space=SPACE, limit=20
        )
    )
    order = ranked(cosine(model, "docs", (0.5, 0.5)))
    assert [h.document.ref.id for h in hits] == order[:20]
    assert compact_paths["kernels"] and set(compact_paths["kernels"]) == {"int8"}


def test_a_text_error_comes_first_and_leaves_no_scan_running(
    db: Database, compact_paths: dict[str, list[str]]
) -> None:
    """The text branch fails inside the vector scan: its error is raised, as it was when
    the text branch ran first, and the next search is served normally."""
    corpus(db, 5)
    bad = SearchRequest(
        db.name,
        "docs",
        text_field="/missing",
        text="alpha",
        vector_field="embedding",
        vector=(1.0, 0.0),
        space=SPACE,
    )
    with pytest.raises(CairnError) as caught:
        db.search(bad)
    serial = SearchRequest(db.name, "docs", text_field="/missing", text="alpha")
    with pytest.raises(CairnError) as alone:
        db.search(serial)
    assert type(caught.value) is type(alone.value)
    assert caught.value.code == alone.value.code
    assert db.search(replace(bad, text_field="/text"))
