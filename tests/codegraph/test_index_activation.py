"""``write_index`` activates its output folder: a v1 graph.json there is moved safely."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import networkx as nx
import pytest

from cairn.artifact.folder import FolderState, folder_status
from cairn.artifact.reader import read_artifact
from cairn.codegraph import index_repository, write_index
from cairn.errors import ArtifactError, ArtifactMovedError

TOMBSTONE_START = b"CAIRN_GRAPH_MOVED/2\n"


def repository(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "app.py").write_text("def helper():\n    return 1\n\n\ndef main():\n    helper()\n")
    return root


def v1_bytes() -> bytes:
    graph = nx.DiGraph()
    graph.add_edge("a", "b", relation="calls")
    return json.dumps(nx.node_link_data(graph, edges="links")).encode()


def test_a_v1_graph_json_is_preserved_and_tombstoned(tmp_path: Path) -> None:
    root = repository(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    original = v1_bytes()
    (out / "graph.json").write_bytes(original)
    written = write_index(index_repository(root), out, generated_at="2026-01-01T00:00:00Z")
    assert (out / "graph.v1.json").read_bytes() == original
    assert (out / "graph.json").read_bytes().startswith(TOMBSTONE_START)
    assert folder_status(out).state is FolderState.CURRENT_V2
    assert written.graph_path == out / "graph.cairn"
    assert written.graph_bytes == (out / "graph.cairn").stat().st_size
    assert any(
        node.id.endswith("main") for node in read_artifact(out / "graph.cairn").graph.nodes()
    )
    with pytest.raises(ArtifactMovedError):
        read_artifact(out / "graph.json")


def test_a_fresh_folder_gets_the_artifact_and_no_tombstone(tmp_path: Path) -> None:
    root = repository(tmp_path)
    written = write_index(index_repository(root), generated_at="2026-01-01T00:00:00Z")
    folder = root / ".cairn"
    assert written.graph_path == folder / "graph.cairn"
    assert sorted(path.name for path in folder.iterdir()) == [
        ".gitignore",
        "graph.cairn",
        "manifest.json",
    ]
    assert (folder / ".gitignore").read_text().splitlines()[-1] == "*"


def test_git_ignores_the_index_folder_but_a_users_gitignore_is_kept(tmp_path: Path) -> None:
    root = repository(tmp_path)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    write_index(index_repository(root), generated_at="2026-01-01T00:00:00Z")
    listed = subprocess.run(
        ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=all"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    assert ".cairn" not in listed and listed.strip()  # the sources show, the index does not
    (root / ".cairn" / ".gitignore").write_text("graph.cairn\n")
    write_index(index_repository(root), generated_at="2026-01-01T00:00:00Z")
    assert (root / ".cairn" / ".gitignore").read_text() == "graph.cairn\n"
    other = tmp_path / "elsewhere"
    write_index(index_repository(root), other, generated_at="2026-01-01T00:00:00Z")
    assert not (other / ".gitignore").exists()


def test_a_full_disk_while_writing_the_gitignore_is_storage_full_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno
    import io

    from cairn.errors import StorageFullError

    root = repository(tmp_path)
    real_open = Path.open

    class FullDisk(io.BytesIO):
        def write(self, data: object) -> int:
            raise OSError(errno.ENOSPC, "No space left on device")

    def full_open(self: Path, mode: str = "r", *args: object, **kwargs: object) -> object:
        handle = real_open(self, mode, *args, **kwargs)  # type: ignore[call-overload]
        if self.name == ".gitignore" and "x" in mode:
            handle.close()  # the file now exists, empty: as a real ENOSPC leaves it
            return FullDisk()
        return handle

    monkeypatch.setattr(Path, "open", full_open)
    with pytest.raises(StorageFullError) as caught:
        write_index(index_repository(root), generated_at="2026-01-01T00:00:00Z")
    assert caught.value.code == "storage_full" and caught.value.details["errno"] == "ENOSPC"
    assert not (root / ".cairn" / ".gitignore").exists()  # not kept, half-written, forever


def test_a_foreign_graph_json_stops_the_write_before_anything_is_written(
    tmp_path: Path,
) -> None:
    root = repository(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "graph.json").write_bytes(b"not a graph at all")
    with pytest.raises(ArtifactError):
        write_index(index_repository(root), out, generated_at="2026-01-01T00:00:00Z")
    assert (out / "graph.json").read_bytes() == b"not a graph at all"
    assert sorted(p.name for p in out.iterdir()) == ["graph.json"]


def test_indexing_reports_its_phases_and_every_file(tmp_path: Path) -> None:
    from cairn.codegraph.build import INDEX_PHASES

    assert INDEX_PHASES == ("scanning", "extracting", "resolving python", "resolving")
    root = repository(tmp_path)
    (root / "more.py").write_text("from app import helper\n")
    phases: list[str] = []
    files: list[tuple[int, int]] = []
    index_repository(
        root, progress=lambda done, total: files.append((done, total)), phase=phases.append
    )
    assert phases == list(INDEX_PHASES)
    assert files == [(1, 2), (2, 2)]


def test_the_json_summary_times_every_phase_in_order(tmp_path: Path) -> None:
    """``phase_seconds``: each phase of the whole run (index, artifact, summary, each
    load step), in the order they ran, none negative, together within the run's wall."""
    import time

    from typer.testing import CliRunner

    from cairn.cli import app

    root = repository(tmp_path)
    started = time.perf_counter()
    done = CliRunner().invoke(app, ["index", str(root), "--workers", "1", "--json"])
    wall = time.perf_counter() - started
    assert done.exit_code == 0, done.output
    spent = json.loads(done.stdout)["phase_seconds"]
    assert list(spent) == [
        "scanning",
        "extracting",
        "resolving python",
        "resolving",
        "writing graph.cairn",
        "loading: opening",
        "loading: encoding",
        "loading: diffing",
        "loading: documents",
        "loading: facts",
        "loading: committing",
        "summarising",  # after the load: the change is searchable first
    ]
    assert all(value >= 0 for value in spent.values())
    assert sum(spent.values()) <= wall + 0.001 * len(spent)  # each rounded to the ms


