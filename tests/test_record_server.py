"""``mockstore record`` runs on the server ``mockstore serve`` runs: same limits, same guard.

One app shell and one set of uvicorn settings (``mockstore.server``): a head
over the limit gets 431 before the proxy sees it, a slow-loris head gets 408
while a normal client is served, a body that does not come gets 408, past the
connection cap the idle connection makes room, and the control API refuses a
rebinding host. Each test runs ``python -m mockstore record`` as a subprocess
in front of the echo upstream and talks to it over raw sockets; every wait has
a generous deadline and nothing depends on how fast the machine is.
"""

from __future__ import annotations

import socket
import time
from contextlib import ExitStack

import httpx

from tests.rawhttp import (
    address,
    assert_error_body,
    connect,
    read_response,
    request,
    send_all,
    wait_closed,
)
from tests.upstream import origin, recorder
from tests.upstream.echo import echo_upstream

LIMIT = 16 * 1024  # the documented default, as for serve
WAIT = 60.0  # generous: the machine is shared


def _journal(proxy_url: str) -> list[dict]:
    return httpx.get(origin(proxy_url) + "/__mockstore/requests", timeout=30).json()["entries"]


def test_a_17_kib_head_gets_431_and_never_reaches_the_upstream() -> None:
    with echo_upstream() as (upstream, echo), recorder(upstream) as proxy:
        root = origin(proxy.url)
        host = root.split("//")[1]
        head = (
            f"GET /v1/echo HTTP/1.1\r\nHost: {host}\r\nX-Pad: {'a' * (17 * 1024)}\r\n\r\n"
        ).encode()
        with connect(root) as sock:
            send_all(sock, head)
            response = read_response(sock, deadline=WAIT)
        assert response is not None
        body = assert_error_body(response, 431, "headers_too_large")
        assert str(LIMIT) in body["message"]
        assert echo.received == []
        assert _journal(proxy.url) == []
        # And the proxy still serves the next client.
        assert httpx.get(proxy.url + "/echo", timeout=WAIT).status_code == 200


def test_a_slow_loris_head_is_cut_off_while_a_normal_client_is_served() -> None:
    with (
        echo_upstream() as (upstream, echo),
        recorder(upstream, "--timeout-headers", "2", "--timeout-keep-alive", "1") as proxy,
    ):
        root = origin(proxy.url)
        with connect(root) as loris:
            send_all(loris, b"GET /v1/echo HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            served = httpx.get(proxy.url + "/echo", timeout=WAIT)
            assert served.status_code == 200
            # Each byte is late; the head's deadline counts from its first byte.
            started = time.monotonic()
            while time.monotonic() - started < WAIT and send_all(loris, b"s"):
                closed, sent = wait_closed(loris, deadline=0.5)
                if closed:
                    break
            else:
                closed, sent = wait_closed(loris, deadline=WAIT)
        assert closed, "the slow-loris connection stayed open"
        assert sent.startswith(b"HTTP/1.1 408"), sent[:100]
        assert [entry["request"]["path"] for entry in _journal(proxy.url)] == ["/v1/echo"]
        assert len(echo.received) == 1


def test_a_body_that_does_not_come_gets_408_and_is_journaled_as_such() -> None:
    with (
        echo_upstream() as (upstream, _),
        recorder(upstream, "--timeout-body", "2") as proxy,
    ):
        root = origin(proxy.url)
        host = root.split("//")[1]
        with connect(root) as sock:
            head = f"POST /v1/echo HTTP/1.1\r\nHost: {host}\r\nContent-Length: 100\r\n\r\n"
            send_all(sock, head.encode() + b"ten bytes!")
            response = read_response(sock, deadline=WAIT)
        assert response is not None
        assert_error_body(response, 408, "request_timeout")
        (entry,) = _journal(proxy.url)
        assert (entry["response"]["status"], entry["outcome"]) == (408, "request_timeout")


def test_past_the_connection_cap_an_idle_connection_makes_room() -> None:
    with (
        echo_upstream() as (upstream, _),
        recorder(upstream, "--max-connections", "3") as proxy,
        ExitStack() as stack,
    ):
        root = origin(proxy.url)
        for _ in range(3):
            stack.enter_context(socket.create_connection(address(root), timeout=WAIT))
        assert httpx.get(proxy.url + "/echo", timeout=WAIT).status_code == 200


def test_the_control_api_refuses_a_rebinding_host() -> None:
    with echo_upstream() as (upstream, _), recorder(upstream) as proxy:
        root = origin(proxy.url)
        port = root.rsplit(":", 1)[1]
        response = request(
            root, "GET", "/__mockstore/requests.har", [("Host", f"rebind.evil.example:{port}")]
        )
        assert response.status == 403, response.body[:200]
        assert response.json()["code"] == "host_not_allowed"
        # A disguised spelling of the control prefix is not served either.
        assert request(root, "GET", "/%5F_mockstore/requests").status == 404
