"""``ArrayMemo``: a byte-bounded memo of arrays, least recently used out first."""

from __future__ import annotations

import numpy as np

from cairn.index.memo import ArrayMemo


def arrays(size: int) -> tuple[np.ndarray, ...]:
    return (np.zeros(size, dtype=np.uint8),)


def test_a_hit_returns_the_stored_arrays_without_computing() -> None:
    memo = ArrayMemo(100)
    first = memo.get("a", lambda: arrays(10))
    calls = []
    again = memo.get("a", lambda: calls.append(1) or arrays(10))  # type: ignore[func-returns-value]
    assert again is first and calls == []
    assert memo.held == 10


def test_least_recently_used_values_leave_past_the_budget() -> None:
    memo = ArrayMemo(100)
    memo.get("a", lambda: arrays(40))
    memo.get("b", lambda: arrays(40))
    memo.get("a", lambda: arrays(40))  # a is now the most recent
    memo.get("c", lambda: arrays(40))  # 120 bytes: b goes
    assert memo.held == 80 and len(memo) == 2
    fresh = []
    memo.get("b", lambda: fresh.append("b") or arrays(40))  # type: ignore[func-returns-value]
    assert fresh == ["b"]  # b was evicted and computed anew; a then went (least recent)
    kept = []
    memo.get("c", lambda: kept.append("c") or arrays(40))  # type: ignore[func-returns-value]
    assert kept == [] and memo.held <= 100


def test_a_value_larger_than_the_budget_is_returned_but_never_kept() -> None:
    memo = ArrayMemo(100)
    memo.get("small", lambda: arrays(60))
    big = memo.get("big", lambda: arrays(101))
    assert len(big[0]) == 101
    assert len(memo) == 1 and memo.held == 60  # the small value was not pushed out
