"""The synthetic benchmark corpus: Zipf text, clustered 256-d vectors, a ~300k-fact graph.

Deterministic from its seed. ``corpus(cache)`` generates the corpus once into
``cache/corpus-<docs>-<seed>/`` (plain files the peer benchmarks read too) and reuses it;
``cairn_database(cache)`` loads it into a Cairn database file once (through the public
bulk path, ``load_semantic_graph``) and reuses that file, timing the load.

Shape: ``docs`` documents in ``CLUSTERS`` topics. A document has 40..160 tokens, three
quarters drawn from one Zipf(1.1) law over a 50,000-word vocabulary, one quarter from its
topic's 300 words; its vector is the topic centre plus Gaussian noise, L2-normalised.
Each document has three outgoing facts (``calls``/``imports``/``inherits``): 70% to a
document of its own topic, 30% to any document. Queries take three distinct tokens of a
random document and a noisy copy of its vector; graph seeds are that document.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

CACHE = Path(os.environ.get("CAIRN_BENCH_CACHE", Path.home() / ".cache" / "cairn-bench"))
DOCS = 100_000
SEED = 20_261_201
VOCABULARY = 50_000
ZIPF_EXPONENT = 1.1
CLUSTERS = 64
TOPIC_WORDS = 300
TOPIC_SHARE = 0.25
MIN_TOKENS, MAX_TOKENS = 40, 160
DIMENSION = 256
NOISE = 0.6
QUERY_NOISE = 0.3
OUT_DEGREE = 3
LOCAL_EDGES = 0.7
RELATIONS = ("calls", "imports", "inherits")
QUERIES = 200
QUERY_TERMS = 3
FORMAT = 1

_CONSONANTS = "bdfgklmnprstvz"
_VOWELS = "aeiou"


def _word(index: int) -> str:
    """A unique lowercase alphabetic word (one analyzer token) for each index."""
    syllables = len(_CONSONANTS) * len(_VOWELS)
    parts = []
    for _ in range(3):
        index, syllable = divmod(index, syllables)
        consonant, vowel = divmod(syllable, len(_VOWELS))
        parts.append(_CONSONANTS[consonant] + _VOWELS[vowel])
    return "".join(parts) + ("" if index == 0 else _CONSONANTS[index % len(_CONSONANTS)])


@dataclass(frozen=True)
class Corpus:
    """The generated files and their arrays (texts are read lazily)."""

    folder: Path
    ids: list[str]
    clusters: npt.NDArray[np.int64]
    vectors: npt.NDArray[np.float32]
    edges: npt.NDArray[np.int64]  # (facts, 3): source, target, relation index
    queries: list[dict[str, Any]]
    query_vectors: npt.NDArray[np.float32]

    def texts(self) -> list[str]:
        """Every document's text, in document order."""
        return (self.folder / "texts.txt").read_text(encoding="utf-8").split("\n")


