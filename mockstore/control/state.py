"""Endpoints over the running state as a whole: health, reset, the pets in the store."""

from __future__ import annotations

import json

from starlette.requests import Request
from starlette.responses import Response

from mockstore.clock import format_time
from mockstore.control.http import json_response, state_unavailable
from mockstore.memory import budget_of
from mockstore.shared.backend import StateUnavailable
from mockstore.state import Runtime
from mockstore.version import __version__


class StateEndpoints:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    async def health(self, request: Request) -> Response:
        state = self.runtime.state
        body = {
            "status": "ok",
            "version": __version__,
            "scenario": state.scenario.name,
            "time": format_time(state.clock.now()),
            "run": self.runtime.run,
        }
        shared = self.runtime.shared
        if shared is None:
            return json_response(body)
        # With a shared state the mock answers only while Redis does: a replica
        # that cannot reach it is not ready (503), and says why.
        reachable = await shared.ping()
        body["state"] = {"backend": "redis", "url": shared.url, "reachable": reachable}
        if not reachable:
            body["status"] = "state_unavailable"
        return json_response(body, 200 if reachable else 503)

    async def reset(self, request: Request) -> Response:
        shared = self.runtime.shared
        if shared is None:
            self.runtime.reset()
        else:
            try:
                await shared.reset()
            except StateUnavailable as exc:
                return state_unavailable(exc)
        return json_response(
            {
                "status": "reset",
                "scenario": self.runtime.scenario.name,
                "journal_seq": self.runtime.journal.last_seq,
                "run": self.runtime.run,
            }
        )

    async def pets(self, request: Request) -> Response:
        """Every pet of a tenant (or the shared store), without touching any allowance."""
        tenant = request.query_params.get("tenant")
        state = self.runtime.state
        store = state.stores.store_for(tenant)
        shared = self.runtime.shared
        if shared is None:
            return json_response(list(store))
        group = tenant if state.stores.per_key else None
        try:
            created = await shared.created_pets(group)
        except StateUnavailable as exc:
            return state_unavailable(exc)
        return json_response([*store, *(json.loads(pet) for pet in created)])

    async def memory(self, request: Request) -> Response:
        """The memory budget: the whole, what is held, this mock's share and the connections'."""
        account = self.runtime.account
        budget = budget_of(account)
        if account is None or budget is None:
            return json_response({"budget": None})
        journal = self.runtime.journal
        return json_response(
            {
                "budget": budget.ceiling,
                "used": budget.used,
                "available": budget.available,
                "mock": account.to_json(),
                "connections": budget.connections.to_json(),
                "journal": {"bytes": journal.bytes, "max_bytes": journal.max_bytes},
            }
        )
