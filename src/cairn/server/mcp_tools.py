"""The MCP tools: descriptions written for agents, schemas from the contracts, one call each.

Every tool returns ``(structured, text)``: the exact wire result (the same JSON the HTTP
API returns) and a compact JSON rendering for the model to read, exact IDs first and
long fields trimmed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cairn.embed import MINILM_EMBEDDER, PACKAGED_MODELS
from cairn.errors import ValidationError
from cairn.search.contracts import (
    EntityRef,
    GraphSearchRequest,
    GraphSearchResult,
    QueryRequest,
    RankedDocument,
    SearchRequest,
    SqlGraphSearchRequest,
)
from cairn.search.limits import SEARCH_REQUEST_VERSION
from cairn.search.present import (
    CODE_FUSION_K,
    CODE_PRIOR,
    CODE_VECTOR_WEIGHT,
    CODE_VECTOR_WEIGHTS,
    code_text_field,
    code_vector_weight,
)
from cairn.search.schema import json_schema
from cairn.search.wire import from_json, from_wire, to_json, to_wire

if TYPE_CHECKING:
    from cairn.database import Database
    from cairn.store.database import PrincipalLike

__all__ = ["COMPACT_FIELDS", "MAX_COMPACT_TEXT", "TOOLS", "McpTool", "compact_documents"]

MAX_COMPACT_TEXT = 300
"""Characters of any one body field shown in the compact rendering."""

COMPACT_FIELDS = (
    "kind",
    "name",
    "qualified_name",
    "path",
    "range",
    "language",
    "signature",
    "docstring",
)
"""Body fields the compact rendering keeps, in this order."""

ToolResult = tuple[dict[str, Any], str]


@dataclass(frozen=True, slots=True)
class McpTool:
    """One tool: its name, agent-facing description, input schema and handler."""

    name: str
    description: str
    schema: dict[str, Any]
    run: Callable[[Database, PrincipalLike, Mapping[str, Any]], ToolResult]


def _trim(value: Any) -> Any:
    if isinstance(value, str) and len(value) > MAX_COMPACT_TEXT:
        return value[:MAX_COMPACT_TEXT] + "…"
    return value


def _compact_body(body: Mapping[str, Any]) -> dict[str, Any]:
    return {key: _trim(to_json(body[key])) for key in COMPACT_FIELDS if key in body}


def _compact_hit(rank: int, hit: RankedDocument) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "collection": hit.document.ref.collection,
        "id": hit.document.ref.id,
        "rank": rank,
        "score": hit.score,
        **_compact_body(hit.document.body),
    }
    if hit.document.redacted:
        entry["redacted_fields"] = list(hit.document.redacted_fields)
    if hit.explanation is not None and hit.explanation.hops is not None:
        entry["hops"] = hit.explanation.hops
    return entry


def _compact_result(result: GraphSearchResult) -> str:
    compact: dict[str, Any] = {
        "hits": [_compact_hit(rank, hit) for rank, hit in enumerate(result.hits, start=1)]
    }
    if result.expansion is not None:
        compact["context"] = [
            {
                "collection": item.document.ref.collection,
                "id": item.document.ref.id,
                "hops": item.shortest_hops,
                **_compact_body(item.document.body),
            }
            for item in result.expansion.documents
        ]
    return json.dumps(compact, ensure_ascii=False)


def compact_documents(documents: list[dict[str, Any]]) -> str:
    """Compact JSON of fetched documents (IDs first)."""
    return json.dumps(documents, ensure_ascii=False)


def _with_database(arguments: Mapping[str, Any], db: Database) -> dict[str, Any]:
    """Agents need not know the database name: default it to the served one."""
    search = dict(arguments)
    search.setdefault("database", db.name)
    return search


# ------------------------------------------------------------------ handlers
DEFAULT_COLLECTION = "symbols"
_VECTOR_KEYS = frozenset({"vector", "vector_field", "space"})


def _search_arguments(
    db: Database, who: PrincipalLike, arguments: Mapping[str, Any]
) -> tuple[dict[str, Any], bool, str | None]:
    """Agent defaults: the symbols collection, its weighted text fields, and (``hybrid``,
    default true, when no vector was given) the query embedded by the database like the
    collection's vectors (``embed``); when it cannot be, why (the search is text only)."""
    from cairn.search.embedding import embedding_unavailable

    given = _with_database(arguments, db)
    hybrid = given.pop("hybrid", True)
    if type(hybrid) is not bool:
        raise ValidationError("hybrid must be a boolean", details={"field": "hybrid"})
    given.setdefault("collection", DEFAULT_COLLECTION)
    given.setdefault("fusion_k", CODE_FUSION_K)
    given.setdefault("prior", CODE_PRIOR)
    text = given.get("text")
    with db.read_cut(who) as cut:
        if "vector_weight" not in given:
            given["vector_weight"] = code_vector_weight(cut, str(given["collection"]))
        if isinstance(text, str) and "text_field" not in given:
            given["text_field"] = code_text_field(cut, str(given["collection"]))
        if given.get("embed") is True or not hybrid or not isinstance(text, str):
            return given, given.get("embed") is True, None
        if _VECTOR_KEYS & set(given):
            return given, False, None  # the agent brought its own vector
        reason = embedding_unavailable(cut, str(given["collection"]))
    given["embed"] = reason is None
    return given, reason is None, reason


