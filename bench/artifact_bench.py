"""Benchmark of ``graph.cairn`` v2: write, verified load, size and peak RSS (spec §13).

Builds a deterministic synthetic graph (default 100k nodes, 300k facts, about 1.2
occurrences per fact) through the public admission API, writes it with
``write_artifact``, loads it back with full verification, and times a plain
``orjson.loads`` of the same file for comparison. Run::

    .venv/bin/python bench/artifact_bench.py [--nodes N] [--facts N] [--repeat K]

Targets from issue 3: verified load >= 150k objects/s (nodes + facts + occurrences)
using both cores, write >= 200k objects/s.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from cairn.artifact import encode_artifact, read_artifact, write_artifact
from cairn.artifact.limits import ARTIFACT_HEADER
from cairn.artifact.runtime import gc_paused
from cairn.graph import (
    ConfidenceObservation,
    EndpointIdentity,
    IdentityReason,
    OccurrenceInput,
    SemanticGraph,
    SourceRange,
)

LOAD_TARGET_OBJECTS_PER_S = 150_000
WRITE_TARGET_OBJECTS_PER_S = 200_000
FIXED_TIMESTAMP = "2024-01-01T00:00:00Z"
DEFAULT_NODES = 100_000
DEFAULT_FACTS = 300_000
SECOND_SITE_SHARE = 0.2
CONFIDENCE_SHARE = 0.3
PROVENANCE_SHARE = 0.1
NODES_PER_FILE = 50

_CALL_VARIANTS = [
    {"invocation": inv, "dispatch": disp, "optional_chaining": False, "resolution": res}
    for inv in ("call", "construct")
    for disp in ("direct", "method", "attribute")
    for res in ("resolved", "ambiguous")
]
_IMPORT_VARIANTS = [
    {
        "specifier": f"pkg.mod{n}",
        "binding_kind": "named",
        "imported_name": f"name{n}",
        "phase": "runtime",
        "form": "static",
        "resolution": "internal",
    }
    for n in range(20)
]


def synthetic_graph(node_count: int, fact_count: int, seed: int = 7) -> SemanticGraph:
    """A deterministic graph shaped like a code graph, built through admission."""
    rng = random.Random(seed)
    graph = SemanticGraph()
    paths: list[str] = []
    for index in range(node_count):
        path = f"src/pkg{index // 5000}/mod{index // NODES_PER_FILE}.py"
        paths.append(path)
        roll = rng.random()
        if roll < 0.05:
            identity = EndpointIdentity.context_bound(IdentityReason.SOURCE_LOCATION_DERIVED)
        elif roll < 0.06:
            identity = EndpointIdentity.undeclared()
        else:
            identity = EndpointIdentity.stable()
        kind = "file" if index % NODES_PER_FILE == 0 else "function"
        graph.add_node(
            f"{kind}:{path}#f{index}",
            kind,
            identity=identity,
            attributes={"path": path, "language": "python", "line": 1 + index % 400},
        )
    node_ids = graph.node_ids()
    observations = [ConfidenceObservation(v, "heuristic") for v in (0.5, 0.75, 0.9, 1.0)]
    while graph.fact_count < fact_count:
        source = rng.randrange(node_count)
        target = rng.randrange(node_count)
        roll = rng.random()
        if roll < 0.5:
            relation, disc = "calls", rng.choice(_CALL_VARIANTS)
        elif roll < 0.65:
            relation, disc = "imports", rng.choice(_IMPORT_VARIANTS)
        elif roll < 0.85:
            relation, disc = "contains", None
        elif roll < 0.9:
            relation, disc = "inherits", {"kind": "extends"}
        elif roll < 0.95:
            relation, disc = "references", {"link_kind": "file"}
        else:
            relation, disc = "related_to", None
        sites = 2 if rng.random() < SECOND_SITE_SHARE else 1
        for _ in range(sites):
            line = rng.randrange(1, 2000)
            confidence = (rng.choice(observations),) if rng.random() < CONFIDENCE_SHARE else ()
            provenance = ({"rule": "synthetic"},) if rng.random() < PROVENANCE_SHARE else ()
            graph.add_fact(
                node_ids[source],
                node_ids[target],
                relation,
                disc,
                occurrence=OccurrenceInput(
                    adapter_id="bench",
                    strategy="synthetic",
                    adapter_version="1",
                    source_file=paths[source],
                    source_range=SourceRange(line, 1, line, 30),
                    site_kind=relation,
                    confidence=confidence,
                    provenance=provenance,
                ),
            )
    return graph


def _peak_rss_mib() -> tuple[float, float]:
    """Peak resident set of this process and of its largest finished child, in MiB."""
    scale = 1024 * 1024 if sys.platform == "darwin" else 1024
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / 1024**2
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * scale / 1024**2
    return own, children


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def _timed(action: Callable[[], object], repeat: int) -> tuple[float, float, float]:
    """Best wall time, and the main and worker CPU seconds of that best run."""
    best = (float("inf"), 0.0, 0.0)
    for _ in range(repeat):
        main_cpu, child_cpu = _cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        result = action()
        run = (
            time.perf_counter() - started,
            _cpu(resource.RUSAGE_SELF) - main_cpu,
            _cpu(resource.RUSAGE_CHILDREN) - child_cpu,
        )
        del result  # freeing the previous graph is not part of the next measurement
        best = min(best, run)
    return best


def _phases(path: Path) -> list[tuple[str, str]]:
    """CPU seconds of each step of a verified load, run one after another in this process."""
    from cairn.artifact import reader
    from cairn.artifact.verify import (
        VerifyState,
        check_canonical_body,
        check_fact_ids,
        check_occurrence_ids,
        check_payload_digest,
        check_record_rules,
    )
    from cairn.graph import SemanticGraph

    data = path.read_bytes()
    rows: list[tuple[str, str]] = []

    def step(name: str, action: Callable[[], Any]) -> Any:
        before = _cpu(resource.RUSAGE_SELF)
        result = action()
        rows.append((f"  {name}", f"{_cpu(resource.RUSAGE_SELF) - before:.2f} s cpu"))
        return result

    with gc_paused():
        body = reader.split_header(data)
        payload = step("main: parse (orjson)", lambda: reader._parse(body))
        builder = reader._Builder(payload, reader.REGISTRY, fast=True)
        nodes = step("main: build nodes", builder.nodes)
        facts = step("main: build facts", builder.facts)
        occurrences = step("main: build occurrences", builder.occurrences)
        step(
            "main: SemanticGraph.from_records",
            lambda: SemanticGraph.from_records(
                nodes=nodes,
                facts=facts,
                occurrences=occurrences,
            ),
        )
        state = VerifyState(data, body, True, payload)
        step("worker: record rules", lambda: check_record_rules(state))
        step("worker: canonical body", lambda: check_canonical_body(state))
        step("worker: payload digest", lambda: check_payload_digest(state))
        step("worker: fact IDs", lambda: check_fact_ids(state, 0, 10**12))
        step("worker: occurrence IDs", lambda: check_occurrence_ids(state, 0, 10**12))
    return rows


def main() -> None:
    """Build the graph, then time write, verified load and a plain ``orjson.loads``."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--nodes", type=int, default=DEFAULT_NODES)
    parser.add_argument("--facts", type=int, default=DEFAULT_FACTS)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--phases", action="store_true", help="also time each load step")
    args = parser.parse_args()

    started = time.perf_counter()
    with gc_paused():  # setup only: admission of 300k facts is not what is measured
        graph = synthetic_graph(args.nodes, args.facts)
    build_s = time.perf_counter() - started
    counts = graph.counts()
    objects = counts.node_count + counts.fact_count + counts.occurrence_count

    with tempfile.TemporaryDirectory(prefix="cairn-bench-") as scratch:
        path = Path(scratch) / "graph.cairn"
        size = write_artifact(path, graph, generated_at=FIXED_TIMESTAMP)
        write = _timed(
            lambda: write_artifact(path, graph, generated_at=FIXED_TIMESTAMP), args.repeat
        )
        write_serial = _timed(
            lambda: write_artifact(path, graph, generated_at=FIXED_TIMESTAMP, parallel=False), 1
        )
        load = _timed(lambda: read_artifact(path), args.repeat)
        load_serial = _timed(lambda: read_artifact(path, parallel=False), 1)

        def plain() -> object:
            data = path.read_bytes()
            with gc_paused():
                return orjson.loads(memoryview(data)[len(ARTIFACT_HEADER) : -1])

        plain_load = _timed(plain, args.repeat)
        reloaded = read_artifact(path)
        assert reloaded.graph == graph, "verified load must give back the same graph"
        assert path.read_bytes() == encode_artifact(reloaded.graph, generated_at=FIXED_TIMESTAMP)
        del reloaded
        phases = _phases(path) if args.phases else []

    own_rss, child_rss = _peak_rss_mib()
    load_average = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")

    def timing(run: tuple[float, float, float]) -> str:
        wall, main_cpu, worker_cpu = run
        return f"{wall:.2f} s wall (cpu: main {main_cpu:.2f} s, worker {worker_cpu:.2f} s)"

    def rate(run: tuple[float, float, float], target: int) -> str:
        return f"{objects / run[0]:,.0f} objects/s (target {target:,})"

    rows = [
        ("nodes", f"{counts.node_count:,}"),
        ("facts", f"{counts.fact_count:,}"),
        ("endpoint pairs", f"{counts.endpoint_pair_count:,}"),
        ("occurrences", f"{counts.occurrence_count:,}"),
        ("objects (nodes + facts + occurrences)", f"{objects:,}"),
        ("cpu cores / 1-min load average at end", f"{os.cpu_count()} / {load_average:.2f}"),
        ("graph build through admission (setup)", f"{build_s:.1f} s"),
        ("artifact size", f"{size / 1024**2:.1f} MiB"),
        (f"write, best of {args.repeat}", timing(write)),
        ("write rate", rate(write, WRITE_TARGET_OBJECTS_PER_S)),
        ("write, one process", timing(write_serial)),
        (f"verified load, best of {args.repeat}", timing(load)),
        ("verified load rate", rate(load, LOAD_TARGET_OBJECTS_PER_S)),
        ("verified load, one process", timing(load_serial)),
        ("plain orjson.loads of the same body", timing(plain_load)),
        ("verified load / orjson.loads", f"{load[0] / plain_load[0]:.1f}x"),
        ("peak RSS, main process (holds the graph)", f"{own_rss:,.0f} MiB"),
        ("peak RSS, largest worker", f"{child_rss:,.0f} MiB"),
    ]
    if phases:
        rows.append(("verified load steps, one after another:", ""))
        rows.extend(phases)
    width = max(len(name) for name, _ in rows)
    print(f"{'measure'.ljust(width)}  value")
    for name, value in rows:
        print(f"{name.ljust(width)}  {value}")
    write_ok = objects / write[0] >= WRITE_TARGET_OBJECTS_PER_S
    load_ok = objects / load[0] >= LOAD_TARGET_OBJECTS_PER_S
    verdicts = {True: "met", False: "MISSED"}
    print(f"write target {verdicts[write_ok]}; load target {verdicts[load_ok]}")


if __name__ == "__main__":
    main()
