"""Store benchmark (issue 5): bulk load, cold open, text/vector/hybrid latency beside floors.

    .venv/bin/python bench/store_bench.py [--django-artifact PATH] [--skip-django]
        [--skip-peers] [--repeat 3] [--rounds 3] [--scale [DOCS]] [--scale-only]

1. **Bulk load of the Django graph**: a ``graph.cairn`` of Django (``bench/index_bench.py``
   writes one; default: ``$CAIRN_BENCH_CACHE/django.graph.cairn``) read and loaded into a
   fresh database with ``load_semantic_graph`` (documents, text, hashing vectors, facts,
   occurrences: one transaction); throughput per record kind.
2. **The 100k-document synthetic corpus** (``bench/corpus.py``): loaded once into a cached
   database file (its load time is reported when this run did it).
3. **Cold open**: a fresh process opens the file and answers one hybrid search (the
   in-memory columns load from SQLite inside that first cut); several processes.
4. **Latency**: p50/p95 of text, vector and hybrid ``Database.search`` (top 10), each
   beside its floor measured in the same process (``bench/floors.py``: bare numpy sparse
   BM25 over the same postings, bare numpy scan; the hybrid floor is their sum), in
   ``--rounds`` rounds (best round reported, with the spread).
5. **Peers** in the same run, each in its own venv under the cache folder (created on
   first use with ``pip install``): LanceDB (native FTS, flat scan, ``RRFReranker(K=60)``)
   and txtai (BM25 keyword + numpy backend, external vectors). A peer that cannot be
   installed or run is reported with the reason, never with numbers. txtai, the peer
   with a ratio target, is kept running beside the latency rounds and measures one round
   right after each of Cairn's, so each round's hybrid ratio compares the same minutes
   of a host whose memory speed drifts; the report gives the ratio of the best rounds
   and the median of the per-round ratios.
6. **Documents at scale** (``--scale [DOCS]``, default ``SCALE_DOCS``; ``--scale-only``
   runs just this): the ``DOCS``-document corpus (generated once into the cache) is
   loaded into a fresh file ``$CAIRN_BENCH_CACHE/scale-DOCS/cairn.db`` in a child
   process through the same bulk path as ``cairn_database`` (``load_semantic_graph``
   with the corpus' own vectors; it writes the column snapshot and, being the first
   load, VACUUMs), then txtai indexes the same texts and vectors in its own child
   (``peer_txtai.py --build-only``: content stored, BM25 keyword index, numpy vectors)
   and saves to ``scale-DOCS/txtai/``. Each child's RSS is sampled from ``/proc``
   while it runs; its peak is the child's own ``ru_maxrss``. Reported: load seconds,
   peak RSS, bytes on disk and per document, their ratios against the targets
   (``SCALE_TARGETS``), the RSS of Cairn's child per load step, and where Cairn's
   bytes go (SQLite ``dbstat`` per table and index).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import closing
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np

import cairn
from cairn.search.contracts import SearchRequest
from cairn.store import Metric, VectorSpace
from corpus import (
    CACHE,
    COLLECTION,
    SPACE_ID,
    TEXT_FIELD,
    VECTOR_FIELD,
    FileVectors,
    LookupEmbedder,
    cairn_database,
    corpus,
    semantic_graph,
)
from floors import Bm25Floor, ScanFloor, percentiles, timed

SPACE = VectorSpace(SPACE_ID, 256, Metric.COSINE, "bench.clustered", "1")
TARGETS = {"text": 2.0, "vector": 5.0, "hybrid": 8.0, "hybrid_p95": 20.0, "cold_open_s": 2.0}
PEERS = {"lancedb": ("lancedb", "peer_lancedb.py"), "txtai": ("txtai", "peer_txtai.py")}


def request(query: dict[str, Any], vector: np.ndarray, mode: str) -> SearchRequest:
    """The Cairn search of one benchmark query: text, vector or both (top 10)."""
    text = mode in ("text", "hybrid")
    vec = mode in ("vector", "hybrid")
    return SearchRequest(
        "main",
        COLLECTION,
        text_field=TEXT_FIELD if text else None,
        text=query["text"] if text else None,
        vector_field=VECTOR_FIELD if vec else None,
        vector=tuple(float(x) for x in vector) if vec else None,
        space=SPACE if vec else None,
        limit=10,
    )


# ------------------------------------------------------------------------ Django load
DJANGO_DB = CACHE / "django.cairn.db"


def django_load(artifact: Path, target: Path = DJANGO_DB) -> dict[str, Any]:
    """Read a Django ``graph.cairn`` and load it into a fresh database file; time both.

    The file is kept at ``target`` for ``bench/search_bench.py`` (replaced on each run).
    """
    from cairn.artifact.reader import read_artifact
    from cairn.store.load import load_semantic_graph

    started = time.perf_counter()
    graph = read_artifact(artifact).graph
    read_s = time.perf_counter() - started
    counts = graph.counts()
    with tempfile.TemporaryDirectory(dir=target.parent) as folder:
        fresh = Path(folder) / "cairn.db"
        with cairn.open(fresh) as db:
            started = time.perf_counter()
            receipt = load_semantic_graph(db, graph)
            load_s = time.perf_counter() - started
            mutations = len(receipt.mutations)
        size = sum(f.stat().st_size for f in Path(folder).iterdir())
        for suffix in ("-wal", "-shm"):
            Path(str(fresh) + suffix).unlink(missing_ok=True)
        fresh.replace(target)
    return {
        "artifact": str(artifact),
        "nodes": counts.node_count,
        "facts": counts.fact_count,
        "occurrences": counts.occurrence_count,
        "mutations": mutations,
        "read_s": read_s,
        "load_s": load_s,
        "file_mib": size / 2**20,
    }


# ------------------------------------------------------------------------- cold open
def cold_open(path: Path) -> dict[str, float]:
    """In this (fresh) process: open the file and answer one hybrid search."""
    built = corpus()
    started = time.perf_counter()
    db = cairn.open(path)
    opened = time.perf_counter()
    try:
        db.search(request(built.queries[0], built.query_vectors[0], "hybrid"))
        first = time.perf_counter()
    finally:
        db.close()
    return {
        "open_s": opened - started,
        "first_search_s": first - opened,
        "total_s": first - started,
    }


def cold_opens(path: Path, runs: int) -> list[dict[str, float]]:
    """``runs`` fresh processes, each timing ``cold_open``."""
    results = []
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, __file__, "--cold-open", str(path)],
            check=True,
            capture_output=True,
            text=True,
        )
        results.append(json.loads(out.stdout))
    return results


# --------------------------------------------------------------------------- latency
class ServedPeer:
    """A peer script kept running (``--serve``): one measured round per request."""

    def __init__(self, python: Path, script: str, folder: Path, repeat: int) -> None:
        command = [str(python), str(Path(__file__).parent / script), "--serve"]
        command += ["--corpus", str(folder), "--repeat", str(repeat)]
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        self.info: dict[str, Any] = json.loads(self._line())  # after its index is built

    def _line(self) -> str:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the peer exited ({self.process.wait()})")
        return line

    def round(self) -> dict[str, list[float]]:
        """Every mode's ``[p50, p95]`` of one round, measured now."""
        assert self.process.stdin is not None
        self.process.stdin.write("round\n")
        self.process.stdin.flush()
        found: dict[str, list[float]] = json.loads(self._line())
        return found

    def close(self) -> None:
        """End the peer (it exits at the end of its input)."""
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=60)


