"""``search`` and ``graph_search``: branches, fusion, projection and expansion in one cut.

Order of work for one request (spec §5): admission (before any read), then exactly one
read cut with the principal resolved inside it; authorisation of every field, graph and
label the request names; the walks; the text, vector and graph branches, each filtered
by visibility, ``allowed_ids`` and scope before it ranks; ``weighted_rrf_v1`` (times the
request's prior, if it names one: ``cairn.search.priors``);
projection of the selected hits under their collection's field policy; expansion from
the selected hits only. Everything charges one shared ``ReadBudget``.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING

from cairn.canonical import canonical_bytes
from cairn.errors import PermissionDeniedError
from cairn.graph.model import thaw
from cairn.index.cut import IndexCut
from cairn.index.graphs import LABEL_FIELD, labels_usable, require_graph
from cairn.index.masks import live_slots, slot_mask
from cairn.index.ranking import OrderedRanking
from cairn.index.text import text_ranking
from cairn.index.vectors import vector_ranking
from cairn.search.admission import admit_graph_search, admit_search
from cairn.search.budget import CancelToken, ReadBudget
from cairn.search.contracts import (
    Branch,
    BranchContribution,
    DocumentResult,
    EntityRef,
    GraphContextDocument,
    GraphExpansionResult,
    GraphSearchRequest,
    GraphSearchResult,
    GraphWalkSpec,
    RankedDocument,
    SearchExplanation,
    SearchRequest,
)
from cairn.search.embedding import embed_request
from cairn.search.filters import filtered_ids
from cairn.search.fusion import FusedHit, RankedBranch, fused_top, max_score
from cairn.search.priors import PriorWeights
from cairn.search.walk import Reachability, VertexVisibility, WalkLimits, walk
from cairn.store.policy import Capability
from cairn.store.reads import (
    read_document,
    read_documents_sized,
    require_collection,
)
from cairn.store.validation import check_served_database

if TYPE_CHECKING:
    from cairn.index.database import Database
    from cairn.store.database import PrincipalLike

__all__ = ["LABEL_FIELD", "graph_search", "search"]


@dataclass(slots=True)
class _Context:
    """What one request carries through its cut."""

    cut: IndexCut
    budget: ReadBudget
    visibility: VertexVisibility


def search(
    db: Database,
    request: SearchRequest,
    principal: PrincipalLike = None,
    cancel: CancelToken | None = None,
) -> list[RankedDocument]:
    """Plain hybrid search: text, vector or both, fused, authorised and redacted."""
    admit_search(request)
    check_served_database(request.database, db.name)
    with db.read_cut(principal) as cut:
        context = _context(cut, request, cancel)
        request = embed_request(cut, request)
        rankings = _branches(context, request, scope=None, retriever=None)
        return _project_hits(context, request, rankings, None)


def graph_search(
    db: Database,
    request: GraphSearchRequest,
    principal: PrincipalLike = None,
    cancel: CancelToken | None = None,
) -> GraphSearchResult:
    """Hybrid graph search: scope, retriever and expansion fused with text and vectors."""
    admit_graph_search(request)
    search_request = request.search
    check_served_database(search_request.database, db.name)
    with db.read_cut(principal) as cut:
        context = _context(cut, search_request, cancel)
        search_request = embed_request(cut, search_request)
        _authorise_graphs(context, request)
        scope = None
        if request.scope is not None:
            scope = _walk(context, request.scope.walk)
        retrieved = None
        weight = 0.0
        if request.retriever is not None:
            retrieved = _walk(context, request.retriever.walk)
            weight = request.retriever.weight
        rankings = _branches(
            context, search_request, scope=scope, retriever=retrieved, retriever_weight=weight
        )
        hits = _project_hits(context, search_request, rankings, retrieved)
        expansion = None
        if request.expansion is not None:
            expansion = _expand(context, request, hits)
        return GraphSearchResult(tuple(hits), expansion)


def _context(cut: IndexCut, request: SearchRequest, cancel: CancelToken | None) -> _Context:
    budget = ReadBudget(cancel=cancel)
    budget.check()
    require_collection(cut, request.collection, Capability.QUERY, Capability.DOCUMENTS_READ)
    return _Context(cut, budget, VertexVisibility(cut, budget))


# ------------------------------------------------------------------ graphs
def _authorise_graphs(context: _Context, request: GraphSearchRequest) -> None:
    """graph_read on each graph; the label use grant whenever labels is not None."""
    walks: list[tuple[str, tuple[str, ...] | None]] = []
    if request.scope is not None:
        walks.append((request.scope.walk.graph, request.scope.walk.labels))
    if request.retriever is not None:
        walks.append((request.retriever.walk.graph, request.retriever.walk.labels))
    if request.expansion is not None:
        walks.append((request.expansion.graph, request.expansion.labels))
    cut = context.cut
    for graph, labels in walks:
        require_graph(cut, graph, Capability.GRAPH_READ)
        if labels is None:
            continue
        if not labels_usable(cut, graph):
            raise PermissionDeniedError(
                f"principal {cut.principal.id!r} may not traverse {graph!r} by label",
                details={"principal": cut.principal.id, "resource": graph, "field": LABEL_FIELD},
            )


def _limits(
    graph: str, depth: int, vertices: int, edges: int, labels: tuple[str, ...] | None
) -> WalkLimits:
    allowed = None if labels is None else frozenset(labels)
    return WalkLimits(graph, depth, vertices, edges, allowed)


def _walk(context: _Context, spec: GraphWalkSpec) -> Reachability:
    limits = _limits(spec.graph, spec.max_depth, spec.max_vertices, spec.max_edges, spec.labels)
    return walk(context.cut, limits, spec.seeds, context.budget, context.visibility)


# ---------------------------------------------------------------- branches
def _candidates(
    collection: str, allowed: tuple[str, ...] | None, scope: Reachability | None
) -> frozenset[str] | None:
    """IDs a branch may rank: allowed_ids intersected with the scope's reach."""
    ids: set[str] | None = None if allowed is None else set(allowed)
    if scope is not None:
        reach = {ref.id for ref in scope.hops if ref.collection == collection}
        ids = reach if ids is None else ids & reach
    return None if ids is None else frozenset(ids)


