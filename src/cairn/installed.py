"""Installed versions of distributions, read from their metadata (nothing imported)."""

from __future__ import annotations

from importlib import metadata

__all__ = ["ABSENT", "installed_version"]

ABSENT = "absent"
"""The version said of a distribution that is not installed."""


def installed_version(distribution: str) -> str:
    """The installed version of ``distribution`` (its name as pip spells it, or its
    import name: metadata normalises both), or ``ABSENT``."""
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return ABSENT
