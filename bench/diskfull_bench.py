"""Disk full, the long run: fill a small tmpfs under a writing database and an index run,
then give the space back and check that nothing acknowledged was lost (issue 18).

Each round mounts a fresh tmpfs of a few MiB (root only: without the right to mount,
the bench says so and exits 0 with nothing measured), takes part of it with a filler
file, and then:

1. opens a database on it (``cairn.index.open``) and issues the commands of
   ``tests/store/crash_writer.py`` (documents, vectors, facts; some about 2.5 MB) until
   ``FAILURES_PER_ROUND`` of them were refused, re-sending a refused command as a client
   must, with a column snapshot and a ``VACUUM`` tried on the full disk too; every
   refusal must be ``StorageFullError`` (code ``storage_full``), nothing else;
2. while the disk is full: reads answer (documents, text and vector search), and
   opening a new database there fails with a storage error and leaves no file;
3. ``cairn index`` of a small tree (``src/cairn/store``) on the full disk fails with
   ``StorageFullError`` and leaves no partial ``graph.cairn`` or temporary file;
4. the tmpfs grows (space returns) and a fresh handle must show: ``integrity_check``
   ok, the position equal to the acknowledged commands, the visible state equal to the
   model of exactly those commands (``crash_writer.state_mismatches``), every stored
   outcome byte-identical to its receipt; one more command lands, and the index run
   of step 3 now succeeds and its artifact verifies.

    sudo .venv/bin/python bench/diskfull_bench.py [--rounds 50] [--seed 1]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from contextlib import closing
from pathlib import Path
from typing import Any

import orjson

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "tests" / "store"))

from crash_writer import (  # noqa: E402
    COLLECTION,
    SPACE,
    TEXT,
    VECTOR,
    Model,
    build_command,
    command_id,
    state_mismatches,
    word,
)

from cairn.codegraph.limits import GITIGNORE_BYTES  # noqa: E402
from cairn.errors import CairnError, StorageFullError  # noqa: E402

SIZES_MIB = (3, 4, 6, 8, 12)
"""tmpfs sizes a round picks from: small enough to fill within seconds."""
FAILURES_PER_ROUND = 6
"""Refused commands a round waits for before it gives the space back."""
GROWN_MIB = 256
"""The tmpfs size once space returns."""
INDEX_FREE_MAX = 4 * 2**20
"""Most bytes of filler freed before the index step (the run needs about this much)."""
INDEX_TREE = REPO / "src" / "cairn" / "store"
"""What the index step indexes: a real tree, small enough for a full tmpfs."""


class Mount:
    """A tmpfs mounted at a fresh folder for one round (unmounted on exit)."""

    def __init__(self, folder: Path, mib: int) -> None:
        self.folder = folder
        self.mib = mib

    def __enter__(self) -> Mount:
        self.folder.mkdir(parents=True, exist_ok=True)
        _mount("-t", "tmpfs", "-o", f"size={self.mib}m,mode=0700", "tmpfs", str(self.folder))
        return self

    def grow(self, mib: int) -> None:
        """Give the space back: remount larger, files kept."""
        _mount("-o", f"remount,size={mib}m", str(self.folder))

    def __exit__(self, *exc: object) -> None:
        subprocess.run(["umount", str(self.folder)], check=False, capture_output=True)


def _mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True, capture_output=True)


def can_mount(scratch: Path) -> str | None:
    """None when this process can mount a tmpfs, else why not."""
    if os.geteuid() != 0:
        return "not root: mounting a tmpfs needs root"
    probe = scratch / "probe"
    try:
        with Mount(probe, 1):
            pass
    except (OSError, subprocess.CalledProcessError) as exc:
        detail = getattr(exc, "stderr", b"") or b""
        return f"mount -t tmpfs failed: {detail.decode(errors='replace').strip() or exc}"
    return None


class Round:
    """One fill-and-return round; ``problems`` collects every violation."""

    def __init__(self, folder: Path, seed: int, rng: random.Random) -> None:
        self.folder = folder
        self.seed = seed
        self.rng = rng
        self.path = folder / "cairn.db"
        self.receipts: dict[int, bytes] = {}
        self.refusals: Counter[str] = Counter()
        self.problems: list[str] = []

    def refused(self, what: str, exc: BaseException) -> None:
        """Count a refusal; anything but a disk-full error is a violation."""
        if isinstance(exc, StorageFullError):
            self.refusals[what] += 1
        elif isinstance(exc, CairnError):
            self.problems.append(f"{what}: {exc.code} instead of storage_full: {exc.message}")
        else:
            self.problems.append(f"{what}: untyped {exc!r}")

    def fill(self) -> None:
        """Write until the disk refuses ``FAILURES_PER_ROUND`` commands (step 1 and 2)."""
        import cairn.index

        try:
            db = cairn.index.open(self.path)
        except Exception as exc:  # a disk too full for a new file: a refusal too
            self.refused("open", exc)
            self._no_file(self.path)
            return
        with db:
            k, failures = 1, 0
            while failures < FAILURES_PER_ROUND:
                try:
                    receipt = db.command(build_command(self.seed, k))
                except Exception as exc:
                    self.refused("command", exc)
                    failures += 1
                    self._maintenance(db)
                    continue
                from cairn.store.commands import encode_receipt

                self.receipts[k] = encode_receipt(receipt)
                k += 1
            self._reads_while_full(db)
        self._open_new_while_full()

    def _maintenance(self, db: Any) -> None:
        """A column snapshot and a VACUUM on the full disk: refused as full, or done."""
        for name in ("checkpoint_columns", "vacuum"):
            if self.rng.random() < 0.5:
                try:
                    getattr(db, name)()
                except Exception as exc:
                    self.refused(name, exc)

    def _reads_while_full(self, db: Any) -> None:
        """Reads need no space: they must answer exactly on a full disk."""
        model = Model(self.seed)
        while model.applied < len(self.receipts):
            model.advance()
        try:
            self.problems += [f"while full: {p}" for p in state_mismatches(db, model)]
        except Exception as exc:
            self.problems.append(f"a read on the full disk failed: {exc!r}")

    def _open_new_while_full(self) -> None:
        """A new database on the full disk: refused as full, leaving no file behind (or,
        when its first pages still fit, its commands refused as full)."""
        import cairn.store

        other = self.folder / "other.db"
        try:
            db = cairn.store.open(other)
        except Exception as exc:
            self.refused("new database", exc)
            self._no_file(other)
            return
        with db:
            try:
                for k in range(1, 4):
                    db.command(build_command(self.seed, k))
            except Exception as exc:
                self.refused("command on a new database", exc)
        for leftover in self.folder.glob("other.db*"):
            leftover.unlink()

    def _no_file(self, path: Path) -> None:
        if path.exists():
            self.problems.append(f"a refused open left {path.name} behind")

    def index_while_full(self, tree: Path) -> None:
        """Step 3: ``cairn index`` on the full disk refuses as full and leaves no debris."""
        from cairn.codegraph.console import index_and_write

        before = set(_files(tree / ".cairn"))
        try:
            index_and_write(tree, workers=1, as_json=True, generated_at="2024-01-01T00:00:00Z")
        except Exception as exc:
            self.refused("cairn index", exc)
        else:
            return  # it fitted: nothing to judge
        # Complete outputs may stay (each is written atomically); anything else is debris.
        kept = {"graph.cairn", "manifest.json", ".gitignore"}
        names = set(_files(tree / ".cairn")) - before
        debris = sorted(n for n in names if n not in kept and not n.startswith("cairn.db"))
        ignore = tree / ".cairn" / ".gitignore"
        if ignore.exists() and ignore.read_bytes() != GITIGNORE_BYTES:
            debris.append(".gitignore (partly written)")
        manifest = tree / ".cairn" / "manifest.json"
        if manifest.exists():
            try:
                orjson.loads(manifest.read_bytes())
            except orjson.JSONDecodeError:
                debris.append("manifest.json (partly written)")
        if debris:
            self.problems.append(f"a refused index left {debris}")
        artifact = tree / ".cairn" / "graph.cairn"
        if artifact.exists():
            self._verify_artifact(artifact, "after a refused index")

    def _verify_artifact(self, artifact: Path, when: str) -> None:
        from cairn.artifact.reader import read_artifact

        try:
            read_artifact(artifact)
        except Exception as exc:
            self.problems.append(f"graph.cairn {when} does not verify: {exc!r}")

    def after_space_returns(self, tree: Path) -> None:
        """Step 4: everything acknowledged is there, exactly, and writing works again."""
        import cairn.index

        if not self.path.exists():
            return
        with closing(sqlite3.connect(self.path)) as conn:
            verdict = conn.execute("PRAGMA integrity_check").fetchone()[0]
        if verdict != "ok":
            self.problems.append(f"integrity_check after space returned: {verdict}")
            return
        with cairn.index.open(self.path) as db:
            if db.position != len(self.receipts):
                self.problems.append(
                    f"position {db.position} after {len(self.receipts)} acknowledged commands"
                )
            model = Model(self.seed)
            while model.applied < db.position:
                model.advance()
            self.problems += state_mismatches(db, model)
            for k, data in self.receipts.items():
                if db.stored_outcome(command_id(self.seed, k)) != data:
                    self.problems.append(f"the stored outcome of command {k} differs")
            try:
                db.command(build_command(self.seed, len(self.receipts) + 1))
                hits = db.text_search(COLLECTION, TEXT, word(len(self.receipts) + 1), limit=5)
                if not hits:
                    self.problems.append("the command after space returned is not searchable")
                db.vector_search(COLLECTION, VECTOR, (1.0, 0.0, 0.0, 0.0), SPACE, limit=5)
            except Exception as exc:
                self.problems.append(f"writing after space returned: {exc!r}")
        from cairn.codegraph.console import index_and_write

        try:
            index_and_write(tree, workers=1, as_json=True, generated_at="2024-01-01T00:00:00Z")
        except Exception as exc:
            self.problems.append(f"cairn index after space returned: {exc!r}")
        else:
            self._verify_artifact(tree / ".cairn" / "graph.cairn", "after space returned")


def leave_free(folder: Path, filler: Path, wanted: int) -> None:
    """Resize ``filler`` so that about ``wanted`` bytes of ``folder``'s disk stay free."""
    stats = os.statvfs(folder)
    free = stats.f_bavail * stats.f_frsize
    size = filler.stat().st_size
    if free > wanted:
        with contextlib.suppress(OSError), filler.open("ab") as handle:
            handle.write(bytes(free - wanted))
    else:
        os.truncate(filler, max(0, size - (wanted - free)))