def _branches(
    context: _Context,
    request: SearchRequest,
    *,
    scope: Reachability | None,
    retriever: Reachability | None,
    retriever_weight: float = 0.0,
) -> list[RankedBranch]:
    """Every branch's complete ranking over slots of the search collection (lazy).

    When text and vector both fuse, the text branch runs on this thread while the scan
    threads start on the vectors (``vector_ranking``'s ``meanwhile``); its errors still
    come first.
    """
    cut, budget = context.cut, context.budget
    allowed = _candidates(request.collection, request.allowed_ids, scope)
    passing = filtered_ids(
        cut, request.collection, request.kinds, request.paths, request.exclude_tests
    )
    if passing is not None:
        allowed = passing if allowed is None else allowed & passing
    mask = None if allowed is None else slot_mask(cut, request.collection, allowed)
    rankings: list[RankedBranch] = []
    wants_text = request.text is not None and request.text_field is not None
    wants_vector = (
        request.vector is not None and request.space is not None and bool(request.vector_field)
    )
    both = wants_text and wants_vector and request.text_weight > 0 and request.vector_weight > 0

    def text_branch() -> None:
        assert request.text is not None and request.text_field is not None
        text = text_ranking(cut, request.collection, request.text_field, request.text, allowed=mask)
        if both:
            text.warm()  # fusion's first read, before the vector scan sweeps the caches
        budget.examine(text.size)
        rankings.append(RankedBranch(Branch.TEXT, request.text_weight, text))

    if wants_text and not both:
        text_branch()
    if wants_vector:
        assert request.vector is not None and request.space is not None
        assert request.vector_field is not None
        # Fusion with another contributing branch reads ranks deep in this one.
        deep = both or any(r.weight > 0 and r.ranking.size > 0 for r in rankings)
        deep = deep or (retriever is not None and retriever_weight > 0)
        vector = vector_ranking(
            cut,
            request.collection,
            request.vector_field,
            request.vector,
            request.space,
            allowed=mask,
            deep=deep,
            meanwhile=text_branch if both else None,
        )
        budget.examine(vector.size)
        rankings.append(RankedBranch(Branch.VECTOR, request.vector_weight, vector))
    if retriever is not None:
        rankings.append(_graph_branch(cut, request, retriever, retriever_weight, allowed))
    return rankings


