"""The field rules of the search and traverse requests: one object both checks a value
(admission) and states itself as JSON Schema (the OpenAPI document), so the published
schema can never be looser than the server in what it can express (issue 18, item 12).
The rule kinds, and the rules of the store's own records, live in ``cairn.store.rules``.

Each rule names its record and field (``RULES``). Admission calls ``rule.check``;
``cairn.server.schemas`` merges ``rule.schema()`` into the field's rendered schema.
What JSON Schema cannot say (a vector's length equal to its space's dimension, seeds
at most ``max_vertices``, the 65,536-byte request cap, a text's UTF-8 byte count) stays
in admission alone and in the field's description.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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
from cairn.search.priors import PRIOR_RULE
from cairn.store.evidence import MAX_EVIDENCE_PER_FACT
from cairn.store.limits import MAX_VECTOR_VALUE
from cairn.store.rules import (
    CONTROL_CHARACTERS,
    STORE_RULES,
    Choice,
    Count,
    Identifier,
    IntegerRange,
    Rule,
    Values,
    Weight,
)

__all__ = [
    "CONTROL_CHARACTERS",
    "DESCRIPTIONS",
    "MAX_IMPACT_TOP",
    "MAX_SHOW_BYTES",
    "RULES",
    "Choice",
    "Count",
    "Identifier",
    "IntegerRange",
    "Rule",
    "Values",
    "Weight",
    "check_record",
    "rule",
    "rules_of",
    "with_rules",
]


_WEIGHT = Weight()
_NAME = Identifier()
_CAPS: dict[str, Rule] = {
    "max_depth": IntegerRange(MIN_DEPTH, MAX_DEPTH),
    "max_vertices": IntegerRange(MIN_VERTICES, MAX_VERTICES),
    "max_edges": IntegerRange(MIN_EDGES, MAX_EDGES),
}
_LABELS = Count(0, MAX_LABELS, "labels")
_FILTERS = Count(1, MAX_LABELS, "filters", one="value", each=_NAME)

MAX_IMPACT_TOP = 500
"""Upper bound on the dependents an impact answer lists (all are counted)."""

MAX_SHOW_BYTES = 1_000_000
"""Upper bound on the source bytes one show answer returns."""

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
        "kinds": _FILTERS,
        "paths": _FILTERS,
        "prior": PRIOR_RULE,
    },
    "GraphWalkSpec": {
        "graph": _NAME,
        **_CAPS,
        "seeds": Count(1, MAX_SEEDS, "seeds"),
        "labels": _LABELS,
    },
    "GraphExpansion": {"graph": _NAME, **_CAPS, "labels": _LABELS},
    "GraphRetriever": {"weight": _WEIGHT},
    "CallsRequest": {
        "database": _NAME,
        "name": _NAME,
        "direction": Choice(("callers", "callees")),
        "depth": IntegerRange(MIN_DEPTH, MAX_DEPTH),
        "sites": IntegerRange(0, MAX_EVIDENCE_PER_FACT),
        "graph": _NAME,
        "kinds": _FILTERS,
        "paths": _FILTERS,
    },
    "ImpactRequest": {
        "database": _NAME,
        "name": _NAME,
        "relations": Count(1, MAX_LABELS, "relations", one="relation", each=_NAME),
        **_CAPS,
        "top": IntegerRange(0, MAX_IMPACT_TOP),
        "graph": _NAME,
        "kinds": _FILTERS,
        "paths": _FILTERS,
    },
    "ShowRequest": {
        "database": _NAME,
        "name": _NAME,
        "max_bytes": IntegerRange(0, MAX_SHOW_BYTES),
    },
    "TraverseRequest": {
        "database": _NAME,
        "graph": _NAME,
        **_CAPS,
        "seeds": Count(1, MAX_SEEDS, "seeds"),
        "relations": _LABELS,
        "evidence": IntegerRange(0, MAX_EVIDENCE_PER_FACT),
        "kinds": _FILTERS,
        "paths": _FILTERS,
    },
}
"""Record name -> field -> its rule."""

DESCRIPTIONS: dict[str, dict[str, str]] = {
    "SearchRequest": {
        "text": f"At most {MAX_TEXT_BYTES} UTF-8 bytes; given together with text_field.",
        "text_field": "A declared text field (BM25), or several with weights, "
        "'/name^2 /qualified_name^0.5 /signature /text' (BM25F; weight 1 when left out).",
        "vector": "As many values as the space's dimension; given with vector_field and space.",
    },
    "GraphWalkSpec": {"seeds": "At most max_vertices seeds."},
    "TraverseRequest": {"seeds": "At most max_vertices seeds."},
}
"""What admission checks beyond the rules, stated on the field in the schema."""


def check_record(record: Any) -> None:
    """Hold every field of a search-side request record to its rule in ``RULES`` (an
    optional field left ``None`` passes)."""
    for name, held in RULES[type(record).__name__].items():
        value = getattr(record, name)
        if value is not None:
            held.check(value, name)


def rule(record: str, name: str) -> Rule:
    """The rule of ``record.name`` (``KeyError`` for a field without one)."""
    return rules_of(record)[name]


def rules_of(record: str) -> Mapping[str, Rule]:
    """Every field rule of ``record``: a search record's or a store record's."""
    if record in RULES:
        return RULES[record]
    return {name: spec.rule for name, spec in STORE_RULES.get(record, {}).items()}


def with_rules(schema: dict[str, Any], record: str) -> dict[str, Any]:
    """``schema`` (a rendered object schema of ``record``) with each field's rule, and
    what only the checks say, merged into its properties."""
    properties = dict(schema["properties"])
    for name, held in rules_of(record).items():
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