def _search(db: Database, who: PrincipalLike, arguments: Mapping[str, Any]) -> ToolResult:
    given, embedded, reason = _search_arguments(db, who, arguments)
    request = from_wire(SearchRequest, given)
    hits = db.search(request, who)
    result = GraphSearchResult(tuple(hits))
    compact = json.loads(_compact_result(result))
    compact["hybrid"] = embedded  # whether the query was embedded: nothing is silent
    if reason is not None:
        compact["text_only"] = reason
    # The same JSON as the HTTP API's POST /v1/search.
    return {"hits": [to_wire(hit) for hit in hits]}, json.dumps(compact, ensure_ascii=False)


def _search_graph(db: Database, who: PrincipalLike, arguments: Mapping[str, Any]) -> ToolResult:
    """A graph search given as the structured request, or as one SQL ``SEARCH``
    statement (``sql`` with its ``parameters``): the same search either way."""
    if "sql" in arguments:
        extra = sorted(set(arguments) - _SQL_FIELDS)
        if extra:
            raise ValidationError(
                f"cairn_search_graph takes either sql (with parameters) or the structured "
                f"request, not both: remove {extra}",
                details={"fields": extra},
            )
        query = from_wire(QueryRequest, dict(arguments))
        result = db.search_sql(SqlGraphSearchRequest(query), who)
        return to_wire(result), _compact_result(result)
    if "parameters" in arguments:
        raise ValidationError("parameters belong to sql: give sql too, or drop parameters")
    payload = dict(arguments)
    payload.setdefault("version", SEARCH_REQUEST_VERSION)
    if isinstance(payload.get("search"), Mapping):
        payload["search"] = _with_database(payload["search"], db)
    result = db.graph_search(from_wire(GraphSearchRequest, payload), who)
    return to_wire(result), _compact_result(result)


def _show(db: Database, who: PrincipalLike, arguments: Mapping[str, Any]) -> ToolResult:
    """Show code: one symbol by name (or ID) with its source lines, or documents by
    exact refs (each with its source lines)."""
    unknown = sorted(set(arguments) - _SHOW_FIELDS)
    if unknown:
        raise ValidationError(f"cairn_show has unknown fields {unknown}")
    by_name, by_refs = "name" in arguments, "refs" in arguments
    if by_name == by_refs:
        raise ValidationError("cairn_show needs either name (one symbol) or refs (documents)")
    if by_name:
        if "source" in arguments:
            raise ValidationError("source applies to refs; a shown name always has its lines")
        return _show_name(db, who, arguments)
    if "max_bytes" in arguments:
        raise ValidationError("max_bytes applies to name; refs use the default source bound")
    return _show_refs(db, who, arguments)


