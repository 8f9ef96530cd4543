"""The batched load path writes exactly what the row-at-a-time applier writes.

Every scenario runs twice on two copies of one empty file (so both share an
incarnation): once through ``load_semantic_graph`` (batched puts) and once through the
same load with every put applied row by row by ``Applier`` (the oracle). Every table of
the two files must hold the same rows, and every receipt must be equal.
"""

from __future__ import annotations

import random
import shutil
import sqlite3
from collections.abc import Callable, Sequence
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest
from store_helpers import cmd, put, setup_docs, vector_values
from test_store_load import SERVICE, build

import cairn.store as store
from cairn.embed import HashingEmbedder
from cairn.errors import CairnError, ValidationError
from cairn.graph import EndpointIdentity, OccurrenceInput, SemanticGraph, SourceRange
from cairn.index import open as open_indexed
from cairn.store import (
    OWNER,
    Capability,
    ConfigurePolicy,
    Database,
    DocumentAccess,
    EntityRef,
    FieldPolicy,
    Grant,
    Principal,
    PutDocument,
    PutVector,
)
from cairn.store.apply import Applier
from cairn.store.bulk import BulkApplier, BulkDocument, BulkFact, BulkVector
from cairn.store.commands import CommitReceipt, MutationOutcome
from cairn.store.load import _load
from cairn.store.records import split_fact

Step = Callable[[Database, bool], CommitReceipt]


def dump(path: Path) -> dict[str, list[tuple[object, ...]]]:
    """Every table's rows (vector blocks as the rows they hold)."""
    with closing(sqlite3.connect(path)) as conn:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        tables = {
            name: sorted(map(tuple, conn.execute(f"SELECT * FROM {name}")))
            for name in names
            if name != "vector_blocks"
        }
        tables["vector_values"] = vector_values(conn)
        return tables


def twin_files(tmp_path: Path) -> tuple[Path, Path]:
    """Two empty database files with the same incarnation."""
    first, second = tmp_path / "bulk.db", tmp_path / "rows.db"
    store.open(first).close()
    shutil.copyfile(first, second)
    return first, second


def run_both(tmp_path: Path, steps: Sequence[Step]) -> dict[str, list[tuple[object, ...]]]:
    """Run ``steps`` on both files (bulk, rows); assert equal receipts and tables."""
    paths = twin_files(tmp_path)
    receipts: list[list[CommitReceipt]] = []
    for path, bulk in zip(paths, (True, False), strict=True):
        with store.open(path) as db:
            receipts.append([step(db, bulk) for step in steps])
    assert receipts[0] == receipts[1]
    tables = dump(paths[0])
    assert tables == dump(paths[1])
    return tables


def load(graph: SemanticGraph, embedder: HashingEmbedder | None = None) -> Step:
    def step(db: Database, bulk: bool) -> CommitReceipt:
        return _load(db, graph, "code", embedder or HashingEmbedder(32), None, None, bulk=bulk)

    return step


def command(*mutations: object) -> Step:
    request = cmd(*mutations)  # type: ignore[arg-type]

    def step(db: Database, bulk: bool) -> CommitReceipt:
        return db.command(request)

    return step


def synthetic(nodes: int, seed: int, drop: float = 0.0) -> SemanticGraph:
    """A seeded graph of files and functions with calls, shared words and occurrences."""
    rng = random.Random(seed)
    words = [f"word{i}" for i in range(60)] + ["getUserName", "parse_args", "HTTPServer"]
    graph = SemanticGraph()
    ids: list[str] = []
    for index in range(nodes):
        kind = "file" if index % 7 == 0 else rng.choice(["function", "class", "method", "route"])
        node_id = f"{kind}:pkg/m{index % 13}.py#n{index}"
        if rng.random() < drop:
            continue
        text = " ".join(rng.choice(words) for _ in range(rng.randint(0, 12)))
        attributes = {"name": f"n{index}", "docstring": text, "path": f"pkg/m{index % 13}.py"}
        graph.add_node(node_id, kind, identity=EndpointIdentity.stable(), attributes=attributes)
        ids.append(node_id)
    for index in range(nodes * 2):
        source, target = rng.choice(ids), rng.choice(ids)
        line = rng.randint(1, 50)
        site = OccurrenceInput(
            adapter_id="python",
            strategy="ast",
            source_file="pkg/m.py",
            source_range=SourceRange(line, 1, line, 9),
            site_kind="site",
        )
        relation = "calls" if index % 3 else "contains"
        discriminator = {"invocation": "call", "dispatch": "direct"} if relation == "calls" else {}
        graph.add_fact(source, target, relation, discriminator, occurrence=site)
    return graph


def test_a_fresh_load_writes_the_same_rows(tmp_path: Path) -> None:
    tables = run_both(tmp_path, [load(build(extra=True))])
    assert len(tables["documents"]) == 7 and len(tables["vector_rows"]) == 7
    assert len(tables["vector_values"]) == 7
    assert len(tables["changes"]) > 20


