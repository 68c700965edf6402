"""The floor of the stack: a raw ASGI app, no framework, on the same uvicorn.

It answers every request with one precomputed list of headers and one body
message: the bytes mockstore sends for ``GET /v1/pets?limit=20`` (the same
header names and value lengths, the same body length), with nothing decided
per request. Served with the settings of ``mockstore serve`` (httptools,
uvloop, access log, server and date headers off, lifespan off), it is what
the interpreter, uvicorn and the socket cost on their own, so
``floor's CPU per request / mockstore's`` is the share of the request that is
the stack's rather than mockstore's (issue 29: at least 75%). It imports no
Starlette (``ceiling.py`` takes its body and settings from here), so its cold
start is the stack's too (``cold_start.py``).

The bare Starlette app (``ceiling.py``) is kept beside it: it measures the
framework mockstore no longer goes through, the floor measures the stack.

    python bench/floor.py --port 8082 --body-bytes 1135
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import uvicorn

# The headers mockstore's answer carries, with values of the same lengths
# (``bench/run.py`` checks the floor's answer is as long as mockstore's).
HEADER_VALUES: tuple[tuple[bytes, bytes], ...] = (
    (b"content-type", b"application/json"),
    (b"date", b"Sun, 29 Nov 2026 09:18:06 GMT"),
    (b"x-ratelimit-limit", b"100000000"),
    (b"x-ratelimit-remaining", b"99999999"),
    (b"x-ratelimit-reset", b"1795943940"),
    (b"x-request-id", b"req-000001"),
)


def constant_body(size: int) -> bytes:
    """A valid JSON document (a string) of exactly ``size`` bytes (at least 2)."""
    if size < 2:
        raise ValueError("the body must be at least 2 bytes (a JSON string)")
    return b'"' + b"x" * (size - 2) + b'"'


def settings(host: str, port: int) -> dict[str, object]:
    """uvicorn's settings for the floor and the ceiling (also used by bench/stages.py).

    The same as mockstore's own (``mockstore.server.uvicorn_config``), so the
    only difference between the sides is the application.
    """
    return {
        "host": host,
        "port": port,
        "loop": "uvloop",
        "http": "httptools",
        "lifespan": "off",
        "access_log": False,
        "server_header": False,
        "date_header": False,
        "log_level": "warning",
    }


Send = Callable[[dict[str, Any]], Awaitable[None]]


def build_app(body: bytes) -> Callable[..., Awaitable[None]]:
    """An ASGI app that answers every HTTP request 200 with ``body`` and fixed headers."""
    headers = [(b"content-length", str(len(body)).encode()), *HEADER_VALUES]
    start = {"type": "http.response.start", "status": 200, "headers": headers}
    message = {"type": "http.response.body", "body": body}

    async def app(scope: dict[str, Any], receive: Any, send: Send) -> None:
        if scope["type"] != "http":
            return
        await send(start)
        await send(message)

    return app


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--body-bytes", type=int, required=True)
    args = parser.parse_args(argv)
    uvicorn.run(build_app(constant_body(args.body_bytes)), **settings(args.host, args.port))
    return 0


if __name__ == "__main__":
    sys.exit(main())
