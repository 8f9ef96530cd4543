"""Benchmark ``cairn index`` against Graphify and CodeGraph on Django 5.2 and Flask 3.1.

Everything is fetched when the benchmark runs (never in tests) into a cache folder
outside the repository (``--cache``, default ``~/.cache/cairn-index-bench``):

* the Django and Flask source distributions, with ``pip download``; Cairn and the peers
  index the ``django/`` package of the Django sdist and the whole Flask sdist;
* Graphify (``graphifyy`` from PyPI) in its own virtualenv, run as
  ``graphify extract DIR --code-only --force``;
* CodeGraph (``@colbymchenry/codegraph`` from npm) in its own ``npm --prefix``, run as
  ``codegraph init -y DIR`` (``CODEGRAPH_TELEMETRY=0``: no network calls here).

Each tool runs as its own process tree, one after the other, ``--repeat`` rounds in turn
(so they share the machine's load), on the same folder, after removing every tool's
output from it. Measured per run: wall time; CPU time (user + system of the whole tree:
this process is a child subreaper, so grandchildren such as forkserver workers are
reaped here and counted); peak RSS of the tree (the largest sum of ``/proc`` RSS over the
tool's session, sampled every ``POLL_SECONDS``; pages shared by forked workers count in
each process, so it is an upper bound); nodes, facts (Cairn) or edges (peers), and
occurrences (Cairn's evidence records; for the peers, edges that carry a source
location). Cairn's ``graph.cairn`` is also checked to be byte-identical between
``--workers 1`` / ``PYTHONHASHSEED=0`` and ``--workers N`` / ``PYTHONHASHSEED=4242``.
A peer that cannot be installed or run is reported with the reason, never estimated.

    .venv/bin/python bench/index_bench.py [--workers 2] [--repeat 3] [--cache DIR]
        [--only django|flask] [--no-peers] [--json FILE]
"""

from __future__ import annotations

import argparse
import ctypes
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

PACKAGES = (("django", "5.2.*", "django"), ("flask", "3.1.*", None))
"""(PyPI name, version spec, sub-folder to index or None for the whole sdist)."""
FIXED_TIME = "2024-01-01T00:00:00Z"
GRAPHIFY_PACKAGE = "graphifyy"
CODEGRAPH_PACKAGE = "@colbymchenry/codegraph"
PEER_PYTHON = "python3.11"
TOOL_OUTPUTS = (".codegraph", "graphify-out", ".cairn")
"""What the tools leave in the indexed folder; removed before every run."""
POLL_SECONDS = 0.05
LINGER_SECONDS = 10.0
"""How long descendants may outlive a tool's main process before they are stopped."""
RUN_TIMEOUT_SECONDS = 1800.0
PR_SET_CHILD_SUBREAPER = 36
TARGET_WALL_VS_CODEGRAPH = 1.0
TARGET_WALL_VS_GRAPHIFY = 0.3
TARGET_PEAK_RSS_MIB = 600
TARGET_STABLE_SHARE = 0.99
TARGET_REPOSITORY = "django"
DJANGO_WORKERS_FOR_TARGETS = 2
PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")

CAIRN_CHILD = r"""
import json, sys, time
from cairn.codegraph import index_repository, index_summary, write_index
def main():
    started = time.perf_counter()
    result = index_repository(sys.argv[1], workers=int(sys.argv[3]))
    indexed = time.perf_counter()
    written = write_index(result, sys.argv[2], generated_at=sys.argv[4])
    done = time.perf_counter()
    print(json.dumps({"summary": index_summary(result), "index_seconds": indexed - started,
                      "write_seconds": done - indexed, "graph_bytes": written.graph_bytes}))
if __name__ == "__main__":
    main()
"""


@dataclass
class Run:
    """One measured process tree."""

    wall: float
    cpu: float
    peak_rss_mib: float
    returncode: int
    stdout: str
    stderr: str


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

    def best(self, metric: str) -> float | None:
        values = [getattr(run, metric) for run in self.runs]
        return min(values) if values else None

    def spread(self, metric: str) -> str:
        values = [getattr(run, metric) for run in self.runs]
        if len(values) < 2:
            return ""
        return f"{min(values):.1f}-{max(values):.1f}"


# --------------------------------------------------------------- measuring
def _become_subreaper() -> None:
    """Adopt orphaned descendants so their CPU time is reaped (and counted) here."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):  # pragma: no cover - non-Linux
        pass


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


def _reap_all(deadline: float) -> None:
    """Wait for every remaining descendant (stopping stragglers by PID at the deadline)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            if time.monotonic() > deadline:
                for child in _children():
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


