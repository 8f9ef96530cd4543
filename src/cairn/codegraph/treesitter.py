"""Tree-sitter adapters: JavaScript, TypeScript and Go local extraction.

Grammars come from maintained wheels (``tree-sitter-javascript``, ``tree-sitter-typescript``,
``tree-sitter-go``); nothing is downloaded at run time. Like the Python adapter, each
function here reads one file and returns a ``FileExtract`` of symbols, scopes with
bindings, and raw import, export, call, heritage, route and mount sites; resolution
across files happens in ``tsresolve.py``.
"""

from __future__ import annotations

import re
from dataclasses import replace
from functools import cache

import tree_sitter_go
import tree_sitter_javascript
import tree_sitter_typescript
from tree_sitter import Language, Node, Parser, Tree

from cairn.codegraph.limits import MAX_SIGNATURE_CHARS
from cairn.codegraph.python import bounded
from cairn.codegraph.records import (
    RETURN_NAME,
    Binding,
    CallSite,
    ClassBase,
    FileExtract,
    ImportSite,
    MountSite,
    Range,
    Ref,
    RouteSite,
    Scope,
    Symbol,
)
from cairn.codegraph.terms import GO_KEYWORDS, JS_KEYWORDS, body_terms

__all__ = [
    "COMMONJS_EXPORT",
    "EXPRESS_METHODS",
    "GO_ADAPTER_ID",
    "JS_ADAPTER_ID",
    "STRATEGY",
    "extract_treesitter",
    "first_syntax_error",
    "go_binding_name",
    "result_name",
]

JS_ADAPTER_ID = "cairn.javascript"
GO_ADAPTER_ID = "cairn.go"
STRATEGY = "tree-sitter"
EXPRESS_METHODS = frozenset({"get", "post", "put", "delete", "patch", "all", "options", "head"})
COMMONJS_EXPORT = "module.exports"
GO_ROUTE_CALLS = frozenset({"HandleFunc", "Handle"})
_GO_MODULE = re.compile(r"^\s*module\s+(\S+)", re.MULTILINE)
VALUE_NAME = "<value>"
"""The pseudo-name a Go package-level variable's own scope binds what it holds under."""
_GO_COLLECTIONS = {"slice_type": "element", "array_type": "element", "map_type": "value"}
"""Go collection types, each with the field that names the type of its values."""
OPAQUE: Binding = ("opaque",)
THIS_PREFIX = "this."
"""Prefix of the class-scope pseudo-names binding a JavaScript or TypeScript class's
fields (``this.<name>``): never a name a lookup from a method finds."""
"""A name whose value resolution cannot follow."""
_GO_VERSION_SUFFIX = re.compile(r"^v[0-9]+$")


@cache
def _parser(language: str, tsx: bool) -> Parser:
    if language == "go":
        return Parser(Language(tree_sitter_go.language()))
    if language == "typescript":
        grammar = (
            tree_sitter_typescript.language_tsx()
            if tsx
            else tree_sitter_typescript.language_typescript()
        )
        return Parser(Language(grammar))
    return Parser(Language(tree_sitter_javascript.language()))


class _Lines:
    """Converts tree-sitter byte columns into 1-based character ranges."""

    def __init__(self, data: bytes) -> None:
        self.lines = data.split(b"\n")

    def col(self, row: int, byte_col: int) -> int:
        if row >= len(self.lines):
            return byte_col
        line = self.lines[row]
        if line.isascii():
            return byte_col
        return len(line[:byte_col].decode("utf-8", errors="replace"))

    def range(self, node: Node) -> Range:
        (row, col), (end_row, end_col) = node.start_point, node.end_point
        start = self.col(row, col) + 1
        end = self.col(end_row, end_col)
        if end_col == 0 and end_row > row:
            end_row -= 1
            end = max(1, len(self.lines[end_row].decode("utf-8", errors="replace")))
        if (end_row, end) < (row, start):
            end_row, end = row, start
        return (row + 1, start, end_row + 1, max(1, end))


def _body_of(node: Node) -> Node | None:
    """The body of a definition: its own ``body``, or its value's (``const f = () => {}``,
    ``obj.f = function () {}``)."""
    body = node.child_by_field_name("body")
    if body is None:
        value = node.child_by_field_name("value") or node.child_by_field_name("right")
        body = value.child_by_field_name("body") if value is not None else None
    return body


def _text(node: Node | None) -> str:
    if node is None or node.text is None:
        return ""
    return node.text.decode("utf-8", errors="replace")


def _string_value(node: Node | None) -> str | None:
    if node is None:
        return None
    if node.type in ("string", "interpreted_string_literal", "raw_string_literal"):
        parts = [
            c
            for c in node.named_children
            if c.type.endswith("content") or c.type.endswith("fragment")
        ]
        if parts:
            return "".join(_text(p) for p in parts)
        raw = _text(node)
        return raw[1:-1] if len(raw) >= 2 else ""
    if node.type == "template_string" and not any(
        c.type == "template_substitution" for c in node.named_children
    ):
        return _text(node)[1:-1]
    return None


