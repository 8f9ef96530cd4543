"""``cairn watch`` (issue 20): every batch of edits is re-indexed and loaded, a database
handle already open sees the new position, and the watcher's own writes never wake it.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from codegraph_expect import FIXTURES, ROUND_TIMEOUT_S, Watched, watching
from typer.testing import CliRunner

import cairn
from cairn.cli import app
from cairn.codegraph.console import release_held
from cairn.codegraph.watch import (
    UNDECODABLE_EVENT,
    file_changes,
    surviving_undecodable,
    watch_repository,
)
from cairn.errors import ValidationError
from cairn.search.contracts import SearchRequest
from cairn.store.load import COMPARED_BY_KEYS, SEARCH_FIELDS

QUIET_S = 1.5
NEW_NAME = "brand_new_helper_zyx"


Watcher = Watched


@pytest.fixture
def watcher(tmp_path: Path) -> Iterator[Watcher]:
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURES / "flask_app", repo)
    with watching(repo) as rounds:
        yield Watcher(repo, rounds)


def test_an_edit_is_reindexed_and_an_open_handle_sees_it(watcher: Watcher) -> None:
    first = watcher.next_round()
    assert first["round"] == 0
    assert first["load"]["position"] == 1
    python = first["python_rounds"]
    assert python["emission"] == python["modules"] > 1  # the first round resolves them all
    db_path = watcher.repo / ".cairn" / "cairn.db"
    with cairn.open(db_path) as db:  # as a running `cairn serve` holds it
        request = SearchRequest(
            db.name, "symbols", text_field=SEARCH_FIELDS, text=NEW_NAME, limit=3
        )
        wanted = f"function:app/views.py#{NEW_NAME}"
        # Not there yet (other symbols may share a word of it: `users` says "new").
        assert wanted not in [hit.document.ref.id for hit in db.search(request)]
        views = watcher.repo / "app" / "views.py"
        views.write_text(views.read_text() + f"\n\ndef {NEW_NAME}():\n    return 1\n")
        second = watcher.next_round()
        assert second["round"] == 1
        assert second["files"] == {"added": [], "removed": [], "changed": ["app/views.py"]}
        assert second["load"]["position"] == 2 and second["load"]["changes"] > 0
        # The first round built the database aside; its load keys came along with it,
        # so this round compares by keys and rewrites only what changed.
        assert second["load"]["compared"] == COMPARED_BY_KEYS
        # Only the edited module and those that read it are resolved again.
        assert 1 <= second["python_rounds"]["emission"] < python["modules"]
        spent = second["phase_seconds"]
        assert list(spent)[:2] == ["scanning", "extracting"]
        # Each phase is rounded to the millisecond: allow that much per phase.
        assert "loading: committing" in spent
        assert sum(spent.values()) <= second["seconds"] + 0.001 * len(spent)
        # The load commits before graph.cairn is written: searchable before the round ends.
        assert list(spent).index("loading: committing") < list(spent).index("writing graph.cairn")
        assert 0 < second["searchable_seconds"] <= second["seconds"]
        hits = db.search(request)
        assert [hit.document.ref.id for hit in hits][:1] == [f"function:app/views.py#{NEW_NAME}"]
    # The round's own writes (.cairn/) woke nothing: no further round comes.
    with pytest.raises(queue.Empty):
        watcher.rounds.get(timeout=QUIET_S)


def test_a_syntax_error_mid_edit_is_named_and_the_rest_kept(watcher: Watcher) -> None:
    watcher.next_round()
    views = watcher.repo / "app" / "views.py"
    views.write_text(views.read_text() + "\n\ndef half_typed(:\n")
    record = watcher.next_round()
    assert record["files"]["changed"] == ["app/views.py"]
    assert [p["path"] for p in record["problems"]] == ["app/views.py"]
    assert record["problems"][0]["outcome"] == "partial:SyntaxError"
    # Nothing defined in the file was lost: the load removed no symbol of it.
    assert "delete_document" not in record["load"]["mutations"]


def test_file_changes_compares_outcomes_and_hashes() -> None:
    before = {"a.py": ("indexed", "1"), "b.py": ("indexed", "2"), "c.py": ("indexed", "3")}
    after = {"a.py": ("indexed", "1"), "b.py": ("partial:SyntaxError", "9"), "d.py": ("x", None)}
    changes = file_changes(before, after)
    assert (changes.added, changes.removed, changes.changed) == (("d.py",), ("c.py",), ("b.py",))


def test_bad_watch_input_is_a_typed_error(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="debounce"):
        watch_repository(tmp_path, on_round=print, debounce_ms=0)
    with pytest.raises(ValidationError, match="not a directory"):
        watch_repository(tmp_path / "absent", on_round=print)
    result = CliRunner().invoke(app, ["watch", str(tmp_path), "--debounce", "0"])
    assert result.exit_code == 1
    assert "debounce" in result.output


def test_an_edit_made_as_round_zero_ends_is_not_lost(tmp_path: Path) -> None:
    # The edit lands inside round 0's report, before the watcher's first wait: a watcher
    # that subscribed only after round 0 never sees it (this was a flaky CI failure).
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURES / "flask_app", repo)
    views = repo / "app" / "views.py"
    records: list[Mapping[str, Any]] = []

    def on_round(record: Mapping[str, Any]) -> None:
        records.append(record)
        if record["round"] == 0:
            views.write_text(views.read_text() + f"\n\ndef {NEW_NAME}():\n    return 1\n")

    outcome: list[int] = []
    thread = threading.Thread(
        target=lambda: outcome.append(
            watch_repository(repo, on_round=on_round, workers=1, rounds=1, load=False)
        ),
        daemon=True,
    )
    thread.start()
    thread.join(timeout=ROUND_TIMEOUT_S)
    assert not thread.is_alive(), "the edit made as round 0 ended never started a round"
    assert outcome == [1]
    assert records[1]["files"]["changed"] == ["app/views.py"]


def test_a_round_line_says_how_many_python_modules_were_resolved_again() -> None:
    from cairn.cli import _watch_line

    record = {
        "round": 2,
        "files": {"changed": ["app/views.py"], "added": [], "removed": []},
        "load": {"changes": 4, "position": 3},
        "problems": [],
        "python_rounds": {"modules": 10, "flows 1": 2, "flows 2": 2, "emission": 3},
        "seconds": 1.5,
    }
    line = _watch_line(record)
    assert "python 3/10 modules re-resolved" in line
    assert line.startswith("round 2: 1 changed (app/views.py)")
    assert "re-resolved" not in _watch_line({**record, "python_rounds": None})
    assert line.endswith("; 1.50 s")
    timed = _watch_line({**record, "searchable_seconds": 1.125})
    assert timed.endswith("; searchable in 1.12 s, 1.50 s in all")


def test_a_round_runs_with_the_collector_paused_and_collects_after_its_report(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A round allocates ~10^6 objects: the collector stays off through the index and the
    report, and the cycles are collected once the round is reported, not inside it (the
    first index's before its report: an edit right after it must not wait for them)."""
    import gc

    import cairn.codegraph.watch as watch_module
    from cairn.codegraph.build import IndexResult

    events: list[str] = []
    monkeypatch.setattr(watch_module.gc, "collect", lambda: events.append("collect"))
    monkeypatch.setattr(watch_module, "_hashes", lambda result: {})

    def once(**options: Any) -> tuple[dict[str, Any], IndexResult]:
        events.append(f"index, collector {'on' if gc.isenabled() else 'off'}")
        return {}, None  # type: ignore[return-value]

    def report(record: Mapping[str, Any]) -> None:
        events.append(f"report {record['round']}, collector {'on' if gc.isenabled() else 'off'}")

    was = gc.isenabled()
    gc.enable()
    try:
        done = watch_module._rounds(iter([set(), {"a.py"}, {"b.py"}]), once, report, None)
    finally:
        if not was:
            gc.disable()
    assert done == 2
    assert events == [
        "index, collector off",
        "collect",  # the first index's garbage, before the first report
        "report 0, collector on",
        "index, collector off",
        "report 1, collector off",
        "collect",
        "index, collector off",
        "report 2, collector off",
        "collect",
    ]