def test_a_remembering_round_loads_then_writes_graph_cairn(tmp_path: Path) -> None:
    """``cairn watch`` rounds load the database first (the edit is searchable sooner),
    then write graph.cairn in this process from the segments they hold: the same
    artifact and manifest bytes as a one-shot index of the same tree."""
    from rich.console import Console

    from cairn.codegraph.console import index_once

    root = repository(tmp_path)
    quiet = Console(quiet=True)
    fixed = "2026-01-01T00:00:00Z"
    watched, plain = tmp_path / "watched", tmp_path / "plain"
    index_once(root, console=quiet, out=watched, workers=1, generated_at=fixed, remember=True)
    (root / "app.py").write_text((root / "app.py").read_text() + "\n\ndef later():\n    main()\n")
    summary, _ = index_once(
        root, console=quiet, out=watched, workers=1, generated_at=fixed, remember=True
    )
    index_once(root, console=quiet, out=plain, workers=1, generated_at=fixed)
    for name in ("graph.cairn", "manifest.json"):
        assert (watched / name).read_bytes() == (plain / name).read_bytes(), name
    assert summary["graph_path"] == str(watched / "graph.cairn")
    assert summary["graph_bytes"] == (watched / "graph.cairn").stat().st_size
    assert summary["load"]["changes"] > 0
    phases = list(summary["phase_seconds"])
    assert phases.index("loading: committing") < phases.index("writing graph.cairn")
    assert phases.index("writing graph.cairn") < phases.index("summarising")
    # Searchable once the load committed, before the artifact was written.
    spent = summary["phase_seconds"]
    before_write = sum(spent[name] for name in phases[: phases.index("writing graph.cairn")])
    assert before_write - 0.01 <= summary["searchable_seconds"]
    assert summary["searchable_seconds"] <= before_write + spent["writing graph.cairn"] / 2 + 0.05


