"""The corruption suite, short (issue 18): seeded single-byte flips and truncations of a
real database and a real artifact give the exact intact answer or a named damage error,
never a wrong answer and never a traceback.

The long run is ``bench/fault_bench.py`` (1,000 positions per file over Cairn's own code);
this one indexes the test fixtures (seven small projects in five languages) and damages
``POSITIONS`` sampled positions of each file with the same machinery.
"""

from __future__ import annotations

import random
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

import fault_bench  # noqa: E402

POSITIONS = 150
"""Damaged copies per file (nine flips to one truncation, as the bench samples)."""


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    folder = tmp_path_factory.mktemp("corpus")
    source = folder / "fixtures"
    shutil.copytree(REPO / "tests" / "fixtures", source)
    database, artifact = fault_bench.build_corpus(folder, source)
    runs = folder / "runs"
    runs.mkdir()
    return database, artifact, runs


def _judge(path: Path, answers: Any, runs: Path, seed: int) -> dict[str, int]:
    positions = fault_bench.sample(path.stat().st_size, POSITIONS, random.Random(seed))
    counts, bad = fault_bench.run_file(path, answers, positions, runs)
    assert counts["wrong"] == 0 and counts["traceback"] == 0, bad
    return dict(counts)


def test_a_damaged_database_answers_exactly_or_names_the_damage(
    corpus: tuple[Path, Path, Path],
) -> None:
    database, _, runs = corpus
    questions = fault_bench._database_questions(
        fault_bench.sample_documents(database),
        fault_bench.walk_seed(database),
        text_query="user model",
        hybrid_query="create a user and save it",
    )
    intact = fault_bench.database_answers(database, questions)
    assert all(isinstance(answer, bytes) for answer in intact.values()), intact
    assert b'"score"' in intact["text"] and b'"score"' in intact["hybrid"]  # real hits
    counts = _judge(database, lambda found: fault_bench.database_answers(found, questions), runs, 1)
    assert counts["named"] > 0  # the sample did damage what the questions read


def test_a_damaged_artifact_is_always_named(corpus: tuple[Path, Path, Path]) -> None:
    _, artifact, runs = corpus
    assert isinstance(fault_bench.artifact_answers(artifact)["read"], bytes)
    counts = _judge(artifact, fault_bench.artifact_answers, runs, 2)
    assert counts["named"] == POSITIONS  # every byte of graph.cairn is covered
