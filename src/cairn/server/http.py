"""The HTTP API (FastAPI) over one ``Database``: a thin adapter, one semantics (spec §7).

Every route parses its body with the same strict codec the SDK and MCP use
(``cairn.search.wire``, ``command_from_json``), authenticates the Bearer API key
(``Database.authenticate``), calls one core function with that principal, and returns
the contract's JSON. Nothing but ``/v1/health`` (and the OpenAPI documents at
``/docs`` and ``/openapi.json``) answers without a valid key. Every ``CairnError`` is
mapped once, here, to its RFC 9457 problem (``urn:cairn:error:<code>``) and its
``http_status``; anything unexpected is logged (never with headers or bodies) and
becomes a 500 problem with code ``cairn_error``.

Core calls run in the thread pool (the store is synchronous and thread-safe); bodies
are read with a size cap before they are parsed. (No ``from __future__ import
annotations`` here: FastAPI must see the route annotations as objects.)
"""

import logging
from collections.abc import Callable, Mapping
from typing import Annotated, Any, TypeVar
from urllib.parse import unquote

import orjson
from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from cairn.canonical import canonical_bytes
from cairn.database import Database
from cairn.errors import (
    BudgetExceededError,
    CairnError,
    NotFoundError,
    UnauthenticatedError,
    ValidationError,
)
from cairn.search.calls import CallsRequest, calls
from cairn.search.contracts import GraphSearchRequest, SearchRequest, SqlGraphSearchRequest
from cairn.search.impact import ImpactRequest, impact
from cairn.search.show import ShowRequest, show_request
from cairn.search.traverse import traverse, traverse_request_from_json
from cairn.search.wire import from_json, from_wire, to_json, to_wire
from cairn.server import admin
from cairn.server.limits import MAX_BODY_BYTES, MAX_BODY_DEPTH, PROBLEM_MEDIA_TYPE
from cairn.server.schemas import BODY_SUFFIX, component_schemas, json_body, json_reply
from cairn.server.throttle import FailureLimiter, authenticated, client_address
from cairn.store.commands import CommitReceipt, command_from_json
from cairn.store.policy import ApiKeyVerifier, Principal, issue_api_key
from cairn.store.stats import database_stats

__all__ = ["API_PREFIX", "CairnAPI", "create_app"]

API_PREFIX = "/v1"
"""Every route of this version of the API starts here."""

_DOCUMENTS = f"{API_PREFIX}/documents/"
_JSON = "application/json"
_REALM = 'Bearer realm="cairn"'
_T = TypeVar("_T")

logger = logging.getLogger("cairn.server")


# ------------------------------------------------------------------ replies
def _default(value: Any) -> Any:
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, set | frozenset):
        return sorted(value)
    return str(value)


def _json(payload: Any) -> Response:
    return Response(orjson.dumps(payload, default=_default), media_type=_JSON)


def _receipt(receipt: CommitReceipt | None) -> Any:
    return None if receipt is None else receipt.to_json()


def problem_response(error: CairnError, status: int | None = None) -> Response:
    """The RFC 9457 reply of ``error`` (with ``WWW-Authenticate`` on a 401)."""
    headers = {"WWW-Authenticate": _REALM} if isinstance(error, UnauthenticatedError) else None
    return Response(
        # Sorted keys: a replayed stored outcome prints the same bytes as the first reply.
        orjson.dumps(error.to_problem(), default=_default, option=orjson.OPT_SORT_KEYS),
        status_code=status or error.http_status,
        media_type=PROBLEM_MEDIA_TYPE,
        headers=headers,
    )


async def _cairn_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, CairnError)
    return problem_response(exc)


async def _http_error(request: Request, exc: Exception) -> Response:
    """Router errors (unknown route, wrong method) as problem documents too."""
    assert isinstance(exc, StarletteHTTPException)
    if exc.status_code == NotFoundError.http_status:
        return problem_response(NotFoundError(f"no route {request.url.path!r}"))
    body = {"type": "about:blank", "title": str(exc.detail), "status": exc.status_code}
    return Response(
        orjson.dumps(body),
        status_code=exc.status_code,
        media_type=PROBLEM_MEDIA_TYPE,
        headers=exc.headers,
    )


async def _validation_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    return problem_response(ValidationError("the request does not match the route"))