def latencies(
    path: Path, repeat: int, rounds: int, paired: ServedPeer | None = None
) -> dict[str, Any]:
    """p50/p95 of Cairn and the floors, per mode, best of ``rounds`` rounds; with
    ``paired``, that peer's round right after each of Cairn's."""
    built = corpus()
    started = time.perf_counter()
    bm25 = Bm25Floor(built.texts())
    scan = ScanFloor(built.vectors)
    floor_build = time.perf_counter() - started
    queries = list(range(len(built.queries)))
    texts = [built.queries[i]["text"] for i in queries]
    vectors = [built.query_vectors[i] for i in queries]
    results: dict[str, list[tuple[float, float]]] = {}
    with cairn.open(path) as db:
        requests = {
            mode: [request(built.queries[i], built.query_vectors[i], mode) for i in queries]
            for mode in ("text", "vector", "hybrid")
        }
        db.search(requests["hybrid"][0])  # columns load once, outside the timings
        for _ in range(rounds):
            for mode, items in requests.items():
                results.setdefault(mode, []).append(percentiles(timed(db.search, items, repeat)))
            results.setdefault("text_floor", []).append(
                percentiles(timed(bm25.search, texts, repeat))
            )
            results.setdefault("vector_floor", []).append(
                percentiles(timed(scan.search, vectors, repeat))
            )
            if paired is not None:
                for mode, found in paired.round().items():
                    results.setdefault(f"peer_{mode}", []).append((found[0], found[1]))
    return {"rounds": results, "floor_build_s": floor_build}


