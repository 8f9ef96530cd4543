"""The Python SDK: ``Client`` and ``AsyncClient`` over Cairn's HTTP API (httpx).

Both mirror the embedded ``Database``: the same method names (``command``,
``get_document``, ``search``, ``graph_search``, ``search_sql``, ``principal``, plus
``traverse`` and ``stats``, which embedded code calls as ``cairn.search.traverse`` /
``cairn.store.stats``), the same request and result records, and the same exceptions:
a problem document's ``code`` is raised as the very ``CairnError`` subclass the
embedded call raises. The API key stands for the principal, so no method takes one.

Writes and lost replies (spec §2): a command is sent as its canonical bytes. When the
transport fails after the request may have been sent (connection cut, timeout, a 5xx
without a Cairn problem), the outcome is unknown and ``UnknownWriteOutcomeError`` is
raised carrying ``details["command_id"]`` and ``details["request"]`` (the exact bytes,
as UTF-8 text). ``retry_command(error)`` re-sends those same bytes with the same ID:
the server answers with the stored outcome, so the effect happens once and the
receipt is identical.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from types import TracebackType
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx
import orjson

from cairn.errors import (
    BudgetExceededError,
    CairnError,
    CorruptionError,
    UnknownWriteOutcomeError,
    ValidationError,
    from_problem,
)
from cairn.search.calls import CallsAnswer, CallsRequest
from cairn.search.contracts import (
    DocumentResult,
    GraphSearchRequest,
    GraphSearchResult,
    RankedDocument,
    SearchRequest,
    SqlGraphSearchRequest,
)
from cairn.search.impact import ImpactAnswer, ImpactRequest
from cairn.search.show import ShowAnswer, ShowRequest
from cairn.search.traverse import TraverseRequest, TraverseResult, traverse_result_from_json
from cairn.search.wire import from_json, from_wire, to_json, to_wire
from cairn.store.commands import CommandRequest, CommitReceipt
from cairn.store.policy import (
    FieldPolicy,
    Grant,
    Principal,
    datetime_to_json,
    issue_api_key,
)
from cairn.store.stats import DatabaseStats, stats_from_json

__all__ = [
    "DEFAULT_TIMEOUT_SECONDS",
    "AsyncClient",
    "Client",
    "PrincipalRecord",
    "pending_command",
]

DEFAULT_TIMEOUT_SECONDS = 60.0
"""Per-request timeout: above the server's 30 s search deadline, so that fires first."""

_JSON = "application/json"
_T = TypeVar("_T")
_SERVER_ERROR = 500


@dataclass(frozen=True, slots=True)
class PrincipalRecord:
    """A stored principal and the IDs of its API keys (admin listing)."""

    principal: Principal
    key_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class _Call(Generic[_T]):
    """One HTTP exchange: what to send and how to read a 2xx reply."""

    method: str
    path: str
    parse: Callable[[Any], _T]
    content: bytes | None = None
    command_id: str | None = None  # set for commands: transport failures are unknown outcomes


# ------------------------------------------------------------- the exchanges
def _dumps(payload: Any) -> bytes:
    return orjson.dumps(payload)


def _segment(value: str) -> str:
    return quote(value, safe="")


def pending_command(error: UnknownWriteOutcomeError) -> tuple[bytes, str]:
    """The exact request bytes and command ID an ``UnknownWriteOutcomeError`` carries."""
    request = error.details.get("request")
    command_id = error.details.get("command_id")
    if not isinstance(request, str) or not isinstance(command_id, str):
        raise ValidationError("this error carries no command to retry")
    return request.encode("utf-8"), command_id


def _command_call(data: bytes, command_id: str) -> _Call[CommitReceipt]:
    return _Call("POST", "/v1/commands", CommitReceipt.from_json, data, command_id)


def _pending(item: UnknownWriteOutcomeError | CommandRequest | bytes) -> _Call[CommitReceipt]:
    if isinstance(item, UnknownWriteOutcomeError):
        return _command_call(*pending_command(item))
    if isinstance(item, CommandRequest):
        return _command_call(item.canonical_bytes(), str(item.command_id))
    if isinstance(item, bytes):
        try:
            command_id = str(uuid.UUID(orjson.loads(item)["command_id"]))
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise ValidationError("these bytes are not a command") from exc
        return _command_call(item, command_id)
    raise ValidationError(
        "retry_command takes an UnknownWriteOutcomeError, CommandRequest or bytes"
    )


def _hits(data: Any) -> list[RankedDocument]:
    return [from_wire(RankedDocument, item) for item in data["hits"]]


