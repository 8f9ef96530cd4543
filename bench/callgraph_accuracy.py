"""Score Cairn's Python ``calls`` facts against the PyCG micro-benchmark (118 gold call graphs).

The benchmark ships inside the ``pycg==0.0.8`` source distribution on PyPI. This script
fetches it once with ``pip download --no-deps --no-binary :all: pycg==0.0.8`` into a cache
folder (default ``~/.cache/cairn-bench``, or ``--cache DIR``; never inside the repository),
unpacks it there, indexes every case folder of ``micro-benchmark/snippets/<category>/<case>``
with ``cairn.codegraph.index_repository`` and compares the edges with the case's
``callgraph.json`` (caller -> [callees] in PyCG's dotted naming).

    .venv/bin/python bench/callgraph_accuracy.py [--cache DIR] [--json] [--verbose]

Mapping Cairn nodes to PyCG names
---------------------------------
* ``file:pkg/mod.py`` -> ``pkg.mod`` (``pkg/__init__.py`` -> ``pkg``): the module path
  relative to the case folder, dotted, without ``.py``. PyCG names modules the same way
  (it is run with the case folder as ``--package``).
* ``function:m.py#f.g`` / ``method:m.py#A.f`` -> ``m.f.g`` / ``m.A.f``.
* ``class:m.py#A`` as a *caller* (class-body code) -> ``m.A``; PyCG names class scopes so.
* ``class:m.py#A`` as a *callee* (a ``construct`` call): PyCG records the constructor that
  runs, i.e. the first ``__init__`` along A's MRO (computed here from Cairn's own
  ``contains`` and ``inherits`` facts, bases in source order, C3). If the MRO reaches a
  class outside the repository first, the callee is ``<that external>.__init__`` (PyCG:
  ``ext.parent.__init__``); if no class defines ``__init__`` the edge has no PyCG
  counterpart (``object.__init__`` is not recorded) and is dropped.
* ``external:python:ext.f`` -> ``ext.f``.
* ``decorates`` facts (decorator D applied to symbol S) are counted as a call from S's
  enclosing scope to D, because applying a decorator *is* a call (``S = D(S)``) and
  PyCG records it so. Explicit calls in decorator expressions (``@make()``) are ordinary
  ``calls`` facts.

Normalising the gold
--------------------
* Lambdas: PyCG makes each lambda a node (``main.<lambda1>``); Cairn's model (code-graph
  spec §3) has no anonymous-function nodes and attributes what a lambda calls to the
  enclosing named symbol. So a gold edge *from* a lambda is re-attributed to the
  enclosing symbol, and a gold edge *to* a lambda is dropped (it has no counterpart
  node). The number of dropped gold edges is printed.
* Builtins: PyCG's gold includes calls of builtins (``<builtin>.len``) and of methods of
  builtin types (``<**PyStr**>.join``). Cairn deliberately emits no facts for builtins
  (it counts them in the manifest). Two scores are reported: **all edges** (builtin edges
  stay in the gold and count as misses) and **excluding builtins** (they are removed
  from the gold). The targets (precision >= 0.95, recall >= 0.90) are judged on
  *excluding builtins*, since emitting builtin calls is out of Cairn's scope; the all-edges
  numbers are shown next to them so nothing is hidden.

A case is an exact match when its normalised gold edge set equals Cairn's edge set.
Precision and recall are micro-averaged over the edges of all cases.

The judged view: the gold's own conventions (issue 21)
-------------------------------------------------------
The rules above are Cairn's; the gold is the judge. The judged view, ``internal``, takes
the gold as it stands (no lambda normalisation: an edge from or to ``main.<lambda1>`` is
an edge Cairn must have) and Cairn's ``calls`` facts only (a ``decorates`` fact is not a
call), a call of a class counted as the gold counts it (the first ``__init__`` on the
class's MRO, no edge when none is defined), and keeps on both sides only the edges whose
callee is inside the case's own modules, so builtins and external names drop out of
both. No other rule. Targets (issue 21): precision >= 0.98, recall >= 0.95, exact >= 108
of 118. The two older views stay, labelled "previous rules".
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tarfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cairn.codegraph import index_repository
from cairn.graph import SemanticGraph

PYCG_VERSION = "0.0.8"
SDIST_NAME = f"pycg-{PYCG_VERSION}"
DEFAULT_CACHE = Path.home() / ".cache" / "cairn-bench"
SNIPPETS = Path("micro-benchmark") / "snippets"
GOLD_FILE = "callgraph.json"
EXPECTED_CASES = 118
TARGET_PRECISION = 0.95
TARGET_RECALL = 0.90
PYCG_PRECISION = 0.976
PYCG_RECALL = 0.931
CONSTRUCTOR = "__init__"
EXTERNAL_PREFIX = "external:python:"
BUILTIN_PREFIXES = ("<builtin>.", "<**Py")
LAMBDA_PART = re.compile(r"^<lambda\d+>$")
TREATMENTS = ("internal", "excluding_builtins", "all_edges")
JUDGED = "internal"
TARGET_INTERNAL_PRECISION = 0.98
TARGET_INTERNAL_RECALL = 0.95
TARGET_INTERNAL_EXACT = 108

Edge = tuple[str, str]


# ----------------------------------------------------------------- fetching
def fetch_benchmark(cache: Path) -> Path:
    """The unpacked sdist folder inside ``cache`` (downloaded and unpacked on first use)."""
    cache.mkdir(parents=True, exist_ok=True)
    root = cache / SDIST_NAME
    if (root / SNIPPETS).is_dir():
        return root
    archive = cache / f"{SDIST_NAME}.tar.gz"
    if not archive.is_file():
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary",
             ":all:", f"pycg=={PYCG_VERSION}", "-d", str(cache)],
            check=True,
        )  # fmt: skip
    with tarfile.open(archive) as tar:
        tar.extractall(cache, filter="data")
    return root


def find_cases(root: Path) -> list[Path]:
    """Every case folder (``snippets/<category>/<case>`` holding ``callgraph.json``)."""
    return sorted(p.parent for p in (root / SNIPPETS).glob(f"*/*/{GOLD_FILE}"))


# ------------------------------------------------------------------- gold
def _is_builtin(name: str) -> bool:
    return name.startswith(BUILTIN_PREFIXES)


def _is_lambda(name: str) -> bool:
    return LAMBDA_PART.match(name.rsplit(".", 1)[-1]) is not None


def _unlambda(name: str) -> str:
    parts = name.split(".")
    while parts and LAMBDA_PART.match(parts[-1]):
        parts.pop()
    return ".".join(parts)


@dataclass(slots=True)
class Gold:
    """A case's gold edges after lambda normalisation, and how many edges that dropped."""

    edges: set[Edge]
    dropped_lambda: int


