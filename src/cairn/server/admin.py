"""Admin operations behind the HTTP admin routes: principals, API keys, field policies.

Each operation reads what it needs in one read cut as the calling principal (which
must be an admin), then writes one ordinary command, so every change has a receipt
and goes through the store's own authorisation. ``ConfigurePrincipal`` replaces a
principal whole, so changing settings keeps the stored key verifiers, and adding or
revoking one key rewrites the set; a process-wide lock keeps two admin requests of
this server from interleaving those read-modify-write steps.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cairn.errors import ConflictError, NotFoundError, ValidationError
from cairn.store.apply import load_field_policies, load_principal
from cairn.store.checksums import verify_key
from cairn.store.commands import (
    CommandRequest,
    CommitReceipt,
    ConfigurePolicy,
    ConfigurePrincipal,
    Mutation,
)
from cairn.store.limits import check_identifier
from cairn.store.policy import ApiKeyVerifier, Capability, FieldPolicy, Principal, require
from cairn.store.reads import ReadCut

if TYPE_CHECKING:
    from cairn.database import Database
    from cairn.store.database import PrincipalLike

__all__ = [
    "PRINCIPAL_SETTINGS",
    "PrincipalRecord",
    "add_api_key",
    "configure_policy",
    "configure_principal",
    "get_policy",
    "get_principal",
    "list_principals",
    "policy_fields_from_json",
    "revoke_api_key",
]

PRINCIPAL_SETTINGS: Mapping[str, Any] = {
    "grants": [],
    "field_grants": [],
    "owner_id": None,
    "projects": [],
    "restrict_rows": False,
    "revoked": False,
    "expires_at": None,
}
"""The settable fields of a principal and their defaults (keys are kept separately)."""

_LISTS = ("grants", "field_grants", "projects")
_ALL_RESOURCES = "*"
_LOCK = threading.Lock()


@dataclass(frozen=True, slots=True)
class PrincipalRecord:
    """A stored principal and the IDs (never the verifiers) of its API keys."""

    principal: Principal
    key_ids: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form: the principal's fields plus ``key_ids``."""
        return {**self.principal.to_json(), "key_ids": list(self.key_ids)}


def _require_principal_admin(cut: ReadCut) -> None:
    require(cut.principal, cut.database, _ALL_RESOURCES, Capability.ADMIN)


def _keys(cut: ReadCut, principal_id: str) -> tuple[ApiKeyVerifier, ...]:
    rows = cut.conn.execute(
        "SELECT key_id, verifier, checksum FROM api_keys WHERE principal = ? ORDER BY key_id",
        (principal_id,),
    ).fetchall()
    for key_id, verifier, checksum in rows:
        verify_key(key_id, principal_id, verifier, checksum)
    return tuple(ApiKeyVerifier(key_id, verifier) for key_id, verifier, _ in rows)


def _load(cut: ReadCut, principal_id: str) -> Principal:
    check_identifier(principal_id, "principal id")
    found = load_principal(cut.conn, principal_id)
    if found is None:
        raise NotFoundError(f"no principal {principal_id!r}", details={"principal": principal_id})
    return found


def _command(db: Database, actor: PrincipalLike, mutation: Mutation) -> CommitReceipt:
    return db.command(CommandRequest(uuid.uuid4(), db.name, (mutation,)), actor)


def list_principals(db: Database, actor: PrincipalLike) -> tuple[PrincipalRecord, ...]:
    """Every stored principal with its key IDs, by ID (admin on the database)."""
    with db.read_cut(actor) as cut:
        _require_principal_admin(cut)
        ids = [row[0] for row in cut.conn.execute("SELECT id FROM principals ORDER BY id")]
        return tuple(
            PrincipalRecord(_load(cut, pid), tuple(k.key_id for k in _keys(cut, pid)))
            for pid in ids
        )


def get_principal(db: Database, actor: PrincipalLike, principal_id: str) -> PrincipalRecord:
    """One stored principal with its key IDs (``NotFoundError`` if there is none)."""
    with db.read_cut(actor) as cut:
        _require_principal_admin(cut)
        principal = _load(cut, principal_id)
        return PrincipalRecord(principal, tuple(k.key_id for k in _keys(cut, principal_id)))


def _settings(principal: Principal) -> dict[str, Any]:
    data = principal.to_json()
    return {name: data[name] for name in PRINCIPAL_SETTINGS}


