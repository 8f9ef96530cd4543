"""What one module's Python resolution reads of the whole program, as tokens, and which
tokens an edit changes (``cairn.codegraph.incremental``).

While a module is resolved in a ``cairn watch`` round, the resolver's whole-program
tables are swapped for watched ones that log each key read. A module found through them
is a ``ModuleView``: each of its tables logs the key read in it, so a module that looked
up one name of another module depends on that name's bindings, not on the whole file.
An edit then changes the tokens of the parts it changed (``module_changes``), part by
part: a new line in one function's body changes that function's scope and nothing that
another module reads of its names, classes or imports (the tables hold no ranges).

Tokens (``Token``):

- ``("p", path)``: whether a module is at ``path``; ``("n", name)``: which module a
  dotted name is; ``("i", path)``: a module's name and whether it is a package;
- ``(part, path, key)``: one key of a module table (``symbols``, ``scope_kind``,
  ``scope_parent``, ``scope_owner``, ``class_bases``, ``imported``; in ``scopes`` and
  ``members``, whether a scope or class is there); ``(part, path, scope, name)``: one
  name of one scope or class (``scopes``, ``members``), and ``(part + "?", path, scope,
  name)`` whether that name is there at all; ``(part + "*", path[, scope])``: a walk
  of a whole table;
- ``("wildcards", path)``: a module's ``import *``s; ``("e", path, field)``: one field
  of its extract; ``("m", path)``: anything of the module (changed by any edit of it);
- ``("f", key)``, ``("s", key)``, ``("a", name)``: one argument flow, one subclass list,
  the scopes that bind ``self.<name>``;
  ``("*", table)``: a walk of a whole-program table.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import fields
from typing import Any

from cairn.codegraph.records import FileExtract

__all__ = [
    "ALL",
    "PRESENT",
    "ModuleView",
    "Token",
    "WatchedModules",
    "WatchedTable",
    "module_changes",
]

Token = tuple[object, ...]
"""One thing a module's resolution read (see the module docstring)."""

ALL = "*"
"""The tag of a walk of a whole-program table: ``(ALL, table tag)``."""

PRESENT = "?"
"""Appended to a twice-keyed table's tag: whether one name is in one scope or class,
``(part + PRESENT, path, scope, name)``, apart from its value."""

_FLAT_PARTS = (
    "symbols",
    "scope_kind",
    "scope_parent",
    "scope_owner",
    "class_bases",
    "imported",
)
"""Module tables keyed once (qualname -> value)."""
_NESTED_PARTS = ("scopes", "members")
"""Module tables keyed twice (scope or class qualname -> name -> value)."""
_EXTRACT_FIELDS = tuple(f.name for f in fields(FileExtract))
_ABSENT = object()


class WatchedTable(dict[Any, Any]):
    """A whole-program table that logs each key read, ``(tag, key)``, and a walk of
    the whole table, ``(ALL, tag)``, in ``log``."""

    def __init__(self, data: Mapping[Any, Any], tag: str, log: list[Any]) -> None:
        super().__init__(data)
        self._tag = tag
        self._log = log

    def __getitem__(self, key: Any) -> Any:
        self._log.append((self._tag, key))
        return super().__getitem__(key)

    def get(self, key: Any, default: Any = None) -> Any:
        self._log.append((self._tag, key))
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        self._log.append((self._tag, key))
        return super().__contains__(key)

    def __iter__(self) -> Iterator[Any]:
        self._log.append((ALL, self._tag))
        return super().__iter__()

    def keys(self) -> Any:
        self._log.append((ALL, self._tag))
        return super().keys()

    def values(self) -> Any:
        self._log.append((ALL, self._tag))
        return super().values()

    def items(self) -> Any:
        self._log.append((ALL, self._tag))
        return super().items()


