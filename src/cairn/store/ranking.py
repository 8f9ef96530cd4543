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
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from cairn.store.limits import TOP_SAMPLE_STRIDE

__all__ = [
    "ApproxRanking",
    "DenseRanking",
    "OrderedRanking",
    "Ranking",
    "SlotRanking",
    "mth_largest",
]

Exact = Callable[[npt.NDArray[np.intp]], npt.NDArray[np.float64]]
"""Exact scores of the candidates at the given indexes."""


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


def mth_largest(values: npt.NDArray[np.float64], m: int) -> float | None:
    """The ``m``-th largest of ``values`` (None when there are fewer than ``m``).

    A strided sample's ``m``-th largest is a lower bound of the whole array's, so the
    selection runs on the few values at or above it instead of on every value: a
    full ``argpartition`` costs ~10x more on 100k scores.
    """
    if m <= 0 or len(values) < m:
        return None
    near = values
    sample = values[::TOP_SAMPLE_STRIDE]
    if len(sample) >= m:
        floor = np.partition(sample, len(sample) - m)[len(sample) - m]
        near = values[values >= floor]
    return float(np.partition(near, len(near) - m)[len(near) - m])


class SlotRanking(Ranking):
    """Exact float64 scores of candidate slots; ties ordered by document ID."""

    def __init__(
        self,
        slots: npt.NDArray[np.int64],
        scores: npt.NDArray[np.float64],
        ids: Sequence[str],
    ) -> None:
        self.slots = slots
        self.scores = scores
        self.ids = ids
        self.size = len(slots)
        self.eps = 0.0
        self._where: npt.NDArray[np.int64] | None = None
        self._sorted: npt.NDArray[np.float64] | None = None

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
        if m >= self.size:
            return np.arange(self.size)
        threshold = mth_largest(self.scores, m)
        assert threshold is not None  # m < size
        return np.flatnonzero(self.scores >= threshold)

    def top(self, m: int) -> list[tuple[int, float]]:
        """The first ``m`` ``(slot, score)`` pairs in rank order."""
        if m <= 0 or self.size == 0:
            return []
        index = self._candidates(m)
        scores = self._exact(index)
        slots = self.slots[index]
        order = self._order(slots, scores)[:m]
        return [(int(slots[i]), float(scores[i])) for i in order]

    def _position(self, slot: int) -> int | None:
        """The candidate index of ``slot`` (a dense slot-indexed lookup built once)."""
        if self._where is None:
            top = int(self.slots.max()) + 1 if self.size else 0
            self._where = np.full(top, -1, dtype=np.int64)
            self._where[self.slots] = np.arange(self.size, dtype=np.int64)
        if slot >= len(self._where) or self._where[slot] < 0:
            return None
        return int(self._where[slot])

    def _better(self, score: float, slot: int) -> int:
        """How many candidates rank before one with ``score`` and ``slot``."""
        above = int(np.count_nonzero(self.scores > score))
        ties = np.flatnonzero(self.scores == score)
        if len(ties) > 1:
            own = self.ids[slot]
            above += sum(1 for other in self.slots[ties].tolist() if self.ids[other] < own)
        return above

    def rank_of(self, slot: int) -> tuple[int, float] | None:
        """``(rank, score)`` of ``slot``, or None when it is not a candidate."""
        index = self._position(slot)
        if index is None:
            return None
        score = float(self.scores[index])
        return self._better(score, slot) + 1, score

    def _ascending(self) -> npt.NDArray[np.float64]:
        """Every candidate's (approximate) score, sorted once, on first use."""
        if self._sorted is None:
            self._sorted = np.sort(self.scores)
        return self._sorted

    def ranks_of(self, slots: Sequence[int]) -> list[tuple[int, float] | None]:
        """Exact ``(rank, score)`` of many slots, by binary search in the sorted scores.

        A candidate whose score is more than ``eps`` above a slot's exact score ranks
        before it for certain; those are counted in the sorted scores. Only when other
        candidates share the band within ``eps`` of it (ties, or near-ties of
        approximate scores) are they read, scored exactly and compared (ties by ID).
        """
        found = [(j, self._position(slot)) for j, slot in enumerate(slots)]
        asked = [(j, p) for j, p in found if p is not None]
        result: list[tuple[int, float] | None] = [None] * len(slots)
        if not asked:
            return result
        positions = np.asarray([p for _, p in asked], dtype=np.intp)
        exact = self._exact(positions)
        eps = self.eps
        ascending = self._ascending()
        total = len(ascending)
        below_high = np.searchsorted(ascending, exact + eps, side="right")
        below_low = np.searchsorted(ascending, exact - eps, side="left")
        for (j, position), score, high, low in zip(
            asked, exact.tolist(), below_high.tolist(), below_low.tolist(), strict=True
        ):
            above = total - high
            if high - low > 1:  # others share the band: decide them exactly
                above += self._band_above(position, score)
            result[j] = (above + 1, score)
        return result

    def _band_above(self, position: int, score: float) -> int:
        """Candidates within ``eps`` of ``score`` that rank before candidate ``position``."""
        eps = self.eps
        band = np.flatnonzero((self.scores >= score - eps) & (self.scores <= score + eps))
        values = self._exact(band) if eps else self.scores[band]
        above = int(np.count_nonzero(values > score))
        own_slot = int(self.slots[position])
        own = self.ids[own_slot]
        for other in self.slots[band[values == score]].tolist():
            if other != own_slot and self.ids[other] < own:
                above += 1
        return above