def best(rounds: list[tuple[float, float]]) -> tuple[float, float, float, float]:
    """Best p50 and p95 over rounds, and their spreads (max - min)."""
    p50s = [r[0] for r in rounds]
    p95s = [r[1] for r in rounds]
    return min(p50s), min(p95s), max(p50s) - min(p50s), max(p95s) - min(p95s)


# ----------------------------------------------------------------------------- peers
def peer_venv(name: str, package: str) -> tuple[Path | None, str]:
    """The peer's venv python under the cache (created with pip on first use)."""
    folder = CACHE / f"{name}-venv"
    python = folder / "bin" / "python"
    if not python.exists():
        try:
            subprocess.run(["python3.11", "-m", "venv", str(folder)], check=True)
            subprocess.run([str(python), "-m", "pip", "install", "-q", package], check=True)
        except (OSError, subprocess.CalledProcessError) as exc:
            return None, f"cannot install {package}: {exc}"
    return python, ""


def served_txtai(folder: Path, repeat: int) -> ServedPeer | dict[str, Any]:
    """txtai kept running for paired rounds, or why it could not start."""
    package, script = PEERS["txtai"]
    python, why = peer_venv("txtai", package)
    if python is None:
        return {"error": why}
    try:
        return ServedPeer(python, script, folder, repeat)
    except (OSError, RuntimeError, ValueError) as exc:
        return {"error": f"txtai did not start: {exc}"}


def peers(folder: Path, repeat: int, names: list[str]) -> dict[str, Any]:
    """Run each peer script in its venv on the corpus files; its JSON or why it failed."""
    found: dict[str, Any] = {}
    for name in names:
        package, script = PEERS[name]
        python, why = peer_venv(name, package)
        if python is None:
            found[name] = {"error": why}
            continue
        out = subprocess.run(
            [
                *(str(python), str(Path(__file__).parent / script)),
                *("--corpus", str(folder), "--repeat", str(repeat)),
            ],
            capture_output=True,
            text=True,
        )
        if out.returncode != 0:
            found[name] = {"error": out.stderr.strip().splitlines()[-1:] or ["failed"]}
            continue
        found[name] = json.loads(out.stdout)
    return found


# ----------------------------------------------------------------------------- scale
SCALE_DOCS = 300_000
"""Documents of the scale run (issue 17: documents at scale)."""
SCALE_TARGETS = {"bytes_ratio": 1.5, "load_peak_rss_mib": 2048.0}
"""Cairn/txtai bytes per document; Cairn load peak RSS in MiB (2 GiB = 2048 MiB)."""
RSS_SAMPLE_S = 0.25
"""Seconds between two reads of a child's ``/proc/<pid>/status``."""
TIMELINE_STEP_S = 5.0
"""Seconds between two points of the RSS timeline kept in the report."""
MIB = 2**20


def _status_mib(status: Path, key: str) -> float | None:
    """One ``kB`` line of a ``/proc/<pid>/status`` file in MiB (None when gone)."""
    try:
        lines = status.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
    return None


