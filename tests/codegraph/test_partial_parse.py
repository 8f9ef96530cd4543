"""A file that does not parse is never silently emptied (issue 20): what lies outside
its broken lines is extracted, marked ``partial_parse``, and named in the manifest and
the summary. Expected symbols and lines are written out by hand from the sources here.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from codegraph_expect import FIXTURES, call_pairs
from typer.testing import CliRunner

from cairn.cli import app
from cairn.codegraph import index_repository, write_index
from cairn.codegraph.cache import CACHE_FILENAME
from cairn.codegraph.recover import MAX_RECOVERY_STEPS

FIXED_TIME = "2024-01-01T00:00:00Z"

GOOD_TOP = "import os\n\n\ndef before():\n    return os.getcwd()\n\n\n"
GOOD_BOTTOM = (
    "\n\nclass After:\n    def method(self):\n        return before()\n"
    "\n\ndef after():\n    return After().method()\n"
)
# Lines 1-7 are GOOD_TOP; the broken part starts at line 8; line numbers of what
# follows are counted from there in each case below.
BROKEN = {
    "unclosed call": "def half():\n    value = compute(1, 2\n",
    "bad signature": "def half(:\n    return 1\n",
    "missing colon": "def half():\n    if value\n        return 1\n",
    "unterminated string": "def half():\n    text = 'never closed\n    return text\n",
    "stray indent": "def half():\n    return 1\n          oops = 2\n",
}


def _module(broken: str) -> str:
    return GOOD_TOP + broken + GOOD_BOTTOM


def _lines(broken: str) -> dict[str, int]:
    """Where the good symbols start, counted by hand: GOOD_TOP's ``before`` is line 4;
    after the broken part come two blank lines, ``After``, ``method`` (its body one
    line), two blank lines and ``after``."""
    start = 8 + broken.count("\n")
    return {"before": 4, "After": start + 2, "After.method": start + 3, "after": start + 7}


def _repo(tmp_path: Path, source: str) -> Path:
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "__init__.py").write_text("")
    (repo / "pkg" / "mod.py").write_text(source)
    (repo / "pkg" / "user.py").write_text(
        "from pkg.mod import after\n\n\ndef use():\n    return after()\n"
    )
    return repo


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_symbols_outside_the_broken_lines_survive_with_their_own_ranges(
    tmp_path: Path, case: str
) -> None:
    result = index_repository(_repo(tmp_path, _module(BROKEN[case])))
    graph = result.graph
    row = next(r for r in result.manifest.entries if r.path == "pkg/mod.py")
    kind = "IndentationError" if case == "stray indent" else "SyntaxError"
    assert row.outcome == f"partial:{kind}", row
    assert row.error is not None and row.error.startswith("line ")
    ids = {
        "before": "function:pkg/mod.py#before",
        "After": "class:pkg/mod.py#After",
        "After.method": "method:pkg/mod.py#After.method",
        "after": "function:pkg/mod.py#after",
    }
    for name, line in _lines(BROKEN[case]).items():
        node = graph.node(ids[name])
        assert node.attributes["range"][0] == line, (case, name)
        assert node.attributes["partial_parse"] is True
    file_node = graph.node("file:pkg/mod.py")
    partial = file_node.attributes["partial_parse"]
    assert partial["error"].startswith(f"{kind}: ")
    assert 8 <= partial["line"] <= 8 + BROKEN[case].count("\n")
    # The edge from another file into the broken file's symbols is kept.
    calls = call_pairs(graph)
    assert ("function:pkg/user.py#use", ids["after"]) in calls
    # A clean file's nodes carry no mark.
    assert "partial_parse" not in graph.node("function:pkg/user.py#use").attributes


def test_a_file_beyond_recovery_fails_and_says_why(tmp_path: Path) -> None:
    hopeless = "".join(f"x{i} = = {i}\n" for i in range(MAX_RECOVERY_STEPS + 6))
    result = index_repository(_repo(tmp_path, hopeless))
    row = next(r for r in result.manifest.entries if r.path == "pkg/mod.py")
    assert row.outcome == "failed:SyntaxError"
    assert row.error == "line 1: SyntaxError: invalid syntax"
    assert not result.graph.has_node("function:pkg/mod.py#after")


def test_breaking_and_fixing_a_file_matches_a_clean_build_with_the_cache(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURES / "flask_app", repo)
    cache = tmp_path / CACHE_FILENAME
    target = repo / "app" / "views.py"
    original = target.read_text()
    lines = original.splitlines(keepends=True)
    middle = len(lines) // 2
    broken = "".join([*lines[:middle], "def typing_in_progress(:\n", *lines[middle:]])
    for step, text in enumerate((original, broken, original)):
        target.write_text(text)
        cached = index_repository(repo, cache=cache)
        clean = index_repository(repo)
        ours = write_index(cached, tmp_path / f"cached{step}", generated_at=FIXED_TIME)
        theirs = write_index(clean, tmp_path / f"clean{step}", generated_at=FIXED_TIME)
        assert ours.graph_path.read_bytes() == theirs.graph_path.read_bytes(), step
        assert ours.manifest_path.read_bytes() == theirs.manifest_path.read_bytes(), step
        outcome = next(r.outcome for r in cached.manifest.entries if r.path == "app/views.py")
        assert outcome == ("partial:SyntaxError" if text == broken else "indexed")


def test_cli_summary_names_every_file_not_fully_indexed(tmp_path: Path) -> None:
    repo = _repo(tmp_path, _module(BROKEN["unclosed call"]))
    result = CliRunner().invoke(app, ["index", str(repo), "--workers", "1", "--no-load"])
    assert result.exit_code == 0, result.output
    assert "Files not fully indexed" in result.output
    assert "pkg/mod.py" in result.output
    assert "partial:SyntaxError" in result.output


@pytest.mark.parametrize(
    ("name", "source", "kept", "line"),
    [
        (
            "lib.ts",
            "export function first(): number {\n  return 1;\n}\n\n"
            "export function broken(: number {\n  return 2;\n}\n\n"
            "export function last(): number {\n  return first();\n}\n",
            ("function:lib.ts#first", "function:lib.ts#last"),
            5,
        ),
        (
            "main.go",
            "package main\n\nfunc first() int {\n\treturn 1\n}\n\n"
            "func broken( int {\n\treturn 2\n}\n\n"
            "func last() int {\n\treturn first()\n}\n",
            ("function:main.go#first", "function:main.go#last"),
            7,
        ),
    ],
)
def test_tree_sitter_files_with_errors_are_marked_partial(
    tmp_path: Path, name: str, source: str, kept: tuple[str, ...], line: int
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / name).write_text(source)
    result = index_repository(repo)
    row = next(r for r in result.manifest.entries if r.path == name)
    assert row.outcome == "partial:SyntaxError", row
    assert row.error is not None and row.error.startswith("line ")
    for node_id in kept:
        assert result.graph.node(node_id).attributes["partial_parse"] is True
    partial = result.graph.node(f"file:{name}").attributes["partial_parse"]
    assert partial["error"].startswith("SyntaxError: ")
    assert line - 1 <= partial["line"] <= line + 2


def test_the_database_says_which_symbols_come_from_a_file_parsed_in_part(tmp_path: Path) -> None:
    """What search, show and MCP read (cairn.db documents) carries the mark too; fixing
    the file takes it away (an incremental load)."""
    import json
    import sqlite3
    from contextlib import closing

    repo = _repo(tmp_path, _module(BROKEN["bad signature"]))
    database = repo / ".cairn" / "cairn.db"

    def bodies() -> dict[str, dict[str, object]]:
        with closing(sqlite3.connect(database)) as conn:
            rows = conn.execute(
                "SELECT id, body FROM documents WHERE deleted = 0 AND id LIKE '%pkg/%'"
            ).fetchall()
        return {doc_id: json.loads(body) for doc_id, body in rows}

    args = ["index", str(repo), "--workers", "1", "--generated-at", FIXED_TIME]
    assert CliRunner().invoke(app, args).exit_code == 0
    found = bodies()
    assert found["function:pkg/mod.py#after"]["partial_parse"] is True
    assert found["method:pkg/mod.py#After.method"]["partial_parse"] is True
    partial = found["file:pkg/mod.py"]["partial_parse"]
    assert isinstance(partial, dict) and partial["line"] == 8
    assert "partial_parse" not in found["function:pkg/user.py#use"]
    shown = CliRunner().invoke(
        app, ["show", "pkg.mod.after", "--db", str(database), "--root", str(repo)]
    )
    assert shown.exit_code == 0, shown.output
    assert "parsed in part" in shown.output
    shown = CliRunner().invoke(
        app, ["show", "file:pkg/mod.py", "--db", str(database), "--root", str(repo)]
    )
    assert "parsed in part: line 8: SyntaxError" in shown.output, shown.output
    assert "pkg/mod.py:None" not in shown.output
    (repo / "pkg" / "mod.py").write_text(_module(BROKEN["bad signature"].replace("(:", "():")))
    assert CliRunner().invoke(app, args).exit_code == 0
    assert all("partial_parse" not in body for body in bodies().values())


@pytest.mark.parametrize("also_broken", [False, True])
def test_a_stray_byte_that_is_not_utf8_keeps_the_rest_of_the_file(
    tmp_path: Path, also_broken: bool
) -> None:
    """A UTF-8 file with one Latin-1 byte (``caf\\xe9`` in a string on line 9), which
    Python refuses whole: the byte is read as U+FFFD and every symbol is kept, with its
    own range (and, with a syntax error below it too, what lies outside that). Before,
    the file failed (``failed:SyntaxError``) and lost every symbol and edge."""
    broken = b'def half():\n    return "caf\xe9"\n'
    if also_broken:
        broken += b"def worse(:\n    return 1\n"
    repo = _repo(tmp_path, "")
    (repo / "pkg" / "mod.py").write_bytes(GOOD_TOP.encode() + broken + GOOD_BOTTOM.encode())
    result = index_repository(repo)
    row = next(r for r in result.manifest.entries if r.path == "pkg/mod.py")
    assert row.outcome == "partial:SyntaxError", row
    assert row.error is not None
    assert row.error.startswith("line 9: SyntaxError: (unicode error) 'utf-8' codec")
    graph = result.graph
    start = 8 + broken.count(b"\n")
    expected = {
        "function:pkg/mod.py#before": 4,
        "function:pkg/mod.py#half": 8,
        "class:pkg/mod.py#After": start + 2,
        "method:pkg/mod.py#After.method": start + 3,
        "function:pkg/mod.py#after": start + 7,
    }
    for node_id, line in expected.items():
        node = graph.node(node_id)
        assert node.attributes["range"][0] == line, node_id
        assert node.attributes["partial_parse"] is True
    assert graph.node("file:pkg/mod.py").attributes["partial_parse"]["line"] == 9
    calls = call_pairs(graph)
    assert ("function:pkg/user.py#use", "function:pkg/mod.py#after") in calls
