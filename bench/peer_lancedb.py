"""LanceDB on the benchmark corpus: native full-text index, flat vector scan, RRF hybrid.

Runs inside its own venv (``python3.11 -m venv DIR && DIR/bin/pip install lancedb``), never
imports Cairn, reads the corpus files ``bench/corpus.py`` wrote and prints one JSON object:
build time and ``[p50, p95]`` milliseconds of text, vector and hybrid top-10 searches.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import lancedb
import numpy as np
import pyarrow as pa
from lancedb.rerankers import RRFReranker


def percentiles(samples: list[float]) -> list[float]:
    ordered = sorted(samples)
    return [statistics.median(ordered), ordered[round(0.95 * (len(ordered) - 1))]]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    texts = (args.corpus / "texts.txt").read_text(encoding="utf-8").split("\n")
    vectors = np.load(args.corpus / "vectors.npy")
    queries = json.loads((args.corpus / "queries.json").read_text())
    query_vectors = np.load(args.corpus / "query_vectors.npy")
    dimension = vectors.shape[1]
    with tempfile.TemporaryDirectory() as folder:
        db = lancedb.connect(folder)
        started = time.perf_counter()
        table = pa.table(
            {
                "id": pa.array([f"d{i:06d}" for i in range(len(texts))]),
                "text": pa.array(texts),
                "vector": pa.FixedSizeListArray.from_arrays(
                    pa.array(vectors.reshape(-1), type=pa.float32()), dimension
                ),
            }
        )
        tbl = db.create_table("docs", data=table)
        tbl.create_fts_index("text", use_tantivy=False)
        build = time.perf_counter() - started
        reranker = RRFReranker(K=60)

        def text(i: int) -> object:
            return (
                tbl.search(queries[i]["text"], query_type="fts").select(["id"]).limit(10).to_arrow()
            )

        def vector(i: int) -> object:
            return (
                tbl.search(query_vectors[i], vector_column_name="vector")
                .distance_type("cosine")
                .select(["id"])
                .limit(10)
                .to_arrow()
            )

        def hybrid(i: int) -> object:
            return (
                tbl.search(query_type="hybrid", vector_column_name="vector")
                .vector(query_vectors[i])
                .text(queries[i]["text"])
                .distance_type("cosine")
                .rerank(reranker=reranker)
                .select(["id"])
                .limit(10)
                .to_arrow()
            )

        out: dict[str, object] = {
            "peer": "lancedb",
            "version": lancedb.__version__,
            "build_s": build,
        }
        for name, run in (("text", text), ("vector", vector), ("hybrid", hybrid)):
            run(0)  # warm
            samples = []
            for _ in range(args.repeat):
                for i in range(len(queries)):
                    begin = time.perf_counter()
                    run(i)
                    samples.append((time.perf_counter() - begin) * 1000)
            out[name] = percentiles(samples)
        json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
