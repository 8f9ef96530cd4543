"""``fused_top`` over lazy rankings equals ``weighted_rrf`` over complete ones."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cairn.index.ranking import (
    ApproxRanking,
    DenseRanking,
    OrderedRanking,
    SlotRanking,
    leading,
    mth_largest,
)
from cairn.search.admission import number_length, vector_text_length
from cairn.search.fusion import BranchRanking, RankedBranch, fused_top, weighted_rrf

IDS = [f"id{slot:04d}" for slot in range(400)]  # slot order is ID order


def complete(slots: np.ndarray, scores: np.ndarray) -> list[tuple[int, float]]:
    order = sorted(range(len(slots)), key=lambda i: (-scores[i], IDS[slots[i]]))
    return [(int(slots[i]), float(scores[i])) for i in order]


@st.composite
def branches(draw: Any) -> list[tuple[float, np.ndarray, np.ndarray, str]]:
    out = []
    for _ in range(draw(st.integers(1, 3))):
        size = draw(st.integers(0, 120))
        slots = np.asarray(draw(st.permutations(range(1, 400)))[:size], dtype=np.int64)
        levels = draw(st.integers(1, 12))  # few levels: many exact ties
        scores = np.asarray(
            [draw(st.integers(0, levels)) / levels for _ in range(size)], dtype=np.float64
        )
        weight = draw(st.sampled_from([0.0, 0.5, 1.0, 13 / 132, 2.0, 0.1]))
        kind = draw(st.sampled_from(["exact", "approx", "ordered", "dense"]))
        out.append((weight, slots, scores, kind, draw(HEADS)))
    return out


# (head_size, few_passes): the default, and heads small enough that ranks and bounds
# below them take the pass and the sort-everything paths.
HEADS = st.sampled_from([(2048, 16), (1, 0), (3, 16), (8, 1), (16, 0)])


def ranking(
    kind: str, slots: np.ndarray, scores: np.ndarray, head: tuple[int, int] = (2048, 16)
) -> Any:
    if kind == "ordered":
        return OrderedRanking(complete(slots, scores))
    if kind == "approx":
        eps = 0.01
        noise = np.random.default_rng(len(slots)).uniform(-eps, eps, len(slots))

        def exact(index: np.ndarray) -> np.ndarray:
            return scores[index]

        # A refinement within a tenth of the bound (smaller bands, same answers).
        fine = np.random.default_rng(len(slots) + 1).uniform(-eps / 10, eps / 10, len(slots))

        def refine(index: np.ndarray) -> tuple[np.ndarray, float]:
            return scores[index] + fine[index], eps / 10

        found: Any = ApproxRanking(
            slots, scores + noise, eps, exact, IDS, refine=refine if len(slots) % 2 else None
        )
        found.refine_min_band = len(slots) % 3  # refine even the smallest bands
    elif kind == "dense" and np.all(scores > 0):
        dense = np.zeros(400, dtype=np.float64)
        dense[slots] = scores
        found = DenseRanking(dense, IDS)
    else:
        found = SlotRanking(slots, scores, IDS)
    found.head_size, found.few_passes = head
    if len(slots) % 3 == 1:
        found.warm()  # a head sorted ahead of fusion changes nothing
    return found


@settings(max_examples=150, deadline=None)
@given(branches(), st.integers(1, 30), st.sampled_from([1, 60]), st.sampled_from([1, 4, 256]))
def test_fused_top_equals_weighted_rrf(
    drawn: list[tuple[float, np.ndarray, np.ndarray, str, tuple[int, int]]],
    limit: int,
    k: int,
    prefix: int,
) -> None:
    full = [
        BranchRanking(f"b{i}", weight, complete(slots, scores))
        for i, (weight, slots, scores, *_) in enumerate(drawn)
    ]
    lazy = [
        RankedBranch(f"b{i}", weight, ranking(kind, slots, scores, head))
        for i, (weight, slots, scores, kind, head) in enumerate(drawn)
    ]
    expected = weighted_rrf(full, k, limit)
    found = fused_top(lazy, k, limit, IDS, prefix=prefix)
    assert [(h.key, h.exact_score, h.contributions) for h in found] == [
        (h.key, h.exact_score, h.contributions) for h in expected
    ]


PRIOR_WEIGHTS = st.sampled_from([1.0, 0.6, 0.5, 0.25, 13 / 132, 1e-3])


def prior_oracle(
    drawn: list[tuple[float, np.ndarray, np.ndarray, str, tuple[int, int]]],
    k: int,
    limit: int,
    prior: np.ndarray,
) -> list[tuple[int, Fraction]]:
    """Test-owned: every key's weighted RRF over the complete rankings, times its prior,
    as exact rationals; best first, ties by ID."""
    totals: dict[int, Fraction] = {}
    for weight, slots, scores, *_ in drawn:
        exact = Fraction(weight).limit_denominator(1000)
        if weight == 0:
            continue
        for rank, (slot, _) in enumerate(complete(slots, scores), start=1):
            totals[slot] = totals.get(slot, Fraction(0)) + exact / (k + rank)
    scored = {
        slot: total * Fraction(float(prior[slot])).limit_denominator(1000)
        for slot, total in totals.items()
    }
    ordered = sorted(scored, key=lambda slot: (-scored[slot], IDS[slot]))
    return [(slot, scored[slot]) for slot in ordered[:limit]]


@settings(max_examples=150, deadline=None)
@given(
    branches(),
    st.integers(1, 30),
    st.sampled_from([1, 10, 60]),
    st.sampled_from([1, 4, 256]),
    st.lists(PRIOR_WEIGHTS, min_size=400, max_size=400),
)
def test_fused_top_with_a_prior_equals_the_scores_times_it(
    drawn: list[tuple[float, np.ndarray, np.ndarray, str, tuple[int, int]]],
    limit: int,
    k: int,
    prefix: int,
    weights: list[float],
) -> None:
    prior = np.asarray(weights, dtype=np.float64)
    lazy = [
        RankedBranch(f"b{i}", weight, ranking(kind, slots, scores, head))
        for i, (weight, slots, scores, kind, head) in enumerate(drawn)
    ]
    asked: list[int] = []

    def weights(slots: np.ndarray) -> np.ndarray:
        asked.extend(slots.tolist())
        return prior[slots]

    found = fused_top(lazy, k, limit, IDS, prefix=prefix, prior=weights)
    assert [(h.key, h.exact_score) for h in found] == prior_oracle(drawn, k, limit, prior)
    assert [h.prior for h in found] == [float(prior[h.key]) for h in found]
    assert {h.key for h in found} <= set(asked)


def test_a_prior_reorders_a_single_branch_past_its_own_order() -> None:
    # One branch ranks 1, 2, 3; the prior 0.6 on slot 1 puts it below slot 2 (1/11 * 3/5
    # = 3/55 < 1/12) but above slot 3? 3/55 = 0.0545 < 1/13 = 0.0769: last.
    slots = np.asarray([1, 2, 3], dtype=np.int64)
    scores = np.asarray([3.0, 2.0, 1.0])
    prior = np.ones(400)
    prior[1] = 0.6
    branch = RankedBranch("text", 1.0, ranking("exact", slots, scores))
    found = fused_top([branch], 10, 3, IDS, prior=lambda slots: prior[slots])
    assert [h.key for h in found] == [2, 3, 1]
    assert found[2].exact_score == Fraction(1, 11) * Fraction(3, 5)
    assert fused_top([branch], 10, 3, IDS)[0].key == 1


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 200), st.integers(1, 8), st.integers(0, 50), HEADS, st.booleans())
def test_rankings_answer_top_ranks_and_bounds_exactly(
    size: int, levels: int, m: int, head: tuple[int, int], ascending: bool
) -> None:
    rng = np.random.default_rng(size * 31 + levels)
    slots = rng.permutation(np.arange(1, 400))[:size].astype(np.int64)
    if ascending:
        slots = np.sort(slots)
    scores = rng.integers(0, levels + 1, size) / levels
    if ascending:  # positive, so that the dense form holds every candidate
        scores = scores + 1.0
    expected = complete(slots, scores)
    ranks = {slot: (rank, score) for rank, (slot, score) in enumerate(expected, 1)}
    wanted = [int(s) for s in slots[:: max(1, size // 7)]] + [0, 399]
    for kind in ("exact", "approx", "ordered", "dense"):
        found = ranking(kind, slots, scores, head)
        assert found.top(m) == expected[:m]
        assert found.ranks_of(wanted) == [ranks.get(slot) for slot in wanted]
        assert [found.rank_of(slot) for slot in wanted] == [ranks.get(slot) for slot in wanted]
        leaders = set(found.leaders(m).tolist())
        assert {slot for slot, _ in expected[:m]} <= leaders  # the best m, at least
        bounds = found.bounds(np.asarray(wanted, dtype=np.int64))
        tight = found.tight_bounds(np.asarray(wanted, dtype=np.int64), bounds)
        for i, slot in enumerate(wanted):
            assert bool(bounds.present[i]) == (slot in ranks) == bool(tight.present[i])
            if slot in ranks:
                assert bounds.lowest[i] <= ranks[slot][0] <= bounds.highest[i]
                assert bounds.lowest[i] <= tight.lowest[i] <= ranks[slot][0]
                assert ranks[slot][0] <= tight.highest[i] <= bounds.highest[i]
                if bounds.highest[i] == found.size and kind in ("exact", "dense"):
                    # Exact scores below the head: bounded by the scores above and the ties.
                    score = ranks[slot][1]
                    assert tight.lowest[i] == 1 + int(np.count_nonzero(scores > score))
                    assert tight.highest[i] == int(np.count_nonzero(scores >= score))


@settings(max_examples=500, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_number_length_equals_the_canonical_form(value: float) -> None:
    from cairn.canonical import format_number

    assert number_length(value) == len(format_number(value))


@pytest.mark.parametrize("value", [1e21, 1e-7, 1e-6, 5e-324, 123.0, -0.5, 1e16, 0.000001234])
def test_number_length_edges(value: float) -> None:
    from cairn.canonical import format_number

    assert number_length(value) == len(format_number(value))


def test_request_size_measures_vectors_exactly() -> None:
    from cairn.canonical import canonical_bytes
    from cairn.search.admission import request_size
    from cairn.search.contracts import SearchRequest
    from cairn.search.wire import to_wire
    from cairn.store import Metric, VectorSpace

    space = VectorSpace("s", 4, Metric.COSINE, "m", "1")
    for vector in [(1.0, -0.0, 1e-7, 3.25), (0.1, 2.0, 5e-324, 1e21)]:
        request = SearchRequest("main", "docs", vector_field="v", vector=vector, space=space)
        assert request_size(request) == len(canonical_bytes(to_wire(request)))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.floats(allow_nan=False, allow_infinity=False)
        | st.sampled_from([0.0, -0.0, 1.0, -3.0, 1e-5, 1e16, 2.5e-7, 1e21]),
        max_size=40,
    )
)
def test_vector_text_length_equals_the_canonical_form(values: list[float]) -> None:
    from cairn.canonical import canonical_bytes_reference

    assert vector_text_length(values) == len(canonical_bytes_reference(values))


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 200), st.integers(1, 8), st.integers(0, 50), HEADS)
def test_dense_ranking_answers_like_the_candidate_arrays(
    size: int, levels: int, m: int, head: tuple[int, int]
) -> None:
    rng = np.random.default_rng(size * 17 + levels)
    slots = np.sort(rng.permutation(np.arange(1, 400))[:size]).astype(np.int64)
    scores = rng.integers(1, levels + 1, size) / levels  # positive: a dense 0 is no candidate
    dense = np.zeros(400, dtype=np.float64)
    dense[slots] = scores
    found = DenseRanking(dense, IDS)
    found.head_size, found.few_passes = head
    expected = complete(slots, scores)
    assert found.size == size
    assert found.top(m) == expected[:m]
    ranks = {slot: (rank, score) for rank, (slot, score) in enumerate(expected, 1)}
    wanted = [int(s) for s in slots[:: max(1, size // 5)]] + [0, 399, -1, 400]
    assert found.ranks_of(wanted) == [ranks.get(slot) for slot in wanted]
    assert found.top(m) == expected[:m]  # after materialising, still the same
    leaders = set(found.leaders(m).tolist())
    assert {slot for slot, _ in expected[:m]} <= leaders  # a superset of the best m
    assert all(dense[slot] > 0 for slot in leaders)  # never a non-candidate
    asked = np.asarray(wanted, dtype=np.int64)
    bounds = found.bounds(asked)
    for j, slot in enumerate(wanted):
        place = ranks.get(slot)
        assert bool(bounds.present[j]) == (place is not None)
        if place is not None:
            assert bounds.lowest[j] <= place[0] <= bounds.highest[j]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(-5, 40).map(lambda x: x / 8), max_size=300),
    st.integers(0, 40),
)
def test_mth_largest_equals_the_sorted_order(values: list[float], m: int) -> None:
    found = mth_largest(np.asarray(values, dtype=np.float64), m)
    expected = sorted(values, reverse=True)[m - 1] if 1 <= m <= len(values) else None
    assert found == expected


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(-5, 40).map(lambda x: x / 8), max_size=400),
    st.integers(0, 40),
    st.booleans(),
)
def test_leading_finds_the_mth_largest_and_every_index_reaching_it(
    values: list[float], m: int, positive: bool
) -> None:
    array = np.asarray(values, dtype=np.float64)
    counted = [v for v in values if v > 0] if positive else values
    found = leading(array, m, positive=positive)
    if not 1 <= m <= len(counted):
        assert found is None
        return
    expected = sorted(counted, reverse=True)[m - 1]
    assert found is not None
    threshold, index = found
    assert threshold == expected
    assert index.tolist() == [i for i, v in enumerate(values) if v >= expected]


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 200), st.integers(1, 8), st.integers(0, 50), HEADS, st.integers(0, 150))
def test_consecutive_slots_are_found_by_their_offset(
    size: int, levels: int, m: int, head: tuple[int, int], first: int
) -> None:
    rng = np.random.default_rng(size * 31 + levels)
    slots = np.arange(first, first + size, dtype=np.int64)  # the common layout, no gaps
    scores = rng.integers(0, levels + 1, size) / levels
    found = SlotRanking(slots, scores, IDS, ascending=True)
    found.head_size, found.few_passes = head
    expected = complete(slots, scores)
    assert found.top(m) == expected[:m]
    ranks = {slot: (rank, score) for rank, (slot, score) in enumerate(expected, 1)}
    outside = [first - 1, first + size, first + size + 5]
    wanted = [int(s) for s in slots[:: max(1, size // 7)]] + outside
    assert found.ranks_of(wanted) == [ranks.get(slot) for slot in wanted]
    bounds = found.bounds(np.asarray(wanted, dtype=np.int64))
    assert bounds.present.tolist() == [slot in ranks for slot in wanted]
