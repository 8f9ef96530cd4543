"""The records of the semantic multigraph: nodes, facts, occurrences and their parts.

Every record is a frozen, slotted dataclass holding only immutable values (JSON
objects become read-only mappings, arrays become tuples), so a value returned by the
graph can never be used to change the graph. ``to_json`` gives the plain JSON form
that canonical serialisation and the artifact use.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any, TypeAlias

from cairn.canonical import MAX_DEPTH, canonical_bytes, canonical_set, fits_float, nfc
from cairn.errors import CanonicalizationError, InvariantError, ValidationError

__all__ = [
    "CONTEXT_REASONS",
    "UNKNOWN_REASONS",
    "ConfidenceObservation",
    "Direction",
    "Discriminator",
    "EndpointIdentity",
    "EvidenceOccurrence",
    "FactEndpointIdentity",
    "FrozenJSON",
    "Hyperedge",
    "IdentityReason",
    "IdentityStatus",
    "Node",
    "OccurrenceOwner",
    "SemanticFact",
    "SourceRange",
    "freeze",
    "thaw",
]

FrozenJSON: TypeAlias = Any
"""A JSON value made immutable by ``freeze`` (mappings are read-only, arrays tuples)."""

_EMPTY: Mapping[str, Any] = MappingProxyType({})


def _empty_mapping() -> Mapping[str, Any]:
    return _EMPTY


def freeze(value: Any) -> FrozenJSON:
    """Return an immutable deep copy of a JSON value, validating its types.

    Containers nested deeper than ``MAX_DEPTH`` (the canonical encoder's own bound, so
    every JSON entry point shares it) are ``CanonicalizationError``, never a
    ``RecursionError``.
    """
    return _freeze(value, 0)


def _freeze(value: Any, depth: int) -> FrozenJSON:
    kind = type(value)
    if value is None or kind in (bool, int):
        return value
    if kind is str:
        return nfc(value)
    if kind is float:
        if not math.isfinite(value):
            raise CanonicalizationError(f"non-finite number {value!r} is not JSON")
        return value
    if depth >= MAX_DEPTH and (kind in (list, tuple) or isinstance(value, Mapping)):
        raise CanonicalizationError(f"nesting deeper than {MAX_DEPTH}")
    if kind in (list, tuple):
        return tuple(_freeze(item, depth + 1) for item in value)
    if isinstance(value, Mapping):
        frozen: dict[str, Any] = {}
        for key in value:
            if type(key) is not str:
                raise CanonicalizationError(f"object key {key!r} is not a string")
            frozen[nfc(key)] = _freeze(value[key], depth + 1)
        return MappingProxyType(dict(sorted(frozen.items())))
    raise CanonicalizationError(f"type {kind.__name__} is not a JSON type")


def thaw(value: FrozenJSON) -> Any:
    """Return the plain JSON form (dicts and lists) of a frozen value."""
    kind = type(value)
    # Exact type checks first: ABC isinstance checks dominate profiles of admission.
    if kind is str or kind is int or kind is bool or kind is float or value is None:
        return value
    if kind is MappingProxyType or isinstance(value, Mapping):
        return {key: thaw(item) for key, item in value.items()}
    if isinstance(value, tuple):
        return [thaw(item) for item in value]
    return value


def _frozen_mapping(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    if not value:
        return _EMPTY
    frozen = freeze(value)
    assert isinstance(frozen, Mapping)
    return frozen


class IdentityStatus(StrEnum):
    """How far a node's ID can be trusted across edits (spec §3)."""

    STABLE = "stable"
    CONTEXT_BOUND = "context_bound"
    UNKNOWN = "unknown"
    LEGACY = "legacy"


class IdentityReason(StrEnum):
    """Why a node's identity is not ``stable``."""

    SOURCE_LOCATION_DERIVED = "source_location_derived"
    ABSOLUTE_WORKSPACE_PATH_DERIVED = "absolute_workspace_path_derived"
    SOURCE_ORDINAL_DERIVED = "source_ordinal_derived"
    COLLISION_SUFFIX_DERIVED = "collision_suffix_derived"
    ADAPTER_LOCAL_SYNTHETIC_IDENTITY = "adapter_local_synthetic_identity"
    IDENTITY_POLICY_NOT_DECLARED = "identity_policy_not_declared"
    IDENTITY_POLICY_NOT_AUDITED = "identity_policy_not_audited"
    LEGACY_IDENTITY_POLICY = "legacy_identity_policy"


