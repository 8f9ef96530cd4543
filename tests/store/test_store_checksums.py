"""Stored documents carry checksums verified on every read (issue 18, item 1).

The reproducer: one flipped byte inside a stored body (``[6,1,8,32]`` -> ``[6,1,9,32]``)
passed ``PRAGMA integrity_check`` and was served by search with exit 0. Now every read
of a damaged row is a ``CorruptionError`` naming the table and key, and a load rewrites
it and says so.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
import zlib
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from store_helpers import cmd, put, rows, setup_docs
from typer.testing import CliRunner

import cairn
from cairn.errors import CorruptionError
from cairn.graph import EndpointIdentity, OccurrenceInput, SemanticGraph, SourceRange
from cairn.search.contracts import SearchRequest
from cairn.store import Database, DeleteDocument, DocumentAccess, PutDocument
from cairn.store.load import load_semantic_graph, repair_collector

RECEIPT_ID = uuid.UUID(int=(1 << 100) + 7)
"""The command whose stored receipt a test damages: far above the IDs ``new_id`` hands out,
so the test does not depend on how many commands ran before it."""


def _flip(path: Path, collection: str, doc_id: str, old: bytes, new: bytes) -> None:
    """Change stored body bytes behind the store's back (what a bad disk does)."""
    with closing(sqlite3.connect(path)) as conn:
        (body,) = conn.execute(
            "SELECT body FROM documents WHERE collection = ? AND id = ?", (collection, doc_id)
        ).fetchone()
        assert old in bytes(body)
        damaged = bytes(body).replace(old, new, 1)
        conn.execute(
            "UPDATE documents SET body = ? WHERE collection = ? AND id = ?",
            (damaged, collection, doc_id),
        )
        conn.commit()
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def _oracle(collection: str, doc_id: str, revision: int, owner: object, body: bytes) -> int:
    """The checksum written down independently of the code: CRC-32 of the body seeded
    with the CRC-32 of the JSON header of the row's key and policy columns."""
    header = json.dumps([collection, doc_id, revision, owner, None, False, False])
    return zlib.crc32(body, zlib.crc32(header.replace(" ", "").encode()))


def test_every_written_row_carries_its_checksum(db: Database) -> None:
    setup_docs(db)
    db.command(cmd(put("docs", "a", "alpha"), PutDocument("docs", "b", {"text": "beta"})))
    db.command(cmd(PutDocument("docs", "c", {"text": "x"}, access=DocumentAccess("ann"))))
    db.command(cmd(DeleteDocument("docs", "b")))
    stored = rows(db.path, "SELECT id, revision, owner, body, checksum FROM documents")
    for doc_id, revision, owner, body, checksum in stored:
        if body is None:
            header = json.dumps(["docs", doc_id, revision, owner, None, True, True])
            expected = zlib.crc32(b"", zlib.crc32(header.replace(" ", "").encode()))
        else:
            expected = _oracle("docs", doc_id, revision, owner, bytes(body))
        assert checksum == expected, doc_id


def test_a_flipped_body_byte_is_named_on_every_read(tmp_path: Path) -> None:
    path = tmp_path / "cairn.db"
    with cairn.open(path) as db:
        setup_docs(db)
        body = {"text": "needle in the range", "range": [6, 1, 8, 32]}
        db.command(cmd(PutDocument("docs", "a", body), put("docs", "b", "needle too")))
    _flip(path, "docs", "a", b"[6,1,8,32]", b"[6,1,9,32]")
    with cairn.open(path) as db:
        with pytest.raises(CorruptionError) as caught:
            db.get_document("docs", "a")
        assert caught.value.details == {"table": "documents", "collection": "docs", "id": "a"}
        request = SearchRequest("main", "docs", text_field="/text", text="needle")
        with pytest.raises(CorruptionError, match="document docs/a is damaged"):
            db.search(request)  # never served as an answer
        assert db.get_document("docs", "b").body == {"text": "needle too"}  # others are fine


def _graph() -> SemanticGraph:
    graph = SemanticGraph()
    stable = EndpointIdentity.stable()
    graph.add_node("file:a.py", "file", identity=stable, attributes={"path": "a.py"})
    graph.add_node("function:a.py#f", "function", identity=stable, attributes={"name": "f"})
    site = OccurrenceInput(
        adapter_id="python",
        strategy="ast",
        source_file="a.py",
        source_range=SourceRange(3, 1, 3, 20),
        site_kind="site",
    )
    graph.add_fact("file:a.py", "function:a.py#f", "contains", occurrence=site)
    return graph


