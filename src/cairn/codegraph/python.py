"""The Python adapter: exact local extraction with the standard ``ast`` module.

``extract_python(path, data)`` reads one file and returns a ``FileExtract`` holding its
symbols (classes, functions, methods, module-level variables), lexical scopes with their
name bindings, and the raw sites of imports, calls, base classes, decorators, route
registrations, router mounts and Django URL patterns. Nothing here looks at another
file: resolving a name to its definition is the global phase in ``resolve.py``.
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from cairn.codegraph.deep import run_deep
from cairn.codegraph.flow import owner_scope, store_item
from cairn.codegraph.limits import (
    MAX_DOCSTRING_CHARS,
    MAX_EVAL_SOURCE_CHARS,
    MAX_SIGNATURE_CHARS,
)
from cairn.codegraph.records import (
    RETURN_NAME,
    SELF_PREFIX,
    YIELD_NAME,
    Binding,
    CallSite,
    ClassBase,
    DecoratorSite,
    FileExtract,
    ImportSite,
    MountSite,
    PatternSite,
    Range,
    Ref,
    RouteSite,
    Scope,
    Symbol,
)
from cairn.codegraph.recover import recover_python
from cairn.codegraph.terms import PYTHON_KEYWORDS, body_terms

__all__ = [
    "ADAPTER_ID",
    "ROUTE_DECORATORS",
    "STRATEGY",
    "Positions",
    "bounded",
    "extract_python",
]

ADAPTER_ID = "cairn.python"
STRATEGY = "ast"
ROUTE_DECORATORS = frozenset(
    {"route", "get", "post", "put", "delete", "patch", "head", "options", "trace", "api_route"}
)
ROUTE_CALLS = {
    "add_url_rule": (0, "rule", 2, "view_func"),
    "add_api_route": (0, "path", 1, "endpoint"),
}
MOUNT_CALLS = {"register_blueprint": "url_prefix", "include_router": "prefix"}
CTOR_KWARGS = frozenset({"url_prefix", "prefix"})
URLCONF_NAME = "urlpatterns"
URLCONF_SETTING = "ROOT_URLCONF"
TYPE_CHECKING = "TYPE_CHECKING"
OPAQUE: Binding = ("opaque",)
CONST: Binding = ("const",)
TRACKED_ARGS = frozenset({"ref", "ctor", "partial"})
"""Argument bindings worth recording on a call site (they may carry callables)."""
CALLBACK_BUILTINS = {
    "map": (None, ()),
    "filter": (0, ()),
    "sorted": (-1, ("key",)),
    "min": (-1, ("key",)),
    "max": (-1, ("key",)),
}
"""Builtins that call a function argument: which positional argument (``None``: every
one, ``-1``: none) and which keywords hold it."""
EVAL_BUILTINS = {"eval": "eval", "exec": "exec"}
"""Builtins that run a string as code, with the ``ast.parse`` mode of that code."""
ITER_PROTOCOL = ("__iter__", "__next__")
UNION_TYPES = frozenset({"Optional", "Union"})
"""Annotation forms whose arguments are each a possible type of the value."""
COLLECTION_TYPES = frozenset(
    {
        *("list", "set", "frozenset", "tuple", "deque", "List", "Set", "FrozenSet", "Tuple"),
        *("Deque", "Sequence", "MutableSequence", "AbstractSet", "MutableSet", "Collection"),
        *("Iterable", "Iterator", "Reversible", "Generator", "AsyncIterable", "AsyncIterator"),
    }
)
"""Generic collections whose first type argument is their items' type."""
MAPPING_TYPES = frozenset(
    {"dict", "Dict", "Mapping", "MutableMapping", "defaultdict", "DefaultDict", "OrderedDict"}
)
"""Generic mappings whose second type argument is their values' type."""
CONTEXT_PROTOCOL = ("__enter__", "__exit__")
ASYNC_CONTEXT_PROTOCOL = ("__aenter__", "__aexit__")


def bounded(text: str | None, limit: int) -> str | None:
    """``text`` cut to ``limit`` characters (with an ellipsis), or None."""
    if text is None:
        return None
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


class Positions:
    """Converts ``ast`` positions (UTF-8 byte columns) into 1-based character ranges."""

    def __init__(self, data: bytes) -> None:
        self._lines = data.split(b"\n")
        self._ascii: dict[int, bool] = {}

    def column(self, line: int, byte_col: int) -> int:
        """0-based character column of a 0-based byte column on 1-based ``line``."""
        if line < 1 or line > len(self._lines):
            return byte_col
        ascii_line = self._ascii.get(line)
        if ascii_line is None:
            ascii_line = self._lines[line - 1].isascii()
            self._ascii[line] = ascii_line
        if ascii_line:
            return byte_col
        return len(self._lines[line - 1][:byte_col].decode("utf-8", errors="replace"))

    def lines(self, first: int, last: int) -> str:
        """The source of 1-based lines ``first`` to ``last`` (inclusive), decoded."""
        return b"\n".join(self._lines[max(first - 1, 0) : last]).decode("utf-8", "replace")

    def range_of(self, node: ast.AST) -> Range:
        """The inclusive 1-based range of an ``ast`` node."""
        line = getattr(node, "lineno", 1)
        end_line = getattr(node, "end_lineno", None) or line
        start = self.column(line, getattr(node, "col_offset", 0)) + 1
        end_col = getattr(node, "end_col_offset", None)
        end = self.column(end_line, end_col) if end_col is not None else start
        if (end_line, end) < (line, start):
            end_line, end = line, start
        return (line, start, end_line, max(end, 1))


@dataclass(slots=True)
class _ScopeBuilder:
    qualname: str
    kind: str
    parent: str | None
    owner_class: str | None
    bindings: dict[str, list[Binding]] = field(default_factory=dict)
    globals: set[str] = field(default_factory=set)
    nonlocals: set[str] = field(default_factory=set)
    reaching: dict[str, list[Binding]] = field(default_factory=dict)
    """Per name, the bindings that reach the statement being read (``cairn.codegraph.flow``)."""
    mentions: set[str] = field(default_factory=set)
    """Names read in this (nested) scope: a free one may be changed from here."""
    blocks: int = 0
    """How many branches, loops or ``try`` statements of this scope enclose the statement."""
    loops: int = 0
    """How many loops (comprehensions included) of this scope enclose the statement."""

    def bind(self, name: str, binding: Binding) -> None:
        found = self.bindings.setdefault(name, [])
        if binding not in found:
            found.append(binding)

    def reach(self, name: str, binding: Binding, kill: bool) -> None:
        """Record a binding in straight-line order: an unconditional one replaces the
        bindings that reached this point, a conditional one adds to them."""
        if kill and not self.blocks:
            self.reaching[name] = [binding]
            return
        found = self.reaching.setdefault(name, [])
        if binding not in found:
            found.append(binding)

    def build(self) -> Scope:
        items = tuple((name, tuple(self.bindings[name])) for name in sorted(self.bindings))
        return Scope(self.qualname, self.kind, self.parent, self.owner_class, items)


