"""``weighted_rrf_v1``: weighted reciprocal-rank fusion, computed exactly.

``score(d) = sum over branches of weight / (k + rank_b(d))`` with one-based ranks; a
branch that lacks ``d`` or has weight 0 adds nothing, and a zero-weight branch
contributes no candidates. Scores are exact rationals so that equal sums tie exactly
and break by the ordinal reference: each weight is read as the simplest fraction that
rounds to it (``13/132`` for the float ``13/132``), much as ``repr`` picks the shortest
decimal. Reported scores are those rationals rounded to floats.

``fused_top`` also takes a prior (``cairn.search.priors``): a weight in (0, 1] per key,
asked only of the keys it ranks, that multiplies the fused score before the top is
chosen (exactly, as a rational).
"""

from __future__ import annotations

import functools
import heapq
import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Generic, TypeVar

import numpy as np
import numpy.typing as npt

from cairn.index.ranking import RankBounds, Ranking, distinct
from cairn.search.limits import EXACT_WEIGHT_CACHE_SIZE, FUSION_PREFIX, FUSION_PREFIX_GROWTH

__all__ = [
    "FUSION_PROFILE",
    "BranchRanking",
    "Contribution",
    "FusedHit",
    "RankedBranch",
    "exact_weight",
    "fused_top",
    "max_score",
    "weighted_rrf",
]

FUSION_PROFILE = "weighted_rrf_v1"

# Float bounds decide only what is clear by far more than their rounding error.
_RELATIVE_SLACK = 1e-9

K = TypeVar("K", bound=Hashable)

Prior = Callable[[npt.NDArray[np.int64]], npt.NDArray[np.float64]]
"""A prior's weights in (0, 1] of the given slots (``cairn.search.priors.PriorWeights``)."""


def _simplest_between(low: Fraction, high: Fraction) -> Fraction:
    """The fraction with the smallest denominator in ``[low, high]`` (0 < low <= high)."""
    whole = math.floor(low)
    if whole == low:
        return Fraction(whole)
    if whole + 1 <= high:
        return Fraction(whole + 1)
    return whole + 1 / _simplest_between(1 / (high - whole), 1 / (low - whole))


@functools.lru_cache(maxsize=EXACT_WEIGHT_CACHE_SIZE)
def exact_weight(weight: float) -> Fraction:
    """The simplest rational that rounds to the float ``weight`` (exact for 0); memoised."""
    if weight == 0:
        return Fraction(0)
    half_ulp = Fraction(math.ulp(weight)) / 2
    value = Fraction(weight)
    return _simplest_between(value - half_ulp, value + half_ulp)


@dataclass(frozen=True, slots=True)
class BranchRanking(Generic[K]):
    """One branch's ranked output: keys best first, with their native scores."""

    name: str
    weight: float
    ranked: Sequence[tuple[K, float]]


@dataclass(frozen=True, slots=True)
class Contribution:
    """What one branch added to one key's fused score."""

    branch: str
    native_rank: int
    native_score: float
    weight: float
    contribution: float


@dataclass(frozen=True, slots=True)
class FusedHit(Generic[K]):
    """A fused result: key, exact score, and per-branch contributions (branch order)."""

    key: K
    exact_score: Fraction
    contributions: tuple[Contribution, ...]
    prior: float = 1.0
    """The prior's weight that multiplied the contributions' sum (1: none)."""

    @property
    def score(self) -> float:
        """The fused score as a float."""
        return float(self.exact_score)


def max_score(weights: Sequence[float], fusion_k: int) -> Fraction:
    """The largest fused score the weights allow: rank 1 in every positive branch."""
    return sum((exact_weight(w) for w in weights if w > 0), Fraction(0)) / (fusion_k + 1)


def weighted_rrf(
    branches: Sequence[BranchRanking[K]], fusion_k: int, limit: int
) -> list[FusedHit[K]]:
    """Fuse ranked branches; return the top ``limit`` by score desc, then key asc."""
    totals: dict[K, Fraction] = {}
    parts: dict[K, list[Contribution]] = {}
    for branch in branches:
        weight = exact_weight(branch.weight)
        if weight == 0:
            continue  # still ran (authorised, bounded) but adds no candidates
        for rank, (key, native) in enumerate(branch.ranked, start=1):
            share = weight / (fusion_k + rank)
            totals[key] = totals.get(key, Fraction(0)) + share
            parts.setdefault(key, []).append(
                Contribution(branch.name, rank, native, branch.weight, float(share))
            )
    ordered = sorted(totals, key=lambda key: (-totals[key], key))
    return [FusedHit(key, totals[key], tuple(parts[key])) for key in ordered[:limit]]


