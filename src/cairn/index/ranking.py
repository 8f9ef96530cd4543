"""A branch's complete ranking over document slots, materialised only as far as asked.

A branch (text, vector, graph) scores every candidate slot; its ranking is the order by
score (descending), then document ID, with one-based ranks. Fusion needs the rank of
any candidate and the best ``m`` in order, never the whole sorted list, so a ranking
answers exactly those two questions from numpy arrays: ``top(m)`` by ``argpartition``
(every tie at the boundary included before ordering) and ``rank_of(slot)`` by counting
the better scores (ties compared by ID). Both are exact.

``ApproxRanking`` ranks by scores it computes exactly only where they matter: the caller
gives fast approximate scores with a proven error bound ``eps`` and a function for the
exact score of given candidates; a candidate whose approximate score is more than
``eps`` away from a threshold is on its side of it for certain, and only the few within
the band are computed exactly (the vector branch: a float32 scan, float64 scores).

Fusion also asks two cheap, vectorised questions: ``leaders(m)`` (slots that hold the
best ``m``; every other candidate ranks after the ``m``-th) and ``bounds(slots)`` (each
slot's exact score and an interval holding its rank, by binary search in the scores
sorted once), so that it reads exact ranks only for the few keys whose interval leaves
the fused top undecided.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from cairn.arrays import distinct
from cairn.index.limits import (
    FEW_RANK_PASSES,
    IDENTITY_CACHE_SIZE,
    RANK_HEAD,
    REFINE_MIN_BAND,
    TOP_SAMPLE_SLACK,
    TOP_SAMPLE_STRIDE,
)

__all__ = [
    "ApproxRanking",
    "DenseRanking",
    "OrderedRanking",
    "RankBounds",
    "Ranking",
    "SlotRanking",
    "distinct",
    "leading",
    "mth_largest",
]

Exact = Callable[[npt.NDArray[np.intp]], npt.NDArray[np.float64]]
"""Exact scores of the candidates at the given indexes."""

Refine = Callable[[npt.NDArray[np.intp]], tuple[npt.NDArray[np.float64], float]]
"""Tighter approximate scores of the candidates at the given indexes, and their bound."""


class RankBounds(NamedTuple):
    """Per asked slot: is it a candidate, and an interval ``[lowest, highest]`` of its rank.

    For a slot that is not a candidate ``present`` is False and both bounds are 0.
    """

    present: npt.NDArray[np.bool_]
    lowest: npt.NDArray[np.int64]
    highest: npt.NDArray[np.int64]

    @classmethod
    def of(cls, places: Sequence[tuple[int, float] | None]) -> RankBounds:
        """Point bounds from exact places (None: not a candidate)."""
        present = np.asarray([place is not None for place in places], dtype=bool)
        ranks = np.asarray([0 if p is None else p[0] for p in places], dtype=np.int64)
        return cls(present, ranks, ranks.copy())


class Ranking:
    """The interface fusion reads: size, top ``m`` in order, rank and score of a slot."""

    size: int

    def top(self, m: int) -> list[tuple[int, float]]:
        """The first ``m`` ``(slot, score)`` pairs in rank order."""
        raise NotImplementedError

    def rank_of(self, slot: int) -> tuple[int, float] | None:
        """``(rank, score)`` of ``slot``, or None when it is not a candidate."""
        raise NotImplementedError

    def ranks_of(self, slots: Sequence[int]) -> list[tuple[int, float] | None]:
        """``rank_of`` for many slots at once."""
        return [self.rank_of(slot) for slot in slots]

    def leaders(self, m: int) -> npt.NDArray[np.int64]:
        """Slots holding the best ``m``; every other candidate ranks after the ``m``-th."""
        return np.asarray([slot for slot, _ in self.top(m)], dtype=np.int64)

    def warm(self) -> None:
        """Derive now what fusion reads first (a sorted head), while the scores are still
        in cache; nothing else changes (nothing to do here)."""

    def bounds(self, slots: npt.NDArray[np.int64]) -> RankBounds:
        """Cheap bounds on the ranks of many slots, with their exact scores.

        Fusion asks these for every key it might need and reads exact ranks
        (``ranks_of``) only for the few whose bounds leave the top undecided.
        """
        return RankBounds.of(self.ranks_of(slots.tolist()))

    def tight_bounds(self, slots: npt.NDArray[np.int64], loose: RankBounds) -> RankBounds:
        """``loose`` (this ranking's ``bounds`` of ``slots``), tighter where that is cheap
        (here: the same)."""
        return loose


def mth_largest(values: npt.NDArray[np.float64], m: int) -> float | None:
    """The ``m``-th largest of ``values`` (None when there are fewer than ``m``): the
    threshold of ``leading``."""
    found = leading(values, m)
    return None if found is None else found[0]


def leading(
    values: npt.NDArray[np.float64], m: int, *, positive: bool = False
) -> tuple[float, npt.NDArray[np.intp]] | None:
    """The ``m``-th largest of ``values`` and the indexes (ascending) of every value at or
    above it, ties included; None when there are fewer than ``m``.

    ``mth_largest`` followed by a pass for the indexes, in one pass over ``values``.
    ``positive`` says only positive values count (a dense array whose zeros are not
    candidates): the floor is then sampled from the positive values, and without one
    the selection runs on the positive values, never on a mass of equal zeros.
    """
    if m <= 0 or len(values) < m:
        return None
    index = None
    floor = _sampled_floor(values, m, positive=positive)
    if floor is not None:
        index = np.flatnonzero(values >= floor)
        if len(index) < m:
            index = None
    if index is None:
        if not positive:
            threshold = float(np.partition(values, len(values) - m)[len(values) - m])
            return threshold, np.flatnonzero(values >= threshold)
        index = np.flatnonzero(values > 0)
        if len(index) < m:
            return None
    kept = values[index]
    threshold = float(np.partition(kept, len(kept) - m)[len(kept) - m])
    chosen: npt.NDArray[np.intp] = index[kept >= threshold]
    return threshold, chosen


def _sampled_floor(
    values: npt.NDArray[np.float64], m: int, *, positive: bool = False
) -> float | None:
    """A floor that about ``TOP_SAMPLE_SLACK * m`` of ``values`` should reach, read from a
    strided sample (of the positive values only, when ``positive``); None when the
    values are too few for a sample to pay.

    Callers check that at least ``m`` values reach it and else use every value.
    """
    sample = values[::TOP_SAMPLE_STRIDE]
    if positive:
        sample = sample[sample > 0]
    wanted = min(m, -(-TOP_SAMPLE_SLACK * m // TOP_SAMPLE_STRIDE))
    # Worth it only when the values kept are few next to all of them.
    if len(values) < 4 * TOP_SAMPLE_SLACK * m or len(sample) < wanted:
        return None
    return float(np.partition(sample, len(sample) - wanted)[len(sample) - wanted])


class SlotRanking(Ranking):
    """Exact float64 scores of candidate slots; ties ordered by document ID."""

    head_size = RANK_HEAD
    """How many best scores ``_head`` sorts (an attribute so tests can shrink it)."""
    few_passes = FEW_RANK_PASSES
    """How many exact ranks below the head are counted by passes before sorting all."""

    def __init__(
        self,
        slots: npt.NDArray[np.int64],
        scores: npt.NDArray[np.float64],
        ids: Sequence[str],
        *,
        ascending: bool | None = None,
    ) -> None:
        self.slots = slots
        self.scores = scores
        self.ids = ids
        self.size = len(slots)
        self.eps = 0.0
        self._where: npt.NDArray[np.int64] | None = None
        self._sorted: npt.NDArray[np.float64] | None = None
        self._best: _Head | None = None
        self._ascending_slots = ascending  # slots strictly ascending? None: check on use

    def _exact(self, index: npt.NDArray[np.intp]) -> npt.NDArray[np.float64]:
        found: npt.NDArray[np.float64] = self.scores[index]
        return found

    def _order(self, slots: npt.NDArray[np.int64], scores: npt.NDArray[np.float64]) -> list[int]:
        """Positions of ``slots`` sorted by (score desc, ID asc): numpy, then equal runs by ID."""
        order = np.argsort(-scores, kind="stable")
        ranked = scores[order]
        equal = np.flatnonzero(ranked[1:] == ranked[:-1])
        positions: list[int] = order.tolist()
        if len(equal) == 0:
            return positions
        ids = self.ids
        runs = np.split(equal, np.flatnonzero(np.diff(equal) != 1) + 1)
        for run in runs:
            begin, end = int(run[0]), int(run[-1]) + 2
            group = positions[begin:end]
            positions[begin:end] = sorted(group, key=lambda i: ids[int(slots[i])])
        return positions

    def _candidates(self, m: int) -> npt.NDArray[np.intp]:
        """Indexes that surely hold the best ``m`` (and every tie with the ``m``-th)."""
        return self._best_of(m)[1]

    def _best_of(self, m: int) -> tuple[float, npt.NDArray[np.intp]]:
        """The ``m``-th best score and the indexes (ascending) of every candidate scoring
        at least it; ``-inf`` and every candidate when there are at most ``m``."""
        if m >= self.size:
            return -math.inf, np.arange(self.size)
        found = leading(self.scores, m)
        assert found is not None  # m < size
        return found

    def top(self, m: int) -> list[tuple[int, float]]:
        """The first ``m`` ``(slot, score)`` pairs in rank order."""
        if m <= 0 or self.size == 0:
            return []
        index = self._candidates(m)
        scores = self._exact(index)
        slots = self.slots[index]
        order = self._order(slots, scores)[:m]
        return [(int(slots[i]), float(scores[i])) for i in order]

    def _positions(self, slots: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """Candidate indexes of ``slots`` (-1: not a candidate), vectorised.

        Candidate slots in ascending order (the usual case) are found by binary search;
        otherwise a slot-indexed lookup is built once.
        """
        if self._ascending_slots is None:
            ordered = self.slots
            self._ascending_slots = bool(np.all(ordered[1:] > ordered[:-1]))
        positions = np.full(len(slots), -1, dtype=np.int64)
        if self.size == 0:
            return positions
        first = int(self.slots[0])
        if self._ascending_slots and int(self.slots[-1]) - first == self.size - 1:
            # Consecutive slots: a slot's index is its distance from the first.
            inside = (slots >= first) & (slots < first + self.size)
            positions[inside] = slots[inside] - first
            return positions
        if self._ascending_slots:
            found = np.minimum(np.searchsorted(self.slots, slots), self.size - 1)
            hit = self.slots[found] == slots
            positions[hit] = found[hit]
            return positions
        if self._where is None:
            self._where = np.full(int(self.slots.max()) + 1, -1, dtype=np.int64)
            self._where[self.slots] = np.arange(self.size, dtype=np.int64)
        inside = (slots >= 0) & (slots < len(self._where))
        positions[inside] = self._where[slots[inside]]
        return positions

    def rank_of(self, slot: int) -> tuple[int, float] | None:
        """``(rank, score)`` of ``slot``, or None when it is not a candidate."""
        return self.ranks_of([slot])[0]

    def warm(self) -> None:
        """Sort the head now (``Ranking.warm``)."""
        self._head()

    def _head(self) -> _Head:
        """The best ``head_size`` scores (every one at or above the threshold), sorted once."""
        if self._best is None:
            threshold, index = self._best_of(self.head_size)
            values = self.scores[index]
            order = np.argsort(values)
            self._best = _Head(threshold, values[order], index[order])
        return self._best

    def _ascending(self) -> npt.NDArray[np.float64]:
        """Every candidate's (approximate) score, sorted once, on first use."""
        if self._sorted is None:
            self._sorted = np.sort(self.scores)
        return self._sorted

    def ranks_of(self, slots: Sequence[int]) -> list[tuple[int, float] | None]:
        """Exact ``(rank, score)`` of many slots.

        A candidate whose score is more than ``eps`` above a slot's exact score ranks
        before it for certain; those are counted in the sorted head when the slot's
        band lies inside it (one binary search for every such slot), else by a pass
        over the scores (or, for many slots, in all scores sorted once). Only
        candidates inside a band (ties, near-ties of approximate scores) are read,
        scored exactly and compared (ties by ID), every band at once
        (``_bands_above``); a band holding only the slot itself (its own
        approximation is within ``eps``) needs nothing more.
        """
        positions = self._positions(np.asarray(slots, dtype=np.int64))
        asked = np.flatnonzero(positions >= 0)
        result: list[tuple[int, float] | None] = [None] * len(slots)
        if len(asked) == 0:
            return result
        where = positions[asked]
        exact = self._exact(where.astype(np.intp))
        above, bands = self._counted(exact)
        if bands:
            keys = np.fromiter(bands, dtype=np.intp, count=len(bands))
            above[keys] += self._bands_above(where[keys], exact[keys], list(bands.values()))
        for j, rank, score in zip(asked.tolist(), above.tolist(), exact.tolist(), strict=True):
            result[j] = (rank + 1, score)
        return result

    def _bands_above(
        self,
        own: npt.NDArray[np.int64],
        scores: npt.NDArray[np.float64],
        bands: Sequence[npt.NDArray[np.intp]],
    ) -> npt.NDArray[np.int64]:
        """Per band: how many of its candidates rank before the candidate ``own`` whose
        exact score is ``scores`` (the band holds every candidate within ``eps`` of it).

        All bands at once: the members are narrowed (``_narrowed``), scored exactly in
        one call and compared with their band's score; equal scores then rank by ID,
        compared one by one only in the bands where another candidate ties exactly.
        """
        sizes = np.fromiter(map(len, bands), dtype=np.intp, count=len(bands))
        members = np.concatenate(bands)
        owner = np.repeat(np.arange(len(bands)), sizes)
        counts = np.zeros(len(bands), dtype=np.int64)
        if self.eps:
            members, owner, surely = self._narrowed(members, owner, sizes, scores)
            counts += surely
            values = self._exact(members)
        else:
            values = self.scores[members]
        wanted = scores[owner]
        counts += np.bincount(owner[values > wanted], minlength=len(bands))
        tied = np.flatnonzero((values == wanted) & (members != own[owner]))
        if len(tied):
            counts += self._ties_before(own, owner[tied], members[tied], len(bands))
        return counts

    def _ties_before(
        self,
        own: npt.NDArray[np.int64],
        owner: npt.NDArray[np.intp],
        members: npt.NDArray[np.intp],
        count: int,
    ) -> npt.NDArray[np.int64]:
        """Per band, how many of ``members`` (other candidates tied exactly with the
        band's own candidate; ``owner`` says whose band) have a smaller document ID."""
        ids = self.ids
        own_ids = [ids[slot] for slot in self.slots[own].tolist()]
        before = [0] * count
        for band, slot in zip(owner.tolist(), self.slots[members].tolist(), strict=True):
            if ids[slot] < own_ids[band]:
                before[band] += 1
        return np.asarray(before, dtype=np.int64)

    def _narrowed(
        self,
        members: npt.NDArray[np.intp],
        owner: npt.NDArray[np.intp],
        sizes: npt.NDArray[np.intp],
        scores: npt.NDArray[np.float64],
    ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp], npt.NDArray[np.int64]]:
        """The band members still unsure after any cheaper scoring, their bands, and per
        band how many rank before its candidate for certain (here: every member stays
        unsure; none is certain)."""
        return members, owner, np.zeros(len(sizes), dtype=np.int64)

    def _counted(
        self, exact: npt.NDArray[np.float64]
    ) -> tuple[npt.NDArray[np.int64], dict[int, npt.NDArray[np.intp]]]:
        """Per exact score: how many rank surely before it, and the bands still to decide
        (by position in ``exact``; only bands wider than the slot itself)."""
        head = self._head()
        eps = self.eps
        inside = exact - eps >= head.threshold
        above = np.zeros(len(exact), dtype=np.int64)
        bands: dict[int, npt.NDArray[np.intp]] = {}
        near = np.flatnonzero(inside)
        if len(near):
            low = np.searchsorted(head.values, exact[near] - eps, side="left")
            high = np.searchsorted(head.values, exact[near] + eps, side="right")
            above[near] = len(head.values) - high
            for k, begin, end in zip(near.tolist(), low.tolist(), high.tolist(), strict=True):
                if end - begin > 1:
                    bands[k] = head.index[begin:end]
        deep = np.flatnonzero(~inside).tolist()
        for k in deep:
            score = float(exact[k])
            if len(deep) > self.few_passes:
                count, band = self._sorted_around(score)
            else:
                count, band = self._around(score)
            above[k] = count
            if len(band) > 1:
                bands[k] = band
        return above, bands

    def _around(self, score: float) -> tuple[int, npt.NDArray[np.intp]]:
        """By passes over the scores: how many rank surely before, and the band's indexes."""
        scores, eps = self.scores, self.eps
        if eps == 0:  # exact scores: the band is the ties, one comparison
            return int(np.count_nonzero(scores > score)), np.flatnonzero(scores == score)
        # Everything reaching the band's floor is in the band or surely above it.
        reach = scores >= score - eps
        band = np.flatnonzero(reach & (scores <= score + eps))
        return int(np.count_nonzero(reach)) - len(band), band

    def _sorted_around(self, score: float) -> tuple[int, npt.NDArray[np.intp]]:
        """Like ``_around``, counting in all scores sorted once; the band read only if shared."""
        ascending = self._ascending()
        low, high = _within(ascending, score, self.eps)
        if high - low <= 1:
            return len(ascending) - high, np.empty(high - low, dtype=np.intp)
        return self._around(score)

    def leaders(self, m: int) -> npt.NDArray[np.int64]:
        """Slots holding the best ``m`` (a superset: ties and the approximation band).

        Read from the sorted head when the ``m``-th best and its band lie inside it.
        """
        if m <= 0 or self.size == 0:
            return np.empty(0, dtype=np.int64)
        head = self._head()
        if m <= len(head.values):
            low = float(head.values[-m]) - 2 * self.eps
            if low >= head.threshold:
                start = int(np.searchsorted(head.values, low, side="left"))
                inside: npt.NDArray[np.int64] = self.slots[head.index[start:]]
                return inside
        found: npt.NDArray[np.int64] = self.slots[self._candidates(m)]
        return found

    def bounds(self, slots: npt.NDArray[np.int64]) -> RankBounds:
        """Rank bounds from the sorted head; no exact score is computed, no pass is made.

        With approximate scores within ``eps`` of the exact ones, a candidate whose
        approximation is more than ``2 * eps`` above a slot's ranks before it for
        certain, and one more than ``2 * eps`` below ranks after it. Below the head
        the lowest rank is one past the head and the highest is the ranking's size.
        """
        positions = self._positions(slots)
        present = positions >= 0
        lowest = np.zeros(len(slots), dtype=np.int64)
        highest = np.zeros(len(slots), dtype=np.int64)
        if present.any():
            values = self.scores[positions[present]]
            head = self._head()
            total = len(head.values)
            band = 2 * self.eps
            lowest[present] = total - np.searchsorted(head.values, values + band, "right") + 1
            known = values - band >= head.threshold
            counted = total - np.searchsorted(head.values, values - band, "left")
            highest[present] = np.where(known, counted, self.size)
        return RankBounds(present, lowest, highest)

    def tight_bounds(self, slots: npt.NDArray[np.int64], loose: RankBounds) -> RankBounds:
        """``loose`` (``bounds`` of ``slots``), with each slot ranked below the head bounded
        by two counting passes over every score around its exact score (no band is read
        or refined)."""
        found = RankBounds(loose.present, loose.lowest.copy(), loose.highest.copy())
        deep = np.flatnonzero(found.present & (found.highest == self.size))
        if len(deep) == 0:
            return found
        positions = self._positions(slots[deep])
        exact = self._exact(positions.astype(np.intp))
        for j, score in zip(deep.tolist(), exact.tolist(), strict=True):
            found.lowest[j] = int(np.count_nonzero(self.scores > score + self.eps)) + 1
            found.highest[j] = int(np.count_nonzero(self.scores >= score - self.eps))
        return found


