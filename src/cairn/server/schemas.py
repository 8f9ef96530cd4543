"""OpenAPI component schemas of the HTTP API, derived from the contract records.

Request bodies are parsed by the strict wire codec (``cairn.search.wire``,
``command_from_json``), never by FastAPI, so the schemas here only document them: the
search and traverse records, the mutations and the admin bodies are rendered from
their dataclasses (pydantic's JSON Schema generator over the type hints), and each
field's bounds are merged in from the very rule objects the server checks it with
(``cairn.search.rules``, ``cairn.store.rules``), so the document is never looser than
the server where JSON Schema can say it; replies and problems are written out.
Search records carry an optional ``type`` tag; fields with defaults may be left out,
as the codec allows.
"""

from __future__ import annotations

import functools
from typing import Any

from pydantic import TypeAdapter

from cairn.search.aliases import CONTRACT_ALIASES
from cairn.search.calls import CallsAnswer, CallsRequest
from cairn.search.contracts import (
    DocumentResult,
    GraphSearchRequest,
    GraphSearchResult,
    RankedDocument,
    SearchRequest,
    SqlGraphSearchRequest,
)
from cairn.search.impact import ImpactAnswer, ImpactRequest
from cairn.search.rules import rules_of, with_rules
from cairn.search.show import ShowAnswer, ShowRequest
from cairn.search.traverse import (
    TRAVERSE_REQUEST_ALIAS,
    TRAVERSE_RESULT_ALIAS,
    TraverseRequest,
    TraverseResult,
)
from cairn.server.admin import PRINCIPAL_SETTINGS
from cairn.store.commands import MUTATION_TYPES

__all__ = ["BODY_SUFFIX", "component_schemas", "json_body", "json_reply", "ref"]

BODY_SUFFIX = "Body"
"""Suffix of a contract's top-level body schema (which allows the ``type`` tag)."""

_PREFIX = "#/components/schemas/"
_REF_TEMPLATE = _PREFIX + "{model}"

_REQUESTS: dict[str, tuple[type[Any], str]] = {
    "SearchRequest": (SearchRequest, CONTRACT_ALIASES["SearchRequest"]),
    "GraphSearchRequest": (GraphSearchRequest, CONTRACT_ALIASES["GraphSearchRequest"]),
    "SqlGraphSearchRequest": (SqlGraphSearchRequest, CONTRACT_ALIASES["SqlGraphSearchRequest"]),
    "TraverseRequest": (TraverseRequest, TRAVERSE_REQUEST_ALIAS),
}
_RESULTS: dict[str, tuple[type[Any], str]] = {
    "RankedDocument": (RankedDocument, CONTRACT_ALIASES["RankedDocument"]),
    "GraphSearchResult": (GraphSearchResult, CONTRACT_ALIASES["GraphSearchResult"]),
    "DocumentResult": (DocumentResult, CONTRACT_ALIASES["DocumentResult"]),
    "TraverseResult": (TraverseResult, TRAVERSE_RESULT_ALIAS),
}

_PLAIN: dict[str, tuple[type[Any], str]] = {
    "CallsRequest": (CallsRequest, "validation"),
    "CallsAnswer": (CallsAnswer, "serialization"),
    "ImpactRequest": (ImpactRequest, "validation"),
    "ImpactAnswer": (ImpactAnswer, "serialization"),
    "ShowRequest": (ShowRequest, "validation"),
    "ShowAnswer": (ShowAnswer, "serialization"),
}
"""Records sent and returned untagged (their plain JSON form), rendered as they are."""

_STRING = {"type": "string"}
_STRINGS = {"type": "array", "items": _STRING}
_INTEGER = {"type": "integer"}

_WRITTEN: dict[str, dict[str, Any]] = {
    "Problem": {
        "type": "object",
        "description": "RFC 9457 problem document; type is urn:cairn:error:<code>.",
        "required": ["type", "title", "status", "detail"],
        "properties": {
            "type": _STRING,
            "title": _STRING,
            "status": _INTEGER,
            "detail": _STRING,
            "code": _STRING,
            "details": {"type": "object"},
        },
    },
    "Health": {
        "type": "object",
        "required": ["status", "database"],
        "properties": {"status": {"const": "ok"}, "database": _STRING, "version": _STRING},
    },
    "CommandRequest": {
        "type": "object",
        "description": "CommandRequest.to_json(): a client-chosen UUID, the database, mutations.",
        "required": ["command_id", "database", "mutations"],
        "additionalProperties": False,
        "properties": {
            "command_id": {"type": "string", "format": "uuid"},
            "database": _STRING,
            "mutations": {
                "type": "array",
                "items": {
                    "oneOf": [{"$ref": _PREFIX + cls.__name__} for cls in MUTATION_TYPES.values()]
                },
            },
        },
    },
    "CommitReceipt": {
        "type": "object",
        "required": ["command_id", "token", "mutations", "durability"],
        "properties": {
            "command_id": {"type": "string", "format": "uuid"},
            "token": {
                "type": "object",
                "required": ["incarnation", "database", "position"],
                "properties": {
                    "incarnation": {"type": "string", "format": "uuid"},
                    "database": _STRING,
                    "position": _INTEGER,
                },
            },
            "mutations": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["kind", "resource", "id", "revision"],
                    "properties": {
                        "kind": _STRING,
                        "resource": _STRING,
                        "id": _STRING,
                        "revision": _INTEGER,
                    },
                },
            },
            "durability": _STRING,
        },
    },
    "SearchReply": {
        "type": "object",
        "required": ["hits"],
        "properties": {"hits": {"type": "array", "items": {"$ref": _PREFIX + "RankedDocument"}}},
    },
    "DatabaseStats": {
        "type": "object",
        "required": [
            "database",
            "incarnation",
            "position",
            "schema_version",
            "collections",
            "graphs",
        ],
        "properties": {
            "database": _STRING,
            "incarnation": _STRING,
            "position": _INTEGER,
            "schema_version": _INTEGER,
            "collections": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"name": _STRING, "documents": _INTEGER},
                },
            },
            "graphs": {
                "type": "array",
                "items": {"type": "object", "properties": {"name": _STRING, "facts": _INTEGER}},
            },
        },
    },
    "PrincipalList": {
        "type": "object",
        "required": ["principals"],
        "properties": {"principals": {"type": "array", "items": {"$ref": _PREFIX + "Principal"}}},
    },
    "ApiKeyReply": {
        "type": "object",
        "required": ["principal", "key_id", "receipt"],
        "properties": {
            "principal": _STRING,
            "key_id": _STRING,
            "token": _STRING,
            "receipt": {"anyOf": [{"$ref": _PREFIX + "CommitReceipt"}, {"type": "null"}]},
        },
    },
    "PolicyReply": {
        "type": "object",
        "required": ["resource", "fields"],
        "properties": {
            "resource": _STRING,
            "fields": {"type": "array", "items": {"$ref": _PREFIX + "FieldPolicy"}},
        },
    },
}