def _configure(
    principal_id: str, settings: Mapping[str, Any], keys: tuple[ApiKeyVerifier, ...]
) -> ConfigurePrincipal:
    unknown = sorted(set(settings) - set(PRINCIPAL_SETTINGS))
    if unknown:
        raise ValidationError(f"unknown principal settings {unknown}")
    merged = {**PRINCIPAL_SETTINGS, **settings}
    for name in _LISTS:
        if not isinstance(merged[name], list):
            raise ValidationError(f"{name} must be an array", details={"field": name})
    data = {
        "kind": ConfigurePrincipal.kind,
        "id": principal_id,
        **merged,
        "api_keys": [key.to_json() for key in keys],
    }
    try:
        return ConfigurePrincipal.from_json(data)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ValidationError(f"malformed principal settings: {exc}") from exc


def configure_principal(
    db: Database, actor: PrincipalLike, principal_id: str, settings: Mapping[str, Any]
) -> CommitReceipt:
    """Create or replace a principal's settings, keeping its API keys (one command)."""
    if not isinstance(settings, Mapping):
        raise ValidationError("principal settings must be a JSON object")
    check_identifier(principal_id, "principal id")
    with _LOCK:
        with db.read_cut(actor) as cut:
            _require_principal_admin(cut)
            keys = _keys(cut, principal_id)
        return _command(db, actor, _configure(principal_id, settings, keys))


def add_api_key(
    db: Database, actor: PrincipalLike, principal_id: str, key: ApiKeyVerifier
) -> CommitReceipt | None:
    """Add a key verifier to a principal; ``None`` when that exact key is already there."""
    with _LOCK:
        with db.read_cut(actor) as cut:
            _require_principal_admin(cut)
            principal = _load(cut, principal_id)
            keys = _keys(cut, principal_id)
        for held in keys:
            if held.key_id == key.key_id:
                if held.verifier == key.verifier:
                    return None
                raise ConflictError(
                    f"principal {principal_id!r} already has another key {key.key_id!r}",
                    details={"principal": principal_id, "key_id": key.key_id},
                )
        mutation = _configure(principal_id, _settings(principal), (*keys, key))
        return _command(db, actor, mutation)


def revoke_api_key(
    db: Database, actor: PrincipalLike, principal_id: str, key_id: str
) -> CommitReceipt:
    """Remove one key of a principal (``NotFoundError`` if it holds no such key)."""
    with _LOCK:
        with db.read_cut(actor) as cut:
            _require_principal_admin(cut)
            principal = _load(cut, principal_id)
            keys = _keys(cut, principal_id)
        kept = tuple(held for held in keys if held.key_id != key_id)
        if len(kept) == len(keys):
            raise NotFoundError(
                f"principal {principal_id!r} has no key {key_id!r}",
                details={"principal": principal_id, "key_id": key_id},
            )
        return _command(db, actor, _configure(principal_id, _settings(principal), kept))


def get_policy(db: Database, actor: PrincipalLike, resource: str) -> tuple[FieldPolicy, ...]:
    """The field policies of a resource (admin on the resource)."""
    check_identifier(resource, "resource")
    with db.read_cut(actor) as cut:
        require(cut.principal, cut.database, resource, Capability.ADMIN)
        return load_field_policies(cut.conn, resource)


def policy_fields_from_json(data: Any) -> tuple[FieldPolicy, ...]:
    """Parse ``{"fields": [FieldPolicy JSON, ...]}`` strictly."""
    if not isinstance(data, Mapping) or set(data) != {"fields"}:
        raise ValidationError('a policy body is {"fields": [...]}')
    fields = data["fields"]
    if not isinstance(fields, list):
        raise ValidationError("fields must be an array")
    parsed: list[FieldPolicy] = []
    for item in fields:
        if not isinstance(item, Mapping):
            raise ValidationError("each field policy must be a JSON object")
        unknown = sorted(set(item) - {"path", "read_grant", "use_grant", "write_grant"})
        if unknown:
            raise ValidationError(f"field policy has unknown fields {unknown}")
        try:
            parsed.append(
                FieldPolicy(
                    item["path"],
                    item.get("read_grant"),
                    item.get("use_grant"),
                    item.get("write_grant"),
                )
            )
        except KeyError as exc:
            raise ValidationError(f"field policy needs {exc}") from exc
    return tuple(parsed)


def configure_policy(
    db: Database, actor: PrincipalLike, resource: str, fields: tuple[FieldPolicy, ...]
) -> CommitReceipt:
    """Replace the field policies of a resource (one command)."""
    check_identifier(resource, "resource")
    return _command(db, actor, ConfigurePolicy(resource, fields))