def raw_gold(case: Path) -> set[Edge]:
    """Every edge of ``callgraph.json`` as it stands (the judged view's gold)."""
    raw: dict[str, list[str]] = json.loads((case / GOLD_FILE).read_text("utf-8"))
    return {(caller, callee) for caller, callees in raw.items() for callee in callees}


def case_modules(case: Path) -> set[str]:
    """PyCG's names of the case's own modules (its ``.py`` files)."""
    return {module_name(p.relative_to(case).as_posix()) for p in case.rglob("*.py")}


def internal(edges: set[Edge], modules: set[str]) -> set[Edge]:
    """The edges whose callee lies in one of ``modules`` (a module or a name inside it)."""
    return {
        (caller, callee)
        for caller, callee in edges
        if any(callee == m or callee.startswith(m + ".") for m in modules)
    }


def load_gold(case: Path) -> Gold:
    """Read ``callgraph.json`` and apply the lambda normalisation (see module docstring)."""
    raw: dict[str, list[str]] = json.loads((case / GOLD_FILE).read_text("utf-8"))
    edges: set[Edge] = set()
    dropped = 0
    for caller, callees in raw.items():
        for callee in callees:
            if _is_lambda(callee):
                dropped += 1
                continue
            source = _unlambda(caller)
            if source == callee and _is_lambda(caller):
                dropped += 1
                continue
            edges.add((source, callee))
    return Gold(edges, dropped)


