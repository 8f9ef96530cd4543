"""txtai on the benchmark corpus: BM25 keyword index plus numpy dense backend, hybrid.

Runs inside its own venv (``python3.11 -m venv DIR && DIR/bin/pip install txtai``), never
imports Cairn, and downloads no model: vectors are supplied externally (``method:
external`` with a transform that looks the corpus' own vectors up). Prints one JSON
object: build time and ``[p50, p95]`` milliseconds of keyword-only (weights 0), vector-only
(weights 1) and hybrid (txtai's default weights) top-10 searches.

With ``--serve`` it builds once, prints the build line, then measures one round (every
mode, ``--repeat`` passes) per line read from stdin and prints it as one JSON line, so
that the caller can interleave its own rounds with txtai's on a host whose speed drifts.

With ``--build-only --save DIR`` it builds the index the way a document store would hold
the corpus (``content: True``: the texts in txtai's SQLite content database, beside the
BM25 keyword index and the numpy vectors), saves it to ``DIR`` with ``embeddings.save``
and prints build and save seconds, the process's peak RSS and the saved files' bytes.
There the corpus vectors are read from their file a batch at a time (``pread``), as an
embedder computes them, exactly as the Cairn side of that run does.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from importlib.metadata import version

import numpy as np
from txtai import Embeddings


def percentiles(samples: list[float]) -> list[float]:
    ordered = sorted(samples)
    return [statistics.median(ordered), ordered[round(0.95 * (len(ordered) - 1))]]


def peak_rss_mib() -> float:
    """This process's peak resident set so far (Linux ``ru_maxrss`` is in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def saved_files(folder: Path) -> dict[str, int]:
    """Bytes of every file under ``folder``, by relative path."""
    return {
        str(path.relative_to(folder)): path.stat().st_size
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def row_reader(path: Path) -> Callable[[list[int]], np.ndarray]:
    """A function reading rows of a saved float32 matrix from the file, not from memory."""
    mapped = np.load(path, mmap_mode="r")
    offset, dimension = mapped.offset, mapped.shape[1]
    del mapped
    fd = os.open(path, os.O_RDONLY)
    size = dimension * 4

    def rows(indexes: list[int]) -> np.ndarray:
        found = np.empty((len(indexes), dimension), dtype=np.float32)
        for at, row in enumerate(indexes):
            found[at] = np.frombuffer(os.pread(fd, size, offset + row * size), dtype=np.float32)
        return found

    return rows


def build_only(embeddings: Embeddings, texts: list[str], folder: Path) -> dict[str, object]:
    """Index with content stored, save to ``folder``; seconds, peak RSS, bytes saved."""
    started = time.perf_counter()
    embeddings.index((i, text, None) for i, text in enumerate(texts))
    built = time.perf_counter()
    embeddings.save(str(folder))
    saved = time.perf_counter()
    files = saved_files(folder)
    return {
        "peer": "txtai",
        "version": version("txtai"),
        "documents": embeddings.count(),
        "build_s": built - started,
        "save_s": saved - built,
        "peak_rss_mib": peak_rss_mib(),
        "files": files,
        "bytes": sum(files.values()),
        "config": {k: v for k, v in embeddings.config.items() if k != "transform"},
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--serve", action="store_true", help="one round per stdin line")
    parser.add_argument("--build-only", action="store_true", help="build, save, no searches")
    parser.add_argument("--save", type=Path, help="with --build-only: the folder to save to")
    args = parser.parse_args()
    if args.build_only and args.save is None:
        parser.error("--build-only needs --save DIR")
    texts = (args.corpus / "texts.txt").read_text(encoding="utf-8").split("\n")
    vectors = np.load(args.corpus / "vectors.npy", mmap_mode="r" if args.build_only else None)
    queries = json.loads((args.corpus / "queries.json").read_text())
    query_vectors = np.load(args.corpus / "query_vectors.npy")
    lookup = {text: row for row, text in enumerate(texts)}
    by_query = {q["text"]: query_vectors[i] for i, q in enumerate(queries)}

    # Building only: vectors from the file per batch (no query is embedded then).
    read_rows = row_reader(args.corpus / "vectors.npy") if args.build_only else None

    def transform(inputs: list[str]) -> np.ndarray:
        if read_rows is not None:
            return read_rows([lookup[x] for x in inputs])
        return np.stack([by_query[x] if x in by_query else vectors[lookup[x]] for x in inputs])

    started = time.perf_counter()
    embeddings = Embeddings(
        {
            "method": "external",
            "path": "bench-external",
            "transform": transform,
            "backend": "numpy",
            "keyword": True,
            "content": args.build_only,
        }
    )
    if args.build_only:
        json.dump(build_only(embeddings, texts, args.save), sys.stdout, default=str)
        return
    embeddings.index((i, text, None) for i, text in enumerate(texts))
    build = time.perf_counter() - started
    out: dict[str, object] = {"peer": "txtai", "version": version("txtai"), "build_s": build}

    def round_of_modes() -> dict[str, list[float]]:
        found = {}
        for name, weights in (("text", 0.0), ("vector", 1.0), ("hybrid", None)):
            embeddings.search(queries[0]["text"], 10, weights=weights)  # warm
            samples = []
            for _ in range(args.repeat):
                for query in queries:
                    begin = time.perf_counter()
                    embeddings.search(query["text"], 10, weights=weights)
                    samples.append((time.perf_counter() - begin) * 1000)
            found[name] = percentiles(samples)
        return found

    if args.serve:
        print(json.dumps(out), flush=True)
        for _ in sys.stdin:
            print(json.dumps(round_of_modes()), flush=True)
        return
    out.update(round_of_modes())
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
