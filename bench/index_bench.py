"""Benchmark the real ``cairn index DIR`` CLI against CodeGraph and Graphify (issue #17).

What is timed is what a user runs. Cairn is the console script next to this Python
(``.venv/bin/cairn``), run as one process tree::

    cairn index DIR --workers N --generated-at 2024-01-01T00:00:00Z --json

which extracts, writes ``DIR/.cairn/graph.cairn`` (plus manifest) and loads
``DIR/.cairn/cairn.db``. Cairn's modules are byte-compiled before the first round, as a
``pip install`` does (``compile_cairn``): a timed process does not compile its own code.
The peers run beside it, each as its own process tree:

* CodeGraph (``@colbymchenry/codegraph`` from npm, in its own ``npm --prefix``):
  ``codegraph init -y DIR`` (``CODEGRAPH_TELEMETRY=0``), writes ``DIR/.codegraph/``;
* Graphify (``graphifyy`` from PyPI, in its own virtualenv):
  ``graphify extract DIR --code-only --force``, writes ``DIR/graphify-out/``.

Corpora, fetched when the benchmark runs (never in tests) into a cache folder outside the
repository (``--cache``, default ``~/.cache/cairn-index-bench``):

* ``django``: the ``django/`` package folder of the Django 5.2.* sdist (``pip download``);
* ``django-sdist``: the whole Django 5.2.* sdist folder (tests, docs, js_tests included);
  Cairn only, unless ``--peers-on-sdist`` is given;
* ``flask``: the whole Flask 3.1.* sdist;
* ``zod``: the ``src/`` folder (TypeScript sources, tests included) of the zod 3.x npm
  package (``npm pack zod@3``; the tarball also ships built JS and ``.d.ts``, not indexed).

Rounds are interleaved: each of the ``--repeat`` rounds runs cairn, codegraph and
graphify once in turn on the same folder, after removing every tool's output from it, so
the tools share the machine's load. Reported per tool: median (and min-max) over the
rounds of wall time; CPU time (user + system of the whole tree: this process is a child
subreaper, so grandchildren such as worker processes are reaped here and counted); peak
RSS of the tree (the largest sum of ``/proc`` RSS over the tool's session, sampled every
``POLL_SECONDS``; pages shared by forked workers count in each process, so it is an upper
bound; the targets are judged on it); peak PSS of the tree (the largest sum of
``smaps_rollup`` proportional set sizes, where a shared page counts once in all: what
the tree really holds, shown beside it); nodes, facts (Cairn) or edges (peers),
occurrences (Cairn's evidence records; for the peers, edges that carry a source
location); and the on-disk size of what the run left behind (apparent file sizes,
MiB = 2**20 bytes): Cairn's ``cairn.db`` (with ``-wal``/``-shm`` if present),
``graph.cairn`` and the ``.cairn/`` folder total;
CodeGraph's ``codegraph.db`` (with ``-wal``/``-shm``) and ``.codegraph/`` total;
Graphify's ``graphify-out/`` total. Cairn's ``graph.cairn`` is checked to be
byte-identical between every ``--workers N`` / ``PYTHONHASHSEED=4242`` round and one
extra ``--workers 1`` / ``PYTHONHASHSEED=0`` run. Issue #17's targets are printed with
PASS/FAIL. A peer that cannot be installed or run is reported with the reason, never
estimated.

    .venv/bin/python bench/index_bench.py [--workers 2] [--repeat 3] [--cache DIR]
        [--only django,django-sdist,flask,zod] [--no-peers] [--peers-on-sdist]
        [--json FILE]
"""

from __future__ import annotations

import argparse
import ctypes
import hashlib
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

FIXED_TIME = "2024-01-01T00:00:00Z"
GRAPHIFY_PACKAGE = "graphifyy"
CODEGRAPH_PACKAGE = "@colbymchenry/codegraph"
PEER_PYTHON = "python3.11"
TOOL_OUTPUTS = (".codegraph", "graphify-out", ".cairn")
"""What the tools leave in the indexed folder; removed before every run."""
SQLITE_SIDE_FILES = ("", "-wal", "-shm")
POLL_SECONDS = 0.05
LINGER_SECONDS = 10.0
"""How long descendants may outlive a tool's main process before they are stopped."""
RUN_TIMEOUT_SECONDS = 1800.0
PR_SET_CHILD_SUBREAPER = 36
MIB = 2**20
PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")
MAIN_SEED = "4242"
ONE_WORKER_SEED = "0"
WORKERS_FOR_TARGETS = 2
# Issue #17 acceptance targets (sizes and memory in MiB = 2**20 bytes).
TARGET_DJANGO_WALL_VS_CODEGRAPH = 1.0
"""django: median Cairn wall / median CodeGraph wall of the same run."""
TARGET_DJANGO_PEAK_RSS_MIB = 600
TARGET_DJANGO_DB_VS_CODEGRAPH_DB = 1.5
"""django: cairn.db / codegraph.db."""
TARGET_DJANGO_FOLDER_VS_CODEGRAPH_DB = 2.5
"""django: the whole .cairn/ folder / codegraph.db."""
TARGET_SDIST_WALL_SECONDS = 60.0
TARGET_SDIST_PEAK_RSS_MIB = 1200
"""django-sdist: the issue's 1.2 GB, read as 1200 MiB."""
TARGET_SDIST_DB_MIB = 350
"""django-sdist: the issue's 350 MB, read as 350 MiB (the MB value is printed too)."""


