"""The background watch ``cairn index`` leaves (issue 20): started detached after a
one-shot index, it answers the next ``cairn index``, ends on ``cairn watch --stop``, when
idle, when its index folder or tree is removed, gives way to a foreground watch, and is
replaced when a ``cairn index`` with other options finds it; none is started where the
environment says so."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from codegraph_expect import FIXTURES, ROUND_TIMEOUT_S

from cairn.codegraph.daemon import (
    DAEMON_ENV,
    IDLE_EXIT_S,
    LOG_FILENAME,
    IndexOptions,
    daemon_refusal,
    watch_arguments,
    watch_environment,
)
from cairn.codegraph.handoff import process_alive, socket_path, watch_answers
from cairn.codegraph.stamp import STAMP_FILENAME
from cairn.codegraph.watch import watch_repository

NEW_NAME = "daemon_answered_helper_qxz"
EXIT_TIMEOUT_S = 60.0


def _env(**extra: str) -> dict[str, str]:
    """The environment of a ``cairn`` subprocess: a background watch wanted (the test
    session switches it off), no CI, one worker."""
    env = {key: value for key, value in os.environ.items() if key not in ("CI", DAEMON_ENV)}
    return {**env, DAEMON_ENV: "1", **extra}


def _cairn(*args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "cairn.cli", *args, "--json"],
        env=_env() if env is None else env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr + done.stdout
    reply = json.loads(done.stdout)
    assert isinstance(reply, dict)
    return reply


def _wait(condition: Any, what: str, timeout: float = EXIT_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _records(folder: Path) -> list[dict[str, Any]]:
    log = folder / LOG_FILENAME
    if not log.exists():
        return []
    lines = log.read_text().splitlines()
    return [json.loads(line) for line in lines if line.startswith("{")]


_STARTED: list[int] = []
"""Every background watch a test saw started (``_started``), ended after the test."""

_CHILDREN: list[subprocess.Popen[str]] = []
"""Every watch a test ran itself (``_background``), ended after the test."""


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[Path]:
    tree = tmp_path / "repo"
    shutil.copytree(FIXTURES / "flask_app", tree)
    _STARTED.clear()
    _CHILDREN.clear()
    yield tree
    # Whatever a test left running ends with it (a failed assertion included), even one
    # started so recently that it has no socket yet to be asked through.
    for child in _CHILDREN:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.communicate()
    running = [pid for pid in _STARTED if _is_watch(pid)]
    for pid in running:
        os.kill(pid, signal.SIGTERM)
    for pid in running:
        with contextlib.suppress(AssertionError):
            _wait(lambda pid=pid: not process_alive(pid), f"watch {pid} to end", EXIT_TIMEOUT_S)
        if _is_watch(pid):
            os.kill(pid, signal.SIGKILL)


def _is_watch(pid: int) -> bool:
    """Whether ``pid`` is still a running ``cairn watch`` (not a reused number)."""
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return process_alive(pid) and b"cairn.cli\x00watch" in command


def _started(summary: dict[str, Any]) -> int:
    daemon = summary["daemon"]
    assert daemon["started"] is True, daemon
    assert daemon["idle_exit_seconds"] == IDLE_EXIT_S
    assert Path(daemon["log"]).is_absolute() and daemon["log"].endswith(f".cairn/{LOG_FILENAME}")
    pid = daemon["pid"]
    assert isinstance(pid, int)
    _STARTED.append(pid)
    assert process_alive(pid)
    return pid


def _ready(folder: Path) -> None:
    """The background watch's first index is done (its round 0 record is logged)."""
    _wait(lambda: any(r.get("round") == 0 for r in _records(folder)), "round 0", ROUND_TIMEOUT_S)


