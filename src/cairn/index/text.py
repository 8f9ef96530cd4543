"""The BM25 text branch: a complete, exact ranking over a collection's text postings.

It reads the postings the columns hold at one read cut's position and scores them with
``cairn.index.bm25``; visibility and allowed-ID masks narrow the candidates before
ranking, never the corpus statistics.

A text field names one declared field (plain BM25) or, when it is not one, several with
weights: ``"/name^2 /qualified_name^0.5 /signature /text"`` (each ``pointer[^weight]``,
separated by spaces, weight 1 when left out). Several fields rank by BM25F: per term,
each field's frequency is scaled by its weight and by its own length normalisation, the
scaled frequencies are summed and saturated once (``k1``), and the IDF counts the live
documents holding the term in any of the fields. A short name that matches then weighs
more than the same word among a body's many.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from cairn.errors import PermissionDeniedError, ValidationError
from cairn.index.bm25 import (
    BM25_K1,
    CorpusStats,
    bm25_norms,
    bm25_sum,
    bm25_weights,
    bm25f_weights,
)
from cairn.index.columns import TextFieldView
from cairn.index.cut import IndexCut
from cairn.index.masks import slot_mask, visible_everything, visible_mask
from cairn.index.ranking import DenseRanking, SlotRanking
from cairn.store.commands import ConfigureCollection, EntityRef
from cairn.store.limits import check_identifier, check_json_pointer
from cairn.store.policy import field_allowed
from cairn.store.reads import (
    READ_CAPABILITIES,
    field_policies,
    require_collection,
)
from cairn.store.text import analyze

__all__ = [
    "FIELD_WEIGHT_MARK",
    "MAX_TEXT_FIELDS",
    "TextHit",
    "text_branch",
    "text_ranking",
    "weighted_fields",
]

FIELD_WEIGHT_MARK = "^"
"""Between a field's pointer and its weight in a weighted field list (``/name^2``)."""

MAX_TEXT_FIELDS = 16
"""Upper bound on the fields one weighted text field list names."""


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
    index = view.text_field(collection, field, cut.conn)

    def compute() -> CorpusStats:
        documents = int(np.count_nonzero(alive))
        if index is None or documents == 0:
            return CorpusStats(documents, 0.0)
        known = min(len(alive), len(index.lengths))
        total = float(index.lengths[:known][alive[:known]].sum())
        return CorpusStats(documents, total / documents)

    return view.memo(("bm25", collection, field, cut.position), compute)


def _text_collection(cut: IndexCut, collection: str) -> ConfigureCollection:
    check_identifier(collection, "collection")
    return require_collection(cut, collection, *READ_CAPABILITIES)


def _check_declared(
    cut: IndexCut, collection: str, config: ConfigureCollection, field: str
) -> None:
    """``field`` is a declared text field of ``collection`` the principal may use."""
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


def weighted_fields(spec: str) -> tuple[tuple[str, float], ...]:
    """The ``(pointer, weight)`` pairs of a weighted field list, sorted by pointer
    (``"/text /name^2"`` -> ``(("/name", 2.0), ("/text", 1.0))``); ``ValidationError``
    for a bad pointer, a weight that is not a positive finite number, a field named
    twice, or more than ``MAX_TEXT_FIELDS`` fields."""
    found: dict[str, float] = {}
    items = spec.split()
    if not items:
        raise ValidationError("text field must not be blank", details={"field": spec})
    if len(items) > MAX_TEXT_FIELDS:
        raise ValidationError(
            f"text field names {len(items)} fields; at most {MAX_TEXT_FIELDS} are allowed",
            details={"field": spec, "limit": MAX_TEXT_FIELDS},
        )
    for item in items:
        pointer, mark, given = item.rpartition(FIELD_WEIGHT_MARK)
        if not mark:
            pointer, given = item, ""
        check_json_pointer(pointer, "text field")
        weight = _weight(given, item) if mark else 1.0
        if pointer in found:
            raise ValidationError(
                f"text field {pointer!r} is named twice in {spec!r}", details={"field": spec}
            )
        found[pointer] = weight
    return tuple(sorted(found.items()))


def _weight(text: str, item: str) -> float:
    try:
        weight = float(text)
    except ValueError:
        weight = math.nan
    if not math.isfinite(weight) or weight <= 0:
        raise ValidationError(
            f"the weight in text field {item!r} must be a positive number",
            details={"field": item},
        )
    return weight


