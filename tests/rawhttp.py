"""Raw sockets against a live server: what a misbehaving client really sends and sees.

httpx cannot send a request head of the wrong size, a body shorter than its
``Content-Length``, a broken chunk, or nothing at all; these helpers can. Every
wait has a generous deadline and no assertion depends on how fast the server
is: a helper either sees what it waits for or gives up after the deadline.
"""

from __future__ import annotations

import json
import socket
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from mockstore import schemas


@dataclass
class RawResponse:
    status: int
    reason: str
    headers: list[tuple[str, str]]
    body: bytes
    # The read saw the server close the connection. False does not say it stays
    # open: ``closes(sock)`` answers that, for the tests that ask.
    closed: bool = False
    raw: bytes = field(default=b"", repr=False)

    def header(self, name: str) -> str | None:
        for key, value in self.headers:
            if key.lower() == name.lower():
                return value
        return None

    def json(self) -> Any:
        return json.loads(self.body)


def address(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    assert parts.hostname is not None and parts.port is not None
    return parts.hostname, parts.port


def connect(url: str, timeout: float = 30.0) -> socket.socket:
    sock = socket.create_connection(address(url), timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def read_response(sock: socket.socket, deadline: float = 30.0) -> RawResponse | None:
    """One response from ``sock``; None when the server closed without answering.

    Reads until the head and a ``Content-Length`` body are in, or the server
    closes. Raises TimeoutError when nothing conclusive came within ``deadline``.
    It does not wait to learn whether the server then closes the connection:
    that costs a wait whenever the connection stays open, so a test that cares
    asks ``closes(sock)``.
    """
    end = time.monotonic() + deadline
    data = b""
    closed = False
    while True:
        head_end = data.find(b"\r\n\r\n")
        if head_end >= 0:
            head = data[:head_end].decode("latin-1")
            lines = head.split("\r\n")
            length = None
            for line in lines[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value.strip())
            body_start = head_end + 4
            if length is not None and len(data) - body_start >= length:
                break
            if length is None and closed:
                break
        if closed:
            break
        remaining = end - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(f"no complete response within {deadline} s; got {data[:200]!r}")
        sock.settimeout(remaining)
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            chunk = b""
        except TimeoutError:
            raise TimeoutError(
                f"no complete response within {deadline} s; got {data[:200]!r}"
            ) from None
        if not chunk:
            closed = True
        data += chunk
    if not data:
        return None
    head_end = data.find(b"\r\n\r\n")
    if head_end < 0:
        raise AssertionError(f"not an HTTP response: {data[:200]!r}")
    lines = data[:head_end].decode("latin-1").split("\r\n")
    version, status, *reason = lines[0].split(" ", 2)
    assert version.startswith("HTTP/"), lines[0]
    headers = []
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers.append((name.strip(), value.strip()))
    response = RawResponse(
        int(status), reason[0] if reason else "", headers, data[head_end + 4 :], raw=data
    )
    length = response.header("content-length")
    if length is not None:
        response.body = response.body[: int(length)]
    response.closed = closed
    return response


def wait_closed(sock: socket.socket, deadline: float) -> tuple[bool, bytes]:
    """Wait until the server closes ``sock``; (closed?, what it sent first)."""
    end = time.monotonic() + deadline
    data = b""
    while time.monotonic() < end:
        sock.settimeout(max(0.05, end - time.monotonic()))
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            break
        except OSError:
            return True, data
        if not chunk:
            return True, data
        data += chunk
    return False, data


def closes(sock: socket.socket, deadline: float = 30.0) -> bool:
    """True as soon as the server closes ``sock``; False if it is still open at ``deadline``.

    Only a failing test waits out the deadline: a server that closes is seen
    at once, so the deadline can be generous.
    """
    return wait_closed(sock, deadline)[0]


def send_all(sock: socket.socket, data: bytes) -> bool:
    """Send ``data``; False when the server closed the connection before it all went."""
    try:
        sock.sendall(data)
    except (BrokenPipeError, ConnectionResetError):
        return False
    return True


def request(
    url: str,
    method: str,
    target: str,
    headers: dict[str, str] | list[tuple[str, str]] | None = None,
    body: bytes = b"",
    deadline: float = 30.0,
) -> RawResponse:
    """One well-formed request on a new connection; its response."""
    items = list(headers.items()) if isinstance(headers, dict) else list(headers or [])
    host, port = address(url)
    lines = [f"{method} {target} HTTP/1.1", f"Host: {host}:{port}"]
    lines += [f"{name}: {value}" for name, value in items]
    if body or method in ("POST", "PUT"):
        lines.append(f"Content-Length: {len(body)}")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    with connect(url, deadline) as sock:
        send_all(sock, head + body)
        response = read_response(sock, deadline)
    assert response is not None, f"{method} {target}: the server closed without answering"
    return response


def assert_error_body(response: RawResponse, status: int, code: str) -> dict[str, Any]:
    """An Error body (by the OpenAPI document's schema) with this status and code."""
    assert response.status == status, (response.status, response.body[:300])
    assert (response.header("content-type") or "").startswith("application/json")
    body = response.json()
    errors = list(schemas.validator_for("#/components/schemas/Error").iter_errors(body))
    assert not errors, errors[0].message
    assert body["status"] == status
    assert body["code"] == code, body
    return body
