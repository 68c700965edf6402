"""Issue 19, finding 10: the control surface checks before it looks, and hands raw keys to few.

On main ``/__mockstore/tenants/<id>/…`` answered 404 "no tenant" before the
token and Host checks (tenant ids could be enumerated); on a server listening
beyond loopback without a token, anyone on the network could download
``requests.har?mask=false`` with the clients' raw keys; the dashboard's event
stream was cut at the body timeout, logging tracebacks.
"""

from __future__ import annotations

import asyncio
import json
import signal
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from mockstore.app import create_app
from tests.support import LiveServer, auth, live_server

TOKEN = "s3cret-token"
BEARER = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def guarded() -> Iterator[LiveServer]:
    with live_server("--control-token", TOKEN) as running:
        made = httpx.post(
            running.url + "/__mockstore/tenants", json={"id": "known"}, headers=BEARER, timeout=30
        )
        assert made.status_code == 201
        yield running


@pytest.mark.parametrize("path", ["__mockstore/health", "__mockstore/requests", "__mockstore/"])
def test_without_the_token_a_tenant_that_exists_and_one_that_does_not_look_alike(
    guarded: LiveServer, path: str
) -> None:
    tenants = guarded.url + "/__mockstore/tenants/"
    known = httpx.get(tenants + "known/" + path, timeout=30)
    unknown = httpx.get(tenants + "nobody/" + path, timeout=30)
    assert known.status_code == unknown.status_code == 401
    assert known.json() == unknown.json()
    assert unknown.json()["code"] == "unauthorized"
    with_token = httpx.get(tenants + "nobody/" + path, headers=BEARER, timeout=30)
    assert with_token.status_code == 404  # a token holder may know


@pytest.mark.parametrize("path", ["__mockstore/health", "v1/pets"])
def test_the_host_check_comes_before_the_lookup(guarded: LiveServer, path: str) -> None:
    tenants = guarded.url + "/__mockstore/tenants/"
    evil = {"Host": "rebound.example", **BEARER}
    for tenant in ("known", "nobody"):
        answer = httpx.get(tenants + f"{tenant}/{path}", headers=evil, timeout=30)
        assert answer.status_code == 403, (tenant, answer.text)
        assert answer.json()["code"] == "host_not_allowed"


def test_a_tenants_api_still_needs_no_control_token(guarded: LiveServer) -> None:
    answer = httpx.get(
        guarded.url + "/__mockstore/tenants/known/v1/pets", headers=auth("pro"), timeout=30
    )
    assert answer.status_code == 200


def _har(client_address: str, token: str | None, mask: str) -> httpx.Response:
    """``requests.har`` from an in-process server, as a client at ``client_address`` asks."""
    app = create_app("default", control_token=token)

    async def ask() -> httpx.Response:
        transport = httpx.ASGITransport(app=app, client=(client_address, 40000))
        async with httpx.AsyncClient(transport=transport, base_url="http://10.0.0.1") as client:
            await client.get("/v1/pets", headers=auth("free"))
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            return await client.get(
                "/__mockstore/requests.har", params={"mask": mask}, headers=headers
            )

    return asyncio.run(ask())


def test_raw_keys_are_refused_to_a_caller_on_another_machine_without_a_token() -> None:
    answer = _har("203.0.113.9", None, "false")
    assert answer.status_code == 403
    body = answer.json()
    assert body["code"] == "forbidden" and "mask=false" in body["message"]
    assert "free-key" not in answer.text


@pytest.mark.parametrize(
    ("address", "token", "mask"),
    [("127.0.0.1", None, "false"), ("::1", None, "0"), ("203.0.113.9", TOKEN, "false")],
)
def test_raw_keys_go_to_a_local_caller_or_a_token_holder(
    address: str, token: str | None, mask: str
) -> None:
    answer = _har(address, token, mask)
    assert answer.status_code == 200
    assert "Bearer free-key" in answer.text


def test_a_masked_har_goes_to_anyone_allowed_the_control_api() -> None:
    answer = _har("203.0.113.9", None, "true")
    assert answer.status_code == 200
    assert "Bearer free-key" not in answer.text


def _events(server: LiveServer, lines: list[str], stop: threading.Event) -> None:
    with (
        httpx.Client(timeout=httpx.Timeout(60, read=None)) as client,
        client.stream("GET", server.url + "/__mockstore/events") as stream,
    ):
        for line in stream.iter_lines():
            lines.append(line)
            if stop.is_set():
                return


def test_the_event_stream_outlives_the_body_timeout_and_closes_cleanly() -> None:
    with live_server("--timeout-body", "1", "--log-level", "info") as server:
        lines: list[str] = []
        stop = threading.Event()
        reader = threading.Thread(target=_events, args=(server, lines, stop), daemon=True)
        reader.start()
        end = time.monotonic() + 30
        while not any(line.startswith("event: hello") for line in lines):
            assert time.monotonic() < end, lines
            time.sleep(0.05)
        time.sleep(3)  # three times the body timeout, with nothing to send
        httpx.get(server.api + "/pets", headers=auth("pro"), timeout=30)
        end = time.monotonic() + 30
        while not any('"path":"/v1/pets"' in line for line in lines):
            assert time.monotonic() < end, f"the stream stopped: {lines}"
            time.sleep(0.05)
        stop.set()
        assert server.process is not None
        server.process.send_signal(signal.SIGTERM)
        assert server.process.wait(30) == 0
        server.drained(10)
        log = server.log()
    assert "Traceback" not in log, log
    assert "request_timeout" not in log
    assert json.loads(next(line for line in lines if line.startswith('data: {"since"'))[6:])
