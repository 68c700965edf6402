"""Menagerie: a Pet Store provider written from the spec alone, behind its own API gateway.

It imports nothing of mockstore and was written without reading it. Every stated
behaviour of the spec holds (``/v1``, bearer keys, Error bodies, ``limit`` 1..100
default 20, the ``status`` filter, ``201`` with the new id, ``404`` for a missing
pet, ``401`` for a missing or invalid key, ``X-RateLimit-*`` on every answer,
``429`` with ``Retry-After``, temporary bans, ``getPet`` deprecated and removed on
5 December 2030). Where the spec is silent, Menagerie chose:

Headers
- ``Vary: Authorization`` and ``X-Content-Type-Options: nosniff`` on every answer;
  no ``Server`` header;
- ``X-Correlation-Id``: a UUID, the caller's own when it sent a valid UUID in
  ``X-Correlation-Id``, else a new random one (no ``X-Request-Id``);
- ``Content-Type: application/json;charset=UTF-8`` on every body (non-ASCII escaped);
- ``Location: http://HOST:PORT/v1/pets/{id}`` (an absolute URL) on ``201``;
- ``Cache-Control: private, max-age=10`` on ``200`` reads (``listPets``, ``getPet``,
  ``/store/orders``), ``Cache-Control: no-store`` on every other answer; no ``ETag``;
- every answer on the ``getPet`` path, whatever its status (``401``, ``404``,
  ``429``, ``403`` included), carries ``Deprecation: Mon, 03 Mar 2025 00:00:00 GMT``
  (the draft's HTTP-date form), ``Sunset: Thu, 05 Dec 2030 09:00:00 GMT`` and
  ``Link: </v1/pets>; rel="alternate", <https://developer.menagerie.example/policies/sunset>;
  rel="sunset"``; none once the operation is gone.

Refusals (every Error body also has ``timestamp``, the answer's instant as RFC 3339
UTC with milliseconds, and ``documentation``, ``https://developer.menagerie.example/errors/<code>``)
- no ``Authorization``: ``401 MissingApiKey``; not ``Bearer <token>``:
  ``401 MalformedAuthorization``; an unknown key: ``401 InvalidApiKey``; no
  ``WWW-Authenticate`` header;
- createPet, checked in this order: a ``Content-Length`` over 32 KiB
  ``413 PayloadTooLarge``; a ``Content-Type`` other than ``application/json``
  ``415 UnsupportedMediaType`` (none given is read as JSON); a body that grows past
  32 KiB ``413 PayloadTooLarge``; empty ``400 EmptyRequestBody``; not JSON
  ``400 MalformedJson``; not a valid NewPet ``400 ValidationFailed`` (an integral
  number such as ``7.0`` is an integer);
- ``limit`` that is not an integer: ``400 InvalidLimit``; below 1:
  ``422 LimitBelowMinimum``; above 100: ``422 LimitAboveMaximum``; a ``status``
  filter outside the enumeration: ``400 InvalidStatus``; a ``petId`` that is not an
  int64: ``400 InvalidPetId``; a missing pet: ``404 PetNotFound``;
- an unknown path (a trailing slash included): ``404 ResourceNotFound``; a known
  path with another method: ``405 MethodNotAllowed`` with ``Allow``;
- over the allowance: ``429 TooManyRequests``; suspended: ``403 ApiKeySuspended``;
- ``getPet`` from its sunset on: ``404 ResourceNotFound`` (the route is gone).

Rate limits
- plans: the spec's ``free`` 60/min 1,000/day, ``pro`` 300/10,000, ``business``
  1,000/100,000, ``enterprise`` only with ``--plan enterprise=N/M`` (custom), and
  Menagerie's own ``developer`` 12/min 40/day; ``--plan NAME=PER_MIN/PER_DAY``
  adds or overrides one;
- callers without a valid key (none, malformed, unknown) share one bucket per
  client address: 5/min, 25/day;
- windows are aligned to the clock: the minute (``--window-seconds``, 60) to
  multiples of its length since the epoch, the day to UTC midnight;
- ``X-RateLimit-Limit/Remaining/Reset`` describe the **day** (its allowance, what
  is left of it, UTC midnight as Unix epoch **seconds**); the minute is shown as
  ``X-RateLimit-Burst-Limit/Remaining/Reset``, its reset in seconds from now
  (rounded up);
- a refused request consumes nothing; ``Retry-After`` on ``429`` is an HTTP-date
  (the end of the window that blocks: the day's while the day is spent);
- suspension: 6 refusals within 30 s (``--ban-after``, ``--ban-within``; the 6th is
  still a ``429``) suspend the bucket for 90 s (``--ban-seconds``): ``403
  ApiKeySuspended`` with ``Retry-After`` in whole seconds,
  ``X-RateLimit-Burst-Remaining: 0`` and ``X-RateLimit-Burst-Reset`` the seconds left.

Semantics
- order of checks, at the gateway: suspension, allowance, the key; then routing
  (``404``/``405``), then the request: without a valid key every path is ``401``;
- ``limit`` above 100 is refused (``422``);
- unknown NewPet fields are kept: stored and returned after the known ones (an
  ``id`` in the body is ignored);
- ``status`` has no default: a pet created without one has none;
- ids are random positive integers below 2^53; pets are listed in insertion order;
- ``HEAD`` is served on ``getPet`` and ``/store/orders``; on ``listPets`` it is
  ``405`` (``Allow: GET, POST``);
- ``GET /store/orders`` answers ``200 []`` (no account has orders yet);
- a query parameter given twice: the first value wins;
- ``--pets N`` (8) seeds N pets, statuses in turn.

Run it: ``python -m tests.upstream.menagerie --port 0 --key mk_dev_abc=developer``.
It prints ``menagerie listening on http://HOST:PORT/v1`` and one access-log line
per request (client, method, target, status, correlation id) on stdout.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import secrets
import socket
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import formatdate
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route, Router
from starlette.types import ASGIApp, Message, Receive, Scope, Send

NAME = "menagerie"
CONTENT_TYPE = "application/json;charset=UTF-8"
BODY_LIMIT = 32 * 1024
DOCS = "https://developer.menagerie.example/errors/"
DEPRECATED_SINCE = datetime(2025, 3, 3, tzinfo=UTC)
REMOVAL = datetime(2030, 12, 5, 9, 0, 0, tzinfo=UTC)
SUCCESSOR_LINK = (
    '</v1/pets>; rel="alternate", '
    '<https://developer.menagerie.example/policies/sunset>; rel="sunset"'
)
GET_PET_PATH = re.compile(r"^/v1/pets/[^/]+$")
PET_STATUSES = frozenset({"available", "pending", "sold"})
LOW, HIGH = -(2**63), 2**63 - 1
ID_SPACE = 2**53
INTEGER = re.compile(r"^[+-]?[0-9]+$")
BEARER = re.compile(r"^[Bb][Ee][Aa][Rr][Ee][Rr] +([A-Za-z0-9\-._~+/]+=*) *$")
READ_CACHE = "private, max-age=10"
DAY = 86_400


@dataclass(frozen=True)
class Allowance:
    per_minute: int
    per_day: int


BUILT_IN_PLANS = {
    "free": Allowance(60, 1_000),
    "pro": Allowance(300, 10_000),
    "business": Allowance(1_000, 100_000),
    "developer": Allowance(12, 40),
}
ANONYMOUS_ALLOWANCE = Allowance(5, 25)


class Problem(Exception):
    """A refusal, as the Error body Menagerie answers with."""

    def __init__(self, status: int, code: str, message: str, **headers: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.headers = {name.replace("_", "-"): value for name, value in headers.items()}

    def response(self) -> Response:
        stamp = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        return reply(
            {
                "code": self.code,
                "message": self.message,
                "status": self.status,
                "timestamp": stamp,
                "documentation": DOCS + self.code,
            },
            self.status,
            self.headers,
        )


def reply(document: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(json.dumps(document).encode(), status, headers, media_type=CONTENT_TYPE)


# ---------------------------------------------------------------- metering (gateway side)


@dataclass
class Meter:
    """One caller's counters in the clock-aligned minute and UTC day."""

    minute: int = -1
    minute_count: int = 0
    day: int = -1
    day_count: int = 0
    refusals: deque[float] = field(default_factory=deque)
    suspended_until: float = 0.0