class _Base:
    """Scope bookkeeping shared by the JavaScript and Go walkers."""

    keywords: frozenset[str] = frozenset()
    """The language's keywords: never a definition's body word."""

    def __init__(self, path: str, data: bytes) -> None:
        self.path = path
        self.inner: list[tuple[str, str, Binding]] = []
        """``(scope, name, binding)`` of the names a block inside a function binds (a
        Go ``range`` name, a closure's or callback's parameter), bound when the function
        ends (``bind_inner``)."""
        self.lines = _Lines(data)
        self.scopes: dict[str, tuple[str, str | None, str | None, dict[str, list[Binding]]]] = {}
        self.stack: list[str] = []
        self.symbols: dict[tuple[str, str], tuple[Symbol, list[Range]]] = {}
        self.imports: list[ImportSite] = []
        self.calls: list[CallSite] = []
        self.bases: list[ClassBase] = []
        self.routes: list[RouteSite] = []
        self.mounts: list[MountSite] = []
        self.exports: list[tuple[str, str, str, Range]] = []

    @property
    def scope(self) -> str:
        return self.stack[-1]

    def bind_inner(self, scope: str) -> None:
        """Bind the names blocks inside ``scope`` bind (``inner``) that nothing else in
        ``scope`` binds.

        Scopes are whole functions, not blocks, so a loop's ``r`` beside the receiver
        ``r`` would make every use of either the union of both; the block's is left out
        instead, and ``r`` keeps what it meant before blocks were read."""
        taken = self.scopes[scope][3]
        inner = [(name, binding) for owner, name, binding in self.inner if owner == scope]
        self.inner = [entry for entry in self.inner if entry[0] != scope]
        free = {name for name, _ in inner if name not in taken}
        for name, binding in inner:
            if name in free:
                self.bind(name, binding, scope)

    def push(self, qualname: str, kind: str, owner: str | None) -> None:
        if qualname not in self.scopes:
            parent = self.stack[-1] if self.stack else None
            self.scopes[qualname] = (kind, parent, owner, {})
        self.stack.append(qualname)

    def pop(self) -> None:
        self.stack.pop()

    def bind(self, name: str, binding: Binding, scope: str | None = None) -> None:
        bindings = self.scopes[self.scope if scope is None else scope][3]
        found = bindings.setdefault(name, [])
        if binding not in found:
            found.append(binding)

    def qualname(self, name: str) -> str:
        return f"{self.scope}.{name}" if self.scope else name

    def symbol(
        self,
        qualname: str,
        kind: str,
        name: str,
        node: Node,
        parent: str | None,
        signature: str | None = None,
    ) -> None:
        rng = self.lines.range(node)
        key = (kind, qualname)
        found = self.symbols.get(key)
        if found is None:
            body = _body_of(node)
            terms = body_terms(_text(body), self.keywords) if body is not None else None
            signature = bounded(signature, MAX_SIGNATURE_CHARS)
            self.symbols[key] = (
                Symbol(qualname, kind, name, parent, (), signature, None, terms),
                [rng],
            )
        elif rng not in found[1]:
            found[1].append(rng)

    def owner(self) -> str | None:
        for qualname in reversed(self.stack):
            owner = self.scopes[qualname][2]
            if owner is not None:
                return owner
        return None

    def result(self, language: str, package: str | None = None) -> FileExtract:
        symbols = tuple(
            Symbol(
                s.qualname, s.kind, s.name, s.parent, tuple(ranges), s.signature, None, s.body_terms
            )
            for s, ranges in sorted(self.symbols.values(), key=lambda v: (v[0].qualname, v[0].kind))
        )
        scopes = tuple(
            Scope(
                qualname,
                kind,
                parent,
                owner,
                tuple((name, tuple(b)) for name, b in sorted(bindings.items())),
            )
            for qualname, (kind, parent, owner, bindings) in sorted(self.scopes.items())
        )
        return FileExtract(
            path=self.path,
            language=language,
            symbols=symbols,
            scopes=scopes,
            imports=tuple(self.imports),
            calls=tuple(self.calls),
            bases=tuple(self.bases),
            routes=tuple(self.routes),
            mounts=tuple(self.mounts),
            package=package,
            exports=tuple(self.exports),
        )


# ---------------------------------------------------------------- JavaScript
_FUNCTION_VALUES = frozenset(
    {"arrow_function", "function_expression", "function", "generator_function"}
)
_FUNCTION_DECLS = frozenset({"function_declaration", "generator_function_declaration"})
COMPONENT_WRAPPERS = frozenset({"forwardRef", "memo", "React.forwardRef", "React.memo"})
"""Calls whose function argument is the component a constant names (React): the
constant is a function node with that body, as ``const Button = () => ...`` is."""
PROTOTYPE = "prototype"
"""``Foo.prototype.bar = function`` names the function ``Foo.bar``."""
_CLASS_DECLS = frozenset({"class_declaration", "abstract_class_declaration", "class"})


