"""A runtime-trace oracle for Cairn's Python call graph (issue 21).

A package's own test suite is run under ``sys.setprofile``; every call whose caller and
callee are both functions of the package's own source files is recorded as a
``caller -> callee`` pair. The pairs are the calls that really happened (a lower bound
of the truth: only executed paths), judged against Cairn's ``calls`` facts for the same
source tree.

The package is ``attrs`` by default (not one Cairn's tests index): its sdist is fetched
with ``pip download --no-deps --no-binary :all:`` into ``--cache`` (default
``~/.cache/cairn-bench``), and its test dependencies (pytest, hypothesis, pympler,
cloudpickle) are installed into a virtualenv of their own there. The tests import the
sdist's ``src/`` (``PYTHONPATH``), so the traced files are the files Cairn indexes.

What counts (the issue's "explicit calls"): the callee is not a dunder method other than
``__init__``, not a property getter, not a class body being run (defining a class calls
nothing), and not a generator or coroutine (a generator's frame is entered at each
``next``, by whoever iterates it, not by its caller). The whole suite runs; tests that
fail under the tracer still trace what they ran. Nested
functions are named as Cairn names them (``outer.inner``, ``<locals>`` dropped); a
lambda or comprehension frame counts as its enclosing function (spec: anonymous code is
attributed to the enclosing symbol); module-level code is the file. A Cairn ``calls``
fact to a class counts as a call of the first ``__init__`` on its MRO, as the trace sees
it.

Printed: the traced pairs, Cairn's in-package pairs, recall of the traced pairs
(target >= 0.80) and the share of Cairn's pairs the trace confirms (a lower bound of
its precision: a call the tests never make is not confirmed).

    .venv/bin/python bench/trace_oracle.py [--cache DIR] [--spec attrs==26.1.0]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import venv
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import callgraph_accuracy as cga
from cairn.codegraph import index_repository

DEFAULT_SPEC = "attrs==26.1.0"
TEST_DEPENDENCIES = ("pytest", "hypothesis", "pympler", "cloudpickle")
TARGET_RECALL = 0.80
TEST_TIMEOUT_S = 1800

# The tracer runs inside the test process; it writes the pairs as JSON lines.
TRACER = r"""
import inspect, json, os, sys, threading
ROOT = os.path.realpath(sys.argv[1])
OUT = sys.argv[2]
SKIP_FLAGS = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR
pairs = set()
getters = set()

def inside(code):
    name = code.co_filename
    return name.startswith(ROOT) and name.endswith(".py")

def profile(frame, event, arg):
    if event != "call":
        return
    code = frame.f_code
    caller = frame.f_back
    if caller is None or not inside(code) or not inside(caller.f_code):
        return
    if code.co_flags & SKIP_FLAGS or not code.co_flags & inspect.CO_OPTIMIZED:
        return  # a generator resumed, or a class body run (not a call of anything)
    back = caller.f_code
    pairs.add((back.co_filename, back.co_qualname, code.co_filename, code.co_qualname,
               code.co_firstlineno))

def property_getters():
    for module in list(sys.modules.values()):
        if not inside_module(module):
            continue
        for value in list(vars(module).values()):
            if isinstance(value, type):
                for item in vars(value).values():
                    if isinstance(item, property) and item.fget is not None:
                        code = getattr(item.fget, "__code__", None)
                        if code is not None:
                            getters.add((code.co_filename, code.co_firstlineno))

def inside_module(module):
    name = getattr(module, "__file__", None) or ""
    return os.path.realpath(name).startswith(ROOT)

sys.setprofile(profile)
threading.setprofile(profile)
import pytest
code = pytest.main(sys.argv[3:])
sys.setprofile(None)
threading.setprofile(None)
property_getters()
with open(OUT, "w") as out:
    for pair in sorted(pairs):
        getter = (pair[2], pair[4]) in getters
        out.write(json.dumps({"pair": pair[:4], "getter": getter}) + "\n")
print("pytest exit", code)
"""


def fetch_sdist(spec: str, cache: Path) -> Path:
    """The unpacked sdist of ``spec`` in ``cache`` (downloaded on first use)."""
    name, version = spec.split("==")
    root = cache / f"{name}-{version}"
    if (root / "src").is_dir():
        return root
    cache.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary",
         ":all:", spec, "-d", str(cache)],
        check=True,
    )  # fmt: skip
    with tarfile.open(cache / f"{name}-{version}.tar.gz") as tar:
        tar.extractall(cache, filter="data")
    return root


def test_python(cache: Path) -> Path:
    """A virtualenv with the test dependencies (made once)."""
    folder = cache / "trace-venv"
    python = folder / "bin" / "python"
    if not python.exists():
        venv.create(folder, with_pip=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", *TEST_DEPENDENCIES], check=True
        )
    return python


def trace(root: Path, python: Path, out: Path) -> list[dict[str, object]]:
    """Run the package's tests under the tracer; the recorded pairs."""
    script = out.with_suffix(".tracer.py")
    script.write_text(TRACER)
    env = {**os.environ, "PYTHONPATH": str(root / "src"), "PYTHONHASHSEED": "0"}
    arguments = [str(root / "src"), str(out), "-q", "-p", "no:cacheprovider",
                 "-p", "no:xdist", str(root / "tests")]  # fmt: skip
    subprocess.run(
        [str(python), str(script), *arguments], cwd=root, env=env, check=False,
        timeout=TEST_TIMEOUT_S,
    )  # fmt: skip
    return [json.loads(line) for line in out.read_text().splitlines()]


