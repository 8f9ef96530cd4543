"""An independent, from-first-principles model of graph search for oracle tests.

Plain Python over a declared corpus: BM25 over whitespace tokens (the corpus uses only
lowercase words, which the store's analyzer leaves as they are), cosine by hand, BFS
with a queue, and RRF in exact fractions. Nothing here calls production ranking code.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from fractions import Fraction

Ref = tuple[str, str]  # (collection, id): tuple order is the ordinal order


@dataclass
class Corpus:
    texts: dict[Ref, str] = field(default_factory=dict)
    vectors: dict[Ref, tuple[float, float]] = field(default_factory=dict)
    edges: list[tuple[Ref, Ref, str]] = field(default_factory=list)


def bm25(corpus: Corpus, collection: str, query: str) -> dict[str, float]:
    docs = {ref[1]: text.split() for ref, text in corpus.texts.items() if ref[0] == collection}
    n = len(docs)
    if n == 0:
        return {}
    avg = sum(len(tokens) for tokens in docs.values()) / n
    parts: dict[str, list[float]] = {}
    for term in dict.fromkeys(query.split()):
        df = sum(1 for tokens in docs.values() if term in tokens)
        if df == 0:
            continue
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        for doc_id, tokens in docs.items():
            tf = tokens.count(term)
            if tf:
                norm = tf * 2.2 / (tf + 1.2 * (1 - 0.75 + 0.75 * len(tokens) / avg))
                parts.setdefault(doc_id, []).append(idf * norm)
    # The exact sum of the terms' weights, correctly rounded: documents whose scores tie
    # mathematically tie here too, whatever order their terms are added in.
    return {doc_id: math.fsum(weights) for doc_id, weights in parts.items()}


def cosine(corpus: Corpus, collection: str, query: tuple[float, float]) -> dict[str, float]:
    out: dict[str, float] = {}
    for (coll, doc_id), vec in corpus.vectors.items():
        if coll != collection:
            continue
        norms = math.hypot(*vec) * math.hypot(*query)
        out[doc_id] = (vec[0] * query[0] + vec[1] * query[1]) / norms if norms else 0.0
    return out


def bfs(
    corpus: Corpus, seeds: list[Ref], depth: int, labels: frozenset[str] | None
) -> dict[Ref, int]:
    hops = dict.fromkeys(seeds, 0)
    queue = deque(seeds)
    while queue:
        vertex = queue.popleft()
        if hops[vertex] == depth:
            continue
        for source, target, relation in corpus.edges:
            if source != vertex or (labels is not None and relation not in labels):
                continue
            if target not in hops:
                hops[target] = hops[vertex] + 1
                queue.append(target)
    return hops


def ranked(scores: dict[str, float]) -> list[str]:
    return sorted(scores, key=lambda doc_id: (-scores[doc_id], doc_id))


def fuse(
    branches: list[tuple[Fraction, list[str]]], k: int, limit: int
) -> list[tuple[str, Fraction]]:
    totals: dict[str, Fraction] = {}
    for weight, order in branches:
        if weight == 0:
            continue
        for position, doc_id in enumerate(order, start=1):
            totals[doc_id] = totals.get(doc_id, Fraction(0)) + weight / (k + position)
    best = sorted(totals, key=lambda doc_id: (-totals[doc_id], doc_id))[:limit]
    return [(doc_id, totals[doc_id]) for doc_id in best]