class _JsWalker(_Base):
    keywords = JS_KEYWORDS

    def __init__(self, path: str, data: bytes, typescript: bool) -> None:
        super().__init__(path, data)
        self.typescript = typescript
        self.assigned: list[tuple[str, str, Binding]] = []
        """``(class, attribute, binding)`` of each ``this.x = value`` in a method, bound
        when the class ends (``bind_fields``) unless a declaration typed ``x``."""
        self.interfaces: list[tuple[str, str, Node]] = []
        """``(qualname, enclosing scope, body)`` of each interface, whose members are
        read when the walk ends (``interface_members``)."""

    def ref(self, node: Node | None) -> Ref | None:
        attrs: list[str] = []
        while node is not None and node.type == "member_expression":
            prop = node.child_by_field_name("property")
            if prop is None or prop.type not in (
                "property_identifier",
                "private_property_identifier",
            ):
                return None
            attrs.append(_text(prop))
            node = node.child_by_field_name("object")
        attrs.reverse()
        if node is None:
            return None
        if node.type == "identifier":
            return Ref("name", _text(node), self.scope, tuple(attrs))
        if node.type == "this":
            owner = self.owner()
            return Ref("this", owner, self.scope, tuple(attrs)) if owner else None
        if node.type == "new_expression" and attrs:
            inner = self.ref(node.child_by_field_name("constructor"))
            return Ref("new", "", self.scope, tuple(attrs), inner) if inner else None
        if node.type == "call_expression" and attrs and self.typescript:  # ``make().run``
            called = self.ref(node.child_by_field_name("function"))
            return Ref("new", "", self.scope, tuple(attrs), called) if called else None
        if node.type == "parenthesized_expression" and node.named_child_count == 1:
            inner_ref = self.ref(node.named_children[0])
            if inner_ref is not None and attrs:
                return Ref(
                    inner_ref.kind,
                    inner_ref.head,
                    inner_ref.scope,
                    (*inner_ref.attrs, *attrs),
                    inner_ref.inner,
                )
            return inner_ref
        return None

    def walk(self, node: Node) -> None:
        kind = node.type
        if kind in _FUNCTION_DECLS:
            self.function(node, node.child_by_field_name("name"), node)
            return
        if kind in _FUNCTION_VALUES and (name_node := node.child_by_field_name("name")):
            self.named_expression(node, name_node)
            return
        if kind in _FUNCTION_VALUES:
            self.callback(node)
        if kind in _CLASS_DECLS and node.child_by_field_name("name") is not None:
            self.klass(node)
            return
        if kind == "interface_declaration":
            self.interface(node)
            return
        if kind in ("lexical_declaration", "variable_declaration"):
            self.declaration(node)
            return
        if kind == "import_statement":
            self.import_statement(node)
            return
        if kind == "export_statement":
            self.export_statement(node)
            return
        if kind == "assignment_expression":
            if self.assignment(node):
                return  # a function assigned to a member: its body was walked in its scope
            self.this_assignment(node)
        elif kind == "call_expression":
            self.call(node)
        elif kind == "new_expression":
            ref = self.ref(node.child_by_field_name("constructor"))
            self.calls.append(CallSite(self.scope, ref, self.lines.range(node), construct=True))
        elif kind in ("jsx_opening_element", "jsx_self_closing_element"):
            self.jsx(node)
        for child in node.named_children:
            self.walk(child)

    def jsx(self, node: Node) -> None:
        """``<Button />`` or ``<Card.Title>``: React calls the component (JSX compiles to
        ``jsx(Button, props)``), so its use is a call site of kind ``jsx``. A lowercase
        name is an element of the page (``<div>``, ``<my-element>``), no call; a
        fragment (``<>``) names nothing."""
        name = node.child_by_field_name("name")
        if name is None or name.type not in ("identifier", "member_expression"):
            return
        if name.type == "identifier" and not _text(name)[:1].isupper():
            return
        self.calls.append(CallSite(self.scope, self.ref(name), self.lines.range(node), site="jsx"))

    def function(self, node: Node, name_node: Node | None, body_owner: Node) -> None:
        if name_node is None:
            for child in body_owner.named_children:
                self.walk(child)
            return
        name = _text(name_node)
        in_class = self.scopes[self.scope][0] == "class"
        kind = "method" if in_class else "function"
        qualname = self.qualname(name)
        params = body_owner.child_by_field_name("parameters")
        signature = f"{name}{_text(params)}" if params is not None else name
        self.symbol(qualname, kind, name, node, self.scope or None, signature)
        if not in_class:
            self.bind(name, ("def", qualname))
        self.function_scope(qualname, self.scope if in_class else None, body_owner)

    def function_scope(
        self, qualname: str, owner: str | None, value: Node, own_name: str | None = None
    ) -> None:
        """Walk a function's body in its own scope: its parameters (and ``own_name``, a
        named expression's name, which only it sees) bound there."""
        self.push(qualname, "function", owner)
        if own_name is not None:
            self.bind(own_name, ("def", qualname))
        returned = self.annotated(value.child_by_field_name("return_type"))
        if self.typescript and returned != OPAQUE:  # ``makeCmd(): Command``
            self.bind(result_name(0), returned)
        params = value.child_by_field_name("parameters")
        if params is not None:
            typed = self.typed_parameters(params) if self.typescript else {}
            for ident in _identifiers(params):
                self.bind(ident, typed.get(ident, OPAQUE))
            if owner is not None and qualname == f"{owner}.constructor":
                self.parameter_properties(owner, params, typed)
        body = value.child_by_field_name("body")
        if body is not None:
            self.walk(body)
        self.bind_inner(qualname)
        self.pop()

    def typed_parameters(self, params: Node) -> dict[str, Binding]:
        """TypeScript parameters annotated with a named type (``cmd: Command``,
        ``req: express.Request``, ``items: Map<K, V>``): a value of that type, as
        ``new`` of it makes; a union, an array or a destructured parameter is opaque."""
        typed: dict[str, Binding] = {}
        for param in params.named_children:
            if param.type not in ("required_parameter", "optional_parameter"):
                continue
            pattern, annotation = (param.child_by_field_name(f) for f in ("pattern", "type"))
            if pattern is None or pattern.type != "identifier":
                continue
            binding = self.annotated(annotation)
            if binding != OPAQUE:
                typed[_text(pattern)] = binding
        return typed

    def annotated(self, annotation: Node | None) -> Binding:
        """What a TypeScript type annotation of a named type declares: a value of that
        type (``("ctor", Ref, ("composite",))``); opaque for any other type."""
        named = annotation.named_children[0] if annotation and annotation.named_children else None
        if named is not None and named.type == "generic_type":
            named = named.child_by_field_name("name")
        ref = _type_ref(named, self.scope)
        return ("ctor", ref, ("composite",)) if ref is not None else OPAQUE

    def made(self, value: Node | None) -> Binding:
        """What ``new X()`` or ``f()`` makes (``("ctor", Ref, ())``); opaque otherwise."""
        if value is None or value.type not in ("new_expression", "call_expression"):
            return OPAQUE
        field = "constructor" if value.type == "new_expression" else "function"
        ref = self.ref(value.child_by_field_name(field))
        return ("ctor", ref, ()) if ref is not None else OPAQUE

    def field(self, cls: str, member: Node) -> bool:
        """A class field (``users: UsersService``, ``repo = new Repo()``): bound as
        ``this.<name>`` in the class scope, by its annotation, else by what its
        initializer makes. True when its type was declared."""
        name = member.child_by_field_name("name") or member.child_by_field_name("property")
        if name is None or name.type != "property_identifier":
            return False
        declared = self.annotated(member.child_by_field_name("type"))
        binding = declared if declared != OPAQUE else self.made(member.child_by_field_name("value"))
        self.bind(f"{THIS_PREFIX}{_text(name)}", binding, cls)
        return declared != OPAQUE

    def parameter_properties(self, cls: str, params: Node, typed: dict[str, Binding]) -> None:
        """``constructor(private readonly users: UsersService)``: each parameter with an
        accessibility or ``readonly`` modifier is also the field ``this.<name>``."""
        for param in params.named_children:
            pattern = param.child_by_field_name("pattern")
            modified = any(c.type in ("accessibility_modifier", "readonly") for c in param.children)
            if modified and pattern is not None and pattern.type == "identifier":
                name = _text(pattern)
                self.bind(f"{THIS_PREFIX}{name}", typed.get(name, OPAQUE), cls)

    def bind_fields(self, cls: str, declared: set[str]) -> None:
        """Bind what the class's methods assign to ``this.<name>``, for each name no
        typed declaration covers (TypeScript's declared type is the field's type)."""
        for owner, name, binding in self.assigned:
            if owner == cls and name not in declared:
                self.bind(f"{THIS_PREFIX}{name}", binding, cls)
        self.assigned = [entry for entry in self.assigned if entry[0] != cls]

    def klass(self, node: Node) -> None:
        name = _text(node.child_by_field_name("name"))
        qualname = self.qualname(name)
        self.symbol(qualname, "class", name, node, self.scope or None, f"class {name}")
        self.bind(name, ("def", qualname))
        for child in node.named_children:
            if child.type == "class_heritage":
                self.heritage(qualname, child)
        self.push(qualname, "class", qualname)
        body = node.child_by_field_name("body")
        declared: set[str] = set()
        for member in body.named_children if body is not None else ():
            fielded = member.type in ("public_field_definition", "field_definition")
            if fielded and self.field(qualname, member):
                declared.add(_text(member.child_by_field_name("name")))
            if member.type == "method_definition":
                self.function(member, member.child_by_field_name("name"), member)
            elif member.type == "abstract_method_signature":
                name_node = member.child_by_field_name("name")
                if name_node is not None:
                    name = _text(name_node)
                    sig = name + _text(member.child_by_field_name("parameters"))
                    self.symbol(f"{qualname}.{name}", "method", name, member, qualname, sig)
            else:
                self.walk(member)
        self.bind_fields(qualname, declared)
        self.pop()

    def interface(self, node: Node) -> None:
        name = _text(node.child_by_field_name("name"))
        qualname = self.qualname(name)
        self.symbol(qualname, "class", name, node, self.scope or None, f"interface {name}")
        self.bind(name, ("def", qualname))
        for child in node.named_children:
            if child.type == "extends_type_clause":
                for base in child.named_children:
                    self.base(qualname, base, "extends")
        body = node.child_by_field_name("body")
        if body is not None:
            self.interfaces.append((qualname, self.scope, body))

    def interface_members(self) -> None:
        """The members of the file's interfaces, once its walk is done: of each whose
        name nothing else declares. An interface merged with a function or a class of
        its name (``interface $constructor`` beside ``function $constructor``, as zod
        writes) is left alone: its members would share names with what lives in them."""
        for qualname, parent, body in self.interfaces:
            if qualname in self.scopes:
                continue
            self.scopes[qualname] = ("class", parent, qualname, {})
            for member in body.named_children:
                self.interface_member(qualname, member)
        self.interfaces = []

    def interface_member(self, owner: str, member: Node) -> None:
        """A method an interface declares (``find(id: string): Item``), a method node of
        the interface that calls through a value of its type reach; a property of a
        named type (``child: Store``), its field ``this.<name>``."""
        name_node = member.child_by_field_name("name")
        if name_node is None or name_node.type != "property_identifier":
            return
        name = _text(name_node)
        if member.type == "method_signature":
            signature = name + _text(member.child_by_field_name("parameters"))
            self.symbol(f"{owner}.{name}", "method", name, member, owner, signature)
        elif member.type == "property_signature":
            declared = self.annotated(member.child_by_field_name("type"))
            self.bind(f"{THIS_PREFIX}{name}", declared, owner)

    def heritage(self, qualname: str, node: Node) -> None:
        for clause in node.named_children:
            if clause.type == "extends_clause":
                for base in clause.named_children:
                    self.base(qualname, base, "extends")
            elif clause.type == "implements_clause":
                for base in clause.named_children:
                    self.base(qualname, base, "implements")
            else:  # JavaScript: class_heritage holds the expression directly
                self.base(qualname, clause, "extends")

    def base(self, qualname: str, node: Node, kind: str) -> None:
        if node.type in ("generic_type",):
            node = node.child_by_field_name("name") or node
        if node.type == "type_identifier":
            ref: Ref | None = Ref("name", _text(node), self.scope)
        elif node.type == "nested_type_identifier":
            parts = _text(node).split(".")
            ref = Ref("name", parts[0], self.scope, tuple(parts[1:]))
        else:
            ref = self.ref(node)
        if ref is not None:
            self.bases.append(ClassBase(qualname, ref, kind, self.lines.range(node)))

    def declaration(self, node: Node) -> None:
        constant = _text(node).startswith("const")
        for declarator in node.named_children:
            if declarator.type != "variable_declarator":
                continue
            name_node = declarator.child_by_field_name("name")
            value = declarator.child_by_field_name("value")
            if name_node is None:
                continue
            if value is not None and name_node.type == "identifier":
                if value.type in _FUNCTION_VALUES:
                    self.function(declarator, name_node, value)
                    continue
                wrapped = self.wrapped_component(value)
                if wrapped is not None:
                    self.function(declarator, name_node, wrapped)
                    continue
                if value.type == "class":
                    self.walk(value)
                    continue
            if value is not None and self.require(name_node, value):
                continue
            if value is not None:
                self.walk(value)
            if name_node.type != "identifier":
                for ident in _identifiers(name_node):
                    self.bind(ident, ("opaque",))
                continue
            name = _text(name_node)
            # A local's declared type is its value's, whatever made it; a module-level
            # constant stays the variable node (what imports and exports of it name).
            typed = self.annotated(declarator.child_by_field_name("type")) if self.scope else OPAQUE
            binding = typed if typed != OPAQUE else self.made(value)
            if not self.scope and constant:
                self.symbol(name, "variable", name, declarator, None)
                if binding == ("opaque",):
                    binding = ("var", name)
            self.bind(name, binding)

    def wrapped_component(self, value: Node) -> Node | None:
        """``forwardRef((props, ref) => ...)`` or ``memo(function ...)`` (bare or on
        ``React``): the function a component constant is, whose body is the
        component's; the wrapper's own call is recorded here. None for any other value."""
        if value.type != "call_expression":
            return None
        func = value.child_by_field_name("function")
        args = value.child_by_field_name("arguments")
        if func is None or args is None or _text(func) not in COMPONENT_WRAPPERS:
            return None
        first = next((a for a in args.named_children if a.type != "comment"), None)
        if first is None or first.type not in _FUNCTION_VALUES:
            return None
        self.calls.append(CallSite(self.scope, self.ref(func), self.lines.range(value)))
        return first

    def require(self, name_node: Node, value: Node) -> bool:
        spec = _require_specifier(value)
        if spec is None:
            return False
        rng = self.lines.range(value)
        if name_node.type == "identifier":
            self.bind(_text(name_node), ("import", spec, 0, None))
            self.imports.append(
                ImportSite(
                    spec, 0, _text(name_node), "require", "runtime", "static", rng, self.scope
                )
            )
            return True
        for key, local in _object_pattern(name_node):
            self.bind(local, ("import", spec, 0, key))
            self.imports.append(
                ImportSite(spec, 0, key, "require", "runtime", "static", rng, self.scope)
            )
        return True

    def import_statement(self, node: Node) -> None:
        source = _string_value(node.child_by_field_name("source"))
        if source is None:
            return
        rng = self.lines.range(node)
        phase = "type" if any(c.type == "type" for c in node.children) else "runtime"
        clause = next((c for c in node.named_children if c.type == "import_clause"), None)
        if clause is None:
            self.imports.append(ImportSite(source, 0, None, "side_effect", phase, "static", rng))
            return
        for part in clause.named_children:
            if part.type == "identifier":
                self.bind(_text(part), ("import", source, 0, "default"))
                self.imports.append(
                    ImportSite(source, 0, "default", "default", phase, "static", rng)
                )
            elif part.type == "namespace_import":
                ident = next((c for c in part.named_children if c.type == "identifier"), None)
                if ident is not None:
                    self.bind(_text(ident), ("import", source, 0, None))
                self.imports.append(ImportSite(source, 0, "*", "namespace", phase, "static", rng))
            elif part.type == "named_imports":
                for spec in part.named_children:
                    if spec.type != "import_specifier":
                        continue
                    name = _text(spec.child_by_field_name("name"))
                    alias = spec.child_by_field_name("alias")
                    spec_phase = "type" if any(c.type == "type" for c in spec.children) else phase
                    self.bind(_text(alias) if alias else name, ("import", source, 0, name))
                    self.imports.append(
                        ImportSite(source, 0, name, "named", spec_phase, "static", rng)
                    )

    def export_statement(self, node: Node) -> None:
        declaration = node.child_by_field_name("declaration")
        default = any(c.type == "default" for c in node.children)
        site = self.lines.range(node)
        source = _string_value(node.child_by_field_name("source"))
        if declaration is not None:
            for name in _declared_names(declaration):
                self.exports.append(
                    ("default" if default else name, name, "default" if default else "named", site)
                )
            self.walk(declaration)
            return
        value = node.child_by_field_name("value")
        if default and value is not None:
            if value.type == "identifier":
                self.exports.append(("default", _text(value), "default", site))
            self.walk(value)
            return
        rng = self.lines.range(node)
        clause = next((c for c in node.named_children if c.type == "export_clause"), None)
        if clause is None:
            if source is not None:  # export * from './x'
                self.exports.append(("*", f"{source}:*", "reexport", rng))
                self.imports.append(
                    ImportSite(source, 0, "*", "wildcard", "runtime", "static", rng)
                )
            return
        for spec in clause.named_children:
            if spec.type != "export_specifier":
                continue
            name = _text(spec.child_by_field_name("name"))
            alias = spec.child_by_field_name("alias")
            exported = _text(alias) if alias else name
            if source is not None:
                self.exports.append((exported, f"{source}:{name}", "reexport", rng))
                self.imports.append(ImportSite(source, 0, name, "named", "runtime", "static", rng))
            else:
                self.exports.append((exported, name, "named", rng))

    def assignment(self, node: Node) -> bool:
        """A module-level assignment: CommonJS exports, and a function assigned to a
        member (``res.send = function send() {}``) as a node of its own; True when the
        right side was a function walked in its own scope."""
        left = node.child_by_field_name("left")
        right = node.child_by_field_name("right")
        if left is None or right is None or self.scope:
            return False
        target = _text(left)
        site = self.lines.range(node)
        if target == "module.exports":
            if right.type == "identifier":
                self.exports.append((COMMONJS_EXPORT, _text(right), "default", site))
            elif right.type == "object":
                for key, local in _object_entries(right):
                    self.exports.append((key, local, "named", site))
        elif target.startswith(("exports.", "module.exports.")) and target.count(".") in (1, 2):
            name = target.rsplit(".", 1)[-1]
            if right.type == "identifier":
                self.exports.append((name, _text(right), "named", site))
            elif right.type in _FUNCTION_VALUES:
                self.exports.append((name, name, "named", site))
                self.function(node, left.child_by_field_name("property"), right)
                return True
        elif right.type in _FUNCTION_VALUES and (member := _member_name(left)) is not None:
            self.member_function(node, member, right)
            return True
        return False

    def this_assignment(self, node: Node) -> None:
        """``this.repo = new Repo()`` in a method: kept for the class's ``this.repo``."""
        left = node.child_by_field_name("left")
        cls = self.owner()
        if cls is None or left is None or left.type != "member_expression":
            return
        target, prop = left.child_by_field_name("object"), left.child_by_field_name("property")
        if target is None or target.type != "this" or prop is None:
            return
        if prop.type == "property_identifier":
            made = self.made(node.child_by_field_name("right"))
            self.assigned.append((cls, _text(prop), made))

    def callback(self, node: Node) -> None:
        """An anonymous function (``app.get('/', (req: Request, res: Response) => ...)``):
        its body is part of the enclosing scope's, and so are its parameters, bound when
        that scope ends if nothing else there binds them (``bind_inner``): a value of an
        annotated named type (TypeScript), else opaque."""
        params = node.child_by_field_name("parameters")
        single = node.child_by_field_name("parameter")  # ``x => ...``
        typed = self.typed_parameters(params) if self.typescript and params else {}
        names = _identifiers(params) if params is not None else []
        if single is not None and single.type == "identifier":
            names = [_text(single)]
        for name in names:
            binding = typed.get(name, OPAQUE)
            if self.scope or binding != OPAQUE:  # an untyped one is no module-level object
                self.inner.append((self.scope, name, binding))

    def named_expression(self, node: Node, name_node: Node) -> None:
        """A named function expression (``router.post('/', function createUser() {})``):
        a node of its own, its name bound only inside it, as JavaScript scopes it."""
        name = _text(name_node)
        qualname = self.qualname(name)
        params = node.child_by_field_name("parameters")
        signature = f"{name}{_text(params)}" if params is not None else name
        self.symbol(qualname, "function", name, node, self.scope or None, signature)
        self.function_scope(qualname, None, node, own_name=name)

    def member_function(self, node: Node, qualname: str, value: Node) -> None:
        """``obj.name = function ...`` (``Foo.prototype.name`` as ``Foo.name``): a function
        node named by the member chain, its body walked in its own scope."""
        name = qualname.rsplit(".", 1)[-1]
        params = value.child_by_field_name("parameters")
        signature = f"{qualname}{_text(params)}" if params is not None else qualname
        self.symbol(qualname, "function", name, node, None, signature)
        # ``this`` inside it is the object it was assigned to (``res`` of ``res.send``).
        self.function_scope(qualname, qualname.rsplit(".", 1)[0], value)

    def call(self, node: Node) -> None:
        func = node.child_by_field_name("function")
        args = node.child_by_field_name("arguments")
        if func is None:
            return
        rng = self.lines.range(node)
        if func.type == "import":  # dynamic import('./x')
            spec = _string_value(args.named_children[0]) if args and args.named_children else None
            if spec is not None:
                self.imports.append(
                    ImportSite(spec, 0, "*", "namespace", "runtime", "dynamic", rng, self.scope)
                )
            return
        if func.type == "identifier" and _text(func) == "require":
            spec = _require_specifier(node)
            if spec is not None:
                self.imports.append(
                    ImportSite(spec, 0, None, "require", "runtime", "static", rng, self.scope)
                )
            return
        optional = any(c.type == "optional_chain" for c in (*node.children, *func.children))
        self.calls.append(CallSite(self.scope, self.ref(func), rng, optional=optional))
        if func.type == "member_expression" and args is not None:
            self.express(func, args, rng)

    def express(self, func: Node, args: Node, rng: Range) -> None:
        prop = _text(func.child_by_field_name("property"))
        values = [a for a in args.named_children if a.type != "comment"]
        if not values:
            return
        obj = self.ref(func.child_by_field_name("object"))
        path = _string_value(values[0])
        last = values[-1]
        if prop in EXPRESS_METHODS and path is not None and len(values) >= 2:
            handler_ref = (
                self.ref(last) if last.type in ("identifier", "member_expression") else None
            )
            name_node = last.child_by_field_name("name") if last.type in _FUNCTION_VALUES else None
            if name_node is not None:  # an inline named handler: resolved inside itself
                name = _text(name_node)
                handler_ref = Ref("name", name, self.qualname(name))
            method = "ANY" if prop == "all" else prop.upper()
            self.routes.append(
                RouteSite(
                    obj, prop, path, (method,), self.scope, handler_ref, "call", rng, "express"
                )
            )
        elif prop == "use" and last.type in ("identifier", "member_expression"):
            prefix = path if path is not None and len(values) >= 2 else ""
            self.mounts.append(MountSite(obj, self.ref(last), prefix, rng))


