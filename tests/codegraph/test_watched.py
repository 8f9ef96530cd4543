"""What a module's resolution reads of another module is logged per name
(``cairn.codegraph.watched``), and an edit changes only the tokens of what it changed:
the tables resolution reads hold no ranges, so moving code changes none of them."""

from __future__ import annotations

from typing import Any

import pytest

from cairn.codegraph.python import extract_python
from cairn.codegraph.resolve import PythonResolver, self_attribute_table
from cairn.codegraph.watched import ModuleView, WatchedModules, module_changes

PATH = "pkg/tools.py"
SOURCE = """\
import os
from pkg.base import Base


def first(x):
    return x


def second(y):
    z = y
    return z


class Thing(Base):
    def run(self):
        return first(1)
"""


def _module(source: str, name: str = "pkg.tools") -> Any:
    return PythonResolver.module_of(name, extract_python(PATH, source.encode()))


def _of_path(changes: set[tuple[object, ...]]) -> set[tuple[object, ...]]:
    return {token for token in changes if token[1] == PATH}


def test_a_new_local_changes_only_that_scope_name() -> None:
    before = _module(SOURCE)
    now = _module(SOURCE.replace("    return x\n", "    w = 1\n    return x\n"))
    changes = module_changes(PATH, before, now)
    assert ("scopes", PATH, "first", "w") in changes
    assert ("scopes*", PATH, "first") in changes
    assert ("m", PATH) in changes
    # Nothing another module can read of the other names, classes or imports changed.
    assert ("scopes", PATH, "first", "x") not in changes
    assert ("scopes", PATH, "first", "<return>") not in changes
    assert not any(token[0] == "scopes" and token[2] == "second" for token in changes)
    assert not any(
        token[0] in ("symbols", "symbols*", "members", "class_bases") for token in changes
    )
    assert ("p", PATH) not in changes and ("i", PATH) not in changes


def test_binding_a_name_again_leaves_whether_it_is_bound() -> None:
    before = _module(SOURCE)
    rebound = module_changes(
        PATH, before, _module(SOURCE.replace("    z = y\n", "    z = y\n    z = 2\n"))
    )
    assert ("scopes", PATH, "second", "z") in rebound
    assert not any(token[0] == "scopes?" for token in rebound)
    added = module_changes(
        PATH, before, _module(SOURCE.replace("    z = y\n", "    z = y\n    v = 2\n"))
    )
    assert ("scopes?", PATH, "second", "v") in added
    assert ("scopes?", PATH, "second", "z") not in added
    removed = module_changes(
        PATH, _module(SOURCE.replace("    z = y\n", "    z = y\n    v = 2\n")), before
    )
    assert ("scopes?", PATH, "second", "v") in removed
    gone = module_changes(PATH, before, None)  # a whole module: each name's presence
    assert ("scopes?", PATH, "second", "z") in gone


def test_moving_every_line_changes_no_table_another_module_reads() -> None:
    before = _module(SOURCE)
    now = _module("# a comment\n\n" + SOURCE)
    changes = module_changes(PATH, before, now)
    # The extract's records carry ranges, so its fields differ; the tables do not.
    assert ("e", PATH, "symbols") in changes
    assert {token for token in changes if token[0] != "e"} == {("m", PATH)}


def test_a_new_import_changes_that_name_only() -> None:
    before = _module(SOURCE)
    now = _module("from os import sep\n" + SOURCE)
    changes = module_changes(PATH, before, now)
    assert ("imported", PATH, "sep") in changes
    assert ("scopes", PATH, "", "sep") in changes
    assert ("imported", PATH, "Base") not in changes
    assert ("imported", PATH, "<module>") not in changes  # ``import os`` binds one already
    assert ("scopes", PATH, "", "os") not in changes


def test_a_new_base_changes_that_class() -> None:
    before = _module(SOURCE)
    now = _module(SOURCE.replace("class Thing(Base):", "class Thing(Base, os.PathLike):"))
    changes = module_changes(PATH, before, now)
    assert ("class_bases", PATH, "Thing") in changes
    assert ("symbols", PATH, "Thing") not in changes


def test_an_added_or_removed_module_changes_its_presence_and_name() -> None:
    module = _module(SOURCE)
    for changes in (module_changes(PATH, None, module), module_changes(PATH, module, None)):
        assert {("p", PATH), ("i", PATH), ("m", PATH)} <= changes
        assert ("symbols", PATH, "first") in changes
        assert ("scopes", PATH, "Thing.run") in changes  # the scope is there, or gone
    renamed = module_changes(PATH, module, _module(SOURCE, "other.tools"))
    assert _of_path(renamed) == {("i", PATH), ("m", PATH)}


def test_a_view_logs_each_name_read() -> None:
    log: list[Any] = []
    view = ModuleView(_module(SOURCE), log)
    scope = view.scopes.get("second", {})
    assert scope.get("z") is not None
    assert "nothing" not in scope
    assert view.scopes.get("missing", {}) == {}
    assert [first.kind for first in view.symbols["first"]] == ["function"]
    assert view.name == "pkg.tools"
    assert log == [
        ("scopes", PATH, "second"),
        ("scopes", PATH, "second", "z"),
        ("scopes?", PATH, "second", "nothing"),  # whether it is bound, not how
        ("scopes", PATH, "missing"),
        ("symbols", PATH, "first"),
        ("i", PATH),
    ]
    log.clear()
    assert sorted(view.scopes.get("second", {})) == ["<return>", "y", "z"]
    assert len(view.class_bases) == 1
    assert view.extract.path == PATH
    assert set(log) == {  # a walk may be logged more than once (``sorted`` asks the length)
        ("scopes", PATH, "second"),
        ("scopes*", PATH, "second"),
        ("class_bases*", PATH),
        ("e", PATH, "path"),
    }
    with pytest.raises(AttributeError):
        view.unknown  # noqa: B018 - a part nobody declared is never read unlogged


def test_one_view_per_module_whether_found_by_path_or_by_name() -> None:
    module = _module(SOURCE)
    log: list[Any] = []
    views: dict[str, ModuleView] = {}
    by_path = WatchedModules({PATH: module}, "p", log, views)
    by_name = WatchedModules({"pkg.tools": module}, "n", log, views)
    assert by_path[PATH] is by_name.get("pkg.tools") is by_path.get(PATH)
    assert by_name.get("pkg.other") is None
    assert list(by_path.values()) == [by_path[PATH]]
    assert log[:3] == [("p", PATH), ("n", "pkg.tools"), ("p", PATH)]
    assert ("*", "p") in log


def test_the_self_attribute_table_names_every_scope_binding_one() -> None:
    source = SOURCE + "\n    def start(self):\n        self.ready = True\n        self.run = None\n"
    table = self_attribute_table([_module(source)])
    assert table == {
        "ready": frozenset({(PATH, "Thing")}),
        "run": frozenset({(PATH, "Thing")}),
    }