# ---------------------------------------------------------------- mapping
def module_name(path: str) -> str:
    """PyCG's module name for a case-relative file path."""
    stem = path.removesuffix(".py")
    if stem.endswith("/__init__") or stem == "__init__":
        stem = stem.removesuffix("__init__").rstrip("/")
    return stem.replace("/", ".")


def pycg_name(node_id: str) -> str | None:
    """The PyCG name of a Cairn file/function/method/class/external node, else None."""
    if node_id.startswith(EXTERNAL_PREFIX):
        return node_id[len(EXTERNAL_PREFIX) :]
    kind, _, rest = node_id.partition(":")
    if kind == "file":
        return module_name(rest) if rest.endswith(".py") else None
    if kind in ("function", "method", "class"):
        path, _, qualname = rest.partition("#")
        if not path.endswith(".py"):
            return None
        return f"{module_name(path)}.{qualname}"
    return None


@dataclass(slots=True)
class _Classes:
    """Class structure read back from the graph: methods and ordered bases."""

    methods: dict[str, set[str]] = field(default_factory=dict)
    bases: dict[str, list[str]] = field(default_factory=dict)
    mro_cache: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def of(cls, graph: SemanticGraph) -> _Classes:
        found = cls()
        ordered: dict[str, list[tuple[tuple[int, int], str]]] = {}
        for fact in graph.facts():
            if fact.relation == "contains" and fact.target.startswith("method:"):
                name = fact.target.rsplit(".", 1)[-1]
                found.methods.setdefault(fact.source, set()).add(name)
            elif fact.relation == "inherits":
                positions = [
                    (rng.start_line, rng.start_column)
                    for occ in graph.occurrences_of(fact.id)
                    if (rng := occ.source_range) is not None
                ]
                where = min(positions) if positions else (0, 0)
                ordered.setdefault(fact.source, []).append((where, fact.target))
        for source, items in ordered.items():
            found.bases[source] = [target for _, target in sorted(items)]
        return found

    def mro(self, node: str) -> list[str]:
        """C3 linearisation (depth-first fallback on inconsistency); externals are leaves."""
        cached = self.mro_cache.get(node)
        if cached is not None:
            return cached
        self.mro_cache[node] = [node]
        bases = self.bases.get(node, [])
        seqs = [list(self.mro(b)) if b.startswith("class:") else [b] for b in bases]
        seqs.append(list(bases))
        result = [node]
        while any(seqs):
            seqs = [s for s in seqs if s]
            head = next((s[0] for s in seqs if not any(s[0] in o[1:] for o in seqs)), None)
            if head is None:
                for seq in seqs:
                    result.extend(item for item in seq if item not in result)
                break
            result.append(head)
            seqs = [s[1:] if s[0] == head else s for s in seqs]
        self.mro_cache[node] = result
        return result

    def constructor(self, node: str) -> str | None:
        """PyCG's name of the ``__init__`` a construct call of class ``node`` runs."""
        for entry in self.mro(node):
            if entry.startswith(EXTERNAL_PREFIX):
                return f"{entry[len(EXTERNAL_PREFIX) :]}.{CONSTRUCTOR}"
            if CONSTRUCTOR in self.methods.get(entry, set()):
                base = pycg_name(entry)
                return f"{base}.{CONSTRUCTOR}" if base else None
        return None


def _enclosing(node_id: str) -> str | None:
    """PyCG name of the scope enclosing a symbol (the module for top-level symbols)."""
    name = pycg_name(node_id)
    if name is None:
        return None
    _, _, rest = node_id.partition(":")
    path, _, qualname = rest.partition("#")
    if "." in qualname:
        return name.rsplit(".", 1)[0]
    return module_name(path)


