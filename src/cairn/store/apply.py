"""Apply one validated command to SQLite, deterministically (design §5).

``apply_command`` runs inside the writer's open transaction. It reads only the command,
the resolved principal, the new commit position and the stored state; it never reads a
clock, draws a random value or depends on hash iteration order, so a replica applying
the same command bytes to the same state writes the same rows and the same receipt.

Every mutation checks authorization (grants, row policy, field write grants) and its
preconditions first, then writes its rows, one ``changes`` entry and one outcome.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson

from cairn.canonical import canonical_bytes
from cairn.errors import (
    ConflictError,
    CorruptionError,
    MissingEndpointError,
    NotFoundError,
    PermissionDeniedError,
    ValidationError,
)
from cairn.graph.model import Direction, EndpointIdentity, SemanticFact, thaw
from cairn.graph.multigraph import AdmissionOutcome, SemanticGraph
from cairn.graph.registry import REGISTRY_ID
from cairn.store.checksums import (
    CONFIG_KEYS,
    config_checksum,
    document_checksum,
    fact_checksum,
    key_checksum,
    occurrence_checksum,
    posting_checksum,
    stored_bytes,
    verify_config,
    verify_document,
)
from cairn.store.commands import (
    CommandRequest,
    ConfigureCollection,
    ConfigureGraph,
    ConfigurePolicy,
    ConfigurePrincipal,
    DeleteDocument,
    DeleteFact,
    DocumentAccess,
    EntityRef,
    Mutation,
    MutationOutcome,
    PatchDocument,
    PutDocument,
    PutFact,
    PutVector,
    VectorSpace,
)
from cairn.store.pointer import MISSING, get_at, remove_at, set_at
from cairn.store.policy import (
    Capability,
    FieldPolicy,
    Principal,
    field_allowed,
    require,
    row_visible,
)
from cairn.store.records import Shapes, StoredFact, split_fact, split_occurrence
from cairn.store.text import analyze, term_counts
from cairn.store.validation import check_body
from cairn.store.vectorstore import (
    end_vector_rows,
    next_vector_row,
    read_vectors,
    space_id,
    write_vectors,
)

__all__ = [
    "Applier",
    "DocumentRow",
    "analyse_fields",
    "apply_command",
    "field_text",
    "load_collection",
    "load_document",
    "load_field_policies",
    "load_principal",
    "set_position",
    "vector_pointer",
]

_GRAPH_NODE_KIND = "document"
_READ_CAPABILITIES = (Capability.DOCUMENTS_READ, Capability.QUERY)


def _json(data: bytes | None) -> Any:
    if data is None:
        return None
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise CorruptionError("a stored record is not valid JSON") from exc


@dataclass(frozen=True, slots=True)
class DocumentRow:
    """The stored current row of one document (live or tombstone)."""

    collection: str
    id: str
    slot: int
    revision: int
    body: dict[str, Any] | None
    owner: str | None
    project: str | None
    deleted: bool
    position: int

    @property
    def live(self) -> bool:
        """Whether the row is a live document rather than a tombstone."""
        return not self.deleted


def load_document(conn: sqlite3.Connection, collection: str, doc_id: str) -> DocumentRow | None:
    """The stored row of ``(collection, id)``, tombstones included, or None."""
    row = conn.execute(
        "SELECT slot, revision, body, owner, project, deleted, position, checksum "
        "FROM documents WHERE collection = ? AND id = ?",
        (collection, doc_id),
    ).fetchone()
    if row is None:
        return None
    slot, revision, body, owner, project, deleted, position, checksum = row
    data = stored_bytes(body)
    verify_document(collection, doc_id, revision, owner, project, bool(deleted), data, checksum)
    return DocumentRow(
        collection, doc_id, slot, revision, _json(body), owner, project, bool(deleted), position
    )


def _config_record(conn: sqlite3.Connection, table: str, name: str) -> bytes | None:
    """The verified record of configuration row ``name`` of ``table``, or None."""
    key, column = CONFIG_KEYS[table], _RECORD_COLUMN[table]
    row = conn.execute(
        f"SELECT revision, {column}, checksum FROM {table} WHERE {key} = ?", (name,)
    ).fetchone()
    if row is None:
        return None
    data = stored_bytes(row[1])
    verify_config(table, name, row[0], data, row[2])
    return data


def load_collection(conn: sqlite3.Connection, name: str) -> ConfigureCollection | None:
    """The configuration of collection ``name``, or None."""
    data = _config_record(conn, "collections", name)
    return None if data is None else ConfigureCollection.from_json(_json(data))


def load_field_policies(conn: sqlite3.Connection, resource: str) -> tuple[FieldPolicy, ...]:
    """The field policies configured on ``resource`` (none when unconfigured)."""
    data = _config_record(conn, "policies", resource)
    return () if data is None else ConfigurePolicy.from_json(_json(data)).fields


def load_principal(conn: sqlite3.Connection, principal_id: str) -> Principal | None:
    """The stored principal ``principal_id``, or None."""
    data = _config_record(conn, "principals", principal_id)
    return None if data is None else Principal.from_json(_json(data))


def field_text(value: Any) -> str | None:
    """The indexable text of a field value: a string, or the strings of an array joined."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(item, str) for item in value):
        return " ".join(value)
    return None


