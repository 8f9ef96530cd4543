"""Python call resolution rules added for call-graph accuracy, one tiny example per rule."""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

from cairn.codegraph import index_repository
from cairn.graph.model import SemanticFact


def _calls(root: Path, files: dict[str, str]) -> list[SemanticFact]:
    """Write ``files`` under ``root``, index it once; its ``calls`` facts."""
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(dedent(text), "utf-8")
    return [f for f in index_repository(root).graph.facts() if f.relation == "calls"]


def call_pairs(root: Path, files: dict[str, str]) -> set[tuple[str, str]]:
    """Index ``files`` under ``root``; every ``calls`` fact as ``(source, target)``."""
    return {(f.source, f.target) for f in _calls(root, files)}


def test_alias_and_chained_assignment(tmp_path: Path) -> None:
    pairs = call_pairs(
        tmp_path,
        {"m.py": "def f():\n    pass\n\ndef g():\n    a = b = f\n    a()\n    b()\n"},
    )
    assert ("function:m.py#g", "function:m.py#f") in pairs


def test_tuple_and_starred_destructuring(tmp_path: Path) -> None:
    source = """
    def f1(): pass
    def f2(): pass
    def f3(): pass
    def run():
        a, (b, c) = f1, (f2, f3)
        a(); c()
        x, *rest = f1, f2, f3
        rest[1]()
    """
    pairs = call_pairs(tmp_path, {"m.py": source})
    run = "function:m.py#run"
    assert {(run, "function:m.py#f1"), (run, "function:m.py#f3")} <= pairs
    assert (run, "function:m.py#f2") not in pairs


def test_return_values(tmp_path: Path) -> None:
    source = """
    class Db:
        def fetch(self): pass
    def target(): pass
    def make(): return target
    def connect(): return Db()
    def run():
        make()()
        connect().fetch()
        db = connect()
        db.fetch()
    """
    pairs = call_pairs(tmp_path, {"m.py": source})
    run = "function:m.py#run"
    assert (run, "function:m.py#target") in pairs
    assert (run, "method:m.py#Db.fetch") in pairs


def test_argument_flow_into_parameters(tmp_path: Path) -> None:
    source = """
    def cb(): pass
    def other(): pass
    def call_it(fn, then=other):
        fn()
        then()
    class Runner:
        def go(self, task):
            task()
    def main():
        call_it(cb)
        Runner().go(task=cb)
    """
    pairs = call_pairs(tmp_path, {"m.py": source})
    assert ("function:m.py#call_it", "function:m.py#cb") in pairs
    assert ("function:m.py#call_it", "function:m.py#other") in pairs  # the default
    assert ("method:m.py#Runner.go", "function:m.py#cb") in pairs


def test_instance_and_class_attributes(tmp_path: Path) -> None:
    source = """
    class Helper:
        def run(self): pass
    def hook(): pass
    class Base:
        def setup(self):
            self.helper = Helper()
    class Service(Base):
        handler = hook
        def work(self):
            self.helper.run()
            self.handler()
    """
    pairs = call_pairs(tmp_path, {"m.py": source})
    work = "method:m.py#Service.work"
    assert (work, "method:m.py#Helper.run") in pairs  # set in a base-class method
    assert (work, "function:m.py#hook") in pairs


def _calls_by_dispatch(root: Path, files: dict[str, str]) -> dict[str, set[tuple[str, str]]]:
    """Index ``files``; the ``calls`` facts' (source, target) by their dispatch kind."""
    found: dict[str, set[tuple[str, str]]] = {}
    for fact in _calls(root, files):
        dispatch = str(fact.discriminator.value["dispatch"])
        found.setdefault(dispatch, set()).add((fact.source, fact.target))
    return found


def test_constant_key_containers(tmp_path: Path) -> None:
    source = """
    def f1(): pass
    def f2(): pass
    def f3(): pass
    def run(key):
        table = {"a": f1, 1: f2}
        table["a"]()
        items = [f1, [f3]]
        items[1][0]()
        table["b"] = f3
        table["b"]()
    """
    pairs = call_pairs(tmp_path, {"m.py": source})
    run = "function:m.py#run"
    assert {(run, "function:m.py#f1"), (run, "function:m.py#f3")} <= pairs
    assert (run, "function:m.py#f2") not in pairs  # key 1 (int) is never called


