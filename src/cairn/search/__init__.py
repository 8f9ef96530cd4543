"""Hybrid graph search: contracts, admission, and (later) the engine."""

from __future__ import annotations

from cairn.search.admission import admit_graph_search, admit_search, request_size
from cairn.search.contracts import (
    Branch,
    BranchContribution,
    DocumentResult,
    EntityRef,
    GraphContextDocument,
    GraphExpansion,
    GraphExpansionResult,
    GraphRetriever,
    GraphScope,
    GraphSearchRequest,
    GraphSearchResult,
    GraphWalkSpec,
    QueryRequest,
    RankedDocument,
    SearchExplanation,
    SearchRequest,
    SqlGraphSearchRequest,
    VectorSpace,
)
from cairn.search.wire import from_wire, to_wire

__all__ = [
    "Branch",
    "BranchContribution",
    "DocumentResult",
    "EntityRef",
    "GraphContextDocument",
    "GraphExpansion",
    "GraphExpansionResult",
    "GraphRetriever",
    "GraphScope",
    "GraphSearchRequest",
    "GraphSearchResult",
    "GraphWalkSpec",
    "QueryRequest",
    "RankedDocument",
    "SearchExplanation",
    "SearchRequest",
    "SqlGraphSearchRequest",
    "VectorSpace",
    "admit_graph_search",
    "admit_search",
    "from_wire",
    "request_size",
    "to_wire",
]