def _graph_result(data: Any) -> GraphSearchResult:
    return from_wire(GraphSearchResult, data)


def _document(data: Any) -> DocumentResult:
    return from_wire(DocumentResult, data)


def _record(data: Any) -> PrincipalRecord:
    body = dict(data)
    key_ids = tuple(body.pop("key_ids", ()))
    return PrincipalRecord(Principal.from_json(body), key_ids)


def _records(data: Any) -> tuple[PrincipalRecord, ...]:
    return tuple(_record(item) for item in data["principals"])


def _receipt(data: Any) -> CommitReceipt:
    return CommitReceipt.from_json(data)


def _optional_receipt(data: Any) -> CommitReceipt | None:
    receipt = data["receipt"]
    return None if receipt is None else CommitReceipt.from_json(receipt)


def _policies(data: Any) -> tuple[FieldPolicy, ...]:
    return tuple(FieldPolicy.from_json(item) for item in data["fields"])


def _health(data: Any) -> dict[str, Any]:
    return dict(data)


def _calls_answer(data: Any) -> CallsAnswer:
    return from_json(CallsAnswer, data)


def _show_answer(data: Any) -> ShowAnswer:
    return from_json(ShowAnswer, data)


def _impact_answer(data: Any) -> ImpactAnswer:
    return from_json(ImpactAnswer, data)


def _principal_settings(
    grants: Iterable[Grant],
    field_grants: Iterable[str],
    owner_id: str | None,
    projects: Iterable[str],
    restrict_rows: bool,
    revoked: bool,
    expires_at: datetime | None,
) -> bytes:
    return _dumps(
        {
            "grants": [grant.to_json() for grant in grants],
            "field_grants": sorted(field_grants),
            "owner_id": owner_id,
            "projects": sorted(projects),
            "restrict_rows": restrict_rows,
            "revoked": revoked,
            "expires_at": datetime_to_json(expires_at),
        }
    )


class _Calls:
    """Builds the exchange of every SDK method (shared by both clients)."""

    @staticmethod
    def command(request: CommandRequest) -> _Call[CommitReceipt]:
        if not isinstance(request, CommandRequest):
            raise ValidationError("command() takes a CommandRequest")
        return _command_call(request.canonical_bytes(), str(request.command_id))

    @staticmethod
    def get_document(collection: str, doc_id: str) -> _Call[DocumentResult]:
        path = f"/v1/documents/{_segment(collection)}/{_segment(doc_id)}"
        return _Call("GET", path, _document)

    @staticmethod
    def search(request: SearchRequest) -> _Call[list[RankedDocument]]:
        return _Call("POST", "/v1/search", _hits, _dumps(to_wire(request)))

    @staticmethod
    def graph_search(request: GraphSearchRequest) -> _Call[GraphSearchResult]:
        return _Call("POST", "/v1/search/graph", _graph_result, _dumps(to_wire(request)))

    @staticmethod
    def search_sql(request: SqlGraphSearchRequest) -> _Call[GraphSearchResult]:
        return _Call("POST", "/v1/query/search", _graph_result, _dumps(to_wire(request)))

    @staticmethod
    def traverse(request: TraverseRequest) -> _Call[TraverseResult]:
        body = _dumps(request.to_json())
        return _Call("POST", "/v1/graph/traverse", traverse_result_from_json, body)

    @staticmethod
    def calls(request: CallsRequest) -> _Call[CallsAnswer]:
        return _Call("POST", "/v1/graph/calls", _calls_answer, _dumps(to_json(request)))

    @staticmethod
    def impact(request: ImpactRequest) -> _Call[ImpactAnswer]:
        return _Call("POST", "/v1/graph/impact", _impact_answer, _dumps(to_json(request)))

    @staticmethod
    def show(request: ShowRequest) -> _Call[ShowAnswer]:
        return _Call("POST", "/v1/symbols/show", _show_answer, _dumps(to_json(request)))

    @staticmethod
    def stats() -> _Call[DatabaseStats]:
        return _Call("GET", "/v1/stats", stats_from_json)

    @staticmethod
    def principal() -> _Call[Principal]:
        return _Call("GET", "/v1/principal", Principal.from_json)

    @staticmethod
    def health() -> _Call[dict[str, Any]]:
        return _Call("GET", "/v1/health", _health)

    @staticmethod
    def list_principals() -> _Call[tuple[PrincipalRecord, ...]]:
        return _Call("GET", "/v1/admin/principals", _records)

    @staticmethod
    def get_principal(principal_id: str) -> _Call[PrincipalRecord]:
        return _Call("GET", f"/v1/admin/principals/{_segment(principal_id)}", _record)

    @staticmethod
    def configure_principal(principal_id: str, settings: bytes) -> _Call[CommitReceipt]:
        return _Call("PUT", f"/v1/admin/principals/{_segment(principal_id)}", _receipt, settings)

    @staticmethod
    def add_key(principal_id: str, key_id: str, verifier: str) -> _Call[CommitReceipt | None]:
        body = _dumps({"key_id": key_id, "verifier": verifier})
        path = f"/v1/admin/principals/{_segment(principal_id)}/keys"
        return _Call("POST", path, _optional_receipt, body)

    @staticmethod
    def revoke_key(principal_id: str, key_id: str) -> _Call[CommitReceipt]:
        path = f"/v1/admin/principals/{_segment(principal_id)}/keys/{_segment(key_id)}"
        return _Call("DELETE", path, _receipt)

    @staticmethod
    def get_policy(resource: str) -> _Call[tuple[FieldPolicy, ...]]:
        return _Call("GET", f"/v1/admin/policies/{_segment(resource)}", _policies)

    @staticmethod
    def configure_policy(resource: str, fields: Iterable[FieldPolicy]) -> _Call[CommitReceipt]:
        body = _dumps({"fields": [item.to_json() for item in fields]})
        return _Call("PUT", f"/v1/admin/policies/{_segment(resource)}", _receipt, body)


