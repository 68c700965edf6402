"""Endpoints over tenants: list them, create one, delete one (see ``mockstore.tenants``)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from mockstore.control.http import error_response, json_object, json_response, state_unavailable
from mockstore.shared.backend import StateUnavailable
from mockstore.tenants import TenantRegistry


class TenantEndpoints:
    def __init__(self, registry: TenantRegistry | None) -> None:
        self.registry = registry

    def _off(self) -> Response:
        return error_response(
            "not_found", "this server has no tenants (a tenant's own control API)", 404
        )

    async def list_tenants(self, request: Request) -> Response:
        if self.registry is None:
            return self._off()
        try:
            await self.registry.sync()  # those made or deleted through other processes too
        except StateUnavailable as exc:
            return state_unavailable(exc)
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
        try:
            tenant = await self.registry.add(body.get("id"))
        except StateUnavailable as exc:
            return state_unavailable(exc)
        return json_response(tenant.to_json(), 201)

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