def _type_ref(node: Node | None, scope: str) -> Ref | None:
    """The reference a TypeScript type name makes (``Command``, ``ns.Command``)."""
    if node is None:
        return None
    if node.type == "type_identifier":
        return Ref("name", _text(node), scope)
    if node.type == "nested_type_identifier":
        head, *rest = _text(node).split(".")
        return Ref("name", head, scope, tuple(rest))
    return None


def _member_name(node: Node) -> str | None:
    """The dotted name of a plain member chain of identifiers (``res.send``,
    ``Foo.prototype.bar`` -> ``Foo.bar``), else None (``this.x``, ``a[b]``, calls)."""
    parts: list[str] = []
    while node.type == "member_expression":
        prop = node.child_by_field_name("property")
        obj = node.child_by_field_name("object")
        if prop is None or obj is None or prop.type != "property_identifier":
            return None
        parts.append(_text(prop))
        node = obj
    if node.type != "identifier" or not parts:
        return None
    parts.append(_text(node))
    names = [part for part in reversed(parts) if part != PROTOTYPE]
    return ".".join(names) if len(names) > 1 else None


def _identifiers(node: Node) -> list[str]:
    found: list[str] = []
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type in ("identifier", "shorthand_property_identifier_pattern"):
            found.append(_text(current))
        elif current.type not in ("type_annotation", "property_identifier"):
            stack.extend(current.named_children)
    return sorted(set(found))