@dataclass(slots=True)
class _SymbolBuilder:
    qualname: str
    kind: str
    name: str
    parent: str | None
    ranges: list[Range]
    signature: str | None
    docstring: str | None
    body_terms: str | None = None


_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _header_end(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """The last line of a function's header: its last parameter or return annotation."""
    args = node.args
    parts = (*args.posonlyargs, *args.args, args.vararg, *args.kwonlyargs, args.kwarg)
    ends = [item.end_lineno or item.lineno for item in (*parts, node.returns) if item is not None]
    return max(ends, default=node.lineno)


def _const_str(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _arg(call: ast.Call, index: int, keyword: str) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == keyword:
            return kw.value
    if index < len(call.args) and not any(isinstance(a, ast.Starred) for a in call.args[:index]):
        return call.args[index]
    return None


def _kwarg(call: ast.Call, keyword: str) -> ast.expr | None:
    return next((kw.value for kw in call.keywords if kw.arg == keyword), None)


def _str_list(node: ast.AST | None) -> tuple[str, ...] | None:
    if not isinstance(node, ast.List | ast.Tuple | ast.Set):
        return None
    values = [_const_str(item) for item in node.elts]
    if any(value is None for value in values):
        return None
    return tuple(sorted({value.upper() for value in values if value is not None}))


_DISPATCH: dict[type[ast.AST], Callable[[_Extractor, Any], Any]] = {}
"""Per node class, the ``_Extractor`` method that visits it (filled on first sight)."""


class _Extractor(ast.NodeVisitor):
    """One pass over a module's tree, keeping a stack of lexical scopes."""

    def __init__(self, path: str, data: bytes) -> None:
        self.path = path
        self.pos = Positions(data)
        self.scopes: dict[str, _ScopeBuilder] = {}
        self.stack: list[_ScopeBuilder] = []
        self.symbols: dict[tuple[str, str], _SymbolBuilder] = {}
        self.imports: list[ImportSite] = []
        self.calls: list[CallSite] = []
        self.bases: list[ClassBase] = []
        self.decorators: list[DecoratorSite] = []
        self.routes: list[RouteSite] = []
        self.mounts: list[MountSite] = []
        self.patterns: list[PatternSite] = []
        self.constants: list[tuple[str, str]] = []
        self.type_only = 0
        self.deferred = 0
        """How many lambdas enclose the expression: their calls run later."""
        self.stores: list[tuple[str, str, Binding]] = []
        """``name[k] = v`` on a name the storing scope does not bind: (scope, name, item)."""
        self.snapshots: list[tuple[list[Any], int, str, str, tuple[Binding, ...]]] = []
        """Uses that reaching bindings may narrow: (sites, index, scope, name, bindings)."""

    # ------------------------------------------------------------- dispatch
    # ``ast.NodeVisitor`` builds each node's method name and looks it up, and walks the
    # fields through a generator, for every node: on Django that was ~40% of the
    # extraction's time. The walk here is the same, with the method looked up once per
    # node class and the fields read directly.
    def visit(self, node: ast.AST) -> Any:
        """Call the ``visit_<Class>`` method of ``node``, else ``generic_visit``."""
        kind = type(node)
        method = _DISPATCH.get(kind)
        if method is None:
            found: Callable[[_Extractor, Any], Any] = getattr(
                _Extractor, "visit_" + kind.__name__, _Extractor.generic_visit
            )
            _DISPATCH[kind] = method = found
        return method(self, node)

    def generic_visit(self, node: ast.AST) -> None:
        """Visit every child node, field by field in ``_fields`` order (as ``ast`` does)."""
        visit = self.visit
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.AST):
                        visit(item)
            elif isinstance(value, ast.AST):
                visit(value)

    def visit_Constant(self, node: ast.Constant) -> None:
        """A constant holds no nodes (``ast.NodeVisitor``'s version looks for legacy
        ``visit_Num``-style methods, which this class does not have)."""

    # ------------------------------------------------------------- helpers
    @property
    def scope(self) -> _ScopeBuilder:
        return self.stack[-1]

    def _push(self, qualname: str, kind: str, owner: str | None) -> _ScopeBuilder:
        existing = self.scopes.get(qualname)
        if existing is None:
            parent = self.stack[-1].qualname if self.stack else None
            existing = _ScopeBuilder(qualname, kind, parent, owner)
            self.scopes[qualname] = existing
        self.stack.append(existing)
        return existing

    def _qualname(self, name: str) -> str:
        prefix = self.scope.qualname
        return f"{prefix}.{name}" if prefix else name

    def _bind(self, name: str, binding: Binding, kill: bool = True) -> None:
        scope = self.scope
        if name in scope.globals:
            scope.mentions.add(name)  # rebinds the module's name from here
            self.scopes[""].bind(name, binding)
            return
        if name in scope.nonlocals:
            owner = next(
                (
                    outer
                    for outer in reversed(self.stack[:-1])
                    if outer.kind == "function" and name in outer.bindings
                ),
                None,
            )
            if owner is not None:  # rebinds the enclosing function's name from here
                scope.mentions.add(name)
                owner.bind(name, binding)
                return
        scope.bind(name, binding)
        scope.reach(name, binding, kill)

    def _store(self, name: str, item: Binding, levels: int = 1) -> None:
        """``name[key] = value`` (``levels`` subscripts deep): an item binding of the scope
        that binds ``name``."""
        scope = self.scope
        if name in scope.bindings and name not in scope.globals:
            scope.bind(name, item)
            store_item(scope.reaching, name, item, levels, not scope.blocks, ANY_ITEM)
        else:
            self.stores.append((scope.qualname, name, item))

    def _site(self, sites: list[Any], site: CallSite | DecoratorSite) -> None:
        """Append a call or decorator site, noting the bindings of its name that reach it."""
        sites.append(site)
        ref = site.ref
        if ref is None or ref.kind != "name" or self.deferred:
            return
        scope = self.scope
        reaching = scope.reaching.get(ref.head)
        if reaching is None or scope.loops or ref.head in scope.globals:
            return
        self.snapshots.append((sites, len(sites) - 1, scope.qualname, ref.head, tuple(reaching)))

    def _symbol(
        self,
        qualname: str,
        kind: str,
        name: str,
        node: ast.AST,
        signature: str | None = None,
        docstring: str | None = None,
    ) -> None:
        parent = self.scope.qualname or None
        key = (kind, qualname)
        rng = self.pos.range_of(node)
        found = self.symbols.get(key)
        if found is None:
            self.symbols[key] = _SymbolBuilder(
                qualname, kind, name, parent, [rng], signature, docstring
            )
        elif rng not in found.ranges:
            found.ranges.append(rng)

    def ref(self, node: ast.AST | None) -> Ref | None:
        """A ``Ref`` for a name/attribute chain, ``super().x`` or ``Call().x``; else None."""
        attrs: list[str] = []
        while True:
            if isinstance(node, ast.Attribute):
                attrs.append(node.attr)
                node = node.value
            elif isinstance(node, ast.Subscript):
                attrs.append(subscript_key(node.slice) or _named_key(node.slice))
                node = node.value
            else:
                break
        attrs.reverse()
        here = self.scope.qualname
        if isinstance(node, ast.Name):
            return Ref("name", node.id, here, tuple(attrs))
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name) and node.func.id == "super" and attrs:
                return Ref("super", "", here, tuple(attrs))
            inner = self.ref(node.func)
            if inner is not None:
                return Ref("new", "", here, tuple(attrs), inner)
        return None

    def typed(self, annotation: ast.expr | None) -> list[Binding]:
        """``("typed", ref)`` bindings for the classes an annotation names: ``User``,
        ``m.User``, ``"User"``, ``Optional[User]``, ``User | None``, ``Union[A, B]``
        (the resolver keeps only in-repository classes); ``("typed_items", ref)`` for a
        collection of them (``list[User]``, ``Iterable["User"]``, ``tuple[User, ...]``),
        whose items are such instances; ``("typed_values", ref)`` for a mapping to them
        (``dict[str, User]``)."""
        if annotation is None:
            return []
        if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
            parsed = _parse_quietly(annotation.value, "eval")
            return self.typed(parsed.body) if isinstance(parsed, ast.Expression) else []
        if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
            return [*self.typed(annotation.left), *self.typed(annotation.right)]
        if isinstance(annotation, ast.Subscript):
            head = annotation.value
            name = head.attr if isinstance(head, ast.Attribute) else getattr(head, "id", None)
            inner = annotation.slice
            parts = inner.elts if isinstance(inner, ast.Tuple) else [inner]
            if not parts:  # ``tuple[()]``: no type argument names a class
                return []
            if name in COLLECTION_TYPES:  # the first argument: the items' type
                return self._typed_as("typed_items", parts[0])
            if name in MAPPING_TYPES and len(parts) == 2:  # the second: the values' type
                return self._typed_as("typed_values", parts[1])
            if name not in UNION_TYPES:
                return []
            return [binding for part in parts for binding in self.typed(part)]
        if isinstance(annotation, ast.Name | ast.Attribute):
            ref = self.ref(annotation)
            return [("typed", ref)] if ref is not None else []
        return []

    def _typed_as(self, tag: str, argument: ast.expr) -> list[Binding]:
        """``(tag, ref)`` for each class the type argument ``argument`` names."""
        return [(tag, binding[1]) for binding in self.typed(argument) if binding[0] == "typed"]

    # ---------------------------------------------------------- statements
    def visit_Module(self, node: ast.Module) -> None:
        self._push("", "module", None)
        self.generic_visit(node)
        self.stack.pop()

    def _visit_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        outer = self.scope
        kind = "method" if outer.kind == "class" else "function"
        qualname = self._qualname(node.name)
        prefix = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
        signature = f"{prefix} {node.name}({ast.unparse(node.args)})"
        if node.returns is not None:
            signature += f" -> {ast.unparse(node.returns)}"
        doc = bounded(ast.get_docstring(node), MAX_DOCSTRING_CHARS)
        self._symbol(qualname, kind, node.name, node, bounded(signature, MAX_SIGNATURE_CHARS), doc)
        self._body_terms(kind, qualname, node)
        applied = tuple(self.ref(deco) for deco in node.decorator_list)
        if applied and all(ref is not None for ref in applied):
            self._bind(node.name, ("decorated", qualname, applied))
        else:
            self._bind(node.name, ("def", qualname))
        self._decorators(qualname, node.decorator_list)
        for default in (*node.args.defaults, *node.args.kw_defaults):
            if default is not None:
                self.visit(default)
        owner = outer.qualname if kind == "method" else outer.owner_class
        scope = self._push(qualname, "function", owner)
        self._bind_params(scope, node, kind == "method")
        for binding in self.typed(node.returns):  # what it returns is of that class too
            scope.bind(RETURN_NAME, binding)
        for stmt in node.body:
            self.visit(stmt)
        self.stack.pop()

    visit_FunctionDef = _visit_function
    visit_AsyncFunctionDef = _visit_function

    def _bind_params(
        self, scope: _ScopeBuilder, node: ast.FunctionDef | ast.AsyncFunctionDef, method: bool
    ) -> None:
        args = node.args
        positional = [*args.posonlyargs, *args.args]
        with_default = positional[len(positional) - len(args.defaults) :]
        defaults = {a.arg: d for a, d in zip(with_default, args.defaults, strict=True)}
        for kwonly, default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
            if default is not None:
                defaults[kwonly.arg] = default
        decorators = {d.id for d in node.decorator_list if isinstance(d, ast.Name)}
        first = positional[0].arg if positional else None
        for index, param in enumerate((*positional, *args.kwonlyargs)):
            name = param.arg
            if method and name == first and "staticmethod" not in decorators:
                tag = "cls" if "classmethod" in decorators or name == "cls" else "self"
                assert scope.owner_class is not None
                scope.bind(name, (tag, scope.owner_class))
                continue
            default = defaults.get(name)
            default_value = self._value(default) if default is not None else None
            position = index if index < len(positional) else -1
            scope.bind(name, ("param", scope.qualname, position, name, default_value))
            for binding in self.typed(param.annotation):
                scope.bind(name, binding)
        if args.vararg is not None:  # ``*rest``: the positional arguments past the named ones
            scope.bind(args.vararg.arg, ("varargs", scope.qualname, len(positional)))
        if args.kwarg is not None:
            scope.bind(args.kwarg.arg, OPAQUE)
        scope.reaching = {name: list(found) for name, found in scope.bindings.items()}

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self.deferred += 1
        self.visit(node.body)
        self.deferred -= 1

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        qualname = self._qualname(node.name)
        bases = ", ".join(ast.unparse(base) for base in node.bases)
        signature = bounded(f"class {node.name}({bases})", MAX_SIGNATURE_CHARS)
        doc = bounded(ast.get_docstring(node), MAX_DOCSTRING_CHARS)
        self._symbol(qualname, "class", node.name, node, signature, doc)
        self._body_terms("class", qualname, node)
        self._bind(node.name, ("def", qualname))
        self._decorators(qualname, node.decorator_list)
        for base in node.bases:
            ref = self.ref(_unsubscripted(base))  # Generic[T] extends Generic
            if ref is not None:
                self.bases.append(ClassBase(qualname, ref, "extends", self.pos.range_of(base)))
            self.visit(base)
        for kw in node.keywords:
            self.visit(kw.value)
        self._push(qualname, "class", qualname)
        for stmt in node.body:
            self.visit(stmt)
        self.stack.pop()

    def _body_terms(
        self, kind: str, qualname: str, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
    ) -> None:
        """Record the words of the body after its docstring (a name's first definition).

        A class's own words are its statements and the names of its methods and nested
        classes: their bodies are theirs (each is a symbol with its own words).
        """
        found = self.symbols.get((kind, qualname))
        if found is None or len(found.ranges) > 1:
            return
        documented = ast.get_docstring(node, clean=False) is not None
        body = node.body[1:] if documented else node.body
        if not body:
            return
        if isinstance(node, ast.ClassDef):
            parts = [
                stmt.name if isinstance(stmt, _DEFINITIONS) else self._source(stmt) for stmt in body
            ]
            text = "\n".join(parts)
        else:  # from the line after the docstring or the header: comments count too
            header = node.body[0].end_lineno if documented else _header_end(node)
            first = min((header or node.lineno) + 1, body[0].lineno)
            text = self.pos.lines(first, node.end_lineno or body[-1].lineno)
        found.body_terms = body_terms(text, PYTHON_KEYWORDS)

    def _source(self, stmt: ast.stmt) -> str:
        """The source lines of one statement."""
        return self.pos.lines(stmt.lineno, stmt.end_lineno or stmt.lineno)

    def _decorators(self, target: str, decorators: Sequence[ast.expr]) -> None:
        """Each decorator of ``target``: a ``decorates`` site, its explicit call
        (``@make(...)``, an ordinary call from the enclosing scope), and its application
        to the definition (``S = D(S)``: an implicit call of ``D``, or of what
        ``make(...)`` returned)."""
        for deco in decorators:
            call = deco if isinstance(deco, ast.Call) else None
            func = call.func if call is not None else deco
            ref = self.ref(func)
            rng = self.pos.range_of(deco)
            if ref is not None:
                self._site(self.decorators, DecoratorSite(target, ref, ref.dotted(), rng))
            if call is not None:
                self.visit(call)
                if isinstance(func, ast.Attribute) and func.attr in ROUTE_DECORATORS:
                    self._route_decorator(target, call, func, rng)
            applied = self.ref(deco)
            if applied is not None:
                site = CallSite(self.scope.qualname, applied, rng, implicit=True, site="decorator")
                self._site(self.calls, site)

    def _route_decorator(
        self, target: str, call: ast.Call, func: ast.Attribute, rng: Range
    ) -> None:
        path = _const_str(_arg(call, 0, "rule")) or _const_str(_arg(call, 0, "path"))
        if path is None:
            return
        methods = _str_list(_kwarg(call, "methods")) or ()
        self.routes.append(
            RouteSite(
                self.ref(func.value), func.attr, path, methods, target, None, "decorator", rng
            )
        )

    def visit_Global(self, node: ast.Global) -> None:
        self.scope.globals.update(node.names)

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        self.scope.globals.difference_update(node.names)
        self.scope.nonlocals.update(node.names)

    def visit_Import(self, node: ast.Import) -> None:
        phase = "type" if self.type_only else "runtime"
        rng = self.pos.range_of(node)
        for alias in node.names:
            self.imports.append(
                ImportSite(alias.name, 0, None, "module", phase, "static", rng, self.scope.qualname)
            )
            if alias.asname:
                self._bind(alias.asname, ("import", alias.name, 0, None))
            else:
                head = alias.name.split(".", 1)[0]
                self._bind(head, ("import", head, 0, None))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        phase = "type" if self.type_only else "runtime"
        rng = self.pos.range_of(node)
        module = node.module or ""
        for alias in node.names:
            kind = "wildcard" if alias.name == "*" else "named"
            self.imports.append(
                ImportSite(
                    module, node.level, alias.name, kind, phase, "static", rng, self.scope.qualname
                )
            )
            if alias.name != "*":
                self._bind(alias.asname or alias.name, ("import", module, node.level, alias.name))

    def visit_If(self, node: ast.If) -> None:
        test = node.test
        guarded = (isinstance(test, ast.Name) and test.id == TYPE_CHECKING) or (
            isinstance(test, ast.Attribute) and test.attr == TYPE_CHECKING
        )
        self.visit(test)
        scope = self.scope
        scope.blocks += 1
        if guarded:
            self.type_only += 1
        for stmt in node.body:
            self.visit(stmt)
        if guarded:
            self.type_only -= 1
        for stmt in node.orelse:
            self.visit(stmt)
        scope.blocks -= 1

    def _block(self, node: ast.AST, loop: bool = False) -> None:
        """Visit a statement whose parts may run zero or several times."""
        scope = self.scope
        scope.blocks += 1
        scope.loops += loop
        self.generic_visit(node)
        scope.blocks -= 1
        scope.loops -= loop

    def visit_Try(self, node: ast.Try) -> None:
        self._block(node)

    def visit_TryStar(self, node: ast.TryStar) -> None:
        self._block(node)

    def visit_Match(self, node: ast.Match) -> None:
        self._block(node)

    def visit_While(self, node: ast.While) -> None:
        self._block(node, loop=True)

    def visit_AsyncFor(self, node: ast.AsyncFor) -> None:
        self._block(node, loop=True)

    def _comprehension(self, node: ast.AST) -> None:
        self._block(node, loop=True)

    visit_ListComp = _comprehension
    visit_SetComp = _comprehension
    visit_DictComp = _comprehension
    visit_GeneratorExp = _comprehension

    def _value(self, value: ast.expr | None) -> Binding:
        """The binding of an expression's value: alias, call result, literal or opaque."""
        if isinstance(value, ast.Call):
            ref = self.ref(value.func)
            if ref is None:
                return OPAQUE
            if (
                value.args
                and _call_name(value) == PARTIAL
                and isinstance(value.args[0], ast.Name | ast.Attribute)
                and (wrapped := self.ref(value.args[0])) is not None
            ):
                return ("partial", ref, wrapped)
            if isinstance(value.func, ast.Name) and value.func.id in ITEM_BUILTINS:
                items_of = self._items_of(value, value.func.id, ref)
                if items_of is not None:
                    return items_of
            kwargs = tuple(
                sorted(
                    (kw.arg, text)
                    for kw in value.keywords
                    if kw.arg in CTOR_KWARGS and (text := _const_str(kw.value)) is not None
                )
            )
            positional = self._call_args(value)[0]
            return ("ctor", ref, kwargs, positional) if positional else ("ctor", ref, kwargs)
        if isinstance(value, ast.Name | ast.Attribute | ast.Subscript):
            ref = self.ref(value)
            # An item by a constant key or slice is an alias; by an unknown key it would
            # make every later call through the name look direct: left opaque.
            if ref is None or any(attr.startswith(KEY_PREFIXES) for attr in ref.attrs):
                return OPAQUE
            return ("ref", ref)
        if isinstance(value, ast.Constant | ast.JoinedStr | ast.Lambda):
            return CONST
        if isinstance(value, ast.List | ast.Tuple) and not any(
            isinstance(item, ast.Starred) for item in value.elts
        ):
            return ("items", tuple((f"[{i}]", self._value(e)) for i, e in enumerate(value.elts)))
        if isinstance(value, ast.Dict):
            keys = [subscript_key(key) if key is not None else None for key in value.keys]
            if all(key is not None for key in keys):
                return (
                    "items",
                    tuple(
                        (str(k), self._value(v)) for k, v in zip(keys, value.values, strict=True)
                    ),
                )
        return OPAQUE

    def _items_of(self, call: ast.Call, builtin: str, ref: Ref) -> Binding | None:
        """``("items_of", ref, arguments)`` for a call of an ``ITEM_BUILTINS`` name, when
        its items can be told from its arguments: ``map`` needs a function among them,
        the others no keywords and no ``*spread``."""
        arguments = tuple(self._value(arg) for arg in call.args if not isinstance(arg, ast.Starred))
        if builtin == MAP:
            known = any(argument[0] == "ref" for argument in arguments)
        else:
            known = bool(arguments) and not call.keywords and len(arguments) == len(call.args)
        return ("items_of", ref, arguments) if known else None

    def _assign_value(self, targets: Sequence[ast.expr], value: ast.expr | None) -> None:
        if value is not None:
            self.visit(value)
        module_level = self.scope.kind == "module"
        for target in targets:
            if isinstance(target, ast.Name):
                self._bind_assigned(target, value, module_level)
            elif isinstance(target, ast.Tuple | ast.List):
                self._destructure(target, value, module_level)
            else:
                self._self_attribute(target, value)
                if not isinstance(target, ast.Starred):
                    self.visit(target)

    def _destructure(
        self, target: ast.Tuple | ast.List, value: ast.expr | None, module: bool
    ) -> None:
        """Bind ``a, (b, *c) = x, (y, z, w)`` element-wise when the shapes match exactly."""
        elements: list[ast.expr | None] = [None] * len(target.elts)
        starred: ast.expr | None = None
        literal = isinstance(value, ast.Tuple | ast.List) and not any(
            isinstance(item, ast.Starred) for item in value.elts
        )
        stars = [i for i, item in enumerate(target.elts) if isinstance(item, ast.Starred)]
        if literal and isinstance(value, ast.Tuple | ast.List) and len(stars) <= 1:
            items = value.elts
            if not stars and len(items) == len(target.elts):
                elements = list(items)
            elif stars and len(items) >= len(target.elts) - 1:
                star = stars[0]
                after = len(target.elts) - star - 1
                elements = [*items[:star], None, *(items[len(items) - after :] if after else [])]
                starred = ast.List(list(items[star : len(items) - after]), ast.Load())
        for element, item in zip(target.elts, elements, strict=True):
            if isinstance(element, ast.Name):
                self._bind_assigned(element, item, module)
            elif isinstance(element, ast.Tuple | ast.List):
                self._destructure(element, item, module)
            elif isinstance(element, ast.Starred) and isinstance(element.value, ast.Name):
                self._bind_assigned(element.value, starred, module)
            else:
                self._self_attribute(element, item)
                self.visit(element)

    def _self_attribute(self, target: ast.expr, value: ast.expr | None) -> None:
        """Record ``self.attr = value`` in a method as a class-scope instance binding.

        Also ``name[key] = value`` for a constant key and a name bound in this scope: an
        item binding added to the name (a container may hold it).
        """
        if isinstance(target, ast.Subscript):
            item: Binding = self._value(value)
            node: ast.expr = target
            levels = 0
            while isinstance(node, ast.Subscript):
                item = ("items", ((subscript_key(node.slice) or ANY_ITEM, item),))
                node = node.value
                levels += 1
            if isinstance(node, ast.Name):
                self._store(node.id, item, levels)
            return
        if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)):
            return
        scope = self.scope
        if scope.kind != "function" or scope.owner_class is None:
            return
        if ("self", scope.owner_class) not in scope.bindings.get(target.value.id, ()):
            return
        owner = self.scopes.get(scope.owner_class)
        if owner is not None and scope.parent == owner.qualname:
            owner.bind(SELF_PREFIX + target.attr, self._value(value))

    def _bind_assigned(self, target: ast.Name, value: ast.expr | None, module: bool) -> None:
        name = target.id
        binding = self._value(value)
        if isinstance(value, ast.Constant) and type(value.value) in (int, str):
            binding = ("literal", subscript_key(value))  # the key it names as a subscript
        if module and not (name.startswith("__") and name.endswith("__")):
            self._symbol(name, "variable", name, target)
            if binding in (OPAQUE, CONST):
                binding = ("var", name)
            elif binding[0] == "literal":  # its node, and the key it names
                binding = ("var", name, binding[1])
            if name == URLCONF_SETTING and (text := _const_str(value)) is not None:
                self.constants.append((name, text))
        self._bind(name, binding)

    def visit_Assign(self, node: ast.Assign) -> None:
        self._assign_value(node.targets, node.value)
        if self.scope.kind == "module" and any(
            isinstance(t, ast.Name) and t.id == URLCONF_NAME for t in node.targets
        ):
            self._urlpatterns(node.value, "", False)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self.visit(node.annotation)
        target = node.target
        if node.value is not None or not isinstance(target, ast.Name):
            self._assign_value([target], node.value)
        # else a bare ``name: T`` binds nothing at run time: only its declared type below.
        typed = self.typed(node.annotation)
        if not typed:
            return
        scope = self.scope
        if isinstance(target, ast.Name):
            if scope.kind == "class":  # a field (``user: User`` in a dataclass) on instances
                for binding in typed:
                    scope.bind(SELF_PREFIX + target.id, binding)
            if scope.kind != "class" or node.value is not None:
                for binding in typed:  # the same statement: adds to its value's binding
                    self._bind(target.id, binding, kill=node.value is None)
        elif (
            isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and scope.kind == "function"
            and scope.owner_class is not None
            and ("self", scope.owner_class) in scope.bindings.get(target.value.id, ())
        ):
            owner = self.scopes.get(scope.owner_class)
            if owner is not None and scope.parent == owner.qualname:
                for binding in typed:
                    owner.bind(SELF_PREFIX + target.attr, binding)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.visit(node.value)
        target = node.target
        if isinstance(target, ast.Name):
            if self.scope.kind == "module" and target.id == URLCONF_NAME:
                self._urlpatterns(node.value, "", False)
            if self.scope.kind != "module":
                self._bind(target.id, ("opaque",))
        else:
            self.visit(target)

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load):
            if self.scope.kind != "module":
                self.scope.mentions.add(node.id)
        else:
            self._bind(node.id, ("opaque",))

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.name:
            self._bind(node.name, ("opaque",))
        self.generic_visit(node)

    def visit_Return(self, node: ast.Return) -> None:
        if node.value is not None:
            self.visit(node.value)
        if self.scope.kind == "function":
            self.scope.bind(RETURN_NAME, self._value(node.value) if node.value else CONST)

    def visit_Yield(self, node: ast.Yield) -> None:
        if node.value is not None:
            self.visit(node.value)
        if self.scope.kind == "function":
            self.scope.bind(YIELD_NAME, self._value(node.value) if node.value else CONST)

    def visit_Raise(self, node: ast.Raise) -> None:
        if isinstance(node.exc, ast.Name | ast.Attribute):
            ref = self.ref(node.exc)
            rng = self.pos.range_of(node.exc)
            self._site(self.calls, CallSite(self.scope.qualname, ref, rng, implicit=True))
        self.generic_visit(node)

    def visit_For(self, node: ast.For) -> None:
        base: ast.expr = node.iter
        rng = self.pos.range_of(node.iter)
        for attr in ITER_PROTOCOL:
            func = ast.Attribute(base, attr, ast.Load())
            ref = self.ref(func)
            if ref is not None:
                self._site(self.calls, CallSite(self.scope.qualname, ref, rng, implicit=True))
            base = ast.Call(func, [], [])
        self.visit(node.iter)
        scope = self.scope
        scope.blocks += 1  # the target is bound, and the body runs, zero or more times
        iterated = self._value(node.iter)
        if isinstance(node.target, ast.Name):
            self._bind(node.target.id, ("iter", iterated))
        elif isinstance(node.target, ast.Tuple) and all(
            isinstance(element, ast.Name) for element in node.target.elts
        ):  # ``for k, v in pairs``: each name one element of what each step yields
            for index, element in enumerate(node.target.elts):
                assert isinstance(element, ast.Name)
                self._bind(element.id, ("iter", iterated, f"[{index}]"))
        else:
            self.visit(node.target)
        scope.loops += 1
        for stmt in node.body:
            self.visit(stmt)
        scope.loops -= 1
        for stmt in node.orelse:
            self.visit(stmt)
        scope.blocks -= 1

    def _visit_with(self, node: ast.With | ast.AsyncWith, protocol: tuple[str, str]) -> None:
        """``with E as x``: implicit calls of ``E``'s enter and exit methods, and ``x``
        bound to what the enter method returns."""
        enter, _ = protocol
        for item in node.items:
            expr = item.context_expr
            rng = self.pos.range_of(expr)
            for attr in protocol:
                ref = self.ref(ast.Attribute(expr, attr, ast.Load()))
                if ref is not None:
                    self._site(self.calls, CallSite(self.scope.qualname, ref, rng, implicit=True))
            self.visit(expr)
            target = item.optional_vars
            if isinstance(target, ast.Name):
                entered = ast.Call(ast.Attribute(expr, enter, ast.Load()), [], [])
                self._bind(target.id, self._value(entered))
            elif target is not None:
                self.visit(target)
        for stmt in node.body:
            self.visit(stmt)

    def visit_With(self, node: ast.With) -> None:
        self._visit_with(node, CONTEXT_PROTOCOL)

    def visit_AsyncWith(self, node: ast.AsyncWith) -> None:
        self._visit_with(node, ASYNC_CONTEXT_PROTOCOL)

    def _call_args(
        self, node: ast.Call
    ) -> tuple[tuple[Binding, ...], tuple[tuple[str, Binding], ...]]:
        args: list[Binding] = []
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                break
            args.append(self._value(arg))
        while args and args[-1][0] not in TRACKED_ARGS:
            args.pop()
        keywords = tuple(
            (kw.arg, binding)
            for kw in node.keywords
            if kw.arg is not None and (binding := self._value(kw.value))[0] in TRACKED_ARGS
        )
        if not any(binding[0] in TRACKED_ARGS for binding in args):
            args = []
        return tuple(args), keywords

    def visit_Call(self, node: ast.Call) -> None:
        ref = self.ref(node.func)
        args, keywords = self._call_args(node) if ref is not None else ((), ())
        site = CallSite(
            self.scope.qualname, ref, self.pos.range_of(node), args=args, keywords=keywords
        )
        self._site(self.calls, site)
        if isinstance(node.func, ast.Attribute):
            self._special_call(node, node.func)
            if node.func.attr == UPDATE_METHOD and isinstance(node.func.value, ast.Name):
                self._update(node.func.value.id, node)
        elif isinstance(node.func, ast.Name) and node.func.id == "__import__":
            self._dynamic_import(node)
        elif isinstance(node.func, ast.Name) and node.func.id in CALLBACK_BUILTINS:
            self._callbacks(node, node.func)
        elif isinstance(node.func, ast.Name) and node.func.id in EVAL_BUILTINS:
            self._evaluated(node, node.func)
        self.generic_visit(node)

    def _update(self, name: str, node: ast.Call) -> None:
        """``d.update({"k": v})`` or ``d.update(k=v)``: a store of each item, in order."""
        pairs: list[tuple[str, ast.expr]] = []
        if node.args:
            source = node.args[0]
            if len(node.args) > 1 or not isinstance(source, ast.Dict):
                return
            for key_node, value in zip(source.keys, source.values, strict=True):
                if key_node is None:
                    return  # ``**other``: its keys are unknown
                pairs.append((subscript_key(key_node) or ANY_ITEM, value))
        for kw in node.keywords:
            if kw.arg is None:
                return
            pairs.append((f"[{kw.arg!r}]", kw.value))
        for key, item in pairs:
            self._store(name, ("items", ((key, self._value(item)),)))

    def _evaluated(self, node: ast.Call, func: ast.Name) -> None:
        """``eval("f()")`` / ``exec("f()")`` with a literal: the calls in the text, made
        from here (emitted only if ``func`` does resolve to that builtin)."""
        source = node.args[0] if node.args else None
        text = _const_str(source)
        if source is None or text is None or len(text) > MAX_EVAL_SOURCE_CHARS:
            return
        tree = _parse_quietly(text, EVAL_BUILTINS[func.id])
        if tree is None:
            return  # not code Python would run: nothing is called
        rng = self.pos.range_of(source)
        via = self.ref(func)
        for inner in ast.walk(tree):
            if isinstance(inner, ast.Call) and (ref := self.ref(inner.func)) is not None:
                self._site(self.calls, CallSite(self.scope.qualname, ref, rng, via=via))

    def _callbacks(self, node: ast.Call, func: ast.Name) -> None:
        """``map(f, xs)``, ``sorted(xs, key=f)``: the builtin calls ``f`` for the caller
        (emitted only if ``func`` does resolve to that builtin, and ``f`` in the repository)."""
        index, keywords = CALLBACK_BUILTINS[func.id]
        passed = [
            arg
            for i, arg in enumerate(node.args)
            if not isinstance(arg, ast.Starred) and (index is None or i == index)
        ]
        passed += [kw.value for kw in node.keywords if kw.arg in keywords]
        via = self.ref(func)
        for arg in passed:
            if isinstance(arg, ast.Name | ast.Attribute) and (ref := self.ref(arg)) is not None:
                rng = self.pos.range_of(arg)
                site = CallSite(self.scope.qualname, ref, rng, implicit=True, site="callback")
                self._site(self.calls, replace(site, via=via))

    # -------------------------------------------------------- special calls
    def _special_call(self, node: ast.Call, func: ast.Attribute) -> None:
        attr = func.attr
        rng = self.pos.range_of(node)
        if attr == "import_module":
            self._dynamic_import(node)
        elif attr in ROUTE_CALLS:
            path_i, path_kw, view_i, view_kw = ROUTE_CALLS[attr]
            path = _const_str(_arg(node, path_i, path_kw))
            view = self.ref(_arg(node, view_i, view_kw))
            if path is not None and view is not None:
                methods = _str_list(_kwarg(node, "methods")) or ()
                obj = self.ref(func.value)
                self.routes.append(RouteSite(obj, attr, path, methods, None, view, "call", rng))
        elif attr in MOUNT_CALLS and node.args:
            prefix_node = _kwarg(node, MOUNT_CALLS[attr])
            prefix = _const_str(prefix_node)
            self.mounts.append(MountSite(self.ref(func.value), self.ref(node.args[0]), prefix, rng))

    def _dynamic_import(self, node: ast.Call) -> None:
        name = _const_str(node.args[0]) if node.args else None
        if name is None or name.startswith("."):
            return
        phase = "type" if self.type_only else "runtime"
        self.imports.append(
            ImportSite(
                name,
                0,
                None,
                "module",
                phase,
                "dynamic",
                self.pos.range_of(node),
                self.scope.qualname,
            )
        )

    def _urlpatterns(self, value: ast.AST, prefix: str, regex: bool) -> None:
        for element in _pattern_elements(value):
            if not isinstance(element, ast.Call):
                continue
            func = self.ref(element.func)
            route = _const_str(element.args[0]) if element.args else None
            if func is None or route is None:
                continue
            is_regex = regex or func.dotted().rsplit(".", 1)[-1] in ("re_path", "url")
            full = prefix + route
            target = element.args[1] if len(element.args) > 1 else _kwarg(element, "view")
            if target is None:
                continue
            rng = self.pos.range_of(element)
            if isinstance(target, ast.Call) and _call_name(target) == "include":
                inner = target.args[0] if target.args else None
                if isinstance(inner, ast.Tuple) and inner.elts:
                    inner = inner.elts[0]
                if isinstance(inner, ast.List | ast.Tuple | ast.BinOp):
                    self._urlpatterns(inner, full, is_regex)
                    continue
                module = _const_str(inner)
                include_ref = None if module is not None else self.ref(inner)
                self.patterns.append(
                    PatternSite(func, full, is_regex, None, module, include_ref, rng)
                )
                continue
            if isinstance(target, ast.Call):
                view_ref = self.ref(target.func)
                if view_ref is not None and view_ref.attrs and view_ref.attrs[-1] == "as_view":
                    view_ref = Ref(
                        view_ref.kind, view_ref.head, view_ref.scope, view_ref.attrs[:-1]
                    )
                else:
                    view_ref = None
            else:
                view_ref = self.ref(target)
            if view_ref is not None:
                self.patterns.append(PatternSite(func, full, is_regex, view_ref, None, None, rng))

    # -------------------------------------------------------------- output
    def _finish_flow(self) -> None:
        """Give each item store to the scope that binds its name, then narrow each use
        its reaching bindings may narrow soundly (``cairn.codegraph.flow``)."""
        if not self.stores and not self.snapshots:
            return
        scopes = self.scopes
        bindings = {q: scope.bindings for q, scope in scopes.items()}
        kinds = {q: scope.kind for q, scope in scopes.items()}
        parents = {q: scope.parent for q, scope in scopes.items()}
        for qualname, name, item in self.stores:
            owner = owner_scope(name, parents[qualname], bindings, kinds, parents)
            if owner is not None:
                scopes[owner].bind(name, item)
        if not self.snapshots:
            return
        changed: dict[str, set[str]] = {}  # per scope, names a nested scope may change
        for qualname, scope in scopes.items():
            if scope.kind == "module":
                continue
            for name in scope.mentions | scope.nonlocals:
                local = name in scope.bindings and name not in scope.nonlocals
                if local and name not in scope.globals:
                    continue
                start = "" if name in scope.globals else parents[qualname]
                owner = owner_scope(name, start, bindings, kinds, parents)
                if owner is not None:
                    changed.setdefault(owner, set()).add(name)
        for sites, index, qualname, name, reaching in self.snapshots:
            if name in changed.get(qualname, ()):
                continue
            if set(reaching) == set(bindings[qualname][name]):
                continue
            site = sites[index]
            sites[index] = replace(site, ref=replace(site.ref, reaching=reaching))

    def result(self) -> FileExtract:
        self._finish_flow()
        symbols = tuple(
            Symbol(
                s.qualname,
                s.kind,
                s.name,
                s.parent,
                tuple(s.ranges),
                s.signature,
                s.docstring,
                s.body_terms,
            )
            for s in sorted(self.symbols.values(), key=lambda s: (s.qualname, s.kind))
        )
        scopes = tuple(self.scopes[key].build() for key in sorted(self.scopes))
        return FileExtract(
            path=self.path,
            language="python",
            symbols=symbols,
            scopes=scopes,
            imports=tuple(self.imports),
            calls=tuple(self.calls),
            bases=tuple(self.bases),
            decorators=tuple(self.decorators),
            routes=tuple(self.routes),
            mounts=tuple(self.mounts),
            patterns=tuple(self.patterns),
            constants=tuple(sorted(set(self.constants))),
        )


