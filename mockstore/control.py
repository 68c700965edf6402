"""The control API under ``/__mockstore``: health, scenario, reset, clock, keys, bans.

A Starlette application. It needs no API key; ``--control-token`` makes it
require ``Authorization: Bearer <token>``. It is meant for test networks only.
"""

from __future__ import annotations

import hmac
import json
import math
import secrets
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse as StarletteJSONResponse
from starlette.responses import Response
from starlette.routing import Route

from mockstore import __version__, schemas
from mockstore.clock import format_time, parse_time
from mockstore.dashboard import dashboard_routes, is_public_path
from mockstore.keys import ApiKey, key_bucket, parse_authorization
from mockstore.ratelimit import Plan
from mockstore.reports.http import journal_routes
from mockstore.scenario import ScenarioError, load_scenario, scenario_schema
from mockstore.scenario.loader import Marks, schema_problems
from mockstore.state import Runtime
from mockstore.urls import CONTROL_PREFIX as PREFIX

LATEST_TIME = 253402300799  # 9999-12-31T23:59:59Z


class JSONResponse(StarletteJSONResponse):
    """JSON with non-ASCII escaped, so any stored string (even a lone surrogate) encodes."""

    def render(self, content: Any) -> bytes:
        return json.dumps(content, separators=(",", ":")).encode("ascii")


def _problem(status: int, code: str, message: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"code": code, "message": message, "status": status, **extra}, status)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "invalid_request")
    message = f"{request.method} {PREFIX}{request.url.path}: {exc.detail}"
    response = _problem(exc.status_code, code, message)
    response.headers.update(exc.headers or {})
    return response


async def _server_error(request: Request, exc: Exception) -> Response:
    # A bug in the control API must still answer with an Error body, not a traceback.
    return _problem(500, "internal_error", f"{type(exc).__name__}: {exc}")


async def _json_object(request: Request) -> dict[str, Any] | JSONResponse:
    raw = await request.body()
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError as exc:
        return _problem(400, "malformed_json", f"the body is not valid JSON: {exc}")
    if not isinstance(value, dict):
        return _problem(400, "invalid_request", "the body must be a JSON object")
    return value


Endpoint = Callable[[Request], Awaitable[Response]]


def _by_method(path: str, **endpoints: Endpoint) -> Route:
    """A Route whose methods each have their own endpoint."""

    async def dispatch(request: Request) -> Response:
        return await endpoints[request.method if request.method != "HEAD" else "GET"](request)

    return Route(path, dispatch, methods=list(endpoints))