class WatchedModules(WatchedTable):
    """A table of modules (by path or by name) whose modules are ``ModuleView``s over
    the same log, one view per module (``views``, shared by both tables, so a module
    found by path and by name is the same object)."""

    def __init__(
        self, data: Mapping[Any, Any], tag: str, log: list[Any], views: dict[str, ModuleView]
    ) -> None:
        super().__init__(data, tag, log)
        self._views = views

    def _view(self, module: Any) -> ModuleView:
        view = self._views.get(module.path)
        if view is None:
            view = self._views[module.path] = ModuleView(module, self._log)
        return view

    def __getitem__(self, key: Any) -> Any:
        return self._view(super().__getitem__(key))

    def get(self, key: Any, default: Any = None) -> Any:
        module = super().get(key, _ABSENT)
        return default if module is _ABSENT else self._view(module)

    def values(self) -> Any:
        return [self._view(module) for module in super().values()]

    def items(self) -> Any:
        return [(key, self._view(module)) for key, module in super().items()]


class _Part:
    """One table of one module: logs ``(tag, path, key)`` per key read and
    ``(tag*, path)`` per walk of the whole table."""

    __slots__ = ("_data", "_log", "_path", "_tag")

    def __init__(self, data: Mapping[Any, Any], log: list[Any], tag: str, path: str) -> None:
        self._data = data
        self._log = log
        self._tag = tag
        self._path = path

    def get(self, key: Any, default: Any = None) -> Any:
        self._log.append((self._tag, self._path, key))
        return self._data.get(key, default)

    def __getitem__(self, key: Any) -> Any:
        self._log.append((self._tag, self._path, key))
        return self._data[key]

    def __contains__(self, key: object) -> bool:
        self._log.append((self._tag, self._path, key))
        return key in self._data

    def _walked(self) -> Mapping[Any, Any]:
        self._log.append((self._tag + ALL, self._path))
        return self._data

    def __iter__(self) -> Iterator[Any]:
        return iter(self._walked())

    def __len__(self) -> int:
        return len(self._walked())

    def keys(self) -> Any:
        return self._walked().keys()

    def values(self) -> Any:
        return self._walked().values()

    def items(self) -> Any:
        return self._walked().items()


class _Nested(_Part):
    """A table keyed twice (scope -> name -> value): a key read logs whether the scope is
    there, and the scope is handed out as an ``_Inner`` table."""

    __slots__ = ("_inner",)

    def __init__(self, data: Mapping[Any, Any], log: list[Any], tag: str, path: str) -> None:
        super().__init__(data, log, tag, path)
        self._inner: dict[Any, _Inner] = {}

    def _scope(self, key: Any, value: Any) -> _Inner:
        inner = self._inner.get(key)
        if inner is None:
            inner = self._inner[key] = _Inner(value, self._log, self._tag, self._path, key)
        return inner

    def get(self, key: Any, default: Any = None) -> Any:
        self._log.append((self._tag, self._path, key))
        value = self._data.get(key, _ABSENT)
        return default if value is _ABSENT else self._scope(key, value)

    def __getitem__(self, key: Any) -> Any:
        self._log.append((self._tag, self._path, key))
        return self._scope(key, self._data[key])


class _Inner(_Part):
    """One scope of a table keyed twice: logs ``(tag, path, scope, name)`` per name read
    and ``(tag*, path, scope)`` per walk."""

    __slots__ = ("_scope_key",)

    def __init__(
        self, data: Mapping[Any, Any], log: list[Any], tag: str, path: str, scope: Any
    ) -> None:
        super().__init__(data, log, tag, path)
        self._scope_key = scope

    def get(self, key: Any, default: Any = None) -> Any:
        self._log.append((self._tag, self._path, self._scope_key, key))
        return self._data.get(key, default)

    def __getitem__(self, key: Any) -> Any:
        self._log.append((self._tag, self._path, self._scope_key, key))
        return self._data[key]

    def __contains__(self, key: object) -> bool:
        # Whether a name is bound, not how: a function's body edit rebinds its names
        # without changing which scope a reader finds them in.
        self._log.append((self._tag + PRESENT, self._path, self._scope_key, key))
        return key in self._data

    def _walked(self) -> Mapping[Any, Any]:
        self._log.append((self._tag + ALL, self._path, self._scope_key))
        return self._data


