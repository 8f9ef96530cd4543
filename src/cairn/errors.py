"""Cairn's exception tree: one root, stable codes, one HTTP status per class.

Every error Cairn raises is a ``CairnError`` subclass. ``code`` is a stable,
machine-readable string (it becomes ``urn:cairn:error:<code>`` on the wire) and
``http_status`` is the one status code every surface maps it to.

The tree::

    CairnError                          cairn_error            500
    +-- ValidationError                 validation             400
    |   +-- CanonicalizationError       non_canonical_value    400
    |   +-- InvariantError              invariant_violation    400
    +-- NotFoundError                   not_found              404
    |   +-- MissingEndpointError        missing_endpoint       404
    |   +-- UnknownEdgeError            unknown_edge           404
    +-- ConflictError                   conflict               409
    |   +-- AmbiguousEdgeError          ambiguous_edge         409
    +-- PermissionDeniedError           permission_denied      403
    +-- UnauthenticatedError            unauthenticated        401
    +-- BudgetExceededError             budget_exceeded        429
    |   +-- RequestCancelledError       request_cancelled      429
    +-- UnknownWriteOutcomeError        unknown_write_outcome  503
    +-- UnsupportedCapabilityError      unsupported_capability 501
    +-- StorageError                    storage                503
    |   +-- StorageFullError            storage_full           507
    |   +-- StorageLockedError          storage_locked         423
    |   +-- StorageReadOnlyError        storage_read_only      503
    |   +-- StoragePermissionError      storage_permission     503
    |   +-- StorageIOError              storage_io             503
    +-- CorruptionError                 corruption             500
    |   +-- IdentityCollisionError      identity_collision     500
    +-- ArtifactError                   artifact_error         422
        +-- ArtifactCorruptError        artifact_corrupt       422
        +-- ArtifactIncompatibleError   artifact_incompatible  422
        +-- ArtifactMovedError          artifact_moved         410
        +-- LegacyArtifactError         legacy_artifact        422

Codes are part of the public contract: a class may gain children, but a code is
never renamed or reused.
"""

from __future__ import annotations

import errno
import functools
from collections.abc import Mapping
from typing import Any, ClassVar

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
    "error_classes",
    "from_problem",
    "os_error",
]


