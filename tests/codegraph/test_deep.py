"""``run_deep``: deep recursion on a thread of its own, the limit raised only meanwhile."""

from __future__ import annotations

import sys
import threading

import pytest

from cairn.codegraph.deep import run_deep

STACK = 256 * 1024 * 1024
LIMIT = 50_000


def _depth(n: int) -> int:
    return 0 if n == 0 else 1 + _depth(n - 1)


def test_recursion_past_the_default_limit_runs_and_the_limit_is_restored() -> None:
    before = sys.getrecursionlimit()
    assert before < 20_000
    with pytest.raises(RecursionError):
        _depth(20_000)  # too deep here
    assert run_deep(lambda: _depth(20_000), stack_bytes=STACK, recursion_limit=LIMIT, name="t") == (
        20_000
    )
    assert sys.getrecursionlimit() == before


def test_the_work_runs_on_its_own_thread_and_its_error_reaches_the_caller() -> None:
    names: list[str] = []

    def work() -> None:
        names.append(threading.current_thread().name)
        raise KeyError("inside")

    with pytest.raises(KeyError, match="inside"):
        run_deep(work, stack_bytes=STACK, recursion_limit=LIMIT, name="cairn-test-deep")
    assert names == ["cairn-test-deep"]


def test_a_deep_run_from_a_deep_run_runs_in_place() -> None:
    def outer() -> tuple[str, str]:
        here = threading.current_thread().name
        inner = run_deep(
            lambda: threading.current_thread().name,
            stack_bytes=STACK,
            recursion_limit=LIMIT,
            name="inner",
        )
        return here, inner

    # Waiting for the lock the outer run holds would never end; it runs in place.
    assert run_deep(outer, stack_bytes=STACK, recursion_limit=LIMIT, name="outer") == (
        "outer",
        "outer",
    )
