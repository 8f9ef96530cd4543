"""The BM25 text branch: a complete, exact ranking over a collection's text postings.

It reads the postings the columns hold at one read cut's position and scores them with
``cairn.index.bm25``; visibility and allowed-ID masks narrow the candidates before
ranking, never the corpus statistics.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from cairn.errors import PermissionDeniedError, ValidationError
from cairn.index.bm25 import CorpusStats, bm25_norms, bm25_sum, bm25_weights
from cairn.index.columns import TextFieldView
from cairn.index.cut import IndexCut
from cairn.index.masks import slot_mask, visible_everything, visible_mask
from cairn.index.ranking import DenseRanking, SlotRanking
from cairn.store.commands import EntityRef
from cairn.store.limits import check_identifier, check_json_pointer
from cairn.store.policy import field_allowed
from cairn.store.reads import (
    READ_CAPABILITIES,
    field_policies,
    require_collection,
)
from cairn.store.text import analyze

__all__ = ["TextHit", "text_branch", "text_ranking"]


@dataclass(frozen=True, slots=True)
class TextHit:
    """One ranked text-branch hit: its one-based rank and exact BM25 score."""

    ref: EntityRef
    rank: int
    score: float


def _text_stats(
    cut: IndexCut, collection: str, field: str, alive: npt.NDArray[np.bool_]
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


def _check_text_field(cut: IndexCut, collection: str, field: str) -> str:
    """The text branch's admission (collection, read grant, declared field, use grant):
    the collection's analyzer."""
    check_identifier(collection, "collection")
    check_json_pointer(field, "text field")
    config = require_collection(cut, collection, *READ_CAPABILITIES)
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
    return config.analyzer


@dataclass(frozen=True, slots=True)
class _TextFieldState:
    """What a text field's ranking reuses at one position: liveness and length norms."""

    alive: npt.NDArray[np.bool_]  # the collection's live slots
    all_live: bool  # every slot below the view's size with this field is alive
    norms: npt.NDArray[np.float64]


def _text_field_state(
    cut: IndexCut,
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
    cut: IndexCut,
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
    analyzer = _check_text_field(cut, collection, field)
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
    for term in dict.fromkeys(analyze(text, analyzer)):
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
    cut: IndexCut,
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
    cut: IndexCut,
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
