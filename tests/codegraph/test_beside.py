"""``cairn.codegraph.beside``: a watch on a thread of a server, its end said without
stopping the server, and a server that stops while a round runs ends at once.
(End to end through ``cairn mcp --watch`` and ``cairn serve --watch``:
tests/server/test_server_watch.py.)"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from codegraph_expect import (
    FIXTURES,
    ROUND_TIMEOUT_S,
    long_package,
    session_processes,
    wait_session_gone,
)

from cairn.codegraph.beside import WatchBeside
from cairn.codegraph.handoff import socket_path
from cairn.errors import ConflictError, ValidationError

LEAVE_BOUND_S = 10.0
"""A stopped server with a round still running ends well within this (~0.3 s here)."""


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURES / "flask_app", repo)
    return repo


def test_a_second_watch_of_the_folder_ends_only_the_watch(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    rounds: list[Mapping[str, Any]] = []
    ends: list[BaseException] = []
    with WatchBeside(repo, on_round=rounds.append, on_end=ends.append, workers=1) as first:
        assert first.wait_first(ROUND_TIMEOUT_S)
        assert first.error is None and first.database.is_file()
        assert [record["round"] for record in rounds] == [0]
        second = WatchBeside(repo, on_round=rounds.append, on_end=ends.append, workers=1)
        with second:
            assert second.wait_first(ROUND_TIMEOUT_S)
            assert second.stop(ROUND_TIMEOUT_S)  # it ended on its own, refused
        assert isinstance(second.error, ConflictError)
        assert ends == [second.error]
        assert second.indexing() is None
        assert [record["round"] for record in rounds] == [0]  # the second ran none
    assert first.stop(0.0) and first.error is None
    assert not socket_path(repo / ".cairn").exists()


def test_indexing_says_so_only_while_the_first_index_runs(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    release = threading.Event()

    def held(record: Mapping[str, Any]) -> None:
        release.wait(ROUND_TIMEOUT_S)  # round 0 is not done until its report returns

    beside = WatchBeside(repo, on_round=held, on_end=lambda error: None, workers=1)
    assert beside.indexing() is None  # not started: nothing runs
    with beside:
        said = beside.indexing()
        assert said is not None and str(repo.resolve()) in said
        release.set()
        assert beside.wait_first(ROUND_TIMEOUT_S)
        assert beside.indexing() is None


def test_a_path_that_is_no_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="not a directory"):
        WatchBeside(tmp_path / "absent", on_round=lambda record: None, on_end=lambda e: None)


def test_a_server_stopped_during_a_long_first_index_leaves_at_once(tmp_path: Path) -> None:
    repo = long_package(tmp_path / "repo")
    grace = "import sys, cairn.codegraph.beside as b; b.STOP_GRACE_S = 0.2; "
    code = grace + "from cairn.cli import main; sys.argv[0] = 'cairn'; main()"
    process = subprocess.Popen(
        [sys.executable, "-c", code, "mcp", "--watch", str(repo)],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its workers are found by session below
    )
    try:
        deadline = time.monotonic() + ROUND_TIMEOUT_S
        while not socket_path(repo / ".cairn").exists():  # bound just before round 0
            assert process.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(1.0)  # the pool is extracting
        assert process.stdin is not None
        process.stdin.close()
        closed = time.monotonic()
        status = process.wait(timeout=ROUND_TIMEOUT_S)
        left = time.monotonic() - closed
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
            for pid in session_processes(process.pid):  # its workers, if it hung
                os.kill(pid, signal.SIGKILL)
    assert process.stderr is not None
    said = process.stderr.read().decode()
    process.stderr.close()
    assert status == 0, said
    # Before, the exit handlers waited for the pool's workers while the round waited
    # for them: the process never ended.
    assert left < LEAVE_BOUND_S, said
    assert "left unfinished" in said
    # Its semaphores were unlinked as it left: the resource tracker has none to warn of.
    assert "leaked" not in said
    assert not (repo / ".cairn" / "cairn.db").exists()  # built aside: never half there
    wait_session_gone(process.pid, LEAVE_BOUND_S)  # no worker outlives it


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.mark.parametrize("server", ["mcp", "serve"])
def test_ctrl_c_ends_a_watching_server_during_its_first_index(tmp_path: Path, server: str) -> None:
    """SIGINT to ``cairn mcp --watch`` or ``cairn serve --watch`` while its first index
    runs: it ends with status 130 at once, its workers with it, and no database is half
    there. Before, the stdio transport's stdin thread kept ``cairn mcp`` waiting for
    input that never came, and ``cairn serve`` waited ``STOP_GRACE_S`` (30 s) for the
    round and ended with status 1."""
    repo = long_package(tmp_path / "repo")
    extra = ["--port", str(_free_port())] if server == "serve" else []
    process = subprocess.Popen(
        [sys.executable, "-m", "cairn.cli", server, "--watch", str(repo), *extra],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        deadline = time.monotonic() + ROUND_TIMEOUT_S
        while len(session_processes(process.pid)) < 4:  # its pool is up: round 0 runs
            assert process.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(1.0)
        process.send_signal(signal.SIGINT)
        status = process.wait(timeout=LEAVE_BOUND_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for pid in session_processes(process.pid):
            os.kill(pid, signal.SIGKILL)
    assert process.stderr is not None
    said = process.stderr.read().decode()
    process.stderr.close()
    assert process.stdin is not None
    process.stdin.close()
    assert status == 130, said
    assert "Traceback" not in said and "leaked" not in said, said
    assert not (repo / ".cairn" / "cairn.db").exists()  # built aside: never half there
    wait_session_gone(process.pid, LEAVE_BOUND_S)  # no worker outlives it
