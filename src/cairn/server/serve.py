"""``cairn serve``: open a database, make sure it has an admin, serve it with uvicorn.

The socket is bound here (loopback by default), so the announced URL carries the real
port even for ``--port 0``. The first start prints the admin key once; the database is
closed when the server stops (Ctrl+C or SIGTERM: uvicorn shuts down gracefully).
"""

from __future__ import annotations

import errno
import os
import socket
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

import orjson
import uvicorn

from cairn.database import Database
from cairn.database import open as open_database
from cairn.errors import ConflictError, ValidationError
from cairn.server.bootstrap import AdminBootstrap, ensure_admin
from cairn.server.http import create_app
from cairn.server.limits import (
    ADMIN_KEY_ENV,
    ADMIN_PRINCIPAL_ID,
    DEFAULT_HOST,
    DEFAULT_PORT,
    LOOPBACK_HOSTS,
    SOCKET_BACKLOG,
)

__all__ = ["bind_socket", "serve"]


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket for ``host:port`` (``ConflictError`` if the address is taken)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise ValidationError(f"cannot resolve host {host!r}: {exc}") from exc
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        # Listening now lets clients connect (queued) as soon as the URL is announced.
        sock.listen(SOCKET_BACKLOG)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ConflictError(f"{host}:{port} is already in use") from exc
        raise ValidationError(f"cannot bind {host}:{port}: {exc}") from exc
    sock.set_inheritable(True)
    return sock


def _is_loopback(host: str) -> bool:
    return host in LOOPBACK_HOSTS or host.startswith("127.")


def _url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


def _announce(
    db: Database, boot: AdminBootstrap, url: str, *, as_json: bool, out: TextIO, err: TextIO
) -> None:
    events: list[dict[str, Any]] = []
    if boot.created:
        events.append(
            {
                "event": "admin_created",
                "principal": ADMIN_PRINCIPAL_ID,
                "api_key": boot.token,
                "from_env": boot.token is None,
            }
        )
    if boot.env_key_valid is False:
        err.write(f"warning: {ADMIN_KEY_ENV} does not authenticate as {ADMIN_PRINCIPAL_ID!r}\n")
    events.append({"event": "listening", "url": url, "database": db.name, "path": str(db.path)})
    for event in events:
        if as_json:
            out.write(orjson.dumps(event).decode() + "\n")
        elif event["event"] == "admin_created" and event["api_key"]:
            out.write(
                f"Created principal {ADMIN_PRINCIPAL_ID!r} (admin). Its API key is shown "
                f"only this once; store it now:\n\n    {event['api_key']}\n\n"
            )
        elif event["event"] == "admin_created":
            out.write(
                f"Created principal {ADMIN_PRINCIPAL_ID!r} with the key in {ADMIN_KEY_ENV}.\n"
            )
        else:
            out.write(
                f"Serving database {db.name!r} ({db.path}) at {url} "
                f"(API docs: {url}/docs). Ctrl+C stops.\n"
            )
    out.flush()


def serve(
    path: str | os.PathLike[str],
    *,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    as_json: bool = False,
    log_level: str = "info",
    access_log: bool = True,
    environ: Mapping[str, str] | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> None:
    """Serve the database at ``path`` until interrupted; see the module docstring."""
    stdout = out or sys.stdout
    stderr = err or sys.stderr
    with open_database(Path(path)) as db:
        boot = ensure_admin(db, os.environ if environ is None else environ)
        sock = bind_socket(host, port)
        try:
            if not _is_loopback(host):
                stderr.write(
                    f"warning: serving on {host}, reachable beyond this machine; "
                    "API keys travel in clear text without TLS in front\n"
                )
            _announce(
                db, boot, _url(host, sock.getsockname()[1]), as_json=as_json, out=stdout, err=stderr
            )
            config = uvicorn.Config(
                create_app(db),
                log_level=log_level,
                access_log=access_log,
                lifespan="on",  # runs the MCP session manager
                server_header=False,
            )
            uvicorn.Server(config).run(sockets=[sock])
        finally:
            sock.close()