@dataclass(frozen=True)
class Corpus:
    """One folder to index: where it comes from and whether the peers run on it."""

    name: str
    registry: str  # "pypi" (pip download of the sdist) or "npm" (npm pack)
    package: str
    spec: str
    sub: str | None  # sub-folder of the unpacked archive to index; None: all of it
    peers_by_default: bool


CORPORA = (
    Corpus("django", "pypi", "django", "5.2.*", "django", True),
    Corpus("django-sdist", "pypi", "django", "5.2.*", None, False),
    Corpus("flask", "pypi", "flask", "3.1.*", None, True),
    Corpus("zod", "npm", "zod", "3", "src", True),
)


@dataclass
class Run:
    """One measured process tree, plus what it left on disk."""

    wall: float
    cpu: float
    peak_rss_mib: float
    returncode: int
    stdout: str
    stderr: str
    sizes: dict[str, Any] = field(default_factory=dict)
    peak_pss_mib: float = 0.0
    """Peak of the summed proportional set sizes: a page shared by forked processes
    counts once over all of them (the RSS sum counts it in each)."""


@dataclass
class ToolResult:
    """Every run of one tool on one folder, plus its counts (or why it did not run)."""

    tool: str
    runs: list[Run] = field(default_factory=list)
    nodes: int | None = None
    facts: int | None = None
    occurrences: int | None = None
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def values(self, metric: str) -> list[float]:
        return [float(getattr(run, metric)) for run in self.runs]

    def median(self, metric: str) -> float | None:
        values = self.values(metric)
        return statistics.median(values) if values else None

    def spread(self, metric: str, spec: str = ".1f") -> str:
        values = self.values(metric)
        if len(values) < 2:
            return ""
        return f"{min(values):{spec}}-{max(values):{spec}}"

    def size(self, key: str) -> int | None:
        """A size in bytes from the last measured run."""
        if not self.runs or key not in self.runs[-1].sizes:
            return None
        return int(self.runs[-1].sizes[key])


# --------------------------------------------------------------- measuring
def _become_subreaper() -> None:
    """Adopt orphaned descendants so their CPU time is reaped (and counted) here."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):  # pragma: no cover - non-Linux
        pass


def _pss_bytes(pid: str) -> int:
    """The proportional set size of process ``pid`` (0 if it is gone)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as handle:
            for line in handle:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        return 0
    return 0


def _session_pss(pids: list[int]) -> int:
    """Summed PSS bytes of ``pids``."""
    return sum(_pss_bytes(str(pid)) for pid in pids)


def _session_stats(session: int) -> tuple[int, list[int]]:
    """Summed RSS bytes and the PIDs of every live process in ``session``."""
    total, pids = 0, []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                text = handle.read().decode("ascii", "replace")
        except OSError:
            continue
        fields = text[text.rfind(")") + 2 :].split()
        if int(fields[3]) == session:
            total += int(fields[21]) * PAGE_BYTES
            pids.append(int(entry))
    return total, pids


