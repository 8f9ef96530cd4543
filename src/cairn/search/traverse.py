"""Bounded graph traversal inside one read cut: neighbours and shortest paths (issue 8).

``traverse(db, request, principal)`` answers "what is around these vertices" and "how
does this vertex reach that one" for the HTTP API, the SDK, MCP and the CLI alike. It
is authorised like a search walk (spec graph-search §5.2-5.3): ``graph_read`` on the
graph, the ``/label`` use grant whenever ``relations`` is given (even empty), every
seed and the target must be visible (else ``NotFoundError``, as if missing), and a
hidden, deleted or unreadable vertex is neither reported nor passed through.

The walk goes breadth-first, layer by layer, over stored fact orientation: ``out``
follows source -> target, ``in`` target -> source, ``both`` either way. Each vertex
keeps its first (shortest) hop, and its path is the lexicographically smallest
sequence of references among all shortest paths from a seed (the rule of
``cairn.search.walk``). Every fact record read counts against ``max_edges`` and the
shared ``ReadBudget``; going past ``max_edges`` or ``max_vertices`` is
``BudgetExceededError``, never a truncated success. Everything runs in exactly one
read cut. Relation labels in the reply are redacted (``None``, with ``/label`` in
``redacted_fields``) when the principal may not read the graph's ``/label`` field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from cairn.canonical import canonical_bytes
from cairn.errors import (
    BudgetExceededError,
    CanonicalizationError,
    NotFoundError,
    PermissionDeniedError,
    ValidationError,
)
from cairn.graph.model import thaw
from cairn.index.adjacency import UNDIRECTED_RELATIONS
from cairn.index.cut import IndexCut
from cairn.index.graphs import LABEL_FIELD, Edge, in_edges, out_edges, require_graph
from cairn.search.budget import CancelToken, ReadBudget
from cairn.search.contracts import DocumentResult, EntityRef
from cairn.search.filters import check_filters, filtering, kept
from cairn.search.limits import (
    DEFAULT_MAX_EDGES,
    DEFAULT_MAX_VERTICES,
    MAX_REQUEST_BYTES,
    MAX_SEEDS,
)
from cairn.search.rules import rule
from cairn.search.walk import VertexVisibility
from cairn.search.wire import TYPE_KEY, from_json, to_json
from cairn.store.evidence import FactEvidence, read_evidence
from cairn.store.limits import check_identifier
from cairn.store.policy import Capability, field_allowed
from cairn.store.reads import field_policies, read_document, read_documents
from cairn.store.validation import check_served_database

if TYPE_CHECKING:
    from cairn.index.database import Database
    from cairn.store.database import PrincipalLike

__all__ = [
    "DEFAULT_TRAVERSE_DEPTH",
    "TRAVERSE_DIRECTIONS",
    "TRAVERSE_REQUEST_ALIAS",
    "TRAVERSE_RESULT_ALIAS",
    "Direction",
    "TraverseEdge",
    "TraverseRequest",
    "TraverseResult",
    "TraverseVertex",
    "admit_traverse",
    "reach_in_cut",
    "traverse",
    "traverse_in_cut",
    "traverse_request_from_json",
    "traverse_result_from_json",
]

Direction = Literal["out", "in", "both"]
"""Which stored orientation a traversal follows."""

TRAVERSE_DIRECTIONS: tuple[Direction, ...] = ("out", "in", "both")
"""Every accepted ``direction``."""

DEFAULT_TRAVERSE_DEPTH = 1
"""Default depth: direct neighbours."""

TRAVERSE_REQUEST_ALIAS = "cairn.contract.traverse-request.v1"
"""Wire alias of ``TraverseRequest``."""

TRAVERSE_RESULT_ALIAS = "cairn.contract.traverse-result.v1"
"""Wire alias of ``TraverseResult``."""


# ------------------------------------------------------------------ records
@dataclass(frozen=True, slots=True)
class TraverseRequest:
    """Neighbours of ``seeds`` (no ``target``), or a shortest path from a seed to ``target``."""

    database: str
    graph: str
    seeds: tuple[EntityRef, ...]
    target: EntityRef | None = None
    direction: Direction = "out"
    relations: tuple[str, ...] | None = None
    max_depth: int = DEFAULT_TRAVERSE_DEPTH
    max_vertices: int = DEFAULT_MAX_VERTICES
    max_edges: int = DEFAULT_MAX_EDGES
    include_documents: bool = False
    evidence: int = 0
    """Sites (file, range, site kind) returned per edge; 0: none (the edges only)."""
    kinds: tuple[str, ...] | None = None
    paths: tuple[str, ...] | None = None
    exclude_tests: bool = False
    """Answer filters (neighbours only): the walk goes through every vertex, the answer
    keeps the seeds and the vertices that pass, and the edges among those."""

    def __post_init__(self) -> None:
        if isinstance(self.seeds, list):
            object.__setattr__(self, "seeds", tuple(self.seeds))
        for name in ("relations", "kinds", "paths"):
            if isinstance(getattr(self, name), list):
                object.__setattr__(self, name, tuple(getattr(self, name)))

    def to_json(self) -> dict[str, Any]:
        """Tagged wire form."""
        return {TYPE_KEY: TRAVERSE_REQUEST_ALIAS, **to_json(self)}


@dataclass(frozen=True, slots=True)
class TraverseVertex:
    """A reached vertex, its shortest hop count and (when asked) its projected document."""

    ref: EntityRef
    hops: int
    document: DocumentResult | None = None


@dataclass(frozen=True, slots=True)
class TraverseEdge:
    """One fact between reached vertices, in stored orientation; ``relation`` may be redacted."""

    source: EntityRef
    target: EntityRef
    relation: str | None
    fact_id: str
    evidence: FactEvidence | None = None  # when asked: the fact's sites and their total


@dataclass(frozen=True, slots=True)
class TraverseResult:
    """Vertices by (hops, ref), the edges among them and, for a path request, the path."""

    vertices: tuple[TraverseVertex, ...]
    edges: tuple[TraverseEdge, ...]
    path: tuple[EntityRef, ...] | None
    edges_examined: int
    position: int
    redacted_fields: tuple[str, ...] = ()
    filtered_out: int = 0  # vertices reached but left out by the answer filters

    def to_json(self) -> dict[str, Any]:
        """Tagged wire form."""
        return {TYPE_KEY: TRAVERSE_RESULT_ALIAS, **to_json(self)}


# ------------------------------------------------------------ JSON parsing
def _untagged(data: Any, name: str, alias: str) -> dict[str, Any]:
    if not isinstance(data, Mapping):
        raise ValidationError(f"{name} must be a JSON object")
    tag = data.get(TYPE_KEY, alias)
    if tag != alias:
        raise ValidationError(f"expected type {alias!r}, got {tag!r}")
    return {key: value for key, value in data.items() if key != TYPE_KEY}


def traverse_request_from_json(data: Any) -> TraverseRequest:
    """Parse the wire form of a ``TraverseRequest`` strictly (the contracts' codec:
    unknown fields, missing fields and wrong JSON types are ``ValidationError``)."""
    body = _untagged(data, "TraverseRequest", TRAVERSE_REQUEST_ALIAS)
    return from_json(TraverseRequest, body)


def traverse_result_from_json(data: Any) -> TraverseResult:
    """Parse the wire form of a ``TraverseResult`` (what the SDK receives)."""
    body = _untagged(data, "TraverseResult", TRAVERSE_RESULT_ALIAS)
    return from_json(TraverseResult, body)


def _direction(value: str) -> Direction:
    for allowed in TRAVERSE_DIRECTIONS:
        if value == allowed:
            return allowed
    raise ValidationError(
        f"direction must be one of {list(TRAVERSE_DIRECTIONS)}, got {value!r}",
        details={"field": "direction"},
    )


# ---------------------------------------------------------------- admission
def _check_refs(refs: Sequence[EntityRef], what: str) -> None:
    for ref in refs:
        if not isinstance(ref, EntityRef):
            raise ValidationError(f"{what} must be entity refs")
        rule("EntityRef", "collection").check(ref.collection, f"{what} collection")
        rule("EntityRef", "id").check(ref.id, f"{what} id")


def admit_traverse(request: TraverseRequest) -> int:
    """Check every rule before any read; return the request's canonical size in bytes."""
    if not isinstance(request, TraverseRequest):
        raise ValidationError("expected a TraverseRequest")
    rule("TraverseRequest", "database").check(request.database, "database")
    rule("TraverseRequest", "graph").check(request.graph, "graph")
    for name in ("max_depth", "max_vertices", "max_edges"):
        rule("TraverseRequest", name).check(getattr(request, name), name)
    if not isinstance(request.seeds, tuple):
        raise ValidationError("seeds must be a non-empty array", details={"field": "seeds"})
    rule("TraverseRequest", "seeds").check(request.seeds, "seeds")
    limit = min(request.max_vertices, MAX_SEEDS)
    if len(request.seeds) > limit:
        raise ValidationError(
            f"{len(request.seeds)} seeds; at most {limit} (max_vertices) allowed",
            details={"field": "seeds", "limit": limit},
        )
    _check_refs(request.seeds, "seed")
    if request.target is not None:
        _check_refs((request.target,), "target")
    _direction(request.direction)
    if request.relations is not None:
        if not isinstance(request.relations, tuple):
            raise ValidationError("relations must be an array or null")
        rule("TraverseRequest", "relations").check(request.relations, "relations")
        for label in request.relations:
            check_identifier(label, "relation")
    if type(request.include_documents) is not bool:
        raise ValidationError("include_documents must be a boolean")
    rule("TraverseRequest", "evidence").check(request.evidence, "evidence")
    _check_filters(request)
    try:
        size = len(canonical_bytes(request.to_json()))
    except CanonicalizationError as exc:
        raise ValidationError(f"request is not serialisable: {exc.message}") from exc
    if size > MAX_REQUEST_BYTES:
        raise BudgetExceededError(
            f"request is {size} bytes; at most {MAX_REQUEST_BYTES} are admitted",
            details={"limit": MAX_REQUEST_BYTES, "size": size},
        )
    return size


