"""The questions an agent asks, through MCP (issue 19): answer size and latency per question.

Corpora are fetched as in ``bench/index_bench.py`` (``pip download`` into ``--cache``):
the Flask 3.1.* sdist and the ``django/`` package of Django 5.2.*. Each is indexed with
``cairn index`` (not timed here), then ``cairn mcp --db`` is started with the official
MCP client and a fixed question set is asked, one tool call per question, ``--calls``
times each:

* who calls X: ``cairn_traverse`` over ``calls``, incoming, with ``evidence: 3``;
* impact of Y: ``cairn_impact`` by name (hub symbols: Flask's ``Flask``, Django's
  ``Model``);
* where is W: ``cairn_search`` over symbols (the text branch);
* show Z: ``cairn_get_documents`` of the symbol.

Printed per question: the reply's text characters (what the model reads) and its
structured JSON characters, whether it was an error, and latency p50 / max; then the
handshake (spawn to ``initialize``) over ``--rounds`` starts. Targets (issue 19): every
reply <= 25,000 characters; handshake <= 1 s and tool-call p50 <= 50 ms on Django.
Seeds are resolved to IDs by name with the library first (``resolve_name``), as an agent
would after a search.

    .venv/bin/python bench/agent_bench.py [--only flask,django] [--calls 5] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cairn
import index_bench as ib
from cairn.search.names import resolve_name

MAX_REPLY_CHARS = 25_000
HANDSHAKE_TARGET_S = 1.0
CALL_P50_TARGET_MS = 50.0

QUESTIONS: dict[str, list[tuple[str, str, str]]] = {
    # (label, kind, symbol name or query)
    "flask": [
        ("who calls helpers.url_for", "callers", "helpers.url_for"),
        ("who calls Flask.full_dispatch_request", "callers", "Flask.full_dispatch_request"),
        ("impact of Flask", "impact", "Flask"),
        ("where is 'register a blueprint'", "search", "register a blueprint"),
        ("show Flask.full_dispatch_request", "show", "Flask.full_dispatch_request"),
    ],
    "django": [
        ("who calls HttpResponse", "callers", "HttpResponse"),
        ("impact of Model", "impact", "db.models.base.Model"),
        ("impact of HttpResponse", "impact", "HttpResponse"),
        ("where is 'send an email'", "search", "send an email"),
        ("show QuerySet.filter", "show", "QuerySet.filter"),
    ],
}


def _ids(db_path: Path, names: list[str]) -> dict[str, tuple[str, str] | None]:
    """Each name's (collection, id) as the library resolves it (None if not unique)."""
    found: dict[str, tuple[str, str] | None] = {}
    with cairn.open(db_path) as db, db.read_cut() as cut:
        for name in names:
            answer = resolve_name(cut, name)
            found[name] = (
                None if answer.match is None else (answer.match.ref.collection, answer.match.ref.id)
            )
    return found


def _arguments(kind: str, subject: str, ref: tuple[str, str] | None) -> tuple[str, dict[str, Any]]:
    if kind == "search":
        return "cairn_search", {"collection": "symbols", "text_field": "/text", "text": subject}
    if kind == "impact":
        return "cairn_impact", {"name": subject}
    if ref is None:  # ambiguous or unknown: the bench asks by exact ID, so say so
        raise SystemExit(f"{subject!r} does not resolve to one symbol: fix the question set")
    seed = {"collection": ref[0], "id": ref[1]}
    if kind == "callers":
        return "cairn_traverse", {
            "graph": "code",
            "seeds": [seed],
            "direction": "in",
            "relations": ["calls"],
            "evidence": 3,
        }
    return "cairn_get_documents", {"refs": [seed]}


