"""The MCP server: Cairn's search and graph tools for AI agents (official ``mcp`` SDK).

A thin adapter like the HTTP API: each tool parses its arguments with the contracts'
strict wire codec, calls one ``Database`` method (bounded by the same search budgets)
and returns the exact wire result as structured content plus a compact JSON text with
exact IDs first. Errors come back as tool errors carrying the same RFC 9457 problem
JSON the HTTP API sends. The database opens lazily on the first call, so the handshake
stays fast however large the database is.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types
from mcp.server.lowlevel.server import Server

from cairn import __version__
from cairn.errors import CairnError, NotFoundError, UnauthenticatedError, ValidationError
from cairn.server.bounds import BUDGET_ARGUMENT, bound_reply, budget_schema, take_budget
from cairn.server.throttle import FailureLimiter, authenticated, client_address

if TYPE_CHECKING:
    from cairn.database import Database
    from cairn.server.mcp_tools import McpTool
    from cairn.store.database import PrincipalLike

__all__ = [
    "API_KEY_ENV",
    "MAX_DOCUMENT_REFS",
    "MCP_HTTP_PATH",
    "SERVER_NAME",
    "McpBackend",
    "Resolver",
    "bearer_principal",
    "build_server",
    "mount_mcp",
    "run_stdio",
]

SERVER_NAME = "cairn"
API_KEY_ENV = "CAIRN_API_KEY"
"""When set, stdio tool calls run as this key's principal instead of the local owner."""

MAX_DOCUMENT_REFS = 100
"""Documents one ``cairn_show`` call may fetch by ``refs``."""

_LOG = logging.getLogger(__name__)
_INTERNAL = {
    "type": "urn:cairn:error:cairn_error",
    "title": "CairnError",
    "status": 500,
    "detail": "internal error",
    "code": "cairn_error",
}


_NO_DATABASE_ADVICE = (
    "run `cairn index PATH` in the repository (it writes .cairn/cairn.db), or start "
    "`cairn mcp --db FILE`, or `cairn mcp --watch PATH` (which indexes PATH and keeps it "
    "fresh)"
)
"""What a call finding no database is told to do (none is being built)."""


class McpBackend:
    """Opens the database on first use and resolves the principal of each call."""

    def __init__(
        self, path: str | os.PathLike[str], pending: Callable[[], str | None] | None = None
    ) -> None:
        self._path = Path(path)
        self._pending = pending
        self._db: Database | None = None
        self._owned = True
        self._lock = threading.Lock()

    @classmethod
    def for_database(cls, db: Database) -> McpBackend:
        """A backend over an already open database (the HTTP server's); never closes it."""
        backend = cls(db.path)
        backend._db = db
        backend._owned = False
        return backend

    def database(self) -> Database:
        """The open database (opened on the first call, then reused)."""
        with self._lock:
            if self._db is None:
                from cairn.database import open as open_database

                if not self._path.is_file():
                    # An agent host starts the server before anything is indexed: say
                    # what to do (or that a --watch's first index is building it), and
                    # never create an empty database in its place.
                    waiting = None if self._pending is None else self._pending()
                    raise NotFoundError(
                        f"no Cairn database at {str(self._path)!r} yet: "
                        + (waiting or _NO_DATABASE_ADVICE),
                        details={"db": str(self._path)},
                    )
                self._db = open_database(self._path)
            return self._db

    def close(self) -> None:
        """Close the database if it was opened."""
        with self._lock:
            if self._db is not None and self._owned:
                self._db.close()
            self._db = None


def _tools() -> list[McpTool]:
    from cairn.server.mcp_tools import TOOLS

    return TOOLS


def _with_budget(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A tool's input schema with the ``max_chars`` argument every call takes."""
    properties = {**schema.get("properties", {}), BUDGET_ARGUMENT: budget_schema()}
    return {**schema, "properties": properties}


def _problem_result(problem: Mapping[str, Any]) -> types.CallToolResult:
    text = json.dumps(problem, ensure_ascii=False, sort_keys=True)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=dict(problem),
        is_error=True,
    )


Resolver = Callable[[Any, McpBackend], "PrincipalLike"]
"""Who a call runs as, from the request context (``None`` = the local owner)."""