def ref(name: str) -> dict[str, str]:
    """A ``$ref`` to a component schema."""
    return {"$ref": _PREFIX + name}


def json_body(name: str) -> dict[str, Any]:
    """``openapi_extra`` declaring a required JSON request body of schema ``name``."""
    return {
        "requestBody": {"required": True, "content": {"application/json": {"schema": ref(name)}}}
    }


def json_reply(name: str, *errors: int) -> dict[int | str, dict[str, Any]]:
    """``responses`` for a 200 of schema ``name`` plus problem replies."""
    replies: dict[int | str, dict[str, Any]] = {
        200: {"description": "OK", "content": {"application/json": {"schema": ref(name)}}}
    }
    for status in errors:
        replies[status] = {
            "description": "Problem (RFC 9457)",
            "content": {"application/problem+json": {"schema": ref("Problem")}},
        }
    return replies


def _render(cls: type[Any], mode: str) -> tuple[dict[str, Any], dict[str, Any]]:
    schema = TypeAdapter(cls).json_schema(ref_template=_REF_TEMPLATE, mode=mode)  # type: ignore[arg-type]
    defs = schema.pop("$defs", {})
    return schema, defs


def _strict(schema: dict[str, Any], alias: str | None) -> dict[str, Any]:
    strict = {**schema, "additionalProperties": False}
    if alias is not None:
        strict["properties"] = {"type": {"const": alias}, **schema.get("properties", {})}
    return strict


@functools.cache
def _components() -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for name, (cls, alias) in _RESULTS.items():
        schema, defs = _render(cls, "serialization")
        found.update(defs)
        found[name] = {**schema, "properties": {"type": {"const": alias}, **schema["properties"]}}
    request_defs: dict[str, dict[str, Any]] = {}
    for name, (cls, alias) in _REQUESTS.items():
        schema, defs = _render(cls, "validation")
        request_defs.update(defs)
        # A top-level body may carry its type tag; the same record nested may not.
        found[name + BODY_SUFFIX] = _strict(schema, alias)
        request_defs[name] = schema
    for name, schema in request_defs.items():
        found[name] = _strict(schema, None) if "properties" in schema else schema
    for kind, cls in MUTATION_TYPES.items():
        schema, defs = _render(cls, "validation")
        found.update(
            {name: _strict(d, None) if "properties" in d else d for name, d in defs.items()}
        )
        mutation = _strict(schema, None)
        mutation["properties"] = {"kind": {"const": kind}, **mutation["properties"]}
        mutation["required"] = ["kind", *mutation.get("required", [])]
        found[cls.__name__] = mutation
    for name, (cls, mode) in _PLAIN.items():
        schema, defs = _render(cls, mode)
        found.update({key: value for key, value in defs.items() if key not in found})
        found[name] = _strict(schema, None) if mode == "validation" else schema
    found.update(_WRITTEN)
    for name in list(found):
        record = name.removesuffix(BODY_SUFFIX)
        if rules_of(record):
            found[name] = with_rules(found[name], record)
    found.update(_admin_bodies(found))
    return found


def _admin_bodies(found: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The admin routes' bodies, cut from the rendered mutation records they become
    (``ConfigurePrincipal``, ``ConfigurePolicy``, ``ApiKeyVerifier``), rules included."""
    principal = found["ConfigurePrincipal"]["properties"]
    settings = {name: principal[name] for name in PRINCIPAL_SETTINGS}
    return {
        "PrincipalSettings": {
            "type": "object",
            "description": "A principal's settings; what is left out takes its default.",
            "additionalProperties": False,
            "properties": settings,
        },
        "Principal": {
            "type": "object",
            "required": ["id", "grants", "policy_epoch"],
            "properties": {
                "id": principal["id"],
                **settings,
                "policy_epoch": _INTEGER,
                "key_ids": _STRINGS,
            },
        },
        "ApiKeyRequest": {
            "type": "object",
            "description": "Empty: the server mints the key and returns its token once. "
            "With key_id and verifier: register a key minted by the client.",
            "additionalProperties": False,
            "properties": found["ApiKeyVerifier"]["properties"],
            "dependentRequired": {"key_id": ["verifier"], "verifier": ["key_id"]},
        },
        "Policy": {
            "type": "object",
            "required": ["fields"],
            "additionalProperties": False,
            "properties": {"fields": found["ConfigurePolicy"]["properties"]["fields"]},
        },
    }


def component_schemas() -> dict[str, dict[str, Any]]:
    """Every component schema by name (a fresh copy of the top level)."""
    return dict(_components())
