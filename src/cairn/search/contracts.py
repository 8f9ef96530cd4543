"""The immutable request and result records of search (spec graph-search.md §3).

Records only coerce shapes (lists become tuples, JSON objects become read-only
mappings) so that a value cannot change after it is built; every semantic rule is
checked by ``cairn.search.admission`` before any read. ``EntityRef``,
``VectorSpace`` and ``DocumentResult`` are the store's own records, re-exported here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any

from cairn.errors import CanonicalizationError
from cairn.graph.model import freeze
from cairn.search.limits import (
    DEFAULT_EXPANSION_DEPTH,
    DEFAULT_FUSION_K,
    DEFAULT_LIMIT,
    DEFAULT_MAX_DEPTH,
    DEFAULT_MAX_EDGES,
    DEFAULT_MAX_VERTICES,
    DEFAULT_WEIGHT,
    SEARCH_REQUEST_VERSION,
)
from cairn.store.commands import EntityRef, VectorSpace
from cairn.store.reads import DocumentResult

__all__ = [
    "COMPLETENESS_SELECTED_HITS",
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
]

COMPLETENESS_SELECTED_HITS = "selected_hits"
_EMPTY: Mapping[str, Any] = MappingProxyType({})


def _empty() -> Mapping[str, Any]:
    return _EMPTY


def _tuple_or_none(value: Any) -> Any:
    if value is None or isinstance(value, tuple):
        return value
    if isinstance(value, list):
        return tuple(value)
    return value  # admission names the wrong type


def _set(record: object, name: str, value: Any) -> None:
    object.__setattr__(record, name, value)


class Branch(StrEnum):
    """The ranked branches fused by ``weighted_rrf_v1``."""

    TEXT = "text"
    VECTOR = "vector"
    GRAPH = "graph"


@dataclass(frozen=True, slots=True)
class GraphWalkSpec:
    """A bounded multi-seed walk over outgoing edges; ``labels=()`` follows no edge."""

    graph: str
    seeds: tuple[EntityRef, ...]
    max_depth: int = DEFAULT_MAX_DEPTH
    max_vertices: int = DEFAULT_MAX_VERTICES
    max_edges: int = DEFAULT_MAX_EDGES
    labels: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        _set(self, "seeds", _tuple_or_none(self.seeds))
        _set(self, "labels", _tuple_or_none(self.labels))


@dataclass(frozen=True, slots=True)
class GraphScope:
    """Hits must be reachable from the walk's seeds (seeds included, at hop 0)."""

    walk: GraphWalkSpec


@dataclass(frozen=True, slots=True)
class GraphRetriever:
    """A ranked branch by shortest hops from the walk's seeds."""

    walk: GraphWalkSpec
    weight: float = DEFAULT_WEIGHT


@dataclass(frozen=True, slots=True)
class GraphExpansion:
    """Context walked from the selected hits; never changes their ranks."""

    graph: str
    max_depth: int = DEFAULT_EXPANSION_DEPTH
    max_vertices: int = DEFAULT_MAX_VERTICES
    max_edges: int = DEFAULT_MAX_EDGES
    labels: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        _set(self, "labels", _tuple_or_none(self.labels))


@dataclass(frozen=True, slots=True)
class SearchRequest:
    """A plain hybrid search over one collection: text, vector or both; ``kinds``,
    ``paths`` (globs) and ``exclude_tests`` keep only documents whose ``kind`` and
    ``path`` fields pass (``cairn.search.filters``) before anything is ranked; ``prior``
    weighs the fused scores by kind (``cairn.search.priors``)."""

    database: str
    collection: str
    text_field: str | None = None
    text: str | None = None
    vector_field: str | None = None
    vector: tuple[float, ...] | None = None
    space: VectorSpace | None = None
    limit: int = DEFAULT_LIMIT
    text_weight: float = DEFAULT_WEIGHT
    vector_weight: float = DEFAULT_WEIGHT
    fusion_k: int = DEFAULT_FUSION_K
    allowed_ids: tuple[str, ...] | None = None
    explain: bool = False
    kinds: tuple[str, ...] | None = None
    paths: tuple[str, ...] | None = None
    exclude_tests: bool = False
    embed: bool = False
    """Embed ``text`` with the embedder the collection's vectors were loaded with and
    search ``vector_field`` (or the collection's only vector field) with it too."""
    prior: str | None = None
    """A named prior (``cairn.search.priors.PRIORS``) that multiplies each fused score
    by a documented weight of what the hit is; None fuses as ``weighted_rrf_v1`` alone."""

    def __post_init__(self) -> None:
        _set(self, "vector", _tuple_or_none(self.vector))
        _set(self, "allowed_ids", _tuple_or_none(self.allowed_ids))
        _set(self, "kinds", _tuple_or_none(self.kinds))
        _set(self, "paths", _tuple_or_none(self.paths))