def _require_specifier(node: Node) -> str | None:
    if node.type != "call_expression":
        return None
    func = node.child_by_field_name("function")
    args = node.child_by_field_name("arguments")
    if func is None or func.type != "identifier" or _text(func) != "require" or args is None:
        return None
    values = args.named_children
    return _string_value(values[0]) if len(values) == 1 else None


def _object_pattern(node: Node) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    for child in node.named_children:
        if child.type == "shorthand_property_identifier_pattern":
            pairs.append((_text(child), _text(child)))
        elif child.type == "pair_pattern":
            key = child.child_by_field_name("key")
            value = child.child_by_field_name("value")
            if key is not None and value is not None and value.type == "identifier":
                pairs.append((_text(key), _text(value)))
    return pairs


def _object_entries(node: Node) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    for child in node.named_children:
        if child.type == "shorthand_property_identifier":
            pairs.append((_text(child), _text(child)))
        elif child.type == "pair":
            key = child.child_by_field_name("key")
            value = child.child_by_field_name("value")
            if key is not None and value is not None and value.type == "identifier":
                pairs.append((_text(key), _text(value)))
    return pairs


def _declared_names(node: Node) -> list[str]:
    if node.type in ("lexical_declaration", "variable_declaration"):
        names = []
        for declarator in node.named_children:
            name = declarator.child_by_field_name("name")
            if declarator.type == "variable_declarator" and name and name.type == "identifier":
                names.append(_text(name))
        return names
    name = node.child_by_field_name("name")
    return [_text(name)] if name is not None else []


