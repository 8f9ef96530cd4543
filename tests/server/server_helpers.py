"""Builders for server tests: a corpus with principals and keys, real server processes,
and a TCP proxy that cuts a connection after the upstream answered.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import queue
import select
import shutil
import socket
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

import cairn
from cairn.search.contracts import EntityRef
from cairn.store import (
    Capability,
    CommandRequest,
    ConfigureCollection,
    ConfigureGraph,
    ConfigurePolicy,
    ConfigurePrincipal,
    Database,
    DocumentAccess,
    FieldPolicy,
    Grant,
    Metric,
    Mutation,
    PutDocument,
    PutFact,
    PutVector,
    VectorField,
    VectorSpace,
    issue_api_key,
)

SPACE = VectorSpace("toy", 2, Metric.COSINE, "toy-model", "1")
TEXT = "/text"
VECTOR = "embedding"
GRAPH = "code"
MCP_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    },
}
"""A raw MCP ``initialize`` request, for checks below the official client."""
MCP_ACCEPT = {"Accept": "application/json, text/event-stream"}
"""The ``Accept`` header streamable HTTP requires."""
SERVER_START_SECONDS = 30.0
SERVER_STOP_SECONDS = 10.0
_IDS = itertools.count(50_000)

DOCS: dict[str, tuple[str, tuple[float, float]]] = {
    "root": ("root of the tree", (1.0, 0.0)),
    "alpha": ("alpha needle", (0.8, 0.6)),
    "beta": ("beta needle needle", (0.0, 1.0)),
    "gamma": ("gamma ray", (-1.0, 0.0)),
    "delta": ("delta needle", (0.6, 0.8)),
    "private": ("private needle", (1.0, 0.0)),
    "a/b": ("slash needle in an id", (0.7, 0.7)),
}
NOTES = {"n1": "needle note", "n2": "other note"}
EDGES = [
    ("docs", "root", "docs", "alpha", "calls"),
    ("docs", "root", "docs", "beta", "imports"),
    ("docs", "alpha", "docs", "gamma", "calls"),
    ("docs", "beta", "docs", "delta", "references"),
    ("docs", "gamma", "docs", "private", "calls"),
    ("docs", "private", "notes", "n1", "calls"),
    ("docs", "delta", "notes", "n2", "references"),
    ("docs", "a/b", "docs", "root", "calls"),
]
SHARED = DocumentAccess(project="shared")
READER_GRANTS = {
    "docs": ("query", "documents_read", "vector_search"),
    "notes": ("query", "documents_read"),
    GRAPH: ("graph_read",),
}


def ref(collection: str, doc_id: str) -> EntityRef:
    return EntityRef(collection, doc_id)


def run(db: Database, *mutations: Mutation) -> None:
    """Apply ``mutations`` as one command of the embedded owner."""
    db.command(CommandRequest(uuid.UUID(int=next(_IDS)), db.name, tuple(mutations)))


def principal_mutation(
    db: Database,
    principal_id: str,
    keys: tuple[Any, ...],
    *,
    field_grants: frozenset[str] = frozenset(),
    restrict_rows: bool = False,
    owner_id: str | None = None,
    projects: frozenset[str] = frozenset(),
) -> ConfigurePrincipal:
    grants = tuple(
        Grant(db.name, resource, frozenset(Capability(c) for c in caps))
        for resource, caps in READER_GRANTS.items()
    )
    return ConfigurePrincipal(
        principal_id,
        grants,
        field_grants,
        owner_id,
        projects,
        restrict_rows,
        False,
        None,
        keys,
    )


def build_corpus(db: Database) -> dict[str, str]:
    """Collections, documents, vectors, facts, policies and two principals with keys.

    ``reader`` sees every row but not ``/secret``; ``restricted`` has row policy (owner
    ``carol``, project ``shared``: every document is shared but ``private``, owned by
    ``bob``, which is hidden) and may read
    ``/secret``. Both may traverse by label. Returns each principal's API key.
    """
    fields = (VectorField(VECTOR, SPACE),)
    run(
        db,
        ConfigureCollection("docs", (TEXT,), fields),
        ConfigureCollection("notes", (TEXT,)),
        ConfigureGraph(GRAPH),
        ConfigurePolicy("docs", (FieldPolicy("/secret", read_grant="secrets"),)),
        ConfigurePolicy(GRAPH, (FieldPolicy("/label", use_grant="labels"),)),
    )
    mutations: list[Mutation] = []
    for doc_id, (text, vector) in DOCS.items():
        body: dict[str, Any] = {"text": text}
        if doc_id == "delta":
            body["secret"] = "s3cr3t"
        access = DocumentAccess(owner="bob") if doc_id == "private" else SHARED
        mutations.append(PutDocument("docs", doc_id, body, access=access))
        mutations.append(PutVector("docs", doc_id, VECTOR, vector))
    for doc_id, text in NOTES.items():
        mutations.append(PutDocument("notes", doc_id, {"text": text}, access=SHARED))
    run(db, *mutations)
    run(db, *(PutFact(GRAPH, ref(sc, si), ref(tc, ti), rel) for sc, si, tc, ti, rel in EDGES))
    reader, restricted = issue_api_key(), issue_api_key()
    run(
        db,
        principal_mutation(db, "reader", (reader.verifier,), field_grants=frozenset({"labels"})),
        principal_mutation(
            db,
            "restricted",
            (restricted.verifier,),
            field_grants=frozenset({"labels", "secrets"}),
            restrict_rows=True,
            owner_id="carol",
            projects=frozenset({"shared"}),
        ),
    )
    return {"reader": reader.token, "restricted": restricted.token}


def open_corpus(path: Path) -> tuple[Database, dict[str, str]]:
    db = cairn.open(path)
    try:
        return db, build_corpus(db)
    except BaseException:
        db.close()
        raise


def normal(value: Any) -> Any:
    """JSON-normalise (tuples become lists, mappings dicts) for comparisons."""
    return orjson.loads(orjson.dumps(value, default=lambda item: dict(item)))


# ------------------------------------------------------------ server process
@dataclass
class ServerProcess:
    """A running ``cairn serve`` child process."""

    process: subprocess.Popen[str]
    url: str
    port: int
    events: list[dict[str, Any]]
    log: Path

    @property
    def admin_key(self) -> str | None:
        for event in self.events:
            if event["event"] == "admin_created":
                key = event["api_key"]
                return None if key is None else str(key)
        return None


def _pump(stream: Any, lines: queue.Queue[str | None]) -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)


FLASK_FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "flask_app"
"""The small Flask repository the server tests index."""


def flask_checkout(repo: Path) -> Path:
    """A copy of ``FLASK_FIXTURE`` at ``repo`` (created); returns ``repo``."""
    shutil.copytree(FLASK_FIXTURE, repo)
    return repo


@contextlib.contextmanager
def serve_process(
    db_path: Path,
    log: Path,
    *,
    env: dict[str, str] | None = None,
    extra: Sequence[str] = (),
) -> Iterator[ServerProcess]:
    """Start ``cairn serve --port 0 --json`` (and ``extra`` options) on ``db_path``; stop
    it on exit."""
    command = [
        sys.executable,
        "-c",
        "from cairn.cli import main; main()",
        "serve",
        "--db",
        str(db_path),
        "--port",
        "0",
        "--json",
        "--log-level",
        "warning",
        *extra,
    ]
    environment = {k: v for k, v in os.environ.items() if k != "CAIRN_ADMIN_KEY"}
    environment.update(env or {})
    with log.open("w") as errors:
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=errors, text=True, env=environment
        )
    lines: queue.Queue[str | None] = queue.Queue()
    assert process.stdout is not None
    pump = threading.Thread(target=_pump, args=(process.stdout, lines), daemon=True)
    pump.start()
    try:
        events: list[dict[str, Any]] = []
        while not events or events[-1]["event"] != "listening":
            line = lines.get(timeout=SERVER_START_SECONDS)
            if line is None:
                raise RuntimeError(f"cairn serve exited early:\n{log.read_text()}")
            events.append(orjson.loads(line))
        url = str(events[-1]["url"])
        yield ServerProcess(process, url, int(url.rsplit(":", 1)[1]), events, log)
    finally:
        process.terminate()
        try:
            process.wait(timeout=SERVER_STOP_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        pump.join(timeout=SERVER_STOP_SECONDS)
        process.stdout.close()


# --------------------------------------------------------------------- proxy
def _read_message(sock: socket.socket) -> bytes | None:
    """One HTTP/1.1 message (head plus Content-Length body), or None at EOF."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        body += chunk
    return head + b"\r\n\r\n" + body


