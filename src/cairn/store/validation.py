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
    ConfigurePolicy,
    ConfigurePrincipal,
    DeleteDocument,
    EntityRef,
    Mutation,
    PatchDocument,
    PutDocument,
    PutFact,
    PutVector,
)
from cairn.store.limits import MAX_COMMAND_BYTES, MAX_DOCUMENT_BYTES, check_depth, check_size
from cairn.store.policy import OWNER_PRINCIPAL_ID
from cairn.store.rules import STORE_RULES, check_fields

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
    check_fields(request)
    for index, mutation in enumerate(request.mutations):
        try:
            _validate_mutation(mutation)
        except CairnError as exc:
            exc.details.setdefault("mutation", index)
            raise


def check_body(body: Any) -> bytes:
    """Canonical bytes of a document body, refused above 1 MiB or depth 32."""
    check_depth(body, "document body")
    data = canonical_bytes(body)
    check_size(len(data), MAX_DOCUMENT_BYTES, "document body")
    return data


def _validate_mutation(mutation: Mutation) -> None:
    if isinstance(mutation, PutDocument | PatchDocument | DeleteDocument | PutVector):
        EntityRef(mutation.collection, mutation.id).validate()
    if isinstance(mutation, PutVector):
        _require(
            all(math.isfinite(value) for value in mutation.vector), "vector values must be finite"
        )
    if type(mutation).__name__ in STORE_RULES:
        check_fields(mutation)
    if isinstance(mutation, PutDocument):
        check_body(thaw(mutation.body))
        if mutation.access is not None:
            mutation.access.validate()
    elif isinstance(mutation, PatchDocument):
        for op in mutation.operations:
            check_fields(op)
    elif isinstance(mutation, PutFact):
        mutation.source.validate()
        mutation.target.validate()
    elif isinstance(mutation, ConfigureCollection):
        _validate_collection(mutation)
    elif isinstance(mutation, ConfigurePrincipal):
        _validate_principal(mutation)
    elif isinstance(mutation, ConfigurePolicy):
        paths = [item.path for item in mutation.fields]
        _require(len(paths) == len(set(paths)), "field policy paths must be unique")


def _validate_collection(mutation: ConfigureCollection) -> None:
    names = [item.name for item in mutation.vector_fields]
    _require(len(set(names)) == len(names), "vector field names must be unique")
    for item in mutation.vector_fields:
        check_fields(item)
        item.space.validate()


def _validate_principal(mutation: ConfigurePrincipal) -> None:
    if mutation.id == OWNER_PRINCIPAL_ID:
        raise ValidationError(f"principal {OWNER_PRINCIPAL_ID!r} is built in and fixed")
    key_ids = [key.key_id for key in mutation.api_keys]
    _require(len(set(key_ids)) == len(key_ids), "api key ids must be unique")