def _show_name(db: Database, who: PrincipalLike, arguments: Mapping[str, Any]) -> ToolResult:
    from cairn.search.show import ShowRequest, show_request

    request = from_json(ShowRequest, {"database": db.name, **arguments})
    answer = show_request(db, request, who)
    compact: dict[str, Any] = {"status": answer.resolution.status}
    if answer.document is None:
        compact["candidates"] = [_candidate(item) for item in answer.resolution.candidates]
    else:
        ref = answer.document.ref
        compact.update({"collection": ref.collection, "id": ref.id})
        compact.update(_compact_body(answer.document.body))
        lines = None if answer.source is None else to_json(answer.source)
        compact["source"] = _numbered(
            {"lines": lines, "stale": answer.stale, "reason": answer.reason}
        )
    # The same JSON as the HTTP API's POST /v1/symbols/show.
    return to_json(answer), json.dumps(compact, ensure_ascii=False)


def _candidate(item: Any) -> dict[str, Any]:
    """One candidate of an ambiguous name, as the model needs it to pick one."""
    return {"id": item.ref.id, "kind": item.kind, "name": item.qualified_name, "at": item.location}


def _show_refs(db: Database, who: PrincipalLike, arguments: Mapping[str, Any]) -> ToolResult:
    from cairn.search.show import checkout_of, source_of
    from cairn.server.mcp import MAX_DOCUMENT_REFS
    from cairn.store.reads import read_document

    refs = arguments.get("refs")
    if not isinstance(refs, list) or not 1 <= len(refs) <= MAX_DOCUMENT_REFS:
        raise ValidationError(f"refs must be an array of 1..{MAX_DOCUMENT_REFS} entity refs")
    with_source = arguments.get("source", True)
    if type(with_source) is not bool:
        raise ValidationError("source must be a boolean", details={"field": "source"})
    wanted = [from_wire(EntityRef, item) for item in refs]
    found: list[dict[str, Any]] = []
    sources: list[dict[str, Any]] = []
    base, listing = checkout_of(db)
    with db.read_cut(who) as cut:  # one cut for every document of the call
        for ref in wanted:
            document = read_document(cut, ref.collection, ref.id)
            found.append(to_wire(document))  # as GET /v1/documents returns it
            if with_source:  # the source lines from the checkout, or why not (stale)
                sources.append(to_json(source_of(document.body, base, listing)))
    compact = []
    for index, d in enumerate(found):
        entry = {
            "collection": d["ref"]["collection"],
            "id": d["ref"]["id"],
            "revision": d["revision"],
            **{k: _trim(v) for k, v in d["body"].items()},
        }
        if with_source:
            entry["source"] = _numbered(sources[index])
        compact.append(entry)
    structured: dict[str, Any] = {"documents": found}
    if with_source:
        structured["sources"] = sources
    return structured, compact_documents(compact)


def _numbered(source: Mapping[str, Any]) -> Any:
    """Source lines as ``"12  text"`` strings, or the reason there are none."""
    lines = source.get("lines")
    if not lines:
        return {"stale": source.get("stale"), "reason": source.get("reason")}
    start = lines["start"]
    numbered = [f"{start + i}  {text}" for i, text in enumerate(lines["lines"])]
    return {"stale": source.get("stale"), "lines": numbered, "truncated": lines["truncated"]}


def _callers(db: Database, who: PrincipalLike, arguments: Mapping[str, Any]) -> ToolResult:
    """Who calls a symbol (or what it calls), by name, each edge with its call sites."""
    from cairn.search.calls import CallsRequest, calls

    request = from_json(CallsRequest, {"database": db.name, **arguments})
    answer = calls(db, request, who)
    match = answer.resolution.match
    compact: dict[str, Any] = {
        "symbol": None if match is None else match.ref.id,
        "status": answer.resolution.status,
        "direction": answer.direction,
    }
    if match is None:
        compact["candidates"] = [_candidate(item) for item in answer.resolution.candidates]
    compact["edges"] = [_compact_call(answer.direction, edge) for edge in answer.edges]
    # The same JSON as the HTTP API's POST /v1/graph/calls.
    return to_json(answer), json.dumps(compact, ensure_ascii=False)


