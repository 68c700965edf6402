"""A stand-in for the real Pet Store service, written as a small provider would write it.

It is independent of mockstore (it imports nothing of it) and makes its own
choices wherever the spec is silent, each different from mockstore's default,
so the fidelity tests can record it, measure mockstore's drift from it and
calibrate a scenario that reproduces it:

- Error codes in upper case (``MISSING_API_KEY``, ``INVALID_QUERY_PARAMETER``, ...);
- 422 for every request that fails validation (body, query or path);
- ``X-RateLimit-Reset`` in seconds from now; ``Retry-After`` as an HTTP-date;
  the draft ``RateLimit-Policy``/``RateLimit`` headers on every answer; a
  ``retryAfter`` field in the 429 body;
- plans of its own (``starter`` 100/min 5,000/day, ``trial`` 5/min 50/day;
  callers without a valid key 20/min 200/day per address);
- ``status`` defaults to ``available``; unknown NewPet fields are stored;
- bodies over 64 KiB are refused (413);
- routing comes before authentication: an unknown path is 404 even without a key;
- HEAD is not served (405);
- ``GET /pets/{petId}`` was deprecated on 2025-06-01 and sets with the end of
  5 December 2030.

Run it: ``python -m tests.upstream.petstore_standin --port 0 --key sk_test_abc=starter``.
It prints ``petstore-standin listening on http://HOST:PORT/v1`` and one access
log line per request (method, target, status) on stdout.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import socket
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from email.utils import formatdate
from typing import Any
from urllib.parse import parse_qsl

import uvicorn
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

BASE = "/v1"
MAX_BODY = 64 * 1024
DEPRECATED_SINCE = 1748736000  # 2025-06-01T00:00:00Z
SUNSET = "Thu, 05 Dec 2030 23:59:59 GMT"
STATUSES = ("available", "pending", "sold")
INT64 = 2**63 - 1


@dataclass(frozen=True)
class Plan:
    per_minute: int
    per_day: int


PLANS = {"starter": Plan(100, 5000), "trial": Plan(5, 50)}
ANONYMOUS = Plan(20, 200)


class Problem(Exception):
    def __init__(self, status: int, code: str, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.extra = status, code, message, extra
        self.headers: dict[str, str] = {}


@dataclass
class Counter:
    minute: int = -1
    day: int = -1
    used_minute: int = 0
    used_day: int = 0


@dataclass
class Limits:
    """Fixed windows per caller: the UTC minute and the UTC day."""

    counters: dict[str, Counter] = field(default_factory=dict)

    def take(self, who: str, plan: Plan, now: float) -> tuple[dict[str, str], int | None]:
        """The rate-limit headers, and the Unix time to wait for when refused."""
        counter = self.counters.setdefault(who, Counter())
        minute, day = int(now // 60), int(now // 86400)
        if counter.minute != minute:
            counter.minute, counter.used_minute = minute, 0
        if counter.day != day:
            counter.day, counter.used_day = day, 0
        minute_end, day_end = (minute + 1) * 60, (day + 1) * 86400
        refused_until = None
        if counter.used_day >= plan.per_day:
            refused_until = day_end
        elif counter.used_minute >= plan.per_minute:
            refused_until = minute_end
        else:
            counter.used_minute += 1
            counter.used_day += 1
        minute_left = plan.per_minute - counter.used_minute
        day_left = plan.per_day - counter.used_day
        # The window that is spent, else the minute's.
        if day_left <= 0:
            limit, left, end = plan.per_day, day_left, day_end
        else:
            limit, left, end = plan.per_minute, minute_left, minute_end
        headers = {
            "X-RateLimit-Limit": str(limit),
            "X-RateLimit-Remaining": str(max(0, left)),
            "X-RateLimit-Reset": str(math.ceil(end - now)),
            "RateLimit-Policy": (
                f'"minute";q={plan.per_minute};w=60, "day";q={plan.per_day};w=86400'
            ),
            "RateLimit": (
                f'"minute";r={max(0, minute_left)};t={math.ceil(minute_end - now)}, '
                f'"day";r={max(0, day_left)};t={math.ceil(day_end - now)}'
            ),
        }
        return headers, refused_until


class PetStore:
    """The service: routes, keys, limits and an in-memory inventory."""

    def __init__(self, keys: dict[str, str]) -> None:
        self.keys = keys
        self.limits = Limits()
        self.pets: dict[int, dict[str, Any]] = {
            101: {"id": 101, "name": "Biscuit", "categoryId": 1, "status": "available"},
            102: {"id": 102, "name": "Pepper", "categoryId": 2, "status": "sold"},
            103: {"id": 103, "name": "Juniper", "categoryId": 1, "status": "pending"},
            104: {"id": 104, "name": "Olive", "categoryId": 3, "status": "available"},
        }
        self.next_id = 105
        Handler = Callable[[Request, dict[str, str]], Awaitable[Response]]
        self.routes: list[tuple[re.Pattern[str], dict[str, Handler]]] = [
            (re.compile(r"/pets"), {"GET": self.list_pets, "POST": self.create_pet}),
            (re.compile(r"/pets/(?P<pet_id>[^/]+)"), {"GET": self.get_pet}),
            (re.compile(r"/store/orders"), {"GET": self.list_orders}),
        ]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        request = Request(scope, receive)
        now = time.time()
        caller = self._caller(request)
        plan = PLANS[self.keys[caller]] if caller else ANONYMOUS
        who = (
            f"key:{caller}"
            if caller
            else f"address:{request.client.host if request.client else '-'}"
        )
        limit_headers, refused_until = self.limits.take(who, plan, now)
        try:
            if refused_until is not None:
                wait = math.ceil(refused_until - now)
                problem = Problem(
                    429,
                    "RATE_LIMIT_EXCEEDED",
                    "Too many requests for this plan; slow down.",
                    retryAfter=wait,
                )
                problem.headers["Retry-After"] = formatdate(refused_until, usegmt=True)
                raise problem
            response = await self._route(request, caller)
        except Problem as problem:
            body = {"code": problem.code, "message": problem.message, "status": problem.status}
            response = _json(body | problem.extra, problem.status)
            response.headers.update(problem.headers)
        response.headers.update(limit_headers)
        response.headers["X-Request-Id"] = uuid.uuid4().hex
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        print(f"{request.method} {target} {response.status_code}", flush=True)
        await response(scope, receive, send)

    def _caller(self, request: Request) -> str | None:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and token.strip() in self.keys:
            return token.strip()
        return None

    async def _route(self, request: Request, caller: str | None) -> Response:
        path = request.url.path
        if not path.startswith(BASE + "/"):
            raise Problem(404, "ROUTE_NOT_FOUND", f"No route for {path}.")
        relative = path[len(BASE) :]
        for pattern, methods in self.routes:
            match = pattern.fullmatch(relative)
            if match is None:
                continue
            handler = methods.get(request.method)
            if handler is None:
                problem = Problem(
                    405, "METHOD_NOT_ALLOWED", f"{request.method} is not supported here."
                )
                problem.headers["Allow"] = ", ".join(sorted(methods))
                raise problem
            self._authenticate(request, caller)
            return await handler(request, match.groupdict())
        raise Problem(404, "ROUTE_NOT_FOUND", f"No route for {path}.")

    @staticmethod
    def _authenticate(request: Request, caller: str | None) -> None:
        if caller is not None:
            return
        header = request.headers.get("authorization")
        if header is None:
            problem = Problem(401, "MISSING_API_KEY", "Send your API key as a bearer token.")
            problem.headers["WWW-Authenticate"] = 'Bearer realm="petstore-staging"'
        else:
            problem = Problem(401, "INVALID_API_KEY", "That API key is not valid.")
            problem.headers["WWW-Authenticate"] = (
                'Bearer realm="petstore-staging", error="invalid_token"'
            )
        raise problem

    # -- operations -----------------------------------------------------------

    async def list_pets(self, request: Request, params: dict[str, str]) -> Response:
        query: dict[str, list[str]] = {}
        for name, value in parse_qsl(request.url.query, keep_blank_values=True):
            query.setdefault(name, []).append(value)
        limit = 20
        if "limit" in query:
            values = query["limit"]
            if (
                len(values) != 1
                or not re.fullmatch(r"\d+", values[0])
                or not 1 <= int(values[0]) <= 100
            ):
                raise Problem(
                    422, "INVALID_QUERY_PARAMETER", "limit must be an integer from 1 to 100."
                )
            limit = int(values[0])
        status = None
        if "status" in query:
            values = query["status"]
            if len(values) != 1 or values[0] not in STATUSES:
                raise Problem(
                    422, "INVALID_QUERY_PARAMETER", "status must be available, pending or sold."
                )
            status = values[0]
        pets = [
            p for _, p in sorted(self.pets.items()) if status is None or p.get("status") == status
        ]
        return _json(pets[:limit], 200)

    async def create_pet(self, request: Request, params: dict[str, str]) -> Response:
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > MAX_BODY:
            raise Problem(413, "PAYLOAD_TOO_LARGE", f"Bodies are limited to {MAX_BODY} bytes.")
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_BODY:
                raise Problem(413, "PAYLOAD_TOO_LARGE", f"Bodies are limited to {MAX_BODY} bytes.")
        media = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if body and media != "application/json":
            raise Problem(415, "UNSUPPORTED_MEDIA_TYPE", "Send JSON (application/json).")
        try:
            pet = json.loads(body)
        except ValueError:
            raise Problem(422, "MALFORMED_JSON", "The body is not valid JSON.") from None
        problems = _new_pet_problems(pet)
        if problems:
            raise Problem(422, "VALIDATION_ERROR", "; ".join(problems))
        pet = {"id": self.next_id, **pet}
        pet.setdefault("status", "available")
        self.pets[self.next_id] = pet
        self.next_id += 1
        return _json(pet, 201)

    async def get_pet(self, request: Request, params: dict[str, str]) -> Response:
        deprecation = {
            "Deprecation": f"@{DEPRECATED_SINCE}",
            "Sunset": SUNSET,
            "Link": f'<{BASE}/pets>; rel="successor-version"',
        }
        raw = params["pet_id"]
        try:
            if not re.fullmatch(r"-?\d+", raw) or abs(int(raw)) > INT64:
                raise Problem(422, "INVALID_PATH_PARAMETER", "petId must be a 64-bit integer.")
            pet = self.pets.get(int(raw))
            if pet is None:
                raise Problem(404, "PET_NOT_FOUND", f"There is no pet {raw}.")
        except Problem as problem:
            problem.headers.update(deprecation)
            raise
        response = _json(pet, 200)
        response.headers.update(deprecation)
        return response

    async def list_orders(self, request: Request, params: dict[str, str]) -> Response:
        return _json([], 200)


def _new_pet_problems(pet: Any) -> list[str]:
    if not isinstance(pet, dict):
        return ["the body must be a JSON object"]
    problems = []
    if not isinstance(pet.get("name"), str):
        problems.append("name is required and must be a string")
    category = pet.get("categoryId")
    if isinstance(category, bool) or not isinstance(category, int) or abs(category) > INT64:
        problems.append("categoryId is required and must be an integer")
    if "status" in pet and pet["status"] not in STATUSES:
        problems.append("status must be available, pending or sold")
    return problems


def _json(value: Any, status: int) -> Response:
    return Response(
        json.dumps(value, separators=(",", ":")), status_code=status, media_type="application/json"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--key", action="append", default=[], metavar="KEY=PLAN")
    args = parser.parse_args(argv)
    keys = dict(item.split("=", 1) for item in args.key)
    unknown = sorted(set(keys.values()) - set(PLANS))
    if unknown:
        parser.error(f"unknown plan(s) {unknown}; known: {sorted(PLANS)}")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host, args.port))
    sock.listen(128)
    port = sock.getsockname()[1]
    print(f"petstore-standin listening on http://{args.host}:{port}{BASE}", flush=True)
    config = uvicorn.Config(PetStore(keys), log_level="warning", lifespan="off")
    uvicorn.Server(config).run(sockets=[sock])
    return 0


if __name__ == "__main__":
    sys.exit(main())
