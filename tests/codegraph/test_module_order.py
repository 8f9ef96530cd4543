"""Python resolution gives the same facts whatever order it visits the modules in: path
order, reversed, or shuffled. A result cut short by a cycle once depended on the module
a chain entered from (see docs/benchmarks.md, "What blocks resolution per module")."""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

import pytest

from cairn.codegraph.build import PYTHON, _by_language, _plan, _root_package
from cairn.codegraph.deep import run_deep
from cairn.codegraph.emit import GraphEmitter
from cairn.codegraph.limits import (
    PYTHON_RESOLUTION_RECURSION_LIMIT,
    PYTHON_RESOLUTION_STACK_BYTES,
)
from cairn.codegraph.python import extract_python
from cairn.codegraph.records import FileExtract
from cairn.codegraph.resolve import PythonResolver, module_names
from cairn.codegraph.scan import scan_repository

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SHUFFLES = 4

# Two functions that return each other's results and one class each: both return an A
# or a B. A resolver that memoises the first one's answer while the second is cut short
# by the cycle answers only one class for one of them, and which one depends on which
# module's call it met first.
MUTUAL = {
    "pkg/__init__.py": "",
    "pkg/a.py": """
from pkg.b import g

class A:
    def run(self): pass

def f(flag):
    if flag:
        return g(flag)
    return A()
""",
    "pkg/b.py": """
from pkg.a import f

class B:
    def run(self): pass

def g(flag):
    if flag:
        return f(flag)
    return B()
""",
    "pkg/c.py": """
from pkg.a import f

def use_f():
    f(1).run()
""",
    "pkg/d.py": """
from pkg.b import g

def use_g():
    g(1).run()
""",
}


def _extracts(root: Path) -> tuple[list[FileExtract], str | None, dict[str, str]]:
    scan = scan_repository(root)
    python, _ = _plan(scan, None)
    read = [extract_python(outcome.path, data) for outcome, data in python.jobs]
    extracts = _by_language(read, PYTHON)
    root_package = _root_package(scan.root)
    names = module_names((e.path for e in extracts), root_package)
    return extracts, root_package, names


def _facts(root: Path, order: Sequence[str] | None) -> set[tuple[str, str, str]]:
    extracts, root_package, names = _extracts(root)
    emitter = GraphEmitter()
    resolver = PythonResolver(extracts, emitter, root_package, names)
    run_deep(
        lambda: resolver.run(order),
        stack_bytes=PYTHON_RESOLUTION_STACK_BYTES,
        recursion_limit=PYTHON_RESOLUTION_RECURSION_LIMIT,
        name="test-resolve",
    )
    emitter.flush()
    return {(f.source, f.relation, f.target) for f in emitter.graph.facts()}


def _orders(root: Path) -> list[list[str]]:
    paths = sorted(e.path for e in _extracts(root)[0])
    orders = [paths[::-1]]
    for seed in range(SHUFFLES):
        shuffled = list(paths)
        random.Random(seed).shuffle(shuffled)
        orders.append(shuffled)
    return orders


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_mutual_returns_give_both_classes_in_every_order(tmp_path: Path) -> None:
    root = _write(tmp_path, MUTUAL)
    expected = {
        ("function:pkg/c.py#use_f", "method:pkg/a.py#A.run"),
        ("function:pkg/c.py#use_f", "method:pkg/b.py#B.run"),
        ("function:pkg/d.py#use_g", "method:pkg/a.py#A.run"),
        ("function:pkg/d.py#use_g", "method:pkg/b.py#B.run"),
    }
    for order in [None, *_orders(root)]:
        calls = {
            (source, target)
            for source, relation, target in _facts(root, order)
            if relation == "calls" and target.endswith(".run")
        }
        assert calls == expected, order


@pytest.mark.parametrize("fixture", ["django_site", "fastapi_app", "flask_app"])
def test_fixture_facts_do_not_depend_on_module_order(fixture: str) -> None:
    root = FIXTURES / fixture
    base = _facts(root, None)
    assert base
    for order in _orders(root):
        assert _facts(root, order) == base, order


def test_an_order_must_name_every_module_once(tmp_path: Path) -> None:
    root = _write(tmp_path, MUTUAL)
    extracts, root_package, names = _extracts(root)
    resolver = PythonResolver(extracts, GraphEmitter(), root_package, names)
    with pytest.raises(ValueError, match="every module"):
        resolver.run(["pkg/a.py"])