def analyse_fields(
    body: Any, pointers: Sequence[str], analyzer: str
) -> list[tuple[str, list[str], list[int]]]:
    """Per text field of ``pointers`` that ``body`` holds text in: the pointer, its
    distinct terms and their counts (what every write path indexes)."""
    fields: list[tuple[str, list[str], list[int]]] = []
    for pointer in pointers:
        text = field_text(get_at(body, pointer))
        if text is not None:
            terms, counts = term_counts(analyze(text, analyzer))
            fields.append((pointer, terms, counts))
    return fields


def vector_pointer(field: str) -> str:
    """The field-policy pointer of a vector field (``embedding`` -> ``/embedding``)."""
    return field if field.startswith("/") else "/" + field


def _graph_exists(conn: sqlite3.Connection, name: str) -> bool:
    return conn.execute("SELECT 1 FROM graphs WHERE name = ?", (name,)).fetchone() is not None


def _revision_of(conn: sqlite3.Connection, table: str, name: str) -> int:
    key = "id" if table == "principals" else ("resource" if table == "policies" else "name")
    row = conn.execute(f"SELECT revision FROM {table} WHERE {key} = ?", (name,)).fetchone()
    return 0 if row is None else int(row[0])


@dataclass(frozen=True, slots=True)
class _Head:
    """The bodiless part of a live document row."""

    slot: int
    revision: int
    owner: str | None
    project: str | None