def test_a_load_rewrites_a_damaged_document_and_says_so(db: Database) -> None:
    load_semantic_graph(db, _graph(), checkpoint=False, pack=False)
    (collection, doc_id) = rows(
        db.path, "SELECT collection, id FROM documents WHERE id = 'function:a.py#f'"
    )[0]
    _flip(db.path, collection, doc_id, b'"f"', b'"g"')
    repaired: list[dict[str, str]] = []
    receipt = load_semantic_graph(
        db, _graph(), checkpoint=False, pack=False, on_repair=repair_collector(repaired)
    )
    assert repaired == [{"table": "documents", "resource": collection, "id": doc_id}]
    assert [(m.kind, m.id) for m in receipt.mutations if m.kind == "put_document"] == [
        ("put_document", doc_id)
    ]
    assert db.get_document(collection, doc_id).body["name"] == "f"
    again: list[dict[str, str]] = []
    position = db.position
    load_semantic_graph(
        db, _graph(), checkpoint=False, pack=False, on_repair=repair_collector(again)
    )
    assert again == [] and db.position == position  # repaired for good: nothing to do


def test_cairn_load_names_what_it_repaired(tmp_path: Path) -> None:
    from cairn.artifact import write_artifact
    from cairn.cli import app

    artifact, path = tmp_path / "graph.cairn", tmp_path / "cairn.db"
    write_artifact(artifact, _graph(), generated_at="2024-01-01T00:00:00Z")
    runner = CliRunner()
    first = runner.invoke(app, ["load", str(artifact), "--db", str(path), "--json"])
    assert first.exit_code == 0, first.output
    collection = rows(path, "SELECT collection FROM documents WHERE id = 'function:a.py#f'")
    _flip(path, collection[0][0], "function:a.py#f", b'"f"', b'"g"')
    second = runner.invoke(app, ["load", str(artifact), "--db", str(path), "--json"])
    assert second.exit_code == 0, second.output
    summary = json.loads(second.stdout)
    assert summary["repaired"] == [
        {"table": "documents", "resource": collection[0][0], "id": "function:a.py#f"}
    ]
    assert summary["changes"] >= 1


def _flip_fact(path: Path, sql: str, *parameters: object) -> None:
    """Change a fact or occurrence row behind the store's back."""
    with closing(sqlite3.connect(path)) as conn:
        assert conn.execute(sql, parameters).rowcount == 1
        conn.commit()
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def _fact_db(path: Path) -> None:
    from cairn.store import ConfigureGraph, EntityRef, PutFact

    with cairn.open(path) as db:
        setup_docs(db)
        db.command(cmd(put("docs", "a", "alpha"), put("docs", "b", "beta"), put("docs", "c", "x")))
        db.command(cmd(ConfigureGraph("code")))
        db.command(cmd(PutFact("code", EntityRef("docs", "a"), EntityRef("docs", "b"), "calls")))


def test_a_redirected_fact_endpoint_is_named_not_walked(tmp_path: Path) -> None:
    from cairn.search.traverse import TraverseRequest, traverse
    from cairn.store import EntityRef

    path = tmp_path / "cairn.db"
    _fact_db(path)
    # The edge a -> b now claims a -> c: a valid page, a wrong answer if it were served.
    _flip_fact(path, "UPDATE facts SET target_id = 'c' WHERE graph = 'code'")
    with cairn.open(path) as db:
        request = TraverseRequest("main", "code", (EntityRef("docs", "a"),))
        with pytest.raises(CorruptionError) as caught:
            traverse(db, request)
        assert caught.value.details["table"] == "facts"
        assert caught.value.details["graph"] == "code"


def test_a_load_rewrites_damaged_facts_and_occurrences(db: Database) -> None:
    load_semantic_graph(db, _graph(), checkpoint=False, pack=False)
    (fact_id,) = rows(db.path, "SELECT id FROM facts")[0]
    _flip_fact(db.path, "UPDATE facts SET revision = revision + 7")
    repaired: list[dict[str, str]] = []
    load_semantic_graph(
        db, _graph(), checkpoint=False, pack=False, on_repair=repair_collector(repaired)
    )
    assert repaired == [{"table": "facts", "resource": "code", "id": fact_id}]
    (occurrence_id,) = rows(db.path, "SELECT id FROM occurrences")[0]
    _flip_fact(db.path, "UPDATE occurrences SET parts = CAST(replace(parts, '3', '4') AS BLOB)")
    repaired.clear()
    load_semantic_graph(
        db, _graph(), checkpoint=False, pack=False, on_repair=repair_collector(repaired)
    )
    expected = {"table": "occurrences", "resource": "code", "id": f"{fact_id}/{occurrence_id}"}
    assert repaired == [expected]
    again: list[dict[str, str]] = []
    position = db.position
    load_semantic_graph(
        db, _graph(), checkpoint=False, pack=False, on_repair=repair_collector(again)
    )
    assert again == [] and db.position == position