def _check_filters(request: TraverseRequest) -> None:
    check_filters("TraverseRequest", request)
    if request.target is not None and filtering(request):
        raise ValidationError(
            "kinds, paths and exclude_tests narrow neighbours; a path to a target is "
            "returned whole",
            details={"field": "target"},
        )


# ---------------------------------------------------------------- execution
@dataclass(slots=True)
class _Reach:
    """What one traversal found: hops, predecessors, the edge that reached each vertex."""

    hops: dict[EntityRef, int]
    predecessor: dict[EntityRef, EntityRef]
    via: dict[EntityRef, TraverseEdge]
    edges: dict[str, TraverseEdge]
    examined: int
    stopped: str | None = None  # a partial walk's limit that ended it ("max_edges", ...)

    def ordered(self) -> list[EntityRef]:
        return sorted(self.hops, key=lambda ref: (self.hops[ref], ref))

    def path(self, ref: EntityRef) -> tuple[EntityRef, ...]:
        chain = [ref]
        while chain[-1] in self.predecessor:
            chain.append(self.predecessor[chain[-1]])
        return tuple(reversed(chain))


def traverse(
    db: Database,
    request: TraverseRequest,
    principal: PrincipalLike = None,
    cancel: CancelToken | None = None,
) -> TraverseResult:
    """Neighbours or a shortest path, authorised and bounded, in exactly one read cut."""
    admit_traverse(request)
    check_served_database(request.database, db.name)
    with db.read_cut(principal) as cut:
        return traverse_in_cut(cut, request, cancel)