@dataclass(frozen=True, slots=True)
class RankedBranch:
    """One branch for ``fused_top``: name, weight and its complete (lazy) ranking."""

    name: str
    weight: float
    ranking: Ranking


def fused_top(
    branches: Sequence[RankedBranch],
    fusion_k: int,
    limit: int,
    ids: Sequence[str],
    prefix: int = FUSION_PREFIX,
    prior: Prior | None = None,
) -> list[FusedHit[int]]:
    """``weighted_rrf`` over complete rankings of slots, reading only what decides the top.

    Equal to ``weighted_rrf`` on the fully materialised rankings (keys ordered by
    ``ids[slot]``), each score first multiplied by ``prior(slots)`` when a prior is given
    (weights in (0, 1], so a bound on a fused score still bounds it after the prior).
    Each round takes the best ``m`` of every branch: a key outside all of them scores at
    most ``sum(w / (k + m + 1))``, and a key missing from some of them at most its known
    part plus that branch's bound (both times its prior, when there is one). When no
    such bound can reach the ``limit``-th best known part, only the keys whose bound can
    are scored exactly (their missing ranks counted in the full rankings); otherwise
    ``m`` grows and the round repeats, ending at the full rankings at worst.
    """
    active = [
        (branch, exact_weight(branch.weight))
        for branch in branches
        if exact_weight(branch.weight) != 0 and branch.ranking.size > 0
    ]
    if not active or limit <= 0:
        return []
    if len(active) == 1 and prior is None:
        return _single(active[0], fusion_k, limit)
    m = max(prefix, limit)
    while True:
        found = _round(active, fusion_k, limit, ids, m, prior)
        if found is not None:
            return found
        m *= FUSION_PREFIX_GROWTH


def _single(
    active: tuple[RankedBranch, Fraction], fusion_k: int, limit: int
) -> list[FusedHit[int]]:
    """One branch fuses in its own order (``w / (k + rank)`` falls with the rank)."""
    branch, weight = active
    hits: list[FusedHit[int]] = []
    for rank, (slot, native) in enumerate(branch.ranking.top(limit), start=1):
        share = weight / (fusion_k + rank)
        part = Contribution(branch.name, rank, native, branch.weight, float(share))
        hits.append(FusedHit(slot, share, (part,)))
    return hits


def _round(
    active: Sequence[tuple[RankedBranch, Fraction]],
    fusion_k: int,
    limit: int,
    ids: Sequence[str],
    m: int,
    prior: Prior | None = None,
) -> list[FusedHit[int]] | None:
    """One round of ``fused_top`` with leaders of ``m``; None when it cannot decide.

    The keys are every branch's leaders. Each branch bounds each key's rank cheaply
    (``Ranking.bounds``), which bounds its fused score; a key whose upper bound is below
    the ``limit``-th best lower bound cannot be in the top. The rest are scored exactly
    in order of their upper bound until it cannot reach the ``limit``-th exact score
    found so far (threshold algorithm); once ``limit`` are scored, each further key is
    first bounded by ``Ranking.tight_bounds`` and scored only if that still reaches it.
    """
    leaders = [branch.ranking.leaders(m) for branch, _ in active]
    keys = distinct(np.concatenate(leaders))
    tails = [
        0.0 if len(found) >= branch.ranking.size else float(weight) / (fusion_k + m + 1)
        for (branch, weight), found in zip(active, leaders, strict=True)
    ]
    bounds = [branch.ranking.bounds(keys) for branch, _ in active]
    lower = np.zeros(len(keys), dtype=np.float64)
    upper = np.zeros(len(keys), dtype=np.float64)
    for (_, weight), found in zip(active, bounds, strict=True):
        share = float(weight)
        lower += np.where(found.present, share / (fusion_k + found.highest), 0.0)
        upper += np.where(found.present, share / (fusion_k + found.lowest), 0.0)
    weights = None if prior is None else prior(keys)
    if weights is not None:
        lower *= weights
        upper *= weights
    chosen = np.arange(len(keys))
    if len(keys) > limit:
        floor = np.partition(lower, len(keys) - limit)[len(keys) - limit]
        chosen = np.flatnonzero(upper >= floor * (1 - _RELATIVE_SLACK))
    order = chosen[np.argsort(-upper[chosen], kind="stable")].tolist()
    scored: dict[int, Fraction] = {}
    shares: dict[int, tuple[Contribution, ...]] = {}
    applied: dict[int, float] = {}
    best: list[float] = []  # min-heap of the best ``limit`` exact scores
    start = 0
    while start < len(order):
        if len(best) >= limit and upper[order[start]] < best[0] * (1 - _RELATIVE_SLACK):
            break
        batch = order[start : start + limit]
        start += len(batch)
        if len(best) >= limit:
            theta = best[0] * (1 - _RELATIVE_SLACK)
            batch = _reaching(active, fusion_k, keys, bounds, batch, theta, weights)
        for index, (slot, total, parts) in zip(
            batch, _score(active, fusion_k, keys, bounds, batch), strict=True
        ):
            if weights is not None:
                total *= exact_weight(float(weights[index]))
                applied[slot] = float(weights[index])
            scored[slot] = total
            shares[slot] = parts
            heapq.heappush(best, float(total))
            if len(best) > limit:
                heapq.heappop(best)
    theta = best[0] if len(best) >= limit else 0.0
    outside = sum(tails)
    if outside > 0 and not outside < theta * (1 - _RELATIVE_SLACK):
        return None
    ordered = sorted(scored, key=lambda slot: (-scored[slot], ids[slot]))[:limit]
    return [FusedHit(slot, scored[slot], shares[slot], applied.get(slot, 1.0)) for slot in ordered]


