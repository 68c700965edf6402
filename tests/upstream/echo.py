"""A tiny upstream that reports what reached it, for the recorder's own tests.

Raw ASGI under uvicorn in a thread of the test process, so a test can hold a
response or an upload at a chosen point (``threading.Event``) and see, without
any timing, that the proxy streams rather than buffers.

- ``/v1/echo``: answers 200 with what it received (method, raw path, query,
  headers, body length and digest), plus headers a proxy must strip
  (``Keep-Alive``, one named in ``Connection``) and one it must keep.
- ``/v1/echo-key``: echoes the Authorization header in a header, a cookie and
  the body, as a careless service might.
- ``/v1/stream``: sends one chunk, waits for ``release``, sends the rest.
- ``/v1/upload``: sets ``first_chunk`` when the first body chunk arrives.
- ``/v1/broken``: promises a body, sends part of it, and fails.
- ``/v1/gzip``: a gzip-encoded JSON body.
- ``.../links`` (under any prefix): ``Location``, ``Content-Location`` and ``Link``
  holding absolute URLs to itself (built from the ``Host`` it was sent and the path
  before ``/links``, as a service behind a proxy builds them), to another host, to a
  path, and to its own host outside the prefix.

Every request it notes says which address it came from (``client``), as a provider
that counts callers by address reads it.
"""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn


class Echo:
    def __init__(self) -> None:
        self.release = threading.Event()
        self.first_chunk = threading.Event()
        self.received: list[dict[str, Any]] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        path = scope["path"]
        if path == "/v1/upload":
            size = 0
            while True:
                message = await receive()
                size += len(message.get("body", b""))
                if size:
                    self.first_chunk.set()
                if not message.get("more_body"):
                    break
            await _answer(send, 200, {"size": size})
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = [[k.decode("latin-1"), v.decode("latin-1")] for k, v in scope["headers"]]
        seen = {
            "method": scope["method"],
            "raw_path": scope["raw_path"].decode("latin-1"),
            "query": scope["query_string"].decode("latin-1"),
            "headers": headers,
            "body_size": len(body),
            "body_sha256": hashlib.sha256(body).hexdigest(),
            "client": scope["client"][0] if scope.get("client") else None,
        }
        self.received.append(seen)
        if path == "/v1/echo":
            extra = [
                (b"x-upstream", b"kept"),
                (b"keep-alive", b"timeout=5"),
                (b"x-hop-upstream", b"stripped"),
                (b"connection", b"x-hop-upstream"),
            ]
            await _answer(send, 200, seen, extra)
        elif path == "/v1/echo-key":
            auth = dict(scope["headers"]).get(b"authorization", b"")
            token = auth.partition(b" ")[2]
            extra = [(b"x-your-key", token), (b"set-cookie", b"session=" + token)]
            await _answer(send, 200, {"you_sent": token.decode()}, extra)
        elif path.endswith("/links"):
            host = dict(scope["headers"]).get(b"host", b"").decode("latin-1")
            base = f"http://{host}{path.removesuffix('/links')}"
            extra = [
                (b"location", f"{base}/pets/7".encode()),
                (b"content-location", f"{base}/pets?limit=2".encode()),
                (
                    b"link",
                    (
                        f'<{base}/pets?limit=2&cursor=b2Zmc2V0OjI>; rel="next", '
                        '<https://docs.example/guide?x=1>; rel="help", '
                        '</v1/pets?limit=2>; rel="first", '
                        f'<http://{host}/status>; rel="service"'
                    ).encode(),
                ),
            ]
            await _answer(send, 201, {"links": True}, extra)
        elif path == "/v1/stream":
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [(b"content-type", b"application/json")],
                }
            )
            await send({"type": "http.response.body", "body": b'["first",', "more_body": True})
            while not self.release.is_set():
                await asyncio.sleep(0.01)
            await send({"type": "http.response.body", "body": b'"second"]'})
        elif path == "/v1/broken":
            # Promises 100 bytes, sends 10, then fails: the connection ends mid-body.
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"content-length", b"100"),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": b'["0123456', "more_body": True})
            raise RuntimeError("the upstream crashed mid-answer (on purpose)")
        elif path == "/v1/gzip":
            data = gzip.compress(json.dumps({"compressed": True}).encode())
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"content-encoding", b"gzip"),
                        (b"content-length", b"%d" % len(data)),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": data})
        else:
            await _answer(send, 404, {"code": "NOPE", "message": path, "status": 404})


async def _answer(send: Any, status: int, value: Any, extra: list[Any] | None = None) -> None:
    data = json.dumps(value).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(data))]
    await send(
        {"type": "http.response.start", "status": status, "headers": headers + (extra or [])}
    )
    await send({"type": "http.response.body", "body": data})


@contextmanager
def echo_upstream() -> Iterator[tuple[str, Echo]]:
    """(base URL ending in /v1, the app) for an Echo served on 127.0.0.1 in a thread."""
    app = Echo()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}/v1", app
    finally:
        app.release.set()
        server.should_exit = True
        thread.join(10)
        sock.close()


@contextmanager
def silent_upstream() -> Iterator[str]:
    """A port that accepts connections and never answers: a hung upstream."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    finally:
        sock.close()


def refused_upstream() -> str:
    """An address where nothing listens: the connection is refused."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"