def test_the_heap_collector_searches_what_rounds_leave_and_the_whole_heap_on_growth() -> None:
    """Between rounds only the survivors of the last round are searched for cycles (a full
    search of the sdist's heap takes longer than a round); cycles among older objects are
    found once the kept objects grow by the set share, and the watch hands every frozen
    object back when it ends."""
    import gc
    import weakref

    from cairn.codegraph.watch import HeapCollector

    class Node:
        me: object

    def cycle() -> Node:
        node = Node()
        node.me = node
        return node

    was = gc.isenabled()
    gc.disable()
    heap = HeapCollector(growth=0.1)
    try:
        heap.collect()  # the first search is of the whole heap
        kept = cycle()
        heap.collect()  # ``kept`` survives this round: frozen from here on
        old = weakref.ref(kept)
        del kept  # now garbage, but only a search of the whole heap can find it
        young = weakref.ref(cycle())
        assert heap.collect() >= 1  # the young cycle
        assert young() is None
        assert old() is not None
        growth = [[] for _ in range(int(gc.get_freeze_count() * 0.2) + 1)]
        heap.collect()  # the growth is frozen: the next search is of the whole heap
        heap.collect()
        assert old() is None
        assert gc.get_freeze_count() > 0
    finally:
        heap.release()
        if was:
            gc.enable()
    assert gc.get_freeze_count() == 0
    assert growth


