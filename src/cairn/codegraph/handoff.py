"""``cairn index`` through a running ``cairn watch``: one process indexes a folder at a time.

A watch keeps everything an index needs in memory (the extracts, the Python resolution
of every module, the printed segments of graph.cairn, the load's keys), so its round
after an edit takes a fraction of a one-shot ``cairn index``. While it runs it listens on
a Unix socket (``socket_path``: in the index folder, or under the temporary directory
when that path is too long for ``AF_UNIX``); a ``cairn index`` of the same folder asks it
for a round (``ask_watch``) instead of indexing the same files a second time beside it,
and prints that round's summary. The round scans the whole tree as any round does, so it
indexes every edit made before the request, whether or not its file events have arrived.

The request names the options that shape the outputs (root, index folder, excludes,
loading or not, the embedder asked for, Cairn's own code) and the ``generated_at`` to
write (the option as given and the caller's ``SOURCE_DATE_EPOCH``); a watch whose
options differ refuses and says which one, and the caller indexes in its own process,
as it does when no watch answers. One JSON line each way, and while the request waits
for the watch (its first index, another round) or its round runs, a progress line every
``HEARTBEAT_S``: a caller that hears nothing for ``SILENCE_TIMEOUT_S`` (a watch stopped
with Ctrl+Z, or hung) stops waiting and indexes in its own process, and a long round is
never mistaken for a hung watch. The caller imports nothing of the pipeline before it
knows whether a watch answers (~0.1 s instead of ~0.5 s).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import socket
import struct
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from cairn.errors import ConflictError, from_problem

__all__ = [
    "HANDOFF_FORMAT",
    "SOCKET_FILENAME",
    "HandoffServer",
    "ask_to_index",
    "ask_to_stop",
    "ask_watch",
    "folder_of",
    "handoff_options",
    "process_alive",
    "raise_problem",
    "refusal",
    "socket_path",
    "watch_answers",
]

HANDOFF_FORMAT = "cairn.codegraph.handoff/2"
"""The request and reply format; a peer speaking another is refused."""

SOCKET_FILENAME = "watch.sock"
"""The watch's socket in the index folder (when the path fits ``MAX_SOCKET_PATH``)."""

MAX_SOCKET_PATH = 100
"""Longest socket path used in place: ``AF_UNIX`` addresses hold 108 bytes on Linux and
104 on macOS, with their terminating NUL."""

MAX_REQUEST_BYTES = 1024 * 1024
"""A request line longer than this is refused (a request is a few hundred bytes)."""

MAX_REPLY_BYTES = 256 * 1024 * 1024
"""A reply line longer than this is not read (the caller indexes in its own process)."""

CONNECT_TIMEOUT_S = 5.0
"""How long connecting, sending the request and sending one line to a caller may take;
the reply is waited for as long as the round takes, while progress lines come."""

HEARTBEAT_S = 1.0
"""While a request waits or its round runs, the watch sends a progress line this often."""

SILENCE_TIMEOUT_S = 15.0
"""A caller that hears nothing from the watch for this long stops waiting (the watch is
stopped or hung; a working one sends a progress line every ``HEARTBEAT_S``) and indexes
in its own process."""

ACCEPT_BACKLOG = 16
"""Callers that may wait to be answered while a round runs (each has its own thread)."""

STOP_WAIT_S = 120.0
"""How long ``ask_to_stop`` waits for a stopping watch to close its socket (it ends after
the round it is running; a first index of a large tree can take a minute)."""

STOP_POLL_S = 0.02
"""How often ``ask_to_stop`` looks whether the stopping watch closed its socket."""

STOP_ANY = "any"
"""A stop request's ``stop``: whatever watch keeps the folder (``cairn watch --stop``)."""

STOP_BACKGROUND = "background"
"""A stop request's ``stop``: only a background watch (``--idle-exit``) a ``cairn
index`` started; a watch run in the foreground or beside a server refuses."""

OPTION_KEYS = ("format", "code", "root", "folder", "excludes", "load")
"""The request fields a watch must share with the caller to index for it (and the
embedder, when the caller names one)."""


def socket_path(folder: Path) -> Path:
    """Where the watch of the index folder ``folder`` listens: ``SOCKET_FILENAME`` in it
    when that path fits ``AF_UNIX``, else a name derived from the folder's resolved path
    under the temporary directory."""
    resolved = folder.resolve()
    inside = resolved / SOCKET_FILENAME
    if len(os.fsencode(inside)) <= MAX_SOCKET_PATH:
        return inside
    digest = hashlib.sha256(os.fsencode(resolved)).hexdigest()[:32]
    return Path(tempfile.gettempdir()) / f"cairn-watch-{digest}.sock"


