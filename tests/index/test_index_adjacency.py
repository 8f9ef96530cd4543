"""The in-memory graph adjacency: MVCC by positions, deletes, catch-up, compaction, fallback.

Every check compares ``out_edges`` / ``in_edges`` (served from the CSR columns) with the
same cut's SQLite snapshot (``_sql_edges``), the always-exact definition.
"""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest
from store_helpers import cmd, put, setup_docs

import cairn.index as index
from cairn.index import Database
from cairn.index.graphs import Edge, _sql_edges, in_edges, out_edges
from cairn.store import DeleteDocument, DeleteFact, EntityRef, PutFact
from cairn.store.reads import ReadCut

GRAPH = "code"
NAMES = [f"n{i}" for i in range(8)]
RELATIONS = ("calls", "imports", "inherits")


def ref(name: str) -> EntityRef:
    return EntityRef("docs", name)


def fact(db: Database, source: str, target: str, relation: str = "calls") -> str:
    receipt = db.command(cmd(PutFact(GRAPH, ref(source), ref(target), relation)))
    return receipt.mutations[0].id


def both(cut: ReadCut, name: str) -> tuple[tuple[Edge, ...], tuple[Edge, ...]]:
    """Out and in edges of ``name``, asserting each equals the SQLite answer."""
    found = (out_edges(cut, GRAPH, ref(name)), in_edges(cut, GRAPH, ref(name)))
    expected = (
        _sql_edges(cut, GRAPH, ref(name), outgoing=True),
        _sql_edges(cut, GRAPH, ref(name), outgoing=False),
    )
    assert found == expected
    return found


@pytest.fixture
def graph_db(db: Database) -> Database:
    setup_docs(db, graph=GRAPH)
    db.command(cmd(*(put("docs", name, name) for name in NAMES)))
    return db


def test_edges_are_ordered_and_equal_sqlite(graph_db: Database) -> None:
    ids = [fact(graph_db, "n0", target, "calls") for target in ("n3", "n1", "n2")]
    ids.append(fact(graph_db, "n0", "n1", "imports"))
    with graph_db.read_cut() as cut:
        out, incoming = both(cut, "n0")
        assert [(e.neighbour.id, e.relation) for e in out] == [
            ("n1", "calls"),
            ("n1", "imports"),
            ("n2", "calls"),
            ("n3", "calls"),
        ]
        assert {e.fact_id for e in out} == set(ids)
        assert incoming == ()
        assert [e.neighbour.id for e in both(cut, "n1")[1]] == ["n0", "n0"]
        assert cut.columns.graph(cut.conn, GRAPH).exact
        assert out_edges(cut, GRAPH, EntityRef("docs", "nobody")) == ()
        assert out_edges(cut, "other", ref("n0")) == ()


def test_old_cuts_keep_old_edges_while_new_ones_land(graph_db: Database) -> None:
    kept = fact(graph_db, "n0", "n1")
    gone = fact(graph_db, "n0", "n2")
    with graph_db.read_cut() as old:
        before = both(old, "n0")
        graph_db.command(cmd(DeleteFact(GRAPH, gone)))
        fact(graph_db, "n0", "n3")
        with graph_db.read_cut() as new:
            after = both(new, "n0")
        assert both(old, "n0") == before  # the old cut still sees its position
    assert [e.neighbour.id for e in before[0]] == ["n1", "n2"]
    assert [e.neighbour.id for e in after[0]] == ["n1", "n3"]
    assert kept in {e.fact_id for e in after[0]}


def test_deletes_and_re_puts(graph_db: Database) -> None:
    fid = fact(graph_db, "n4", "n5")
    graph_db.command(cmd(DeleteFact(GRAPH, fid)))
    with graph_db.read_cut() as cut:
        assert both(cut, "n4") == ((), ())
        assert both(cut, "n5") == ((), ())
    assert fact(graph_db, "n4", "n5") == fid  # the same fact comes back
    with graph_db.read_cut() as cut:
        assert [e.fact_id for e in both(cut, "n4")[0]] == [fid]
    fact(graph_db, "n4", "n5")  # re-putting a live fact changes no edge
    with graph_db.read_cut() as cut:
        assert [e.fact_id for e in both(cut, "n4")[0]] == [fid]