def measure(argv: list[str], env: dict[str, str] | None = None) -> Run:
    """Run ``argv`` as a new session; wall, tree CPU and peak tree RSS."""
    import resource

    _become_subreaper()
    _reap_all(time.monotonic())
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(argv, env=env, stdout=out, stderr=err, start_new_session=True)
        peak = 0
        while proc.poll() is None:
            rss, _ = _session_stats(proc.pid)
            peak = max(peak, rss)
            if time.perf_counter() - started > RUN_TIMEOUT_SECONDS:
                proc.kill()
            time.sleep(POLL_SECONDS)
        wall = time.perf_counter() - started
        _reap_all(time.monotonic() + LINGER_SECONDS)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode("utf-8", "replace")
        stderr = err.read().decode("utf-8", "replace")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Run(wall, cpu, peak / 2**20, proc.returncode, stdout, stderr)


# --------------------------------------------------------------- fetching
def fetch(name: str, spec: str, sub: str | None, cache: Path) -> Path:
    """Download and unpack one sdist into the cache; return the folder to index."""
    downloads = cache / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary",
         ":all:", f"{name}=={spec}", "-d", str(downloads)],
        check=True,
    )  # fmt: skip
    archives = [p for p in downloads.iterdir() if p.name.lower().startswith(f"{name}-")]
    archive = max(archives, key=lambda p: _version_key(p.name))
    target = cache / "src" / archive.name.removesuffix(".tar.gz")
    if not target.exists():
        with tarfile.open(archive) as tar:
            tar.extractall(target.parent / (target.name + ".tmp"), filter="data")
        (tree,) = [p for p in (target.parent / (target.name + ".tmp")).iterdir() if p.is_dir()]
        tree.rename(target)
        shutil.rmtree(target.parent / (target.name + ".tmp"))
    return target / sub if sub else target


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


# --------------------------------------------------------------- tools
def clean(folder: Path) -> None:
    """Remove every tool's output from the indexed folder."""
    for name in TOOL_OUTPUTS:
        path = folder / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)


def run_cairn(folder: Path, out: Path, workers: int, seed: str) -> tuple[Run, dict[str, Any]]:
    """One ``cairn index`` run in a fresh process; its measurements and summary."""
    clean(folder)
    env = {**os.environ, "PYTHONHASHSEED": seed}
    argv = [sys.executable, "-c", CAIRN_CHILD, str(folder), str(out), str(workers), FIXED_TIME]
    run = measure(argv, env)
    if run.returncode != 0:
        raise SystemExit(f"cairn failed on {folder}:\n{run.stderr[-4000:]}")
    data: dict[str, Any] = json.loads(run.stdout.strip().splitlines()[-1])
    data["sha256"] = hashlib.sha256((out / "graph.cairn").read_bytes()).hexdigest()
    return run, data


def codegraph_counts(folder: Path) -> tuple[int, int, int]:
    """Nodes, edges and located edges in CodeGraph's SQLite database."""
    with sqlite3.connect(folder / ".codegraph" / "codegraph.db") as db:
        nodes = db.execute("SELECT count(*) FROM nodes").fetchone()[0]
        edges = db.execute("SELECT count(*) FROM edges").fetchone()[0]
        located = db.execute("SELECT count(*) FROM edges WHERE line IS NOT NULL").fetchone()[0]
    return int(nodes), int(edges), int(located)


def graphify_counts(folder: Path) -> tuple[int, int, int]:
    """Nodes, links and located links in Graphify's ``graph.json``."""
    data = json.loads((folder / "graphify-out" / "graph.json").read_text("utf-8"))
    links = data.get("links", data.get("edges", []))
    located = sum(1 for link in links if link.get("source_location"))
    return len(data["nodes"]), len(links), located


@dataclass
class Peer:
    """How to install, run and count one peer tool."""

    name: str
    install: Callable[[Path], Path]
    argv: Callable[[Path, Path], list[str]]
    counts: Callable[[Path], tuple[int, int, int]]
    env: dict[str, str] = field(default_factory=dict)


PEERS = (
    Peer(
        "codegraph",
        install_codegraph,
        lambda exe, folder: [str(exe), "init", "-y", str(folder)],
        codegraph_counts,
        {"CODEGRAPH_TELEMETRY": "0"},
    ),
    Peer(
        "graphify",
        install_graphify,
        lambda exe, folder: [str(exe), "extract", str(folder), "--code-only", "--force"],
        graphify_counts,
    ),
)