def test_a_failed_round_is_reported_and_tried_again_without_an_edit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A round that fails (here: a full disk) does not end the watch: its record names
    the error and the wait, and the round is run again once the wait is over, edit or
    not; waits double while failures go on and start over after a success."""
    import cairn.codegraph.watch as watch_module
    from cairn.codegraph.build import IndexResult
    from cairn.errors import StorageIOError

    monkeypatch.setattr(watch_module, "RETRY_FIRST_S", 0.0)
    monkeypatch.setattr(watch_module, "_hashes", lambda result: {})
    outcomes = iter(["ok", "fail", "fail", "ok", "ok"])
    records: list[Mapping[str, Any]] = []

    def once(**options: Any) -> tuple[dict[str, Any], IndexResult]:
        if next(outcomes) == "fail":
            raise StorageIOError("disk full while writing cairn.db")
        return {}, None  # type: ignore[return-value]

    # Round 0, an edit (fails), a quiet pass (the retry, fails), a quiet pass (the
    # retry, succeeds), a quiet pass (nothing due), an edit.
    batches = iter([set(), {"a.py"}, set(), set(), set(), {"b.py"}])
    done = watch_module._rounds(batches, once, records.append, None)
    assert done == 4
    assert [record["round"] for record in records] == [0, 1, 2, 3, 4]
    assert [record["events"] for record in records] == [0, 1, 0, 0, 1]
    errors = [record["error"] for record in records]
    assert errors[0] is None and errors[3] is None and errors[4] is None
    assert errors[1] == {
        "code": StorageIOError.code,
        "message": "disk full while writing cairn.db",
        "retry_seconds": 0.0,
    }
    assert errors[2] is not None and errors[2]["code"] == StorageIOError.code


def test_retry_waits_double_up_to_a_bound_and_start_over(monkeypatch: pytest.MonkeyPatch) -> None:
    import cairn.codegraph.watch as watch_module

    retry = watch_module._Retry()
    assert not retry.due()
    waits = [retry.failed() for _ in range(8)]
    assert waits == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0, 30.0]
    assert not retry.due()  # 30 s from now
    retry.clear()
    assert not retry.due() and retry.failed() == 1.0
    monkeypatch.setattr(watch_module, "RETRY_FIRST_S", 0.0)
    retry.clear()
    retry.failed()
    assert retry.due()


def test_an_edit_whose_round_failed_is_indexed_by_the_retry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real watch: the first round after an edit fails in its load (the database
    busy); with no further edit, the retry indexes the edit and a reader finds it."""
    import cairn.codegraph.console as console_module
    import cairn.codegraph.watch as watch_module
    from cairn.errors import StorageLockedError

    monkeypatch.setattr(watch_module, "RETRY_FIRST_S", 0.2)
    real_load = console_module._load
    failures = [1]

    def flaky(*args: Any, **kwargs: Any) -> Any:
        if failures and watch_module_round[0] == 1:
            failures.pop()
            raise StorageLockedError("the database is locked by another writer")
        return real_load(*args, **kwargs)

    watch_module_round = [0]
    monkeypatch.setattr(console_module, "_load", flaky)
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURES / "flask_app", repo)
    records: queue.Queue[Mapping[str, Any]] = queue.Queue()
    stop = threading.Event()

    def on_round(record: Mapping[str, Any]) -> None:
        watch_module_round[0] = record["round"] + 1
        records.put(record)

    thread = threading.Thread(
        target=lambda: watch_repository(repo, on_round=on_round, workers=1, stop=stop),
        daemon=True,
    )
    thread.start()
    try:
        assert records.get(timeout=ROUND_TIMEOUT_S)["round"] == 0
        views = repo / "app" / "views.py"
        views.write_text(views.read_text() + f"\n\ndef {NEW_NAME}():\n    return 1\n")
        failed = records.get(timeout=ROUND_TIMEOUT_S)
        assert failed["error"]["code"] == StorageLockedError.code
        retried = records.get(timeout=ROUND_TIMEOUT_S)
        assert retried["error"] is None and retried["events"] == 0
        assert retried["files"]["changed"] == ["app/views.py"]
        with cairn.open(repo / ".cairn" / "cairn.db") as db:
            request = SearchRequest(
                db.name, "symbols", text_field=SEARCH_FIELDS, text=NEW_NAME, limit=3
            )
            hits = [hit.document.ref.id for hit in db.search(request)]
        assert hits[:1] == [f"function:app/views.py#{NEW_NAME}"]
    finally:
        stop.set()
        thread.join(timeout=ROUND_TIMEOUT_S)
    assert not thread.is_alive()