async def _ask(
    db_path: Path, questions: list[tuple[str, str, dict[str, Any]]], calls: int
) -> list[dict[str, Any]]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "cairn.cli", "mcp", "--db", str(db_path)]
    )
    rows: list[dict[str, Any]] = []
    async with stdio_client(params) as streams, ClientSession(streams[0], streams[1]) as session:
        await session.initialize()
        await session.call_tool("cairn_stats", {})  # opens the database: not a question's cost
        for label, tool, arguments in questions:
            times: list[float] = []
            reply: Any = None
            for _ in range(calls):
                started = time.perf_counter()
                reply = await session.call_tool(tool, arguments)
                times.append((time.perf_counter() - started) * 1000)
            text = "".join(getattr(item, "text", "") for item in reply.content)
            structured = json.dumps(reply.structured_content or {}, ensure_ascii=False)
            rows.append(
                {
                    "question": label,
                    "tool": tool,
                    "error": reply.structured_content.get("code") if reply.is_error else None,
                    "text_chars": len(text),
                    "structured_chars": len(structured),
                    "p50_ms": statistics.median(times),
                    "max_ms": max(times),
                }
            )
    return rows


async def _handshake(db_path: Path) -> float:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "cairn.cli", "mcp", "--db", str(db_path)]
    )
    started = time.perf_counter()
    async with stdio_client(params) as streams, ClientSession(streams[0], streams[1]) as session:
        await session.initialize()
        return time.perf_counter() - started


def _index(folder: Path) -> Path:
    exe = ib.cairn_executable()
    subprocess.run(
        [str(exe), "index", str(folder), "--workers", "2", "--json"],
        check=True,
        capture_output=True,
    )
    return folder / ".cairn" / "cairn.db"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="flask,django")
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "cairn-index-bench")
    args = parser.parse_args()
    print(f"cairn {ib._cairn_revision()}; load average {os.getloadavg()}")
    wanted = set(args.only.split(","))
    for corpus in ib.CORPORA:
        if corpus.name not in wanted or corpus.name not in QUESTIONS:
            continue
        unpacked = ib.fetch_pypi(corpus.package, corpus.spec, args.cache)
        folder = unpacked / corpus.sub if corpus.sub else unpacked
        ib.clean_tree(folder)
        db_path = _index(folder)
        plan = QUESTIONS[corpus.name]
        refs = _ids(db_path, [subject for _, kind, subject in plan if kind in ("callers", "show")])
        questions = [
            (label, *_arguments(kind, subject, refs.get(subject))) for label, kind, subject in plan
        ]
        rows = anyio.run(_ask, db_path, questions, args.calls)
        shakes = [anyio.run(_handshake, db_path) for _ in range(args.rounds)]
        print(f"\n## {corpus.name}: {db_path}")
        header = f"{'question':<42} {'tool':<20} {'error':<16} {'text':>7} {'json':>8}"
        print(f"{header} {'p50 ms':>7} {'max ms':>7}")
        for row in rows:
            print(
                f"{row['question']:<42} {row['tool']:<20} {row['error'] or '-':<16} "
                f"{row['text_chars']:>7} {row['structured_chars']:>8} "
                f"{row['p50_ms']:>7.1f} {row['max_ms']:>7.1f}"
            )
        biggest = max(max(r["text_chars"], r["structured_chars"]) for r in rows)
        p50 = statistics.median(r["p50_ms"] for r in rows)
        shake = statistics.median(shakes)
        print(f"handshake median {shake:.2f} s over {args.rounds} starts")
        verdict = "PASS" if biggest <= MAX_REPLY_CHARS else "FAIL"
        print(f"target: every reply <= {MAX_REPLY_CHARS} chars: largest {biggest}: {verdict}")
        if corpus.name == "django":
            print(f"target: handshake <= {HANDSHAKE_TARGET_S} s: {shake:.2f} s: "
                  f"{'PASS' if shake <= HANDSHAKE_TARGET_S else 'FAIL'}")  # fmt: skip
            print(f"target: tool call p50 <= {CALL_P50_TARGET_MS} ms: {p50:.1f} ms: "
                  f"{'PASS' if p50 <= CALL_P50_TARGET_MS else 'FAIL'}")  # fmt: skip
        errors = [r["question"] for r in rows if r["error"]]
        if errors:
            print(f"errors: {errors}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