def test_a_cut_older_than_the_first_load_reads_its_snapshot(graph_db: Database) -> None:
    fact(graph_db, "n0", "n1")
    with graph_db.read_cut() as old:  # the graph is not loaded yet
        fact(graph_db, "n0", "n2")
        with graph_db.read_cut() as new:  # the first load happens here, at a later position
            assert [e.neighbour.id for e in both(new, "n0")[0]] == ["n1", "n2"]
        view = old.columns.graph(old.conn, GRAPH)
        assert not view.exact  # the arrays do not know this position: SQLite answers
        assert [e.neighbour.id for e in both(old, "n0")[0]] == ["n1"]


def test_several_changes_of_one_fact_in_one_window(graph_db: Database) -> None:
    with graph_db.read_cut() as cut:
        both(cut, "n0")  # load the graph now
    fid = fact(graph_db, "n0", "n1")
    graph_db.command(cmd(DeleteFact(GRAPH, fid)))
    with graph_db.read_cut() as middle:  # pinned between the delete and the re-put
        fact(graph_db, "n0", "n1")
        with graph_db.read_cut() as new:  # catches up the put, delete and put at once
            assert [e.fact_id for e in both(new, "n0")[0]] == [fid]
        assert both(middle, "n0") == ((), ())


def test_edges_written_by_another_process_are_seen(graph_db: Database, db_path: Path) -> None:
    fact(graph_db, "n0", "n1")
    with graph_db.read_cut() as cut:
        assert len(both(cut, "n0")[0]) == 1
    script = f"""
import uuid
import cairn.store as store
from cairn.store import CommandRequest, EntityRef, PutFact
with store.open({str(db_path)!r}) as db:
    db.command(CommandRequest(uuid.uuid4(), "main", (
        PutFact("code", EntityRef("docs", "n0"), EntityRef("docs", "n7"), "imports"),
    )))
"""
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)
    with graph_db.read_cut() as cut:
        assert [(e.neighbour.id, e.relation) for e in both(cut, "n0")[0]] == [
            ("n1", "calls"),
            ("n7", "imports"),
        ]


def test_compaction_keeps_the_edges(graph_db: Database) -> None:
    live = fact(graph_db, "n0", "n1")
    dead = fact(graph_db, "n0", "n2")
    graph_db.command(cmd(DeleteFact(GRAPH, dead)))
    with graph_db.read_cut() as cut:
        before = both(cut, "n0")
    graph_db.compact()
    with graph_db.read_cut() as cut:
        assert both(cut, "n0") == before
        assert [e.fact_id for e in before[0]] == [live]
    fact(graph_db, "n0", "n3")
    with graph_db.read_cut() as cut:
        assert [e.neighbour.id for e in both(cut, "n0")[0]] == ["n1", "n3"]


def test_random_histories_match_sqlite_at_every_cut(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("cairn.index.adjacency.ADJACENCY_REBUILD_MIN_TAIL", 4)  # CSR + tails
    rng = random.Random(11)
    with index.open(db_path) as db:
        setup_docs(db, graph=GRAPH)
        db.command(cmd(*(put("docs", name, name) for name in NAMES)))
        live: list[str] = []
        cuts = []
        for step in range(120):
            roll = rng.random()
            if live and roll < 0.3:
                db.command(cmd(DeleteFact(GRAPH, live.pop(rng.randrange(len(live))))))
            else:
                source, target = rng.sample(NAMES, 2)
                fid = fact(db, source, target, rng.choice(RELATIONS))
                if fid not in live:
                    live.append(fid)
            if step % 9 == 0:  # keep some cuts open across later writes (and CSR rebuilds)
                context = db.read_cut()
                cuts.append((context, context.__enter__()))
            if step % 4 == 0:
                with db.read_cut() as cut:
                    for name in NAMES:
                        both(cut, name)
        for context, cut in cuts:
            for name in NAMES:
                both(cut, name)
            context.__exit__(None, None, None)


def test_a_deleted_document_is_not_a_visible_vertex(graph_db: Database) -> None:
    fact(graph_db, "n0", "n1")
    graph_db.command(cmd(DeleteDocument("docs", "n1")))
    with graph_db.read_cut() as cut:
        # The fact stays (it is the graph's); the walk is what hides the vertex.
        assert [e.neighbour.id for e in both(cut, "n0")[0]] == ["n1"]
        node = cut.columns.nodes[("docs", "n1")]
        assert cut.columns.live_slots()[node] == 0
