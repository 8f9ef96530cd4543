"""RFC 6901 JSON pointers over plain JSON values: parse, get, set and remove.

Documents are patched, policed and indexed by pointer (``/text``, ``/a/b/0``). These
helpers work on plain ``dict``/``list`` values and never mutate their input: ``set_at``
and ``remove_at`` return a new value that shares unchanged branches.
"""

from __future__ import annotations

from typing import Any

from cairn.errors import ValidationError

__all__ = [
    "MISSING",
    "get_at",
    "is_prefix",
    "parse_pointer",
    "remove_at",
    "set_at",
]


class _Missing:
    """The sentinel ``get_at`` returns for a path that does not exist."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()
"""Returned by ``get_at`` when nothing lives at the pointer."""


def parse_pointer(pointer: str) -> tuple[str, ...]:
    """Split ``/a/b~1c`` into ``("a", "b/c")``; ``""`` is the whole document."""
    if pointer == "":
        return ()
    if not pointer.startswith("/"):
        raise ValidationError(f"JSON pointer must start with '/': {pointer!r}")
    return tuple(token.replace("~1", "/").replace("~0", "~") for token in pointer[1:].split("/"))


def is_prefix(ancestor: str, pointer: str) -> bool:
    """Whether ``ancestor`` names ``pointer`` itself or one of its containers."""
    outer, inner = parse_pointer(ancestor), parse_pointer(pointer)
    return inner[: len(outer)] == outer


def _index(token: str, size: int, *, allow_end: bool) -> int | None:
    if token == "-":
        return size if allow_end else None
    if not token.isdigit() or (len(token) > 1 and token[0] == "0"):
        return None
    index = int(token)
    limit = size if allow_end else size - 1
    return index if index <= limit else None


def get_at(value: Any, pointer: str) -> Any:
    """The value at ``pointer``, or ``MISSING`` when any step does not exist."""
    current = value
    for token in parse_pointer(pointer):
        if isinstance(current, dict):
            if token not in current:
                return MISSING
            current = current[token]
        elif isinstance(current, list):
            index = _index(token, len(current), allow_end=False)
            if index is None:
                return MISSING
            current = current[index]
        else:
            return MISSING
    return current


def set_at(value: Any, pointer: str, new: Any) -> Any:
    """A copy of ``value`` with ``new`` at ``pointer``; the parent must already exist.

    On an array, a numeric index replaces an element and ``-`` (or the length) appends.
    """
    tokens = parse_pointer(pointer)
    if not tokens:
        return new
    return _set(value, tokens, new, pointer)


def _set(current: Any, tokens: tuple[str, ...], new: Any, pointer: str) -> Any:
    token, rest = tokens[0], tokens[1:]
    if isinstance(current, dict):
        if rest and token not in current:
            raise ValidationError(f"cannot set {pointer!r}: {token!r} does not exist")
        copy = dict(current)
        copy[token] = _set(current[token], rest, new, pointer) if rest else new
        return copy
    if isinstance(current, list):
        index = _index(token, len(current), allow_end=not rest)
        if index is None:
            raise ValidationError(f"cannot set {pointer!r}: bad array index {token!r}")
        items = list(current)
        if index == len(items):
            items.append(new)
        else:
            items[index] = _set(items[index], rest, new, pointer) if rest else new
        return items
    raise ValidationError(f"cannot set {pointer!r}: {token!r} is inside a scalar")


def remove_at(value: Any, pointer: str) -> Any:
    """A copy of ``value`` without the member at ``pointer``, which must exist."""
    tokens = parse_pointer(pointer)
    if not tokens:
        raise ValidationError("cannot remove the whole document")
    if get_at(value, pointer) is MISSING:
        raise ValidationError(f"cannot remove {pointer!r}: nothing is there")
    return _remove(value, tokens)


def _remove(current: Any, tokens: tuple[str, ...]) -> Any:
    token, rest = tokens[0], tokens[1:]
    if isinstance(current, dict):
        copy = dict(current)
        if rest:
            copy[token] = _remove(current[token], rest)
        else:
            del copy[token]
        return copy
    items = list(current)
    index = int(token)
    if rest:
        items[index] = _remove(items[index], rest)
    else:
        del items[index]
    return items
