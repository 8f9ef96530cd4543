"""Documents made ahead by a worker (while the parent resolves) load exactly as the
load's own: the same stored rows, receipts and fingerprint; a prepared document that
does not match its node is never stored in its place."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest
from codegraph_expect import FIXTURES

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "store"))

from test_store_load import dump

import cairn.codegraph.build as build
import cairn.store
from cairn.canonical import canonical_bytes
from cairn.codegraph import index_repository
from cairn.embed import HashingEmbedder
from cairn.store.load import (
    PreparedDocuments,
    load_semantic_graph,
    merge_prepared,
    node_body,
    prepare_documents,
)

REPOS = ("flask_app", "django_site")


@pytest.fixture(autouse=True)
def _through_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fixtures are small enough to be parsed in this process: send them to workers."""
    monkeypatch.setattr(build, "IN_PROCESS_MAX_BYTES", 0)


PER_FILE = ("commands", "meta")
"""Tables that differ between any two databases: commit times, the database's own ID."""


def _rows(path: Path) -> dict[str, list[tuple[object, ...]]]:
    """Every table's rows but those that differ between any two databases."""
    return {name: rows for name, rows in dump(path).items() if name not in PER_FILE}


def _loaded(path: Path, result: object, prepared: PreparedDocuments | None) -> object:
    with cairn.store.open(path) as db:
        receipt = load_semantic_graph(
            db,
            result.graph,  # type: ignore[attr-defined]
            embedder=HashingEmbedder(),
            prepared=prepared,
            checkpoint=False,
            pack=False,
        )
    return receipt


@pytest.mark.parametrize("repo", REPOS)
def test_a_worker_prepares_every_python_node_and_the_load_is_the_same(
    repo: str, tmp_path: Path
) -> None:
    result = index_repository(FIXTURES / repo, workers=2, embedder=HashingEmbedder())
    prepared = result.prepared
    assert prepared is not None
    python_nodes = {
        node.id
        for node in result.graph.nodes()
        # every node of a Python file's own; routes come from resolution, not a file
        if node.attributes.get("language") == "python" and node.kind not in ("external", "route")
    }
    assert python_nodes and set(prepared.documents) == python_nodes
    for node_id, held in prepared.documents.items():  # the oracle: the load's own body
        assert held.body == node_body(result.graph.node(node_id))
    with_prepared = _loaded(tmp_path / "a.db", result, prepared)
    without = _loaded(tmp_path / "b.db", result, None)
    assert with_prepared.command_id == without.command_id  # the same fingerprint
    assert with_prepared.mutations == without.mutations
    assert _rows(tmp_path / "a.db") == _rows(tmp_path / "b.db")


def test_a_prepared_document_unlike_its_node_is_not_used(tmp_path: Path) -> None:
    result = index_repository(FIXTURES / "flask_app", workers=2, embedder=HashingEmbedder())
    assert result.prepared is not None
    documents = dict(result.prepared.documents)
    node_id = sorted(documents)[0]
    held = documents[node_id]
    forged_body = {**held.body, "text": "forged"}
    documents[node_id] = dataclasses.replace(
        held,
        attributes={**held.attributes, "name": "other"},
        body=forged_body,
        data=canonical_bytes(forged_body),
        fields=[("/text", ["forged"], [1])],
    )
    forged = dataclasses.replace(result.prepared, documents=documents)
    _loaded(tmp_path / "a.db", result, forged)
    _loaded(tmp_path / "b.db", result, None)
    assert _rows(tmp_path / "a.db") == _rows(tmp_path / "b.db")


def test_prepared_vectors_of_another_space_are_not_used(tmp_path: Path) -> None:
    result = index_repository(FIXTURES / "flask_app", workers=2, embedder=HashingEmbedder(64))
    assert result.prepared is not None and result.prepared.space is not None
    _loaded(tmp_path / "a.db", result, result.prepared)  # loaded with the default space
    _loaded(tmp_path / "b.db", result, None)
    assert _rows(tmp_path / "a.db") == _rows(tmp_path / "b.db")


