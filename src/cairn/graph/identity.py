"""Content-addressed IDs for facts and occurrences (spec §4, §6).

An ID is a prefix plus the full SHA-256 of a canonical identity payload. The payload
holds only what makes the thing itself; ranges, adapters, confidence, timestamps and
metadata stay out of fact identity, and confidence, versions and provenance stay out of
occurrence identity.
"""

from __future__ import annotations

from typing import Any

import orjson

from cairn.canonical import canonical_bytes, digest_bytes
from cairn.errors import ValidationError
from cairn.graph.model import Direction, Discriminator, SourceRange, thaw

__all__ = [
    "FACT_IDENTITY_SCHEMA_VERSION",
    "FACT_ID_PREFIX",
    "OCCURRENCE_IDENTITY_SCHEMA_VERSION",
    "OCCURRENCE_ID_PREFIX",
    "check_repo_path",
    "fact_identity_payload",
    "id_from_payload",
    "identity_bytes",
    "occurrence_identity_payload",
    "ordered_endpoints",
]

FACT_IDENTITY_SCHEMA_VERSION = 1
OCCURRENCE_IDENTITY_SCHEMA_VERSION = 1
FACT_ID_PREFIX = "sf_"
OCCURRENCE_ID_PREFIX = "eo_"


def ordered_endpoints(direction: Direction, source: str, target: str) -> tuple[str, str]:
    """Directed facts keep endpoint order; undirected facts sort the two endpoints."""
    if direction is Direction.UNDIRECTED and target < source:
        return target, source
    return source, target


def fact_identity_payload(
    direction: Direction, source: str, target: str, relation: str, discriminator: Discriminator
) -> dict[str, Any]:
    """The canonical payload a fact ID is the digest of."""
    return {
        "identity_schema_version": FACT_IDENTITY_SCHEMA_VERSION,
        "direction": direction.value,
        "source": source,
        "target": target,
        "relation": relation,
        "discriminator_registry": discriminator.registry,
        "discriminator_policy_version": discriminator.policy_version,
        "discriminator_completeness": discriminator.completeness,
        "discriminator_value": thaw(discriminator.value),
    }


def check_repo_path(path: str | None, what: str) -> str | None:
    """Accept a repository-relative POSIX path that cannot escape the repository."""
    if path is None:
        return None
    if path in _CHECKED_PATHS:
        return path
    _check_path(path, what)
    if len(_CHECKED_PATHS) < PATH_CACHE_SIZE:
        _CHECKED_PATHS.add(path)
    return path


PATH_CACHE_SIZE = 65_536
"""Validated paths remembered per process: one repository repeats each path many times."""
_CHECKED_PATHS: set[str] = set()


def _check_path(path: str, what: str) -> None:
    if not isinstance(path, str) or not path or "\\" in path or "\x00" in path:
        raise ValidationError(f"{what} must be a repository-relative POSIX path, got {path!r}")
    parts = path.split("/")
    if path.startswith("/") or (len(parts[0]) == 2 and parts[0][1] == ":"):
        raise ValidationError(f"{what} must be relative, got absolute path {path!r}")
    if any(part in ("", ".", "..") for part in parts):
        raise ValidationError(f"{what} must be normalised and stay inside the repository: {path!r}")


def occurrence_identity_payload(
    fact_id: str,
    adapter_id: str,
    strategy: str,
    source_file: str | None,
    source_range: SourceRange | None,
    target_file: str | None,
    target_range: SourceRange | None,
    site_kind: str | None,
    adapter_evidence_key: str | None,
) -> dict[str, Any]:
    """The canonical payload an occurrence ID is the digest of."""
    return {
        "occurrence_identity_schema_version": OCCURRENCE_IDENTITY_SCHEMA_VERSION,
        "fact_id": fact_id,
        "adapter_id": adapter_id,
        "strategy": strategy,
        "source_file": source_file,
        "source_range": source_range.to_json() if source_range else None,
        "target_file": target_file,
        "target_range": target_range.to_json() if target_range else None,
        "site_kind": site_kind,
        "adapter_evidence_key": adapter_evidence_key,
    }


def id_from_payload(prefix: str, payload: dict[str, Any]) -> tuple[str, bytes]:
    """Return ``(prefix + sha256, canonical bytes)`` so callers can keep a witness."""
    data = identity_bytes(payload)
    return prefix + digest_bytes(data), data


def identity_bytes(payload: dict[str, Any]) -> bytes:
    """Canonical bytes of an identity payload, on the fastest provably equal path.

    Identity payloads hold only strings, booleans, None, small integers and nested
    objects/arrays of those (the registry admits no float fields and bounds integers),
    so when orjson's output is pure ASCII every string is trivially NFC and the bytes
    equal the reference's. Anything else takes the general ``canonical_bytes``. A
    property test compares this path with the reference canonicaliser.
    """
    data = orjson.dumps(payload, option=orjson.OPT_SORT_KEYS)
    if data.isascii():
        return data
    return canonical_bytes(payload)