class ControlAPI:
    """Builds the Starlette app for one ``Runtime``."""

    def __init__(self, runtime: Runtime, token: str | None = None) -> None:
        self.runtime = runtime
        self.token = token
        routes = [
            Route("/health", self.health, methods=["GET"]),
            Route("/openapi.json", self.openapi, methods=["GET"]),
            Route("/schema", self.schema, methods=["GET"]),
            # One Route per path, so a 405 names every method the path has in Allow.
            _by_method("/scenario", GET=self.get_scenario, PUT=self.put_scenario),
            Route("/reset", self.reset, methods=["POST"]),
            _by_method("/clock", GET=self.get_clock, POST=self.move_clock),
            _by_method("/keys", GET=self.list_keys, POST=self.issue_key),
            Route("/keys/{key:path}", self.revoke_key, methods=["DELETE"]),
            Route("/bans/{key:path}", self.lift_ban, methods=["DELETE"]),
            Route("/pets", self.list_pets, methods=["GET"]),
            *journal_routes(runtime),
            *dashboard_routes(runtime),
        ]
        self.app = Starlette(
            routes=routes,
            exception_handlers={HTTPException: _http_error, Exception: _server_error},
        )

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        path = scope["path"]
        if self.token is not None and path != "/health" and not is_public_path(path):
            header = None
            for name, value in scope["headers"]:
                if name == b"authorization":
                    header = value
            credentials = parse_authorization(header)
            supplied = credentials.token.encode() if credentials.kind == "bearer" else b""
            if not hmac.compare_digest(supplied, self.token.encode()):
                response = _problem(401, "unauthorized", "the control API needs its token")
                response.headers["www-authenticate"] = 'Bearer realm="mockstore-control"'
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)

    # -- endpoints ----------------------------------------------------------

    async def health(self, request: Request) -> Response:
        state = self.runtime.state
        return JSONResponse(
            {
                "status": "ok",
                "version": __version__,
                "scenario": state.scenario.name,
                "time": format_time(state.clock.now()),
            }
        )

    async def openapi(self, request: Request) -> Response:
        return Response(schemas.openapi_json(), media_type="application/json")

    async def schema(self, request: Request) -> Response:
        return JSONResponse(scenario_schema())

    async def get_scenario(self, request: Request) -> Response:
        return JSONResponse(self.runtime.scenario.to_json())

    async def put_scenario(self, request: Request) -> Response:
        name = request.query_params.get("file", "<PUT /__mockstore/scenario>")
        try:
            text = (await request.body()).decode("utf-8")
        except UnicodeDecodeError as exc:
            return _problem(
                400, "invalid_scenario", f"the scenario is not UTF-8 text (byte {exc.start})"
            )
        try:
            scenario = load_scenario(text, name)
        except ScenarioError as exc:
            return _problem(
                400,
                "invalid_scenario",
                f"the scenario has {len(exc.problems)} problem(s); the running one is unchanged",
                problems=[str(p) for p in exc.problems],
                details=[p.as_dict() for p in exc.problems],
            )
        self.runtime.swap(scenario)
        return JSONResponse(scenario.to_json())

    async def reset(self, request: Request) -> Response:
        self.runtime.reset()
        return JSONResponse(
            {
                "status": "reset",
                "scenario": self.runtime.scenario.name,
                "journal_seq": self.runtime.journal.last_seq,
            }
        )

    def _clock_json(self) -> dict[str, Any]:
        clock = self.runtime.state.clock
        now = clock.now()
        return {
            "now": format_time(now),
            "unix": now,
            "mode": clock.mode,
            "start": format_time(clock.start),
            "elapsed_seconds": clock.elapsed(),
        }

    async def get_clock(self, request: Request) -> Response:
        return JSONResponse(self._clock_json())

    async def move_clock(self, request: Request) -> Response:
        body = await _json_object(request)
        if isinstance(body, JSONResponse):
            return body
        clock = self.runtime.state.clock
        if set(body) == {"advance_seconds"}:
            seconds = body["advance_seconds"]
            if isinstance(seconds, bool) or not isinstance(seconds, int | float):
                return _problem(400, "invalid_request", "advance_seconds must be a number")
            target = clock.now() + seconds
        elif set(body) == {"set"}:
            try:
                target = parse_time(str(body["set"]))
            except (ValueError, OverflowError):
                return _problem(
                    400, "invalid_request", f"set: not an ISO 8601 time: {body['set']!r}"
                )
        else:
            return _problem(
                400,
                "invalid_request",
                'send {"advance_seconds": N} or {"set": "2030-12-05T00:00:00Z"}',
            )
        # Refused before it is applied: a clock at NaN or past year 9999 would
        # break every later request.
        if not (math.isfinite(target) and 0 <= target <= LATEST_TIME):
            return _problem(
                400, "invalid_request", "the clock must stay between 1970 and the year 9999"
            )
        clock.set(target)
        return JSONResponse(self._clock_json())

    def _key_json(self, key: ApiKey) -> dict[str, Any]:
        state = self.runtime.state
        plan = state.plans[key.plan]
        usage = state.limiter.usage(key_bucket(key.key), plan, state.clock.now())
        return {
            "key": key.key,
            "plan": key.plan,
            "tenant": key.tenant,
            "limits": {"per_minute": plan.per_minute, "per_day": plan.per_day},
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

    async def list_keys(self, request: Request) -> Response:
        return JSONResponse([self._key_json(k) for k in self.runtime.state.keys])

    async def issue_key(self, request: Request) -> Response:
        body = await _json_object(request)
        if isinstance(body, JSONResponse):
            return body
        state = self.runtime.state
        body = {"key": "ms_" + secrets.token_urlsafe(18), "plan": "free", **body}
        # Checked as a scenario's key entry, so a key issued at run time obeys
        # the same rules (one JSON Schema) as one written in a scenario.
        problems = schema_problems({"version": 1, "keys": [body]}, Marks(), "POST /keys")
        if problems:
            message = "; ".join(
                f"{p.path.removeprefix('$.keys[0].')}: {p.message}" for p in problems
            )
            return _problem(400, "invalid_request", message)
        key = body["key"]
        if key in state.keys:
            return _problem(409, "key_exists", f"key {key!r} already exists")
        plan = body.get("plan", "free")
        if isinstance(plan, dict):
            name = f"custom:{key}"
            state.plans[name] = Plan(name, plan["per_minute"], plan["per_day"])
            plan = name
        if plan not in state.plans:
            known = ", ".join(sorted(state.plans))
            return _problem(400, "unknown_plan", f"unknown plan {plan!r} (known: {known})")
        issued = ApiKey(key, plan, body.get("tenant") or key)
        state.keys.issue(issued)
        used = body.get("used", {})
        if used:
            minute = used.get("minute", 0)
            state.limiter.preload(
                key_bucket(key), state.clock.now(), minute, used.get("day", minute)
            )
        return JSONResponse(self._key_json(issued), 201)

    async def revoke_key(self, request: Request) -> Response:
        state = self.runtime.state
        key = request.path_params["key"]
        if state.keys.revoke(key) is None:
            return _problem(404, "unknown_key", f"no key {key!r}")
        state.limiter.forget(key_bucket(key))
        return Response(status_code=204)

    async def lift_ban(self, request: Request) -> Response:
        key = request.path_params["key"]
        if key not in self.runtime.state.keys:
            return _problem(404, "unknown_key", f"no key {key!r}")
        lifted = self.runtime.state.limiter.lift_ban(key_bucket(key))
        return JSONResponse({"key": key, "lifted": lifted})

    async def list_pets(self, request: Request) -> Response:
        """Every pet of a tenant (or the shared store), without touching any allowance."""
        tenant = request.query_params.get("tenant")
        store = self.runtime.state.tenants.store_for(tenant)
        return JSONResponse(list(store))
