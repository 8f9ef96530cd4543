"""The crash-safety harness: a writer process to kill, the model it must match, the checks.

``python tests/store/crash_writer.py DB SEED START`` opens ``DB``, prints ``READY``, then
issues the deterministic commands ``START, START+1, ...`` of ``SEED`` forever, printing
``ACK <k> <receipt hex>`` (the ``encode_receipt`` bytes) after each receipt, flushed. A
parent (``tests/store/test_store_crash_safety.py``, ``bench/crash_bench.py``) kills it
with SIGKILL at random moments and then checks the file against ``Model``:

- command 1 configures the collection ``docs`` (text ``/text``, vector ``embedding``)
  and the graph ``code``; every later command ``k`` rewrites a random subset of the
  documents ``d000..d095`` with generation ``k`` in the text (a word only ``k`` uses), in
  the body and in the vector, re-puts a ``calls`` fact chain over that subset annotated
  with ``k``, creates the scratch document ``s<k>`` and deletes ``s<k-1>``. Some commands
  are big (60-80 documents of 20-40 KB: about 2.5 MB), so kills land inside commits too.
- The state after the first ``m`` commands is a pure function of ``(seed, m)``, so a
  partly applied command cannot match ``Model`` at any ``m``.

A client that lost a reply re-sends the same command (same ID, same bytes), so a new
writer starts at the first command whose receipt the parent has not seen.
"""

from __future__ import annotations

import itertools
import math
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterable
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

import cairn.store as store
from cairn.errors import NotFoundError
from cairn.index import open as open_indexed
from cairn.store import (
    CommandRequest,
    ConfigureCollection,
    ConfigureGraph,
    Database,
    DeleteDocument,
    EntityRef,
    Metric,
    Mutation,
    PutDocument,
    PutFact,
    PutVector,
    VectorField,
    VectorSpace,
)
from cairn.store.commands import encode_receipt
from cairn.store.reads import read_document

SPACE = VectorSpace("crash", 4, Metric.COSINE, "crash-model", "1")
COLLECTION = "docs"
GRAPH = "code"
TEXT = "/text"
VECTOR = "embedding"
POOL = tuple(f"d{index:03d}" for index in range(96))
BIG_SHARE = 0.15
_NAMESPACE = uuid.UUID("6f1c3a52-6d0e-4c51-9a43-5b0f1f6c2a11")
_QUERIES = ((1.0, 0.0, 0.0, 0.0), (0.0, 1.0, 0.5, 0.0), (0.2, 0.1, 1.0, 3.0))


# ------------------------------------------------------------------ commands
def command_id(seed: int, k: int) -> uuid.UUID:
    """The deterministic ID of command ``k`` of ``seed``."""
    return uuid.uuid5(_NAMESPACE, f"{seed}:{k}")


def word(k: int) -> str:
    """A text token only generation ``k`` uses (letters only: the analyzer keeps it whole)."""
    letters = ""
    value = k
    while True:
        value, digit = divmod(value, 26)
        letters = chr(ord("a") + digit) + letters
        if value == 0:
            return "gen" + letters


def vector(k: int, doc_id: str) -> tuple[float, ...]:
    """The vector of ``doc_id`` in generation ``k`` (small integers: exact in float32)."""
    index = int(doc_id[1:])
    return (1.0, float(1 + k % 7), float(1 + index % 11), float(1 + (k * 31 + index) % 5))


@dataclass(frozen=True, slots=True)
class Plan:
    """What command ``k`` writes: documents with their padding, and the fact chain."""

    k: int
    docs: tuple[tuple[str, int], ...]

    @property
    def chain(self) -> list[tuple[str, str]]:
        ids = [doc_id for doc_id, _ in self.docs]
        return list(itertools.pairwise(ids))


