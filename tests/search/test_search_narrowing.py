"""A narrowed branch (allowed slots, row policy) scores exactly as the whole branch does.

The text and vector rankings take shortcuts when ``allowed`` is narrow: postings are cut
to the allowed slots before scoring, and vector rows are picked through a slot-to-row
map. Corpus statistics stay those of the whole collection, so every narrowed score must
equal, bit for bit, the score of the same slot in the unnarrowed ranking, and the
candidates must be exactly the unnarrowed ones that pass the masks.
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from search_helpers import SPACE, TEXT, VECTOR, grant, open_db, put_docs, run

from cairn.index import scanning, vectors
from cairn.index.masks import slot_mask
from cairn.index.text import text_ranking
from cairn.index.vectors import vector_ranking
from cairn.store import Database, DeleteDocument, DocumentAccess, PutVector

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon"]


def build(tmp_path: Path, seed: int) -> tuple[Database, list[str]]:
    rng = random.Random(seed)
    db = open_db(tmp_path)
    ids = [f"d{n:02d}" for n in range(40)]
    texts = {i: " ".join(rng.choices(WORDS, k=rng.randint(1, 6))) for i in ids}
    vectors = {i: (rng.uniform(-1, 1), rng.uniform(-1, 1)) for i in ids}
    access = {i: DocumentAccess(owner=rng.choice(["ann", "bob"])) for i in ids}
    put_docs(db, "docs", texts, vectors, access)
    # Later history: updates (new slots), replaced vectors, deletions.
    changed = rng.sample(ids, 8)
    put_docs(
        db,
        "docs",
        {i: " ".join(rng.choices(WORDS, k=3)) for i in changed[:4]},
        access={i: DocumentAccess(owner="ann") for i in changed[:4]},
    )
    run(db, *(PutVector("docs", i, VECTOR, (rng.uniform(-1, 1), 0.5)) for i in changed[4:6]))
    for doc_id in changed[6:]:
        revision = db.get_document("docs", doc_id).revision
        run(db, DeleteDocument("docs", doc_id, revision))
    grant(
        db,
        "reader",
        {"docs": ["query", "documents_read", "vector_search"]},
        restrict_rows=True,
        owner_id="ann",
    )
    return db, ids


def scores(ranking: object) -> dict[int, float]:
    top = ranking.top(ranking.size)  # type: ignore[attr-defined]
    return dict(top)


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("principal", [None, "reader"])
def test_narrowed_rankings_equal_the_whole_branch_filtered(
    tmp_path: Path, seed: int, principal: str | None
) -> None:
    db, ids = build(tmp_path, seed)
    rng = random.Random(seed * 7)
    try:
        with db.read_cut(principal) as cut:
            whole_text = scores(text_ranking(cut, "docs", TEXT, "alpha gamma delta"))
            whole_vector = scores(vector_ranking(cut, "docs", VECTOR, (0.6, -0.8), SPACE))
            assert whole_text and whole_vector
            for _ in range(5):
                allowed_ids = set(rng.sample(ids, rng.randint(0, 12)))
                mask = slot_mask(cut, "docs", allowed_ids)
                allowed_slots = set(np.flatnonzero(mask).tolist())
                text = scores(text_ranking(cut, "docs", TEXT, "alpha gamma delta", allowed=mask))
                assert text == {s: v for s, v in whole_text.items() if s in allowed_slots}
                vector = scores(
                    vector_ranking(cut, "docs", VECTOR, (0.6, -0.8), SPACE, allowed=mask)
                )
                assert vector == {s: v for s, v in whole_vector.items() if s in allowed_slots}
    finally:
        db.close()


def test_a_split_scan_ranks_and_scores_exactly_as_one_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db, _ = build(tmp_path, 4)
    try:
        with db.read_cut() as cut:
            whole = vector_ranking(cut, "docs", VECTOR, (0.3, 0.9), SPACE)
            single = whole.top(whole.size)
            monkeypatch.setattr(scanning, "PARALLEL_SCAN_MIN_ROWS", 1)
            monkeypatch.setattr(scanning, "scan_threads", lambda: 3)
            split = vector_ranking(cut, "docs", VECTOR, (0.3, 0.9), SPACE)
            assert split.top(split.size) == single
    finally:
        db.close()


def test_scan_splits_rows_and_matches_the_product() -> None:
    rng = np.random.default_rng(5)
    matrix = rng.normal(size=(70_001, 8)).astype(np.float32)
    query = rng.normal(size=8).astype(np.float32)
    found = vectors.scan(matrix, query)
    expected = matrix.astype(np.float64) @ query.astype(np.float64)
    bound = 11 * 2.0**-24 * np.abs(matrix).sum(axis=1) * np.abs(query).max() * 8
    assert found.shape == (70_001,)
    assert np.all(np.abs(found - expected) <= bound)
