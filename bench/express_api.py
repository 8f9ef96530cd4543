"""Express 4's public API as Cairn indexes it (issue 21): the member-assigned functions.

Express defines its API by assignment (``res.send = function send(body) {...}``,
``app.handle = ...``, ``proto.handle = ...`` in ``lib/router``). This fetches the
``express@4`` package with ``npm pack`` into the index bench's cache (as
``bench/index_bench.py`` does), indexes its ``lib/`` folder, and checks that each listed
API member is a node with its own outgoing calls; it prints the calls of a few.

    .venv/bin/python bench/express_api.py [--cache DIR]
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import index_bench as ib
from cairn.codegraph import index_repository

EXPRESS_SPEC = "4"
API = {
    "response.js": ("res.send", "res.json", "res.jsonp", "res.sendFile", "res.redirect",
                    "res.render", "res.status", "res.header", "res.cookie"),
    "request.js": ("req.header", "req.accepts", "req.is", "req.param"),
    "application.js": ("app.init", "app.handle", "app.use", "app.route", "app.listen",
                       "app.render", "app.set"),
    "router/index.js": ("proto.handle", "proto.use", "proto.route", "proto.param"),
}  # fmt: skip
"""Members every Express 4 user calls, by file (read off ``lib/`` of express 4.x).
A chained assignment (``res.set = res.header = function header``) gives the innermost
member its node; the outer name (``res.set``) is not a node of its own (a known gap)."""
SHOWN = ("function:response.js#res.send", "function:application.js#app.handle")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "cairn-index-bench")
    args = parser.parse_args()
    unpacked = ib.fetch_npm("express", EXPRESS_SPEC, args.cache)
    lib = unpacked / "lib"
    graph = index_repository(lib, workers=1).graph
    nodes = {node.id for node in graph.nodes()}
    outgoing = Counter(f.source for f in graph.facts() if f.relation == "calls")
    print(f"{unpacked.name}: {len(nodes)} nodes, {sum(outgoing.values())} call facts")
    missing = []
    for path, members in API.items():
        for member in members:
            node = f"function:{path}#{member}"
            found = node in nodes
            missing += [] if found else [node]
            print(f"  {'ok ' if found else 'MISSING'} {node}  calls out: {outgoing[node]}")
    for node in SHOWN:
        facts = graph.facts()
        targets = sorted(f.target for f in facts if f.relation == "calls" and f.source == node)
        print(f"{node} calls: {', '.join(targets)}")
    print(f"API members found: {sum(len(m) for m in API.values()) - len(missing)} of "
          f"{sum(len(m) for m in API.values())}")  # fmt: skip
    return 1 if missing else 0


if __name__ == "__main__":
    raise SystemExit(main())