def _compact_call(direction: str, edge: Any) -> dict[str, Any]:
    other = edge.caller if direction == "callers" else edge.callee
    entry = {"id": other.id, "name": edge.other_name, "hops": edge.hops}
    return {**entry, **_compact_sites(edge.evidence)}


def _compact_sites(evidence: Any) -> dict[str, Any]:
    """An edge's call sites as ``file:line``, and how many it has in all."""
    return {
        "sites": [f"{site.file}:{site.line}" for site in evidence.sites],
        "site_count": evidence.total,
    }


def _traverse(db: Database, who: PrincipalLike, arguments: Mapping[str, Any]) -> ToolResult:
    from cairn.search.traverse import traverse, traverse_request_from_json

    request = traverse_request_from_json(_with_database(arguments, db))
    result = traverse(db, request, who)
    compact: dict[str, Any] = {
        "vertices": [_compact_vertex(v) for v in result.vertices],
        "path": None
        if result.path is None
        else [{"collection": r.collection, "id": r.id} for r in result.path],
        "edges": [_compact_edge(e) for e in result.edges],
    }
    if result.filtered_out:
        compact["filtered_out"] = result.filtered_out
    return result.to_json(), json.dumps(compact, ensure_ascii=False)


def _compact_vertex(vertex: Any) -> dict[str, Any]:
    """A reached vertex, with its document's compact fields when documents were asked."""
    entry: dict[str, Any] = {"collection": vertex.ref.collection, "id": vertex.ref.id}
    entry["hops"] = vertex.hops
    if vertex.document is not None:
        entry.update(_compact_body(vertex.document.body))
    return entry


def _compact_edge(edge: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "source": edge.source.id,
        "target": edge.target.id,
        "relation": edge.relation,
    }
    if edge.evidence is not None:  # asked for: the call sites as file:line, and their total
        entry.update(_compact_sites(edge.evidence))
    return entry


def _impact(db: Database, who: PrincipalLike, arguments: Mapping[str, Any]) -> ToolResult:
    """What depends on a symbol (by name or ID): counts, the top dependents, and whether
    the answer is complete; a hub gets a bounded answer labelled partial, never none."""
    from cairn.search.impact import ImpactRequest, impact

    given = dict(arguments)
    unknown = sorted(set(given) - _IMPACT_FIELDS)
    if unknown:
        raise ValidationError(f"cairn_impact has unknown fields {unknown}")
    name = given.pop("name", None)
    if name is None:
        if "id" not in given:
            raise ValidationError("cairn_impact needs the symbol's name (or its id)")
        name = given["id"]
    given.pop("id", None)
    given.pop("collection", None)  # an ID names its document on its own
    body = {"database": db.name, "name": name, **given}
    request = from_json(ImpactRequest, body)
    answer = impact(db, request, who)
    compact = {
        "symbol": None if answer.resolution.match is None else answer.resolution.match.ref.id,
        "status": answer.resolution.status,
        "complete": answer.complete,
        "stopped_by": answer.stopped_by,
        "dependents": answer.dependents,
        "test_dependents": answer.test_dependents,
        "per_hop": [list(item) for item in answer.per_hop],
        "top": [
            {
                "collection": item.ref.collection,
                "id": item.ref.id,
                "hops": item.hops,
                "kind": item.kind,
                "path": item.path,
                "test": item.test,
            }
            for item in answer.top
        ],
        "candidates": [item.ref.id for item in answer.resolution.candidates],
    }
    return to_json(answer), json.dumps(compact, ensure_ascii=False)


