"""Kennel: a Pet Store provider written from the spec alone, by a team that routes first.

It imports nothing of mockstore and was written without reading it. Every stated
behaviour of the spec holds (``/v1``, bearer keys, Error bodies, ``limit`` 1..100
default 20, the ``status`` filter, ``201`` with the new id, ``404`` for a missing
pet, ``401`` for a missing or invalid key, ``X-RateLimit-*`` on every answer,
``429`` with ``Retry-After``, temporary bans, ``getPet`` deprecated and removed on
5 December 2030). Where the spec is silent, Kennel chose:

Headers
- ``Server: kennel/2.3.1``, ``X-Powered-By: Kennel`` and
  ``Strict-Transport-Security: max-age=31536000; includeSubDomains`` on every answer;
- ``X-Trace-Id``: 32 lower-case hex digits, new for every request (no ``X-Request-Id``);
- ``Content-Type: application/json; charset=utf-8`` on every body (UTF-8, not escaped);
- ``Location: /v1/pets/{id}`` (a path, not a URL) on ``201``;
- ``getPet`` ``200`` carries ``ETag: "<16 hex digits>"`` and
  ``Cache-Control: private, no-cache``; ``If-None-Match`` with that tag (or ``*``)
  is answered ``304`` with the same headers and no body;
- ``Deprecation: @1726358400`` (deprecated since 2024-09-15), ``Sunset: Thu, 05 Dec
  2030 12:00:00 GMT`` and ``Link: <https://developer.kennel.example/deprecations/get-pet>;
  rel="deprecation"; type="text/html"`` on ``getPet`` ``200`` and ``304`` answers only.

Refusals (every Error body also has ``traceId``, equal to the ``X-Trace-Id`` header)
- no ``Authorization``: ``401 auth.key_missing``; not ``Bearer <token>``:
  ``401 auth.scheme_invalid``; a key Kennel never issued: ``401 auth.key_unknown``;
  ``WWW-Authenticate: Bearer realm="kennel-api"``, with ``error="invalid_request"``
  (malformed) or ``error="invalid_token"`` (unknown key);
- createPet, checked in this order: over 8 KiB ``413 body.too_large`` (a
  ``Content-Length`` over it is refused before reading); empty ``400 body.empty``
  (whatever the ``Content-Type``); not ``application/json`` (parameters allowed,
  none given included) ``415 body.media_type_unsupported``; not JSON (or not
  UTF-8, or ``NaN``) ``400 body.json_malformed``; a field NewPet does not name
  (``id`` included) ``422 body.field_unknown``; not a valid NewPet ``400 body.invalid``
  (integers are strict: ``7.0`` and ``true`` are not integers);
- ``limit`` that is not decimal digits, or below 1: ``422 query.limit_invalid``;
  a ``status`` filter outside the enumeration (empty included):
  ``422 query.status_invalid``; a ``petId`` that is not an int64:
  ``400 path.pet_id_invalid``; a missing pet: ``404 pet.not_found``;
- an unknown path (a trailing slash included): ``404 route.not_found``; a known
  path with another method: ``405 route.method_not_allowed`` with ``Allow``;
- over the allowance: ``429 rate.limit_exceeded``; banned: ``429 rate.key_banned``;
- ``GET /store/orders``: ``403 orders.scope_required`` (no key carries that scope);
- ``getPet`` from its sunset on: ``410 pet.endpoint_removed``.

Rate limits
- plans: the spec's ``free`` 60/min 1,000/day, ``pro`` 300/10,000, ``business``
  1,000/100,000, ``enterprise`` only with ``--plan enterprise=N/M`` (custom), and
  Kennel's own ``sandbox`` 10/min 200/day; ``--plan NAME=PER_MIN/PER_DAY`` adds or
  overrides one;
- callers without a valid key (none, malformed, unknown) share one bucket per
  client address on the ``anonymous`` plan: 10/min, 100/day;
- windows start at a bucket's first request (not aligned to the clock): the
  minute (``--window-seconds``, 60) and the day (86,400 s) each begin at the first
  request after the previous one ended;
- ``X-RateLimit-*`` always describe the minute window, even when the day is what
  blocks; ``X-RateLimit-Reset`` is the window's end in Unix epoch **milliseconds**;
  the day allowance is enforced but never shown;
- a refused request consumes nothing; ``Retry-After`` on ``rate.limit_exceeded`` is
  whole seconds (rounded up) until the blocking window ends;
- ban: the 5th consecutive ``429`` (``--ban-after``; an admitted request ends the
  run) is itself answered ``rate.key_banned`` and starts a 300 s ban
  (``--ban-seconds``); while banned ``Retry-After`` is an HTTP-date (the ban's end),
  ``X-RateLimit-Remaining`` is 0 and ``X-RateLimit-Reset`` is the ban's end.

Semantics
- order of checks: rate limit (ban, allowance), then routing (``404``/``405``), then
  the key, then the request: an unknown path or a wrong method is ``404``/``405``
  even without a key;
- ``limit`` above 100 is clamped to 100 (``200``);
- unknown NewPet fields are refused (``422``), see above;
- ``status`` defaults to ``pending`` (new arrivals wait for a vet);
- pets are listed newest first (descending ``id``); ids are 1, 2, 3, ...;
- ``HEAD`` is served on ``listPets`` only; on ``getPet`` and ``/store/orders`` it
  is ``405`` (``Allow: GET``);
- a query parameter given twice: the last value wins;
- ``--pets N`` (12) seeds N pets, ids 1..N, statuses in turn.

Run it: ``python -m tests.upstream.kennel --port 0 --key sk_live_abc=sandbox``.
It prints ``kennel listening on http://HOST:PORT/v1`` and one access-log line per
request (method, target, status, trace id) on stdout.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import re
import secrets
import socket
import time
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

NAME = "kennel"
MEDIA_TYPE = "application/json; charset=utf-8"
MAX_BODY_BYTES = 8 * 1024
DEPRECATED_SINCE = datetime(2024, 9, 15, tzinfo=UTC)
SUNSET = datetime(2030, 12, 5, 12, 0, 0, tzinfo=UTC)
DEPRECATION_LINK = (
    '<https://developer.kennel.example/deprecations/get-pet>; rel="deprecation"; type="text/html"'
)
REALM = 'Bearer realm="kennel-api"'
CONSTANT_HEADERS = [
    (b"server", b"kennel/2.3.1"),
    (b"x-powered-by", b"Kennel"),
    (b"strict-transport-security", b"max-age=31536000; includeSubDomains"),
]
STATUSES = ("available", "pending", "sold")
NEW_PET_FIELDS = ("name", "categoryId", "status")
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
DAY_SECONDS = 86_400.0
TOKEN = re.compile(r"^[A-Za-z0-9\-._~+/]+=*$")
DIGITS = re.compile(r"^[0-9]+$")
PET_ID = re.compile(r"^-?[0-9]+$")


# --- plans and the limiter ---------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    per_minute: int
    per_day: int


PLANS: dict[str, Plan] = {
    "free": Plan(60, 1_000),
    "pro": Plan(300, 10_000),
    "business": Plan(1_000, 100_000),
    "sandbox": Plan(10, 200),
}
ANONYMOUS = Plan(10, 100)


@dataclass
class Bucket:
    minute_start: float = -math.inf
    minute_used: int = 0
    day_start: float = -math.inf
    day_used: int = 0
    streak: int = 0  # consecutive 429s
    banned_until: float = 0.0


@dataclass(frozen=True)
class Verdict:
    """What the limiter decided, and the ``X-RateLimit-*`` figures of the minute."""

    admitted: bool
    banned: bool
    limit: int
    remaining: int
    reset_ms: int
    retry_at: float = 0.0  # when a refused caller may come back

    def headers(self, now: float) -> list[tuple[bytes, bytes]]:
        pairs = [
            (b"x-ratelimit-limit", str(self.limit).encode()),
            (b"x-ratelimit-remaining", str(self.remaining).encode()),
            (b"x-ratelimit-reset", str(self.reset_ms).encode()),
        ]
        if self.banned:
            pairs.append(
                (b"retry-after", formatdate(math.ceil(self.retry_at), usegmt=True).encode())
            )
        elif not self.admitted:
            pairs.append((b"retry-after", str(max(1, math.ceil(self.retry_at - now))).encode()))
        return pairs


class Limiter:
    """Minute and day windows that start at a bucket's first request; bans after a run of 429s."""

    def __init__(self, window_seconds: float, ban_after: int, ban_seconds: float) -> None:
        self.window = window_seconds
        self.ban_after = ban_after
        self.ban_seconds = ban_seconds
        self.buckets: dict[tuple[str, str], Bucket] = {}

    def take(self, bucket_id: tuple[str, str], plan: Plan, now: float) -> Verdict:
        bucket = self.buckets.setdefault(bucket_id, Bucket())
        if bucket.banned_until > now:
            return self._banned(plan, bucket)
        if bucket.banned_until:
            bucket.banned_until = 0.0
            bucket.streak = 0
        if now >= bucket.minute_start + self.window:
            bucket.minute_start, bucket.minute_used = now, 0
        if now >= bucket.day_start + DAY_SECONDS:
            bucket.day_start, bucket.day_used = now, 0
        minute_end = bucket.minute_start + self.window
        if bucket.minute_used < plan.per_minute and bucket.day_used < plan.per_day:
            bucket.minute_used += 1
            bucket.day_used += 1
            bucket.streak = 0
            return Verdict(
                True, False, plan.per_minute, plan.per_minute - bucket.minute_used, _ms(minute_end)
            )
        bucket.streak += 1
        if bucket.streak >= self.ban_after:
            bucket.banned_until = now + self.ban_seconds
            return self._banned(plan, bucket)
        # Waiting for the minute does not help while the day is spent.
        retry_at = minute_end
        if bucket.day_used >= plan.per_day:
            retry_at = max(retry_at, bucket.day_start + DAY_SECONDS)
        remaining = plan.per_minute - bucket.minute_used
        return Verdict(False, False, plan.per_minute, remaining, _ms(minute_end), retry_at)

    @staticmethod
    def _banned(plan: Plan, bucket: Bucket) -> Verdict:
        end = bucket.banned_until
        return Verdict(False, True, plan.per_minute, 0, _ms(end), end)


