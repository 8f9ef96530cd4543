"""The main demo job: index a repository, load it, and run three example searches.

``make demo`` runs it on Cairn's own source tree: it builds ``.cairn/graph.cairn``,
loads ``.cairn/cairn.db`` (one atomic diff, so a second run changes nothing), then asks
the three kinds of question Cairn answers: a text search, a graph retrieval seeded at
a file, and the same kind of question as one SQL ``SEARCH`` statement.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cairn.search.contracts import (
    EntityRef,
    GraphExpansion,
    GraphRetriever,
    GraphSearchRequest,
    GraphSearchResult,
    GraphWalkSpec,
    QueryRequest,
    SearchRequest,
    SqlGraphSearchRequest,
)
from cairn.search.limits import SEARCH_REQUEST_VERSION

__all__ = ["DEMO_QUERY", "DemoRun", "DemoSearch", "run_repository_demo"]

DEMO_QUERY = "semantic graph admission"
"""The words of the demo's text search."""

DEMO_SEED_FILE = "src/cairn/graph/multigraph.py"
"""The file the demo's graph retrieval is seeded at (falls back to the first file)."""

DEMO_LIMIT = 5


@dataclass(frozen=True, slots=True)
class DemoSearch:
    """One example search: a title, the request as people would write it, the result."""

    title: str
    request: str
    result: GraphSearchResult


@dataclass(frozen=True, slots=True)
class DemoRun:
    """What the demo did: the index summary, the load summary and three searches."""

    index: dict[str, Any]
    load: dict[str, Any]
    searches: tuple[DemoSearch, ...]


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
    return DemoRun(index_summary(result), load_summary(receipt, before=before), searches)


def _text_search(db: Any) -> DemoSearch:
    from cairn.search.present import query_vector

    request = SearchRequest(
        db.name,
        "symbols",
        text_field="/text",
        text=DEMO_QUERY,
        limit=DEMO_LIMIT,
        explain=True,
        **query_vector(DEMO_QUERY),
    )
    hits = db.search(request)
    return DemoSearch(
        "Hybrid search (BM25 + embedding) over symbols",
        f"cairn search {DEMO_QUERY!r}",
        GraphSearchResult(tuple(hits)),
    )


def _graph_search(db: Any, seed: EntityRef) -> DemoSearch:
    request = GraphSearchRequest(
        SEARCH_REQUEST_VERSION,
        SearchRequest(db.name, "symbols", limit=DEMO_LIMIT, explain=True),
        retriever=GraphRetriever(GraphWalkSpec("code", (seed,), max_depth=2)),
        expansion=GraphExpansion("code", 1, labels=("calls",)),
    )
    return DemoSearch(
        f"Graph retrieval seeded at {seed.id}",
        f"cairn search --seed files:{seed.id} --depth 2 --expand 1 --labels calls",
        db.graph_search(request),
    )


def _sql_search(db: Any, seed: EntityRef) -> DemoSearch:
    sql = (
        'SEARCH FROM symbols TEXT "/text" MATCH @q '
        "RETRIEVE GRAPH code SEEDS ((files, @seed)) DEPTH 2 VERTICES 1000 EDGES 5000 "
        f"LIMIT {DEMO_LIMIT}"
    )
    parameters = {"q": "canonical digest", "seed": seed.id}
    result = db.search_sql(SqlGraphSearchRequest(QueryRequest(sql, parameters)))
    return DemoSearch("SQL SEARCH", f"cairn sql {sql!r} --param q=... --param seed=...", result)
