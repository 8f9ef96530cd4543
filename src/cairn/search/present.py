"""Building requests from command-line words and rows for people to read.

Kept out of ``cli.py`` so the CLI stays a thin adapter and the same helpers can serve
other human-facing surfaces.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from cairn.embed import MINILM_EMBEDDER, PACKAGED_MODELS
from cairn.index.text import weighted_fields
from cairn.search.contracts import (
    EntityRef,
    GraphContextDocument,
    GraphExpansion,
    GraphRetriever,
    GraphScope,
    GraphSearchRequest,
    GraphWalkSpec,
    RankedDocument,
    SearchRequest,
)
from cairn.search.limits import SEARCH_REQUEST_VERSION
from cairn.search.names import location_of
from cairn.search.priors import CODE_PRIOR
from cairn.store.load import SEARCH_FIELDS, TEXT_FIELD
from cairn.store.reads import collection_config

if TYPE_CHECKING:
    from cairn.store.reads import ReadCut

__all__ = [
    "CODE_FUSION_K",
    "CODE_PRIOR",
    "CODE_VECTOR_WEIGHT",
    "CODE_VECTOR_WEIGHTS",
    "CONTEXT_COLUMNS",
    "DEFAULT_TEXT_FIELD",
    "HIT_COLUMNS",
    "PLAIN_TEXT_FIELD",
    "build_cli_request",
    "code_text_field",
    "code_vector_weight",
    "context_table",
    "display_name",
    "hit_table",
    "location",
    "query_vector",
]

DEFAULT_TEXT_FIELD = SEARCH_FIELDS
"""What code search ranks text by: the weighted fields (BM25F) every collection loaded
by ``cairn index`` has (``cairn.store.load.SEARCH_FIELDS``)."""

PLAIN_TEXT_FIELD = TEXT_FIELD
"""What code search ranks a collection without those fields by (a database loaded
before they existed, or configured by hand): its ``/text`` field."""

CODE_FUSION_K = 10
"""The RRF ``k`` the doors for people and agents (``cairn search``, MCP ``cairn_search``)
use for code search; the request's own default stays the spec's 60. Chosen on the search
bench's tuning projects (Flask, Click) among 5, 10, 20, 30 and 60: a small ``k`` trusts
each branch's top hits, which is what a code search is for (docs/benchmarks.md)."""

CODE_VECTOR_WEIGHT = 0.5
"""The vector branch's RRF weight on the same doors (the text branch's stays 1.0) for a
collection whose embedder ``CODE_VECTOR_WEIGHTS`` does not name: with BM25F over the
name fields the text branch is the stronger one, and on the search bench's tuning
projects (Flask, Click) hybrid MRR@10 peaks at 0.5 among 0.25-1.5 for both the default
hashing embedder and WordLlama (docs/benchmarks.md)."""

CODE_VECTOR_WEIGHTS: Mapping[str, float] = MappingProxyType({PACKAGED_MODELS[MINILM_EMBEDDER]: 1.0})
"""The vector weight for collections embedded by a model whose vectors match meaning,
by the ``model`` of their vector space: all-MiniLM-L6-v2 (``--embedder minilm``) is the
stronger branch on half the bench's projects, and the tuning projects' mean hybrid
MRR@10 peaks at 1.0 among 0.25-1.5 (docs/benchmarks.md)."""

_NAME_FIELDS = ("qualified_name", "name", "path", "title")


def code_text_field(cut: ReadCut, collection: str) -> str:
    """The text field code search ranks ``collection`` by: ``DEFAULT_TEXT_FIELD`` when
    the collection declares every field it names, else ``PLAIN_TEXT_FIELD`` when it
    declares that one, else ``DEFAULT_TEXT_FIELD`` (the search then names what is
    missing)."""
    config = collection_config(cut, collection)
    if config is None:
        return DEFAULT_TEXT_FIELD
    declared = set(config.text_fields)
    wanted = {pointer for pointer, _ in weighted_fields(DEFAULT_TEXT_FIELD)}
    if wanted <= declared or PLAIN_TEXT_FIELD not in declared:
        return DEFAULT_TEXT_FIELD
    return PLAIN_TEXT_FIELD


def code_vector_weight(cut: ReadCut, collection: str) -> float:
    """The vector weight code search fuses ``collection`` with: ``CODE_VECTOR_WEIGHTS``
    for the embedder of its vector field (its only one), else ``CODE_VECTOR_WEIGHT``."""
    config = collection_config(cut, collection)
    if config is None or len(config.vector_fields) != 1:
        return CODE_VECTOR_WEIGHT
    (vector_field,) = config.vector_fields
    return CODE_VECTOR_WEIGHTS.get(vector_field.space.model, CODE_VECTOR_WEIGHT)