# ---------------------------------------------------------------- outcomes
def _unknown_outcome(call: _Call[Any], reason: str) -> UnknownWriteOutcomeError:
    assert call.command_id is not None and call.content is not None
    return UnknownWriteOutcomeError(
        f"command {call.command_id}: {reason}; the write may or may not have happened. "
        "Retry the same bytes with retry_command().",
        details={"command_id": call.command_id, "request": call.content.decode("utf-8")},
    )


def _transport_error(call: _Call[Any], exc: httpx.HTTPError) -> CairnError:
    """A failure with no reply: unknown for a command; a timeout or failure for a read."""
    reason = f"{type(exc).__name__}: {exc}"
    if call.command_id is not None:
        return _unknown_outcome(call, f"the reply was lost ({reason})")
    if isinstance(exc, httpx.TimeoutException):
        return BudgetExceededError(
            f"{call.method} {call.path} timed out ({reason})", details={"budget": "client_timeout"}
        )
    return CairnError(f"{call.method} {call.path} failed: {reason}", details={"transport": reason})


def _problem(response: httpx.Response) -> dict[str, Any] | None:
    try:
        data = orjson.loads(response.content)
    except orjson.JSONDecodeError:
        return None
    if isinstance(data, dict) and isinstance(data.get("detail"), str):
        return data
    return None


def _outcome(call: _Call[_T], response: httpx.Response) -> _T:
    """Parse a 2xx reply, or raise the problem's own ``CairnError`` subclass."""
    if response.is_success:
        try:
            data = orjson.loads(response.content)
            return call.parse(data)
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            if call.command_id is not None:
                raise _unknown_outcome(call, "the reply was unreadable") from exc
            raise CorruptionError(f"{call.method} {call.path}: unreadable reply: {exc}") from exc
    problem = _problem(response)
    error = None
    if problem is not None:
        details = problem.get("details")
        error = from_problem({**problem, "details": details if isinstance(details, dict) else None})
    cls = CairnError if error is None else type(error)
    if call.command_id is not None and (
        cls is UnknownWriteOutcomeError
        or (response.status_code >= _SERVER_ERROR and cls is CairnError)
    ):
        raise _unknown_outcome(call, f"the server answered {response.status_code}")
    if error is None:
        raise CairnError(
            f"{call.method} {call.path}: HTTP {response.status_code}",
            details={"status": response.status_code},
        )
    raise error


def _headers(api_key: str) -> dict[str, str]:
    if not isinstance(api_key, str) or not api_key:
        raise ValidationError("an API key is required")
    return {"Authorization": f"Bearer {api_key}", "Content-Type": _JSON, "Accept": _JSON}


