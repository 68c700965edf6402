"""Endpoints over tenants: list them, create one, delete one (see ``mockstore.tenants``)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from mockstore.control.http import error_response, json_object, json_response, state_unavailable
from mockstore.control.operations import (
    STRING,
    Answer,
    Body,
    Example,
    Operation,
    Schema,
    array,
    described,
    doc,
    nullable,
    obj,
)
from mockstore.shared.backend import StateUnavailable
from mockstore.tenants import TenantRegistry
from mockstore.urls import TENANT_ID

TENANT = Schema(
    "Tenant",
    obj(
        {
            "id": STRING,
            "path": doc(STRING, "Its root on this server: /__mockstore/tenants/<id>"),
            "scenario": doc(STRING, "Its running scenario's name"),
        },
        description="An isolated mock inside this server",
    ),
)
CREATE = Body(
    "The tenant's id, or none for a generated one",
    {
        "application/json": obj(
            {
                "id": doc(
                    nullable({"type": "string", "pattern": f"^{TENANT_ID.pattern}$"}),
                    "1-64 letters, digits, '.', '_' or '-'; absent or null: generated",
                )
            },
            optional=("id",),
        )
        | {"additionalProperties": False}
    },
    examples=(Example("named", "A tenant for pytest-xdist worker gw0", {"id": "gw0"}),),
)
# A tenant's own control API has no tenants.
NO_TENANTS = ("not_found",)


class TenantEndpoints:
    def __init__(self, registry: TenantRegistry | None) -> None:
        self.registry = registry

    def _off(self) -> Response:
        return error_response(
            "not_found", "this server has no tenants (a tenant's own control API)", 404
        )

    @described(
        Operation(
            "listTenants",
            "The server's tenants",
            "tenants",
            {200: Answer("The tenants", array(TENANT))},
            errors={404: NO_TENANTS, 503: ("state_unavailable",)},
        )
    )
    async def list_tenants(self, request: Request) -> Response:
        if self.registry is None:
            return self._off()
        try:
            listed = await self.registry.listed()  # those made or deleted elsewhere too
        except StateUnavailable as exc:
            return state_unavailable(exc)
        return json_response(listed)

    @described(
        Operation(
            "createTenant",
            "Make a tenant: a mock of its own, from the running scenario",
            "tenants",
            {201: Answer("The tenant", TENANT)},
            errors={
                400: ("malformed_json", "invalid_request"),
                404: NO_TENANTS,
                409: ("tenant_exists",),
                503: ("state_unavailable",),
                507: ("too_many_tenants", "memory_budget"),
            },
            body=CREATE,
        )
    )
    async def create(self, request: Request) -> Response:
        if self.registry is None:
            return self._off()
        body = await json_object(request)
        unknown = sorted(set(body) - {"id"})
        if unknown:
            return error_response(
                "invalid_request", f"unknown field(s): {', '.join(unknown)} (known: id)", 400
            )
        try:
            tenant = await self.registry.add(body.get("id"))
        except StateUnavailable as exc:
            return state_unavailable(exc)
        return json_response(tenant.to_json(), 201)

    @described(
        Operation(
            "deleteTenant",
            "Delete a tenant and all it holds but its journal (kept for the report)",
            "tenants",
            {204: Answer("Deleted")},
            errors={404: ("not_found",), 503: ("state_unavailable",)},
        )
    )
    async def delete(self, request: Request) -> Response:
        if self.registry is None:
            return self._off()
        tenant_id = request.path_params["tenant"]
        try:
            removed = await self.registry.remove(tenant_id)
        except StateUnavailable as exc:
            return state_unavailable(exc)
        if not removed:
            return error_response("not_found", f"no tenant {tenant_id!r} on this server", 404)
        return Response(status_code=204)
