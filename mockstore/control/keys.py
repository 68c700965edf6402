"""Endpoints over API keys: list them with their allowance, issue, revoke, lift a ban."""

from __future__ import annotations

import secrets
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from mockstore.clock import format_time
from mockstore.control.http import (
    error_response,
    json_object,
    json_response,
    state_unavailable,
)
from mockstore.control.operations import (
    BOOLEAN,
    INTEGER,
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
    setting,
)
from mockstore.control.scope import RAW_KEYS
from mockstore.journal import mask
from mockstore.keys import ApiKey, key_bucket
from mockstore.limiter.limiter import Limiter
from mockstore.limiter.log import log_problem
from mockstore.limiter.rules import length_problem
from mockstore.memory import OverBudget
from mockstore.ratelimit import Usage
from mockstore.scenario.limits import plan_of
from mockstore.scenario.loader import Marks, schema_problems
from mockstore.shared.backend import StateUnavailable
from mockstore.state import KEY_COST, Runtime

WINDOW = Schema(
    "Window",
    obj(
        {
            "used": doc(INTEGER, "Requests counted in the window"),
            "remaining": doc(INTEGER, "Requests left in it (0 during a ban)"),
            "reset": doc(INTEGER, "When it starts afresh, Unix seconds"),
        },
        description="One rate-limit window of a key",
    ),
)
KEY = Schema(
    "Key",
    obj(
        {
            "key": doc(
                STRING,
                "The key: the bearer token to send (as `shown` to a caller from another "
                "machine on a server without a control token)",
            ),
            "shown": doc(STRING, "The key as the journal shows it (masked)"),
            "plan": STRING,
            "tenant": doc(
                STRING, "Its tenant under isolation: per_key (the key itself by default)"
            ),
            "limits": obj(
                {
                    "per_minute": INTEGER,
                    "per_day": doc(nullable(INTEGER), "null: the plan has no day allowance"),
                }
            ),
            "minute": WINDOW,
            "day": WINDOW,
            "banned": BOOLEAN,
            "banned_until": doc(nullable(STRING), "The ban's end, RFC 3339 UTC"),
            "recent_rejections": doc(INTEGER, "429s within the ban policy's window"),
        },
        description="A key, its plan, what is left of its allowance, its ban",
    ),
)


def _issued() -> dict[str, Any]:
    """A key as a scenario lists it (the one schema), every field optional."""
    entry = setting("keys")["items"]
    entry.pop("required", None)
    entry["description"] = (
        "A key as a scenario's keys list it; key defaults to a generated ms_… token, plan to free"
    )
    return entry


ISSUE = Body(
    "The key to issue, as a scenario's `keys` entry",
    {"application/json": _issued()},
    examples=(
        Example("pro", "A generated key on the pro plan", {"plan": "pro"}),
        Example(
            "inline",
            "A named key on a plan of its own, half its minute spent",
            {"key": "ci-key", "plan": {"per_minute": 10, "per_day": 100}, "used": {"minute": 5}},
        ),
    ),
)
LIFTED = obj({"key": STRING, "lifted": doc(BOOLEAN, "Whether it was banned")})


