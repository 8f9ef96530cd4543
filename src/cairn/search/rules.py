"""The field rules of the search and traverse requests: one object both checks a value
(admission) and states itself as JSON Schema (the OpenAPI document), so the published
schema can never be looser than the server in what it can express (issue 18, item 12).

Each rule names its record and field (``RULES``). Admission calls ``rule.check``;
``cairn.server.schemas`` merges ``rule.schema()`` into the field's rendered schema.
What JSON Schema cannot say (a vector's length equal to its space's dimension, seeds
at most ``max_vertices``, the 65,536-byte request cap, a text's UTF-8 byte count) stays
in admission alone and in the field's description.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cairn.canonical import fits_float
from cairn.errors import ValidationError
from cairn.search.limits import (
    MAX_ALLOWED_IDS,
    MAX_DEPTH,
    MAX_EDGES,
    MAX_LABELS,
    MAX_LIMIT,
    MAX_SEEDS,
    MAX_TEXT_BYTES,
    MAX_VERTICES,
    MIN_DEPTH,
    MIN_EDGES,
    MIN_FUSION_K,
    MIN_LIMIT,
    MIN_VERTICES,
)
from cairn.store.limits import MAX_IDENTIFIER_BYTES, MAX_VECTOR_VALUE, check_identifier

__all__ = [
    "CONTROL_CHARACTERS",
    "DESCRIPTIONS",
    "RULES",
    "Count",
    "Identifier",
    "IntegerRange",
    "Rule",
    "Values",
    "Weight",
    "rule",
    "with_rules",
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
class Count:
    """An array of ``low..high`` items (``low`` 0 or 1; the items are checked on their own)."""

    low: int
    high: int
    noun: str = "items"

    def check(self, value: Any, what: str) -> None:
        """Raise ``ValidationError`` naming ``what`` unless ``value`` has a length in range."""
        if len(value) < self.low:
            raise _fail(f"{what} must be a non-empty array", what)
        if len(value) > self.high:
            raise _fail(f"{what} holds {len(value)} {self.noun}; at most {self.high}", what)

    def schema(self) -> dict[str, Any]:
        """The JSON Schema of the arrays ``check`` accepts."""
        return {"type": "array", "minItems": self.low, "maxItems": self.high}


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
    """A name (database, collection, graph, field, ID): ``check_identifier``'s rule."""

    def check(self, value: Any, what: str) -> None:
        """Raise ``ValidationError`` naming ``what`` unless ``value`` is an identifier."""
        check_identifier(value, what)

    def schema(self) -> dict[str, Any]:
        """The JSON Schema of the values ``check`` accepts, as near as JSON Schema can
        say: non-blank, no control character, at most ``MAX_IDENTIFIER_BYTES``
        characters (the UTF-8 byte bound itself is in the description)."""
        return {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_IDENTIFIER_BYTES,
            "pattern": "\\S",
            "not": {"pattern": CONTROL_CHARACTERS},
        }


Rule = IntegerRange | Weight | Count | Values | Identifier
"""A field rule: ``check(value, what)`` in admission, ``schema()`` in the OpenAPI."""

_WEIGHT = Weight()
_NAME = Identifier()
_CAPS: dict[str, Rule] = {
    "max_depth": IntegerRange(MIN_DEPTH, MAX_DEPTH),
    "max_vertices": IntegerRange(MIN_VERTICES, MAX_VERTICES),
    "max_edges": IntegerRange(MIN_EDGES, MAX_EDGES),
}
_LABELS = Count(0, MAX_LABELS, "labels")

RULES: dict[str, dict[str, Rule]] = {
    "SearchRequest": {
        "database": _NAME,
        "collection": _NAME,
        "text_field": _NAME,
        "vector_field": _NAME,
        "limit": IntegerRange(MIN_LIMIT, MAX_LIMIT),
        "fusion_k": IntegerRange(MIN_FUSION_K),
        "text_weight": _WEIGHT,
        "vector_weight": _WEIGHT,
        "vector": Values(MAX_VECTOR_VALUE),
        "allowed_ids": Count(0, MAX_ALLOWED_IDS, "IDs"),
    },
    "GraphWalkSpec": {
        "graph": _NAME,
        **_CAPS,
        "seeds": Count(1, MAX_SEEDS, "seeds"),
        "labels": _LABELS,
    },
    "GraphExpansion": {"graph": _NAME, **_CAPS, "labels": _LABELS},
    "GraphRetriever": {"weight": _WEIGHT},
    "TraverseRequest": {
        "database": _NAME,
        "graph": _NAME,
        **_CAPS,
        "seeds": Count(1, MAX_SEEDS, "seeds"),
        "relations": _LABELS,
    },
    "EntityRef": {"collection": _NAME, "id": _NAME},
}
"""Record name -> field -> its rule."""

_NAMED = f"At most {MAX_IDENTIFIER_BYTES} UTF-8 bytes."

DESCRIPTIONS: dict[str, dict[str, str]] = {
    "SearchRequest": {
        "database": _NAMED,
        "collection": _NAMED,
        "text": f"At most {MAX_TEXT_BYTES} UTF-8 bytes; given together with text_field.",
        "vector": "As many values as the space's dimension; given with vector_field and space.",
    },
    "GraphWalkSpec": {"seeds": "At most max_vertices seeds."},
    "TraverseRequest": {"seeds": "At most max_vertices seeds."},
}
"""What admission checks beyond the rules, stated on the field in the schema."""


def rule(record: str, name: str) -> Rule:
    """The rule of ``record.name`` (``KeyError`` for a field without one)."""
    return RULES[record][name]


def with_rules(schema: dict[str, Any], record: str) -> dict[str, Any]:
    """``schema`` (a rendered object schema of ``record``) with each field's rule, and
    what only admission checks, merged into its properties."""
    properties = dict(schema["properties"])
    for name, held in RULES.get(record, {}).items():
        if name in properties:
            properties[name] = _bounded(properties[name], held.schema())
    for name, note in DESCRIPTIONS.get(record, {}).items():
        if name in properties:
            properties[name] = {**properties[name], "description": note}
    return {**schema, "properties": properties}


def _bounded(rendered: dict[str, Any], bounds: dict[str, Any]) -> dict[str, Any]:
    """Merge ``bounds`` into a rendered field schema (into its non-null branch when the
    field is optional: ``anyOf [X, null]``)."""
    if "anyOf" in rendered:
        branches = [
            branch if branch.get("type") == "null" else _bounded(branch, bounds)
            for branch in rendered["anyOf"]
        ]
        return {**rendered, "anyOf": branches}
    merged = {**rendered, **{key: value for key, value in bounds.items() if key != "items"}}
    if "items" in bounds:
        merged["items"] = {**rendered.get("items", {}), **bounds["items"]}
    return merged
