"""Reads through one read cut: documents with redaction, and the BM25 text branch.

A ``ReadCut`` is one SQLite read transaction pinned at commit position ``P`` together
with the in-memory columns viewed at ``P`` and the principal resolved inside that same
transaction. Everything here reads only through the cut it is given, so one request
sees one position for documents, text and (later) vectors and graph.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np
import numpy.typing as npt

from cairn.errors import NotFoundError, PermissionDeniedError, ValidationError
from cairn.graph.model import freeze
from cairn.store.apply import load_collection, load_document, load_field_policies
from cairn.store.columns import ColumnsView
from cairn.store.commands import EntityRef
from cairn.store.limits import check_identifier, check_json_pointer
from cairn.store.policy import Capability, Principal, field_allowed, redact, require, row_visible
from cairn.store.text import CorpusStats, analyze, bm25_scores

__all__ = [
    "DocumentResult",
    "ReadCut",
    "TextHit",
    "read_document",
    "text_branch",
    "visible_mask",
]

_READ = (Capability.DOCUMENTS_READ, Capability.QUERY)


@dataclass(frozen=True, slots=True)
class ReadCut:
    """One pinned read: the SQLite snapshot, its position, the columns and the principal."""

    conn: sqlite3.Connection
    database: str
    position: int
    columns: ColumnsView
    principal: Principal


@dataclass(frozen=True, slots=True)
class DocumentResult:
    """A document as a principal may see it: fields it may not read are removed."""

    ref: EntityRef
    revision: int
    body: Mapping[str, Any]
    redacted: bool = False
    redacted_fields: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # Immutable whatever the caller passed: a returned body can never change the store.
        if not isinstance(self.body, MappingProxyType):
            object.__setattr__(self, "body", freeze(self.body))
        object.__setattr__(self, "redacted_fields", tuple(self.redacted_fields))


@dataclass(frozen=True, slots=True)
class TextHit:
    """One ranked text-branch hit: its one-based rank and exact BM25 score."""

    ref: EntityRef
    rank: int
    score: float


def _collection_exists(cut: ReadCut, collection: str) -> None:
    if load_collection(cut.conn, collection) is None:
        raise NotFoundError(f"no collection {collection!r}", details={"collection": collection})


def read_document(cut: ReadCut, collection: str, doc_id: str) -> DocumentResult:
    """The live, visible document ``(collection, id)`` at the cut, redacted for the principal."""
    check_identifier(collection, "collection")
    check_identifier(doc_id, "document id")
    _collection_exists(cut, collection)
    require(cut.principal, cut.database, collection, *_READ)
    row = load_document(cut.conn, collection, doc_id)
    if (
        row is None
        or not row.live
        or row.body is None
        or not row_visible(cut.principal, cut.database, collection, row.owner, row.project)
    ):
        raise NotFoundError(
            f"no document {doc_id!r} in {collection!r}",
            details={"collection": collection, "id": doc_id},
        )
    policies = load_field_policies(cut.conn, collection)
    body, removed = redact(cut.principal, cut.database, collection, policies, row.body)
    return DocumentResult(
        EntityRef(collection, doc_id), row.revision, freeze(body), bool(removed), removed
    )


def visible_mask(cut: ReadCut, collection: str, size: int) -> npt.NDArray[np.bool_]:
    """Row policy over every slot, vectorised over the owner and project codes."""
    principal = cut.principal
    if not principal.restrict_rows or principal.is_admin(cut.database, collection):
        return np.ones(size, dtype=bool)
    view = cut.columns
    mask = np.zeros(size, dtype=bool)
    if principal.owner_id is not None:
        mask |= view.owner[:size] == view.code(principal.owner_id)
    projects = [view.code(name) for name in sorted(principal.projects)]
    if projects:
        mask |= np.isin(view.project[:size], projects)
    return mask


def text_branch(
    cut: ReadCut,
    collection: str,
    field: str,
    text: str,
    *,
    limit: int,
    allowed_ids: Collection[str] | None = None,
) -> tuple[TextHit, ...]:
    """Exact BM25 over the collection's text index; masks applied before ranking.

    Corpus statistics (N, df, average length) are over every live document of the
    collection at the cut, never narrowed by visibility or ``allowed_ids``.
    """
    check_identifier(collection, "collection")
    check_json_pointer(field, "text field")
    config = load_collection(cut.conn, collection)
    if config is None:
        raise NotFoundError(f"no collection {collection!r}", details={"collection": collection})
    require(cut.principal, cut.database, collection, *_READ)
    if field not in config.text_fields:
        raise ValidationError(
            f"collection {collection!r} has no text field {field!r}",
            details={"collection": collection, "field": field},
        )
    policies = load_field_policies(cut.conn, collection)
    if not field_allowed(cut.principal, cut.database, collection, policies, field, "use"):
        raise PermissionDeniedError(
            f"principal {cut.principal.id!r} may not use field {field} of {collection!r}",
            details={"principal": cut.principal.id, "resource": collection, "field": field},
        )
    view = cut.columns
    alive = view.alive(collection)
    size = len(alive)
    index = view.text_field(collection, field)
    lengths = np.zeros(size, dtype=np.float64)
    postings: list[tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]] = []
    if index is not None:
        known = min(size, len(index.lengths))
        lengths[:known] = index.lengths[:known]
        for term in dict.fromkeys(analyze(text)):
            term_id = view.terms.get(term)
            if term_id is None:
                continue
            slots, tfs = index.postings(term_id)
            inside = slots < size
            slots, tfs = slots[inside], tfs[inside]
            live = alive[slots]
            postings.append((slots[live], tfs[live]))
    documents = int(alive.sum())
    average = float(lengths[alive].mean()) if documents else 0.0
    slots, scores = bm25_scores(postings, lengths, CorpusStats(documents, average))
    keep = visible_mask(cut, collection, size)[slots]
    if allowed_ids is not None:
        wanted = frozenset(allowed_ids)
        keep &= np.fromiter((view.ids[s] in wanted for s in slots), dtype=bool, count=len(slots))
    slots, scores = slots[keep], scores[keep]
    ids = [view.ids[s] for s in slots]
    order = sorted(range(len(ids)), key=lambda i: (-scores[i], ids[i]))[:limit]
    return tuple(
        TextHit(EntityRef(collection, ids[i]), rank, float(scores[i]))
        for rank, i in enumerate(order, start=1)
    )