def cairn_edges(graph: SemanticGraph, *, decorates: bool = True) -> set[Edge]:
    """Cairn's ``calls`` edges in PyCG naming, and (``decorates``, the previous rules)
    each decorator application as a call."""
    classes = _Classes.of(graph)
    edges: set[Edge] = set()
    for fact in graph.facts():
        if fact.relation == "calls":
            source = pycg_name(fact.source)
            if fact.target.startswith("class:"):
                target = classes.constructor(fact.target)
            else:
                target = pycg_name(fact.target)
        elif fact.relation == "decorates" and decorates:
            source = _enclosing(fact.target)
            target = pycg_name(fact.source)
        else:
            continue
        if source is not None and target is not None and not target.startswith("builtins."):
            edges.add((source, target))
    return edges


# ---------------------------------------------------------------- scoring
@dataclass(slots=True)
class Score:
    """Edge counts and exact matches for one group of cases under one treatment."""

    cases: int = 0
    exact: int = 0
    gold: int = 0
    found: int = 0
    correct: int = 0

    def add(self, gold: set[Edge], found: set[Edge]) -> None:
        """Count one case."""
        self.cases += 1
        self.exact += gold == found
        self.gold += len(gold)
        self.found += len(found)
        self.correct += len(gold & found)

    @property
    def precision(self) -> float:
        """Share of Cairn's edges that are in the gold (1.0 when Cairn reports none)."""
        return self.correct / self.found if self.found else 1.0

    @property
    def recall(self) -> float:
        """Share of gold edges Cairn reports (1.0 when the gold is empty)."""
        return self.correct / self.gold if self.gold else 1.0

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {
            "cases": self.cases,
            "exact_match": self.exact,
            "gold_edges": self.gold,
            "cairn_edges": self.found,
            "correct_edges": self.correct,
            "precision": round(self.precision, 4),
            "recall": round(self.recall, 4),
        }


@dataclass(slots=True)
class CaseResult:
    """One case: per view, the gold and Cairn's edges compared; lambda edges dropped by
    the previous rules."""

    name: str
    category: str
    views: dict[str, tuple[set[Edge], set[Edge]]]
    dropped_lambda: int


def score_case(case: Path, root: Path) -> CaseResult:
    """Index one case folder and compare it with its gold call graph, in every view."""
    gold = load_gold(case)
    graph = index_repository(case, workers=1).graph
    found = cairn_edges(graph)
    no_builtins = {e for e in gold.edges if not _is_builtin(e[0]) and not _is_builtin(e[1])}
    modules = case_modules(case)
    judged = (
        internal(raw_gold(case), modules),
        internal(cairn_edges(graph, decorates=False), modules),
    )
    rel = case.relative_to(root / SNIPPETS).as_posix()
    return CaseResult(
        rel,
        rel.split("/", 1)[0],
        {
            "internal": judged,
            "excluding_builtins": (no_builtins, found),
            "all_edges": (gold.edges, found),
        },
        gold.dropped_lambda,
    )


def summarise(results: Iterable[CaseResult]) -> dict[str, Any]:
    """Per-category and total scores for both builtin treatments."""
    per: dict[str, dict[str, Score]] = {}
    total = {t: Score() for t in TREATMENTS}
    dropped = 0
    for result in results:
        dropped += result.dropped_lambda
        group = per.setdefault(result.category, {t: Score() for t in TREATMENTS})
        for treatment in TREATMENTS:
            group[treatment].add(*result.views[treatment])
            total[treatment].add(*result.views[treatment])
    judged = total[JUDGED]
    passed = (
        judged.precision >= TARGET_INTERNAL_PRECISION
        and judged.recall >= TARGET_INTERNAL_RECALL
        and judged.exact >= TARGET_INTERNAL_EXACT
    )
    return {
        "benchmark": f"pycg=={PYCG_VERSION} micro-benchmark",
        "categories": {
            name: {t: score.to_json() for t, score in scores.items()}
            for name, scores in sorted(per.items())
        },
        "total": {t: score.to_json() for t, score in total.items()},
        "gold_edges_dropped_lambda": dropped,
        "targets": {
            "judged_on": JUDGED,
            "precision": TARGET_INTERNAL_PRECISION,
            "recall": TARGET_INTERNAL_RECALL,
            "exact": TARGET_INTERNAL_EXACT,
            "met": passed,
            "previous_rules": {
                "judged_on": "excluding_builtins",
                "precision": TARGET_PRECISION,
                "recall": TARGET_RECALL,
            },
            "pycg_reference": {"precision": PYCG_PRECISION, "recall": PYCG_RECALL},
        },
    }


