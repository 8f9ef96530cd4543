"""What breaks if I change Y (issue 19): reverse reachability with a summary, test code
counted apart, and a bounded answer labelled partial instead of an error. Expected
dependents are read by hand from ``tests/fixtures/flask_app`` plus one test file.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from search_helpers import flask_db
from typer.testing import CliRunner

import cairn
from cairn.cli import app
from cairn.codegraph import index_repository
from cairn.errors import BudgetExceededError, ValidationError
from cairn.search.impact import ImpactRequest, impact, is_test_path
from cairn.search.traverse import TraverseRequest, traverse
from cairn.store.commands import EntityRef

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "flask_app"
TEST_FILE = "from app.services import load_user\n\n\ndef test_load():\n    assert load_user(1)\n"


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return flask_db(tmp_path, {"tests/test_services.py": TEST_FILE})


@pytest.fixture
def db(db_path: Path) -> Iterator[cairn.Database]:
    with cairn.open(db_path) as handle:
        yield handle


def test_impact_counts_dependents_by_hop_kind_and_tests(db: cairn.Database) -> None:
    answer = impact(db, ImpactRequest(db.name, "load_user"))
    assert answer.complete and answer.stopped_by is None
    # Hop 1: the two callers (views.get_user, the test) and the one file that imports
    # it by name (the test file's ``from app.services import load_user``; views.py
    # imports the module, ``from . import services``); hop 2: what depends on get_user
    # (its route; the decorator that registers it does not depend on it).
    hop_one = {(d.ref.id, d.test) for d in answer.top if d.hops == 1}
    assert hop_one == {
        ("function:app/views.py#get_user", False),
        ("function:tests/test_services.py#test_load", True),
        ("file:tests/test_services.py", True),
    }
    assert answer.test_dependents == 2
    assert dict(answer.per_hop)[1] == 3
    assert answer.dependents == sum(count for _, count in answer.per_hop)
    assert dict(answer.per_kind)["function"] == 2
    assert dict(answer.per_kind)["file"] == 1
    # get_user and its route live in app/views.py; the test and its file in the test file.
    assert answer.per_file == (("app/views.py", 2), ("tests/test_services.py", 2))
    assert not any(d.ref.id.startswith("external:") for d in answer.top)


def test_a_limit_gives_a_partial_answer_labelled_so(db: cairn.Database) -> None:
    full = impact(db, ImpactRequest(db.name, "load_user"))
    cut = impact(db, ImpactRequest(db.name, "load_user", max_edges=3))
    assert (cut.complete, cut.stopped_by) == (False, "max_edges")
    assert cut.edges_examined <= 3
    truth = {d.ref: d.hops for d in full.top}
    assert cut.dependents < full.dependents
    assert all(truth[d.ref] == d.hops for d in cut.top)  # every hop count is the true one
    few = impact(db, ImpactRequest(db.name, "load_user", max_vertices=2))
    assert (few.complete, few.stopped_by) == (False, "max_vertices")
    assert few.dependents == 1  # the seed counts against the cap, as in traverse
    # The same walk through traverse is strict: past a budget it is an error.
    seed = EntityRef("symbols", "function:app/services.py#load_user")
    strict = TraverseRequest(db.name, "code", (seed,), direction="in", max_depth=3, max_edges=2)
    with pytest.raises(BudgetExceededError):
        traverse(db, strict)


def test_impact_input_is_checked_and_names_are_not_guessed(db: cairn.Database) -> None:
    with pytest.raises(ValidationError):
        impact(db, ImpactRequest(db.name, "load_user", max_depth=17))
    with pytest.raises(ValidationError):
        impact(db, ImpactRequest(db.name, "load_user", relations=()))
    ambiguous = impact(db, ImpactRequest(db.name, "validate"))
    assert ambiguous.resolution.status == "ambiguous" and ambiguous.dependents == 0


def test_test_paths_follow_the_stated_conventions() -> None:
    for path in ("tests/test_a.py", "pkg/tests/a.py", "a/test_b.py", "x_test.go",
                 "src/a.test.ts", "web/__tests__/b.js", "conftest.py"):  # fmt: skip
        assert is_test_path(path), path
    for path in ("app/views.py", "src/contest.py", "testing/util.py", None):
        assert not is_test_path(path), path


def test_cli_impact(db_path: Path) -> None:
    runner = CliRunner()
    shown = runner.invoke(app, ["impact", "load_user", "--db", str(db_path)])
    assert shown.exit_code == 0, shown.output
    assert "(2 in test code); complete" in shown.output
    partial = runner.invoke(app, ["impact", "load_user", "--max-edges", "3", "--db", str(db_path)])
    assert "PARTIAL: stopped by max_edges" in partial.output
    data = json.loads(
        runner.invoke(app, ["impact", "load_user", "--json", "--db", str(db_path)]).stdout
    )
    assert data["complete"] is True and data["test_dependents"] == 2


def test_the_demo_asks_about_the_most_called_symbol(tmp_path: Path) -> None:
    from cairn.demo_repo import most_called

    repo = tmp_path / "demo"
    shutil.copytree(FIXTURE, repo)
    # User() is called in services.load_user and in views.users: two sites, the most.
    assert most_called(index_repository(repo).graph) == "class:app/models.py#User"
    result = CliRunner().invoke(app, ["demo", str(repo), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    callers = data["callers"]
    assert callers["resolution"]["match"]["ref"]["id"] == "class:app/models.py#User"
    sites = sorted(
        (site["file"], site["range"][0])
        for edge in callers["edges"]
        for site in edge["evidence"]["sites"]
    )
    assert sites == [("app/services.py", 12), ("app/views.py", 18)]
    assert data["impact"]["complete"] is True


def test_filters_narrow_impact_and_callers(db: cairn.Database, db_path: Path) -> None:
    from cairn.search.calls import CallsRequest, calls

    full = impact(db, ImpactRequest(db.name, "load_user"))
    no_tests = impact(db, ImpactRequest(db.name, "load_user", exclude_tests=True))
    assert no_tests.test_dependents == 0
    assert no_tests.dependents == full.dependents - full.test_dependents
    assert no_tests.filtered_out == full.test_dependents == 2  # test_load and its file
    routes = impact(db, ImpactRequest(db.name, "load_user", kinds=("route",)))
    assert {d.kind for d in routes.top} == {"route"} and routes.dependents >= 1
    only_tests = impact(db, ImpactRequest(db.name, "load_user", paths=("tests/*",)))
    assert [d.ref.id for d in only_tests.top] == [
        "file:tests/test_services.py",  # its import names load_user
        "function:tests/test_services.py#test_load",
    ]
    callers = calls(db, CallsRequest(db.name, "load_user"))
    assert len(callers.edges) == 2  # views.get_user and the test
    kept_edges = calls(db, CallsRequest(db.name, "load_user", exclude_tests=True))
    assert [e.caller.id for e in kept_edges.edges] == ["function:app/views.py#get_user"]
    with pytest.raises(ValidationError):
        calls(db, CallsRequest(db.name, "load_user", kinds=()))
    shown = CliRunner().invoke(
        app, ["callers", "load_user", "--exclude-tests", "--db", str(db_path)]
    )
    assert shown.exit_code == 0 and "test_load" not in shown.output
    assert "app.views.get_user" in shown.output
