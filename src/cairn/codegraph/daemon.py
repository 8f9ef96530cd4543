"""The background watch ``cairn index`` leaves, so the next ``cairn index`` takes a second.

A one-shot ``cairn index`` after an edit parses only what changed, but resolves every
module's calls again, writes graph.cairn whole and starts a fresh interpreter: ~4 s on
the Django package, where a running ``cairn watch`` answers the same command in well
under a second (``cairn.codegraph.handoff``). So, as Gradle, Bazel and Nx do with their
daemons, ``cairn index`` leaves a ``cairn watch --idle-exit`` behind when none runs: it
keeps the index fresh as files change, answers the next ``cairn index`` of the same
folder, and ends once no ``cairn index`` asked it for ``IDLE_EXIT_S``, once its index
folder is removed, or once the tree is gone. Its records go to ``LOG_FILENAME`` in the
index folder. ``cairn watch --stop`` ends it; a foreground ``cairn watch`` (or ``cairn
serve --watch``, ``cairn mcp --watch``) of the folder takes over from it.

None is started with ``--no-daemon``, with ``CAIRN_DAEMON=0``, where the ``CI``
variable is set (a build machine has no next edit; ``CAIRN_DAEMON=1`` starts one
anyway), or where Unix sockets are missing.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = [
    "DAEMON_ENV",
    "IDLE_EXIT_S",
    "LOG_FILENAME",
    "IndexOptions",
    "daemon_refusal",
    "leave_daemon",
    "start_daemon",
    "watch_arguments",
    "watch_environment",
]

DAEMON_ENV = "CAIRN_DAEMON"
"""``0`` (or ``false``, ``no``, ``off``) starts no background watch; ``1`` (or ``true``,
``yes``, ``on``) starts one even where ``CI`` is set."""

IDLE_EXIT_S = 1800.0
"""A background watch ends once no ``cairn index`` asked it for a round for this long
(it holds the index in memory: ~450 MiB for the Django package)."""

LOG_FILENAME = "watch.log"
"""The background watch's round records (JSON Lines) and errors, in the index folder;
each start truncates it."""

_TIMESTAMP = "%Y-%m-%dT%H:%M:%SZ"
"""graph.cairn's ``generated_at`` format (``cairn.artifact.format``)."""

_OFF = frozenset({"0", "false", "no", "off"})
_ON = frozenset({"1", "true", "yes", "on"})


def daemon_refusal(environ: Mapping[str, str] | None = None) -> str | None:
    """Why ``cairn index`` starts no background watch here (``DAEMON_ENV``, ``CI``, no
    Unix sockets), or None when it does."""
    env = os.environ if environ is None else environ
    setting = env.get(DAEMON_ENV, "").strip().lower()
    if setting in _OFF:
        return f"{DAEMON_ENV}={env[DAEMON_ENV]}"
    if setting and setting not in _ON:
        return f"{DAEMON_ENV}={env[DAEMON_ENV]!r} is neither 0 nor 1"
    if not hasattr(socket, "AF_UNIX"):
        return "Unix sockets are not available"
    ci = env.get("CI", "").strip().lower()
    if setting not in _ON and ci and ci not in _OFF:
        return f"CI={env['CI']} (set {DAEMON_ENV}=1 to start one anyway)"
    return None


@dataclass(frozen=True, slots=True)
class IndexOptions:
    """The options of a ``cairn index`` that the background watch it leaves shares."""

    path: str | Path
    out: str | Path | None = None
    workers: int | None = None
    excludes: tuple[str, ...] = ()
    load: bool = True
    embedder: str | None = None


def leave_daemon(options: IndexOptions, *, generated_at: str | None = None) -> dict[str, Any]:
    """What ``cairn index`` leaves behind after indexing in its own process: a background
    watch when ``daemon_refusal`` allows and no watch keeps the folder yet (``started``
    true, with ``start_daemon``'s fields), else why none (``started`` false, ``why``)."""
    from cairn.codegraph.handoff import folder_of, watch_answers

    why = daemon_refusal()
    if why is None and watch_answers(folder_of(options.path, options.out)):
        why = "a cairn watch already keeps this index"
    if why is not None:
        return {"started": False, "why": why}
    try:
        started = start_daemon(options, generated_at=generated_at)
    except OSError as exc:
        return {"started": False, "why": f"it could not be started: {exc}"}
    return {"started": True, **started}


def watch_arguments(options: IndexOptions, idle_exit: float = IDLE_EXIT_S) -> list[str]:
    """The ``cairn watch`` command line of the background watch of these index options."""
    # -P: the working directory (the indexed tree) is not put on sys.path, so a module
    # of the tree named like one Cairn imports (typer.py, cairn/) is never run.
    arguments = [
        sys.executable,
        "-P",
        "-m",
        "cairn.cli",
        "watch",
        str(Path(options.path).resolve()),
        "--json",
        "--idle-exit",
        f"{idle_exit:g}",
    ]
    if options.out is not None:
        arguments += ["--out", str(Path(options.out).resolve())]
    if options.workers is not None:
        arguments += ["--workers", str(options.workers)]
    for glob in options.excludes:
        arguments += ["--exclude", glob]
    if not options.load:
        arguments.append("--no-load")
    if options.embedder is not None:
        arguments += ["--embedder", options.embedder]
    return arguments


def watch_environment(environ: Mapping[str, str], generated_at: str | None) -> dict[str, str]:
    """The background watch's environment: the caller's, with ``SOURCE_DATE_EPOCH`` set to
    a fixed ``generated_at`` written as an epoch can be (``YYYY-MM-DDTHH:MM:SSZ``). Its
    own rounds then write what the caller wrote, so a next ``cairn index`` with the same
    option, after an edit the watch already indexed, is answered without a round of its
    own; a ``generated_at`` no epoch gives is asked for by each caller instead."""
    env = dict(environ)
    if generated_at is None:
        return env
    try:
        moment = datetime.strptime(generated_at, _TIMESTAMP).replace(tzinfo=UTC)
    except ValueError:
        return env
    epoch = int(moment.timestamp())
    if epoch >= 0 and datetime.fromtimestamp(epoch, UTC).strftime(_TIMESTAMP) == generated_at:
        env["SOURCE_DATE_EPOCH"] = str(epoch)
    return env


def start_daemon(
    options: IndexOptions,
    *,
    generated_at: str | None = None,
    idle_exit: float = IDLE_EXIT_S,
) -> dict[str, Any]:
    """Start the background watch of ``options.path`` (detached: its own session, no
    terminal, its output in ``LOG_FILENAME``) and return what ``cairn index`` reports of
    it: ``pid``, ``log`` and ``idle_exit_seconds``. ``generated_at``: the caller's fixed
    one, which the watch's own rounds then write too (``watch_environment``)."""
    from cairn.codegraph.handoff import folder_of

    folder = folder_of(options.path, options.out).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / LOG_FILENAME
    arguments = watch_arguments(options, idle_exit)
    with open(log, "wb") as sink:
        child = subprocess.Popen(
            arguments,
            env=watch_environment(os.environ, generated_at),
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # Ctrl-C in the terminal is not for it
            close_fds=True,
            cwd=str(Path(options.path).resolve()),
        )
    return {"pid": child.pid, "log": str(log), "idle_exit_seconds": idle_exit}
