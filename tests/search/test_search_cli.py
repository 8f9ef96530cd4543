"""`cairn search` and `cairn sql` on a real database file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from search_helpers import open_db, put_docs, put_edges, ref
from typer.testing import CliRunner

from cairn.cli import app


@pytest.fixture
def db_file(tmp_path: Path) -> Path:
    db = open_db(tmp_path, collections=("symbols", "files"))
    put_docs(db, "files", {"file:app.py": "app"})
    put_docs(
        db,
        "symbols",
        {"f": "load user name", "g": "save user", "h": "unrelated"},
        extra={"f": {"name": "load_user"}, "g": {"name": "save_user"}},
    )
    put_edges(
        db,
        [
            (ref("files", "file:app.py"), ref("symbols", "f"), "contains"),
            (ref("symbols", "f"), ref("symbols", "g"), "calls"),
        ],
    )
    path = tmp_path / "cairn.db"
    db.close()
    return path


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def test_text_search_json(db_file: Path) -> None:
    code, out = invoke("search", "user", "--db", str(db_file), "--json")
    assert code == 0, out
    hits = json.loads(out)["hits"]
    assert [h["document"]["ref"]["id"] for h in hits] == ["g", "f"]


def test_seeded_search_with_expansion_and_explain(db_file: Path) -> None:
    code, out = invoke(
        "search",
        "user",
        "--seed",
        "files:file:app.py",
        "--expand",
        "1",
        "--explain",
        "--db",
        str(db_file),
        "--json",
    )
    assert code == 0, out
    result = json.loads(out)
    assert result["type"] == "cairn.contract.graph-search-result.v1"
    first = result["hits"][0]
    assert first["document"]["ref"]["id"] == "f"  # text rank 2 plus graph rank 1
    assert first["explanation"]["hops"] == 1
    assert first["explanation"]["path"] == [
        {"collection": "files", "id": "file:app.py"},
        {"collection": "symbols", "id": "f"},
    ]


def test_scope_seed_and_labels(db_file: Path) -> None:
    code, out = invoke(
        "search",
        "user",
        "--scope-seed",
        "files:file:app.py",
        "--labels",
        "contains",
        "--db",
        str(db_file),
        "--json",
    )
    assert code == 0, out
    assert [h["document"]["ref"]["id"] for h in json.loads(out)["hits"]] == ["f"]


def test_human_output_is_a_table(db_file: Path) -> None:
    code, out = invoke(
        "search", "user", "--seed", "files:file:app.py", "--explain", "--db", str(db_file)
    )
    assert code == 0, out
    assert "load_user" in out and "graph#1" in out


def test_a_narrow_terminal_gets_each_hit_as_a_block_with_whole_ids(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # IDs and paths longer than a column of an 80-column table: folded into it, they
    # broke across lines; each now stands whole on a line of its own.
    long_id = "method:src/cairn/codegraph/somewhere/deep/inside/slots.py#JobSlots.remove"
    db = open_db(tmp_path, collections=("symbols",))
    put_docs(
        db,
        "symbols",
        {long_id: "remove the job slots"},
        extra={
            long_id: {
                "name": "remove",
                "qualified_name": "cairn.codegraph.somewhere.deep.inside.slots.JobSlots.remove",
                "path": "src/cairn/codegraph/somewhere/deep/inside/slots.py",
                "range": [56, 1, 63, 1],
            }
        },
    )
    db.close()
    monkeypatch.setenv("COLUMNS", "80")
    code, out = invoke("search", "slots", "--db", str(tmp_path / "cairn.db"))
    assert code == 0, out
    lines = out.splitlines()
    assert any(line.split() == ["id", long_id] for line in lines), out
    assert any(
        line.split() == ["where", "src/cairn/codegraph/somewhere/deep/inside/slots.py:56"]
        for line in lines
    ), out
    first = lines[lines.index("Search 'symbols'") + 1].split()
    assert first[0] == "1"
    assert first[2] == "cairn.codegraph.somewhere.deep.inside.slots.JobSlots.remove"
    assert "┃" not in out
    monkeypatch.setenv("COLUMNS", "240")
    code, wide = invoke("search", "slots", "--db", str(tmp_path / "cairn.db"))
    assert code == 0 and "┃" in wide and long_id in wide  # wide enough: the table


def test_sql_command(db_file: Path) -> None:
    statement = (
        'SEARCH FROM symbols TEXT "/text" MATCH @q '
        "RETRIEVE GRAPH code SEEDS ((files, 'file:app.py')) DEPTH 2 VERTICES 10 EDGES 10"
    )
    code, out = invoke("sql", statement, "--param", 'q="user"', "--db", str(db_file), "--json")
    assert code == 0, out
    assert [h["document"]["ref"]["id"] for h in json.loads(out)["hits"]] == ["f", "g"]


def test_errors_are_reported_with_their_code(db_file: Path) -> None:
    code, out = invoke("sql", "SEARCH FROM symbols LIMIT x", "--db", str(db_file))
    assert code == 1
    assert "[validation]" in out and "line 1, column 27" in out
    code, out = invoke("search", "user", "--seed", "files:ghost", "--db", str(db_file))
    assert code == 1 and "[not_found]" in out
    code, out = invoke("search", "user", "--seed", "no-colon", "--db", str(db_file))
    assert code == 2
    code, out = invoke("sql", "SEARCH", "--param", "q=not-json", "--db", str(db_file))
    assert code == 2


def test_missing_database_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, out = invoke("search", "user")
    assert code == 1 and "[not_found]" in out