def _parse_quietly(text: str, mode: str) -> ast.AST | None:
    """``text`` parsed as code (a string annotation, a literal run by ``eval``), or None
    when it is none; the compiler's warnings about it (``1if x``) are not the user's."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return ast.parse(text, mode=mode)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None


def _unsubscripted(node: ast.expr) -> ast.expr:
    """``node`` without its outer subscripts (``Mapping[str, int]`` -> ``Mapping``)."""
    while isinstance(node, ast.Subscript):
        node = node.value
    return node


PARTIAL = "partial"
"""``functools.partial(f, ...)``: calling the result calls ``f`` (checked when resolved)."""

MAP = "map"
"""``map(f, xs)``: iterating the result gives what ``f`` returns (when ``map`` is the builtin)."""

ITEM_BUILTINS = frozenset(
    {MAP, "enumerate", "zip", "list", "tuple", "set", "frozenset", "sorted", "reversed", "iter"}
)
"""Builtins whose result's items are made of their arguments (when they resolve to the
builtin): ``map(f, xs)`` gives what ``f`` returns, ``enumerate(xs)`` ``(i, x)``,
``zip(a, b)`` ``(a_i, b_i)``, the others the items themselves."""

UPDATE_METHOD = "update"
"""``d.update(...)``: a dict's items stored by one call."""

