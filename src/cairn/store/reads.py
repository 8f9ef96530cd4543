"""Reads through one read cut: documents as a principal may see them (with redaction).

A ``ReadCut`` is one SQLite read transaction pinned at commit position ``P`` together
with the principal resolved inside that same transaction. Everything here reads only
through the cut it is given, so one request sees one position. The layer above
(``cairn.index``) extends the cut with its in-memory columns viewed at the same ``P``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import orjson

from cairn.canonical import canonical_bytes
from cairn.errors import CairnError, CorruptionError, NotFoundError
from cairn.graph.model import freeze
from cairn.store.apply import load_collection, load_document, load_field_policies
from cairn.store.cache import Memo
from cairn.store.checksums import document_checksum, stored_bytes
from cairn.store.commands import ConfigureCollection, EntityRef
from cairn.store.limits import SQLITE_PARAMETER_BATCH, check_identifier
from cairn.store.policy import (
    Capability,
    FieldPolicy,
    Principal,
    holds_any,
    redact,
    require,
    row_visible,
)

__all__ = [
    "READ_CAPABILITIES",
    "DocumentResult",
    "ReadCut",
    "collection_config",
    "document_fields",
    "field_policies",
    "read_document",
    "read_documents",
    "read_documents_sized",
    "require_collection",
]

READ_CAPABILITIES = (Capability.DOCUMENTS_READ, Capability.QUERY)
"""Either capability lets a principal read a collection's documents (and search it)."""


@dataclass(frozen=True, slots=True)
class ReadCut:
    """One pinned read: the SQLite snapshot, its position and the principal.

    ``memo`` keeps values read from the truth at a position (configuration, policies)
    for every cut at that position; keys must hold the position.
    """

    conn: sqlite3.Connection
    database: str
    position: int
    principal: Principal
    memo: Memo


@dataclass(frozen=True, slots=True)
class DocumentResult:
    """A document as a principal may see it: fields it may not read are removed."""

    ref: EntityRef
    revision: int
    body: Mapping[str, Any]
    redacted: bool = False
    redacted_fields: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # Immutable whatever the caller passed: a returned body can never change the store.
        if not isinstance(self.body, MappingProxyType):
            object.__setattr__(self, "body", freeze(self.body))
        object.__setattr__(self, "redacted_fields", tuple(self.redacted_fields))


def collection_config(cut: ReadCut, name: str) -> ConfigureCollection | None:
    """The configuration of collection ``name`` at the cut (memoised per position).

    Configuration changes only by a committed command, and every commit moves the
    position, so the configuration at a position never changes.
    """
    found: ConfigureCollection | None = cut.memo.get(
        ("collection-config", name, cut.position), lambda: load_collection(cut.conn, name)
    )
    return found


def field_policies(cut: ReadCut, resource: str) -> tuple[FieldPolicy, ...]:
    """The field policies of ``resource`` at the cut (memoised per position, as above)."""
    found: tuple[FieldPolicy, ...] = cut.memo.get(
        ("field-policies", resource, cut.position),
        lambda: load_field_policies(cut.conn, resource),
    )
    return found


def require_collection(cut: ReadCut, collection: str, *any_of: Capability) -> ConfigureCollection:
    """The configuration of ``collection`` if the principal holds one of ``any_of`` on it.

    Existence is protected: a collection the principal holds no capability on gets the
    very answer a missing one gets (``NotFoundError``, same message and details); only
    a principal that holds some grant on it learns which capability it lacks.
    """
    config = collection_config(cut, collection)
    if config is None or not holds_any(cut.principal, cut.database, collection):
        raise NotFoundError(f"no collection {collection!r}", details={"collection": collection})
    require(cut.principal, cut.database, collection, *any_of)
    return config


def read_document(cut: ReadCut, collection: str, doc_id: str) -> DocumentResult:
    """The live, visible document ``(collection, id)`` at the cut, redacted for the principal."""
    check_identifier(collection, "collection")
    check_identifier(doc_id, "document id")
    require_collection(cut, collection, *READ_CAPABILITIES)
    row = load_document(cut.conn, collection, doc_id)
    if row is None:
        _check_absent(cut, collection, doc_id)
    if (
        row is None
        or not row.live
        or row.body is None
        or not row_visible(cut.principal, cut.database, collection, row.owner, row.project)
    ):
        raise NotFoundError(
            f"no document {doc_id!r} in {collection!r}",
            details={"collection": collection, "id": doc_id},
        )
    policies = field_policies(cut, collection)
    body, removed = redact(cut.principal, cut.database, collection, policies, row.body)
    return DocumentResult(
        EntityRef(collection, doc_id), row.revision, freeze(body), bool(removed), removed
    )


