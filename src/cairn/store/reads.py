"""Reads through one read cut: documents with redaction, and the BM25 text branch.

A ``ReadCut`` is one SQLite read transaction pinned at commit position ``P`` together
with the in-memory columns viewed at ``P`` and the principal resolved inside that same
transaction. Everything here reads only through the cut it is given, so one request
sees one position for documents, text and (later) vectors and graph.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson

from cairn.canonical import canonical_bytes
from cairn.errors import CairnError, NotFoundError, PermissionDeniedError, ValidationError
from cairn.graph.model import freeze
from cairn.store.apply import load_collection, load_document, load_field_policies
from cairn.store.columns import ColumnsView, TextFieldView
from cairn.store.commands import ConfigureCollection, EntityRef
from cairn.store.limits import SQLITE_PARAMETER_BATCH, check_identifier, check_json_pointer
from cairn.store.policy import (
    Capability,
    FieldPolicy,
    Principal,
    field_allowed,
    redact,
    require,
    row_visible,
)
from cairn.store.ranking import DenseRanking, SlotRanking
from cairn.store.text import CorpusStats, analyze, bm25_norms, bm25_sum, bm25_weights

__all__ = [
    "DocumentResult",
    "ReadCut",
    "TextHit",
    "collection_config",
    "field_policies",
    "live_slots",
    "read_document",
    "read_documents",
    "read_documents_sized",
    "slot_mask",
    "text_branch",
    "text_ranking",
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


def collection_config(cut: ReadCut, name: str) -> ConfigureCollection | None:
    """The configuration of collection ``name`` at the cut (memoised per position).

    Configuration changes only by a committed command, and every commit moves the
    position, so the configuration at a position never changes.
    """
    found: ConfigureCollection | None = cut.columns.memo(
        ("collection-config", name, cut.position), lambda: load_collection(cut.conn, name)
    )
    return found


def field_policies(cut: ReadCut, resource: str) -> tuple[FieldPolicy, ...]:
    """The field policies of ``resource`` at the cut (memoised per position, as above)."""
    found: tuple[FieldPolicy, ...] = cut.columns.memo(
        ("field-policies", resource, cut.position),
        lambda: load_field_policies(cut.conn, resource),
    )
    return found


def _collection_exists(cut: ReadCut, collection: str) -> None:
    if collection_config(cut, collection) is None:
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
    policies = field_policies(cut, collection)
    body, removed = redact(cut.principal, cut.database, collection, policies, row.body)
    return DocumentResult(
        EntityRef(collection, doc_id), row.revision, freeze(body), bool(removed), removed
    )


def read_documents(cut: ReadCut, refs: Sequence[EntityRef]) -> list[DocumentResult | None]:
    """``read_document`` for many refs with one query per collection; None where it fails.

    A None entry is a ref ``read_document`` would refuse (call it for the exact error);
    every other entry equals what ``read_document`` returns for that ref.
    """
    return [None if item is None else item[0] for item in read_documents_sized(cut, refs)]


def read_documents_sized(
    cut: ReadCut, refs: Sequence[EntityRef]
) -> list[tuple[DocumentResult, int] | None]:
    """``read_documents`` with each result's canonical body size in bytes.

    A stored body is canonical JSON already, so an unredacted body's size is its stored
    length; a redacted one is measured after redaction.
    """
    wanted: dict[str, list[str]] = {}
    for ref in refs:
        wanted.setdefault(ref.collection, []).append(ref.id)
    found: dict[EntityRef, tuple[DocumentResult, int]] = {}
    for collection, ids in wanted.items():
        try:
            check_identifier(collection, "collection")
            _collection_exists(cut, collection)
            require(cut.principal, cut.database, collection, *_READ)
        except CairnError:
            continue
        policies = field_policies(cut, collection)
        unique = sorted(set(ids))
        for start in range(0, len(unique), SQLITE_PARAMETER_BATCH):
            batch = unique[start : start + SQLITE_PARAMETER_BATCH]
            marks = ", ".join("?" * len(batch))
            rows = cut.conn.execute(
                f"SELECT id, revision, body, owner, project FROM documents "
                f"WHERE collection = ? AND deleted = 0 AND id IN ({marks})",
                (collection, *batch),
            ).fetchall()
            for doc_id, revision, data, owner, project in rows:
                if data is None or not row_visible(
                    cut.principal, cut.database, collection, owner, project
                ):
                    continue
                try:
                    stored = orjson.loads(data)
                except orjson.JSONDecodeError:
                    continue  # read_document raises the CorruptionError for it
                body, removed = redact(cut.principal, cut.database, collection, policies, stored)
                ref = EntityRef(collection, doc_id)
                size = len(canonical_bytes(body)) if removed else len(data)
                result = DocumentResult(ref, revision, freeze(body), bool(removed), removed)
                found[ref] = (result, size)
    return [found.get(ref) for ref in refs]


def visible_everything(cut: ReadCut, collection: str) -> bool:
    """Whether the row policy lets the principal see every row of ``collection``."""
    principal = cut.principal
    return not principal.restrict_rows or principal.is_admin(cut.database, collection)


def visible_mask(cut: ReadCut, collection: str, size: int) -> npt.NDArray[np.bool_]:
    """Row policy over every slot, vectorised over the owner and project codes."""
    principal = cut.principal
    if visible_everything(cut, collection):
        return np.ones(size, dtype=bool)
    view = cut.columns
    mask = np.zeros(size, dtype=bool)
    if principal.owner_id is not None:
        mask |= view.owner[:size] == view.code(principal.owner_id)
    projects = [view.code(name) for name in sorted(principal.projects)]
    if projects:
        mask |= np.isin(view.project[:size], projects)
    return mask


def slot_mask(cut: ReadCut, collection: str, ids: Collection[str]) -> npt.NDArray[np.bool_]:
    """Mask over slots: the slots alive at the cut of the documents ``collection``/``ids``."""
    view = cut.columns
    mask = np.zeros(len(view.birth), dtype=bool)
    nodes = [
        node
        for node in (view.nodes.get((collection, doc_id)) for doc_id in ids)
        if node is not None
    ]
    if nodes:
        live = view.live_slots()
        found = live[[node for node in nodes if node < len(live)]]
        found = found[(found > 0) & (found < len(mask))]
        mask[found] = True
    return mask


def live_slots(cut: ReadCut, refs: Sequence[EntityRef]) -> list[int]:
    """The slot alive at the cut of each ref's document (0 when it has none)."""
    view = cut.columns
    live = view.live_slots()
    found: list[int] = []
    for ref in refs:
        node = view.nodes.get((ref.collection, ref.id))
        found.append(0 if node is None or node >= len(live) else int(live[node]))
    return found