def test_a_large_load_with_existing_terms_writes_the_same_rows(tmp_path: Path) -> None:
    steps = [
        command(
            store.ConfigureCollection("notes", ("/text",)),
            put("notes", "a", "word3 word7 getusername fresh"),
        ),
        load(synthetic(400, seed=1)),
    ]
    tables = run_both(tmp_path, steps)
    assert len(tables["terms"]) > 60
    assert len(tables["facts"]) > 500 and len(tables["occurrences"]) > 500


def test_reloads_edits_deletes_and_comebacks_write_the_same_rows(tmp_path: Path) -> None:
    steps = [
        load(synthetic(300, seed=2)),
        load(synthetic(300, seed=2)),  # unchanged: nothing written, stored receipt back
        load(synthetic(300, seed=3)),  # every body and fact differs
        load(synthetic(300, seed=3, drop=0.3)),  # deletes
        load(synthetic(300, seed=2)),  # comebacks continue after tombstone revisions
        load(synthetic(300, seed=2), HashingEmbedder(16)),  # new space: vectors replaced
    ]
    tables = run_both(tmp_path, steps)
    assert any(row[4] is not None for row in tables["vector_rows"])  # some vector rows died
    assert any(row[7] is not None for row in tables["slots"])  # some slots died


def test_loads_put_in_many_small_batches_write_the_same_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A load puts documents and facts ``LOAD_BATCH_SIZE`` at a time; any size gives the
    rows of one mutation after another (documents and facts cross batch boundaries)."""
    import cairn.store.load as load_module

    monkeypatch.setattr(load_module, "LOAD_BATCH_SIZE", 7)
    steps = [
        load(synthetic(120, seed=5)),
        load(synthetic(120, seed=6, drop=0.2)),  # edits and deletes across batches
        load(synthetic(120, seed=5)),
    ]
    tables = run_both(tmp_path, steps)
    assert len(tables["documents"]) > 7 * 10 and len(tables["facts"]) > 7 * 20


def test_a_node_changing_family_writes_the_same_rows(tmp_path: Path) -> None:
    moved = SemanticGraph()
    for node in build().nodes():
        kind = "external" if node.id == SERVICE else node.kind
        moved.add_node(node.id, kind, identity=node.identity, attributes=node.attributes)
    run_both(tmp_path, [load(build()), load(moved), load(build())])


def test_the_bulk_load_answers_reads_like_the_row_load(tmp_path: Path) -> None:
    graph = synthetic(200, seed=4)
    paths = twin_files(tmp_path)
    answers = []
    for path, bulk in zip(paths, (True, False), strict=True):
        with open_indexed(path) as db:
            _load(db, graph, "code", HashingEmbedder(32), None, None, bulk=bulk)
            query = HashingEmbedder(32).embed(["word3 getUserName"])[0]
            answers.append(
                (
                    db.text_search("symbols", "/text", "word3 user name", limit=20),
                    db.vector_search(
                        "symbols", "embedding", tuple(query), HashingEmbedder(32).space, limit=20
                    ),
                )
            )
    assert answers[0] == answers[1]
    assert answers[0][0] and answers[0][1]


# ------------------------------------------------------------ the applier itself
READER = Principal(
    "restricted",
    grants=(Grant("main", "*", frozenset({Capability.DOCUMENTS_WRITE, Capability.GRAPH_WRITE})),),
    owner_id="bob",
    restrict_rows=True,
)


WRITER = Principal("writer", grants=READER.grants)


def _outcome(
    db: Database, principal: Principal, apply: Callable[[Applier], list[MutationOutcome]]
) -> tuple[object, ...] | str:
    """A plan's outcomes and every table after it, or the error it raises (nothing is kept)."""

    def plan(conn: sqlite3.Connection, actor: Principal, position: int) -> tuple[object, ...]:
        result = tuple(apply(BulkApplier(conn, db.name, principal, position)))
        tables = [
            sorted(map(tuple, conn.execute(f"SELECT * FROM {name}")))
            for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            if name != "vector_blocks"
        ]
        tables.append(vector_values(conn))
        raise _Rollback((*result, tables))  # the rows written, then nothing kept

    try:
        db.apply_internal(plan)  # type: ignore[arg-type]
    except _Rollback as done:
        return done.result
    except CairnError as exc:
        return f"{type(exc).__name__}: {exc} {exc.details}"
    raise AssertionError("unreachable")


class _Rollback(Exception):
    def __init__(self, result: tuple[object, ...]) -> None:
        super().__init__("rollback")
        self.result = result


@pytest.fixture
def guarded(db: Database) -> Database:
    setup_docs(db, graph="code")
    db.command(
        cmd(
            PutDocument("docs", "alice", {"text": "a"}, access=DocumentAccess(owner="alice")),
            PutDocument("docs", "bob", {"text": "b", "secret": 1}, access=DocumentAccess("bob")),
            PutDocument("docs", "bob2", {"text": "b2"}, access=DocumentAccess("bob")),
            put("docs", "open", "o"),
        )
    )
    return db


def _docs(applier: BulkApplier, *ids: str, **body: object) -> list[MutationOutcome]:
    return applier.put_documents(
        [BulkDocument("docs", i, {"text": i, **body}, _bytes({"text": i, **body})) for i in ids]
    )


