"""Keys of a load's records, kept beside the database, so that the next load of the same
graph skips every record that did not change (``load_semantic_graph(incremental=True)``).

A key is a 16-byte BLAKE2b digest of everything a stored record is made from:

* a document: its node's kind, identity and attributes (the body, the text postings and
  the vector are functions of them and of the load's header);
* a fact: its ID (relation, endpoints, direction, discriminator), its endpoints'
  collections and identities, and each occurrence's ID (files, ranges, site kind,
  adapter, evidence key) and adapter version. A fact with parts a key does not cover
  (annotation variants; occurrences with provenance, confidence observations, metadata
  variants or diagnostics) has no key and is always compared whole.

The header digests the loader's own code and versions, the graph's name, the vector
space and the collections' configuration: a different header makes every key foreign.
The file names the database (its incarnation) and the position it describes: any other
write moves the position and makes the file stale. A stale, foreign or unreadable file
is ignored, and the load compares everything, as without it. It is derived data: deleting
it costs one full comparison, never a wrong answer.

What a load skips by key it does not re-read, so it does not re-verify those rows'
checksums either: damage to an unchanged row is found by reads and by ``cairn check``,
and a full load (``cairn load``, or without this file) rewrites it.
"""

from __future__ import annotations

import functools
import hashlib
import os
import threading
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import compress, repeat
from operator import attrgetter, is_not, itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from cairn.graph.model import EndpointIdentity, EvidenceOccurrence, Node, SemanticFact, thaw
from cairn.store.commands import EntityRef

if TYPE_CHECKING:
    from cairn.graph.multigraph import GraphChanges, IdSets, SemanticGraph

__all__ = [
    "LOAD_KEYS_FORMAT",
    "LOAD_KEYS_SUFFIX",
    "DerivedKeys",
    "KeyDelta",
    "KeyMemo",
    "LoadKeys",
    "fact_key",
    "header_key",
    "key_sums",
    "keys_path",
    "node_key",
    "read_keys",
    "write_keys",
]

LOAD_KEYS_FORMAT = "cairn.load-keys/1"
"""Layout of the file; another value is ignored."""
LOAD_KEYS_SUFFIX = ".load-keys"
"""The file's name is the database's plus this."""
KEY_BYTES = 16
"""Digest size: collisions among a repository's ~10^6 records are out of reach."""
_MODULES = ("load", "loadkeys", "text", "bulk", "records")
"""Store modules whose code decides what a load writes: their bytes are in the header."""
_COMPRESSION_LEVEL = 1
_SUM_MODULUS = 1 << 256
"""Key sums add 256-bit record digests modulo this (``key_sums``)."""


@dataclass(frozen=True, slots=True)
class LoadKeys:
    """The keys of the records one load left in a database at ``position``."""

    header: str
    incarnation: str
    position: int
    documents: Mapping[str, tuple[str, bytes]]
    """Node ID -> (the collection its document is in, the node's key)."""
    facts: Mapping[str, bytes | None]
    """Fact ID -> key (None: the fact has no key and is always compared whole)."""


@dataclass(frozen=True, slots=True)
class KeyDelta:
    """Where a memo's keys differ from the ones it derived the call before
    (``documents`` and ``facts``, those very mappings): only at the node IDs ``nodes``
    and the fact IDs ``fact_ids`` (a key, a collection, or the record itself new or
    gone; the sets may hold more than changed, never less)."""

    documents: Mapping[str, tuple[str, bytes]]
    facts: Mapping[str, bytes | None]
    nodes: set[str]
    fact_ids: set[str]


@dataclass(frozen=True, slots=True)
class DerivedKeys:
    """The keys of a graph's records (``KeyMemo.keys``): node ID -> (collection, key),
    fact ID -> key (None: compared whole); their ``key_sums`` (None: not summed yet,
    ``summed`` sums them); the facts with no key; and, when the memo derived them from
    the keys of the call before, where they differ (``delta``)."""

    documents: dict[str, tuple[str, bytes]]
    facts: dict[str, bytes | None]
    sums: tuple[int, int] | None
    keyless: set[str]
    delta: KeyDelta | None = None

    def summed(self) -> tuple[int, int]:
        """``key_sums`` of these keys."""
        return self.sums if self.sums is not None else key_sums(self.documents, self.facts)