def _check_fields(
    cut: IndexCut, collection: str, field: str
) -> tuple[str, tuple[tuple[str, float], ...]]:
    """The admission of a text field that is a declared field or a weighted list of
    them: the analyzer and the ``(pointer, weight)`` pairs (one pair of weight 1 for a
    declared field named as it is)."""
    config = _text_collection(cut, collection)
    if field in config.text_fields:
        check_json_pointer(field, "text field")
        fields: tuple[tuple[str, float], ...] = ((field, 1.0),)
    else:
        fields = weighted_fields(field)
    for pointer, _ in fields:
        _check_declared(cut, collection, config, pointer)
    return config.analyzer, fields


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
    """The complete BM25 ranking of the text branch (masks applied before ranking):
    plain BM25 over one declared field, BM25F over a weighted list of them.

    Corpus statistics (N, df, average length) are over every live document of the
    collection at the cut, never narrowed by visibility or ``allowed`` (a slot mask).
    """
    analyzer, fields = _check_fields(cut, collection, field)
    view = cut.columns
    alive = view.alive(collection)
    size = len(alive)
    keep = allowed
    if not visible_everything(cut, collection):
        visible = visible_mask(cut, collection, size)
        keep = visible if keep is None else keep & visible
    if len(fields) == 1 and fields[0][1] == 1.0:
        index = view.text_field(collection, fields[0][0], cut.conn)
        if index is None:
            return SlotRanking(np.empty(0, np.int64), np.empty(0, np.float64), view.ids)
        terms = _field_terms(cut, collection, fields[0][0], index, analyzer, text, alive)
    else:
        terms = _fields_terms(cut, collection, fields, analyzer, text, alive)
    weighted: list[tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]] = []
    for slots, weights in terms:
        if keep is not None:  # after df and weights: statistics are never narrowed
            chosen = keep[slots]
            slots, weights = slots[chosen], weights[chosen]
        weighted.append((slots, weights))
    return DenseRanking(bm25_sum(weighted, size), view.ids)


_Weighted = list[tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]]


def _field_terms(
    cut: IndexCut,
    collection: str,
    field: str,
    index: TextFieldView,
    analyzer: str,
    text: str,
    alive: npt.NDArray[np.bool_],
) -> _Weighted:
    """Each known query term's live postings and exact BM25 weights in one field."""
    view = cut.columns
    stats = _text_stats(cut, collection, field, alive)
    prepared = _text_field_state(cut, collection, field, index, alive, stats)
    found: _Weighted = []
    for term in dict.fromkeys(analyze(text, analyzer)):
        term_id = view.terms.get(term)
        if term_id is not None:
            found.append(_term_weights(cut, collection, field, index, term_id, prepared, stats))
    return found


@dataclass(frozen=True, slots=True)
class _FieldState:
    """One field of a weighted list at the cut: its view, weight and length norms."""

    field: str
    weight: float
    index: TextFieldView
    state: _TextFieldState


def _fields_terms(
    cut: IndexCut,
    collection: str,
    fields: Sequence[tuple[str, float]],
    analyzer: str,
    text: str,
    alive: npt.NDArray[np.bool_],
) -> _Weighted:
    """Each known query term's live postings in any of ``fields`` and their BM25F
    weights."""
    view = cut.columns
    states: list[_FieldState] = []
    for field, weight in fields:
        index = view.text_field(collection, field, cut.conn)
        if index is None:
            continue
        stats = _text_stats(cut, collection, field, alive)
        state = _text_field_state(cut, collection, field, index, alive, stats)
        states.append(_FieldState(field, weight, index, state))
    documents = int(np.count_nonzero(alive))
    if not states or documents == 0:
        return []
    found: _Weighted = []
    for term in dict.fromkeys(analyze(text, analyzer)):
        term_id = view.terms.get(term)
        if term_id is not None:
            found.append(_term_fields(cut, collection, states, term_id, documents))
    return found


def _term_fields(
    cut: IndexCut,
    collection: str,
    states: Sequence[_FieldState],
    term_id: int,
    documents: int,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """A term's BM25F weights: ``idf * x * (k1 + 1) / (x + k1)`` over the live slots
    holding it in any field, where ``x`` sums ``weight * tf / (1 - b + b * len / avg)``
    over the fields (added in pointer order, so the same float every time) and ``idf``
    counts those slots (memoised per position, as ``_term_weights``)."""
    alive = states[0].state.alive
    size = len(alive)

    def compute() -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        slot_parts: list[npt.NDArray[np.int64]] = []
        scaled: list[npt.NDArray[np.float64]] = []
        for item in states:
            slots, tfs = _live_postings(item.index, term_id, item.state)
            slot_parts.append(slots)
            # ``norms`` holds k1 * (1 - b + b * len / avg); BM25F divides by the bracket.
            scaled.append(item.weight * BM25_K1 * tfs / item.state.norms[slots])
        held, inverse = np.unique(np.concatenate(slot_parts), return_inverse=True)
        frequency = np.bincount(
            inverse, weights=np.concatenate(scaled), minlength=len(held)
        ).astype(np.float64, copy=False)
        weights = bm25f_weights(frequency, documents)
        held = held.astype(np.int64, copy=False)
        held.flags.writeable = False
        weights.flags.writeable = False
        return held, weights

    shape = tuple((item.field, item.weight, len(item.index.lengths)) for item in states)
    key = ("bm25f-weights", collection, shape, cut.position, size, term_id)
    found = cut.columns.memo_arrays(key, compute)
    return found  # type: ignore[return-value]


def _live_postings(
    index: TextFieldView, term_id: int, prepared: _TextFieldState
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """A term's postings in one field, narrowed to the cut's live slots."""
    alive = prepared.alive
    size = len(alive)
    slots, tfs = index.postings(term_id)
    if len(slots) and (not prepared.all_live or int(slots.max()) >= size):
        inside = slots < size
        if not inside.all():
            slots, tfs = slots[inside], tfs[inside]
        live = alive[slots]
        slots, tfs = slots[live], tfs[live]
    return slots, tfs


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
        slots, tfs = _live_postings(index, term_id, prepared)
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