def run_peer(peer: Peer, exe: Path, folder: Path, result: ToolResult) -> None:
    """One measured run of a peer; records counts or the reason it failed."""
    clean(folder)
    run = measure(peer.argv(exe, folder), {**os.environ, **peer.env})
    if run.returncode != 0:
        result.error = f"exit {run.returncode}: {(run.stderr or run.stdout)[-300:].strip()}"
        return
    try:
        result.nodes, result.facts, result.occurrences = peer.counts(folder)
    except (OSError, ValueError, KeyError, sqlite3.Error) as exc:
        result.error = f"no readable output: {type(exc).__name__}: {exc}"
        return
    result.runs.append(run)


# --------------------------------------------------------------- reporting
def _fmt(value: float | None, spec: str = ".1f") -> str:
    return "-" if value is None else format(value, spec)


def print_table(label: str, results: list[ToolResult]) -> None:
    """One table per repository: every tool with best and spread of its runs."""
    print(f"\n## {label}")
    print(
        f"{'tool':<11}{'runs':>5}{'wall s':>8}{'(spread)':>12}{'CPU s':>8}{'(spread)':>12}"
        f"{'RSS MiB':>9}{'nodes':>8}{'facts/edges':>12}{'occurrences':>12}"
    )
    for result in results:
        if result.error is not None and not result.runs:
            print(f"{result.tool:<11}  not measured: {result.error}")
            continue
        print(
            f"{result.tool:<11}{len(result.runs):>5}{_fmt(result.best('wall')):>8}"
            f"{result.spread('wall'):>12}{_fmt(result.best('cpu')):>8}{result.spread('cpu'):>12}"
            f"{_fmt(result.best('peak_rss_mib'), '.0f'):>9}{result.nodes or 0:>8}"
            f"{result.facts or 0:>12}{result.occurrences or 0:>12}"
        )
    cairn = results[0]
    for peer in results[1:]:
        if not peer.runs or not cairn.runs:
            continue
        ratios = []
        for metric, name in (("wall", "wall"), ("cpu", "CPU"), ("peak_rss_mib", "RSS")):
            mine, theirs = cairn.best(metric), peer.best(metric)
            if mine is not None and theirs:
                ratios.append(f"{name} {mine / theirs:.2f}x")
        print(f"  cairn / {peer.tool}: " + ", ".join(ratios))


def check_targets(results: list[ToolResult], workers: int) -> list[str]:
    """The issue's acceptance targets on Django with 2 workers, each PASS/MISS/n/a."""
    cairn = results[0]
    lines = []
    if workers != DJANGO_WORKERS_FOR_TARGETS:
        lines.append(f"(targets are defined for {DJANGO_WORKERS_FOR_TARGETS} workers)")
    wall = cairn.best("wall")
    peers = {result.tool: result for result in results[1:]}
    for name, limit in (
        ("codegraph", TARGET_WALL_VS_CODEGRAPH),
        ("graphify", TARGET_WALL_VS_GRAPHIFY),
    ):
        peer = peers.get(name)
        theirs = peer.best("wall") if peer else None
        if wall is None or not theirs:
            lines.append(f"wall <= {limit}x {name}: n/a ({name} not measured)")
            continue
        ratio = wall / theirs
        verdict = "PASS" if ratio <= limit else "MISS"
        lines.append(
            f"wall <= {limit}x {name}: {ratio:.2f}x ({wall:.1f} s / {theirs:.1f} s) {verdict}"
        )
    rss = cairn.best("peak_rss_mib")
    if rss is not None:
        verdict = "PASS" if rss <= TARGET_PEAK_RSS_MIB else "MISS"
        lines.append(f"peak RSS <= {TARGET_PEAK_RSS_MIB} MiB: {rss:.0f} MiB {verdict}")
    share = cairn.extra.get("stable_fact_share")
    if share is not None:
        verdict = "PASS" if share >= TARGET_STABLE_SHARE else "MISS"
        lines.append(f"stable x stable facts >= {TARGET_STABLE_SHARE:.0%}: {share:.2%} {verdict}")
    return lines


