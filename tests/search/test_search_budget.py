"""The shared read budget: exact limits, deadline and cancellation."""

from __future__ import annotations

import pytest

from cairn.errors import BudgetExceededError, RequestCancelledError
from cairn.search.budget import CancelToken, ReadBudget


def test_records_limit_is_exact() -> None:
    budget = ReadBudget(max_records=3)
    budget.examine(3)
    with pytest.raises(BudgetExceededError) as info:
        budget.examine()
    assert info.value.details["budget"] == "records"


def test_bytes_limits_are_exact() -> None:
    budget = ReadBudget(max_raw_bytes=10, max_output_bytes=5)
    budget.read(10)
    budget.emit(5)
    with pytest.raises(BudgetExceededError, match="read more than 10"):
        budget.read(1)
    with pytest.raises(BudgetExceededError, match="exceed 5"):
        budget.emit(1)


def test_deadline_uses_the_injected_clock() -> None:
    now = [100.0]
    budget = ReadBudget(deadline_seconds=2.0, clock=lambda: now[0])
    budget.check()
    now[0] = 102.0
    budget.check()
    now[0] = 102.5
    with pytest.raises(BudgetExceededError, match="deadline"):
        budget.check()


def test_cancellation_is_seen_by_charges() -> None:
    token = CancelToken()
    budget = ReadBudget(cancel=token)
    budget.examine(10)
    token.cancel()
    assert token.cancelled
    # Charges look at the token every few hundred calls, so a bulk charge sees it soon.
    with pytest.raises(RequestCancelledError):
        budget.check()
    seen = 0
    try:
        for _ in range(1000):
            budget.examine()
            seen += 1
    except RequestCancelledError:
        pass
    assert seen < 1000
