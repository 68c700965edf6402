"""Endpoints over the running state as a whole: health, reset, the pets in the store."""

from __future__ import annotations

import json

from starlette.requests import Request
from starlette.responses import Response

from mockstore.clock import format_time
from mockstore.control.http import json_response, state_unavailable
from mockstore.control.operations import (
    BOOLEAN,
    INTEGER,
    STRING,
    Answer,
    Operation,
    Param,
    Schema,
    api_schema,
    array,
    described,
    doc,
    nullable,
    obj,
)
from mockstore.memory import budget_of
from mockstore.shared.backend import StateUnavailable
from mockstore.state import Runtime
from mockstore.version import __version__

HEALTH = Schema(
    "Health",
    obj(
        {
            "status": doc(
                {"type": "string", "enum": ["ok", "state_unavailable"]},
                "ok; state_unavailable (503) while the shared state cannot be reached",
            ),
            "version": doc(STRING, "mockstore's version"),
            "scenario": doc(STRING, "The running scenario's name"),
            "time": doc(STRING, "The scenario clock's now, RFC 3339 UTC"),
            "run": doc(INTEGER, "The run the next request joins"),
            "state": obj(
                {"backend": {"const": "redis"}, "url": STRING, "reachable": BOOLEAN},
                description="With a shared state (serve --state) only: where it is",
            ),
        },
        optional=("state",),
        description="Whether the mock serves, and what",
    ),
)
ACCOUNT = Schema(
    "MemoryAccount",
    obj(
        {
            "name": STRING,
            "used": doc(INTEGER, "Bytes held"),
            "floor": doc(INTEGER, "Bytes kept for it whatever the others hold"),
            "ceiling": doc(INTEGER, "The most it may hold"),
            "available": doc(INTEGER, "Bytes it may still take"),
        },
        description="One account of the memory budget",
    ),
)
MEMORY = Schema(
    "Memory",
    obj(
        {
            "budget": doc(nullable(INTEGER), "The whole budget in bytes (null: no budget)"),
            "used": INTEGER,
            "available": INTEGER,
            "mock": doc(ACCOUNT, "This mock's share (a tenant's own, under its root)"),
            "connections": doc(ACCOUNT, "The connections' share"),
            "bodies": doc(
                ACCOUNT, "The share kept for the first bytes of every connection's request body"
            ),
            "journal": obj({"bytes": INTEGER, "max_bytes": INTEGER}),
        },
        optional=("used", "available", "mock", "connections", "bodies", "journal"),
        description="The memory budget: the whole, what is held, this mock's share",
    ),
)
RESET = Schema(
    "Reset",
    obj(
        {
            "status": {"const": "reset"},
            "scenario": STRING,
            "journal_seq": doc(INTEGER, "The journal's last sequence number: ask since it"),
            "run": doc(INTEGER, "The run the reset began"),
        },
        description="What a reset did",
    ),
)
TENANT_PARAM = Param("tenant", STRING, "An isolation: per_key tenant's store (a key's tenant)")


class StateEndpoints:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    @described(
        Operation(
            "getHealth",
            "Is the mock serving, and what",
            "server",
            {
                200: Answer("Serving", HEALTH),
                503: Answer("The shared state (Redis) cannot be reached: not ready", HEALTH),
            },
            description="Needs no control token on a server's root (a tenant's needs it).",
        )
    )
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

    @described(
        Operation(
            "reset",
            "Back to the scenario's initial state",
            "state",
            {200: Answer("Reset: pets, counters, bans, clock, call counts", RESET)},
            errors={503: ("state_unavailable",)},
            description="A reset begins a run; the journal is kept (ask `since` journal_seq).",
        )
    )
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

    @described(
        Operation(
            "listStorePets",
            "Every pet in the store, without touching any allowance",
            "state",
            {200: Answer("The pets, in id order", array(api_schema("Pet")))},
            errors={503: ("state_unavailable",)},
            params=(TENANT_PARAM,),
        )
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

    @described(
        Operation("getMemory", "The memory budget", "server", {200: Answer("The budget", MEMORY)})
    )
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
                "bodies": budget.bodies.to_json(),
                "journal": {"bytes": journal.bytes, "max_bytes": journal.max_bytes},
            }
        )