# --------------------------------------------------------------- main
def bench_repository(
    name: str, folder: Path, cache: Path, args: argparse.Namespace, exes: dict[str, Path]
) -> list[ToolResult]:
    """Every tool on one folder, ``--repeat`` rounds; then Cairn's determinism check."""
    cairn = ToolResult("cairn")
    results = [cairn, *(ToolResult(peer.name) for peer in PEERS)]
    for peer, result in zip(PEERS, results[1:], strict=True):
        if peer.name not in exes:
            result.error = str(exes.get(f"{peer.name}:error", "not installed"))
    out_root = cache / "out" / name
    for _ in range(args.repeat):
        run, data = run_cairn(folder, out_root / f"w{args.workers}", args.workers, "4242")
        cairn.runs.append(run)
        summary = data["summary"]
        counts = summary["counts"]
        cairn.nodes, cairn.facts = counts["node_count"], counts["fact_count"]
        cairn.occurrences = counts["occurrence_count"]
        cairn.extra.update(
            stable_fact_share=summary["stable_fact_share"],
            endpoint_pairs=counts["endpoint_pair_count"],
            unresolved_calls=summary["unresolved_calls"],
            calls=summary["calls"],
            files=summary["outcomes"].get("indexed", 0),
            index_seconds=min(data["index_seconds"], cairn.extra.get("index_seconds", 1e9)),
            write_seconds=min(data["write_seconds"], cairn.extra.get("write_seconds", 1e9)),
            graph_mib=data["graph_bytes"] / 2**20,
            sha256=data["sha256"],
        )
        for peer, result in zip(PEERS, results[1:], strict=True):
            if peer.name in exes and result.error is None:
                run_peer(peer, exes[peer.name], folder, result)
    run, data = run_cairn(folder, out_root / "w1", 1, "0")
    cairn.extra["one_worker_wall"] = run.wall
    cairn.extra["one_worker_rss_mib"] = run.peak_rss_mib
    cairn.extra["same_bytes"] = data["sha256"] == cairn.extra["sha256"]
    clean(folder)
    return results


def main() -> None:
    """Fetch, install, measure, print the tables, the ratios and the targets."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--workers", type=int, default=DJANGO_WORKERS_FOR_TARGETS)
    parser.add_argument("--repeat", type=int, default=1, help="measured rounds per tool")
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "cairn-index-bench")
    parser.add_argument("--only", choices=[p[0] for p in PACKAGES], default=None)
    parser.add_argument("--no-peers", action="store_true", help="measure Cairn only")
    parser.add_argument("--json", type=Path, default=None, help="also write results here")
    args = parser.parse_args()
    cache: Path = args.cache.expanduser().resolve()
    cache.mkdir(parents=True, exist_ok=True)
    exes: dict[str, Any] = {}
    for peer in () if args.no_peers else PEERS:
        try:
            exes[peer.name] = peer.install(cache)
        except (OSError, RuntimeError, subprocess.CalledProcessError) as exc:
            detail = getattr(exc, "stderr", b"") or b""
            text = detail.decode("utf-8", "replace") if isinstance(detail, bytes) else detail
            exes[f"{peer.name}:error"] = f"install failed: {exc} {text[-300:]}".strip()
    load = os.getloadavg()
    print(
        f"cache {cache}; workers {args.workers}; repeat {args.repeat}; "
        f"{os.cpu_count()} CPUs; load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; "
        f"peers {_peer_versions(cache) or 'none'}"
    )
    report: dict[str, Any] = {}
    for name, spec, sub in PACKAGES:
        if args.only and name != args.only:
            continue
        folder = fetch(name, spec, sub, cache)
        results = bench_repository(name, folder, cache, args, exes)
        label = f"{folder.parent.name}/{folder.name}" if sub else folder.name
        print_table(label, results)
        extra = results[0].extra
        print(
            f"  cairn: {extra['files']} files, {extra['endpoint_pairs']} endpoint pairs, "
            f"stable x stable {extra['stable_fact_share']:.2%}, unresolved calls "
            f"{extra['unresolved_calls']}, in-process index {extra['index_seconds']:.1f} s + "
            f"write {extra['write_seconds']:.1f} s, graph.cairn {extra['graph_mib']:.1f} MiB; "
            f"1 worker {extra['one_worker_wall']:.1f} s / {extra['one_worker_rss_mib']:.0f} MiB; "
            f"same bytes for 1 and {args.workers} workers: "
            f"{'yes' if extra['same_bytes'] else 'NO'}"
        )
        print(f"  cairn calls: {json.dumps(extra['calls'])}")
        if name == TARGET_REPOSITORY:
            print("  targets:")
            for line in check_targets(results, args.workers):
                print(f"    {line}")
        report[name] = [
            {
                **asdict(result),
                "runs": [{**asdict(r), "stdout": "", "stderr": ""} for r in result.runs],
            }
            for result in results
        ]
        sys.stdout.flush()
    load = os.getloadavg()
    print(f"\nload average at the end {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2, sort_keys=True))


if __name__ == "__main__":
    main()