def _graph_branch(
    cut: IndexCut,
    request: SearchRequest,
    reach: Reachability,
    weight: float,
    allowed: Collection[str] | None,
) -> RankedBranch:
    """Reachable vertices of the search collection, score 1/(1+hops), by hops then ref.

    Visibility was applied by the walk itself: hidden vertices are never reached.
    """
    refs = [
        ref
        for ref in reach.ordered()
        if ref.collection == request.collection and (allowed is None or ref.id in allowed)
    ]
    slots = live_slots(cut, refs)
    ranked = [(slot, 1.0 / (1 + reach.hops[ref])) for ref, slot in zip(refs, slots, strict=True)]
    return RankedBranch(Branch.GRAPH, weight, OrderedRanking(ranked))


# -------------------------------------------------------------- projection
def _project_all(context: _Context, refs: list[EntityRef]) -> list[DocumentResult]:
    """Each ref read under its collection's field policy, charged in order."""
    found = read_documents_sized(context.cut, refs)
    documents: list[DocumentResult] = []
    for ref, item in zip(refs, found, strict=True):
        if item is None:
            document = read_document(context.cut, ref.collection, ref.id)  # raises its error
            size = len(canonical_bytes(thaw(document.body)))
        else:
            document, size = item
        context.budget.read(size)
        context.budget.emit(size)
        documents.append(document)
    return documents


def _project_hits(
    context: _Context,
    request: SearchRequest,
    rankings: list[RankedBranch],
    retriever: Reachability | None,
) -> list[RankedDocument]:
    ids = context.cut.columns.ids
    prior = None
    if request.prior is not None:
        prior = PriorWeights(context.cut, request.collection, request.prior)
    fused = [
        FusedHit(
            EntityRef(request.collection, ids[hit.key]),
            hit.exact_score,
            hit.contributions,
            hit.prior,
        )
        for hit in fused_top(rankings, request.fusion_k, request.limit, ids, prior=prior)
    ]
    ceiling = max_score([r.weight for r in rankings], request.fusion_k)
    documents = _project_all(context, [hit.key for hit in fused])
    return [
        RankedDocument(
            document,
            hit.score,
            _explain(hit, request, ceiling, retriever) if request.explain else None,
        )
        for hit, document in zip(fused, documents, strict=True)
    ]


def _explain(
    hit: FusedHit[EntityRef],
    request: SearchRequest,
    ceiling: object,
    retriever: Reachability | None,
) -> SearchExplanation:
    contributions = tuple(
        BranchContribution(
            Branch(part.branch),
            part.native_rank,
            part.native_score,
            part.weight,
            part.contribution,
        )
        for part in hit.contributions
    )
    normalized = float(hit.exact_score / ceiling) if ceiling else 0.0  # type: ignore[operator]
    hops = path = None
    if retriever is not None and hit.key in retriever.hops:
        hops = retriever.hops[hit.key]
        path = retriever.path(hit.key)
    prior = None if request.prior is None else hit.prior
    return SearchExplanation(request.fusion_k, contributions, normalized, hops, path, prior)


# --------------------------------------------------------------- expansion
def _expand(
    context: _Context, request: GraphSearchRequest, hits: list[RankedDocument]
) -> GraphExpansionResult:
    expansion = request.expansion
    assert expansion is not None
    seeds = [hit.document.ref for hit in hits]
    if not seeds:
        return GraphExpansionResult(())
    limits = _limits(
        expansion.graph,
        expansion.max_depth,
        expansion.max_vertices,
        expansion.max_edges,
        expansion.labels,
    )
    reach = walk(context.cut, limits, seeds, context.budget, context.visibility, check_seeds=False)
    selected = set(seeds)
    refs = [ref for ref in reach.ordered() if ref not in selected]
    documents = [
        GraphContextDocument(document, reach.hops[ref])
        for ref, document in zip(refs, _project_all(context, refs), strict=True)
    ]
    return GraphExpansionResult(tuple(documents))
