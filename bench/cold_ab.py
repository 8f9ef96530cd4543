"""Cold open plus the first text search, two source trees side by side (A/B).

Each round starts a fresh interpreter per tree (alternating, so machine noise falls on
both), opens its own copy of the database with ``cairn.open`` and runs one text search;
the first round warms the page cache and is left out of the median.

    .venv/bin/python bench/cold_ab.py --db PATH --old SRC [--new SRC] [--rounds 5]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

_PROBE = """
import sys, time
started = time.perf_counter()
import cairn
from cairn.search.contracts import SearchRequest
with cairn.open(sys.argv[1]) as db:
    db.search(SearchRequest("main", "symbols", text_field="/text", text=sys.argv[2], limit=10))
print(time.perf_counter() - started)
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, required=True, help="a cairn index database")
    parser.add_argument("--old", type=Path, required=True, help="the src/ folder of A")
    parser.add_argument("--new", type=Path, default=REPO / "src", help="the src/ folder of B")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--query", default="model field")
    args = parser.parse_args()
    times: dict[str, list[float]] = {"old": [], "new": []}
    with tempfile.TemporaryDirectory() as scratch:
        copies = {name: Path(scratch) / f"{name}.db" for name in times}
        for copy in copies.values():
            shutil.copyfile(args.db, copy)  # each tree migrates its own copy
        for _ in range(args.rounds):
            for name, src in (("old", args.old), ("new", args.new)):
                done = subprocess.run(
                    [sys.executable, "-c", _PROBE, str(copies[name]), args.query],
                    env={"PYTHONPATH": str(src)},
                    capture_output=True,
                    text=True,
                    check=True,
                )
                times[name].append(float(done.stdout))
    print("| tree | runs s | median s (first run left out) |")
    print("|---|---|---|")
    for name, found in times.items():
        runs = ", ".join(f"{value:.3f}" for value in found)
        print(f"| {name} | {runs} | {statistics.median(found[1:]):.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
