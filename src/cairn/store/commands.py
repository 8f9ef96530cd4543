"""Write contracts: the command, its typed mutations, the receipt and stored outcomes (§2).

A ``CommandRequest`` is a client-chosen UUID, a database name and up to 256 mutations.
Its canonical JSON (``to_json``) is what a cluster would replicate and what the
idempotency fingerprint (SHA-256) is taken over, so every contract here has an exact,
complete plain-JSON form and a parser back (``command_from_json``). Records are frozen
and hold only immutable values: JSON bodies become read-only mappings.

Constructors check shapes and types only; identifier rules and limits are checked when
the command is applied (``validate_command``), so breaking them is a stored outcome like
any other error of that command.
"""

from __future__ import annotations

import dataclasses
import uuid
import zlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from typing import Any, ClassVar, TypeAlias

import orjson

from cairn.canonical import canonical_bytes, digest_bytes
from cairn.errors import CairnError, CorruptionError, ValidationError, from_problem
from cairn.graph.model import (
    ConfidenceObservation,
    EndpointIdentity,
    SourceRange,
    freeze,
    thaw,
)
from cairn.graph.multigraph import OccurrenceInput
from cairn.store.limits import MAX_VECTOR_VALUE
from cairn.store.policy import (
    ApiKeyVerifier,
    FieldPolicy,
    Grant,
    check_aware,
    datetime_from_json,
    datetime_to_json,
)
from cairn.store.rules import check_fields
from cairn.store.text import DEFAULT_ANALYZER

__all__ = [
    "DURABILITY_PROCESS_DURABLE",
    "MUTATION_TYPES",
    "OUTCOME_PACK_BYTES",
    "RECEIPT_PIECE_MUTATIONS",
    "CommandRequest",
    "CommitReceipt",
    "CommitToken",
    "ConfigureCollection",
    "ConfigureGraph",
    "ConfigurePolicy",
    "ConfigurePrincipal",
    "DeleteDocument",
    "DeleteFact",
    "DocumentAccess",
    "EntityRef",
    "Metric",
    "Mutation",
    "MutationOutcome",
    "PatchDocument",
    "PatchOperation",
    "PutDocument",
    "PutFact",
    "PutVector",
    "VectorField",
    "VectorSpace",
    "command_from_json",
    "decode_outcome",
    "encode_error",
    "encode_receipt",
    "occurrence_from_json",
    "occurrence_to_json",
    "pack_outcome",
    "pack_pieces",
    "read_outcome",
    "receipt_pieces",
    "unpack_outcome",
]

DURABILITY_PROCESS_DURABLE = "process_durable"
"""The WAL was fsync'd (``synchronous=FULL``) before the receipt was returned."""


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ValidationError(message)


def _optional_str(value: object, what: str) -> None:
    _require(value is None or isinstance(value, str), f"{what} must be a string or None")


def _revision(value: object, what: str, *, optional: bool) -> None:
    if value is None and optional:
        return
    _require(type(value) is int and value >= 0, f"{what} must be an integer >= 0")


def _frozen_object(value: object, what: str) -> Mapping[str, Any]:
    _require(isinstance(value, Mapping), f"{what} must be a JSON object")
    frozen = freeze(value)
    assert isinstance(frozen, Mapping)
    return frozen


# ------------------------------------------------------------------ values
@dataclass(frozen=True, slots=True, order=True)
class EntityRef:
    """A document inside one database: ``(collection, id)``; sorts by that key."""

    collection: str
    id: str

    def __post_init__(self) -> None:
        _require(isinstance(self.collection, str), "entity ref collection must be a string")
        _require(isinstance(self.id, str), "entity ref id must be a string")

    def validate(self) -> None:
        """Check the identifier rules on both parts."""
        check_fields(self)

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {"collection": self.collection, "id": self.id}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> EntityRef:
        """Parse the plain JSON form."""
        return cls(data["collection"], data["id"])


@dataclass(frozen=True, slots=True)
class DocumentAccess:
    """Row access of a document: its owner and project (both optional)."""

    owner: str | None = None
    project: str | None = None

    def __post_init__(self) -> None:
        _optional_str(self.owner, "access owner")
        _optional_str(self.project, "access project")

    def validate(self) -> None:
        """Check the identifier rules on the given parts."""
        check_fields(self)

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {"owner": self.owner, "project": self.project}

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> DocumentAccess | None:
        """Parse the plain JSON form (``None`` stays ``None``)."""
        return None if data is None else cls(data["owner"], data["project"])