class Applier:
    """Applies the mutations of one command at one position for one principal."""

    def __init__(
        self, conn: sqlite3.Connection, database: str, principal: Principal, position: int
    ) -> None:
        self.conn = conn
        self.database = database
        self.principal = principal
        self.position = position
        self.ordinal = 0
        # Read-through caches, valid inside this one transaction (configure_* clears them).
        self._configs: dict[str, ConfigureCollection | None] = {}
        self._policies: dict[str, tuple[FieldPolicy, ...]] = {}
        self._term_ids: dict[str, int] = {}
        self._checked: set[tuple[str, Capability]] = set()
        self._readable: dict[str, bool] = {}
        self._fact_shapes = Shapes(conn, "fact_shapes")
        self._occurrence_shapes = Shapes(conn, "occurrence_shapes")

    # ------------------------------------------------------------ shared steps
    def _change(
        self,
        kind: str,
        resource: str,
        record_id: str,
        revision: int,
        slot: int | None = None,
        previous_slot: int | None = None,
    ) -> None:
        self.conn.execute(
            "INSERT INTO changes (position, ordinal, kind, resource, id, revision, slot, "
            "previous_slot) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (self.position, self.ordinal, kind, resource, record_id, revision, slot, previous_slot),
        )
        self.ordinal += 1

    def _next_slot(self) -> int:
        row = self.conn.execute("SELECT value FROM meta WHERE key = 'next_slot'").fetchone()
        if row is None:
            raise CorruptionError("meta has no next_slot")
        slot = int(row[0])
        self.conn.execute("UPDATE meta SET value = ? WHERE key = 'next_slot'", (str(slot + 1),))
        return slot

    def _config(self, name: str) -> ConfigureCollection | None:
        if name not in self._configs:
            self._configs[name] = load_collection(self.conn, name)
        return self._configs[name]

    def _field_policies(self, resource: str) -> tuple[FieldPolicy, ...]:
        if resource not in self._policies:
            self._policies[resource] = load_field_policies(self.conn, resource)
        return self._policies[resource]

    def _collection(self, name: str) -> ConfigureCollection:
        config = self._config(name)
        if config is None:
            raise NotFoundError(f"no collection {name!r}", details={"collection": name})
        return config

    def _visible(self, row: DocumentRow) -> bool:
        return row_visible(self.principal, self.database, row.collection, row.owner, row.project)

    def _hidden(self, collection: str, doc_id: str) -> NotFoundError:
        return NotFoundError(
            f"no document {doc_id!r} in {collection!r}",
            details={"collection": collection, "id": doc_id},
        )

    def _live_row(self, collection: str, doc_id: str) -> DocumentRow:
        row = load_document(self.conn, collection, doc_id)
        if row is None or not row.live or not self._visible(row):
            raise self._hidden(collection, doc_id)
        return row

    def _check_expected(self, row: DocumentRow | None, expected: int | None, ref: str) -> None:
        if expected is None:
            return
        live = row is not None and row.live
        actual = row.revision if live and row is not None else 0
        if expected == 0 and live:
            raise ConflictError(
                f"document {ref} already exists at revision {actual}",
                details={"expected_revision": 0, "revision": actual},
            )
        if expected > 0 and not live:
            raise NotFoundError(f"no document {ref}", details={"expected_revision": expected})
        if expected > 0 and expected != actual:
            raise ConflictError(
                f"document {ref} is at revision {actual}, not {expected}",
                details={"expected_revision": expected, "revision": actual},
            )

    def _check_field_writes(
        self, collection: str, before: dict[str, Any] | None, after: dict[str, Any] | None
    ) -> None:
        policies = self._field_policies(collection)
        for policy in policies:
            if policy.write_grant is None:
                continue
            old = MISSING if before is None else get_at(before, policy.path)
            new = MISSING if after is None else get_at(after, policy.path)
            if old != new and not field_allowed(
                self.principal, self.database, collection, policies, policy.path, "write"
            ):
                raise _denied(self.principal, collection, f"write field {policy.path}")

    def _write_document(
        self,
        collection: str,
        doc_id: str,
        previous: DocumentRow | None,
        body: dict[str, Any],
        access: DocumentAccess | None,
    ) -> int:
        owner = access.owner if access else None
        project = access.project if access else None
        if not row_visible(self.principal, self.database, collection, owner, project):
            raise _denied(self.principal, collection, "write a row it could not see")
        data = check_body(body)
        revision = previous.revision + 1 if previous is not None else 1
        slot = self._next_slot()
        checksum = document_checksum(collection, doc_id, revision, owner, project, False, data)
        self.conn.execute(
            "INSERT OR REPLACE INTO documents (collection, id, slot, revision, body, owner, "
            "project, deleted, position, checksum) VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?, ?)",
            (collection, doc_id, slot, revision, data, owner, project, self.position, checksum),
        )
        previous_slot = previous.slot if previous is not None and previous.live else None
        if previous_slot is not None:
            self._end_slot(previous_slot)
        self.conn.execute(
            "INSERT INTO slots (slot, collection, id, revision, owner, project, birth, death) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, NULL)",
            (slot, collection, doc_id, revision, owner, project, self.position),
        )
        self._index_text(collection, slot, body)
        self._change("document", collection, doc_id, revision, slot, previous_slot)
        return revision

    def _end_slot(self, slot: int) -> None:
        self.conn.execute("UPDATE slots SET death = ? WHERE slot = ?", (self.position, slot))

    def _term_id(self, term: str) -> int:
        found = self._term_ids.get(term)
        if found is not None:
            return found
        row = self.conn.execute("SELECT id FROM terms WHERE term = ?", (term,)).fetchone()
        if row is None:
            cursor = self.conn.execute("INSERT INTO terms (term) VALUES (?)", (term,))
            assert cursor.lastrowid is not None
            found = int(cursor.lastrowid)
        else:
            found = int(row[0])
        self._term_ids[term] = found
        return found

    def _index_text(self, collection: str, slot: int, body: dict[str, Any]) -> None:
        """Analyse every declared text field of the new slot into packed term arrays."""
        config = self._collection(collection)
        for pointer, terms, counts in analyse_fields(body, config.text_fields, config.analyzer):
            ids = np.asarray([self._term_id(term) for term in terms], dtype="<u4").tobytes()
            packed = np.asarray(counts, "<u4").tobytes()
            length = sum(counts)
            self.conn.execute(
                "INSERT INTO doc_terms (slot, field, length, term_ids, counts, checksum) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (
                    slot,
                    pointer,
                    length,
                    ids,
                    packed,
                    posting_checksum(slot, pointer, length, ids, packed),
                ),
            )

    # --------------------------------------------------------------- documents
    def put_document(self, mutation: PutDocument) -> MutationOutcome:
        self._collection(mutation.collection)
        require(self.principal, self.database, mutation.collection, Capability.DOCUMENTS_WRITE)
        previous = load_document(self.conn, mutation.collection, mutation.id)
        if previous is not None and previous.live and not self._visible(previous):
            raise self._hidden(mutation.collection, mutation.id)
        self._check_expected(previous, mutation.expected_revision, repr(mutation.id))
        body = thaw(mutation.body)
        old_body = previous.body if previous is not None and previous.live else None
        self._check_field_writes(mutation.collection, old_body, body)
        revision = self._write_document(
            mutation.collection, mutation.id, previous, body, mutation.access
        )
        return MutationOutcome(mutation.kind, mutation.collection, mutation.id, revision)

    def patch_document(self, mutation: PatchDocument) -> MutationOutcome:
        self._collection(mutation.collection)
        require(self.principal, self.database, mutation.collection, Capability.DOCUMENTS_WRITE)
        previous = self._live_row(mutation.collection, mutation.id)
        self._check_expected(previous, mutation.expected_revision, repr(mutation.id))
        assert previous.body is not None
        body: Any = previous.body
        for op in mutation.operations:
            if op.op == "set":
                body = set_at(body, op.path, thaw(op.value))
            else:
                body = remove_at(body, op.path)
        self._check_field_writes(mutation.collection, previous.body, body)
        access = DocumentAccess(previous.owner, previous.project)
        revision = self._write_document(mutation.collection, mutation.id, previous, body, access)
        return MutationOutcome(mutation.kind, mutation.collection, mutation.id, revision)

    def delete_document(self, mutation: DeleteDocument) -> MutationOutcome:
        self._collection(mutation.collection)
        require(self.principal, self.database, mutation.collection, Capability.DOCUMENTS_WRITE)
        previous = self._live_row(mutation.collection, mutation.id)
        self._check_expected(previous, mutation.expected_revision, repr(mutation.id))
        self._check_field_writes(mutation.collection, previous.body, None)
        revision = previous.revision + 1
        checksum = document_checksum(
            mutation.collection, mutation.id, revision, previous.owner, previous.project, True, None
        )
        self.conn.execute(
            "UPDATE documents SET revision = ?, body = NULL, deleted = 1, position = ?, "
            "checksum = ? WHERE collection = ? AND id = ?",
            (revision, self.position, checksum, mutation.collection, mutation.id),
        )
        self._end_slot(previous.slot)
        self._change("document", mutation.collection, mutation.id, revision, None, previous.slot)
        return MutationOutcome(mutation.kind, mutation.collection, mutation.id, revision)

    # ----------------------------------------------------------------- vectors
    def put_vector(self, mutation: PutVector) -> MutationOutcome:
        data = np.asarray(mutation.vector, dtype="<f4")
        return self.put_vector_data(mutation.collection, mutation.id, mutation.field, data)

    def put_vector_data(
        self, collection: str, doc_id: str, field: str, data: npt.NDArray[np.float32]
    ) -> MutationOutcome:
        """``put_vector`` with the values already as a float32 array (bulk loads)."""
        config = self._collection(collection)
        require(self.principal, self.database, collection, Capability.DOCUMENTS_WRITE)
        declared = {item.name: item.space for item in config.vector_fields}
        space = declared.get(field)
        if space is None:
            raise ValidationError(
                f"collection {collection!r} has no vector field {field!r}",
                details={"collection": collection, "field": field},
            )
        if data.shape != (space.dimension,):
            raise ValidationError(
                f"vector has {data.size} values; space {space.id!r} has "
                f"dimension {space.dimension}",
                details={"dimension": space.dimension, "length": int(data.size)},
            )
        document = self._head(collection, doc_id)
        if document is None:
            raise self._hidden(collection, doc_id)
        policies = self._field_policies(collection)
        pointer = vector_pointer(field)
        if not field_allowed(self.principal, self.database, collection, policies, pointer, "write"):
            raise _denied(self.principal, collection, f"write field {pointer}")
        if not np.all(np.isfinite(data)):
            raise ValidationError("vector values overflow float32")
        data = data.astype("<f4", copy=False)
        self._vector_row(collection, field, space, document.slot, data)
        self._change("vector", collection, doc_id, document.revision, document.slot)
        return MutationOutcome(PutVector.kind, collection, doc_id, document.revision)

    def _head(self, collection: str, doc_id: str) -> _Head | None:
        """Slot, revision and access of a live document this principal can see, or None."""
        row = self.conn.execute(
            "SELECT slot, revision, owner, project FROM documents "
            "WHERE collection = ? AND id = ? AND deleted = 0",
            (collection, doc_id),
        ).fetchone()
        if row is None:
            return None
        head = _Head(*row)
        if not row_visible(self.principal, self.database, collection, head.owner, head.project):
            return None
        return head

    def _vector_row(
        self,
        collection: str,
        field: str,
        space: VectorSpace,
        slot: int,
        data: npt.NDArray[np.float32],
    ) -> None:
        """Append the vector's history row; the previous one of the same slot and field ends."""
        end_vector_rows(self.conn, self.position, [(slot, collection, field)])
        number = space_id(
            self.conn, collection, field, canonical_bytes(space.to_json()), space.dimension
        )
        write_vectors(
            self.conn, number, [next_vector_row(self.conn)], [slot], self.position, data[None, :]
        )

    # ------------------------------------------------------------------- facts
    def _graph(self, name: str, capability: Capability) -> None:
        if (name, capability) in self._checked:
            return
        if not _graph_exists(self.conn, name):
            raise NotFoundError(f"no graph {name!r}", details={"graph": name})
        require(self.principal, self.database, name, capability)
        self._checked.add((name, capability))  # graphs are never removed inside a command

    def _endpoint(self, ref: EntityRef, role: str) -> None:
        readable = self._readable.get(ref.collection)
        if readable is None:
            capabilities = self.principal.capabilities(self.database, ref.collection)
            readable = any(
                cap in capabilities for cap in (*_READ_CAPABILITIES, Capability.DOCUMENTS_WRITE)
            )
            self._readable[ref.collection] = readable
        if not readable or self._head(ref.collection, ref.id) is None:
            raise MissingEndpointError(
                f"{role} {ref.collection}/{ref.id} is not an existing visible document",
                details={"role": role, "collection": ref.collection, "id": ref.id},
            )

    def put_fact(self, mutation: PutFact) -> MutationOutcome:
        self._graph(mutation.graph, Capability.GRAPH_WRITE)
        self._endpoint(mutation.source, "source")
        self._endpoint(mutation.target, "target")
        graph, fact_id = _admit(mutation)
        fact = graph.fact(fact_id)
        first, second = mutation.source, mutation.target
        if fact.direction is Direction.UNDIRECTED:
            first, second = sorted((first, second), key=lambda ref: (ref.id, ref.collection))
        existing = self.conn.execute(
            "SELECT source_collection, target_collection, revision FROM facts "
            "WHERE graph = ? AND id = ?",
            (mutation.graph, fact_id),
        ).fetchone()
        if existing is not None and (existing[0], existing[1]) != (
            first.collection,
            second.collection,
        ):
            raise ConflictError(
                f"fact {fact_id} already joins documents in other collections",
                details={"graph": mutation.graph, "fact_id": fact_id},
            )
        revision = int(existing[2]) + 1 if existing is not None else 1
        occurrences = [
            split_occurrence(item.id, fact_id, item.to_json())
            for item in graph.occurrences_of(fact_id)
        ]
        stored = split_fact(
            fact.to_json(), fact_id, fact.relation, (first.id, second.id), occurrences
        )
        self._write_fact(mutation.graph, fact_id, fact.relation, (first, second), stored, revision)
        return MutationOutcome(mutation.kind, mutation.graph, fact_id, revision)

    def _write_fact(
        self,
        graph: str,
        fact_id: str,
        relation: str,
        endpoints: tuple[EntityRef, EntityRef],
        stored: StoredFact,
        revision: int,
    ) -> None:
        first, second = endpoints
        (shape,) = self._fact_shapes.ids([stored.shape])
        ends = (first.collection, first.id, second.collection, second.id)
        checksum = fact_checksum(
            graph, fact_id, ends, relation, shape, stored.record, revision, False
        )
        self.conn.execute(
            "INSERT OR REPLACE INTO facts (graph, id, source_collection, source_id, "
            "target_collection, target_id, relation, shape, record, revision, deleted, "
            "position, checksum) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?)",
            (
                graph,
                fact_id,
                *ends,
                relation,
                shape,
                stored.record,
                revision,
                self.position,
                checksum,
            ),
        )
        self.conn.execute(
            "DELETE FROM occurrences WHERE graph = ? AND fact_id = ?", (graph, fact_id)
        )
        shapes = self._occurrence_shapes.ids(item.shape for item in stored.occurrences)
        self.conn.executemany(
            "INSERT INTO occurrences (graph, fact_id, id, shape, parts, checksum) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            [
                (
                    graph,
                    fact_id,
                    item.id,
                    number,
                    item.parts,
                    occurrence_checksum(graph, fact_id, item.id, number, item.parts),
                )
                for item, number in zip(stored.occurrences, shapes, strict=True)
            ],
        )
        self._change("fact", graph, fact_id, revision)

    def put_graph_fact(
        self,
        graph: str,
        fact: SemanticFact,
        endpoints: tuple[EntityRef, EntityRef],
        stored: StoredFact,
    ) -> MutationOutcome:
        """Write a fact record exactly as a ``SemanticGraph`` holds it (bulk loads).

        ``stored`` is ``fact.to_json()`` with its occurrences' records, split for storage
        (``cairn.store.records.split_fact``).

        The caller has verified the fact ID; endpoints must be live visible documents
        and a known fact must keep its endpoint collections, as for ``put_fact``.
        """
        self._graph(graph, Capability.GRAPH_WRITE)
        self._endpoint(endpoints[0], "source")
        self._endpoint(endpoints[1], "target")
        existing = self.conn.execute(
            "SELECT source_collection, target_collection, revision, deleted FROM facts "
            "WHERE graph = ? AND id = ?",
            (graph, fact.id),
        ).fetchone()
        # A deleted fact may come back between other collections (a node changed family).
        if (
            existing is not None
            and not existing[3]
            and (existing[0], existing[1])
            != (
                endpoints[0].collection,
                endpoints[1].collection,
            )
        ):
            raise ConflictError(
                f"fact {fact.id} already joins documents in other collections",
                details={"graph": graph, "fact_id": fact.id},
            )
        revision = int(existing[2]) + 1 if existing is not None else 1
        self._write_fact(graph, fact.id, fact.relation, endpoints, stored, revision)
        return MutationOutcome(PutFact.kind, graph, fact.id, revision)

    def delete_fact(self, mutation: DeleteFact) -> MutationOutcome:
        self._graph(mutation.graph, Capability.GRAPH_WRITE)
        row = self.conn.execute(
            "SELECT revision, deleted, source_collection, source_id, target_collection, "
            "target_id, relation FROM facts WHERE graph = ? AND id = ?",
            (mutation.graph, mutation.fact_id),
        ).fetchone()
        if row is None or row[1]:
            raise NotFoundError(
                f"no fact {mutation.fact_id!r} in graph {mutation.graph!r}",
                details={"graph": mutation.graph, "fact_id": mutation.fact_id},
            )
        revision = int(row[0]) + 1
        ends = (row[2], row[3], row[4], row[5])
        checksum = fact_checksum(
            mutation.graph, mutation.fact_id, ends, row[6], None, None, revision, True
        )
        self.conn.execute(
            "UPDATE facts SET revision = ?, deleted = 1, position = ?, shape = NULL, "
            "record = NULL, checksum = ? WHERE graph = ? AND id = ?",
            (revision, self.position, checksum, mutation.graph, mutation.fact_id),
        )
        self.conn.execute(
            "DELETE FROM occurrences WHERE graph = ? AND fact_id = ?",
            (mutation.graph, mutation.fact_id),
        )
        self._change("fact", mutation.graph, mutation.fact_id, revision)
        return MutationOutcome(mutation.kind, mutation.graph, mutation.fact_id, revision)

    # ----------------------------------------------------------- configuration
    def _upsert(self, table: str, key: str, name: str, record: dict[str, Any]) -> int:
        revision = _revision_of(self.conn, table, name) + 1
        data = canonical_bytes(record)
        self.conn.execute(
            f"INSERT OR REPLACE INTO {table} ({key}, {_RECORD_COLUMN[table]}, revision, position, "
            "checksum) VALUES (?, ?, ?, ?, ?)",
            (name, data, revision, self.position, config_checksum(table, name, revision, data)),
        )
        self._change(table, table, name, revision)
        return revision

    def configure_collection(self, mutation: ConfigureCollection) -> MutationOutcome:
        require(self.principal, self.database, mutation.name, Capability.ADMIN)
        if _graph_exists(self.conn, mutation.name):
            raise ConflictError(f"{mutation.name!r} already names a graph")
        previous = load_collection(self.conn, mutation.name)
        revision = self._upsert("collections", "name", mutation.name, mutation.to_json())
        self._configs.pop(mutation.name, None)
        if previous is not None and (
            set(previous.text_fields) != set(mutation.text_fields)
            or previous.analyzer != mutation.analyzer
        ):
            self._reindex(mutation.name)
        return MutationOutcome(mutation.kind, mutation.name, mutation.name, revision)

    def _reindex(self, collection: str) -> None:
        """Give every live document of ``collection`` a new slot indexed with the new fields.

        Slots are append-only, so re-indexing is a re-slotting at this position: the old
        slot (indexed with the old fields) dies here, the new one (same revision, same
        body, its vectors carried over) is born here. Older read cuts keep the old index.
        """
        documents = self.conn.execute(
            "SELECT id FROM documents WHERE collection = ? AND deleted = 0 ORDER BY id",
            (collection,),
        ).fetchall()
        for (doc_id,) in documents:
            row = load_document(self.conn, collection, doc_id)
            assert row is not None and row.body is not None
            slot = self._next_slot()
            self._end_slot(row.slot)
            self.conn.execute(
                "UPDATE documents SET slot = ? WHERE collection = ? AND id = ?",
                (slot, collection, doc_id),
            )
            self.conn.execute(
                "INSERT INTO slots (slot, collection, id, revision, owner, project, birth, death) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, NULL)",
                (slot, collection, doc_id, row.revision, row.owner, row.project, self.position),
            )
            self._index_text(collection, slot, row.body)
            self._carry_vectors(row.slot, slot)
            self._change("document", collection, doc_id, row.revision, slot, row.slot)

    def _carry_vectors(self, old_slot: int, new_slot: int) -> None:
        """Re-bind the live vectors of ``old_slot`` to ``new_slot`` (new rows born here)."""
        live = self.conn.execute(
            "SELECT row FROM vector_rows WHERE slot = ? AND death IS NULL ORDER BY row",
            (old_slot,),
        ).fetchall()
        values = read_vectors(self.conn, [row for (row,) in live])
        for (row,) in live:
            space, vector = values[row]
            write_vectors(
                self.conn,
                space,
                [next_vector_row(self.conn)],
                [new_slot],
                self.position,
                vector[None, :],
            )
        self.conn.execute(
            "UPDATE vector_rows SET death = ? WHERE slot = ? AND death IS NULL",
            (self.position, old_slot),
        )

    def configure_graph(self, mutation: ConfigureGraph) -> MutationOutcome:
        require(self.principal, self.database, mutation.name, Capability.ADMIN)
        if load_collection(self.conn, mutation.name) is not None:
            raise ConflictError(f"{mutation.name!r} already names a collection")
        record = {**mutation.to_json(), "registry": REGISTRY_ID}
        revision = self._upsert("graphs", "name", mutation.name, record)
        return MutationOutcome(mutation.kind, mutation.name, mutation.name, revision)

    def configure_principal(self, mutation: ConfigurePrincipal) -> MutationOutcome:
        require(self.principal, self.database, "*", Capability.ADMIN)
        revision = _revision_of(self.conn, "principals", mutation.id) + 1
        principal = Principal(
            id=mutation.id,
            grants=mutation.grants,
            field_grants=mutation.field_grants,
            owner_id=mutation.owner_id,
            projects=mutation.projects,
            restrict_rows=mutation.restrict_rows,
            revoked=mutation.revoked,
            expires_at=mutation.expires_at,
            policy_epoch=revision,
        )
        self._upsert("principals", "id", mutation.id, principal.to_json())
        self.conn.execute("DELETE FROM api_keys WHERE principal = ?", (mutation.id,))
        for key in mutation.api_keys:
            taken = self.conn.execute(
                "SELECT principal FROM api_keys WHERE key_id = ?", (key.key_id,)
            ).fetchone()
            if taken is not None:
                raise ConflictError(
                    f"api key id {key.key_id!r} belongs to another principal",
                    details={"key_id": key.key_id},
                )
            self.conn.execute(
                "INSERT INTO api_keys (key_id, principal, verifier, position, checksum) "
                "VALUES (?, ?, ?, ?, ?)",
                (
                    key.key_id,
                    mutation.id,
                    key.verifier,
                    self.position,
                    key_checksum(key.key_id, mutation.id, key.verifier),
                ),
            )
        return MutationOutcome(mutation.kind, "principals", mutation.id, revision)

    def configure_policy(self, mutation: ConfigurePolicy) -> MutationOutcome:
        exists = load_collection(self.conn, mutation.resource) is not None or _graph_exists(
            self.conn, mutation.resource
        )
        if not exists:
            raise NotFoundError(
                f"no collection or graph {mutation.resource!r}",
                details={"resource": mutation.resource},
            )
        require(self.principal, self.database, mutation.resource, Capability.ADMIN)
        record = mutation.to_json()
        revision = self._upsert("policies", "resource", mutation.resource, record)
        self._policies.pop(mutation.resource, None)
        return MutationOutcome(mutation.kind, mutation.resource, mutation.resource, revision)

    # ------------------------------------------------------------------ driver
    def apply(self, mutation: Mutation) -> MutationOutcome:
        handler = getattr(self, mutation.kind)
        outcome: MutationOutcome = handler(mutation)
        return outcome


