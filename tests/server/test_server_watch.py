"""``cairn mcp --watch`` and ``cairn serve --watch`` (issue 20): a server that keeps the
index it serves fresh in its own process, so an edit is answered without another command.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from server_helpers import serve_process
from typer.testing import CliRunner

from cairn.cli import app
from cairn.codegraph.beside import WatchBeside
from cairn.codegraph.handoff import socket_path
from cairn.errors import ConflictError, ValidationError

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
NEW_NAME = "brand_new_helper_zyx"
ANSWER_TIMEOUT_S = 60.0
"""Longest a test waits for a round (the first index of the fixture takes ~1-3 s)."""
LONG_INDEX_MODULES = 2_000
"""Modules of 80 functions each: their first index extracts for several seconds."""
LEAVE_BOUND_S = 10.0
"""A stopped server with a round still running ends well within this (~0.3 s here)."""


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURES / "flask_app", repo)
    return repo


def _add_function(repo: Path) -> None:
    views = repo / "app" / "views.py"
    views.write_text(views.read_text() + f"\n\ndef {NEW_NAME}():\n    return 1\n")


def _text(result: Any) -> str:
    return "".join(getattr(part, "text", "") for part in result.content)


def _found(result: Any) -> bool:
    """A ``cairn_show`` answer that names a symbol (not an error, not ``not_found``)."""
    return not result.is_error and json.loads(_text(result))["status"] != "not_found"


async def _until(
    call: Callable[[], Awaitable[Any]], done: Callable[[Any], bool], seen: list[Any]
) -> Any:
    """Call until ``done`` says yes (every answer kept in ``seen``), or fail on timeout."""
    deadline = time.monotonic() + ANSWER_TIMEOUT_S
    while True:
        result = await call()
        seen.append(result)
        if done(result):
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"no answer in {ANSWER_TIMEOUT_S} s; last: {_text(result)}")
        await anyio.sleep(0.1)


def test_mcp_watch_builds_the_index_and_serves_each_edit(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    log = tmp_path / "mcp.log"
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "cairn.cli", "mcp", "--watch", str(repo)]
    )
    early: list[Any] = []
    later: list[Any] = []

    async def session() -> Any:
        with log.open("w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as streams,
                ClientSession(streams[0], streams[1]) as client,
            ):
                await client.initialize()  # answered while the first index runs

                def show(name: str) -> Callable[[], Awaitable[Any]]:
                    return lambda: client.call_tool("cairn_show", {"name": name})

                await _until(show("get_user"), _found, early)
                missing = await client.call_tool("cairn_show", {"name": NEW_NAME})
                assert json.loads(_text(missing))["status"] == "not_found"
                _add_function(repo)
                return await _until(show(NEW_NAME), _found, later)

    found = anyio.run(session)
    answer = found.structured_content  # the full answer, as HTTP gives it
    assert answer["document"]["ref"]["id"] == f"function:app/views.py#{NEW_NAME}"
    assert answer["source"]["lines"][0] == f"def {NEW_NAME}():"
    # A call made before the first index was done heard that it runs, never the
    # "run `cairn index`" advice a server without --watch gives.
    for result in early[:-1]:
        assert "is still running (--watch)" in _text(result), _text(result)
    # Each round was logged on stderr, and the watch stopped with the session: its
    # socket is gone.
    said = log.read_text()
    assert "cairn watch: indexed:" in said
    assert "cairn watch: round 1: 1 changed (app/views.py)" in said
    assert not socket_path(repo / ".cairn").exists()


def test_serve_watch_indexes_first_then_follows_edits(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    db_path = repo / ".cairn" / "cairn.db"
    log = tmp_path / "serve.log"
    with serve_process(db_path, log, extra=("--watch", str(repo))) as server:
        key = server.admin_key
        assert key is not None  # the database was built before the server started

        def show(name: str) -> httpx.Response:
            with httpx.Client(base_url=server.url) as http:
                return http.post(
                    "/v1/symbols/show",
                    json={"database": "main", "name": name},
                    headers={"Authorization": f"Bearer {key}"},
                )

        assert show("get_user").json()["resolution"]["status"] != "not_found"
        assert show(NEW_NAME).json()["resolution"]["status"] == "not_found"
        _add_function(repo)
        deadline = time.monotonic() + ANSWER_TIMEOUT_S
        while (reply := show(NEW_NAME)).json()["resolution"]["status"] == "not_found":
            assert reply.status_code == 200, reply.text
            assert time.monotonic() < deadline, "the edit was never served"
            time.sleep(0.1)
        assert reply.json()["source"]["lines"][0] == f"def {NEW_NAME}():"
    said = log.read_text()
    assert f"--watch: indexing {repo} first" in said
    assert "cairn watch: round 1: 1 changed (app/views.py)" in said
    assert not socket_path(repo / ".cairn").exists()


def test_a_second_watch_of_the_folder_ends_only_the_watch(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    rounds: list[Mapping[str, Any]] = []
    ends: list[BaseException] = []
    with WatchBeside(repo, on_round=rounds.append, on_end=ends.append, workers=1) as first:
        assert first.wait_first(ANSWER_TIMEOUT_S)
        assert first.error is None and first.database.is_file()
        assert [record["round"] for record in rounds] == [0]
        second = WatchBeside(repo, on_round=rounds.append, on_end=ends.append, workers=1)
        with second:
            assert second.wait_first(ANSWER_TIMEOUT_S)
            assert second.stop(ANSWER_TIMEOUT_S)  # it ended on its own, refused
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
        release.wait(ANSWER_TIMEOUT_S)  # round 0 is not done until its report returns

    beside = WatchBeside(repo, on_round=held, on_end=lambda error: None, workers=1)
    assert beside.indexing() is None  # not started: nothing runs
    with beside:
        said = beside.indexing()
        assert said is not None and str(repo.resolve()) in said
        release.set()
        assert beside.wait_first(ANSWER_TIMEOUT_S)
        assert beside.indexing() is None


def test_bad_watch_options_are_typed_errors_before_serving(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="not a directory"):
        WatchBeside(tmp_path / "absent", on_round=lambda record: None, on_end=lambda e: None)
    repo = _repo(tmp_path)
    other = tmp_path / "other.db"
    for command in ("mcp", "serve"):
        result = CliRunner().invoke(app, [command, "--watch", str(repo), "--db", str(other)])
        assert result.exit_code == 1, result.output
        assert "is not the database --watch" in result.output
        result = CliRunner().invoke(app, [command, "--watch", str(tmp_path / "absent")])
        assert result.exit_code == 1 and "not a directory" in result.output
    assert not (repo / ".cairn").exists()  # refused before any work


def _session_processes(session: int) -> list[int]:
    """The live processes of a session (``/proc``), zombies left out."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # ended while listed
        if int(fields[3]) == session and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found


