"""The relation discriminator registry ``cairn.relation-registry/1`` (spec §5).

Each relation Cairn stores is listed with a policy. ``behavioural`` relations name the
fields that make two relationships distinct, with types and normalisation;
``endpoint_only`` relations are distinct only by their endpoints. ``legacy`` is the one
relation v1 links load as. An unregistered relation is never stored.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Any

from cairn.canonical import MAX_SAFE_INTEGER
from cairn.errors import ValidationError
from cairn.graph.model import Direction, Discriminator

__all__ = [
    "LEGACY_RELATION",
    "REGISTRY",
    "REGISTRY_ID",
    "REGISTRY_VERSION",
    "Completeness",
    "FieldSpec",
    "Policy",
    "RelationRegistry",
    "RelationSpec",
    "normalize_route_path",
]

REGISTRY_VERSION = 1
REGISTRY_ID = f"cairn.relation-registry/{REGISTRY_VERSION}"
LEGACY_RELATION = "legacy_link"
LEGACY_FIELDS = ("legacy_link_fingerprint", "legacy_duplicate_ordinal")
DISCRIMINATOR_CACHE_SIZE = 16_384
"""Distinct normalised discriminators remembered per process (they are immutable)."""


class Policy(StrEnum):
    """How a relation's facts are told apart."""

    BEHAVIOURAL = "behavioural"
    ENDPOINT_ONLY = "endpoint_only"
    LEGACY = "legacy"


class Completeness(StrEnum):
    """How much of a discriminator the producer supplied."""

    FULL = "full"
    PARTIAL = "partial"
    ENDPOINT_ONLY = "endpoint_only"
    LEGACY = "legacy"


Normaliser = Callable[[Any], Any]


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """One discriminator field: its name, JSON type, allowed values and normaliser."""

    name: str
    kind: type
    choices: frozenset[str] | None = None
    normalise: Normaliser | None = None

    def coerce(self, relation: str, raw: Any) -> Any:
        """Validate and normalise one supplied value."""
        if self.kind is bool:
            valid = isinstance(raw, bool)
        elif self.kind is int:
            valid = type(raw) is int and abs(raw) <= MAX_SAFE_INTEGER
        else:
            valid = isinstance(raw, str) and bool(raw.strip())
        if not valid:
            raise ValidationError(
                f"{relation}.{self.name} must be a {self.kind.__name__}, got {raw!r}",
                details={"relation": relation, "field": self.name},
            )
        value = self.normalise(raw) if self.normalise else raw
        if self.choices is not None and value not in self.choices:
            raise ValidationError(
                f"{relation}.{self.name} must be one of {sorted(self.choices)}, got {raw!r}",
                details={"relation": relation, "field": self.name},
            )
        return value


@dataclass(frozen=True, slots=True)
class RelationSpec:
    """A registered relation: its policy, direction and discriminator fields."""

    name: str
    policy: Policy
    fields: tuple[FieldSpec, ...] = ()
    direction: Direction = Direction.DIRECTED
    description: str = ""

    def discriminator(self, raw: Mapping[str, Any] | None) -> Discriminator:
        """Normalise a supplied discriminator; missing fields make it partial, never guessed."""
        if not raw:
            return _cached_discriminator(self, ())
        try:
            # The type is part of the key: True == 1 must not share a cache entry.
            key = tuple(sorted((name, type(value), value) for name, value in raw.items()))
            hash(key)
        except TypeError:
            return self._normalise(raw)  # unhashable values: validation will name them
        return _cached_discriminator(self, key)

    def _normalise(self, raw: Mapping[str, Any] | None) -> Discriminator:
        supplied = dict(raw or {})
        known = {spec.name for spec in self.fields}
        unknown = sorted(set(supplied) - known)
        if unknown:
            raise ValidationError(
                f"relation {self.name!r} has no discriminator fields {unknown}; "
                "put other data in occurrence metadata",
                details={"relation": self.name, "fields": unknown},
            )
        if self.policy is Policy.ENDPOINT_ONLY:
            return Discriminator(REGISTRY_ID, REGISTRY_VERSION, Completeness.ENDPOINT_ONLY)
        value: dict[str, Any] = {}
        missing: list[str] = []
        for spec in self.fields:
            raw_value = supplied.get(spec.name)
            if raw_value is None:
                missing.append(f"{spec.name}_missing")
            else:
                value[spec.name] = spec.coerce(self.name, raw_value)
        if self.policy is Policy.LEGACY:
            if missing:
                raise ValidationError(f"legacy discriminator lacks {missing}")
            completeness = Completeness.LEGACY
        else:
            completeness = Completeness.PARTIAL if missing else Completeness.FULL
        return Discriminator(REGISTRY_ID, REGISTRY_VERSION, completeness, value, tuple(missing))

    def to_json(self) -> dict[str, Any]:
        """Plain JSON description (for docs and ``cairn graph info``)."""
        return {
            "name": self.name,
            "policy": self.policy.value,
            "direction": self.direction.value,
            "fields": [
                {
                    "name": spec.name,
                    "type": spec.kind.__name__,
                    "choices": sorted(spec.choices) if spec.choices is not None else None,
                }
                for spec in self.fields
            ],
            "description": self.description,
        }


@functools.lru_cache(maxsize=DISCRIMINATOR_CACHE_SIZE)
def _cached_discriminator(
    spec: RelationSpec, key: tuple[tuple[str, type, Any], ...]
) -> Discriminator:
    """Discriminators repeat heavily in real graphs; normalise each distinct one once."""
    return spec._normalise({name: value for name, _, value in key})