def _row(name: str, scores: dict[str, dict[str, Any]]) -> str:
    judged, old, all_edges = (scores[t] for t in TREATMENTS)
    return (
        f"{name:<14}{judged['cases']:>6}{judged['exact_match']:>7}{judged['gold_edges']:>6}"
        f"{judged['cairn_edges']:>7}{judged['precision']:>8.3f}{judged['recall']:>8.3f}"
        f"   {old['exact_match']:>6}{old['precision']:>8.3f}{old['recall']:>8.3f}"
        f"   {all_edges['exact_match']:>6}{all_edges['precision']:>8.3f}{all_edges['recall']:>8.3f}"
    )


def print_table(summary: dict[str, Any]) -> None:
    """Human-readable table: per category, totals and targets."""
    print(f"PyCG {PYCG_VERSION} micro-benchmark: Cairn calls facts vs callgraph.json")
    print(
        f"{'':<14}{'--- gold conventions, internal (judged) ---':^42}"
        f"   {'previous rules: no builtins':^22}   {'previous rules: all':^22}"
    )
    print(
        f"{'category':<14}{'cases':>6}{'exact':>7}{'gold':>6}{'cairn':>7}{'prec':>8}{'recall':>8}"
        f"   {'exact':>6}{'prec':>8}{'recall':>8}   {'exact':>6}{'prec':>8}{'recall':>8}"
    )
    for name, scores in summary["categories"].items():
        print(_row(name, scores))
    print("-" * 100)
    print(_row("TOTAL", summary["total"]))
    targets = summary["targets"]
    ref = targets["pycg_reference"]
    print(
        f"targets ({targets['judged_on']}): precision >= {targets['precision']}, recall >= "
        f"{targets['recall']}, exact >= {targets['exact']} -> "
        f"{'MET' if targets['met'] else 'NOT MET'}  (PyCG on its own rules: "
        f"{ref['precision']} / {ref['recall']})"
    )
    print(
        "previous rules (decorates counted as calls, lambda edges re-attributed or dropped: "
        f"{summary['gold_edges_dropped_lambda']} gold edges dropped)"
    )


def print_diffs(results: Iterable[CaseResult]) -> None:
    """Missing and extra edges of every case that is not an exact match (judged view)."""
    for result in results:
        gold, found = result.views[JUDGED]
        if gold == found:
            continue
        print(f"== {result.name}")
        for edge in sorted(gold - found):
            print(f"   missing {edge[0]} -> {edge[1]}")
        for edge in sorted(found - gold):
            print(f"   extra   {edge[0]} -> {edge[1]}")


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print (or ``--json``) the scores."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="download cache")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.add_argument("--verbose", action="store_true", help="list per-case differences")
    parser.add_argument("--case", default="", help="only cases whose name contains this")
    args = parser.parse_args(argv)
    root = fetch_benchmark(args.cache.expanduser())
    cases = [c for c in find_cases(root) if args.case in c.relative_to(root).as_posix()]
    if not args.case and len(cases) != EXPECTED_CASES:
        print(f"warning: found {len(cases)} cases, expected {EXPECTED_CASES}", file=sys.stderr)
    results = [score_case(case, root) for case in cases]
    summary = summarise(results)
    if args.json:
        print(json.dumps(summary, indent=2, sort_keys=True))
    else:
        if args.verbose:
            print_diffs(results)
        print_table(summary)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