# ------------------------------------------------------------------ clients
class Client:
    """Synchronous SDK client: the embedded ``Database`` API over HTTP."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        database: str | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._http = httpx.Client(
            base_url=base_url, headers=_headers(api_key), timeout=timeout, transport=transport
        )
        self._name = database

    def _run(self, call: _Call[_T]) -> _T:
        try:
            response = self._http.request(call.method, call.path, content=call.content)
        except httpx.HTTPError as exc:
            raise _transport_error(call, exc) from exc
        return _outcome(call, response)

    @property
    def name(self) -> str:
        """The database name commands must target (asked of the server once)."""
        if self._name is None:
            self._name = str(self.health()["database"])
        return self._name

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def health(self) -> dict[str, Any]:
        """``GET /v1/health`` (no key needed): status, database name, version."""
        return self._run(_Calls.health())

    def command(self, request: CommandRequest) -> CommitReceipt:
        """Apply one command; ``UnknownWriteOutcomeError`` when the reply is lost."""
        return self._run(_Calls.command(request))

    def retry_command(
        self, pending: UnknownWriteOutcomeError | CommandRequest | bytes
    ) -> CommitReceipt:
        """Re-send a command's exact bytes with its ID; the stored outcome comes back."""
        return self._run(_pending(pending))

    def get_document(self, collection: str, doc_id: str) -> DocumentResult:
        """One live document as this key's principal may see it."""
        return self._run(_Calls.get_document(collection, doc_id))

    def search(self, request: SearchRequest) -> list[RankedDocument]:
        """Plain hybrid search."""
        return self._run(_Calls.search(request))

    def graph_search(self, request: GraphSearchRequest) -> GraphSearchResult:
        """Hybrid graph search."""
        return self._run(_Calls.graph_search(request))

    def search_sql(self, request: SqlGraphSearchRequest) -> GraphSearchResult:
        """A SQL ``SEARCH`` statement."""
        return self._run(_Calls.search_sql(request))

    def traverse(self, request: TraverseRequest) -> TraverseResult:
        """Bounded neighbours or a shortest path."""
        return self._run(_Calls.traverse(request))

    def calls(self, request: CallsRequest) -> CallsAnswer:
        """Who calls a symbol (or what it calls), by name, with call sites."""
        return self._run(_Calls.calls(request))

    def impact(self, request: ImpactRequest) -> ImpactAnswer:
        """What depends on a symbol, labelled complete or partial."""
        return self._run(_Calls.impact(request))

    def show(self, request: ShowRequest) -> ShowAnswer:
        """A symbol by name: its document and source lines (or stale)."""
        return self._run(_Calls.show(request))

    def stats(self) -> DatabaseStats:
        """Counts this key's principal may see."""
        return self._run(_Calls.stats())

    def principal(self) -> Principal:
        """This key's principal, as stored now."""
        return self._run(_Calls.principal())

    # ------------------------------------------------------------ admin
    def list_principals(self) -> tuple[PrincipalRecord, ...]:
        """Every principal with its key IDs (admin)."""
        return self._run(_Calls.list_principals())

    def get_principal(self, principal_id: str) -> PrincipalRecord:
        """One principal with its key IDs (admin)."""
        return self._run(_Calls.get_principal(principal_id))

    def configure_principal(
        self,
        principal_id: str,
        *,
        grants: Iterable[Grant] = (),
        field_grants: Iterable[str] = (),
        owner_id: str | None = None,
        projects: Iterable[str] = (),
        restrict_rows: bool = False,
        revoked: bool = False,
        expires_at: datetime | None = None,
    ) -> CommitReceipt:
        """Create or replace a principal's settings; its API keys are kept (admin)."""
        body = _principal_settings(
            grants, field_grants, owner_id, projects, restrict_rows, revoked, expires_at
        )
        return self._run(_Calls.configure_principal(principal_id, body))

    def issue_api_key(self, principal_id: str) -> str:
        """Mint a key here, register only its verifier, return the token (admin)."""
        issued = issue_api_key()
        key = issued.verifier
        self._run(_Calls.add_key(principal_id, key.key_id, key.verifier))
        return issued.token

    def revoke_api_key(self, principal_id: str, key_id: str) -> CommitReceipt:
        """Revoke one key of a principal (admin)."""
        return self._run(_Calls.revoke_key(principal_id, key_id))

    def get_policy(self, resource: str) -> tuple[FieldPolicy, ...]:
        """The field policies of a collection or graph (admin)."""
        return self._run(_Calls.get_policy(resource))

    def configure_policy(self, resource: str, fields: Iterable[FieldPolicy]) -> CommitReceipt:
        """Replace the field policies of a collection or graph (admin)."""
        return self._run(_Calls.configure_policy(resource, fields))