class _UnexpectedErrors:
    """Turn an exception that is not a ``CairnError`` into a logged 500 problem."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except Exception:
            logger.exception("unexpected error in %s %s", scope.get("method"), scope.get("path"))
            if started:
                raise
            error = CairnError("internal server error; the server log has the details")
            await problem_response(error)(scope, receive, send)


# ------------------------------------------------------------------- bodies
def _check_depth(value: Any) -> None:
    pending: list[tuple[Any, int]] = [(value, 0)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth + 1 > MAX_BODY_DEPTH:
            raise ValidationError(
                f"the request body nests deeper than {MAX_BODY_DEPTH} levels",
                details={"limit": MAX_BODY_DEPTH},
            )
        pending.extend((child, depth + 1) for child in children)


def _too_large() -> BudgetExceededError:
    return BudgetExceededError(
        f"the request body exceeds {MAX_BODY_BYTES} bytes",
        details={"limit": MAX_BODY_BYTES, "budget": "body_bytes"},
    )


async def read_json(request: Request) -> Any:
    """The request body as JSON, read with a size cap and checked for nesting depth."""
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isdigit():
            raise ValidationError("malformed Content-Length")
        if int(declared) > MAX_BODY_BYTES:
            raise _too_large()
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > MAX_BODY_BYTES:
                raise _too_large()
            chunks.append(chunk)
    except ClientDisconnect as exc:
        raise ValidationError("the client disconnected before sending the whole body") from exc
    try:
        data = orjson.loads(b"".join(chunks))
    except orjson.JSONDecodeError as exc:
        raise ValidationError(f"the request body is not JSON: {exc}") from exc
    _check_depth(data)
    return data


def _document_key(request: Request, collection: str, doc_id: str) -> tuple[str, str]:
    """Collection and ID from the raw path, so ``%2F`` inside a collection name survives."""
    raw = request.scope.get("raw_path")
    if isinstance(raw, bytes):
        path = raw.split(b"?", 1)[0].decode("latin-1")
        if path.startswith(_DOCUMENTS):
            head, slash, tail = path[len(_DOCUMENTS) :].partition("/")
            if slash and head and tail:
                return unquote(head), unquote(tail)
    return collection, doc_id


async def _call(function: Callable[..., _T], *args: Any) -> _T:
    return await run_in_threadpool(function, *args)


# --------------------------------------------------------------------- app
class CairnAPI(FastAPI):
    """FastAPI whose OpenAPI document carries the contract schemas as components."""

    def openapi(self) -> dict[str, Any]:
        """The OpenAPI document, with the wire contracts' JSON Schemas added once."""
        if self.openapi_schema is None:
            schema = super().openapi()
            components = schema.setdefault("components", {})
            components.setdefault("schemas", {}).update(component_schemas())
            self.openapi_schema = schema
        return self.openapi_schema


_DESCRIPTION = (
    "Cairn's HTTP API. Every route but /v1/health needs `Authorization: Bearer <api key>`. "
    "Errors are RFC 9457 problem documents whose type is `urn:cairn:error:<code>`."
)