DEEP_RECURSION_LIMIT = 20_000
"""The recursion limit for a file whose tree is too deep for the default one."""

DEEP_STACK_BYTES = 256 * 1024 * 1024
"""The stack of the thread that reads such a file: room for ``DEEP_RECURSION_LIMIT``
frames of the visitor and of the C code it calls (~12 KiB each at most). It is address
space: only the pages a deep file touches are ever in memory."""

ANY_ITEM = "[*]"
"""The pseudo-attribute of a subscript whose key is not a constant: any value of a dict
(a ``dispatch: dynamic`` call), or an in-repository class itself (``Box[int]()``)."""


NAMED_KEY = "[="
"""Prefix of the pseudo-attribute of a subscript by a name (``[=KEY]`` for ``d[KEY]``):
the resolver reads the constant the name holds, else it is ``ANY_ITEM``."""

KEY_PREFIXES = (ANY_ITEM, NAMED_KEY)
"""Pseudo-attributes whose key is not known where they are written."""


def _named_key(node: ast.expr) -> str:
    """The pseudo-attribute of a subscript by a key that is not a literal."""
    if isinstance(node, ast.Name):
        return f"{NAMED_KEY}{node.id}]"
    return ANY_ITEM


def subscript_key(node: ast.expr) -> str | None:
    """The pseudo-attribute (``[0]``, ``['a']``) of a constant int/str subscript, or
    (``[1:3]``, ``[1:]``) of a slice with constant int bounds and no step, else None."""
    if isinstance(node, ast.Constant) and type(node.value) in (int, str):
        return f"[{node.value!r}]"
    if isinstance(node, ast.Slice) and node.step is None:
        bounds = [_slice_bound(part) for part in (node.lower, node.upper)]
        if all(bound is not None for bound in bounds):
            return f"[{bounds[0]}:{bounds[1]}]"
    return None


