"""``cairn index`` through a running ``cairn watch`` (issue 20): the watch indexes for it,
with the outputs a one-shot index of the same tree writes; options it does not share
are refused and the caller indexes itself; a failed round's error reaches the caller;
one watch per index folder."""

from __future__ import annotations

import json
import os
import queue
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from codegraph_expect import FIXTURES, ROUND_TIMEOUT_S, Watched, watching
from typer.testing import CliRunner

import cairn
from cairn.cli import app
from cairn.codegraph.handoff import (
    HANDOFF_FORMAT,
    MAX_SOCKET_PATH,
    SOCKET_FILENAME,
    HandoffServer,
    ask_watch,
    refusal,
    socket_path,
)
from cairn.codegraph.watch import watch_repository
from cairn.errors import ConflictError, StorageLockedError
from cairn.search.contracts import SearchRequest
from cairn.store.load import SEARCH_FIELDS

NEW_NAME = "handed_off_helper_qxz"
STAMP = "2024-01-01T00:00:00Z"
EPOCH = 1704067200  # STAMP
OTHER_STAMP = "2025-06-01T00:00:00Z"


Running = Watched


@pytest.fixture
def running(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Running]:
    # The watch's own rounds write the timestamp the tests ask for (SOURCE_DATE_EPOCH of
    # STAMP), so a round of its own after an asked one writes the same bytes.
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(EPOCH))
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURES / "flask_app", repo)
    with watching(repo) as rounds:
        watched = Running(repo, rounds)
        assert watched.next_round()["round"] == 0
        yield watched
    assert not socket_path(repo / ".cairn").exists()  # removed when the watch ended