def folder_of(path: str | Path, out: str | Path | None) -> Path:
    """The index folder of ``cairn index PATH [--out OUT]``: ``out``, else ``PATH/.cairn``
    (``cairn.codegraph.console.index_folder``, without importing the pipeline)."""
    from cairn.codegraph.limits import DEFAULT_OUT_DIRNAME

    return Path(out) if out is not None else Path(path) / DEFAULT_OUT_DIRNAME


def handoff_options(
    root: Path,
    folder: Path,
    *,
    code: str,
    excludes: Sequence[str],
    load: bool,
    embedder: str | None,
) -> dict[str, Any]:
    """The fields of a request that a watch must share with its caller (``OPTION_KEYS``
    and the embedder's name, None for the one the index was built with)."""
    return {
        "format": HANDOFF_FORMAT,
        "code": code,
        "root": str(root.resolve()),
        "folder": str(folder.resolve()),
        "excludes": list(excludes),
        "load": load,
        "embedder": embedder,
    }


def refusal(mine: Mapping[str, Any], asked: Mapping[str, Any]) -> str | None:
    """Why a watch with options ``mine`` cannot index for a request ``asked`` (the first
    option that differs), or None when it can. A request naming no embedder takes the
    one the index was built with, which is the watch's."""
    keys = OPTION_KEYS if asked.get("embedder") is None else (*OPTION_KEYS, "embedder")
    for key in keys:
        if mine.get(key) != asked.get(key):
            if key == "code":
                return "the watch runs another version of Cairn"
            return f"{key} differs: the watch has {mine.get(key)!r}, asked {asked.get(key)!r}"
    return None


def ask_to_index(
    path: str | Path,
    out: str | Path | None,
    *,
    excludes: Sequence[str],
    generated_at: str | None,
    load: bool,
    embedder: str | None,
    on_progress: Progress | None = None,
) -> dict[str, Any] | None:
    """Ask the watch keeping ``path``'s index folder for a round in place of a one-shot
    ``cairn index`` with these options: its reply (``summary``, ``refused``, ``error`` or
    ``unanswered``, with its ``pid`` and ``round``), or None when no watch answers;
    ``on_progress`` is told each progress line while the caller waits."""
    from cairn.codegraph.cache import code_fingerprint

    root = Path(path)
    folder = folder_of(root, out)
    options = handoff_options(
        root, folder, code=code_fingerprint(), excludes=excludes, load=load, embedder=embedder
    )
    request = {
        **options,
        "generated_at": generated_at,
        "source_date_epoch": os.environ.get("SOURCE_DATE_EPOCH"),
        "pid": os.getpid(),
    }
    return ask_watch(folder, request, on_progress)


def ask_to_stop(folder: Path, which: str = STOP_ANY) -> dict[str, Any] | None:
    """Ask the watch keeping the index folder ``folder`` to stop (``which``: ``STOP_ANY``
    or ``STOP_BACKGROUND``) and wait, up to ``STOP_WAIT_S``, until it closed its socket.
    Its reply (``stopped`` with its ``pid`` once the socket is gone, or ``refused``), or
    None when no watch answers."""
    reply = ask_watch(folder, {"format": HANDOFF_FORMAT, "stop": which, "pid": os.getpid()})
    if reply is None or "stopping" not in reply:
        return reply
    # The watch removes its socket last, once its rounds, stamp and database are done
    # with; a watch killed meanwhile leaves it behind, but its process is gone.
    path, pid = socket_path(folder), reply.get("pid")
    deadline = time.monotonic() + STOP_WAIT_S
    while path.exists() and (not isinstance(pid, int) or process_alive(pid)):
        if time.monotonic() >= deadline:
            return {**reply, "unanswered": f"still running after {STOP_WAIT_S:g} s"}
        time.sleep(STOP_POLL_S)
    return {**reply, "stopped": True}