# -------------------------------------------------------------------- schemas
_SEARCH_SCHEMA = json_schema(SearchRequest, optional=frozenset({"database", "collection"}))
del _SEARCH_SCHEMA["properties"]["embed"]  # ``hybrid`` (default on) decides it for agents
_SEARCH_SCHEMA["properties"]["fusion_k"] = {
    **_SEARCH_SCHEMA["properties"]["fusion_k"],
    "default": CODE_FUSION_K,
    "description": "RRF k of the fusion: small trusts each branch's top hits (code search).",
}
_SEARCH_SCHEMA["properties"]["text_field"] = {
    **_SEARCH_SCHEMA["properties"]["text_field"],
    "description": _SEARCH_SCHEMA["properties"]["text_field"]["description"]
    + " Default: the code index's weighted name, signature and text fields (or /text on"
    " an index loaded before they existed).",
}
_SEARCH_SCHEMA["properties"]["vector_weight"] = {
    key: value
    for key, value in _SEARCH_SCHEMA["properties"]["vector_weight"].items()
    if key != "default"  # it depends on the collection's embedder
}
_SEARCH_SCHEMA["properties"]["vector_weight"]["description"] = (
    "RRF weight of the embedding branch (the text branch's is 1.0). Default: "
    f"{CODE_VECTOR_WEIGHTS[PACKAGED_MODELS[MINILM_EMBEDDER]]} for a collection embedded "
    f"with the {MINILM_EMBEDDER} model, else {CODE_VECTOR_WEIGHT}."
)
_SEARCH_SCHEMA["properties"]["prior"] = {
    **_SEARCH_SCHEMA["properties"]["prior"],
    "default": CODE_PRIOR,
    "description": f"Kind prior of the fused scores: {CODE_PRIOR} weighs module variables "
    "and definitions local to a function 0.6 (code search); null: none.",
}
_SEARCH_SCHEMA["properties"]["hybrid"] = {
    "type": "boolean",
    "default": True,
    "description": "Embed the text like the collection's vectors and fuse both branches "
    "(ignored when a vector is given); false: BM25 only.",
}
_GRAPH_SCHEMA = json_schema(GraphSearchRequest, optional=frozenset({"version", "search"}))
# The graph search's own search record: the contract's fields (``embed`` included), no
# MCP-only ``hybrid``.
_GRAPH_SCHEMA["properties"]["search"] = json_schema(SearchRequest, optional=frozenset({"database"}))
_QUERY_SCHEMA = json_schema(QueryRequest)
_GRAPH_SCHEMA["properties"].update(
    {
        "sql": {
            **_QUERY_SCHEMA["properties"]["sql"],
            "description": "The whole search as one SQL SEARCH statement, instead of the "
            "structured fields (search, scope, retriever, expansion).",
        },
        "parameters": {
            **_QUERY_SCHEMA["properties"]["parameters"],
            "description": "Values of the statement's @name parameters (with sql only).",
        },
    }
)
_SQL_FIELDS = frozenset(_QUERY_SCHEMA["properties"])
_REFS_SCHEMA: dict[str, Any] = {
    "type": "array",
    "items": json_schema(EntityRef),
    "minItems": 1,
    "maxItems": 100,
    "description": "Instead of name: exact (collection, id) pairs, as the other tools return.",
}


SYMBOL_NAME = (
    "The symbol: a name (load_user), a dotted name (app.services.load_user) or an exact "
    "ID (function:src/app.py#load_user)."
)
"""How every tool that takes a symbol describes its ``name``."""


def _by_name(record: type[Any], optional: frozenset[str]) -> dict[str, Any]:
    """The input schema of a request that names a symbol, its ``name`` described."""
    schema = json_schema(record, optional=optional)
    schema["properties"]["name"] = {**schema["properties"]["name"], "description": SYMBOL_NAME}
    return schema


def _show_schema() -> dict[str, Any]:
    from cairn.search.show import ShowRequest

    schema = _by_name(ShowRequest, frozenset({"database", "name"}))
    properties = schema["properties"]
    properties["refs"] = _REFS_SCHEMA
    properties["source"] = {
        "type": "boolean",
        "default": True,
        "description": "With refs: add each document's source lines (none, and stale: "
        "true, when the file changed since it was indexed).",
    }
    return schema


_SHOW_FIELDS = frozenset({"database", "name", "max_bytes", "refs", "source"})