class _ExtractView:
    """A module's extract that logs ``("e", path, field)`` per field read."""

    __slots__ = ("_extract", "_log", "_path")

    def __init__(self, extract: FileExtract, log: list[Any]) -> None:
        self._extract = extract
        self._log = log
        self._path = extract.path

    def __getattr__(self, name: str) -> Any:
        self._log.append(("e", self._path, name))
        return getattr(self._extract, name)


class ModuleView:
    """A module of the resolver (``cairn.codegraph.resolve``) that logs what is read of
    it, part by part (see the module docstring); its path is known to whoever found it."""

    __slots__ = (
        "_log",
        "_module",
        "class_bases",
        "extract",
        "imported",
        "members",
        "path",
        "scope_kind",
        "scope_owner",
        "scope_parent",
        "scopes",
        "symbols",
    )

    def __init__(self, module: Any, log: list[Any]) -> None:
        path: str = module.path
        self._module = module
        self._log = log
        self.path = path
        self.extract = _ExtractView(module.extract, log)
        self.scopes = _Nested(module.scopes, log, "scopes", path)
        self.members = _Nested(module.members, log, "members", path)
        self.symbols = _Part(module.symbols, log, "symbols", path)
        self.scope_kind = _Part(module.scope_kind, log, "scope_kind", path)
        self.scope_parent = _Part(module.scope_parent, log, "scope_parent", path)
        self.scope_owner = _Part(module.scope_owner, log, "scope_owner", path)
        self.class_bases = _Part(module.class_bases, log, "class_bases", path)
        self.imported = _Part(module.imported, log, "imported", path)

    @property
    def name(self) -> str:
        self._log.append(("i", self.path))
        return str(self._module.name)

    @property
    def is_package(self) -> bool:
        self._log.append(("i", self.path))
        return bool(self._module.is_package)

    @property
    def wildcards(self) -> Any:
        self._log.append(("wildcards", self.path))
        return self._module.wildcards


def module_changes(path: str, before: Any | None, now: Any | None) -> set[Token]:
    """The tokens of the module at ``path`` whose value differs between ``before`` and
    ``now`` (resolver modules; None: no module there)."""
    changed: set[Token] = {("m", path)}
    if (before is None) != (now is None):
        changed.add(("p", path))
    if _identity(before) != _identity(now):
        changed.add(("i", path))
    if _attr(before, "wildcards", ()) != _attr(now, "wildcards", ()):
        changed.add(("wildcards", path))
    old_extract, new_extract = _attr(before, "extract", None), _attr(now, "extract", None)
    for name in _EXTRACT_FIELDS:
        if _attr(old_extract, name, _ABSENT) != _attr(new_extract, name, _ABSENT):
            changed.add(("e", path, name))
    for part in _FLAT_PARTS:
        _table_changes(changed, (part, path), _attr(before, part, {}), _attr(now, part, {}))
    for part in _NESTED_PARTS:
        old, new = _attr(before, part, {}), _attr(now, part, {})
        if old == new:
            continue
        changed.add((f"{part}{ALL}", path))
        for key in old.keys() | new.keys():
            if (key in old) != (key in new):
                changed.add((part, path, key))
            inner_old, inner_new = old.get(key, {}), new.get(key, {})
            _table_changes(changed, (part, path, key), inner_old, inner_new)
            for name in inner_old.keys() ^ inner_new.keys():
                changed.add((f"{part}{PRESENT}", path, key, name))
    return changed


def _identity(module: Any | None) -> tuple[str, bool] | None:
    return None if module is None else (module.name, module.is_package)


def _attr(holder: Any | None, name: str, default: Any) -> Any:
    return default if holder is None else getattr(holder, name)


def _table_changes(
    changed: set[Token], head: Token, old: Mapping[Any, Any], new: Mapping[Any, Any]
) -> None:
    """Add ``head + (key,)`` for each key whose value differs, and the walk of the table
    (``head`` with its tag starred) when any does."""
    if old == new:
        return
    tag, *rest = head
    changed.add((f"{tag}{ALL}", *rest))
    for key in old.keys() | new.keys():
        if old.get(key, _ABSENT) != new.get(key, _ABSENT):
            changed.add((*head, key))