@dataclass(frozen=True)
class Reading:
    outcome: str  # "pass", "throttled" or "suspended"
    allowance: Allowance
    day_left: int
    day_end: int
    burst_left: int
    burst_end: float
    retry_at: float

    def headers(self, now: float) -> dict[str, str]:
        fields = {
            "X-RateLimit-Limit": str(self.allowance.per_day),
            "X-RateLimit-Remaining": str(self.day_left),
            "X-RateLimit-Reset": str(self.day_end),
            "X-RateLimit-Burst-Limit": str(self.allowance.per_minute),
            "X-RateLimit-Burst-Remaining": str(self.burst_left),
            "X-RateLimit-Burst-Reset": str(max(1, math.ceil(self.burst_end - now))),
        }
        if self.outcome == "throttled":
            fields["Retry-After"] = formatdate(math.ceil(self.retry_at), usegmt=True)
        elif self.outcome == "suspended":
            fields["Retry-After"] = str(max(1, math.ceil(self.retry_at - now)))
        return fields


class Metering:
    def __init__(self, window: float, ban_after: int, ban_within: float, ban_for: float) -> None:
        self.window = window
        self.ban_after = ban_after
        self.ban_within = ban_within
        self.ban_for = ban_for
        self.meters: dict[str, Meter] = {}

    def read(self, caller_id: str, allowance: Allowance, now: float) -> Reading:
        meter = self.meters.setdefault(caller_id, Meter())
        minute, day = math.floor(now / self.window), math.floor(now / DAY)
        if meter.minute != minute:
            meter.minute, meter.minute_count = minute, 0
        if meter.day != day:
            meter.day, meter.day_count = day, 0
        day_end = (day + 1) * DAY
        burst_end = (minute + 1) * self.window
        if meter.suspended_until > now:
            return Reading(
                "suspended",
                allowance,
                allowance.per_day - meter.day_count,
                day_end,
                0,
                meter.suspended_until,
                meter.suspended_until,
            )
        if meter.minute_count < allowance.per_minute and meter.day_count < allowance.per_day:
            meter.minute_count += 1
            meter.day_count += 1
            outcome, retry_at = "pass", 0.0
        else:
            outcome = "throttled"
            retry_at = day_end if meter.day_count >= allowance.per_day else burst_end
            meter.refusals.append(now)
            while meter.refusals and meter.refusals[0] <= now - self.ban_within:
                meter.refusals.popleft()
            if len(meter.refusals) >= self.ban_after:
                meter.refusals.clear()
                meter.suspended_until = now + self.ban_for
        return Reading(
            outcome,
            allowance,
            allowance.per_day - meter.day_count,
            day_end,
            allowance.per_minute - meter.minute_count,
            burst_end,
            retry_at,
        )


