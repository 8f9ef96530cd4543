"""Loading a semantic graph: documents per family, text, vectors, facts; one atomic diff."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Sequence
from contextlib import closing
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from store_helpers import cmd, current_vectors, fact_records, occurrence_records, rows

from cairn.canonical import canonical_bytes
from cairn.embed import HashingEmbedder
from cairn.errors import BudgetExceededError, PermissionDeniedError, ValidationError
from cairn.graph import (
    EndpointIdentity,
    IdentityReason,
    OccurrenceInput,
    SemanticGraph,
    SourceRange,
    diff_graphs,
)
from cairn.index import Database as IndexedDatabase
from cairn.index import open as open_indexed
from cairn.index.graphs import out_edges
from cairn.store import Capability, ConfigurePrincipal, Database, EntityRef, Grant, VectorSpace
from cairn.store.load import SEARCH_FIELDS, embedding_text, load_semantic_graph, node_body

CALL = {"invocation": "call", "dispatch": "direct"}
IMPORT = {"specifier": "requests", "binding_kind": "module", "phase": "runtime", "form": "static"}
USERS = "file:app/users.py"
GET = "function:app/users.py#getUserName"
SERVICE = "class:app/users.py#UserService"
REQUESTS = "external:python:requests"
SECTION = "section:docs/guide.md#Install"


@pytest.fixture
def db(indexed: IndexedDatabase) -> IndexedDatabase:
    """The database with its columns: loads are checked through the text and vector
    branches, and write the column snapshot."""
    return indexed


def _site(line: int, path: str = "app/users.py") -> OccurrenceInput:
    return OccurrenceInput(
        adapter_id="python",
        strategy="ast",
        source_file=path,
        source_range=SourceRange(line, 1, line, 20),
        site_kind="site",
    )


def build(docstring: str = "Return the user's name.", extra: bool = False) -> SemanticGraph:
    graph = SemanticGraph()
    stable = EndpointIdentity.stable()
    graph.add_node(
        USERS,
        "file",
        identity=stable,
        attributes={"kind": "file", "name": "users.py", "path": "app/users.py", "language": "py"},
    )
    graph.add_node(
        GET,
        "function",
        identity=stable,
        attributes={
            "name": "getUserName",
            "qualified_name": "app.users.getUserName",
            "path": "app/users.py",
            "range": [3, 1, 5, 20],
            "language": "python",
            "signature": "def getUserName(user_id: int) -> str",
            "docstring": docstring,
            "snippet": "x" * 5000,
        },
    )
    graph.add_node(SERVICE, "class", identity=stable, attributes={"name": "UserService"})
    graph.add_node(REQUESTS, "external", identity=stable, attributes={"name": "requests"})
    graph.add_node(
        SECTION,
        "section",
        identity=EndpointIdentity.context_bound(IdentityReason.COLLISION_SUFFIX_DERIVED),
        attributes={"name": "Install", "text": "pip install the package"},
    )
    graph.add_node("topic:misc", "topic", identity=stable)
    graph.add_fact(USERS, GET, "contains", occurrence=_site(3))
    graph.add_fact(USERS, SERVICE, "contains", occurrence=_site(8))
    graph.add_fact(USERS, REQUESTS, "imports", IMPORT, occurrence=_site(1))
    graph.add_fact(SERVICE, GET, "calls", CALL, occurrence=_site(10))
    graph.add_fact(SERVICE, GET, "calls", CALL, occurrence=_site(12))
    graph.add_fact(SECTION, GET, "mentions", occurrence=_site(4, "docs/guide.md"))
    if extra:
        graph.add_node("function:app/users.py#saveUser", "function", identity=stable)
        graph.add_fact(USERS, "function:app/users.py#saveUser", "contains", occurrence=_site(20))
    return graph


def dump(path: Path) -> dict[str, list[tuple[object, ...]]]:
    """Every table's rows, for comparing whole files."""
    with closing(sqlite3.connect(path)) as conn:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {name: sorted(map(tuple, conn.execute(f"SELECT * FROM {name}"))) for name in names}