def test_a_blob_turned_to_text_is_damage_not_a_type_error(tmp_path: Path) -> None:
    path = tmp_path / "cairn.db"
    with cairn.open(path) as db:
        setup_docs(db)
        db.command(cmd(put("docs", "a", "alpha")))
    with closing(sqlite3.connect(path)) as conn:  # same bytes, now with a TEXT type
        conn.execute("UPDATE documents SET body = CAST(body AS TEXT), checksum = checksum + 1")
        conn.commit()
    with cairn.open(path) as db, pytest.raises(CorruptionError, match="docs/a is damaged"):
        db.get_document("docs", "a")


def test_fact_checksums_cover_what_a_walk_serves() -> None:
    from cairn.store.checksums import fact_checksum, occurrence_checksum

    ends = ("docs", "a", "docs", "b")
    base = fact_checksum("code", "sf_1", ends, "calls", 3, None, 1, False)
    changed = [
        fact_checksum("other", "sf_1", ends, "calls", 3, None, 1, False),
        fact_checksum("code", "sf_2", ends, "calls", 3, None, 1, False),
        fact_checksum("code", "sf_1", ("docs", "a", "docs", "c"), "calls", 3, None, 1, False),
        fact_checksum("code", "sf_1", ends, "imports", 3, None, 1, False),
        fact_checksum("code", "sf_1", ends, "calls", 4, None, 1, False),
        fact_checksum("code", "sf_1", ends, "calls", 3, b"{}", 1, False),
        fact_checksum("code", "sf_1", ends, "calls", 3, None, 2, False),
        fact_checksum("code", "sf_1", ends, "calls", 3, None, 1, True),
    ]
    assert base not in changed and len(set(changed)) == len(changed)
    occurrence = occurrence_checksum("code", "sf_1", "oc_1", 1, b"[1]")
    assert occurrence != occurrence_checksum("code", "sf_1", "oc_1", 1, b"[2]")
    assert occurrence != occurrence_checksum("code", "sf_1", "oc_2", 1, b"[1]")


def _check(path: Path) -> tuple[int, dict[str, Any]]:
    from cairn.cli import app

    result = CliRunner().invoke(app, ["check", "--db", str(path), "--json"])
    return result.exit_code, json.loads(result.stdout) if result.stdout.strip() else {}


def test_cairn_check_names_every_damaged_record(tmp_path: Path) -> None:
    from cairn.store import PutVector, VectorField, VectorSpace
    from cairn.store.commands import ConfigureCollection, Metric

    path = tmp_path / "cairn.db"
    _fact_db(path)
    space = VectorSpace("toy", 2, Metric.COSINE, "toy", "1")
    with cairn.open(path) as db:
        vectors = ConfigureCollection("vecs", ("/text",), (VectorField("v", space),))
        db.command(cmd(vectors, PutDocument("vecs", "x", {"text": "x"})))
        db.command(cmd(PutVector("vecs", "x", "v", (1.0, 0.5))))
    code, report = _check(path)
    assert code == 0 and report["ok"] is True
    assert report["integrity_check"] == ["ok"]
    assert {name: t["rows"] for name, t in report["tables"].items()} == {
        "documents": 4,
        "slots": 4,
        "facts": 1,
        "occurrences": 0,
        "vector_blocks": 1,
        "collections": 2,
        "graphs": 1,
        "principals": 0,
        "policies": 0,
        "api_keys": 0,
        "commands": 6,
        "fact_shapes": 1,
        "occurrence_shapes": 0,
        "doc_terms": 4,
    }
    _flip(path, "docs", "b", b"beta", b"beto")
    _flip_fact(path, "UPDATE facts SET relation = 'imports'")
    _flip_fact(path, "UPDATE vector_blocks SET checksum = checksum + 1")
    code, report = _check(path)
    assert code == 1 and report["ok"] is False
    damaged = {name: (t["damaged"], t["examples"]) for name, t in report["tables"].items()}
    fact_id = rows(path, "SELECT id FROM facts")[0][0]
    assert damaged == {
        "documents": (1, ["docs/b"]),
        "slots": (0, []),
        "facts": (1, [f"code/{fact_id}"]),
        "occurrences": (0, []),
        "vector_blocks": (1, ["block 1"]),
        **{table: (0, []) for table in ("collections", "graphs", "principals", "policies")},
        "api_keys": (0, []),
        "commands": (0, []),
        "fact_shapes": (0, []),
        "occurrence_shapes": (0, []),
        "doc_terms": (0, []),
    }