def traverse_in_cut(
    cut: IndexCut, request: TraverseRequest, cancel: CancelToken | None = None
) -> TraverseResult:
    """``traverse`` inside a read cut the caller holds (so other reads of the same
    answer see the same position); the request must be admitted already."""
    result, _ = _traverse_in_cut(cut, request, cancel, partial=False)
    return result


def reach_in_cut(
    cut: IndexCut, request: TraverseRequest, cancel: CancelToken | None = None
) -> tuple[TraverseResult, str | None]:
    """A bounded partial traversal: the vertices and edges found before ``max_edges``
    or ``max_vertices`` stopped it, and the limit that did (None: it completed)."""
    return _traverse_in_cut(cut, request, cancel, partial=True)


def _traverse_in_cut(
    cut: IndexCut, request: TraverseRequest, cancel: CancelToken | None, *, partial: bool
) -> tuple[TraverseResult, str | None]:
    budget = ReadBudget(cancel=cancel)
    budget.check()
    label_readable = _authorise(cut, request)
    visibility = VertexVisibility(cut, budget)
    for ref in sorted({*request.seeds, *filter(None, [request.target])}):
        if not visibility.visible(ref):
            raise NotFoundError(
                f"no document {ref.id!r} in {ref.collection!r}",
                details={"collection": ref.collection, "id": ref.id},
            )
    reach = _walk(cut, request, budget, visibility, partial=partial)
    return _result(cut, request, budget, reach, label_readable), reach.stopped