def _document_digest(item: tuple[str, tuple[str, bytes]]) -> int:
    node_id, (collection, key) = item
    data = b"%s\x00%s\x00%s" % (collection.encode(), node_id.encode(), key)
    return int.from_bytes(hashlib.blake2b(data, digest_size=32).digest())


def _fact_digest(item: tuple[str, bytes | None]) -> int:
    fact_id, key = item
    data = b"%s\x00%s" % (fact_id.encode(), b"-" if key is None else b"k" + key)
    return int.from_bytes(hashlib.blake2b(data, digest_size=32).digest())


def key_sums(
    documents: Mapping[str, tuple[str, bytes]], facts: Mapping[str, bytes | None]
) -> tuple[int, int]:
    """An order-free digest of every key: the sums, modulo 2^256, of a 256-bit BLAKE2b
    digest of each document's (collection, node ID, key) and of each fact's (ID, key).
    A sum is kept up to date by subtracting a changed record's old digest and adding
    its new one (``KeyMemo``), where a digest over the keys in ID order would be made
    again over every key. (Collections and IDs hold no NUL: ``check_identifier``.)"""
    return (
        sum(map(_document_digest, documents.items())) % _SUM_MODULUS,
        sum(map(_fact_digest, facts.items())) % _SUM_MODULUS,
    )


def keys_path(database: Path) -> Path:
    """Where the keys of ``database``'s loads are kept."""
    return database.with_name(database.name + LOAD_KEYS_SUFFIX)


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=KEY_BYTES).digest()


def header_key(parts: Mapping[str, Any]) -> str:
    """The header digest: ``parts`` (versions, graph, space, collections) and the code
    of the store modules that decide what a load writes."""
    plain = orjson.dumps(parts, option=orjson.OPT_SORT_KEYS)
    return _digest(plain + _code_digest()).hex()


@functools.cache
def _code_digest() -> bytes:
    """The digest of the store modules' source (read once per process: it cannot
    change under a running process)."""
    package = Path(__file__).resolve().parent
    code = hashlib.blake2b(digest_size=KEY_BYTES)
    for name in _MODULES:
        code.update(name.encode() + b"\x00" + (package / f"{name}.py").read_bytes())
    return code.digest()


def _identity_parts(identity: EndpointIdentity) -> list[str]:
    return [identity.status.value, str(len(identity.reasons)), *map(str, identity.reasons)]


def node_key(node: Node) -> bytes:
    """The key of the document (and vector) a node becomes."""
    data = orjson.dumps(
        [node.id, node.kind, _identity_parts(node.identity), node.attributes],
        default=thaw,
        option=orjson.OPT_SORT_KEYS,
    )
    return _digest(data)


def _plain(item: EvidenceOccurrence) -> bool:
    return not (
        item.provenance
        or item.confidence_observations
        or item.metadata_variants
        or item.diagnostics
    )


def fact_key(
    fact: SemanticFact,
    collections: tuple[str, str],
    occurrences: Sequence[EvidenceOccurrence],
) -> bytes | None:
    """The key of a stored fact and its occurrences; None when it has parts a key does
    not cover (it is then always compared whole)."""
    if fact.annotation_variants or not all(_plain(item) for item in occurrences):
        return None
    ends = fact.endpoint_identity
    parts = [
        fact.id,
        fact.relation,
        fact.direction.value,
        fact.source,
        fact.target,
        *collections,
        *_identity_parts(ends.source),
        *_identity_parts(ends.target),
        ",".join(fact.occurrence_ids),
    ]
    for item in occurrences:
        version = item.owner.adapter_version
        parts.extend((item.id, item.fact_id, "-" if version is None else "v" + version))
    return _digest("\x00".join(parts).encode())


