"""Read-cut consistency: a concurrent writer never makes one search see two positions.

Every writer command is one *generation* ``g``: it rewrites all documents of ``docs``
and the seed ``seeds/root`` with ``gen = g`` in the body, and re-points everything a
search ranks by to the permutation ``order(g)`` of the documents: the text (the ``j``-th
document holds ``alpha`` ``N - j`` times in a field of constant length, so BM25 ranks
``order(g)``), the vectors (angle ``0.1 * j`` from the query) and the graph (all old
``calls`` facts deleted, then the chain ``root -> order(g)[0] -> order(g)[1] -> ...``).

A reply built from one position therefore shows one generation in every hit and context
body, hits in exactly ``order(g)``, text and vector native ranks and scores of ``g``,
graph hops and paths along ``g``'s chain and expansion context ``g``'s successors. A
reply that mixed two positions (a walk at one, a branch or a body at another) breaks at
least one of these. The writer runs as a thread with two reader threads, on the readers'
handle (compacting the columns every few generations, so cuts also straddle generation
swaps) or on its own handle, and as a separate process on the same file (the columns
catch up from SQLite inside each cut).
"""

from __future__ import annotations

import contextlib
import itertools
import math
import random
import select
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

import cairn
from cairn.search.contracts import (
    Branch,
    GraphExpansion,
    GraphRetriever,
    GraphScope,
    GraphSearchRequest,
    GraphSearchResult,
    GraphWalkSpec,
    RankedDocument,
    SearchRequest,
)
from cairn.store import (
    CommandRequest,
    ConfigureCollection,
    ConfigureGraph,
    Database,
    DeleteFact,
    EntityRef,
    Metric,
    Mutation,
    PutDocument,
    PutFact,
    PutVector,
    VectorField,
    VectorSpace,
)

SPACE = VectorSpace("cut", 2, Metric.COSINE, "cut-model", "1")
GRAPH = "code"
IDS = tuple(f"n{index}" for index in range(8))
ROOT = EntityRef("seeds", "root")
LIMIT = 5
RETRIEVER_DEPTH = 3
SCOPE_DEPTH = 4
EXPANSION_DEPTH = 2
READ_SECONDS = 3.0
MAX_READS = 2000
MIN_GENERATIONS = 3
COMPACT_EVERY = 4


# ------------------------------------------------------------------ writer
def order(g: int) -> list[str]:
    """The ranking every branch agrees on in generation ``g``."""
    return random.Random(g).sample(IDS, len(IDS))


def generation(g: int, previous_facts: Sequence[str]) -> CommandRequest:
    """Rewrite every document, vector and fact to generation ``g`` in one command."""
    count = len(IDS)
    mutations: list[Mutation] = []
    for rank, doc_id in enumerate(order(g)):
        text = " ".join(["alpha"] * (count - rank) + ["beta"] * rank)
        mutations.append(PutDocument("docs", doc_id, {"text": text, "gen": g}))
        angle = 0.1 * rank
        mutations.append(PutVector("docs", doc_id, "embedding", (math.cos(angle), math.sin(angle))))
    mutations.append(PutDocument("seeds", "root", {"text": "root", "gen": g}))
    mutations += [DeleteFact(GRAPH, fact_id) for fact_id in previous_facts]
    chain = [ROOT, *(EntityRef("docs", doc_id) for doc_id in order(g))]
    mutations += [PutFact(GRAPH, a, b, "calls") for a, b in itertools.pairwise(chain)]
    return CommandRequest(uuid.uuid5(uuid.NAMESPACE_OID, f"cut:{g}"), "main", tuple(mutations))


def commit(db: Database, g: int, previous_facts: Sequence[str]) -> list[str]:
    """Commit generation ``g``; return the IDs of its facts (the next one deletes them)."""
    receipt = db.command(generation(g, previous_facts))
    return [outcome.id for outcome in receipt.mutations if outcome.kind == "put_fact"]