def _file_alone_position(db_path: Path, tmp_path: Path) -> int:
    """The position ``db_path`` holds without its write-ahead log."""
    import shutil
    import sqlite3
    from contextlib import closing

    alone = tmp_path / "alone.db"
    alone.unlink(missing_ok=True)
    shutil.copyfile(db_path, alone)
    with closing(sqlite3.connect(alone)) as conn:
        return int(conn.execute("SELECT value FROM meta WHERE key = 'position'").fetchone()[0])


def test_remembering_rounds_keep_the_database_open_and_open_a_new_file_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``cairn watch`` rounds load through one handle kept open (no checkpoint at each
    close: ``checkpoint_held`` copies the log while idle); a round after the index was
    removed builds a new database, and the next one opens that file, not the old."""
    import shutil
    import sqlite3
    from contextlib import closing

    from rich.console import Console

    import cairn.store as store_module
    from cairn.codegraph.console import checkpoint_held, index_once, release_held
    from cairn.store.locate import DATABASE_FILE

    opened: list[Path] = []
    real_open = store_module.open

    def counting(path, **kwargs):  # type: ignore[no-untyped-def]
        opened.append(Path(path))
        return real_open(path, **kwargs)

    monkeypatch.setattr(store_module, "open", counting)
    root = repository(tmp_path)
    app = root / "app.py"
    quiet = Console(quiet=True)
    out = tmp_path / "watched"
    database = out / DATABASE_FILE

    def edit_and_round(step: int) -> dict[str, Any]:
        app.write_text(app.read_text() + f"\n\ndef later_{step}():\n    main()\n")
        summary, _ = index_once(root, console=quiet, out=out, workers=1, remember=True)
        return summary

    try:
        index_once(root, console=quiet, out=out, workers=1, remember=True)  # built aside
        assert opened == []
        first = edit_and_round(1)["load"]["position"]
        second = edit_and_round(2)["load"]["position"]
        assert second > first
        assert opened == [database]  # one handle for both rounds
        # Not closed: the last commit is in the log, not yet in the file.
        assert _file_alone_position(database, tmp_path) < second
        checkpoint_held()
        assert _file_alone_position(database, tmp_path) == second
        shutil.rmtree(out)  # the index removed while the handle is held
        edit_and_round(3)  # a new database, built aside
        assert opened == [database]
        summary = edit_and_round(4)
        assert opened == [database, database]  # the new file, opened again
        with store_module.open(database) as db:
            assert db.position == summary["load"]["position"]
        with closing(sqlite3.connect(database)) as conn:
            ids = conn.execute(
                "SELECT id FROM documents WHERE collection = 'symbols' AND deleted = 0"
            ).fetchall()
        names = {row[0].rsplit("#", 1)[-1] for row in ids}
        assert {"later_3", "later_4"} <= names
    finally:
        release_held()


def test_watch_rounds_write_graph_cairn_from_the_segments_earlier_rounds_printed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From the second round on, a round joins segments printed by earlier rounds:
    every round's graph.cairn still has a one-shot index's bytes, and a round prints
    again only segments holding a record it changed."""
    import shutil

    from codegraph_expect import FIXTURES
    from rich.console import Console

    import cairn.codegraph.console as console_module
    from cairn.artifact import segments
    from cairn.codegraph.console import index_once

    monkeypatch.setattr(segments, "SEGMENT_RECORDS", 4)  # many segments in a small tree
    printing = segments._printed
    counted: list[int] = []

    def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        counted[-1] += 1
        return printing(*args, **kwargs)

    monkeypatch.setattr(segments, "_printed", counting)
    root = tmp_path / "repo"
    shutil.copytree(FIXTURES / "flask_app", root)
    # A module no edit reaches: its records stay the very objects round after round.
    tools = "".join(f"def tool_{n}(value):\n    return value + {n}\n\n\n" for n in range(240))
    (root / "tools.py").write_text(tools)
    views = root / "app" / "views.py"
    quiet = Console(quiet=True)
    fixed = "2026-01-01T00:00:00Z"
    watched = tmp_path / "watched"
    printed_per_round: list[int] = []
    totals: list[int] = []  # segments held after each round
    for step in range(4):
        if step:
            views.write_text(views.read_text() + f"\n\ndef later_{step}():\n    return {step}\n")
        counted.append(0)
        _, result = index_once(
            root, console=quiet, out=watched, workers=1, generated_at=fixed, remember=True
        )
        printed_per_round.append(counted[-1])
        held = console_module._KEPT[watched.resolve()].printed._held.values()
        totals.append(sum(len(section.segments) for section in held))
        plain = tmp_path / f"plain{step}"
        index_once(root, console=quiet, out=plain, workers=1, generated_at=fixed)
        for name in ("graph.cairn", "manifest.json"):
            assert (watched / name).read_bytes() == (plain / name).read_bytes(), (step, name)
    assert printed_per_round[0] == totals[0]  # the first round prints every segment
    later = zip(printed_per_round[1:], totals[1:], strict=True)
    assert all(0 < count < total / 3 for count, total in later), (printed_per_round, totals)
    printed = console_module._KEPT[watched.resolve()].printed
    # What the last round printed is held: the same graph prints nothing again.
    monkeypatch.setattr(segments, "_printed", lambda *_: pytest.fail("printed again"))
    printed.update(result.graph)