@dataclass(frozen=True, slots=True)
class GraphSearchRequest:
    """A search with graph operators: scope, retriever and/or expansion."""

    version: int
    search: SearchRequest
    scope: GraphScope | None = None
    retriever: GraphRetriever | None = None
    expansion: GraphExpansion | None = None


@dataclass(frozen=True, slots=True)
class QueryRequest:
    """A SQL statement with named JSON parameters."""

    sql: str
    parameters: Mapping[str, Any] = field(default_factory=_empty)
    cursor: str | None = None
    allow_full_scan: bool = True

    def __post_init__(self) -> None:
        if isinstance(self.parameters, Mapping) and not isinstance(
            self.parameters, MappingProxyType
        ):
            try:
                _set(self, "parameters", freeze(dict(self.parameters)))
            except CanonicalizationError:
                # Not JSON (NaN, sets...): kept read-only so admission can name the problem.
                _set(self, "parameters", MappingProxyType(dict(self.parameters)))


@dataclass(frozen=True, slots=True)
class SqlGraphSearchRequest:
    """A ``SEARCH`` statement that lowers to exactly one ``GraphSearchRequest``."""

    query: QueryRequest
    version: int = SEARCH_REQUEST_VERSION


@dataclass(frozen=True, slots=True)
class BranchContribution:
    """One branch's part in a fused score: its rank, native score, weight and share."""

    branch: Branch
    native_rank: int
    native_score: float
    weight: float
    contribution: float

    def __post_init__(self) -> None:
        _set(self, "branch", Branch(self.branch))


@dataclass(frozen=True, slots=True)
class SearchExplanation:
    """Why a hit ranks where it does (``explain=True``)."""

    fusion_k: int
    contributions: tuple[BranchContribution, ...]
    normalized_score: float
    hops: int | None = None
    path: tuple[EntityRef, ...] | None = None
    prior: float | None = None
    """The request's prior's weight of this hit: the score is the contributions' sum
    times it (None: the request named no prior)."""

    def __post_init__(self) -> None:
        _set(self, "contributions", tuple(self.contributions))
        _set(self, "path", _tuple_or_none(self.path))


@dataclass(frozen=True, slots=True)
class RankedDocument:
    """A hit: the projected document, its fused score and optional explanation."""

    document: DocumentResult
    score: float
    explanation: SearchExplanation | None = None


@dataclass(frozen=True, slots=True)
class GraphContextDocument:
    """A context document reached by expansion, with its shortest hop count."""

    document: DocumentResult
    shortest_hops: int


@dataclass(frozen=True, slots=True)
class GraphExpansionResult:
    """Context documents walked from the selected hits only."""

    documents: tuple[GraphContextDocument, ...]
    completeness: str = COMPLETENESS_SELECTED_HITS

    def __post_init__(self) -> None:
        _set(self, "documents", tuple(self.documents))


@dataclass(frozen=True, slots=True)
class GraphSearchResult:
    """Ranked hits plus the expansion (``None`` when none was requested)."""

    hits: tuple[RankedDocument, ...]
    expansion: GraphExpansionResult | None = None

    def __post_init__(self) -> None:
        _set(self, "hits", tuple(self.hits))