def test_index_leaves_a_watch_that_answers_the_next_index_and_stops(repo: Path) -> None:
    folder = repo / ".cairn"
    first = _cairn("index", str(repo), "--workers", "1")
    pid = _started(first)
    assert "watch" not in first  # indexed in its own process
    _ready(folder)
    assert watch_answers(folder)

    views = repo / "app" / "views.py"
    views.write_text(views.read_text() + f"\n\ndef {NEW_NAME}():\n    return 1\n")
    second = _cairn("index", str(repo), "--workers", "1")
    assert second["watch"]["pid"] == pid  # the background watch indexed for it
    assert "daemon" not in second  # and no second one was started
    ids = subprocess.run(
        [sys.executable, "-m", "cairn.cli", "search", NEW_NAME, "--db", str(folder / "cairn.db")],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    assert f"app/views.py#{NEW_NAME}" in ids

    stopped = _cairn("watch", "--stop", str(repo))
    assert stopped == {"stopped": True, "pid": pid, "folder": str(folder)}
    assert not process_alive(pid)
    assert not socket_path(folder).exists()
    # Stopped, it stamped its last round: the next index finds nothing changed.
    third = _cairn("index", str(repo), "--no-daemon")
    assert third.get("unchanged") is True and "daemon" not in third


def test_stop_without_a_watch_is_a_clear_error(repo: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "cairn.cli", "watch", "--stop", str(repo)],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1
    assert "[not_found] no cairn watch keeps" in done.stderr


def test_no_daemon_flag_and_environment_start_none(repo: Path) -> None:
    flagged = _cairn("index", str(repo), "--workers", "1", "--no-daemon")
    assert "daemon" not in flagged
    assert not socket_path(repo / ".cairn").exists()
    off = _cairn("index", str(repo), "--force", env=_env(**{DAEMON_ENV: "0"}))
    assert off["daemon"] == {"started": False, "why": f"{DAEMON_ENV}=0"}
    ci = _cairn("index", str(repo), "--force", env={**_env(CI="true"), DAEMON_ENV: ""})
    assert ci["daemon"]["started"] is False and ci["daemon"]["why"].startswith("CI=true")
    assert not socket_path(repo / ".cairn").exists()


@pytest.mark.parametrize(
    ("environ", "refused"),
    [
        ({}, None),
        ({DAEMON_ENV: "0"}, "CAIRN_DAEMON=0"),
        ({DAEMON_ENV: "Off"}, "CAIRN_DAEMON=Off"),
        ({DAEMON_ENV: "1"}, None),
        ({"CI": "true"}, "CI=true (set CAIRN_DAEMON=1 to start one anyway)"),
        ({"CI": "1", DAEMON_ENV: "yes"}, None),
        ({"CI": "false"}, None),
        ({DAEMON_ENV: "sometimes"}, "CAIRN_DAEMON='sometimes' is neither 0 nor 1"),
    ],
)
def test_daemon_refusal(environ: dict[str, str], refused: str | None) -> None:
    assert daemon_refusal(environ) == refused


def test_watch_arguments_carry_the_index_options(tmp_path: Path) -> None:
    excludes = ("vendor/**", "*.gen.py")
    options = IndexOptions(tmp_path, tmp_path / "out", 3, excludes, False, "minilm")
    arguments = watch_arguments(options, idle_exit=90)
    assert arguments[:6] == [sys.executable, "-P", "-m", "cairn.cli", "watch", str(tmp_path)]
    tail = arguments[6:]
    assert tail == [
        "--json",
        "--idle-exit",
        "90",
        "--out",
        str(tmp_path / "out"),
        "--workers",
        "3",
        "--exclude",
        "vendor/**",
        "--exclude",
        "*.gen.py",
        "--no-load",
        "--embedder",
        "minilm",
    ]


def _background(repo: Path, *extra: str) -> subprocess.Popen[str]:
    """A ``cairn watch --idle-exit`` as ``cairn index`` starts it, output piped here."""
    watch = subprocess.Popen(
        [sys.executable, "-m", "cairn.cli", "watch", str(repo), "--json", "--workers", "1", *extra],
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    _CHILDREN.append(watch)
    return watch


def _ended(watch: subprocess.Popen[str]) -> list[dict[str, Any]]:
    try:
        out, _ = watch.communicate(timeout=ROUND_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(watch.pid, signal.SIGKILL)
        raise
    assert watch.returncode == 0, out
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def test_an_idle_background_watch_ends(repo: Path) -> None:
    started = time.monotonic()
    lines = _ended(_background(repo, "--idle-exit", "1"))
    assert [line["round"] for line in lines if "round" in line] == [0]
    assert lines[-1] == {"left": "no cairn index asked for 1 s"}
    assert time.monotonic() - started < ROUND_TIMEOUT_S
    assert not socket_path(repo / ".cairn").exists()


def test_a_background_watch_ends_when_its_index_folder_is_removed(repo: Path) -> None:
    watch = _background(repo, "--idle-exit", "600")
    _wait(lambda: watch_answers(repo / ".cairn"), "the socket", ROUND_TIMEOUT_S)
    _ready_or_log(watch, repo)
    shutil.rmtree(repo / ".cairn")
    lines = _ended(watch)
    assert lines[-1]["left"].startswith("its socket ")
    assert not (repo / ".cairn").exists()  # it wrote nothing after


def _ready_or_log(watch: subprocess.Popen[str], repo: Path) -> None:
    """Wait for the first index to be done with the folder: the stamp its round 0 writes
    on a quiet pass after it (until then the folder is still written to)."""
    _wait(
        lambda: (repo / ".cairn" / STAMP_FILENAME).exists() or watch.poll() is not None,
        "the first index",
        ROUND_TIMEOUT_S,
    )
    assert watch.poll() is None


def test_a_foreground_watch_takes_over_from_a_background_one(repo: Path) -> None:
    pid = _started(_cairn("index", str(repo), "--workers", "1"))
    _ready(repo / ".cairn")
    rounds: list[dict[str, Any]] = []
    stop = threading.Event()
    thread = threading.Thread(
        target=watch_repository,
        args=(repo,),
        kwargs={"on_round": rounds.append, "workers": 1, "stop": stop},
        daemon=True,
    )
    thread.start()
    try:
        _wait(lambda: bool(rounds), "the foreground watch's first index", ROUND_TIMEOUT_S)
        assert not process_alive(pid)  # the background watch gave way
        assert thread.is_alive()
    finally:
        stop.set()
        thread.join(ROUND_TIMEOUT_S)


def test_an_index_with_other_options_replaces_the_background_watch(repo: Path) -> None:
    pid = _started(_cairn("index", str(repo), "--workers", "1"))
    _ready(repo / ".cairn")
    other = _cairn("index", str(repo), "--workers", "1", "--exclude", "tests/**")
    assert other["watch"]["pid"] == pid and "excludes differs" in other["watch"]["refused"]
    assert not process_alive(pid)  # stopped before this process indexed
    replaced = _started(other)
    assert replaced != pid
    _ready(repo / ".cairn")
    again = _cairn("index", str(repo), "--workers", "1", "--exclude", "tests/**")
    assert again["watch"]["pid"] == replaced


def test_a_background_watch_ends_when_its_tree_is_removed(repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "index"
    watch = _background(repo, "--idle-exit", "600", "--out", str(out))
    _wait(lambda: (out / "graph.cairn").exists() or watch.poll() is not None, "round 0")
    assert watch.poll() is None
    shutil.rmtree(repo)
    lines = _ended(watch)
    assert lines[-1] == {"left": f"{repo} is gone"}
    assert not socket_path(out).exists()


@pytest.mark.parametrize(
    ("generated_at", "epoch"),
    [
        (None, None),
        ("2024-01-01T00:00:00Z", "1704067200"),
        ("1970-01-01T00:00:00Z", "0"),
        ("2024-01-01", None),  # any string is a valid generated_at; no epoch writes it
        ("release 7", None),
    ],
)
def test_watch_environment_fixes_the_callers_generated_at(
    generated_at: str | None, epoch: str | None
) -> None:
    env = watch_environment({"PATH": "/bin", "SOURCE_DATE_EPOCH": "5"}, generated_at)
    assert env["PATH"] == "/bin"
    assert env["SOURCE_DATE_EPOCH"] == (epoch or "5")


def test_the_watchs_own_round_answers_an_index_with_the_same_generated_at(repo: Path) -> None:
    stamp = "2024-01-01T00:00:00Z"
    pid = _started(_cairn("index", str(repo), "--workers", "1", "--generated-at", stamp))
    folder = repo / ".cairn"
    _ready(folder)
    views = repo / "app" / "views.py"
    views.write_text(views.read_text() + f"\n\ndef {NEW_NAME}():\n    return 1\n")
    _wait(lambda: any(r.get("round") == 1 for r in _records(folder)), "the watch's own round")
    answered = _cairn("index", str(repo), "--workers", "1", "--generated-at", stamp)
    assert answered["watch"]["pid"] == pid
    assert answered.get("unchanged") is True  # no round ran for it: the watch's was the one
    assert f'"generated_at":"{stamp}"'.encode() in (folder / "graph.cairn").read_bytes()


def test_the_background_watch_never_imports_the_indexed_trees_modules(repo: Path) -> None:
    # It runs in the tree: were the working directory on its sys.path, this typer.py (a
    # module every cairn command imports) would run instead of the real one.
    marker = repo.parent / "imported"
    (repo / "typer.py").write_text(
        f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n"
        "raise SystemExit('the tree was imported')\n"
    )
    _started(_cairn("index", str(repo), "--workers", "1"))
    _ready(repo / ".cairn")
    assert not marker.exists()


def test_force_stops_the_background_watch_and_leaves_a_new_one(repo: Path) -> None:
    pid = _started(_cairn("index", str(repo), "--workers", "1"))
    _ready(repo / ".cairn")
    forced = _cairn("index", str(repo), "--workers", "1", "--force")
    assert "watch" not in forced and not forced.get("unchanged")  # indexed whole, itself
    assert not process_alive(pid)
    assert _started(forced) != pid
