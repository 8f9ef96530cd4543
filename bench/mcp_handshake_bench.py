"""Time the MCP handshake of `cairn mcp` over stdio (issue 8: under 2 s on a large database).

Usage: python bench/mcp_handshake_bench.py --db PATH [--rounds N]

Starts the server as a subprocess with the official MCP client, and reports the time
from spawning the process to the `initialize` reply, and to the first tool listing.
The database opens lazily, so its size should not show in these numbers; the first
tool call (also timed) is where it opens.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from index_bench import compile_cairn

TARGET_SECONDS = 2.0


async def one_round(db: Path) -> tuple[float, float, float]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "cairn.cli", "mcp", "--db", str(db)]
    )
    start = time.perf_counter()
    async with stdio_client(params) as streams, ClientSession(streams[0], streams[1]) as session:
        await session.initialize()
        handshake = time.perf_counter() - start
        await session.list_tools()
        listed = time.perf_counter() - start
        await session.call_tool("cairn_search", {"text": "open", "limit": 1})
        first_call = time.perf_counter() - start
    return handshake, listed, first_call


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(f"cairn modules byte-compiled first, as pip does at install: {compile_cairn()}")
    rounds = [anyio.run(one_round, args.db) for _ in range(args.rounds)]
    size = args.db.stat().st_size / 2**20
    print(f"database {args.db} ({size:.1f} MiB), {args.rounds} rounds")
    print("| step | median s | best s | worst s |")
    print("|---|---|---|---|")
    for index, name in enumerate(("initialize reply", "tools listed", "first tool call")):
        values = [r[index] for r in rounds]
        print(
            f"| {name} | {statistics.median(values):.3f} | {min(values):.3f} | {max(values):.3f} |"
        )
    median = statistics.median(r[0] for r in rounds)
    verdict = "met" if median < TARGET_SECONDS else "MISSED"
    print(f"target: handshake < {TARGET_SECONDS} s -> {verdict} ({median:.3f} s median)")


if __name__ == "__main__":
    main()
