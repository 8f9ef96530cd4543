"""Global resolution for Python: from per-file extracts to nodes and facts.

This is the second phase of indexing (design §5). It sees every file's ``FileExtract``
at once, derives module names from the package layout (``__init__.py`` chains), and
resolves each reference lexically: function and class scopes, module namespaces,
absolute and relative imports, aliases, ``__init__`` re-exports, ``self``/``cls``,
``super()``, the method resolution order of in-repository classes, locals bound to
constructor calls and module attributes. A reference that cannot be resolved exactly is
counted, never guessed. Routes (Flask, FastAPI, Django) are assembled here too, because
their prefixes come from other files.
"""

from __future__ import annotations

import builtins
import re
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from typing import Any, TypeAlias, TypeVar

from cairn.codegraph.emit import GraphEmitter, file_id, partial_marks, symbol_id
from cairn.codegraph.frame import (
    ClassOrder,
    ResolverFrame,
    VExternal,
    VInstance,
    VModule,
    VSymbol,
    distinct,
)
from cairn.codegraph.limits import MAX_PYTHON_RESOLUTION_DEPTH
from cairn.codegraph.python import ADAPTER_ID, ANY_ITEM, MAP, NAMED_KEY, STRATEGY
from cairn.codegraph.records import (
    RETURN_NAME,
    SELF_PREFIX,
    YIELD_NAME,
    Binding,
    CallSite,
    FileExtract,
    Range,
    Ref,
    Symbol,
)
from cairn.graph.registry import normalize_route_path

__all__ = ["PythonResolver", "module_names"]

LANGUAGE = "python"
BUILTIN_NAMES = frozenset(dir(builtins))
FRAMEWORK_CLASSES = {
    "flask.Flask": "flask",
    "flask.Blueprint": "flask",
    "flask.app.Flask": "flask",
    "flask.blueprints.Blueprint": "flask",
    "fastapi.FastAPI": "fastapi",
    "fastapi.APIRouter": "fastapi",
    "fastapi.applications.FastAPI": "fastapi",
    "fastapi.routing.APIRouter": "fastapi",
}
OWN_PREFIX_KWARG = {"flask": "url_prefix", "fastapi": "prefix"}
DEFAULT_METHOD_ATTRS = frozenset({"route", "api_route", "add_url_rule", "add_api_route"})
DJANGO_PATH_FUNCS = frozenset({"path", "re_path", "url"})
MAX_FLOW_ROUNDS = 2
"""Rounds of argument-to-parameter propagation (each resolves the call sites with arguments)."""
FUNCTOOLS_PARTIAL = "functools.partial"
TYPED_TAGS = frozenset({"typed", "typed_items", "typed_values"})
MAPPING_METHODS = frozenset({"values", "items", "get", "pop", "setdefault"})
"""Methods of a typed mapping whose results hold its values."""
MAX_VARARGS = 32
"""How many positions past the named parameters a ``*rest`` parameter reads flows from."""
"""Bindings an annotation declares: they stand when a flow into the name is unknown."""
FLOW_TAGS = frozenset({"ref", "ctor", "partial"})
CONSTRUCTOR = "__init__"
SELF_NAME = "self"
"""The receiver whose method calls may dispatch to a subclass's override."""
CALLABLE_KINDS = frozenset({"function", "method"})
IMPLICIT_KINDS = frozenset({"class", "method"})
"""What an implicit call (``raise E``: a class; ``for x in obj``: its methods) may reach."""
IMPLICIT_DECORATOR_KINDS = frozenset({"class", "function", "method"})
"""What applying a decorator, or a builtin calling back, may reach: any callable
defined in the repository."""
EXACT_IMPLICIT_SITES = frozenset({"decorator", "callback"})
"""Implicit calls emitted only when they resolve to one callable: applying what
``register.inclusion_tag(...)`` returns resolved, through the library's registry, to
every function ever registered (1,195 invented facts on the Django package)."""
_INDEX_KEY = re.compile(r"\[-?\d+\]\Z")
_SLICE_KEY = re.compile(r"\[(-?\d*):(-?\d*)\]\Z")
"""A slice's pseudo-attribute (``[1:3]``, ``[:-1]``): constant bounds, no step."""
"""A list or tuple item's pseudo-attribute (``[0]``), as opposed to a dict key's."""
_REGEX_GROUP = re.compile(r"\(\?P<([A-Za-z_][A-Za-z0-9_]*)>")


# ------------------------------------------------------------------ values
@dataclass(frozen=True, slots=True)
class VContainer:
    """A list, tuple or dict literal with constant keys: its items' bindings by key.

    ``mapping``: a dict whose items are its values (iterating it gives its keys, which
    are not known); ``method``: that dict's ``values``, ``items``, ``get``... read but not
    yet called (``MAPPING_METHODS``)."""

    path: str
    items: tuple[tuple[str, Binding], ...]
    mapping: bool = False
    method: str | None = None


Value = VModule | VSymbol | VInstance | VExternal | VContainer


def _sliced(container: VContainer, bounds: re.Match[str]) -> tuple[Value, ...]:
    """A list literal's slice as a list of its own (``[1:3]`` of ``[f, g, h]`` is
    ``[g, h]``, re-indexed from 0); nothing when the container is not a list."""
    if not container.items or not all(_INDEX_KEY.match(key) for key, _ in container.items):
        return ()
    ordered = sorted(container.items, key=lambda item: int(item[0][1:-1]))
    if [int(key[1:-1]) for key, _ in ordered] != list(range(len(ordered))):
        return ()  # not positions 0..n-1: a dict with int keys, or a patched list
    lower, upper = (int(text) if text else None for text in bounds.groups())
    kept = [binding for _, binding in ordered][lower:upper]
    return (VContainer(container.path, tuple((f"[{i}]", b) for i, b in enumerate(kept))),)


def _binding_scope(module: _Module, scope: str, name: str) -> str | None:
    """The function (or the using class) scope whose bindings give ``name`` where
    ``scope`` reads it, by Python's lexical rules (enclosing class bodies are skipped);
    None when the module's global namespace does."""
    current: str | None = scope
    first = True
    while current is not None:
        kind = module.scope_kind.get(current)
        if kind is None or kind == "module":
            return None
        if (kind != "class" or first) and name in module.scopes[current]:
            return current
        first = False
        current = module.scope_parent.get(current)
    return None


def _defined_in(value: Value, path: str, prefix: str) -> bool:
    """Whether ``value`` is a function or class defined inside the symbol whose
    qualified name plus a dot is ``prefix`` in file ``path``."""
    return (
        isinstance(value, VSymbol)
        and value.kind in IMPLICIT_DECORATOR_KINDS
        and value.path == path
        and value.qualname.startswith(prefix)
    )


@dataclass(frozen=True, slots=True)
class _Builtin:
    name: str


_BUILTIN_MARK = _Builtin("")


_MODULE_IMPORT = "<module>"
"""``_Module.imported``'s key for "some import binds a module itself" (not an identifier)."""


@dataclass(slots=True)
class _Module:
    """One module's tables, as resolution reads them. What a symbol, base or import *is*
    (never where it lies: no ranges, no text) is all another module's resolution can
    read, so an edit that only moves code changes no table another module reads
    (``cairn.codegraph.incremental`` compares the tables part by part)."""

    name: str
    path: str
    is_package: bool
    extract: FileExtract
    scopes: dict[str, dict[str, tuple[Binding, ...]]]
    scope_kind: dict[str, str]
    scope_parent: dict[str, str | None]
    scope_owner: dict[str, str | None]
    symbols: dict[str, list[Symbol]] = field(default_factory=dict)
    """Qualname -> its symbols, each without ranges or text."""
    members: dict[str, dict[str, Symbol]] = field(default_factory=dict)
    class_bases: dict[str, tuple[Ref, ...]] = field(default_factory=dict)
    """Class qualname -> its base expressions, in order."""
    wildcards: tuple[tuple[str, int], ...] = ()
    """The module-level ``from m import *`` imports, in order: ``(m, level)``."""
    imported: dict[str, bool] = field(default_factory=dict)
    """Each name an import anywhere in the module binds (``_MODULE_IMPORT``: one binds a
    module itself) -> True."""


def module_names(paths: Iterable[str], root_package: str | None = None) -> dict[str, str]:
    """Map each Python file path to its dotted module name from the package layout.

    A module's import root is the directory above the topmost package folder (one
    holding ``__init__.py``) among its parents. Folders between that package and the
    file need no ``__init__.py`` of their own: inside a package they are namespace
    packages (PEP 420), so ``flask/sansio/app.py`` is ``flask.sansio.app`` as
    ``from .sansio.app import App`` in ``flask/app.py`` says. A folder whose name is
    no identifier cannot be imported through, so the walk up stops there. When the
    indexed folder is itself a package (``__init__.py`` at its top), ``root_package`` is
    its name (the folder's): ``django/http/response.py`` indexed from ``django/`` is
    ``django.http.response``, so ``from django.http import ...`` resolves inside.
    """
    paths = sorted(paths)
    inits = {p.rsplit("/", 1)[0] if "/" in p else "" for p in paths if p.endswith("__init__.py")}
    prefix = f"{root_package}." if root_package and "" in inits else ""
    names: dict[str, str] = {}
    for path in paths:
        parts = _module_parts(path)
        package = path.rsplit("/", 1)[-1] == "__init__.py"
        directory_parts = parts if package else parts[:-1]
        start = _import_start(directory_parts, inits, rooted=bool(prefix))
        dotted = ".".join(parts[start:])
        if prefix and start == 0:  # the chain reaches the indexed folder: a package too
            dotted = prefix + dotted if dotted else prefix[:-1]
        if dotted:
            names[path] = dotted
    return names


def _module_parts(path: str) -> list[str]:
    """The parts of a Python file's path that its module name may be made of: the
    folders and the file's stem, a package's ``__init__`` left out."""
    parts = path[: -len(".py")].split("/")
    return parts[:-1] if parts[-1] == "__init__" else parts


def _import_start(directory_parts: Sequence[str], inits: set[str], *, rooted: bool) -> int:
    """Index of the first folder of a module's dotted name: the topmost package folder
    among ``directory_parts``' prefixes reached through identifier-named folders, or
    ``len(directory_parts)`` (the file alone) when no parent is a package.

    ``rooted``: the indexed folder is a package itself, so a chain of identifier-named
    folders that reaches it is inside that package (``sansio/app.py`` indexed from
    ``flask/`` is ``flask.sansio.app``, 0 here), whether or not a folder on the way has
    an ``__init__.py``."""
    start = len(directory_parts)
    for depth in range(len(directory_parts), 0, -1):
        if "/".join(directory_parts[:depth]) in inits:
            start = depth - 1
        elif not directory_parts[depth - 1].isidentifier():
            return start
    return 0 if rooted else start


_ROOT_SEPARATOR = "\0"
"""Between a module name several modules share and the import root of one of them: the
name-table key (``PythonResolver.by_name``) of that one module for code under that root
(``PythonResolver.find_module``)."""


def _import_root(path: str, name: str) -> str:
    """The folder a module named ``name`` at ``path`` is imported from ("" for the
    indexed folder)."""
    parts = _module_parts(path)
    return "/".join(parts[: max(0, len(parts) - len(name.split(".")))])


def _name_table(holders: Mapping[str, Sequence[_Module]]) -> dict[str, _Module]:
    """The name table of modules by their names: a name one module holds is its key;
    one several hold is keyed once per import root, ``name + _ROOT_SEPARATOR + root``,
    for the one module under that root (``x.py`` beside ``x/__init__.py`` is neither)."""
    table: dict[str, _Module] = {}
    for name, modules in holders.items():
        if len(modules) == 1:
            table[name] = modules[0]
            continue
        by_root: dict[str, list[_Module]] = {}
        for module in modules:
            by_root.setdefault(_import_root(module.path, name), []).append(module)
        for root, rooted in by_root.items():
            if len(rooted) == 1:
                table[f"{name}{_ROOT_SEPARATOR}{root}"] = rooted[0]
    return table


def module_aliases(names: Mapping[str, str]) -> dict[str, str]:
    """The longer names modules answer to through the folders above their topmost
    package, by path, for ``names`` (``module_names``' result): alias -> path.

    Where a tree's import root lies cannot be told from its folders: ``src/`` is none,
    a ``backend/`` may be, and a PEP 420 namespace shared by several distributions
    (OpenTelemetry's ``opentelemetry/``, ``google/cloud/``) has no ``__init__.py`` to
    show it. So a module keeps its name from its topmost package and is also found by
    the imports that name it through the identifier-named folders above that package
    (``opentelemetry.context`` for ``opentelemetry-api/src/opentelemetry/context/``,
    named ``context``). An alias two modules share names neither; one that is a
    module's own name is that module's.
    """
    found: dict[str, list[str]] = {}
    for path, name in names.items():
        parts = _module_parts(path)
        for depth in range(len(parts) - len(name.split(".")) - 1, -1, -1):
            if not parts[depth].isidentifier():
                break
            found.setdefault(".".join(parts[depth:]), []).append(path)
    own = set(names.values())
    return {
        alias: paths[0]
        for alias, paths in sorted(found.items())
        if len(paths) == 1 and alias not in own
    }