_RECORD_COLUMN = {
    "collections": "config",
    "graphs": "config",
    "principals": "record",
    "policies": "record",
}


def _denied(principal: Principal, resource: str, action: str) -> PermissionDeniedError:
    return PermissionDeniedError(
        f"principal {principal.id!r} may not {action} in {resource!r}",
        details={"principal": principal.id, "resource": resource},
    )


def _admit(mutation: PutFact) -> tuple[SemanticGraph, str]:
    """Derive the fact and its occurrences exactly as ``SemanticGraph`` admission does."""
    graph = SemanticGraph()
    source_identity = mutation.source_identity or EndpointIdentity.undeclared()
    target_identity = mutation.target_identity or EndpointIdentity.undeclared()
    graph.add_node(mutation.source.id, _GRAPH_NODE_KIND, identity=source_identity)
    if not graph.has_node(mutation.target.id):
        graph.add_node(mutation.target.id, _GRAPH_NODE_KIND, identity=target_identity)
    elif mutation.target_identity is not None and target_identity != source_identity:
        raise ValidationError(
            "a fact from a document to itself cannot give its endpoint two identities",
            details={"id": mutation.source.id},
        )
    occurrences: Iterable[Any] = mutation.occurrences or (None,)
    fact_id: str | None = None
    for occurrence in occurrences:
        result = graph.add_fact(
            mutation.source.id,
            mutation.target.id,
            mutation.relation,
            mutation.discriminator,
            occurrence=occurrence,
            annotations=mutation.annotations,
        )
        if result.outcome is AdmissionOutcome.UNRESOLVED:
            raise ValidationError(
                f"relation {mutation.relation!r} is not registered; it is never stored",
                details={"relation": mutation.relation},
            )
        fact_id = result.fact_id
    assert fact_id is not None
    return graph, fact_id


def apply_command(
    conn: sqlite3.Connection,
    request: CommandRequest,
    principal: Principal,
    position: int,
) -> tuple[MutationOutcome, ...]:
    """Apply every mutation of ``request`` at ``position``; the caller owns the transaction."""
    applier = Applier(conn, request.database, principal, position)
    outcomes = []
    for index, mutation in enumerate(request.mutations):
        try:
            outcomes.append(applier.apply(mutation))
        except (ValidationError, NotFoundError, ConflictError, PermissionDeniedError) as exc:
            exc.details.setdefault("mutation", index)
            raise
    set_position(conn, position)
    return tuple(outcomes)


def set_position(conn: sqlite3.Connection, position: int) -> None:
    """Record ``position`` as the file's commit position (inside the caller's transaction)."""
    conn.execute("UPDATE meta SET value = ? WHERE key = 'position'", (str(position),))