class Gateway:
    """Correlation id, suspension, allowance and the key, before the service sees anything."""

    def __init__(
        self, app: ASGIApp, *, metering: Metering, keys: dict[str, Allowance], removal: datetime
    ) -> None:
        self.app = app
        self.metering = metering
        self.keys = keys
        self.removal = removal.timestamp()
        self.deprecation = {
            "Deprecation": formatdate(DEPRECATED_SINCE.timestamp(), usegmt=True),
            "Sunset": formatdate(self.removal, usegmt=True),
            "Link": SUCCESSOR_LINK,
        }

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        now = time.time()
        request = Request(scope)
        correlation = correlation_id(request.headers.get("x-correlation-id"))
        key, problem = authenticate(request.headers.get("authorization"), self.keys)
        address = request.client.host if request.client else "unknown"
        caller_id = f"key:{key}" if key else f"address:{address}"
        allowance = self.keys[key] if key else ANONYMOUS_ALLOWANCE
        reading = self.metering.read(caller_id, allowance, now)
        added = {
            "Vary": "Authorization",
            "X-Content-Type-Options": "nosniff",
            "X-Correlation-Id": correlation,
            **reading.headers(now),
        }
        if GET_PET_PATH.match(scope["path"]) and now < self.removal:
            added.update(self.deprecation)
        raw_added = [(k.lower().encode(), v.encode()) for k, v in added.items()]
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")

        async def send_through(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                if not any(name == b"cache-control" for name, _ in headers):
                    headers.append((b"cache-control", b"no-store"))
                message["headers"] = headers + raw_added
                print(
                    f"{address} {scope['method']} {target} {message['status']} corr={correlation}",
                    flush=True,
                )
            await send(message)

        refusal: Problem | None = None
        if reading.outcome == "suspended":
            left = max(1, math.ceil(reading.retry_at - now))
            refusal = Problem(
                403, "ApiKeySuspended", f"suspended for ignoring 429 answers; {left} s left"
            )
        elif reading.outcome == "throttled":
            spent = "daily" if reading.day_left <= 0 else "per-minute"
            until = formatdate(math.ceil(reading.retry_at), usegmt=True)
            refusal = Problem(429, "TooManyRequests", f"{spent} quota exceeded until {until}")
        elif problem is not None:
            refusal = problem
        if refusal is not None:
            await refusal.response()(scope, receive, send_through)
            return
        await self.app(scope, receive, send_through)


def correlation_id(sent: str | None) -> str:
    if sent:
        try:
            return str(uuid.UUID(sent.strip()))
        except ValueError:
            pass
    return str(uuid.uuid4())


def authenticate(
    header: str | None, keys: dict[str, Allowance]
) -> tuple[str | None, Problem | None]:
    if header is None:
        return None, Problem(401, "MissingApiKey", "an API key is required (Authorization: Bearer)")
    match = BEARER.match(header)
    if match is None:
        return None, Problem(
            401, "MalformedAuthorization", "Authorization must read Bearer followed by the key"
        )
    if match.group(1) not in keys:
        return None, Problem(401, "InvalidApiKey", "the API key is not valid")
    return match.group(1), None


# ---------------------------------------------------------------- the pet service


class Inventory:
    """Pets in insertion order, under random ids."""

    def __init__(self) -> None:
        self.pets: dict[int, dict[str, Any]] = {}

    def admit(self, fields: dict[str, Any]) -> dict[str, Any]:
        pet_id = 1 + secrets.randbelow(ID_SPACE - 1)
        while pet_id in self.pets:
            pet_id = 1 + secrets.randbelow(ID_SPACE - 1)
        pet = {"id": pet_id, **fields}
        self.pets[pet_id] = pet
        return pet

    def listing(self, limit: int, status: str | None) -> list[dict[str, Any]]:
        chosen = []
        for pet in self.pets.values():
            if status is None or pet.get("status") == status:
                chosen.append(pet)
                if len(chosen) == limit:
                    break
        return chosen


ANIMALS = ("Okapi", "Tapir", "Quokka", "Axolotl", "Capybara", "Fennec", "Pangolin", "Kinkajou")
ORDERED_STATUSES = ("available", "pending", "sold")


def first(request: Request, name: str) -> str | None:
    values = request.query_params.getlist(name)
    return values[0] if values else None


async def list_pets(request: Request) -> Response:
    inventory: Inventory = request.app.state.inventory
    raw = first(request, "limit")
    limit = 20
    if raw is not None:
        if not INTEGER.match(raw):
            raise Problem(400, "InvalidLimit", f"limit must be an integer, got {raw[:40]!r}")
        limit = int(raw)
        if limit < 1:
            raise Problem(422, "LimitBelowMinimum", f"limit must be at least 1, got {limit}")
        if limit > 100:
            raise Problem(422, "LimitAboveMaximum", f"limit must be at most 100, got {raw[:40]}")
    status = first(request, "status")
    if status is not None and status not in PET_STATUSES:
        raise Problem(
            400, "InvalidStatus", f"status must be available, pending or sold: {status[:40]!r}"
        )
    return reply(inventory.listing(limit, status), headers={"Cache-Control": READ_CACHE})


async def create_pet(request: Request) -> Response:
    inventory: Inventory = request.app.state.inventory
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > BODY_LIMIT:
        raise Problem(413, "PayloadTooLarge", f"request bodies are limited to {BODY_LIMIT} bytes")
    media = request.headers.get("content-type")
    if media is not None and media.split(";")[0].strip().lower() != "application/json":
        raise Problem(415, "UnsupportedMediaType", "createPet accepts application/json only")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > BODY_LIMIT:
            raise Problem(
                413, "PayloadTooLarge", f"request bodies are limited to {BODY_LIMIT} bytes"
            )
    if not body:
        raise Problem(400, "EmptyRequestBody", "createPet needs a body: a NewPet")
    try:
        document = json.loads(bytes(body), parse_constant=refuse_constant)
    except ValueError as exc:  # UnicodeDecodeError is a ValueError
        raise Problem(
            400, "MalformedJson", f"the body could not be parsed as JSON: {exc}"
        ) from None
    pet = inventory.admit(new_pet(document))
    location = str(request.url_for("get_pet", pet_id=str(pet["id"])))
    return reply(pet, 201, {"Location": location})


def new_pet(document: Any) -> dict[str, Any]:
    if not isinstance(document, dict):
        raise Problem(400, "ValidationFailed", "the body must be a JSON object (NewPet)")
    name = document.get("name")
    if not isinstance(name, str):
        raise Problem(400, "ValidationFailed", "name: required, a string")
    category = document.get("categoryId")
    if isinstance(category, float) and category.is_integer():
        category = int(category)
    if isinstance(category, bool) or not isinstance(category, int) or not LOW <= category <= HIGH:
        raise Problem(400, "ValidationFailed", "categoryId: required, an int64 integer")
    pet: dict[str, Any] = {"name": name, "categoryId": category}
    if "status" in document:
        if document["status"] not in PET_STATUSES:
            raise Problem(400, "ValidationFailed", "status: one of available, pending, sold")
        pet["status"] = document["status"]
    for extra, value in document.items():
        if extra not in ("id", "name", "categoryId", "status"):
            pet[extra] = value
    return pet


def refuse_constant(token: str) -> None:
    raise ValueError(f"{token} is not a JSON number")


async def get_pet(request: Request) -> Response:
    inventory: Inventory = request.app.state.inventory
    if time.time() >= request.app.state.removal.timestamp():
        raise HTTPException(404)
    raw = request.path_params["pet_id"]
    if not INTEGER.match(raw) or not LOW <= int(raw) <= HIGH:
        raise Problem(400, "InvalidPetId", f"petId must be an int64, got {raw[:40]!r}")
    pet = inventory.pets.get(int(raw))
    if pet is None:
        raise Problem(404, "PetNotFound", f"pet {int(raw)} does not exist")
    return reply(pet, headers={"Cache-Control": READ_CACHE})


async def list_orders(request: Request) -> Response:
    return reply([], headers={"Cache-Control": READ_CACHE})


async def pets_collection(request: Request) -> Response:
    if request.method == "POST":
        return await create_pet(request)
    return await list_pets(request)


async def problem_handler(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, Problem)
    return exc.response()


async def routing_handler(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 405:
        allow = ", ".join(sorted(m.strip() for m in (exc.headers or {})["Allow"].split(",")))
        return Problem(
            405, "MethodNotAllowed", f"{request.method} is not supported here", Allow=allow
        ).response()
    return Problem(404, "ResourceNotFound", f"nothing lives at {request.url.path}").response()


# ---------------------------------------------------------------- assembly and command line


@dataclass
class Options:
    keys: dict[str, Allowance]
    window_seconds: float = 60.0
    ban_after: int = 6
    ban_within: float = 30.0
    ban_seconds: float = 90.0
    removal: datetime = REMOVAL
    pets: int = 8


def create_app(options: Options) -> Starlette:
    collection = Route("/pets", pets_collection, methods=["GET", "POST"])
    collection.methods.discard("HEAD")  # the list is not served to HEAD
    service = Router(
        [
            collection,
            Route("/pets/{pet_id}", get_pet, methods=["GET"], name="get_pet"),
            Route("/store/orders", list_orders, methods=["GET"]),
        ],
        redirect_slashes=False,
    )
    app = Starlette(
        routes=[Mount("/v1", app=service)],
        middleware=[
            Middleware(
                Gateway,
                metering=Metering(
                    options.window_seconds,
                    options.ban_after,
                    options.ban_within,
                    options.ban_seconds,
                ),
                keys=options.keys,
                removal=options.removal,
            )
        ],
        exception_handlers={Problem: problem_handler, HTTPException: routing_handler},
    )
    app.router.redirect_slashes = False
    app.state.inventory = Inventory()
    app.state.removal = options.removal
    for index in range(options.pets):
        app.state.inventory.admit(
            {
                "name": ANIMALS[index % len(ANIMALS)],
                "categoryId": 10 + index % 3,
                "status": ORDERED_STATUSES[index % 3],
            }
        )
    return app


def allowance_of(text: str) -> Allowance:
    minute, slash, day = text.partition("/")
    if not (slash and minute.isdigit() and day.isdigit() and int(minute) >= 1 and int(day) >= 1):
        raise ValueError(f"{text!r} is not PER_MIN/PER_DAY with both at least 1")
    return Allowance(int(minute), int(day))


def options_from(argv: list[str] | None) -> tuple[str, int, Options]:
    parser = argparse.ArgumentParser(
        prog=f"python -m tests.upstream.{NAME}", description="Menagerie, a Pet Store provider."
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080, help="0 picks a free port")
    parser.add_argument("--key", action="append", default=[], metavar="KEY=PLAN")
    parser.add_argument("--plan", action="append", default=[], metavar="NAME=PER_MIN/PER_DAY")
    parser.add_argument("--window-seconds", type=float, default=60.0)
    parser.add_argument("--ban-after", type=int, default=6, help="refusals that suspend")
    parser.add_argument("--ban-within", type=float, default=30.0, help="seconds they fall within")
    parser.add_argument("--ban-seconds", type=float, default=90.0, help="suspension length")
    parser.add_argument("--sunset", default=REMOVAL.isoformat(), help="getPet's removal instant")
    parser.add_argument("--pets", type=int, default=8)
    args = parser.parse_args(argv)
    plans = dict(BUILT_IN_PLANS)
    for text in args.plan:
        name, _, figures = text.partition("=")
        try:
            plans[name] = allowance_of(figures)
        except ValueError as exc:
            parser.error(f"--plan {name}: {exc}")
    keys: dict[str, Allowance] = {}
    for text in args.key:
        key, _, plan = text.partition("=")
        if not BEARER.match(f"Bearer {key}"):
            parser.error(f"--key {text!r}: the key must be a bearer token")
        if plan not in plans:
            hint = (
                " (Enterprise is custom: add --plan enterprise=N/M)" if plan == "enterprise" else ""
            )
            parser.error(
                f"--key {text!r}: no plan {plan!r}{hint}; plans: {', '.join(sorted(plans))}"
            )
        keys[key] = plans[plan]
    try:
        removal = datetime.fromisoformat(args.sunset)
    except ValueError:
        parser.error(f"--sunset {args.sunset!r} is not an ISO 8601 instant")
    if removal.tzinfo is None:
        removal = removal.replace(tzinfo=UTC)
    positive = (args.window_seconds, args.ban_within, args.ban_seconds, args.ban_after)
    if min(positive) <= 0 or args.pets < 0:
        parser.error("windows, ban figures and --pets must be positive")
    options = Options(
        keys,
        args.window_seconds,
        args.ban_after,
        args.ban_within,
        args.ban_seconds,
        removal,
        args.pets,
    )
    return args.host, args.port, options


def main(argv: list[str] | None = None) -> None:
    host, port, options = options_from(argv)
    listener = socket.create_server((host, port), backlog=2048)
    bound_host, bound_port = listener.getsockname()[:2]
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(options),
            log_level="warning",
            access_log=False,
            server_header=False,
            proxy_headers=False,
            lifespan="off",
        )
    )
    print(f"{NAME} listening on http://{bound_host}:{bound_port}/v1", flush=True)
    server.run(sockets=[listener])


if __name__ == "__main__":
    main()