def state(path: Path) -> dict[str, object]:
    """What a load is responsible for, independent of revisions and positions."""
    return {
        "documents": rows(
            path, "SELECT collection, id, body FROM documents WHERE deleted = 0 ORDER BY 1, 2"
        ),
        "facts": fact_records(path),
        "occurrences": occurrence_records(path),
        "vectors": [(c, i, data) for c, i, _, _, _, _, data in current_vectors(path)],
    }


def test_nodes_become_documents_in_their_family(db: Database) -> None:
    graph = build()
    receipt = load_semantic_graph(db, graph)
    assert receipt.token.position == db.position == 1
    kinds = Counter(outcome.kind for outcome in receipt.mutations)
    assert kinds == {
        "configure_collection": 6,  # five families plus "nodes" for the unknown kind
        "configure_graph": 1,
        "put_document": 6,
        "put_vector": 6,
        "put_fact": 5,
    }
    body = db.get_document("symbols", GET).body
    assert body["kind"] == "function"
    assert body["identity"] == "stable"
    assert body["qualified_name"] == "app.users.getUserName"
    assert body["signature"] == "def getUserName(user_id: int) -> str"
    assert list(body["range"]) == [3, 1, 5, 20]
    assert len(body["snippet"]) == 2000
    assert body["name"] == "getUserName"
    # Names and the signature are text fields of their own; /text holds the other words.
    assert "getUserName" not in body["text"]
    assert "Return the user's name." in body["text"]
    assert db.get_document("files", USERS).body["path"] == "app/users.py"
    assert db.get_document("externals", REQUESTS).body["name"] == "requests"
    assert "pip install" in db.get_document("sections", SECTION).body["text"]
    assert db.get_document("nodes", "topic:misc").body == {
        "kind": "topic",
        "identity": "stable",
        "text": "",
    }
    assert [h.ref.id for h in db.text_search("symbols", SEARCH_FIELDS, "user name")] == [
        GET,
        SERVICE,
    ]
    assert [h.ref.id for h in db.text_search("symbols", "/name", "user name")] == [GET, SERVICE]


def test_vectors_come_from_the_embedder(db: Database) -> None:
    embedder = HashingEmbedder(64)
    load_semantic_graph(db, build(), embedder=embedder)
    query = embedder.embed(["get user name"])[0]
    hits = db.vector_search("symbols", "embedding", tuple(query.tolist()), embedder.space)
    assert hits[0].ref.id == GET
    text = embedding_text(node_body(build().node(GET)))
    assert text.startswith("getUserName\nget user name\napp.users.getUserName\n")
    expected = float(embedder.embed([text])[0].astype(np.float64) @ query.astype(np.float64))
    assert hits[0].score == pytest.approx(expected, abs=1e-6)


def test_fact_ids_records_and_identities_equal_the_graph(db: Database) -> None:
    graph = build()
    load_semantic_graph(db, graph)
    stored = {r[0]: r[5] for r in fact_records(db.path)}
    assert stored == {fact.id: canonical_bytes(fact.to_json()) for fact in graph.facts()}
    occurrences = occurrence_records(db.path)
    assert occurrences == [
        (item.id, item.fact_id, canonical_bytes(item.to_json())) for item in graph.occurrences()
    ]
    mention = graph.facts_by_relation("mentions")[0]
    record = json.loads(stored[mention.id])
    assert record["endpoint_identity"]["source"]["status"] == "context_bound"
    assert record["endpoint_identity"]["target"]["status"] == "stable"
    with db.read_cut() as cut:
        edges = out_edges(cut, "code", EntityRef("symbols", SERVICE))
    assert [(e.neighbour.id, e.relation) for e in edges] == [(GET, "calls")]


def test_loading_the_same_graph_twice_changes_nothing(db: Database) -> None:
    first = load_semantic_graph(db, build())
    before = dump(db.path)
    second = load_semantic_graph(db, build())
    assert second == first
    assert dump(db.path) == before
    assert db.position == 1