def _reaching(
    active: Sequence[tuple[RankedBranch, Fraction]],
    fusion_k: int,
    keys: npt.NDArray[np.int64],
    bounds: Sequence[RankBounds],
    batch: Sequence[int],
    theta: float,
    weights: npt.NDArray[np.float64] | None = None,
) -> list[int]:
    """The keys of ``batch`` whose fused score (times the prior's ``weights`` of the
    keys) can still reach ``theta``, by tightening their ``bounds`` where a rank lies
    below a branch's head (``Ranking.tight_bounds``)."""
    index = np.asarray(batch, dtype=np.intp)
    slots = keys[index]
    upper = np.zeros(len(batch), dtype=np.float64)
    for (branch, weight), loose in zip(active, bounds, strict=True):
        subset = RankBounds(loose.present[index], loose.lowest[index], loose.highest[index])
        found = branch.ranking.tight_bounds(slots, subset)
        upper += np.where(found.present, float(weight) / (fusion_k + found.lowest), 0.0)
    if weights is not None:
        upper *= weights[index]
    return [i for i, bound in zip(batch, upper.tolist(), strict=True) if bound >= theta]


def _score(
    active: Sequence[tuple[RankedBranch, Fraction]],
    fusion_k: int,
    keys: npt.NDArray[np.int64],
    bounds: Sequence[RankBounds],
    batch: Sequence[int],
) -> list[tuple[int, Fraction, tuple[Contribution, ...]]]:
    """Exact fused scores of ``keys[batch]``, from each branch's exact places."""
    places: list[list[tuple[int, float] | None]] = []
    for (branch, _), found in zip(active, bounds, strict=True):
        column: list[tuple[int, float] | None] = [None] * len(batch)
        wanted = [j for j, i in enumerate(batch) if found.present[i]]
        if wanted:
            exact = branch.ranking.ranks_of([int(keys[batch[j]]) for j in wanted])
            for j, place in zip(wanted, exact, strict=True):
                column[j] = place
        places.append(column)
    result = []
    for j, i in enumerate(batch):
        # Summed as one integer fraction, normalised once (Fraction arithmetic
        # normalises at every step); int / int is correctly rounded, as float() is.
        numerator, denominator = 0, 1
        contributions: list[Contribution] = []
        for (branch, weight), column in zip(active, places, strict=True):
            place = column[j]
            if place is None:
                continue
            rank, native = place
            top, bottom = weight.numerator, weight.denominator * (fusion_k + rank)
            numerator = numerator * bottom + top * denominator
            denominator *= bottom
            contributions.append(
                Contribution(branch.name, rank, native, branch.weight, top / bottom)
            )
        result.append((int(keys[i]), Fraction(numerator, denominator), tuple(contributions)))
    return result