_PATH_PARAM = re.compile(
    r"<(?:[^:<>]+:)?([^<>]+)>|:([A-Za-z_][A-Za-z0-9_]*)|\{([^{}:]+)(?::[^{}]*)?\}"
)
_SLASHES = re.compile(r"/{2,}")


def normalize_route_path(path: str) -> str:
    """Normalise a route path: one leading slash, no repeats or trailing slash, ``{param}``.

    Flask ``<int:id>``, Express ``:id`` and FastAPI ``{id}`` / ``{id:path}`` all become
    ``{id}``, so one route declared in different styles has one identity.
    """
    text = path.strip()
    text = _PATH_PARAM.sub(lambda m: "{" + next(g for g in m.groups() if g) + "}", text)
    text = _SLASHES.sub("/", "/" + text.lstrip("/"))
    if len(text) > 1:
        text = text.rstrip("/")
    return text


def _upper(value: str) -> str:
    return value.strip().upper()


def _lower(value: str) -> str:
    return value.strip().lower()


def _strip(value: str) -> str:
    return value.strip()


def _enum(name: str, *choices: str) -> FieldSpec:
    return FieldSpec(name, str, frozenset(choices), _lower)


def _text(name: str, normalise: Normaliser = _strip) -> FieldSpec:
    return FieldSpec(name, str, None, normalise)


HTTP_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "TRACE", "ANY")

_RELATIONS: tuple[RelationSpec, ...] = (
    RelationSpec(
        "calls",
        Policy.BEHAVIOURAL,
        (
            _enum("invocation", "call", "construct"),
            _enum("dispatch", "direct", "method", "attribute", "dynamic"),
            FieldSpec("optional_chaining", bool),
            _enum("resolution", "resolved", "ambiguous", "external"),
        ),
        description="function/method -> function/method/class/external",
    ),
    RelationSpec(
        "imports",
        Policy.BEHAVIOURAL,
        (
            _text("specifier"),
            _enum(
                "binding_kind",
                "module",
                "named",
                "default",
                "namespace",
                "wildcard",
                "side_effect",
                "require",
            ),
            _text("imported_name"),
            _enum("phase", "runtime", "type"),
            _enum("form", "static", "dynamic"),
            _enum("resolution", "internal", "external", "unresolved"),
        ),
        description="file -> file/external",
    ),
    RelationSpec(
        "inherits",
        Policy.BEHAVIOURAL,
        (_enum("kind", "extends", "implements"),),
        description="class -> class/external",
    ),
    RelationSpec(
        "decorates",
        Policy.BEHAVIOURAL,
        (_text("decorator"),),
        description="function/class -> function/method/class",
    ),
    RelationSpec(
        "handles_route",
        Policy.BEHAVIOURAL,
        (
            FieldSpec("method", str, frozenset(HTTP_METHODS), _upper),
            _text("path", normalize_route_path),
            _enum("framework", "flask", "fastapi", "django", "express", "net_http"),
            _enum("registration", "decorator", "call"),
        ),
        description="route -> function/method",
    ),
    RelationSpec(
        "references",
        Policy.BEHAVIOURAL,
        (_enum("link_kind", "file", "section", "file_section"),),
        description="section -> file/section",
    ),
    RelationSpec(
        "exports",
        Policy.BEHAVIOURAL,
        (_text("exported_name"), _enum("form", "named", "default", "reexport")),
        description="file -> symbol it exports",
    ),
    RelationSpec("contains", Policy.ENDPOINT_ONLY, description="structural containment"),
    RelationSpec("defines", Policy.ENDPOINT_ONLY, description="a scope defines a symbol"),
    RelationSpec("documents", Policy.ENDPOINT_ONLY, description="a doc describes a node"),
    RelationSpec("mentions", Policy.ENDPOINT_ONLY, description="section -> symbol (inferred)"),
    RelationSpec(
        "related_to",
        Policy.ENDPOINT_ONLY,
        direction=Direction.UNDIRECTED,
        description="an undirected association between two nodes",
    ),
    RelationSpec(
        LEGACY_RELATION,
        Policy.LEGACY,
        (FieldSpec(LEGACY_FIELDS[0], str), FieldSpec(LEGACY_FIELDS[1], int)),
        description="a link loaded from a v1 artifact",
    ),
)


class RelationRegistry:
    """A static, versioned set of relation specs, looked up by name."""

    def __init__(self, identifier: str, specs: tuple[RelationSpec, ...]) -> None:
        self.identifier = identifier
        self._specs: Mapping[str, RelationSpec] = MappingProxyType(
            {spec.name: spec for spec in sorted(specs, key=lambda spec: spec.name)}
        )

    def get(self, relation: str) -> RelationSpec | None:
        """The spec of ``relation``, or None when it is not registered."""
        return self._specs.get(relation)

    def __contains__(self, relation: object) -> bool:
        return relation in self._specs

    def names(self) -> tuple[str, ...]:
        """Every registered relation name, sorted."""
        return tuple(self._specs)

    def to_json(self) -> dict[str, Any]:
        """Plain JSON description of the whole registry."""
        return {
            "id": self.identifier,
            "relations": [spec.to_json() for spec in self._specs.values()],
        }


REGISTRY = RelationRegistry(REGISTRY_ID, _RELATIONS)
