"""Helpers that render an indexed graph as short, hand-checkable tuples."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cairn.canonical import canonical_bytes
from cairn.graph import SemanticGraph
from cairn.graph.registry import REGISTRY

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def write_tree(root: Path, files: Mapping[str, str]) -> Path:
    """``files`` (relative path -> text) written under ``root``, folders made; ``root``."""
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def disc_text(relation: str, value: dict[str, object]) -> str:
    """Discriminator values in registry field order; ``optional_chaining`` as a flag."""
    spec = REGISTRY.get(relation)
    assert spec is not None
    parts: list[str] = []
    for field in spec.fields:
        item = value.get(field.name)
        if field.name == "optional_chaining":
            if item:
                parts.append("optional")
            continue
        parts.append(str(item))
    return " ".join(parts)


def call_pairs(graph: SemanticGraph) -> set[tuple[str, str]]:
    """The (caller, callee) node IDs of every ``calls`` fact."""
    return {(fact.source, fact.target) for fact in graph.facts() if fact.relation == "calls"}


def callees(pairs: set[tuple[str, str]], caller: str) -> set[str]:
    """The callees of ``caller`` among ``pairs`` (``call_pairs``)."""
    return {target for source, target in pairs if source == caller}


def indexed_calls(
    root: Path, files: Mapping[str, str]
) -> tuple[set[tuple[str, str]], dict[str, int]]:
    """``files`` written under ``root`` and indexed: the call pairs (``call_pairs``) and
    the manifest's call counts."""
    from cairn.codegraph import index_repository

    result = index_repository(write_tree(root, files))
    return call_pairs(result.graph), dict(result.manifest.calls)


def fact_tuples(graph: SemanticGraph) -> set[tuple[str, str, str, str]]:
    """Every fact as ``(relation, source, target, discriminator text)``."""
    return {
        (f.relation, f.source, f.target, disc_text(f.relation, dict(f.discriminator.value)))
        for f in graph.facts()
    }


def node_tuples(graph: SemanticGraph) -> set[tuple[str, str]]:
    """Every node as ``(kind, id)``."""
    return {(n.kind, n.id) for n in graph.nodes()}


def canonical_content(graph: SemanticGraph) -> bytes:
    """The graph's canonical content: nodes, facts and occurrences in ID order."""
    return canonical_bytes(
        {
            "nodes": [n.to_json() for n in graph.nodes()],
            "facts": [f.to_json() for f in graph.facts()],
            "occurrences": [o.to_json() for o in graph.occurrences()],
        }
    )


ROUND_TIMEOUT_S = 60.0
"""How long a test waits for a ``cairn watch`` round."""


@dataclass
class Watched:
    """A repository a ``watching`` block keeps, and the watch's round records."""

    repo: Path
    rounds: queue.Queue[Mapping[str, Any]]

    def next_round(self) -> Mapping[str, Any]:
        return self.rounds.get(timeout=ROUND_TIMEOUT_S)


@contextmanager
def watching(repo: Path, **options: Any) -> Iterator[queue.Queue[Mapping[str, Any]]]:
    """A ``cairn watch`` of ``repo`` on a thread (``watch_repository`` with ``options``,
    one worker) for the block: its round records as they come; stopped, joined and
    checked for errors after the block."""
    from cairn.codegraph.watch import watch_repository

    rounds: queue.Queue[Mapping[str, Any]] = queue.Queue()
    stop = threading.Event()
    errors: list[BaseException] = []

    def run() -> None:
        try:
            watch_repository(repo, on_round=rounds.put, workers=1, stop=stop, **options)
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield rounds
    finally:
        stop.set()
        thread.join(timeout=ROUND_TIMEOUT_S)
    assert not thread.is_alive()
    assert not errors, errors


LONG_INDEX_MODULES = 2_000
"""Modules of 80 functions each: their first index extracts for several seconds."""


def long_package(repo: Path) -> Path:
    """``repo`` holding a Python package whose first index extracts for seconds (with
    workers: the pool is busy a second after the index starts); returns ``repo``."""
    package = repo / "pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    body = "".join(
        f"def f{j}(x):\n    return g{j}(x)\n\ndef g{j}(y):\n    return y\n\n" for j in range(40)
    )
    for number in range(LONG_INDEX_MODULES):
        (package / f"m{number}.py").write_text(body)
    return repo


def wait_session_gone(session: int, bound_s: float) -> None:
    """Wait until no process of ``session`` runs; fail after ``bound_s`` seconds, naming
    those left (a pool's workers that outlive their starter)."""
    deadline = time.monotonic() + bound_s
    while session_processes(session):
        assert time.monotonic() < deadline, session_processes(session)
        time.sleep(0.05)


def session_processes(session: int) -> list[int]:
    """The live processes of a session (``/proc``; zombies left out)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # ended while listed
        if int(fields[3]) == session and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found
