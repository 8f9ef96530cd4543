"""What breaks if I change Y: every node with a path of dependencies leading to a
symbol, summarised, ordered, and honest about where it stopped.

Impact is reverse reachability from the symbol over the relations that make one node
depend on another (calls, imports, inheritance, decorators, routes, references), and
from a module-level symbol also to the files whose imports name it (an ``imports`` fact
targets the file and carries the name in its discriminator). Unlike
a graph search, whose budgets are strict (spec §5: an answer past a budget is an
error), an impact answer may be partial, and then says so: ``complete`` is false and
``stopped_by`` names the limit (``max_edges`` or ``max_vertices``) with the edges
examined, so a hub symbol gets a bounded, labelled answer instead of none. Every vertex
in the answer is at its true hop count. Test code is counted apart, recognised by the
path conventions in ``TEST_PATTERNS`` (stated as such, not guessed per project).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from cairn.index.cut import IndexCut
from cairn.index.graphs import fact_discriminators, in_edges
from cairn.search.budget import CancelToken
from cairn.search.filters import TEST_PATTERNS, is_test_path, kept
from cairn.search.names import NameResolution, resolve_name
from cairn.search.rules import check_record
from cairn.search.traverse import (
    TraverseEdge,
    TraverseRequest,
    TraverseResult,
    admit_traverse,
    reach_in_cut,
)
from cairn.store.commands import EntityRef
from cairn.store.limits import DEFAULT_GRAPH
from cairn.store.load import FAMILIES
from cairn.store.reads import read_documents
from cairn.store.validation import check_served_database

if TYPE_CHECKING:
    from cairn.index.database import Database
    from cairn.store.database import PrincipalLike

__all__ = [
    "DEFAULT_IMPACT_DEPTH",
    "DEFAULT_TOP",
    "IMPACT_RELATIONS",
    "TEST_PATTERNS",
    "Dependent",
    "ImpactAnswer",
    "ImpactRequest",
    "impact",
    "is_test_path",
    "kept",
]

IMPORTS_RELATION = "imports"
IMPORTED_NAME = "imported_name"
"""The discriminator field of an ``imports`` fact naming what it binds (spec code-graph §4)."""

IMPORTABLE_KINDS = frozenset({"class", "function", "variable"})
"""Kinds of a module-level symbol another module can import by name."""

DEFAULT_IMPACT_DEPTH = 3
DEFAULT_TOP = 20
DEFAULT_IMPACT_VERTICES = 2_000
DEFAULT_IMPACT_EDGES = 20_000

IMPACT_RELATIONS = (
    "calls",
    "imports",
    "inherits",
    "handles_route",
    "mentions",
    "references",
)
"""Relations whose source depends on their target (structural ``contains`` is left out).

