"""``find_database`` (like git) and ``cairn load FILE --db PATH [--json]``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_store_load import build
from typer.testing import CliRunner

import cairn.store as store
from cairn.artifact import write_artifact
from cairn.cli import app
from cairn.errors import NotFoundError
from cairn.store.locate import database_path, find_database, resolve_database

runner = CliRunner()


def test_find_database_walks_up_like_git(tmp_path: Path) -> None:
    nested = tmp_path / "a" / "b"
    nested.mkdir(parents=True)
    with pytest.raises(NotFoundError, match="--db"):
        find_database(nested)
    database_path(tmp_path).parent.mkdir()
    store.open(database_path(tmp_path)).close()
    assert find_database(nested) == database_path(tmp_path).resolve()
    assert resolve_database("other.db") == Path("other.db")


def _artifact(root: Path, **kwargs: bool) -> Path:
    path = root / ".cairn" / "graph.cairn"
    path.parent.mkdir(exist_ok=True)
    write_artifact(path, build(**kwargs), generated_at="2024-01-01T00:00:00Z")
    return path


def test_load_creates_the_database_next_to_the_artifact_and_is_idempotent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    artifact = _artifact(tmp_path)
    monkeypatch.chdir(tmp_path)
    first = runner.invoke(app, ["load", str(artifact), "--json"])
    assert first.exit_code == 0, first.output
    summary = json.loads(first.output)
    assert summary["position"] == 1
    assert summary["mutations"]["put_document"] == 6
    assert Path(summary["db"]) == (tmp_path / ".cairn" / "cairn.db").resolve()
    assert summary["up_to_date"] is False
    again = json.loads(runner.invoke(app, ["load", str(artifact), "--json"]).output)
    # The stored receipt, nothing re-applied, and said as such (issue 20): the same
    # command, no changes, the position unmoved.
    assert again == {**summary, "changes": 0, "up_to_date": True, "mutations": {}}
    readable_again = runner.invoke(app, ["load", str(artifact)])
    assert "Up to date" in readable_again.output
    _artifact(tmp_path, extra=True)
    edited = json.loads(runner.invoke(app, ["load", str(artifact), "--json"]).output)
    assert edited["position"] == 2
    assert edited["mutations"] == {"put_document": 1, "put_fact": 1, "put_vector": 1}
    readable = runner.invoke(app, ["load", str(artifact)])
    assert readable.exit_code == 0
    assert "position 2" in readable.output


def test_load_with_an_explicit_db_and_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    artifact = _artifact(tmp_path)
    target = tmp_path / "elsewhere.db"
    done = runner.invoke(app, ["load", str(artifact), "--db", str(target), "--json"])
    assert done.exit_code == 0, done.output
    with store.open(target) as db:
        assert db.position == 1
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "graph.cairn").write_bytes((artifact).read_bytes())
    monkeypatch.chdir(outside)
    missing = runner.invoke(app, ["load", str(outside / "graph.cairn")])
    assert missing.exit_code == 1
    broken = tmp_path / "broken.cairn"
    broken.write_text("not an artifact")
    bad = runner.invoke(app, ["load", str(broken), "--db", str(target)])
    assert bad.exit_code == 1