def _reap_all(deadline: float, keep: frozenset[int] = frozenset()) -> None:
    """Wait for every remaining descendant but ``keep`` (a process the caller runs beside
    the measured one, such as a ``cairn watch``), stopping stragglers by PID at the
    deadline."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            others = [child for child in _children() if child not in keep]
            if not others:
                return
            if time.monotonic() > deadline:
                for child in others:
                    os.kill(child, 9)
                deadline = float("inf")
            time.sleep(POLL_SECONDS)


def _children() -> list[int]:
    me, found = os.getpid(), []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                text = Path(f"/proc/{entry}/stat").read_text("ascii", "replace")
            except OSError:
                continue
            if int(text[text.rfind(")") + 2 :].split()[1]) == me:
                found.append(int(entry))
    return found


def measure(
    argv: list[str], env: dict[str, str] | None = None, keep: frozenset[int] = frozenset()
) -> Run:
    """Run ``argv`` as a new session; wall, tree CPU and peak tree RSS (children in
    ``keep`` are left running and not counted)."""
    import resource

    _become_subreaper()
    _reap_all(time.monotonic(), keep)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(argv, env=env, stdout=out, stderr=err, start_new_session=True)
        peak = peak_pss = 0
        while proc.poll() is None:
            rss, pids = _session_stats(proc.pid)
            peak = max(peak, rss)
            peak_pss = max(peak_pss, _session_pss(pids))
            if time.perf_counter() - started > RUN_TIMEOUT_SECONDS:
                proc.kill()
            time.sleep(POLL_SECONDS)
        wall = time.perf_counter() - started
        _reap_all(time.monotonic() + LINGER_SECONDS, keep)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode("utf-8", "replace")
        stderr = err.read().decode("utf-8", "replace")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Run(wall, cpu, peak / MIB, proc.returncode, stdout, stderr, peak_pss_mib=peak_pss / MIB)


def _file_sizes(folder: Path) -> dict[str, int]:
    """Apparent size in bytes of every file under ``folder`` (relative path -> bytes)."""
    sizes: dict[str, int] = {}
    if not folder.is_dir():
        return sizes
    for root, _, files in os.walk(folder):
        for name in files:
            path = Path(root) / name
            if not path.is_symlink():
                sizes[str(path.relative_to(folder))] = path.stat().st_size
    return dict(sorted(sizes.items()))


def _sqlite_bytes(files: dict[str, int], name: str) -> int:
    """A SQLite database's bytes, with its ``-wal`` and ``-shm`` files when present."""
    return sum(files.get(name + suffix, 0) for suffix in SQLITE_SIDE_FILES)


# --------------------------------------------------------------- fetching
def _unpack(archive: Path, target: Path) -> None:
    """Unpack an archive holding one top folder as ``target`` (once)."""
    if target.exists():
        return
    staging = target.parent / (target.name + ".tmp")
    if staging.exists():
        shutil.rmtree(staging)
    with tarfile.open(archive) as tar:
        tar.extractall(staging, filter="data")
    (tree,) = [p for p in staging.iterdir() if p.is_dir()]
    tree.rename(target)
    shutil.rmtree(staging)


def fetch_pypi(package: str, spec: str, cache: Path) -> Path:
    """Download and unpack one sdist into the cache; return the unpacked folder."""
    downloads = cache / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary",
         ":all:", f"{package}=={spec}", "-d", str(downloads)],
        check=True,
    )  # fmt: skip
    prefix = f"{package}-"
    archives = [
        p for p in downloads.iterdir() if p.name.lower().startswith(prefix) and "tar" in p.name
    ]
    archive = max(archives, key=lambda p: _version_key(p.name))
    target = cache / "src" / archive.name.removesuffix(".tar.gz")
    _unpack(archive, target)
    return target


def fetch_npm(package: str, spec: str, cache: Path) -> Path:
    """``npm pack`` one package into the cache and unpack it; return the unpacked folder."""
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError("npm is not installed")
    downloads = cache / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [npm, "pack", f"{package}@{spec}", "--json", "--pack-destination", str(downloads)],
        check=True,
        capture_output=True,
        text=True,
    )
    (info,) = json.loads(done.stdout)
    target = cache / "src" / f"{package}-{info['version']}"
    _unpack(downloads / info["filename"], target)
    return target


def _version_key(filename: str) -> tuple[int, ...]:
    version = filename.removesuffix(".tar.gz").rsplit("-", 1)[-1]
    return tuple(int(part) if part.isdigit() else -1 for part in version.split("."))


def install_graphify(cache: Path) -> Path:
    """Graphify in its own virtualenv (created on first use); returns its executable."""
    venv = cache / "peers" / "graphify-venv"
    exe = venv / "bin" / "graphify"
    if not exe.exists():
        venv.parent.mkdir(parents=True, exist_ok=True)
        python = shutil.which(PEER_PYTHON) or sys.executable
        subprocess.run([python, "-m", "venv", str(venv)], check=True)
        subprocess.run(
            [str(venv / "bin" / "pip"), "install", "--quiet", GRAPHIFY_PACKAGE],
            check=True,
            capture_output=True,
        )
    return exe