def plan(seed: int, k: int) -> Plan:
    """The documents command ``k >= 2`` rewrites (sorted) and their padding sizes."""
    rng = random.Random(f"{seed}:{k}")
    big = rng.random() < BIG_SHARE
    count = rng.randint(60, 80) if big else rng.randint(3, 8)
    chosen = sorted(rng.sample(POOL, count))
    return Plan(
        k, tuple((d, rng.randint(20_000, 40_000) if big else rng.randint(0, 200)) for d in chosen)
    )


def is_big(seed: int, k: int) -> bool:
    """Whether command ``k`` is one of the big ones."""
    return k >= 2 and len(plan(seed, k).docs) > 8


def body(k: int, doc_id: str, pad: int) -> dict[str, object]:
    """The body of ``doc_id`` written by command ``k``."""
    return {"text": f"{word(k)} common", "gen": k, "doc": doc_id, "pad": "x" * pad}


def build_command(seed: int, k: int) -> CommandRequest:
    """Command ``k`` (1-based) of ``seed``: the same bytes every time it is built."""
    if k == 1:
        mutations: list[Mutation] = [
            ConfigureCollection(COLLECTION, (TEXT,), (VectorField(VECTOR, SPACE),)),
            ConfigureGraph(GRAPH),
        ]
        return CommandRequest(command_id(seed, k), "main", tuple(mutations))
    step = plan(seed, k)
    mutations = [PutDocument(COLLECTION, d, body(k, d, pad)) for d, pad in step.docs]
    mutations += [PutVector(COLLECTION, d, VECTOR, vector(k, d)) for d, _ in step.docs]
    mutations += [
        PutFact(
            GRAPH, EntityRef(COLLECTION, a), EntityRef(COLLECTION, b), "calls", None, {"gen": k}
        )
        for a, b in step.chain
    ]
    mutations.append(PutDocument(COLLECTION, f"s{k}", {"text": f"{word(k)} scratch", "gen": k}))
    if k > 2:
        mutations.append(DeleteDocument(COLLECTION, f"s{k - 1}"))
    return CommandRequest(command_id(seed, k), "main", tuple(mutations))


# --------------------------------------------------------------------- model
@dataclass(slots=True)
class Model:
    """The exact state after the first ``applied`` commands of ``seed``."""

    seed: int
    applied: int = 0
    docs: dict[str, tuple[int, int, int]] = field(default_factory=dict)  # id -> gen, rev, pad
    facts: dict[tuple[str, str], tuple[int, int]] = field(default_factory=dict)  # gen, rev

    def advance(self) -> None:
        """Apply the next command to the model."""
        k = self.applied + 1
        self.applied = k
        if k == 1:
            return
        step = plan(self.seed, k)
        for doc_id, pad in step.docs:
            revision = self.docs[doc_id][1] + 1 if doc_id in self.docs else 1
            self.docs[doc_id] = (k, revision, pad)
        for pair in step.chain:
            revision = self.facts[pair][1] + 1 if pair in self.facts else 1
            self.facts[pair] = (k, revision)

    def copy(self) -> Model:
        return Model(self.seed, self.applied, dict(self.docs), dict(self.facts))

    def gens(self) -> dict[str, int]:
        """Document ID -> generation of every live document (scratch included)."""
        live = {doc_id: gen for doc_id, (gen, _, _) in self.docs.items()}
        if self.applied >= 2:
            live[f"s{self.applied}"] = self.applied
        return live


# -------------------------------------------------------------------- checks
def _rows(path: Path, sql: str) -> list[tuple[Any, ...]]:
    with closing(sqlite3.connect(path)) as conn:
        return [tuple(row) for row in conn.execute(sql)]


def integrity(path: Path) -> str:
    """SQLite's own verdict on the file (``ok`` when sound)."""
    return str(_rows(path, "PRAGMA integrity_check")[0][0])


