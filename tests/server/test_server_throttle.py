"""Failed authentications are limited per client on HTTP and on MCP over HTTP (issue 18)."""

from __future__ import annotations

import pytest
from conftest import Corpus
from fastapi.testclient import TestClient
from server_helpers import MCP_ACCEPT, MCP_INITIALIZE

from cairn.errors import BudgetExceededError
from cairn.server.http import create_app
from cairn.server.limits import AUTH_FAILURE_LIMIT
from cairn.server.throttle import FailureLimiter


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_client_over_its_limit_waits_for_the_window() -> None:
    clock = _Clock()
    limiter = FailureLimiter(limit=3, window_s=10.0, clock=clock)
    for _ in range(3):
        limiter.check("a")
        limiter.failed("a")
        clock.now += 1.0
    with pytest.raises(BudgetExceededError) as caught:
        limiter.check("a")
    assert caught.value.details["retry_after_s"] == 7  # the first failure leaves at 1010
    limiter.check("b")  # other clients are not affected
    clock.now = 1010.0  # the first failure left the window
    limiter.check("a")
    limiter.failed("a")
    with pytest.raises(BudgetExceededError):
        limiter.check("a")


def test_the_limiter_remembers_a_bounded_number_of_clients() -> None:
    limiter = FailureLimiter(limit=1, window_s=60.0, clients=2, clock=_Clock())
    for client in ("a", "b", "c"):
        limiter.failed(client)
    limiter.check("a")  # the least recently failing client was forgotten
    for client in ("b", "c"):
        with pytest.raises(BudgetExceededError):
            limiter.check(client)


def test_http_refuses_a_client_after_repeated_failures(corpus: Corpus) -> None:
    with TestClient(create_app(corpus.db)) as http:
        bad = {"Authorization": "Bearer cairn_nobody.guess"}
        for _ in range(AUTH_FAILURE_LIMIT):
            assert http.get("/v1/stats", headers=bad).status_code == 401
        refused = http.get("/v1/stats", headers=corpus.auth("admin"))
        assert refused.status_code == 429
        assert refused.json()["type"] == "urn:cairn:error:budget_exceeded"
        assert refused.json()["details"]["retry_after_s"] >= 1
        mcp = http.post("/mcp/", json={}, headers=corpus.auth("admin"))
        assert mcp.status_code == 429  # one limit for both doors
        assert http.get("/v1/health").status_code == 200  # health needs no key


def test_mcp_over_http_needs_a_key_at_the_transport(http: TestClient, corpus: Corpus) -> None:
    initialize = MCP_INITIALIZE
    accept = MCP_ACCEPT
    for headers in ({}, {"Authorization": "Bearer cairn_nobody.guess"}, {"Authorization": "x"}):
        response = http.post("/mcp/", json=initialize, headers={**accept, **headers})
        assert response.status_code == 401
        assert response.headers["www-authenticate"].startswith("Bearer")
        assert response.json()["type"] == "urn:cairn:error:unauthenticated"
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    response = http.post("/mcp/", json=listing, headers=accept)
    assert response.status_code == 401
    loopback = {"Host": "127.0.0.1:8765"}  # the transport's DNS-rebinding check
    answered = http.post(
        "/mcp/", json=initialize, headers={**accept, **loopback, **corpus.auth("admin")}
    )
    assert answered.status_code == 200
    assert answered.json()["result"]["serverInfo"]["name"]