def install_codegraph(cache: Path) -> Path:
    """CodeGraph in its own npm prefix (installed on first use); returns its executable."""
    prefix = cache / "peers" / "codegraph-npm"
    exe = prefix / "node_modules" / ".bin" / "codegraph"
    if not exe.exists():
        npm = shutil.which("npm")
        if npm is None:
            raise RuntimeError("npm is not installed")
        prefix.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [npm, "install", "--silent", "--prefix", str(prefix), CODEGRAPH_PACKAGE],
            check=True,
            capture_output=True,
        )
    return exe


def _peer_versions(cache: Path) -> dict[str, str]:
    versions: dict[str, str] = {}
    graphify = cache / "peers" / "graphify-venv" / "bin" / "python"
    if graphify.exists():
        probe = "import importlib.metadata as m; print(m.version('graphifyy'))"
        done = subprocess.run([str(graphify), "-c", probe], capture_output=True, text=True)
        versions["graphify"] = done.stdout.strip() or "?"
    package = cache / "peers" / "codegraph-npm" / "node_modules" / CODEGRAPH_PACKAGE
    if (package / "package.json").exists():
        versions["codegraph"] = json.loads((package / "package.json").read_text())["version"]
    return versions


def _cairn_revision() -> dict[str, str]:
    """The commit of the checkout this script belongs to, and whether src/ is modified."""
    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "log", "-1", "--oneline"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
        status = subprocess.run(
            ["git", "-C", str(root), "status", "--short", "src"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return {"commit": "?", "src_modified": "?"}
    return {"commit": head, "src_modified": "yes" if status else "no"}


# --------------------------------------------------------------- tools
def clean(folder: Path) -> None:
    """Remove every tool's output from the indexed folder."""
    for name in TOOL_OUTPUTS:
        path = folder / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)


def clean_tree(root: Path) -> None:
    """Remove tool outputs anywhere under ``root`` (left over by an interrupted run)."""
    for path in sorted(root.rglob("*"), reverse=True):
        if path.name in TOOL_OUTPUTS and path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)


def cairn_executable() -> Path:
    """The ``cairn`` console script of this virtualenv (else the one on PATH)."""
    beside = Path(sys.executable).parent / "cairn"
    if beside.exists():
        return beside
    found = shutil.which("cairn")
    if found is None:
        raise SystemExit("no cairn executable next to this Python or on PATH")
    return Path(found)


def compile_cairn() -> str:
    """Byte-compile the ``cairn`` package the CLI will import, as ``pip install`` does.

    A wheel install compiles every module at install time, and an editable one writes
    ``__pycache__`` on its first run; a shell with ``PYTHONDONTWRITEBYTECODE=1`` (this
    sandbox sets it) would otherwise make every timed ``cairn`` process compile its own
    modules again (~0.1-0.35 s a process, which no user pays). The peers are measured as
    installed, with their bytecode. Returns the folder compiled (printed in the header).
    """
    where = subprocess.run(
        [sys.executable, "-c", "import cairn, os; print(os.path.dirname(cairn.__file__))"],
        capture_output=True, text=True, check=True, env=os.environ,
    ).stdout.strip()  # fmt: skip
    subprocess.run([sys.executable, "-m", "compileall", "-q", where], check=True)
    return where


def cairn_argv(exe: Path, folder: Path, workers: int) -> list[str]:
    """``cairn index`` as timed here: ``--no-daemon``, so no background watch (whose first
    index runs after the command returns) takes the CPU from the next tool's run; the
    command's own work and wall time are the same with it."""
    return [
        str(exe), "index", str(folder), "--workers", str(workers),
        "--generated-at", FIXED_TIME, "--no-daemon", "--json",
    ]  # fmt: skip


def run_cairn(exe: Path, folder: Path, workers: int, seed: str) -> tuple[Run, dict[str, Any]]:
    """One measured ``cairn index`` CLI run; its measurements, sizes and JSON summary."""
    clean(folder)
    run = measure(cairn_argv(exe, folder, workers), {**os.environ, "PYTHONHASHSEED": seed})
    if run.returncode != 0:
        raise RuntimeError(f"exit {run.returncode}: {(run.stderr or run.stdout)[-600:].strip()}")
    data: dict[str, Any] = json.loads(run.stdout)
    out = folder / ".cairn"
    files = _file_sizes(out)
    run.sizes = {
        "db_bytes": _sqlite_bytes(files, "cairn.db"),
        "artifact_bytes": files.get("graph.cairn", 0),
        "folder_bytes": sum(files.values()),
        "files": files,
    }
    data["sha256"] = hashlib.sha256((out / "graph.cairn").read_bytes()).hexdigest()
    return run, data


