"""Calls the language makes without call syntax (issue 21).

Applying a decorator is a call: ``S = D(S)`` calls ``D`` from the scope that defines
``S``, and ``@make(...)`` calls ``make`` and then what it returned. A ``with`` block
calls its context manager's enter and exit methods, and its ``as`` target is what the
enter method returns. The expected edges are read off the sources below by hand.
"""

from __future__ import annotations

from pathlib import Path

from cairn.codegraph import index_repository

SOURCE = """\
import functools


def dec(f):
    return f


def make():
    def inner(f):
        return f

    return inner


@dec
def a():
    pass


@make()
def b():
    pass


class K:
    @dec
    def m(self):
        pass

    @property
    def p(self):
        return 1


def outer(f):
    @functools.wraps(f)
    def wrapper():
        return f()

    return wrapper
"""


def _calls(root: Path) -> dict[tuple[str, str], list[tuple[str, int]]]:
    graph = index_repository(root).graph
    found: dict[tuple[str, str], list[tuple[str, int]]] = {}
    for fact in graph.facts():
        if fact.relation != "calls":
            continue
        sites = []
        for occurrence in graph.occurrences_of(fact.id):
            assert occurrence.source_range is not None
            sites.append((occurrence.site_kind, occurrence.source_range.start_line))
        found[(fact.source, fact.target)] = sorted(sites)
    return found


def test_decorator_applications_are_calls_from_the_defining_scope(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(SOURCE)
    calls = _calls(tmp_path)
    module, klass = "file:m.py", "class:m.py#K"
    assert calls[(module, "function:m.py#dec")] == [("decorator", 15)]
    # ``@make()``: the explicit call of make, then the application of what it returned.
    assert calls[(module, "function:m.py#make")] == [("call", 20)]
    assert calls[(module, "function:m.py#make.inner")] == [("decorator", 20)]
    # A method's decorator is applied in the class body.
    assert calls[(klass, "function:m.py#dec")] == [("decorator", 26)]
    # Builtin and external decorators give no application call (``property``), and an
    # external decorator factory's explicit call stays an ordinary external call.
    assert not any(target.endswith("property") for _, target in calls)
    assert calls[("function:m.py#outer", "external:python:functools.wraps")] == [("call", 36)]
    assert all(
        kind == "call"
        for (source, _), sites in calls.items()
        for kind, _ in sites
        if source == "function:m.py#outer"
    )


WITH_SOURCE = """\
class Resource:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def read(self):
        return 1


class Opener:
    def __enter__(self):
        return Resource()

    def __exit__(self, *exc):
        return False


def use():
    with Resource() as r:
        r.read()
    with Opener() as inner:
        inner.read()
    with open("x") as f:
        f.read()
"""


def test_a_with_block_calls_enter_and_exit_and_types_its_target(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(WITH_SOURCE)
    calls = _calls(tmp_path)
    use = "function:m.py#use"
    for cls, line in (("Resource", 21), ("Opener", 23)):
        for method in ("__enter__", "__exit__"):
            assert calls[(use, f"method:m.py#{cls}.{method}")] == [("call", line)]
    # ``r`` is what Resource.__enter__ returns (the instance), ``inner`` what
    # Opener.__enter__ returns (a Resource): both reads reach Resource.read.
    assert calls[(use, "method:m.py#Resource.read")] == [("call", 22), ("call", 24)]
    # ``open`` is a builtin: no fact for its protocol nor for ``f.read()``.
    assert {target for source, target in calls if source == use} == {
        "class:m.py#Resource",
        "class:m.py#Opener",
        "method:m.py#Resource.__enter__",
        "method:m.py#Resource.__exit__",
        "method:m.py#Opener.__enter__",
        "method:m.py#Opener.__exit__",
        "method:m.py#Resource.read",
    }


def test_the_last_star_import_binds_the_name(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("def f():\n    return 1\n\n\ndef only_a():\n    return 2\n")
    (tmp_path / "b.py").write_text("def f():\n    return 3\n")
    (tmp_path / "main.py").write_text("from a import *\nfrom b import *\n\nf()\nonly_a()\n")
    calls = _calls(tmp_path)
    targets = {target for source, target in calls if source == "file:main.py"}
    # Python rebinds f at the second import: b.f is called, never a.f; only_a still
    # comes from the first import, which nothing later rebinds.
    assert targets == {"function:b.py#f", "function:a.py#only_a"}


def test_an_assigned_attribute_shadows_an_external_base(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(
        "import abc\n\n\nclass Helper:\n    def run(self):\n        return 1\n\n\n"
        "class Base(abc.ABC):\n    def __init__(self):\n        self.helper = Helper()\n\n"
        "    def go(self):\n        self.helper.run()\n        self.register(1)\n"
    )
    calls = _calls(tmp_path)
    targets = {target for source, target in calls if source == "method:m.py#Base.go"}
    # self.helper is the Helper its __init__ assigned, not an invented abc.ABC.helper;
    # register, assigned nowhere, is still abc.ABC's own member.
    assert targets == {"method:m.py#Helper.run", "external:python:abc.ABC.register"}


CALLBACK_SOURCE = """\
def double(x):
    return 2 * x


def keep(x):
    return x > 1


def by_size(x):
    return len(x)


def use(xs):
    list(map(double, xs))
    list(filter(keep, xs))
    return sorted(xs, key=by_size)


def shadowed(xs):
    map = print
    map(double, xs)
"""


def test_functions_passed_to_builtins_that_call_them_are_called(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(CALLBACK_SOURCE)
    calls = _calls(tmp_path)
    use = "function:m.py#use"
    assert calls[(use, "function:m.py#double")] == [("callback", 14)]
    assert calls[(use, "function:m.py#keep")] == [("callback", 15)]
    assert calls[(use, "function:m.py#by_size")] == [("callback", 16)]
    # A local ``map`` that is not the builtin calls nothing back.
    assert not [target for source, target in calls if source == "function:m.py#shadowed"]


OVERRIDES = """\
class Base:
    def run(self):
        self.step()
        self.hook()

    def step(self):
        return 0


class Fast(Base):
    def step(self):
        return 1


class Faster(Fast):
    def step(self):
        return 2


class Wired(Base):
    def __init__(self):
        self.hook = self.on_hook

    def on_hook(self):
        return 3
"""


def test_self_calls_may_dispatch_to_overrides_as_separate_facts(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(OVERRIDES)
    graph = index_repository(tmp_path).graph
    dispatch = {
        (fact.source, fact.target): fact.discriminator.value["dispatch"]
        for fact in graph.facts()
        if fact.relation == "calls" and fact.source == "method:m.py#Base.run"
    }
    assert dispatch == {
        # The direct call, as before, and each override (subclasses of subclasses too)
        # as its own dynamic-dispatch fact, never blended into the direct one.
        ("method:m.py#Base.run", "method:m.py#Base.step"): "method",
        ("method:m.py#Base.run", "method:m.py#Fast.step"): "dynamic",
        ("method:m.py#Base.run", "method:m.py#Faster.step"): "dynamic",
        # Base has no hook; a subclass assigns one to self.hook.
        ("method:m.py#Base.run", "method:m.py#Wired.on_hook"): "dynamic",
    }