_K = TypeVar("_K")
_V = TypeVar("_V")


_UNSET = object()


Redo: TypeAlias = tuple[Any, ...]
"""How to compute a memo entry again in a later round (``PythonResolver.answer_again``):
``(REDO_NAMESPACE, module path, name)``, ``(REDO_RETURNS | REDO_OWN_RETURNS,
function)``, or ``(REDO_LOCAL, path, scope, name)``."""

REDO_NAMESPACE = "namespace"
REDO_RETURNS = "returns"
REDO_OWN_RETURNS = "own returns"
REDO_LOCAL = "local"


class _Tokens(dict[Any, Any]):
    """One object per distinct token: a round's kept reads name each token millions of
    times (Django sdist: ~5 million reads of ~400 thousand tokens), each read its own
    tuple until interned here."""

    def __missing__(self, key: Any) -> Any:
        self[key] = key
        return key


class _Reads:
    """What one memoised computation read: tokens, and the ``_Reads`` of the entries that
    answered it (a shared part is held once, not copied into every reader); its set is
    made once, when first asked (``flat_reads``). An entry that can be computed again on
    its own keeps how (``redo``) and its answer (``value``), so a later round can tell
    whether an edit changed the answer, not only what it read (``reads_again``)."""

    __slots__ = ("children", "flat", "redo", "tokens", "value")

    def __init__(
        self,
        tokens: tuple[Any, ...],
        children: tuple[_Reads, ...],
        redo: Redo | None = None,
        value: object = None,
    ) -> None:
        self.tokens = tokens
        self.children = children
        self.flat: set[Any] | None = None
        self.redo = redo
        self.value = value


CARRIED_CACHES = (
    "_namespace_cache",
    "_returns_cache",
    "_own_returns_cache",
    "_iterated_cache",
    "_local_cache",
    "_reaching_cache",
    "_param_cache",
    "_overrides_cache",
    "_instance_cache",
    "_descendants_cache",
    "_calls_back_cache",
)
"""The memos a round's entries may be answered from the last round's (``carry``): those
read through ``_recall``, each entry kept for good with what it read."""

Memo: TypeAlias = "tuple[dict[str, dict[Any, Any]], dict[tuple[int, object], _Reads]]"
"""One phase's memo (``take_memo``): its caches by name, and each entry's reads by
``(id(cache), key)``."""

Judged: TypeAlias = "tuple[_Reads, tuple[_Reads, ...]]"
"""A part judged again (``PythonResolver.reads_again``): what it reads now, and the memo
entries computed again that stand in it for their last selves."""


def flat_reads(node: _Reads, made: list[_Reads] | None = None) -> set[Any]:
    """``node``'s reads as one set, each node's made once (iteratively: the chains of
    entries answering each other run as deep as resolution does); the nodes whose set
    was made are added to ``made``."""
    stack = [node]
    while stack:
        top = stack[-1]
        if top.flat is not None:
            stack.pop()
            continue
        pending = [child for child in top.children if child.flat is None]
        if pending:
            stack.extend(pending)
            continue
        tokens = set(top.tokens)
        for child in top.children:
            tokens.update(child.flat or ())
        top.flat = tokens
        if made is not None:
            made.append(top)
        stack.pop()
    assert node.flat is not None
    return node.flat


def reaches(node: _Reads, changed: AbstractSet[Any], memo: dict[int, bool]) -> bool:
    """Whether ``node``, or an entry that answered it, read a token of ``changed`` (by
    ``id`` in ``memo``): no set of its reads is made, as kept nodes hold none."""
    stack = [node]
    while stack:
        top = stack[-1]
        if id(top) in memo:
            stack.pop()
            continue
        if not changed.isdisjoint(top.tokens):
            memo[id(top)] = True
            stack.pop()
            continue
        pending = [child for child in top.children if id(child) not in memo]
        if pending:
            stack.extend(pending)
            continue
        memo[id(top)] = any(memo[id(child)] for child in top.children)
        stack.pop()
    return memo[id(node)]


def _stands(node: _Reads, judged: Sequence[Judged | None]) -> Judged:
    """``node`` as it reads now, its parts judged to stand (``judged``, in order): the
    very node when each part is its own self, else a new one over the new parts, with
    the entries computed again among them."""
    parts = [found for found in judged if found is not None]
    children = tuple(new for new, _ in parts)
    if all(new is old for new, old in zip(children, node.children, strict=True)):
        return node, ()
    fresh = tuple(dict.fromkeys(entry for _, held in parts for entry in held))
    return _Reads(node.tokens, children, node.redo, node.value), fresh


_MARK_SPLIT = 1 << 40
"""A mark is ``tokens logged * _MARK_SPLIT + entries that answered`` (two list lengths
in one int; -1 when untracked)."""


def _same(a: object, b: object) -> bool:
    """Whether a guarded key's new value is its assumed one (an empty assumption and a
    computed None alike)."""
    if a == () and b is None:
        return True
    if isinstance(a, tuple) and isinstance(b, tuple):
        return set(a) == set(b)
    return a == b


_NO_CUT = sys.maxsize
"""``PythonResolver._low`` when no cut happened in the computation under way."""
_DEPTH_CUT = -1
"""The level of a cut by ``MAX_PYTHON_RESOLUTION_DEPTH``: below every key, since what was cut
depends on how deep the whole chain entered."""


def _node_ids(resolved: tuple[tuple[Value, str], ...]) -> set[str]:
    """The distinct symbols a resolution names (implicit targets are symbols)."""
    return {value.node_id for value, _ in resolved if isinstance(value, VSymbol)}


_Arguments = tuple[Binding, ...]
"""A call's positional arguments' bindings (``("ctor", ref, kwargs, args)``)."""

OWN_RETURN = "<own-return>"
"""Guard key suffix of ``_own_returns`` (never an identifier)."""


def _arguments(binding: Binding) -> _Arguments | None:
    """The positional arguments a ``ctor`` binding recorded; None when it recorded none."""
    if len(binding) < 4:
        return None
    args = binding[3]
    assert isinstance(args, tuple)
    return args


def _returned_param(binding: Binding, names: dict[str, tuple[Binding, ...]]) -> int | None:
    """The index of the parameter a ``return`` binding returns as it is, or None."""
    if binding[0] != "ref":
        return None
    ref = binding[1]
    assert isinstance(ref, Ref)
    if ref.kind != "name" or ref.attrs or ref.inner is not None:
        return None
    bound = names.get(ref.head, ())
    params = [b for b in bound if b[0] == "param"]
    # An annotation (``cls: type``) does not rebind the parameter; anything else does.
    if len(params) != 1 or any(b[0] != "param" and b[0] not in TYPED_TAGS for b in bound):
        return None
    index = params[0][2]
    return index if isinstance(index, int) else None


FlowKey: TypeAlias = tuple[str, str]
"""A parameter: ``(function node ID, position or "=name")``."""
FlowItem: TypeAlias = tuple[str, Binding]
"""An argument flowing into a parameter: ``(path of the call's module, its binding)``."""
FlowEdge: TypeAlias = tuple[FlowKey, FlowItem]
FlowParts: TypeAlias = tuple[tuple[FlowEdge, ...], tuple[FlowEdge, ...]]
"""One module's flows: from its call sites, then from its decorators."""


def merge_flows(parts: Sequence[FlowParts]) -> dict[FlowKey, tuple[FlowItem, ...]]:
    """The flow table of the modules' ``parts`` (in path order): every module's call
    sites first, then every module's decorators, each item once per parameter."""
    flows: dict[FlowKey, list[FlowItem]] = {}
    for which in (0, 1):
        for part in parts:
            for key, item in part[which]:
                items = flows.setdefault(key, [])
                if item not in items:
                    items.append(item)
    return {key: tuple(items) for key, items in sorted(flows.items())}


def merge_flows_again(
    table: Mapping[FlowKey, tuple[FlowItem, ...]],
    before: Mapping[str, FlowParts],
    now: Mapping[str, FlowParts],
) -> Mapping[FlowKey, tuple[FlowItem, ...]]:
    """``merge_flows`` of ``now``'s parts (path -> parts, in path order) from ``table``,
    the merge of ``before``'s: only the keys a changed module's parts name, before or
    now, are gathered again (one pass over every edge, against a pass that also builds
    and sorts every key's list); ``table`` itself when no module changed."""
    changed = [
        path
        for path in before.keys() | now.keys()
        if (old := before.get(path)) is not (new := now.get(path)) and old != new
    ]
    affected: set[FlowKey] = set()
    for path in changed:
        for parts in (before.get(path), now.get(path)):
            if parts is not None:
                affected.update(key for which in parts for key, _ in which)
    if not affected:
        return table
    gathered: dict[FlowKey, list[FlowItem]] = {key: [] for key in affected}
    for which in (0, 1):
        for parts in now.values():
            for key, item in parts[which]:
                items = gathered.get(key)
                if items is not None and item not in items:
                    items.append(item)
    merged = dict(table)
    grown = False
    for key, items in gathered.items():
        if items:
            grown = grown or key not in merged
            merged[key] = tuple(items)
        else:
            merged.pop(key, None)
    return dict(sorted(merged.items())) if grown else merged


def _is_base(value: Value) -> bool:
    if isinstance(value, VSymbol):
        return value.kind == "class"
    return isinstance(value, VExternal)


def _django_regex(route: str) -> str:
    text = route.removeprefix("^").removesuffix("$")
    out: list[str] = []
    index = 0
    while index < len(text):
        match = _REGEX_GROUP.match(text, index)
        if match is None:
            out.append(text[index])
            index += 1
            continue
        depth, cursor = 1, match.end()
        while cursor < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[cursor], 0)
            cursor += 1
        out.append("{" + match.group(1) + "}")
        index = cursor
    return "".join(out).replace("\\", "")


NodeSpec = tuple[str, str, dict[str, Any]]
"""A node as the resolver emits it: ID, kind and attributes (None values dropped later)."""


def python_node_specs(module_name: str, extract: FileExtract) -> list[NodeSpec]:
    """The nodes of one Python file, in emission order: the file, then each symbol.

    A pure function of the file's module name and extract, so a worker can build the
    same nodes (and their documents) as the resolver while it resolves.
    """
    path = extract.path
    partial, symbol_partial = partial_marks(extract.parse_error)
    specs: list[NodeSpec] = [
        (
            file_id(path),
            "file",
            {
                "name": path.rsplit("/", 1)[-1],
                "qualified_name": module_name,
                "path": path,
                "language": LANGUAGE,
                "partial_parse": partial,
            },
        )
    ]
    for symbol in extract.symbols:
        specs.append(
            (
                symbol_id(symbol.kind, path, symbol.qualname),
                symbol.kind,
                {
                    "name": symbol.name,
                    "qualified_name": f"{module_name}.{symbol.qualname}",
                    "path": path,
                    "range": list(symbol.ranges[0]),
                    "language": LANGUAGE,
                    "signature": symbol.signature,
                    "docstring": symbol.docstring,
                    "body_terms": symbol.body_terms,
                    "partial_parse": symbol_partial,
                },
            )
        )
    return specs


def self_attribute_table(modules: Iterable[_Module]) -> dict[str, frozenset[tuple[str, str]]]:
    """Attribute name -> the scopes (``(path, qualname)``) that bind ``self.<name>``."""
    table: dict[str, set[tuple[str, str]]] = {}
    start = len(SELF_PREFIX)
    for module in modules:
        for qualname, names in module.scopes.items():
            for name in names:
                if name.startswith(SELF_PREFIX):
                    table.setdefault(name[start:], set()).add((module.path, qualname))
    return {attr: frozenset(holders) for attr, holders in table.items()}


