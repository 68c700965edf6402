"""Connection-level faults: what a flaky network or a crashing server looks like.

ASGI has no message for "reset the connection", so these reach the server's
transport through the ``send`` callable (uvicorn's request cycle object keeps
it as ``.transport``). Under a server without one, they fall back to raising,
which every ASGI server answers by closing the connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
from typing import Any

Send = Any


class ConnectionBroken(Exception):
    """Raised where the transport is out of reach, so the server drops the connection."""


def _transport(send: Send) -> asyncio.Transport | None:
    owner = getattr(send, "__self__", None)
    return getattr(owner, "transport", None)


def reset_connection(send: Send) -> None:
    """Abort with a TCP RST (SO_LINGER 0), as a crashed peer or middlebox does."""
    transport = _transport(send)
    if transport is None:
        raise ConnectionBroken("connection_reset")
    sock = transport.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    transport.abort()


def close_connection(send: Send) -> None:
    """Close without a response: the client sees an empty reply."""
    transport = _transport(send)
    if transport is None:
        raise ConnectionBroken("empty_response")
    transport.close()


# A prefix of a plausible Pet: valid UTF-8, invalid JSON.
MALFORMED_JSON = b'{"id": 1, "name": "Rex", "categoryId": 1, "status": "availab'


async def send_truncated(
    send: Send, status: int, headers: list[tuple[bytes, bytes]], body: bytes
) -> None:
    """Promise the whole body in Content-Length, send half, then close."""
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send(
        {"type": "http.response.body", "body": body[: max(1, len(body) // 2)], "more_body": True}
    )
    close_connection(send)


async def send_slowly(
    send: Send, status: int, headers: list[tuple[bytes, bytes]], body: bytes, seconds: float = 2.0
) -> None:
    """Send the body in small pieces spread over ``seconds``."""
    await send({"type": "http.response.start", "status": status, "headers": headers})
    pieces = max(1, min(len(body), 10))
    step = -(-len(body) // pieces) if body else 0
    for index in range(pieces):
        await asyncio.sleep(seconds / pieces)
        chunk = body[index * step : (index + 1) * step]
        await send({"type": "http.response.body", "body": chunk, "more_body": index < pieces - 1})