def test_without_workers_nothing_is_prepared() -> None:
    result = index_repository(FIXTURES / "flask_app", workers=1, embedder=HashingEmbedder())
    assert result.prepared is None


def test_a_load_with_some_documents_prepared_is_the_same(tmp_path: Path) -> None:
    """A batch mixing prepared and unprepared documents takes the prepared vectors and
    embeds the rest: the stored rows equal a load that prepared nothing."""
    result = index_repository(FIXTURES / "django_site", workers=2, embedder=HashingEmbedder())
    assert result.prepared is not None
    kept = sorted(result.prepared.documents)[::2]
    assert 0 < len(kept) < len(result.prepared.documents)
    half = dataclasses.replace(
        result.prepared,
        documents={node_id: result.prepared.documents[node_id] for node_id in kept},
    )
    with_half = _loaded(tmp_path / "a.db", result, half)
    without = _loaded(tmp_path / "b.db", result, None)
    assert with_half.mutations == without.mutations  # type: ignore[attr-defined]
    assert _rows(tmp_path / "a.db") == _rows(tmp_path / "b.db")


def test_prepared_parts_merge_to_one_preparation() -> None:
    """Nodes prepared in parts (one per worker) and merged in order equal the same nodes
    prepared at once: documents, and the vector of every node."""
    result = index_repository(FIXTURES / "django_site", workers=1)
    nodes = sorted(result.graph.nodes(), key=lambda node: node.id)
    embedder = HashingEmbedder()
    whole = prepare_documents(nodes, embedder)
    cut = len(nodes) // 3
    parts = [nodes[:cut], nodes[cut : 2 * cut], nodes[2 * cut :]]
    merged = merge_prepared([prepare_documents(part, embedder) for part in parts])
    assert merged.documents == whole.documents
    assert merged.space == whole.space
    space = embedder.space
    for node in nodes:
        assert (merged.vector(node.id, space) == whole.vector(node.id, space)).all()


def test_merging_keeps_the_first_document_of_an_id() -> None:
    result = index_repository(FIXTURES / "flask_app", workers=1)
    node = sorted(result.graph.nodes(), key=lambda node: node.id)[0]
    other = dataclasses.replace(node, attributes={**node.attributes, "name": "second"})
    embedder = HashingEmbedder()
    first, second = prepare_documents([node], embedder), prepare_documents([other], embedder)
    merged = merge_prepared([first, second])
    assert merged.documents[node.id] == first.documents[node.id]
    assert (merged.vector(node.id, embedder.space) == first.vector(node.id, embedder.space)).all()
    assert merge_prepared([second, first]).documents[node.id] == second.documents[node.id]


def test_the_workers_leave_the_resolvers_core_to_it() -> None:
    # Two cores: one resolves, one worker makes documents; never none at all.
    assert build.RESOLVER_CORES == 1
    assert [build.prepare_slots(workers) for workers in (1, 2, 3, 4, 8)] == [1, 1, 2, 3, 7]


def test_a_documents_job_waits_for_a_free_slot(tmp_path: Path) -> None:
    import subprocess
    import threading

    from cairn.codegraph import slots
    from cairn.codegraph.cache import dump_extract

    source = b"def f():\n    return 1\n"
    blob = dump_extract(build.extract_file("app/m.py", "python", source))
    job = ([("app/m.py", "app.m", blob)], HashingEmbedder())
    held = slots.JobSlots(1)
    # Another process (a worker busy with a job) holds the only slot.
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys; d = os.open(sys.argv[1], os.O_RDWR); "
            "fcntl.flock(d, fcntl.LOCK_EX); print('held', flush=True); sys.stdin.read()",
            held.paths[0],
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    made: list[PreparedDocuments] = []
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        slots.take_slots(held.paths)
        held.remove()  # the workers opened them: removing the files keeps the locks
        worker = threading.Thread(target=lambda: made.append(build._prepare_in_worker(job)))
        worker.start()
        worker.join(0.5)
        assert worker.is_alive() and not made  # waiting for the slot
        assert holder.stdin is not None
        holder.stdin.close()  # the holder ends: the kernel releases its lock
        holder.stdin = None
        worker.join(30)
        assert not worker.is_alive()
    finally:
        holder.kill()
        holder.communicate()
        slots.take_slots(())
    assert "function:app/m.py#f" in made[0].documents
    assert held.descriptors == []  # closed: nothing is left behind