_ID = attrgetter("id")
_SOURCE = attrgetter("source")
_TARGET = attrgetter("target")
_FIRST = itemgetter(0)
_SECOND = itemgetter(1)

_HeldNode = tuple["Node | None", bytes]
_HeldFact = tuple["SemanticFact | None", bytes | None]
_NO_NODE: _HeldNode = (None, b"")
_NO_FACT: _HeldFact = (None, None)


class KeyMemo:
    """What one process's last incremental load of a database derived, by record object
    (``cairn watch`` loads the same database round after round, and a round reuses the
    records of everything an edit did not reach): a node that is the same object as
    then, or a fact that is, over the same collections and occurrence objects, keeps its
    key without deriving it again; and the keys that load kept, which stand for the file
    while the file is the one it wrote (same size, time and inode).

    A graph made by the next merge of the same lineage as the graph before
    (``SemanticGraph.changes``) is not walked at all: only the records whose IDs the
    two graphs' journals name are looked at, and the keys are the last ones with those
    IDs derived again (``DerivedKeys.delta`` says which)."""

    def __init__(self) -> None:
        self._nodes: dict[str, _HeldNode] = {}
        self._facts: dict[str, _HeldFact] = {}
        self._occurrences: dict[str, EvidenceOccurrence] = {}
        self._collections: dict[str, str] = {}
        self._derived: DerivedKeys | None = None
        self._merge: tuple[object, int] | None = None  # the lineage and generation then
        self._written_since: IdSets = (set(), set(), set())  # the graph's own writes then
        self._written: tuple[tuple[int, int, int], LoadKeys] | None = None
        self._writing: threading.Thread | None = None

    def keys(self, graph: SemanticGraph, refs: Mapping[str, EntityRef]) -> DerivedKeys:
        """``node_key`` of every node (with its collection) and ``fact_key`` of every fact
        of ``graph`` (``refs``: node ID -> the document it becomes), derived again only
        for a node, or a fact, its collections or an occurrence, that is not the object
        the last call derived it from; held for the next call."""
        changes = graph.changes()
        derived = self._by_changes(graph, refs, changes)
        if derived is None:
            collections = {node_id: ref.collection for node_id, ref in refs.items()}
            derived = self._by_walking(graph, collections)
        # The delta's mappings are the last call's: not held past the caller's use.
        self._derived = replace(derived, delta=None)
        if changes is None:
            self._merge, self._written_since = None, (set(), set(), set())
        else:
            self._merge = (changes.lineage, changes.generation)
            self._written_since = changes.written
        return derived

    def _by_walking(self, graph: SemanticGraph, collections: dict[str, str]) -> DerivedKeys:
        """Every record visited (by C-level maps: a Python loop over the Django sdist's
        168,000 facts cost ~0.4 s a round); only those to derive again one by one."""
        nodes = graph.nodes()
        node_ids = list(map(_ID, nodes))
        held_nodes = list(map(self._nodes.get, node_ids, repeat(_NO_NODE)))
        for index in compress(range(len(nodes)), map(is_not, map(_FIRST, held_nodes), nodes)):
            held_nodes[index] = (nodes[index], node_key(nodes[index]))
        collections_of = map(collections.__getitem__, node_ids)
        documents = dict(
            zip(node_ids, zip(collections_of, map(_SECOND, held_nodes), strict=True), strict=True)
        )
        occurrences = graph.occurrences()
        occurrence_ids = list(map(_ID, occurrences))
        before = map(self._occurrences.get, occurrence_ids)
        # A fact object lists the same occurrence IDs: only the objects can differ.
        derive = {item.fact_id for item in compress(occurrences, map(is_not, before, occurrences))}
        facts_listed = graph.facts()
        fact_ids = list(map(_ID, facts_listed))
        held_facts = list(map(self._facts.get, fact_ids, repeat(_NO_FACT)))
        derive.update(compress(fact_ids, map(is_not, map(_FIRST, held_facts), facts_listed)))
        moved = _moved_nodes(self._collections, collections)
        if moved:  # a fact keeps its key while its ends' documents stay in their collections
            derive.update(compress(fact_ids, map(moved.__contains__, map(_SOURCE, facts_listed))))
            derive.update(compress(fact_ids, map(moved.__contains__, map(_TARGET, facts_listed))))
        next_facts = dict(zip(fact_ids, held_facts, strict=True))
        for fact_id in derive:
            fact = graph.fact(fact_id)
            next_facts[fact_id] = (
                fact,
                fact_key(fact, _ends(fact, collections), graph.occurrences_of(fact_id)),
            )
        facts = dict(zip(fact_ids, map(_SECOND, next_facts.values()), strict=True))
        self._nodes = dict(zip(node_ids, held_nodes, strict=True))
        self._facts = next_facts
        self._occurrences = dict(zip(occurrence_ids, occurrences, strict=True))
        self._collections = collections
        keyless = {fact_id for fact_id, key in facts.items() if key is None}
        return DerivedKeys(documents, facts, key_sums(documents, facts), keyless)

    def _by_changes(
        self,
        graph: SemanticGraph,
        refs: Mapping[str, EntityRef],
        changes: GraphChanges | None,
    ) -> DerivedKeys | None:
        """The last keys with the records ``changes`` (and the last graph's own writes)
        name derived again; None when they cannot stand for walking every record: no
        keys before, not the next merge of the same lineage, or a node that stays but
        moved to another collection (the facts at it would need deriving again)."""
        last = self._derived
        if (
            last is None
            or changes is None
            or changes.merged is None
            or self._merge != (changes.lineage, changes.generation - 1)
        ):
            return None
        merged, written, before = changes.merged, changes.written, self._written_since
        node_ids = set().union(merged[0], written[0], before[0])
        collections = self._collections
        for node_id in node_ids:
            home = collections.get(node_id)
            ref = refs.get(node_id)
            if home is not None and ref is not None and ref.collection != home:
                return None
        documents = dict(last.documents)
        facts = dict(last.facts)
        keyless = set(last.keyless)
        document_sum, fact_sum = last.summed()
        nodes_changed: set[str] = set()
        for node_id in node_ids:
            old = documents.get(node_id)
            ref = refs.get(node_id)
            if ref is None:
                if old is not None:
                    del documents[node_id]
                    document_sum -= _document_digest((node_id, old))
                    nodes_changed.add(node_id)
                self._nodes.pop(node_id, None)
                collections.pop(node_id, None)
                continue
            node = graph.node(node_id)
            held = self._nodes.get(node_id, _NO_NODE)
            key = held[1] if held[0] is node else node_key(node)
            self._nodes[node_id] = (node, key)
            collections[node_id] = ref.collection
            new = (ref.collection, key)
            if new != old:
                if old is not None:
                    document_sum -= _document_digest((node_id, old))
                document_sum += _document_digest((node_id, new))
                documents[node_id] = new
                nodes_changed.add(node_id)
        derive = set().union(merged[1], written[1], before[1])
        occurrences = self._occurrences
        # An occurrence taken out takes it out of its fact's list: the fact is named too.
        for occurrence_id in set().union(merged[2], written[2], before[2]):
            if graph.has_occurrence(occurrence_id):
                occurrence = graph.occurrence(occurrence_id)
                occurrences[occurrence_id] = occurrence
                derive.add(occurrence.fact_id)
            else:
                occurrences.pop(occurrence_id, None)
        facts_changed: set[str] = set()
        for fact_id in derive:
            had = fact_id in facts
            old_key = facts.get(fact_id)
            if not graph.has_fact(fact_id):
                if had:
                    del facts[fact_id]
                    fact_sum -= _fact_digest((fact_id, old_key))
                    facts_changed.add(fact_id)
                self._facts.pop(fact_id, None)
                keyless.discard(fact_id)
                continue
            fact = graph.fact(fact_id)
            ends = (refs[fact.source].collection, refs[fact.target].collection)
            found = fact_key(fact, ends, graph.occurrences_of(fact_id))
            self._facts[fact_id] = (fact, found)
            if found is None:
                keyless.add(fact_id)
            else:
                keyless.discard(fact_id)
            if not had or found != old_key:
                if had:
                    fact_sum -= _fact_digest((fact_id, old_key))
                fact_sum += _fact_digest((fact_id, found))
                facts[fact_id] = found
                facts_changed.add(fact_id)
        sums = (document_sum % _SUM_MODULUS, fact_sum % _SUM_MODULUS)
        delta = KeyDelta(last.documents, last.facts, nodes_changed, facts_changed)
        return DerivedKeys(documents, facts, sums, keyless, delta)

    def read(self, path: Path) -> LoadKeys | None:
        """``read_keys(path)``, or the keys this memo last wrote there while the file is
        still that one (a write still under way is waited for)."""
        self.settle()
        if self._written is not None and _signature(path) == self._written[0]:
            return self._written[1]
        return read_keys(path)

    def write(self, path: Path, keys: LoadKeys) -> None:
        """``write_keys(path, keys)`` on a thread, remembering the file it wrote: the
        load returns without waiting (``settle`` waits). The file only saves the next
        load time; until it is written, an older one names an older position and is
        ignored."""
        self.settle()
        self._written = None

        def run() -> None:
            write_keys(path, keys)
            signature = _signature(path)
            if signature is not None:
                self._written = (signature, keys)

        self._writing = threading.Thread(target=run, name="cairn-load-keys")
        self._writing.start()

    def settle(self) -> None:
        """Wait for the keys file this memo is writing, if any."""
        if self._writing is not None:
            self._writing.join()
            self._writing = None


