"""Field rules: one object both checks a value and states itself as JSON Schema, so
the published OpenAPI schema can never be looser than the server in what JSON Schema
can express (issue 18, item 12).

The store's own records name their rules here (``STORE_RULES``, checked by
``check_fields`` from the records' validation); the search and traverse requests name
theirs in ``cairn.search.rules``. ``cairn.server.schemas`` merges ``rule.schema()``
into each field's rendered schema. What JSON Schema cannot say (a UTF-8 byte count, a
vector's length equal to its space's dimension) stays in the checks alone and in the
field's description.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cairn.canonical import fits_float
from cairn.errors import ValidationError
from cairn.store.limits import (
    MAX_API_KEYS_PER_PRINCIPAL,
    MAX_FIELD_POLICIES,
    MAX_GRANTS_PER_PRINCIPAL,
    MAX_IDENTIFIER_BYTES,
    MAX_MUTATIONS,
    MAX_OCCURRENCES_PER_FACT,
    MAX_PATCH_OPERATIONS,
    MAX_PROJECTS_PER_PRINCIPAL,
    MAX_TEXT_FIELDS,
    MAX_VECTOR_DIMENSION,
    MAX_VECTOR_FIELDS,
    MAX_VECTOR_VALUE,
    MIN_VECTOR_DIMENSION,
    check_identifier,
    check_json_pointer,
)
from cairn.store.text import ANALYZERS

__all__ = [
    "ANY_NAME",
    "CONTROL_CHARACTERS",
    "STORE_RULES",
    "Choice",
    "Count",
    "Field",
    "GrantPattern",
    "Identifier",
    "IntegerRange",
    "Pointer",
    "Rule",
    "Values",
    "Weight",
    "check_fields",
]


def _fail(message: str, what: str) -> ValidationError:
    return ValidationError(message, details={"field": what})


@dataclass(frozen=True, slots=True)
class IntegerRange:
    """An integer in ``low..high`` (``high`` None: no upper bound); never a boolean."""

    low: int
    high: int | None = None

    def check(self, value: Any, what: str) -> None:
        """Raise ``ValidationError`` naming ``what`` unless ``value`` is in range."""
        high = self.high
        if type(value) is not int or value < self.low or (high is not None and value > high):
            if high is None:
                raise _fail(f"{what} must be an integer >= {self.low}, got {value!r}", what)
            raise _fail(f"{what} must be an integer in {self.low}..{high}, got {value!r}", what)

    def schema(self) -> dict[str, Any]:
        """The JSON Schema of the values ``check`` accepts."""
        bounds: dict[str, Any] = {"type": "integer", "minimum": self.low}
        if self.high is not None:
            bounds["maximum"] = self.high
        return bounds


@dataclass(frozen=True, slots=True)
class Weight:
    """A finite number >= 0 (a branch weight)."""

    def check(self, value: Any, what: str) -> None:
        """Raise ``ValidationError`` naming ``what`` unless ``value`` is a weight."""
        # An integer past float range (``10**400``) is no weight a float can hold.
        if type(value) not in (int, float) or not fits_float(value) or value < 0:
            huge = type(value) is int and not fits_float(value)
            shown = "an integer past float range" if huge else repr(value)
            raise _fail(f"{what} must be a finite number >= 0, got {shown}", what)

    def schema(self) -> dict[str, Any]:
        """The JSON Schema of the values ``check`` accepts."""
        return {"type": "number", "minimum": 0}


@dataclass(frozen=True, slots=True)
class Values:
    """An array of numbers each within ``±bound`` (the vector's own checks come first)."""

    bound: float

    def check(self, value: Any, what: str) -> None:
        """Raise ``ValidationError`` naming ``what`` if a value lies outside ``±bound``."""
        if any(abs(item) > self.bound for item in value):
            raise _fail(f"{what} values must be within ±{self.bound} (vectors are float32)", what)

    def schema(self) -> dict[str, Any]:
        """The JSON Schema of the arrays ``check`` accepts."""
        bounds = {"type": "number", "minimum": -self.bound, "maximum": self.bound}
        return {"type": "array", "items": bounds}


CONTROL_CHARACTERS = "[\\u0000-\\u001f\\u007f-\\u009f]"
"""A JSON Schema pattern matching a Unicode control character (category Cc)."""


@dataclass(frozen=True, slots=True)
class Identifier:
    """A name (database, collection, graph, field, ID): ``check_identifier``'s rule,
    and none of the characters in ``without``."""

    without: str = ""

    def check(self, value: Any, what: str) -> None:
        """Raise ``ValidationError`` naming ``what`` unless ``value`` is an identifier."""
        check_identifier(value, what)
        for char in self.without:
            if char in value:
                raise _fail(f"{what} must not contain {char!r}", what)

    def schema(self) -> dict[str, Any]:
        """The JSON Schema of the values ``check`` accepts, as near as JSON Schema can
        say: non-blank, no control character, at most ``MAX_IDENTIFIER_BYTES``
        characters (the UTF-8 byte bound itself is in the description)."""
        bounds: dict[str, Any] = {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_IDENTIFIER_BYTES,
            "pattern": "\\S",
            "not": {"pattern": CONTROL_CHARACTERS},
            "description": f"At most {MAX_IDENTIFIER_BYTES} UTF-8 bytes.",
        }
        if self.without:
            bounds["allOf"] = [{"pattern": f"^[^{re.escape(self.without)}]*$"}]
        return bounds


ANY_NAME = "*"
"""A grant pattern matching every name (``*`` inside a pattern matches any run)."""


@dataclass(frozen=True, slots=True)
class GrantPattern:
    """A grant's database or resource: ``*`` or an identifier (``*`` matches any run)."""

    def check(self, value: Any, what: str) -> None:
        """Raise ``ValidationError`` naming ``what`` unless ``value`` is a pattern."""
        if value != ANY_NAME:
            check_identifier(value, what)

    def schema(self) -> dict[str, Any]:
        """The JSON Schema of the values ``check`` accepts (``*`` is an identifier too)."""
        return Identifier().schema()


@dataclass(frozen=True, slots=True)
class Pointer:
    """An RFC 6901 JSON pointer naming a field: ``check_json_pointer``'s rule."""

    def check(self, value: Any, what: str) -> None:
        """Raise ``ValidationError`` naming ``what`` unless ``value`` is a field pointer."""
        check_json_pointer(value, what)

    def schema(self) -> dict[str, Any]:
        """The JSON Schema of the values ``check`` accepts, as near as JSON Schema can say."""
        return {
            **Identifier().schema(),
            "pattern": "^/([^~]|~[01])*$",
            "description": f"A JSON pointer (RFC 6901); at most {MAX_IDENTIFIER_BYTES} "
            "UTF-8 bytes.",
        }


@dataclass(frozen=True, slots=True)
class Count:
    """An array of ``low..high`` items (``high`` None: no cap), each held to ``each``
    when given, all distinct when ``unique``."""

    low: int
    high: int | None
    noun: str = "items"
    one: str | None = None
    """The singular noun: a short array is then "X needs at least one <one>"."""
    each: Identifier | Pointer | None = None
    unique: bool = False

    def check(self, value: Any, what: str) -> None:
        """Raise ``ValidationError`` naming ``what`` unless ``value`` is a fitting array."""
        if len(value) < self.low:
            if self.one is not None:
                raise _fail(f"{what} needs at least one {self.one}", what)
            raise _fail(f"{what} must be a non-empty array", what)
        if self.high is not None and len(value) > self.high:
            raise ValidationError(
                f"{what} holds {len(value)} {self.noun}; "
                f"at most {self.high} {self.noun} are allowed",
                details={"field": what, "limit": self.high, "count": len(value)},
            )
        if self.each is not None:
            for item in value:
                self.each.check(item, what)
        if self.unique and len(set(value)) != len(value):
            raise _fail(f"{what} must be unique", what)

    def schema(self) -> dict[str, Any]:
        """The JSON Schema of the arrays ``check`` accepts."""
        bounds: dict[str, Any] = {"type": "array", "minItems": self.low}
        if self.high is not None:
            bounds["maxItems"] = self.high
        if self.each is not None:
            bounds["items"] = self.each.schema()
        if self.unique:
            bounds["uniqueItems"] = True
        return bounds


@dataclass(frozen=True, slots=True)
class Choice:
    """One of a fixed set of strings."""

    values: tuple[str, ...]

    def check(self, value: Any, what: str) -> None:
        """Raise ``ValidationError`` naming ``what`` unless ``value`` is one of ``values``."""
        if value not in self.values:
            raise _fail(f"{what} must be one of {list(self.values)}, got {value!r}", what)

    def schema(self) -> dict[str, Any]:
        """The JSON Schema of the values ``check`` accepts."""
        return {"type": "string", "enum": list(self.values)}


Rule = IntegerRange | Weight | Count | Values | Identifier | GrantPattern | Pointer | Choice
"""A field rule: ``check(value, what)`` in validation, ``schema()`` in the OpenAPI."""


@dataclass(frozen=True, slots=True)
class Field:
    """A record field's rule and the name its errors use; ``None`` passes when optional."""

    rule: Rule
    label: str
    optional: bool = False


_NAME = Identifier()
_PATTERN = GrantPattern()

STORE_RULES: Mapping[str, Mapping[str, Field]] = {
    "CommandRequest": {
        "database": Field(_NAME, "database"),
        "mutations": Field(Count(1, MAX_MUTATIONS, "mutations", one="mutation"), "a command"),
    },
    "EntityRef": {
        "collection": Field(_NAME, "collection"),
        "id": Field(_NAME, "document id"),
    },
    "DocumentAccess": {
        "owner": Field(_NAME, "access owner", optional=True),
        "project": Field(_NAME, "access project", optional=True),
    },
    "VectorSpace": {
        "id": Field(_NAME, "space id"),
        "dimension": Field(
            IntegerRange(MIN_VECTOR_DIMENSION, MAX_VECTOR_DIMENSION), "space dimension"
        ),
        "model": Field(_NAME, "space model"),
        "version": Field(_NAME, "space version"),
    },
    "VectorField": {"name": Field(_NAME, "vector field")},
    "PatchOperation": {"path": Field(Pointer(), "patch path")},
    "PatchDocument": {
        "operations": Field(
            Count(1, MAX_PATCH_OPERATIONS, "patch operations", one="operation"), "a patch"
        )
    },
    "PutVector": {
        "field": Field(_NAME, "vector field"),
        "vector": Field(Values(MAX_VECTOR_VALUE), "vector"),
    },
    "PutFact": {
        "graph": Field(_NAME, "graph"),
        "relation": Field(_NAME, "relation"),
        "occurrences": Field(Count(0, MAX_OCCURRENCES_PER_FACT, "occurrences"), "occurrences"),
    },
    "DeleteFact": {"graph": Field(_NAME, "graph"), "fact_id": Field(_NAME, "fact id")},
    "ConfigureCollection": {
        "name": Field(_NAME, "collection"),
        "text_fields": Field(
            Count(0, MAX_TEXT_FIELDS, "text fields", each=Pointer(), unique=True), "text fields"
        ),
        "vector_fields": Field(Count(0, MAX_VECTOR_FIELDS, "vector fields"), "vector fields"),
        "analyzer": Field(Choice(ANALYZERS), "analyzer"),
    },
    "ConfigureGraph": {"name": Field(_NAME, "graph")},
    "ConfigurePrincipal": {
        "id": Field(_NAME, "principal id"),
        "grants": Field(Count(0, MAX_GRANTS_PER_PRINCIPAL, "grants"), "grants"),
        "field_grants": Field(
            Count(0, MAX_GRANTS_PER_PRINCIPAL, "field grants", each=_NAME), "field grants"
        ),
        "owner_id": Field(_NAME, "owner_id", optional=True),
        "projects": Field(Count(0, MAX_PROJECTS_PER_PRINCIPAL, "projects", each=_NAME), "projects"),
        "api_keys": Field(Count(0, MAX_API_KEYS_PER_PRINCIPAL, "api keys"), "api keys"),
    },
    "ConfigurePolicy": {
        "resource": Field(_NAME, "policy resource"),
        "fields": Field(Count(0, MAX_FIELD_POLICIES, "field policies"), "field policies"),
    },
    "Grant": {
        "database": Field(_PATTERN, "grant database"),
        "resource": Field(_PATTERN, "grant resource"),
        "capabilities": Field(Count(1, None, "capabilities", one="capability"), "a grant"),
    },
    "FieldPolicy": {
        "path": Field(Pointer(), "field policy path"),
        "read_grant": Field(_NAME, "field policy read_grant", optional=True),
        "use_grant": Field(_NAME, "field policy use_grant", optional=True),
        "write_grant": Field(_NAME, "field policy write_grant", optional=True),
    },
    "ApiKeyVerifier": {"key_id": Field(Identifier(without="."), "api key id")},
}
"""Store record name -> field -> its rule: what validation checks and the schema says."""


def check_fields(record: object) -> None:
    """Hold each field of a store record to its rule in ``STORE_RULES``."""
    for name, spec in STORE_RULES[type(record).__name__].items():
        value = getattr(record, name)
        if value is None and spec.optional:
            continue
        spec.rule.check(value, spec.label)
