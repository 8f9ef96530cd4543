"""The main demo job: index a repository, load it, run three example searches, and ask
who calls its most called symbol and what depends on it.

``make demo`` runs it on Cairn's own source tree: it builds ``.cairn/graph.cairn``,
loads ``.cairn/cairn.db`` (one atomic diff, so a second run changes nothing), then asks
the kinds of question Cairn answers: a text search, a graph retrieval seeded at a file,
the same kind of question as one SQL ``SEARCH`` statement, and, for the symbol of this
repository with the most call sites, its callers with file:line and its impact.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cairn.graph import SemanticGraph
from cairn.search.calls import CallsAnswer, calls_of
from cairn.search.contracts import (
    EntityRef,
    GraphSearchRequest,
    GraphSearchResult,
    QueryRequest,
    SqlGraphSearchRequest,
)
from cairn.search.impact import ImpactAnswer, ImpactRequest, impact, is_test_path
from cairn.store.limits import DEFAULT_GRAPH
from cairn.store.load import SEARCH_FIELDS

__all__ = ["DEMO_QUERY", "DemoRun", "DemoSearch", "most_called", "run_repository_demo"]

DEMO_QUERY = "semantic graph admission"
"""The words of the demo's text search."""

DEMO_SEED_FILE = "src/cairn/graph/multigraph.py"
"""The file the demo's graph retrieval is seeded at (falls back to the first file)."""

DEMO_LIMIT = 5
DEMO_DEPTH = 2
DEMO_COLLECTION = "symbols"
DEMO_SITES = 2
EXTERNAL_PREFIX = "external:"


@dataclass(frozen=True, slots=True)
class DemoSearch:
    """One example search: a title, the request as people would write it, the result."""

    title: str
    request: str
    result: GraphSearchResult


@dataclass(frozen=True, slots=True)
class DemoRun:
    """What the demo did: the index and load summaries, three searches, and the callers
    and impact of the repository's most called symbol (None when nothing is called)."""

    index: dict[str, Any]
    load: dict[str, Any]
    searches: tuple[DemoSearch, ...]
    callers: CallsAnswer | None = None
    impact: ImpactAnswer | None = None


def most_called(graph: SemanticGraph) -> str | None:
    """The repository symbol outside test code with the most incoming ``calls`` sites
    (ties: by ID)."""
    sites: Counter[str] = Counter()
    for fact in graph.facts():
        if fact.relation != "calls" or fact.target.startswith(EXTERNAL_PREFIX):
            continue
        path = graph.node(fact.target).attributes.get("path")
        if not is_test_path(path if isinstance(path, str) else None):
            sites[fact.target] += max(1, len(fact.occurrence_ids))
    if not sites:
        return None
    return min(sites, key=lambda node_id: (-sites[node_id], node_id))


def _seed_file(root: Path) -> str:
    seed = root / DEMO_SEED_FILE
    if seed.is_file():
        return DEMO_SEED_FILE
    first = next((p for p in sorted(root.rglob("*.py")) if ".venv" not in p.parts), None)
    return first.relative_to(root).as_posix() if first is not None else DEMO_SEED_FILE


def run_repository_demo(root: str | Path, *, workers: int | None = None) -> DemoRun:
    """Index ``root``, load its database, and run the three example searches."""
    from cairn.codegraph.build import default_workers, index_repository, index_summary, write_index
    from cairn.database import open as open_database
    from cairn.store.load import load_semantic_graph, load_summary
    from cairn.store.locate import database_path

    folder = Path(root).resolve()
    result = index_repository(folder, workers=workers or default_workers())
    write_index(result)
    with open_database(database_path(folder)) as db:
        before = db.position
        receipt = load_semantic_graph(db, result.graph)
        seed = EntityRef("files", f"file:{_seed_file(folder)}")
        searches = (
            _text_search(db),
            _graph_search(db, seed),
            _sql_search(db, seed),
        )
        symbol = most_called(result.graph)
        callers = impact_answer = None
        if symbol is not None:
            callers = calls_of(db, symbol, sites=DEMO_SITES)
            impact_answer = impact(db, ImpactRequest(db.name, symbol, top=DEMO_LIMIT))
    summary = load_summary(receipt, before=before)
    return DemoRun(index_summary(result), summary, searches, callers, impact_answer)


def _door_request(
    db: Any, *, text: str | None = None, seed: EntityRef | None = None, expand: int | None = None
) -> GraphSearchRequest:
    """The request ``cairn search`` sends for these words: the code-search doors' text
    fields, vector weight, fusion k and kind prior (``cairn.search.present``)."""
    from cairn.search.present import build_cli_request, code_text_field, code_vector_weight

    with db.read_cut() as cut:
        field = code_text_field(cut, DEMO_COLLECTION)
        weight = code_vector_weight(cut, DEMO_COLLECTION)
    return build_cli_request(
        database=db.name,
        collection=DEMO_COLLECTION,
        text=text,
        seeds=() if seed is None else ((seed.collection, seed.id),),
        scope_seeds=(),
        graph=DEFAULT_GRAPH,
        depth=DEMO_DEPTH,
        labels=None,
        expand=expand,
        limit=DEMO_LIMIT,
        explain=True,
        embed=text is not None,
        text_field=field,
        vector_weight=weight,
    )


def _text_search(db: Any) -> DemoSearch:
    request = _door_request(db, text=DEMO_QUERY)
    return DemoSearch(
        "Hybrid search (BM25 + embedding) over symbols",
        f"cairn search {DEMO_QUERY!r}",
        GraphSearchResult(tuple(db.search(request.search))),
    )


def _graph_search(db: Any, seed: EntityRef) -> DemoSearch:
    request = _door_request(db, seed=seed, expand=1)
    return DemoSearch(
        f"Graph retrieval seeded at {seed.id}",
        f"cairn search --seed {seed.collection}:{seed.id} --depth {DEMO_DEPTH} --expand 1",
        db.graph_search(request),
    )


def _sql_search(db: Any, seed: EntityRef) -> DemoSearch:
    sql = (
        f'SEARCH FROM symbols TEXT "{SEARCH_FIELDS}" MATCH @q '
        "RETRIEVE GRAPH code SEEDS ((files, @seed)) DEPTH 2 VERTICES 1000 EDGES 5000 "
        f"LIMIT {DEMO_LIMIT}"
    )
    parameters = {"q": "canonical digest", "seed": seed.id}
    result = db.search_sql(SqlGraphSearchRequest(QueryRequest(sql, parameters)))
    return DemoSearch("SQL SEARCH", f"cairn sql {sql!r} --param q=... --param seed=...", result)