def codegraph_counts(folder: Path) -> tuple[int, int, int]:
    """Nodes, edges and located edges in CodeGraph's SQLite database."""
    with sqlite3.connect(folder / ".codegraph" / "codegraph.db") as db:
        nodes = db.execute("SELECT count(*) FROM nodes").fetchone()[0]
        edges = db.execute("SELECT count(*) FROM edges").fetchone()[0]
        located = db.execute("SELECT count(*) FROM edges WHERE line IS NOT NULL").fetchone()[0]
    return int(nodes), int(edges), int(located)


def codegraph_sizes(folder: Path) -> dict[str, Any]:
    files = _file_sizes(folder / ".codegraph")
    return {
        "db_bytes": _sqlite_bytes(files, "codegraph.db"),
        "folder_bytes": sum(files.values()),
        "files": files,
    }


def graphify_counts(folder: Path) -> tuple[int, int, int]:
    """Nodes, links and located links in Graphify's ``graph.json``."""
    data = json.loads((folder / "graphify-out" / "graph.json").read_text("utf-8"))
    links = data.get("links", data.get("edges", []))
    located = sum(1 for link in links if link.get("source_location"))
    return len(data["nodes"]), len(links), located


def graphify_sizes(folder: Path) -> dict[str, Any]:
    files = _file_sizes(folder / "graphify-out")
    return {"folder_bytes": sum(files.values()), "files": files}


@dataclass
class Peer:
    """How to install, run, count and size one peer tool."""

    name: str
    install: Callable[[Path], Path]
    argv: Callable[[Path, Path], list[str]]
    counts: Callable[[Path], tuple[int, int, int]]
    sizes: Callable[[Path], dict[str, Any]]
    env: dict[str, str] = field(default_factory=dict)


PEERS = (
    Peer(
        "codegraph",
        install_codegraph,
        lambda exe, folder: [str(exe), "init", "-y", str(folder)],
        codegraph_counts,
        codegraph_sizes,
        {"CODEGRAPH_TELEMETRY": "0"},
    ),
    Peer(
        "graphify",
        install_graphify,
        lambda exe, folder: [str(exe), "extract", str(folder), "--code-only", "--force"],
        graphify_counts,
        graphify_sizes,
    ),
)


def run_peer(peer: Peer, exe: Path, folder: Path, result: ToolResult) -> None:
    """One measured run of a peer; records counts and sizes or the reason it failed."""
    clean(folder)
    run = measure(peer.argv(exe, folder), {**os.environ, **peer.env})
    if run.returncode != 0:
        result.error = f"exit {run.returncode}: {(run.stderr or run.stdout)[-300:].strip()}"
        return
    try:
        result.nodes, result.facts, result.occurrences = peer.counts(folder)
        run.sizes = peer.sizes(folder)
    except (OSError, ValueError, KeyError, sqlite3.Error) as exc:
        result.error = f"no readable output: {type(exc).__name__}: {exc}"
        return
    result.runs.append(run)


# --------------------------------------------------------------- reporting
def _fmt(value: float | None, spec: str = ".1f") -> str:
    return "-" if value is None else format(value, spec)


def _mib(value: int | None) -> str:
    return "-" if value is None else f"{value / MIB:.1f}"


def _ratio(mine: float | None, theirs: float | None) -> float | None:
    return mine / theirs if mine is not None and theirs else None


def ratios(results: dict[str, ToolResult]) -> dict[str, float | None]:
    """The issue's size and time ratios (medians for times)."""
    cairn, codegraph, graphify = results["cairn"], results["codegraph"], results["graphify"]
    codegraph_db = codegraph.size("db_bytes")
    return {
        "cairn.db / codegraph.db": _ratio(cairn.size("db_bytes"), codegraph_db),
        ".cairn total / codegraph.db": _ratio(cairn.size("folder_bytes"), codegraph_db),
        "cairn wall / codegraph wall": _ratio(cairn.median("wall"), codegraph.median("wall")),
        "cairn wall / graphify wall": _ratio(cairn.median("wall"), graphify.median("wall")),
    }


def _per_round(results: dict[str, ToolResult], peer: str) -> str:
    mine, theirs = results["cairn"].values("wall"), results[peer].values("wall")
    if len(mine) < 2 or len(mine) != len(theirs):
        return ""
    each = " ".join(f"{a / b:.2f}" for a, b in zip(mine, theirs, strict=True))
    return f" (per round {each})"


