"""Who calls X (issue 19, first part): names resolve exact before fuzzy and never by a
guess, and every call edge carries its call sites with file and line. Expected lines
are read by hand from ``tests/fixtures/flask_app``.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from search_helpers import flask_db
from typer.testing import CliRunner

import cairn
from cairn.cli import app
from cairn.errors import CorruptionError, ValidationError
from cairn.search.calls import calls_of
from cairn.search.names import resolve_name
from cairn.store.evidence import read_evidence

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "flask_app"
LOAD_USER = "function:app/services.py#load_user"
GET_USER = "function:app/views.py#get_user"


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return flask_db(tmp_path)


@pytest.fixture
def db(db_path: Path) -> Iterator[cairn.Database]:
    with cairn.open(db_path) as handle:
        yield handle


def test_names_resolve_by_tier(db: cairn.Database) -> None:
    with db.read_cut() as cut:
        assert resolve_name(cut, LOAD_USER).status == "id"
        exact = resolve_name(cut, "app.services.load_user")
        assert (exact.status, exact.match and exact.match.ref.id) == ("exact", LOAD_USER)
        for query in ("load_user", "services.load_user", "load_user()"):
            found = resolve_name(cut, query)
            assert (found.status, found.match and found.match.ref.id) == ("suffix", LOAD_USER)
        fuzzy = resolve_name(cut, "LOAD_USER")
        assert (fuzzy.status, fuzzy.match and fuzzy.match.ref.id) == ("fuzzy", LOAD_USER)
        assert resolve_name(cut, "app/views.py").match is not None
        assert resolve_name(cut, "no_such_symbol").status == "not_found"
        # Two methods named validate: the candidates, never one of them picked.
        both = resolve_name(cut, "validate")
        assert both.status == "ambiguous" and both.match is None and both.total == 2
        assert [c.ref.id for c in both.candidates] == [
            "method:app/models.py#Base.validate",
            "method:app/models.py#User.validate",
        ]
        assert [c.range[0] if c.range else None for c in both.candidates] == [5, 15]
        one = resolve_name(cut, "User.validate")
        assert one.match is not None and one.match.ref.id == "method:app/models.py#User.validate"
        # A method of a class that has none by that name is not another class's method.
        assert resolve_name(cut, "Admin.validate").status == "not_found"
        assert resolve_name(cut, "Services.load_user").status == "fuzzy"  # its module, any case
        with pytest.raises(ValidationError):
            resolve_name(cut, "  ")


def test_callers_carry_their_call_sites(db: cairn.Database) -> None:
    answer = calls_of(db, "load_user")
    assert answer.resolution.match is not None
    assert [(edge.caller.id, edge.callee.id) for edge in answer.edges] == [(GET_USER, LOAD_USER)]
    (edge,) = answer.edges
    assert edge.other_name == "app.views.get_user"
    assert [(site.file, site.line) for site in edge.evidence.sites] == [("app/views.py", 12)]
    assert edge.evidence.total == 1
    callees = calls_of(db, "get_user", direction="callees")
    # Ordered by hops, then the other end's qualified name.
    assert [(e.callee.id, [(s.file, s.line) for s in e.evidence.sites]) for e in callees.edges] == [
        (LOAD_USER, [("app/views.py", 12)]),
        ("external:python:flask.jsonify", [("app/views.py", 13)]),
    ]
    ambiguous = calls_of(db, "validate")
    assert ambiguous.edges == () and ambiguous.resolution.status == "ambiguous"


def test_damaged_evidence_is_named(db_path: Path) -> None:
    with sqlite3.connect(db_path) as conn:
        fact_id, occurrence_id = conn.execute(
            "SELECT o.fact_id, o.id FROM occurrences o JOIN facts f"
            " ON f.graph = o.graph AND f.id = o.fact_id"
            " WHERE f.relation = 'calls' AND f.target_id = ?",
            (LOAD_USER,),
        ).fetchone()
        conn.execute(
            "UPDATE occurrences SET parts = replace(parts, '12', '13') WHERE id = ?",
            (occurrence_id,),
        )
    with (
        cairn.open(db_path) as db,
        db.read_cut() as cut,
        pytest.raises(CorruptionError) as caught,
    ):
        read_evidence(cut.conn, "code", [fact_id])
    assert caught.value.details["table"] == "occurrences"
    with pytest.raises(ValidationError, match="evidence limit"):
        read_evidence(sqlite3.connect(":memory:"), "code", [], limit=101)


def test_cli_callers_and_callees(db_path: Path) -> None:
    runner = CliRunner()
    shown = runner.invoke(app, ["callers", "load_user", "--db", str(db_path)])
    assert shown.exit_code == 0, shown.output
    assert "app.views.get_user  app/views.py:12" in shown.output
    data = json.loads(
        runner.invoke(app, ["callers", "load_user", "--db", str(db_path), "--json"]).stdout
    )
    (site,) = data["edges"][0]["evidence"]["sites"]
    assert (site["file"], site["range"][0], site["site_kind"]) == ("app/views.py", 12, "call")
    assert data["edges"][0]["evidence"]["total"] == 1
    assert data["resolution"]["status"] == "suffix"
    ambiguous = runner.invoke(app, ["callers", "validate", "--db", str(db_path)])
    assert ambiguous.exit_code == 0
    assert "ambiguous" in ambiguous.output and "Base.validate" in ambiguous.output
    missing = runner.invoke(app, ["callees", "nope", "--db", str(db_path)])
    assert missing.exit_code == 1 and "no symbol named 'nope'" in missing.output
    # A dotted name whose owner has no such member says what its last part names.
    near = runner.invoke(app, ["callers", "Admin.validate", "--db", str(db_path)])
    assert near.exit_code == 1
    assert (
        "no symbol named 'Admin.validate'; named 'validate': "
        "app.models.Base.validate, app.models.User.validate"
    ) in " ".join(near.output.split())
    only = runner.invoke(app, ["callers", "Admin.load_user", "--db", str(db_path)])
    assert "named 'load_user': app.services.load_user" in " ".join(only.output.split())


@pytest.fixture
def indexed(tmp_path: Path) -> Path:
    """A checkout indexed by ``cairn index``: database and manifest in ``.cairn/``."""
    repo = tmp_path / "checkout"
    shutil.copytree(FIXTURE, repo)
    result = CliRunner().invoke(app, ["index", str(repo), "--workers", "1", "--json"])
    assert result.exit_code == 0, result.output
    return repo


def test_show_returns_the_source_lines_and_flags_a_changed_file(indexed: Path) -> None:
    from cairn.search.show import show

    db_path = indexed / ".cairn" / "cairn.db"
    with cairn.open(db_path) as db:
        answer = show(db, "get_user")
        assert (answer.stale, answer.reason) == (False, None)
        assert answer.source is not None
        assert (answer.source.start, answer.source.end) == (11, 13)
        assert answer.source.lines == (
            "def get_user(user_id):",
            "    user = services.load_user(user_id)",
            "    return jsonify(user.name)",
        )
        short = show(db, "get_user", max_bytes=30)
        assert short.source is not None and short.source.truncated
        assert short.source.lines == ("def get_user(user_id):",)
        views = indexed / "app" / "views.py"
        views.write_text(views.read_text().replace("jsonify(user.name)", "user.name"))
        stale = show(db, "get_user")
        assert (stale.stale, stale.source) == (True, None)
        assert stale.reason == "app/views.py changed since it was indexed"
        views.unlink()
        gone = show(db, "get_user")
        assert (gone.stale, gone.reason) == (True, "app/views.py is gone from the checkout")
        (indexed / ".cairn" / "manifest.json").unlink()
        unknown = show(db, "load_user")
        assert unknown.stale is None and unknown.source is not None
        assert unknown.source.lines[0] == "def load_user(user_id):"
    shown = CliRunner().invoke(app, ["show", "load_user", "--db", str(db_path)])
    assert shown.exit_code == 0, shown.output
    assert "    11  def load_user(user_id):" in shown.output


def test_routes_list_their_handlers_and_registration_lines(db: cairn.Database) -> None:
    from cairn.search.routes import list_routes

    answer = list_routes(db)
    found = {
        route.name: ([h.id for h in route.handlers], [(s.file, s.line) for s in route.sites])
        for route in answer.routes
    }
    assert answer.total == 4
    assert found == {
        "GET /health": (["function:app/__init__.py#create_app.health"], [("app/__init__.py", 13)]),
        "GET /api/users": (["function:app/views.py#users"], [("app/views.py", 16)]),
        "POST /api/users": (["function:app/views.py#users"], [("app/views.py", 16)]),
        "GET /api/users/{user_id}": (["function:app/views.py#get_user"], [("app/views.py", 10)]),
    }


def test_cli_routes(db_path: Path) -> None:
    shown = CliRunner().invoke(app, ["routes", "--db", str(db_path)])
    assert shown.exit_code == 0, shown.output
    assert (
        "GET /api/users/{user_id}  -> function:app/views.py#get_user  app/views.py:10"
        in shown.output
    )


def test_a_name_written_through_a_namespace_folder_is_exact(tmp_path: Path) -> None:
    # OpenTelemetry's layout: src/opentelemetry/ has no __init__.py, so the module is
    # named ``context`` while its users write ``opentelemetry.context.attach``.
    repo = tmp_path / "repo"
    files = {
        "api/src/opentelemetry/context/__init__.py": "def attach(token):\n    return token\n",
        "api/src/opentelemetry/trace/__init__.py": (
            "from opentelemetry.context import attach\n\n\n"
            "def start_span():\n    return attach(1)\n"
        ),
    }
    for relative, text in files.items():
        (repo / relative).parent.mkdir(parents=True, exist_ok=True)
        (repo / relative).write_text(text)
    attach = "function:api/src/opentelemetry/context/__init__.py#attach"
    with cairn.open(tmp_path / "cairn.db") as db:
        from cairn.codegraph import index_repository
        from cairn.store.load import load_semantic_graph

        load_semantic_graph(db, index_repository(repo).graph)
        with db.read_cut() as cut:
            for query in (
                "context.attach",
                "opentelemetry.context.attach",
                "src.opentelemetry.context.attach",
            ):
                found = resolve_name(cut, query)
                assert (found.status, found.match and found.match.ref.id) == ("exact", attach)
            # Folders that are not above it name nothing exactly: a guess stays fuzzy.
            assert resolve_name(cut, "otel.context.attach").status == "fuzzy"
            assert resolve_name(cut, "api.opentelemetry.context.attach").status == "fuzzy"
        callers = calls_of(db, "opentelemetry.context.attach")
    assert callers.resolution.status == "exact"
    assert [(edge.caller.id, edge.callee.id) for edge in callers.edges] == [
        ("function:api/src/opentelemetry/trace/__init__.py#start_span", attach)
    ]
