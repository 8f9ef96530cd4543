"""Per-file local extraction records shared by every adapter.

A ``FileExtract`` holds only what one file says about itself (symbols, raw import,
call, decorator and route sites, scopes and bindings), computed from that file's bytes
and path alone. It is therefore cacheable by content hash (design §5); everything that
needs other files happens later, in the global resolution phase (``resolve.py``).
All records are frozen, slotted and picklable, so worker processes can return them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeAlias

__all__ = [
    "RETURN_NAME",
    "SELF_PREFIX",
    "YIELD_NAME",
    "Binding",
    "CallSite",
    "ClassBase",
    "DecoratorSite",
    "FileExtract",
    "ImportSite",
    "LinkSite",
    "MentionSite",
    "MountSite",
    "PatternSite",
    "Range",
    "Ref",
    "RouteSite",
    "Scope",
    "SectionRecord",
    "Symbol",
]

Range: TypeAlias = tuple[int, int, int, int]
"""``(start_line, start_column, end_line, end_column)``, 1-based and inclusive."""


@dataclass(frozen=True, slots=True)
class Ref:
    """A reference expression: a head plus attribute names (``a.b.c`` -> head ``a``).

    ``kind`` is ``name`` (look ``head`` up from ``scope``), ``super`` (``super()`` in the
    method whose scope is ``scope``), ``new`` (the result of calling ``inner``) or
    ``this`` (JavaScript ``this`` in the class ``head``).
    """

    kind: str
    head: str
    scope: str
    attrs: tuple[str, ...] = ()
    inner: Ref | None = None
    reaching: tuple[Binding, ...] | None = None
    """The bindings of ``head`` that reach this use in straight-line code, when they are
    fewer than all of its scope's bindings (Python: ``a = f; a = g; a()`` calls ``g``)."""

    def dotted(self) -> str:
        """Readable dotted text (``super().m``, ``Foo().bar``, ``a.b``)."""
        if self.kind == "super":
            base = "super()"
        elif self.kind == "new" and self.inner is not None:
            base = self.inner.dotted() + "()"
        else:
            base = self.head
        return ".".join((base, *self.attrs))


Binding: TypeAlias = tuple[object, ...]
"""A name binding in one scope, tagged by its first element:

``("def", qualname)``, ``("var", qualname)``, ``("ctor", Ref, kwargs[, args])`` (a call's
result; ``args``, when any is tracked, are its positional arguments' bindings as a call
site records them), ``("partial", Ref,
wrapped)`` (``partial(f, ...)``: ``f`` when ``Ref`` is ``functools.partial``),
``("items_of", Ref, arguments)`` (``map(f, xs)``, ``enumerate(xs)``, ``zip(a, b)``,
``list(xs)``...: what they yield, when ``Ref`` is the builtin),
``("import", module, level, name_or_None)``, ``("self", class)``, ``("cls", class)``,
``("ref", Ref)`` (an alias of a name or attribute chain), ``("param", function, index,
name, default_or_None)`` (a parameter: values flow in from call sites), ``("varargs",
function, first)`` (``*rest``: a tuple of the arguments from position ``first`` on), ``("const",)``
(a literal: known, never callable), ``("items", ((key, Binding), ...))`` (a list, tuple or
constant-key dict literal, or one item stored by ``name[key] = v``), ``("iter", Binding)``
(a ``for`` target: what iterating the value yields), ``("typed", Ref)`` /
``("typed_items", Ref)`` (an annotation: an instance of the class, or a collection of
them), ``("decorated", function, refs)`` (a
function after its decorators, outermost first) and ``("opaque",)``. A function scope's pseudo-name
``RETURN_NAME`` holds the bindings of its ``return`` values; a class scope's names
``self.<attr>`` hold values assigned to ``self.<attr>`` in its methods.

Go adds ``("result", Ref, index)`` (one name of ``a, b := f()``: ``f``'s ``index``-th
result), ``("elements", Ref)`` (a slice, array or map of values of the type ``Ref``
names: nothing to call on itself) and ``("element", Ref)`` (``for _, v := range x``:
what ranging over ``x`` yields); a Go function scope binds its declared result types
under ``RETURN_NAME`` followed by the result's index (``cairn.codegraph.treesitter``).
"""

RETURN_NAME = "<return>"
"""Pseudo-name (never an identifier) under which a function scope binds its return values."""

YIELD_NAME = "<yield>"
"""Pseudo-name under which a generator function's scope binds the values it yields."""

SELF_PREFIX = "self."
"""Prefix of the class-scope pseudo-names binding instance attributes set in methods."""


@dataclass(frozen=True, slots=True)
class Scope:
    """A lexical scope: module (``""``), class or function, with its name bindings."""

    qualname: str
    kind: str
    parent: str | None
    owner_class: str | None
    bindings: tuple[tuple[str, tuple[Binding, ...]], ...]