def state_mismatches(db: Database, model: Model) -> list[str]:
    """How the file's visible state differs from ``model`` (empty when it matches exactly)."""
    problems: list[str] = []
    applied = model.applied
    with db.read_cut() as cut:
        if cut.position != applied:
            problems.append(f"position {cut.position} != {applied} applied commands")
        if applied == 0:
            return problems
        candidates = [*POOL, f"s{applied - 1}", f"s{applied}", f"s{applied + 1}"]
        expected = model.gens()
        for doc_id in candidates:
            try:
                found = read_document(cut, COLLECTION, doc_id)
            except NotFoundError:
                if doc_id in expected:
                    problems.append(f"{doc_id} missing (expected generation {expected[doc_id]})")
                continue
            if doc_id not in expected:
                problems.append(f"{doc_id} present at generation {found.body.get('gen')}")
                continue
            gen = expected[doc_id]
            revision, pad = (
                (model.docs[doc_id][1], model.docs[doc_id][2]) if doc_id[0] == "d" else (1, -1)
            )
            seen = (found.body.get("gen"), found.revision)
            if seen != (gen, revision):
                problems.append(f"{doc_id} at (gen, revision) {seen}, expected {(gen, revision)}")
            if pad >= 0 and len(str(found.body.get("pad"))) != pad:
                problems.append(f"{doc_id} body padding differs from generation {gen}")
    problems += _text_mismatches(db, model)
    problems += _vector_mismatches(db, model)
    problems += _fact_mismatches(db.path, model)
    return problems


def _text_mismatches(db: Database, model: Model) -> list[str]:
    expected: dict[int, set[str]] = {}
    for doc_id, gen in model.gens().items():
        expected.setdefault(gen, set()).add(doc_id)
    rng = random.Random(model.applied)
    earlier = range(2, model.applied + 1)
    probes = {model.applied, model.applied + 1, *rng.sample(earlier, min(3, len(earlier)))}
    problems = []
    for gen in sorted(probes):
        hits = db.text_search(COLLECTION, TEXT, word(gen), limit=1000)
        found = {hit.ref.id for hit in hits}
        wanted = expected.get(gen, set())
        if found != wanted:
            problems.append(f"text {word(gen)!r} finds {sorted(found)}, expected {sorted(wanted)}")
    return problems


def _cosine(a: Iterable[float], b: Iterable[float]) -> float:
    left, right = list(a), list(b)
    dot = sum(x * y for x, y in zip(left, right, strict=True))
    return dot / (math.sqrt(sum(x * x for x in left)) * math.sqrt(sum(y * y for y in right)))


def _vector_mismatches(db: Database, model: Model) -> list[str]:
    problems = []
    for query in _QUERIES:
        hits = db.vector_search(COLLECTION, VECTOR, query, SPACE, limit=1000)
        found = {hit.ref.id: hit.score for hit in hits}
        if set(found) != set(model.docs):
            problems.append(
                f"vector search finds {len(found)} documents, expected {len(model.docs)}"
            )
            continue
        for doc_id, (gen, _, _) in model.docs.items():
            if abs(found[doc_id] - _cosine(query, vector(gen, doc_id))) > 1e-6:
                problems.append(f"vector of {doc_id} is not generation {gen}'s")
    return problems


def _fact_mismatches(path: Path, model: Model) -> list[str]:
    rows = _rows(
        path,
        # The annotations are in the record's shape (schema 5), or in a record kept whole.
        "SELECT f.source_id, f.target_id, f.relation, f.revision, f.deleted, "
        "coalesce(f.record, s.data) FROM facts AS f LEFT JOIN fact_shapes AS s "
        f"ON s.id = f.shape WHERE f.graph = '{GRAPH}'",
    )
    found: dict[tuple[str, str], tuple[int, int]] = {}
    for source, target, relation, revision, deleted, record in rows:
        if deleted or record is None:
            return [f"unexpected fact row {source}->{target} {relation} deleted={deleted}"]
        annotations = orjson.loads(bytes(record))["annotation_variants"]
        if relation != "calls" or len(annotations) != 1:
            return [f"unexpected fact row {source}->{target} {relation} deleted={deleted}"]
        found[(str(source), str(target))] = (int(annotations[0]["gen"]), int(revision))
    if found == model.facts:
        return []
    wrong = sorted(set(found.items()) ^ set(model.facts.items()))[:5]
    return [f"facts differ from the model: {len(found)} vs {len(model.facts)} ({wrong})"]