def setup(path: Path) -> list[str]:
    """Configure the collections and the graph and commit generation 0."""
    with cairn.open(path) as db:
        db.command(
            CommandRequest(
                uuid.uuid5(uuid.NAMESPACE_OID, "cut:setup"),
                "main",
                (
                    ConfigureCollection("docs", ("/text",), (VectorField("embedding", SPACE),)),
                    ConfigureCollection("seeds", ("/text",)),
                    ConfigureGraph(GRAPH),
                ),
            )
        )
        return commit(db, 0, ())


def write_until_stdin_closes(path: Path, first: int, facts: list[str]) -> None:
    """The writer process: commit generations until the parent closes our stdin."""
    with cairn.open(path) as db:
        print("READY", flush=True)
        g = first
        while not select.select([sys.stdin], [], [], 0)[0]:
            facts = commit(db, g, facts)
            g += 1
        print(f"DONE {g - first}", flush=True)


# ------------------------------------------------------------------ checks
def _search(explain: bool = True) -> SearchRequest:
    return SearchRequest(
        "main",
        "docs",
        text_field="/text",
        text="alpha",
        vector_field="embedding",
        vector=(1.0, 0.0),
        space=SPACE,
        limit=LIMIT,
        explain=explain,
    )


def hybrid_request() -> GraphSearchRequest:
    """Text + vector + graph retriever, with expansion from the selected hits."""
    return GraphSearchRequest(
        1,
        _search(),
        retriever=GraphRetriever(GraphWalkSpec(GRAPH, (ROOT,), RETRIEVER_DEPTH)),
        expansion=GraphExpansion(GRAPH, EXPANSION_DEPTH),
    )


def scoped_request() -> GraphSearchRequest:
    """Text only, scoped to the documents within ``SCOPE_DEPTH`` hops of the root."""
    search = SearchRequest("main", "docs", text_field="/text", text="alpha", limit=LIMIT)
    return GraphSearchRequest(
        1, search, scope=GraphScope(GraphWalkSpec(GRAPH, (ROOT,), SCOPE_DEPTH))
    )


def _one_generation(documents: Sequence[object]) -> int:
    gens = {document.body["gen"] for document in documents}  # type: ignore[attr-defined]
    assert len(gens) == 1, f"one reply saw generations {sorted(gens)}"
    (g,) = gens
    assert isinstance(g, int)
    return g


def check_hits(hits: Sequence[RankedDocument], *, graph: bool) -> int:
    """Hits of the hybrid request: one generation, its order, its native ranks and scores."""
    g = _one_generation([hit.document for hit in hits])
    expected = order(g)
    assert [hit.document.ref.id for hit in hits] == expected[:LIMIT], f"generation {g}"
    for rank, hit in enumerate(hits):
        assert hit.explanation is not None
        parts = {part.branch: part for part in hit.explanation.contributions}
        assert parts[Branch.TEXT].native_rank == rank + 1
        assert parts[Branch.VECTOR].native_rank == rank + 1
        assert abs(parts[Branch.VECTOR].native_score - math.cos(0.1 * rank)) < 1e-6
        if graph and rank < RETRIEVER_DEPTH:
            assert parts[Branch.GRAPH].native_rank == rank + 1
            assert hit.explanation.hops == rank + 1
            path = [ROOT, *(EntityRef("docs", doc_id) for doc_id in expected[: rank + 1])]
            assert list(hit.explanation.path or ()) == path
        else:
            assert Branch.GRAPH not in parts
    return g


def check_graph_result(result: GraphSearchResult) -> int:
    g = check_hits(result.hits, graph=True)
    assert result.expansion is not None
    context = result.expansion.documents
    assert (
        _one_generation([hit.document for hit in result.hits] + [c.document for c in context]) == g
    )
    expected = order(g)[LIMIT : LIMIT + EXPANSION_DEPTH]
    assert [(c.document.ref.id, c.shortest_hops) for c in context] == [
        (doc_id, hops) for hops, doc_id in enumerate(expected, start=1)
    ]
    return g


def check_scoped(result: GraphSearchResult) -> int:
    g = _one_generation([hit.document for hit in result.hits])
    assert [hit.document.ref.id for hit in result.hits] == order(g)[: min(SCOPE_DEPTH, LIMIT)]
    return g


