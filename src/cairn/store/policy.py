"""Principals, API key verifiers, grants, field policies and row policy (graph-search §1).

A ``Principal`` holds grants ``(database, resource, capabilities)`` whose database and
resource are patterns with ``*`` wildcards, named field grants, an owner ID and projects
for row policy, and revocation and expiry. API keys are never stored: only a verifier
(SHA-256 for high-entropy generated keys, PBKDF2-SHA256 for chosen secrets) is. Every
check here is a pure function of its inputs; expiry is judged against a time the caller
passes in, never a clock read inside a command's apply (design §5).

Embedded local use runs as ``OWNER``, a built-in principal with ``admin`` everywhere.
A server never defaults to it.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from functools import lru_cache
from typing import Any

from cairn.errors import PermissionDeniedError, UnauthenticatedError, ValidationError
from cairn.store.limits import PBKDF2_ITERATIONS, check_identifier
from cairn.store.pointer import MISSING, get_at, is_prefix, remove_at
from cairn.store.rules import check_fields

__all__ = [
    "API_KEY_PREFIX",
    "OWNER",
    "OWNER_PRINCIPAL_ID",
    "ApiKeyVerifier",
    "Capability",
    "FieldPolicy",
    "Grant",
    "IssuedApiKey",
    "Principal",
    "check_active",
    "check_aware",
    "datetime_from_json",
    "datetime_to_json",
    "field_allowed",
    "holds_any",
    "is_slow_verifier",
    "issue_api_key",
    "make_verifier",
    "parse_api_key",
    "pattern_matches",
    "redact",
    "require",
    "row_visible",
    "verify_secret",
]

OWNER_PRINCIPAL_ID = "owner"
"""The built-in principal embedded use runs as; it cannot be reconfigured."""

API_KEY_PREFIX = "cairn_"
"""Every API key token starts with this, then the key ID, a dot and the secret."""

_SHA256_SCHEME = "sha256"
_PBKDF2_SCHEME = "pbkdf2_sha256"
_SECRET_BYTES = 32
_SALT_BYTES = 16


class Capability(StrEnum):
    """What a grant allows on a resource; ``admin`` implies every other capability."""

    DOCUMENTS_READ = "documents_read"
    DOCUMENTS_WRITE = "documents_write"
    QUERY = "query"
    VECTOR_SEARCH = "vector_search"
    GRAPH_READ = "graph_read"
    GRAPH_WRITE = "graph_write"
    ADMIN = "admin"


@lru_cache(maxsize=1024)
def _pattern_regex(pattern: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in pattern.split("*")), re.DOTALL)


def pattern_matches(pattern: str, value: str) -> bool:
    """Whether a grant pattern matches a name; ``*`` stands for any run of characters."""
    if "*" not in pattern:
        return pattern == value
    return _pattern_regex(pattern).fullmatch(value) is not None


@dataclass(frozen=True, slots=True)
class Grant:
    """Capabilities on every resource matching ``resource`` in databases matching ``database``."""

    database: str
    resource: str
    capabilities: frozenset[Capability]

    def __post_init__(self) -> None:
        try:
            caps = frozenset(Capability(cap) for cap in self.capabilities)
        except (ValueError, TypeError) as exc:
            raise ValidationError(f"unknown capability in {self.capabilities!r}") from exc
        object.__setattr__(self, "capabilities", caps)
        check_fields(self)

    def covers(self, database: str, resource: str) -> bool:
        """Whether this grant applies to ``resource`` in ``database``."""
        return pattern_matches(self.database, database) and pattern_matches(self.resource, resource)

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form (capabilities sorted)."""
        return {
            "database": self.database,
            "resource": self.resource,
            "capabilities": sorted(cap.value for cap in self.capabilities),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Grant:
        """Parse the plain JSON form."""
        return cls(data["database"], data["resource"], frozenset(data["capabilities"]))


@dataclass(frozen=True, slots=True)
class FieldPolicy:
    """Who may read, use (rank, filter, traverse) and write one field of a resource.

    Each grant is the name of a field grant a principal must hold; ``None`` leaves that
    action open to anyone who may touch the resource at all. Admins hold every grant.
    """

    path: str
    read_grant: str | None = None
    use_grant: str | None = None
    write_grant: str | None = None

    def __post_init__(self) -> None:
        check_fields(self)

    def governs(self, pointer: str) -> bool:
        """Whether touching ``pointer`` touches this policy's field (either contains the other)."""
        return is_prefix(self.path, pointer) or is_prefix(pointer, self.path)

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {
            "path": self.path,
            "read_grant": self.read_grant,
            "use_grant": self.use_grant,
            "write_grant": self.write_grant,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FieldPolicy:
        """Parse the plain JSON form."""
        return cls(data["path"], data["read_grant"], data["use_grant"], data["write_grant"])


def datetime_to_json(value: datetime | None) -> str | None:
    """RFC 3339 text of an aware datetime (``None`` stays ``None``)."""
    return None if value is None else value.isoformat()


def datetime_from_json(value: str | None) -> datetime | None:
    """Parse ``datetime_to_json`` output."""
    return None if value is None else datetime.fromisoformat(value)


def check_aware(value: object, what: str) -> datetime | None:
    """Accept ``None`` or a timezone-aware datetime."""
    if value is None:
        return None
    if not isinstance(value, datetime) or value.utcoffset() is None:
        raise ValidationError(f"{what} must be a timezone-aware datetime, got {value!r}")
    return value


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is acting: grants, field grants, row-policy identity, revocation and expiry.

    ``policy_epoch`` is the principal's configuration revision; it grows on every change
    so cached decisions can tell they are stale.
    """

    id: str
    grants: tuple[Grant, ...] = ()
    field_grants: frozenset[str] = field(default_factory=frozenset)
    owner_id: str | None = None
    projects: frozenset[str] = field(default_factory=frozenset)
    restrict_rows: bool = False
    revoked: bool = False
    expires_at: datetime | None = None
    policy_epoch: int = 0
    # Decisions per (database, resource): the principal is immutable, so they never
    # go stale; a fresh principal is resolved for every read cut.
    _capabilities: dict[tuple[str, str], frozenset[Capability]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        check_identifier(self.id, "principal id")
        object.__setattr__(self, "grants", tuple(self.grants))
        object.__setattr__(self, "field_grants", frozenset(self.field_grants))
        object.__setattr__(self, "projects", frozenset(self.projects))
        for grant in self.field_grants:
            check_identifier(grant, "field grant")
        for project in self.projects:
            check_identifier(project, "project")
        if self.owner_id is not None:
            check_identifier(self.owner_id, "owner id")
        check_aware(self.expires_at, "expires_at")

    def capabilities(self, database: str, resource: str) -> frozenset[Capability]:
        """Every capability the principal holds on ``resource`` in ``database``."""
        known = self._capabilities.get((database, resource))
        if known is not None:
            return known
        found: set[Capability] = set()
        for grant in self.grants:
            if grant.covers(database, resource):
                found |= grant.capabilities
        held = frozenset(Capability) if Capability.ADMIN in found else frozenset(found)
        self._capabilities[(database, resource)] = held
        return held

    def allows(self, database: str, resource: str, capability: Capability) -> bool:
        """Whether the principal holds ``capability`` (or ``admin``) on the resource."""
        return capability in self.capabilities(database, resource)

    def is_admin(self, database: str, resource: str) -> bool:
        """Whether the principal is an admin of the resource."""
        return self.allows(database, resource, Capability.ADMIN)

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form (sets sorted, grants in canonical order)."""
        return {
            "id": self.id,
            "grants": sorted(
                (grant.to_json() for grant in self.grants),
                key=lambda item: (item["database"], item["resource"], item["capabilities"]),
            ),
            "field_grants": sorted(self.field_grants),
            "owner_id": self.owner_id,
            "projects": sorted(self.projects),
            "restrict_rows": self.restrict_rows,
            "revoked": self.revoked,
            "expires_at": datetime_to_json(self.expires_at),
            "policy_epoch": self.policy_epoch,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Principal:
        """Parse the plain JSON form."""
        return cls(
            id=data["id"],
            grants=tuple(Grant.from_json(item) for item in data["grants"]),
            field_grants=frozenset(data["field_grants"]),
            owner_id=data["owner_id"],
            projects=frozenset(data["projects"]),
            restrict_rows=bool(data["restrict_rows"]),
            revoked=bool(data["revoked"]),
            expires_at=datetime_from_json(data["expires_at"]),
            policy_epoch=int(data["policy_epoch"]),
        )


OWNER = Principal(OWNER_PRINCIPAL_ID, grants=(Grant("*", "*", frozenset({Capability.ADMIN})),))
"""The built-in owner: admin on every resource of every database."""


def check_active(principal: Principal, now: datetime) -> None:
    """Refuse a revoked or expired principal (``UnauthenticatedError``); ``now`` is given."""
    if principal.revoked:
        raise UnauthenticatedError(
            f"principal {principal.id!r} is revoked", details={"principal": principal.id}
        )
    if principal.expires_at is not None and now >= principal.expires_at:
        raise UnauthenticatedError(
            f"principal {principal.id!r} expired", details={"principal": principal.id}
        )


def holds_any(principal: Principal, database: str, resource: str) -> bool:
    """Whether the principal holds any capability on ``resource`` (so may know it exists)."""
    return bool(principal.capabilities(database, resource))


def require(principal: Principal, database: str, resource: str, *any_of: Capability) -> None:
    """Refuse (``PermissionDeniedError``) unless the principal holds one of ``any_of``."""
    held = principal.capabilities(database, resource)
    if not any(cap in held for cap in any_of):
        wanted = " or ".join(cap.value for cap in any_of)
        raise PermissionDeniedError(
            f"principal {principal.id!r} needs {wanted} on {resource!r}",
            details={
                "principal": principal.id,
                "resource": resource,
                "capabilities": [cap.value for cap in any_of],
            },
        )


def row_visible(
    principal: Principal,
    database: str,
    resource: str,
    owner: str | None,
    project: str | None,
) -> bool:
    """Row policy: admin, or unrestricted, or the owner matches, or a shared project."""
    if not principal.restrict_rows or principal.is_admin(database, resource):
        return True
    if owner is not None and owner == principal.owner_id:
        return True
    return project is not None and project in principal.projects


def field_allowed(
    principal: Principal,
    database: str,
    resource: str,
    policies: Iterable[FieldPolicy],
    pointer: str,
    action: str,
) -> bool:
    """Whether the principal may ``read``, ``use`` or ``write`` the field at ``pointer``."""
    if principal.is_admin(database, resource):
        return True
    attribute = f"{action}_grant"
    for policy in policies:
        grant = getattr(policy, attribute)
        if grant is not None and policy.governs(pointer) and grant not in principal.field_grants:
            return False
    return True


def redact(
    principal: Principal,
    database: str,
    resource: str,
    policies: Iterable[FieldPolicy],
    body: dict[str, Any],
) -> tuple[dict[str, Any], tuple[str, ...]]:
    """Remove every field the principal may not read; return the body and removed paths."""
    if principal.is_admin(database, resource):
        return body, ()
    removed: list[str] = []
    for policy in sorted(policies, key=lambda item: item.path):
        if policy.read_grant is None or policy.read_grant in principal.field_grants:
            continue
        if get_at(body, policy.path) is not MISSING:
            body = remove_at(body, policy.path)
            removed.append(policy.path)
    return body, tuple(removed)


# ------------------------------------------------------------------ API keys
@dataclass(frozen=True, slots=True)
class ApiKeyVerifier:
    """What the store keeps of an API key: its ID and a one-way verifier string."""

    key_id: str
    verifier: str

    def __post_init__(self) -> None:
        check_fields(self)
        _parse_verifier(self.verifier)

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {"key_id": self.key_id, "verifier": self.verifier}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ApiKeyVerifier:
        """Parse the plain JSON form."""
        return cls(data["key_id"], data["verifier"])


@dataclass(frozen=True, slots=True)
class IssuedApiKey:
    """A freshly issued key: the token to hand to the user once, and what to store."""

    token: str
    verifier: ApiKeyVerifier


def _hex(value: str, what: str) -> bytes:
    try:
        return bytes.fromhex(value)
    except ValueError as exc:
        raise ValidationError(f"malformed api key verifier: bad {what}") from exc


def _parse_verifier(verifier: object) -> tuple[str, int, bytes, bytes]:
    if not isinstance(verifier, str):
        raise ValidationError("api key verifier must be a string")
    parts = verifier.split("$")
    if parts[0] == _SHA256_SCHEME and len(parts) == 2:
        return _SHA256_SCHEME, 0, b"", _hex(parts[1], "digest")
    if parts[0] == _PBKDF2_SCHEME and len(parts) == 4 and parts[1].isdigit():
        return _PBKDF2_SCHEME, int(parts[1]), _hex(parts[2], "salt"), _hex(parts[3], "digest")
    raise ValidationError("malformed api key verifier: unknown scheme or shape")


def make_verifier(
    secret: str, *, slow: bool = False, salt: bytes | None = None, iterations: int | None = None
) -> str:
    """A verifier for ``secret``: SHA-256 by default, PBKDF2-SHA256 when ``slow``.

    Generated keys carry 256 random bits, so one SHA-256 is enough; ``slow`` is for
    secrets a person chose. The salt is random unless given (tests pin it).
    """
    data = secret.encode("utf-8")
    if not slow:
        return f"{_SHA256_SCHEME}${hashlib.sha256(data).hexdigest()}"
    salt = secrets.token_bytes(_SALT_BYTES) if salt is None else salt
    rounds = PBKDF2_ITERATIONS if iterations is None else iterations
    derived = hashlib.pbkdf2_hmac("sha256", data, salt, rounds)
    return f"{_PBKDF2_SCHEME}${rounds}${salt.hex()}${derived.hex()}"


def is_slow_verifier(verifier: str) -> bool:
    """Whether ``verifier`` is a PBKDF2 one (a chosen secret, slow to check by design)."""
    return _parse_verifier(verifier)[0] == _PBKDF2_SCHEME


def verify_secret(secret: str, verifier: str) -> bool:
    """Whether ``secret`` matches ``verifier`` (constant-time comparison)."""
    scheme, rounds, salt, expected = _parse_verifier(verifier)
    data = secret.encode("utf-8")
    if scheme == _SHA256_SCHEME:
        actual = hashlib.sha256(data).digest()
    else:
        actual = hashlib.pbkdf2_hmac("sha256", data, salt, rounds)
    return hmac.compare_digest(actual, expected)


def issue_api_key(key_id: str | None = None) -> IssuedApiKey:
    """Mint a random API key (outside any apply); store only ``verifier``."""
    key_id = secrets.token_hex(8) if key_id is None else key_id
    secret = secrets.token_urlsafe(_SECRET_BYTES)
    verifier = ApiKeyVerifier(key_id, make_verifier(secret))
    return IssuedApiKey(f"{API_KEY_PREFIX}{key_id}.{secret}", verifier)


def parse_api_key(token: object) -> tuple[str, str]:
    """Split a token into ``(key_id, secret)``; a malformed token is ``Unauthenticated``."""
    if not isinstance(token, str) or not token.startswith(API_KEY_PREFIX):
        raise UnauthenticatedError("malformed api key")
    key_id, dot, secret = token[len(API_KEY_PREFIX) :].rpartition(".")
    if not dot or not key_id or not secret:
        raise UnauthenticatedError("malformed api key")
    return key_id, secret
