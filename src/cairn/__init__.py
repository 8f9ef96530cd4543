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
    UnauthenticatedError,
    UnknownEdgeError,
    UnknownWriteOutcomeError,
    UnsupportedCapabilityError,
    ValidationError,
)

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
    "IdentityCollisionError",
    "InvariantError",
    "LegacyArtifactError",
    "MissingEndpointError",
    "NotFoundError",
    "PermissionDeniedError",
    "UnauthenticatedError",
    "UnknownEdgeError",
    "UnknownWriteOutcomeError",
    "UnsupportedCapabilityError",
    "ValidationError",
    "__version__",
]