def parse_ack(line: bytes) -> tuple[int, bytes] | None:
    """``(k, receipt bytes)`` of a complete ``ACK`` line, None for anything else."""
    if not line.endswith(b"\n"):
        return None  # the kill cut the line: the receipt never fully reached the client
    parts = line.split()
    if len(parts) != 3 or parts[0] != b"ACK":
        return None
    return int(parts[1]), bytes.fromhex(parts[2].decode())


# ------------------------------------------------------------------- harness
@dataclass(slots=True)
class Totals:
    """What the kills did so far."""

    kills: int = 0
    early_kills: int = 0
    acknowledged: int = 0
    applied_unacknowledged: int = 0
    big_in_flight: int = 0
    resent: int = 0
    violations: list[str] = field(default_factory=list)


class Harness:
    """Runs writer processes against one file, kills each with SIGKILL, checks the file.

    ``known`` holds the receipt bytes of every command the client saw acknowledged (or
    found applied after a kill); each later acknowledgement, stored outcome and re-sent
    command must give the same bytes.
    """

    def __init__(self, path: Path, seed: int, *, max_delay: float, early_share: float = 0.1):
        self.path = path
        self.seed = seed
        self.rng = random.Random(seed)
        self.max_delay = max_delay
        self.early_share = early_share
        self.model = Model(seed)
        self.known: dict[int, bytes] = {}
        self.acked: set[int] = set()
        self.totals = Totals()
        self._ready = False

    def round(self) -> list[str]:
        """One writer life: start, kill at a random moment, verify. Returns violations."""
        start = max(self.acked, default=0) + 1
        lines, problem = self._run_writer(start)
        problems = [problem] if problem else []
        new: dict[int, bytes] = {}
        for line in lines:
            ack = parse_ack(line)
            if ack is not None:
                new[ack[0]] = ack[1]
        problems += self._check_acks(new)
        problems += self._verify(new)
        self.totals.violations += problems
        return problems

    def _run_writer(self, start: int) -> tuple[list[bytes], str | None]:
        lines: list[bytes] = []
        ready, finished = threading.Event(), threading.Event()
        early = self.rng.random() < self.early_share
        delay = self.rng.uniform(0.0, self.max_delay)
        argv = [sys.executable, str(Path(__file__).resolve()), str(self.path), str(self.seed)]
        with (
            tempfile.TemporaryFile() as errors,
            subprocess.Popen(
                [*argv, str(start)], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errors
            ) as proc,
        ):
            assert proc.stdout is not None
            stdout = proc.stdout

            def read() -> None:
                for line in iter(stdout.readline, b""):
                    if line == b"READY\n":
                        ready.set()
                    else:
                        lines.append(line)
                finished.set()

            reader = threading.Thread(target=read, daemon=True)
            reader.start()
            deadline = time.monotonic() + 120
            if early:
                time.sleep(delay * 2)  # the interpreter starting, imports, open and migration
            else:
                while not (ready.wait(timeout=0.05) or finished.is_set()):
                    if time.monotonic() > deadline:
                        break
                time.sleep(delay)
            exited = proc.poll()
            if exited is None:
                os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=120)
            reader.join(timeout=120)
            self._ready = ready.is_set()
            self.totals.kills += exited is None
            self.totals.early_kills += exited is None and early and not ready.is_set()
            if exited is not None:
                errors.seek(0)
                tail = errors.read().decode(errors="replace")[-2000:]
                return lines, f"the writer exited by itself with {exited}: {tail}"
        return lines, None

    def _check_acks(self, new: dict[int, bytes]) -> list[str]:
        problems = []
        for k, data in sorted(new.items()):
            if k in self.known and self.known[k] != data:
                problems.append(f"command {k} was acknowledged with other bytes than before")
            receipt = orjson.loads(data)["receipt"]
            if receipt["command_id"] != str(command_id(self.seed, k)):
                problems.append(f"receipt of command {k} names {receipt['command_id']}")
            if receipt["token"]["position"] != k:
                problems.append(f"command {k} landed at position {receipt['token']['position']}")
            self.known.setdefault(k, data)
            self.acked.add(k)
        self.totals.acknowledged = len(self.acked)
        return problems

    def _verify(self, new: dict[int, bytes]) -> list[str]:
        verdict = integrity(self.path) if self.path.exists() else "ok"
        if verdict != "ok":
            return [f"integrity_check: {verdict}"]
        try:
            db = open_indexed(self.path)
        except Exception as exc:
            return [f"the file does not open after the kill: {exc!r}"]
        with db:
            return self._verify_open(db, new)

    def _verify_open(self, db: Database, new: dict[int, bytes]) -> list[str]:
        position = db.position
        top = max(self.acked, default=0)
        if position < max(top, self.model.applied):
            return [f"position {position} lost acknowledged or applied commands (top {top})"]
        if position > max(top, self.model.applied) + 1:
            return [f"position {position} is ahead of anything the writer could have sent"]
        model = self.model.copy()
        while model.applied < position:
            model.advance()
        problems = state_mismatches(db, model)
        if problems:
            return problems
        self.model = model
        if position > top:
            self.totals.applied_unacknowledged += position not in self.known
        elif self._ready and is_big(self.seed, position + 1):
            self.totals.big_in_flight += 1
        count = _rows(self.path, "SELECT count(*) FROM commands")[0][0]
        if count != position:
            problems.append(f"{count} stored outcomes for {position} applied commands")
        older = sorted(self.known)
        sample = set(new) | set(self.rng.sample(older, min(20, len(older)))) | {position}
        for k in sorted(sample):
            if k < 1:
                continue
            stored = db.stored_outcome(command_id(self.seed, k))
            if stored is None:
                problems.append(f"command {k} is applied but has no stored outcome")
                continue
            if self.known.setdefault(k, stored) != stored:
                problems.append(f"the stored outcome of command {k} differs from its receipt")
            resent = encode_receipt(db.command(build_command(self.seed, k)))
            self.totals.resent += 1
            if resent != stored:
                problems.append(f"re-sending command {k} returned other bytes")
        if db.stored_outcome(command_id(self.seed, position + 1)) is not None:
            problems.append(f"command {position + 1} has an outcome but the position is {position}")
        if db.position != position:
            problems.append("re-sending acknowledged commands moved the position")
        return problems


def final_check(harness: Harness) -> list[str]:
    """Every receipt the client ever saw: stored byte for byte, and replayed byte for byte."""
    problems = []
    with open_indexed(harness.path) as db:
        position = db.position
        for k, data in sorted(harness.known.items()):
            if db.stored_outcome(command_id(harness.seed, k)) != data:
                problems.append(f"the stored outcome of command {k} differs from its receipt")
            if encode_receipt(db.command(build_command(harness.seed, k))) != data:
                problems.append(f"re-sending command {k} returned other bytes")
        if db.position != position:
            problems.append("re-sending acknowledged commands moved the position")
    return problems


# -------------------------------------------------------------------- writer
def write_forever(path: Path, seed: int, start: int) -> None:
    """Open ``path`` and issue commands ``start, start+1, ...``, acknowledging each."""
    out = sys.stdout.buffer
    with store.open(path) as db:
        out.write(b"READY\n")
        out.flush()
        k = start
        while True:
            receipt = db.command(build_command(seed, k))
            out.write(b"ACK %d %s\n" % (k, encode_receipt(receipt).hex().encode()))
            out.flush()
            k += 1


if __name__ == "__main__":
    write_forever(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))
