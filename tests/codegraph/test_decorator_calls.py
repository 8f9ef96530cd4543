"""Applying a decorator is a call (issue 21): ``S = D(S)`` calls ``D`` from the scope
that defines ``S``, and ``@make(...)`` calls ``make`` and then what it returned. The
expected edges are read off the source below by hand."""

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