def test_an_edited_graph_applies_only_the_differences(db: Database, tmp_path: Path) -> None:
    old, new = build(), build(docstring="Changed.", extra=True)
    load_semantic_graph(db, old)
    receipt = load_semantic_graph(db, new)
    assert receipt.token.position == 2
    change = diff_graphs(old, new)  # the oracle for what changed
    assert [(m.kind, m.id) for m in receipt.mutations] == [
        ("put_document", GET),
        ("put_document", "function:app/users.py#saveUser"),
        ("put_vector", GET),
        ("put_vector", "function:app/users.py#saveUser"),
        *(("put_fact", fact_id) for fact_id in change.added_facts),
    ]
    assert change.changed_nodes == (GET,)
    assert not change.removed_facts
    with open_indexed(tmp_path / "fresh.db") as fresh:
        load_semantic_graph(fresh, new)
    assert state(db.path) == state(tmp_path / "fresh.db")


def test_removed_nodes_and_facts_are_deleted_and_a_reload_restores(
    db: Database, tmp_path: Path
) -> None:
    bigger, smaller = build(extra=True), build()
    load_semantic_graph(db, bigger)
    receipt = load_semantic_graph(db, smaller)
    change = diff_graphs(bigger, smaller)
    assert [(m.kind, m.id) for m in receipt.mutations] == [
        *(("delete_fact", fact_id) for fact_id in change.removed_facts),
        ("delete_document", "function:app/users.py#saveUser"),
    ]
    with open_indexed(tmp_path / "small.db") as fresh:
        load_semantic_graph(fresh, smaller)
    assert state(db.path) == state(tmp_path / "small.db")
    again = load_semantic_graph(db, bigger)  # same content as the first load, new state
    assert again.token.position == 3
    assert again.mutations
    with open_indexed(tmp_path / "big.db") as fresh:
        load_semantic_graph(fresh, bigger)
    assert state(db.path) == state(tmp_path / "big.db")


def build_moved() -> SemanticGraph:
    """``build()`` with the class node turned external: its document changes family."""
    moved = SemanticGraph()
    for node in build().nodes():
        kind = "external" if node.id == SERVICE else node.kind
        moved.add_node(node.id, kind, identity=node.identity, attributes=node.attributes)
    for fact in build().facts():
        for occurrence in build().occurrences_of(fact.id):
            moved.add_fact(
                fact.source,
                fact.target,
                fact.relation,
                dict(fact.discriminator.value),
                occurrence=OccurrenceInput(
                    occurrence.owner.adapter_id,
                    occurrence.owner.strategy,
                    source_file=occurrence.source_file,
                    source_range=occurrence.source_range,
                    site_kind=occurrence.site_kind,
                ),
            )
    return moved


def test_a_node_changing_family_moves_its_document_and_facts(db: Database) -> None:
    load_semantic_graph(db, build())
    load_semantic_graph(db, build_moved())
    assert db.get_document("externals", SERVICE).body["kind"] == "external"
    with db.read_cut() as cut:
        edges = out_edges(cut, "code", EntityRef("externals", SERVICE))
    assert [e.neighbour.id for e in edges] == [GET]


class _BrokenEmbedder:
    """Returns the wrong shape after the first batch: the load must roll back whole."""

    space = VectorSpace("broken", 4, "cosine", "broken", "1")  # type: ignore[arg-type]

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return np.zeros((len(texts), 3), dtype=np.float32)


def test_a_failing_load_writes_nothing(db: Database) -> None:
    with pytest.raises(ValidationError, match="shape"):
        load_semantic_graph(db, build(), embedder=_BrokenEmbedder())
    assert db.position == 0
    assert rows(db.path, "SELECT count(*) FROM documents") == [(0,)]
    assert rows(db.path, "SELECT count(*) FROM collections") == [(0,)]


def test_a_load_needs_admin(db: Database) -> None:
    writer = Grant("main", "*", frozenset({Capability.DOCUMENTS_WRITE, Capability.GRAPH_WRITE}))
    db.command(cmd(ConfigurePrincipal("writer", grants=(writer,))))
    with pytest.raises(PermissionDeniedError):
        load_semantic_graph(db, build(), principal="writer")
    assert db.position == 1