CONTEXT_REASONS = frozenset(
    {
        IdentityReason.SOURCE_LOCATION_DERIVED,
        IdentityReason.ABSOLUTE_WORKSPACE_PATH_DERIVED,
        IdentityReason.SOURCE_ORDINAL_DERIVED,
        IdentityReason.COLLISION_SUFFIX_DERIVED,
        IdentityReason.ADAPTER_LOCAL_SYNTHETIC_IDENTITY,
    }
)
UNKNOWN_REASONS = frozenset(
    {IdentityReason.IDENTITY_POLICY_NOT_DECLARED, IdentityReason.IDENTITY_POLICY_NOT_AUDITED}
)
_ALLOWED_REASONS: dict[IdentityStatus, frozenset[IdentityReason]] = {
    IdentityStatus.STABLE: frozenset(),
    IdentityStatus.CONTEXT_BOUND: CONTEXT_REASONS,
    IdentityStatus.UNKNOWN: UNKNOWN_REASONS,
    IdentityStatus.LEGACY: frozenset({IdentityReason.LEGACY_IDENTITY_POLICY}),
}


def _parse_enum(enum: type[StrEnum], value: str, what: str) -> Any:
    try:
        return enum(value)
    except ValueError:
        choices = ", ".join(member.value for member in enum)
        raise InvariantError(f"unknown {what} {value!r}; expected one of: {choices}") from None


@dataclass(frozen=True, slots=True)
class EndpointIdentity:
    """A node's identity qualification: one status plus the reasons that explain it."""

    status: IdentityStatus
    reasons: tuple[IdentityReason, ...] = ()

    def __post_init__(self) -> None:
        status = _parse_enum(IdentityStatus, self.status, "identity status")
        reasons = tuple(
            sorted(
                {_parse_enum(IdentityReason, reason, "identity reason") for reason in self.reasons}
            )
        )
        object.__setattr__(self, "status", status)
        object.__setattr__(self, "reasons", reasons)
        allowed = _ALLOWED_REASONS[status]
        stray = [reason.value for reason in reasons if reason not in allowed]
        if stray:
            raise InvariantError(f"status {status.value!r} does not allow reasons {stray}")
        if status is IdentityStatus.STABLE:
            return
        if not reasons:
            raise InvariantError(f"status {status.value!r} needs at least one reason")

    @classmethod
    def stable(cls) -> EndpointIdentity:
        """A positively audited, movement-stable identity."""
        return cls(IdentityStatus.STABLE)

    @classmethod
    def undeclared(cls) -> EndpointIdentity:
        """What a caller gets for a node it did not qualify: never ``stable``."""
        return cls(IdentityStatus.UNKNOWN, (IdentityReason.IDENTITY_POLICY_NOT_DECLARED,))

    @classmethod
    def legacy(cls) -> EndpointIdentity:
        """The qualification of every node loaded from a v1 artifact."""
        return cls(IdentityStatus.LEGACY, (IdentityReason.LEGACY_IDENTITY_POLICY,))

    @classmethod
    def context_bound(cls, *reasons: IdentityReason | str) -> EndpointIdentity:
        """An identity that depends on the named non-semantic context."""
        return cls(IdentityStatus.CONTEXT_BOUND, tuple(IdentityReason(r) for r in reasons))

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {"status": self.status.value, "reasons": [r.value for r in self.reasons]}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> EndpointIdentity:
        """Parse the plain JSON form, validating it."""
        try:
            return cls(data["status"], tuple(data["reasons"]))
        except (KeyError, TypeError) as exc:
            raise InvariantError(f"malformed endpoint identity {data!r}") from exc


@dataclass(frozen=True, slots=True)
class FactEndpointIdentity:
    """The qualifications of a fact's two endpoints, recorded on the fact."""

    source: EndpointIdentity
    target: EndpointIdentity

    @property
    def movement_stable(self) -> bool:
        """True when the fact ID survives moving its evidence (stable x stable)."""
        return (
            self.source.status is IdentityStatus.STABLE
            and self.target.status is IdentityStatus.STABLE
        )

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {"source": self.source.to_json(), "target": self.target.to_json()}