def print_table(label: str, results: dict[str, ToolResult]) -> None:
    """One table per corpus: medians and min-max of the runs, counts, disk sizes, ratios."""
    print(f"\n## {label}")
    print(
        f"{'tool':<11}{'runs':>5}{'wall s':>8}{'(min-max)':>12}{'CPU s':>8}{'(min-max)':>12}"
        f"{'RSS MiB':>9}{'(min-max)':>11}{'PSS MiB':>9}{'nodes':>9}{'facts/edges':>12}"
        f"{'occurrences':>12}"
    )
    for result in results.values():
        if not result.runs:
            print(f"{result.tool:<11}  not measured: {result.error or 'no run'}")
            continue
        print(
            f"{result.tool:<11}{len(result.runs):>5}{_fmt(result.median('wall')):>8}"
            f"{result.spread('wall'):>12}{_fmt(result.median('cpu')):>8}"
            f"{result.spread('cpu'):>12}{_fmt(result.median('peak_rss_mib'), '.0f'):>9}"
            f"{result.spread('peak_rss_mib', '.0f'):>11}"
            f"{_fmt(result.median('peak_pss_mib'), '.0f'):>9}{result.nodes or 0:>9}"
            f"{result.facts or 0:>12}{result.occurrences or 0:>12}"
        )
        if result.error is not None:
            print(f"{'':<11}  (a later run failed: {result.error})")
    print("disk MiB (after the last run):")
    cairn, codegraph, graphify = results["cairn"], results["codegraph"], results["graphify"]
    if cairn.runs:
        print(
            f"  cairn      cairn.db {_mib(cairn.size('db_bytes'))}, graph.cairn "
            f"{_mib(cairn.size('artifact_bytes'))}, "
            f".cairn/ total {_mib(cairn.size('folder_bytes'))}"
        )
    if codegraph.runs:
        print(
            f"  codegraph  codegraph.db {_mib(codegraph.size('db_bytes'))}, .codegraph/ total "
            f"{_mib(codegraph.size('folder_bytes'))}"
        )
    if graphify.runs:
        print(f"  graphify   graphify-out/ total {_mib(graphify.size('folder_bytes'))}")
    shown = []
    for name, value in ratios(results).items():
        if value is not None:
            rounds = ""
            if name.endswith("codegraph wall"):
                rounds = _per_round(results, "codegraph")
            elif name.endswith("graphify wall"):
                rounds = _per_round(results, "graphify")
            shown.append(f"{name} {value:.2f}x{rounds}")
    if shown:
        print("ratios: " + "; ".join(shown))


@dataclass
class Target:
    """One acceptance target and its verdict (None when it could not be measured)."""

    name: str
    value: str
    passed: bool | None

    def line(self) -> str:
        verdict = "n/a" if self.passed is None else "PASS" if self.passed else "FAIL"
        return f"{self.name}: {self.value} {verdict}"


def _at_most(name: str, value: float | None, limit: float, shown: str) -> Target:
    if value is None:
        return Target(name, "not measured", None)
    return Target(name, shown, value <= limit)


def check_targets(corpus: str, results: dict[str, ToolResult]) -> list[Target]:
    """Issue #17's targets for ``corpus`` (none for flask and zod but determinism)."""
    cairn, codegraph = results["cairn"], results["codegraph"]
    targets = []
    wall, rss = cairn.median("wall"), cairn.median("peak_rss_mib")
    db, folder = cairn.size("db_bytes"), cairn.size("folder_bytes")
    their_db = codegraph.size("db_bytes")
    if corpus == "django":
        theirs = codegraph.median("wall")
        ratio = _ratio(wall, theirs)
        targets.append(
            _at_most(
                f"wall <= {TARGET_DJANGO_WALL_VS_CODEGRAPH}x codegraph (medians)",
                ratio,
                TARGET_DJANGO_WALL_VS_CODEGRAPH,
                f"{ratio or 0:.2f}x ({wall or 0:.1f} s / {theirs or 0:.1f} s)",
            )
        )
        targets.append(
            _at_most(
                f"peak RSS <= {TARGET_DJANGO_PEAK_RSS_MIB} MiB",
                rss,
                TARGET_DJANGO_PEAK_RSS_MIB,
                f"{rss or 0:.0f} MiB",
            )
        )
        for name, mine, limit in (
            ("cairn.db", db, TARGET_DJANGO_DB_VS_CODEGRAPH_DB),
            (".cairn total", folder, TARGET_DJANGO_FOLDER_VS_CODEGRAPH_DB),
        ):
            ratio = _ratio(mine, their_db)
            targets.append(
                _at_most(
                    f"{name} <= {limit}x codegraph.db",
                    ratio,
                    limit,
                    f"{ratio or 0:.2f}x ({_mib(mine)} MiB / {_mib(their_db)} MiB)",
                )
            )
    if corpus == "django-sdist":
        targets.append(
            _at_most(
                f"wall <= {TARGET_SDIST_WALL_SECONDS:.0f} s",
                wall,
                TARGET_SDIST_WALL_SECONDS,
                f"{wall or 0:.1f} s",
            )
        )
        targets.append(
            _at_most(
                f"peak RSS <= {TARGET_SDIST_PEAK_RSS_MIB} MiB",
                rss,
                TARGET_SDIST_PEAK_RSS_MIB,
                f"{rss or 0:.0f} MiB",
            )
        )
        targets.append(
            _at_most(
                f"cairn.db <= {TARGET_SDIST_DB_MIB} MiB",
                None if db is None else db / MIB,
                TARGET_SDIST_DB_MIB,
                f"{_mib(db)} MiB ({(db or 0) / 1e6:.1f} MB)",
            )
        )
    same = cairn.extra.get("same_bytes")
    targets.append(
        Target(
            "graph.cairn identical for --workers 1/seed 0 and --workers N/seed 4242",
            "yes" if same else "no" if same is not None else "not measured",
            same,
        )
    )
    return targets


