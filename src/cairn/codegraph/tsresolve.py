"""Global resolution for JavaScript, TypeScript and Go extracts.

JavaScript and TypeScript: relative specifiers resolve to files by the usual extension
and ``index`` rules; ESM named, default and namespace imports, CommonJS ``require`` and
``module.exports``/``exports.x``, and ``export ... from`` re-exports are followed; calls
resolve through lexical scopes, imports, ``this`` and ``extends`` chains, and locals
bound with ``new``. Express apps and routers are recognised from ``express()`` and
``express.Router()`` and their ``use`` prefixes are composed. Go: a package is a
directory; ``go.mod`` gives the module path that maps imports into the repository;
receivers, embedded structs and ``net/http`` handler registrations are resolved. As in
Python, whatever cannot be resolved exactly is counted, never guessed.
"""

from __future__ import annotations

import posixpath
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from cairn.codegraph.emit import Emitter, file_id, partial_marks, symbol_id
from cairn.codegraph.frame import (
    ResolverFrame,
    VExternal,
    VInstance,
    VModule,
    VSymbol,
    distinct,
)
from cairn.codegraph.limits import MAX_RESOLUTION_DEPTH
from cairn.codegraph.records import Binding, FileExtract, Range, Ref, Symbol
from cairn.codegraph.treesitter import (
    COMMONJS_EXPORT,
    GO_ADAPTER_ID,
    GO_BUILTINS,
    JS_ADAPTER_ID,
    STRATEGY,
    THIS_PREFIX,
    VALUE_NAME,
    result_name,
)
from cairn.codegraph.tsconfig import TSCONFIG_LANGUAGE, ProjectConfigs
from cairn.codegraph.workspaces import PACKAGE_LANGUAGE, WorkspacePackages
from cairn.graph.registry import normalize_route_path

__all__ = ["JS_BUILTINS", "CodeResolver"]

