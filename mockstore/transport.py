"""Connection-level faults: what a flaky network or a crashing server looks like.

ASGI has no message for "reset the connection", so these reach the server's
transport through the ``send`` callable (uvicorn's request cycle object keeps
it as ``.transport``). Under a server without one, they fall back to raising,
which every ASGI server answers by closing the connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import struct

from starlette.types import Send

from mockstore.limits import WRITE_CHUNK


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


def malformed(body: bytes) -> bytes:
    """The first half of ``body``, cut at a character boundary: valid UTF-8, never valid JSON.

    What a server that crashes while writing sends: the start of the answer
    it meant to give (a Pet's first fields, a list's first pets).
    """
    cut = body[: max(1, len(body) // 2)].decode("utf-8", errors="ignore").encode()
    try:
        json.loads(cut)
    except ValueError:
        return cut
    # Half of a scalar can still parse ("12" of "1234"); a stray brace cannot.
    return cut + b"}"


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


async def send_in_pieces(send: Send, body: bytes) -> None:
    """Send ``body`` ``WRITE_CHUNK`` at a time: the server waits for the client between pieces.

    So a client that reads slowly, or not at all, holds a piece of the answer
    in the connection's buffer rather than all of it (see ``mockstore.protocol``).
    Between pieces the event loop takes a turn (``take_turns``).
    """
    view = memoryview(body)
    size = len(body)
    for start in range(0, size, WRITE_CHUNK):
        end = start + WRITE_CHUNK
        await send({"type": "http.response.body", "body": view[start:end], "more_body": end < size})
        if end < size:
            await take_turns()


async def take_turns() -> None:
    """Let every other connection's ready work run before this answer's next piece.

    uvicorn's ``send`` returns without yielding while the socket takes the
    bytes (a fresh loopback socket takes megabytes), so a large answer went
    out whole in one turn of the loop, and every other client waited behind
    it: one piece per connection per turn, as a front proxy shares its writes.
    """
    await asyncio.sleep(0)