def _files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def run_round(scratch: Path, index: int, seed: int, rng: random.Random) -> Round:
    """Mount, fill, judge, give space back, judge again, unmount."""
    mib = rng.choice(SIZES_MIB)
    with Mount(scratch / f"round{index}", mib) as mount:
        filler = mount.folder / "filler"
        filler.write_bytes(os.urandom(int(rng.uniform(0.0, 0.5) * mib * 2**20)))
        one = Round(mount.folder, seed + index, rng)
        one.fill()
        tree = mount.folder / "tree"
        with contextlib.suppress(OSError):  # the copy hit the full disk: index what made it
            shutil.copytree(INDEX_TREE, tree, ignore=shutil.ignore_patterns("__pycache__"))
        if tree.is_dir():
            # Leave a random amount free, so the index run fails at a random phase (the
            # .gitignore, the artifact, the manifest, the database open or the load).
            leave_free(mount.folder, filler, int(rng.uniform(0.0, 1.0) * INDEX_FREE_MAX))
            one.index_while_full(tree)
        mount.grow(GROWN_MIB)
        shutil.rmtree(tree, ignore_errors=True)
        shutil.copytree(INDEX_TREE, tree, ignore=shutil.ignore_patterns("__pycache__"))
        one.after_space_returns(tree)
    return one


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as name:
        scratch = Path(name)
        reason = can_mount(scratch)
        if reason is not None:
            print(f"disk-full bench skipped: {reason}")
            return 0
        started = time.perf_counter()
        totals: Counter[str] = Counter()
        acknowledged = 0
        problems: list[str] = []
        for index in range(args.rounds):
            one = run_round(scratch, index, args.seed * 1000, rng)
            totals.update(one.refusals)
            acknowledged += len(one.receipts)
            problems += [f"round {index + 1}: {problem}" for problem in one.problems]
            for problem in one.problems:
                print(f"round {index + 1}: VIOLATION {problem}", flush=True)
        elapsed = time.perf_counter() - started
    refusals = ", ".join(f"{what} {count}" for what, count in sorted(totals.items()))
    print(f"disk-full bench: seed {args.seed}, {args.rounds} rounds, {elapsed:.0f} s")
    print("| rounds | commands acknowledged | refusals (all storage_full) | violations |")
    print("|---|---|---|---|")
    print(f"| {args.rounds} | {acknowledged} | {refusals} | {len(problems)} |")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
