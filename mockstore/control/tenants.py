"""Endpoints over tenants: list them, create one, delete one (see ``mockstore.tenants``)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from mockstore.control.http import error_response, json_object, json_response
from mockstore.tenants import TenantRegistry


class TenantEndpoints:
    def __init__(self, registry: TenantRegistry | None, shared: bool = False) -> None:
        self.registry = registry
        self.shared = shared  # the mock's state is in Redis (serve --state): no tenants

    def _off(self) -> Response:
        if self.shared:
            return error_response(
                "not_found",
                "this server keeps its state in Redis (--state), where tenants are not "
                "kept yet: run a mockstore per isolated mock instead",
                404,
            )
        return error_response(
            "not_found", "this server has no tenants (a tenant's own control API)", 404
        )

    async def list_tenants(self, request: Request) -> Response:
        if self.registry is None:
            return self._off()
        return json_response([tenant.to_json() for tenant in self.registry])

    async def create(self, request: Request) -> Response:
        if self.registry is None:
            return self._off()
        body = await json_object(request)
        unknown = sorted(set(body) - {"id"})
        if unknown:
            return error_response(
                "invalid_request", f"unknown field(s): {', '.join(unknown)} (known: id)", 400
            )
        tenant = self.registry.create(body.get("id"))
        return json_response(tenant.to_json(), 201)

    async def delete(self, request: Request) -> Response:
        if self.registry is None:
            return self._off()
        tenant_id = request.path_params["tenant"]
        if self.registry.delete(tenant_id) is None:
            return error_response("not_found", f"no tenant {tenant_id!r} on this server", 404)
        return Response(status_code=204)
