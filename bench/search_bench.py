"""Search benchmark (issue 6): text, vector, graph and three-way searches beside floors.

    .venv/bin/python bench/search_bench.py [--repeat 3] [--rounds 3] [--skip-django]

Two datasets, each measured in one process beside its floors (``bench/floors.py``):

- the 100k-document synthetic corpus of the store benchmark (``bench/corpus.py``) with
  its graph of ~300k facts (three out-edges per document);
- the Django code graph (the file ``bench/store_bench.py`` loads, ``django.cairn.db`` in
  the cache folder), searched in its ``symbols`` collection with the hashing embedder.

Modes, top 10: ``text`` and ``vector`` (``Database.search``); ``graph`` (a retriever
walk of depth 2 from the query's document, nothing else); ``three-way``: text + vector
+ that retriever, inside a scope (walk of depth 3 from the same seed) with an expansion
of depth 1 from the hits. Floors: bare numpy sparse BM25 over the same postings, bare
numpy scan, bare BFS over a numpy CSR adjacency; the three-way floor is the sum of the
text, vector and three BFS floors (scope, retriever, expansion from ten vertices).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
import orjson

import cairn
import cairn.index
from cairn.canonical import canonical_bytes
from cairn.search.contracts import (
    EntityRef,
    GraphExpansion,
    GraphRetriever,
    GraphScope,
    GraphSearchRequest,
    GraphWalkSpec,
    SearchRequest,
)
from cairn.store import VectorSpace
from corpus import CACHE, COLLECTION, GRAPH, TEXT_FIELD, VECTOR_FIELD, corpus
from floors import BfsFloor, Bm25Floor, ScanFloor, percentiles, timed
from store_bench import DJANGO_DB, SPACE, best

TARGETS = {"three-way": (12.0, 30.0), "ratio": 2.0}
SCOPE_DEPTH, RETRIEVER_DEPTH, EXPANSION_DEPTH = 3, 2, 1
MAX_VERTICES, MAX_EDGES = 10_000, 50_000


class Dataset:
    """What one dataset's benchmark needs: queries, floors' inputs, the Cairn file."""

    def __init__(
        self,
        name: str,
        path: Path,
        collection: str,
        space: VectorSpace,
        ids: list[str],
        texts: list[str],
        vectors: np.ndarray,
        sources: np.ndarray,
        targets: np.ndarray,
        nodes: int,
        queries: list[tuple[str, np.ndarray, int]],  # text, vector, seed node
        refs: list[EntityRef],  # node -> ref
    ) -> None:
        self.name, self.path, self.collection, self.space = name, path, collection, space
        self.ids, self.texts, self.vectors = ids, texts, vectors
        self.sources, self.targets, self.nodes = sources, targets, nodes
        self.queries, self.refs = queries, refs


def synthetic() -> Dataset:
    """The 100k corpus: document i is node i."""
    built = corpus()
    path = CACHE / f"{built.folder.name}.cairn.db"
    if not path.exists():
        raise SystemExit(f"run bench/store_bench.py first: {path} is missing")
    refs = [EntityRef(COLLECTION, doc_id) for doc_id in built.ids]
    queries = [
        (q["text"], built.query_vectors[i], int(q["doc"])) for i, q in enumerate(built.queries)
    ]
    return Dataset(
        "synthetic-100k",
        path,
        COLLECTION,
        SPACE,
        built.ids,
        built.texts(),
        built.vectors,
        built.edges[:, 0].copy(),
        built.edges[:, 1].copy(),
        len(built.ids),
        queries,
        refs,
    )


def django(count: int = 200, seed: int = 7) -> Dataset | None:
    """The Django code graph from its Cairn file: symbols, their vectors, every fact."""
    import sqlite3

    from cairn.embed import HashingEmbedder

    if not DJANGO_DB.exists():
        return None
    conn = sqlite3.connect(f"file:{DJANGO_DB}?mode=ro", uri=True)
    try:
        docs = conn.execute(
            "SELECT id, body FROM documents WHERE collection = 'symbols' AND deleted = 0 "
            "ORDER BY id"
        ).fetchall()
        ids = [row[0] for row in docs]
        bodies = [orjson.loads(row[1]) for row in docs]
        texts = [body.get("text", "") for body in bodies]
        where = {doc_id: i for i, doc_id in enumerate(ids)}
        embedder = HashingEmbedder()  # the loader's default: the space of the stored vectors
        vectors = np.zeros((len(ids), embedder.space.dimension), dtype=np.float32)
        # The columns read the stored vectors (compressed blocks, schema 4).
        with cairn.index.open(DJANGO_DB) as db, db.read_cut() as cut:
            columns = cut.columns
            space = canonical_bytes(embedder.space.to_json())
            column = columns.vector_column("symbols", "embedding", space)
            assert column is not None, "the Django database has no symbol vectors"
            alive = column.alive(columns.position)
            alive &= columns.death[column.slots] > columns.position  # the slot is live too
            for index in np.flatnonzero(alive):
                doc_id = columns.ids[int(column.slots[index])]
                if doc_id in where:
                    vectors[where[doc_id]] = column.matrix[index]
        node: dict[tuple[str, str], int] = {("symbols", doc_id): i for i, doc_id in enumerate(ids)}
        pairs = []
        for sc, si, tc, ti in conn.execute(
            "SELECT source_collection, source_id, target_collection, target_id FROM facts "
            "WHERE graph = 'code' AND deleted = 0"
        ):
            a = node.setdefault((sc, si), len(node))
            b = node.setdefault((tc, ti), len(node))
            pairs.append((a, b))
    finally:
        conn.close()
    refs = [EntityRef(*key) for key in sorted(node, key=node.__getitem__)]
    edges = np.asarray(pairs, dtype=np.int64)
    rng = np.random.default_rng(seed)
    named = [i for i, body in enumerate(bodies) if isinstance(body.get("name"), str)]
    chosen = rng.choice(named, min(count, len(named)), replace=False)
    queries = []
    for i in chosen.tolist():
        text = bodies[i]["name"]
        queries.append((text, embedder.embed([text])[0], i))
    return Dataset(
        "django",
        DJANGO_DB,
        "symbols",
        embedder.space,
        ids,
        texts,
        vectors,
        edges[:, 0].copy(),
        edges[:, 1].copy(),
        len(node),
        queries,
        refs,
    )


def requests(data: Dataset) -> dict[str, list[Any]]:
    """The Cairn requests of every mode, one per query."""
    out: dict[str, list[Any]] = {"text": [], "vector": [], "graph": [], "three-way": []}
    for text, vector, seed in data.queries:
        values = tuple(float(x) for x in vector)
        base = {"database": "main", "collection": data.collection, "limit": 10}
        text_part = {"text_field": TEXT_FIELD, "text": text}
        vector_part = {"vector_field": VECTOR_FIELD, "vector": values, "space": data.space}
        seeds = (data.refs[seed],)
        retriever = GraphRetriever(
            GraphWalkSpec(GRAPH, seeds, RETRIEVER_DEPTH, MAX_VERTICES, MAX_EDGES)
        )
        out["text"].append(SearchRequest(**base, **text_part))
        out["vector"].append(SearchRequest(**base, **vector_part))
        out["graph"].append(GraphSearchRequest(1, SearchRequest(**base), retriever=retriever))
        out["three-way"].append(
            GraphSearchRequest(
                1,
                SearchRequest(**base, **text_part, **vector_part),
                scope=GraphScope(GraphWalkSpec(GRAPH, seeds, SCOPE_DEPTH, MAX_VERTICES, MAX_EDGES)),
                retriever=retriever,
                expansion=GraphExpansion(GRAPH, EXPANSION_DEPTH, MAX_VERTICES, MAX_EDGES),
            )
        )
    return out


def measure(data: Dataset, repeat: int, rounds: int) -> dict[str, list[tuple[float, float]]]:
    """Per mode and floor, (p50, p95) of every round."""
    bm25 = Bm25Floor(data.texts)
    scan = ScanFloor(data.vectors)
    bfs = BfsFloor(data.sources, data.targets, data.nodes)
    texts = [q[0] for q in data.queries]
    vectors = [np.asarray(q[1], dtype=np.float32) for q in data.queries]
    seeds = [q[2] for q in data.queries]

    def three_way_floor(i: int) -> None:
        bm25.search(texts[i])
        hits = scan.search(vectors[i])
        bfs.reach([seeds[i]], SCOPE_DEPTH)
        bfs.reach([seeds[i]], RETRIEVER_DEPTH)
        bfs.reach(hits.tolist(), EXPANSION_DEPTH)

    floors = {
        "text": lambda i: bm25.search(texts[i]),
        "vector": lambda i: scan.search(vectors[i]),
        "graph": lambda i: bfs.reach([seeds[i]], RETRIEVER_DEPTH),
        "three-way": three_way_floor,
    }
    results: dict[str, list[tuple[float, float]]] = {}
    items = list(range(len(data.queries)))
    with cairn.open(data.path) as db:
        built = requests(data)
        run = {
            mode: (db.search if mode in ("text", "vector") else db.graph_search) for mode in built
        }
        db.graph_search(built["three-way"][0])  # columns and adjacency load outside timings
        for _ in range(rounds):
            for mode, reqs in built.items():
                results.setdefault(mode, []).append(percentiles(timed(run[mode], reqs, repeat)))
                results.setdefault(f"{mode} floor", []).append(
                    percentiles(timed(floors[mode], items, repeat))
                )
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--skip-django", action="store_true")
    parser.add_argument("--skip-synthetic", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    report: dict[str, Any] = {"load_average": os.getloadavg()}
    datasets = [] if args.skip_synthetic else [synthetic()]
    if not args.skip_django:
        found = django()
        if found is None:
            print(f"Django: not measured, {DJANGO_DB} is missing (run bench/store_bench.py)")
        else:
            datasets.append(found)
    for data in datasets:
        report[data.name] = {
            "documents": len(data.ids),
            "facts": len(data.sources),
            "rounds": measure(data, args.repeat, args.rounds),
        }
    report["load_average_after"] = os.getloadavg()
    print(f"load average before/after: {report['load_average']} / {report['load_average_after']}")
    for data in datasets:
        info = report[data.name]
        rounds = info["rounds"]
        print(f"\n{data.name}: {info['documents']:,} documents, {info['facts']:,} facts")
        print("| mode | Cairn p50 ms | Cairn p95 ms | floor p50 ms | ratio p50 | spread p50 |")
        print("|---|---|---|---|---|---|")
        for mode in ("text", "vector", "graph", "three-way"):
            p50, p95, spread, _ = best(rounds[mode])
            floor = best(rounds[f"{mode} floor"])[0]
            print(
                f"| {mode} | {p50:.2f} | {p95:.2f} | {floor:.2f} | {p50 / floor:.2f}x "
                f"| {spread:.2f} |"
            )
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
