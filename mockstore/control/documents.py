"""Endpoints serving the two documents: the OpenAPI description and the scenario schema."""

from __future__ import annotations

import json
from functools import lru_cache

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Scope

from mockstore import schemas
from mockstore.control.http import JSON, json_response
from mockstore.control.openapi import control_document_json
from mockstore.control.operations import STRING, Answer, Operation, described, obj
from mockstore.document import changes_the_document, openapi_json_for
from mockstore.scenario import Scenario, scenario_schema
from mockstore.state import Runtime
from mockstore.urls import CONTROL_PREFIX


def api_url(scope: Scope, base_path: str) -> str:
    """This server's API as the request reached it, e.g. ``http://127.0.0.1:41234/v1``.

    The host and port are the socket's own (ASGI ``server``), not the ``Host``
    header a client may set to anything. A tenant's document names the tenant's API.
    """
    # The control API's root_path ends in /__mockstore; before it is a tenant's root.
    base_path = scope.get("root_path", "").removesuffix(CONTROL_PREFIX) + base_path
    server = scope.get("server")
    if server is None or server[1] is None:
        # No address, or a Unix socket: a URL relative to the document's own
        # location still names the right server.
        return base_path or "/"
    host, port = server
    if ":" in host:
        host = "[" + host.replace("%", "%25") + "]"  # IPv6, with any zone id escaped
    return f"{scope.get('scheme', 'http')}://{host}:{port}{base_path}"


@lru_cache(maxsize=32)
def openapi_json(url: str) -> bytes:
    """The package's OpenAPI document with ``servers`` naming ``url``, encoded once per url."""
    servers = [{"url": url, "description": "This mockstore server"}]
    return json.dumps({**schemas.openapi_document(), "servers": servers}, indent=2).encode()


OPENAPI = obj(
    {"openapi": STRING, "info": {"type": "object"}, "paths": {"type": "object"}},
    description="An OpenAPI 3.1 document",
) | {"additionalProperties": True}


class DocumentEndpoints:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        # The running scenario's own document, for the last (scenario, url) asked.
        self._served: tuple[Scenario, str, bytes] | None = None
        # The control document, for the last url asked (the routes never change).
        self._control: tuple[str, bytes] | None = None

    @described(
        Operation(
            "getApiDocument",
            "The Pet Store API's OpenAPI document, as this mock answers",
            "server",
            {200: Answer("The document; its servers name this server's API", OPENAPI)},
            description="The running scenario's statuses, codes and headers included; "
            "`mockstore openapi` prints it as shipped.",
        )
    )
    async def openapi(self, request: Request) -> Response:
        """The OpenAPI document, as the running scenario's mock answers (``document.py``)."""
        scenario = self.runtime.scenario
        url = api_url(request.scope, scenario.base_path)
        if not changes_the_document(scenario):
            return Response(openapi_json(url), media_type=JSON)
        served = self._served
        if served is None or served[0] is not scenario or served[1] != url:
            served = self._served = (scenario, url, openapi_json_for(scenario, url))
        return Response(served[2], media_type=JSON)

    @described(
        Operation(
            "getScenarioSchema",
            "The scenario format's JSON Schema",
            "server",
            {200: Answer("The JSON Schema (2020-12) of a scenario", {"type": "object"})},
        )
    )
    async def scenario_schema(self, request: Request) -> Response:
        return json_response(scenario_schema())

    @described(
        Operation(
            "getControlDocument",
            "This document: the control API's OpenAPI document",
            "server",
            {200: Answer("The document; its servers name this control API", OPENAPI)},
            description="Written from the route table the server mounts; "
            "`mockstore openapi --control` prints it.",
        )
    )
    async def control_openapi(self, request: Request) -> Response:
        url = api_url(request.scope, CONTROL_PREFIX)
        served = self._control
        if served is None or served[0] != url:
            routes = request.app.router.routes
            document = await run_in_threadpool(control_document_json, routes, url)
            served = self._control = (url, document)
        return Response(served[1], media_type=JSON)