def _generate(folder: Path, docs: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    words = [_word(i) for i in range(VOCABULARY)]
    ranks = np.arange(1, VOCABULARY + 1, dtype=np.float64)
    zipf = ranks**-ZIPF_EXPONENT
    zipf /= zipf.sum()
    topics = np.stack(
        [
            rng.choice(np.arange(500, VOCABULARY), TOPIC_WORDS, replace=False)
            for _ in range(CLUSTERS)
        ]
    )
    clusters = rng.integers(0, CLUSTERS, docs)
    lengths = rng.integers(MIN_TOKENS, MAX_TOKENS + 1, docs)
    total = int(lengths.sum())
    tokens = rng.choice(VOCABULARY, total, p=zipf)
    topical = rng.random(total) < TOPIC_SHARE
    owner = np.repeat(clusters, lengths)
    tokens[topical] = topics[owner[topical], rng.integers(0, TOPIC_WORDS, int(topical.sum()))]
    bounds = np.concatenate(([0], np.cumsum(lengths)))
    texts = [" ".join(words[t] for t in tokens[bounds[d] : bounds[d + 1]]) for d in range(docs)]
    (folder / "texts.txt").write_text("\n".join(texts), encoding="utf-8")
    centres = rng.normal(size=(CLUSTERS, DIMENSION))
    vectors = centres[clusters] + NOISE * rng.normal(size=(docs, DIMENSION))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    np.save(folder / "vectors.npy", vectors.astype(np.float32))
    np.save(folder / "clusters.npy", clusters)
    members = [np.flatnonzero(clusters == c) for c in range(CLUSTERS)]
    sources = np.repeat(np.arange(docs), OUT_DEGREE)
    local = rng.random(len(sources)) < LOCAL_EDGES
    targets = rng.integers(0, docs, len(sources))
    for index in np.flatnonzero(local):
        group = members[clusters[sources[index]]]
        targets[index] = group[rng.integers(0, len(group))]
    relations = rng.integers(0, len(RELATIONS), len(sources))
    keep = sources != targets
    edges = np.unique(np.stack([sources, targets, relations], axis=1)[keep], axis=0)
    np.save(folder / "edges.npy", edges)
    queries = []
    query_vectors = []
    for _ in range(QUERIES):
        doc = int(rng.integers(0, docs))
        own = np.unique(tokens[bounds[doc] : bounds[doc + 1]])
        terms = rng.choice(own, min(QUERY_TERMS, len(own)), replace=False)
        queries.append({"doc": doc, "text": " ".join(words[t] for t in terms)})
        noisy = vectors[doc] + QUERY_NOISE * rng.normal(size=DIMENSION) / np.sqrt(DIMENSION)
        query_vectors.append(noisy / np.linalg.norm(noisy))
    np.save(folder / "query_vectors.npy", np.asarray(query_vectors, dtype=np.float32))
    (folder / "queries.json").write_text(json.dumps(queries), encoding="utf-8")
    (folder / "meta.json").write_text(
        json.dumps({"format": FORMAT, "docs": docs, "seed": seed, "facts": len(edges)}),
        encoding="utf-8",
    )


def doc_id(index: int) -> str:
    """The document ID of document ``index``."""
    return f"d{index:06d}"


def corpus(
    cache: Path = CACHE, docs: int = DOCS, seed: int = SEED, *, mapped: bool = False
) -> Corpus:
    """The corpus of ``docs`` documents, generated into the cache on first use.

    ``mapped``: the vectors stay a read-only map of their file (no page read until used).
    """
    folder = cache / f"corpus-{docs}-{seed}"
    meta = folder / "meta.json"
    if not meta.exists() or json.loads(meta.read_text())["format"] != FORMAT:
        folder.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        _generate(folder, docs, seed)
        print(f"generated {folder} in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return Corpus(
        folder,
        [doc_id(i) for i in range(docs)],
        np.load(folder / "clusters.npy"),
        np.load(folder / "vectors.npy", mmap_mode="r" if mapped else None),
        np.load(folder / "edges.npy"),
        json.loads((folder / "queries.json").read_text()),
        np.load(folder / "query_vectors.npy"),
    )


if __name__ == "__main__":
    built = corpus()
    print(built.folder, len(built.ids), "documents", len(built.edges), "facts")


# ------------------------------------------------------------------ loading into Cairn
SPACE_ID = "bench-clustered-256"
GRAPH = "code"
COLLECTION = "sections"  # the family collection of ``section`` nodes
TEXT_FIELD = "/text"
VECTOR_FIELD = "embedding"


class FileVectors:
    """Rows of a saved float32 ``.npy`` matrix read from the file when asked for.

    A stand-in for an embedder that computes each batch: rows are read with ``pread``
    into a fresh array, so the process never holds (or maps) the whole matrix.
    """

    def __init__(self, path: Path) -> None:
        mapped = np.load(path, mmap_mode="r")
        if mapped.dtype != np.float32 or mapped.ndim != 2 or not mapped.flags.c_contiguous:
            raise ValueError(f"{path} is not a C-ordered float32 matrix")
        self._offset, (self._rows, self._dimension) = mapped.offset, mapped.shape
        del mapped
        self._fd = os.open(path, os.O_RDONLY)
        self._row_bytes = self._dimension * 4

    def __len__(self) -> int:
        return int(self._rows)

    def __getitem__(self, rows: list[int]) -> npt.NDArray[np.float32]:
        found = np.empty((len(rows), self._dimension), dtype=np.float32)
        for index, row in enumerate(rows):
            data = os.pread(self._fd, self._row_bytes, self._offset + row * self._row_bytes)
            found[index] = np.frombuffer(data, dtype=np.float32)
        return found


class LookupEmbedder:
    """Hands back the corpus' own vectors for its texts: vectors supplied externally."""

    def __init__(self, texts: list[str], vectors: npt.NDArray[np.float32] | FileVectors) -> None:
        from cairn.store import Metric, VectorSpace

        self._rows = {text: index for index, text in enumerate(texts)}
        self._vectors = vectors
        self._space = VectorSpace(SPACE_ID, DIMENSION, Metric.COSINE, "bench.clustered", "1")

    @property
    def space(self) -> Any:
        """The corpus' vector space."""
        return self._space

    def embed(self, texts: Any) -> npt.NDArray[np.float32]:
        """The stored rows of ``texts``."""
        return self._vectors[[self._rows[text] for text in texts]]


def semantic_graph(built: Corpus) -> Any:
    """The corpus as a ``SemanticGraph``: one ``section`` node per document, its facts."""
    from cairn.graph.multigraph import SemanticGraph

    graph = SemanticGraph()
    for index, text in enumerate(built.texts()):
        graph.add_node(doc_id(index), "section", attributes={"text": text})
    graph.add_facts(
        (doc_id(int(s)), doc_id(int(t)), RELATIONS[int(r)], None, None) for s, t, r in built.edges
    )
    return graph


def cairn_database(built: Corpus, cache: Path = CACHE) -> tuple[Path, dict[str, float]]:
    """A Cairn file holding the corpus (loaded once, then reused); load timings if loaded."""
    import cairn
    from cairn.store.load import load_semantic_graph

    path = cache / f"{built.folder.name}.cairn.db"
    if path.exists():
        return path, {}
    partial = path.with_suffix(".partial")
    for leftover in partial.parent.glob(partial.name + "*"):
        leftover.unlink()
    timings: dict[str, float] = {}
    started = time.perf_counter()
    graph = semantic_graph(built)
    timings["graph_build_s"] = time.perf_counter() - started
    embedder = LookupEmbedder(built.texts(), built.vectors)
    started = time.perf_counter()
    with cairn.open(partial) as db:
        load_semantic_graph(db, graph, embedder=embedder)
    timings["load_s"] = time.perf_counter() - started
    for suffix in ("-wal", "-shm"):
        Path(str(partial) + suffix).unlink(missing_ok=True)
    partial.rename(path)
    return path, timings