def build_server(backend: McpBackend, principal: Resolver) -> Server[Any]:
    """An MCP server whose tools run against ``backend``'s database."""

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=tool.name,
                    description=tool.description,
                    input_schema=_with_budget(tool.schema),
                    # Every tool reads: agent hosts may run them without asking.
                    annotations=types.ToolAnnotations(
                        read_only_hint=True, destructive_hint=False, idempotent_hint=True
                    ),
                )
                for tool in _tools()
            ]
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        tools = {tool.name: tool for tool in _tools()}
        tool = tools.get(params.name)
        if tool is None:
            error = ValidationError(f"unknown tool {params.name!r}; tools: {sorted(tools)}")
            return _problem_result(error.to_problem())
        arguments = dict(params.arguments or {})
        try:
            budget = take_budget(arguments)
        except CairnError as error:
            return _problem_result(error.to_problem())

        def run() -> Any:
            db = backend.database()
            return tool.run(db, principal(ctx, backend), arguments)

        try:
            structured, text = await anyio.to_thread.run_sync(run)
        except CairnError as error:
            return _problem_result(error.to_problem())
        except Exception:
            # Never leak internals to a client; the operator finds them on stderr.
            _LOG.exception("MCP tool %s failed", params.name)
            return _problem_result(_INTERNAL)
        structured, text = bound_reply(structured, text, budget)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            structured_content=structured,
            is_error=False,
        )

    return Server(
        SERVER_NAME,
        version=__version__,
        instructions=(
            "Cairn answers questions about a code repository and its docs: where is the "
            "code that does W (cairn_search), show Z with its source lines (cairn_show), "
            "who calls X with file:line (cairn_callers), what breaks if Y changes "
            "(cairn_impact); cairn_traverse and cairn_search_graph walk and search the "
            "graph from exact IDs. Symbols may be named (load_user, views.get_user) or "
            "given by the exact IDs the tools return."
        ),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def bearer_principal(ctx: Any, backend: McpBackend) -> PrincipalLike:
    """The principal of the Bearer key on an HTTP MCP request (nothing is open)."""
    request = getattr(ctx, "request", None)
    header = "" if request is None else request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token:
        raise UnauthenticatedError("a Bearer API key is required")
    return backend.database().authenticate(token.strip())


MCP_HTTP_PATH = "/mcp"
"""Where ``cairn serve`` mounts MCP's streamable HTTP transport."""

_LOOPBACK_HOSTS = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
_LOOPBACK_ORIGINS = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]


class _BearerGuard:
    """MCP over HTTP authenticates at the transport: a request without a valid Bearer key
    gets HTTP 401 with ``WWW-Authenticate`` (not a 200 carrying a problem), and cannot
    ``initialize`` or list tools; failures count against the client's limit."""

    def __init__(self, inner: Any, db: Database, limiter: FailureLimiter) -> None:
        self.inner = inner
        self.db = db
        self.limiter = limiter

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.inner(scope, receive, send)
            return
        from cairn.server.http import problem_response

        client = client_address(scope)
        header = dict(scope.get("headers") or ()).get(b"authorization", b"").decode("latin-1")
        scheme, _, token = header.partition(" ")
        try:
            if scheme.lower() != "bearer" or not token.strip():
                self.limiter.check(client)
                raise UnauthenticatedError("a Bearer API key is required")
            await anyio.to_thread.run_sync(
                authenticated, self.db, self.limiter, client, token.strip()
            )
        except CairnError as error:
            await problem_response(error)(scope, receive, send)
            return
        await self.inner(scope, receive, send)


def mount_mcp(
    app: Any, db: Database, limiter: FailureLimiter | None = None, path: str = MCP_HTTP_PATH
) -> None:
    """Serve the same tools over streamable HTTP inside the HTTP API (Bearer keys checked
    at the transport, with the HTTP API's failure limiter)."""
    from contextlib import asynccontextmanager

    from mcp.server.streamable_http_manager import (
        StreamableHTTPASGIApp,
        StreamableHTTPSessionManager,
    )
    from mcp.server.transport_security import TransportSecuritySettings

    server = build_server(McpBackend.for_database(db), bearer_principal)
    manager = StreamableHTTPSessionManager(
        app=server,
        stateless=True,
        json_response=True,
        security_settings=TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=_LOOPBACK_HOSTS,
            allowed_origins=_LOOPBACK_ORIGINS,
        ),
    )
    guard = FailureLimiter() if limiter is None else limiter
    app.mount(path, _BearerGuard(StreamableHTTPASGIApp(manager), db, guard))
    previous = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(application: Any) -> Any:
        async with manager.run(), previous(application) as state:
            yield state

    app.router.lifespan_context = lifespan


def run_stdio(
    path: str | os.PathLike[str],
    *,
    api_key: str | None = None,
    pending: Callable[[], str | None] | None = None,
) -> None:
    """Serve MCP over stdio until the client closes the stream. ``pending``: while the
    database is being built (``cairn mcp --watch``'s first index), a sentence saying so,
    told to a call that finds none yet."""
    from mcp.server.stdio import stdio_server

    backend = McpBackend(path, pending)
    key = api_key if api_key is not None else os.environ.get(API_KEY_ENV)

    def who(ctx: Any, owner: McpBackend) -> PrincipalLike:
        return None if key is None else owner.database().authenticate(key)

    server = build_server(backend, who)

    async def serve() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    try:
        anyio.run(serve)
    finally:
        backend.close()
