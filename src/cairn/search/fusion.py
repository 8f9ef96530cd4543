"""``weighted_rrf_v1``: weighted reciprocal-rank fusion, computed exactly.

``score(d) = sum over branches of weight / (k + rank_b(d))`` with one-based ranks; a
branch that lacks ``d`` or has weight 0 adds nothing, and a zero-weight branch
contributes no candidates. Scores are exact rationals so that equal sums tie exactly
and break by the ordinal reference: each weight is read as the simplest fraction that
rounds to it (``13/132`` for the float ``13/132``), much as ``repr`` picks the shortest
decimal. Reported scores are those rationals rounded to floats.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Generic, TypeVar

__all__ = [
    "FUSION_PROFILE",
    "BranchRanking",
    "Contribution",
    "FusedHit",
    "exact_weight",
    "max_score",
    "weighted_rrf",
]

FUSION_PROFILE = "weighted_rrf_v1"

K = TypeVar("K", bound=Hashable)


def _simplest_between(low: Fraction, high: Fraction) -> Fraction:
    """The fraction with the smallest denominator in ``[low, high]`` (0 < low <= high)."""
    whole = math.floor(low)
    if whole == low:
        return Fraction(whole)
    if whole + 1 <= high:
        return Fraction(whole + 1)
    return whole + 1 / _simplest_between(1 / (high - whole), 1 / (low - whole))


def exact_weight(weight: float) -> Fraction:
    """The simplest rational that rounds to the float ``weight`` (exact for 0)."""
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