def test_a_server_stopped_during_a_long_first_index_leaves_at_once(tmp_path: Path) -> None:
    # Big enough that the first index is still extracting a second after it starts.
    package = tmp_path / "repo" / "pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    body = "".join(
        f"def f{j}(x):\n    return g{j}(x)\n\ndef g{j}(y):\n    return y\n\n" for j in range(40)
    )
    for number in range(LONG_INDEX_MODULES):
        (package / f"m{number}.py").write_text(body)
    repo = package.parent
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
        deadline = time.monotonic() + ANSWER_TIMEOUT_S
        while not socket_path(repo / ".cairn").exists():  # bound just before round 0
            assert process.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(1.0)
        assert process.stdin is not None
        process.stdin.close()
        closed = time.monotonic()
        status = process.wait(timeout=ANSWER_TIMEOUT_S)
        left = time.monotonic() - closed
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
            for pid in _session_processes(process.pid):  # its workers, if it hung
                os.kill(pid, signal.SIGKILL)
    assert process.stderr is not None
    said = process.stderr.read().decode()
    process.stderr.close()
    assert status == 0, said
    # Before, the exit handlers waited for the pool's workers while the round waited
    # for them: the process never ended.
    assert left < LEAVE_BOUND_S, said
    assert "left unfinished" in said
    assert not (repo / ".cairn" / "cairn.db").exists()  # built aside: never half there
    deadline = time.monotonic() + LEAVE_BOUND_S
    while _session_processes(process.pid):  # no worker outlives it
        assert time.monotonic() < deadline, _session_processes(process.pid)
        time.sleep(0.05)
