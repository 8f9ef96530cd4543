"""Canonical JSON (RFC 8785 after NFC) and SHA-256 digests: the byte basis of every ID.

``canonical_bytes_reference`` is the definition: a strict, pure-Python serialiser.
``canonical_bytes`` is the fast path used everywhere else: it checks in one walk that
orjson would print the same bytes (NFC strings, exact JSON types, floats whose
shortest form orjson and ECMAScript agree on) and falls back to the reference
otherwise. A property test proves the two byte-identical.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
import unicodedata
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

import orjson

from cairn.errors import CanonicalizationError

__all__ = [
    "FAST_FLOAT_MAX",
    "FAST_FLOAT_MIN",
    "MAX_DEPTH",
    "MAX_SAFE_INTEGER",
    "canonical_bytes",
    "canonical_bytes_reference",
    "canonical_set",
    "digest",
    "digest_bytes",
    "fits_float",
    "format_number",
    "nfc",
    "right_sized",
]

MAX_DEPTH = 200
"""Deepest nesting of arrays and objects accepted (orjson itself stops at 255)."""

MAX_SAFE_INTEGER = 2**53 - 1
"""Largest integer magnitude that survives a round trip through an IEEE double."""

# ECMAScript prints a number without an exponent when its decimal exponent n
# (value = 0.DIGITS x 10**n) lies in (-6, 21]; see Number::toString.
_ES_FIXED_MIN_EXPONENT = -6
_ES_FIXED_MAX_EXPONENT = 21

FAST_FLOAT_MIN = 1e-4
"""Smallest magnitude of the band where non-integral floats print alike in orjson and ES."""
FAST_FLOAT_MAX = 1e16
"""Bound (exclusive) of the band where non-integral floats print alike in orjson and ES."""

_encode_string = json.encoder.encode_basestring
_is_nfc = unicodedata.is_normalized


def fits_float(value: int | float) -> bool:
    """Whether a number is finite and within float range: False for NaN, the infinities
    and integers no float can hold (compared exactly, never converted: ``float(10**400)``
    raises ``OverflowError``)."""
    return -sys.float_info.max <= value <= sys.float_info.max


def nfc(text: str) -> str:
    """Return ``text`` in Unicode Normalization Form C."""
    if unicodedata.is_normalized("NFC", text):
        return text
    return unicodedata.normalize("NFC", text)


def format_number(value: int | float) -> str:
    """Format a JSON number exactly as ECMAScript ``Number.prototype.toString`` does."""
    if isinstance(value, bool):
        raise CanonicalizationError("booleans are not numbers")
    if isinstance(value, int):
        _check_int(value)
        return str(value)
    if not math.isfinite(value):
        raise CanonicalizationError(f"non-finite number {value!r} has no canonical form")
    if value == 0:
        return "0"
    if value < 0:
        return "-" + format_number(-value)
    # repr() gives the shortest round-tripping digits, as ECMAScript requires.
    _, digit_tuple, exponent = Decimal(repr(value)).as_tuple()
    assert isinstance(exponent, int)
    all_digits = "".join(map(str, digit_tuple))
    digits = all_digits.rstrip("0")
    n = exponent + len(all_digits)  # value = 0.DIGITS x 10**n
    k = len(digits)
    if k <= n <= _ES_FIXED_MAX_EXPONENT:
        return digits + "0" * (n - k)
    if 0 < n <= _ES_FIXED_MAX_EXPONENT:
        return digits[:n] + "." + digits[n:]
    if _ES_FIXED_MIN_EXPONENT < n <= 0:
        return "0." + "0" * (-n) + digits
    e = n - 1
    mark = "+" if e > 0 else "-"
    mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
    return f"{mantissa}e{mark}{abs(e)}"


def _check_int(value: int) -> None:
    if abs(value) > MAX_SAFE_INTEGER:
        raise CanonicalizationError(
            f"integer {value} is outside the exactly representable range ±{MAX_SAFE_INTEGER}"
        )


def _string(text: str) -> str:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise CanonicalizationError("string holds a lone surrogate") from exc
    return str(_encode_string(nfc(text)))


def canonical_bytes_reference(value: Any) -> bytes:
    """Serialise ``value`` to canonical JSON bytes; the reference definition."""
    parts: list[str] = []
    _emit(value, parts, 0, set())
    return "".join(parts).encode("utf-8")


def _emit(value: Any, parts: list[str], depth: int, active: set[int]) -> None:
    kind = type(value)
    if value is None:
        parts.append("null")
    elif value is True:
        parts.append("true")
    elif value is False:
        parts.append("false")
    elif kind is str:
        parts.append(_string(value))
    elif kind is int or kind is float:
        parts.append(format_number(value))
    elif kind is list or kind is dict:
        _emit_container(value, parts, depth, active)
    else:
        raise CanonicalizationError(f"type {kind.__name__} is not a JSON type")


def _emit_container(value: Any, parts: list[str], depth: int, active: set[int]) -> None:
    if depth >= MAX_DEPTH:
        raise CanonicalizationError(f"nesting deeper than {MAX_DEPTH}")
    marker = id(value)
    if marker in active:
        raise CanonicalizationError("value contains a reference cycle")
    active.add(marker)
    if type(value) is list:
        parts.append("[")
        for index, item in enumerate(value):
            if index:
                parts.append(",")
            _emit(item, parts, depth + 1, active)
        parts.append("]")
    else:
        parts.append("{")
        for index, (key, item) in enumerate(_sorted_items(value)):
            if index:
                parts.append(",")
            parts.append(_string(key))
            parts.append(":")
            _emit(item, parts, depth + 1, active)
        parts.append("}")
    active.discard(marker)


def _sorted_items(mapping: dict[Any, Any]) -> list[tuple[str, Any]]:
    normalised: dict[str, Any] = {}
    for key, item in mapping.items():
        if type(key) is not str:
            raise CanonicalizationError(f"object key {key!r} is not a string")
        norm = nfc(key)
        if norm in normalised:
            raise CanonicalizationError(f"object keys collide after NFC: {norm!r}")
        normalised[norm] = item
    # Code point order equals UTF-8 byte order; surrogates were rejected by _string.
    return sorted(normalised.items(), key=lambda pair: pair[0])


def canonical_bytes(value: Any) -> bytes:
    """Serialise ``value`` to canonical JSON bytes, via orjson when provably identical."""
    if not _fast_safe(value, 0):
        # Whole floats (weights of 1.0) are the common reason: orjson prints "1.0",
        # ECMAScript "1". As safe integers they print identically in both.
        value = _whole_floats_as_ints(value, 0)
        if not _fast_safe(value, 0):
            return canonical_bytes_reference(value)
    try:
        return right_sized(orjson.dumps(value, option=orjson.OPT_SORT_KEYS))
    except orjson.JSONEncodeError:
        return canonical_bytes_reference(value)  # lone surrogates: the reference says why


def right_sized(data: bytes) -> bytes:
    """``data`` copied into an allocation of its own length, for bytes that are kept.

    orjson (3.12 and later) returns its output buffer unshrunk: every result holds at
    least 4 KiB whatever its length, so a load that keeps a hundred thousand small
    records would hold hundreds of MiB of slack. One copy of the exact length costs
    far less than that memory.
    """
    return bytes(memoryview(data))


def _whole_floats_as_ints(value: Any, depth: int) -> Any:
    """``value`` with every finite whole float of safe magnitude replaced by its int.

    Canonical JSON prints such a float exactly as the integer (``-0.0`` as ``0``), so
    the result has the same canonical form. Containers are copied only when changed;
    anything too deep is returned as is for the reference to judge.
    """
    kind = type(value)
    if kind is float:
        if value.is_integer() and abs(value) <= MAX_SAFE_INTEGER:
            return int(value)
        return value
    if depth >= MAX_DEPTH:
        return value
    if kind is list:
        items = [_whole_floats_as_ints(item, depth + 1) for item in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if kind is dict:
        pairs = {key: _whole_floats_as_ints(item, depth + 1) for key, item in value.items()}
        unchanged = all(pairs[key] is item for key, item in value.items())
        return value if unchanged else pairs
    return value


def _fast_safe(value: Any, depth: int) -> bool:
    """Whether orjson's output for ``value`` equals the reference's (never raises)."""
    kind = type(value)
    if kind is dict:
        if depth >= MAX_DEPTH:
            return False
        for key, item in value.items():
            if type(key) is not str or not _is_nfc("NFC", key):
                return False
            # The common scalars are checked inline: this loop runs for every ID payload.
            item_kind = type(item)
            if item_kind is str:
                if not _is_nfc("NFC", item):
                    return False
            elif item is None or item_kind is bool:
                continue
            elif not _fast_scalar_or_container(item, depth):
                return False
        return True
    if kind is list:
        if depth >= MAX_DEPTH:
            return False
        return all(_fast_scalar_or_container(item, depth) for item in value)
    return _fast_scalar(value, kind)


def _fast_scalar_or_container(item: Any, depth: int) -> bool:
    kind = type(item)
    if kind is dict or kind is list:
        return _fast_safe(item, depth + 1)
    return _fast_scalar(item, kind)


def _fast_scalar(value: Any, kind: type) -> bool:
    if kind is str:
        return bool(_is_nfc("NFC", value))
    if value is None or kind is bool:
        return True
    if kind is int:
        return bool(-MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER)
    if kind is float:
        magnitude = abs(value)
        return bool(FAST_FLOAT_MIN <= magnitude < FAST_FLOAT_MAX and not value.is_integer())
    return False


def digest_bytes(data: bytes) -> str:
    """Full lowercase SHA-256 hex of ``data``."""
    return hashlib.sha256(data).hexdigest()


def digest(value: Any) -> str:
    """Full lowercase SHA-256 hex of the canonical bytes of ``value``."""
    return digest_bytes(canonical_bytes(value))


def canonical_set(items: Iterable[Any]) -> list[Any]:
    """De-duplicate and sort a set-like array by canonical bytes (its canonical order)."""
    keyed = {canonical_bytes(item): item for item in items}
    return [keyed[key] for key in sorted(keyed)]