def test_bad_graphs_are_refused_before_any_write(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    graph = SemanticGraph()
    graph.add_node("x" * 300, "file")
    with pytest.raises(ValidationError, match="256"):
        load_semantic_graph(db, graph)
    monkeypatch.setattr("cairn.store.load.MAX_LOAD_NODES", 3)
    with pytest.raises(BudgetExceededError):
        load_semantic_graph(db, build())
    with pytest.raises(ValidationError):
        load_semantic_graph(db, "graph")  # type: ignore[arg-type]
    assert db.position == 0


def test_a_load_survives_reopening(db_path: Path) -> None:
    with open_indexed(db_path) as db:
        first = load_semantic_graph(db, build())
    with open_indexed(db_path) as db:
        assert load_semantic_graph(db, build()) == first
        assert [h.ref.id for h in db.text_search("symbols", SEARCH_FIELDS, "service")] == [SERVICE]


def _many_functions(count: int) -> SemanticGraph:
    graph = SemanticGraph()
    stable = EndpointIdentity.stable()
    graph.add_node(
        USERS, "file", identity=stable, attributes={"kind": "file", "path": "app/users.py"}
    )
    for number in range(count):
        node = f"function:app/users.py#f{number:04d}"
        doc = f"Function {number} " + "does something worth describing. " * (number % 40)
        graph.add_node(
            node, "function", identity=stable, attributes={"name": f"f{number}", "doc": doc}
        )
        graph.add_fact(USERS, node, "contains", occurrence=_site(number + 1))
    return graph


def test_the_first_load_leaves_a_packed_file_and_later_loads_do_not_rewrite_it(
    db_path: Path, tmp_path: Path
) -> None:
    with open_indexed(db_path) as db:
        load_semantic_graph(db, _many_functions(600))
        found = [h.ref.id for h in db.text_search("symbols", SEARCH_FIELDS, "f17")]
    packed = tmp_path / "packed.db"
    with closing(sqlite3.connect(db_path)) as conn:
        assert conn.execute("PRAGMA freelist_count").fetchone() == (0,)
        conn.execute(f"VACUUM INTO '{packed}'")
    assert db_path.stat().st_size == packed.stat().st_size  # nothing left to pack
    with open_indexed(db_path) as db:
        assert [h.ref.id for h in db.text_search("symbols", SEARCH_FIELDS, "f17")] == found
        assert found[0] == "function:app/users.py#f0017"
        vacuums: list[int] = []
        db.vacuum = lambda: vacuums.append(1)  # type: ignore[method-assign]
        load_semantic_graph(db, _many_functions(601))
        assert vacuums == []  # only a load into an empty file packs it


def test_a_load_reports_its_steps_in_order(db_path: Path) -> None:
    from cairn.store.load import LOAD_STEPS

    with open_indexed(db_path) as db:
        first: list[str] = []
        load_semantic_graph(db, build(), progress=first.append)
        again: list[str] = []
        load_semantic_graph(db, build(), progress=again.append)
    assert first == list(LOAD_STEPS)  # a first load does every step, packing included
    assert again == ["encoding", "diffing", "documents", "facts", "committing"]


def test_a_load_through_the_store_alone_writes_no_column_snapshot(db_path: Path) -> None:
    from cairn.store import open as open_store
    from cairn.store.load import LOAD_STEPS

    with open_store(db_path) as db:
        steps: list[str] = []
        load_semantic_graph(db, build(), progress=steps.append)
    assert steps == [step for step in LOAD_STEPS if step != "snapshot"]  # derives nothing
    with open_indexed(db_path) as db:
        assert db.stored_snapshot_position is None
        assert [h.ref.id for h in db.text_search("symbols", SEARCH_FIELDS, "service")] == [SERVICE]
        load_semantic_graph(db, build())  # the same graph again, through a handle that derives
        assert db.stored_snapshot_position == db.position  # the missing snapshot is written