def test_a_dict_read_by_an_unknown_key_may_call_any_value(tmp_path: Path) -> None:
    source = """
    def f1(): pass
    def f2(): pass
    def f3(): pass
    def run(key):
        table = {"a": f1, 1: f2}
        table["a"]()
        table[key]()
        items = [f1, f3]
        items[key]()
    """
    found = _calls_by_dispatch(tmp_path, {"m.py": source})
    run = "function:m.py#run"
    # table["a"]: exactly f1. table[key]: any value, each a dynamic call. items[key]: a
    # list by an unknown index names no position, so nothing.
    assert found["attribute"] == {(run, "function:m.py#f1")}
    assert found["dynamic"] == {(run, "function:m.py#f1"), (run, "function:m.py#f2")}


def test_a_subscripted_class_is_the_class(tmp_path: Path) -> None:
    source = """
    from typing import Generic, TypeVar
    T = TypeVar("T")
    class Box(Generic[T]):
        pass
    def run():
        Box[int]()
    """
    found = _calls_by_dispatch(tmp_path, {"m.py": source})
    assert found["direct"] == {
        ("file:m.py", "external:python:typing.TypeVar"),  # T = TypeVar("T")
        ("function:m.py#run", "class:m.py#Box"),  # Box[int](): Box, not an item of it
    }


def test_wildcard_import(tmp_path: Path) -> None:
    files = {
        "lib.py": "def helper():\n    pass\n\ndef _private():\n    pass\n",
        "app.py": "from lib import *\n\ndef run():\n    helper()\n    _private()\n",
    }
    pairs = call_pairs(tmp_path, files)
    assert ("function:app.py#run", "function:lib.py#helper") in pairs
    assert ("function:app.py#run", "function:lib.py#_private") not in pairs


def test_raise_of_a_class_constructs_it(tmp_path: Path) -> None:
    source = "class Oops(Exception):\n    pass\n\ndef run():\n    raise Oops\n"
    pairs = call_pairs(tmp_path, {"m.py": source})
    assert ("function:m.py#run", "class:m.py#Oops") in pairs


def test_iteration_protocol_and_loop_targets(tmp_path: Path) -> None:
    source = """
    def f1(): pass
    def f2(): pass
    class Counter:
        def __iter__(self): return self
        def __next__(self): return f1
    def gen():
        yield f2
    def run():
        for item in Counter():
            item()
        for fn in gen():
            fn()
        for fn2 in [f1, f2]:
            fn2()
        for n in range(3):
            pass
    """
    pairs = call_pairs(tmp_path, {"m.py": source})
    run = "function:m.py#run"
    assert {
        (run, "method:m.py#Counter.__iter__"),
        (run, "method:m.py#Counter.__next__"),
        (run, "function:m.py#f1"),
        (run, "function:m.py#f2"),
    } <= pairs


def test_decorators_returning_wrappers(tmp_path: Path) -> None:
    source = """
    import functools
    def trace(f):
        def inner():
            return f()
        return inner
    @trace
    def work(): pass
    @functools.cache
    def cached(): pass
    def run():
        work()
        cached()
    """
    pairs = call_pairs(tmp_path, {"m.py": source})
    assert ("function:m.py#run", "function:m.py#trace.inner") in pairs
    assert ("function:m.py#trace.inner", "function:m.py#work") in pairs
    assert ("function:m.py#run", "function:m.py#work") not in pairs
    assert ("function:m.py#run", "function:m.py#cached") in pairs  # external: kept as is


def test_unknown_values_stay_unresolved(tmp_path: Path) -> None:
    source = """
    import os
    def f(): pass
    def run(x):
        g = os.environ.get("X") if x else f
        g()
        x()
    """
    pairs = call_pairs(tmp_path, {"m.py": source})
    assert not {p for p in pairs if p[1] == "function:m.py#f"}


def test_an_item_or_a_slice_read_into_a_name_is_an_alias(tmp_path: Path) -> None:
    source = """
    def f1(): pass
    def f2(): pass
    def f3(): pass
    def run(key):
        ls = [f1, f2, f3]
        first = ls[0]
        first()
        tail = ls[1:]
        tail[0]()
        last_two = ls[-2:]
        last_two[1]()
        table = {"a": f1, "b": f2}
        picked = table[key]
        picked()
    """
    found = _calls_by_dispatch(tmp_path, {"m.py": source})
    run = "function:m.py#run"
    # first() calls f1 through the alias; tail[0]() (f2) and last_two[1]() (f3) reach an
    # item; picked = table[key] stays opaque: a call through it would look direct.
    assert found["direct"] == {(run, "function:m.py#f1")}
    assert found["attribute"] == {(run, "function:m.py#f2"), (run, "function:m.py#f3")}
    assert "dynamic" not in found