class AsyncClient:
    """Asynchronous SDK client: the same methods as ``Client``, awaited."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        database: str | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._http = httpx.AsyncClient(
            base_url=base_url, headers=_headers(api_key), timeout=timeout, transport=transport
        )
        self._name = database

    async def _run(self, call: _Call[_T]) -> _T:
        try:
            response = await self._http.request(call.method, call.path, content=call.content)
        except httpx.HTTPError as exc:
            raise _transport_error(call, exc) from exc
        return _outcome(call, response)

    @property
    def name(self) -> str:
        """The database name (known once ``health()`` ran or ``database=`` was given)."""
        if self._name is None:
            raise ValidationError("the database name is not known yet: await health() first")
        return self._name

    async def close(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()

    async def health(self) -> dict[str, Any]:
        """``GET /v1/health``; remembers the database name."""
        found = await self._run(_Calls.health())
        self._name = str(found["database"])
        return found

    async def command(self, request: CommandRequest) -> CommitReceipt:
        """Apply one command; ``UnknownWriteOutcomeError`` when the reply is lost."""
        return await self._run(_Calls.command(request))

    async def retry_command(
        self, pending: UnknownWriteOutcomeError | CommandRequest | bytes
    ) -> CommitReceipt:
        """Re-send a command's exact bytes with its ID; the stored outcome comes back."""
        return await self._run(_pending(pending))

    async def get_document(self, collection: str, doc_id: str) -> DocumentResult:
        """One live document as this key's principal may see it."""
        return await self._run(_Calls.get_document(collection, doc_id))

    async def search(self, request: SearchRequest) -> list[RankedDocument]:
        """Plain hybrid search."""
        return await self._run(_Calls.search(request))

    async def graph_search(self, request: GraphSearchRequest) -> GraphSearchResult:
        """Hybrid graph search."""
        return await self._run(_Calls.graph_search(request))

    async def search_sql(self, request: SqlGraphSearchRequest) -> GraphSearchResult:
        """A SQL ``SEARCH`` statement."""
        return await self._run(_Calls.search_sql(request))

    async def traverse(self, request: TraverseRequest) -> TraverseResult:
        """Bounded neighbours or a shortest path."""
        return await self._run(_Calls.traverse(request))

    async def calls(self, request: CallsRequest) -> CallsAnswer:
        """Who calls a symbol (or what it calls), by name, with call sites."""
        return await self._run(_Calls.calls(request))

    async def impact(self, request: ImpactRequest) -> ImpactAnswer:
        """What depends on a symbol, labelled complete or partial."""
        return await self._run(_Calls.impact(request))

    async def show(self, request: ShowRequest) -> ShowAnswer:
        """A symbol by name: its document and source lines (or stale)."""
        return await self._run(_Calls.show(request))

    async def stats(self) -> DatabaseStats:
        """Counts this key's principal may see."""
        return await self._run(_Calls.stats())

    async def principal(self) -> Principal:
        """This key's principal, as stored now."""
        return await self._run(_Calls.principal())

    # ------------------------------------------------------------ admin
    async def list_principals(self) -> tuple[PrincipalRecord, ...]:
        """Every principal with its key IDs (admin)."""
        return await self._run(_Calls.list_principals())

    async def get_principal(self, principal_id: str) -> PrincipalRecord:
        """One principal with its key IDs (admin)."""
        return await self._run(_Calls.get_principal(principal_id))

    async def configure_principal(
        self,
        principal_id: str,
        *,
        grants: Iterable[Grant] = (),
        field_grants: Iterable[str] = (),
        owner_id: str | None = None,
        projects: Iterable[str] = (),
        restrict_rows: bool = False,
        revoked: bool = False,
        expires_at: datetime | None = None,
    ) -> CommitReceipt:
        """Create or replace a principal's settings; its API keys are kept (admin)."""
        body = _principal_settings(
            grants, field_grants, owner_id, projects, restrict_rows, revoked, expires_at
        )
        return await self._run(_Calls.configure_principal(principal_id, body))

    async def issue_api_key(self, principal_id: str) -> str:
        """Mint a key here, register only its verifier, return the token (admin)."""
        issued = issue_api_key()
        key = issued.verifier
        await self._run(_Calls.add_key(principal_id, key.key_id, key.verifier))
        return issued.token

    async def revoke_api_key(self, principal_id: str, key_id: str) -> CommitReceipt:
        """Revoke one key of a principal (admin)."""
        return await self._run(_Calls.revoke_key(principal_id, key_id))

    async def get_policy(self, resource: str) -> tuple[FieldPolicy, ...]:
        """The field policies of a collection or graph (admin)."""
        return await self._run(_Calls.get_policy(resource))

    async def configure_policy(self, resource: str, fields: Iterable[FieldPolicy]) -> CommitReceipt:
        """Replace the field policies of a collection or graph (admin)."""
        return await self._run(_Calls.configure_policy(resource, fields))
