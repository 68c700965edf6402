"""``ControlAPI``: the ASGI app under ``/__mockstore``, its token check and its Error answers."""

from __future__ import annotations

import hmac

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from mockstore.control.dashboard import is_public_path
from mockstore.control.http import error_response
from mockstore.control.routes import control_routes
from mockstore.errors import ApiError
from mockstore.keys import parse_authorization
from mockstore.routing import allow_header
from mockstore.state import Runtime
from mockstore.tenants import TenantRegistry
from mockstore.urls import CONTROL_PREFIX

_HTTP_CODES = {404: "not_found", 405: "method_not_allowed"}


async def _refused(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in exc.headers}
    return error_response(exc.code, exc.message, exc.status, headers=headers)


async def _http_error(request: Request, exc: Exception) -> Response:
    # Starlette's own refusals: no route (404), a method the route lacks (405, with Allow).
    assert isinstance(exc, HTTPException)
    code = _HTTP_CODES.get(exc.status_code, "invalid_request")
    message = f"{request.method} {CONTROL_PREFIX}{request.url.path}: {exc.detail}"
    headers = dict(exc.headers or {})
    if "Allow" in headers:
        # Starlette joins a set: sorted, the header is the same on every run.
        headers["Allow"] = allow_header(headers["Allow"].split(", "))
    return error_response(code, message, exc.status_code, headers=headers)


async def _server_error(request: Request, exc: Exception) -> Response:
    # A bug in the control API must still answer with an Error body, not a traceback.
    return error_response("internal_error", f"{type(exc).__name__}: {exc}", 500)


class ControlAPI:
    """The control API for one ``Runtime``, mounted by ``MockstoreApp`` under ``/__mockstore``.

    It needs no API key; with a ``token`` (``--control-token``) every endpoint
    but ``/health`` requires ``Authorization: Bearer <token>``. It is meant for
    test networks only.
    """

    def __init__(
        self,
        runtime: Runtime,
        token: str | None = None,
        tenants: TenantRegistry | None = None,
        routes: list[Route] | None = None,
    ) -> None:
        self.runtime = runtime
        self.token = token
        self.app = Starlette(
            # ``routes``: a narrower table, as ``mockstore record`` serves.
            routes=control_routes(runtime, tenants) if routes is None else routes,
            exception_handlers={
                ApiError: _refused,
                HTTPException: _http_error,
                Exception: _server_error,
            },
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope["path"]
        if self.token is not None and path != "/health" and not is_public_path(path):
            header = None
            for name, value in scope["headers"]:
                if name == b"authorization":
                    header = value
            credentials = parse_authorization(header)
            supplied = credentials.token.encode() if credentials.kind == "bearer" else b""
            if not hmac.compare_digest(supplied, self.token.encode()):
                response = error_response(
                    "unauthorized",
                    "the control API needs its token",
                    401,
                    headers={"www-authenticate": 'Bearer realm="mockstore-control"'},
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)
