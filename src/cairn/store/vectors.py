"""The exact vector branch: cosine, dot or euclidean over the live vectors of one space.

A query only sees vectors of the exact same ``VectorSpace`` (id, dimension, metric,
model, version) that are bound to the current revision of a live document; stale
vectors (written for an older revision) are ignored. Row policy and allowed IDs mask
candidates before ranking; ties break by document ID.

The scan runs over the in-memory float32 matrix of ``(collection, field, space)``
(``cairn.store.columns``) viewed at the cut: a row counts iff it and the slot (document
revision) it is bound to are alive at the cut's position, the row is visible to the
principal and allowed. Scores are computed in float64; the best ``limit`` are chosen
with ``argpartition`` (keeping every tie at the boundary) and ordered by score, then ID.
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
from cairn.store.limits import SQLITE_PARAMETER_BATCH, check_identifier
from cairn.store.policy import Capability, field_allowed, require
from cairn.store.reads import ReadCut, visible_mask

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
    view = cut.columns
    column = view.vector_column(collection, field, canonical_bytes(space.to_json()))
    if column is None or limit <= 0:
        return ()
    documents = view.alive(collection)
    slots = column.slots
    inside = slots < len(documents)
    mask = column.alive(cut.position) & inside
    mask[inside] &= (
        documents[slots[inside]] & visible_mask(cut, collection, len(documents))[slots[inside]]
    )
    if allowed_ids is not None:
        mask &= np.isin(slots, _allowed_slots(cut, collection, allowed_ids))
    rows = np.flatnonzero(mask)
    if len(rows) == 0:
        return ()
    scores = similarity(space.metric, column.matrix[rows].astype(np.float64), query)
    chosen = _top(scores, limit)
    ids = {int(i): view.ids[int(slots[rows[i]])] for i in chosen}
    order = sorted(ids, key=lambda i: (-scores[i], ids[i]))[:limit]
    return tuple(
        VectorHit(EntityRef(collection, ids[i]), rank, float(scores[i]))
        for rank, i in enumerate(order, start=1)
    )


def _top(scores: npt.NDArray[np.float64], limit: int) -> npt.NDArray[np.intp]:
    """Indexes of the ``limit`` best scores plus every score tied with the worst of them."""
    if limit >= len(scores):
        return np.arange(len(scores))
    best = np.argpartition(-scores, limit - 1)[:limit]
    threshold = scores[best].min()
    return np.flatnonzero(scores >= threshold)


def _allowed_slots(
    cut: ReadCut, collection: str, allowed_ids: Collection[str]
) -> npt.NDArray[np.int64]:
    """The live slots (at the cut) of the allowed document IDs, looked up in SQLite."""
    wanted = sorted({doc_id for doc_id in allowed_ids if isinstance(doc_id, str)})
    found: list[int] = []
    for start in range(0, len(wanted), SQLITE_PARAMETER_BATCH):
        batch = wanted[start : start + SQLITE_PARAMETER_BATCH]
        marks = ", ".join("?" * len(batch))
        found.extend(
            row[0]
            for row in cut.conn.execute(
                f"SELECT slot FROM documents WHERE collection = ? AND deleted = 0 "
                f"AND id IN ({marks})",
                (collection, *batch),
            )
        )
    return np.asarray(found, dtype=np.int64)
