"""A request asking to upgrade the connection (WebSocket, h2c) is an ordinary HTTP request.

mockstore serves no WebSocket: uvicorn used to hand such a request to the app
as a WebSocket scope, which nothing accepts, and the client got a text/plain
500. The server is built without a WebSocket protocol (``mockstore.server``),
so the request is answered by the API like any other: with its answer or its
Error body, journaled and counted.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.rawhttp import assert_error_body, request
from tests.support import LiveServer, live_server

WEBSOCKET = [
    ("Connection", "Upgrade"),
    ("Upgrade", "websocket"),
    ("Sec-WebSocket-Version", "13"),
    ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
]
H2C = [("Connection", "Upgrade, HTTP2-Settings"), ("Upgrade", "h2c"), ("HTTP2-Settings", "")]


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    with live_server() as running:
        yield running


@pytest.mark.parametrize("upgrade", [WEBSOCKET, H2C], ids=["websocket", "h2c"])
def test_an_upgrade_request_with_a_key_gets_the_apis_answer(
    server: LiveServer, upgrade: list[tuple[str, str]]
) -> None:
    response = request(
        server.url, "GET", "/v1/pets?limit=1", [("Authorization", "Bearer pro-key"), *upgrade]
    )
    assert response.status == 200, response.body[:300]
    assert len(response.json()) == 1
    request_id = response.header("x-request-id")
    journal = httpx.get(server.url + "/__mockstore/requests", timeout=30).json()
    assert request_id in [entry["request_id"] for entry in journal["entries"]]


@pytest.mark.parametrize("upgrade", [WEBSOCKET, H2C], ids=["websocket", "h2c"])
def test_an_upgrade_request_without_a_key_gets_an_error_body(
    server: LiveServer, upgrade: list[tuple[str, str]]
) -> None:
    assert_error_body(request(server.url, "GET", "/v1/pets", upgrade), 401, "unauthorized")
