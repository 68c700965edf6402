"""Endpoints serving the two documents: the OpenAPI description and the scenario schema."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from mockstore import schemas
from mockstore.control.http import JSON, json_response
from mockstore.scenario import scenario_schema
from mockstore.state import Runtime


class DocumentEndpoints:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    async def openapi(self, request: Request) -> Response:
        return Response(schemas.openapi_json(), media_type=JSON)

    async def scenario_schema(self, request: Request) -> Response:
        return json_response(scenario_schema())