def build_cli_request(
    *,
    database: str,
    collection: str,
    text: str | None,
    seeds: Sequence[tuple[str, str]],
    scope_seeds: Sequence[tuple[str, str]],
    graph: str,
    depth: int,
    labels: tuple[str, ...] | None,
    expand: int | None,
    limit: int,
    explain: bool,
    embed: bool = False,
    kinds: tuple[str, ...] | None = None,
    paths: tuple[str, ...] | None = None,
    exclude_tests: bool = False,
    fusion_k: int = CODE_FUSION_K,
    text_field: str = DEFAULT_TEXT_FIELD,
    vector_weight: float = CODE_VECTOR_WEIGHT,
    prior: str | None = CODE_PRIOR,
) -> GraphSearchRequest:
    """The request ``cairn search`` means; admission still checks every value.

    With ``embed`` (and text), the database embeds the text with the embedder the
    collection's vectors were loaded with and fuses both branches.
    """
    search = SearchRequest(
        database,
        collection,
        text_field=text_field if text else None,
        text=text or None,
        limit=limit,
        explain=explain,
        kinds=kinds,
        paths=paths,
        exclude_tests=exclude_tests,
        embed=embed and bool(text),
        fusion_k=fusion_k,
        vector_weight=vector_weight,
        prior=prior,
    )

    def walk(refs: Sequence[tuple[str, str]]) -> GraphWalkSpec:
        return GraphWalkSpec(graph, tuple(EntityRef(c, i) for c, i in refs), depth, labels=labels)

    return GraphSearchRequest(
        SEARCH_REQUEST_VERSION,
        search,
        scope=GraphScope(walk(scope_seeds)) if scope_seeds else None,
        retriever=GraphRetriever(walk(seeds)) if seeds else None,
        expansion=GraphExpansion(graph, expand, labels=labels) if expand is not None else None,
    )


def query_vector(text: str) -> dict[str, Any]:
    """``vector_field``, ``vector`` and ``space`` for ``text`` under the default embedder."""
    from cairn.embed import load_embedder
    from cairn.store.load import VECTOR_FIELD

    embedder = load_embedder()
    (row,) = embedder.embed([text])
    return {
        "vector_field": VECTOR_FIELD,
        "vector": tuple(float(x) for x in row),
        "space": embedder.space,
    }


def display_name(body: Any) -> str:
    """The most telling name field of a document body."""
    for key in _NAME_FIELDS:
        value = body.get(key) if hasattr(body, "get") else None
        if isinstance(value, str) and value:
            return value
    return ""


def _why(hit: RankedDocument) -> str:
    explanation = hit.explanation
    if explanation is None:
        return ""
    parts = [f"{c.branch.value}#{c.native_rank}" for c in explanation.contributions]
    if explanation.hops is not None:
        parts.append(f"{explanation.hops} hop{'s' if explanation.hops != 1 else ''}")
    if explanation.prior is not None and explanation.prior != 1:
        parts.append(f"prior x{explanation.prior:g}")
    return " ".join(parts)


def location(body: Any) -> str:
    """Where a document body's node is: ``path:line``, its path alone, or ``""``."""
    if not hasattr(body, "get"):
        return ""
    return location_of(body.get("path"), body.get("range")) or ""


HIT_COLUMNS = ("#", "score", "collection", "id", "name", "where", "why")
"""Every column a table of hits can have, in order (``hit_table`` leaves out the empty)."""

CONTEXT_COLUMNS = ("hops", "collection", "id", "name", "where")
"""Every column of a table of context documents (``context_table``)."""

_OPTIONAL_COLUMNS = frozenset({"where", "why"})
"""Columns shown only when some row has something in them."""

PrintedTable = tuple[tuple[str, ...], list[tuple[str, ...]]]
"""A printable table: its column names and its rows."""


def hit_table(hits: Sequence[RankedDocument]) -> PrintedTable:
    """The columns and one printable row per hit of a table people read: rank, score,
    ID, name and where the node is (``path:line``), plus the collection only when the
    hits come from more than one (a search names its collection in its title) and why
    each ranks only when the search explained it (``--explain``)."""
    full = [
        (
            str(rank),
            f"{hit.score:.5f}",
            hit.document.ref.collection,
            hit.document.ref.id,
            display_name(hit.document.body),
            location(hit.document.body),
            _why(hit),
        )
        for rank, hit in enumerate(hits, start=1)
    ]
    return _shown(HIT_COLUMNS, full, varying=True)


def context_table(documents: Iterable[GraphContextDocument]) -> PrintedTable:
    """The columns and one printable row per context document: hops, collection (the
    expansion reaches other collections), ID, name, and where when any has a place."""
    full = [
        (
            str(item.shortest_hops),
            item.document.ref.collection,
            item.document.ref.id,
            display_name(item.document.body),
            location(item.document.body),
        )
        for item in documents
    ]
    return _shown(CONTEXT_COLUMNS, full, varying=False)


def _shown(
    names: tuple[str, ...], full: Sequence[tuple[str, ...]], *, varying: bool
) -> PrintedTable:
    """``names`` and ``full`` without the optional columns no row fills, nor (when
    ``varying``) a collection column that holds one value."""
    shown = [
        index
        for index, column in enumerate(names)
        if (column != "collection" or not varying or len({row[index] for row in full}) > 1)
        and (column not in _OPTIONAL_COLUMNS or any(row[index] for row in full))
    ]
    return tuple(names[index] for index in shown), [
        tuple(row[index] for index in shown) for row in full
    ]