# --------------------------------------------------------------- main
def bench_corpus(
    corpus: Corpus, folder: Path, args: argparse.Namespace, exes: dict[str, Any]
) -> dict[str, ToolResult]:
    """Interleaved rounds of every tool on one folder; then Cairn's determinism run."""
    cairn_exe = cairn_executable()
    cairn = ToolResult("cairn")
    results = {"cairn": cairn, **{peer.name: ToolResult(peer.name) for peer in PEERS}}
    with_peers = corpus.peers_by_default or args.peers_on_sdist
    for peer in PEERS:
        if args.no_peers:
            results[peer.name].error = "not run (--no-peers)"
        elif not with_peers:
            results[peer.name].error = f"not run on {corpus.name} (use --peers-on-sdist)"
        elif peer.name not in exes:
            results[peer.name].error = str(exes.get(f"{peer.name}:error", "not installed"))
    hashes: list[str] = []
    for _ in range(args.repeat):
        if cairn.error is None:
            try:
                run, data = run_cairn(cairn_exe, folder, args.workers, MAIN_SEED)
            except (RuntimeError, OSError, ValueError) as exc:
                cairn.error = str(exc)
            else:
                cairn.runs.append(run)
                hashes.append(data["sha256"])
                counts = data["counts"]
                cairn.nodes, cairn.facts = counts["node_count"], counts["fact_count"]
                cairn.occurrences = counts["occurrence_count"]
                cairn.extra.update(
                    files=data["outcomes"].get("indexed", 0),
                    endpoint_pairs=counts["endpoint_pair_count"],
                    stable_fact_share=data["stable_fact_share"],
                    unresolved_calls=data["unresolved_calls"],
                    calls=data["calls"],
                    load_changes=data.get("load", {}).get("changes"),
                    sha256=data["sha256"],
                )
                cairn.extra.setdefault("index_phase_seconds", []).append(data["seconds"])
        for peer in PEERS:
            result = results[peer.name]
            if result.error is None:
                run_peer(peer, exes[peer.name], folder, result)
    if cairn.runs:
        try:
            run, data = run_cairn(cairn_exe, folder, 1, ONE_WORKER_SEED)
        except (RuntimeError, OSError, ValueError) as exc:
            cairn.extra["one_worker_error"] = str(exc)
        else:
            cairn.extra["one_worker_wall"] = run.wall
            cairn.extra["one_worker_rss_mib"] = run.peak_rss_mib
            cairn.extra["same_bytes"] = set(hashes) == {data["sha256"]}
            cairn.extra["distinct_hashes"] = len({*hashes, data["sha256"]})
    clean(folder)
    return results


def _selected(only: list[str] | None) -> list[Corpus]:
    names = [name.strip() for item in only or [] for name in item.split(",") if name.strip()]
    known = {corpus.name: corpus for corpus in CORPORA}
    unknown = [name for name in names if name not in known]
    if unknown:
        raise SystemExit(f"unknown corpus {', '.join(unknown)}; choose from {', '.join(known)}")
    return [corpus for corpus in CORPORA if not names or corpus.name in names]


