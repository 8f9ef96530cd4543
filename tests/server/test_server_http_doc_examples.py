"""Every curl example of docs/http.md runs as written against a served code index."""

from __future__ import annotations

import json
import re
import shlex
import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
from server_helpers import serve_process
from typer.testing import CliRunner

from cairn.cli import app

HTTP_DOC = Path(__file__).resolve().parents[2] / "docs" / "http.md"
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "flask_app"
EXAMPLES = re.compile(r"## Examples\n\n```bash\n(.*?)```", re.DOTALL)


def _commands(block: str) -> Iterator[list[str]]:
    """Each curl command of the block as its argument list (quotes may span lines)."""
    buffer = ""
    for line in block.splitlines():
        if not buffer and not line.startswith("curl "):
            continue
        buffer += line.removesuffix("\\") + "\n"
        if line.endswith("\\"):
            continue
        try:
            words = shlex.split(buffer)
        except ValueError:  # a quote still open: the command goes on
            continue
        buffer = ""
        yield words


def _request(words: list[str], key: str, url: str) -> httpx.Request:
    """What curl would send for ``words`` (``-s``, ``-H``, ``-X``, ``-d``, one URL)."""
    method, headers, data, target = None, {}, None, None
    rest = iter(words[1:])
    for word in rest:
        if word == "-s":
            continue
        if word == "-H":
            name, value = next(rest).replace("$KEY", key).split(": ", 1)
            headers[name] = value
        elif word == "-X":
            method = next(rest)
        elif word == "-d":
            data = next(rest)
        else:
            assert target is None, f"unexpected argument {word!r}"
            target = word.replace("$URL", url)
    assert target is not None
    verb = method or ("POST" if data is not None else "GET")
    body = None if data is None else data.encode()
    return httpx.Request(verb, target, headers=headers, content=body)


def test_every_documented_curl_example_succeeds(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURE, repo)
    assert CliRunner().invoke(app, ["index", str(repo), "--workers", "1"]).exit_code == 0
    (block,) = EXAMPLES.findall(HTTP_DOC.read_text("utf-8"))
    commands = list(_commands(block))
    # Parsed one for one: a quote left open would swallow the examples after it.
    assert len(commands) == sum(line.startswith("curl ") for line in block.splitlines())
    with (
        serve_process(repo / ".cairn" / "cairn.db", tmp_path / "server.log") as server,
        httpx.Client(timeout=60) as http,
    ):
        key = server.admin_key
        assert key is not None
        answers = {}
        for words in commands:
            request = _request(words, key, server.url)
            response = http.send(request)
            assert response.status_code < 400, (words, response.text)
            answers[request.url.path] = response.json()
    # The code questions answer with what the fixture holds.
    calls = answers["/v1/graph/calls"]
    sites = [site["file"] for edge in calls["edges"] for site in edge["evidence"]["sites"]]
    assert "app/views.py" in sites
    shown = answers["/v1/symbols/show"]
    assert shown["source"]["lines"][0] == "def get_user(user_id):"
    assert answers["/v1/search"]["hits"], json.dumps(answers["/v1/search"])
