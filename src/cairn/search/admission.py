"""Admission: every rule of graph-search.md §4, checked before any read.

``admit_graph_search`` and ``admit_search`` either return the request's serialised
size or raise ``ValidationError`` / ``BudgetExceededError`` naming the rule broken.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import orjson

from cairn.canonical import FAST_FLOAT_MAX, FAST_FLOAT_MIN, canonical_bytes
from cairn.errors import BudgetExceededError, CanonicalizationError, ValidationError
from cairn.search.contracts import (
    EntityRef,
    GraphExpansion,
    GraphRetriever,
    GraphScope,
    GraphSearchRequest,
    GraphWalkSpec,
    SearchRequest,
    VectorSpace,
)
from cairn.search.filters import check_filters
from cairn.search.limits import (
    MAX_ALLOWED_IDS,
    MAX_REQUEST_BYTES,
    MAX_SEEDS,
    MAX_TEXT_BYTES,
    SEARCH_REQUEST_VERSION,
)
from cairn.search.priors import check_prior
from cairn.search.rules import rule
from cairn.search.wire import to_wire
from cairn.store.limits import check_identifier

__all__ = [
    "admit_graph_search",
    "admit_search",
    "number_length",
    "request_size",
    "vector_text_length",
]

_ES_FIXED_MAX = 21  # ECMAScript prints 0.D x 10**n in fixed notation for -6 < n <= 21
_ES_FIXED_MIN = -6


def _fail(message: str, **details: Any) -> ValidationError:
    return ValidationError(message, details=details)


def number_length(value: float) -> int:
    """``len(format_number(value))`` for a finite float, from ``repr`` without formatting.

    ``repr`` holds the shortest round-tripping digits ECMAScript prints; only the layout
    (fixed or exponent, ``cairn.canonical.format_number``) is derived here.
    """
    if value == 0:
        return 1
    mantissa, _, exponent = repr(abs(value)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = whole + fraction
    significant = digits.lstrip("0")
    n = len(whole) + (int(exponent) if exponent else 0) - (len(digits) - len(significant))
    k = len(significant.rstrip("0"))
    sign = 1 if value < 0 else 0
    if k <= n <= _ES_FIXED_MAX:
        return sign + n
    if 0 < n <= _ES_FIXED_MAX:
        return sign + k + 1
    if _ES_FIXED_MIN < n <= 0:
        return sign + 2 - n + k
    return sign + (k if k == 1 else k + 1) + 2 + len(str(abs(n - 1)))


def vector_text_length(vector: Sequence[float]) -> int:
    """``len`` of the canonical text ``[n1,n2,...]`` of finite floats, without formatting.

    orjson prints the shortest round-tripping digits as ECMAScript does for non-integral
    magnitudes inside ``[FAST_FLOAT_MIN, FAST_FLOAT_MAX)`` (``cairn.canonical``); only
    the few numbers outside that band are measured one by one.
    """
    if not vector:
        return 2
    values = np.asarray(vector, dtype=np.float64)
    magnitude = np.abs(values)
    odd = np.flatnonzero(
        (magnitude < FAST_FLOAT_MIN) | (magnitude >= FAST_FLOAT_MAX) | (values == np.trunc(values))
    )
    length = len(orjson.dumps(values.tolist()))
    for value in values[odd].tolist():
        length += number_length(value) - len(orjson.dumps(value))
    return length


def request_size(request: GraphSearchRequest | SearchRequest) -> int:
    """Bytes of the canonical wire form; the unit of the 65,536-byte request cap.

    A query vector of finite floats is measured number by number (``number_length``)
    instead of being formatted: its canonical text is ``[n1,n2,...]`` whatever the rest.
    """
    try:
        wire = to_wire(request)
        holder = wire.get("search", wire)
        vector = holder.get("vector") if isinstance(holder, dict) else None
        if (
            isinstance(vector, list)
            and vector
            and all(type(x) is float and math.isfinite(x) for x in vector)
        ):
            holder["vector"] = []
            return len(canonical_bytes(wire)) - 2 + vector_text_length(vector)
        return len(canonical_bytes(wire))
    except CanonicalizationError as exc:
        raise _fail(f"request is not serialisable: {exc.message}") from exc


def _check_size(request: GraphSearchRequest | SearchRequest) -> int:
    size = request_size(request)
    if size > MAX_REQUEST_BYTES:
        raise BudgetExceededError(
            f"request is {size} bytes; at most {MAX_REQUEST_BYTES} are admitted",
            details={"limit": MAX_REQUEST_BYTES, "size": size},
        )
    return size


def admit_graph_search(request: GraphSearchRequest) -> int:
    """Validate a graph search request completely; return its serialised size."""
    if not isinstance(request, GraphSearchRequest):
        raise _fail("expected a GraphSearchRequest")
    if type(request.version) is not int or request.version != SEARCH_REQUEST_VERSION:
        raise _fail(
            f"unsupported request version {request.version!r}; expected {SEARCH_REQUEST_VERSION}"
        )
    if request.scope is None and request.retriever is None and request.expansion is None:
        raise _fail("a graph search needs at least one of scope, retriever or expansion")
    _check_search(request.search, retriever_present=request.retriever is not None)
    if request.scope is not None:
        if not isinstance(request.scope, GraphScope):
            raise _fail("scope must be a GraphScope")
        _check_walk(request.scope.walk, "scope")
    if request.retriever is not None:
        if not isinstance(request.retriever, GraphRetriever):
            raise _fail("retriever must be a GraphRetriever")
        _check_walk(request.retriever.walk, "retriever")
        rule("GraphRetriever", "weight").check(request.retriever.weight, "retriever.weight")
    if request.expansion is not None:
        _check_expansion(request.expansion)
    return _check_size(request)


def admit_search(request: SearchRequest) -> int:
    """Validate a plain search request; return its serialised size."""
    _check_search(request, retriever_present=False)
    return _check_size(request)


def _check_search(search: SearchRequest, *, retriever_present: bool) -> None:
    if not isinstance(search, SearchRequest):
        raise _fail("search must be a SearchRequest")
    rule("SearchRequest", "database").check(search.database, "database")
    rule("SearchRequest", "collection").check(search.collection, "collection")
    has_text = _check_text(search)
    has_vector = _check_vector(search)
    if not (has_text or has_vector or retriever_present):
        raise _fail("text or vector may be omitted only when a graph retriever is present")
    for name in ("limit", "fusion_k", "text_weight", "vector_weight"):
        rule("SearchRequest", name).check(getattr(search, name), name)
    if type(search.explain) is not bool:
        raise _fail("explain must be a boolean")
    if search.allowed_ids is not None:
        _check_allowed_ids(search.allowed_ids)
    check_filters("SearchRequest", search)
    check_prior(search.prior)


def _check_text(search: SearchRequest) -> bool:
    if search.text is None and search.text_field is None:
        return False
    if search.text is None or search.text_field is None:
        raise _fail("text and text_field must be given together", field="text")
    rule("SearchRequest", "text_field").check(search.text_field, "text_field")
    if not isinstance(search.text, str):
        raise _fail("text must be a string", field="text")
    size = len(search.text.encode("utf-8", "surrogatepass"))
    if size > MAX_TEXT_BYTES:
        raise _fail(f"text is {size} bytes; at most {MAX_TEXT_BYTES} are allowed", field="text")
    return True


def _check_embed(search: SearchRequest) -> bool:
    """``embed`` asks the database for the vector: text required, no vector or space."""
    if type(search.embed) is not bool:
        raise _fail("embed must be a boolean", field="embed")
    if not search.embed:
        return False
    if search.text is None:
        raise _fail("embed needs text: it embeds the request's text", field="embed")
    if search.vector is not None or search.space is not None:
        raise _fail(
            "embed and a vector exclude each other: the database embeds the text, or the "
            "request brings its own vector and space",
            field="embed",
        )
    if search.vector_field is not None:
        rule("SearchRequest", "vector_field").check(search.vector_field, "vector_field")
    return True


def _check_vector(search: SearchRequest) -> bool:
    if _check_embed(search):
        return True
    given = (search.vector is not None, search.vector_field is not None, search.space is not None)
    if not any(given):
        return False
    if not all(given):
        raise _fail("vector, vector_field and space must be given together", field="vector")
    rule("SearchRequest", "vector_field").check(search.vector_field, "vector_field")
    space = search.space
    if not isinstance(space, VectorSpace):
        raise _fail("space must be a VectorSpace", field="space")
    space.validate()
    vector = search.vector
    if not isinstance(vector, tuple):
        raise _fail("vector must be an array of numbers", field="vector")
    if len(vector) != space.dimension:
        raise _fail(
            f"vector has {len(vector)} values; space {space.id!r} has dimension {space.dimension}",
            field="vector",
        )
    for value in vector:
        # Integers compare exactly (no float conversion, which could overflow).
        if type(value) not in (int, float) or (type(value) is float and not math.isfinite(value)):
            raise _fail("vector values must be finite numbers", field="vector")
    rule("SearchRequest", "vector").check(vector, "vector")
    return True


def _check_caps(record: str, value: GraphWalkSpec | GraphExpansion, where: str) -> None:
    for name in ("max_depth", "max_vertices", "max_edges"):
        rule(record, name).check(getattr(value, name), f"{where}.{name}")


def _check_labels(record: str, labels: object, where: str) -> None:
    if labels is None:
        return
    if not isinstance(labels, tuple):
        raise _fail(f"{where}.labels must be an array or null")
    rule(record, "labels").check(labels, f"{where}.labels")
    for label in labels:
        check_identifier(label, f"{where} label")


def _check_walk(walk: GraphWalkSpec, where: str) -> None:
    if not isinstance(walk, GraphWalkSpec):
        raise _fail(f"{where}.walk must be a GraphWalkSpec")
    rule("GraphWalkSpec", "graph").check(walk.graph, f"{where}.graph")
    _check_caps("GraphWalkSpec", walk, where)
    _check_labels("GraphWalkSpec", walk.labels, where)
    seeds = walk.seeds
    if not isinstance(seeds, tuple):
        raise _fail(f"{where}.seeds must be a non-empty array")
    rule("GraphWalkSpec", "seeds").check(seeds, f"{where}.seeds")
    limit = min(walk.max_vertices, MAX_SEEDS)
    if len(seeds) > limit:
        raise _fail(f"{where} has {len(seeds)} seeds; at most {limit} (max_vertices) allowed")
    for seed in seeds:
        if not isinstance(seed, EntityRef):
            raise _fail(f"{where} seeds must be entity refs")
        rule("EntityRef", "collection").check(seed.collection, f"{where} seed collection")
        rule("EntityRef", "id").check(seed.id, f"{where} seed id")


def _check_expansion(expansion: GraphExpansion) -> None:
    if not isinstance(expansion, GraphExpansion):
        raise _fail("expansion must be a GraphExpansion")
    rule("GraphExpansion", "graph").check(expansion.graph, "expansion.graph")
    _check_caps("GraphExpansion", expansion, "expansion")
    _check_labels("GraphExpansion", expansion.labels, "expansion")


def _check_allowed_ids(allowed: Sequence[str]) -> None:
    if not isinstance(allowed, tuple):
        raise _fail("allowed_ids must be an array or null")
    if len(allowed) > MAX_ALLOWED_IDS:
        raise BudgetExceededError(
            f"allowed_ids holds {len(allowed)} IDs; at most {MAX_ALLOWED_IDS}",
            details={"limit": MAX_ALLOWED_IDS, "size": len(allowed)},
        )
    for item in allowed:
        check_identifier(item, "allowed id")