def _check_absent(cut: ReadCut, collection: str, doc_id: str) -> None:
    """Raise ``CorruptionError`` if a live slot names a document the table lacks.

    Document rows are never removed (a delete leaves a tombstone), so a missing row with
    a live slot is a damaged key, not an absent document: saying "not found" would be a
    wrong answer. Only the not-found path pays for this scan of the live slots.
    """
    found = cut.conn.execute(
        "SELECT slot FROM slots WHERE death IS NULL AND collection = ? AND id = ?",
        (collection, doc_id),
    ).fetchone()
    if found is not None:
        raise CorruptionError(
            f"document {collection}/{doc_id} is damaged: its live slot {found[0]} has no "
            "stored row (restore a backup, or re-run the load or `cairn index --force` that "
            "wrote it)",
            details={"table": "documents", "collection": collection, "id": doc_id},
        )


def read_documents(cut: ReadCut, refs: Sequence[EntityRef]) -> list[DocumentResult | None]:
    """``read_document`` for many refs with one query per collection; None where it fails.

    A None entry is a ref ``read_document`` would refuse (call it for the exact error);
    every other entry equals what ``read_document`` returns for that ref.
    """
    return [None if item is None else item[0] for item in read_documents_sized(cut, refs)]


def read_documents_sized(
    cut: ReadCut, refs: Sequence[EntityRef]
) -> list[tuple[DocumentResult, int] | None]:
    """``read_documents`` with each result's canonical body size in bytes.

    A stored body is canonical JSON already, so an unredacted body's size is its stored
    length; a redacted one is measured after redaction.
    """
    wanted: dict[str, list[str]] = {}
    for ref in refs:
        wanted.setdefault(ref.collection, []).append(ref.id)
    found: dict[EntityRef, tuple[DocumentResult, int]] = {}
    for collection, ids in wanted.items():
        try:
            check_identifier(collection, "collection")
            require_collection(cut, collection, *READ_CAPABILITIES)
        except CairnError:
            continue
        policies = field_policies(cut, collection)
        unique = sorted(set(ids))
        for start in range(0, len(unique), SQLITE_PARAMETER_BATCH):
            batch = unique[start : start + SQLITE_PARAMETER_BATCH]
            marks = ", ".join("?" * len(batch))
            rows = cut.conn.execute(
                f"SELECT id, revision, body, owner, project, checksum FROM documents "
                f"WHERE collection = ? AND deleted = 0 AND id IN ({marks})",
                (collection, *batch),
            ).fetchall()
            for doc_id, revision, stored_body, owner, project, checksum in rows:
                data = stored_bytes(stored_body)
                if data is None or checksum != document_checksum(
                    collection, doc_id, revision, owner, project, False, data
                ):
                    continue  # read_document raises the CorruptionError for it
                if not row_visible(cut.principal, cut.database, collection, owner, project):
                    continue
                try:
                    stored = orjson.loads(data)
                except orjson.JSONDecodeError:
                    continue  # read_document raises the CorruptionError for it
                body, removed = redact(cut.principal, cut.database, collection, policies, stored)
                ref = EntityRef(collection, doc_id)
                size = len(canonical_bytes(body)) if removed else len(data)
                result = DocumentResult(ref, revision, freeze(body), bool(removed), removed)
                found[ref] = (result, size)
    return [found.get(ref) for ref in refs]


def document_fields(
    cut: ReadCut, collection: str, names: Sequence[str]
) -> dict[str, tuple[Any, ...]]:
    """Every live document of ``collection`` the principal may see, by ID, with its
    top-level fields ``names`` as the principal may read them (a field its policy hides,
    or the body lacks, reads as None); a row whose checksum fails is a CorruptionError."""
    check_identifier(collection, "collection")
    require_collection(cut, collection, *READ_CAPABILITIES)
    policies = field_policies(cut, collection)
    found: dict[str, tuple[Any, ...]] = {}
    rows = cut.conn.execute(
        "SELECT id, revision, body, owner, project, checksum FROM documents "
        "WHERE collection = ? AND deleted = 0",
        (collection,),
    )
    for doc_id, revision, stored_body, owner, project, checksum in rows:
        data = stored_bytes(stored_body)
        if data is None or checksum != document_checksum(
            collection, doc_id, revision, owner, project, False, data
        ):
            raise CorruptionError(
                f"document {doc_id!r} of {collection!r} fails its checksum",
                details={"collection": collection, "id": doc_id},
            )
        if not row_visible(cut.principal, cut.database, collection, owner, project):
            continue
        try:
            stored = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise CorruptionError(
                f"document {doc_id!r} of {collection!r} holds malformed JSON",
                details={"collection": collection, "id": doc_id},
            ) from exc
        body = redact(cut.principal, cut.database, collection, policies, stored)[0]
        found[doc_id] = tuple(body.get(name) if isinstance(body, dict) else None for name in names)
    return found