def test_cairn_check_refuses_what_it_cannot_check(tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    with closing(sqlite3.connect(junk)) as conn:
        conn.execute("CREATE TABLE t (x)")
        conn.commit()
    code, _ = _check(junk)
    assert code != 0
    from cairn.cli import app

    result = CliRunner().invoke(app, ["check", "--db", str(junk)])
    assert "not a Cairn database" in result.output


@pytest.mark.parametrize(
    "damage",
    [
        "UPDATE doc_terms SET term_ids = X'FFFFFF7F'",  # a term ID past the stored terms
        "UPDATE doc_terms SET term_ids = X'010000'",  # a ragged blob
        "UPDATE doc_terms SET counts = X'00000000'",  # a zero count
        "UPDATE doc_terms SET counts = X'02000000'",  # a count in range: a wrong score
        "UPDATE doc_terms SET length = length + 1",  # a document length: a wrong score
    ],
)
def test_damaged_postings_are_named_and_never_size_an_allocation(
    tmp_path: Path, damage: str
) -> None:
    path = tmp_path / "cairn.db"
    with cairn.open(path) as db:
        setup_docs(db)
        db.command(cmd(put("docs", "a", "alpha")))
    _flip_fact(path, damage)  # one row: the only document's postings
    request = SearchRequest("main", "docs", text_field="/text", text="alpha")
    with cairn.open(path) as db, pytest.raises(CorruptionError) as caught:
        db.search(request)
    assert caught.value.details == {"table": "doc_terms", "collection": "docs", "field": "/text"}


def test_cairn_check_holds_slots_to_their_documents(tmp_path: Path) -> None:
    from cairn.store import ConfigureCollection

    path = tmp_path / "cairn.db"
    with cairn.open(path) as db:  # history: overwrites, deletes, a re-index, a compaction
        setup_docs(db)
        db.command(cmd(*(put("docs", f"d{i}", f"t {i}") for i in range(6))))
        db.command(cmd(put("docs", "d1", "again"), DeleteDocument("docs", "d2")))
        db.command(cmd(ConfigureCollection("docs", ("/text", "/title"))))
        db.compact()
    code, report = _check(path)
    assert code == 0, report
    (slot,) = rows(path, "SELECT slot FROM documents WHERE id = 'd3'")[0]
    _flip_fact(path, "UPDATE slots SET id = 'd9' WHERE slot = ?", slot)  # search would serve d9
    code, report = _check(path)
    assert code == 1
    assert report["tables"]["slots"]["damaged"] == 1
    assert report["tables"]["slots"]["examples"] == [f"slot {slot}"]
    assert report["tables"]["documents"]["damaged"] == 0
    _flip_fact(path, "UPDATE slots SET id = 'd3', death = 1 WHERE slot = ?", slot)
    code, report = _check(path)  # now d3 has no live slot at all
    assert code == 1
    assert report["tables"]["slots"]["examples"] == [f"docs/d3 (slot {slot} missing or ended)"]


@pytest.mark.parametrize(
    ("table", "assignment", "key"),
    [
        ("documents", "deleted = 1", "id = 'function:a.py#f'"),
        ("documents", "collection = 'files2'", "id = 'file:a.py'"),
        ("facts", "deleted = 1", "relation = 'contains'"),
        ("facts", "graph = 'codf'", "relation = 'contains'"),
    ],
)
def test_stats_count_only_verified_rows(
    db: Database, table: str, assignment: str, key: str
) -> None:
    from cairn.store.stats import database_stats

    load_semantic_graph(db, _graph(), checkpoint=False, pack=False)
    intact = database_stats(db).to_json()
    assert {c["name"]: c["documents"] for c in intact["collections"]}["symbols"] == 1
    assert intact["graphs"] == [{"name": "code", "facts": 1}]
    with closing(sqlite3.connect(db.path)) as conn:
        # A damaged column, exactly as the bytes would read after a flip on disk.
        assert conn.execute(f"UPDATE {table} SET {assignment} WHERE {key}").rowcount == 1
        conn.commit()
    with pytest.raises(CorruptionError, match="is damaged") as caught:
        database_stats(db)  # never a smaller count
    assert caught.value.details["table"] == table


def test_a_damaged_document_key_is_damage_not_absence(db: Database) -> None:
    load_semantic_graph(db, _graph(), checkpoint=False, pack=False)
    with closing(sqlite3.connect(db.path)) as conn:
        conn.execute("UPDATE documents SET id = 'function:a.py#g' WHERE id = 'function:a.py#f'")
        conn.commit()
    with pytest.raises(CorruptionError, match="live slot") as caught:
        db.get_document("symbols", "function:a.py#f")  # was: not found
    assert caught.value.details == {
        "table": "documents",
        "collection": "symbols",
        "id": "function:a.py#f",
    }
    with pytest.raises(cairn.NotFoundError):
        db.get_document("symbols", "function:a.py#h")  # truly absent stays not found


@pytest.mark.parametrize(
    "damage",
    [
        "UPDATE slots SET id = 'b2' WHERE id = 'b' AND death IS NULL",  # a key flipped
        "UPDATE slots SET death = 2 WHERE id = 'b' AND death IS NULL",  # a live slot ended
        "UPDATE slots SET death = NULL WHERE id = 'c'",  # a deleted one revived
        "UPDATE documents SET slot = 99 WHERE id = 'b'",  # a document's slot redirected
        "UPDATE slots SET owner = 'mallory' WHERE id = 'b' AND death IS NULL",  # row policy
    ],
)
def test_damaged_slots_are_named_at_open_not_served(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "cairn.db"
    with cairn.open(path) as db:
        setup_docs(db)
        db.command(cmd(put("docs", "a", "needle one"), put("docs", "b", "needle two")))
        db.command(cmd(put("docs", "c", "needle three")))
        db.command(cmd(DeleteDocument("docs", "c")))
    request = SearchRequest("main", "docs", text_field="/text", text="needle")
    with cairn.open(path) as db:
        assert sorted(hit.document.ref.id for hit in db.search(request)) == ["a", "b"]
    with closing(sqlite3.connect(path)) as conn:
        assert conn.execute(damage).rowcount == 1
        conn.commit()
    with cairn.open(path) as db, pytest.raises(CorruptionError, match="is damaged"):
        db.search(request)  # never a hit on a missing document, never one silently lost


def test_cairn_check_against_the_artifact_names_every_difference(tmp_path: Path) -> None:
    from cairn.artifact import write_artifact
    from cairn.cli import app

    artifact, path = tmp_path / "graph.cairn", tmp_path / "cairn.db"
    write_artifact(artifact, _graph(), generated_at="2024-01-01T00:00:00Z")
    runner = CliRunner()
    assert runner.invoke(app, ["load", str(artifact), "--db", str(path)]).exit_code == 0

    def check() -> tuple[int, dict[str, Any]]:
        argv = ["check", "--db", str(path), "--against", str(artifact), "--json"]
        result = runner.invoke(app, argv)
        return result.exit_code, json.loads(result.stdout)

    code, report = check()
    assert (code, report["ok"], report["against"]["agrees"]) == (0, True, True)
    assert all(kind["count"] == 0 for kind in report["against"]["differences"].values())
    # The database drifts from its artifact: one document rewritten and its checksum made
    # to match (no damage: a different, valid record), one fact deleted behind the store.
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("DELETE FROM facts")
        conn.commit()
    with cairn.open(path) as db:
        db.command(cmd(PutDocument("files", "file:a.py", {"path": "b.py"})))
        db.command(cmd(PutDocument("files", "file:new.py", {"path": "new.py"})))
    code, report = check()
    assert code == 1 and report["ok"] is False and report["against"]["agrees"] is False
    found = {
        kind: item["examples"]
        for kind, item in report["against"]["differences"].items()
        if item["count"]
    }
    fact_id = next(iter(_graph().facts())).id
    assert found == {
        "documents_differ": ["files/file:a.py"],
        "documents_extra": ["files/file:new.py"],
        "facts_missing": [fact_id],
    }


def _rewrite_first_rowid(path: Path, table: str, rowid: int) -> None:
    """Change the rowid of the first cell of ``table``'s root leaf page in the file's
    bytes (what a flipped bit does): B-tree order breaks where SQL cannot reach."""
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        (root,) = conn.execute(
            "SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)
        ).fetchone()
    data = bytearray(path.read_bytes())
    page = (root - 1) * page_size
    assert data[page] == 0x0D  # a table leaf
    first_cell = page + int.from_bytes(data[page + 8 : page + 10], "big")
    assert data[first_cell] < 0x80 and data[first_cell + 1] < 0x80  # one-byte varints
    data[first_cell + 1] = rowid
    path.write_bytes(bytes(data))


def test_damaged_vector_rows_are_named_on_every_read(tmp_path: Path) -> None:
    from cairn.store import PutVector, VectorField, VectorSpace
    from cairn.store.commands import ConfigureCollection, Metric

    path = tmp_path / "cairn.db"
    space = VectorSpace("toy", 2, Metric.COSINE, "toy", "1")
    with cairn.open(path) as db:
        vectors = ConfigureCollection("vecs", ("/text",), (VectorField("v", space),))
        db.command(cmd(vectors, put("vecs", "x", "x"), put("vecs", "y", "y")))
        db.command(
            cmd(PutVector("vecs", "x", "v", (1.0, 0.5)), PutVector("vecs", "y", "v", (0.5, 1.0)))
        )
    _rewrite_first_rowid(path, "vector_rows", 9)  # rows now read 9, 2: out of order
    request = SearchRequest("main", "vecs", text_field="/text", text="x")
    with cairn.open(path) as db:
        for _ in range(2):  # the same named error again: no half-loaded state is kept
            with pytest.raises(CorruptionError, match="vector rows are damaged"):
                db.search(request)


def _asks(db: Any, token: str, kind: str) -> Any:
    """The read each kind of damage must stop."""
    if kind == "principals":
        return db.principal("reader")  # never read as a grant it was not given
    if kind == "collections":
        return db.search(SearchRequest("main", "docs", text_field="/text", text="alpha"))
    if kind == "api_keys":
        return db.authenticate(token)
    if kind == "fact_shapes":
        from cairn.store.records import read_shapes

        with db.read_cut() as cut:
            return read_shapes(cut.conn, "fact_shapes")
    return db.stored_outcome(RECEIPT_ID)


@pytest.mark.parametrize(
    ("kind", "statement", "named"),
    [
        (
            "principals",
            "UPDATE principals SET record = replace(record, 'query', 'admin')",
            "principal 'reader' is damaged",
        ),
        (
            "collections",
            "UPDATE collections SET config = replace(config, '/text', '/test')",
            "collection 'docs' is damaged",
        ),
        ("api_keys", "UPDATE api_keys SET verifier = verifier || 'x'", "api key .* is damaged"),
        (
            "fact_shapes",
            "UPDATE fact_shapes SET data = CAST(data AS TEXT) || ' '",  # one byte more
            "shape 1 of fact_shapes is damaged",
        ),
        (
            "commands",
            f"UPDATE commands SET position = position + 1 WHERE command_id = '{RECEIPT_ID}'",
            "stored outcome of command .* is damaged",
        ),
    ],
)
def test_damaged_configuration_keys_and_receipts_are_named(
    tmp_path: Path, kind: str, statement: str, named: str
) -> None:
    from cairn.store import (
        ConfigureGraph,
        ConfigurePrincipal,
        EntityRef,
        Grant,
        PutFact,
        issue_api_key,
    )
    from cairn.store.policy import Capability

    path = tmp_path / "cairn.db"
    with cairn.open(path) as db:
        setup_docs(db)
        issued = issue_api_key()
        grant = Grant("main", "docs", frozenset({Capability.QUERY}))
        db.command(cmd(ConfigurePrincipal("reader", (grant,), api_keys=(issued.verifier,))))
        db.command(cmd(put("docs", "a", "alpha"), command_id=RECEIPT_ID))
        db.command(cmd(ConfigureGraph("code")))
        db.command(cmd(PutFact("code", EntityRef("docs", "a"), EntityRef("docs", "a"), "calls")))
        _asks(db, issued.token, kind)  # intact: answers
    with closing(sqlite3.connect(path)) as conn:
        # The row still parses after the damage: only its checksum can tell.
        assert conn.execute(statement).rowcount == 1
        conn.commit()
    with cairn.open(path) as db, pytest.raises(CorruptionError, match=named) as caught:
        _asks(db, issued.token, kind)
    assert caught.value.details["table"] == kind
    code, report = _check(path)
    assert code == 1 and report["tables"][kind]["damaged"] == 1