def _slice_bound(node: ast.expr | None) -> str | None:
    """A slice bound as text: empty when omitted, the integer when constant, else None."""
    if node is None:
        return ""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return str(node.value)
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
        and type(node.operand.value) is int
    ):
        return str(-node.operand.value)
    return None


def _call_name(node: ast.Call) -> str | None:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _pattern_elements(value: ast.AST) -> Iterator[ast.AST]:
    if isinstance(value, ast.List | ast.Tuple):
        yield from value.elts
    elif isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
        yield from _pattern_elements(value.left)
        yield from _pattern_elements(value.right)


def extract_python(path: str, data: bytes) -> FileExtract:
    """Parse one Python file and return its local extraction.

    A file with a syntax error is parsed with its broken lines stubbed out
    (``cairn.codegraph.recover``) and its extract carries ``parse_error``; the
    ``SyntaxError`` propagates only when no such parse exists. A tree too deep for the
    interpreter's recursion limit (generated code: a 600-level expression) is read again
    on a thread of its own with a larger stack and limit (``_extract_deep``).
    """
    try:
        return _extract(path, data)
    except RecursionError:
        return _extract_deep(path, data)


def _extract_deep(path: str, data: bytes) -> FileExtract:
    """``_extract`` on a thread whose stack holds ``DEEP_RECURSION_LIMIT`` frames: the
    limit is raised only while it runs, and only a stack that large makes that safe."""
    try:
        return run_deep(
            lambda: _extract(path, data),
            stack_bytes=DEEP_STACK_BYTES,
            recursion_limit=DEEP_RECURSION_LIMIT,
            name="cairn-deep-extract",
        )
    except RecursionError as exc:
        raise RecursionError(f"the tree is too deep to read here ({exc})") from exc


def _extract(path: str, data: bytes) -> FileExtract:
    """The body of ``extract_python``."""
    try:
        tree = ast.parse(data, filename=path, type_comments=False)
    except SyntaxError as exc:
        recovered = recover_python(data, exc)
        if recovered is None:
            raise
        extractor = _Extractor(path, recovered.source)
        extractor.visit(recovered.tree)
        return replace(extractor.result(), parse_error=(recovered.error, recovered.line))
    extractor = _Extractor(path, data)
    extractor.visit(tree)
    return extractor.result()
