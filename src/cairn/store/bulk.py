"""Batched puts for bulk loads: the rows of many mutations written with one statement each.

``BulkApplier`` extends the row-at-a-time ``Applier`` with three batched steps a bulk
load needs: put many documents, put many vectors, put many graph facts. Each is exactly
equivalent to applying the same mutations one by one, in the given order, through the
row path: the same checks in the same order per item (so the first failing item raises
the same typed error), the same revisions, the same slot numbers, term IDs and vector
row IDs (assigned in the same order), the same ``changes`` entries with the same
ordinals and the same outcomes. ``tests/store/test_store_bulk.py`` loads graphs both
ways and compares every table.

What makes it fast: stored state is read once per batch (chunked ``IN`` lookups instead
of one ``SELECT`` per item), IDs are assigned in memory and every table is written with
one ``executemany`` per batch. It runs inside the caller's transaction, like
``Applier``: an error leaves the transaction to be rolled back whole.

Each batch names every item once (a load's wanted state is keyed by ref or fact ID);
a batch naming one twice is refused with ``ValidationError``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from cairn.canonical import canonical_bytes
from cairn.errors import ConflictError, CorruptionError, MissingEndpointError, ValidationError
from cairn.graph.model import SemanticFact
from cairn.store.apply import Applier, _denied, analyse_fields, vector_pointer
from cairn.store.checksums import (
    document_checksum,
    fact_checksum,
    occurrence_checksum,
    posting_checksum,
)
from cairn.store.commands import (
    EntityRef,
    Mutation,
    MutationOutcome,
    PutDocument,
    PutFact,
    PutVector,
)
from cairn.store.limits import (
    LOOKUP_CHUNK,
    MAX_DOCUMENT_BYTES,
    MAX_DOCUMENT_DEPTH,
    check_depth,
    check_size,
)
from cairn.store.policy import Capability, field_allowed, require, row_visible
from cairn.store.records import StoredFact
from cairn.store.vectorstore import end_vector_rows, next_vector_row, space_id, write_vectors

__all__ = ["BulkApplier", "BulkDocument", "BulkFact", "BulkVector", "lookup_chunks"]

_Value = TypeVar("_Value")


@dataclass(frozen=True, slots=True)
class BulkDocument:
    """An unconditional ``PutDocument`` without access; ``data`` = canonical body bytes."""

    collection: str
    id: str
    body: dict[str, Any]
    data: bytes
    analysed: list[tuple[str, list[str], list[int]]] | None = None
    """Its text fields' terms and counts when made ahead (``_analyse`` gives the same: a
    field without text is left out); used only when made for exactly the collection's
    text fields and analyzer."""
    analyzer: str | None = None
    """The analyzer ``analysed`` was made with."""
    fields: tuple[str, ...] | None = None
    """The text fields ``analysed`` was made for."""


@dataclass(frozen=True, slots=True)
class BulkVector:
    """A ``PutVector`` with its values as a float32 array."""

    collection: str
    id: str
    field: str
    data: npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class BulkFact:
    """A fact as a ``SemanticGraph`` holds it (see ``Applier.put_graph_fact``)."""

    fact: SemanticFact
    endpoints: tuple[EntityRef, EntityRef]
    stored: StoredFact


@dataclass(frozen=True, slots=True)
class _Stored:
    """The stored current row of a document, without its body."""

    slot: int
    revision: int
    owner: str | None
    project: str | None
    deleted: bool


def lookup_chunks(values: Sequence[_Value]) -> Iterator[Sequence[_Value]]:
    """``values`` in runs of ``LOOKUP_CHUNK``: short enough for one ``IN (...)`` list."""
    for start in range(0, len(values), LOOKUP_CHUNK):
        yield values[start : start + LOOKUP_CHUNK]


def _depth_within(value: Any, limit: int) -> bool:
    """``json_depth(value) <= limit``, walked level by level with exact-type shortcuts.

    Containers are what ``json_depth`` counts (mappings, lists, tuples); the depth is the
    number of levels holding a container.
    """
    level = [value] if isinstance(value, Mapping | list | tuple) else []
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return False
        deeper: list[Any] = []
        push = deeper.append
        for container in level:
            children: Iterable[Any] = (
                container.values() if isinstance(container, Mapping) else container
            )
            for child in children:
                kind = type(child)
                if kind is str or kind is int or kind is float or kind is bool or child is None:
                    continue
                if kind is dict or kind is list or isinstance(child, Mapping | list | tuple):
                    push(child)
        level = deeper
    return True


def _unique(keys: Iterable[object], what: str) -> None:
    listed = list(keys)
    if len(set(listed)) != len(listed):
        raise ValidationError(f"a bulk put names each {what} once")


class BulkApplier(Applier):
    """An ``Applier`` with batched document, vector and fact puts (bulk loads)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._fresh_slots: set[int] = set()  # slots born in this applier's batches
        self._written: dict[EntityRef, _Stored] = {}  # live heads this applier's puts wrote

    def apply(self, mutation: Mutation) -> MutationOutcome:
        """``Applier.apply``; a row-path write may move any head, so the batches' memory
        of the heads they wrote is dropped."""
        self._written.clear()
        return super().apply(mutation)

    # ------------------------------------------------------------- lookups
    def _stored_rows(self, collection: str, ids: Sequence[str]) -> dict[str, _Stored]:
        """The stored rows (live or tombstone) of ``ids`` in ``collection``."""
        found: dict[str, _Stored] = {}
        for chunk in lookup_chunks(sorted(set(ids))):
            marks = ", ".join("?" * len(chunk))
            for doc_id, slot, revision, owner, project, deleted in self.conn.execute(
                f"SELECT id, slot, revision, owner, project, deleted FROM documents "
                f"WHERE collection = ? AND id IN ({marks})",
                (collection, *chunk),
            ):
                found[doc_id] = _Stored(slot, revision, owner, project, bool(deleted))
        return found

    def _live_heads(self, refs: Iterable[EntityRef]) -> dict[EntityRef, _Stored]:
        """Stored rows of the live documents among ``refs`` (visibility not yet applied).

        Heads this applier's document batches wrote are known without reading them back.
        """
        heads: dict[EntityRef, _Stored] = {}
        written = self._written
        by_collection: dict[str, list[str]] = {}
        for ref in refs:
            known = written.get(ref)
            if known is not None:
                heads[ref] = known
            else:
                by_collection.setdefault(ref.collection, []).append(ref.id)
        for collection, ids in sorted(by_collection.items()):
            for doc_id, row in self._stored_rows(collection, ids).items():
                if not row.deleted:
                    heads[EntityRef(collection, doc_id)] = row
        return heads

    def _visible_row(self, collection: str, row: _Stored) -> bool:
        return row_visible(self.principal, self.database, collection, row.owner, row.project)

    def _require_once(self, resource: str, capability: Capability) -> None:
        if (resource, capability) not in self._checked:
            require(self.principal, self.database, resource, capability)
            self._checked.add((resource, capability))

    def _writes_guarded(self, collection: str) -> bool:
        return any(policy.write_grant is not None for policy in self._field_policies(collection))

    def _known_terms(self, terms: Iterable[str]) -> None:
        """Read the stored IDs of ``terms`` into the term cache."""
        missing = sorted({term for term in terms if term not in self._term_ids})
        for chunk in lookup_chunks(missing):
            marks = ", ".join("?" * len(chunk))
            for term_id, term in self.conn.execute(
                f"SELECT id, term FROM terms WHERE term IN ({marks})", tuple(chunk)
            ):
                self._term_ids[term] = int(term_id)

    def _max_id(self, table: str, column: str) -> int:
        row = self.conn.execute(f"SELECT max({column}) FROM {table}").fetchone()
        return int(row[0] or 0)

    def _changes(self, entries: Sequence[tuple[Any, ...]]) -> None:
        """Append ``changes`` rows ``(kind, resource, id, revision, slot, previous_slot)``."""
        first = self.ordinal
        self.conn.executemany(
            "INSERT INTO changes (position, ordinal, kind, resource, id, revision, slot, "
            "previous_slot) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [(self.position, first + index, *entry) for index, entry in enumerate(entries)],
        )
        self.ordinal += len(entries)

    # ----------------------------------------------------------- documents
    def put_documents(self, items: Sequence[BulkDocument]) -> list[MutationOutcome]:
        """Apply ``PutDocument(collection, id, body)`` for every item, in order."""
        _unique(((item.collection, item.id) for item in items), "document")
        wanted: dict[str, list[str]] = {}
        for item in items:
            wanted.setdefault(item.collection, []).append(item.id)
        stored = {name: self._stored_rows(name, ids) for name, ids in sorted(wanted.items())}
        planned = [
            self._check_document(item, stored[item.collection].get(item.id)) for item in items
        ]
        analysed = [self._analysed(item) for item in items]
        self._known_terms(term for fields in analysed for _, terms, _ in fields for term in terms)
        next_term = self._max_id("terms", "id") + 1
        new_terms: list[tuple[int, str]] = []
        first_slot = self._next_slots(len(items))
        documents: list[tuple[Any, ...]] = []
        ended: list[tuple[int, int]] = []
        slots: list[tuple[Any, ...]] = []
        doc_terms: list[tuple[Any, ...]] = []
        changes: list[tuple[Any, ...]] = []
        outcomes: list[MutationOutcome] = []
        for index, (item, previous, fields) in enumerate(
            zip(items, planned, analysed, strict=True)
        ):
            slot = first_slot + index
            revision = previous.revision + 1 if previous is not None else 1
            checksum = document_checksum(
                item.collection, item.id, revision, None, None, False, item.data
            )
            documents.append(
                (item.collection, item.id, slot, revision, item.data, self.position, checksum)
            )
            previous_slot = previous.slot if previous is not None and not previous.deleted else None
            if previous_slot is not None:
                ended.append((self.position, previous_slot))
            slots.append((slot, item.collection, item.id, revision, self.position))
            for pointer, terms, counts in fields:
                ids = []
                for term in terms:
                    term_id = self._term_ids.get(term)
                    if term_id is None:
                        term_id = next_term
                        next_term += 1
                        self._term_ids[term] = term_id
                        new_terms.append((term_id, term))
                    ids.append(term_id)
                packed_ids = np.asarray(ids, dtype="<u4").tobytes()
                packed_counts = np.asarray(counts, dtype="<u4").tobytes()
                length = sum(counts)
                checksum = posting_checksum(slot, pointer, length, packed_ids, packed_counts)
                doc_terms.append((slot, pointer, length, packed_ids, packed_counts, checksum))
            changes.append(("document", item.collection, item.id, revision, slot, previous_slot))
            self._written[EntityRef(item.collection, item.id)] = _Stored(
                slot, revision, None, None, False
            )
            outcomes.append(MutationOutcome(PutDocument.kind, item.collection, item.id, revision))
            self._fresh_slots.add(slot)
        conn = self.conn
        conn.executemany(
            "INSERT OR REPLACE INTO documents (collection, id, slot, revision, body, owner, "
            "project, deleted, position, checksum) VALUES (?, ?, ?, ?, ?, NULL, NULL, 0, ?, ?)",
            documents,
        )
        conn.executemany("UPDATE slots SET death = ? WHERE slot = ?", ended)
        conn.executemany(
            "INSERT INTO slots (slot, collection, id, revision, owner, project, birth, death) "
            "VALUES (?, ?, ?, ?, NULL, NULL, ?, NULL)",
            slots,
        )
        conn.executemany("INSERT INTO terms (id, term) VALUES (?, ?)", new_terms)
        conn.executemany(
            "INSERT INTO doc_terms (slot, field, length, term_ids, counts, checksum) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            doc_terms,
        )
        self._changes(changes)
        return outcomes

    def _check_document(self, item: BulkDocument, previous: _Stored | None) -> _Stored | None:
        """The row path's checks for one put, in its order; returns the previous row."""
        self._collection(item.collection)
        require(self.principal, self.database, item.collection, Capability.DOCUMENTS_WRITE)
        live = previous is not None and not previous.deleted
        if previous is not None and live and not self._visible_row(item.collection, previous):
            raise self._hidden(item.collection, item.id)
        if self._writes_guarded(item.collection):
            before = None
            if live:
                row = self._live_row(item.collection, item.id)
                before = row.body
            self._check_field_writes(item.collection, before, item.body)
        if not row_visible(self.principal, self.database, item.collection, None, None):
            raise self._denied_write(item.collection)
        if not _depth_within(item.body, MAX_DOCUMENT_DEPTH):
            check_depth(item.body, "document body")  # raises the row path's error
        check_size(len(item.data), MAX_DOCUMENT_BYTES, "document body")
        return previous

    def _denied_write(self, collection: str) -> Exception:
        return _denied(self.principal, collection, "write a row it could not see")

    def _analysed(self, item: BulkDocument) -> list[tuple[str, list[str], list[int]]]:
        """``item``'s analysis made ahead when it covers the collection's text fields,
        else ``_analyse``."""
        held = item.analysed
        if held is not None:
            config = self._collection(item.collection)
            if item.analyzer == config.analyzer and item.fields == tuple(config.text_fields):
                return held
        return self._analyse(item)

    def _analyse(self, item: BulkDocument) -> list[tuple[str, list[str], list[int]]]:
        """Per declared text field with text: its distinct terms and their counts."""
        config = self._collection(item.collection)
        return analyse_fields(item.body, config.text_fields, config.analyzer)

    def _next_slots(self, count: int) -> int:
        """Reserve ``count`` consecutive slots; return the first."""
        row = self.conn.execute("SELECT value FROM meta WHERE key = 'next_slot'").fetchone()
        if row is None:
            raise CorruptionError("meta has no next_slot")
        first = int(row[0])
        self.conn.execute(
            "UPDATE meta SET value = ? WHERE key = 'next_slot'", (str(first + count),)
        )
        return first

    # ------------------------------------------------------------- vectors
    def put_vectors(self, items: Sequence[BulkVector]) -> list[MutationOutcome]:
        """Apply ``PutVector`` for every item, in order (values already float32)."""
        _unique(((item.collection, item.id, item.field) for item in items), "vector")
        heads = self._live_heads(EntityRef(item.collection, item.id) for item in items)
        allowed: dict[tuple[str, str], bool] = {}
        next_row = next_vector_row(self.conn)
        ended: list[tuple[int, str, str]] = []
        rows: dict[int, tuple[list[int], list[int], list[npt.NDArray[np.float32]]]] = {}
        changes: list[tuple[Any, ...]] = []
        outcomes: list[MutationOutcome] = []
        spaces: dict[tuple[str, str], tuple[Any, int]] = {}
        for item in items:
            config = self._collection(item.collection)
            self._require_once(item.collection, Capability.DOCUMENTS_WRITE)
            key = (item.collection, item.field)
            if key not in spaces:
                declared = {field.name: field.space for field in config.vector_fields}
                space = declared.get(item.field)
                if space is None:
                    raise ValidationError(
                        f"collection {item.collection!r} has no vector field {item.field!r}",
                        details={"collection": item.collection, "field": item.field},
                    )
                number = space_id(
                    self.conn,
                    item.collection,
                    item.field,
                    canonical_bytes(space.to_json()),
                    space.dimension,
                )
                spaces[key] = (space, number)
            space, number = spaces[key]
            if item.data.shape != (space.dimension,):
                raise ValidationError(
                    f"vector has {item.data.size} values; space {space.id!r} has "
                    f"dimension {space.dimension}",
                    details={"dimension": space.dimension, "length": int(item.data.size)},
                )
            head = heads.get(EntityRef(item.collection, item.id))
            if head is None or not self._visible_row(item.collection, head):
                raise self._hidden(item.collection, item.id)
            if key not in allowed:
                pointer = vector_pointer(item.field)
                policies = self._field_policies(item.collection)
                allowed[key] = field_allowed(
                    self.principal, self.database, item.collection, policies, pointer, "write"
                )
            if not allowed[key]:
                pointer = vector_pointer(item.field)
                raise _denied(self.principal, item.collection, f"write field {pointer}")
            if not np.all(np.isfinite(item.data)):
                raise ValidationError("vector values overflow float32")
            if head.slot not in self._fresh_slots:
                ended.append((head.slot, item.collection, item.field))
            numbers, slots, values = rows.setdefault(number, ([], [], []))
            numbers.append(next_row)
            slots.append(head.slot)
            values.append(item.data.astype("<f4", copy=False))
            next_row += 1
            changes.append(("vector", item.collection, item.id, head.revision, head.slot, None))
            outcomes.append(
                MutationOutcome(PutVector.kind, item.collection, item.id, head.revision)
            )
        end_vector_rows(self.conn, self.position, ended)
        for number, (numbers, slots, values) in rows.items():
            write_vectors(self.conn, number, numbers, slots, self.position, np.stack(values))
        self._changes(changes)
        return outcomes

    # --------------------------------------------------------------- facts
    def put_graph_facts(self, graph: str, items: Sequence[BulkFact]) -> list[MutationOutcome]:
        """Apply ``put_graph_fact`` for every item, in order."""
        _unique((item.fact.id for item in items), "fact")
        if not items:
            return []
        self._graph(graph, Capability.GRAPH_WRITE)
        heads = self._live_heads(ref for item in items for ref in item.endpoints)
        existing: dict[str, tuple[str, str, int, bool]] = {}
        for chunk in lookup_chunks([item.fact.id for item in items]):
            marks = ", ".join("?" * len(chunk))
            for fact_id, source, target, revision, deleted in self.conn.execute(
                f"SELECT id, source_collection, target_collection, revision, deleted FROM facts "
                f"WHERE graph = ? AND id IN ({marks})",
                (graph, *chunk),
            ):
                existing[fact_id] = (source, target, int(revision), bool(deleted))
        facts: list[tuple[Any, ...]] = []
        cleared: list[tuple[str, str]] = []
        occurrences: list[tuple[Any, ...]] = []
        changes: list[tuple[Any, ...]] = []
        outcomes: list[MutationOutcome] = []
        for item in items:
            for ref, role in zip(item.endpoints, ("source", "target"), strict=True):
                self._bulk_endpoint(ref, role, heads)
            first, second = item.endpoints
            found = existing.get(item.fact.id)
            if (
                found is not None
                and not found[3]
                and (found[0], found[1]) != (first.collection, second.collection)
            ):
                raise ConflictError(
                    f"fact {item.fact.id} already joins documents in other collections",
                    details={"graph": graph, "fact_id": item.fact.id},
                )
            revision = found[2] + 1 if found is not None else 1
            stored = item.stored
            # Shapes are numbered in the row path's order: the fact's, then its occurrences'.
            (shape,) = self._fact_shapes.ids([stored.shape])
            numbers = self._occurrence_shapes.ids(o.shape for o in stored.occurrences)
            ends = (first.collection, first.id, second.collection, second.id)
            relation = item.fact.relation
            checksum = fact_checksum(
                graph, item.fact.id, ends, relation, shape, stored.record, revision, False
            )
            facts.append(
                (
                    graph,
                    item.fact.id,
                    *ends,
                    relation,
                    shape,
                    stored.record,
                    revision,
                    self.position,
                    checksum,
                )
            )
            if found is not None:
                cleared.append((graph, item.fact.id))
            occurrences.extend(
                (
                    graph,
                    item.fact.id,
                    o.id,
                    number,
                    o.parts,
                    occurrence_checksum(graph, item.fact.id, o.id, number, o.parts),
                )
                for o, number in zip(stored.occurrences, numbers, strict=True)
            )
            changes.append(("fact", graph, item.fact.id, revision, None, None))
            outcomes.append(MutationOutcome(PutFact.kind, graph, item.fact.id, revision))
        conn = self.conn
        conn.executemany(
            "INSERT OR REPLACE INTO facts (graph, id, source_collection, source_id, "
            "target_collection, target_id, relation, shape, record, revision, deleted, "
            "position, checksum) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?)",
            facts,
        )
        conn.executemany("DELETE FROM occurrences WHERE graph = ? AND fact_id = ?", cleared)
        occurrences.sort(key=lambda row: (row[1], row[2]))  # key order: B-tree appends
        conn.executemany(
            "INSERT INTO occurrences (graph, fact_id, id, shape, parts, checksum) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            occurrences,
        )
        self._changes(changes)
        return outcomes

    def _bulk_endpoint(self, ref: EntityRef, role: str, heads: dict[EntityRef, _Stored]) -> None:
        """``Applier._endpoint`` over the batch's heads."""
        readable = self._readable.get(ref.collection)
        if readable is None:
            capabilities = self.principal.capabilities(self.database, ref.collection)
            readable = any(
                cap in capabilities
                for cap in (Capability.DOCUMENTS_READ, Capability.QUERY, Capability.DOCUMENTS_WRITE)
            )
            self._readable[ref.collection] = readable
        head = heads.get(ref)
        if not readable or head is None or not self._visible_row(ref.collection, head):
            raise MissingEndpointError(
                f"{role} {ref.collection}/{ref.id} is not an existing visible document",
                details={"role": role, "collection": ref.collection, "id": ref.id},
            )
