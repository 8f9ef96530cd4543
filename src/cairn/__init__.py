"""Cairn: an embedded-first graph and document database for code and knowledge."""

from __future__ import annotations

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
    UnauthenticatedError,
    UnknownEdgeError,
    UnknownWriteOutcomeError,
    UnsupportedCapabilityError,
    ValidationError,
)
from cairn.store import Database, open

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
    "UnauthenticatedError",
    "UnknownEdgeError",
    "UnknownWriteOutcomeError",
    "UnsupportedCapabilityError",
    "ValidationError",
    "__version__",
    "open",
]