def test_a_failed_round_line_names_the_error_and_the_wait() -> None:
    from cairn.cli import _watch_line

    record = {
        "round": 3,
        "error": {"code": "busy", "message": "database is locked", "retry_seconds": 2.0},
    }
    line = _watch_line(record)
    assert (
        line == "round 3 failed (busy): database is locked; trying again in 2 s or at the next edit"
    )


def test_sigterm_ends_the_watch_after_its_round_and_removes_its_socket(tmp_path: Path) -> None:
    """A service manager's SIGTERM stops ``cairn watch`` as a stop request does: exit
    status 0, its socket gone, so the next ``cairn index`` indexes in its own process
    at once instead of finding a socket nobody answers."""
    from cairn.codegraph.handoff import socket_path

    repo = tmp_path / "repo"
    shutil.copytree(FIXTURES / "flask_app", repo)
    argv = [sys.executable, "-c", "from cairn.cli import main; main()", "watch", str(repo)]
    with subprocess.Popen(
        [*argv, "--json", "--workers", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as process:
        lines: queue.Queue[bytes] = queue.Queue()
        out = process.stdout
        assert out is not None
        threading.Thread(target=lambda: lines.put(out.readline()), daemon=True).start()
        try:
            first = json.loads(lines.get(timeout=ROUND_TIMEOUT_S))
            assert first["round"] == 0 and first["error"] is None
            sock = socket_path(repo / ".cairn")
            assert sock.exists()
            process.send_signal(signal.SIGTERM)
            status = process.wait(timeout=ROUND_TIMEOUT_S)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        errors = process.stderr.read() if process.stderr else b""
    assert status == 0, errors
    assert not sock.exists()


def test_the_first_index_shows_its_phases_on_a_terminal(tmp_path: Path) -> None:
    """``cairn watch`` on a terminal shows the first index's phases as ``cairn index``
    does (a minute on a large tree would otherwise pass in silence); not on a pipe."""
    import io

    from rich.console import Console

    shown: dict[bool, str] = {}
    for terminal in (True, False):
        repo = tmp_path / f"repo-{terminal}"
        shutil.copytree(FIXTURES / "flask_app", repo)
        out = io.StringIO()
        console = Console(file=out, force_terminal=terminal, width=100)
        with watching(repo, console=console) as rounds:
            assert rounds.get(timeout=ROUND_TIMEOUT_S)["round"] == 0
        shown[terminal] = out.getvalue()
    phases = ("starting", "scanning", "extracting", "resolving", "writing", "loading")
    assert any(phase in shown[True] for phase in phases), shown[True]
    assert shown[False] == ""


def test_a_batch_that_changes_nothing_runs_no_round(watcher: Watcher) -> None:
    """Events with no change behind them (a touch, a save of the same bytes) run no
    round: no record, graph.cairn not written again for a new timestamp; the next real
    edit is indexed as before."""
    watcher.next_round()
    graph = watcher.repo / ".cairn" / "graph.cairn"
    before = graph.stat()
    views = watcher.repo / "app" / "views.py"
    views.write_bytes(views.read_bytes())  # same bytes, a new modification time
    (watcher.repo / "app" / "models.py").touch()
    with pytest.raises(queue.Empty):
        watcher.rounds.get(timeout=QUIET_S)
    after = graph.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    views.write_text(views.read_text() + f"\n\ndef {NEW_NAME}():\n    return 1\n")
    record = watcher.next_round()
    assert record["round"] == 1 and record["files"]["changed"] == ["app/views.py"]


def _stamped_summary(repo: Path) -> Mapping[str, Any]:
    """The summary in ``repo``'s index stamp, once the watch wrote it (on a quiet pass)."""
    from cairn.codegraph.stamp import STAMP_FILENAME

    stamp = repo / ".cairn" / STAMP_FILENAME
    deadline = time.monotonic() + ROUND_TIMEOUT_S
    while not stamp.is_file():
        assert time.monotonic() < deadline, "the watch wrote no stamp"
        time.sleep(0.05)
    summary = json.loads(stamp.read_bytes())["summary"]
    assert isinstance(summary, dict)
    return summary


def test_cairn_index_after_the_watch_stopped_finds_nothing_changed(tmp_path: Path) -> None:
    """The watch stamps its last round as ``cairn index`` stamps a run: an index once the
    watch has stopped says "nothing changed", with a one-shot's summary, instead of
    indexing whole; an edit made after the watch stopped is indexed."""
    from cairn.codegraph.console import index_and_write

    repo = tmp_path / "repo"
    shutil.copytree(FIXTURES / "flask_app", repo)
    views = repo / "app" / "views.py"
    with watching(repo) as rounds:
        watched = Watched(repo, rounds)
        watched.next_round()
        assert _stamped_summary(repo)["files"]["python"]["indexed"] > 0  # round 0 is stamped too
        views.write_text(views.read_text() + f"\n\ndef {NEW_NAME}():\n    return 1\n")
        assert watched.next_round()["files"]["changed"] == ["app/views.py"]
        stamped = _stamped_summary(repo)
    graph = repo / ".cairn" / "graph.cairn"
    before = graph.stat()
    after = index_and_write(repo, workers=1, as_json=True)
    assert after["unchanged"] is True
    assert after["load"]["changes"] == 0
    assert (graph.stat().st_ino, graph.stat().st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    # The oracle: a one-shot index of a copy of the same tree, no watch there.
    copy = tmp_path / "copy"
    shutil.copytree(repo, copy, ignore=shutil.ignore_patterns(".cairn"))
    oneshot = index_and_write(copy, workers=1, as_json=True)
    tallied = ("nodes_by_kind", "facts_by_relation", "stable_fact_share")
    for key in ("files", "outcomes", "counts", "calls", "problems", *tallied):
        assert after[key] == oneshot[key] == stamped[key], key
    assert after["python_rounds"] is None  # as a one-shot's
    assert set(after) == {*oneshot, "unchanged"}
    views.write_text(views.read_text() + "\n\ndef after_the_watch():\n    return 2\n")
    edited = index_and_write(repo, workers=1, as_json=True)
    assert not edited.get("unchanged") and edited["load"]["changes"] > 0


def test_each_round_is_stamped_with_the_generated_at_it_wrote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A round is stamped on a quiet pass with the fixed generated_at it wrote: a
    caller's (``cairn index --generated-at``), or None for the watch's own default. A
    round for a caller that named none, while the watch has a ``SOURCE_DATE_EPOCH``,
    wrote the time where a later run would write the epoch: it is not stamped."""
    from rich.console import Console

    import cairn.codegraph.watch as watch_module
    from cairn.codegraph.cache import code_fingerprint
    from cairn.codegraph.console import index_once
    from cairn.codegraph.handoff import handoff_options
    from cairn.codegraph.scan import scan_repository
    from cairn.codegraph.watch import _Rounds

    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    monkeypatch.setattr(watch_module, "STAMP_AFTER_S", 0.0)
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURES / "flask_app", repo)
    folder = repo / ".cairn"
    views = repo / "app" / "views.py"

    def once(**options: Any) -> Any:
        return index_once(repo, console=Console(quiet=True), workers=1, remember=True, **options)

    stamped: list[tuple[int, str | None]] = []
    rounds = _Rounds(
        once,
        lambda record: None,
        folder,
        lambda: scan_repository(repo),
        lambda result, summary, at: stamped.append((summary["load"]["position"], at)),
    )
    mine = handoff_options(
        repo, folder, code=code_fingerprint(), excludes=(), load=True, embedder=None
    )
    request = {**mine, "generated_at": None, "source_date_epoch": None, "pid": 7}
    fixed = "2024-01-01T00:00:00Z"

    def edit(name: str) -> None:
        views.write_text(views.read_text() + f"\n\ndef {name}():\n    return 1\n")

    try:
        rounds.first()
        assert stamped == []  # not while the round runs: on a quiet pass
        rounds.idle()
        assert stamped == [(1, None)]
        edit("fixed_stamp")
        assert rounds.asked({**request, "generated_at": fixed}, mine)["round"] == 1
        rounds.idle()  # tidies after the answer
        rounds.idle()
        assert stamped[-1] == (2, fixed)
        edit("no_fixed_stamp")
        assert rounds.asked(request, mine)["round"] == 2
        rounds.idle()
        rounds.idle()
        assert stamped[-1] == (3, None)
        edit("own_round")
        assert rounds.batch(1) is True
        rounds.idle()
        assert stamped[-1] == (4, None)
        rounds.idle()
        assert len(stamped) == 4  # each round stamped once
        monkeypatch.setattr(watch_module, "STAMP_AFTER_S", 3600.0)
        edit("in_a_burst")
        assert rounds.batch(1) is True
        rounds.idle()
        assert len(stamped) == 4  # not yet: a quiet pass soon after a round leaves it
        rounds.stamp_last()  # as the watch stops
        assert stamped[-1] == (5, None)
        monkeypatch.setattr(watch_module, "STAMP_AFTER_S", 0.0)
        monkeypatch.setenv("SOURCE_DATE_EPOCH", "1704067200")
        edit("caller_without_epoch")
        assert rounds.asked(request, mine)["round"] == 5
        rounds.idle()
        rounds.idle()
        assert len(stamped) == 5
    finally:
        release_held()


def test_a_file_named_with_bytes_that_are_not_utf8_does_not_end_the_watch(
    watcher: Watcher,
) -> None:
    """watchfiles ends its watcher on a path it cannot decode ("Unable to decode path");
    the watch subscribes again, and the round it runs scans what that batch held: the
    file is skipped as ``skipped:undecodable_name``, an edit saved with it is indexed,
    and later edits still are. Before, such a file saved in the tree ended the watch."""
    assert watcher.next_round()["round"] == 0
    root = os.fsencode(watcher.repo)
    with open(os.path.join(root, b"caf\xe9.py"), "wb") as handle:
        handle.write(b"def f():\n    return 1\n")
    views = watcher.repo / "app" / "views.py"
    views.write_text(views.read_text() + f"\n\ndef {NEW_NAME}():\n    return 1\n")
    first = watcher.next_round()
    assert first["files"]["added"] == ["caf\\xe9.py"]
    assert first["files"]["changed"] == ["app/views.py"]
    models = watcher.repo / "app" / "models.py"
    models.write_text(models.read_text() + "\n\ndef another_new_one():\n    return 2\n")
    assert watcher.next_round()["files"]["changed"] == ["app/models.py"]
    manifest = json.loads((watcher.repo / ".cairn" / "manifest.json").read_text())
    rows = {row["path"]: row["outcome"] for row in manifest["files"]}
    assert rows["caf\\xe9.py"] == "skipped:undecodable_name"


def test_surviving_undecodable_subscribes_again_and_marks_the_batch() -> None:
    started: list[int] = []
    closed: list[int] = []

    def start() -> Iterator[set[Any]]:
        number = len(started)
        started.append(number)
        try:
            if number == 0:
                yield {"a"}
                raise RuntimeError('Unable to decode path "/r/caf\\xE9.py" to string')
            yield {"b"}
            yield set()
            raise RuntimeError("another failure")
        finally:
            closed.append(number)

    batches = surviving_undecodable(start)  # type: ignore[arg-type]
    assert next(batches) == {"a"}
    assert next(batches) == {"b", UNDECODABLE_EVENT}  # a round follows: it scans all
    assert started == [0, 1] and closed == [0]
    assert next(batches) == set()
    with pytest.raises(RuntimeError, match="another failure"):  # not ours to survive
        next(batches)
    assert closed == [0, 1]


def test_trim_heap_hands_freed_pages_back() -> None:
    # In a fresh interpreter (this one's heap is whatever earlier tests left): 200 MB
    # of 2 KB strings (glibc's heap, not pymalloc's arenas nor mmap), all freed but the
    # last, which pins the heap's top so glibc cannot shrink it on its own.
    script = """
import os
from cairn.codegraph.watch import trim_heap
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1]) // 1024
blocks = [os.urandom(1) * 2000 for _ in range(100_000)]
kept = blocks[-1]
del blocks
freed = rss()
trim_heap()
print(freed, rss())
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    freed, trimmed = map(int, done.stdout.split())
    assert freed - trimmed > 100, (freed, trimmed)  # MiB
