"""JSON Schema (2020-12) of the search contracts, derived from their type hints.

The schema describes exactly what ``cairn.search.wire.from_wire`` accepts, so the MCP
tools' input schemas and the contracts cannot drift apart: both come from the same
dataclass definitions.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from enum import Enum
from typing import Any

from cairn.search.rules import with_rules
from cairn.search.wire import contract_hints

__all__ = ["json_schema"]


def json_schema(cls: type[Any], *, optional: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The schema of a contract record; ``optional`` fields are not required."""
    schema = _record(cls)
    if optional:
        schema["required"] = [name for name in schema["required"] if name not in optional]
    return schema


def _record(cls: Any) -> dict[str, Any]:
    hints = contract_hints(cls)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for spec in dataclasses.fields(cls):
        if not spec.init:
            continue
        properties[spec.name] = _type(hints[spec.name])
        no_default = (
            spec.default is dataclasses.MISSING and spec.default_factory is dataclasses.MISSING
        )
        if no_default:
            required.append(spec.name)
        elif spec.default is not dataclasses.MISSING and _plain(spec.default):
            properties[spec.name]["default"] = _default(spec.default)
    doc = (cls.__doc__ or "").strip().splitlines()
    schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }
    if doc:
        schema["description"] = doc[0]
    return with_rules(schema, cls.__name__)  # the bounds admission checks, stated


def _plain(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool | Enum)


def _default(value: Any) -> Any:
    return value.value if isinstance(value, Enum) else value


def _type(hint: Any) -> dict[str, Any]:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = [option for option in typing.get_args(hint) if option is not type(None)]
        (inner,) = options
        return {"anyOf": [_type(inner), {"type": "null"}]}
    if origin is tuple:
        return {"type": "array", "items": _type(typing.get_args(hint)[0])}
    if origin is typing.Literal:
        return {"type": "string", "enum": list(typing.get_args(hint))}
    if origin is not None:
        return {"type": "object"}  # Mapping[str, Any]: any JSON object
    if hint is Any:
        return {}
    if dataclasses.is_dataclass(hint):
        return _record(hint)
    if isinstance(hint, type) and issubclass(hint, Enum):
        return {"type": "string", "enum": [member.value for member in hint]}
    names = {bool: "boolean", int: "integer", float: "number", str: "string"}
    return {"type": names[hint]}