class DenseRanking(SlotRanking):
    """Exact scores held densely by slot (0: not a candidate, every score is positive).

    The text branch accumulates BM25 into such an array; the best ``m`` are read from
    it directly, and the candidate arrays are built only when a rank is asked.
    """

    def __init__(self, dense: npt.NDArray[np.float64], ids: Sequence[str]) -> None:
        self._dense = dense
        self._parts: tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]] | None = None
        self.ids = ids
        self.size = int(np.count_nonzero(dense))
        self.eps = 0.0
        self._where = None
        self._sorted = None

    def _materialised(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        if self._parts is None:
            found = np.flatnonzero(self._dense > 0).astype(np.int64)
            self._parts = (found, self._dense[found])
        return self._parts

    @property
    def slots(self) -> npt.NDArray[np.int64]:  # type: ignore[override]
        """Candidate slots, ascending."""
        return self._materialised()[0]

    @property
    def scores(self) -> npt.NDArray[np.float64]:  # type: ignore[override]
        """Scores of ``slots``."""
        return self._materialised()[1]

    def top(self, m: int) -> list[tuple[int, float]]:
        """The first ``m`` ``(slot, score)`` pairs, read from the dense scores."""
        if m <= 0 or self.size == 0:
            return []
        if m >= self.size:
            return super().top(m)
        dense = self._dense
        sample = dense[::TOP_SAMPLE_STRIDE]
        floor = mth_largest(sample[sample > 0], m)  # None: fewer than m in the sample
        near = np.flatnonzero(dense >= floor) if floor is not None else np.flatnonzero(dense > 0)
        threshold = mth_largest(dense[near], m)
        assert threshold is not None  # ``near`` holds every candidate at or above floor
        slots = near[dense[near] >= threshold].astype(np.int64)
        scores = dense[slots]
        order = self._order(slots, scores)[:m]
        return [(int(slots[i]), float(scores[i])) for i in order]


class ApproxRanking(SlotRanking):
    """Ranks by exact scores computed lazily; ``approx`` is within ``eps`` of them."""

    def __init__(
        self,
        slots: npt.NDArray[np.int64],
        approx: npt.NDArray[np.float64],
        eps: float,
        exact: Exact,
        ids: Sequence[str],
    ) -> None:
        super().__init__(slots, approx, ids)
        self.eps = eps
        self._exact_of = exact
        self._known: dict[int, float] = {}

    def _exact(self, index: npt.NDArray[np.intp]) -> npt.NDArray[np.float64]:
        missing = [i for i in index.tolist() if i not in self._known]
        if missing:
            values = self._exact_of(np.asarray(missing, dtype=np.intp))
            self._known.update(zip(missing, values.tolist(), strict=True))
        return np.asarray([self._known[i] for i in index.tolist()], dtype=np.float64)

    def _candidates(self, m: int) -> npt.NDArray[np.intp]:
        if m >= self.size:
            return np.arange(self.size)
        # The m-th exact score is >= its approximation - eps, and anything reaching it
        # has an approximation >= that - eps.
        threshold = mth_largest(self.scores, m)
        assert threshold is not None  # m < size
        return np.flatnonzero(self.scores >= threshold - 2 * self.eps)

    def rank_of(self, slot: int) -> tuple[int, float] | None:
        """``(rank, score)`` of ``slot`` by exact scores, reading only the uncertain band."""
        index = self._position(slot)
        if index is None:
            return None
        score = float(self._exact(np.asarray([index], dtype=np.intp))[0])
        approx, eps = self.scores, self.eps
        above = int(np.count_nonzero(approx > score + eps))
        band = np.flatnonzero((approx >= score - eps) & (approx <= score + eps))
        exact = self._exact(band)
        above += int(np.count_nonzero(exact > score))
        ties = band[exact == score]
        if len(ties) > 1:
            own = self.ids[slot]
            above += sum(1 for other in self.slots[ties].tolist() if self.ids[other] < own)
        return above + 1, score


class OrderedRanking(Ranking):
    """A ranking already in order (the graph branch: by hops, then reference)."""

    def __init__(self, ranked: Sequence[tuple[int, float]]) -> None:
        self.ranked = list(ranked)
        self.size = len(self.ranked)
        self._rank = {slot: (rank, score) for rank, (slot, score) in enumerate(self.ranked, 1)}

    def top(self, m: int) -> list[tuple[int, float]]:
        """The first ``m`` ``(slot, score)`` pairs."""
        return self.ranked[: max(m, 0)]

    def rank_of(self, slot: int) -> tuple[int, float] | None:
        """``(rank, score)`` of ``slot``, or None."""
        return self._rank.get(slot)