def _authorise(cut: IndexCut, request: TraverseRequest) -> bool:
    """graph_read; the label use grant when relations is given; whether labels are readable."""
    graph = request.graph
    require_graph(cut, graph, Capability.GRAPH_READ)
    policies = field_policies(cut, graph)
    if request.relations is not None and not field_allowed(
        cut.principal, cut.database, graph, policies, LABEL_FIELD, "use"
    ):
        raise PermissionDeniedError(
            f"principal {cut.principal.id!r} may not traverse {graph!r} by label",
            details={"principal": cut.principal.id, "resource": graph, "field": LABEL_FIELD},
        )
    return field_allowed(cut.principal, cut.database, graph, policies, LABEL_FIELD, "read")


def _edges(
    cut: IndexCut, graph: str, vertex: EntityRef, direction: Direction
) -> list[tuple[EntityRef, TraverseEdge]]:
    """Edges leaving ``vertex`` the way ``direction`` says, by (neighbour, relation, fact)."""
    found: list[tuple[EntityRef, TraverseEdge]] = []
    if direction != "in":
        found.extend(_edge(edge, vertex, edge.neighbour) for edge in out_edges(cut, graph, vertex))
    if direction != "out":
        incoming = in_edges(cut, graph, vertex)
        if direction != "in":  # both ways: an undirected fact was already taken outgoing
            incoming = tuple(edge for edge in incoming if edge.relation not in UNDIRECTED_RELATIONS)
        found.extend(_edge(edge, edge.neighbour, vertex) for edge in incoming)
    found.sort(key=lambda item: (item[0], item[1].relation or "", item[1].fact_id))
    return found


def _edge(edge: Edge, source: EntityRef, target: EntityRef) -> tuple[EntityRef, TraverseEdge]:
    if edge.relation in UNDIRECTED_RELATIONS:  # stored orientation: endpoints sorted
        source, target = sorted((source, target), key=lambda ref: (ref.id, ref.collection))
    return edge.neighbour, TraverseEdge(source, target, edge.relation, edge.fact_id)


def _walk(
    cut: IndexCut,
    request: TraverseRequest,
    budget: ReadBudget,
    visibility: VertexVisibility,
    *,
    partial: bool = False,
) -> _Reach:
    """Breadth-first reach. A limit passed is ``BudgetExceededError``, or with
    ``partial`` the end of the walk: what was found so far (every vertex at its true
    hop count) and ``stopped`` naming the limit."""
    layer = sorted(set(request.seeds))
    if len(layer) > request.max_vertices:
        raise _vertex_budget(request)
    labels = None if request.relations is None else frozenset(request.relations)
    reach = _Reach(dict.fromkeys(layer, 0), {}, {}, {}, 0)
    goal = request.target
    for depth in range(1, request.max_depth + 1):
        if not layer or (goal is not None and goal in reach.hops) or reach.stopped:
            break
        candidates: dict[EntityRef, tuple[EntityRef, TraverseEdge]] = {}
        for vertex in layer:
            edges = _edges(cut, request.graph, vertex, request.direction)
            if partial and reach.examined + len(edges) > request.max_edges:
                reach.stopped = "max_edges"
                break
            reach.examined += len(edges)
            budget.examine(len(edges))
            if reach.examined > request.max_edges:
                raise BudgetExceededError(
                    f"the traversal of {request.graph!r} examined more than "
                    f"{request.max_edges} edges",
                    details={"limit": request.max_edges, "budget": "max_edges"},
                )
            for neighbour, edge in edges:
                if labels is not None and edge.relation not in labels:
                    continue
                if not visibility.visible(neighbour, missing_is_corrupt=True):
                    continue
                reach.edges.setdefault(edge.fact_id, edge)
                if neighbour not in reach.hops and neighbour not in candidates:
                    candidates[neighbour] = (vertex, edge)
        # Path order (the rule of cairn.search.walk): rank of the best predecessor, then ref.
        rank = {vertex: index for index, vertex in enumerate(layer)}
        layer = sorted(candidates, key=lambda ref: (rank[candidates[ref][0]], ref))
        room = request.max_vertices - len(reach.hops)
        if partial and len(layer) > room:
            layer, reach.stopped = layer[:room], "max_vertices"
        for vertex in layer:
            reach.hops[vertex] = depth
            reach.predecessor[vertex], reach.via[vertex] = candidates[vertex]
        if len(reach.hops) > request.max_vertices:
            raise _vertex_budget(request)
    return reach


