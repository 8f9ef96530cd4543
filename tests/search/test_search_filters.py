"""Answer filters on search and traverse (issue 19): kinds, path globs and test code.

The oracle is the documents themselves: the test reads every body's ``kind`` and
``path``, decides by itself which pass, and compares the filtered search with the same
search restricted to those IDs by ``allowed_ids`` (whose semantics predate filters),
and with the unfiltered text ranking cut to the passing documents.
"""

from __future__ import annotations

import fnmatch
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import cairn
from cairn.cli import app
from cairn.errors import ValidationError
from cairn.search.contracts import EntityRef, SearchRequest
from cairn.search.present import query_vector
from cairn.search.traverse import TraverseRequest, traverse

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "flask_app"
TEST_FILE = "from app import services\n\n\ndef test_load_user():\n    services.load_user(1)\n"
QUERY = "load user"
GET_USER = EntityRef("symbols", "function:app/views.py#get_user")


@pytest.fixture(scope="module")
def db_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("filters") / "repo"
    shutil.copytree(FIXTURE, repo)
    (repo / "tests").mkdir()
    (repo / "tests" / "test_services.py").write_text(TEST_FILE)
    result = CliRunner().invoke(app, ["index", str(repo), "--workers", "1"])
    assert result.exit_code == 0, result.output
    return repo / ".cairn" / "cairn.db"


@pytest.fixture
def db(db_path: Path) -> Iterator[cairn.Database]:
    with cairn.open(db_path) as handle:
        yield handle


def _bodies(db: cairn.Database) -> dict[str, dict[str, Any]]:
    """Every symbol's body, read one by one (the oracle's own view)."""
    with db.read_cut() as cut:
        ids = [row[0] for row in cut.conn.execute(
            "SELECT id FROM documents WHERE collection = 'symbols' AND deleted = 0"
        )]  # fmt: skip
    return {doc_id: dict(db.get_document("symbols", doc_id).body) for doc_id in ids}


def _passes(body: dict[str, Any], kinds: Any, paths: Any, exclude_tests: bool) -> bool:
    path = body.get("path")
    if kinds is not None and body.get("kind") not in kinds:
        return False
    if paths is not None and not any(fnmatch.fnmatchcase(path or "", g) for g in paths):
        return False
    return not (exclude_tests and isinstance(path, str) and path.startswith("tests/"))


FILTERS = [
    {"kinds": ("function",)},
    {"kinds": ("method", "class")},
    {"paths": ("app/*",)},
    {"exclude_tests": True},
    {"kinds": ("function",), "exclude_tests": True},
]


@pytest.mark.parametrize("filters", FILTERS)
def test_a_filtered_search_equals_the_same_search_over_the_passing_ids(
    db: cairn.Database, filters: dict[str, Any]
) -> None:
    bodies = _bodies(db)
    passing = sorted(
        doc_id
        for doc_id, body in bodies.items()
        if _passes(
            body, filters.get("kinds"), filters.get("paths"), bool(filters.get("exclude_tests"))
        )
    )
    assert 0 < len(passing) < len(bodies)  # the filter narrows, and leaves something
    for vector in ({}, query_vector(QUERY)):  # text only, then hybrid
        base = {"text_field": "/text", "text": QUERY, "limit": 8, **vector}
        filtered = db.search(SearchRequest(db.name, "symbols", **base, **filters))
        oracle = db.search(SearchRequest(db.name, "symbols", **base, allowed_ids=tuple(passing)))
        assert [h.document.ref.id for h in filtered] == [h.document.ref.id for h in oracle]
        assert [h.score for h in filtered] == [h.score for h in oracle]
        assert all(h.document.ref.id in passing for h in filtered)
    # Text only, the ranking is the unfiltered one cut to the passing documents: a top-k
    # over them, never the unfiltered top-k with the failing hits dropped.
    everything = db.search(SearchRequest(db.name, "symbols", "/text", QUERY, limit=1000))
    expected = [h.document.ref.id for h in everything if h.document.ref.id in passing][:8]
    text_only = db.search(SearchRequest(db.name, "symbols", "/text", QUERY, limit=8, **filters))
    assert [h.document.ref.id for h in text_only] == expected


