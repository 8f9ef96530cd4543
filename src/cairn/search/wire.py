"""JSON wire form of the search contracts: ``{"type": <alias>, ...fields}``.

Encoding is generic over the frozen dataclasses; decoding is driven by their type
hints, so every surface (HTTP, SDK, MCP) parses requests the same strict way: unknown
fields, missing fields and wrong JSON types are ``ValidationError`` naming the path.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Mapping
from enum import Enum
from typing import Any, TypeVar

from cairn.canonical import MAX_DEPTH, fits_float
from cairn.errors import CanonicalizationError, ValidationError
from cairn.graph.model import freeze
from cairn.search import contracts
from cairn.search.aliases import CONTRACT_ALIASES

__all__ = [
    "TYPE_KEY",
    "contract_hints",
    "contract_types",
    "from_json",
    "from_wire",
    "to_json",
    "to_wire",
]

TYPE_KEY = "type"
T = TypeVar("T")


def contract_types() -> dict[str, type[Any]]:
    """Every contract class by its alias."""
    return {alias: getattr(contracts, name) for name, alias in CONTRACT_ALIASES.items()}


_SCALARS = frozenset({str, int, float, bool, type(None)})


_FIELD_NAMES: dict[type[Any], tuple[str, ...]] = {}


def _field_names(value: Any) -> tuple[str, ...]:
    """A dataclass instance's field names, looked up once per class."""
    kind = type(value)
    names = _FIELD_NAMES.get(kind)
    if names is None:
        names = _FIELD_NAMES[kind] = tuple(f.name for f in dataclasses.fields(value))
    return names


def to_json(value: Any) -> Any:
    """Plain JSON form of a contract value (no type tag).

    Values nested deeper than ``MAX_DEPTH`` (the canonical encoder's bound) are
    ``CanonicalizationError``, never a ``RecursionError``.
    """
    return _to_json(value, 0)


def _to_json(value: Any, depth: int) -> Any:
    kind = type(value)
    if kind in _SCALARS:
        return value
    if depth >= MAX_DEPTH:
        raise CanonicalizationError(f"nesting deeper than {MAX_DEPTH}")
    deeper = depth + 1
    if kind is tuple or kind is list:
        # Query vectors are hundreds of floats: scalars are copied without a call each.
        return [item if type(item) in _SCALARS else _to_json(item, deeper) for item in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {name: _to_json(getattr(value, name), deeper) for name in _field_names(value)}
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, tuple | list):
        return [_to_json(item, deeper) for item in value]
    if isinstance(value, Mapping):
        return {key: _to_json(item, deeper) for key, item in value.items()}
    return value


def to_wire(record: Any) -> dict[str, Any]:
    """The tagged wire form of a top-level contract record."""
    alias = CONTRACT_ALIASES.get(type(record).__name__)
    if alias is None:
        raise ValidationError(f"{type(record).__name__} is not a wire contract")
    body = to_json(record)
    return {TYPE_KEY: alias, **body}


def from_wire(cls: type[T], data: Any) -> T:
    """Parse the tagged wire form of ``cls``, strictly."""
    alias = CONTRACT_ALIASES.get(cls.__name__)
    if alias is None:
        raise ValidationError(f"{cls.__name__} is not a wire contract")
    if not isinstance(data, Mapping):
        raise ValidationError(f"{alias} must be a JSON object")
    tag = data.get(TYPE_KEY, alias)
    if tag != alias:
        raise ValidationError(f"expected type {alias!r}, got {tag!r}")
    body = {key: value for key, value in data.items() if key != TYPE_KEY}
    result: T = _decode(cls, body, cls.__name__)
    return result


def from_json(cls: type[T], data: Any) -> T:
    """Parse the plain (untagged) JSON form of any record class, as strictly as
    ``from_wire``: what ``to_json`` of a ``cls`` value gives, back as that value."""
    result: T = _decode_record(cls, data, cls.__name__)
    return result


@functools.cache
def contract_hints(cls: Any) -> dict[str, Any]:
    """Resolved type hints of a contract class (cached: they never change)."""
    return typing.get_type_hints(cls)


def _decode(hint: Any, value: Any, path: str) -> Any:
    origin = typing.get_origin(hint)
    if origin is typing.Literal:
        allowed = typing.get_args(hint)
        if not any(type(value) is type(choice) and value == choice for choice in allowed):
            raise ValidationError(f"{path} must be one of {list(allowed)}, got {value!r}")
        return value
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(hint)
        if value is None and type(None) in options:
            return None
        (inner,) = [option for option in options if option is not type(None)]
        return _decode(inner, value, path)
    if origin is tuple:
        args = typing.get_args(hint)
        if not isinstance(value, list | tuple):
            raise ValidationError(f"{path} must be an array")
        if (len(args) == 2 and args[1] is Ellipsis) or len(args) == 1:
            item_hint = args[0]
            return tuple(_decode(item_hint, item, f"{path}[{i}]") for i, item in enumerate(value))
        # A fixed-length tuple (``tuple[str, int]``): one hint per position.
        if len(value) != len(args):
            raise ValidationError(f"{path} must hold exactly {len(args)} items")
        return tuple(
            _decode(item_hint, item, f"{path}[{i}]")
            for i, (item_hint, item) in enumerate(zip(args, value, strict=True))
        )
    if origin is not None and issubclass(origin, Mapping):
        return _json_object(value, path)
    if hint is Any:
        return _json_value(value, path)
    if dataclasses.is_dataclass(hint):
        return _decode_record(hint, value, path)
    if isinstance(hint, type) and issubclass(hint, Enum):
        try:
            return hint(value)
        except ValueError:
            choices = [member.value for member in hint]
            raise ValidationError(f"{path} must be one of {choices}, got {value!r}") from None
    return _decode_scalar(hint, value, path)


def _decode_record(cls: Any, value: Any, path: str) -> Any:
    if not isinstance(value, Mapping):
        raise ValidationError(f"{path} must be a JSON object")
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(value) - set(fields))
    if unknown:
        raise ValidationError(f"{path} has unknown fields {unknown}")
    kwargs: dict[str, Any] = {}
    hints = contract_hints(cls)
    for name, spec in fields.items():
        if name in value:
            kwargs[name] = _decode(hints[name], value[name], f"{path}.{name}")
        elif spec.default is dataclasses.MISSING and spec.default_factory is dataclasses.MISSING:
            raise ValidationError(f"{path}.{name} is required")
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"{path}: {exc}") from exc


def _decode_scalar(hint: Any, value: Any, path: str) -> Any:
    if hint is bool:
        ok = isinstance(value, bool)
    elif hint is int:
        ok = type(value) is int
    elif hint is float:
        ok = type(value) in (int, float)
        if ok and type(value) is int and not fits_float(value):
            # JSON parsers other than orjson (the MCP SDK's) hand over any integer.
            raise ValidationError(f"{path} must be a number a float can hold")
        value = float(value) if ok else value
    elif hint is str:
        ok = isinstance(value, str)
    else:
        raise ValidationError(f"{path}: unsupported contract type {hint!r}")
    if not ok:
        raise ValidationError(f"{path} must be {hint.__name__}, got {type(value).__name__}")
    return value


def _json_value(value: Any, path: str) -> Any:
    try:
        return freeze(value)
    except CanonicalizationError as exc:
        raise ValidationError(f"{path} is not JSON: {exc.message}") from exc


def _json_object(value: Any, path: str) -> Any:
    if not isinstance(value, Mapping):
        raise ValidationError(f"{path} must be a JSON object")
    return _json_value(dict(value), path)
