"""Named defaults and limits of the HTTP server (issue 8): one place, no bare numbers."""

from __future__ import annotations

from cairn.store.limits import MAX_COMMAND_BYTES

__all__ = [
    "ADMIN_KEY_ENV",
    "ADMIN_PRINCIPAL_ID",
    "AUTH_FAILURE_LIMIT",
    "AUTH_FAILURE_WINDOW_S",
    "AUTH_TRACKED_CLIENTS",
    "BODY_MARGIN_BYTES",
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "LOOPBACK_HOSTS",
    "MAX_BODY_BYTES",
    "MAX_BODY_DEPTH",
    "PROBLEM_MEDIA_TYPE",
    "SOCKET_BACKLOG",
]

DEFAULT_HOST = "127.0.0.1"
"""``cairn serve`` binds loopback unless told otherwise."""

DEFAULT_PORT = 8765
"""``cairn serve``'s default TCP port."""

SOCKET_BACKLOG = 2048
"""Pending connections the listening socket queues (uvicorn's own default)."""

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})
"""Hosts that keep the server unreachable from the network (others get a warning)."""

BODY_MARGIN_BYTES = 1024 * 1024
"""Room above the 8 MiB canonical command for whitespace and escapes of the sent JSON."""

MAX_BODY_BYTES = MAX_COMMAND_BYTES + BODY_MARGIN_BYTES
"""Largest request body read; larger is ``BudgetExceededError`` before parsing."""

MAX_BODY_DEPTH = 64
"""Deepest JSON nesting of a request body (documents nest at most 32 inside a command)."""

AUTH_FAILURE_LIMIT = 20
"""Failed authentications one client address may make within ``AUTH_FAILURE_WINDOW_S``."""

AUTH_FAILURE_WINDOW_S = 60.0
"""The sliding window failed authentications are counted in."""

AUTH_TRACKED_CLIENTS = 4096
"""Client addresses the failure limiter remembers (least recently failing leave first)."""

ADMIN_PRINCIPAL_ID = "admin"
"""The principal ``cairn serve`` creates on first start, admin on the served database."""

ADMIN_KEY_ENV = "CAIRN_ADMIN_KEY"
"""Environment variable holding the admin API key to register on first start."""

PROBLEM_MEDIA_TYPE = "application/problem+json"
"""Media type of RFC 9457 problem documents."""
