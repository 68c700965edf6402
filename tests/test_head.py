"""HEAD (RFC 9110 section 9.3.2): wherever GET is served, the same status and headers, no body.

A HEAD counts against the allowance like the GET it stands for, so its
``X-RateLimit-*`` headers are exactly what that GET would have carried.
Checked over a real uvicorn process: the raw bytes show that no body is sent.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import httpx
import pytest

from tests.support import LiveServer, auth, mock_server

# Headers that differ between any two answers, whatever the method.
PER_ANSWER = {"x-request-id", "date", "x-ratelimit-remaining"}


@pytest.fixture(scope="module")
def api() -> Iterator[LiveServer]:
    with mock_server() as running:
        yield running


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/v1/pets", 200),
        ("/v1/pets?status=sold&limit=3", 200),
        ("/v1/pets/1", 200),
        ("/v1/pets/999", 404),
        ("/v1/pets/abc", 400),
        ("/v1/pets?limit=0", 400),
        ("/v1/store/orders", 501),
    ],
)
def test_head_answers_as_get_without_a_body(api: LiveServer, path: str, status: int) -> None:
    with api.client(headers=auth("business")) as http:
        got = http.get(path)
        head = http.head(path)
    assert (got.status_code, head.status_code) == (status, status)
    assert head.content == b""
    assert head.headers["content-length"] == str(len(got.content))
    shown = {k: v for k, v in got.headers.items() if k not in PER_ANSWER}
    assert {k: v for k, v in head.headers.items() if k not in PER_ANSWER} == shown
    # It counted, as the GET did: one fewer left.
    assert (
        int(head.headers["x-ratelimit-remaining"]) == int(got.headers["x-ratelimit-remaining"]) - 1
    )


def test_head_without_a_key_is_the_same_401(api: LiveServer) -> None:
    with api.client() as http:
        got, head = http.get("/v1/pets"), http.head("/v1/pets")
    assert (got.status_code, head.status_code, head.content) == (401, 401, b"")
    assert head.headers["www-authenticate"] == got.headers["www-authenticate"]


def test_no_body_bytes_follow_a_head_answer(api: LiveServer) -> None:
    # Two requests pipelined on one connection: if the HEAD answer carried a
    # body, its bytes would stand between the two status lines.
    host, port = api.url.removeprefix("http://").rsplit(":", 1)
    request = (
        "{method} /v1/pets/1 HTTP/1.1\r\nHost: {host}\r\n"
        "Authorization: Bearer business-key\r\n{last}\r\n"
    )
    data = (
        request.format(method="HEAD", host=host, last="")
        + request.format(method="GET", host=host, last="Connection: close\r\n")
    ).encode()
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(data)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    head, rest = received.split(b"\r\n\r\n", 1)
    assert head.startswith(b"HTTP/1.1 200")
    assert b"content-length: " in head.lower()
    assert rest.startswith(b"HTTP/1.1 200"), rest[:80]


def test_allow_names_head_beside_get(api: LiveServer) -> None:
    with api.client(headers=auth("business")) as http:
        assert http.delete("/v1/pets/1").headers["allow"] == "GET, HEAD"
        assert http.patch("/v1/pets").headers["allow"] == "GET, HEAD, POST"


def test_head_is_journaled_as_the_operation_it_stands_for(api: LiveServer) -> None:
    with api.client(headers=auth("business")) as http:
        http.head("/v1/pets?limit=1")
        entries = httpx.get(
            api.url + "/__mockstore/requests", params={"key": "business-key"}
        ).json()
    last = entries["entries"][-1]
    assert (last["request"]["method"], last["operation"]) == ("HEAD", "listPets")
    assert last["response"]["status"] == 200 and last["response"]["body"] == ""
