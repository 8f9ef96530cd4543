"""Authorised, bounded multi-seed reachability inside one read cut (spec §5.3).

Breadth-first over outgoing edges, layer by layer. Every seed must be visible to the
principal (else ``NotFoundError``, the same answer as a missing seed); a hidden, deleted
or unreadable vertex met on the way is neither entered nor reported, so traversal does
not pass through it. A label filter keeps edges of the allowed relations. Vertices of
any collection are walked; collection filters belong to the caller. Each vertex keeps
its first (shortest) hop. Every fact record read counts against ``max_edges`` and the
shared budget, filtered and hidden ones included; going past ``max_edges`` or
``max_vertices`` fails with ``BudgetExceededError``, never a truncated success.

Each reached vertex also gets its deterministic shortest path: among all shortest
paths, the lexicographically smallest sequence of references from a seed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from cairn.errors import BudgetExceededError, CorruptionError, NotFoundError
from cairn.search.budget import ReadBudget
from cairn.store.apply import load_document
from cairn.store.commands import EntityRef
from cairn.store.graphs import out_edges
from cairn.store.policy import Capability
from cairn.store.reads import ReadCut

__all__ = ["Reachability", "VertexVisibility", "WalkLimits", "walk"]

_READ = (Capability.DOCUMENTS_READ, Capability.QUERY)


@dataclass(frozen=True, slots=True)
class WalkLimits:
    """The walk shape: graph, depth, caps and label filter (``None`` = any relation)."""

    graph: str
    max_depth: int
    max_vertices: int
    max_edges: int
    labels: frozenset[str] | None


@dataclass(frozen=True, slots=True)
class Reachability:
    """Refs and hops only: ``hops`` in output order (hops, then ref) and paths."""

    hops: dict[EntityRef, int]
    predecessor: dict[EntityRef, EntityRef]
    edges_examined: int

    def ordered(self) -> list[EntityRef]:
        """Reached vertices ordered by hops, then full ordinal ref."""
        return sorted(self.hops, key=lambda ref: (self.hops[ref], ref))

    def path(self, ref: EntityRef) -> tuple[EntityRef, ...]:
        """The lexicographically smallest shortest path from a seed to ``ref``."""
        chain = [ref]
        while chain[-1] in self.predecessor:
            chain.append(self.predecessor[chain[-1]])
        return tuple(reversed(chain))


class VertexVisibility:
    """Whether the principal may see a vertex at the cut; cached per request.

    Liveness and the row policy come from the cut's in-memory columns (the slot alive at
    the cut for the document key, and that slot's owner and project); SQLite is read
    only to tell a deleted document from a row that does not exist at all.
    """

    def __init__(self, cut: ReadCut, budget: ReadBudget) -> None:
        self._cut = cut
        self._budget = budget
        self._known: dict[EntityRef, bool] = {}
        self._readable: dict[str, bool] = {}
        self._restricted: dict[str, bool] = {}

    def visible(self, ref: EntityRef, *, missing_is_corrupt: bool = False) -> bool:
        """True when the document is live, readable and row-visible to the principal."""
        cached = self._known.get(ref)
        if cached is not None:
            return cached
        cut = self._cut
        self._budget.examine()
        slot = self._live_slot(ref)
        if slot == 0:
            if missing_is_corrupt and load_document(cut.conn, ref.collection, ref.id) is None:
                raise CorruptionError(
                    f"a fact points at {ref.collection}/{ref.id}, which has no document row",
                    details={"collection": ref.collection, "id": ref.id},
                )
            seen = False
        else:
            seen = self._may_read(ref.collection) and self._row_visible(ref.collection, slot)
        self._known[ref] = seen
        return seen

    def _live_slot(self, ref: EntityRef) -> int:
        view = self._cut.columns
        node = view.nodes.get((ref.collection, ref.id))
        slots = view.live_slots()
        return 0 if node is None or node >= len(slots) else int(slots[node])

    def _may_read(self, collection: str) -> bool:
        found = self._readable.get(collection)
        if found is None:
            cut = self._cut
            held = cut.principal.capabilities(cut.database, collection)
            found = any(cap in held for cap in _READ)
            self._readable[collection] = found
        return found

    def _row_visible(self, collection: str, slot: int) -> bool:
        """``row_visible`` on the slot's owner and project codes."""
        cut = self._cut
        principal = cut.principal
        restricted = self._restricted.get(collection)
        if restricted is None:
            restricted = principal.restrict_rows and not principal.is_admin(
                cut.database, collection
            )
            self._restricted[collection] = restricted
        if not restricted:
            return True
        view = cut.columns
        if principal.owner_id is not None and view.owner[slot] == view.code(principal.owner_id):
            return True
        project = int(view.project[slot])
        return project > 0 and any(view.code(name) == project for name in principal.projects)


def _check_seeds(seeds: Sequence[EntityRef], visibility: VertexVisibility) -> list[EntityRef]:
    unique = sorted(set(seeds))
    for seed in unique:
        if not visibility.visible(seed):
            raise NotFoundError(
                f"no document {seed.id!r} in {seed.collection!r}",
                details={"collection": seed.collection, "id": seed.id},
            )
    return unique


def walk(
    cut: ReadCut,
    limits: WalkLimits,
    seeds: Iterable[EntityRef],
    budget: ReadBudget,
    visibility: VertexVisibility,
    *,
    check_seeds: bool = True,
) -> Reachability:
    """Walk outgoing edges from ``seeds`` within ``limits``; see the module docstring."""
    layer = _check_seeds(list(seeds), visibility) if check_seeds else sorted(set(seeds))
    if len(layer) > limits.max_vertices:
        raise _vertex_budget(limits)
    hops = dict.fromkeys(layer, 0)
    predecessor: dict[EntityRef, EntityRef] = {}
    examined = 0
    for depth in range(1, limits.max_depth + 1):
        if not layer:
            break
        candidates: dict[EntityRef, EntityRef] = {}
        # Layer order is the order of the vertices' smallest paths, so the first
        # predecessor that reaches a vertex gives its lexicographically smallest path.
        for vertex in layer:
            edges = out_edges(cut, limits.graph, vertex)
            examined += len(edges)
            budget.examine(len(edges))
            if examined > limits.max_edges:
                raise BudgetExceededError(
                    f"the walk over {limits.graph!r} examined more than {limits.max_edges} edges",
                    details={"limit": limits.max_edges, "budget": "max_edges"},
                )
            for edge in edges:
                target = edge.neighbour
                if limits.labels is not None and edge.relation not in limits.labels:
                    continue
                if target in hops or target in candidates:
                    continue
                if not visibility.visible(target, missing_is_corrupt=True):
                    continue
                candidates[target] = vertex
        layer = _next_layer(candidates, layer)
        for target in layer:
            hops[target] = depth
            predecessor[target] = candidates[target]
        if len(hops) > limits.max_vertices:
            raise _vertex_budget(limits)
    return Reachability(hops, predecessor, examined)


def _next_layer(candidates: dict[EntityRef, EntityRef], layer: list[EntityRef]) -> list[EntityRef]:
    """Order the next layer by (rank of its best predecessor, ref): path order."""
    rank = {vertex: index for index, vertex in enumerate(layer)}
    return sorted(candidates, key=lambda ref: (rank[candidates[ref]], ref))


def _vertex_budget(limits: WalkLimits) -> BudgetExceededError:
    return BudgetExceededError(
        f"the walk over {limits.graph!r} reached more than {limits.max_vertices} vertices",
        details={"limit": limits.max_vertices, "budget": "max_vertices"},
    )