def _peak_rss_mib() -> float:
    """This process's peak resident set so far (Linux ``ru_maxrss`` is in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _files_bytes(path: Path) -> dict[str, int]:
    """Bytes of a database file and of its ``-wal``/``-shm`` companions if present."""
    found = {}
    for suffix in ("", "-wal", "-shm"):
        item = Path(str(path) + suffix)
        if item.exists():
            found[item.name] = item.stat().st_size
    return found


def scale_load(docs: int, path: Path) -> dict[str, Any]:
    """In this (fresh) process: load the ``docs`` corpus into a new file, as
    ``cairn_database`` does; seconds, the wall time each step began, file bytes."""
    from cairn.store.load import load_semantic_graph

    steps: list[tuple[str, float, float | None]] = []

    def mark(step: str) -> None:
        steps.append((step, time.time(), _status_mib(Path("/proc/self/status"), "VmRSS")))

    mark("reading corpus")
    built = corpus(docs=docs, mapped=True)
    mark("building graph")
    graph = semantic_graph(built)
    mark("building embedder")
    # Vectors come from the file a batch at a time, as an embedder computes them.
    # The graph's own text strings (not a second copy of every text) key the lookup.
    texts = [graph.node(doc_id).attributes["text"] for doc_id in built.ids]
    embedder = LookupEmbedder(texts, FileVectors(built.folder / "vectors.npy"))
    del texts
    with cairn.open(path) as db:
        started = time.perf_counter()
        load_semantic_graph(db, graph, embedder=embedder, progress=mark)
        load_s = time.perf_counter() - started
        mark("closing")
        before_close = _files_bytes(path)
    mark("closed")
    return {
        "documents": len(built.ids),
        "facts": len(built.edges),
        "load_s": load_s,
        "steps": steps,
        "peak_rss_mib": _peak_rss_mib(),
        "files_open": before_close,
        "files": _files_bytes(path),
    }


class RssSampler:
    """Reads a child's ``VmRSS`` and ``VmHWM`` every ``RSS_SAMPLE_S`` in a thread."""

    def __init__(self, pid: int) -> None:
        self._status = Path(f"/proc/{pid}/status")
        self._done = threading.Event()
        self.samples: list[tuple[float, float]] = []  # (wall time, RSS MiB)
        self.hwm = 0.0
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._done.wait(RSS_SAMPLE_S):
            rss = _status_mib(self._status, "VmRSS")
            hwm = _status_mib(self._status, "VmHWM")
            if rss is None or hwm is None:
                return
            self.samples.append((time.time(), rss))
            self.hwm = max(self.hwm, hwm)

    def stop(self) -> None:
        """Stop sampling (after the child has exited)."""
        self._done.set()
        self._thread.join()


def sampled_run(command: list[str]) -> tuple[dict[str, Any], RssSampler, float]:
    """Run a child printing one JSON object; that object, its RSS samples, wall seconds."""
    started = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    sampler = RssSampler(child.pid)
    out, err = child.communicate()
    sampler.stop()
    wall = time.perf_counter() - started
    if child.returncode != 0:
        raise RuntimeError(f"{command[1]} exited {child.returncode}: {err.strip()[-2000:]}")
    return json.loads(out), sampler, wall