def _vertex_budget(request: TraverseRequest) -> BudgetExceededError:
    return BudgetExceededError(
        f"the traversal of {request.graph!r} reached more than {request.max_vertices} vertices",
        details={"limit": request.max_vertices, "budget": "max_vertices"},
    )


def _result(
    cut: IndexCut,
    request: TraverseRequest,
    budget: ReadBudget,
    reach: _Reach,
    label_readable: bool,
) -> TraverseResult:
    path: tuple[EntityRef, ...] | None = None
    if request.target is None:
        refs = reach.ordered()
        edges = sorted(reach.edges.values(), key=_edge_key)
    elif request.target in reach.hops:
        path = reach.path(request.target)
        refs = list(path)
        edges = [reach.via[ref] for ref in path[1:]]
    else:
        refs, edges = [], []
    filtered_out = 0
    if request.target is None and filtering(request):
        kept_refs = _passing(cut, request, refs)
        filtered_out = len(refs) - len(kept_refs)
        refs = [ref for ref in refs if ref in kept_refs]
        edges = [e for e in edges if e.source in kept_refs and e.target in kept_refs]
    vertices = tuple(
        TraverseVertex(
            ref,
            reach.hops[ref],
            _project(cut, budget, ref) if request.include_documents else None,
        )
        for ref in refs
    )
    redacted: tuple[str, ...] = ()
    if not label_readable:
        # A site's kind would tell the relation: no evidence when the label is hidden.
        edges = [TraverseEdge(e.source, e.target, None, e.fact_id) for e in edges]
        redacted = (LABEL_FIELD,)
    elif request.evidence:
        found = read_evidence(
            cut.conn, request.graph, [e.fact_id for e in edges], limit=request.evidence
        )
        edges = [
            TraverseEdge(e.source, e.target, e.relation, e.fact_id, found[e.fact_id]) for e in edges
        ]
    return TraverseResult(
        vertices, tuple(edges), path, reach.examined, cut.position, redacted, filtered_out
    )


def _passing(cut: IndexCut, request: TraverseRequest, refs: list[EntityRef]) -> set[EntityRef]:
    """The seeds, and the reached vertices whose documents pass the answer filters (a
    document the caller cannot read has no kind or path)."""
    found = read_documents(cut, refs)
    passing = set(request.seeds)
    for ref, document in zip(refs, found, strict=True):
        body = {} if document is None else document.body
        filters = (request.kinds, request.paths, request.exclude_tests)
        if kept(body.get("kind"), body.get("path"), *filters):
            passing.add(ref)
    return passing


def _edge_key(edge: TraverseEdge) -> tuple[EntityRef, EntityRef, str, str]:
    return edge.source, edge.target, edge.relation or "", edge.fact_id


def _project(cut: IndexCut, budget: ReadBudget, ref: EntityRef) -> DocumentResult:
    document = read_document(cut, ref.collection, ref.id)
    size = len(canonical_bytes(thaw(document.body)))
    budget.read(size)
    budget.emit(size)
    return document