def create_app(db: Database) -> CairnAPI:
    """The FastAPI application serving ``db`` (the caller owns and closes ``db``)."""
    from cairn import __version__

    app = CairnAPI(
        title="Cairn",
        version=__version__,
        description=_DESCRIPTION,
        docs_url="/docs",
        redoc_url=None,
        openapi_url="/openapi.json",
    )
    app.add_middleware(_UnexpectedErrors)
    app.add_exception_handler(CairnError, _cairn_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    bearer = HTTPBearer(auto_error=False, description="A Cairn API key: cairn_<id>.<secret>")
    limiter = FailureLimiter()

    def caller(
        request: Request,
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    ) -> Principal:
        client = client_address(request.scope)
        if credentials is None:
            limiter.check(client)
            raise UnauthenticatedError("an Authorization: Bearer <api key> header is required")
        return authenticated(db, limiter, client, credentials.credentials)

    Caller = Annotated[Principal, Depends(caller)]

    @app.get(f"{API_PREFIX}/health", responses=json_reply("Health"), tags=["service"])
    async def health() -> Response:
        """Liveness: answers without a key; names the database served."""
        return _json({"status": "ok", "database": db.name, "version": __version__})

    _routes_core(app, db, Caller)
    _routes_search(app, db, Caller)
    _routes_admin(app, db, Caller)
    from cairn.server.mcp import mount_mcp

    mount_mcp(app, db, limiter)
    return app


def _routes_core(app: FastAPI, db: Database, Caller: Any) -> None:
    @app.post(
        f"{API_PREFIX}/commands",
        openapi_extra=json_body("CommandRequest"),
        responses=json_reply("CommitReceipt", 400, 401, 403, 404, 409, 429),
        tags=["data"],
    )
    async def commands(request: Request, principal: Caller) -> Response:
        """Apply one command atomically; a retry with the same ID and bytes replays it."""
        command = command_from_json(await read_json(request))
        receipt = await _call(db.command, command, principal)
        return Response(canonical_bytes(receipt.to_json()), media_type=_JSON)

    @app.get(
        f"{API_PREFIX}/documents/{{collection}}/{{doc_id:path}}",
        responses=json_reply("DocumentResult", 401, 403, 404),
        tags=["data"],
    )
    async def document(
        collection: str, doc_id: str, request: Request, principal: Caller
    ) -> Response:
        """One live document as the caller may see it (redacted fields named)."""
        name, key = _document_key(request, collection, doc_id)
        found = await _call(db.get_document, name, key, principal)
        return _json(to_wire(found))

    @app.get(
        f"{API_PREFIX}/stats",
        responses=json_reply("DatabaseStats", 401, 403),
        tags=["service"],
    )
    async def stats(principal: Caller) -> Response:
        """Counts the caller may see: documents per collection, facts per graph, position."""
        return _json((await _call(database_stats, db, principal)).to_json())

    @app.get(
        f"{API_PREFIX}/principal",
        responses=json_reply("Principal", 401),
        tags=["service"],
    )
    async def whoami(principal: Caller) -> Response:
        """The calling principal's current record."""
        return _json((await _call(db.principal, principal)).to_json())


def _routes_search(app: FastAPI, db: Database, Caller: Any) -> None:
    errors = (400, 401, 403, 404, 429)

    @app.post(
        f"{API_PREFIX}/search",
        openapi_extra=json_body("SearchRequest" + BODY_SUFFIX),
        responses=json_reply("SearchReply", *errors),
        tags=["search"],
    )
    async def search(request: Request, principal: Caller) -> Response:
        """Plain hybrid search (text, vector or both): ``{"hits": [RankedDocument]}``."""
        parsed = from_wire(SearchRequest, await read_json(request))
        hits = await _call(db.search, parsed, principal)
        return _json({"hits": [to_wire(hit) for hit in hits]})

    @app.post(
        f"{API_PREFIX}/search/graph",
        openapi_extra=json_body("GraphSearchRequest" + BODY_SUFFIX),
        responses=json_reply("GraphSearchResult", *errors),
        tags=["search"],
    )
    async def graph_search(request: Request, principal: Caller) -> Response:
        """Hybrid graph search: scope, retriever and expansion in one read cut."""
        parsed = from_wire(GraphSearchRequest, await read_json(request))
        return _json(to_wire(await _call(db.graph_search, parsed, principal)))

    @app.post(
        f"{API_PREFIX}/query/search",
        openapi_extra=json_body("SqlGraphSearchRequest" + BODY_SUFFIX),
        responses=json_reply("GraphSearchResult", *errors),
        tags=["search"],
    )
    async def query_search(request: Request, principal: Caller) -> Response:
        """A SQL ``SEARCH`` statement, run as exactly one graph search."""
        parsed = from_wire(SqlGraphSearchRequest, await read_json(request))
        return _json(to_wire(await _call(db.search_sql, parsed, principal)))

    @app.post(
        f"{API_PREFIX}/graph/traverse",
        openapi_extra=json_body("TraverseRequest" + BODY_SUFFIX),
        responses=json_reply("TraverseResult", *errors),
        tags=["search"],
    )
    async def graph_traverse(request: Request, principal: Caller) -> Response:
        """Bounded neighbours, or a shortest path to ``target``, with a relation filter."""
        parsed = traverse_request_from_json(await read_json(request))
        return _json((await _call(traverse, db, parsed, principal)).to_json())

    @app.post(
        f"{API_PREFIX}/graph/calls",
        openapi_extra=json_body("CallsRequest"),
        responses=json_reply("CallsAnswer", *errors),
        tags=["search"],
    )
    async def graph_calls(request: Request, principal: Caller) -> Response:
        """Who calls a symbol (or what it calls), by name, with each edge's call sites."""
        parsed = from_json(CallsRequest, await read_json(request))
        return _json(to_json(await _call(calls, db, parsed, principal)))

    @app.post(
        f"{API_PREFIX}/graph/impact",
        openapi_extra=json_body("ImpactRequest"),
        responses=json_reply("ImpactAnswer", *errors),
        tags=["search"],
    )
    async def graph_impact(request: Request, principal: Caller) -> Response:
        """What depends on a symbol: counts, top dependents, and whether it is complete."""
        parsed = from_json(ImpactRequest, await read_json(request))
        return _json(to_json(await _call(impact, db, parsed, principal)))

    @app.post(
        f"{API_PREFIX}/symbols/show",
        openapi_extra=json_body("ShowRequest"),
        responses=json_reply("ShowAnswer", *errors),
        tags=["search"],
    )
    async def symbols_show(request: Request, principal: Caller) -> Response:
        """A symbol by name: its document and source lines, or ``stale`` when changed."""
        parsed = from_json(ShowRequest, await read_json(request))
        return _json(to_json(await _call(show_request, db, parsed, principal)))


def _routes_admin(app: FastAPI, db: Database, Caller: Any) -> None:
    prefix = f"{API_PREFIX}/admin"
    errors = (400, 401, 403, 404, 409)

    @app.get(
        f"{prefix}/principals", responses=json_reply("PrincipalList", 401, 403), tags=["admin"]
    )
    async def principals(principal: Caller) -> Response:
        """Every principal with its key IDs (never verifiers)."""
        found = await _call(admin.list_principals, db, principal)
        return _json({"principals": [record.to_json() for record in found]})

    @app.get(
        f"{prefix}/principals/{{principal_id}}",
        responses=json_reply("Principal", *errors),
        tags=["admin"],
    )
    async def get_principal(principal_id: str, principal: Caller) -> Response:
        """One principal with its key IDs."""
        return _json((await _call(admin.get_principal, db, principal, principal_id)).to_json())

    @app.put(
        f"{prefix}/principals/{{principal_id}}",
        openapi_extra=json_body("PrincipalSettings"),
        responses=json_reply("CommitReceipt", *errors),
        tags=["admin"],
    )
    async def put_principal(principal_id: str, request: Request, principal: Caller) -> Response:
        """Create or replace a principal's grants and settings; its keys are kept."""
        settings = await read_json(request)
        receipt = await _call(admin.configure_principal, db, principal, principal_id, settings)
        return _json(receipt.to_json())

    @app.post(
        f"{prefix}/principals/{{principal_id}}/keys",
        openapi_extra=json_body("ApiKeyRequest"),
        responses=json_reply("ApiKeyReply", *errors),
        tags=["admin"],
    )
    async def add_key(principal_id: str, request: Request, principal: Caller) -> Response:
        """Add an API key: minted here (token returned once) or a client-minted verifier."""
        body = await read_json(request)
        token, verifier = _key_request(body)
        receipt = await _call(admin.add_api_key, db, principal, principal_id, verifier)
        reply = {"principal": principal_id, "key_id": verifier.key_id, "receipt": _receipt(receipt)}
        if token is not None:
            reply["token"] = token
        return _json(reply)

    @app.delete(
        f"{prefix}/principals/{{principal_id}}/keys/{{key_id}}",
        responses=json_reply("CommitReceipt", *errors),
        tags=["admin"],
    )
    async def revoke_key(principal_id: str, key_id: str, principal: Caller) -> Response:
        """Revoke one API key of a principal."""
        receipt = await _call(admin.revoke_api_key, db, principal, principal_id, key_id)
        return _json(receipt.to_json())

    @app.get(
        f"{prefix}/policies/{{resource}}",
        responses=json_reply("PolicyReply", *errors),
        tags=["admin"],
    )
    async def get_policy(resource: str, principal: Caller) -> Response:
        """The field policies of a collection or graph."""
        fields = await _call(admin.get_policy, db, principal, resource)
        return _json({"resource": resource, "fields": [item.to_json() for item in fields]})

    @app.put(
        f"{prefix}/policies/{{resource}}",
        openapi_extra=json_body("Policy"),
        responses=json_reply("CommitReceipt", *errors),
        tags=["admin"],
    )
    async def put_policy(resource: str, request: Request, principal: Caller) -> Response:
        """Replace the field policies of a collection or graph."""
        fields = admin.policy_fields_from_json(await read_json(request))
        receipt = await _call(admin.configure_policy, db, principal, resource, fields)
        return _json(receipt.to_json())


def _key_request(body: Any) -> tuple[str | None, ApiKeyVerifier]:
    """``{}`` mints a key here; ``{"key_id", "verifier"}`` registers a client-minted one."""
    if not isinstance(body, Mapping):
        raise ValidationError("an api key request must be a JSON object")
    unknown = sorted(set(body) - {"key_id", "verifier"})
    if unknown:
        raise ValidationError(f"api key request has unknown fields {unknown}")
    if not body:
        issued = issue_api_key()
        return issued.token, issued.verifier
    if set(body) != {"key_id", "verifier"}:
        raise ValidationError("give both key_id and verifier, or neither")
    return None, ApiKeyVerifier(body["key_id"], body["verifier"])