def _text_stats(
    cut: ReadCut, collection: str, field: str, alive: npt.NDArray[np.bool_]
) -> CorpusStats:
    """N and average length over the collection's live documents at the cut (memoised)."""
    view = cut.columns
    index = view.text_field(collection, field)

    def compute() -> CorpusStats:
        documents = int(np.count_nonzero(alive))
        if index is None or documents == 0:
            return CorpusStats(documents, 0.0)
        known = min(len(alive), len(index.lengths))
        total = float(index.lengths[:known][alive[:known]].sum())
        return CorpusStats(documents, total / documents)

    return view.memo(("bm25", collection, field, cut.position), compute)


def _check_text_field(cut: ReadCut, collection: str, field: str) -> None:
    """The text branch's admission: collection, read grant, declared field, use grant."""
    check_identifier(collection, "collection")
    check_json_pointer(field, "text field")
    config = collection_config(cut, collection)
    if config is None:
        raise NotFoundError(f"no collection {collection!r}", details={"collection": collection})
    require(cut.principal, cut.database, collection, *_READ)
    if field not in config.text_fields:
        raise ValidationError(
            f"collection {collection!r} has no text field {field!r}",
            details={"collection": collection, "field": field},
        )
    policies = field_policies(cut, collection)
    if not field_allowed(cut.principal, cut.database, collection, policies, field, "use"):
        raise PermissionDeniedError(
            f"principal {cut.principal.id!r} may not use field {field} of {collection!r}",
            details={"principal": cut.principal.id, "resource": collection, "field": field},
        )