@dataclass(frozen=True, slots=True)
class Symbol:
    """A named definition: class, function, method or module-level variable."""

    qualname: str
    kind: str
    name: str
    parent: str | None
    ranges: tuple[Range, ...]
    signature: str | None = None
    docstring: str | None = None
    body_terms: str | None = None
    """The words of its body (``cairn.codegraph.terms``), for search."""


@dataclass(frozen=True, slots=True)
class ImportSite:
    """One import statement binding (or a dynamic import with a constant specifier)."""

    module: str
    level: int
    name: str | None
    binding_kind: str
    phase: str
    form: str
    range: Range
    scope: str = ""


@dataclass(frozen=True, slots=True)
class CallSite:
    """One call expression, attributed to its enclosing named symbol (``""`` = the file).

    ``args``/``keywords`` are the value bindings of the arguments (Python; empty when
    none is worth tracking); ``implicit`` marks a call the language makes without call
    syntax (``raise E``, ``for x in obj``, applying a decorator), emitted only when it
    resolves in the repository; ``site`` is the evidence's site kind (``call``,
    ``decorator`` for a decorator's application to the definition below it, or
    ``callback`` for a function passed to a builtin that calls it).
    """

    caller: str
    ref: Ref | None
    range: Range
    construct: bool = False
    optional: bool = False
    args: tuple[Binding, ...] = ()
    keywords: tuple[tuple[str, Binding], ...] = ()
    implicit: bool = False
    site: str = "call"
    via: Ref | None = None
    """For a ``callback`` site: the function it was passed to, which must resolve to one
    of the builtins that call their function arguments (``map``, ``sorted``'s ``key``);
    for a call written in a literal run by ``eval``/``exec``, that builtin."""


@dataclass(frozen=True, slots=True)
class ClassBase:
    """One base class expression of a class."""

    cls: str
    ref: Ref
    kind: str
    range: Range


@dataclass(frozen=True, slots=True)
class DecoratorSite:
    """One decorator applied to a symbol; ``text`` is its dotted name without arguments."""

    target: str
    ref: Ref
    text: str
    range: Range


@dataclass(frozen=True, slots=True)
class RouteSite:
    """A route registration: decorator (``@app.get('/x')``) or call (``add_url_rule``)."""

    obj: Ref | None
    attr: str
    path: str
    methods: tuple[str, ...]
    handler: str | None
    handler_ref: Ref | None
    registration: str
    range: Range
    framework: str | None = None


@dataclass(frozen=True, slots=True)
class MountSite:
    """``parent.include_router(child, prefix=...)`` and the like: a prefix mount."""

    parent: Ref | None
    child: Ref | None
    prefix: str | None
    range: Range
    child_module: str | None = None


@dataclass(frozen=True, slots=True)
class PatternSite:
    """One Django URL pattern (``path``/``re_path``) from a module's ``urlpatterns``."""

    func: Ref
    route: str
    regex: bool
    view: Ref | None
    include_module: str | None
    include_ref: Ref | None
    range: Range


@dataclass(frozen=True, slots=True)
class SectionRecord:
    """One Markdown heading section: its heading path and range."""

    heading_path: tuple[str, ...]
    title: str
    level: int
    slug: str
    range: Range


@dataclass(frozen=True, slots=True)
class LinkSite:
    """A Markdown link from a section (index into sections, -1 = before any heading)."""

    section: int
    target: str
    range: Range


@dataclass(frozen=True, slots=True)
class MentionSite:
    """A Markdown code span that may name a known symbol."""

    section: int
    text: str
    range: Range


@dataclass(frozen=True, slots=True)
class FileExtract:
    """Everything one file says about itself; the unit of caching and parallel work."""

    path: str
    language: str
    symbols: tuple[Symbol, ...] = ()
    scopes: tuple[Scope, ...] = ()
    imports: tuple[ImportSite, ...] = ()
    calls: tuple[CallSite, ...] = ()
    bases: tuple[ClassBase, ...] = ()
    decorators: tuple[DecoratorSite, ...] = ()
    routes: tuple[RouteSite, ...] = ()
    mounts: tuple[MountSite, ...] = ()
    patterns: tuple[PatternSite, ...] = ()
    constants: tuple[tuple[str, str], ...] = ()
    sections: tuple[SectionRecord, ...] = ()
    links: tuple[LinkSite, ...] = ()
    mentions: tuple[MentionSite, ...] = ()
    package: str | None = None
    exports: tuple[tuple[str, str, str, Range], ...] = field(default=())
    parse_error: tuple[str, int] | None = None
    """``(error, line)`` when the file did not parse and this is what lies outside the
    broken lines (``cairn.codegraph.recover``); ``None`` for a clean parse."""