def process_alive(pid: int) -> bool:
    """Whether a process ``pid`` runs (one of another user's counts; an ended one its
    parent has not reaped yet, a zombie, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # Linux: the state follows the command name, which may hold ") "
        state = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state != b"Z"


def raise_problem(problem: Mapping[str, Any]) -> None:
    """Raise the ``CairnError`` subclass a watch's round failed with, from its problem
    document (``CairnError.to_problem``)."""
    detail, details = problem.get("detail"), problem.get("details")
    raise from_problem(
        {
            "code": problem.get("code"),
            "detail": detail if isinstance(detail, str) else "the watch's round failed",
            "details": details if isinstance(details, dict) else None,
        }
    )


Progress = Callable[[Mapping[str, Any]], None]
"""Told each progress line (``pid``, ``progress``: what the watch is doing) a caller gets."""


def ask_watch(
    folder: Path, request: Mapping[str, Any], on_progress: Progress | None = None
) -> dict[str, Any] | None:
    """The reply of the watch keeping ``folder`` to ``request``, or None when none answers
    (no socket, a watch that stopped or was killed, a reply cut short); a watch silent
    for ``SILENCE_TIMEOUT_S`` gives ``{"unanswered": ...}`` with its pid when known."""
    if not hasattr(socket, "AF_UNIX"):
        return None
    path = socket_path(folder)
    if not path.exists():
        return None
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        try:
            conn.settimeout(CONNECT_TIMEOUT_S)
            conn.connect(str(path))
            pid = _peer_pid(conn)
            conn.sendall(orjson.dumps(dict(request)) + b"\n")
        except OSError:
            return None
        conn.settimeout(SILENCE_TIMEOUT_S)  # started again by every line that comes
        lines = _Lines(conn)
        try:
            while True:
                reply = _decoded(lines.next(MAX_REPLY_BYTES))
                if reply is None or "progress" not in reply:
                    return reply
                pid = reply.get("pid", pid)
                if on_progress is not None:
                    on_progress(reply)
        except TimeoutError:
            silent = f"no answer for {SILENCE_TIMEOUT_S:g} s (stopped or hung?)"
            return {"format": HANDOFF_FORMAT, "pid": pid, "unanswered": silent}
        except OSError:
            return None


def _decoded(line: bytes | None) -> dict[str, Any] | None:
    """A reply line as an object of this format, else None."""
    if line is None:
        return None
    try:
        reply = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    return reply if isinstance(reply, dict) and reply.get("format") == HANDOFF_FORMAT else None


def _peer_pid(conn: socket.socket) -> int | None:
    """The process at the other end of a connected Unix socket (Linux), else None."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    try:
        pid, _, _ = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, option, 12))
    except OSError:
        return None
    return int(pid) or None


class _Lines:
    """Newline-ended lines read from a socket, the bytes after one kept for the next."""

    def __init__(self, conn: socket.socket) -> None:
        self.conn = conn
        self.pending = b""

    def next(self, limit: int) -> bytes | None:
        """The next line (without its newline), or None at an early end or past
        ``limit`` bytes."""
        chunks = [self.pending]
        size = len(self.pending)
        end = self.pending.find(b"\n")
        while end < 0:
            if size > limit:
                return None
            chunk = self.conn.recv(1024 * 1024)
            if not chunk:
                return None
            end = chunk.find(b"\n")
            if end >= 0:
                end += size
            chunks.append(chunk)
            size += len(chunk)
        data = b"".join(chunks)
        self.pending = data[end + 1 :]
        return data[:end] if end <= limit else None


Answer = Callable[[Mapping[str, Any]], dict[str, Any] | None]
"""What a watch does with a request: the reply (a round's summary, a refusal or an
error), or None for no answer (the watch is ending: the caller indexes itself, as when
no watch runs)."""

Status = Callable[[], str]
"""What the watch is doing, for a waiting caller's progress line."""


