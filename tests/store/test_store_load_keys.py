"""Incremental loads (``load_semantic_graph(incremental=True)``, what ``cairn index``
does): kept keys let a load skip unchanged records, and never change what it writes.

The oracle is the full load: the same sequence of graphs loaded without keys into a
twin database gives the same mutations and the same stored state.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from types import MappingProxyType

import pytest
from store_helpers import cmd, rows
from test_store_load import GET, SERVICE, build, build_moved, state

import cairn.store.load as load_module
import cairn.store.loadkeys as loadkeys
from cairn.graph import EndpointIdentity, Node, OccurrenceInput, SemanticGraph, SourceRange
from cairn.graph.multigraph import FactCandidate, Part, PartsMerge, admit_apart
from cairn.index import Database as IndexedDatabase
from cairn.index import open as open_indexed
from cairn.store import CommitReceipt, PutDocument
from cairn.store.load import (
    COMPARED_BY_KEYS,
    KEYS_FOREIGN,
    KEYS_MISSING,
    KEYS_OTHER_POSITION,
    load_semantic_graph,
    repair_collector,
)
from cairn.store.loadkeys import KeyMemo, keys_path, read_keys

SEQUENCES: dict[str, list[Callable[[], SemanticGraph]]] = {
    "edit and add": [build, lambda: build(docstring="Changed.", extra=True)],
    "remove and restore": [lambda: build(extra=True), build, lambda: build(extra=True)],
    "change family and back": [build, build_moved, build],
    "unchanged": [build, build],
}


@pytest.mark.parametrize("name", sorted(SEQUENCES))
def test_incremental_loads_apply_what_full_loads_apply(tmp_path: Path, name: str) -> None:
    with open_indexed(tmp_path / "keys.db") as keyed, open_indexed(tmp_path / "full.db") as full:
        for step, make in enumerate(SEQUENCES[name]):
            before = full.position
            ours = load_semantic_graph(keyed, make(), incremental=True)
            theirs = load_semantic_graph(full, make())
            assert ours.token.position == theirs.token.position
            if theirs.token.position == before:  # nothing to do: said as such, no replay
                assert ours.mutations == (), step
                continue
            assert [(m.kind, m.id) for m in ours.mutations] == [
                (m.kind, m.id) for m in theirs.mutations
            ], step
            kept = read_keys(keys_path(keyed.path))
            assert kept is not None and kept.position == keyed.position
    assert state(tmp_path / "keys.db") == state(tmp_path / "full.db")
    assert not keys_path(tmp_path / "full.db").exists()  # a full load keeps no keys


def _count_bodies(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    made: list[str] = []
    original = load_module.node_body

    def counting(node):  # type: ignore[no-untyped-def]
        made.append(node.id)
        return original(node)

    monkeypatch.setattr(load_module, "node_body", counting)
    return made


def test_unchanged_documents_are_not_encoded_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with open_indexed(tmp_path / "keys.db") as db:
        load_semantic_graph(db, build(), incremental=True)
        made = _count_bodies(monkeypatch)
        load_semantic_graph(db, build(docstring="Changed."), incremental=True)
        assert made == [GET]  # the one node that changed
        made.clear()
        receipt = load_semantic_graph(db, build(docstring="Changed."), incremental=True)
        assert made == [] and receipt.mutations == ()


def test_each_load_says_how_it_compared(tmp_path: Path) -> None:
    said: list[str] = []
    with open_indexed(tmp_path / "keys.db") as db:
        load_semantic_graph(db, build(), incremental=True, on_compare=said.append)
        load_semantic_graph(db, build(extra=True), incremental=True, on_compare=said.append)
        db.command(cmd(PutDocument("symbols", "stray", {"text": "not from the graph"})))
        load_semantic_graph(db, build(), incremental=True, on_compare=said.append)
        keys_path(db.path).write_bytes(b"junk")
        load_semantic_graph(db, build(), incremental=True, on_compare=said.append)
    assert said == [KEYS_MISSING, COMPARED_BY_KEYS, KEYS_OTHER_POSITION, KEYS_MISSING]
    with open_indexed(tmp_path / "other.db") as other:
        keys_path(other.path).write_bytes(keys_path(tmp_path / "keys.db").read_bytes())
        load_semantic_graph(other, build(), incremental=True, on_compare=said.append)
    assert said[-1] == KEYS_FOREIGN  # another database's keys are never trusted


def test_keys_of_another_position_are_not_trusted(tmp_path: Path) -> None:
    with open_indexed(tmp_path / "keys.db") as db:
        load_semantic_graph(db, build(), incremental=True)
        db.command(cmd(PutDocument("symbols", "stray", {"text": "not from the graph"})))
        receipt = load_semantic_graph(db, build(), incremental=True)
        assert [(m.kind, m.id) for m in receipt.mutations] == [("delete_document", "stray")]
    with open_indexed(tmp_path / "fresh.db") as fresh:
        load_semantic_graph(fresh, build())
    assert state(tmp_path / "keys.db") == state(tmp_path / "fresh.db")


def test_a_load_that_changes_nothing_keeps_its_keys_at_the_current_position(
    tmp_path: Path,
) -> None:
    """A load that changes nothing may be answered by the stored receipt of the same
    content loaded long before (its command ID names content: here the first, full
    load's), whose position is an old one; its keys still describe the database as it
    is now, so the next load compares by them, not every record."""
    said: list[str] = []
    with open_indexed(tmp_path / "keys.db") as db:
        first = load_semantic_graph(db, build(), incremental=True)
        load_semantic_graph(db, build(extra=True), incremental=True)
        load_semantic_graph(db, build(), incremental=True)  # back, named by its keys
        keys_path(db.path).unlink()
        again = load_semantic_graph(db, build(), incremental=True)
        assert again == first  # the stored receipt, replayed: an old position
        assert again.token.position < db.position
        kept = read_keys(keys_path(db.path))
        assert kept is not None and kept.position == db.position
        load_semantic_graph(db, build(), incremental=True, on_compare=said.append)
    assert said == [COMPARED_BY_KEYS]


def test_unreadable_keys_are_ignored_and_replaced(tmp_path: Path) -> None:
    with open_indexed(tmp_path / "keys.db") as db:
        load_semantic_graph(db, build(), incremental=True)
        keys_path(db.path).write_bytes(b"\x00 not keys")
        receipt = load_semantic_graph(db, build(docstring="Changed."), incremental=True)
        assert ("put_document", GET) in [(m.kind, m.id) for m in receipt.mutations]
        kept = read_keys(keys_path(db.path))
        assert kept is not None and kept.position == db.position
    with open_indexed(tmp_path / "fresh.db") as fresh:
        load_semantic_graph(fresh, build(docstring="Changed."))
    assert state(tmp_path / "keys.db") == state(tmp_path / "fresh.db")


def test_a_damaged_unchanged_row_is_left_to_reads_check_and_full_loads(tmp_path: Path) -> None:
    with open_indexed(tmp_path / "keys.db") as db:
        load_semantic_graph(db, build(), incremental=True)
        ((collection,),) = rows(db.path, "SELECT collection FROM documents WHERE id = ?", GET)
        with closing(sqlite3.connect(db.path)) as conn:
            (body,) = conn.execute("SELECT body FROM documents WHERE id = ?", (GET,)).fetchone()
            damaged = bytes(body).replace(b"getUserName", b"getUserNamf", 1)
            conn.execute("UPDATE documents SET body = ? WHERE id = ?", (damaged, GET))
            conn.commit()
        repaired: list[dict[str, str]] = []
        position = db.position
        load_semantic_graph(db, build(), incremental=True, on_repair=repair_collector(repaired))
        assert repaired == [] and db.position == position  # trusted by its key: not re-read
        load_semantic_graph(db, build(), on_repair=repair_collector(repaired))
        assert repaired == [{"table": "documents", "resource": collection, "id": GET}]


def _patched(graph: SemanticGraph, docstring: str) -> SemanticGraph:
    """``graph`` with every record the same object but ``GET``'s node (a new docstring)
    and the facts into it (new objects, same content): what a ``cairn watch`` round
    hands the load after an edit of one module."""
    patched = graph.copy()
    node = graph.node(GET)
    attributes = {**node.attributes, "docstring": docstring}
    patched._nodes[GET] = dataclasses.replace(node, attributes=MappingProxyType(attributes))
    for fact in graph.facts_to(GET):
        patched._facts[fact.id] = dataclasses.replace(fact)
    return patched


def _reobserved(graph: SemanticGraph) -> SemanticGraph:
    """``graph`` with every fact the same object, but one occurrence of ``GET``'s first
    incoming fact a new object under the same ID (another adapter version)."""
    patched = graph.copy()
    fact = graph.facts_to(GET)[0]
    occurrence = graph.occurrence(fact.occurrence_ids[0])
    owner = dataclasses.replace(occurrence.owner, adapter_version="another")
    patched._occurrences[occurrence.id] = dataclasses.replace(occurrence, owner=owner)
    return patched


def _external(graph: SemanticGraph, node_id: str) -> SemanticGraph:
    """``graph`` with every record the same object but ``node_id``'s node, now of kind
    ``external`` (its document moves to another collection; the facts at it do not
    change, but their keys name their ends' collections)."""
    moved = graph.copy()
    moved._nodes[node_id] = dataclasses.replace(graph.node(node_id), kind="external")
    return moved


def _count_derived(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The IDs of the records whose keys are derived from now on, in order."""
    derived: list[str] = []
    original_node_key, original_fact_key = loadkeys.node_key, loadkeys.fact_key

    def counting_node_key(node):  # type: ignore[no-untyped-def]
        derived.append(node.id)
        return original_node_key(node)

    def counting_fact_key(fact, *rest):  # type: ignore[no-untyped-def]
        derived.append(fact.id)
        return original_fact_key(fact, *rest)

    monkeypatch.setattr(loadkeys, "node_key", counting_node_key)
    monkeypatch.setattr(loadkeys, "fact_key", counting_fact_key)
    return derived


def _assert_same_loads(
    ours: IndexedDatabase,
    mine: CommitReceipt,
    theirs: IndexedDatabase,
    plain: CommitReceipt,
    step: int,
) -> None:
    """Two loads of one graph applied the same mutations and kept the same keys."""
    assert [(m.kind, m.id) for m in mine.mutations] == [(m.kind, m.id) for m in plain.mutations], (
        step
    )
    kept_mine = read_keys(keys_path(ours.path))
    kept_plain = read_keys(keys_path(theirs.path))
    assert kept_mine is not None and kept_plain is not None
    assert (kept_mine.documents, kept_mine.facts) == (kept_plain.documents, kept_plain.facts), step


def test_a_key_memo_derives_only_new_records_and_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Loads through one ``KeyMemo`` apply what loads without one apply, keep the same
    keys, and derive keys only for records that are new objects."""
    first = build(extra=True)
    patched = _patched(first, "Changed.")
    last = build()
    graphs = [first, first, patched, _reobserved(patched), last, _external(last, SERVICE), last]
    memo = KeyMemo()
    derived = _count_derived(monkeypatch)
    with open_indexed(tmp_path / "memo.db") as ours, open_indexed(tmp_path / "plain.db") as theirs:
        for step, graph in enumerate(graphs):
            derived.clear()
            mine = load_semantic_graph(ours, graph, incremental=True, key_memo=memo)
            memo.settle()  # the keys file is written on a thread
            plain = load_semantic_graph(theirs, graph, incremental=True)
            _assert_same_loads(ours, mine, theirs, plain, step)
            if step == 1:  # the same graph again: every key held
                assert derived == []
            if step == 2:  # one node and the facts into it are new objects
                changed = {GET, *(fact.id for fact in first.facts_to(GET))}
                assert set(derived) == changed
            if step == 3:  # the same fact object over a new occurrence object
                assert derived == [first.facts_to(GET)[0].id]
            if step in (5, 6):  # one node in another collection: the facts at it
                at = {fact.id for fact in (*last.facts_from(SERVICE), *last.facts_to(SERVICE))}
                assert at and set(derived) == {SERVICE, *at}, step
    assert state(tmp_path / "memo.db") == state(tmp_path / "plain.db")


def test_a_key_memo_reads_its_own_keys_only_while_the_file_is_its_own(tmp_path: Path) -> None:
    memo = KeyMemo()
    said: list[str] = []
    with open_indexed(tmp_path / "memo.db") as db:
        load_semantic_graph(db, build(), incremental=True, key_memo=memo)
        path = keys_path(db.path)
        written = memo.read(path)
        assert written is not None and written.position == db.position
        assert memo.read(path) is written  # the file is the one it wrote: no re-read
        path.write_bytes(b"junk")
        assert memo.read(path) is None  # replaced: read (and found unreadable) again
        load_semantic_graph(
            db, build(extra=True), incremental=True, key_memo=memo, on_compare=said.append
        )
        path.unlink()
        assert memo.read(path) is None
        load_semantic_graph(db, build(), incremental=True, key_memo=memo, on_compare=said.append)
    assert said == [KEYS_MISSING, KEYS_MISSING]


def test_the_keys_fingerprint_sums_a_digest_of_every_key() -> None:
    """The fingerprint of a load named by its keys, against the definition written out
    by hand: SHA-256 over (8-byte little-endian length, bytes) of ``keys``, the header,
    the walked digest and two 32-byte big-endian sums, modulo 2^256, of BLAKE2b-256
    digests (read big-endian) of each document's ``collection NUL id NUL key`` and of
    each fact's ``id NUL k key`` (``id NUL -`` for a fact with no key). The sums do not
    depend on the order of the records."""
    import hashlib
    import random
    import struct

    from cairn.store.load import _KeyState
    from cairn.store.loadkeys import DerivedKeys, key_sums

    rng = random.Random(3)
    documents = {
        f"function:m{rng.random()}": (rng.choice(["symbols", "files"]), rng.randbytes(16))
        for _ in range(300)
    }
    facts = {f"sf_{rng.random()}": rng.choice([rng.randbytes(16), None]) for _ in range(500)}

    def blake(data: bytes) -> int:
        return int.from_bytes(hashlib.blake2b(data, digest_size=32).digest(), "big")

    document_sum = sum(
        blake(collection.encode() + b"\x00" + node_id.encode() + b"\x00" + key)
        for node_id, (collection, key) in documents.items()
    ) % (1 << 256)
    fact_sum = sum(
        blake(fact_id.encode() + b"\x00" + (b"-" if key is None else b"k" + key))
        for fact_id, key in facts.items()
    ) % (1 << 256)
    expected = hashlib.sha256()
    for chunk in (
        b"keys",
        b"header",
        b"walked",
        document_sum.to_bytes(32, "big"),
        fact_sum.to_bytes(32, "big"),
    ):
        expected.update(struct.pack("<Q", len(chunk)) + chunk)
    assert key_sums(documents, facts) == (document_sum, fact_sum)
    shuffled = dict(reversed(list(documents.items())))
    assert key_sums(shuffled, facts) == (document_sum, fact_sum)
    keyless = {fact_id for fact_id, key in facts.items() if key is None}
    derived = DerivedKeys(documents, facts, key_sums(documents, facts), keyless)
    state = _KeyState("header", "incarnation", derived, None)
    assert state.fingerprint("walked") == expected.hexdigest()


def _module_part(key: str, kinds: dict[str, str], calls: list[tuple[str, str, int]]) -> Part:
    """A module's part: its nodes (ID -> kind) and its calls (source, target, line); a
    call on line 3 carries metadata, so its fact has no key (it is compared whole)."""
    stable = EndpointIdentity.stable()
    nodes = tuple(
        Node(node_id, kind, stable, {"name": node_id, "path": f"{key}.py"})
        for node_id, kind in kinds.items()
    )
    candidates: list[FactCandidate] = [
        (
            source,
            target,
            "calls",
            {"invocation": "call", "dispatch": "direct", "resolution": "resolved"},
            OccurrenceInput(
                adapter_id="python",
                strategy="ast",
                source_file=f"{key}.py",
                source_range=SourceRange(line, 1, line, 9),
                site_kind="call",
                metadata={"receiver": "self"} if line == 3 else None,
            ),
        )
        for source, target, line in calls
    ]
    return key, nodes, admit_apart(candidates, {node.id: node.identity for node in nodes})


_A = _module_part(
    "a", {"function:a1": "function", "function:a2": "function"}, [("function:a1", "function:a2", 3)]
)
_B = _module_part("b", {"function:b1": "function"}, [("function:b1", "function:a1", 2)])
_B_MOVED_CALL = _module_part("b", {"function:b1": "function"}, [("function:b1", "function:a1", 7)])
_B_GROWN = _module_part(
    "b",
    {"function:b1": "function", "function:b2": "function"},
    [("function:b1", "function:a1", 7), ("function:b2", "function:a2", 9)],
)
_A_EXTERNAL = _module_part(
    "a", {"function:a1": "function", "function:a2": "external"}, [("function:a1", "function:a2", 3)]
)
MERGE_ROUNDS: list[tuple[list[Part], bool]] = [
    ([_A, _B], False),  # the first merge: every key derived
    ([_A, _B_MOVED_CALL], True),  # one part again: a call moved
    ([_A, _B_GROWN], False),  # a node and a call added
    ([_A, _B_GROWN], True),  # nothing merged again; the writes after the merge only
    ([_A], False),  # a part gone: its nodes, facts and the call into a1
    ([_A_EXTERNAL], True),  # a node moves to another collection: every record walked
    ([_A_EXTERNAL, _B], False),
]
"""Rounds of parts, as ``cairn watch`` merges module shares, and whether a fact is
written to each round's graph after its merge (as the Markdown resolver does)."""


def test_a_key_memo_derives_a_merged_graph_only_where_its_journal_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Graphs made by merges by difference, loaded through one ``KeyMemo``, apply and
    keep what loads without one apply and keep, while only records the graphs'
    journals name have keys derived again (the memo walks every record only for the
    first merge and when a node moved to another collection)."""
    derived = _count_derived(monkeypatch)
    memo = KeyMemo()
    walked: list[bool] = []
    memo_keys = KeyMemo.keys

    def spying_keys(self, graph, refs):  # type: ignore[no-untyped-def]
        found = memo_keys(self, graph, refs)
        walked.append(found.delta is None)
        return found

    monkeypatch.setattr(KeyMemo, "keys", spying_keys)
    kept: PartsMerge | None = None
    before: SemanticGraph | None = None
    with (
        open_indexed(tmp_path / "memo.db") as ours,
        open_indexed(tmp_path / "plain.db") as theirs,
        open_indexed(tmp_path / "full.db") as full,
    ):
        for step, (parts, written) in enumerate(MERGE_ROUNDS):
            graph = SemanticGraph()
            kept = graph.merge_parts(parts, kept)
            if written:  # a node and a fact written after the merge, new objects each time
                graph.add_node("section:guide#usage", "section", identity=EndpointIdentity.stable())
                graph.add_fact(
                    "section:guide#usage",
                    "function:a1",
                    "mentions",
                    occurrence=OccurrenceInput(
                        adapter_id="markdown",
                        strategy="text",
                        source_file="guide.md",
                        source_range=SourceRange(1, 1, 1, 5),
                        site_kind="mention",
                    ),
                )
            derived.clear()
            mine = load_semantic_graph(ours, graph, incremental=True, key_memo=memo)
            changes = graph.changes()
            assert changes is not None
            if not walked[-1]:  # keys derived again only for what the journals name
                assert changes.merged is not None and before is not None
                last = before.changes()
                assert last is not None
                named = set().union(*changes.merged, *changes.written, *last.written)
                # a fact is derived again for an occurrence the journals name
                named |= {item.fact_id for item in graph.occurrences() if item.id in named}
                named |= {item.fact_id for item in before.occurrences() if item.id in named}
                assert set(derived) <= named, step
                assert derived or step == 4, step  # round 4 only takes records out
            memo.settle()
            plain = load_semantic_graph(theirs, graph, incremental=True)
            load_semantic_graph(full, graph)
            _assert_same_loads(ours, mine, theirs, plain, step)
            assert mine.command_id == plain.command_id, step
            before = graph
    assert walked == [True, False, False, False, False, True, False]
    assert state(tmp_path / "memo.db") == state(tmp_path / "plain.db")
    assert state(tmp_path / "memo.db") == state(tmp_path / "full.db")
