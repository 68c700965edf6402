"""Endpoints over the running state as a whole: health, reset, the pets in the store."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from mockstore.clock import format_time
from mockstore.control.http import json_response
from mockstore.memory import budget_of
from mockstore.state import Runtime
from mockstore.version import __version__


class StateEndpoints:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    async def health(self, request: Request) -> Response:
        state = self.runtime.state
        return json_response(
            {
                "status": "ok",
                "version": __version__,
                "scenario": state.scenario.name,
                "time": format_time(state.clock.now()),
                "run": self.runtime.run,
            }
        )

    async def reset(self, request: Request) -> Response:
        self.runtime.reset()
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
        store = self.runtime.state.stores.store_for(tenant)
        return json_response(list(store))

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
