"""``mockstore record``: a reverse proxy in front of a real deployment that journals every exchange.

Every request under the proxy's base path (``/v1``, the upstream URL's version
segment) is forwarded to the upstream as the client sent it: method, path,
query, headers (less the hop-by-hop ones of RFC 9110 section 7.6.1 and those
``Connection`` names; ``Host`` becomes the upstream's) and body, streamed. The
upstream's answer goes back unchanged, streamed too: status, headers (less the
hop-by-hop ones), body bytes; but absolute URLs to the upstream in ``Location``,
``Content-Location`` and ``Link`` are written on the address the client called, as
a reverse proxy's reverse mapping does (``rebase``), so a client that follows a
redirect or a ``rel="next"`` stays on the recorder. The journal keeps what the
upstream sent. A failure to reach the upstream is answered by
the proxy itself: 502 (refused, reset, TLS) or 504 (timeout), with an Error body;
so is a request body that does not arrive within the body timeout (408).

The proxy runs on the app shell ``mockstore serve`` runs (``RecordApp``), with
the same uvicorn settings and serving limits (``mockstore.server``): heads over
the limit get 431, slow heads 408, and past the connection cap the connection
idle longest is closed, before the proxy sees anything.

Only paths under the base path are forwarded, with their dot segments
resolved first (``forwarding.forwarded_path``): ``/v1/../../admin`` would reach
the upstream's ``/admin``, outside what the recording is of. A path that leaves
the base path, or holds anything a server might decode into a dot segment
(percent-encoded, double-encoded or overlong dots and slashes, backslashes,
``..;``), is answered by the proxy itself (404, journaled as ``not_forwarded``,
never replayed).

Every exchange is journaled with ``Journal.record``, so the control API's
``/requests``, ``/requests.har`` and ``/report`` work during a recording, and
``--out`` writes the HAR on shutdown. A real service's keys are secrets: what
is journaled (and so every HAR, report and log line) carries each key's alias
(``keys.key_alias``) in its place, in headers, bodies and URLs alike: which
values are keys is learnt from where they stand and remembered, or given
(``--keys-file``), and each is aliased wherever it appears
(``mockstore.fidelity.aliases``); the upstream gets the real key, the journal
never does.

Buffers: a body passes through one chunk at a time (uvicorn and httpx apply
back-pressure); the journal keeps at most ``journal.body_bytes`` of each body.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import ssl
import time
import zlib
from collections.abc import Iterable
from typing import Any
from urllib.parse import parse_qsl, quote, unquote_to_bytes

import httpx
from starlette.types import Message, Receive, Scope, Send

from mockstore.app import AppShell
from mockstore.control import ControlAPI
from mockstore.control.documents import DocumentEndpoints
from mockstore.control.journal import JournalEndpoints
from mockstore.control.routes import route
from mockstore.control.state import StateEndpoints
from mockstore.errors import error_body
from mockstore.fidelity.aliases import (
    SECRET_RESPONSE_HEADERS,
    KeyRing,
    Scrubber,
    aliased,
    body_secrets,
    is_credential_name,
    is_secret_header,
    secret_of,
)
from mockstore.fidelity.forwarding import forwarded_path
from mockstore.fidelity.rebase import Base, on_own_address, origin_of
from mockstore.fidelity.source_address import SourceClients
from mockstore.fidelity.upstream import BODY_BYTES, TIMEOUT, Upstream
from mockstore.keys import key_alias
from mockstore.limits import Limits
from mockstore.memory import MemoryBudget
from mockstore.reports.har import HarMeta, to_har
from mockstore.routing import Router
from mockstore.scenario import load_scenario
from mockstore.schemas import operations
from mockstore.state import Runtime
from mockstore.transport import close_connection
from mockstore.version import __version__

access_log = logging.getLogger("mockstore.access")

# RFC 9110 section 7.6.1, and the older Proxy-Connection some clients still send.
HOP_BY_HOP = frozenset(
    {
        b"connection",
        b"proxy-connection",
        b"keep-alive",
        b"proxy-authenticate",
        b"proxy-authorization",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
    }
)
ROUTER = Router(operations().values())
# Credentials headers that hold no API key of their own (a cookie, a scheme's pair).
_NOT_KEYS = frozenset({b"cookie", b"authorization", b"proxy-authorization"})


def _connection_tokens(headers: Any) -> frozenset[bytes]:
    """The header names a ``Connection`` header lists: hop-by-hop too (RFC 9110 7.6.1)."""
    named: set[bytes] = set()
    for name, value in headers:
        if name.lower() == b"connection":
            named.update(t.strip().lower() for t in value.split(b",") if t.strip())
    return frozenset(named)


class _Capped:
    """The first ``limit`` bytes of a body that streams past, for the journal."""

    __slots__ = ("chunks", "limit", "size", "total")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.chunks: list[bytes] = []
        self.size = 0
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.limit - self.size
        if room > 0 and chunk:
            kept = chunk[:room]
            self.chunks.append(kept)
            self.size += len(kept)

    def value(self) -> bytes:
        return b"".join(self.chunks)


def _decoded(body: bytes, encoding: bytes | None, complete: bool) -> bytes:
    """A gzip/deflate body as its content, for the journal (HAR keeps content, not bytes)."""
    if not encoding or not body:
        return body
    kind = encoding.strip().lower()
    if kind not in (b"gzip", b"x-gzip", b"deflate"):
        return body
    try:
        wbits = 16 + zlib.MAX_WBITS if kind != b"deflate" else zlib.MAX_WBITS
        decoder = zlib.decompressobj(wbits)
        return decoder.decompress(body) + (decoder.flush() if complete else b"")
    except zlib.error:
        return body


class _ClientGone(Exception):
    """The client went away while its body was being forwarded."""


class _BodyLate(Exception):
    """The client's body did not arrive within the server's body timeout."""


class RecordingProxy:
    """The ASGI app forwarding every API request to the upstream and journaling it."""

    def __init__(
        self,
        upstream: Upstream,
        runtime: Runtime,
        timeout: float,
        body_timeout: float,
        ring: KeyRing | None = None,
    ) -> None:
        self.upstream = upstream
        self.runtime = runtime
        self.timeout = timeout
        # As long as ``serve`` gives a body (``Limits.body_timeout``): the connection
        # leaves a body's deadline to the app while the app is at work on it.
        self.body_timeout = body_timeout
        self._client: httpx.AsyncClient | None = None
        self._served = 0
        # The keys given to the recorder and those learnt lately, aliased wherever they appear.
        self.ring = ring if ring is not None else KeyRing()
        # Where the upstream's own URLs start: moved to the recorder's address on the way out.
        self._upstream_base = Base(origin_of(upstream.origin) or upstream.origin, upstream.prefix)
        # Each loopback client's own address kept as the source (``source_address``).
        self._sources = SourceClients(httpx.URL(upstream.origin).host, self._make_client)

    def _make_client(self, **transport: Any) -> httpx.AsyncClient:
        # No cookie jar (a proxy must not remember one client's cookies for the
        # next) and no default headers: requests are built as sent.
        return httpx.AsyncClient(
            timeout=httpx.Timeout(self.timeout),
            limits=httpx.Limits(max_connections=100, max_keepalive_connections=20),
            follow_redirects=False,
            trust_env=False,
            **transport,
        )

    @property
    def client(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = self._make_client()
        return self._client

    async def aclose(self) -> None:
        await self._sources.aclose()
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        now = time.time()  # a recording is on the wall clock: its times are the upstream's
        journal = self.runtime.journal
        cap = journal.body_bytes
        scrub = Scrubber(self.ring)
        method: str = scope["method"]
        raw_headers: list[tuple[bytes, bytes]] = scope["headers"]
        hop = HOP_BY_HOP | _connection_tokens(raw_headers)
        forward: list[tuple[bytes, bytes]] = []
        alias: str | None = None
        streamed_body = False
        secret_headers = set()
        for name, value in raw_headers:
            if is_secret_header(name):
                secret_headers.add(name)
                scrub.learn(name, value)
                # The key the journal names: a bearer token, else the first key header.
                bearer = name == b"authorization" and value[:7].lower() == b"bearer "
                if bearer or (alias is None and name not in _NOT_KEYS):
                    alias = key_alias(secret_of(name, value).decode("latin-1"))
        for name, value in parse_qsl(scope["query_string"].decode("latin-1")):
            if is_credential_name(name):
                scrub.add(value.encode("latin-1").strip())
        journaled = [
            (name, aliased(name, value) if name in secret_headers else scrub(value))
            for name, value in raw_headers
        ]
        for name, value in raw_headers:
            if name in hop or name == b"host":
                streamed_body = streamed_body or (
                    name == b"transfer-encoding" and b"chunked" in value.lower()
                )
                continue
            streamed_body = streamed_body or name == b"content-length"
            forward.append((name, value))

        raw_path = forwarded_path(
            scope.get("raw_path") or quote(scope["path"]).encode(), self.upstream.base_path
        )
        # What is journaled and logged: the path as resolved (as sent when refused).
        shown = unquote_to_bytes(raw_path) if raw_path is not None else scope["path"].encode()
        path = scrub(shown).decode("utf-8", "replace")
        query = scrub(scope["query_string"])
        if raw_path is None:
            await self._not_forwarded(scope, send, now, started, journaled, path, query, alias)
            return
        request_copy = _Capped(cap)
        content = self._request_body(receive, request_copy) if streamed_body else None
        target = self.upstream.prefix.encode() + raw_path
        if scope["query_string"]:
            target += b"?" + scope["query_string"]
        url = httpx.URL(self.upstream.origin).copy_with(raw_path=target)
        request = httpx.Request(method, url, headers=forward, content=content)

        status, headers_out, outcome = 0, [], "response"
        response_copy = _Capped(cap)
        request_id = ""
        encoding: bytes | None = None
        peer = scope["client"][0] if scope.get("client") else None
        bound = self._sources.take(peer)  # the client's own address, where it is kept
        try:
            try:
                response = await (bound or self.client).send(request, stream=True)
            except (httpx.TransportError, _ClientGone, _BodyLate) as exc:
                if isinstance(exc, _ClientGone):
                    outcome = "client_disconnected"  # nothing to answer, and no one to tell
                    return
                status, outcome, answer = self._failure(exc)
                request_id = self._next_id()
                headers_out = [
                    (b"content-type", b"application/json"),
                    (b"content-length", b"%d" % len(answer)),
                    (b"x-request-id", request_id.encode()),
                ]
                if isinstance(exc, _BodyLate):
                    headers_out.append((b"connection", b"close"))
                await send(
                    {"type": "http.response.start", "status": status, "headers": headers_out}
                )
                await send({"type": "http.response.body", "body": answer})
                response_copy.add(answer)
                return
            try:
                status = response.status_code
                back = HOP_BY_HOP | _connection_tokens(response.headers.raw)
                headers_out = [
                    (name.lower(), value)
                    for name, value in response.headers.raw
                    if name.lower() not in back
                ]
                for name, value in headers_out:
                    if name == b"x-request-id" and not request_id:
                        request_id = value.decode("latin-1")
                    elif name == b"content-encoding":
                        encoding = value
                request_id = request_id or self._next_id()
                await send(
                    {
                        "type": "http.response.start",
                        "status": status,
                        "headers": on_own_address(scope, headers_out, self._upstream_base),
                    }
                )
                async for chunk in response.aiter_raw():
                    response_copy.add(chunk)
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
                await send({"type": "http.response.body", "body": b""})
            except httpx.TransportError:
                # Headers are out: the client sees the connection end early, as it did here.
                outcome = "upstream_broke"
                close_connection(send)
            finally:
                await response.aclose()
        finally:
            self._sources.give_back(peer)
            # A key the upstream refused counted for nothing: journaled as no key.
            key = alias if alias is not None and status != 401 else None
            sent = request_copy.value()
            answered = _decoded(response_copy.value(), encoding, outcome == "response")
            # Keys only the body names: aliased there, and anywhere else they appear.
            for secret in body_secrets(sent):
                scrub.add(secret)
            self._journal(
                scope,
                now,
                started,
                request_id or self._next_id(),
                [(n, v if n in secret_headers else scrub(v)) for n, v in journaled],
                scrub(sent),
                key,
                status,
                [
                    (n, aliased(n, v) if n in SECRET_RESPONSE_HEADERS else scrub(v))
                    for n, v in headers_out
                ],
                scrub(answered),
                outcome,
                scrub(query),
                scrub(path.encode("utf-8", "surrogateescape")).decode("utf-8", "replace"),
            )

    async def _not_forwarded(
        self,
        scope: Scope,
        send: Send,
        now: float,
        started: float,
        journaled: list[tuple[bytes, bytes]],
        path: str,
        query: bytes,
        alias: str | None,
    ) -> None:
        """Answer a path outside the base path (404) without forwarding it; journal it so."""
        base = self.upstream.base_path
        answer = error_body(
            "not_found",
            f"not forwarded: the recorder forwards only paths under {base} (dot segments "
            f"resolved; no percent-encoded dot, slash or backslash); got {path[:200]}",
        )
        request_id = self._next_id()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", b"%d" % len(answer)),
            (b"x-request-id", request_id.encode()),
            (b"connection", b"close"),  # its body, if any, is not read
        ]
        await send({"type": "http.response.start", "status": 404, "headers": headers})
        await send({"type": "http.response.body", "body": answer})
        self._journal(
            scope, now, started, request_id, journaled, b"", alias, 404, headers, answer,
            "not_forwarded", query, path,
        )  # fmt: skip

    async def _request_body(self, receive: Receive, copy: _Capped) -> Any:
        """The client's body, one chunk at a time, as httpx uploads it, within the deadline."""
        deadline = asyncio.get_running_loop().time() + self.body_timeout
        while True:
            try:
                async with asyncio.timeout_at(deadline):
                    message: Message = await receive()
            except TimeoutError:
                raise _BodyLate from None
            if message["type"] == "http.disconnect":
                raise _ClientGone
            chunk = message.get("body", b"")
            if chunk:
                copy.add(chunk)
                yield chunk
            if not message.get("more_body", False):
                return

    def _next_id(self) -> str:
        self._served += 1
        return f"rec-{self._served:06d}"

    def _failure(self, exc: Exception) -> tuple[int, str, bytes]:
        """The proxy's own answer when the upstream could not be reached (or the body was late)."""
        if isinstance(exc, _BodyLate):
            message = f"the request body did not arrive within {self.body_timeout:g} s"
            return 408, "request_timeout", error_body("request_timeout", message)
        where = self.upstream.shown
        if isinstance(exc, httpx.TimeoutException):
            message = f"the upstream {where} did not answer within {self.timeout:g} s"
            return 504, "upstream_timeout", error_body("upstream_timeout", message)
        cause: BaseException | None = exc
        while cause is not None and not isinstance(cause, ssl.SSLError):
            cause = cause.__cause__ or cause.__context__
        if cause is not None:
            message = f"TLS with the upstream {where} failed: {cause}"
            return 502, "upstream_tls_error", error_body("upstream_unreachable", message)
        if isinstance(exc, httpx.ConnectError):
            message = f"the upstream {where} refused the connection ({exc or 'no answer'})"
            return 502, "upstream_refused", error_body("upstream_unreachable", message)
        message = f"the upstream {where} failed: {type(exc).__name__}: {exc}"
        return 502, "upstream_error", error_body("upstream_unreachable", message)

    def _journal(
        self,
        scope: Scope,
        now: float,
        started: float,
        request_id: str,
        request_headers: list[tuple[bytes, bytes]],
        request_body: bytes,
        key: str | None,
        status: int,
        response_headers: list[tuple[bytes, bytes]],
        response_body: bytes,
        outcome: str,
        query: bytes,
        path: str,
    ) -> None:
        base = self.upstream.base_path
        operation = None
        if path.startswith(base + "/"):
            resolved = ROUTER.resolve(scope["method"], path[len(base) :]).operation
            operation = resolved.operation_id if resolved is not None else None
        latency_ms = (time.perf_counter() - started) * 1000
        client = scope.get("client")
        journal = self.runtime.journal
        if journal.enabled:
            # Entry's fields in order (journal.record takes them by position).
            journal.record(
                request_id,
                now,
                now - self.runtime.state.clock.start,  # elapsed
                scope["method"],
                path,
                query,
                tuple(request_headers),
                request_body,
                client[0] if client else "unknown",
                operation,
                key,
                None,  # plan: a proxy cannot know the upstream's
                status,
                tuple(response_headers),
                response_body,
                latency_ms,
                None,  # rule
                outcome,
                now,  # wall: a recording's clock is the wall clock
            )
        if access_log.isEnabledFor(logging.INFO):
            access_log.info(
                "%s %s %s",
                scope["method"],
                path,
                status,
                extra={
                    "method": scope["method"],
                    "path": path,
                    "status": status,
                    "plan": "-",
                    "latency_ms": round(latency_ms, 3),
                    "rule": None,
                    "operation": operation,
                    "request_id": request_id,
                    "outcome": outcome,
                },
            )