class CairnError(Exception):
    """Root of every error Cairn raises; carries a stable code and HTTP status."""

    code: ClassVar[str] = "cairn_error"
    http_status: ClassVar[int] = 500

    def __init__(self, message: str, *, details: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details: dict[str, Any] = dict(details or {})

    @property
    def type_uri(self) -> str:
        """The RFC 9457 problem type for this error."""
        return f"urn:cairn:error:{self.code}"

    def to_problem(self) -> dict[str, Any]:
        """Render as an RFC 9457 problem document (the wire form on every surface)."""
        problem: dict[str, Any] = {
            "type": self.type_uri,
            "title": type(self).__name__,
            "status": self.http_status,
            "detail": self.message,
            "code": self.code,
        }
        if self.details:
            problem["details"] = self.details
        return problem


class ValidationError(CairnError):
    """The input is malformed or outside a declared limit."""

    code = "validation"
    http_status = 400


class CanonicalizationError(ValidationError):
    """A value cannot be put into canonical JSON (wrong type, non-finite, cycle...)."""

    code = "non_canonical_value"


class InvariantError(ValidationError):
    """A record breaks a model invariant (for example a bad status/reason pair)."""

    code = "invariant_violation"


class NotFoundError(CairnError):
    """The named thing does not exist, or the caller may not know it exists."""

    code = "not_found"
    http_status = 404


class MissingEndpointError(NotFoundError):
    """A fact names a source or target node the graph does not hold."""

    code = "missing_endpoint"


class UnknownEdgeError(NotFoundError):
    """No fact joins the two nodes asked about."""

    code = "unknown_edge"


class ConflictError(CairnError):
    """The request contradicts stored state (for example a reused ID with other content)."""

    code = "conflict"
    http_status = 409


class AmbiguousEdgeError(ConflictError):
    """Several facts join the two nodes, so a single-edge projection has no answer."""

    code = "ambiguous_edge"


class PermissionDeniedError(CairnError):
    """The principal is known but lacks a needed grant."""

    code = "permission_denied"
    http_status = 403


class UnauthenticatedError(CairnError):
    """No valid credentials were presented."""

    code = "unauthenticated"
    http_status = 401


class BudgetExceededError(CairnError):
    """A bounded operation hit one of its limits; nothing truncated is returned."""

    code = "budget_exceeded"
    http_status = 429


class RequestCancelledError(BudgetExceededError):
    """The caller cancelled the request; nothing partial is returned."""

    code = "request_cancelled"


class UnknownWriteOutcomeError(CairnError):
    """A write was sent but its reply was lost; retry the same command ID and bytes."""

    code = "unknown_write_outcome"
    http_status = 503


class UnsupportedCapabilityError(CairnError):
    """The requested capability is not supported here; it is rejected, never dropped."""

    code = "unsupported_capability"
    http_status = 501


class StorageError(CairnError):
    """The file system or SQLite refused an operation; stored data is intact, retry later.

    Never a sign of damage: the write was rolled back whole (nothing acknowledged is
    lost). The original cause stays on ``__cause__``; children name which refusal.
    """

    code = "storage"
    http_status = 503


class StorageFullError(StorageError):
    """The disk (or SQLite's page limit) is full: free space, then retry the same write."""

    code = "storage_full"
    http_status = 507


class StorageLockedError(StorageError):
    """Another writer held the database lock past the busy timeout; retry later."""

    code = "storage_locked"
    http_status = 423


class StorageReadOnlyError(StorageError):
    """The database file, its folder or its file system is read-only."""

    code = "storage_read_only"


class StoragePermissionError(StorageError):
    """The process may not read or write the database file or its folder."""

    code = "storage_permission"


class StorageIOError(StorageError):
    """The operating system reported an I/O error reading or writing the file."""

    code = "storage_io"


class CorruptionError(CairnError):
    """Stored or derived data is inconsistent with itself."""

    code = "corruption"
    http_status = 500


class IdentityCollisionError(CorruptionError):
    """Two different canonical payloads produced one digest inside one graph."""

    code = "identity_collision"


class ArtifactError(CairnError):
    """A graph artifact cannot be used as asked."""

    code = "artifact_error"
    http_status = 422


class ArtifactCorruptError(ArtifactError):
    """The artifact's header, body, IDs or receipt do not verify."""

    code = "artifact_corrupt"


class ArtifactIncompatibleError(ArtifactError):
    """The artifact declares versions this Cairn does not read."""

    code = "artifact_incompatible"


class ArtifactMovedError(ArtifactError):
    """The file is a tombstone: the graph moved to ``graph.cairn``."""

    code = "artifact_moved"
    http_status = 410


class LegacyArtifactError(ArtifactError):
    """A legacy v1 artifact was offered where strict mode forbids it."""

    code = "legacy_artifact"


def from_problem(problem: Mapping[str, Any]) -> CairnError:
    """The error a problem document describes (the inverse of ``CairnError.to_problem``):
    the class of its ``code`` (``CairnError`` for an unknown one), its ``detail`` and
    ``details``; ``KeyError``/``TypeError`` for a document without a detail or with
    details that are not a mapping."""
    code = problem.get("code")
    cls = _by_code().get(code, CairnError) if isinstance(code, str) else CairnError
    return cls(problem["detail"], details=problem.get("details"))


@functools.cache
def _by_code() -> dict[str, type[CairnError]]:
    return {cls.code: cls for cls in error_classes()}


def error_classes() -> tuple[type[CairnError], ...]:
    """Every error class in the tree, root first, in a stable order."""
    found: list[type[CairnError]] = []
    pending: list[type[CairnError]] = [CairnError]
    while pending:
        cls = pending.pop(0)
        found.append(cls)
        pending.extend(sorted(cls.__subclasses__(), key=lambda sub: sub.__name__))
    return tuple(found)


_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
_PERMISSION_ERRNOS = frozenset({errno.EACCES, errno.EPERM})


def os_error(exc: OSError, action: str, path: object = None) -> StorageError:
    """The typed error for a failed file-system call while doing ``action``."""
    details: dict[str, object] = {"errno": errno.errorcode.get(exc.errno or 0, exc.errno)}
    if path is not None:
        details["path"] = str(path)
    reason = exc.strerror or str(exc)
    if exc.errno in _FULL_ERRNOS:
        return StorageFullError(f"{action}: the disk is full ({reason})", details=details)
    if exc.errno == errno.EROFS:
        return StorageReadOnlyError(f"{action}: read-only file system", details=details)
    if exc.errno in _PERMISSION_ERRNOS:
        return StoragePermissionError(f"{action}: permission denied ({reason})", details=details)
    return StorageIOError(f"{action}: {reason}", details=details)