class PythonResolver(ResolverFrame):
    """Resolves every Python extract and emits its nodes and facts."""

    def __init__(
        self,
        extracts: Sequence[FileExtract],
        emitter: GraphEmitter,
        root_package: str | None = None,
        names: dict[str, str] | None = None,
        known: Mapping[str, _Module] | None = None,
    ) -> None:
        """``known``: module tables of an earlier resolver (``cairn watch``'s last round),
        reused for the very same extract object under the same name (they are a
        function of the two, and resolution never changes them)."""
        super().__init__()
        self.emit = emitter
        if names is None:  # the module names of these paths (passed in: already known)
            names = module_names((e.path for e in extracts), root_package)
        self.by_name: dict[str, _Module] = {}
        self.by_path: dict[str, _Module] = {}
        holders: dict[str, list[_Module]] = {}
        for extract in sorted(extracts, key=lambda e: e.path):
            name = names.get(extract.path)
            if name is None:
                continue
            held = known.get(extract.path) if known is not None else None
            if held is not None and held.extract is extract and held.name == name:
                module = held
            else:
                module = self.module_of(name, extract)
            self.by_path[extract.path] = module
            holders.setdefault(name, []).append(module)
        self.by_name.update(_name_table(holders))
        for alias, path in module_aliases(names).items():
            if path in self.by_path:
                self.by_name[alias] = self.by_path[path]
        self.tops = {name.split(".", 1)[0] for name in names.values()}
        self.call_stats: dict[str, Counter[str]] = {p: Counter() for p in self.by_path}
        self._namespace_cache: dict[tuple[str, str], tuple[Value, ...] | _Builtin] = {}
        # Keys being computed, each with its nesting level; ``_low`` is the lowest level
        # a cut (a key met again, or the depth bound) reached inside the computation
        # under way. A result that cut an enclosing key's computation short depends on
        # where resolution entered, so it is never memoised: every memo holds what its
        # key resolves to from anywhere, and the graph does not depend on module order.
        self._in_progress: dict[tuple[object, ...], int] = {}
        self._low = _NO_CUT
        self._provisional: dict[tuple[int, object], tuple[object, int, Any]] = {}
        self._assumed: dict[tuple[object, ...], object] = {}
        self._members: dict[int, list[tuple[object, ...]]] = {}
        self._changed: set[int] = set()
        self._tagged: dict[int, list[tuple[int, object]]] = {}
        self._subclasses: dict[str, list[VSymbol]] | None = None
        self._self_attributes = self_attribute_table(self.by_path.values())
        self._overrides_cache: dict[tuple[str, str], list[str]] = {}
        self._instance_cache: dict[tuple[str, str], tuple[Value, ...]] = {}
        self._descendants_cache: dict[str, list[VSymbol]] = {}
        self.own_kwargs: dict[str, dict[str, str]] = {}
        self.flows: dict[tuple[str, str], tuple[tuple[str, Binding], ...]] = {}
        self._returns_cache: dict[str, tuple[Value, ...]] = {}
        self._own_returns_cache: dict[str, tuple[Value, ...]] = {}
        self._pass_through_cache: dict[str, tuple[int, ...]] = {}
        self._calls_back_cache: dict[tuple[str, Ref], bool] = {}
        self._iterated_cache: dict[tuple[str, Binding], tuple[Value, ...]] = {}
        self._local_cache: dict[tuple[str, str], tuple[Value, ...]] = {}
        self._reaching_cache: dict[tuple[str, str, tuple[Binding, ...]], tuple[Value, ...]] = {}
        self._param_cache: dict[tuple[str, str], tuple[Value, ...] | None] = {}
        self._bound_methods: dict[VSymbol, VSymbol] = {}
        # Read tracking (``note_reads``): what the whole-program tables were asked, in
        # order, since the current module's resolution began (tokens, and the reads of
        # each memo entry that answered); each entry kept for good keeps what computing
        # it read, so another module answered from it reads that too.
        self._log: list[Any] | None = None
        self._answered: list[_Reads] = []
        self._reads_of: dict[tuple[int, object], _Reads] = {}
        self._flattened: list[_Reads] = []
        self._tokens = _Tokens()
        # The last round's memo of this phase (``carry``): its caches by the id of this
        # round's cache of the same kind, its entries' reads, the stale tokens and
        # which entries were found to read one.
        self._carried: tuple[Any, ...] | None = None

    def mro(self, cls: VSymbol) -> ClassOrder:
        cached = self._mro_cache.get(cls.node_id)
        if cached is not None:
            self._replayed(self._mro_cache, cls.node_id)
            return cached
        level = len(self._in_progress)
        mark = self._mark()
        outer, self._low = self._low, _NO_CUT
        try:
            result = super().mro(cls)
        finally:
            low = self._low
            self._low = min(outer, low)
        if low < level:
            self._mro_cache.pop(cls.node_id, None)
        else:
            self._noted(self._mro_cache, cls.node_id, mark, ("p", cls.path))
        return result

    # --------------------------------------------------------- memo purity
    def _cut_at(self, level: int) -> tuple[()]:
        """Note a cut at ``level`` (an in-progress key's, or ``_DEPTH_CUT``): nothing."""
        if level < self._low:
            self._low = level
        return ()

    def _hit(self, key: tuple[object, ...]) -> object:
        """A key met again while it is computed: note the cut; its assumed value."""
        self._cut_at(self._in_progress[key])
        return self._assumed.get(key, ())

    def note_reads(self, log: list[Any] | None, answered: list[_Reads] | None = None) -> None:
        """Track reads into ``log`` (``cairn.codegraph.incremental`` gives the list its
        watched tables append to; None stops) and the entries that answered into
        ``answered``: each memo entry kept for good keeps what computing it read, and
        answering from it appends that to ``answered``. Memos are forgotten either way:
        entries made untracked know nothing of their reads."""
        self.forget()
        self._log = log
        self._answered = [] if answered is None else answered

    def _mark(self) -> int:
        """Where a computation that may be memoised begins (-1: untracked)."""
        if self._log is None:
            return -1
        return len(self._log) * _MARK_SPLIT + len(self._answered)

    def _noted(
        self,
        cache: object,
        key: object,
        mark: int,
        *also: object,
        redo: Redo | None = None,
        value: object = None,
    ) -> None:
        """Keep what the computation begun at ``mark`` read (and ``also``) with its memo
        entry, and how to compute it again (``redo``) with its ``value``; ``answered``
        keeps that one node in its place."""
        log = self._log
        if log is None or mark < 0:
            return
        logged, answered = divmod(mark, _MARK_SPLIT)
        nested = self._answered
        tokens = tuple(map(self._tokens.__getitem__, (*log[logged:], *also)))
        reads = _Reads(tokens, tuple(nested[answered:]), redo, value)
        del log[logged:]
        del nested[answered:]
        nested.append(reads)
        self._reads_of[(id(cache), key)] = reads

    def _cycle_reads(self, mark: int) -> _Reads | None:
        """What the computation begun at ``mark`` read so far (None: untracked)."""
        if self._log is None or mark < 0:
            return None
        logged, answered = divmod(mark, _MARK_SPLIT)
        tokens = tuple(map(self._tokens.__getitem__, self._log[logged:]))
        return _Reads(tokens, tuple(self._answered[answered:]))

    def _replayed(self, cache: object, key: object) -> None:
        """An answer from a memo entry: note what computing it read."""
        if self._log is not None:
            reads = self._reads_of.get((id(cache), key))
            if reads is not None:
                self._answered.append(reads)

    def _guarded(
        self, key: tuple[object, ...], compute: Callable[[], _V], mark: int = -1
    ) -> tuple[_V, int]:
        level = len(self._in_progress)
        if mark < 0:
            mark = self._mark()
        for _round in range(32):
            self._in_progress[key] = level
            self._changed.discard(level)
            outer, self._low = self._low, _NO_CUT
            try:
                value = compute()
            finally:
                del self._in_progress[key]
                low = self._low
                self._low = min(outer, low)
            if low != level:
                break
            # The root of a cycle: every member answered a hit with its last value.
            if _same(self._assumed.get(key, ()), value) and level not in self._changed:
                cycle: _Reads | None = None
                for held in self._tagged.pop(level, ()):
                    found = self._provisional.pop(held, None)
                    if found is not None:
                        found[2][held[1]] = found[0]
                        if self._log is not None:  # a member read what the whole cycle read
                            cycle = cycle or self._cycle_reads(mark)
                            if cycle is not None:
                                self._reads_of[(id(found[2]), held[1])] = cycle
                low = _NO_CUT
                break
            self._assumed[key] = value
            for held in self._tagged.pop(level, ()):
                self._provisional.pop(held, None)
        members = self._members.pop(level, [])
        if low < level:
            # A member of a cycle rooted below: its value is an assumption there until
            # that root's rounds stop changing anything.
            previous = self._assumed.get(key, _UNSET)
            if previous is _UNSET or not _same(previous, value):
                self._changed.add(low)
            self._assumed[key] = value
            self._members.setdefault(low, []).extend((*members, key))
            if level in self._changed:
                self._changed.add(low)
            moved = self._tagged.pop(level, [])
            for held in moved:
                found = self._provisional.get(held)
                if found is not None:
                    self._provisional[held] = (found[0], low, found[2])
            self._tagged.setdefault(low, []).extend(moved)
        else:
            for member in members:
                self._assumed.pop(member, None)
            self._assumed.pop(key, None)
        self._changed.discard(level)
        self._settle(level)
        return value, (_NO_CUT if low >= level else low)

    def _settle(self, level: int) -> None:
        """The computation at ``level`` ended: forget what was cut short by it (and, at
        the outermost level, what the depth bound cut)."""
        for held in self._tagged.pop(level, ()):
            self._provisional.pop(held, None)
        if level == 0:
            for held in self._tagged.pop(_DEPTH_CUT, ()):
                self._provisional.pop(held, None)

    def _recall(self, cache: Mapping[_K, _V], key: _K) -> tuple[bool, _V | None]:
        """``(True, value)`` when ``key`` is memoised for good or, while what it depends
        on is under way, provisionally (then its cut is noted again); else ``(False,
        None)``."""
        if key in cache:
            self._replayed(cache, key)
            return True, cache[key]
        held = self._provisional.get((id(cache), key))
        if held is None:
            if self._carried is not None and self._adopted(cache, key):
                self._replayed(cache, key)
                return True, cache[key]
            return False, None
        self._cut_at(held[1])
        return True, held[0]  # type: ignore[return-value]

    def _adopted(self, cache: Mapping[Any, Any], key: object) -> bool:
        """Whether the last round's entry of ``key`` (``carry``) holds this round, now
        put in ``cache``: kept for good then, and nothing it read changed (nor did it
        walk a whole table)."""
        assert self._carried is not None
        caches, reads_of, stale, reached = self._carried
        old = caches.get(id(cache))
        if old is None or key not in old:
            return False
        node = reads_of.get((id(old), key))
        if node is None or reaches(node, stale, reached):
            return False
        cache[key] = old[key]  # type: ignore[index]
        self._reads_of[(id(cache), key)] = node
        return True

    def carry(self, memo: Memo | None, stale: AbstractSet[Any]) -> None:
        """Answer from ``memo`` (the same phase's memo of the last round, ``take_memo``)
        each entry none of whose reads is in ``stale`` (what changed since, and the
        walks of whole tables): memos never change an answer, and what an entry read
        is all its answer depends on. None stops (``forget`` too)."""
        if memo is None:
            self._carried = None
            return
        caches, reads_of = memo
        by_id = {id(getattr(self, name)): old for name, old in caches.items()}
        self._carried = (by_id, reads_of, stale, {})

    def take_memo(self) -> Memo:
        """This phase's memo (the entries kept for good, with what they read), for the
        next round's ``carry``; the resolver starts a new one."""
        caches = {name: getattr(self, name) for name in CARRIED_CACHES}
        for name in CARRIED_CACHES:
            setattr(self, name, {})
        memo = (caches, self._reads_of)
        self._reads_of = {}
        return memo

    def _keep(
        self,
        cache: dict[_K, _V],
        key: _K,
        value: _V,
        low: int,
        mark: int,
        *also: object,
        redo: Redo | None = None,
    ) -> None:
        """Memoise ``value`` for good when whole (``low`` is ``_NO_CUT``; what it read
        since ``mark``, and ``also``, is kept with it, and ``redo``), else until the
        computation at level ``low`` ends (a cycle through it is then re-entered
        alike)."""
        if low == _NO_CUT:
            cache[key] = value
            self._noted(cache, key, mark, *also, redo=redo, value=value)
            return
        held = (id(cache), key)
        self._provisional[held] = (value, low, cache)
        self._tagged.setdefault(low, []).append(held)

    def _memoised(self, cache: dict[_K, _V], key: _K, compute: Callable[[], _V]) -> _V:
        found, value = self._recall(cache, key)
        if found:
            return value  # type: ignore[return-value]
        guard = ("<memo>", id(cache), key)
        if guard in self._in_progress:
            return self._hit(guard)  # type: ignore[return-value]
        mark = self._mark()
        made, low = self._guarded(guard, compute, mark)
        self._keep(cache, key, made, low, mark)
        return made

    @staticmethod
    def module_of(name: str, extract: FileExtract) -> _Module:
        """The resolver's tables of one module: a function of its name and extract."""
        module = _Module(
            name=name,
            path=extract.path,
            is_package=extract.path.endswith("__init__.py"),
            extract=extract,
            scopes={s.qualname: dict(s.bindings) for s in extract.scopes},
            scope_kind={s.qualname: s.kind for s in extract.scopes},
            scope_parent={s.qualname: s.parent for s in extract.scopes},
            scope_owner={s.qualname: s.owner_class for s in extract.scopes},
        )
        for full in extract.symbols:
            symbol = Symbol(full.qualname, full.kind, full.name, full.parent, ())
            module.symbols.setdefault(symbol.qualname, []).append(symbol)
            if symbol.parent is not None and symbol.kind in ("method", "class"):
                module.members.setdefault(symbol.parent, {})[symbol.name] = symbol
        bases: dict[str, list[Ref]] = {}
        for base in extract.bases:
            bases.setdefault(base.cls, []).append(base.ref)
        module.class_bases = {cls: tuple(refs) for cls, refs in bases.items()}
        module.wildcards = tuple(
            (site.module, site.level)
            for site in extract.imports
            if site.binding_kind == "wildcard" and not site.scope
        )
        for site in extract.imports:
            if site.binding_kind == "module":
                module.imported[_MODULE_IMPORT] = True
            if site.name is not None:
                module.imported[site.name] = True
        return module

    # ------------------------------------------------------------- values
    def _vsymbol(self, module: _Module, symbol: Symbol) -> VSymbol:
        return VSymbol(
            symbol_id(symbol.kind, module.path, symbol.qualname),
            symbol.kind,
            module.path,
            symbol.qualname,
            f"{module.name}.{symbol.qualname}",
        )

    def find_module(self, name: str, near: _Module | None) -> _Module | None:
        """The module ``name`` is for code in ``near``: the one so named, or, where
        several are (``app.models`` in two services), the one under the import root
        nearest above ``near``'s (its own first), as Python finds it when each
        service runs from its own folder; None when there is none."""
        found = self.by_name.get(name)
        if found is not None or near is None:
            return found
        root = _import_root(near.path, near.name)
        while True:
            found = self.by_name.get(f"{name}{_ROOT_SEPARATOR}{root}")
            if found is not None or not root:
                return found
            root = root.rpartition("/")[0]

    def _module_value(self, name: str, near: _Module) -> VModule | None:
        module = self.find_module(name, near)
        if module is not None:
            return VModule(module.name, module.path)
        if name.split(".", 1)[0] in self.tops:
            return None
        return VModule(name, None)

    def _absolute(self, module: _Module, target: str, level: int) -> str | None:
        if level == 0:
            return target
        package = module.name if module.is_package else module.name.rpartition(".")[0]
        parts = package.split(".") if package else []
        if level - 1 > len(parts):
            return None
        base = parts[: len(parts) - (level - 1)]
        full = [*base, *([target] if target else [])]
        return ".".join(full) or None

    def lookup(
        self, module: _Module, scope: str, name: str, depth: int = 0
    ) -> tuple[Value, ...] | _Builtin:
        """Resolve a bare name used in ``scope`` of ``module`` (lexical rules)."""
        if depth > MAX_PYTHON_RESOLUTION_DEPTH:
            return self._cut_at(_DEPTH_CUT)
        owner = _binding_scope(module, scope, name)
        if owner is None:
            return self.namespace(module, name, depth)
        return self._local(module, owner, name, depth)

    def _local(self, module: _Module, scope: str, name: str, depth: int) -> tuple[Value, ...]:
        """The values ``name`` is bound to in a function or class ``scope`` that binds it
        (memoised with its reads, and computed again on its own in a later round: a
        parameter's values gather every caller's arguments, and a body edit that binds
        the name again mostly leaves them as they were)."""
        key = (f"{module.path}#{scope}", name)
        known, cached = self._recall(self._local_cache, key)
        if known:
            assert cached is not None
            return cached
        if key in self._in_progress:
            return self._hit(key)  # type: ignore[return-value]
        mark = self._mark()
        found, low = self._guarded(
            key,
            lambda: self._bindings(module, scope, name, module.scopes[scope][name], depth + 1),
            mark,
        )
        redo = (REDO_LOCAL, module.path, scope, name)
        self._keep(self._local_cache, key, found, low, mark, ("p", module.path), redo=redo)
        return found

    def _reaching(self, module: _Module, ref: Ref, depth: int) -> tuple[Value, ...]:
        """The values of a name from the bindings that reach its use (``ref.reaching``)."""
        assert ref.reaching is not None
        key = (f"{module.path}#{ref.scope}", ref.head, ref.reaching)
        if depth > MAX_PYTHON_RESOLUTION_DEPTH:
            return self._cut_at(_DEPTH_CUT)
        if key in self._in_progress:
            return self._hit(key)  # type: ignore[return-value]
        known, cached = self._recall(self._reaching_cache, key)
        if known:
            assert cached is not None
            return cached
        reaching = ref.reaching
        mark = self._mark()
        found, low = self._guarded(
            key, lambda: self._bindings(module, ref.scope, ref.head, reaching, depth), mark
        )
        self._keep(self._reaching_cache, key, found, low, mark, ("p", module.path))
        return found

    def namespace(self, module: _Module, name: str, depth: int = 0) -> tuple[Value, ...] | _Builtin:
        """Resolve ``name`` in a module's global namespace (memoised, cycle-safe; by
        path: two modules may share a name, ``app.models`` of two services)."""
        key = (module.path, name)
        known, cached = self._recall(self._namespace_cache, key)
        if known:
            assert cached is not None
            return cached
        mark = self._mark()
        if depth > MAX_PYTHON_RESOLUTION_DEPTH:
            return self._cut_at(_DEPTH_CUT)
        if key in self._in_progress:
            return self._hit(key)  # type: ignore[return-value]

        def compute() -> tuple[Value, ...] | _Builtin:
            bindings = module.scopes.get("", {}).get(name)
            starred = self._wildcard(module, name, depth) if bindings is None else ()
            if bindings is not None:
                return self._bindings(module, "", name, bindings, depth)
            if starred:
                return starred
            return _Builtin(name) if name in BUILTIN_NAMES else ()

        result, low = self._guarded(key, compute, mark)
        self._keep(
            self._namespace_cache,
            key,
            result,
            low,
            mark,
            ("n", module.name),
            redo=(REDO_NAMESPACE, module.path, name),
        )
        return result

    def _wildcard(self, module: _Module, name: str, depth: int) -> tuple[Value, ...]:
        """``name`` bound by a module-level ``from m import *`` of an in-repository module:
        the last such import that binds it, as Python rebinds the name at each one."""
        if name.startswith("_"):
            return ()
        for target, level in reversed(module.wildcards):
            absolute = self._absolute(module, target, level)
            source = self.find_module(absolute, module) if absolute is not None else None
            if source is None or source is module:
                continue
            found = self.namespace(source, name, depth + 1)
            if isinstance(found, tuple) and found:
                return found
            sub = self.find_module(f"{source.name}.{name}", source)
            if sub is not None and (
                source.imported.get(_MODULE_IMPORT, False) or source.imported.get(name, False)
            ):
                return (VModule(sub.name, sub.path),)
        return ()

    def _bindings(
        self,
        module: _Module,
        scope: str,
        name: str,
        bindings: Sequence[Binding],
        depth: int,
    ) -> tuple[Value, ...]:
        """Every value ``name`` may have; a binding whose value is unknown makes the whole
        name unknown, unless an annotation declares its type (then the unknown binding
        is of that type, and the declared instances stand)."""
        values: list[Value] = []
        unknown = False
        for binding in bindings:
            found = self._binding(module, scope, name, binding, depth)
            if found is None:
                unknown = True
                continue
            values.extend(found)
        if unknown and not any(binding[0] in TYPED_TAGS for binding in bindings):
            return ()
        return distinct(values)

    def _binding(
        self, module: _Module, scope: str, name: str, binding: Binding, depth: int
    ) -> tuple[Value, ...] | None:
        tag = binding[0]
        if tag == "def":
            qualname = str(binding[1])
            return tuple(
                self._vsymbol(module, s)
                for s in module.symbols.get(qualname, ())
                if s.kind in ("class", "function", "method")
            )
        if tag == "var":
            symbols = module.symbols.get(str(binding[1]), ())
            return tuple(self._vsymbol(module, s) for s in symbols if s.kind == "variable")
        if tag in ("const", "literal"):
            return ()
        if tag == "items":
            items = binding[1]
            assert isinstance(items, tuple)
            return (VContainer(module.path, items),)
        if tag == "ref":
            ref = binding[1]
            assert isinstance(ref, Ref)
            resolved = self.resolve(module, ref, depth + 1)
            values = () if isinstance(resolved, _Builtin) else tuple(v for v, _ in resolved)
            if values:
                return values
            return self._module_variable(module, scope, name)
        if tag == "param":
            return self._param(module, binding, depth)
        if tag == "varargs":
            return self._varargs(module, binding)
        if tag == "decorated":
            return self._decorated(module, binding, depth)
        if tag == "iter":
            inner = binding[1]
            assert isinstance(inner, tuple)
            found = self._iterated(module, inner, depth)
            if len(binding) == 3:  # ``for k, v in ...``: one element of what each step yields
                key = str(binding[2])
                found = distinct(
                    item
                    for value in found
                    if isinstance(value, VContainer)
                    for item in self.getattr(value, key, depth + 1)
                )
            return found or None
        if tag == "typed_values":  # a mapping of instances: any value is one
            items = ((ANY_ITEM, ("typed", binding[1])),)
            return (VContainer(module.path, items, mapping=True),)
        if tag == "typed_items":  # a collection of instances: any item is one
            return (VContainer(module.path, ((ANY_ITEM, ("typed", binding[1])),)),)
        if tag == "typed":  # an annotation: an instance of the in-repository class it names
            ref = binding[1]
            assert isinstance(ref, Ref)
            resolved = self.resolve(module, ref, depth + 1)
            if isinstance(resolved, _Builtin):
                return None
            instances = tuple(
                VInstance(value, None, None)
                for value, _ in resolved
                if isinstance(value, VSymbol) and value.kind == "class"
            )
            return instances or None
        if tag in ("self", "cls"):
            cls = self._class(module, str(binding[1]))
            if cls is None:
                return None
            return (VInstance(cls, None, None),) if tag == "self" else (cls,)
        if tag == "ctor":
            ref, kwargs = binding[1], binding[2]
            assert isinstance(ref, Ref) and isinstance(kwargs, tuple)
            origin = (
                symbol_id("variable", module.path, name)
                if scope == ""
                else f"local:{module.path}#{scope}.{name}"
            )
            self.own_kwargs[origin] = dict(kwargs)
            made = self._call_result(module, ref, origin, depth, _arguments(binding))
            if made:
                return made
            return self._module_variable(module, scope, name)
        if tag == "partial":
            return self._partial(module, scope, name, binding, depth)
        if tag == "items_of":
            return self._items_of(module, scope, name, binding, depth)
        if tag == "import":
            target, level, imported = str(binding[1]), int(str(binding[2])), binding[3]
            absolute = self._absolute(module, target, level)
            if absolute is None:
                return None
            if imported is None:
                head = self._module_value(absolute, module)
                return (head,) if head is not None else None
            base = self._module_value(absolute, module)
            if base is None:
                return None
            return self.getattr(base, str(imported), depth + 1) or None
        return None

    def _partial(
        self, module: _Module, scope: str, name: str, binding: Binding, depth: int
    ) -> tuple[Value, ...] | None:
        """``p = partial(f, ...)``: ``f``'s values when ``partial`` is ``functools.partial``
        (calling ``p`` calls ``f``); otherwise what the call returns, as for any call."""
        made, wrapped = binding[1], binding[2]
        assert isinstance(made, Ref) and isinstance(wrapped, Ref)
        callee = self.resolve(module, made, depth + 1)
        if not isinstance(callee, _Builtin) and any(
            isinstance(v, VExternal) and v.dotted == FUNCTOOLS_PARTIAL for v, _ in callee
        ):
            found = self.resolve(module, wrapped, depth + 1)
            values = () if isinstance(found, _Builtin) else tuple(v for v, _ in found)
            return values or self._module_variable(module, scope, name)
        return self._binding(module, scope, name, ("ctor", made, ()), depth)

    def _items_of(
        self, module: _Module, scope: str, name: str, binding: Binding, depth: int
    ) -> tuple[Value, ...] | None:
        """``map(f, xs)``, ``enumerate(xs)``, ``zip(a, b)``, ``list(xs)``...: when the name
        is the builtin, a sequence whose items are what ``f`` returns, (index, item),
        (a_i, b_i) or the items (any item: positions are not known)."""
        made, arguments = binding[1], binding[2]
        assert isinstance(made, Ref) and isinstance(arguments, tuple)
        if not self._calls_back(module, made):
            return self._binding(module, scope, name, ("ctor", made, ()), depth)
        if made.head == MAP:  # the functions passed to it (the iterables are refs too)
            returned = (("ctor", arg[1], ()) for arg in arguments if arg[0] == "ref")
            return (VContainer(module.path, tuple((ANY_ITEM, item) for item in returned)),)
        each = [("iter", argument) for argument in arguments]
        item: Binding
        if made.head == "enumerate":
            item = ("items", (("[1]", each[0]),))
        elif made.head == "zip":
            item = ("items", tuple((f"[{i}]", element) for i, element in enumerate(each)))
        else:
            item = each[0]
        return (VContainer(module.path, ((ANY_ITEM, item),)),)

    def _module_variable(self, module: _Module, scope: str, name: str) -> tuple[Value, ...] | None:
        """Fallback for a module-level name whose value is not resolved: its variable node."""
        if scope != "":
            return None
        symbols = module.symbols.get(name, ())
        return tuple(self._vsymbol(module, s) for s in symbols if s.kind == "variable")

    def _call_result(
        self,
        module: _Module,
        ref: Ref,
        origin: str | None,
        depth: int,
        arguments: _Arguments | None = None,
    ) -> tuple[Value, ...]:
        """Values of ``ref(...)``: instances of classes, return values of functions
        (``arguments``: the call's own positional arguments, see ``_returned``)."""
        resolved = self.resolve(module, ref, depth + 1)
        made: list[Value] = []
        for value, dispatch in () if isinstance(resolved, _Builtin) else resolved:
            found: tuple[Value, ...] = ()
            if isinstance(value, VSymbol) and value.kind == "class":
                found = (VInstance(value, None, origin),)
            elif isinstance(value, VSymbol) and value.kind in CALLABLE_KINDS:
                found = self._returned(module, value, dispatch, arguments, depth)
            elif isinstance(value, VContainer) and value.method is not None:
                found = self._mapping_call(value, depth)
            elif isinstance(value, VExternal) and value.dotted in FRAMEWORK_CLASSES:
                found = (VInstance(None, value.dotted, origin),)
            made.extend(found)
        return distinct(made)

    def _returned(
        self,
        module: _Module,
        function: VSymbol,
        dispatch: str,
        arguments: _Arguments | None,
        depth: int,
    ) -> tuple[Value, ...]:
        """What this call of ``function`` returns. A parameter returned as it is
        (``def register(cls): ...; return cls``) gives this call's own argument, not the
        values every call site passes it; a call that does not pass it positionally
        takes ``returns`` whole, as before."""
        passed = self._passes_through(function)
        if not passed or arguments is None:
            return self.returns(function, depth + 1)
        args = arguments
        callee = self._callee(function, dispatch)
        shift = 0 if callee is None else callee[1]
        values: list[Value] = []
        for index in passed:
            position = index - shift
            if not 0 <= position < len(args) or args[position][0] not in FLOW_TAGS:
                return self.returns(function, depth + 1)
            # Read as a call site's argument is when it flows into the parameter.
            values.extend(self._may_values(module, "", (args[position],), depth + 1))
        values.extend(self._annotated(function, passed, depth + 1))
        values.extend(self._own_returns(function, depth + 1))
        return distinct(values)

    def _passes_through(self, function: VSymbol) -> tuple[int, ...]:
        """The parameters ``function`` returns as they are (by index): a ``return`` of a
        parameter's name that nothing else in the function binds."""
        found = self._pass_through_cache.get(function.node_id)
        if found is not None:
            self._replayed(self._pass_through_cache, function.node_id)
        else:
            mark = self._mark()
            names = self.by_path[function.path].scopes.get(function.qualname, {})
            indices: list[int] = []
            for binding in names.get(RETURN_NAME, ()):
                index = _returned_param(binding, names)
                if index is not None and index not in indices:
                    indices.append(index)
            found = self._pass_through_cache[function.node_id] = tuple(indices)
            self._noted(self._pass_through_cache, function.node_id, mark)
        return found

    def _annotated(
        self, function: VSymbol, passed: tuple[int, ...], depth: int
    ) -> tuple[Value, ...]:
        """What the annotations of the parameters ``function`` returns as they are say
        they hold (``def f(x: A) -> ...: return x`` also returns an ``A``)."""
        module = self.by_path[function.path]
        names = module.scopes.get(function.qualname, {})
        typed = [
            binding
            for bound in names.values()
            if any(b[0] == "param" and b[2] in passed for b in bound)
            for binding in bound
            if binding[0] in TYPED_TAGS
        ]
        return self._may_values(module, function.qualname, typed, depth) if typed else ()

    def _own_returns(self, function: VSymbol, depth: int) -> tuple[Value, ...]:
        """``returns`` without the parameters returned as they are."""
        known, cached = self._recall(self._own_returns_cache, function.node_id)
        if known:
            assert cached is not None
            return cached
        mark = self._mark()
        names = self.by_path[function.path].scopes.get(function.qualname, {})
        bindings = [
            binding
            for binding in names.get(RETURN_NAME, ())
            if _returned_param(binding, names) is None
        ]
        return self._return_values(
            self._own_returns_cache, OWN_RETURN, function, bindings, depth, mark
        )

    def returns(self, function: VSymbol, depth: int = 0) -> tuple[Value, ...]:
        """The values a function or method may return (its ``return`` expressions)."""
        known, cached = self._recall(self._returns_cache, function.node_id)
        if known:
            assert cached is not None
            return cached
        mark = self._mark()
        names = self.by_path[function.path].scopes.get(function.qualname, {})
        bindings = names.get(RETURN_NAME, ())
        return self._return_values(
            self._returns_cache, RETURN_NAME, function, bindings, depth, mark
        )

    def _return_values(
        self,
        cache: dict[str, tuple[Value, ...]],
        tag: str,
        function: VSymbol,
        bindings: Sequence[Binding],
        depth: int,
        mark: int,
    ) -> tuple[Value, ...]:
        """The values of ``function``'s return ``bindings``, guarded by ``(its ID, tag)``
        and memoised in ``cache`` (``returns`` and ``_own_returns``; reads since ``mark``
        kept with it)."""
        if not bindings:
            return ()
        if depth > MAX_PYTHON_RESOLUTION_DEPTH:
            return self._cut_at(_DEPTH_CUT)
        key = (function.node_id, tag)
        if key in self._in_progress:
            return self._hit(key)  # type: ignore[return-value]
        module = self.by_path[function.path]
        values, low = self._guarded(
            key, lambda: self._may_values(module, function.qualname, bindings, depth), mark
        )
        redo = (REDO_RETURNS if cache is self._returns_cache else REDO_OWN_RETURNS, function)
        self._keep(cache, function.node_id, values, low, mark, ("p", function.path), redo=redo)
        return values

    def _may_values(
        self, module: _Module, scope: str, bindings: Iterable[Binding], depth: int
    ) -> tuple[Value, ...]:
        """Union of the values of the bindings that resolve (a may-analysis: unknowns add none)."""
        values: list[Value] = []
        for binding in bindings:
            if binding[0] == "ctor":
                ref = binding[1]
                assert isinstance(ref, Ref)
                found: tuple[Value, ...] | None = self._call_result(
                    module, ref, None, depth, _arguments(binding)
                )
            else:
                found = self._binding(module, scope, RETURN_NAME, binding, depth + 1)
            values.extend(found or ())
        return distinct(values)

    def _decorated(self, module: _Module, binding: Binding, depth: int) -> tuple[Value, ...]:
        """A decorated function's value: the wrappers its in-repository decorators return.

        A wrapper is a function or class defined inside the decorator (``def inner``,
        ``return inner``), or an instance (``return Wrapper(f)``). Whatever else a
        decorator may return (its parameter, what a registry hands back) is taken to be
        the function it was given, as written: the parameter's values are every function
        the decorator is ever applied to, not this one. When any decorator is not an
        in-repository function (``property``, ``functools.wraps``, framework
        decorators), the function itself is the value, as for an undecorated definition.
        """
        qualname, refs = str(binding[1]), binding[2]
        assert isinstance(refs, tuple)
        plain = self._binding(module, "", qualname, ("def", qualname), depth) or ()
        values: tuple[Value, ...] = plain
        for ref in reversed(refs):
            assert isinstance(ref, Ref)
            resolved = self.resolve(module, ref, depth + 1)
            if isinstance(resolved, _Builtin) or not resolved:
                return plain
            made: list[Value] = []
            passed_through = False
            for value, _ in resolved:
                if not (isinstance(value, VSymbol) and value.kind == "function"):
                    return plain
                inside = f"{value.qualname}."
                returned = self.returns(value, depth + 1)
                passed_through = passed_through or not returned
                for found in returned:
                    if isinstance(found, VInstance) or _defined_in(found, value.path, inside):
                        made.append(found)
                    else:
                        passed_through = True
            if passed_through:
                made.extend(values)
            values = distinct(made)
        return values

    def _iterated(self, module: _Module, iterable: Binding, depth: int) -> tuple[Value, ...]:
        key = ("<iter>", module.path, iterable)
        known, cached = self._recall(self._iterated_cache, (module.path, iterable))
        if known:
            assert cached is not None
            return cached
        if key in self._in_progress:
            return self._hit(key)  # type: ignore[return-value]
        mark = self._mark()
        values, low = self._guarded(key, lambda: self._iterated_now(module, iterable, depth), mark)
        self._keep(
            self._iterated_cache, (module.path, iterable), values, low, mark, ("p", module.path)
        )
        return values

    def _iterated_now(self, module: _Module, iterable: Binding, depth: int) -> tuple[Value, ...]:
        """What a ``for`` loop over ``iterable`` yields: container items, generator yields,
        or ``__iter__().__next__()`` of an in-repository instance."""
        values: list[Value] = []
        add = values.extend  # de-duplicated once, at the end

        if iterable[0] == "ctor":
            ref = iterable[1]
            assert isinstance(ref, Ref)
            resolved = self.resolve(module, ref, depth + 1)
            for value, _ in () if isinstance(resolved, _Builtin) else resolved:
                if isinstance(value, VSymbol) and value.kind in CALLABLE_KINDS:
                    owner = self.by_path[value.path]
                    yields = owner.scopes.get(value.qualname, {}).get(YIELD_NAME, ())
                    add(self._may_values(owner, value.qualname, yields, depth + 1))
        for value in self._may_values(module, "", (iterable,), depth + 1):
            if isinstance(value, VContainer) and not value.mapping:  # a dict gives its keys
                owner = self.by_path[value.path]
                add(self._may_values(owner, "", [b for _, b in value.items], depth + 1))
            elif isinstance(value, VInstance) and value.cls is not None:
                for iterator in self._member(value.cls, "__iter__", skip_self=False):
                    if not isinstance(iterator, VSymbol) or iterator.kind != "method":
                        continue
                    for item in self.returns(iterator, depth + 1):
                        for step in self.getattr(item, "__next__", depth + 1):
                            if isinstance(step, VSymbol) and step.kind == "method":
                                add(self.returns(step, depth + 1))
        return distinct(values)

    def _param(self, module: _Module, binding: Binding, depth: int) -> tuple[Value, ...] | None:
        """Values flowing into a parameter from resolved call sites, plus its default."""
        function, index, name, default = binding[1], binding[2], binding[3], binding[4]
        fid = f"{module.path}#{function}"
        cache_key = (fid, f"param:{index}:{name}")
        known, cached = self._recall(self._param_cache, cache_key)
        if known:
            return cached
        if cache_key in self._in_progress:
            return self._hit(cache_key)  # type: ignore[return-value]
        mark = self._mark()
        result, low = self._guarded(
            cache_key, lambda: self._param_values(module, fid, index, name, default, depth), mark
        )
        self._keep(self._param_cache, cache_key, result, low, mark, ("p", module.path))
        return result

    def _param_values(
        self, module: _Module, fid: str, index: object, name: object, default: object, depth: int
    ) -> tuple[Value, ...] | None:
        """Uncached body of ``_param``."""
        sources: list[tuple[str, Binding]] = []
        for key in (str(index), f"={name}"):
            sources.extend(self.flows.get((fid, key), ()))
        if default is not None:
            assert isinstance(default, tuple)
            sources.append((module.path, default))
        if not sources:
            return None
        values: list[Value] = []
        for path, source in sources:
            values.extend(self._may_values(self.by_path[path], "", (source,), depth + 1))
        return distinct(values)

    def _varargs(self, module: _Module, binding: Binding) -> tuple[Value, ...] | None:
        """``*rest``: a tuple holding every argument that flows in at position ``first`` or
        later (any item: which position each took is not kept), one per calling module."""
        function, first = str(binding[1]), int(str(binding[2]))
        fid = f"{module.path}#{function}"
        by_path: dict[str, list[tuple[str, Binding]]] = {}
        for position in range(first, first + MAX_VARARGS):
            sources = self.flows.get((fid, str(position)))
            if sources is None:
                break
            for path, source in sources:
                by_path.setdefault(path, []).append((ANY_ITEM, source))
        if not by_path:
            return None
        return tuple(VContainer(path, tuple(items)) for path, items in sorted(by_path.items()))

    def _callee(self, value: Value, dispatch: str) -> tuple[str, int] | None:
        """``(path#qualname, first argument's parameter index)`` of a call target, or None."""
        if isinstance(value, VSymbol) and value.kind == "class":
            init = self._member(value, CONSTRUCTOR, skip_self=False)
            if len(init) != 1 or not isinstance(init[0], VSymbol):
                return None
            return self._callee(init[0], "method")
        if not isinstance(value, VSymbol) or value.kind not in CALLABLE_KINDS:
            return None
        fid = f"{value.path}#{value.qualname}"
        if value.kind == "function":
            return fid, 0
        module = self.by_path[value.path]
        tags = {b[0] for bs in module.scopes.get(value.qualname, {}).values() for b in bs}
        if "cls" in tags or ("self" in tags and (dispatch == "method" or value.bound)):
            return fid, 1
        return fid, 0

    def _collect_flows(self) -> None:
        """Propagate arguments into parameters until stable (at most ``MAX_FLOW_ROUNDS``)."""
        for _ in range(MAX_FLOW_ROUNDS):
            frozen = merge_flows([self.flow_parts(path) for path in sorted(self.by_path)])
            if frozen == self.flows:
                return
            self.flows = frozen
            self.forget()

    def flow_parts(self, path: str) -> FlowParts:
        """What one module adds to the argument flows under the current ones: its call
        sites' arguments, then its decorators' functions (``merge_flows`` joins them)."""
        module = self.by_path[path]
        sites: list[FlowEdge] = []
        for site in module.extract.calls:
            if site.ref is None or not (site.args or site.keywords):
                continue
            resolved = self.resolve(module, site.ref)
            if isinstance(resolved, _Builtin):
                continue
            for value, dispatch in resolved:
                callee = self._callee(value, dispatch)
                if callee is None:
                    continue
                fid, shift = callee
                for index, arg in enumerate(site.args):
                    if arg[0] in FLOW_TAGS:
                        sites.append(((fid, str(index + shift)), (module.path, arg)))
                for name, arg in site.keywords:
                    sites.append(((fid, f"={name}"), (module.path, arg)))
        return tuple(sites), tuple(self._decorator_flows(module))

    def _decorator_flows(self, module: _Module) -> list[FlowEdge]:
        """``@d1 @d2 def f``: ``f`` flows into ``d2``'s first parameter, ``d2(f)`` into ``d1``'s."""
        found: list[FlowEdge] = []
        for bindings in module.scopes.values():
            for binding in (b for bs in bindings.values() for b in bs):
                if binding[0] != "decorated":
                    continue
                qualname, refs = binding[1], binding[2]
                assert isinstance(refs, tuple)
                for index, ref in enumerate(refs):
                    assert isinstance(ref, Ref)
                    rest = refs[index + 1 :]
                    arg: Binding = ("decorated", qualname, rest) if rest else ("def", qualname)
                    resolved = self.resolve(module, ref)
                    for value, dispatch in () if isinstance(resolved, _Builtin) else resolved:
                        callee = self._callee(value, dispatch)
                        if callee is not None:
                            found.append(((callee[0], str(callee[1])), (module.path, arg)))
        return found

    def _class(self, module: _Module, qualname: str) -> VSymbol | None:
        for symbol in module.symbols.get(qualname, ()):
            if symbol.kind == "class":
                return self._vsymbol(module, symbol)
        return None

    def getattr(self, value: Value, attr: str, depth: int = 0) -> tuple[Value, ...]:
        """The values of ``value.attr``; empty when it cannot be resolved exactly.

        ``ANY_ITEM`` (a subscript by a key that is not a constant) is any value of a
        dict, and an in-repository class itself (``Box[int]``).
        """
        if depth > MAX_PYTHON_RESOLUTION_DEPTH:
            return self._cut_at(_DEPTH_CUT)
        if attr == ANY_ITEM:
            return self._any_item(value, depth)
        if attr.startswith("[") and not isinstance(value, VContainer):
            return ()  # only a literal's items are known: no invented ``x.['k']`` names
        if isinstance(value, VModule):
            if value.path is None:  # a namespace folder above a package, or external
                sub = self.find_module(f"{value.name}.{attr}", None)
                if sub is not None:
                    return (VModule(sub.name, sub.path),)
                return (VExternal(f"{value.name}.{attr}"),)
            module = self.by_path[value.path]
            found = self.namespace(module, attr, depth + 1)
            if isinstance(found, tuple) and found:
                return found
            sub = self.find_module(f"{value.name}.{attr}", module)
            return (VModule(sub.name, sub.path),) if sub is not None else ()
        if isinstance(value, VExternal):
            return (VExternal(f"{value.dotted}.{attr}"),)
        if isinstance(value, VContainer):
            if value.mapping and value.method is None and attr in MAPPING_METHODS:
                return (replace(value, method=attr),)
            sliced = _SLICE_KEY.match(attr)
            if sliced is not None:
                return _sliced(value, sliced)
            module = self.by_path[value.path]
            items = [
                binding
                for key, binding in value.items
                if key == attr or (key == ANY_ITEM and attr.startswith("["))
            ]
            return self._may_values(module, "", items, depth + 1)
        if isinstance(value, VInstance):
            if value.cls is None:
                return (VExternal(f"{value.external}.{attr}"),) if value.external else ()
            return tuple(map(self._bound, self._member(value.cls, attr, skip_self=False)))
        if value.kind == "class":
            return self._member(value, attr, skip_self=False)
        return ()

    def _bound(self, value: Value) -> Value:
        """``value`` read from an instance: a method becomes a bound method (made once)."""
        if isinstance(value, VSymbol) and value.kind == "method" and not value.bound:
            made = self._bound_methods.get(value)
            if made is None:
                made = self._bound_methods[value] = replace(value, bound=True)
            return made
        return value

    def _mapping_call(self, method: VContainer, depth: int) -> tuple[Value, ...]:
        """What calling a typed mapping's method gives: ``get``/``pop``/``setdefault`` a
        value; ``values()`` a sequence of them; ``items()`` a sequence of (key, value)."""
        if method.method == "values":
            return (VContainer(method.path, method.items),)
        if method.method == "items":
            pairs = tuple((ANY_ITEM, ("items", (("[1]", b),))) for _, b in method.items)
            return (VContainer(method.path, pairs),)
        owner = self.by_path[method.path]
        return self._may_values(owner, "", [b for _, b in method.items], depth + 1)

    def _any_item(self, value: Value, depth: int) -> tuple[Value, ...]:
        """A dict read by a key that is not a constant may give any of its values (a
        dispatch table: ``handlers[name]()``); a list read by an unknown index is left
        unresolved, as no position can be named."""
        if isinstance(value, VContainer):
            if not value.items or all(_INDEX_KEY.match(key) for key, _ in value.items):
                return ()
            module = self.by_path[value.path]
            return self._may_values(module, "", [binding for _, binding in value.items], depth + 1)
        if isinstance(value, VSymbol) and value.kind == "class":
            return (value,)  # a generic alias names its class
        return ()  # an external's item is unknown: no invented ``ext.x.attr`` names

    def step_dispatch(self, attr: str, before: tuple[Value, ...], dispatch: str) -> str:
        """Any item of a container is a ``dynamic`` call; a class or an external
        subscripted (``Box[int]()``) keeps the dispatch it had."""
        if attr == ANY_ITEM:
            return "dynamic" if any(isinstance(v, VContainer) for v in before) else dispatch
        return super().step_dispatch(attr, before, dispatch)

    def _member(self, cls: VSymbol, attr: str, *, skip_self: bool) -> tuple[Value, ...]:
        mro = self.mro(cls)
        for entry in mro[1:] if skip_self else mro:
            if isinstance(entry, VExternal):
                # On an instance, an attribute its methods assign (``self.attr = ...``)
                # shadows whatever the external base may define: only without one is it
                # the external's member (no invented ``abc.ABC.attr`` names).
                assigned = () if skip_self else self._instance_attribute(mro, attr)
                return assigned or (VExternal(f"{entry.dotted}.{attr}"),)
            module = self.by_path[entry.path]
            member = module.members.get(entry.qualname, {}).get(attr)
            if member is not None:
                return (self._vsymbol(module, member),)
            if attr in module.scopes.get(entry.qualname, {}):
                return self._local(module, entry.qualname, attr, 0)
        return self._instance_attribute(mro, attr)

    def _instance_attribute(
        self, mro: Sequence[VSymbol | VExternal], attr: str
    ) -> tuple[Value, ...]:
        """``self.attr`` values assigned in the methods of any class of the MRO (one
        instance); memoised per class and name for the current flow round."""
        head = mro[0] if mro else None
        if not isinstance(head, VSymbol):
            return self._assigned_on_instance(mro, attr)
        key = (head.node_id, attr)
        return self._memoised(
            self._instance_cache, key, lambda: self._assigned_on_instance(mro, attr)
        )

    def _assigned_on_instance(
        self, mro: Sequence[VSymbol | VExternal], attr: str
    ) -> tuple[Value, ...]:
        # Only the scopes that bind ``self.attr`` at all are looked at: a class hierarchy
        # of thousands (a test suite's TestCase) is not walked name by name for nothing.
        holders = self._self_attributes.get(attr)
        if not holders:
            return ()
        values: list[Value] = []
        for entry in mro:
            if isinstance(entry, VExternal) or (entry.path, entry.qualname) not in holders:
                continue
            module = self.by_path[entry.path]
            if SELF_PREFIX + attr in module.scopes.get(entry.qualname, {}):
                values.extend(self._local(module, entry.qualname, SELF_PREFIX + attr, 0))
        return distinct(values)

    def bases_of(self, cls: VSymbol) -> list[VSymbol | VExternal]:
        """The resolved direct bases of an in-repository class (builtins as externals)."""
        module = self.by_path[cls.path]
        found: list[VSymbol | VExternal] = []
        for ref in module.class_bases.get(cls.qualname, ()):
            resolved = self.resolve(module, ref)
            if isinstance(resolved, _Builtin):
                if resolved.name != "object":
                    found.append(VExternal(f"builtins.{resolved.name}"))
                continue
            for value, _ in resolved:
                if _is_base(value) and value != cls:
                    assert isinstance(value, VSymbol | VExternal)
                    found.append(value)
        return found

    def linearise(
        self,
        cls: VSymbol,
        bases: Sequence[VSymbol | VExternal],
        orders: Sequence[ClassOrder],
    ) -> ClassOrder:
        """C3 linearisation over in-repository classes; externals end a branch."""
        sequences: list[list[VSymbol | VExternal]] = [list(order) for order in orders]
        sequences.append(list(bases))
        result: list[VSymbol | VExternal] = [cls]
        while any(sequences):
            sequences = [seq for seq in sequences if seq]
            head = next(
                (
                    seq[0]
                    for seq in sequences
                    if not any(seq[0] in other[1:] for other in sequences)
                ),
                None,
            )
            if head is None:  # inconsistent hierarchy: fall back to depth-first order
                for seq in sequences:
                    result.extend(item for item in seq if item not in result)
                break
            result.append(head)
            sequences = [seq[1:] if seq[0] == head else seq for seq in sequences]
        return tuple(result)

    def resolve(
        self, module: _Module, ref: Ref, depth: int = 0
    ) -> tuple[tuple[Value, str], ...] | _Builtin:
        """Resolve a reference to ``(value, dispatch)`` pairs, or a builtin marker."""
        if depth > MAX_PYTHON_RESOLUTION_DEPTH:
            return self._cut_at(_DEPTH_CUT)
        attrs = ref.attrs
        if attrs and any(attr.startswith(NAMED_KEY) for attr in attrs):
            attrs = tuple(self._named_key(module, ref.scope, attr, depth) for attr in attrs)
        if ref.kind == "super":
            owner = self._owner_class(module, ref.scope)
            if owner is None or not attrs:
                return ()
            current: tuple[Value, ...] = self._member(owner, attrs[0], skip_self=True)
            attrs = attrs[1:]
            dispatch = "method"
        elif ref.kind == "new":
            assert ref.inner is not None
            inner = self.resolve(module, ref.inner, depth + 1)
            if isinstance(inner, _Builtin):
                return ()
            made: list[Value] = []
            for value, _ in inner:
                if isinstance(value, VSymbol) and value.kind == "class":
                    made.append(VInstance(value, None, None))
                elif isinstance(value, VSymbol) and value.kind in CALLABLE_KINDS:
                    made.extend(self.returns(value, depth + 1))
                elif isinstance(value, VContainer) and value.method is not None:
                    made.extend(self._mapping_call(value, depth))
            current = distinct(made)
            dispatch = "method" if attrs else "direct"
        elif ref.reaching is not None:
            current = self._reaching(module, ref, depth + 1)
            dispatch = "direct"
        else:
            head = self.lookup(module, ref.scope, ref.head, depth + 1)
            if isinstance(head, _Builtin):
                return head if not attrs else ()
            current = head
            dispatch = "direct"
        return self.walk_attributes(current, attrs, dispatch, depth)

    def _named_key(self, module: _Module, scope: str, attr: str, depth: int) -> str:
        """``[=KEY]`` as the constant key ``KEY`` holds (``[1]``, ``['a']``), else any item."""
        if not attr.startswith(NAMED_KEY):
            return attr
        keys = self._literal_keys(module, scope, attr[len(NAMED_KEY) : -1], depth + 1)
        return keys[0] if keys is not None and len(keys) == 1 else ANY_ITEM

    def _literal_keys(
        self, module: _Module, scope: str, name: str, depth: int
    ) -> tuple[str, ...] | None:
        """The int or str literals a name may hold, as subscript keys, when every binding
        it has is one (through imports and aliases); None when any is something else."""
        if depth > MAX_PYTHON_RESOLUTION_DEPTH:
            self._cut_at(_DEPTH_CUT)
            return None
        owner = _binding_scope(module, scope, name)
        bindings = module.scopes.get("" if owner is None else owner, {}).get(name, ())
        if not bindings:
            return None
        keys: list[str] = []
        for binding in bindings:
            tag = binding[0]
            if tag == "literal" or (tag == "var" and len(binding) == 3):
                keys.append(str(binding[-1]))
                continue
            found: tuple[str, ...] | None = None
            if tag == "import" and binding[3] is not None:
                absolute = self._absolute(module, str(binding[1]), int(str(binding[2])))
                source = self.find_module(absolute, module) if absolute is not None else None
                if source is not None:
                    found = self._literal_keys(source, "", str(binding[3]), depth + 1)
            elif tag == "ref":
                alias = binding[1]
                assert isinstance(alias, Ref)
                if alias.kind == "name" and not alias.attrs:
                    found = self._literal_keys(module, alias.scope, alias.head, depth + 1)
            if found is None:
                return None
            keys.extend(found)
        return distinct(keys)

    def _owner_class(self, module: _Module, scope: str) -> VSymbol | None:
        current: str | None = scope
        while current is not None:
            owner = module.scope_owner.get(current)
            if owner is not None:
                return self._class(module, owner)
            current = module.scope_parent.get(current)
        return None

    # ------------------------------------------------------------ emitting
    def run(self, order: Sequence[str] | None = None) -> None:
        """Emit every node and fact of every Python module, visiting them in ``order``
        (path order when None). The facts do not depend on the order: a per-module or
        parallel resolution may visit them in any."""
        paths = sorted(self.by_path) if order is None else list(order)
        if sorted(paths) != sorted(self.by_path):
            raise ValueError("order must name every module of the resolver exactly once")
        self.prepare(paths)
        for path in paths:
            self.emit_module(path)
        self.finish()

    def prepare(self, order: Sequence[str] | None = None) -> None:
        """The whole-program part before the modules' own facts: every module's nodes
        and ``contains`` facts, the subclass table and the argument flows."""
        self.prepare_structure(order)
        self._collect_flows()

    def prepare_structure(self, order: Sequence[str] | None = None) -> None:
        """``prepare`` without the argument flows (``flow_parts`` and ``merge_flows``
        give them; set ``flows``)."""
        for path in sorted(self.by_path) if order is None else order:
            self.emit_structure(path)
        self.subclass_table()

    def emit_module(self, path: str) -> None:
        """The facts of one module's imports, calls, bases and decorators (after
        ``prepare``)."""
        module = self.by_path[path]
        self._emit_imports(module)
        self._emit_calls(module)
        self._emit_bases(module)
        self._emit_decorators(module)

    def finish(self) -> None:
        """The whole-program part after the modules' own facts: routes."""
        self._emit_routes()

    def answer_again(self, redo: Redo) -> tuple[object, _Reads] | None:
        """A memo entry of an earlier round (``_Reads.redo``) computed in this one: its
        answer and what computing it read; None when it is not memoised for good here
        (cut by the depth bound, or no longer computed at all)."""
        cache: dict[Any, Any]
        key: object
        if redo[0] == REDO_NAMESPACE:
            module = self.by_path.get(redo[1])
            if module is None:
                return None
            value: object = self.namespace(module, redo[2])
            cache, key = self._namespace_cache, (redo[1], redo[2])
        elif redo[0] == REDO_LOCAL:
            _, path, scope, name = redo
            found = self.by_path.get(path)
            if found is None or name not in found.scopes.get(scope, {}):
                return None
            value = self._local(found, scope, name, 0)
            cache, key = self._local_cache, (f"{path}#{scope}", name)
        else:
            function = redo[1]
            if function.path not in self.by_path:
                return None
            if redo[0] == REDO_RETURNS:
                value, cache = self.returns(function), self._returns_cache
            else:
                value, cache = self._own_returns(function, 0), self._own_returns_cache
            key = function.node_id
        reads = self._reads_of.get((id(cache), key)) if key in cache else None
        return None if reads is None else (value, reads)

    def reads_again(
        self,
        root: _Reads,
        changed: AbstractSet[Any],
        seen: dict[int, Judged | None],
        reached: dict[int, bool],
    ) -> Judged | None:
        """What ``root`` (a computation of an earlier round) reads in this round, when
        everything it was answered is the same, with the entries computed again that
        stand in it for their last selves; None when an answer may differ. A part that
        read nothing in ``changed`` stays as it is; a part whose own tokens are
        unchanged stands when each part it was answered by stands; a memo entry that
        read a changed token itself, or was answered by a part that may differ, is
        computed again when it can be (``redo``) and stands for its part when its
        answer is equal (early cut-off: an edit that changes what an entry read but not
        its answer reaches no reader). ``seen`` holds the parts already judged (by
        ``id``; their roots stay alive; None: may differ) and ``reached`` the parts
        found to read something changed or not; both are shared across the roots of
        one phase."""
        # The path from the root: each part and its next child to judge (-1: the part
        # itself is not looked at yet; a part's tokens are compared once).
        frames: list[list[Any]] = [[root, -1]]
        while frames:
            frame = frames[-1]
            node: _Reads = frame[0]
            if id(node) in seen:
                frames.pop()
                continue
            made: Judged | None
            if frame[1] < 0 and not reaches(node, changed, reached):
                made = (node, ())
            elif frame[1] < 0 and not changed.isdisjoint(node.tokens):
                made = self._computed_again(node)
            else:
                children = node.children
                index = max(frame[1], 0)
                while index < len(children) and seen.get(id(children[index]), _UNSET) not in (
                    _UNSET,
                    None,
                ):
                    index += 1
                frame[1] = index
                if index < len(children) and id(children[index]) not in seen:
                    frames.append([children[index], -1])
                    continue
                if index < len(children):  # a part may differ
                    made = self._computed_again(node)
                else:
                    made = _stands(node, [seen[id(child)] for child in children])
            seen[id(node)] = made
            frames.pop()
        return seen[id(root)]

    def _computed_again(self, node: _Reads) -> Judged | None:
        """``node``'s entry computed in this round, when it can be and its answer is the
        same: what it reads now, standing for itself; else None."""
        if node.redo is None:
            return None
        again = self.answer_again(node.redo)
        if again is None or again[0] != node.value:
            return None
        return again[1], (again[1],)

    def module_reads(
        self, log: Iterable[Any], answered: Iterable[_Reads], also: Iterable[Any]
    ) -> _Reads:
        """What a module's tracked computation read (``note_reads``): the tokens of its
        ``log`` and ``also``, and the entries that ``answered`` it, each once (one entry
        answers many lookups: a body edit of Django's ``capfirst`` re-resolved 98 sdist
        modules, and adding the same entries' reads again and again took a fifth of
        it)."""
        tokens = tuple(map(self._tokens.__getitem__, (*log, *also)))
        return _Reads(tokens, tuple(dict.fromkeys(answered)))

    def reads_set(self, node: _Reads) -> set[Any]:
        """Everything ``node`` read (``flat_reads``); the sets made for its parts are
        dropped by ``forget``, so that a round keeps only each module's own."""
        return flat_reads(node, self._flattened)

    def forget(self) -> None:
        """Drop every memoised result (none is under way), and the read sets made for
        memo entries. The facts stay the same, as memos never change an answer; a
        computation after this reads all it needs."""
        for node in self._flattened:
            node.flat = None
        self._flattened.clear()
        self._carried = None
        for cache in (
            self._namespace_cache,
            self._provisional,
            self._assumed,
            self._members,
            self._tagged,
            self._overrides_cache,
            self._instance_cache,
            self._descendants_cache,
            self._returns_cache,
            self._own_returns_cache,
            self._pass_through_cache,
            self._calls_back_cache,
            self._iterated_cache,
            self._local_cache,
            self._reaching_cache,
            self._param_cache,
            self._bound_methods,
            self._mro_cache,
            self._reads_of,
        ):
            cache.clear()
        self._changed.clear()

    def tables(self) -> tuple[dict[Any, Any], ...]:
        """The whole-program tables a module's resolution reads, as ``(by_path, by_name,
        flows, subclasses, self attributes)`` (``cairn.codegraph.incremental`` watches
        them)."""
        assert self._subclasses is not None, "prepare() builds the subclass table"
        return self.by_path, self.by_name, self.flows, self._subclasses, self._self_attributes

    def set_tables(self, tables: tuple[dict[Any, Any], ...]) -> None:
        """Put back (or in place of) what ``tables`` gave."""
        (
            self.by_path,
            self.by_name,
            self.flows,
            self._subclasses,
            self._self_attributes,
        ) = tables

    def _fact(
        self,
        source: str,
        target: str,
        relation: str,
        disc: dict[str, Any] | None,
        module: _Module,
        rng: Range,
        site: str,
    ) -> None:
        self.emit.fact(
            source,
            target,
            relation,
            disc,
            adapter=ADAPTER_ID,
            strategy=STRATEGY,
            path=module.path,
            rng=rng,
            site_kind=site,
        )

    def _scope_node(self, module: _Module, scope: str) -> str:
        if not scope:
            return file_id(module.path)
        symbols = module.symbols.get(scope, ())
        wanted = ("class",) if module.scope_kind.get(scope) == "class" else ("method", "function")
        for kind in wanted:
            for symbol in symbols:
                if symbol.kind == kind:
                    return symbol_id(kind, module.path, scope)
        return file_id(module.path)

    def emit_structure(self, path: str) -> None:
        """One module's nodes and ``contains`` facts: a function of that module alone."""
        module = self.by_path[path]
        specs = python_node_specs(module.name, module.extract)
        for node_id, kind, attributes in specs:
            self.emit.node(node_id, kind, attributes)
        file_node = specs[0][0]
        for symbol in module.extract.symbols:
            node_id = symbol_id(symbol.kind, module.path, symbol.qualname)
            parent = file_node if symbol.parent is None else self._scope_node(module, symbol.parent)
            for rng in symbol.ranges:
                self._fact(parent, node_id, "contains", None, module, rng, "definition")

    def _emit_imports(self, module: _Module) -> None:
        source = file_id(module.path)
        for site in module.extract.imports:
            absolute = self._absolute(module, site.module, site.level)
            specifier = "." * site.level + site.module
            target: str | None = None
            resolution = "unresolved"
            if absolute is not None:
                candidates = [absolute]
                if site.name and site.name != "*":
                    candidates.insert(0, f"{absolute}.{site.name}")
                for name in candidates:
                    found = self.find_module(name, module)
                    if found is not None:
                        target, resolution = file_id(found.path), "internal"
                        break
                if target is None and absolute.split(".", 1)[0] not in self.tops:
                    resolution = "external"
            if target is None:
                target = self.emit.external(LANGUAGE, absolute or specifier)
            imported = site.name if site.name is not None else site.module
            disc = {
                "specifier": specifier,
                "binding_kind": site.binding_kind,
                "imported_name": imported,
                "phase": site.phase,
                "form": site.form,
                "resolution": resolution,
            }
            self._fact(source, target, "imports", disc, module, site.range, "import")

    def _target_node(self, value: Value) -> tuple[str, bool] | None:
        if isinstance(value, VSymbol):
            if value.kind in ("class", "function", "method"):
                return value.node_id, value.kind == "class"
            return None
        if isinstance(value, VExternal):
            return self.emit.external(LANGUAGE, value.dotted), False
        return None

    def _emit_calls(self, module: _Module) -> None:
        stats = self.call_stats[module.path]
        for site in module.extract.calls:
            if site.ref is None:
                stats["dynamic"] += 1
                continue
            if site.via is not None and not self._calls_back(module, site.via):
                continue  # ``map`` was rebound: not the builtin that calls its argument
            resolved = self.resolve(module, site.ref)
            if site.implicit:
                resolved = (
                    () if isinstance(resolved, _Builtin) else self._implicit(resolved, site.site)
                )
                if not resolved:
                    continue
                if site.site in EXACT_IMPLICIT_SITES and len(_node_ids(resolved)) != 1:
                    continue  # no call syntax names it: only an exact answer is a call
            if isinstance(resolved, _Builtin):
                stats["builtin"] += 1
                continue
            targets: list[tuple[str, bool, str, bool]] = []
            for value, dispatch in resolved:
                node = self._target_node(value)
                if node is not None and all(node[0] != t[0] for t in targets):
                    targets.append((*node, dispatch, isinstance(value, VExternal)))
            caller = self._scope_node(module, site.caller)
            if not targets:
                stats["unresolved"] += 1
                self._emit_overrides(module, site, caller, set())
                continue
            if len(targets) > 1:
                stats["ambiguous"] += 1
            else:
                stats["external" if targets[0][3] else "resolved"] += 1
            for target, is_class, dispatch, external in targets:
                if len(targets) > 1:
                    resolution = "ambiguous"
                else:
                    resolution = "external" if external else "resolved"
                disc = {
                    "invocation": "construct" if is_class else "call",
                    "dispatch": dispatch,
                    "optional_chaining": False,
                    "resolution": resolution,
                }
                self._fact(caller, target, "calls", disc, module, site.range, site.site)
            self._emit_overrides(module, site, caller, {t[0] for t in targets})

    def _emit_overrides(
        self, module: _Module, site: CallSite, caller: str, direct: set[str]
    ) -> None:
        """``self.m()`` in a method of class C may run an override of ``m`` in any
        subclass of C: one ``dispatch: dynamic`` fact per override, apart from the
        direct call (never blended into it)."""
        ref = site.ref
        if site.implicit or ref is None or ref.kind != "name" or ref.head != SELF_NAME:
            return
        if len(ref.attrs) != 1:
            return
        owner = self._owner_class(module, site.caller)
        if owner is None:
            return
        attr = ref.attrs[0]
        disc = {
            "invocation": "call",
            "dispatch": "dynamic",
            "optional_chaining": False,
            "resolution": "resolved",
        }
        for target in self._overrides(owner, attr):
            if target not in direct:
                self._fact(caller, target, "calls", disc, module, site.range, site.site)

    def _overrides(self, owner: VSymbol, attr: str) -> list[str]:
        """What ``self.attr`` may call in the subclasses of ``owner``: each one's own
        method ``attr``, or else the callables its methods assign to ``self.attr``
        (memoised: the call sites of one method name in one class share it)."""
        key = (owner.node_id, attr)
        return self._memoised(self._overrides_cache, key, lambda: self._find_overrides(owner, attr))

    def _find_overrides(self, owner: VSymbol, attr: str) -> list[str]:
        found: list[str] = []
        for sub in self._descendants(owner):
            defining = self.by_path[sub.path]
            member = defining.members.get(sub.qualname, {}).get(attr)
            if member is not None:
                values: tuple[Value, ...] = (
                    (self._vsymbol(defining, member),) if member.kind == "method" else ()
                )
            elif self._self_attributes.get(attr):
                values = self._instance_attribute(self.mro(sub), attr)
            else:  # nothing binds ``self.attr``: no order to compute
                values = ()
            for value in values:
                if (
                    isinstance(value, VSymbol)
                    and value.kind in CALLABLE_KINDS
                    and value.node_id not in found
                ):
                    found.append(value.node_id)
        return found

    def _descendants(self, cls: VSymbol) -> list[VSymbol]:
        """Every in-repository subclass of ``cls``, transitively, in node-ID order."""
        return self._memoised(
            self._descendants_cache, cls.node_id, lambda: self._find_descendants(cls)
        )

    def subclass_table(self) -> None:
        """Build the table of direct subclasses (before the flows; nothing in progress)."""
        if self._subclasses is None:
            children: dict[str, list[VSymbol]] = {}
            for path in sorted(self.by_path):
                module = self.by_path[path]
                for symbols in module.symbols.values():
                    for symbol in symbols:
                        if symbol.kind != "class":
                            continue
                        child = self._vsymbol(module, symbol)
                        for base in self.bases_of(child):
                            if isinstance(base, VSymbol):
                                children.setdefault(base.node_id, []).append(child)
            self._subclasses = children

    def _find_descendants(self, cls: VSymbol) -> list[VSymbol]:
        self.subclass_table()
        assert self._subclasses is not None
        found: dict[str, VSymbol] = {}
        queue = list(self._subclasses.get(cls.node_id, ()))
        while queue:
            current = queue.pop()
            if current.node_id in found or current.node_id == cls.node_id:
                continue
            found[current.node_id] = current
            queue.extend(self._subclasses.get(current.node_id, ()))
        return [found[key] for key in sorted(found)]

    def _calls_back(self, module: _Module, via: Ref) -> bool:
        """Whether ``via`` is the builtin it names (not rebound in the module)."""

        def compute() -> bool:
            resolved = self.resolve(module, via)
            return isinstance(resolved, _Builtin) and resolved.name == via.head

        return self._memoised(self._calls_back_cache, (module.path, via), compute)

    @staticmethod
    def _implicit(
        resolved: tuple[tuple[Value, str], ...], site: str
    ) -> tuple[tuple[Value, str], ...]:
        """Targets of an implicit call: only in-repository classes (raise) and methods
        (for), and for a decorator's application or a callback any in-repository callable."""
        kinds = IMPLICIT_DECORATOR_KINDS if site in EXACT_IMPLICIT_SITES else IMPLICIT_KINDS
        return tuple(
            (value, dispatch)
            for value, dispatch in resolved
            if isinstance(value, VSymbol) and value.kind in kinds
        )

    def _emit_bases(self, module: _Module) -> None:
        for base in module.extract.bases:
            cls = self._class(module, base.cls)
            if cls is None:
                continue
            resolved = self.resolve(module, base.ref)
            targets: list[str] = []
            if isinstance(resolved, _Builtin):
                if resolved.name != "object":
                    targets.append(self.emit.external(LANGUAGE, f"builtins.{resolved.name}"))
            else:
                for value, _ in resolved:
                    if isinstance(value, VSymbol) and value.kind == "class":
                        targets.append(value.node_id)
                    elif isinstance(value, VExternal):
                        targets.append(self.emit.external(LANGUAGE, value.dotted))
            for target in targets:
                disc = {"kind": base.kind}
                self._fact(cls.node_id, target, "inherits", disc, module, base.range, "base")

    def _emit_decorators(self, module: _Module) -> None:
        for site in module.extract.decorators:
            decorated = self._decorated_node(module, site.target)
            if decorated is None:
                continue
            resolved = self.resolve(module, site.ref)
            targets: list[str] = []
            if isinstance(resolved, _Builtin):
                targets.append(self.emit.external(LANGUAGE, f"builtins.{resolved.name}"))
            else:
                for value, _ in resolved:
                    node = self._target_node(value)
                    if node is not None and node[0] not in targets:
                        targets.append(node[0])
            for target in targets:
                disc = {"decorator": site.text}
                self._fact(target, decorated, "decorates", disc, module, site.range, "decorator")

    def _decorated_node(self, module: _Module, qualname: str) -> str | None:
        for symbol in module.symbols.get(qualname, ()):
            if symbol.kind in ("class", "function", "method"):
                return symbol_id(symbol.kind, module.path, qualname)
        return None

    # --------------------------------------------------------------- routes
    def _framework(self, value: Value) -> str | None:
        if isinstance(value, VInstance):
            if value.external is not None:
                return FRAMEWORK_CLASSES.get(value.external)
            if value.cls is not None:
                for entry in self.mro(value.cls):
                    name = entry.dotted if isinstance(entry, VExternal) else entry.canonical
                    if name in FRAMEWORK_CLASSES:
                        return FRAMEWORK_CLASSES[name]
        return None

    def _router(self, module: _Module, ref: Ref | None) -> tuple[str, str] | None:
        """``(framework, origin)`` of the app/blueprint/router object ``ref`` names."""
        if ref is None:
            return None
        resolved = self.resolve(module, ref)
        if isinstance(resolved, _Builtin):
            return None
        found = {
            (framework, value.origin)
            for value, _ in resolved
            if isinstance(value, VInstance)
            and value.origin is not None
            and (framework := self._framework(value)) is not None
        }
        return next(iter(found)) if len(found) == 1 else None

    def _mount_table(self) -> dict[str, list[tuple[str, str | None, str]]]:
        mounts: dict[str, list[tuple[str, str | None, str]]] = {}
        for path in sorted(self.by_path):
            module = self.by_path[path]
            for site in module.extract.mounts:
                parent = self._router(module, site.parent)
                child = self._router(module, site.child)
                if parent is None or child is None:
                    continue
                mounts.setdefault(child[1], []).append((parent[1], site.prefix, child[0]))
        return mounts

    def _prefixes(
        self,
        origin: str,
        mounts: dict[str, list[tuple[str, str | None, str]]],
        seen: frozenset[str] = frozenset(),
    ) -> list[str]:
        own_kwargs = self.own_kwargs.get(origin, {})
        parents = mounts.get(origin)
        if not parents or origin in seen:
            return [own_kwargs.get("url_prefix") or own_kwargs.get("prefix") or ""]
        found: set[str] = set()
        for parent, prefix, framework in parents:
            own = own_kwargs.get(OWN_PREFIX_KWARG[framework], "")
            for base in self._prefixes(parent, mounts, seen | {origin}):
                if framework == "flask":
                    found.add(base + (prefix if prefix is not None else own))
                else:
                    found.add(base + (prefix or "") + own)
        return sorted(found)

    def _emit_routes(self) -> None:
        mounts = self._mount_table()
        for path in sorted(self.by_path):
            module = self.by_path[path]
            for site in module.extract.routes:
                router = self._router(module, site.obj)
                if router is None:
                    continue
                framework, origin = router
                handler = self._route_handler(module, site.handler, site.handler_ref)
                if handler is None:
                    continue
                if site.methods:
                    methods = site.methods
                elif site.attr in DEFAULT_METHOD_ATTRS:
                    methods = ("GET",)
                else:
                    methods = (site.attr.upper(),)
                for prefix in self._prefixes(origin, mounts):
                    route_path = normalize_route_path(prefix + site.path)
                    for method in methods:
                        self._route(
                            module,
                            method,
                            route_path,
                            framework,
                            site.registration,
                            handler,
                            site.range,
                        )
        self._emit_django()

    def _route_handler(self, module: _Module, qualname: str | None, ref: Ref | None) -> str | None:
        if qualname is not None:
            return self._decorated_node(module, qualname)
        if ref is None:
            return None
        resolved = self.resolve(module, ref)
        if isinstance(resolved, _Builtin):
            return None
        nodes = {
            value.node_id
            for value, _ in resolved
            if isinstance(value, VSymbol) and value.kind in ("function", "method", "class")
        }
        return next(iter(nodes)) if len(nodes) == 1 else None

    def _route(
        self,
        module: _Module,
        method: str,
        route_path: str,
        framework: str,
        registration: str,
        handler: str,
        rng: Range,
    ) -> None:
        name = f"{method} {route_path}"
        route = self.emit.node(
            symbol_id("route", module.path, name),
            "route",
            {
                "name": name,
                "qualified_name": name,
                "path": module.path,
                "language": LANGUAGE,
                "method": method,
                "route": route_path,
                "framework": framework,
            },
        )
        disc = {
            "method": method,
            "path": route_path,
            "framework": framework,
            "registration": registration,
        }
        self._fact(route, handler, "handles_route", disc, module, rng, "route")

    def _is_django_path(self, module: _Module, ref: Ref) -> bool:
        resolved = self.resolve(module, ref)
        if isinstance(resolved, _Builtin):
            return False
        for value, _ in resolved:
            name = value.dotted if isinstance(value, VExternal) else getattr(value, "canonical", "")
            if name.startswith("django.") and name.rsplit(".", 1)[-1] in DJANGO_PATH_FUNCS:
                return True
        return False

    def _emit_django(self) -> None:
        included: dict[str, list[tuple[str, str]]] = {}
        for path in sorted(self.by_path):
            module = self.by_path[path]
            for site in module.extract.patterns:
                if site.view is not None or not self._is_django_path(module, site.func):
                    continue
                child: str | None = site.include_module
                if child is None and site.include_ref is not None:
                    resolved = self.resolve(module, site.include_ref)
                    if not isinstance(resolved, _Builtin):
                        names = {v.name for v, _ in resolved if isinstance(v, VModule)}
                        child = next(iter(names)) if len(names) == 1 else None
                if child is not None:
                    route = _django_regex(site.route) if site.regex else site.route
                    included.setdefault(child, []).append((module.name, route))

        def prefixes(name: str, seen: frozenset[str]) -> list[str]:
            parents = included.get(name)
            if not parents or name in seen:
                return [""]
            return sorted(
                {
                    base + route
                    for parent, route in parents
                    for base in prefixes(parent, seen | {name})
                }
            )

        for path in sorted(self.by_path):
            module = self.by_path[path]
            for site in module.extract.patterns:
                if site.view is None or not self._is_django_path(module, site.func):
                    continue
                handler = self._route_handler(module, None, site.view)
                if handler is None:
                    continue
                route = _django_regex(site.route) if site.regex else site.route
                for base in prefixes(module.name, frozenset()):
                    route_path = normalize_route_path(base + route)
                    self._route(module, "ANY", route_path, "django", "call", handler, site.range)