def _index(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(app, ["index", *args, "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert isinstance(summary, dict)
    return summary


def _edit(repo: Path) -> None:
    views = repo / "app" / "views.py"
    views.write_text(views.read_text() + f"\n\ndef {NEW_NAME}():\n    return 1\n")


def _same_outputs(repo: Path, copy: Path) -> None:
    """graph.cairn and manifest.json of ``repo`` are the bytes of ``copy``'s."""
    for name in ("graph.cairn", "manifest.json"):
        ours = (repo / ".cairn" / name).read_bytes()
        assert ours == (copy / ".cairn" / name).read_bytes(), name


def _oneshot(repo: Path, tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """The oracle: a one-shot index of a copy of ``repo``'s tree, no watch there."""
    copy = tmp_path / "copy"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(repo, copy, ignore=shutil.ignore_patterns(".cairn"))
    summary = _index(str(copy), "--generated-at", STAMP, "--workers", "1")
    assert "watch" not in summary
    return copy, summary


def test_cairn_index_is_answered_by_the_running_watch_with_one_shot_bytes(
    running: Running, tmp_path: Path
) -> None:
    _edit(running.repo)
    summary = _index(str(running.repo), "--generated-at", STAMP, "--workers", "1")
    watch = summary["watch"]
    assert watch["pid"] == os.getpid() and watch["round"] >= 1
    if not summary.get("unchanged"):
        # A round ran for this process (its edit's events had not been indexed yet);
        # the watch reports it too, as asked by this process.
        asked = [running.next_round() for _ in range(watch["round"])][-1]
        assert asked["round"] == watch["round"] and asked["asked_by"] == {"pid": os.getpid()}
    copy, oneshot = _oneshot(running.repo, tmp_path)
    _same_outputs(running.repo, copy)
    for key in ("files", "outcomes", "counts", "calls"):
        assert summary[key] == oneshot[key], key
    with cairn.open(running.repo / ".cairn" / "cairn.db") as db:
        request = SearchRequest(db.name, "symbols", text_field=SEARCH_FIELDS, text=NEW_NAME)
        hits = [hit.document.ref.id for hit in db.search(request)]
    assert hits[:1] == [f"function:app/views.py#{NEW_NAME}"]


def test_the_readable_summary_says_the_watch_indexed(running: Running) -> None:
    # Another generated_at than the watch's own rounds wrote: a round runs for it.
    result = CliRunner().invoke(app, ["index", str(running.repo), "--generated-at", OTHER_STAMP])
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert f"indexed by the running cairn watch (pid {os.getpid()}, its round 1)" in said
    assert "Nodes by kind" in said  # an asked round's summary has the tallies


def test_nothing_changed_since_the_watchs_last_round_is_said_without_a_round(
    running: Running,
) -> None:
    graph = running.repo / ".cairn" / "graph.cairn"
    before = graph.stat()
    summary = _index(str(running.repo))
    assert summary["unchanged"] is True
    assert summary["watch"] == {"pid": os.getpid(), "round": 0}
    assert summary["load"]["changes"] == 0 and summary["load"]["position"] == 1
    assert list(summary["phase_seconds"]) == ["checking outputs", "scanning", "comparing files"]
    with pytest.raises(queue.Empty):  # no round ran
        running.rounds.get(timeout=0.5)
    after = graph.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    readable = CliRunner().invoke(app, ["index", str(running.repo)])
    assert readable.exit_code == 0, readable.output
    said = " ".join(readable.output.split())
    assert "nothing changed since the last index" in said and "Nodes by kind" not in said
    # The generated_at graph.cairn holds (the watch's SOURCE_DATE_EPOCH): no round.
    same = _index(str(running.repo), "--generated-at", STAMP)
    assert same["unchanged"] is True and same["watch"]["round"] == 0
    # Another one needs a round that writes it.
    stamped = _index(str(running.repo), "--generated-at", OTHER_STAMP)
    assert "unchanged" not in stamped and stamped["watch"]["round"] == 1
    assert running.next_round()["asked_by"] == {"pid": os.getpid()}
    assert graph.stat().st_mtime_ns != before.st_mtime_ns
    again = _index(str(running.repo), "--generated-at", OTHER_STAMP)
    assert again["unchanged"] is True and again["watch"]["round"] == 1


def test_an_edit_no_round_saw_yet_is_indexed_by_the_asked_round(tmp_path: Path) -> None:
    """Without the watcher's events (``_Rounds`` driven directly): a caller asking after
    an edit gets a round that indexes it, and the next caller gets "nothing changed"."""
    from rich.console import Console

    from cairn.codegraph.cache import code_fingerprint
    from cairn.codegraph.console import index_once, release_held
    from cairn.codegraph.handoff import handoff_options
    from cairn.codegraph.scan import scan_repository
    from cairn.codegraph.watch import _Rounds

    repo = tmp_path / "repo"
    shutil.copytree(FIXTURES / "flask_app", repo)
    folder = repo / ".cairn"

    def once(**options: Any) -> Any:
        return index_once(repo, console=Console(quiet=True), workers=1, remember=True, **options)

    records: list[Mapping[str, Any]] = []
    rounds = _Rounds(once, records.append, folder, lambda: scan_repository(repo))
    mine = handoff_options(
        repo, folder, code=code_fingerprint(), excludes=(), load=True, embedder=None
    )
    request = {**mine, "generated_at": None, "source_date_epoch": None, "pid": 7}
    import cairn.codegraph.build as build_module

    walks: list[int] = []

    def counted(*args: Any, **kwargs: Any) -> Any:
        walks.append(1)
        return scan_repository(*args, **kwargs)

    try:
        rounds.first()
        quiet = rounds.asked(request, mine)
        assert quiet["summary"]["unchanged"] is True and quiet["round"] == 0
        _edit(repo)
        with pytest.MonkeyPatch.context() as patched:
            patched.setattr(build_module, "scan_repository", counted)
            patched.setattr(rounds, "rescan", lambda: counted(repo))
            asked = rounds.asked({**request, "generated_at": STAMP}, mine)
        # One walk: the check's (another generated_at than the last round wrote needs
        # none) or the round's, never both.
        assert len(walks) == 1
        assert "unchanged" not in asked["summary"] and asked["round"] == 1
        assert records[-1]["files"]["changed"] == ["app/views.py"]
        assert records[-1]["asked_by"] == {"pid": 7}
        assert asked["summary"]["load"]["changes"] > 0
        copy, oneshot = _oneshot(repo, tmp_path)
        _same_outputs(repo, copy)
        for key in ("files", "outcomes", "nodes_by_kind", "facts_by_relation", "counts"):
            assert asked["summary"][key] == oneshot[key], key
        assert asked["summary"]["stable_fact_share"] == oneshot["stable_fact_share"]
        assert rounds.asked(request, mine)["summary"]["unchanged"] is True
        # The watch's own batch for the events of that edit: indexed already, no round.
        count = len(records)
        assert rounds.batch(1) is False and len(records) == count
        views = repo / "app" / "views.py"
        views.write_text(views.read_text() + "\n\ndef edited_again():\n    return 2\n")
        walks.clear()
        with pytest.MonkeyPatch.context() as patched:
            patched.setattr(build_module, "scan_repository", counted)
            patched.setattr(rounds, "rescan", lambda: counted(repo))
            edited = rounds.asked({**request, "generated_at": STAMP}, mine)
        assert len(walks) == 1  # the check found the edit; its scan is the round's
        assert "unchanged" not in edited["summary"] and edited["round"] == 2
        # An output removed behind the watch's back: no "nothing changed" from memory.
        (folder / "manifest.json").unlink()
        moved = rounds.asked(request, mine)
        assert "unchanged" not in moved["summary"] and moved["round"] == 3
        assert (folder / "manifest.json").is_file()
    finally:
        release_held()


def test_other_options_are_refused_and_the_caller_indexes_itself(running: Running) -> None:
    summary = _index(str(running.repo), "--exclude", "*.md", "--workers", "1")
    assert summary["watch"]["pid"] == os.getpid()
    assert summary["watch"]["refused"].startswith("excludes differs")
    assert summary["phase_seconds"]["extracting"] >= 0  # this process's own index
    with pytest.raises(queue.Empty):  # the watch ran no round for it
        running.rounds.get(timeout=0.5)
    readable = CliRunner().invoke(app, ["index", str(running.repo), "--no-load"])
    assert readable.exit_code == 0, readable.output
    assert "not with these options (load differs" in " ".join(readable.output.split())


def test_force_indexes_in_this_process(running: Running) -> None:
    summary = _index(str(running.repo), "--force", "--workers", "1")
    assert "watch" not in summary
    with pytest.raises(queue.Empty):
        running.rounds.get(timeout=0.5)


def test_a_failed_round_is_the_callers_error(
    running: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    import cairn.codegraph.console as console_module

    def locked(*args: Any, **kwargs: Any) -> Any:
        raise StorageLockedError("the database is locked by another writer")

    monkeypatch.setattr(console_module, "_load", locked)
    _edit(running.repo)
    result = CliRunner().invoke(app, ["index", str(running.repo), "--json"])
    assert result.exit_code != 0
    assert StorageLockedError.code in result.output
    assert "locked by another writer" in result.output


def test_a_second_watch_of_the_folder_is_refused(running: Running) -> None:
    with pytest.raises(ConflictError, match="another cairn watch"):
        watch_repository(running.repo, on_round=lambda record: None, workers=1, rounds=0)


def test_a_socket_left_by_a_killed_watch_is_no_answer_and_is_replaced(tmp_path: Path) -> None:
    folder = tmp_path / "repo" / ".cairn"
    folder.mkdir(parents=True)
    left = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    left.bind(str(socket_path(folder)))
    left.close()  # bound, never listening: what a killed watch leaves
    assert socket_path(folder).exists()
    assert ask_watch(folder, {"format": HANDOFF_FORMAT}) is None
    server = HandoffServer(folder)
    assert server.bind()
    try:
        server.serve(lambda request: {"refused": f"echo {request['n']}"}, lambda: "idle")
        reply = ask_watch(folder, {"n": 7})
        assert reply is not None
        assert reply["format"] == HANDOFF_FORMAT and reply["refused"] == "echo 7"
        assert reply["pid"] == os.getpid()
        assert (socket_path(folder).stat().st_mode & 0o777) == 0o600
    finally:
        server.close()
    assert not socket_path(folder).exists()
    assert ask_watch(folder, {"n": 8}) is None


def test_a_long_folder_path_puts_the_socket_in_the_temporary_directory(tmp_path: Path) -> None:
    short = tmp_path / ".cairn"
    assert socket_path(short) == short.resolve() / SOCKET_FILENAME
    deep = tmp_path.joinpath(*["d" * 40] * 4, ".cairn")
    placed = socket_path(deep)
    assert len(os.fsencode(placed)) <= MAX_SOCKET_PATH
    assert placed.parent != deep and placed == socket_path(deep)  # the same for every caller
    assert placed != socket_path(deep.parent / "other")


def test_refusal_names_the_first_option_that_differs() -> None:
    mine = {
        "format": HANDOFF_FORMAT,
        "code": "a",
        "root": "/r",
        "folder": "/r/.cairn",
        "excludes": [],
        "load": True,
        "embedder": None,
    }
    assert refusal(mine, dict(mine)) is None
    assert refusal(mine, {**mine, "code": "b"}) == "the watch runs another version of Cairn"
    assert refusal(mine, {**mine, "format": "x"}) is not None
    assert refusal(mine, {**mine, "root": "/s"}) == "root differs: the watch has '/r', asked '/s'"
    # No embedder named: the index's own, which is the watch's; a named one must match.
    assert refusal({**mine, "embedder": "wordllama"}, mine) is None
    assert refusal(mine, {**mine, "embedder": "wordllama"}) is not None


def test_asking_imports_nothing_of_the_pipeline() -> None:
    code = (
        "import sys; import cairn.codegraph.handoff, cairn.codegraph.report; "
        "print(sorted(m for m in sys.modules if m in "
        "('cairn.codegraph.build', 'cairn.store', 'numpy', 'cairn.graph')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_an_asked_round_line_names_the_caller() -> None:
    from cairn.cli import _watch_line

    record = {
        "round": 3,
        "asked_by": {"pid": 4242},
        "files": {"changed": [], "added": [], "removed": []},
        "load": None,
        "problems": [],
        "python_rounds": None,
        "seconds": 0.25,
    }
    assert _watch_line(record).startswith("round 3 (for cairn index, pid 4242): 0 changed")


@dataclass
class HeldRounds:
    """A watch's rounds (``_Rounds``, the first index taken as done) whose first round
    holds the turn until ``release`` is set; ``order`` lists the rounds as they run."""

    rounds: Any
    order: list[str]
    release: threading.Event
    mine: dict[str, Any]


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> HeldRounds:
    import cairn.codegraph.watch as watch_module

    monkeypatch.setattr(watch_module, "_hashes", lambda result: {})
    order: list[str] = []
    release = threading.Event()

    def once(**options: Any) -> Any:
        order.append("asked" if options.get("tallies") else "batch")
        if len(order) == 1:
            assert release.wait(timeout=ROUND_TIMEOUT_S)  # the first round holds the turn
        return {}, None

    rounds = watch_module._Rounds(once, lambda record: None)
    rounds.ready = True  # as after the first index (not run here)
    rounds.started.set()
    mine = {"format": HANDOFF_FORMAT, "code": "c", "root": "/r", "folder": "/r/.cairn"}
    return HeldRounds(rounds, order, release, mine)


def _ask_while_held(held: HeldRounds, loop: Callable[[], None], ask: Callable[[], None]) -> None:
    """Run ``loop`` (the watch's own rounds) until its first round holds the turn, start
    ``ask`` then, and release the round once the caller waits to ask."""
    main = threading.Thread(target=loop)
    asker = threading.Thread(target=ask)
    main.start()
    deadline = time.monotonic() + ROUND_TIMEOUT_S
    while held.order != ["batch"] and time.monotonic() < deadline:
        time.sleep(0.01)
    asker.start()
    while held.rounds.asking != 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    held.release.set()
    main.join(timeout=ROUND_TIMEOUT_S)
    asker.join(timeout=ROUND_TIMEOUT_S)


def test_a_caller_asking_goes_before_the_watchs_next_batch(held: HeldRounds) -> None:
    """The watch's loop runs batch after batch (a rename's events may come as two); a
    caller waiting to ask runs before the next one, not after every batch queued."""
    rounds = held.rounds

    def loop() -> None:  # two batches back to back, as the watch's loop runs them
        rounds.batch(1)
        rounds.batch(1)

    replies: list[dict[str, Any]] = []
    _ask_while_held(held, loop, lambda: replies.append(rounds.asked(held.mine, held.mine)))
    assert held.order == ["batch", "asked", "batch"]
    assert replies and replies[0]["round"] == 2 and rounds.asking == 0


def test_a_waiting_caller_is_answered_before_the_rounds_are_tidied(
    held: HeldRounds, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tidying (the cycle collection, the log checkpoint) waits for the watch's next quiet
    pass whenever a caller waits: after the watch's own round the caller it held up is
    answered first, and so is the caller of an asked round; with nobody waiting, the
    watch's round is tidied at once."""
    rounds, order = held.rounds, held.order
    monkeypatch.setattr(
        rounds, "_tidy", lambda: (order.append("tidy"), rounds.__setattr__("untidy", False))
    )
    replies: list[dict[str, Any]] = []

    def ask() -> None:
        replies.append(rounds.asked(held.mine, held.mine))
        order.append("answered")

    _ask_while_held(held, lambda: rounds.batch(1), ask)
    assert order == ["batch", "asked", "answered"] and rounds.untidy
    rounds.idle()  # the quiet pass
    assert order[-1] == "tidy" and not rounds.untidy
    rounds.idle()  # nothing left to tidy
    rounds.batch(1)  # nobody waiting: tidied at once
    assert order[-3:] == ["tidy", "batch", "tidy"] and not rounds.untidy


def test_a_long_answer_sends_progress_and_a_silent_watch_is_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While its answer is made the watch sends a progress line every ``HEARTBEAT_S``, so
    a round longer than ``SILENCE_TIMEOUT_S`` is still waited for; a watch that sends
    nothing (stopped with Ctrl+Z: its socket still accepts) is left after that long."""
    import cairn.codegraph.handoff as handoff

    monkeypatch.setattr(handoff, "HEARTBEAT_S", 0.1)
    monkeypatch.setattr(handoff, "SILENCE_TIMEOUT_S", 1.0)
    folder = tmp_path / "repo" / ".cairn"
    folder.mkdir(parents=True)

    def slow(request: Mapping[str, Any]) -> dict[str, Any]:
        time.sleep(2.2)  # over twice the silence the caller bears
        return {"refused": f"slow {request['n']}"}

    server = HandoffServer(folder)
    assert server.bind()
    progress: list[Mapping[str, Any]] = []
    try:
        server.serve(slow, lambda: "round 9")
        reply = ask_watch(folder, {"n": 1}, progress.append)
    finally:
        server.close()
    assert reply is not None and reply["refused"] == "slow 1"
    assert len(progress) >= 5
    assert {line["progress"] for line in progress} == {"round 9"}
    assert {line["pid"] for line in progress} == {os.getpid()}

    # Listening, never answering: what a stopped watch's socket does.
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as stopped:
        stopped.bind(str(socket_path(folder)))
        stopped.listen(1)
        started = time.monotonic()
        reply = ask_watch(folder, {"n": 2})
        waited = time.monotonic() - started
    assert reply is not None and reply["unanswered"].startswith("no answer for 1 s")
    assert reply["pid"] == os.getpid()  # the socket's owner, from the peer credentials
    assert 0.9 <= waited < ROUND_TIMEOUT_S


def test_a_silent_watch_is_said_and_the_caller_indexes_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import cairn.codegraph.handoff as handoff

    monkeypatch.setattr(handoff, "SILENCE_TIMEOUT_S", 0.3)
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURES / "flask_app", repo)
    folder = repo / ".cairn"
    folder.mkdir()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as stopped:
        stopped.bind(str(socket_path(folder)))
        stopped.listen(1)
        summary = _index(str(repo), "--workers", "1")
        forced = _index(str(repo), "--workers", "1", "--force")
    assert summary["watch"]["pid"] == os.getpid()
    assert summary["watch"]["unanswered"].startswith("no answer for 0.3 s")
    assert summary["phase_seconds"]["extracting"] >= 0  # this process's own index
    assert summary["counts"]["node_count"] > 0
    assert "watch" not in forced  # --force never asks
    socket_path(folder).unlink()  # the first stand-in's
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as stopped:
        stopped.bind(str(socket_path(folder)))
        stopped.listen(1)
        said = CliRunner().invoke(app, ["index", str(repo), "--workers", "1"])
    assert said.exit_code == 0
    assert "did not answer" in said.output and "indexing in this process" in said.output


def test_a_caller_asking_during_the_first_index_hears_progress_and_gets_its_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The socket is served from the start: a caller asking while the first index runs
    gets progress lines naming it, then that index's answer (nothing changed since)."""
    import cairn.codegraph.handoff as handoff
    from cairn.codegraph import console as console_module

    monkeypatch.setattr(handoff, "HEARTBEAT_S", 0.05)
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURES / "flask_app", repo)
    folder = repo / ".cairn"
    asked = threading.Event()
    real = console_module.index_once

    def slow_first(*args: Any, **kwargs: Any) -> Any:
        assert asked.wait(timeout=ROUND_TIMEOUT_S)  # the caller is waiting by now
        time.sleep(0.3)
        return real(*args, **kwargs)

    import cairn.codegraph.watch as watch_module

    monkeypatch.setattr(watch_module, "index_once", slow_first)
    progress: list[Mapping[str, Any]] = []
    replies: list[dict[str, Any] | None] = []
    with watching(repo) as rounds:
        deadline = time.monotonic() + ROUND_TIMEOUT_S
        while not socket_path(folder).exists() and time.monotonic() < deadline:
            time.sleep(0.01)

        def ask() -> None:
            from cairn.codegraph.handoff import ask_to_index

            replies.append(
                ask_to_index(
                    repo,
                    None,
                    excludes=(),
                    generated_at=None,
                    load=True,
                    embedder=None,
                    on_progress=lambda line: (progress.append(line), asked.set()),
                )
            )

        caller = threading.Thread(target=ask)
        caller.start()
        caller.join(timeout=ROUND_TIMEOUT_S)
        first = rounds.get(timeout=ROUND_TIMEOUT_S)
    assert first["round"] == 0
    assert progress and progress[0]["progress"] == "its first index"
    reply = replies[0]
    assert reply is not None and reply["round"] == 0
    assert reply["summary"]["counts"] == first["counts"]


def test_a_watch_ending_before_its_first_index_gives_no_answer(tmp_path: Path) -> None:
    """A caller waiting for a first index that never came (it failed, or the watch was
    stopped) gets no answer, as when no watch runs, and indexes in its own process."""
    import cairn.codegraph.watch as watch_module

    rounds = watch_module._Rounds(lambda **options: ({}, None), lambda record: None)
    mine = {"format": HANDOFF_FORMAT, "code": "c", "root": "/r", "folder": "/r/.cairn"}
    replies: list[dict[str, Any] | None] = []
    caller = threading.Thread(target=lambda: replies.append(rounds.asked(mine, mine)))
    caller.start()
    time.sleep(0.1)
    assert caller.is_alive()  # waiting for the first index
    rounds.started.set()  # what the watch's end does
    caller.join(timeout=ROUND_TIMEOUT_S)
    assert replies == [None]
    folder = tmp_path / "repo" / ".cairn"
    folder.mkdir(parents=True)
    server = HandoffServer(folder)
    assert server.bind()
    try:
        server.serve(lambda request: None, lambda: "its first index")
        assert ask_watch(folder, {"n": 1}) is None
    finally:
        server.close()