class Metric(StrEnum):
    """How a vector space compares vectors."""

    COSINE = "cosine"
    DOT = "dot"
    EUCLIDEAN = "euclidean"


@dataclass(frozen=True, slots=True)
class VectorSpace:
    """An embedding space; vectors are only ever compared inside the exact same space."""

    id: str
    dimension: int
    metric: Metric
    model: str
    version: str

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "metric", Metric(self.metric))
        except ValueError as exc:
            raise ValidationError(f"unknown metric {self.metric!r}") from exc
        _require(type(self.dimension) is int, "vector space dimension must be an integer")

    def validate(self) -> None:
        """Check identifiers and the dimension range."""
        check_fields(self)

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {
            "id": self.id,
            "dimension": self.dimension,
            "metric": self.metric.value,
            "model": self.model,
            "version": self.version,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> VectorSpace:
        """Parse the plain JSON form."""
        return cls(data["id"], data["dimension"], data["metric"], data["model"], data["version"])


@dataclass(frozen=True, slots=True)
class VectorField:
    """A named vector field of a collection and the space its vectors live in."""

    name: str
    space: VectorSpace

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {"name": self.name, "space": self.space.to_json()}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> VectorField:
        """Parse the plain JSON form."""
        return cls(data["name"], VectorSpace.from_json(data["space"]))


@dataclass(frozen=True, slots=True)
class PatchOperation:
    """One patch step: ``set`` a value at a JSON pointer or ``remove`` what is there."""

    op: str
    path: str
    value: Any = None

    def __post_init__(self) -> None:
        _require(self.op in ("set", "remove"), f"patch op must be 'set' or 'remove': {self.op!r}")
        _require(isinstance(self.path, str), "patch path must be a string")
        _require(self.op == "set" or self.value is None, "a remove carries no value")
        object.__setattr__(self, "value", freeze(self.value))

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {"op": self.op, "path": self.path, "value": thaw(self.value)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PatchOperation:
        """Parse the plain JSON form."""
        return cls(data["op"], data["path"], data["value"])


# --------------------------------------------------------------- occurrences
def occurrence_to_json(occurrence: OccurrenceInput) -> dict[str, Any]:
    """Plain JSON form of an ``OccurrenceInput`` (every field, in a fixed shape)."""
    return {
        "adapter_id": occurrence.adapter_id,
        "strategy": occurrence.strategy,
        "adapter_version": occurrence.adapter_version,
        "source_file": occurrence.source_file,
        "source_range": occurrence.source_range.to_json() if occurrence.source_range else None,
        "target_file": occurrence.target_file,
        "target_range": occurrence.target_range.to_json() if occurrence.target_range else None,
        "site_kind": occurrence.site_kind,
        "adapter_evidence_key": occurrence.adapter_evidence_key,
        "provenance": [thaw(item) for item in occurrence.provenance],
        "confidence": [item.to_json() for item in occurrence.confidence],
        "metadata": thaw(occurrence.metadata) if occurrence.metadata is not None else None,
    }


def occurrence_from_json(data: Mapping[str, Any]) -> OccurrenceInput:
    """Parse ``occurrence_to_json`` output."""
    return OccurrenceInput(
        adapter_id=data["adapter_id"],
        strategy=data["strategy"],
        adapter_version=data["adapter_version"],
        source_file=data["source_file"],
        source_range=SourceRange.from_json(data["source_range"]),
        target_file=data["target_file"],
        target_range=SourceRange.from_json(data["target_range"]),
        site_kind=data["site_kind"],
        adapter_evidence_key=data["adapter_evidence_key"],
        provenance=tuple(freeze(item) for item in data["provenance"]),
        confidence=tuple(ConfidenceObservation.from_json(item) for item in data["confidence"]),
        metadata=freeze(data["metadata"]) if data["metadata"] is not None else None,
    )


def _frozen_occurrence(occurrence: object) -> OccurrenceInput:
    _require(isinstance(occurrence, OccurrenceInput), "occurrences must be OccurrenceInput")
    assert isinstance(occurrence, OccurrenceInput)
    # Round-trip through JSON: validates every part and freezes nested JSON values.
    return occurrence_from_json(occurrence_to_json(occurrence))


# ----------------------------------------------------------------- mutations
@dataclass(frozen=True, slots=True)
class PutDocument:
    """Create or replace a document; ``expected_revision`` None = unconditional, 0 = create."""

    kind: ClassVar[str] = "put_document"
    collection: str
    id: str
    body: Mapping[str, Any]
    expected_revision: int | None = None
    access: DocumentAccess | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "body", _frozen_object(self.body, "document body"))
        _revision(self.expected_revision, "expected_revision", optional=True)
        _require(
            self.access is None or isinstance(self.access, DocumentAccess),
            "access must be a DocumentAccess",
        )

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {
            "kind": self.kind,
            "collection": self.collection,
            "id": self.id,
            "body": thaw(self.body),
            "expected_revision": self.expected_revision,
            "access": self.access.to_json() if self.access else None,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PutDocument:
        """Parse the plain JSON form."""
        return cls(
            data["collection"],
            data["id"],
            data["body"],
            data["expected_revision"],
            DocumentAccess.from_json(_with_defaults(DocumentAccess, data["access"])),
        )


@dataclass(frozen=True, slots=True)
class PatchDocument:
    """Apply JSON-pointer set/remove operations to a live document at a known revision."""

    kind: ClassVar[str] = "patch_document"
    collection: str
    id: str
    operations: tuple[PatchOperation, ...]
    expected_revision: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "operations", tuple(self.operations))
        _require(
            all(isinstance(op, PatchOperation) for op in self.operations),
            "patch operations must be PatchOperation records",
        )
        _revision(self.expected_revision, "expected_revision", optional=False)

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {
            "kind": self.kind,
            "collection": self.collection,
            "id": self.id,
            "operations": [op.to_json() for op in self.operations],
            "expected_revision": self.expected_revision,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PatchDocument:
        """Parse the plain JSON form."""
        operations = tuple(
            PatchOperation.from_json(_with_defaults(PatchOperation, op))
            for op in data["operations"]
        )
        return cls(data["collection"], data["id"], operations, data["expected_revision"])


@dataclass(frozen=True, slots=True)
class DeleteDocument:
    """Delete a live document, leaving a tombstone revision."""

    kind: ClassVar[str] = "delete_document"
    collection: str
    id: str
    expected_revision: int | None = None

    def __post_init__(self) -> None:
        _revision(self.expected_revision, "expected_revision", optional=True)

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {
            "kind": self.kind,
            "collection": self.collection,
            "id": self.id,
            "expected_revision": self.expected_revision,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> DeleteDocument:
        """Parse the plain JSON form."""
        return cls(data["collection"], data["id"], data["expected_revision"])


@dataclass(frozen=True, slots=True)
class PutVector:
    """Set a document's vector for one field; it binds to the document's current revision."""

    kind: ClassVar[str] = "put_vector"
    collection: str
    id: str
    field: str
    vector: tuple[float, ...]

    def __post_init__(self) -> None:
        values = tuple(self.vector)
        _require(
            all(isinstance(v, int | float) and not isinstance(v, bool) for v in values),
            "vector values must be numbers",
        )
        # An integer past float range would overflow float(); it is past float32 anyway.
        _require(
            all(isinstance(v, float) or abs(v) <= MAX_VECTOR_VALUE for v in values),
            f"vector values are stored as float32: each must be within ±{MAX_VECTOR_VALUE}",
        )
        object.__setattr__(self, "vector", tuple(float(v) for v in values))

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {
            "kind": self.kind,
            "collection": self.collection,
            "id": self.id,
            "field": self.field,
            "vector": list(self.vector),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PutVector:
        """Parse the plain JSON form."""
        return cls(data["collection"], data["id"], data["field"], tuple(data["vector"]))


@dataclass(frozen=True, slots=True)
class PutFact:
    """Write one semantic fact with its occurrences into a graph (replacing its evidence).

    The fact ID is derived exactly as ``SemanticGraph`` derives it, from the endpoint
    document IDs, the relation and the registry-normalised discriminator. The optional
    endpoint identities qualify the endpoints (spec semantic-graph §3) and are recorded
    on the fact; omitted, an endpoint is ``unknown`` (never ``stable``).
    """

    kind: ClassVar[str] = "put_fact"
    graph: str
    source: EntityRef
    target: EntityRef
    relation: str
    discriminator: Mapping[str, Any] | None = None
    annotations: Mapping[str, Any] | None = None
    occurrences: tuple[OccurrenceInput, ...] = ()
    source_identity: EndpointIdentity | None = None
    target_identity: EndpointIdentity | None = None

    def __post_init__(self) -> None:
        _require(isinstance(self.source, EntityRef), "fact source must be an EntityRef")
        _require(isinstance(self.target, EntityRef), "fact target must be an EntityRef")
        for what in ("source_identity", "target_identity"):
            value = getattr(self, what)
            _require(
                value is None or isinstance(value, EndpointIdentity),
                f"{what} must be an EndpointIdentity or None",
            )
        if self.discriminator is not None:
            object.__setattr__(
                self, "discriminator", _frozen_object(self.discriminator, "discriminator")
            )
        if self.annotations is not None:
            object.__setattr__(self, "annotations", _frozen_object(self.annotations, "annotations"))
        object.__setattr__(
            self, "occurrences", tuple(_frozen_occurrence(item) for item in self.occurrences)
        )

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form (identity keys only when given, so older commands keep their bytes)."""
        data = {
            "kind": self.kind,
            "graph": self.graph,
            "source": self.source.to_json(),
            "target": self.target.to_json(),
            "relation": self.relation,
            "discriminator": thaw(self.discriminator) if self.discriminator is not None else None,
            "annotations": thaw(self.annotations) if self.annotations is not None else None,
            "occurrences": [occurrence_to_json(item) for item in self.occurrences],
        }
        if self.source_identity is not None:
            data["source_identity"] = self.source_identity.to_json()
        if self.target_identity is not None:
            data["target_identity"] = self.target_identity.to_json()
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PutFact:
        """Parse the plain JSON form."""
        source_identity = data.get("source_identity")
        target_identity = data.get("target_identity")
        return cls(
            data["graph"],
            EntityRef.from_json(data["source"]),
            EntityRef.from_json(data["target"]),
            data["relation"],
            data["discriminator"],
            data["annotations"],
            tuple(
                occurrence_from_json(_with_defaults(OccurrenceInput, item))
                for item in data["occurrences"]
            ),
            None if source_identity is None else EndpointIdentity.from_json(source_identity),
            None if target_identity is None else EndpointIdentity.from_json(target_identity),
        )


@dataclass(frozen=True, slots=True)
class DeleteFact:
    """Delete one fact (and its occurrences) from a graph."""

    kind: ClassVar[str] = "delete_fact"
    graph: str
    fact_id: str

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {"kind": self.kind, "graph": self.graph, "fact_id": self.fact_id}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> DeleteFact:
        """Parse the plain JSON form."""
        return cls(data["graph"], data["fact_id"])


@dataclass(frozen=True, slots=True)
class ConfigureCollection:
    """Create or reconfigure a collection: its text fields, their analyzer and its vector
    fields (admin). Changing the fields or the analyzer re-indexes the collection's text."""

    kind: ClassVar[str] = "configure_collection"
    name: str
    text_fields: tuple[str, ...] = ()
    vector_fields: tuple[VectorField, ...] = ()
    analyzer: str = DEFAULT_ANALYZER

    def __post_init__(self) -> None:
        object.__setattr__(self, "text_fields", tuple(self.text_fields))
        object.__setattr__(self, "vector_fields", tuple(self.vector_fields))
        _require(
            all(isinstance(item, VectorField) for item in self.vector_fields),
            "vector fields must be VectorField records",
        )

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form."""
        data = {
            "kind": self.kind,
            "name": self.name,
            "text_fields": list(self.text_fields),
            "vector_fields": [item.to_json() for item in self.vector_fields],
        }
        if self.analyzer != DEFAULT_ANALYZER:  # the default is unwritten: older commands' bytes
            data["analyzer"] = self.analyzer
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ConfigureCollection:
        """Parse the plain JSON form (no ``analyzer``: the default)."""
        return cls(
            data["name"],
            tuple(data["text_fields"]),
            tuple(VectorField.from_json(item) for item in data["vector_fields"]),
            data.get("analyzer", DEFAULT_ANALYZER),
        )


@dataclass(frozen=True, slots=True)
class ConfigureGraph:
    """Create a named graph (admin); facts can only be written into a configured graph."""

    kind: ClassVar[str] = "configure_graph"
    name: str

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {"kind": self.kind, "name": self.name}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ConfigureGraph:
        """Parse the plain JSON form."""
        return cls(data["name"])


@dataclass(frozen=True, slots=True)
class ConfigurePrincipal:
    """Create or replace a principal with its grants and API key verifiers (admin).

    The whole principal is replaced: a key verifier left out is revoked.
    """

    kind: ClassVar[str] = "configure_principal"
    id: str
    grants: tuple[Grant, ...] = ()
    field_grants: frozenset[str] = field(default_factory=frozenset)
    owner_id: str | None = None
    projects: frozenset[str] = field(default_factory=frozenset)
    restrict_rows: bool = False
    revoked: bool = False
    expires_at: datetime | None = None
    api_keys: tuple[ApiKeyVerifier, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "grants", tuple(self.grants))
        object.__setattr__(self, "field_grants", frozenset(self.field_grants))
        object.__setattr__(self, "projects", frozenset(self.projects))
        object.__setattr__(self, "api_keys", tuple(self.api_keys))
        _require(all(isinstance(g, Grant) for g in self.grants), "grants must be Grant records")
        _require(
            all(isinstance(k, ApiKeyVerifier) for k in self.api_keys),
            "api keys must be ApiKeyVerifier records",
        )
        _require(all(isinstance(g, str) for g in self.field_grants), "field grants are strings")
        _require(all(isinstance(p, str) for p in self.projects), "projects are strings")
        _optional_str(self.owner_id, "owner_id")
        _require(isinstance(self.restrict_rows, bool), "restrict_rows must be a bool")
        _require(isinstance(self.revoked, bool), "revoked must be a bool")
        check_aware(self.expires_at, "expires_at")

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form (sets sorted)."""
        return {
            "kind": self.kind,
            "id": self.id,
            "grants": [grant.to_json() for grant in self.grants],
            "field_grants": sorted(self.field_grants),
            "owner_id": self.owner_id,
            "projects": sorted(self.projects),
            "restrict_rows": self.restrict_rows,
            "revoked": self.revoked,
            "expires_at": datetime_to_json(self.expires_at),
            "api_keys": [key.to_json() for key in self.api_keys],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ConfigurePrincipal:
        """Parse the plain JSON form."""
        return cls(
            id=data["id"],
            grants=tuple(Grant.from_json(item) for item in data["grants"]),
            field_grants=frozenset(data["field_grants"]),
            owner_id=data["owner_id"],
            projects=frozenset(data["projects"]),
            restrict_rows=data["restrict_rows"],
            revoked=data["revoked"],
            expires_at=datetime_from_json(data["expires_at"]),
            api_keys=tuple(ApiKeyVerifier.from_json(item) for item in data["api_keys"]),
        )


@dataclass(frozen=True, slots=True)
class ConfigurePolicy:
    """Replace the field policies of one resource (a collection or a graph; admin)."""

    kind: ClassVar[str] = "configure_policy"
    resource: str
    fields: tuple[FieldPolicy, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", tuple(self.fields))
        _require(
            all(isinstance(item, FieldPolicy) for item in self.fields),
            "field policies must be FieldPolicy records",
        )

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {
            "kind": self.kind,
            "resource": self.resource,
            "fields": [item.to_json() for item in self.fields],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ConfigurePolicy:
        """Parse the plain JSON form."""
        fields = data["fields"]
        return cls(
            data["resource"],
            tuple(FieldPolicy.from_json(_with_defaults(FieldPolicy, f)) for f in fields),
        )


Mutation: TypeAlias = (
    PutDocument
    | PatchDocument
    | DeleteDocument
    | PutVector
    | PutFact
    | DeleteFact
    | ConfigureCollection
    | ConfigureGraph
    | ConfigurePrincipal
    | ConfigurePolicy
)
"""Any one typed mutation."""

MUTATION_TYPES: dict[str, type[Mutation]] = {
    cls.kind: cls
    for cls in (
        PutDocument,
        PatchDocument,
        DeleteDocument,
        PutVector,
        PutFact,
        DeleteFact,
        ConfigureCollection,
        ConfigureGraph,
        ConfigurePrincipal,
        ConfigurePolicy,
    )
}
"""Every mutation record by its wire ``kind``."""


@dataclass(frozen=True, slots=True)
class CommandRequest:
    """One atomic write: a client-chosen UUID, the database it targets, its mutations."""

    command_id: uuid.UUID
    database: str
    mutations: tuple[Mutation, ...]

    def __post_init__(self) -> None:
        _require(isinstance(self.command_id, uuid.UUID), "command_id must be a uuid.UUID")
        _require(isinstance(self.database, str), "database must be a string")
        object.__setattr__(self, "mutations", tuple(self.mutations))
        _require(
            all(type(m) in MUTATION_TYPES.values() for m in self.mutations),
            "mutations must be typed mutation records",
        )

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form: the bytes a replica would apply."""
        return {
            "command_id": str(self.command_id),
            "database": self.database,
            "mutations": [mutation.to_json() for mutation in self.mutations],
        }

    def canonical_bytes(self) -> bytes:
        """Canonical JSON bytes of the command."""
        return canonical_bytes(self.to_json())

    def fingerprint(self) -> str:
        """SHA-256 (hex) of the canonical command: the idempotency fingerprint."""
        return digest_bytes(self.canonical_bytes())


def _with_defaults(cls: type[Any], data: Any) -> Any:
    """``data`` (a record's JSON object) with every omitted field that has a default
    given that default's JSON form, so a request may leave out what the schema marks
    optional; anything but an object is returned as it is, for the parser to judge."""
    if not isinstance(data, Mapping):
        return data
    missing: dict[str, Any] = {}
    for item in dataclasses.fields(cls):
        if item.name in data:
            continue
        if item.default is not dataclasses.MISSING:
            missing[item.name] = _json_default(item.default)
        elif item.default_factory is not dataclasses.MISSING:
            missing[item.name] = _json_default(item.default_factory())
    return {**missing, **data} if missing else data


def _json_default(value: Any) -> Any:
    # The records' defaults are None, False and empty collections.
    return list(value) if isinstance(value, tuple | frozenset) else value


def command_from_json(data: Mapping[str, Any]) -> CommandRequest:
    """Parse ``CommandRequest.to_json`` output (``ValidationError`` when malformed);
    fields with defaults may be left out."""
    try:
        mutations = []
        for item in data["mutations"]:
            cls = MUTATION_TYPES.get(item["kind"])
            if cls is None:
                raise ValidationError(f"unknown mutation kind {item['kind']!r}")
            mutations.append(cls.from_json(_with_defaults(cls, item)))
        return CommandRequest(uuid.UUID(data["command_id"]), data["database"], tuple(mutations))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ValidationError(f"malformed command: {exc}") from exc


# ------------------------------------------------------------------ receipts
@dataclass(frozen=True, slots=True)
class CommitToken:
    """Where a commit landed: the file incarnation, the database and the commit position."""

    incarnation: uuid.UUID
    database: str
    position: int

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {
            "incarnation": str(self.incarnation),
            "database": self.database,
            "position": self.position,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CommitToken:
        """Parse the plain JSON form."""
        return cls(uuid.UUID(data["incarnation"]), data["database"], data["position"])


@dataclass(frozen=True, slots=True)
class MutationOutcome:
    """What one mutation did: its kind, the resource, the record ID and its new revision."""

    kind: str
    resource: str
    id: str
    revision: int

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {
            "kind": self.kind,
            "resource": self.resource,
            "id": self.id,
            "revision": self.revision,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MutationOutcome:
        """Parse the plain JSON form."""
        return cls(data["kind"], data["resource"], data["id"], data["revision"])


@dataclass(frozen=True, slots=True)
class CommitReceipt:
    """The reply to a committed command; a pure function of the command and prior state."""

    command_id: uuid.UUID
    token: CommitToken
    mutations: tuple[MutationOutcome, ...]
    durability: str = DURABILITY_PROCESS_DURABLE

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {
            "command_id": str(self.command_id),
            "token": self.token.to_json(),
            "mutations": [item.to_json() for item in self.mutations],
            "durability": self.durability,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CommitReceipt:
        """Parse the plain JSON form."""
        return cls(
            uuid.UUID(data["command_id"]),
            CommitToken.from_json(data["token"]),
            tuple(MutationOutcome.from_json(item) for item in data["mutations"]),
            data["durability"],
        )


def encode_receipt(receipt: CommitReceipt) -> bytes:
    """The stored outcome bytes of a committed command."""
    return canonical_bytes({"ok": True, "receipt": receipt.to_json()})


RECEIPT_PIECE_MUTATIONS = 8192
"""Mutations one piece of ``receipt_pieces`` encodes (a load's receipt is never one value)."""

_MUTATIONS_MARK = b'"mutations":[]'


def receipt_pieces(receipt: CommitReceipt) -> Iterator[bytes]:
    """``encode_receipt(receipt)`` in pieces that join to the same bytes.

    A load's receipt names every mutation (1.5M for 300k documents): encoding it whole
    builds a JSON object per mutation at once. Here the mutations are encoded
    ``RECEIPT_PIECE_MUTATIONS`` at a time into the canonical frame of the rest.
    """
    frame = canonical_bytes({"ok": True, "receipt": replace(receipt, mutations=()).to_json()})
    before, after = frame.split(_MUTATIONS_MARK)  # once: no other value can hold it
    yield before + b'"mutations":['
    mutations = receipt.mutations
    for start in range(0, len(mutations), RECEIPT_PIECE_MUTATIONS):
        chunk = mutations[start : start + RECEIPT_PIECE_MUTATIONS]
        encoded = canonical_bytes([item.to_json() for item in chunk])[1:-1]
        yield b"," + encoded if start else encoded
    yield b"]" + after


def encode_error(error: CairnError) -> bytes:
    """The stored outcome bytes of a rejected command: its RFC 9457 problem."""
    return canonical_bytes({"ok": False, "error": error.to_problem()})


OUTCOME_PACK_BYTES = 4096
"""Stored outcomes longer than this are zlib-compressed (a load's receipt names every
mutation: 9 MB of JSON for Django, about 1 MB packed)."""
_ZLIB_LEVEL = 6


def pack_outcome(data: bytes) -> bytes:
    """The stored form of outcome bytes: as is, or zlib-compressed when long.

    Outcome JSON always begins with ``{`` and a zlib stream never does (its first byte
    is 0x78 at every level used here), so the stored bytes say which they are.
    """
    return pack_pieces((data,))


def pack_pieces(pieces: Iterable[bytes]) -> bytes:
    """``pack_outcome`` of the joined ``pieces``, compressed as they come (the long
    outcome is never joined; zlib's output does not depend on how input is split)."""
    head: list[bytes] = []
    size = 0
    rest = iter(pieces)
    for piece in rest:
        head.append(piece)
        size += len(piece)
        if size > OUTCOME_PACK_BYTES:
            break
    else:
        return b"".join(head)
    packer = zlib.compressobj(_ZLIB_LEVEL)
    packed = [packer.compress(piece) for piece in head]
    packed.extend(packer.compress(piece) for piece in rest)
    packed.append(packer.flush())
    return b"".join(packed)


def unpack_outcome(stored: bytes) -> bytes:
    """The outcome bytes ``pack_outcome`` stored; ``CorruptionError`` if they do not unpack."""
    data = bytes(stored)
    if data.startswith(b"{"):
        return data
    try:
        return zlib.decompress(data)
    except zlib.error as exc:
        raise CorruptionError(f"a stored command outcome does not decompress: {exc}") from exc


def read_outcome(stored: bytes, command_id: str) -> CommitReceipt | CairnError:
    """The receipt or error a stored outcome holds; ``CorruptionError`` naming the
    command if its bytes do not unpack, parse or decode (never a raw parser error)."""
    data = unpack_outcome(stored)
    try:
        return decode_outcome(orjson.loads(data))
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError) as exc:
        raise CorruptionError(
            f"the stored outcome of command {command_id} is damaged ({type(exc).__name__})",
            details={"table": "commands", "command_id": command_id},
        ) from exc


def decode_outcome(data: Mapping[str, Any]) -> CommitReceipt | CairnError:
    """Turn parsed outcome JSON back into the receipt, or the error to raise again."""
    if data["ok"]:
        return CommitReceipt.from_json(data["receipt"])
    return from_problem(data["error"])
