"""Query embedding by the database: a search may ask for its text to be embedded with
the embedder the collection's vectors were loaded with (``SearchRequest.embed``).

The collection records each vector field's space (model, version, dimension, metric),
so the database knows which embedder made its vectors; only an embedder that makes
vectors in exactly that space and runs here offline is used (``cairn.embed.
embedder_for``). Nothing is embedded unless asked, and a request that asks where no
such embedder exists is refused with the reason, never searched text-only in silence.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from cairn.embed import Embedder, embedder_for
from cairn.errors import UnsupportedCapabilityError, ValidationError
from cairn.search.contracts import SearchRequest
from cairn.store.commands import VectorSpace
from cairn.store.reads import collection_config

if TYPE_CHECKING:
    from cairn.store.reads import ReadCut

__all__ = ["QueryEmbedder", "embed_request", "embedding_unavailable", "query_embedder"]


@dataclass(frozen=True, slots=True)
class QueryEmbedder:
    """The vector field a query is embedded for, its space, and the embedder to use."""

    field: str
    space: VectorSpace
    embedder: Embedder


def _field(cut: ReadCut, collection: str, vector_field: str | None) -> tuple[str, VectorSpace]:
    config = collection_config(cut, collection)
    fields = {} if config is None else {f.name: f.space for f in config.vector_fields}
    if vector_field is not None:
        if vector_field not in fields:
            raise ValidationError(
                f"collection {collection!r} has no vector field {vector_field!r} "
                f"(it has {sorted(fields)})",
                details={"field": "vector_field", "vector_fields": sorted(fields)},
            )
        return vector_field, fields[vector_field]
    if len(fields) != 1:
        raise ValidationError(
            f"embed needs vector_field: collection {collection!r} has "
            f"{len(fields)} vector fields {sorted(fields)}",
            details={"field": "vector_field", "vector_fields": sorted(fields)},
        )
    ((name, space),) = fields.items()
    return name, space


def query_embedder(cut: ReadCut, collection: str, vector_field: str | None = None) -> QueryEmbedder:
    """The embedder a query of ``collection`` (its ``vector_field``, or its only one)
    is embedded with; a field whose space no embedder here makes is refused."""
    name, space = _field(cut, collection, vector_field)
    embedder = embedder_for(space)
    if embedder is None:
        raise UnsupportedCapabilityError(
            f"the vectors of {collection!r} field {name!r} come from {space.model} "
            f"{space.version} ({space.dimension} dimensions), which this server cannot "
            "run: send the query's vector instead of embed",
            details={"collection": collection, "vector_field": name, "space": space.to_json()},
        )
    return QueryEmbedder(name, space, embedder)


def embedding_unavailable(
    cut: ReadCut, collection: str, vector_field: str | None = None
) -> str | None:
    """Why a query of ``collection`` cannot be embedded here, or None when it can (the
    doors that embed by default search text only then, and say why)."""
    try:
        query_embedder(cut, collection, vector_field)
    except (ValidationError, UnsupportedCapabilityError) as exc:
        return exc.message
    return None


def embed_request(cut: ReadCut, request: SearchRequest) -> SearchRequest:
    """``request`` with its text embedded when it asks (``embed``), else itself."""
    if not request.embed:
        return request
    assert request.text is not None  # admission: embed needs text
    found = query_embedder(cut, request.collection, request.vector_field)
    (row,) = found.embedder.embed([request.text])
    vector = tuple(float(value) for value in row)
    return replace(request, vector=vector, vector_field=found.field, space=found.space)
