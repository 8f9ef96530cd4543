"""Floors measured beside Cairn in the same run: bare numpy BM25, numpy scan, CSR BFS.

Each floor does only the arithmetic of its branch over plain arrays, with nothing of a
database around it (no snapshot, no authorisation, no masks, no projection):

- ``Bm25Floor``: postings as CSR arrays (term -> documents, term frequencies) built
  from the corpus with the store's own analyzer, document lengths, BM25 with the
  store's constants, a dense score accumulator and ``argpartition`` for the top 10.
- ``ScanFloor``: the float32 matrix times the float32 query, ``argpartition`` top 10.
- ``BfsFloor``: layer-by-layer BFS over a numpy CSR adjacency with a visited mask.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

K1, B = 1.2, 0.75
TOP = 10


def timed(run: Callable[[Any], object], items: Sequence[Any], repeat: int) -> list[float]:
    """Milliseconds of ``run(item)`` for every item, ``repeat`` passes."""
    samples: list[float] = []
    for _ in range(repeat):
        for item in items:
            started = time.perf_counter()
            run(item)
            samples.append((time.perf_counter() - started) * 1000)
    return samples


def percentiles(samples: Sequence[float]) -> tuple[float, float]:
    """(p50, p95) of ``samples``."""
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return statistics.median(ordered), p95


def top_k(scores: npt.NDArray[np.float64], k: int = TOP) -> npt.NDArray[np.intp]:
    """Indexes of the ``k`` best scores, best first."""
    if len(scores) <= k:
        return np.argsort(-scores)
    best = np.argpartition(-scores, k - 1)[:k]
    return best[np.argsort(-scores[best])]


class Bm25Floor:
    """Bare numpy sparse BM25 over CSR postings of the corpus texts."""

    def __init__(self, texts: Sequence[str]) -> None:
        from cairn.store.text import analyze

        vocabulary: dict[str, int] = {}
        rows: list[int] = []
        cols: list[int] = []
        lengths = np.zeros(len(texts), dtype=np.float64)
        for doc, text in enumerate(texts):
            tokens = analyze(text)
            lengths[doc] = len(tokens)
            for token in tokens:
                rows.append(vocabulary.setdefault(token, len(vocabulary)))
                cols.append(doc)
        terms = np.asarray(rows, dtype=np.int64)
        docs = np.asarray(cols, dtype=np.int64)
        pairs = np.unique(terms * len(texts) + docs, return_counts=True)
        keys, counts = pairs
        self.docs = (keys % len(texts)).astype(np.int64)
        self.tfs = counts.astype(np.float64)
        term_of = keys // len(texts)
        self.offsets = np.searchsorted(term_of, np.arange(len(vocabulary) + 1))
        self.vocabulary = vocabulary
        self.lengths = lengths
        self.average = float(lengths.mean())
        self.n = len(texts)
        self._analyze = analyze

    def search(self, text: str) -> npt.NDArray[np.intp]:
        """Top 10 documents by BM25."""
        scores = np.zeros(self.n, dtype=np.float64)
        for term in dict.fromkeys(self._analyze(text)):
            term_id = self.vocabulary.get(term)
            if term_id is None:
                continue
            begin, end = self.offsets[term_id], self.offsets[term_id + 1]
            docs, tf = self.docs[begin:end], self.tfs[begin:end]
            idf = np.log1p((self.n - len(docs) + 0.5) / (len(docs) + 0.5))
            norm = K1 * (1 - B + B * self.lengths[docs] / self.average)
            scores[docs] += idf * tf * (K1 + 1) / (tf + norm)
        return top_k(scores)


class ScanFloor:
    """Bare numpy exact scan: float32 matrix times query, top 10."""

    def __init__(self, vectors: npt.NDArray[np.float32]) -> None:
        self.matrix = np.ascontiguousarray(vectors, dtype=np.float32)

    def search(self, query: npt.NDArray[np.float32]) -> npt.NDArray[np.intp]:
        """Top 10 rows by dot product (the rows are unit vectors: cosine)."""
        return top_k((self.matrix @ query).astype(np.float64))


class BfsFloor:
    """Bare BFS over an in-memory CSR adjacency (numpy, layer at a time)."""

    def __init__(self, sources: npt.NDArray[np.int64], targets: npt.NDArray[np.int64], n: int):
        order = np.argsort(sources, kind="stable")
        self.targets = targets[order]
        self.offsets = np.searchsorted(sources[order], np.arange(n + 1))
        self.n = n

    def reach(self, seeds: Sequence[int], depth: int) -> npt.NDArray[np.int64]:
        """Every vertex within ``depth`` hops of ``seeds`` (seeds included)."""
        seen = np.zeros(self.n, dtype=bool)
        layer = np.unique(np.asarray(seeds, dtype=np.int64))
        seen[layer] = True
        for _ in range(depth):
            if len(layer) == 0:
                break
            begins, ends = self.offsets[layer], self.offsets[layer + 1]
            counts = ends - begins
            starts = np.repeat(begins - np.cumsum(counts) + counts, counts)
            index = np.arange(int(counts.sum())) + starts
            found = np.unique(self.targets[index])
            layer = found[~seen[found]]
            seen[layer] = True
        return np.flatnonzero(seen)
