"""A request that breaks halfway changes nothing: no pet, no shifted call count, no 201 journaled.

Raw sockets against a real server: a body shorter than its Content-Length, a
client that leaves, a broken chunk, a body that never comes.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from tests.rawhttp import assert_error_body, closes, connect, read_response, send_all
from tests.support import LiveServer, live_server

NEW_PET = json.dumps({"name": "Half", "categoryId": 3}).encode()
assert len(NEW_PET) < 40

SCENARIO = """\
version: 1
name: broken-uploads
keys:
  - {key: pro-key, plan: pro}
pets:
  - {id: 1, name: Rex, categoryId: 1, status: available}
faults:
  - name: first-create-fails
    match: {operation: createPet, calls: [1]}
    respond: {status: 503, body: {code: unavailable, message: later, status: 503}}
"""


@pytest.fixture
def server() -> Iterator[LiveServer]:
    with live_server(env={"MOCKSTORE_SCENARIO_YAML": SCENARIO}) as running:
        yield running


def _head(server: LiveServer, extra: str) -> bytes:
    host = server.url.split("//")[1]
    return (
        f"POST /v1/pets HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer pro-key\r\n"
        f"Content-Type: application/json\r\n{extra}\r\n"
    ).encode()


def _pets(server: LiveServer) -> list[dict[str, Any]]:
    return httpx.get(server.url + "/__mockstore/pets", timeout=30).json()


def _entries(server: LiveServer) -> list[dict[str, Any]]:
    return httpx.get(server.url + "/__mockstore/requests", timeout=30).json()["entries"]


def _wait_for(predicate: Callable[[], bool], what: str, deadline: float = 30.0) -> None:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"never happened: {what}")


def _cut_off_upload(server: LiveServer) -> None:
    """Promise 1,000 bytes, send a valid 35-byte JSON object, and leave."""
    with connect(server.url) as sock:
        send_all(sock, _head(server, "Content-Length: 1000\r\n") + NEW_PET)
        time.sleep(0.2)  # the body's start reaches the server before the close


def test_a_cut_off_upload_stores_nothing_and_is_journaled_as_aborted(server: LiveServer) -> None:
    before = _pets(server)
    _cut_off_upload(server)
    _wait_for(lambda: len(_entries(server)) >= 1, "the aborted request is journaled")
    (entry,) = _entries(server)
    assert entry["operation"] == "createPet"
    assert entry["outcome"] == "aborted"
    assert entry["response"]["status"] == 0, "no answer was sent, none is journaled"
    assert entry["request"]["body"] == NEW_PET.decode()
    assert _pets(server) == before, "a cut-off upload created a pet"


def test_a_cut_off_upload_does_not_shift_scripted_call_counts(server: LiveServer) -> None:
    _cut_off_upload(server)
    _wait_for(lambda: len(_entries(server)) >= 1, "the aborted request is journaled")
    # The first complete create is still call 1 of the rule: it gets the 503.
    headers = {"Authorization": "Bearer pro-key"}
    first = httpx.post(server.api + "/pets", json={"name": "A", "categoryId": 1}, headers=headers)
    assert first.status_code == 503, first.text
    second = httpx.post(server.api + "/pets", json={"name": "B", "categoryId": 1}, headers=headers)
    assert second.status_code == 201
    assert [p["name"] for p in _pets(server)] == ["Rex", "B"]


def test_a_broken_chunk_stores_nothing_and_gets_an_error_body(server: LiveServer) -> None:
    before = _pets(server)
    chunked = _head(server, "Transfer-Encoding: chunked\r\n")
    body = b"%x\r\n%s\r\n" % (len(NEW_PET), NEW_PET) + b"zz-not-a-size\r\n"
    with connect(server.url) as sock:
        send_all(sock, chunked + body)
        response = read_response(sock)
        assert closes(sock), "the connection stays open after a broken chunk"
    assert response is not None
    error = assert_error_body(response, 400, "bad_request")
    assert "chunk" in error["message"].lower() or "invalid" in error["message"].lower()
    # The handler is done with the request once it is journaled (as aborted):
    # only then can "nothing was stored" be checked.
    _wait_for(lambda: len(_entries(server)) >= 1, "the broken upload is journaled")
    (entry,) = _entries(server)
    assert (entry["outcome"], entry["response"]["status"]) == ("aborted", 0), entry
    assert _pets(server) == before


def test_a_body_that_never_arrives_gets_408_and_stores_nothing() -> None:
    with live_server("--timeout-body", "1", env={"MOCKSTORE_SCENARIO_YAML": SCENARIO}) as server:
        before = _pets(server)
        with connect(server.url) as sock:
            send_all(sock, _head(server, "Content-Length: 100\r\n") + NEW_PET[:10])
            response = read_response(sock, deadline=30)
            assert response is not None
            error = assert_error_body(response, 408, "request_timeout")
            assert "1" in error["message"]
            # Still an API answer: the rate-limit headers and a request id.
            for name in ("x-ratelimit-limit", "x-ratelimit-remaining", "x-request-id"):
                assert response.header(name) is not None, name
            assert closes(sock)
        assert _pets(server) == before
        (entry,) = _entries(server)
        assert entry["response"]["status"] == 408
        assert entry["request_id"] == response.header("x-request-id")