class KeyEndpoints:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    async def _usage(self, key: ApiKey) -> Usage:
        state = self.runtime.state
        plan = state.plans[key.plan]
        shared = self.runtime.shared
        if shared is not None:
            return await shared.usage(key_bucket(key.key), plan, state.clock.now())
        return state.limiter.usage(key_bucket(key.key), plan, state.clock.now())

    def _key_json(self, key: ApiKey, usage: Usage, raw: bool = True) -> dict[str, Any]:
        state = self.runtime.state
        plan = state.plans[key.plan]
        return {
            # Whole only to a caller who may read raw keys (``RAW_KEYS``), else as shown.
            "key": key.key if raw else mask(key.key),
            "shown": mask(key.key),  # as the journal (and the dashboard's traffic) shows it
            "plan": key.plan,
            # A key's tenant is the key itself unless the scenario names one.
            "tenant": key.tenant if raw or key.tenant != key.key else mask(key.tenant),
            "limits": {"per_minute": plan.per_minute, "per_day": plan.day},
            "minute": {
                "used": usage.minute_used,
                "remaining": usage.minute_remaining,
                "reset": usage.minute_reset,
            },
            "day": {
                "used": usage.day_used,
                "remaining": usage.day_remaining,
                "reset": usage.day_reset,
            },
            "banned": usage.banned_until is not None,
            "banned_until": format_time(usage.banned_until) if usage.banned_until else None,
            "recent_rejections": usage.recent_rejections,
        }

    @described(
        Operation(
            "listKeys",
            "Every key with its allowance and ban",
            "keys",
            {200: Answer("The keys", array(KEY))},
            errors={503: ("state_unavailable",)},
        )
    )
    async def list_keys(self, request: Request) -> Response:
        try:
            raw = request.scope.get(RAW_KEYS, True)
            return json_response(
                [self._key_json(k, await self._usage(k), raw) for k in self.runtime.state.keys]
            )
        except StateUnavailable as exc:
            return state_unavailable(exc)

    @described(
        Operation(
            "issueKey",
            "Issue a key",
            "keys",
            {201: Answer("The key issued", KEY)},
            errors={
                400: ("malformed_json", "invalid_request", "unknown_plan"),
                409: ("key_exists",),
                503: ("state_unavailable",),
                507: ("memory_budget",),
            },
            body=ISSUE,
            description="Each issued key draws on the memory budget.",
        )
    )
    async def issue(self, request: Request) -> Response:
        body = await json_object(request)
        state = self.runtime.state
        body = {"key": "ms_" + secrets.token_urlsafe(18), "plan": "free", **body}
        # Checked as a scenario's key entry, so a key issued at run time obeys
        # the same rules (one JSON Schema) as one written in a scenario.
        problems = schema_problems({"version": 1, "keys": [body]}, Marks(), "POST /keys")
        if problems:
            message = "; ".join(
                f"{p.path.removeprefix('$.keys[0].')}: {p.message}" for p in problems
            )
            return error_response("invalid_request", message, 400)
        key = body["key"]
        if key in state.keys:
            return error_response("key_exists", f"key {key!r} already exists", 409)
        # An issued key holds memory (and, isolated, a store of its own): charged
        # to the mock's share of the memory budget, so keys cannot be issued without end.
        if state.account is not None and not state.account.reserve(KEY_COST):
            return error_response(
                "memory_budget",
                f"key {key!r} was not issued: the memory budget has no room for another key "
                f"({len(state.keys)} held); revoke keys no longer used, or reset",
                507,
            )
        plan = body.get("plan", "free")
        inline = isinstance(plan, dict)
        if inline:
            name = f"custom:{key}"
            # As a scenario's inline plan reads (no per_day: no day allowance; its own
            # window lengths where it states them).
            state.plans[name] = plan_of(name, plan)
            plan = name
        if plan not in state.plans:
            if state.account is not None:
                state.account.release(KEY_COST)
            known = ", ".join(sorted(state.plans))
            return error_response("unknown_plan", f"unknown plan {plan!r} (known: {known})", 400)
        limits = state.scenario.ratelimit
        too_long = log_problem(limits, state.plans[plan]) or length_problem(
            limits, state.plans[plan]
        )
        if too_long is not None:
            if state.account is not None:
                state.account.release(KEY_COST)
            if inline:  # the refused key's plan is not kept
                state.plans.pop(plan, None)
            return error_response("invalid_request", too_long, 400)
        issued = ApiKey(key, plan, body.get("tenant") or key)
        if isinstance(state.limiter, Limiter):
            state.limiter.admit(state.plans[plan])
        used = body.get("used", {})
        shared = self.runtime.shared
        try:
            if shared is not None:
                await shared.issue_key(issued, state.plans[plan], used)
                return json_response(self._key_json(issued, await self._usage(issued)), 201)
        except StateUnavailable as exc:
            if state.account is not None:
                state.account.release(KEY_COST)
            return state_unavailable(exc)
        state.keys.issue(issued)
        if used:
            minute = used.get("minute", 0)
            try:
                state.limiter.preload(
                    key_bucket(key),
                    state.clock.now(),
                    minute,
                    used.get("day", minute),
                    state.plans[plan],
                )
            except OverBudget as over:  # a general limiter's log of what was used
                state.keys.revoke(key)
                if state.account is not None:
                    state.account.release(KEY_COST)
                return error_response("memory_budget", f"key {key!r} was not issued: {over}", 507)
        return json_response(self._key_json(issued, await self._usage(issued)), 201)

    @described(
        Operation(
            "revokeKey",
            "Revoke a key: its next request is answered 401 invalid_token",
            "keys",
            {204: Answer("Revoked")},
            errors={404: ("unknown_key",), 503: ("state_unavailable",)},
        )
    )
    async def revoke(self, request: Request) -> Response:
        state = self.runtime.state
        key = request.path_params["key"]
        shared = self.runtime.shared
        try:
            revoked = await shared.revoke_key(key) if shared else state.keys.revoke(key)
        except StateUnavailable as exc:
            return state_unavailable(exc)
        if revoked is None:
            return error_response("unknown_key", f"no key {key!r}", 404)
        if state.account is not None and all(k.key != key for k in state.scenario.keys):
            state.account.release(KEY_COST)  # an issued key: charged when issued
        state.limiter.forget(key_bucket(key))
        return Response(status_code=204)

    @described(
        Operation(
            "liftBan",
            "Lift a key's ban",
            "keys",
            {200: Answer("Whether it was banned", LIFTED)},
            errors={404: ("unknown_key",), 503: ("state_unavailable",)},
        )
    )
    async def lift_ban(self, request: Request) -> Response:
        key = request.path_params["key"]
        if key not in self.runtime.state.keys:
            return error_response("unknown_key", f"no key {key!r}", 404)
        shared = self.runtime.shared
        try:
            if shared is not None:
                lifted = await shared.lift_ban(key)
            else:
                lifted = self.runtime.state.limiter.lift_ban(key_bucket(key))
        except StateUnavailable as exc:
            return state_unavailable(exc)
        return json_response({"key": key, "lifted": lifted})
