"""weighted_rrf_v1 against a test-owned arithmetic oracle and the spec's worked examples."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cairn.search.fusion import BranchRanking, exact_weight, max_score, weighted_rrf


def oracle(branches: list[tuple[float, list[str]]], k: int) -> dict[str, float]:
    """sum of weight/(k + one-based rank), absent or zero-weight branches adding 0."""
    scores: dict[str, float] = {}
    for weight, ranked in branches:
        if weight == 0:
            continue
        for position, key in enumerate(ranked):
            scores[key] = scores.get(key, 0.0) + weight / (k + position + 1)
    return scores


def test_retriever_only_example() -> None:
    # root reaches alpha, beta, delta at 1 hop and gamma at 2: ranks by hops then ref.
    graph = BranchRanking(
        "graph", 1.0, [("alpha", 0.5), ("beta", 0.5), ("delta", 0.5), ("gamma", 1 / 3)]
    )
    hits = weighted_rrf([graph], 60, 10)
    assert [h.key for h in hits] == ["alpha", "beta", "delta", "gamma"]
    assert [h.score for h in hits] == pytest.approx([1 / 61, 1 / 62, 1 / 63, 1 / 64], abs=1e-15)
    assert [c.native_rank for h in hits for c in h.contributions] == [1, 2, 3, 4]


def test_three_branch_example() -> None:
    ranked = [("a-hit", 1.0), ("b-hit", 0.5)]
    branches = [BranchRanking(name, 1.0, ranked) for name in ("text", "vector", "graph")]
    hits = weighted_rrf(branches, 60, 10)
    assert [h.key for h in hits] == ["a-hit", "b-hit"]
    assert hits[0].exact_score == Fraction(3, 61)
    assert hits[1].exact_score == Fraction(3, 62)


def test_weighted_example_ties_exactly_and_breaks_by_id() -> None:
    # k=10, text weight 2, vector weight 1, graph weight 13/132 (spec §5 example 3).
    text = BranchRanking("text", 2.0, [("a", 2.0), ("b", 1.0)])
    vector = BranchRanking("vector", 1.0, [("b", 1.0), ("a", 0.8), ("c", 0.0), ("d", -1.0)])
    graph = BranchRanking("graph", 13 / 132, [("c", 0.5), ("d", 0.5), ("b", 1 / 3)])
    hits = weighted_rrf([text, vector, graph], 10, 10)
    assert [h.key for h in hits] == ["a", "b", "c", "d"]
    assert hits[0].exact_score == hits[1].exact_score == Fraction(35, 132)
    expected = oracle(
        [(2.0, ["a", "b"]), (1.0, ["b", "a", "c", "d"]), (13 / 132, ["c", "d", "b"])], 10
    )
    for hit in hits:
        assert hit.score == pytest.approx(expected[hit.key], rel=1e-12)
    zero = [BranchRanking(b.name, 0.0, b.ranked) for b in (text, vector, graph)]
    assert weighted_rrf(zero, 10, 10) == []


def test_zero_weight_branch_adds_no_candidates() -> None:
    hits = weighted_rrf(
        [BranchRanking("text", 1.0, [("a", 1.0)]), BranchRanking("graph", 0.0, [("z", 1.0)])],
        60,
        10,
    )
    assert [h.key for h in hits] == ["a"]
    assert [c.branch for c in hits[0].contributions] == ["text"]


def test_limit_and_contribution_details() -> None:
    hits = weighted_rrf([BranchRanking("text", 0.5, [("x", 9.0), ("y", 3.0), ("z", 1.0)])], 1, 2)
    assert [h.key for h in hits] == ["x", "y"]
    (part,) = hits[1].contributions
    assert (part.branch, part.native_rank, part.native_score, part.weight) == ("text", 2, 3.0, 0.5)
    assert part.contribution == pytest.approx(0.5 / 3)


def test_exact_weights() -> None:
    assert exact_weight(13 / 132) == Fraction(13, 132)
    assert exact_weight(0.1) == Fraction(1, 10)
    assert exact_weight(0.0) == 0
    assert exact_weight(2.0) == 2
    for weight in (1e-9, 0.123456789, 1e300, 5e-324):
        assert float(exact_weight(weight)) == weight
    assert max_score([2.0, 1.0, 0.0], 10) == Fraction(3, 11)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from([0.0, 0.5, 1.0, 2.0, 13 / 132, 0.3]),
            st.lists(st.sampled_from("abcdefgh"), unique=True, max_size=8),
        ),
        min_size=1,
        max_size=3,
    ),
    st.integers(min_value=1, max_value=100),
    st.integers(min_value=1, max_value=10),
)
def test_fusion_matches_the_oracle(
    branches: list[tuple[float, list[str]]], k: int, limit: int
) -> None:
    rankings = [
        BranchRanking(f"b{i}", weight, [(key, 0.0) for key in keys])
        for i, (weight, keys) in enumerate(branches)
    ]
    hits = weighted_rrf(rankings, k, limit)
    expected = oracle(branches, k)
    assert {h.key for h in hits} <= set(expected)
    assert len(hits) == min(limit, len(expected))
    for hit in hits:
        assert math.isclose(hit.score, expected[hit.key], rel_tol=1e-12)
    scores = [h.exact_score for h in hits]
    assert scores == sorted(scores, reverse=True)
    for left, right in itertools.pairwise(hits):
        if left.exact_score == right.exact_score:
            assert left.key < right.key
    if hits:
        cutoff = hits[-1].score
        for key, value in expected.items():
            if key not in {h.key for h in hits}:
                assert value <= cutoff * (1 + 1e-12)
