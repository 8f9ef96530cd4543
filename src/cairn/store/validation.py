"""Limits and identifier rules of a command, checked when it is applied (spec §1, §2).

Breaking one is the command's outcome (stored for retries), not a constructor error, so
the checks live here rather than in the contracts' ``__post_init__``.
"""

from __future__ import annotations

import math
from typing import Any

from cairn.canonical import canonical_bytes
from cairn.errors import CairnError, ValidationError
from cairn.graph.model import thaw
from cairn.store.commands import (
    CommandRequest,
    ConfigureCollection,
    ConfigureGraph,
    ConfigurePolicy,
    ConfigurePrincipal,
    DeleteDocument,
    DeleteFact,
    EntityRef,
    Mutation,
    PatchDocument,
    PutDocument,
    PutFact,
    PutVector,
)
from cairn.store.limits import (
    MAX_API_KEYS_PER_PRINCIPAL,
    MAX_COMMAND_BYTES,
    MAX_DOCUMENT_BYTES,
    MAX_FIELD_POLICIES,
    MAX_GRANTS_PER_PRINCIPAL,
    MAX_MUTATIONS,
    MAX_OCCURRENCES_PER_FACT,
    MAX_PATCH_OPERATIONS,
    MAX_PROJECTS_PER_PRINCIPAL,
    MAX_TEXT_FIELDS,
    MAX_VECTOR_FIELDS,
    MAX_VECTOR_VALUE,
    check_depth,
    check_identifier,
    check_json_pointer,
    check_size,
)
from cairn.store.policy import OWNER_PRINCIPAL_ID

__all__ = ["check_body", "check_served_database", "validate_command"]


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ValidationError(message)


def check_served_database(requested: str, served: str) -> None:
    """Refuse a request naming another database than the one served, before any read.

    The message does not name the served database: the request is malformed for this
    handle, and what else it serves is not the caller's question.
    """
    if requested != served:
        raise ValidationError(
            f"the request names database {requested!r}, which is not served here",
            details={"field": "database", "database": requested},
        )


def validate_command(request: CommandRequest, size: int) -> None:
    """Check limits and identifier rules of a command whose canonical form has ``size`` bytes."""
    check_size(size, MAX_COMMAND_BYTES, "command")
    check_identifier(request.database, "database")
    if not request.mutations:
        raise ValidationError("a command needs at least one mutation")
    if len(request.mutations) > MAX_MUTATIONS:
        raise ValidationError(
            f"a command carries at most {MAX_MUTATIONS} mutations, got {len(request.mutations)}",
            details={"limit": MAX_MUTATIONS, "count": len(request.mutations)},
        )
    for index, mutation in enumerate(request.mutations):
        try:
            _validate_mutation(mutation)
        except CairnError as exc:
            exc.details.setdefault("mutation", index)
            raise


def _count(items: tuple[Any, ...] | frozenset[Any], limit: int, what: str) -> None:
    if len(items) > limit:
        raise ValidationError(
            f"at most {limit} {what} are allowed, got {len(items)}",
            details={"limit": limit, "count": len(items)},
        )


def check_body(body: Any) -> bytes:
    """Canonical bytes of a document body, refused above 1 MiB or depth 32."""
    check_depth(body, "document body")
    data = canonical_bytes(body)
    check_size(len(data), MAX_DOCUMENT_BYTES, "document body")
    return data


def _validate_mutation(mutation: Mutation) -> None:
    if isinstance(mutation, PutDocument | PatchDocument | DeleteDocument | PutVector):
        EntityRef(mutation.collection, mutation.id).validate()
    if isinstance(mutation, PutDocument):
        check_body(thaw(mutation.body))
        if mutation.access is not None:
            mutation.access.validate()
    elif isinstance(mutation, PatchDocument):
        _require(bool(mutation.operations), "a patch needs at least one operation")
        _count(mutation.operations, MAX_PATCH_OPERATIONS, "patch operations")
        for op in mutation.operations:
            check_json_pointer(op.path, "patch path")
    elif isinstance(mutation, PutVector):
        check_identifier(mutation.field, "vector field")
        _require(
            all(math.isfinite(value) for value in mutation.vector), "vector values must be finite"
        )
        _require(
            all(abs(value) <= MAX_VECTOR_VALUE for value in mutation.vector),
            f"vector values are stored as float32: each must be within ±{MAX_VECTOR_VALUE}",
        )
    elif isinstance(mutation, PutFact):
        check_identifier(mutation.graph, "graph")
        mutation.source.validate()
        mutation.target.validate()
        check_identifier(mutation.relation, "relation")
        _count(mutation.occurrences, MAX_OCCURRENCES_PER_FACT, "occurrences")
    elif isinstance(mutation, DeleteFact):
        check_identifier(mutation.graph, "graph")
        check_identifier(mutation.fact_id, "fact id")
    elif isinstance(mutation, ConfigureCollection):
        _validate_collection(mutation)
    elif isinstance(mutation, ConfigureGraph):
        check_identifier(mutation.name, "graph")
    elif isinstance(mutation, ConfigurePrincipal):
        _validate_principal(mutation)
    elif isinstance(mutation, ConfigurePolicy):
        check_identifier(mutation.resource, "policy resource")
        _count(mutation.fields, MAX_FIELD_POLICIES, "field policies")
        paths = [item.path for item in mutation.fields]
        _require(len(paths) == len(set(paths)), "field policy paths must be unique")


def _validate_collection(mutation: ConfigureCollection) -> None:
    check_identifier(mutation.name, "collection")
    _count(mutation.text_fields, MAX_TEXT_FIELDS, "text fields")
    _count(mutation.vector_fields, MAX_VECTOR_FIELDS, "vector fields")
    for pointer in mutation.text_fields:
        check_json_pointer(pointer, "text field")
    _require(
        len(set(mutation.text_fields)) == len(mutation.text_fields), "text fields must be unique"
    )
    names = [item.name for item in mutation.vector_fields]
    _require(len(set(names)) == len(names), "vector field names must be unique")
    for item in mutation.vector_fields:
        check_identifier(item.name, "vector field")
        item.space.validate()


def _validate_principal(mutation: ConfigurePrincipal) -> None:
    check_identifier(mutation.id, "principal id")
    if mutation.id == OWNER_PRINCIPAL_ID:
        raise ValidationError(f"principal {OWNER_PRINCIPAL_ID!r} is built in and fixed")
    _count(mutation.grants, MAX_GRANTS_PER_PRINCIPAL, "grants")
    _count(mutation.field_grants, MAX_GRANTS_PER_PRINCIPAL, "field grants")
    _count(mutation.projects, MAX_PROJECTS_PER_PRINCIPAL, "projects")
    _count(mutation.api_keys, MAX_API_KEYS_PER_PRINCIPAL, "api keys")
    for name in mutation.field_grants:
        check_identifier(name, "field grant")
    for project in mutation.projects:
        check_identifier(project, "project")
    if mutation.owner_id is not None:
        check_identifier(mutation.owner_id, "owner_id")
    key_ids = [key.key_id for key in mutation.api_keys]
    _require(len(set(key_ids)) == len(key_ids), "api key ids must be unique")