# ------------------------------------------------------------------------ Go
GO_BUILTINS = frozenset(
    {
        "append", "cap", "clear", "close", "complex", "copy", "delete", "imag", "len",
        "make", "max", "min", "new", "panic", "print", "println", "real", "recover",
        "bool", "byte", "complex64", "complex128", "error", "float32", "float64", "int",
        "int8", "int16", "int32", "int64", "rune", "string", "uint", "uint8", "uint16",
        "uint32", "uint64", "uintptr", "any",
    }
)  # fmt: skip


def go_binding_name(import_path: str) -> str:
    """The default package name bound by an import path (``gopkg.in/yaml.v3`` -> ``yaml``)."""
    parts = import_path.split("/")
    name = parts[-1]
    if _GO_VERSION_SUFFIX.match(name) and len(parts) > 1:
        name = parts[-2]
    return name.split(".", 1)[0].replace("-", "_")


class _GoWalker(_Base):
    keywords = GO_KEYWORDS

    def ref(self, node: Node | None) -> Ref | None:
        attrs: list[str] = []
        while node is not None and node.type == "selector_expression":
            attrs.append(_text(node.child_by_field_name("field")))
            node = node.child_by_field_name("operand")
        attrs.reverse()
        if node is None:
            return None
        if node.type in ("identifier", "type_identifier", "package_identifier"):
            return Ref("name", _text(node), self.scope, tuple(attrs))
        if node.type == "qualified_type":
            package = _text(node.child_by_field_name("package"))
            name = _text(node.child_by_field_name("name"))
            return Ref("name", package, self.scope, (name, *attrs))
        if node.type in ("pointer_type", "parenthesized_expression", "unary_expression"):
            inner = node.child_by_field_name("operand") or (
                node.named_children[0] if node.named_children else None
            )
            return self.ref(inner) if not attrs else None
        if node.type == "generic_type":
            return self.ref(node.child_by_field_name("type")) if not attrs else None
        if node.type == "call_expression" and attrs:  # ``c.Root().Name``: what Root returns
            called = self.ref(node.child_by_field_name("function"))
            return Ref("new", "", self.scope, tuple(attrs), called) if called is not None else None
        return None

    def walk(self, node: Node) -> None:
        kind = node.type
        if kind == "import_spec":
            self.import_spec(node)
            return
        if kind == "function_declaration":
            self.function(node, None)
            return
        if kind == "method_declaration":
            self.method(node)
            return
        if kind == "type_spec":
            self.type_spec(node)
            return
        if kind in ("var_spec", "const_spec") and not self.scope:
            names = node.children_by_field_name("name")
            values = self.held_values(node, len(names))
            for name, held in zip(names, values, strict=True):
                self.symbol(_text(name), "variable", _text(name), node, None)
                self.bind(_text(name), ("var", _text(name)))
                if held != OPAQUE:  # what the variable holds, for calls through it
                    self.scopes[_text(name)] = ("variable", "", None, {VALUE_NAME: [held]})
        elif kind == "short_var_declaration" or (kind in ("var_spec",) and self.scope):
            self.local(node)
        elif kind == "range_clause":
            self.ranged(node)
        elif kind == "func_literal":
            self.closure(node)
        elif kind == "call_expression":
            self.call(node)
        for child in node.named_children:
            self.walk(child)

    def import_spec(self, node: Node) -> None:
        path = _string_value(node.child_by_field_name("path"))
        if path is None:
            return
        alias_node = node.child_by_field_name("name")
        alias = _text(alias_node) if alias_node is not None else None
        rng = self.lines.range(node)
        if alias == "_":
            self.imports.append(ImportSite(path, 0, None, "side_effect", "runtime", "static", rng))
            return
        if alias == ".":
            self.imports.append(ImportSite(path, 0, "*", "wildcard", "runtime", "static", rng))
            return
        binding = alias or go_binding_name(path)
        self.bind(binding, ("import", path, 0, None), "")
        self.imports.append(ImportSite(path, 0, binding, "module", "runtime", "static", rng))

    def function(self, node: Node, receiver: tuple[str, str | None] | None) -> None:
        name = _text(node.child_by_field_name("name"))
        params = node.child_by_field_name("parameters")
        result = node.child_by_field_name("result")
        signature = f"func {name}{_text(params)}" + (f" {_text(result)}" if result else "")
        if receiver is None:
            qualname, kind, parent = name, "function", None
        else:
            qualname, kind, parent = f"{receiver[0]}.{name}", "method", receiver[0]
            recv_text = _text(node.child_by_field_name("receiver"))
            signature = f"func {recv_text} {name}{_text(params)}" + (
                f" {_text(result)}" if result else ""
            )
        self.symbol(qualname, kind, name, node, parent, signature)
        self.push(qualname, "function", receiver[0] if receiver else None)
        if receiver is not None and receiver[1]:
            self.bind(receiver[1], ("self", receiver[0]))
        for index, type_node in enumerate(_go_results(result)):
            self.bind(result_name(index), self.typed(type_node))
        for ident, binding in self.parameters(params):
            self.bind(ident, binding)
        body = node.child_by_field_name("body")
        if body is not None:
            self.walk(body)
        self.bind_inner(qualname)
        self.pop()

    def method(self, node: Node) -> None:
        receiver = node.child_by_field_name("receiver")
        decl = receiver.named_children[0] if receiver and receiver.named_children else None
        if decl is None:
            return
        type_node = decl.child_by_field_name("type")
        while type_node is not None and type_node.type in ("pointer_type", "generic_type"):
            type_node = type_node.named_children[0] if type_node.named_children else None
        type_name = _text(type_node).split("[", 1)[0]
        names = decl.children_by_field_name("name")
        self.function(node, (type_name, _text(names[0]) if names else None))

    def type_spec(self, node: Node) -> None:
        name = _text(node.child_by_field_name("name"))
        body = node.child_by_field_name("type")
        kind_text = body.type.removesuffix("_type") if body is not None else "type"
        self.symbol(name, "class", name, node, None, f"type {name} {kind_text}")
        if body is None:
            return
        if body.type == "struct_type":
            self.push(name, "class", name)  # its fields, by their declared types
            for field_list in body.named_children:
                for field in field_list.named_children:
                    if field.type != "field_declaration":
                        continue
                    fields = field.children_by_field_name("name")
                    if not fields:
                        self.embedded(name, field.child_by_field_name("type"))
                    binding = self.typed(field.child_by_field_name("type"))
                    for ident in fields:
                        self.bind(_text(ident), binding)
            self.pop()
        elif body.type == "interface_type":
            for elem in body.named_children:
                if elem.type in ("type_elem", "constraint_elem"):
                    for inner in elem.named_children:
                        self.embedded(name, inner)
                elif elem.type == "method_elem":
                    self.interface_method(name, elem)

    def interface_method(self, owner: str, node: Node) -> None:
        """A method an interface declares (``Find(id string) (*Item, error)``): a method
        node of the interface, which calls through a value of the interface's type reach,
        with its declared results (what those calls give)."""
        name = _text(node.child_by_field_name("name"))
        params = node.child_by_field_name("parameters")
        result = node.child_by_field_name("result")
        returns = f" {_text(result)}" if result else ""
        signature = f"func ({owner}) {name}{_text(params)}{returns}"
        qualname = f"{owner}.{name}"
        self.symbol(qualname, "method", name, node, owner, signature)
        self.push(qualname, "function", owner)
        for index, type_node in enumerate(_go_results(result)):
            self.bind(result_name(index), self.typed(type_node))
        self.pop()

    def embedded(self, name: str, node: Node | None) -> None:
        ref = self.ref(node)
        if ref is not None and node is not None:
            self.bases.append(ClassBase(name, ref, "extends", self.lines.range(node)))

    def typed(self, node: Node | None) -> Binding:
        """What a name declared with the type ``node`` holds (a parameter, ``var x T``):
        a value of that type, as a composite literal of it makes (Go's static types);
        opaque when the type names nothing a call can go through (``func()``, ``[]T``)."""
        if node is not None and node.type in _GO_COLLECTIONS:
            item = node.child_by_field_name(_GO_COLLECTIONS[node.type])
            held = self.ref(item) if item is not None else None
            return ("elements", held) if held is not None else OPAQUE
        ref = self.ref(node) if node is not None else None
        return ("ctor", ref, ("composite",)) if ref is not None else OPAQUE

    def ranged(self, node: Node) -> None:
        """``for k, v := range x``: ``v`` is what ranging over ``x`` yields (its declared
        element type, ``("element", x)``), ``k`` (and a lone name, an index or a key
        unless ``x`` is a channel) is opaque. ``=`` assigns names bound before."""
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        if left is None or right is None or not any(c.type == ":=" for c in node.children):
            return
        names = [c for c in left.named_children if c.type == "identifier"]
        source = self.ref(right)
        if right.type == "call_expression":
            called = self.ref(right.child_by_field_name("function"))
            source = Ref("new", "", self.scope, (), called) if called is not None else None
        for index, ident in enumerate(names):
            ranged = index == 1 and source is not None
            binding = ("element", source) if ranged else OPAQUE
            self.inner.append((self.scope, _text(ident), binding))

    def closure(self, node: Node) -> None:
        """``func(c *Context) { c.Header(...) }``: its body is part of the enclosing
        function's, and so are its parameters, bound as ``range`` names are
        (``bind_inner``)."""
        if self.scope:
            for ident, binding in self.parameters(node.child_by_field_name("parameters")):
                self.inner.append((self.scope, ident, binding))

    def parameters(self, params: Node | None) -> list[tuple[str, Binding]]:
        """Each parameter's name with what it holds: a value of its declared type; for
        ``cmds ...*Command`` a slice of them."""
        named: list[tuple[str, Binding]] = []
        for decl in params.named_children if params is not None else ():
            binding = self.typed(decl.child_by_field_name("type"))
            if decl.type == "variadic_parameter_declaration":
                held = self.ref(decl.child_by_field_name("type"))
                binding = ("elements", held) if held is not None else OPAQUE
            elif decl.type != "parameter_declaration":
                binding = OPAQUE
            named.extend((_text(ident), binding) for ident in decl.children_by_field_name("name"))
        return named

    def held_values(self, node: Node, count: int) -> list[Binding]:
        """What each of the ``count`` names of a ``var`` declaration holds: a value of
        its declared type, else of the composite literal it is given (``&T{}``)."""
        declared = self.typed(node.child_by_field_name("type"))
        if declared != OPAQUE:
            return [declared] * count
        value = node.child_by_field_name("value")
        values = value.named_children if value is not None else []
        if len(values) != count:
            return [OPAQUE] * count
        return [self.composite(item) for item in values]

    def composite(self, value: Node) -> Binding:
        """What a composite literal (``T{}``, ``&T{}``) makes: a value of ``T``; opaque
        for any other expression."""
        if value.type == "unary_expression":
            value = value.child_by_field_name("operand") or value
        if value.type != "composite_literal":
            return OPAQUE
        ref = self.ref(value.child_by_field_name("type"))
        return ("ctor", ref, ("composite",)) if ref is not None else OPAQUE

    def local(self, node: Node) -> None:
        left = node.child_by_field_name("left") or node
        right = node.child_by_field_name("right") or node.child_by_field_name("value")
        names = [c for c in left.named_children if c.type == "identifier"]
        declared = OPAQUE
        if node.type == "var_spec":
            names = list(node.children_by_field_name("name"))
            declared = self.typed(node.child_by_field_name("type"))
        values = right.named_children if right is not None else []
        spread = len(names) > 1 and len(values) == 1 and values[0].type == "call_expression"
        called = self.ref(values[0].child_by_field_name("function")) if spread else None
        for index, ident in enumerate(names):
            value = values[index] if index < len(values) and len(values) == len(names) else None
            binding: Binding = declared
            if declared == OPAQUE and called is not None:  # ``item, err := find()``
                binding = ("result", called, index)
            if declared != OPAQUE:
                value = None  # the declared type is the static type, whatever the value
            if value is not None:
                binding = self.composite(value)
                if value.type == "unary_expression":
                    value = value.child_by_field_name("operand")
            if binding == OPAQUE and value is not None and value.type == "call_expression":
                ref = self.ref(value.child_by_field_name("function"))
                if ref is not None:
                    binding = ("ctor", ref, ())
            self.bind(_text(ident), binding)

    def call(self, node: Node) -> None:
        func = node.child_by_field_name("function")
        args = node.child_by_field_name("arguments")
        rng = self.lines.range(node)
        self.calls.append(CallSite(self.scope, self.ref(func), rng))
        if func is None or func.type != "selector_expression" or args is None:
            return
        field = _text(func.child_by_field_name("field"))
        values = args.named_children
        if field not in GO_ROUTE_CALLS or len(values) != 2:
            return
        pattern = _string_value(values[0])
        if pattern is None:
            return
        handler = values[1]
        if handler.type in ("call_expression", "type_conversion_expression"):
            inner = handler.child_by_field_name("arguments")
            if inner is not None and len(inner.named_children) == 1:
                handler = inner.named_children[0]
            elif handler.child_by_field_name("operand") is not None:
                handler = handler.child_by_field_name("operand") or handler
        method, _, path = pattern.partition(" ") if " " in pattern.strip() else ("", "", pattern)
        methods = (method.upper(),) if method else ("ANY",)
        obj = self.ref(func.child_by_field_name("operand"))
        self.routes.append(
            RouteSite(
                obj,
                field,
                path.strip(),
                methods,
                self.scope,
                self.ref(handler),
                "call",
                rng,
                "net_http",
            )
        )


