"""The HTTP routes a repository serves: each route node, the handler it dispatches to,
and where the route is registered (file and line), read in one read cut.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from cairn.search.limits import MAX_EDGES, MAX_VERTICES
from cairn.search.traverse import TraverseRequest, admit_traverse, traverse_in_cut
from cairn.store.commands import EntityRef
from cairn.store.evidence import Evidence, read_evidence
from cairn.store.limits import DEFAULT_GRAPH
from cairn.store.reads import read_documents

if TYPE_CHECKING:
    from cairn.index.database import Database
    from cairn.store.database import PrincipalLike

__all__ = ["MAX_ROUTES", "ROUTES_COLLECTION", "Route", "RoutesAnswer", "list_routes"]

ROUTES_COLLECTION = "routes"
HANDLES_ROUTE = "handles_route"
MAX_ROUTES = 20_000
"""Routes listed at most (the total is counted)."""

ROUTES_PER_WALK = 1_000
"""Routes walked per traversal (seeds and handlers stay within the traversal caps)."""


@dataclass(frozen=True, slots=True)
class Route:
    """One route: its name (``GET /users/{id}``), the file that declares it, its
    handlers, and the sites that register it."""

    ref: EntityRef
    name: str | None
    path: str | None
    handlers: tuple[EntityRef, ...]
    sites: tuple[Evidence, ...]


@dataclass(frozen=True, slots=True)
class RoutesAnswer:
    """Every route the principal may see, by name, and how many there are."""

    routes: tuple[Route, ...]
    total: int
    position: int


def list_routes(
    db: Database, graph: str = DEFAULT_GRAPH, principal: PrincipalLike = None
) -> RoutesAnswer:
    """The routes of ``graph`` with their handlers and registration sites."""
    with db.read_cut(principal) as cut:
        ids = [
            row[0]
            for row in cut.conn.execute(
                "SELECT id FROM documents WHERE collection = ? AND deleted = 0 ORDER BY id",
                (ROUTES_COLLECTION,),
            )
        ]
        refs = [EntityRef(ROUTES_COLLECTION, doc_id) for doc_id in ids]
        documents = read_documents(cut, refs)
        visible = [(ref, doc) for ref, doc in zip(refs, documents, strict=True) if doc is not None]
        handlers: dict[EntityRef, list[tuple[EntityRef, str]]] = {}
        listed = [ref for ref, _ in visible[:MAX_ROUTES]]
        for start in range(0, len(listed), ROUTES_PER_WALK):
            request = TraverseRequest(
                db.name,
                graph,
                tuple(listed[start : start + ROUTES_PER_WALK]),
                relations=(HANDLES_ROUTE,),
                max_depth=1,
                max_vertices=MAX_VERTICES,
                max_edges=MAX_EDGES,
            )
            admit_traverse(request)
            for edge in traverse_in_cut(cut, request).edges:
                handlers.setdefault(edge.source, []).append((edge.target, edge.fact_id))
        fact_ids = [fact for pairs in handlers.values() for _, fact in pairs]
        evidence = read_evidence(cut.conn, graph, fact_ids)
        routes = []
        for ref, document in visible[:MAX_ROUTES]:
            name, path = document.body.get("name"), document.body.get("path")
            pairs = sorted(handlers.get(ref, []))
            sites = tuple(site for _, fact in pairs for site in evidence[fact].sites)
            routes.append(
                Route(
                    ref,
                    name if isinstance(name, str) else None,
                    path if isinstance(path, str) else None,
                    tuple(target for target, _ in pairs),
                    sites,
                )
            )
        return RoutesAnswer(tuple(routes), len(visible), cut.position)