@dataclass(frozen=True, slots=True)
class _Head:
    """A ranking's best scores, ascending, with their candidate indexes.

    Every candidate scoring at least ``threshold`` is here, so counts and bands at or
    above it are exact.
    """

    threshold: float
    values: npt.NDArray[np.float64]
    index: npt.NDArray[np.intp]


def _within(ascending: npt.NDArray[np.float64], score: float, eps: float) -> tuple[int, int]:
    """``[low, high)``: the positions of sorted ``ascending`` within ``eps`` of ``score``
    (everything from ``high`` on is more than ``eps`` above it)."""
    low = int(np.searchsorted(ascending, score - eps, side="left"))
    high = int(np.searchsorted(ascending, score + eps, side="right"))
    return low, high


class DenseRanking(SlotRanking):
    """Exact scores held densely by slot (0: not a candidate, every score is positive).

    The text branch accumulates BM25 into such an array and ranks it as it is: the
    candidate index of a slot is the slot itself, so no candidate arrays are built.
    Every asked score is positive, so the zeros never count as ranking before it, and
    the best ``m`` are selected among the positive scores only.
    """

    def __init__(self, dense: npt.NDArray[np.float64], ids: Sequence[str]) -> None:
        super().__init__(_identity(len(dense)), dense, ids, ascending=True)
        self.size = int(np.count_nonzero(dense > 0))  # on a bool mask: ~4x faster

    def _positions(self, slots: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """A slot is its own index when its score is positive (-1: not a candidate)."""
        positions = np.full(len(slots), -1, dtype=np.int64)
        inside = np.flatnonzero((slots >= 0) & (slots < len(self.scores)))
        scored = inside[self.scores[slots[inside]] > 0]
        positions[scored] = slots[scored]
        return positions

    def _best_of(self, m: int) -> tuple[float, npt.NDArray[np.intp]]:
        if m >= self.size:
            return -math.inf, np.flatnonzero(self.scores > 0)
        found = leading(self.scores, m, positive=True)
        assert found is not None  # m < size positive scores
        return found


@functools.lru_cache(maxsize=IDENTITY_CACHE_SIZE)
def _identity(size: int) -> npt.NDArray[np.int64]:
    """``0 .. size - 1`` (read-only), shared by every dense ranking of that many slots."""
    slots = np.arange(size, dtype=np.int64)
    slots.flags.writeable = False
    return slots


class ApproxRanking(SlotRanking):
    """Ranks by exact scores computed lazily; ``approx`` is within ``eps`` of them.

    ``refine``, when given, scores chosen candidates more tightly than ``approx`` but
    more cheaply than ``exact``; wide bands and top candidates are narrowed with it
    before anything is scored exactly.
    """

    refine_min_band = REFINE_MIN_BAND
    """Bands (and top candidates beyond ``m``) larger than this are refined first."""

    def __init__(
        self,
        slots: npt.NDArray[np.int64],
        approx: npt.NDArray[np.float64],
        eps: float,
        exact: Exact,
        ids: Sequence[str],
        *,
        ascending: bool | None = None,
        refine: Refine | None = None,
    ) -> None:
        super().__init__(slots, approx, ids, ascending=ascending)
        self.eps = eps
        self._exact_of = exact
        self._refine = refine
        self._tight: _Lazy | None = None  # refined scores, once asked
        self._tight_eps = 0.0
        self._known = _Lazy(self.size)  # exact scores

    def _exact(self, index: npt.NDArray[np.intp]) -> npt.NDArray[np.float64]:
        return self._known.of(index, self._exact_of)

    def _candidates(self, m: int) -> npt.NDArray[np.intp]:
        if m >= self.size:
            return np.arange(self.size)
        # The m-th exact score is >= its approximation - eps, and anything reaching it
        # has an approximation >= that - eps.
        threshold = mth_largest(self.scores, m)
        assert threshold is not None  # m < size
        index = np.flatnonzero(self.scores >= threshold - 2 * self.eps)
        if self._refine is None or len(index) <= m + self.refine_min_band:
            return index
        # The same argument again, with the refined scores and their tighter bound.
        values, eps = self._refined(index)
        better = mth_largest(values, m)
        assert better is not None  # len(index) > m
        return index[values >= better - 2 * eps]

    def _narrowed(
        self,
        members: npt.NDArray[np.intp],
        owner: npt.NDArray[np.intp],
        sizes: npt.NDArray[np.intp],
        scores: npt.NDArray[np.float64],
    ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp], npt.NDArray[np.int64]]:
        """Refined scores place most members of the wide bands (every wide band refined
        in one call: one gather, one product); only those within their bound stay."""
        surely = np.zeros(len(sizes), dtype=np.int64)
        wide = (sizes > self.refine_min_band)[owner]
        if self._refine is None or not wide.any():
            return members, owner, surely
        values, eps = self._refined(members[wide])
        wanted = scores[owner[wide]]
        surely += np.bincount(owner[wide][values > wanted + eps], minlength=len(sizes))
        keep = wide.copy()
        keep[wide] = np.abs(values - wanted) <= eps
        keep |= ~wide
        return members[keep], owner[keep], surely

    def _refined(self, index: npt.NDArray[np.intp]) -> tuple[npt.NDArray[np.float64], float]:
        """Refined scores of ``index`` (memoised like exact ones) and their bound."""
        refine = self._refine
        assert refine is not None
        if self._tight is None:
            self._tight = _Lazy(self.size)

        def compute(wanted: npt.NDArray[np.intp]) -> npt.NDArray[np.float64]:
            values, self._tight_eps = refine(wanted)
            return values

        return self._tight.of(index, compute), self._tight_eps