def body_of(message: bytes) -> bytes:
    return message.partition(b"\r\n\r\n")[2]


@dataclass
class CuttingProxy:
    """Relays HTTP exchanges to ``upstream``; while armed, it forwards a request, waits
    for the upstream's whole reply, records it, and closes the client's connection
    instead of relaying it: the write committed, the reply is lost."""

    upstream_port: int
    cuts: int = 0
    requests: list[bytes] = field(default_factory=list)
    dropped: list[bytes] = field(default_factory=list)
    failures: list[OSError] = field(default_factory=list)
    _listener: socket.socket | None = None
    _threads: list[threading.Thread] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        assert self._listener is not None
        return f"http://127.0.0.1:{self._listener.getsockname()[1]}"

    def __enter__(self) -> CuttingProxy:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.1)
        thread = threading.Thread(target=self._accept, daemon=True)
        thread.start()
        self._threads.append(thread)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in list(self._threads):
            thread.join(timeout=SERVER_STOP_SECONDS)
        assert self._listener is not None
        self._listener.close()

    def _accept(self) -> None:
        assert self._listener is not None
        while not self._stop.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            thread = threading.Thread(target=self._serve, args=(client,), daemon=True)
            thread.start()
            self._threads.append(thread)

    def _take_cut(self) -> bool:
        with self._lock:
            if self.cuts > 0:
                self.cuts -= 1
                return True
            return False

    def _serve(self, client: socket.socket) -> None:
        try:
            self._relay(client)
        except OSError as exc:  # recorded for the test to report, never swallowed silently
            self.failures.append(exc)

    def _relay(self, client: socket.socket) -> None:
        client.settimeout(SERVER_STOP_SECONDS)
        with client:
            while not self._stop.is_set():
                readable, _, _ = select.select([client], [], [], 0.1)
                if not readable:
                    continue
                request = _read_message(client)
                if request is None:
                    return
                self.requests.append(request)
                with socket.create_connection(("127.0.0.1", self.upstream_port)) as upstream:
                    upstream.sendall(request)
                    reply = _read_message(upstream)
                if reply is None:
                    return
                if self._take_cut():
                    self.dropped.append(reply)
                    return
                client.sendall(reply)


def with_value(body: Any, path: tuple[Any, ...], value: Any) -> Any:
    """A deep copy of ``body`` with ``value`` at ``path`` (``()``: ``value`` itself)."""
    import copy

    if not path:
        return copy.deepcopy(value)
    changed = copy.deepcopy(body)
    holder = changed
    for key in path[:-1]:
        holder = holder[key]
    holder[path[-1]] = value
    return changed
