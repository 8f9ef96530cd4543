"""Determinism and movement: same repository -> same bytes; moving code moves only evidence."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from codegraph_expect import FIXTURES, canonical_content
from typer.testing import CliRunner

import cairn.codegraph.build as build
from cairn.cli import app
from cairn.codegraph import index_repository, write_index

FIXED_TIME = "2024-01-01T00:00:00Z"
SCRIPT = (
    "import sys\n"
    "import cairn.codegraph.build as build\n"
    "from cairn.codegraph import index_repository, write_index\n"
    "build.IN_PROCESS_MAX_BYTES = 0  # the fixtures are small: through workers all the same\n"
    "result = index_repository(sys.argv[1], workers=int(sys.argv[3]))\n"
    "write_index(result, sys.argv[2], generated_at='" + FIXED_TIME + "')\n"
)


@pytest.fixture(autouse=True)
def _through_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fixtures are small enough to be parsed in this process: send them to workers."""
    monkeypatch.setattr(build, "IN_PROCESS_MAX_BYTES", 0)


def test_worker_count_does_not_change_the_graph_or_the_artifact(tmp_path: Path) -> None:
    one = index_repository(FIXTURES, workers=1)
    two = index_repository(FIXTURES, workers=2)
    assert canonical_content(one.graph) == canonical_content(two.graph)
    first = write_index(one, tmp_path / "one", generated_at=FIXED_TIME)
    second = write_index(two, tmp_path / "two", generated_at=FIXED_TIME)
    assert first.graph_path.read_bytes() == second.graph_path.read_bytes()
    assert first.manifest_path.read_bytes() == second.manifest_path.read_bytes()


def test_hash_seed_does_not_change_the_artifact(tmp_path: Path) -> None:
    outputs = []
    for seed, workers in (("0", "1"), ("4242", "2")):
        out = tmp_path / f"seed{seed}"
        env = {**os.environ, "PYTHONHASHSEED": seed}
        subprocess.run(
            [sys.executable, "-c", SCRIPT, str(FIXTURES), str(out), workers],
            check=True,
            env=env,
            timeout=120,
        )
        outputs.append(((out / "graph.cairn").read_bytes(), (out / "manifest.json").read_bytes()))
    assert outputs[0] == outputs[1]


def test_cli_writes_identical_bytes_for_one_and_two_workers(tmp_path: Path) -> None:
    runner = CliRunner()
    blobs = []
    for workers in ("1", "2"):
        out = tmp_path / f"w{workers}"
        args = ["index", str(FIXTURES), "--out", str(out), "--workers", workers]
        args += ["--generated-at", FIXED_TIME, "--json"]
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        blobs.append((out / "graph.cairn").read_bytes())
    assert blobs[0] == blobs[1]
    assert blobs[0].startswith(b"CAIRN_GRAPH_ARTIFACT/2\n")


def test_cli_prints_a_readable_summary(tmp_path: Path) -> None:
    runner = CliRunner()
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURES / "flask_app", repo)
    result = runner.invoke(app, ["index", str(repo), "--workers", "1"])
    assert result.exit_code == 0, result.output
    assert "Facts by relation" in result.output
    assert "handles_route" in result.output
    assert (repo / ".cairn" / "graph.cairn").is_file()
    assert (repo / ".cairn" / "manifest.json").is_file()


def test_cli_reports_bad_input_as_a_typed_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["index", str(tmp_path / "absent")])
    assert result.exit_code == 1


def test_moving_a_function_changes_only_occurrence_ids(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURES / "flask_app", repo)
    before = index_repository(repo).graph
    services = repo / "app" / "services.py"
    text = services.read_text("utf-8")
    moved = text.replace("MAX_USERS = 100\n", "MAX_USERS = 100\n\n# a comment\n\n\n")
    assert moved != text
    services.write_text(moved, "utf-8")
    after = index_repository(repo).graph
    assert before.node_ids() == after.node_ids()
    assert [f.id for f in before.facts()] == [f.id for f in after.facts()]
    moved_ids = {o.id for o in before.occurrences()} - {o.id for o in after.occurrences()}
    assert moved_ids, "evidence below the edit must move"
    for occurrence_id in moved_ids:
        occurrence = before.occurrence(occurrence_id)
        assert occurrence.source_file == "app/services.py"
        assert occurrence.source_range is not None
        assert occurrence.source_range.start_line > 8
    unchanged = [o for o in before.occurrences() if o.source_file != "app/services.py"]
    assert {o.id for o in unchanged} <= {o.id for o in after.occurrences()}
    load_user = after.node("function:app/services.py#load_user")
    assert load_user.attributes["range"][0] == before.node(load_user.id).attributes["range"][0] + 4


def test_a_few_small_files_are_parsed_here_whatever_the_worker_count(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Starting workers costs more than parsing a few hundred KiB in this process: files
    that add up to no more than ``IN_PROCESS_MAX_BYTES`` start no pool, more do, and
    the graph is the same either way."""
    started: list[int] = []
    pool = build.ProcessPoolExecutor

    def counting(*args: object, **kwargs: object) -> object:
        started.append(1)
        return pool(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(build, "ProcessPoolExecutor", counting)
    size = sum(path.stat().st_size for path in FIXTURES.rglob("*") if path.is_file())
    monkeypatch.setattr(build, "IN_PROCESS_MAX_BYTES", size)  # every file together is less
    here = index_repository(FIXTURES, workers=2)
    assert started == []
    monkeypatch.setattr(build, "IN_PROCESS_MAX_BYTES", 0)
    pooled = index_repository(FIXTURES, workers=2)
    assert started == [1]
    assert canonical_content(here.graph) == canonical_content(pooled.graph)