def _cairn_line(extra: dict[str, Any], workers: int) -> str:
    phases = extra.get("index_phase_seconds") or [0.0]
    line = (
        f"  cairn: {extra['files']} files, {extra['endpoint_pairs']} endpoint pairs, "
        f"stable x stable {extra['stable_fact_share']:.2%}, unresolved calls "
        f"{extra['unresolved_calls']}, {extra['load_changes']} load changes; index phase "
        f"(the CLI's own 'seconds', median) {statistics.median(phases):.1f} s"
    )
    if "one_worker_wall" in extra:
        line += (
            f"; --workers 1: {extra['one_worker_wall']:.1f} s / "
            f"{extra['one_worker_rss_mib']:.0f} MiB; graph.cairn same bytes for 1 and "
            f"{workers} workers over all runs: {'yes' if extra['same_bytes'] else 'NO'}"
        )
    elif "one_worker_error" in extra:
        line += f"; --workers 1 run failed: {extra['one_worker_error']}"
    return line


def main() -> None:
    """Fetch, install, measure, print the tables, the ratios and the targets."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--workers", type=int, default=WORKERS_FOR_TARGETS)
    parser.add_argument("--repeat", type=int, default=3, help="interleaved rounds")
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "cairn-index-bench")
    parser.add_argument(
        "--only",
        action="append",
        default=None,
        help=f"corpus to run (repeatable or comma list): {', '.join(c.name for c in CORPORA)}",
    )
    parser.add_argument("--no-peers", action="store_true", help="measure Cairn only")
    parser.add_argument(
        "--peers-on-sdist", action="store_true", help="also run the peers on django-sdist"
    )
    parser.add_argument("--json", type=Path, default=None, help="also write results here")
    args = parser.parse_args()
    corpora = _selected(args.only)
    cache: Path = args.cache.expanduser().resolve()
    cache.mkdir(parents=True, exist_ok=True)
    exes: dict[str, Any] = {}
    wants_peers = any(c.peers_by_default or args.peers_on_sdist for c in corpora)
    for peer in PEERS if wants_peers and not args.no_peers else ():
        try:
            exes[peer.name] = peer.install(cache)
        except (OSError, RuntimeError, subprocess.CalledProcessError) as exc:
            detail = getattr(exc, "stderr", b"") or b""
            text = detail.decode("utf-8", "replace") if isinstance(detail, bytes) else detail
            exes[f"{peer.name}:error"] = f"install failed: {exc} {text[-300:]}".strip()
    revision = _cairn_revision()
    load = os.getloadavg()
    print(
        f"cairn {revision['commit']} (src/ modified: {revision['src_modified']}); "
        f"cache {cache}; workers {args.workers}; repeat {args.repeat}; "
        f"{os.cpu_count()} CPUs; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; "
        f"peers {_peer_versions(cache) or 'none'}"
    )
    print("cairn command: " + " ".join(cairn_argv(cairn_executable(), Path("DIR"), args.workers)))
    print(f"cairn modules byte-compiled first, as pip does at install: {compile_cairn()}")
    if args.workers != WORKERS_FOR_TARGETS:
        print(f"(the targets are defined for --workers {WORKERS_FOR_TARGETS})")
    report: dict[str, Any] = {"revision": revision, "peers": _peer_versions(cache)}
    roots: dict[tuple[str, str, str], Path] = {}
    for corpus in corpora:
        key = (corpus.registry, corpus.package, corpus.spec)
        if key not in roots:
            fetcher = fetch_npm if corpus.registry == "npm" else fetch_pypi
            roots[key] = fetcher(corpus.package, corpus.spec, cache)
        root = roots[key]
        clean_tree(root)
        folder = root / corpus.sub if corpus.sub else root
        load = os.getloadavg()
        print(f"\n(load average before {corpus.name}: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f})")
        results = bench_corpus(corpus, folder, args, exes)
        where = f"{root.name}/{corpus.sub}" if corpus.sub else root.name
        print_table(f"{corpus.name}: {where}", results)
        if results["cairn"].runs:
            print(_cairn_line(results["cairn"].extra, args.workers))
            print(f"  cairn calls: {json.dumps(results['cairn'].extra['calls'])}")
        targets = check_targets(corpus.name, results)
        print("targets:")
        for target in targets:
            print(f"  {target.line()}")
        report[corpus.name] = {
            "folder": str(folder),
            "tools": {
                name: {
                    **asdict(result),
                    "runs": [{**asdict(r), "stdout": "", "stderr": ""} for r in result.runs],
                    "medians": {
                        metric: result.median(metric)
                        for metric in ("wall", "cpu", "peak_rss_mib", "peak_pss_mib")
                    },
                }
                for name, result in results.items()
            },
            "ratios": ratios(results),
            "targets": [asdict(target) for target in targets],
        }
        sys.stdout.flush()
    load = os.getloadavg()
    print(f"\nload average at the end {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2, sort_keys=True))


if __name__ == "__main__":
    main()
