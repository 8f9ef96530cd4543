"""Crash safety: a writer process killed with SIGKILL loses nothing it acknowledged.

The short run here (10 kills) is the CI half of issue 5's acceptance point;
``bench/crash_bench.py`` runs the same harness for 200 kills and more. After each kill the
file must open, pass ``PRAGMA integrity_check``, hold every acknowledged command, match the
model of some whole prefix of the command sequence (so no command is partly applied, in
documents, text postings, vectors or facts), keep one stored outcome per applied command,
and give byte-identical receipts to stored-outcome reads and re-sent commands.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from crash_writer import (
    Harness,
    Model,
    build_command,
    final_check,
    state_mismatches,
)

from cairn.index import open as open_indexed
from cairn.store import CommandRequest

KILLS = 10
SEED = 20240611


def test_killed_writers_lose_no_acknowledged_command(tmp_path: Path) -> None:
    harness = Harness(tmp_path / "cairn.db", SEED, max_delay=0.5)
    for _ in range(KILLS):
        assert harness.round() == []
    totals = harness.totals
    assert totals.kills == KILLS
    assert totals.acknowledged >= 5, "the writers never got going"
    assert harness.model.applied >= totals.acknowledged
    assert final_check(harness) == []


def _advance(model: Model, to: int) -> Model:
    copy = model.copy()
    while copy.applied < to:
        copy.advance()
    return copy


def test_the_model_check_sees_a_partly_applied_command(tmp_path: Path) -> None:
    """The checker can fail: half of command 3's mutations committed is caught."""
    with open_indexed(tmp_path / "cairn.db") as db:
        for k in (1, 2):
            db.command(build_command(SEED, k))
        model = _advance(Model(SEED), 2)
        assert state_mismatches(db, model) == []
        whole = build_command(SEED, 3)
        half = whole.mutations[: len(whole.mutations) // 2]
        db.command(CommandRequest(whole.command_id, "main", half))
        assert state_mismatches(db, _advance(model, 3)) != []
        model.applied = 3  # the right position, the old state
        assert state_mismatches(db, model) != []


@pytest.mark.parametrize("k", [1, 2, 3, 50])
def test_commands_are_the_same_bytes_every_time(k: int) -> None:
    assert build_command(SEED, k).canonical_bytes() == build_command(SEED, k).canonical_bytes()
    assert build_command(SEED, k) != build_command(SEED + 1, k)