``decorates`` points the other way (a decorated symbol depends on its decorator, not
the decorator on it): walking it backwards made a function's decorator, and through a
shared external decorator every module using it, "depend" on the function. Applying a
decorator is a ``calls`` fact from the defining scope, which points the right way."""


@dataclass(frozen=True, slots=True)
class ImpactRequest:
    """Who depends on ``name``, up to ``max_depth`` hops over ``relations``."""

    database: str
    name: str
    relations: tuple[str, ...] = IMPACT_RELATIONS
    max_depth: int = DEFAULT_IMPACT_DEPTH
    max_vertices: int = DEFAULT_IMPACT_VERTICES
    max_edges: int = DEFAULT_IMPACT_EDGES
    top: int = DEFAULT_TOP
    graph: str = DEFAULT_GRAPH
    kinds: tuple[str, ...] | None = None
    paths: tuple[str, ...] | None = None
    exclude_tests: bool = False


@dataclass(frozen=True, slots=True)
class Dependent:
    """One node that depends on the symbol: how far, what it is, whether it is test code."""

    ref: EntityRef
    hops: int
    kind: str | None
    qualified_name: str | None
    path: str | None
    test: bool
    degree: int  # dependency edges into it that the walk saw (a cheap centrality)


@dataclass(frozen=True, slots=True)
class ImpactAnswer:
    """The resolved name, a summary of its dependents, the top ones, and completeness."""

    resolution: NameResolution
    dependents: int
    test_dependents: int
    per_hop: tuple[tuple[int, int], ...]
    per_kind: tuple[tuple[str, int], ...]
    per_file: tuple[tuple[str, int], ...]
    top: tuple[Dependent, ...]
    complete: bool
    stopped_by: str | None
    edges_examined: int
    position: int
    filtered_out: int = 0  # dependents reached but left out by the filters


def _counted(counter: Counter[str]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted(counter.items(), key=lambda item: (-item[1], item[0])))


def impact(
    db: Database,
    request: ImpactRequest,
    principal: PrincipalLike = None,
    cancel: CancelToken | None = None,
) -> ImpactAnswer:
    """Reverse reachability from ``request.name`` in one read cut, as ``principal``."""
    check_record(request)
    check_served_database(request.database, db.name)
    with db.read_cut(principal) as cut:
        resolution = resolve_name(cut, request.name)
        if resolution.match is None:
            return ImpactAnswer(resolution, 0, 0, (), (), (), (), True, None, 0, cut.position)
        seed = resolution.match.ref
        walk = TraverseRequest(
            db.name,
            request.graph,
            (seed,),
            direction="in",
            relations=request.relations,
            max_depth=request.max_depth,
            max_vertices=request.max_vertices,
            max_edges=request.max_edges,
        )
        admit_traverse(walk)
        # Breadth first in two steps: the first hop (which authorises the walk), the
        # files importing the symbol by name beside it, then on from that whole hop.
        first, stopped = reach_in_cut(cut, replace(walk, max_depth=1), cancel)
        reach = _Reach({})
        reach.add(first)
        if stopped is None:
            stopped = _beyond_first_hop(cut, request, walk, seed, reach, cancel)
        vertices = [(ref, hops) for ref, hops in reach.hops.items() if ref != seed]
        documents = read_documents(cut, [ref for ref, _ in vertices])
        degree = Counter(edge.target for edge in reach.edges)
        found: list[Dependent] = []
        for (ref, hops), document in zip(vertices, documents, strict=True):
            body = document.body if document is not None else {}
            kind, qualified, path = body.get("kind"), body.get("qualified_name"), body.get("path")
            found.append(
                Dependent(
                    ref,
                    hops,
                    kind if isinstance(kind, str) else None,
                    qualified if isinstance(qualified, str) else None,
                    path if isinstance(path, str) else None,
                    is_test_path(path if isinstance(path, str) else None),
                    degree[ref],
                )
            )
        reached_count = len(found)
        found = [
            item
            for item in found
            if kept(item.kind, item.path, request.kinds, request.paths, request.exclude_tests)
        ]
        ordered = sorted(found, key=lambda d: (d.hops, -d.degree, d.ref.id))
        return ImpactAnswer(
            resolution,
            len(found),
            sum(1 for item in found if item.test),
            tuple(sorted(Counter(item.hops for item in found).items())),
            _counted(Counter(item.kind or "?" for item in found)),
            _counted(Counter(item.path for item in found if item.path)),
            tuple(ordered[: request.top]),
            stopped is None,
            stopped,
            reach.examined,
            cut.position,
            reached_count - len(found),
        )


@dataclass(slots=True)
class _Reach:
    """What impact's walks found: each vertex at its fewest hops, their edges, and the
    edges examined."""

    hops: dict[EntityRef, int]
    edges: list[TraverseEdge] = field(default_factory=list)
    examined: int = 0

    def add(self, result: TraverseResult, *, offset: int = 0) -> None:
        """A walk's vertices ``offset`` hops further out, its edges and its cost."""
        for vertex in result.vertices:
            hops = vertex.hops + offset
            if hops < self.hops.get(vertex.ref, hops + 1):
                self.hops[vertex.ref] = hops
        self.edges.extend(result.edges)
        self.examined += result.edges_examined


def _named_importers(cut: IndexCut, request: ImpactRequest, seed: EntityRef) -> list[EntityRef]:
    """The files that import the module-level symbol ``seed`` by its name: the sources
    of the ``imports`` facts into its file whose imported name is the symbol's, which
    the principal may read (``from app.limits import DEFAULT_GRAPH`` depends on
    ``DEFAULT_GRAPH``; only the file is the fact's target, spec code-graph §4)."""
    kind, colon, rest = seed.id.partition(":")
    path, hash_mark, name = rest.partition("#")
    if (
        IMPORTS_RELATION not in request.relations
        or kind not in IMPORTABLE_KINDS
        or not (colon and hash_mark and path and name)
        or "." in name
    ):
        return []
    module = EntityRef(FAMILIES["file"], f"file:{path}")
    edges = [
        edge
        for edge in in_edges(cut, request.graph, module)
        if edge.relation == IMPORTS_RELATION and edge.neighbour != module
    ]
    values = fact_discriminators(cut, request.graph, (edge.fact_id for edge in edges))
    named = sorted(
        {edge.neighbour for edge in edges if values[edge.fact_id].get(IMPORTED_NAME) == name}
    )
    readable = read_documents(cut, named)
    return [ref for ref, document in zip(named, readable, strict=True) if document is not None]


def _beyond_first_hop(
    cut: IndexCut,
    request: ImpactRequest,
    walk: TraverseRequest,
    seed: EntityRef,
    reach: _Reach,
    cancel: CancelToken | None,
) -> str | None:
    """Add the files importing ``seed`` by name at hop 1, then walk on from every vertex
    at hop 1, within the request's limits; the limit that stopped it, or None.

    Every path to the symbol passes through hop 1, so hops counted from there are the
    true ones, also in a partial answer (a walk's own guarantee)."""
    importers = [ref for ref in _named_importers(cut, request, seed) if ref not in reach.hops]
    room = request.max_vertices - len(reach.hops)
    for ref in importers[: max(room, 0)]:
        reach.hops[ref] = 1
    if len(importers) > room:
        return "max_vertices"
    layer = tuple(sorted(ref for ref, hops in reach.hops.items() if hops == 1))
    if request.max_depth < 2 or not layer:
        return None
    edges_left = request.max_edges - reach.examined
    if edges_left < 1:
        return "max_edges"
    rest = replace(
        walk,
        seeds=layer,
        max_depth=request.max_depth - 1,
        max_vertices=request.max_vertices - 1,  # the symbol itself is not among them
        max_edges=edges_left,
    )
    admit_traverse(rest)
    reached, stopped = reach_in_cut(cut, rest, cancel)
    reach.add(reached, offset=1)
    return stopped