class RecordApp(AppShell):
    """The recording proxy on the app shell ``serve`` runs, with its own control routes.

    The same path checks, control API guard and token, serving limits and
    uvicorn settings as ``mockstore serve`` (``mockstore.server``); under
    ``/__mockstore`` only the journal's endpoints (``control_routes``).
    """

    def __init__(
        self,
        upstream: Upstream,
        *,
        timeout: float = TIMEOUT,
        journal_size: int | None = None,
        body_bytes: int = BODY_BYTES,
        control_token: str | None = None,
        limits: Limits | None = None,
        allowed_hosts: Iterable[str] = (),
        keys: Iterable[str] = (),
    ) -> None:
        """``keys``: keys the clients send, aliased wherever they appear (``--keys-file``)."""
        self.upstream = upstream
        limits = limits or Limits()
        # The recording's journal: a scenario's (its size unless told), keeping more of
        # each body.
        journal: dict[str, int] = {"body_bytes": body_bytes}
        if journal_size is not None:
            journal["size"] = journal_size
        scenario = load_scenario(
            "version: 1\nname: record\n"
            f"description: {json.dumps('recording ' + upstream.shown)}\n"
            f"base_path: {upstream.base_path}\n"
            f"journal: {json.dumps(journal)}\n",
            "<record>",
        )
        # One memory budget, as ``serve``'s: the journal and the connections draw on it.
        budget = MemoryBudget(limits.memory_budget)
        self.runtime = Runtime(scenario, account=budget.open_share("server", "the recording"))
        self.proxy = RecordingProxy(
            upstream, self.runtime, timeout, limits.body_timeout, KeyRing(keys)
        )
        control = ControlAPI(
            self.runtime,
            control_token,
            routes=control_routes(self.runtime),
            limits=limits,
            allowed_hosts=allowed_hosts,
        )
        super().__init__(self.proxy, control, limits=limits, budget=budget)
        self.on_shutdown(self.proxy.aclose)
        # An exchange in flight waits for the upstream up to ``timeout``: let it finish.
        self.graceful_shutdown = max(AppShell.graceful_shutdown, timeout)

    def har(self) -> dict[str, Any]:
        """The recording so far as HAR 1.2, with what drift needs to know about it."""
        journal = self.runtime.journal
        meta = HarMeta(
            creator_version=__version__,
            scenario="record",
            base_path=self.upstream.base_path,
            clock_mode="running",
            dropped=journal.dropped,
        )
        document = to_har(journal.select(), meta)
        extra = document["log"]["_mockstore"]
        extra["recorded_from"] = self.upstream.shown
        extra["keys"] = "aliased"  # every key is keys.key_alias(key)
        # Clients were sent the upstream's own URLs on the recorder's address; the entries
        # keep them as the upstream wrote them, on recorded_from.
        extra["urls"] = "as the upstream sent them"
        document["log"]["comment"] = f"mockstore record of {self.upstream.shown} (wall clock)"
        return document


def control_routes(runtime: Runtime) -> list[Any]:
    """The control API of a recording: health, the OpenAPI document, the journal."""
    state = StateEndpoints(runtime)
    documents = DocumentEndpoints(runtime)
    journal = JournalEndpoints(runtime)
    return [
        route("/health", GET=state.health),
        route("/openapi.json", GET=documents.openapi),
        route("/requests", GET=journal.requests, DELETE=journal.clear),
        route("/requests.har", GET=journal.har),
        route("/verify", POST=journal.verify),
        route("/report", GET=journal.report),
    ]


def write_har(app: RecordApp, path: str) -> int:
    """Write the recording to ``path`` (atomically); the number of exchanges."""
    document = app.har()
    temporary = f"{path}.partial"
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump(document, handle, indent=1)
    os.replace(temporary, path)
    return len(document["log"]["entries"])


__all__ = ["RecordApp", "RecordingProxy", "control_routes", "write_har"]