def _ms(instant: float) -> int:
    return math.ceil(instant * 1000)


# --- the store ----------------------------------------------------------------------------


class Store:
    """Pets by id; ids grow from 1; listing walks from the newest."""

    def __init__(self) -> None:
        self.pets: dict[int, dict[str, Any]] = {}
        self.last_id = 0

    def add(self, name: str, category_id: int, status: str) -> dict[str, Any]:
        self.last_id += 1
        pet = {"id": self.last_id, "name": name, "categoryId": category_id, "status": status}
        self.pets[self.last_id] = pet
        return pet

    def newest_first(self, limit: int, status: str | None) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        for pet in reversed(self.pets.values()):
            if status is None or pet["status"] == status:
                found.append(pet)
                if len(found) == limit:
                    break
        return found


SEED_NAMES = ("Biscuit", "Pepper", "Juniper", "Miso", "Tofu", "Clover", "Nutmeg", "Pickle")


def seed(store: Store, count: int) -> None:
    for index in range(count):
        name = f"{SEED_NAMES[index % len(SEED_NAMES)]} {index // len(SEED_NAMES) + 1}"
        store.add(name, 1 + index % 4, STATUSES[index % 3])


# --- errors and bodies --------------------------------------------------------------------


class ApiError(Exception):
    def __init__(
        self, status: int, code: str, message: str, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers or {}


def render(document: Any) -> bytes:
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def json_response(
    document: Any, status: int = 200, headers: dict[str, str] | None = None
) -> Response:
    return Response(render(document), status, headers=headers, media_type=MEDIA_TYPE)


def error_response(error: ApiError, trace_id: str) -> Response:
    body = {
        "code": error.code,
        "message": error.message,
        "status": error.status,
        "traceId": trace_id,
    }
    return json_response(body, error.status, error.headers)


def trace_of(request: Request) -> str:
    return request.scope["state"]["kennel.trace_id"]


async def on_api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return error_response(exc, trace_of(request))


async def on_http_exception(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 405:
        allowed = sorted(m.strip() for m in (exc.headers or {}).get("Allow", "").split(","))
        allow = ", ".join(m for m in allowed if m)
        error = ApiError(
            405,
            "route.method_not_allowed",
            f"{request.method} is not allowed on {request.url.path}; allowed: {allow}",
            {"Allow": allow},
        )
    else:
        error = ApiError(404, "route.not_found", f"no route for {request.url.path}")
    return error_response(error, trace_of(request))


# --- the caller ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Caller:
    key: str | None
    plan: Plan
    problem: str | None  # None, "missing", "malformed" or "unknown"


def identify(authorization: str | None, keys: dict[str, Plan]) -> Caller:
    if authorization is None:
        return Caller(None, ANONYMOUS, "missing")
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not TOKEN.match(token):
        return Caller(None, ANONYMOUS, "malformed")
    plan = keys.get(token)
    if plan is None:
        return Caller(None, ANONYMOUS, "unknown")
    return Caller(token, plan, None)


def require_key(request: Request) -> str:
    caller: Caller = request.scope["state"]["kennel.caller"]
    if caller.problem == "missing":
        raise ApiError(
            401,
            "auth.key_missing",
            "send your API key as Authorization: Bearer <API_KEY>",
            {"WWW-Authenticate": REALM},
        )
    if caller.problem == "malformed":
        raise ApiError(
            401,
            "auth.scheme_invalid",
            "the Authorization header must be Bearer <API_KEY>",
            {"WWW-Authenticate": f'{REALM}, error="invalid_request"'},
        )
    if caller.problem == "unknown":
        raise ApiError(
            401,
            "auth.key_unknown",
            "this API key is not one Kennel issued",
            {"WWW-Authenticate": f'{REALM}, error="invalid_token"'},
        )
    assert caller.key is not None
    return caller.key


# --- the gateway: trace id, rate limit, constant headers, access log ----------------------


class Gateway:
    """Runs before the router: every answer, routed or refused, passes through here."""

    def __init__(self, app: ASGIApp, *, limiter: Limiter, keys: dict[str, Plan]) -> None:
        self.app = app
        self.limiter = limiter
        self.keys = keys

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        now = time.time()
        trace_id = secrets.token_hex(16)
        authorization = None
        for name, value in scope["headers"]:
            if name == b"authorization":
                authorization = value.decode("latin-1")
                break
        caller = identify(authorization, self.keys)
        client = scope.get("client") or ("unknown", 0)
        bucket = ("key", caller.key) if caller.key else ("address", client[0])
        verdict = self.limiter.take(bucket, caller.plan, now)
        state = scope.setdefault("state", {})
        state["kennel.trace_id"] = trace_id
        state["kennel.caller"] = caller
        extra = [*CONSTANT_HEADERS, (b"x-trace-id", trace_id.encode()), *verdict.headers(now)]
        target = scope["path"] + (
            "?" + scope["query_string"].decode("latin-1") if scope["query_string"] else ""
        )

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *extra]
                print(
                    f"{scope['method']} {target} {message['status']} trace={trace_id}", flush=True
                )
            await send(message)

        if verdict.admitted:
            await self.app(scope, receive, send_with_headers)
            return
        if verdict.banned:
            until = formatdate(math.ceil(verdict.retry_at), usegmt=True)
            error = ApiError(429, "rate.key_banned", f"banned for ignoring 429s until {until}")
        else:
            wait = max(1, math.ceil(verdict.retry_at - now))
            plan = caller.plan
            message = f"{plan.per_minute}/min, {plan.per_day}/day used up; retry in {wait} s"
            error = ApiError(429, "rate.limit_exceeded", message)
        await error_response(error, trace_id)(scope, receive, send_with_headers)


# --- the operations -----------------------------------------------------------------------


class Kennel:
    def __init__(self, store: Store, sunset: datetime) -> None:
        self.store = store
        self.sunset = sunset
        self.deprecation_headers = {
            "Deprecation": f"@{int(DEPRECATED_SINCE.timestamp())}",
            "Sunset": formatdate(sunset.timestamp(), usegmt=True),
            "Link": DEPRECATION_LINK,
        }

    async def pets(self, request: Request) -> Response:
        if request.method == "POST":
            return await self.create_pet(request)
        require_key(request)
        limit = parse_limit(request.query_params.get("limit"))
        status = request.query_params.get("status")
        if status is not None and status not in STATUSES:
            raise ApiError(
                422,
                "query.status_invalid",
                f"status must be one of {', '.join(STATUSES)}, got {status[:40]!r}",
            )
        return json_response(self.store.newest_first(limit, status))

    async def create_pet(self, request: Request) -> Response:
        require_key(request)
        raw = await read_body(request)
        if not raw:
            raise ApiError(400, "body.empty", "createPet needs a NewPet JSON body")
        media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if media_type != "application/json":
            raise ApiError(
                415,
                "body.media_type_unsupported",
                f"send the body as application/json, not {media_type[:40] or 'no Content-Type'}",
            )
        try:
            document = json.loads(raw.decode("utf-8"), parse_constant=_no_constants)
        except (UnicodeDecodeError, ValueError) as exc:
            raise ApiError(
                400, "body.json_malformed", f"the body is not valid JSON: {exc}"
            ) from None
        name, category_id, status = validate_new_pet(document)
        pet = self.store.add(name, category_id, status)
        return json_response(pet, 201, {"Location": f"/v1/pets/{pet['id']}"})

    async def get_pet(self, request: Request) -> Response:
        require_key(request)
        if datetime.now(UTC) >= self.sunset:
            raise ApiError(
                410,
                "pet.endpoint_removed",
                f"GET /pets/{{petId}} was removed on {self.sunset:%d %B %Y}; use GET /pets?status=",
            )
        raw_id = request.path_params["pet_id"]
        if not PET_ID.match(raw_id) or not INT64_MIN <= int(raw_id) <= INT64_MAX:
            raise ApiError(
                400, "path.pet_id_invalid", f"petId must be an int64, got {raw_id[:40]!r}"
            )
        pet = self.store.pets.get(int(raw_id))
        if pet is None:
            raise ApiError(404, "pet.not_found", f"no pet has id {int(raw_id)}")
        body = render(pet)
        etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
        headers = {"ETag": etag, "Cache-Control": "private, no-cache", **self.deprecation_headers}
        wanted = [tag.strip() for tag in request.headers.get("if-none-match", "").split(",")]
        if etag in wanted or "*" in wanted:
            return Response(status_code=304, headers=headers)
        return Response(body, 200, headers=headers, media_type=MEDIA_TYPE)

    async def list_orders(self, request: Request) -> Response:
        require_key(request)
        raise ApiError(403, "orders.scope_required", "this key lacks the orders:read scope")


def parse_limit(raw: str | None) -> int:
    if raw is None:
        return 20
    if not DIGITS.match(raw) or int(raw) < 1:
        raise ApiError(
            422, "query.limit_invalid", f"limit must be an integer from 1, got {raw[:40]!r}"
        )
    return min(int(raw), 100)


def validate_new_pet(document: Any) -> tuple[str, int, str]:
    if not isinstance(document, dict):
        raise ApiError(400, "body.invalid", "the body must be a JSON object (a NewPet)")
    unknown = sorted(set(document) - set(NEW_PET_FIELDS))
    if unknown:
        names = ", ".join(name[:40] for name in unknown[:5])
        raise ApiError(422, "body.field_unknown", f"NewPet has no field(s): {names}")
    name = document.get("name")
    if not isinstance(name, str):
        raise ApiError(400, "body.invalid", "name is required and must be a string")
    category_id = document.get("categoryId")
    if type(category_id) is not int or not INT64_MIN <= category_id <= INT64_MAX:
        raise ApiError(400, "body.invalid", "categoryId is required and must be an int64 integer")
    status = document.get("status", "pending")
    if status not in STATUSES:
        raise ApiError(400, "body.invalid", f"status must be one of {', '.join(STATUSES)}")
    return name, category_id, status


def _no_constants(token: str) -> None:
    raise ValueError(f"{token} is not JSON")


async def read_body(request: Request) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise ApiError(413, "body.too_large", f"the body is over {MAX_BODY_BYTES} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise ApiError(413, "body.too_large", f"the body is over {MAX_BODY_BYTES} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


# --- the application and the command line -------------------------------------------------


@dataclass
class Settings:
    keys: dict[str, Plan] = field(default_factory=dict)
    window_seconds: float = 60.0
    ban_after: int = 5
    ban_seconds: float = 300.0
    sunset: datetime = SUNSET
    pets: int = 12


def build_app(settings: Settings) -> Starlette:
    store = Store()
    seed(store, settings.pets)
    kennel = Kennel(store, settings.sunset)
    get_pet = Route("/pets/{pet_id}", kennel.get_pet, methods=["GET"])
    get_pet.methods.discard("HEAD")  # HEAD is served on the list only
    orders = Route("/store/orders", kennel.list_orders, methods=["GET"])
    orders.methods.discard("HEAD")
    api = Router(
        [Route("/pets", kennel.pets, methods=["GET", "POST"]), get_pet, orders],
        redirect_slashes=False,
    )
    app = Starlette(
        routes=[Mount("/v1", app=api)],
        middleware=[
            Middleware(
                Gateway,
                limiter=Limiter(settings.window_seconds, settings.ban_after, settings.ban_seconds),
                keys=settings.keys,
            )
        ],
        exception_handlers={ApiError: on_api_error, HTTPException: on_http_exception},
    )
    app.router.redirect_slashes = False
    return app


def parse_plan(text: str) -> Plan:
    per_minute, _, per_day = text.partition("/")
    try:
        plan = Plan(int(per_minute), int(per_day))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: write PER_MIN/PER_DAY, e.g. 10/200") from None
    if plan.per_minute < 1 or plan.per_day < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: allowances are at least 1")
    return plan


def parse_settings(argv: list[str] | None = None) -> tuple[argparse.Namespace, Settings]:
    parser = argparse.ArgumentParser(
        prog=f"python -m tests.upstream.{NAME}", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080, help="0 picks a free port")
    parser.add_argument(
        "--key", action="append", default=[], metavar="KEY=PLAN", help="issue KEY on PLAN"
    )
    parser.add_argument("--plan", action="append", default=[], metavar="NAME=PER_MIN/PER_DAY")
    parser.add_argument("--window-seconds", type=float, default=60.0, help="length of the 'minute'")
    parser.add_argument("--ban-after", type=int, default=5, help="consecutive 429s that ban")
    parser.add_argument("--ban-seconds", type=float, default=300.0)
    parser.add_argument(
        "--sunset", default=SUNSET.isoformat(), help="when getPet is removed (ISO 8601)"
    )
    parser.add_argument("--pets", type=int, default=12, help="pets in the store at start")
    args = parser.parse_args(argv)
    plans = dict(PLANS)
    for entry in args.plan:
        name, sep, figures = entry.partition("=")
        if not sep or not name:
            parser.error(f"--plan {entry!r}: write NAME=PER_MIN/PER_DAY")
        try:
            plans[name] = parse_plan(figures)
        except argparse.ArgumentTypeError as exc:
            parser.error(f"--plan {exc}")
    keys: dict[str, Plan] = {}
    for entry in args.key:
        key, sep, plan_name = entry.partition("=")
        if not sep or not TOKEN.match(key):
            parser.error(f"--key {entry!r}: write KEY=PLAN with a bearer-token KEY")
        if plan_name == "enterprise" and plan_name not in plans:
            parser.error(
                "--key …=enterprise: Enterprise is custom; give --plan enterprise=PER_MIN/PER_DAY"
            )
        if plan_name not in plans:
            parser.error(
                f"--key {entry!r}: unknown plan {plan_name!r} (known: {', '.join(sorted(plans))})"
            )
        keys[key] = plans[plan_name]
    try:
        sunset = datetime.fromisoformat(args.sunset)
    except ValueError:
        parser.error(f"--sunset {args.sunset!r}: not an ISO 8601 date-time")
    if sunset.tzinfo is None:
        sunset = sunset.replace(tzinfo=UTC)
    if args.window_seconds <= 0 or args.ban_after < 1 or args.ban_seconds <= 0 or args.pets < 0:
        parser.error("--window-seconds and --ban-seconds must be positive, --ban-after at least 1")
    settings = Settings(
        keys, args.window_seconds, args.ban_after, args.ban_seconds, sunset, args.pets
    )
    return args, settings


def main(argv: list[str] | None = None) -> None:
    args, settings = parse_settings(argv)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host, args.port))
    sock.listen(2048)  # connections made once the address is printed wait in the backlog
    host, port = sock.getsockname()[:2]
    config = uvicorn.Config(
        build_app(settings),
        log_level="warning",
        access_log=False,
        server_header=False,
        proxy_headers=False,
        lifespan="off",
    )
    print(f"{NAME} listening on http://{host}:{port}/v1", flush=True)
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