def _moved_nodes(before: Mapping[str, str], now: Mapping[str, str]) -> set[str]:
    """The node IDs whose document was in another collection ``before`` than ``now``.
    A node new ``now`` is left out: no fact held from ``before`` can end at it (a held
    fact's ends were nodes of the graph ``before`` describes)."""
    if before == now:
        return set()
    return {
        node_id
        for node_id, collection in now.items()
        if before.get(node_id, collection) != collection
    }


def _ends(fact: SemanticFact, collections: Mapping[str, str]) -> tuple[str, str]:
    """The collections of a fact's source and target documents."""
    return collections[fact.source], collections[fact.target]


def _signature(path: Path) -> tuple[int, int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return (stat.st_size, stat.st_mtime_ns, stat.st_ino)


def read_keys(path: Path) -> LoadKeys | None:
    """The keys kept at ``path``, or None when there are none that can be read."""
    try:
        data = orjson.loads(zlib.decompress(path.read_bytes()))
        if data["format"] != LOAD_KEYS_FORMAT:
            return None
        documents = {
            node_id: (collection, bytes.fromhex(key))
            for node_id, collection, key in data["documents"]
        }
        facts = {fact_id: bytes.fromhex(key) if key else None for fact_id, key in data["facts"]}
        return LoadKeys(
            str(data["header"]), str(data["incarnation"]), int(data["position"]), documents, facts
        )
    except (OSError, zlib.error, orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        return None


def write_keys(path: Path, keys: LoadKeys) -> None:
    """Keep ``keys`` at ``path`` (atomically); when that fails, leave no file at all, so
    an older one can never stand for the database's new state."""
    data = {
        "format": LOAD_KEYS_FORMAT,
        "header": keys.header,
        "incarnation": keys.incarnation,
        "position": keys.position,
        "documents": [
            [node_id, collection, key.hex()]
            for node_id, (collection, key) in sorted(keys.documents.items())
        ],
        "facts": [
            [fact_id, key.hex() if key is not None else ""]
            for fact_id, key in sorted(keys.facts.items())
        ],
    }
    temporary = path.with_name(path.name + ".tmp")
    try:
        temporary.write_bytes(zlib.compress(orjson.dumps(data), _COMPRESSION_LEVEL))
        os.replace(temporary, path)
    except OSError:
        for stale in (temporary, path):
            stale.unlink(missing_ok=True)
