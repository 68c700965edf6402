"""``ControlAPI``: the ASGI app under ``/__mockstore``, its checks and its Error answers.

Before any endpoint runs: the token (``--control-token``), the guard against
web pages (``guard.py``: the ``Host`` header, cross-site requests), and a bound
on the request body, in bytes and in time, so that no upload can hold memory
or a worker for ever (once the body is in, a response that streams, the
dashboard's events, waits for the client to leave without a deadline).
Under ``/__mockstore/tenants/<id>/`` the ``Host`` check and the token come
before the tenant is even looked up (``tenant_refusal``), so tenant ids cannot
be probed. Clients' raw keys (``requests.har?mask=false``) go only to a token
holder or a caller on this machine.

The control API is mounted lazily: its Starlette app, its routes and every
module behind them (the journal's reports, HAR, the dashboard) are imported and
built on its first call, not when a server starts, so ``mockstore serve``
answers its first API request without them (issue 29). The first build imports
in a worker thread, so the event loop keeps serving meanwhile.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import sys
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl

from starlette.types import Message, Receive, Scope, Send

from mockstore.control.guard import ControlGuard, is_public_path, is_remote_client
from mockstore.control.scope import HOLDS, RAW_KEYS
from mockstore.errors import ApiError
from mockstore.keys import parse_authorization
from mockstore.limits import Limits
from mockstore.memory import budget_of
from mockstore.routing import allow_header
from mockstore.shared.deadline import StateUnavailable, within
from mockstore.state import Runtime
from mockstore.tenants import TenantRegistry
from mockstore.urls import CONTROL_PREFIX, TENANTS_PREFIX

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

log = logging.getLogger("mockstore.control")
# The modules a first build imports: once they are, building is quick enough for the loop.
_ROUTES_MODULE = "mockstore.control.routes"
_BUILDING = threading.Lock()
_CLOSE = ((b"connection", b"close"),)

_HTTP_CODES = {404: "not_found", 405: "method_not_allowed"}


async def _refused(request: Request, exc: Exception) -> Response:
    from mockstore.control.http import error_response

    assert isinstance(exc, ApiError)
    headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in exc.headers}
    return error_response(exc.code, exc.message, exc.status, headers=headers)


async def _http_error(request: Request, exc: Exception) -> Response:
    # Starlette's own refusals: no route (404), a method the route lacks (405, with Allow).
    from starlette.exceptions import HTTPException

    from mockstore.control.http import error_response

    assert isinstance(exc, HTTPException)
    code = _HTTP_CODES.get(exc.status_code, "invalid_request")
    message = f"{request.method} {CONTROL_PREFIX}{request.url.path}: {exc.detail}"
    headers = dict(exc.headers or {})
    if "Allow" in headers:
        # Starlette joins a set: sorted, the header is the same on every run.
        headers["Allow"] = allow_header(headers["Allow"].split(", "))
    return error_response(code, message, exc.status_code, headers=headers)


async def _server_error(request: Request, exc: Exception) -> Response:
    # A bug in the control API must still answer with an Error body, not a
    # traceback; the traceback goes to the log (Starlette re-raises the
    # exception once this answer is sent, and the server logs it with its trace).
    from mockstore.control.http import error_response

    message = (
        f"{request.method} {CONTROL_PREFIX}{request.url.path} failed unexpectedly "
        f"({type(exc).__name__}); the server's log has the traceback"
    )
    return error_response("internal_error", message, 500)


async def _client_gone(request: Request, exc: Exception) -> Response:
    # The client left before its body arrived: nothing to answer, nothing changed.
    from starlette.responses import Response

    return Response(status_code=400)


def bounded_receive(receive: Receive, limit: int, seconds: float) -> Receive:
    """``receive``, refusing a body over ``limit`` bytes (413) or late by ``seconds`` (408)."""
    size = 0
    deadline: float | None = None
    complete = False

    async def bounded() -> Message:
        nonlocal size, deadline, complete
        if complete:
            # The body is in: what is left to receive is the client leaving,
            # which a stream (the dashboard's events) waits for as long as it lasts.
            return await receive()
        if deadline is None:
            deadline = asyncio.get_running_loop().time() + seconds
        try:
            async with asyncio.timeout_at(deadline):
                message = await receive()
        except TimeoutError:
            raise ApiError(
                "request_timeout",
                f"the request body did not arrive within {seconds:g} s",
                headers=_CLOSE,
            ) from None
        if message["type"] == "http.request":
            size += len(message.get("body", b""))
            if size > limit:
                raise _too_large(limit)
            complete = not message.get("more_body", False)
        return message

    return bounded


# The control calls that read the journal (or answer with its position: a reset).
_REPORTS = frozenset({"/report", "/report.html"})
_JOURNAL_READS = frozenset(
    {"/requests", "/requests.har", "/verify", "/events", "/reset", *_REPORTS}
)


def _too_large(limit: int) -> ApiError:
    return ApiError(
        "payload_too_large", f"the request body is over the limit of {limit} bytes", headers=_CLOSE
    )


class ControlAPI:
    """The control API for one ``Runtime``, mounted by ``MockstoreApp`` under ``/__mockstore``.

    It needs no API key; with a ``token`` (``--control-token``) every endpoint
    but ``/health`` requires ``Authorization: Bearer <token>``; without one,
    ``ControlGuard`` keeps web pages out. It is meant for test networks only.
    """

    def __init__(
        self,
        runtime: Runtime,
        token: str | None = None,
        tenants: TenantRegistry | None = None,
        routes: list[Route] | None = None,
        *,
        limits: Limits | None = None,
        allowed_hosts: Iterable[str] = (),
    ) -> None:
        self.runtime = runtime
        self.tenants = tenants
        self.token = token
        self.limits = limits or Limits()
        self.guard = ControlGuard(allowed_hosts)
        # ``routes``: a narrower table, as ``mockstore record`` serves.
        self._routes = routes
        self._app: Starlette | None = None
        # ``POST /reset`` of the full table, answered without Starlette's routing (set
        # when the table is built): a test suite resets before every test (issue 29).
        self._reset: Any = None

    @property
    def app(self) -> Starlette:
        """The Starlette app of the routes, built (and its modules imported) on first use."""
        app = self._app
        if app is None:
            with _BUILDING:
                app = self._app
                if app is None:
                    app = self._app = self._build()
        return app

    def _build(self) -> Starlette:
        from starlette.applications import Starlette
        from starlette.exceptions import HTTPException
        from starlette.requests import ClientDisconnect

        routes = self._routes
        if routes is None:
            from mockstore.control.routes import control_routes
            from mockstore.control.state import StateEndpoints

            routes = control_routes(self.runtime, self.tenants)
            self._reset = StateEndpoints(self.runtime).reset  # the route's own endpoint
        self._routes = None
        return Starlette(
            routes=routes,
            exception_handlers={
                ApiError: _refused,
                HTTPException: _http_error,
                ClientDisconnect: _client_gone,
                Exception: _server_error,
            },
        )

    async def _built(self) -> Starlette:
        """``app``; a first build that imports the control modules does it off the loop."""
        app = self._app
        if app is not None:
            return app
        if _ROUTES_MODULE in sys.modules:
            return self.app
        return await asyncio.to_thread(lambda: self.app)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope["path"]
        limit = self.limits.max_control_body_bytes
        try:
            if self.token is None:
                # With a token, the token is the guard: a page can neither know
                # it nor send it cross-site without a preflight.
                self.guard.check(scope, path)
            for name, value in scope["headers"]:
                if name == b"content-length" and (len(value) > 19 or int(value or 0) > limit):
                    raise _too_large(limit)
        except ApiError as refusal:
            await _answer(refusal, scope, receive, send)
            return
        except ValueError:
            pass  # a Content-Length that is not a number: the server refuses it first
        receive = bounded_receive(receive, limit, self.limits.body_timeout)
        scope[RAW_KEYS] = self.token is not None or not is_remote_client(scope)
        budget = budget_of(self.runtime.account)
        if budget is not None:
            scope[HOLDS] = budget.connections  # what a large answer is charged while it is read
        if self.token is not None and path != "/health" and not is_public_path(path):
            if not self._has_token(scope):
                await _needs_token()(scope, receive, send)
                return
        elif path == "/requests.har":
            refusal = _raw_keys_refusal(scope)
            if refusal is not None:
                await _answer(refusal, scope, receive, send)
                return
        app = await self._built()
        shared = self.runtime.shared
        if shared is None:
            if path == "/reset" and scope["method"] == "POST" and self._reset is not None:
                await self._reset_now(scope, receive, send)
                return
            await app(scope, receive, send)
            return
        # With a shared state the whole call waits for Redis at most CONTROL_SECONDS.
        with within():
            # What another process changed (the clock, keys, the scenario) is read
            # before this answer; out of reach, each endpoint says so itself.
            try:
                await shared.refresh()
            except StateUnavailable:
                pass
            else:
                reads = path in _JOURNAL_READS or path.startswith("/requests/")
                if reads and scope["method"] in ("GET", "POST"):
                    await self._barrier(path)
            await app(scope, receive, send)

    async def _reset_now(self, scope: Scope, receive: Receive, send: Send) -> None:
        """``POST /reset`` by its endpoint, as the route answers it, without the router.

        Starlette's routing, its ``Request`` and its middleware were most of a reset's
        own cost; the endpoint reads nothing of the request, and an error is answered
        as ``_server_error`` answers it, then raised for the log, as Starlette does.
        ``tests/test_reset_fast.py`` holds the two answers equal, byte for byte.
        """
        try:
            response = await self._reset(None)
        except Exception as exc:
            from mockstore.control.http import error_response

            message = (
                f"POST {CONTROL_PREFIX}/reset failed unexpectedly "
                f"({type(exc).__name__}); the server's log has the traceback"
            )
            await error_response("internal_error", message, 500)(scope, receive, send)
            raise
        await response(scope, receive, send)

    async def _barrier(self, path: str) -> None:
        """Read your writes: the journal this call reads holds every answer any process
        gave before it (a server's report: its tenants' journals too)."""
        journals = [self.runtime.shared.journal]
        if path in _REPORTS and self.tenants is not None:
            journals += [tenant.app.runtime.shared.journal for tenant in self.tenants]
        done = await asyncio.gather(
            *(journal.barrier() for journal in journals if journal is not None),
            return_exceptions=True,
        )
        for outcome in done:
            if isinstance(outcome, Exception) and not isinstance(outcome, StateUnavailable):
                raise outcome
            # Out of reach: the journal as this process last read it.

    def close(self) -> None:
        """Unlink the routes from this API's runtime (its tenant is deleted).

        Starlette's ``Router`` is a reference cycle of its own (its
        ``middleware_stack``, ``default`` and lifespan refer back to it), and so
        is its ``ExceptionMiddleware`` (its handlers are its own bound methods):
        whatever the routes reach would wait for the cyclic collector, a deleted
        tenant's journal and store with it. Emptying the routes and clearing
        those references leaves nothing for the collector, and the tenant is
        freed the moment its last request ends.
        """
        self._routes = None
        if self._app is None:
            return  # never called: nothing was built
        router = self._app.router
        router.routes = []
        router.middleware_stack = None  # type: ignore[assignment]
        router.default = None  # type: ignore[assignment]
        router.lifespan_context = None  # type: ignore[assignment]
        layer: object = self._app.middleware_stack
        while layer is not None and layer is not router:
            handlers = getattr(layer, "_exception_handlers", None)
            if isinstance(handlers, dict):
                handlers.clear()
            layer = getattr(layer, "app", None)
        self._app.middleware_stack = None

    def _has_token(self, scope: Scope) -> bool:
        assert self.token is not None
        header = None
        for name, value in scope["headers"]:
            if name == b"authorization":
                header = value
        credentials = parse_authorization(header)
        supplied = credentials.token.encode() if credentials.kind == "bearer" else b""
        return hmac.compare_digest(supplied, self.token.encode())

    def tenant_refusal(self, scope: Scope, path: str) -> Response | None:
        """The answer refusing a request under ``/__mockstore/tenants/<id>/``, before any lookup.

        The ``Host`` check applies to every such path; the token (when the
        server has one) to a tenant's control API, its ``/health`` included.
        A tenant's Pet Store API needs no token (its callers send their API key
        in ``Authorization``), so it can tell an unknown tenant from a known
        one; ids a server generates are not guessable for that reason.
        """
        inner = path[len(TENANTS_PREFIX) :].partition("/")[2]
        try:
            self.guard.check_host(scope)
        except ApiError as refusal:
            return _error(refusal)
        controls = inner == "__mockstore" or inner.startswith("__mockstore/")
        if self.token is not None and controls and not self._has_token(scope):
            return _needs_token()
        return None


async def _answer(refusal: ApiError, scope: Scope, receive: Receive, send: Send) -> None:
    await _error(refusal)(scope, receive, send)


def _error(refusal: ApiError) -> Response:
    from mockstore.control.http import error_response

    headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in refusal.headers}
    return error_response(refusal.code, refusal.message, refusal.status, headers=headers)


def _needs_token() -> Response:
    from mockstore.control.http import error_response

    return error_response(
        "unauthorized",
        "the control API needs its token",
        401,
        headers={"www-authenticate": 'Bearer realm="mockstore-control"'},
    )


def _raw_keys_refusal(scope: Scope) -> ApiError | None:
    """Why a HAR with the clients' raw keys is refused to this caller (no token), if it is.

    On a server without a token, only a caller on this machine gets them:
    anyone else on the network would otherwise collect every key sent.
    """
    query = scope.get("query_string", b"").decode("latin-1")
    raw = any(
        name == "mask" and value.lower() in ("0", "false", "no", "off")
        for name, value in parse_qsl(query, keep_blank_values=True)
    )
    if not raw or not is_remote_client(scope):
        return None
    return ApiError(
        "forbidden",
        "a HAR with the clients' raw keys (mask=false) is only for callers on this machine "
        "or holders of the control token (--control-token); ask for it without mask=false",
        status=403,
    )
