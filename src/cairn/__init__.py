"""Cairn: an embedded-first graph and document database for code and knowledge."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cairn.errors import (
    AmbiguousEdgeError,
    ArtifactCorruptError,
    ArtifactError,
    ArtifactIncompatibleError,
    ArtifactMovedError,
    BudgetExceededError,
    CairnError,
    CanonicalizationError,
    ConflictError,
    CorruptionError,
    IdentityCollisionError,
    InvariantError,
    LegacyArtifactError,
    MissingEndpointError,
    NotFoundError,
    PermissionDeniedError,
    RequestCancelledError,
    StorageError,
    StorageFullError,
    StorageIOError,
    StorageLockedError,
    StoragePermissionError,
    StorageReadOnlyError,
    UnauthenticatedError,
    UnknownEdgeError,
    UnknownWriteOutcomeError,
    UnsupportedCapabilityError,
    ValidationError,
)

if TYPE_CHECKING:
    from cairn.database import Database, open


def __getattr__(name: str) -> Any:
    # ``open`` and ``Database`` load the store, the engine (and numpy) on first use, so
    # that light entry points such as ``cairn mcp`` start fast.
    if name in ("open", "Database"):
        from cairn import database

        value = getattr(database, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'cairn' has no attribute {name!r}")


__version__ = "0.1.0"

__all__ = [
    "AmbiguousEdgeError",
    "ArtifactCorruptError",
    "ArtifactError",
    "ArtifactIncompatibleError",
    "ArtifactMovedError",
    "BudgetExceededError",
    "CairnError",
    "CanonicalizationError",
    "ConflictError",
    "CorruptionError",
    "Database",
    "IdentityCollisionError",
    "InvariantError",
    "LegacyArtifactError",
    "MissingEndpointError",
    "NotFoundError",
    "PermissionDeniedError",
    "RequestCancelledError",
    "StorageError",
    "StorageFullError",
    "StorageIOError",
    "StorageLockedError",
    "StoragePermissionError",
    "StorageReadOnlyError",
    "UnauthenticatedError",
    "UnknownEdgeError",
    "UnknownWriteOutcomeError",
    "UnsupportedCapabilityError",
    "ValidationError",
    "__version__",
    "open",
]