JS_EXTENSIONS = (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts")
JS_BUILTINS = frozenset(
    {
        "Array", "BigInt", "Boolean", "Buffer", "Date", "Error", "Intl", "JSON", "Map",
        "Math", "Number", "Object", "Promise", "Proxy", "Reflect", "RegExp", "Set",
        "String", "Symbol", "TypeError", "WeakMap", "WeakSet", "clearInterval",
        "clearTimeout", "console", "decodeURIComponent", "document", "encodeURIComponent",
        "exports", "fetch", "globalThis", "isNaN", "module", "parseFloat", "parseInt",
        "process", "queueMicrotask", "require", "setInterval", "setTimeout",
        "structuredClone", "window",
    }
)  # fmt: skip
JS_FACTORIES = {"express": "express.Application", "express.Router": "express.Router"}
GO_FACTORIES = {"net/http.NewServeMux": "net/http.ServeMux"}
GO_ROUTERS = frozenset({"net/http", "net/http.ServeMux"})
EXPRESS_TYPES = frozenset({"express.Application", "express.Router"})
_DECLARED_RESULTS = ("go", "typescript")
"""Languages whose functions declare the types of their results."""
_SETTINGS_LANGUAGES = ("gomod", TSCONFIG_LANGUAGE, PACKAGE_LANGUAGE)
"""Files resolution reads for their settings only: they are no modules of their own."""

Value = VModule | VSymbol | VInstance | VExternal


@dataclass(frozen=True, slots=True)
class _Builtin:
    name: str


class _File:
    def __init__(self, extract: FileExtract) -> None:
        self.extract = extract
        self.path = extract.path
        self.directory = posixpath.dirname(extract.path)
        self.language = extract.language
        self.scopes = {s.qualname: dict(s.bindings) for s in extract.scopes}
        self.parent = {s.qualname: s.parent for s in extract.scopes}
        self.kind = {s.qualname: s.kind for s in extract.scopes}
        self.symbols: dict[str, list[Symbol]] = {}
        for symbol in extract.symbols:
            self.symbols.setdefault(symbol.qualname, []).append(symbol)
        self.exported: dict[str, tuple[str, str]] = {}
        """Each exported name's first ``(target, form)``: what a lookup of it follows."""
        for exported, target, form, _ in extract.exports:
            self.exported.setdefault(exported, (target, form))
        self.star_specs = tuple(
            target.rpartition(":")[0]
            for exported, target, form, _ in extract.exports
            if exported == "*" and form == "reexport"
        )
        """The specifiers of its ``export * from`` statements, in order."""


class CodeResolver(ResolverFrame):
    """Resolves JS/TS/Go extracts and emits their nodes and facts."""

    def __init__(self, extracts: Sequence[FileExtract], emitter: Emitter) -> None:
        super().__init__()
        self.emit = emitter
        ordered = sorted(extracts, key=lambda e: e.path)
        self.files = {e.path: _File(e) for e in ordered if e.language not in _SETTINGS_LANGUAGES}
        self.configs = ProjectConfigs(ordered)
        self.workspaces = WorkspacePackages(ordered)
        self.gomods = {
            posixpath.dirname(e.path): e.package for e in ordered if e.language == "gomod"
        }
        self.call_stats: dict[str, Counter[str]] = {p: Counter() for p in self.files}
        self.members: dict[tuple[str, str], dict[str, tuple[_File, Symbol]]] = {}
        self.package: dict[str, dict[str, list[tuple[_File, Symbol]]]] = {}
        self.origins: dict[str, str] = {}
        for file in self.files.values():
            for symbol in file.extract.symbols:
                if file.language == "go":
                    self._index_go(file, symbol)
                elif symbol.parent is not None and symbol.kind == "method":
                    key = (file.path, symbol.parent)
                    self.members.setdefault(key, {})[symbol.name] = (file, symbol)
        self._export_guard: set[tuple[str, str]] = set()
        self.go_files: dict[str, list[str]] = {}
        """The Go files of each directory (a package), in path order."""
        for path, file in self.files.items():
            if file.language == "go":
                self.go_files.setdefault(file.directory, []).append(path)
        self._modules: dict[tuple[str, str], VModule | VExternal | None] = {}
        """``_js_module`` by file and specifier: a function of the files and settings."""

    def _index_go(self, file: _File, symbol: Symbol) -> None:
        directory = file.directory
        if symbol.kind == "method" and symbol.parent is not None:
            key = (directory, symbol.parent)
            self.members.setdefault(key, {})[symbol.name] = (file, symbol)
        else:
            self.package.setdefault(directory, {}).setdefault(symbol.name, []).append(
                (file, symbol)
            )

    # --------------------------------------------------------------- values
    @staticmethod
    def _vsymbol(file: _File, symbol: Symbol) -> VSymbol:
        return VSymbol(
            symbol_id(symbol.kind, file.path, symbol.qualname),
            symbol.kind,
            file.path,
            symbol.qualname,
            f"{file.path}:{symbol.qualname}",
        )

    def _js_module(self, file: _File, spec: str) -> VModule | VExternal | None:
        """The module a specifier names from ``file``: a file of the repository (a
        relative path, an alias of the nearest project config: ``paths``, ``baseUrl``,
        or a package of the workspace), an external package, or None (a relative path
        to no file)."""
        key = (file.path, spec)
        if key not in self._modules:
            self._modules[key] = self._find_js_module(file, spec)
        return self._modules[key]

    def _find_js_module(self, file: _File, spec: str) -> VModule | VExternal | None:
        if not spec.startswith("."):
            bases = self.configs.bases(file.path, spec) + self.workspaces.bases(file.path, spec)
            for base in bases:
                found = self._js_file(base)
                if found is not None:
                    return VModule(found, found)
            return VExternal(spec)
        found = self._js_file(posixpath.normpath(posixpath.join(file.directory, spec)))
        return VModule(found, found) if found is not None else None

    def _js_file(self, base: str) -> str | None:
        """The JavaScript or TypeScript file a module path names, by the usual
        extension and ``index`` rules, or None."""
        stem, ext = posixpath.splitext(base)
        candidates = [base]
        if ext in (".js", ".jsx", ".mjs", ".cjs"):
            candidates += [stem + e for e in JS_EXTENSIONS]
        candidates += [base + e for e in JS_EXTENSIONS]
        candidates += [f"{base}/index{e}" for e in JS_EXTENSIONS]
        for candidate in candidates:
            found = self.files.get(candidate)
            if found is not None and found.language != "go":
                return candidate
        return None

    def _go_module(self, import_path: str) -> VModule:
        for directory in sorted(self.gomods, key=len, reverse=True):
            module = self.gomods[directory]
            if module and (import_path == module or import_path.startswith(module + "/")):
                rel = import_path[len(module) :].lstrip("/")
                target = posixpath.join(directory, rel) if directory else rel
                if target in self.package or any(d == target for d, _ in self.members):
                    return VModule(import_path, target.rstrip("/"))
        return VModule(import_path, None)

    def lookup(
        self, file: _File, scope: str, name: str, depth: int = 0
    ) -> tuple[Value, ...] | _Builtin:
        """Resolve a bare name used in ``scope`` of ``file``."""
        if depth > MAX_RESOLUTION_DEPTH:
            return ()
        declared = self._declared(file, scope, name)
        if declared is not None:
            current, bindings = declared
            key = (f"{file.path}#{current}", name)
            if key in self._export_guard:
                return ()
            self._export_guard.add(key)
            try:
                return self._bindings(file, current, name, bindings, depth + 1)
            finally:
                self._export_guard.discard(key)
        if file.language == "go":
            members = self.package.get(file.directory, {}).get(name)
            if members:
                return tuple(self._vsymbol(f, s) for f, s in members)
            imported = file.scopes.get("", {}).get(name)
            if imported is not None:
                return self._bindings(file, "", name, imported, depth + 1)
            return _Builtin(name) if name in GO_BUILTINS else ()
        return _Builtin(name) if name in JS_BUILTINS else ()

    def _bindings(
        self, file: _File, scope: str, name: str, bindings: Sequence[Binding], depth: int
    ) -> tuple[Value, ...]:
        values: list[Value] = []
        for binding in bindings:
            found = self._binding(file, scope, name, binding, depth)
            if found is None:
                return ()
            values.extend(found)
        return distinct(values)

    def _binding(
        self, file: _File, scope: str, name: str, binding: Binding, depth: int
    ) -> tuple[Value, ...] | None:
        if depth > MAX_RESOLUTION_DEPTH:
            return None
        tag = binding[0]
        if tag in ("def", "var"):
            kinds = ("variable",) if tag == "var" else ("class", "function", "method")
            symbols = file.symbols.get(str(binding[1]), ())
            return tuple(self._vsymbol(file, s) for s in symbols if s.kind in kinds)
        if tag == "self":
            cls = self._class(file, str(binding[1]))
            return (VInstance(cls, None, None),) if cls is not None else None
        if tag == "import":
            spec, imported = str(binding[1]), binding[3]
            if file.language == "go":
                return (self._go_module(spec),)
            module = self._js_module(file, spec)
            if module is None:
                return None
            if isinstance(module, VExternal):
                if imported in (None, "default"):
                    return (module,)
                return (VExternal(f"{spec}.{imported}"),)
            if imported is None:
                whole = self._export(module, COMMONJS_EXPORT, depth + 1)
                return whole or (module,)
            found = self._export(module, str(imported), depth + 1)
            if not found and imported == "default":
                found = self._export(module, COMMONJS_EXPORT, depth + 1)
            return found or None
        if tag == "ctor":
            ref, extra = binding[1], binding[2]
            assert isinstance(ref, Ref) and isinstance(extra, tuple)
            origin = f"{file.path}#{scope}.{name}" if scope else f"{file.path}#{name}"
            resolved = self.resolve(file, ref, depth + 1)
            made: list[Value] = []
            for value, _ in () if isinstance(resolved, _Builtin) else resolved:
                if isinstance(value, VSymbol) and value.kind == "class":
                    made.append(VInstance(value, None, origin))
                elif isinstance(value, VExternal):
                    factory = (GO_FACTORIES | JS_FACTORIES).get(value.dotted)
                    if "composite" in extra:
                        made.append(VInstance(None, value.dotted, origin))
                    elif factory is not None:
                        made.append(VInstance(None, factory, origin))
                elif "composite" not in extra and file.language in _DECLARED_RESULTS:
                    made.extend(self._results(value, 0, depth + 1))  # ``item := find()``
            variables: tuple[Value, ...] = ()
            if not scope and file.language != "go":  # a module-level constant is its node too
                symbols = file.symbols.get(name, ())
                variables = tuple(self._vsymbol(file, s) for s in symbols if s.kind == "variable")
            if made:
                return distinct((*made, *variables))
            return variables if not scope and file.language != "go" else None
        if tag == "element":  # Go: ``for _, v := range x``
            ref = binding[1]
            assert isinstance(ref, Ref)
            return self._elements(file, ref, depth + 1) or None
        if tag == "result":  # Go: ``item, err := find()`` binds each name to one result
            ref, index = binding[1], binding[2]
            assert isinstance(ref, Ref) and isinstance(index, int)
            resolved = self.resolve(file, ref, depth + 1)
            results = [
                found
                for value, _ in (() if isinstance(resolved, _Builtin) else resolved)
                for found in self._results(value, index, depth + 1)
            ]
            return distinct(results) or None
        return None

    def _elements(self, file: _File, ref: Ref, depth: int) -> tuple[Value, ...]:
        """What ranging over ``ref`` yields, by the element type its Go declaration
        names: a parameter or local (``xs []*Command``) or the result of a function of
        the repository (``cmd.Commands()`` returning ``[]*Command``); nothing else."""
        if depth > MAX_RESOLUTION_DEPTH:
            return ()
        if ref.attrs:  # ``range c.commands``: the field's declared type
            holder = replace(ref, attrs=ref.attrs[:-1])
            held = self.resolve(file, holder, depth + 1)
            found: list[Value] = []
            for value, _ in () if isinstance(held, _Builtin) else held:
                if isinstance(value, VInstance) and value.cls is not None:
                    declared, scope, bindings = self._field_bindings(value.cls, ref.attrs[-1])
                    if declared is not None:
                        found.extend(self._element_values(declared, scope, bindings, depth))
            return distinct(found)
        if ref.kind == "name":
            binder = self._declared(file, ref.scope, ref.head)
            return () if binder is None else self._element_values(file, *binder, depth)
        if ref.kind != "new" or ref.inner is None:
            return ()
        return self._result_elements(file, ref.inner, 0, depth)

    def _result_elements(
        self, file: _File, called: Ref, index: int, depth: int
    ) -> tuple[Value, ...]:
        """What ranging over the ``index``-th result of calling ``called`` yields, by the
        declared result types of the repository's Go functions it names."""
        resolved = self.resolve(file, called, depth + 1)
        results: list[Value] = []
        for value, _ in () if isinstance(resolved, _Builtin) else resolved:
            if not isinstance(value, VSymbol) or value.kind == "class":
                continue
            owner = self.files.get(value.path)
            if owner is None or owner.language != "go":
                continue
            declared = owner.scopes.get(value.qualname, {}).get(result_name(index), ())
            results.extend(self._element_values(owner, value.qualname, declared, depth + 1))
        return distinct(results)

    @staticmethod
    def _declared(file: _File, scope: str, name: str) -> tuple[str, Sequence[Binding]] | None:
        """The nearest scope that binds ``name`` as seen from ``scope``, with its
        bindings (a Go file's package level is no scope here: its names are the
        package's); None when none does."""
        current: str | None = scope
        while current is not None:
            bindings = file.scopes.get(current, {}).get(name)
            if bindings is not None and (file.language != "go" or current != ""):
                return current, bindings
            current = file.parent.get(current)
        return None

    def _element_values(
        self, file: _File, scope: str, bindings: Sequence[Binding], depth: int
    ) -> tuple[Value, ...]:
        """Instances of the element types among ``bindings``: of ``("elements", Ref)``,
        and of what the calls of ``cmds := c.Commands()`` (``ctor``) and ``cmds, err :=
        find()`` (``result``) return."""
        if depth > MAX_RESOLUTION_DEPTH:
            return ()
        found: list[Value] = []
        for binding in bindings:
            tag, held = binding[0], binding[1] if len(binding) > 1 else None
            if tag == "elements":
                item = ("ctor", held, ("composite",))
                found.extend(self._binding(file, scope, "<element>", item, depth + 1) or ())
            elif tag == "ctor" and isinstance(held, Ref) and binding[2] == ():
                found.extend(self._result_elements(file, held, 0, depth + 1))
            elif tag == "result" and isinstance(held, Ref) and isinstance(binding[2], int):
                found.extend(self._result_elements(file, held, binding[2], depth + 1))
        return distinct(found)

    def _results(self, value: Value, index: int, depth: int) -> tuple[Value, ...]:
        """What calling ``value`` gives as its ``index``-th result, by the type its Go or
        TypeScript declaration names (``func (c *Command) Root() *Command``,
        ``root(): Command``); nothing for anything else."""
        if not isinstance(value, VSymbol) or value.kind not in ("function", "method"):
            return ()
        file = self.files.get(value.path)
        name = result_name(index)
        bindings = None if file is None else file.scopes.get(value.qualname, {}).get(name)
        if file is None or file.language not in _DECLARED_RESULTS or not bindings:
            return ()
        return self._bindings(file, value.qualname, name, bindings, depth + 1)

    def _member_function(self, file: _File, ref: Ref) -> tuple[tuple[Value, str], ...] | None:
        """``obj.name(...)`` (or ``this.name(...)`` inside another ``obj.*`` function) where
        ``obj.name = function ...`` is assigned in this file: that function node."""
        if file.language == "go" or len(ref.attrs) != 1 or ref.kind not in ("name", "this"):
            return None
        qualname = f"{ref.head}.{ref.attrs[0]}"
        if ref.kind == "name" and file.scopes.get("", {}).get(ref.head) is None:
            return None  # not a module-level object of this file
        for symbol in file.symbols.get(qualname, ()):
            if symbol.kind == "function" and symbol.parent is None:
                dispatch = "method" if ref.kind == "this" else "attribute"
                return ((self._vsymbol(file, symbol), dispatch),)
        return None

    def _class(self, file: _File, qualname: str) -> VSymbol | None:
        if file.language == "go":
            for owner, symbol in self.package.get(file.directory, {}).get(qualname, ()):
                if symbol.kind == "class":
                    return self._vsymbol(owner, symbol)
            return None
        for symbol in file.symbols.get(qualname, ()):
            if symbol.kind == "class":
                return self._vsymbol(file, symbol)
        return None

    def _export(self, module: VModule, name: str, depth: int) -> tuple[Value, ...]:
        file = self.files.get(module.path or "")
        key = (module.name, name)
        if file is None or depth > MAX_RESOLUTION_DEPTH or key in self._export_guard:
            return ()
        self._export_guard.add(key)
        try:
            named = file.exported.get(name)
            if named is not None:
                target, form = named
                if form == "reexport":
                    spec, _, inner = target.rpartition(":")
                    other = self._js_module(file, spec)
                    if isinstance(other, VModule):
                        return self._export(other, inner, depth + 1)
                    if isinstance(other, VExternal):
                        return (VExternal(f"{spec}.{inner}"),)
                    return ()
                found = self.lookup(file, "", target, depth + 1)
                return found if isinstance(found, tuple) else ()
            for spec in file.star_specs:
                other = self._js_module(file, spec)
                if isinstance(other, VModule):
                    found = self._export(other, name, depth + 1)
                    if found:
                        return found
            return ()
        finally:
            self._export_guard.discard(key)

    def getattr(self, value: Value, attr: str, depth: int) -> tuple[Value, ...]:
        """The values of ``value.attr``; empty when not resolvable exactly."""
        if depth > MAX_RESOLUTION_DEPTH:
            return ()
        if isinstance(value, VModule):
            if value.path is None:
                return (VExternal(f"{value.name}.{attr}"),)
            if value.path in self.files:
                return self._export(value, attr, depth + 1)
            members = self.package.get(value.path, {}).get(attr, ())
            return tuple(self._vsymbol(f, s) for f, s in members)
        if isinstance(value, VExternal):
            return (VExternal(f"{value.dotted}.{attr}"),)
        if isinstance(value, VInstance):
            if value.cls is None:
                return (VExternal(f"{value.external}.{attr}"),) if value.external else ()
            return self._member(value.cls, attr) or self._field(value.cls, attr, depth)
        if value.kind == "class":
            return self._member(value, attr)
        held = self._held(value, depth)
        if held:  # a Go package-level variable: what it holds
            return distinct(found for item in held for found in self.getattr(item, attr, depth + 1))
        return self._assigned(value, attr)

    def _held(self, value: VSymbol, depth: int) -> tuple[Value, ...]:
        """What a Go package-level variable holds, by its declared type or composite
        literal (``var mu = &sync.RWMutex{}``); nothing for anything else."""
        file = self.files.get(value.path)
        if file is None or file.language != "go" or value.kind != "variable":
            return ()
        bindings = file.scopes.get(value.qualname, {}).get(VALUE_NAME)
        if not bindings:
            return ()
        return self._bindings(file, value.qualname, VALUE_NAME, bindings, depth + 1)

    def _assigned(self, value: VSymbol, attr: str) -> tuple[Value, ...]:
        """A function assigned to a member of ``value`` at its module's top level
        (``EmptyPlaceholder.Title = function Title() {}``: the symbol
        ``EmptyPlaceholder.Title``), reached from any file that has ``value``."""
        file = self.files.get(value.path)
        if file is None or file.language == "go":
            return ()
        found = file.symbols.get(f"{value.qualname}.{attr}", ())
        return (self._vsymbol(file, found[0]),) if len(found) == 1 else ()

    def _member_key(self, cls: VSymbol) -> tuple[str, str]:
        file = self.files[cls.path]
        return (file.directory if file.language == "go" else file.path, cls.qualname)

    def _member(self, cls: VSymbol, attr: str, skip_self: bool = False) -> tuple[Value, ...]:
        mro = self.mro(cls)
        for entry in mro[1:] if skip_self else mro:
            if isinstance(entry, VExternal):
                return (VExternal(f"{entry.dotted}.{attr}"),)
            found = self.members.get(self._member_key(entry), {}).get(attr)
            if found is not None:
                return (self._vsymbol(*found),)
        return ()

    def _field(self, cls: VSymbol, attr: str, depth: int) -> tuple[Value, ...]:
        """A field's value: a Go struct field by its declared type (``c.parent`` of a
        ``parent *Command`` field, promoted from an embedded struct too); a JavaScript
        or TypeScript class field by its annotation or what it is assigned (``this.repo``
        of ``repo = new Repo()``), inherited through ``extends`` too."""
        file, scope, bindings = self._field_bindings(cls, attr)
        if file is None:
            return ()
        return self._bindings(file, scope, attr, bindings, depth + 1)

    def _field_bindings(
        self, cls: VSymbol, attr: str
    ) -> tuple[_File | None, str, Sequence[Binding]]:
        """The file and type that declare the field ``attr`` of ``cls`` (itself, then
        what it embeds or extends, in order), with the field's bindings (a Go struct's
        ``attr``, a JavaScript or TypeScript class's ``this.attr``); ``(None, "", ())``
        when none of the repository's types does."""
        for entry in self.mro(cls):
            if not isinstance(entry, VSymbol):
                break
            file = self.files.get(entry.path)
            if file is None:
                break
            name = attr if file.language == "go" else f"{THIS_PREFIX}{attr}"
            bindings = file.scopes.get(entry.qualname, {}).get(name)
            if bindings:
                return file, entry.qualname, bindings
        return None, "", ()

    def bases_of(
        self, cls: VSymbol, kinds: tuple[str, ...] = ("extends",)
    ) -> list[VSymbol | VExternal]:
        """Resolved bases of an in-repository class (``extends`` only by default)."""
        file = self.files[cls.path]
        found: list[VSymbol | VExternal] = []
        for base in file.extract.bases:
            if base.cls != cls.qualname or base.kind not in kinds:
                continue
            resolved = self.resolve(file, base.ref)
            for value, _ in () if isinstance(resolved, _Builtin) else resolved:
                is_class = isinstance(value, VSymbol) and value.kind == "class"
                if (is_class and value != cls) or isinstance(value, VExternal):
                    assert isinstance(value, VSymbol | VExternal)
                    found.append(value)
        return found

    def resolve(
        self, file: _File, ref: Ref, depth: int = 0
    ) -> tuple[tuple[Value, str], ...] | _Builtin:
        """Resolve a reference to ``(value, dispatch)`` pairs, or a builtin marker."""
        if depth > MAX_RESOLUTION_DEPTH:
            return ()
        member = self._member_function(file, ref)
        if member is not None:
            return member
        current: tuple[Value, ...]
        if ref.kind == "this":
            cls = self._class(file, ref.head)
            current = (VInstance(cls, None, None),) if cls is not None else ()
            dispatch = "method"
        elif ref.kind == "new":
            assert ref.inner is not None
            inner = self.resolve(file, ref.inner, depth + 1)
            made: list[Value] = []
            for value, _ in () if isinstance(inner, _Builtin) else inner:
                if isinstance(value, VSymbol) and value.kind == "class":
                    made.append(VInstance(value, None, None))
                elif file.language in _DECLARED_RESULTS:  # ``c.Root().Name()``: Root's result
                    made.extend(self._results(value, 0, depth + 1))
            current = distinct(made)
            dispatch = "method"
        else:
            head = self.lookup(file, ref.scope, ref.head, depth + 1)
            if isinstance(head, _Builtin):
                return head
            current = head
            dispatch = "direct"
        return self.walk_attributes(current, ref.attrs, dispatch, depth)

    # ------------------------------------------------------------- emitting
    def run(self) -> None:
        """Emit every node and fact, in path order."""
        for file in self.files.values():
            self._structure(file)
        for file in self.files.values():
            self._imports(file)
            self._exports(file)
            self._calls(file)
            self._bases(file)
        self._routes()

    def _fact(
        self,
        file: _File,
        source: str,
        target: str,
        relation: str,
        disc: dict[str, Any] | None,
        rng: Range,
        site: str,
    ) -> None:
        adapter = GO_ADAPTER_ID if file.language == "go" else JS_ADAPTER_ID
        self.emit.fact(
            source,
            target,
            relation,
            disc,
            adapter=adapter,
            strategy=STRATEGY,
            path=file.path,
            rng=rng,
            site_kind=site,
        )

    def _lang(self, file: _File) -> str:
        return "go" if file.language == "go" else "js"

    def _structure(self, file: _File) -> None:
        qualified = file.path
        if file.language == "go":
            qualified = self._go_import_path(file.directory) or file.extract.package or file.path
        partial, symbol_partial = partial_marks(file.extract.parse_error)
        file_node = self.emit.node(
            file_id(file.path),
            "file",
            {
                "name": file.path.rsplit("/", 1)[-1],
                "qualified_name": qualified,
                "path": file.path,
                "language": file.language,
                "package": file.extract.package,
                "partial_parse": partial,
            },
        )
        for symbol in file.extract.symbols:
            self.emit.node(
                symbol_id(symbol.kind, file.path, symbol.qualname),
                symbol.kind,
                {
                    "name": symbol.name,
                    "qualified_name": f"{qualified}.{symbol.qualname}",
                    "path": file.path,
                    "range": list(symbol.ranges[0]),
                    "language": file.language,
                    "signature": symbol.signature,
                    "body_terms": symbol.body_terms,
                    "partial_parse": symbol_partial,
                },
            )
        for symbol in file.extract.symbols:
            node_id = symbol_id(symbol.kind, file.path, symbol.qualname)
            parent = file_node
            if symbol.parent is not None:
                owner = self._class(file, symbol.parent)
                if owner is not None:
                    parent = owner.node_id
                else:
                    parent = self._scope_node(file, symbol.parent)
            for rng in symbol.ranges:
                self._fact(file, parent, node_id, "contains", None, rng, "definition")

    def _go_import_path(self, directory: str) -> str | None:
        for root in sorted(self.gomods, key=len, reverse=True):
            module = self.gomods[root]
            if module and (not root or directory == root or directory.startswith(root + "/")):
                rel = directory[len(root) :].lstrip("/") if root else directory
                return f"{module}/{rel}" if rel else module
        return None

    def _scope_node(self, file: _File, scope: str) -> str:
        if not scope:
            return file_id(file.path)
        symbols = file.symbols.get(scope, ())
        wanted = ("class",) if file.kind.get(scope) == "class" else ("method", "function")
        for kind in wanted:
            if any(s.kind == kind for s in symbols):
                return symbol_id(kind, file.path, scope)
        return file_id(file.path)

    def _imports(self, file: _File) -> None:
        source = file_id(file.path)
        for site in file.extract.imports:
            targets: list[str] = []
            if file.language == "go":
                module = self._go_module(site.module)
                if module.path is None:
                    resolution = "external"
                    targets.append(self.emit.external("go", site.module))
                else:
                    resolution = "internal"
                    targets.extend(file_id(p) for p in self.go_files.get(module.path, ()))
            else:
                found = self._js_module(file, site.module)
                if isinstance(found, VModule):
                    resolution = "internal"
                    targets.append(file_id(found.name))
                elif isinstance(found, VExternal):
                    resolution = "external"
                    targets.append(self.emit.external("js", site.module))
                else:
                    resolution = "unresolved"
                    targets.append(self.emit.external("js", site.module))
            disc = {
                "specifier": site.module,
                "binding_kind": site.binding_kind,
                "imported_name": site.name or site.module,
                "phase": site.phase,
                "form": site.form,
                "resolution": resolution,
            }
            for target in targets:
                self._fact(file, source, target, "imports", disc, site.range, "import")

    def _exports(self, file: _File) -> None:
        if file.language == "go":
            return
        module = VModule(file.path, file.path)
        for exported, _, form, rng in file.extract.exports:
            if exported == "*":
                continue
            for value in self._export(module, exported, 0):
                if isinstance(value, VSymbol):
                    disc = {"exported_name": exported, "form": form}
                    self._fact(
                        file, file_id(file.path), value.node_id, "exports", disc, rng, "export"
                    )

    def _target(self, file: _File, value: Value) -> tuple[str, bool] | None:
        if isinstance(value, VSymbol):
            if value.kind in ("function", "method"):
                return value.node_id, False
            if value.kind == "class" and file.language != "go":
                return value.node_id, True
            return None
        if isinstance(value, VExternal):
            return self.emit.external(self._lang(file), value.dotted), False
        return None

    def _calls(self, file: _File) -> None:
        stats = self.call_stats[file.path]
        for site in file.extract.calls:
            if site.ref is None:
                stats["dynamic"] += 1
                continue
            resolved = self.resolve(file, site.ref)
            if isinstance(resolved, _Builtin):
                stats["builtin"] += 1
                continue
            targets: list[tuple[str, bool, str, bool]] = []
            for value, dispatch in resolved:
                node = self._target(file, value)
                if node is not None and all(node[0] != t[0] for t in targets):
                    targets.append((*node, dispatch, isinstance(value, VExternal)))
            if not targets:
                stats["unresolved"] += 1
                continue
            caller = self._scope_node(file, site.caller)
            many = len(targets) > 1
            stats["ambiguous" if many else ("external" if targets[0][3] else "resolved")] += 1
            for target, is_class, dispatch, external in targets:
                resolution = "ambiguous" if many else ("external" if external else "resolved")
                disc = {
                    "invocation": "construct" if (is_class or site.construct) else "call",
                    "dispatch": dispatch,
                    "optional_chaining": site.optional,
                    "resolution": resolution,
                }
                self._fact(file, caller, target, "calls", disc, site.range, site.site)

    def _bases(self, file: _File) -> None:
        for base in file.extract.bases:
            cls = self._class(file, base.cls)
            if cls is None:
                continue
            resolved = self.resolve(file, base.ref)
            for value, _ in () if isinstance(resolved, _Builtin) else resolved:
                target = None
                if isinstance(value, VSymbol) and value.kind == "class":
                    target = value.node_id
                elif isinstance(value, VExternal):
                    target = self.emit.external(self._lang(file), value.dotted)
                if target is not None and target != cls.node_id:
                    disc = {"kind": base.kind}
                    self._fact(file, cls.node_id, target, "inherits", disc, base.range, "base")

    # --------------------------------------------------------------- routes
    def _router(self, file: _File, ref: Ref | None) -> tuple[str, str] | None:
        if ref is None:
            return None
        resolved = self.resolve(file, ref)
        if isinstance(resolved, _Builtin):
            return None
        found: set[tuple[str, str]] = set()
        for value, _ in resolved:
            if isinstance(value, VInstance) and value.external in EXPRESS_TYPES and value.origin:
                found.add(("express", value.origin))
            elif isinstance(value, VInstance) and value.external in GO_ROUTERS:
                found.add(("net_http", value.origin or "net/http"))
            elif isinstance(value, VModule) and value.path is None and value.name in GO_ROUTERS:
                found.add(("net_http", "net/http"))
        return next(iter(found)) if len(found) == 1 else None

    def _prefixes(
        self, origin: str, mounts: dict[str, list[tuple[str, str]]], seen: frozenset[str]
    ) -> list[str]:
        parents = mounts.get(origin)
        if not parents or origin in seen:
            return [""]
        return sorted(
            {
                base + prefix
                for parent, prefix in parents
                for base in self._prefixes(parent, mounts, seen | {origin})
            }
        )

    def _routes(self) -> None:
        mounts: dict[str, list[tuple[str, str]]] = {}
        for file in self.files.values():
            for mount in file.extract.mounts:
                parent = self._router(file, mount.parent)
                child = self._router(file, mount.child)
                if parent is not None and child is not None:
                    mounts.setdefault(child[1], []).append((parent[1], mount.prefix or ""))
        for file in self.files.values():
            for site in file.extract.routes:
                router = self._router(file, site.obj)
                if router is None:
                    continue
                handler = self._handler(file, site.handler, site.handler_ref)
                if handler is None:
                    continue
                framework, origin = router
                for prefix in self._prefixes(origin, mounts, frozenset()):
                    path = normalize_route_path(prefix + site.path)
                    for method in site.methods:
                        self._route(file, method, path, framework, handler, site.range)

    def _handler(self, file: _File, scope: str | None, ref: Ref | None) -> str | None:
        if ref is None:
            return self._scope_node(file, scope or "")
        resolved = self.resolve(file, ref)
        if isinstance(resolved, _Builtin):
            return None
        nodes = {
            v.node_id
            for v, _ in resolved
            if isinstance(v, VSymbol) and v.kind in ("function", "method")
        }
        return next(iter(nodes)) if len(nodes) == 1 else None

    def _route(
        self, file: _File, method: str, path: str, framework: str, handler: str, rng: Range
    ) -> None:
        name = f"{method} {path}"
        route = self.emit.node(
            symbol_id("route", file.path, name),
            "route",
            {
                "name": name,
                "qualified_name": name,
                "path": file.path,
                "language": file.language,
                "method": method,
                "route": path,
                "framework": framework,
            },
        )
        disc = {"method": method, "path": path, "framework": framework, "registration": "call"}
        self._fact(file, route, handler, "handles_route", disc, rng, "route")
