"""Endpoints over the scenario: show the running one, swap in another."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from mockstore.control.http import error_response, json_response
from mockstore.scenario import ScenarioError, load_scenario
from mockstore.state import Runtime


class ScenarioEndpoints:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    async def show(self, request: Request) -> Response:
        return json_response(self.runtime.scenario.to_json())

    async def swap(self, request: Request) -> Response:
        name = request.query_params.get("file", "<PUT /__mockstore/scenario>")
        try:
            text = (await request.body()).decode("utf-8")
        except UnicodeDecodeError as exc:
            return error_response(
                "invalid_scenario", f"the scenario is not UTF-8 text (byte {exc.start})", 400
            )
        try:
            scenario = load_scenario(text, name)
        except ScenarioError as exc:
            return error_response(
                "invalid_scenario",
                f"the scenario has {len(exc.problems)} problem(s); the running one is unchanged",
                400,
                problems=[str(p) for p in exc.problems],
                details=[p.as_dict() for p in exc.problems],
            )
        self.runtime.swap(scenario)
        return json_response(scenario.to_json())
