"""The exact vector branch: cosine, dot or euclidean over the live vectors of one space.

A query only sees vectors of the exact same ``VectorSpace`` (id, dimension, metric,
model, version) that are bound to the current revision of a live document; stale
vectors (written for an older revision) are ignored. Row policy and allowed IDs mask
candidates before ranking; ties break by document ID.

This first increment scans the stored float32 blobs through the read cut's SQLite
snapshot with one numpy matrix product; the in-memory matrix per (collection, field,
space) of design §3 will replace the scan without changing results.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from cairn.canonical import canonical_bytes
from cairn.errors import NotFoundError, PermissionDeniedError, ValidationError
from cairn.store.apply import load_collection, load_field_policies, vector_pointer
from cairn.store.commands import EntityRef, Metric, VectorSpace
from cairn.store.limits import check_identifier
from cairn.store.policy import Capability, field_allowed, require, row_visible
from cairn.store.reads import ReadCut

__all__ = ["VectorHit", "similarity", "vector_branch"]


@dataclass(frozen=True, slots=True)
class VectorHit:
    """One ranked vector hit: one-based rank and the metric's native score."""

    ref: EntityRef
    rank: int
    score: float


def similarity(
    metric: Metric, matrix: npt.NDArray[np.float64], query: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    """Higher-is-better scores: cosine similarity, dot product, or negated L2 distance."""
    if metric is Metric.DOT:
        result: npt.NDArray[np.float64] = matrix @ query
        return result
    if metric is Metric.EUCLIDEAN:
        distance: npt.NDArray[np.float64] = np.linalg.norm(matrix - query, axis=1)
        return -distance
    norms = np.linalg.norm(matrix, axis=1) * np.linalg.norm(query)
    dots = matrix @ query
    with np.errstate(divide="ignore", invalid="ignore"):
        cosine: npt.NDArray[np.float64] = np.where(norms > 0, dots / norms, 0.0)
    return cosine


def vector_branch(
    cut: ReadCut,
    collection: str,
    field: str,
    vector: Sequence[float],
    space: VectorSpace,
    *,
    limit: int,
    allowed_ids: Collection[str] | None = None,
) -> tuple[VectorHit, ...]:
    """Exact scan of the collection's vectors in ``space``, masked before ranking."""
    check_identifier(collection, "collection")
    check_identifier(field, "vector field")
    space.validate()
    config = load_collection(cut.conn, collection)
    if config is None:
        raise NotFoundError(f"no collection {collection!r}", details={"collection": collection})
    require(cut.principal, cut.database, collection, Capability.VECTOR_SEARCH)
    if field not in {item.name for item in config.vector_fields}:
        raise ValidationError(f"collection {collection!r} has no vector field {field!r}")
    policies = load_field_policies(cut.conn, collection)
    pointer = vector_pointer(field)
    if not field_allowed(cut.principal, cut.database, collection, policies, pointer, "use"):
        raise PermissionDeniedError(
            f"principal {cut.principal.id!r} may not use field {pointer} of {collection!r}",
            details={"principal": cut.principal.id, "resource": collection, "field": pointer},
        )
    query = np.asarray(vector, dtype=np.float64)
    if query.shape != (space.dimension,) or not np.all(np.isfinite(query)):
        raise ValidationError(
            f"the query vector needs {space.dimension} finite values",
            details={"dimension": space.dimension},
        )
    rows = cut.conn.execute(
        "SELECT v.id, v.data, d.owner, d.project FROM vectors AS v JOIN documents AS d "
        "ON d.collection = v.collection AND d.id = v.id "
        "WHERE v.collection = ? AND v.field = ? AND v.space = ? "
        "AND d.deleted = 0 AND d.revision = v.revision",
        (collection, field, canonical_bytes(space.to_json())),
    ).fetchall()
    wanted = None if allowed_ids is None else frozenset(allowed_ids)
    kept = [
        row
        for row in rows
        if (wanted is None or row[0] in wanted)
        and row_visible(cut.principal, cut.database, collection, row[2], row[3])
    ]
    if not kept:
        return ()
    matrix = np.frombuffer(b"".join(row[1] for row in kept), dtype="<f4").astype(np.float64)
    scores = similarity(space.metric, matrix.reshape(len(kept), space.dimension), query)
    order = sorted(range(len(kept)), key=lambda i: (-scores[i], kept[i][0]))[:limit]
    return tuple(
        VectorHit(EntityRef(collection, kept[i][0]), rank, float(scores[i]))
        for rank, i in enumerate(order, start=1)
    )
