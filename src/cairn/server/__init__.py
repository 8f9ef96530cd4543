"""Cairn's network surfaces: the HTTP API (``http``) over one ``Database``."""

from __future__ import annotations

__all__: list[str] = []