def test_the_test_file_is_found_unless_tests_are_excluded(db: cairn.Database) -> None:
    request = SearchRequest(db.name, "symbols", "/text", "test load user", limit=20)
    test_id = "function:tests/test_services.py#test_load_user"
    assert test_id in [h.document.ref.id for h in db.search(request)]
    narrowed = SearchRequest(
        db.name, "symbols", "/text", "test load user", limit=20, exclude_tests=True
    )
    assert test_id not in [h.document.ref.id for h in db.search(narrowed)]


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("kinds", (), "kinds"),
        ("paths", (), "paths"),
        ("kinds", ("bad kind\n",), "kinds"),
        ("exclude_tests", "yes", "exclude_tests"),
    ],
)
def test_bad_filters_are_refused_at_admission(
    db: cairn.Database, field: str, value: Any, message: str
) -> None:
    request = SearchRequest(db.name, "symbols", "/text", QUERY, **{field: value})
    with pytest.raises(ValidationError, match=message):
        db.search(request)
    walk = TraverseRequest(db.name, "code", (GET_USER,), **{field: value})
    with pytest.raises(ValidationError, match=message):
        traverse(db, walk)


def test_traverse_keeps_the_seeds_and_the_passing_neighbours(db: cairn.Database) -> None:
    whole = traverse(db, TraverseRequest(db.name, "code", (GET_USER,), direction="both"))
    bodies = _bodies(db)
    narrowed = traverse(
        db, TraverseRequest(db.name, "code", (GET_USER,), direction="both", kinds=("function",))
    )
    kept = {v.ref for v in narrowed.vertices}
    expected = {GET_USER} | {
        v.ref for v in whole.vertices if bodies.get(v.ref.id, {}).get("kind") == "function"
    }
    expected &= {v.ref for v in whole.vertices}
    assert kept == expected
    assert narrowed.filtered_out == len(whole.vertices) - len(kept) > 0
    assert all(e.source in kept and e.target in kept for e in narrowed.edges)
    assert [e for e in whole.edges if e.source in kept and e.target in kept] == list(narrowed.edges)


def test_a_path_to_a_target_is_never_filtered(db: cairn.Database) -> None:
    request = TraverseRequest(
        db.name,
        "code",
        (GET_USER,),
        target=EntityRef("symbols", "function:app/services.py#load_user"),
        exclude_tests=True,
    )
    with pytest.raises(ValidationError, match="target"):
        traverse(db, request)


def test_the_cli_search_filters(db_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["search", QUERY, "--db", str(db_path), "--kind", "class", "--json"]
    )
    assert result.exit_code == 0, result.output
    assert '"class:app/models.py#User"' in result.output
    assert "function:" not in result.output


def test_the_cli_says_which_filters_left_no_hit(db_path: Path) -> None:
    """A mistyped ``--kind`` empties the answer: the line says the filter did it."""
    result = CliRunner().invoke(
        app, ["search", QUERY, "--db", str(db_path), "--kind", "fucntion", "--exclude-tests"]
    )
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert said == "No hits among the nodes of kind 'fucntion' and outside test code."


def test_sql_search_carries_the_filters_and_embed(db: cairn.Database) -> None:
    from cairn.search.contracts import (
        GraphExpansion,
        GraphSearchRequest,
        QueryRequest,
        SqlGraphSearchRequest,
    )

    sql = (
        'SEARCH FROM symbols TEXT "/text" MATCH @q VECTOR EMBED '
        "EXPAND GRAPH code DEPTH 1 VERTICES 50 EDGES 500 "
        "KINDS ('function', 'method') PATHS ('app/*') EXCLUDE TESTS LIMIT 5"
    )
    lowered = db.search_sql(SqlGraphSearchRequest(QueryRequest(sql, {"q": QUERY})))
    direct = db.graph_search(
        GraphSearchRequest(
            1,
            SearchRequest(
                db.name,
                "symbols",
                "/text",
                QUERY,
                limit=5,
                kinds=("function", "method"),
                paths=("app/*",),
                exclude_tests=True,
                embed=True,
            ),
            expansion=GraphExpansion("code", 1, 50, 500),
        )
    )
    assert lowered == direct
    assert lowered.hits and all(
        h.document.body["kind"] in ("function", "method") for h in lowered.hits
    )
