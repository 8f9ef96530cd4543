"""Crash safety, the long run: kill a writer process with SIGKILL many times (issue 5).

Each round starts ``tests/store/crash_writer.py`` as a fresh process on the same file,
lets it issue commands (some of about 2.5 MB, so kills land inside commits), kills it
with SIGKILL after a random delay (a tenth of the kills land while the interpreter
starts or the file opens), then checks with a fresh ``Database``: the file opens and
passes ``PRAGMA integrity_check``; every acknowledged command is present; the visible
state (documents, revisions, text postings, vectors, facts) equals the model of a whole
prefix of the command sequence, so no command is partly applied; the position equals the
number of applied commands and of stored outcomes; stored outcomes and re-sent commands
give byte-identical receipts. The next writer re-sends the first unacknowledged command,
as a client that lost a reply must. At the end every receipt ever seen is checked again.

    .venv/bin/python bench/crash_bench.py [--kills 200] [--seed 1] [--max-delay 1.0]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "store"))

from crash_writer import Harness, final_check


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-delay", type=float, default=1.0, help="seconds after READY")
    parser.add_argument("--keep", type=Path, help="write the database here and keep it")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.keep or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "crash.db"
        if path.exists():
            parser.error(f"{path} exists: --keep needs a fresh folder")
        harness = Harness(path, args.seed, max_delay=args.max_delay)
        started = time.perf_counter()
        for index in range(args.kills):
            problems = harness.round()
            for problem in problems:
                print(f"kill {index + 1}: VIOLATION {problem}", flush=True)
            if (index + 1) % 25 == 0:
                print(
                    f"  {index + 1} kills, {harness.model.applied} commands applied, "
                    f"{time.perf_counter() - started:.0f} s",
                    flush=True,
                )
        harness.totals.violations += final_check(harness)
        elapsed = time.perf_counter() - started
        totals = harness.totals
        size = sum(f.stat().st_size for f in folder.glob("crash.db*")) / 2**20
        columns = (
            ("kills", f"{totals.kills}"),
            ("early kills", f"{totals.early_kills}"),
            ("commands applied", f"{harness.model.applied}"),
            ("acknowledged", f"{totals.acknowledged}"),
            ("applied, unacknowledged", f"{totals.applied_unacknowledged}"),
            ("big in flight", f"{totals.big_in_flight}"),
            ("receipts re-sent", f"{totals.resent + len(harness.known)}"),
            ("violations", f"{len(totals.violations)}"),
            ("file MiB", f"{size:.1f}"),
            ("time s", f"{elapsed:.0f}"),
        )
        print()
        print("| " + " | ".join(name for name, _ in columns) + " |")
        print("|" + "---|" * len(columns))
        print("| " + " | ".join(value for _, value in columns) + " |")
        for problem in totals.violations:
            print(f"VIOLATION {problem}")
    return 1 if totals.violations else 0


if __name__ == "__main__":
    raise SystemExit(main())
