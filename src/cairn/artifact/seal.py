"""The payload digest: a SHA-256 over the whole canonical body, so any flipped byte shows.

IDs and the receipt only cover what identity covers; attributes, provenance, labels and
metadata would otherwise change silently. The body holds ``"payload_sha256"`` whose
value is the SHA-256 of the body with that value replaced by 64 zeros. Keys are sorted,
so the member sits right after ``admission`` and ``community_labels``; inside a JSON
string its quotes would be escaped, so the first match is the member itself.
"""

from __future__ import annotations

import hashlib
import re

__all__ = [
    "DIGEST_KEY",
    "DIGEST_PLACEHOLDER",
    "seal",
    "sealed_between",
    "stored_digest",
    "unsealed_digest",
]

DIGEST_KEY = "payload_sha256"
DIGEST_PLACEHOLDER = "0" * 64
"""The value the digest is computed over; the writer then puts the real digest there."""

_MEMBER = f'"{DIGEST_KEY}":"'.encode()
_HEX = re.compile(rb"[0-9a-f]{64}")
_WIDTH = len(DIGEST_PLACEHOLDER)


def _value_offset(data: bytes, start: int) -> int:
    found = data.find(_MEMBER, start)
    if found < 0:
        raise ValueError(f"the body has no {DIGEST_KEY} member")
    return found + len(_MEMBER)


def seal(body: bytes) -> bytes:
    """``body`` (printed with the placeholder) with the real digest filled in."""
    offset = _value_offset(body, 0)
    if body[offset : offset + _WIDTH] != DIGEST_PLACEHOLDER.encode():
        raise ValueError("the body does not hold the digest placeholder")
    digest = hashlib.sha256(body).hexdigest().encode()
    return body[:offset] + digest + body[offset + _WIDTH :]


def sealed_between(prefix: bytes, body: bytes, suffix: bytes) -> bytes:
    """``prefix + seal(body) + suffix``, built with one copy of ``body`` instead of three."""
    offset = _value_offset(body, 0)
    view = memoryview(body)
    if view[offset : offset + _WIDTH] != DIGEST_PLACEHOLDER.encode():
        raise ValueError("the body does not hold the digest placeholder")
    digest = hashlib.sha256(body).hexdigest().encode()
    return b"".join((prefix, view[:offset], digest, view[offset + _WIDTH :], suffix))


def stored_digest(data: bytes, start: int = 0) -> str:
    """The digest declared by the body that begins at ``data[start]``."""
    offset = _value_offset(data, start)
    value = data[offset : offset + _WIDTH]
    if not _HEX.fullmatch(value):
        raise ValueError(f"{DIGEST_KEY} is not {_WIDTH} lowercase hex digits")
    return value.decode()


def unsealed_digest(data: bytes, start: int = 0, end: int | None = None) -> str:
    """SHA-256 of ``data[start:end]`` with its declared digest replaced by the placeholder."""
    stop = len(data) if end is None else end
    offset = _value_offset(data, start)
    view = memoryview(data)
    hasher = hashlib.sha256(view[start:offset])
    hasher.update(DIGEST_PLACEHOLDER.encode())
    hasher.update(view[offset + _WIDTH : stop])
    return hasher.hexdigest()