def _bytes(body: dict[str, object]) -> bytes:
    from cairn.canonical import canonical_bytes

    return canonical_bytes(body)


SCENARIOS = {
    "hidden document": (READER, ("alice", "bob"), "NotFoundError"),
    "a row it could not see": (READER, ("bob", "alice"), "PermissionDeniedError"),
    "visible documents": (OWNER, ("open", "bob", "new"), "("),
    "unknown collection": (OWNER, ("open",), "NotFoundError"),
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_document_batches_fail_and_succeed_like_rows(guarded: Database, name: str) -> None:
    principal, ids, expected = SCENARIOS[name]
    collection = "nowhere" if name == "unknown collection" else "docs"

    def bulk(applier: Applier) -> list[MutationOutcome]:
        assert isinstance(applier, BulkApplier)
        return applier.put_documents(
            [BulkDocument(collection, i, {"text": i}, _bytes({"text": i})) for i in ids]
        )

    def rows(applier: Applier) -> list[MutationOutcome]:
        return [applier.apply(PutDocument(collection, i, {"text": i})) for i in ids]

    found = _outcome(guarded, principal, bulk)
    assert found == _outcome(guarded, principal, rows)
    assert str(found).startswith(expected)


def test_guarded_fields_are_checked_like_rows(guarded: Database) -> None:
    guarded.command(cmd(ConfigurePolicy("docs", (FieldPolicy("/secret", write_grant="s"),))))
    cases = (({"text": "b", "secret": 1}, "("), ({"text": "b", "secret": 2}, "PermissionDenied"))
    for body, expected in cases:

        def bulk(applier: Applier, body: dict[str, object] = body) -> list[MutationOutcome]:
            assert isinstance(applier, BulkApplier)
            return applier.put_documents([BulkDocument("docs", "bob", body, _bytes(body))])

        def rows(applier: Applier, body: dict[str, object] = body) -> list[MutationOutcome]:
            return [applier.apply(PutDocument("docs", "bob", body))]

        found = _outcome(guarded, WRITER, bulk)
        assert found == _outcome(guarded, WRITER, rows)
        assert str(found).startswith(expected)


VECTORS = {
    "hidden": ("alice", (1.0, 0.0), "NotFoundError"),
    "missing": ("ghost", (1.0, 0.0), "NotFoundError"),
    "wrong dimension": ("bob2", (1.0, 0.0, 0.0), "ValidationError"),
    "overflow": ("bob2", (1.0, np.inf), "ValidationError"),
    "ok": ("bob2", (0.5, 0.5), "("),
}


@pytest.mark.parametrize("name", sorted(VECTORS))
def test_vector_batches_fail_and_succeed_like_rows(guarded: Database, name: str) -> None:
    doc_id, values, expected = VECTORS[name]
    data = np.asarray(values, dtype=np.float32)
    guarded.command(cmd(PutVector("docs", "bob", "embedding", (1.0, 1.0))))  # replaced below

    def bulk(applier: Applier) -> list[MutationOutcome]:
        assert isinstance(applier, BulkApplier)
        items = [BulkVector("docs", "bob", "embedding", np.ones(2, np.float32))]
        return applier.put_vectors([*items, BulkVector("docs", doc_id, "embedding", data)])

    def rows(applier: Applier) -> list[MutationOutcome]:
        first = applier.put_vector_data("docs", "bob", "embedding", np.ones(2, np.float32))
        return [first, applier.put_vector_data("docs", doc_id, "embedding", data)]

    found = _outcome(guarded, READER, bulk)
    assert found == _outcome(guarded, READER, rows)
    assert str(found).startswith(expected)


def test_fact_batches_fail_like_rows(guarded: Database) -> None:
    graph = SemanticGraph()
    for node in ("open", "bob", "alice"):
        graph.add_node(node, "document")
    for source, target in (("open", "bob"), ("bob", "alice")):
        graph.add_fact(source, target, "calls", {"invocation": "call", "dispatch": "direct"})
    items = [
        BulkFact(
            fact,
            (EntityRef("docs", fact.source), EntityRef("docs", fact.target)),
            split_fact(fact.to_json(), fact.id, fact.relation, (fact.source, fact.target), ()),
        )
        for fact in graph.facts()
    ]

    def bulk(applier: Applier) -> list[MutationOutcome]:
        assert isinstance(applier, BulkApplier)
        return applier.put_graph_facts("code", items)

    def rows(applier: Applier) -> list[MutationOutcome]:
        return [applier.put_graph_fact("code", i.fact, i.endpoints, i.stored) for i in items]

    found = _outcome(guarded, READER, bulk)
    assert found == _outcome(guarded, READER, rows)
    assert isinstance(found, str) and found.startswith("MissingEndpointError")
    assert _outcome(guarded, OWNER, bulk) == _outcome(guarded, OWNER, rows)


def test_a_batch_naming_an_item_twice_is_refused(guarded: Database) -> None:
    def bulk(applier: Applier) -> list[MutationOutcome]:
        assert isinstance(applier, BulkApplier)
        return _docs(applier, "open", "open")

    assert str(_outcome(guarded, OWNER, bulk)).startswith(ValidationError.__name__)