def timeline(samples: list[tuple[float, float]], origin: float) -> list[tuple[float, float]]:
    """(seconds since ``origin``, max RSS MiB) per ``TIMELINE_STEP_S`` window."""
    windows: dict[int, float] = {}
    for at, rss in samples:
        window = int((at - origin) // TIMELINE_STEP_S)
        windows[window] = max(windows.get(window, 0.0), rss)
    return [(w * TIMELINE_STEP_S, rss) for w, rss in sorted(windows.items())]


def step_peaks(
    steps: list[list[Any]], samples: list[tuple[float, float]], origin: float
) -> list[dict[str, Any]]:
    """Per load step: start (s after ``origin``), duration, RSS at start, max RSS sampled."""
    found = []
    for (name, start, rss), following in zip(steps, [*steps[1:], None], strict=True):
        end = following[1] if following is not None else float("inf")
        inside = [value for at, value in samples if start <= at < end]
        found.append(
            {
                "step": name,
                "start_s": start - origin,
                "duration_s": (end - start) if following is not None else 0.0,
                "rss_at_start_mib": rss,
                "max_sampled_mib": max(inside, default=None),
            }
        )
    return found


def table_bytes(path: Path, documents: int) -> list[dict[str, Any]]:
    """Per table and index of the file (SQLite ``dbstat``): pages, payload, bytes/doc."""
    query = (
        "SELECT name, COUNT(*), SUM(pgsize), SUM(payload), SUM(unused), "
        "SUM(CASE WHEN pagetype = 'leaf' THEN ncell ELSE 0 END), "
        "SUM(pagetype = 'overflow') FROM dbstat GROUP BY name ORDER BY SUM(pgsize) DESC"
    )
    with closing(sqlite3.connect(path)) as conn:
        rows = conn.execute(query).fetchall()
    return [
        {
            "name": name,
            "pages": pages,
            "bytes": size,
            "payload": payload,
            "unused": unused,
            "leaf_cells": cells,
            "overflow_pages": overflow,
            "bytes_per_doc": size / documents,
        }
        for name, pages, size, payload, unused, cells, overflow in rows
    ]


def snapshot_parts(path: Path) -> list[tuple[str, int]]:
    """Bytes of each array in the file's column snapshot, largest first."""
    query = (
        "SELECT name, SUM(length(data)) FROM column_snapshot GROUP BY name "
        "ORDER BY SUM(length(data)) DESC"
    )
    with closing(sqlite3.connect(path)) as conn:
        try:
            return [(str(name), int(size)) for name, size in conn.execute(query)]
        except sqlite3.OperationalError:  # no snapshot table
            return []


def cairn_scale(docs: int, folder: Path) -> dict[str, Any]:
    """Cairn's load of the scale corpus in a child process, with where the bytes go."""
    path = folder / "cairn.db"
    command = [sys.executable, __file__, "--scale-load", str(docs), str(path)]
    found, sampler, wall = sampled_run(command)
    found["wall_s"] = wall
    found["peak_rss_mib"] = max(found["peak_rss_mib"], sampler.hwm)
    found["sampled_hwm_mib"] = sampler.hwm
    steps = found.pop("steps")
    first = sampler.samples[0][0] if sampler.samples else steps[0][1]
    origin = min(first, steps[0][1])  # about when the child started
    found["step_rss"] = step_peaks(steps, sampler.samples, origin)
    found["timeline"] = timeline(sampler.samples, origin)
    found["bytes"] = sum(found["files"].values())
    found["bytes_open"] = sum(found["files_open"].values())
    found["tables"] = table_bytes(path, docs)
    found["snapshot_parts"] = snapshot_parts(path)
    return found


def txtai_scale(corpus_folder: Path, folder: Path) -> dict[str, Any]:
    """txtai's build and save of the scale corpus in its own child, or why it failed."""
    python, why = peer_venv("txtai", PEERS["txtai"][0])
    if python is None:
        return {"error": why}
    saved = folder / "txtai"
    script = str(Path(__file__).parent / PEERS["txtai"][1])
    command = [str(python), script, "--corpus", str(corpus_folder), "--build-only"]
    try:
        found, sampler, wall = sampled_run([*command, "--save", str(saved)])
    except (OSError, RuntimeError, ValueError) as exc:
        return {"error": str(exc)}
    found["wall_s"] = wall
    found["peak_rss_mib"] = max(found["peak_rss_mib"], sampler.hwm)
    found["sampled_hwm_mib"] = sampler.hwm
    found["timeline"] = timeline(sampler.samples, sampler.samples[0][0] if sampler.samples else 0)
    found["bytes"] = sum(p.stat().st_size for p in saved.rglob("*") if p.is_file())
    return found


def scale_verdicts(cairn_side: dict[str, Any], txtai: dict[str, Any], docs: int) -> dict[str, Any]:
    """Bytes per document of both, their ratio, and PASS/FAIL per target."""
    verdicts: dict[str, Any] = {"cairn_bytes_per_doc": cairn_side["bytes"] / docs}
    rss = cairn_side["peak_rss_mib"]
    verdicts["load_peak_rss_pass"] = rss <= SCALE_TARGETS["load_peak_rss_mib"]
    if "bytes" in txtai:
        verdicts["txtai_bytes_per_doc"] = txtai["bytes"] / docs
        ratio = cairn_side["bytes"] / txtai["bytes"]
        verdicts["bytes_ratio"] = ratio
        verdicts["bytes_ratio_pass"] = ratio <= SCALE_TARGETS["bytes_ratio"]
        verdicts["peak_rss_ratio"] = rss / txtai["peak_rss_mib"]
    return verdicts


def scale(docs: int) -> dict[str, Any]:
    """The scale run: corpus (cached), Cairn's load, then txtai's build, each in a child."""
    started = time.perf_counter()
    corpus_folder = corpus(docs=docs).folder  # generated once; the arrays are let go
    generation_s = time.perf_counter() - started
    folder = CACHE / f"scale-{docs}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    report: dict[str, Any] = {"documents": docs, "corpus_s": generation_s}
    report["load_average_before"] = os.getloadavg()
    report["cairn"] = cairn_scale(docs, folder)
    report["load_average_between"] = os.getloadavg()
    report["txtai"] = txtai_scale(corpus_folder, folder)
    report["load_average_after"] = os.getloadavg()
    report["targets"] = SCALE_TARGETS
    report["verdicts"] = scale_verdicts(report["cairn"], report["txtai"], docs)
    return report


def _verdict(passed: bool | None) -> str:
    return "n/a" if passed is None else ("PASS" if passed else "FAIL")


def print_scale(report: dict[str, Any]) -> None:
    """The scale run as Markdown tables."""
    docs = report["documents"]
    mine, peer, verdicts = report["cairn"], report["txtai"], report["verdicts"]
    print(
        f"\n## {docs:,} documents ({mine['facts']:,} facts); load average before / between "
        f"/ after: {report['load_average_before']} / {report['load_average_between']} "
        f"/ {report['load_average_after']}"
    )
    if "error" in peer:
        print(f"txtai: not measured: {peer['error']}")
        peer = {}
    target_rss = SCALE_TARGETS["load_peak_rss_mib"]
    rows = [
        ("load / build s", mine["load_s"], peer.get("build_s"), "", None),
        ("child wall s", mine["wall_s"], peer.get("wall_s"), "", None),
        (
            "peak RSS MiB",
            mine["peak_rss_mib"],
            peer.get("peak_rss_mib"),
            f"Cairn <= {target_rss:.0f} MiB (2 GiB)",
            verdicts["load_peak_rss_pass"],
        ),
        ("bytes on disk MiB", mine["bytes"] / MIB, peer.get("bytes", 0) / MIB or None, "", None),
        (
            "bytes per document",
            verdicts["cairn_bytes_per_doc"],
            verdicts.get("txtai_bytes_per_doc"),
            f"ratio <= {SCALE_TARGETS['bytes_ratio']}x",
            verdicts.get("bytes_ratio_pass"),
        ),
    ]
    print("\n| | Cairn | txtai | Cairn/txtai | target | verdict |")
    print("|---|---|---|---|---|---|")
    for name, ours, theirs, target, passed in rows:
        ratio = f"{ours / theirs:.2f}x" if theirs else "-"
        shown = f"{theirs:,.1f}" if theirs is not None else "-"
        print(f"| {name} | {ours:,.1f} | {shown} | {ratio} | {target} | {_verdict(passed)} |")
    print_cairn_scale(mine, docs)
    if peer:
        print(f"\ntxtai {peer['version']} saved files (bytes): {peer['files']}")
        print(f"txtai RSS timeline (s, MiB): {_points(peer['timeline'])}")


def _points(points: list[list[float]]) -> str:
    return ", ".join(f"{at:.0f}:{rss:.0f}" for at, rss in points)


def print_cairn_scale(mine: dict[str, Any], docs: int) -> None:
    """Cairn's files, RSS per load step and bytes per table."""
    print(f"\nCairn files after the load, open: {mine['files_open']}; closed: {mine['files']}")
    print("\n| Cairn step | start s | duration s | RSS at start MiB | max sampled MiB |")
    print("|---|---|---|---|---|")
    for step in mine["step_rss"]:
        peak = step["max_sampled_mib"]
        print(
            f"| {step['step']} | {step['start_s']:.1f} | {step['duration_s']:.1f} "
            f"| {step['rss_at_start_mib'] or 0:,.0f} | {'-' if peak is None else f'{peak:,.0f}'} |"
        )
    print(f"Cairn RSS timeline (s, MiB): {_points(mine['timeline'])}")
    print(
        "\n| table or index (dbstat) | MiB | bytes/doc | share | unused | leaf cells "
        "| overflow pages |"
    )
    print("|---|---|---|---|---|---|---|")
    total = sum(row["bytes"] for row in mine["tables"])
    for row in mine["tables"]:
        if row["bytes"] < total / 1000:
            continue
        print(
            f"| {row['name']} | {row['bytes'] / MIB:,.1f} | {row['bytes_per_doc']:,.0f} "
            f"| {row['bytes'] / total:.1%} | {row['unused'] / row['bytes']:.1%} "
            f"| {row['leaf_cells']:,} | {row['overflow_pages']:,} |"
        )
    print(f"| (all) | {total / MIB:,.1f} | {total / docs:,.0f} | 100% | | | |")
    parts = ", ".join(f"{name} {size / MIB:.1f}" for name, size in mine["snapshot_parts"][:8])
    print(f"column snapshot arrays (MiB): {parts}")


# ------------------------------------------------------------------------------ main
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--django-artifact", type=Path, default=CACHE / "django.graph.cairn")
    parser.add_argument("--skip-django", action="store_true")
    parser.add_argument("--skip-peers", action="store_true")
    parser.add_argument("--peers", default="lancedb,txtai")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cold-runs", type=int, default=3)
    parser.add_argument("--cold-open", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--django-only", action="store_true", help="only the Django load")
    parser.add_argument("--json", type=Path, help="also write every number here")
    parser.add_argument(
        "--scale", type=int, nargs="?", const=SCALE_DOCS, help="also the scale run (DOCS)"
    )
    parser.add_argument("--scale-only", action="store_true", help="only the scale run")
    parser.add_argument("--scale-load", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.cold_open:
        print(json.dumps(cold_open(args.cold_open)))
        return
    if args.scale_load:
        print(json.dumps(scale_load(int(args.scale_load[0]), Path(args.scale_load[1]))))
        return
    if args.scale_only:
        scale_only(args.scale or SCALE_DOCS, args.json)
        return
    if args.django_only:
        print(json.dumps(django_load(args.django_artifact)))
        return
    report: dict[str, Any] = {"load_average": os.getloadavg()}
    if not args.skip_django:
        if args.django_artifact.exists():
            report["django"] = django_load(args.django_artifact)
        else:
            report["django"] = {"error": f"no artifact at {args.django_artifact}"}
    built = corpus()
    path, timings = cairn_database(built)
    saved = CACHE / "corpus-load-timings.json"
    if timings:
        saved.write_text(json.dumps(timings))
    report["corpus"] = {
        "documents": len(built.ids),
        "facts": len(built.edges),
        "file_mib": path.stat().st_size / 2**20,
        "load": json.loads(saved.read_text()) if saved.exists() else {},
        "loaded_this_run": bool(timings),
    }
    report["cold_open"] = cold_opens(path, args.cold_runs)
    names = [] if args.skip_peers else args.peers.split(",")
    paired = served_txtai(built.folder, args.repeat) if "txtai" in names else None
    try:
        served = paired if isinstance(paired, ServedPeer) else None
        report["latency"] = latencies(path, args.repeat, args.rounds, served)
    finally:
        if isinstance(paired, ServedPeer):
            paired.close()
    if names:
        report["peers"] = peers(built.folder, args.repeat, [n for n in names if n != "txtai"])
    if isinstance(paired, ServedPeer):
        rounds = report["latency"]["rounds"]
        report["peers"]["txtai"] = {
            **paired.info,
            **{m: list(best(rounds[f"peer_{m}"])[:2]) for m in ("text", "vector", "hybrid")},
        }
    elif paired is not None:
        report["peers"]["txtai"] = paired
    if args.scale:
        report["scale"] = scale(args.scale)
    report["load_average_after"] = os.getloadavg()
    print_report(report)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


def print_report(report: dict[str, Any]) -> None:
    """Markdown tables of the report."""
    print(f"load average before/after: {report['load_average']} / {report['load_average_after']}")
    django = report.get("django")
    if django and "error" not in django:
        print(
            "\n| Django load | nodes | facts | occurrences | read s | load s | nodes/s | facts/s |"
        )
        print("|---|---|---|---|---|---|---|---|")
        print(
            f"| {Path(django['artifact']).name} | {django['nodes']:,} | {django['facts']:,} "
            f"| {django['occurrences']:,} | {django['read_s']:.1f} | {django['load_s']:.1f} "
            f"| {django['nodes'] / django['load_s']:,.0f} "
            f"| {django['facts'] / django['load_s']:,.0f} |"
        )
    elif django:
        print(f"\nDjango load: {django['error']}")
    info = report["corpus"]
    load = info["load"]
    print(
        f"\ncorpus: {info['documents']:,} documents, {info['facts']:,} facts, "
        f"{info['file_mib']:.0f} MiB; load {load.get('load_s', float('nan')):.0f} s"
    )
    colds = report["cold_open"]
    totals = [c["total_s"] for c in colds]
    print(
        f"cold open + first hybrid search: best {min(totals):.2f} s, worst {max(totals):.2f} s "
        f"(open {min(c['open_s'] for c in colds):.3f} s; target <= {TARGETS['cold_open_s']} s)"
    )
    rounds = report["latency"]["rounds"]
    print(
        "\n| mode | Cairn p50 ms | Cairn p95 ms | floor p50 ms | ratio p50 | spread p50 | target |"
    )
    print("|---|---|---|---|---|---|---|")
    text_floor = best(rounds["text_floor"])[0]
    vector_floor = best(rounds["vector_floor"])[0]
    floors = {"text": text_floor, "vector": vector_floor, "hybrid": text_floor + vector_floor}
    for mode in ("text", "vector", "hybrid"):
        p50, p95, spread, _ = best(rounds[mode])
        print(
            f"| {mode} | {p50:.2f} | {p95:.2f} | {floors[mode]:.2f} | "
            f"{p50 / floors[mode]:.2f}x | {spread:.2f} | p50 <= {TARGETS[mode]} |"
        )
    for peer, found in report.get("peers", {}).items():
        if "error" in found:
            print(f"\n{peer}: not measured: {found['error']}")
            continue
        print(
            f"\n{peer} {found['version']} (build {found['build_s']:.0f} s): "
            + ", ".join(
                f"{m} p50 {found[m][0]:.2f} / p95 {found[m][1]:.2f} ms"
                for m in ("text", "vector", "hybrid")
            )
        )
    txtai = report.get("peers", {}).get("txtai", {})
    if "hybrid" in txtai:
        hybrid = best(rounds["hybrid"])[0]
        print(f"Cairn hybrid / txtai hybrid: {hybrid / txtai['hybrid'][0]:.2f}x (target <= 0.4x)")
    if "peer_hybrid" in rounds:
        ratios = [c[0] / t[0] for c, t in zip(rounds["hybrid"], rounds["peer_hybrid"], strict=True)]
        print(
            "per round, txtai measured right after Cairn: "
            + ", ".join(f"{r:.2f}x" for r in ratios)
            + f" (median {statistics.median(ratios):.2f}x)"
        )
    if "scale" in report:
        print_scale(report["scale"])


def scale_only(docs: int, target: Path | None) -> None:
    """Just the scale run: print it, and write it to ``target`` if given."""
    report = scale(docs)
    print_scale(report)
    if target:
        target.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
