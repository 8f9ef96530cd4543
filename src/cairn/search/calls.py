"""Who calls X, and what X calls: a name resolved, its ``calls`` facts walked, and every
edge given its call sites (file and line), all in one read cut.

The name goes through ``resolve_name`` (exact before fuzzy; an ambiguous name answers
with its candidates and no edges, never a guess). The walk is ``traverse`` over the
``calls`` relation (incoming for callers, outgoing for callees) with its budgets; the
sites come from the facts' occurrences (``read_evidence``), a bounded number per edge
with the total beside them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from cairn.errors import ValidationError
from cairn.search.budget import CancelToken
from cairn.search.filters import kept
from cairn.search.names import NAME_COLLECTIONS, NameResolution, resolve_name
from cairn.search.rules import check_record
from cairn.search.traverse import TraverseRequest, admit_traverse, traverse_in_cut
from cairn.store.commands import EntityRef
from cairn.store.evidence import DEFAULT_EVIDENCE_PER_FACT, FactEvidence, read_evidence
from cairn.store.limits import DEFAULT_GRAPH
from cairn.store.validation import check_served_database

if TYPE_CHECKING:
    from cairn.index.database import Database
    from cairn.store.database import PrincipalLike

__all__ = ["CALLS_RELATION", "CallEdge", "CallsAnswer", "CallsRequest", "calls", "calls_of"]

CALLS_RELATION = "calls"

Direction = Literal["callers", "callees"]


@dataclass(frozen=True, slots=True)
class CallEdge:
    """One call edge: who calls whom, how far from the symbol, and where."""

    caller: EntityRef
    callee: EntityRef
    hops: int
    other_name: str | None
    other_path: str | None
    fact_id: str
    evidence: FactEvidence


@dataclass(frozen=True, slots=True)
class CallsAnswer:
    """The resolved name and its call edges (none when the name did not resolve)."""

    direction: str  # "callers" or "callees"
    resolution: NameResolution
    edges: tuple[CallEdge, ...]
    edges_examined: int
    position: int


@dataclass(frozen=True, slots=True)
class CallsRequest:
    """Who calls ``name`` (``direction`` "callers") or what it calls ("callees"), up to
    ``depth`` calls away, with up to ``sites`` call sites per edge (HTTP and SDK body)."""

    database: str
    name: str
    direction: str = "callers"
    depth: int = 1
    sites: int = DEFAULT_EVIDENCE_PER_FACT
    graph: str = DEFAULT_GRAPH
    kinds: tuple[str, ...] | None = None
    paths: tuple[str, ...] | None = None
    exclude_tests: bool = False


def calls(
    db: Database,
    request: CallsRequest,
    principal: PrincipalLike = None,
    cancel: CancelToken | None = None,
) -> CallsAnswer:
    """``calls_of`` for a request record: its fields held to their rules (the same ones
    the OpenAPI schema states), the database name checked, then the walk."""
    check_record(request)
    check_served_database(request.database, db.name)
    return calls_of(
        db,
        request.name,
        direction="callers" if request.direction == "callers" else "callees",
        depth=request.depth,
        sites=request.sites,
        graph=request.graph,
        kinds=request.kinds,
        paths=request.paths,
        exclude_tests=request.exclude_tests,
        principal=principal,
        cancel=cancel,
    )


def calls_of(
    db: Database,
    name: str,
    *,
    direction: Direction = "callers",
    depth: int = 1,
    sites: int = DEFAULT_EVIDENCE_PER_FACT,
    graph: str = DEFAULT_GRAPH,
    kinds: tuple[str, ...] | None = None,
    paths: tuple[str, ...] | None = None,
    exclude_tests: bool = False,
    principal: PrincipalLike = None,
    cancel: CancelToken | None = None,
) -> CallsAnswer:
    """The callers (or callees) of the symbol ``name`` up to ``depth`` calls away, each
    edge with up to ``sites`` call sites, in one read cut as ``principal``; ``kinds``,
    ``paths`` (globs) and ``exclude_tests`` keep only edges whose other end passes."""
    if direction not in ("callers", "callees"):
        raise ValidationError(f"direction must be callers or callees, got {direction!r}")
    with db.read_cut(principal) as cut:
        resolution = resolve_name(cut, name, collections=NAME_COLLECTIONS)
        if resolution.match is None:
            return CallsAnswer(direction, resolution, (), 0, cut.position)
        seed = resolution.match.ref
        request = TraverseRequest(
            db.name,
            graph,
            (seed,),
            direction="in" if direction == "callers" else "out",
            relations=(CALLS_RELATION,),
            max_depth=depth,
            include_documents=True,
        )
        admit_traverse(request)
        check_served_database(request.database, db.name)
        walked = traverse_in_cut(cut, request, cancel)
        evidence = read_evidence(cut.conn, graph, [e.fact_id for e in walked.edges], limit=sites)
        vertices = {vertex.ref: vertex for vertex in walked.vertices}
        edges = []
        for edge in walked.edges:
            other = edge.source if direction == "callers" else edge.target
            vertex = vertices.get(other)
            body = vertex.document.body if vertex is not None and vertex.document else {}
            qualified, path = body.get("qualified_name"), body.get("path")
            kind = body.get("kind")
            if not kept(
                kind if isinstance(kind, str) else None,
                path if isinstance(path, str) else None,
                kinds,
                paths,
                exclude_tests,
            ):
                continue
            edges.append(
                CallEdge(
                    edge.source,
                    edge.target,
                    vertex.hops if vertex is not None else 0,
                    qualified if isinstance(qualified, str) else None,
                    path if isinstance(path, str) else None,
                    edge.fact_id,
                    evidence[edge.fact_id],
                )
            )
        edges.sort(key=lambda item: (item.hops, item.other_name or "", item.fact_id))
        return CallsAnswer(direction, resolution, tuple(edges), walked.edges_examined, cut.position)
