"""Absolute-path detection: an artifact is portable, so no file field may hold one (§11).

Occurrence ``source_file`` and ``target_file`` are already validated as
repository-relative by the graph. Free-form JSON (node and hyperedge attributes, fact
annotations, occurrence provenance and metadata, the artifact's own provenance) is
searched, at any depth, for object keys that name a file location
(``PATH_FIELD_NAMES``); their string values must not be absolute. Strings under other
keys are not judged, so a URL route such as ``/users/{id}`` belongs under a key like
``route``, not ``path``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["PATH_FIELD_NAMES", "absolute_path_fields", "has_absolute_path", "is_absolute_path"]

PATH_FIELD_NAMES = frozenset(
    {
        "abs_path",
        "absolute_path",
        "checkout_root",
        "cwd",
        "file",
        "file_path",
        "filename",
        "path",
        "repository_root",
        "root_dir",
        "source_file",
        "target_file",
        "workspace_root",
    }
)
"""Object keys whose string values are file locations and must be repository-relative."""

_WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")
_ABSOLUTE_STARTS = ("/", "\\", "~")


def is_absolute_path(text: str) -> bool:
    """Whether ``text`` is an absolute POSIX, home, Windows, UNC or ``file:`` location."""
    return (
        text.startswith(("/", "\\", "~"))
        or text[:5].lower() == "file:"
        or bool(_WINDOWS_DRIVE.match(text))
    )


def absolute_path_fields(value: Any, where: str) -> list[str]:
    """Locations (``where.key...``) of absolute paths under file-naming keys in ``value``."""
    found: list[str] = []
    _walk(value, where, found)
    return found


def _walk(value: Any, where: str, found: list[str]) -> None:
    if isinstance(value, Mapping):
        for key, item in value.items():
            location = f"{where}.{key}"
            if key in PATH_FIELD_NAMES and isinstance(item, str) and is_absolute_path(item):
                found.append(location)
            elif isinstance(item, Mapping | list | tuple):
                _walk(item, location, found)
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            if isinstance(item, Mapping | list | tuple):
                _walk(item, f"{where}[{index}]", found)


def has_absolute_path(value: Any) -> bool:
    """``bool(absolute_path_fields(value, ...))`` for parsed JSON (dicts, lists, scalars).

    The bulk form for loaders: exact type checks and no location strings, which
    ``absolute_path_fields`` then builds only for a value that holds a hit.
    """
    kind = type(value)
    if kind is dict:
        for key, item in value.items():
            item_kind = type(item)
            if item_kind is str:
                if key in PATH_FIELD_NAMES and _maybe_absolute(item) and is_absolute_path(item):
                    return True
            elif (item_kind is dict or item_kind is list) and has_absolute_path(item):
                return True
        return False
    if kind is list:
        for item in value:
            item_kind = type(item)
            if (item_kind is dict or item_kind is list) and has_absolute_path(item):
                return True
        return False
    if kind is str or kind is int or kind is float or kind is bool or value is None:
        return False
    return bool(absolute_path_fields(value, ""))


def _maybe_absolute(text: str) -> bool:
    """A necessary condition of ``is_absolute_path``: a leading marker or an early colon."""
    return text.startswith(_ABSOLUTE_STARTS) or ":" in text[:5]
