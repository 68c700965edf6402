"""The control API's route table: every path under ``/__mockstore``, its methods, its endpoint.

Read ``control_routes`` top to bottom to find any control endpoint.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from mockstore.control.clock import ClockEndpoints
from mockstore.control.dashboard import DashboardEndpoints
from mockstore.control.documents import DocumentEndpoints
from mockstore.control.journal import JournalEndpoints
from mockstore.control.keys import KeyEndpoints
from mockstore.control.operations import ControlRoute, Endpoint
from mockstore.control.scenario import ScenarioEndpoints
from mockstore.control.state import StateEndpoints
from mockstore.control.tenants import TenantEndpoints
from mockstore.state import Runtime
from mockstore.tenants import TenantRegistry


def route(path: str, **endpoints: Endpoint) -> Route:
    """One Route for ``path``, with an endpoint per method: ``route("/clock", GET=..., POST=...)``.

    Starlette answers a method a path lacks with a 405 whose ``Allow`` names the
    methods of the one Route that matched; a path split over several Routes
    would leave some out. So each path gets exactly one Route, which keeps each
    method's endpoint (``ControlRoute``) for the control API's OpenAPI document.
    """
    if len(endpoints) == 1:
        [endpoint] = endpoints.values()
        return ControlRoute(path, endpoint, endpoints)

    async def by_method(request: Request) -> Response:
        # Starlette allows HEAD wherever GET is; the GET endpoint answers it.
        method = "GET" if request.method == "HEAD" else request.method
        return await endpoints[method](request)

    return ControlRoute(path, by_method, endpoints)


def control_routes(runtime: Runtime, tenants: TenantRegistry | None = None) -> list[Route]:
    """The whole control API, relative to ``/__mockstore``, bound to ``runtime``."""
    state = StateEndpoints(runtime)
    documents = DocumentEndpoints(runtime)
    scenario = ScenarioEndpoints(runtime)
    clock = ClockEndpoints(runtime)
    keys = KeyEndpoints(runtime)
    journal = JournalEndpoints(runtime, tenants)
    dashboard = DashboardEndpoints(runtime, tenants)
    tenant = TenantEndpoints(tenants)
    return [
        route("/health", GET=state.health),
        route("/memory", GET=state.memory),
        route("/openapi.json", GET=documents.openapi),
        route("/schema", GET=documents.scenario_schema),
        route("/control.openapi.json", GET=documents.control_openapi),
        route("/scenario", GET=scenario.show, PUT=scenario.swap),
        route("/reset", POST=state.reset),
        route("/clock", GET=clock.show, POST=clock.move),
        route("/keys", GET=keys.list_keys, POST=keys.issue),
        route("/keys/{key:path}", DELETE=keys.revoke),
        route("/bans/{key:path}", DELETE=keys.lift_ban),
        route("/pets", GET=state.pets),
        route("/requests", GET=journal.requests, DELETE=journal.clear),
        route("/requests.har", GET=journal.har),
        route("/verify", POST=journal.verify),
        route("/report", GET=journal.report),
        # The dashboard: its page (no token needed: see application.py) and what it reads.
        route("/", GET=dashboard.root),
        route("/ui", GET=dashboard.page),
        # Starlette's own trailing-slash redirect would drop the /__mockstore prefix.
        route("/ui/", GET=dashboard.ui_folder),
        route("/ui/{name}", GET=dashboard.asset),
        route("/events", GET=dashboard.events),
        route("/scenarios", GET=dashboard.list_scenarios),
        route("/scenarios/{name}", GET=dashboard.scenario_source),
        route("/requests/{seq:int}", GET=dashboard.one_request),
        route("/report.html", GET=dashboard.html_report),
        route("/tenants", GET=tenant.list_tenants, POST=tenant.create),
        route("/tenants/{tenant}", DELETE=tenant.delete),
    ]