def _callers_schema() -> dict[str, Any]:
    from cairn.search.calls import CallsRequest

    return _by_name(CallsRequest, frozenset({"database"}))


_IMPACT_FIELDS = frozenset(
    {
        "database",
        "graph",
        "name",
        "collection",
        "id",
        "relations",
        "max_depth",
        "max_vertices",
        "max_edges",
        "top",
        "kinds",
        "paths",
        "exclude_tests",
    }
)


def _traverse_schema() -> dict[str, Any]:
    from cairn.search.traverse import TraverseRequest

    return json_schema(TraverseRequest, optional=frozenset({"database"}))


def _impact_schema() -> dict[str, Any]:
    from cairn.search.impact import ImpactRequest

    schema = _by_name(ImpactRequest, frozenset({"database", "name"}))
    properties = schema["properties"]
    properties["id"] = {"type": "string", "description": "Same as name (an exact ID)."}
    properties["collection"] = {"type": "string", "description": "Ignored (kept for IDs)."}
    return schema


TOOLS: list[McpTool] = [
    McpTool(
        "cairn_search",
        "Where is the code that does W: hybrid search (BM25 over names, signatures, "
        "docstrings and doc sections, fused with the embedded query) of one collection, "
        "'symbols' unless another is named (files, routes, sections, externals). Example: "
        '{"text": "load user"}. Returns ranked hits with exact (collection, id) refs for '
        "the other tools; 'hybrid' in the text says whether the query was embedded. "
        "Filters: kinds (function, method, class, ...), paths (globs), exclude_tests.",
        _SEARCH_SCHEMA,
        _search,
    ),
    McpTool(
        "cairn_show",
        "Show code: a symbol by name or ID with its kind, path, range, signature, "
        "docstring and its source lines from the indexed checkout, numbered. Example: "
        '{"name": "views.get_user"}. Or documents by exact refs ({"refs": [...]}). A file '
        "changed since indexing gives stale: true and no lines; an ambiguous name gives "
        "the candidates.",
        _show_schema(),
        _show,
    ),
    McpTool(
        "cairn_callers",
        "Who calls a symbol (direction 'callers', the default) or what it calls "
        "('callees'), by name or ID, up to depth calls away, each edge with its call sites "
        'as file:line and their total. Example: {"name": "load_user"}. An ambiguous name '
        "gives the candidates. Filters: kinds, paths (globs), exclude_tests.",
        _callers_schema(),
        _callers,
    ),
    McpTool(
        "cairn_impact",
        "What breaks if this symbol changes: everything with a path of calls (decorator "
        "applications included), imports, inheritance, routes or doc references leading "
        "to it, counted by hops, kind and file, test code apart, the top dependents "
        "listed. Give the symbol by name ('load_user', 'Flask.full_dispatch_request') or "
        "exact ID. A hub gets a bounded "
        "answer marked complete: false with the limit that stopped it. Use before changing "
        "or deleting a symbol.",
        _impact_schema(),
        _impact,
    ),
    McpTool(
        "cairn_traverse",
        "Walk the graph from seed refs: neighbours out, in or both ways over any "
        "relations (contains, imports, calls, inherits, decorates, handles_route, "
        "references, mentions), or the shortest path to a target ref; evidence: N adds "
        "each edge's sites. Bounded by max_depth, max_vertices and max_edges; hidden "
        "vertices are never passed through.",
        _traverse_schema(),
        _traverse,
    ),
    McpTool(
        "cairn_search_graph",
        "Hybrid graph search: text/vector ranking fused with graph retrieval (rank by "
        "hops from seed refs), optionally restricted to what is reachable from seeds "
        "(scope) and with context around the hits (expansion); or the same search as one "
        'SQL statement: {"sql": "SEARCH FROM symbols TEXT \\"/text\\" MATCH @q '
        'EXPAND GRAPH code DEPTH 1 VERTICES 10 EDGES 100 LIMIT 5", "parameters": '
        '{"q": "parse"}}. Every walk is bounded.',
        _GRAPH_SCHEMA,
        _search_graph,
    ),
]