class _Lazy:
    """Per-candidate values computed on first ask, each once.

    Only asked entries are ever written: a ranking over 100k candidates that reads a
    few hundred pays for no 800 KB fill (~0.1 ms a vector search, twice).
    """

    __slots__ = ("have", "values")

    def __init__(self, size: int) -> None:
        self.values = np.empty(size, dtype=np.float64)
        self.have = np.zeros(size, dtype=bool)

    def of(self, index: npt.NDArray[np.intp], compute: Exact) -> npt.NDArray[np.float64]:
        """The values at ``index``, computing the missing ones in one call."""
        missing = ~self.have[index]
        if missing.any():
            wanted = distinct(index[missing])
            self.values[wanted] = compute(wanted)
            self.have[wanted] = True
        found: npt.NDArray[np.float64] = self.values[index]
        return found


class OrderedRanking(Ranking):
    """A ranking already in order (the graph branch: by hops, then reference)."""

    def __init__(self, ranked: Sequence[tuple[int, float]]) -> None:
        self.ranked = list(ranked)
        self.size = len(self.ranked)
        self._rank = {slot: (rank, score) for rank, (slot, score) in enumerate(self.ranked, 1)}

    def top(self, m: int) -> list[tuple[int, float]]:
        """The first ``m`` ``(slot, score)`` pairs."""
        return self.ranked[: max(m, 0)]

    def bounds(self, slots: npt.NDArray[np.int64]) -> RankBounds:
        """Exact places (the order is known), as point bounds."""
        return RankBounds.of([self._rank.get(slot) for slot in slots.tolist()])

    def rank_of(self, slot: int) -> tuple[int, float] | None:
        """``(rank, score)`` of ``slot``, or None."""
        return self._rank.get(slot)