@dataclass(frozen=True, slots=True)
class _TextFieldState:
    """What a text field's ranking reuses at one position: liveness and length norms."""

    alive: npt.NDArray[np.bool_]  # the collection's live slots
    all_live: bool  # every slot below the view's size with this field is alive
    norms: npt.NDArray[np.float64]


def _text_field_state(
    cut: ReadCut,
    collection: str,
    field: str,
    index: TextFieldView,
    alive: npt.NDArray[np.bool_],
    stats: CorpusStats,
) -> _TextFieldState:
    """``_TextFieldState`` of the field at the cut (memoised per position and size).

    When every slot holding the field is alive, a term's postings below the view's
    size need no liveness filter; the memo key holds the size because later slots are
    judged per query.
    """
    size = len(alive)

    def compute() -> _TextFieldState:
        lengths = index.lengths
        known = min(size, len(lengths))
        holding = lengths[:known] > 0
        all_live = bool(np.all(alive[:known][holding]))
        return _TextFieldState(alive, all_live, bm25_norms(lengths, stats))

    found: _TextFieldState = cut.columns.memo(
        ("text-state", collection, field, cut.position, size, len(index.lengths)), compute
    )
    return found


def text_ranking(
    cut: ReadCut,
    collection: str,
    field: str,
    text: str,
    *,
    allowed: npt.NDArray[np.bool_] | None = None,
) -> SlotRanking:
    """The complete BM25 ranking of the text branch (masks applied before ranking).

    Corpus statistics (N, df, average length) are over every live document of the
    collection at the cut, never narrowed by visibility or ``allowed`` (a slot mask).
    """
    _check_text_field(cut, collection, field)
    view = cut.columns
    alive = view.alive(collection)
    size = len(alive)
    index = view.text_field(collection, field)
    stats = _text_stats(cut, collection, field, alive)
    if index is None:
        return SlotRanking(np.empty(0, np.int64), np.empty(0, np.float64), view.ids)
    keep = allowed
    if not visible_everything(cut, collection):
        visible = visible_mask(cut, collection, size)
        keep = visible if keep is None else keep & visible
    prepared = _text_field_state(cut, collection, field, index, alive, stats)
    weighted: list[tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]] = []
    for term in dict.fromkeys(analyze(text)):
        term_id = view.terms.get(term)
        if term_id is None:
            continue
        slots, weights = _term_weights(cut, collection, field, index, term_id, prepared, stats)
        if keep is not None:  # after df and weights: statistics are never narrowed
            chosen = keep[slots]
            slots, weights = slots[chosen], weights[chosen]
        weighted.append((slots, weights))
    return DenseRanking(bm25_sum(weighted, size), view.ids)


def _term_weights(
    cut: ReadCut,
    collection: str,
    field: str,
    index: TextFieldView,
    term_id: int,
    prepared: _TextFieldState,
    stats: CorpusStats,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """A term's live postings and their BM25 weights at the cut (read-only, memoised per
    position within ``IMPACT_MEMO_BYTES``: common terms recur in many queries)."""
    alive = prepared.alive
    size = len(alive)

    def compute() -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        slots, tfs = index.postings(term_id)
        if len(slots) and (not prepared.all_live or int(slots.max()) >= size):
            inside = slots < size
            if not inside.all():
                slots, tfs = slots[inside], tfs[inside]
            live = alive[slots]
            slots, tfs = slots[live], tfs[live]
        weights = bm25_weights(slots, tfs, len(slots), stats, prepared.norms)
        weights.flags.writeable = False
        return slots, weights

    key = ("bm25-weights", collection, field, cut.position, size, len(index.lengths), term_id)
    found = cut.columns.memo_arrays(key, compute)
    return found  # type: ignore[return-value]


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
    allowed = None if allowed_ids is None else slot_mask(cut, collection, allowed_ids)
    ranking = text_ranking(cut, collection, field, text, allowed=allowed)
    ids = cut.columns.ids
    return tuple(
        TextHit(EntityRef(collection, ids[slot]), rank, score)
        for rank, (slot, score) in enumerate(ranking.top(limit), start=1)
    )