def test_an_artifact_error_in_a_remembering_round_is_raised_as_itself(tmp_path: Path) -> None:
    from rich.console import Console

    import cairn.codegraph.console as console_module
    from cairn.codegraph.console import index_once

    root = repository(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "graph.json").write_bytes(b"not a graph at all")
    with pytest.raises(ArtifactError, match=r"graph\.json"):
        index_once(root, console=Console(quiet=True), out=out, workers=1, remember=True)
    assert (out / "graph.json").read_bytes() == b"not a graph at all"
    assert not (out / "graph.cairn").exists()
    assert not (out / "cairn.db").exists()  # refused before the load, which comes first
    assert out.resolve() not in console_module._KEPT  # refused before anything was kept


def test_a_remembering_round_whose_graph_cairn_write_fails_prints_anew_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The load commits first; a write that fails then is raised as itself, the round's
    printed segments are dropped (never joined from a half cut), and the next round
    writes a one-shot index's bytes again."""
    from rich.console import Console

    import cairn.codegraph.console as console_module
    from cairn.codegraph.console import index_once, release_held
    from cairn.errors import StorageIOError

    root = repository(tmp_path)
    app = root / "app.py"
    quiet = Console(quiet=True)
    fixed = "2026-01-01T00:00:00Z"
    watched = tmp_path / "watched"
    real_write = console_module.write_index

    def failing(*args: Any, **kwargs: Any) -> Any:
        raise StorageIOError("disk full while writing graph.cairn")

    try:
        first, _ = index_once(
            root, console=quiet, out=watched, workers=1, generated_at=fixed, remember=True
        )
        kept = console_module._KEPT[watched.resolve()]
        assert not kept.printed.empty
        app.write_text(app.read_text() + "\n\ndef later():\n    main()\n")
        monkeypatch.setattr(console_module, "write_index", failing)
        with pytest.raises(StorageIOError, match="disk full"):
            index_once(
                root, console=quiet, out=watched, workers=1, generated_at=fixed, remember=True
            )
        assert kept.printed.empty
        monkeypatch.setattr(console_module, "write_index", real_write)
        third, _ = index_once(
            root, console=quiet, out=watched, workers=1, generated_at=fixed, remember=True
        )
        # The failed round's load had committed: this one found nothing more to load.
        assert third["load"]["position"] == first["load"]["position"] + 1
        assert third["load"]["changes"] == 0
        plain = tmp_path / "plain"
        index_once(root, console=quiet, out=plain, workers=1, generated_at=fixed)
        for name in ("graph.cairn", "manifest.json"):
            assert (watched / name).read_bytes() == (plain / name).read_bytes(), name
    finally:
        release_held()
