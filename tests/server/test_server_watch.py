"""``cairn mcp --watch`` and ``cairn serve --watch`` (issue 20): a server that keeps the
index it serves fresh in its own process, so an edit is answered without another command.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from server_helpers import flask_checkout, serve_process
from typer.testing import CliRunner

import cairn
from cairn.cli import app
from cairn.codegraph.handoff import socket_path
from cairn.errors import NotFoundError

NEW_NAME = "brand_new_helper_zyx"
ANSWER_TIMEOUT_S = 60.0
"""Longest a test waits for a round (the first index of the fixture takes ~1-3 s)."""


def _repo(tmp_path: Path) -> Path:
    return flask_checkout(tmp_path / "repo")


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


def test_bad_watch_options_are_typed_errors_before_serving(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    other = tmp_path / "other.db"
    for command in ("mcp", "serve"):
        result = CliRunner().invoke(app, [command, "--exclude", "vendor/"])
        assert result.exit_code == 1 and "--exclude applies to --watch" in result.output
        result = CliRunner().invoke(app, [command, "--watch", str(repo), "--db", str(other)])
        assert result.exit_code == 1, result.output
        assert "is not the database --watch" in result.output
        result = CliRunner().invoke(app, [command, "--watch", str(tmp_path / "absent")])
        assert result.exit_code == 1 and "not a directory" in result.output
    assert not (repo / ".cairn").exists()  # refused before any work


def test_the_watch_of_a_server_skips_what_exclude_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _repo(tmp_path)
    served: list[Path] = []

    def until_indexed(target: Path, *, api_key: str | None, pending: Any) -> None:
        deadline = time.monotonic() + ANSWER_TIMEOUT_S
        while pending() is not None or not Path(target).is_file():
            assert time.monotonic() < deadline, "the first index never ended"
            time.sleep(0.05)
        served.append(Path(target))  # the session ends here: the watch is stopped

    monkeypatch.setattr("cairn.server.mcp.run_stdio", until_indexed)
    result = CliRunner().invoke(app, ["mcp", "--watch", str(repo), "--exclude", "app/views.py"])
    assert result.exit_code == 0, result.output
    assert served == [repo.resolve() / ".cairn" / "cairn.db"]
    with cairn.open(served[0]) as db:
        assert db.get_document("files", "file:app/services.py") is not None
        with pytest.raises(NotFoundError):  # excluded: never indexed
            db.get_document("files", "file:app/views.py")
    assert not socket_path(repo / ".cairn").exists()