def result_name(index: int) -> str:
    """The pseudo-name a Go or TypeScript function's scope binds its ``index``-th
    declared result to."""
    return f"{RETURN_NAME}{index}"


def _go_results(result: Node | None) -> list[Node | None]:
    """The type of each declared result of a Go function, in order (``(a, b int, err
    error)`` is three; a result list without names one per entry)."""
    if result is None:
        return []
    if result.type != "parameter_list":
        return [result]
    types: list[Node | None] = []
    for decl in result.named_children:
        if decl.type not in ("parameter_declaration", "variadic_parameter_declaration"):
            continue
        kind = decl.child_by_field_name("type") if decl.type == "parameter_declaration" else None
        types.extend([kind] * max(1, len(decl.children_by_field_name("name"))))
    return types


def _go_package(root: Node) -> str | None:
    clause = next((c for c in root.named_children if c.type == "package_clause"), None)
    if clause is None:
        return None
    ident = next((c for c in clause.named_children if c.type == "package_identifier"), None)
    return _text(ident) if ident is not None else None


def extract_treesitter(path: str, language: str, data: bytes) -> FileExtract:
    """Local extraction of one JavaScript, TypeScript or Go file (or a ``go.mod``)."""
    if language == "gomod":
        match = _GO_MODULE.search(data.decode("utf-8", errors="replace"))
        return FileExtract(path, language, package=match.group(1) if match else None)
    parser = _parser(language, path.endswith(".tsx"))
    tree = parser.parse(data)
    if language == "typescript" and tree.root_node.has_error:
        tree = _read_variance(parser, data, tree)
    root = tree.root_node
    if language == "go":
        go = _GoWalker(path, data)
        go.push("", "module", None)
        go.walk(root)
        extract = go.result(language, _go_package(root))
    else:
        js = _JsWalker(path, data, language == "typescript")
        js.push("", "module", None)
        js.walk(root)
        js.bind_inner("")
        js.interface_members()
        extract = js.result(language)
    error = first_syntax_error(root)
    return extract if error is None else replace(extract, parse_error=error)


