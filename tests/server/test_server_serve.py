"""``cairn serve``: first-start admin key, the environment key, loopback, the CLI."""

from __future__ import annotations

import io
import os
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from server_helpers import SERVER_START_SECONDS, serve_process
from typer.testing import CliRunner

import cairn
from cairn.cli import app
from cairn.errors import ConflictError, UnauthenticatedError, ValidationError
from cairn.server.bootstrap import ensure_admin
from cairn.server.limits import ADMIN_KEY_ENV, ADMIN_PRINCIPAL_ID
from cairn.server.serve import bind_socket, serve
from cairn.store import issue_api_key
from cairn.store.apply import load_principal


def _status(url: str, key: str | None) -> int:
    headers = {} if key is None else {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=url) as http:
        return http.get("/v1/principal", headers=headers).status_code


def test_first_start_prints_one_admin_key_and_a_restart_prints_none(tmp_path: Path) -> None:
    db_path = tmp_path / "cairn.db"
    with serve_process(db_path, tmp_path / "first.log") as first:
        key = first.admin_key
        assert key is not None and key.startswith("cairn_")
        assert first.url.startswith("http://127.0.0.1:")
        assert _status(first.url, key) == 200
        assert _status(first.url, None) == 401
    with serve_process(db_path, tmp_path / "second.log") as second:
        assert [event["event"] for event in second.events] == ["listening"]
        assert _status(second.url, key) == 200
    # Only a verifier is stored, never the key.
    with cairn.open(db_path) as db:
        assert key.encode() not in db_path.read_bytes()
        assert db.authenticate(key).id == ADMIN_PRINCIPAL_ID


def test_the_environment_key_is_registered_on_first_start(tmp_path: Path) -> None:
    token = issue_api_key().token
    db_path = tmp_path / "cairn.db"
    with serve_process(db_path, tmp_path / "env.log", env={ADMIN_KEY_ENV: token}) as server:
        (created, _) = server.events
        assert created["event"] == "admin_created"
        assert created["api_key"] is None and created["from_env"] is True
        assert _status(server.url, token) == 200
    assert token.split(".")[1] not in (tmp_path / "env.log").read_text()


def test_a_malformed_environment_key_stops_the_start(tmp_path: Path) -> None:
    command = [
        sys.executable,
        "-c",
        "from cairn.cli import main; main()",
        "serve",
        "--db",
        str(tmp_path / "cairn.db"),
        "--port",
        "0",
    ]
    env = {**os.environ, ADMIN_KEY_ENV: "not-a-key"}
    done = subprocess.run(
        command, capture_output=True, text=True, env=env, timeout=SERVER_START_SECONDS
    )
    assert done.returncode == 1
    assert "validation" in done.stderr and ADMIN_KEY_ENV in done.stderr


def test_ensure_admin_in_process(tmp_path: Path) -> None:
    with cairn.open(tmp_path / "cairn.db") as db:
        first = ensure_admin(db, {})
        assert first.created and first.token is not None
        again = ensure_admin(db, {})
        assert not again.created and again.token is None and again.env_key_valid is None
        assert ensure_admin(db, {ADMIN_KEY_ENV: first.token}).env_key_valid is True
        assert ensure_admin(db, {ADMIN_KEY_ENV: issue_api_key().token}).env_key_valid is False
        with db.read_cut() as cut:
            admin = load_principal(cut.conn, ADMIN_PRINCIPAL_ID)
        assert admin is not None and admin.is_admin(db.name, "*")
        with pytest.raises(UnauthenticatedError):
            db.authenticate(issue_api_key().token)


def test_bind_socket_refuses_a_taken_port_and_bad_hosts() -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        with pytest.raises(ConflictError):
            bind_socket("127.0.0.1", port).close()
    with pytest.raises(ValidationError):
        bind_socket("no-such-host.invalid", 0).close()


def test_serve_reports_a_taken_port_before_serving(tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    with socket.create_server(("127.0.0.1", 0)) as taken, pytest.raises(ConflictError):
        serve(tmp_path / "cairn.db", port=taken.getsockname()[1], environ={}, out=out, err=err)
    assert out.getvalue() == ""


def test_serve_without_a_database_found_fails_cleanly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["serve"])
    assert result.exit_code == 1
    assert "not_found" in result.output or "not_found" in (result.stderr or "")