def read_and_check(db: Database, stop: Callable[[], bool]) -> set[int]:
    """Run the three request shapes in turn until time, count or ``stop``; return gens seen."""
    seen: set[int] = set()
    deadline = time.monotonic() + READ_SECONDS
    reads = 0
    while time.monotonic() < deadline and reads < MAX_READS and not stop():
        shape = reads % 3
        if shape == 0:
            seen.add(check_hits(db.search(_search()), graph=False))
        elif shape == 1:
            seen.add(check_graph_result(db.graph_search(hybrid_request())))
        else:
            seen.add(check_scoped(db.graph_search(scoped_request())))
        reads += 1
    return seen


# ------------------------------------------------------------------- tests
def test_the_checks_reject_a_mixed_reply(tmp_path: Path) -> None:
    """The checks can fail: hits of one generation with the walk of another are caught."""
    path = tmp_path / "cairn.db"
    facts = setup(path)
    with cairn.open(path) as db:
        before = db.graph_search(hybrid_request())
        commit(db, 1, facts)
        after = db.graph_search(hybrid_request())
    assert check_graph_result(before) == 0
    assert check_graph_result(after) == 1
    mixed = GraphSearchResult(before.hits, after.expansion)
    with pytest.raises(AssertionError, match="generations"):
        check_graph_result(mixed)


@pytest.mark.parametrize("own_handle", [False, True], ids=["shared-handle", "own-handle"])
def test_a_writer_thread_never_mixes_positions_in_one_reply(
    tmp_path: Path, own_handle: bool
) -> None:
    """Two reader threads and a writer thread, on one ``Database`` (compacting) or on two."""
    path = tmp_path / "cairn.db"
    facts = setup(path)
    done = threading.Event()
    errors: list[BaseException] = []
    written = [0]

    def write() -> None:
        nonlocal facts
        try:
            with contextlib.ExitStack() as stack:
                target = stack.enter_context(cairn.open(path)) if own_handle else db
                g = 1
                while not done.is_set():
                    facts = commit(target, g, facts)
                    written[0] = g
                    if not own_handle and g % COMPACT_EVERY == 0:
                        db.compact()  # a column generation swap under the readers' feet
                    g += 1
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    seen: list[set[int]] = [set(), set()]

    def read(index: int) -> None:
        try:
            seen[index] = read_and_check(db, done.is_set)
        except BaseException as exc:  # surfaced below
            errors.append(exc)
            done.set()

    with cairn.open(path) as db:
        threads = [threading.Thread(target=write)]
        threads += [threading.Thread(target=read, args=(index,)) for index in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads[1:]:
            thread.join(timeout=60)
        done.set()
        threads[0].join(timeout=60)
        assert not any(thread.is_alive() for thread in threads)
    if errors:
        raise errors[0]
    assert written[0] >= MIN_GENERATIONS, "the writer did not get to commit"
    assert len(seen[0] | seen[1]) >= MIN_GENERATIONS, f"readers saw only {seen}"


def test_a_writer_process_never_mixes_positions_in_one_reply(tmp_path: Path) -> None:
    path = tmp_path / "cairn.db"
    facts = setup(path)
    argv = [sys.executable, str(Path(__file__).resolve()), str(path), "1", ",".join(facts)]
    with (
        cairn.open(path) as db,
        subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE) as writer,
    ):
        assert writer.stdin is not None and writer.stdout is not None
        try:
            assert writer.stdout.readline() == b"READY\n"
            seen = read_and_check(db, lambda: False)
        finally:
            writer.stdin.close()
            tail = writer.stdout.read()
            writer.wait(timeout=60)
        assert writer.returncode == 0
        committed = int(tail.split()[-1])
        assert committed >= MIN_GENERATIONS, "the writer process did not get to commit"
        assert len(seen) >= MIN_GENERATIONS, f"the reader saw only {sorted(seen)}"
        assert db.position == 2 + committed  # setup, generation 0, then the writer's


if __name__ == "__main__":
    write_until_stdin_closes(Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3].split(","))