@dataclass(frozen=True, slots=True)
class Node:
    """A thing in the graph: file, class, function, route, section, external symbol."""

    id: str
    kind: str
    identity: EndpointIdentity
    attributes: Mapping[str, Any] = field(default_factory=_empty_mapping)

    def __post_init__(self) -> None:
        _check_text(self.id, "node id")
        _check_text(self.kind, "node kind")
        object.__setattr__(self, "id", nfc(self.id))
        object.__setattr__(self, "attributes", _frozen_mapping(self.attributes))

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {
            "id": self.id,
            "kind": self.kind,
            "identity": self.identity.to_json(),
            "attributes": thaw(self.attributes),
        }


def _check_text(value: object, what: str) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(f"{what} must be a non-blank string, got {value!r}")


class Direction(StrEnum):
    """Whether a fact keeps its endpoint order."""

    DIRECTED = "directed"
    UNDIRECTED = "undirected"


@dataclass(frozen=True, slots=True)
class Discriminator:
    """What makes one relationship behaviourally distinct from another (spec §5)."""

    registry: str
    policy_version: int
    completeness: str
    value: Mapping[str, Any] = field(default_factory=_empty_mapping)
    reasons: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # Plain strings: enum members are not JSON types for the canonicaliser.
        object.__setattr__(self, "completeness", "".join(self.completeness))
        object.__setattr__(self, "value", _frozen_mapping(self.value))
        object.__setattr__(self, "reasons", tuple(sorted({"".join(r) for r in self.reasons})))

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {
            "registry": self.registry,
            "policy_version": self.policy_version,
            "completeness": self.completeness,
            "value": thaw(self.value),
            "reasons": list(self.reasons),
        }


@dataclass(frozen=True, slots=True)
class SourceRange:
    """A 1-based, inclusive line/column range inside one file."""

    start_line: int
    start_column: int
    end_line: int
    end_column: int

    def __post_init__(self) -> None:
        for name in ("start_line", "start_column", "end_line", "end_column"):
            number = getattr(self, name)
            if type(number) is not int or number < 1:
                raise ValidationError(f"source range {name} must be an integer >= 1")
        if (self.end_line, self.end_column) < (self.start_line, self.start_column):
            raise ValidationError("source range ends before it starts")

    def to_json(self) -> list[int]:
        """Plain JSON form: ``[start_line, start_column, end_line, end_column]``."""
        return [self.start_line, self.start_column, self.end_line, self.end_column]

    @classmethod
    def from_json(cls, data: Any) -> SourceRange | None:
        """Parse the plain JSON form (``None`` stays ``None``)."""
        if data is None:
            return None
        if not isinstance(data, list | tuple) or len(data) != 4:
            raise ValidationError(f"malformed source range {data!r}")
        return cls(*data)


@dataclass(frozen=True, slots=True)
class OccurrenceOwner:
    """Who observed an occurrence: the adapter, its strategy and (outside identity) version."""

    adapter_id: str
    strategy: str
    adapter_version: str | None = None

    def __post_init__(self) -> None:
        _check_text(self.adapter_id, "adapter id")
        _check_text(self.strategy, "strategy")

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {
            "adapter_id": self.adapter_id,
            "strategy": self.strategy,
            "adapter_version": self.adapter_version,
        }


def _shown(value: float) -> str:
    """``repr`` of a number for an error message; an integer past float range is not
    echoed (its digits could run to thousands, past ``int``'s string limit)."""
    if isinstance(value, int) and not fits_float(value):
        return "an integer past float range"
    return repr(value)


@dataclass(frozen=True, slots=True)
class ConfidenceObservation:
    """One reported confidence for an occurrence; observations are kept, never voted on."""

    value: float
    method: str
    observer: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.value, bool) or not isinstance(self.value, int | float):
            raise ValidationError(f"confidence must be a number, got {self.value!r}")
        # False for NaN and infinities too; an integer compares without conversion.
        if not 0.0 <= self.value <= 1.0:
            raise ValidationError(f"confidence must lie in [0, 1], got {_shown(self.value)}")
        _check_text(self.method, "confidence method")

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {"value": self.value, "method": self.method, "observer": self.observer}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ConfidenceObservation:
        """Parse the plain JSON form."""
        try:
            return cls(data["value"], data["method"], data.get("observer"))
        except (KeyError, TypeError) as exc:
            raise ValidationError(f"malformed confidence observation {data!r}") from exc