_VARIANCE = re.compile(rb"\b(?:in|out)\b(?=\s+(?!extends\b)[A-Za-z_$])")
"""An ``in`` or ``out`` word before another name: a variance modifier where it stands in
a type parameter list (``interface Z<in out T>``)."""
_VARIANCE_DEPTH = 4
"""Levels from a modifier's word up to its type parameter list: the word, the ``ERROR``
node tree-sitter may wrap it in, its ``type_parameter``, then the ``type_parameters``."""


def _read_variance(parser: Parser, data: bytes, tree: Tree) -> Tree:
    """``tree``, or the parse of ``data`` with the variance modifiers of its broken type
    parameter lists blanked when that has fewer syntax errors.

    tree-sitter-typescript 0.23 has no rule for TypeScript 4.7's variance annotations
    (tree-sitter/tree-sitter-typescript#370), so valid code such as zod's
    ``interface ZodType<out Output = unknown>`` reads as a syntax error. Blanked with as
    many spaces, the list parses as the compiler reads it and every position stays; a
    function of the file's bytes alone, so clean and incremental builds agree."""
    spans = [
        (match.start(), match.end())
        for match in _VARIANCE.finditer(data)
        if _in_broken_type_parameters(tree.root_node, match.start(), match.end())
    ]
    if not spans:
        return tree
    blanked = bytearray(data)
    for start, end in spans:
        blanked[start:end] = b" " * (end - start)
    again = parser.parse(bytes(blanked))
    return again if _error_count(again.root_node) < _error_count(tree.root_node) else tree


def _in_broken_type_parameters(root: Node, start: int, end: int) -> bool:
    node: Node | None = root.descendant_for_byte_range(start, end)
    for _ in range(_VARIANCE_DEPTH):
        if node is None:
            return False
        if node.type == "type_parameters":
            return node.has_error
        node = node.parent
    return False


def _error_count(root: Node) -> int:
    """The ``ERROR`` and ``MISSING`` nodes of a tree (only subtrees with errors are walked)."""
    count = 0
    pending: list[Node] = [root] if root.has_error else []
    while pending:
        node = pending.pop()
        count += node.is_error or node.is_missing
        pending.extend(child for child in node.children if child.has_error or child.is_missing)
    return count


def first_syntax_error(root: Node) -> tuple[str, int] | None:
    """The first error tree-sitter recovered from, as ``(message, line)``, or None.

    tree-sitter parses around a syntax error on its own (an ``ERROR`` node, or a
    ``MISSING`` token it inserted); the extract is then partial and says so.
    """
    if not root.has_error:
        return None
    pending: list[Node] = [root]
    while pending:
        node = pending.pop()
        if node.is_missing:
            return f"SyntaxError: missing {node.type}", node.start_point[0] + 1
        if node.is_error:
            return "SyntaxError: unexpected input", node.start_point[0] + 1
        pending.extend(child for child in reversed(node.children) if child.has_error)
    return "SyntaxError: unexpected input", root.start_point[0] + 1