def _cairn_name(src: Path, filename: str, qualname: str) -> tuple[str, str]:
    """``(path, qualname)`` as Cairn names the code: nested functions without
    ``<locals>``, anonymous code as its enclosing function, module code as ``""``."""
    path = Path(filename).resolve().relative_to(src.resolve()).as_posix()
    parts: list[str] = []
    for part in qualname.split("."):
        if part == "<locals>":
            continue
        if part.startswith("<"):  # <lambda>, <listcomp>, <genexpr>, <module>
            break
        parts.append(part)
    return path, ".".join(parts)


def _explicit(callee: str, getter: bool) -> bool:
    name = callee.rsplit(".", 1)[-1]
    dunder = name.startswith("__") and name.endswith("__") and name != "__init__"
    return not dunder and not getter and bool(callee)


def traced_pairs(src: Path, records: list[dict[str, object]]) -> set[tuple[str, ...]]:
    """The explicit calls of the trace, in Cairn's naming."""
    found: set[tuple[str, ...]] = set()
    for record in records:
        caller_file, caller, callee_file, callee = record["pair"]  # type: ignore[misc]
        source = _cairn_name(src, str(caller_file), str(caller))
        target = _cairn_name(src, str(callee_file), str(callee))
        if _explicit(target[1], bool(record["getter"])) and source != target:
            found.add((*source, *target))
    return found


def cairn_pairs(src: Path) -> set[tuple[str, ...]]:
    """Cairn's in-package ``calls`` pairs; a class callee as its ``__init__`` (MRO)."""
    graph = index_repository(src, workers=2).graph
    classes = cga._Classes.of(graph)
    found: set[tuple[str, ...]] = set()
    for fact in graph.facts():
        if fact.relation != "calls":
            continue
        source = _node_name(fact.source)
        target_id = fact.target
        if target_id.startswith("class:"):
            init = next(
                (
                    entry
                    for entry in classes.mro(target_id)
                    if entry.startswith("class:") and "__init__" in classes.methods.get(entry, ())
                ),
                None,
            )
            target = (
                None
                if init is None
                else _node_name(init.replace("class:", "method:") + ".__init__")
            )
        else:
            target = _node_name(target_id)
        if source is not None and target is not None and target[1]:
            found.add((*source, *target))
    return found


def _node_name(node_id: str) -> tuple[str, str] | None:
    kind, _, rest = node_id.partition(":")
    if kind == "file":
        return (rest, "")
    if kind in ("function", "method", "class"):  # a class: its body's own calls
        path, _, qualname = rest.partition("#")
        return (path, qualname)
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "cairn-bench")
    parser.add_argument("--spec", default=DEFAULT_SPEC)
    parser.add_argument("--verbose", action="store_true", help="list the missed pairs")
    args = parser.parse_args()
    cache = args.cache.expanduser()
    root = fetch_sdist(args.spec, cache)
    python = test_python(cache)
    records = trace(root, python, cache / f"{root.name}.trace.jsonl")
    src = root / "src"
    traced = traced_pairs(src, records)
    cairn = cairn_pairs(src)
    hit = traced & cairn
    recall = len(hit) / len(traced) if traced else 0.0
    confirmed = len(hit) / len(cairn) if cairn else 0.0
    print(f"{args.spec}: {len(records)} traced pairs, {len(traced)} explicit calls")
    print(f"Cairn: {len(cairn)} in-package call pairs")
    verdict = "PASS" if recall >= TARGET_RECALL else "FAIL"
    print(f"recall of traced explicit calls: {len(hit)}/{len(traced)} = {recall:.3f} "
          f"(target >= {TARGET_RECALL}: {verdict})")  # fmt: skip
    print(f"Cairn pairs confirmed by the trace: {len(hit)}/{len(cairn)} = {confirmed:.3f}")
    missed = sorted(traced - cairn)
    by_callee = Counter(f"{m[2]}#{m[3]}" for m in missed)
    print(
        "most missed callees:", ", ".join(f"{name} ({n})" for name, n in by_callee.most_common(8))
    )
    if args.verbose:
        for item in missed:
            print(f"  missed {item[0]}#{item[1]} -> {item[2]}#{item[3]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
