"""The questions an agent asks, through MCP (issue 19): answer size and latency per question.

Corpora are fetched as in ``bench/index_bench.py`` (``pip download`` into ``--cache``):
the Flask 3.1.* sdist and the ``django/`` package of Django 5.2.*. Each is indexed with
``cairn index`` (not timed here), then ``cairn mcp --db`` is started with the official
MCP client and a fixed question set is asked, one tool call per question, ``--calls``
times each:

* who calls X: ``cairn_callers`` by name (each caller with its call sites);
* impact of Y: ``cairn_impact`` by name (hub symbols: Flask's ``Flask``, Django's
  ``Model``);
* where is W: ``cairn_search`` with the tool's defaults (symbols, hybrid);
* show Z: ``cairn_show`` by name (the document and its numbered source lines).

Every question names its symbol as an agent would, with no ID looked up first: an
ambiguous name is answered with its candidates (counted as an answer, marked in the
``status`` column).

Printed per question: the reply's text characters (what the model reads) and its
structured JSON characters, whether it was an error, and latency p50 / max; then the
handshake (spawn to ``initialize``) over ``--rounds`` starts. Targets (issue 19): every
reply <= 25,000 characters; handshake <= 1 s and tool-call p50 <= 50 ms on Django.

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

import index_bench as ib

MAX_REPLY_CHARS = 25_000
HANDSHAKE_TARGET_S = 1.0
CALL_P50_TARGET_MS = 50.0

QUESTIONS: dict[str, list[tuple[str, str, str]]] = {
    # (label, kind, symbol name or query)
    "flask": [
        ("who calls helpers.url_for", "callers", "helpers.url_for"),
        ("who calls Flask.full_dispatch_request", "callers", "Flask.full_dispatch_request"),
        ("impact of Flask", "impact", "Flask"),
        ("impact of app.Flask", "impact", "app.Flask"),
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


def _arguments(kind: str, subject: str) -> tuple[str, dict[str, Any]]:
    if kind == "search":
        return "cairn_search", {"text": subject}
    tool = {"callers": "cairn_callers", "impact": "cairn_impact", "show": "cairn_show"}[kind]
    return tool, {"name": subject}


def _status(reply: Any) -> str:
    """What the answer was: an error code, the name's resolution, or "-"."""
    if reply.is_error:
        return str(reply.structured_content.get("code"))
    content = reply.structured_content or {}
    resolution = content.get("resolution")
    return str(resolution.get("status")) if isinstance(resolution, dict) else "-"


async def _ask(
    db_path: Path, questions: list[tuple[str, str, dict[str, Any]]], calls: int
) -> list[dict[str, Any]]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "cairn.cli", "mcp", "--db", str(db_path)]
    )
    rows: list[dict[str, Any]] = []
    async with stdio_client(params) as streams, ClientSession(streams[0], streams[1]) as session:
        await session.initialize()
        # Opens the database: not a question's cost.
        await session.call_tool("cairn_search", {"text": "warm up", "limit": 1})
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
                    "status": _status(reply),
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
        [str(exe), "index", str(folder), "--workers", "2", "--no-daemon", "--json"],
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
    print(f"cairn modules byte-compiled first, as pip does at install: {ib.compile_cairn()}")
    wanted = set(args.only.split(","))
    for corpus in ib.CORPORA:
        if corpus.name not in wanted or corpus.name not in QUESTIONS:
            continue
        unpacked = ib.fetch_pypi(corpus.package, corpus.spec, args.cache)
        folder = unpacked / corpus.sub if corpus.sub else unpacked
        ib.clean_tree(folder)
        db_path = _index(folder)
        questions = [
            (label, *_arguments(kind, subject)) for label, kind, subject in QUESTIONS[corpus.name]
        ]
        rows = anyio.run(_ask, db_path, questions, args.calls)
        shakes = [anyio.run(_handshake, db_path) for _ in range(args.rounds)]
        print(f"\n## {corpus.name}: {db_path}")
        header = f"{'question':<42} {'tool':<20} {'status':<16} {'text':>7} {'json':>8}"
        print(f"{header} {'p50 ms':>7} {'max ms':>7}")
        for row in rows:
            print(
                f"{row['question']:<42} {row['tool']:<20} {row['status']:<16} "
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