class HandoffServer:
    """A watch's socket: bound when the watch starts (a second watch of the same folder is
    refused there), answering each caller on a thread of its own once ``serve`` is
    called (the watch keeps their rounds one at a time), closed and removed when the
    watch ends."""

    def __init__(self, folder: Path) -> None:
        self.path = socket_path(folder)
        self.listener: socket.socket | None = None
        self.thread: threading.Thread | None = None
        self._identity: tuple[int, int] | None = None
        self._callers: set[threading.Thread] = set()
        self._callers_lock = threading.Lock()

    def bind(self) -> bool:
        """Take the socket path (removing one a stopped watch left); False where Unix
        sockets are not available or the path cannot be bound (the watch then runs
        without answering ``cairn index``). Raises ``ConflictError`` when a live watch
        already answers there."""
        if not hasattr(socket, "AF_UNIX"):
            return False
        if self.path.exists():
            if _answers(self.path):
                raise ConflictError(
                    f"another cairn watch already keeps this index fresh (it listens on "
                    f"{self.path}); stop it first",
                    details={"socket": str(self.path)},
                )
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()  # a watch that was killed left it
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            listener.bind(str(self.path))
            os.chmod(self.path, 0o600)  # only its owner may ask for rounds
            listener.listen(ACCEPT_BACKLOG)
            stat = self.path.stat()
        except OSError as exc:
            listener.close()
            if exc.errno == getattr(os, "EADDRINUSE", None) or isinstance(exc, FileExistsError):
                raise ConflictError(
                    f"another cairn watch already keeps this index fresh ({self.path})",
                    details={"socket": str(self.path)},
                ) from exc
            return False
        self.listener = listener
        self._identity = (stat.st_dev, stat.st_ino)
        return True

    def serve(self, answer: Answer, status: Status) -> None:
        """Answer requests until ``close``: each caller on a daemon thread of its own,
        told ``status()`` every ``HEARTBEAT_S`` while its answer is made (``answer``
        keeps the rounds one at a time)."""
        if self.listener is None or self.thread is not None:
            return
        listener = self.listener
        self.thread = threading.Thread(
            target=self._accept,
            args=(listener, answer, status),
            name="cairn-watch-handoff",
            daemon=True,
        )
        self.thread.start()

    def _accept(self, listener: socket.socket, answer: Answer, status: Status) -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:  # closed: the watch is over
                return
            caller = threading.Thread(
                target=self._caller, args=(conn, answer, status), name="cairn-watch-caller"
            )
            caller.daemon = True
            with self._callers_lock:
                self._callers.add(caller)
            caller.start()

    def _caller(self, conn: socket.socket, answer: Answer, status: Status) -> None:
        try:
            with conn, contextlib.suppress(OSError):  # a caller that went away
                _answer_one(conn, answer, status)
        finally:
            with self._callers_lock:
                self._callers.discard(threading.current_thread())

    def close(self, *, keep_path: bool = False) -> None:
        """Stop answering and remove the socket (if it is still this watch's own), or
        with ``keep_path`` leave it for a later ``close``: the watch removes it once the
        rest of its ending is done, and a ``cairn watch --stop`` waits for that."""
        listener, self.listener = self.listener, None
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
            if self.thread is not None:
                self.thread.join()
            with self._callers_lock:
                callers = list(self._callers)
            for caller in callers:  # a round run for a caller ends before the watch does
                caller.join()
        if keep_path:
            return
        mine = self.holds_path()
        self._identity = None
        if mine:
            with contextlib.suppress(OSError):
                self.path.unlink()

    def holds_path(self) -> bool:
        """Whether the socket path is still this watch's own (not removed, say with its
        index folder, nor taken by another watch)."""
        if self._identity is None:
            return False
        try:
            stat = self.path.stat()
        except OSError:
            return False
        return (stat.st_dev, stat.st_ino) == self._identity


def watch_answers(folder: Path) -> bool:
    """Whether a watch listens on the socket of the index folder ``folder``."""
    if not hasattr(socket, "AF_UNIX"):
        return False
    path = socket_path(folder)
    return path.exists() and _answers(path)


def _answers(path: Path) -> bool:
    """Whether something listens on the socket at ``path``."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(CONNECT_TIMEOUT_S)
        try:
            probe.connect(str(path))
        except OSError:
            return False
    return True


def _answer_one(conn: socket.socket, answer: Answer, status: Status) -> None:
    """Read one request from ``conn``, answer it (progress lines while the answer is
    made), send the reply."""
    conn.settimeout(CONNECT_TIMEOUT_S)
    line = _Lines(conn).next(MAX_REQUEST_BYTES)
    if line is None:
        return  # a probe (``_answers``) or a caller that gave up
    try:
        request = orjson.loads(line)
    except orjson.JSONDecodeError:
        request = None
    if not isinstance(request, dict):
        reply: dict[str, Any] | None = {"refused": "the request is not a JSON object"}
    else:
        reply = _with_progress(conn, lambda: answer(request), status)
    if reply is not None:
        _send(conn, reply)


def _with_progress(
    conn: socket.socket, make: Callable[[], dict[str, Any] | None], status: Status
) -> dict[str, Any] | None:
    """``make()`` on a thread of its own, a progress line sent to ``conn`` every
    ``HEARTBEAT_S`` until it is done (a caller that went away gets none: the round it
    asked for still ends before the reply is dropped)."""
    done: list[dict[str, Any] | None] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            done.append(make())
        except BaseException as exc:  # handed to the caller's thread below
            failed.append(exc)

    worker = threading.Thread(target=run, name="cairn-watch-answer", daemon=True)
    worker.start()
    listening = True
    while True:
        worker.join(HEARTBEAT_S)
        if not worker.is_alive():
            break
        if listening:
            try:
                _send(conn, {"progress": status()})
            except OSError:
                listening = False
    if failed:
        raise failed[0]
    return done[0]


def _send(conn: socket.socket, reply: Mapping[str, Any]) -> None:
    """One line of this format, with the watch's pid, to ``conn``."""
    conn.sendall(orjson.dumps({"format": HANDOFF_FORMAT, "pid": os.getpid(), **reply}) + b"\n")
