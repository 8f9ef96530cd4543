"""The worker-side verification tasks, each checked on its own against tampered payloads."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from artifact_support import FIXED_TIME, forge, payload_of, rich_graph

from cairn.artifact import decode_artifact, encode_artifact
from cairn.artifact.limits import ARTIFACT_HEADER
from cairn.artifact.reader import split_header
from cairn.artifact.verify import (
    VerifyState,
    check_canonical_body,
    check_fact_ids,
    check_occurrence_ids,
    check_payload_digest,
    check_record_rules,
    resolve,
)
from cairn.errors import ArtifactCorruptError
from cairn.graph import OccurrenceInput, SemanticGraph

GOOD = encode_artifact(rich_graph(), generated_at=FIXED_TIME)
EVERYTHING = 10**9


def state_of(data: bytes, payload: dict[str, Any] | None = None, fast: bool = True) -> VerifyState:
    return VerifyState(data, split_header(data), fast, payload)


def run_all(state: VerifyState) -> list[str]:
    return [
        *check_record_rules(state),
        *check_canonical_body(state),
        *check_payload_digest(state),
        *check_fact_ids(state, 0, EVERYTHING),
        *check_occurrence_ids(state, 0, EVERYTHING),
    ]


def test_a_good_artifact_passes_every_task_in_both_modes() -> None:
    assert run_all(state_of(GOOD)) == []
    assert run_all(state_of(GOOD, fast=False)) == []


def test_resolve_parses_once_per_process() -> None:
    state = state_of(GOOD)
    first = resolve(state)
    assert first.payload is not None and resolve(state) is first
    assert resolve(first) is first
    with pytest.raises(TypeError):
        resolve(VerifyState(b"", memoryview(b"[1]"), True))


def _forged(change: Any) -> bytes:
    payload = copy.deepcopy(payload_of(GOOD))
    change(payload)
    return forge(payload)


def test_unsorted_occurrence_ids_are_caught_by_the_worker_rules() -> None:
    def change(payload: dict[str, Any]) -> None:
        listed = payload["facts"]["occurrence_ids"]
        index = next(i for i, ids in enumerate(listed) if len(ids) > 1)
        listed[index].reverse()

    data = _forged(change)
    problems = check_record_rules(state_of(data))
    assert any("sorted and unique" in problem for problem in problems)
    with pytest.raises(ArtifactCorruptError):
        decode_artifact(data)


def test_unsorted_undirected_endpoints_are_caught() -> None:
    def change(payload: dict[str, Any]) -> None:
        facts = payload["facts"]
        index = facts["direction"].index("undirected")
        facts["source"][index], facts["target"][index] = (
            facts["target"][index],
            facts["source"][index],
        )

    data = _forged(change)
    problems = check_record_rules(state_of(data))
    assert any("endpoints sorted" in problem for problem in problems)
    with pytest.raises(ArtifactCorruptError):
        decode_artifact(data)


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("source_range", [1, 1, 1], "source_range is malformed"),
        ("source_range", [1, 1, 1, 1.5], "source_range is malformed"),
        ("target_range", [0, 1, 1, 1], "target_range is malformed"),
        ("target_range", "1-2", "target_range is malformed"),
        ("source_file", "/etc/passwd", "source_file is not a repository-relative path"),
        ("target_file", "a//b.py", "target_file is not a repository-relative path"),
        ("metadata_variants", [{"file": "/abs/x"}], "absolute path"),
    ],
)
def test_occurrence_rules(column: str, value: Any, message: str) -> None:
    payload = copy.deepcopy(payload_of(GOOD))
    payload["occurrences"][column][0] = value
    problems = check_record_rules(state_of(GOOD, payload))
    assert any(message in problem for problem in problems), problems


def test_fact_rules_on_malformed_columns() -> None:
    payload = copy.deepcopy(payload_of(GOOD))
    payload["facts"]["occurrence_ids"][0] = "not-a-list"
    assert check_record_rules(state_of(GOOD, payload)) == ["occurrence_ids must be arrays"]
    payload["facts"]["occurrence_ids"][0] = [1]
    assert "occurrence IDs must be strings" in check_record_rules(state_of(GOOD, payload))
    payload["facts"]["annotation_variants"][0] = [{"path": "/abs"}]
    payload["facts"]["occurrence_ids"][0] = []
    assert any("absolute path" in p for p in check_record_rules(state_of(GOOD, payload)))
    del payload["nodes"]
    assert check_record_rules(state_of(GOOD, payload))[0].startswith("the records are malformed")


def test_id_tasks_report_malformed_input_instead_of_raising() -> None:
    payload = copy.deepcopy(payload_of(GOOD))
    payload["facts"]["discriminator"][0] = 999
    payload["occurrences"]["owner"][0] = "x"
    state = state_of(GOOD, payload)
    assert "names no valid discriminator" in check_fact_ids(state, 0, EVERYTHING)[0]
    assert "names no valid owner" in check_occurrence_ids(state, 0, EVERYTHING)[0]
    payload["discriminators"][0] = {"value": []}
    del payload["facts"]["id"]
    del payload["occurrences"]["fact_id"]
    assert "is missing" in check_fact_ids(state, 0, EVERYTHING)[0]
    assert "is missing" in check_occurrence_ids(state, 0, EVERYTHING)[0]


def test_id_tasks_stop_after_a_few_problems() -> None:
    payload = copy.deepcopy(payload_of(GOOD))
    payload["facts"]["id"] = ["sf_" + "0" * 64] * len(payload["facts"]["id"])
    payload["occurrences"]["id"] = ["eo_" + "0" * 64] * len(payload["occurrences"]["id"])
    state = state_of(GOOD, payload)
    assert 1 <= len(check_fact_ids(state, 0, EVERYTHING)) <= 5
    assert 1 <= len(check_occurrence_ids(state, 0, EVERYTHING)) <= 5


def test_canonical_task_modes_and_failures() -> None:
    payload = copy.deepcopy(payload_of(GOOD))
    payload["provenance"] = {"x": object()}
    assert "cannot be canonicalised" in check_canonical_body(state_of(GOOD, payload))[0]
    assert "cannot be canonicalised" in check_canonical_body(state_of(GOOD, payload, False))[0]
    payload["provenance"] = {"producer": "someone else"}
    assert "not the canonical" in check_canonical_body(state_of(GOOD, payload))[0]
    assert "not the canonical" in check_canonical_body(state_of(GOOD, payload, False))[0]


def test_digest_task_failures() -> None:
    no_digest = ARTIFACT_HEADER + b"{}\n"
    assert "no top-level payload_sha256" in check_payload_digest(state_of(no_digest))[0]
    bad_hex = GOOD.replace(GOOD[GOOD.index(b'"payload_sha256":"') + 18 :][:64], b"Z" * 64)
    assert "hex" in check_payload_digest(state_of(bad_hex))[0]


def test_escaped_combining_text_round_trips_through_the_exact_path() -> None:
    # "\n" + combining tilde is NFC, but its escaped text "\\n\u0303" is not: the fast
    # check must fall back to the reference instead of rejecting a canonical artifact.
    graph = SemanticGraph()
    graph.add_node("a", "function", attributes={"doc": "line\n\u0303tilde"})
    graph.add_node("b", "function")
    graph.add_fact("a", "b", "contains", occurrence=OccurrenceInput("x", "y", site_kind="é"))
    data = encode_artifact(graph, generated_at=FIXED_TIME)
    assert run_all(state_of(data, fast=False)) == []
    loaded = decode_artifact(data)
    assert loaded.graph == graph
    assert encode_artifact(loaded.graph, generated_at=FIXED_TIME) == data


def _die_in_child(state: object, parent: int) -> list[str]:
    import os

    if os.getpid() != parent:
        os._exit(3)  # a worker killed mid-task (for example by the OOM killer)
    return ["redone in the parent"]


def _echo(state: object, value: int) -> int:
    return value


def test_shared_work_redoes_tasks_of_a_dead_worker_in_process() -> None:
    import os

    from cairn.artifact.workers import SharedWork

    with SharedWork("state", 1, parallel=True) as work:
        if not work.parallel:
            pytest.skip("forking is not available here")
        work.submit(_die_in_child, os.getpid())
        import time

        time.sleep(0.5)  # let the worker take the task before the parent could
        assert work.drain() == [["redone in the parent"]]


def test_shared_work_runs_everything_in_process_when_not_parallel() -> None:
    from cairn.artifact.workers import SharedWork

    with SharedWork("state", 1, parallel=False) as work:
        work.submit(_echo, 1)
        work.submit(_echo, 2)
        assert work.drain() == [1, 2]


def _slow_echo(state: object, value: int) -> int:
    import time

    time.sleep(0.05)
    return value


def test_drain_from_the_end_keeps_submission_order() -> None:
    from cairn.artifact.workers import SharedWork

    for parallel in (False, True):
        with SharedWork("state", 1, parallel=parallel) as work:
            for value in range(6):
                work.submit(_slow_echo, value)
            assert work.drain(from_end=True) == list(range(6))