def test_slots_are_taken_free_first_and_given_back(tmp_path: Path) -> None:
    from cairn.codegraph import slots

    made = slots.JobSlots(2)
    try:
        slots.take_slots((*made.paths, str(tmp_path / "gone")))  # a missing file: no slot
        assert len(slots._Held.descriptors) == 2
        with slots.slot():
            # This process holds the first; the second is free to another.
            assert slots._free(slots._Held.descriptors[1:]) is not None
            fcntl_unlock(slots._Held.descriptors[1])
        # All given back: both free again.
        assert slots._free(slots._Held.descriptors) == slots._Held.descriptors[0]
        fcntl_unlock(slots._Held.descriptors[0])
    finally:
        slots.take_slots(())
        made.remove()
    with pytest.raises(ValueError, match="at least one job slot"):
        slots.JobSlots(0)


def fcntl_unlock(descriptor: int) -> None:
    import fcntl

    fcntl.flock(descriptor, fcntl.LOCK_UN)


def test_without_anonymous_files_the_slots_are_files_removed_after(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from cairn.codegraph import slots

    monkeypatch.delattr(slots.os, "memfd_create")
    made = slots.JobSlots(2)
    assert made.folder is not None and all(Path(path).is_file() for path in made.paths)
    import fcntl
    import os

    slots.take_slots(made.paths)
    other = os.open(made.paths[0], os.O_RDWR)  # another worker's view of the first slot
    try:
        with slots.slot(), pytest.raises(BlockingIOError):
            fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)  # given back
    finally:
        os.close(other)
        slots.take_slots(())
        made.remove()
    assert not made.folder.exists()


def test_an_index_that_cannot_make_slots_still_prepares(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cairn.codegraph import slots

    def refused(name: str, flags: int = 0) -> int:
        raise OSError(24, "Too many open files")

    monkeypatch.setattr(slots.os, "memfd_create", refused)
    assert slots.make_slots(1) is None
    monkeypatch.delattr(slots.os, "memfd_create")
    monkeypatch.setattr(slots.tempfile, "tempdir", str(tmp_path / "missing"))
    assert slots.make_slots(1) is None
    result = index_repository(FIXTURES / "django_site", workers=2, embedder=HashingEmbedder())
    assert result.prepared is not None and result.prepared.documents


def test_the_pools_documents_jobs_wait_for_the_slot_an_index_made(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import fcntl
    import os
    import time

    from cairn.codegraph import slots

    monkeypatch.setattr(build, "PREPARE_CHUNK_FILES", 1)  # one job per file
    held: list[int] = []
    real = slots.make_slots

    def making(count: int) -> slots.JobSlots | None:
        made = real(count)
        assert made is not None and count == 1  # two workers: one slot
        held.append(os.open(made.paths[0], os.O_RDWR))
        fcntl.flock(held[0], fcntl.LOCK_EX)  # this test holds the only slot
        return made

    monkeypatch.setattr(build, "make_slots", making)
    result = index_repository(FIXTURES / "django_site", workers=2, embedder=HashingEmbedder())
    assert result.preparing is not None
    futures = result.preparing.futures
    try:
        time.sleep(0.5)
        assert futures and not any(future.done() for future in futures)  # all wait
    finally:
        os.close(held[0])  # the slot is free: the jobs run one after another
    assert result.prepared is not None
    assert all(future.done() for future in futures)