def canonical_tuple(items: Iterable[Any]) -> tuple[Any, ...]:
    """Freeze a set-like collection of JSON values in canonical order."""
    return tuple(freeze(item) for item in canonical_set(thaw(item) for item in items))


def sorted_observations(
    items: Iterable[ConfidenceObservation],
) -> tuple[ConfidenceObservation, ...]:
    """De-duplicate confidence observations and order them canonically."""
    keyed = {canonical_bytes(item.to_json()): item for item in items}
    return tuple(keyed[key] for key in sorted(keyed))


@dataclass(frozen=True, slots=True)
class EvidenceOccurrence:
    """One observation (file, range, adapter) supporting one fact (spec §6)."""

    id: str
    fact_id: str
    owner: OccurrenceOwner
    source_file: str | None = None
    source_range: SourceRange | None = None
    target_file: str | None = None
    target_range: SourceRange | None = None
    site_kind: str | None = None
    adapter_evidence_key: str | None = None
    provenance: tuple[FrozenJSON, ...] = ()
    confidence_observations: tuple[ConfidenceObservation, ...] = ()
    metadata_variants: tuple[Mapping[str, Any], ...] = ()
    diagnostics: tuple[str, ...] = ()

    @property
    def metadata(self) -> Mapping[str, Any]:
        """The single metadata object, or an empty one; see ``metadata_variants``."""
        return self.metadata_variants[0] if len(self.metadata_variants) == 1 else _EMPTY

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {
            "id": self.id,
            "fact_id": self.fact_id,
            "owner": self.owner.to_json(),
            "source_file": self.source_file,
            "source_range": self.source_range.to_json() if self.source_range else None,
            "target_file": self.target_file,
            "target_range": self.target_range.to_json() if self.target_range else None,
            "site_kind": self.site_kind,
            "adapter_evidence_key": self.adapter_evidence_key,
            "provenance": [thaw(item) for item in self.provenance],
            "confidence_observations": [obs.to_json() for obs in self.confidence_observations],
            "metadata_variants": [thaw(item) for item in self.metadata_variants],
            "diagnostics": list(self.diagnostics),
        }


@dataclass(frozen=True, slots=True)
class SemanticFact:
    """One behaviourally distinct relationship between two nodes (spec §4)."""

    id: str
    direction: Direction
    source: str
    target: str
    relation: str
    discriminator: Discriminator
    endpoint_identity: FactEndpointIdentity
    occurrence_ids: tuple[str, ...] = ()
    annotation_variants: tuple[Mapping[str, Any], ...] = ()

    @property
    def endpoint_pair(self) -> tuple[str, str]:
        """The (source, target) pair topology sees."""
        return (self.source, self.target)

    @property
    def annotations(self) -> Mapping[str, Any]:
        """The single annotation object, or an empty one; see ``annotation_variants``."""
        return self.annotation_variants[0] if len(self.annotation_variants) == 1 else _EMPTY

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {
            "id": self.id,
            "direction": self.direction.value,
            "source": self.source,
            "target": self.target,
            "relation": self.relation,
            "discriminator": self.discriminator.to_json(),
            "endpoint_identity": self.endpoint_identity.to_json(),
            "occurrence_ids": list(self.occurrence_ids),
            "annotation_variants": [thaw(item) for item in self.annotation_variants],
        }


@dataclass(frozen=True, slots=True)
class Hyperedge:
    """A relation among several nodes at once (for example a community or a module group)."""

    id: str
    relation: str
    members: tuple[str, ...]
    attributes: Mapping[str, Any] = field(default_factory=_empty_mapping)

    def __post_init__(self) -> None:
        _check_text(self.id, "hyperedge id")
        _check_text(self.relation, "hyperedge relation")
        if not self.members:
            raise ValidationError(f"hyperedge {self.id!r} needs at least one member")
        object.__setattr__(self, "members", tuple(sorted(set(self.members))))
        object.__setattr__(self, "attributes", _frozen_mapping(self.attributes))

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {
            "id": self.id,
            "relation": self.relation,
            "members": list(self.members),
            "attributes": thaw(self.attributes),
        }
