"""Corral: a Pet Store provider written from the spec alone, behind a Kong-style gateway.

It imports nothing of mockstore and was written without reading it. Every stated
behaviour of the spec holds (``/v1``, bearer keys, Error bodies, ``limit`` 1..100
default 20, the ``status`` filter, ``201`` with the new id, ``404`` for a missing
pet, ``401`` for a missing or invalid key, ``X-RateLimit-*`` on every answer,
``429`` with ``Retry-After``, ``getPet`` deprecated and removed on 5 December
2030). Where the spec is silent, Corral's team (a Kong gateway with the advanced
rate-limiting plugin in front of the service) chose:

Rate limits: a sliding-window counter and a day in Tokyo
- each plan has a short window of its own length and a day: ``free`` 60 per 60 s
  and 1,000 a day, ``pro`` 300 per 60 s and 10,000, ``business`` 1,000 per 60 s
  and 100,000, ``enterprise`` only with ``--plan enterprise=N/SECONDS/PER_DAY``,
  and Corral's own ``hobby``: 5 per 5 s and 100 a day;
- the short window slides (Kong's sliding-window counter): the count is the
  previous fixed window's weighted by how much of it still overlaps the last W
  seconds, plus the current one's; a request is refused while it is at the limit;
- the day is the calendar day in **Asia/Tokyo** (it turns at 15:00 UTC);
- **every attempt counts**, refused ones included, in both: a client that keeps
  sending stays refused;
- callers without a valid key (none, malformed, unknown) are counted per client
  address: 25 per 60 s, 250 a day (they get ``401`` until that is spent, ``429``
  after);
- ``X-RateLimit-Limit``/``-Remaining`` describe the short window, and
  ``X-RateLimit-Reset`` the whole seconds until its current fixed window ends;
  ``X-RateLimit-Limit-Day``/``X-RateLimit-Remaining-Day`` describe the day;
- 2xx answers (only) carry the draft headers under Corral's policy names:
  ``RateLimit-Policy: "burst";q=5;w=5, "daily";q=100;w=86400`` and
  ``RateLimit: "burst";r=3;t=7, "daily";r=95;t=31000``;
- over it: ``429 rateLimitExceeded`` with ``Retry-After`` in seconds with **one
  decimal** (``7.3``, ``60.0``), until an attempt would be admitted if none were
  sent meanwhile, and ``retryAfterMs`` in the Error body; no ban.

HTTP semantics
- ``X-Request-Id``: the caller's own when it sent one matching
  ``[A-Za-z0-9._-]{8,128}``, else a new UUID;
- ``listPets`` and ``getPet`` ``200`` carry ``Last-Modified`` (the newest change
  among what they show); ``If-Modified-Since`` at or after it is ``304`` (counted,
  like every attempt); no ``ETag``;
- bodies of 256 bytes or more are coded with deflate or gzip, whichever the
  client's ``Accept-Encoding`` prefers (deflate on a tie), with
  ``Vary: Accept-Encoding``;
- CORS for ``https://app.corral.example`` only: a preflight is ``204`` with
  ``Access-Control-Allow-Origin`` that origin, ``-Allow-Methods: GET, POST``,
  ``-Allow-Headers: authorization, content-type, x-request-id``, ``-Max-Age: 3600``
  and ``Vary: Origin``, counted against the caller's address; any other origin is
  ``403 corsOriginDenied``; answers to that origin expose ``X-Request-Id, Link,
  X-Total-Count, Retry-After, RateLimit, RateLimit-Policy``;
- routes are matched by path **and** method, as the gateway does: a method a path
  does not serve (``HEAD``, ``DELETE``, ``OPTIONS`` without a preflight) is
  ``404 routeNotFound``, never ``405``;
- a trailing slash is the same route (``/v1/pets/`` lists the pets);
- a ``limit`` above 100 is clamped to 100, with
  ``Warning: 299 - "limit 500 is above 100; 100 used"``.

Collections
- ``offset`` (from 0) pages the list; every list carries ``X-Total-Count`` (the
  pets the filter keeps) and ``Link`` with ``first``, ``prev``, ``next`` and
  ``last`` as **absolute URLs** on the address the client called (its ``Host``);
- pets are listed by ``categoryId``, then by id; the ``status`` filter is exact;
- ``status`` is not stored when not sent: the ``201`` omits it and every later
  read says ``pending`` (new arrivals wait for a check-up);
- ``categoryId`` may be ``7``, ``7.0`` or ``"7"``; ``name`` is 1 to 32 characters;
  a field NewPet does not name is refused; every problem of a body is listed in
  ``details``.

Refusals: codes in lowerCamelCase; every Error has ``path`` and ``details`` (a
list of ``{"field", "issue"}``, empty when no field is at fault); messages embed
the offending value: ``missingCredentials``, ``invalidAuthorizationHeader``,
``invalidApiKey`` (``401``; ``WWW-Authenticate: Bearer realm="corral"`` on the
first only); ``routeNotFound`` (``404``); ``corsOriginDenied`` (``403``);
``invalidParameter`` (``400``: limit, offset, status, petId); ``malformedJson``
(``400``; a body without ``Content-Type`` is read as JSON);
``unsupportedMediaType`` (``415``); ``payloadTooLarge`` (``413``, over 4 KiB);
``validationFailed`` (``422``); ``petNotFound`` (``404``); ``rateLimitExceeded``
(``429``); ``maintenance`` (``503``); ``endpointGone`` (``410``).

Availability, latency, deprecation
- ``/v1/store/*`` is under maintenance during ``--maintenance FROM/UNTIL`` (by
  default the hour after start): ``503 maintenance`` with ``Retry-After`` in whole
  seconds to the window's end, before the key is checked (the gateway answers);
  outside it ``GET /store/orders`` is ``200 []``;
- ``createPet`` takes 60 to 90 ms (a write to a replicated store), the rest a few;
- every ``getPet`` answer, whatever its status, carries ``Deprecation: true``,
  ``Sunset: Thu, 05 Dec 2030 18:00:00 GMT`` and
  ``Link: <https://corral.example/changelog#get-pet>; rel="sunset"``.
- order of checks: routing, CORS, the limiter, the key, maintenance, the request.

Run it: ``python -m tests.upstream.corral --port 0 --key ck_live_abc=hobby``. It
prints ``corral listening on http://HOST:PORT/v1`` and one access-log line per
request (client, method, target, status, request id) on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import math
import random
import re
import socket
import time
import uuid
import zlib
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import formatdate, parsedate_to_datetime
from typing import Any
from urllib.parse import parse_qsl, urlencode
from zoneinfo import ZoneInfo

import uvicorn
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

NAME = "corral"
BASE = "/v1"
MEDIA_TYPE = "application/json"
MAX_BODY = 4 * 1024
CODE_FROM = 256
NAME_MAX = 32
ZONE = ZoneInfo("Asia/Tokyo")
ORIGIN = "https://app.corral.example"
SUNSET = datetime(2030, 12, 5, 18, 0, 0, tzinfo=UTC)
DEPRECATION_LINK = '<https://corral.example/changelog#get-pet>; rel="sunset"'
STATUSES = ("available", "pending", "sold")
INT64 = 2**63 - 1
TOKEN = re.compile(r"^[A-Za-z0-9\-._~+/]+=*$")
CLIENT_ID = re.compile(r"^[A-Za-z0-9._-]{8,128}$")
PET_PATH = re.compile(r"^/v1/pets/([^/]+)/?$")
EXPOSED = "X-Request-Id, Link, X-Total-Count, Retry-After, RateLimit, RateLimit-Policy"


# --- the limiter -----------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    limit: int
    window: float
    per_day: int


PLANS = {
    "free": Plan(60, 60.0, 1_000),
    "pro": Plan(300, 60.0, 10_000),
    "business": Plan(1_000, 60.0, 100_000),
    "hobby": Plan(5, 5.0, 100),
}
ANONYMOUS = Plan(25, 60.0, 250)


@dataclass
class Counter:
    window: int = -1
    current: int = 0
    previous: int = 0
    day: str = ""
    day_count: int = 0


@dataclass(frozen=True)
class Reading:
    refused: bool
    plan: Plan
    remaining: int
    reset: float  # the current fixed window's end
    day_left: int
    day_end: float
    retry: float = 0.0  # seconds


def tokyo_day(now: float) -> tuple[str, float]:
    """The calendar day in Tokyo at ``now``, and the Unix time it ends."""
    local = datetime.fromtimestamp(now, ZONE)
    midnight = datetime(local.year, local.month, local.day, tzinfo=ZONE) + timedelta(days=1)
    return local.date().isoformat(), midnight.timestamp()


class Limiter:
    def __init__(self) -> None:
        self.counters: dict[str, Counter] = {}

    def attempt(self, caller: str, plan: Plan, now: float) -> Reading:
        counter = self.counters.setdefault(caller, Counter())
        index = math.floor(now / plan.window)
        if index != counter.window:
            counter.previous = counter.current if index == counter.window + 1 else 0
            counter.window, counter.current = index, 0
        day, day_end = tokyo_day(now)
        if day != counter.day:
            counter.day, counter.day_count = day, 0
        begins = index * plan.window
        weight = 1 - (now - begins) / plan.window
        estimate = counter.previous * weight + counter.current
        refused = counter.day_count >= plan.per_day or estimate >= plan.limit
        retry = 0.0
        if refused:
            if counter.day_count >= plan.per_day:
                retry = day_end - now
            else:
                retry = self.wait(counter, plan, now, begins)
        # Every attempt counts, the refused ones too.
        counter.current += 1
        counter.day_count += 1
        left = plan.limit - (counter.previous * weight + counter.current)
        return Reading(
            refused,
            plan,
            max(0, math.floor(left)),
            begins + plan.window,
            max(0, plan.per_day - counter.day_count),
            day_end,
            retry,
        )

    @staticmethod
    def wait(counter: Counter, plan: Plan, now: float, begins: float) -> float:
        """Seconds until the sliding count is below the limit, were nothing sent meanwhile."""
        current = counter.current + 1  # this attempt counts too
        if current < plan.limit and counter.previous:
            share = 1 - (plan.limit - current) / counter.previous
            return max(0.0, begins + plan.window * share - now)
        share = 1 - plan.limit / current
        return max(0.0, begins + plan.window + plan.window * share - now)


def decimal_seconds(seconds: float) -> str:
    """Seconds with one decimal, rounded up to the tenth (``7.3``, ``60.0``)."""
    return f"{math.ceil(seconds * 10 - 1e-6) / 10:.1f}"


# --- answers ---------------------------------------------------------------------------


class Refusal(Exception):
    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        details: list[dict[str, Any]] | None = None,
        **headers: str,
    ) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.details = details or []
        self.headers = [(name.replace("_", "-"), value) for name, value in headers.items()]
        self.extra: dict[str, Any] = {}


@dataclass
class Answer:
    status: int
    body: bytes = b""
    headers: list[tuple[str, str]] = field(default_factory=list)


def json_answer(document: Any, status: int = 200) -> Answer:
    return Answer(status, json.dumps(document, ensure_ascii=False).encode())


def shown(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    return repr(text[:40])


def preferred_coding(header: str) -> str | None:
    """deflate or gzip, as the client's Accept-Encoding prefers them (deflate on a tie)."""
    weights: dict[str, float] = {}
    for part in header.split(","):
        coding, _, params = part.strip().partition(";")
        q = 1.0
        for param in params.split(";"):
            name, _, value = param.strip().partition("=")
            if name.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        weights[coding.strip().lower()] = q
    star = weights.get("*", 0.0)
    deflate, gzipped = weights.get("deflate", star), weights.get("gzip", star)
    if max(deflate, gzipped) <= 0:
        return None
    return "deflate" if deflate >= gzipped else "gzip"


# --- the store -------------------------------------------------------------------------

SEED = (("Mochi", 3), ("Tofu", 1), ("Ramen", 2), ("Sushi", 1), ("Udon", 3), ("Kiwi", 2))


class Store:
    def __init__(self, pets: int) -> None:
        self.pets: dict[int, dict[str, Any]] = {}
        self.changed: dict[int, float] = {}
        self.next_id = 500
        start = math.floor(time.time()) - 86_400
        for index in range(pets):
            name, category = SEED[index % len(SEED)]
            self.add({"name": name, "categoryId": category, "status": STATUSES[index % 3]}, start)

    def add(self, fields: dict[str, Any], now: float) -> dict[str, Any]:
        pet = {"id": self.next_id, **fields}
        self.pets[self.next_id] = pet
        self.changed[self.next_id] = math.floor(now)
        self.next_id += 1
        return pet

    @staticmethod
    def read(pet: dict[str, Any]) -> dict[str, Any]:
        return pet if "status" in pet else {**pet, "status": "pending"}


# --- the gateway and the service -------------------------------------------------------


@dataclass
class Settings:
    keys: dict[str, Plan] = field(default_factory=dict)
    pets: int = 9
    sunset: datetime = SUNSET
    maintenance: tuple[float, float] | None = None
    latency_scale: float = 1.0


class Corral:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.store = Store(settings.pets)
        self.limiter = Limiter()
        start = time.time()
        self.maintenance = settings.maintenance or (start, start + 3600.0)
        self.random = random.Random(11)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        request = Request(scope, receive)
        sent_id = request.headers.get("x-request-id", "")
        request_id = sent_id if CLIENT_ID.match(sent_id) else str(uuid.uuid4())
        address = request.client.host if request.client else "unknown"
        origin = request.headers.get("origin")
        now = time.time()
        reading: Reading | None = None
        extra: list[tuple[str, str]] = []
        try:
            handler = self.route(request)
            if origin is not None and origin != ORIGIN:
                raise Refusal(403, "corsOriginDenied", f"origin {shown(origin)} is not allowed")
            key, problem = self.caller(request.headers.get("authorization"))
            caller = f"key:{key}" if key else f"address:{address}"
            plan = self.settings.keys[key] if key else ANONYMOUS
            reading = self.limiter.attempt(caller, plan, now)
            if reading.refused:
                refusal = Refusal(
                    429,
                    "rateLimitExceeded",
                    f"rate limit exceeded; retry in {decimal_seconds(reading.retry)} s",
                    Retry_After=decimal_seconds(reading.retry),
                )
                refusal.extra["retryAfterMs"] = math.ceil(reading.retry * 1000)
                raise refusal
            if handler is None:  # a preflight from the allowed origin
                answer = Answer(
                    204,
                    headers=[
                        ("Access-Control-Allow-Methods", "GET, POST"),
                        (
                            "Access-Control-Allow-Headers",
                            "authorization, content-type, x-request-id",
                        ),
                        ("Access-Control-Max-Age", "3600"),
                    ],
                )
            else:
                begins, ends = self.maintenance
                if request.url.path.startswith(BASE + "/store/") and begins <= now < ends:
                    wait = max(1, math.ceil(ends - now))
                    refusal = Refusal(
                        503,
                        "maintenance",
                        f"the store is under maintenance for {wait} more seconds",
                        Retry_After=str(wait),
                    )
                    refusal.extra["retryAfterMs"] = math.ceil((ends - now) * 1000)
                    raise refusal
                if problem is not None:
                    raise problem
                answer = await handler(request)
        except Refusal as refusal:
            document = {
                "code": refusal.code,
                "message": refusal.message,
                "status": refusal.status,
                "path": request.url.path,
                "details": refusal.details,
                **refusal.extra,
            }
            answer = json_answer(document, refusal.status)
            answer.headers += refusal.headers
        if PET_PATH.match(request.url.path) and request.method == "GET":
            extra += [
                ("Deprecation", "true"),
                ("Sunset", formatdate(self.settings.sunset.timestamp(), usegmt=True)),
                ("Link", DEPRECATION_LINK),
            ]
        await self.send(request, scope, send, answer, reading, request_id, extra, now, address)

    async def send(
        self,
        request: Request,
        scope: Scope,
        send: Send,
        answer: Answer,
        reading: Reading | None,
        request_id: str,
        extra: list[tuple[str, str]],
        now: float,
        address: str,
    ) -> None:
        headers = [*answer.headers, *extra, ("X-Request-Id", request_id)]
        if reading is None:  # answered before the limiter (a route or an origin refused)
            key, _ = self.caller(request.headers.get("authorization"))
            plan = self.settings.keys[key] if key else ANONYMOUS
            counter = self.limiter.counters.get(f"key:{key}" if key else f"address:{address}")
            index = math.floor(now / plan.window)
            used = counter.current if counter and counter.window == index else 0
            day_used = counter.day_count if counter and counter.day == tokyo_day(now)[0] else 0
            reading = Reading(
                False,
                plan,
                max(0, plan.limit - used),
                (index + 1) * plan.window,
                max(0, plan.per_day - day_used),
                tokyo_day(now)[1],
            )
        plan = reading.plan
        headers += [
            ("X-RateLimit-Limit", str(plan.limit)),
            ("X-RateLimit-Remaining", str(reading.remaining)),
            ("X-RateLimit-Reset", str(max(1, math.ceil(reading.reset - now)))),
            ("X-RateLimit-Limit-Day", str(plan.per_day)),
            ("X-RateLimit-Remaining-Day", str(reading.day_left)),
        ]
        if 200 <= answer.status < 300:
            burst, daily = math.ceil(reading.reset - now), math.ceil(reading.day_end - now)
            headers += [
                (
                    "RateLimit-Policy",
                    f'"burst";q={plan.limit};w={int(plan.window)}, '
                    f'"daily";q={plan.per_day};w=86400',
                ),
                (
                    "RateLimit",
                    f'"burst";r={reading.remaining};t={max(1, burst)}, '
                    f'"daily";r={reading.day_left};t={max(1, daily)}',
                ),
            ]
        if request.headers.get("origin") == ORIGIN:
            headers += [("Access-Control-Allow-Origin", ORIGIN), ("Vary", "Origin")]
            if answer.status != 204:
                headers.append(("Access-Control-Expose-Headers", EXPOSED))
        body = answer.body
        if body:
            headers.append(("Content-Type", MEDIA_TYPE))
            if len(body) >= CODE_FROM:
                headers.append(("Vary", "Accept-Encoding"))
                coding = preferred_coding(request.headers.get("accept-encoding", ""))
                if coding == "deflate":
                    body = zlib.compress(body)
                elif coding == "gzip":
                    body = gzip.compress(body, mtime=0)
                if coding is not None:
                    headers.append(("Content-Encoding", coding))
        headers.append(("Content-Length", str(len(body))))
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        print(f"{address} {request.method} {target} {answer.status} {request_id}", flush=True)
        await send(
            {
                "type": "http.response.start",
                "status": answer.status,
                "headers": [(k.lower().encode(), v.encode("latin-1")) for k, v in headers],
            }
        )
        await send({"type": "http.response.body", "body": body})

    def route(self, request: Request) -> Any:
        """The handler of a path and method (None: a preflight), or ``404``."""
        path, method = request.url.path, request.method
        preflight = (
            method == "OPTIONS"
            and request.headers.get("origin")
            and request.headers.get("access-control-request-method")
        )
        routes: dict[tuple[str, str], Any] = {
            ("pets", "GET"): self.list_pets,
            ("pets", "POST"): self.create_pet,
            ("pet", "GET"): self.get_pet,
            ("orders", "GET"): self.orders,
        }
        kind = None
        if path in ("/v1/pets", "/v1/pets/"):
            kind = "pets"
        elif PET_PATH.match(path):
            kind = "pet"
        elif path in ("/v1/store/orders", "/v1/store/orders/"):
            kind = "orders"
        if kind is not None and preflight:
            return None
        if kind is None or (kind, method) not in routes:
            raise Refusal(404, "routeNotFound", f"no route matched {method} {shown(path)}")
        return routes[(kind, method)]

    def caller(self, header: str | None) -> tuple[str | None, Refusal | None]:
        if header is None:
            return None, Refusal(
                401,
                "missingCredentials",
                "no API key found in the request",
                WWW_Authenticate='Bearer realm="corral"',
            )
        scheme, _, token = header.strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not TOKEN.match(token):
            message = f"the Authorization header {shown(header)} is not Bearer <key>"
            return None, Refusal(401, "invalidAuthorizationHeader", message)
        if token not in self.settings.keys:
            masked = f"{token[:4]}...{token[-4:]}" if len(token) > 8 else "..."
            return None, Refusal(401, "invalidApiKey", f"the API key {masked} is not valid")
        return token, None

    async def pause(self, low: float, high: float) -> None:
        await asyncio.sleep(self.random.uniform(low, high) * self.settings.latency_scale)

    # -- operations -----------------------------------------------------------------

    async def list_pets(self, request: Request) -> Answer:
        await self.pause(0.002, 0.005)
        query = dict(parse_qsl(request.url.query, keep_blank_values=True))
        warnings = []
        limit, offset = 20, 0
        if "limit" in query:
            raw = query["limit"]
            if not raw.isdigit() or int(raw) < 1:
                raise Refusal(
                    400,
                    "invalidParameter",
                    f"limit must be a positive integer, got {shown(raw)}",
                    [{"field": "limit", "issue": "must be a positive integer"}],
                )
            limit = int(raw)
            if limit > 100:
                warnings.append(f'299 - "limit {limit} is above 100; 100 used"')
                limit = 100
        if "offset" in query:
            raw = query["offset"]
            if not raw.isdigit():
                raise Refusal(
                    400,
                    "invalidParameter",
                    f"offset must be an integer from 0, got {shown(raw)}",
                    [{"field": "offset", "issue": "must be an integer from 0"}],
                )
            offset = int(raw)
        status = query.get("status")
        if status is not None and status not in STATUSES:
            raise Refusal(
                400,
                "invalidParameter",
                f"status {shown(status)} is not one of available, pending, sold",
                [{"field": "status", "issue": "must be one of available, pending, sold"}],
            )
        pets = sorted(self.store.pets.values(), key=lambda pet: (pet["categoryId"], pet["id"]))
        shown_pets = [self.store.read(pet) for pet in pets]
        if status is not None:
            shown_pets = [pet for pet in shown_pets if pet["status"] == status]
        page = shown_pets[offset : offset + limit]
        answer = json_answer(page)
        answer.headers.append(("X-Total-Count", str(len(shown_pets))))
        answer.headers.append(("Link", self.links(request, limit, offset, len(shown_pets), status)))
        answer.headers += [("Warning", warning) for warning in warnings]
        changed = max((self.store.changed[pet["id"]] for pet in page), default=0)
        return self.conditional(request, answer, changed)

    @staticmethod
    def links(request: Request, limit: int, offset: int, total: int, status: str | None) -> str:
        host = request.headers.get("host", "localhost")
        base = f"http://{host}{BASE}/pets"

        def at(start: int) -> str:
            params = {"limit": limit, "offset": start, **({"status": status} if status else {})}
            return f"{base}?{urlencode(params)}"

        last = max(0, (total - 1) // limit * limit) if total else 0
        links = [f'<{at(0)}>; rel="first"']
        if offset > 0:
            links.append(f'<{at(max(0, offset - limit))}>; rel="prev"')
        if offset + limit < total:
            links.append(f'<{at(offset + limit)}>; rel="next"')
        links.append(f'<{at(last)}>; rel="last"')
        return ", ".join(links)

    @staticmethod
    def conditional(request: Request, answer: Answer, changed: float) -> Answer:
        if not changed:
            return answer
        answer.headers.append(("Last-Modified", formatdate(changed, usegmt=True)))
        since = request.headers.get("if-modified-since")
        if since:
            try:
                if parsedate_to_datetime(since).timestamp() >= changed:
                    return Answer(304, headers=answer.headers)
            except (TypeError, ValueError):
                pass  # an unreadable date is ignored, as RFC 9110 says
        return answer

    async def create_pet(self, request: Request) -> Answer:
        await self.pause(0.06, 0.09)
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > MAX_BODY:
            raise Refusal(413, "payloadTooLarge", f"{declared} bytes is over {MAX_BODY}")
        media = request.headers.get("content-type")
        if media is not None and media.split(";")[0].strip().lower() != "application/json":
            raise Refusal(415, "unsupportedMediaType", f"{shown(media)} is not application/json")
        raw = b""
        async for chunk in request.stream():
            raw += chunk
            if len(raw) > MAX_BODY:
                raise Refusal(413, "payloadTooLarge", f"the body is over {MAX_BODY} bytes")
        try:
            document = json.loads(raw)
        except ValueError as exc:
            raise Refusal(400, "malformedJson", f"the body is not JSON: {exc}") from None
        pet = validated(document)
        return json_answer(self.store.add(pet, time.time()), 201)

    async def get_pet(self, request: Request) -> Answer:
        await self.pause(0.002, 0.005)
        if datetime.now(UTC) >= self.settings.sunset:
            raise Refusal(410, "endpointGone", "getPet is gone; use GET /v1/pets?status=")
        raw = PET_PATH.match(request.url.path).group(1)  # type: ignore[union-attr]
        if not re.fullmatch(r"-?[0-9]{1,19}", raw) or abs(int(raw)) > INT64:
            raise Refusal(
                400,
                "invalidParameter",
                f"petId {shown(raw)} is not an int64",
                [{"field": "petId", "issue": "must be an int64"}],
            )
        pet = self.store.pets.get(int(raw))
        if pet is None:
            raise Refusal(404, "petNotFound", f"pet {int(raw)} was not found")
        answer = json_answer(self.store.read(pet))
        return self.conditional(request, answer, self.store.changed[pet["id"]])

    async def orders(self, request: Request) -> Answer:
        return json_answer([])


def validated(document: Any) -> dict[str, Any]:
    """The NewPet in ``document``, or ``422`` listing every problem in ``details``."""
    if not isinstance(document, dict):
        raise Refusal(
            422,
            "validationFailed",
            "1 problem: the body must be an object",
            [{"field": "(body)", "issue": "must be an object"}],
        )
    problems: list[dict[str, Any]] = []
    name = document.get("name")
    if not isinstance(name, str):
        problems.append({"field": "name", "issue": f"must be a string, got {shown(name)}"})
    elif not 1 <= len(name) <= NAME_MAX:
        problems.append(
            {"field": "name", "issue": f"must be 1 to {NAME_MAX} characters, got {len(name)}"}
        )
    category = document.get("categoryId")
    integral = isinstance(category, float) and category.is_integer()
    if integral or (isinstance(category, str) and re.fullmatch(r"-?[0-9]{1,19}", category)):
        category = int(category)
    if isinstance(category, bool) or not isinstance(category, int) or abs(category) > INT64:
        problems.append(
            {"field": "categoryId", "issue": f"must be an int64, got {shown(category)}"}
        )
    status = document.get("status")
    if "status" in document and status not in STATUSES:
        problems.append({"field": "status", "issue": f"must be a PetStatus, got {shown(status)}"})
    for unknown in sorted(set(document) - {"name", "categoryId", "status"})[:10]:
        problems.append({"field": unknown[:40], "issue": "is not a NewPet field"})
    if problems:
        listed = "; ".join(f"{p['field']}: {p['issue']}" for p in problems)
        raise Refusal(422, "validationFailed", f"{len(problems)} problem(s): {listed}", problems)
    pet: dict[str, Any] = {"name": name, "categoryId": category}
    if "status" in document:
        pet["status"] = status
    return pet


# --- the command line ------------------------------------------------------------------


def parse_plan(text: str) -> Plan:
    parts = text.split("/")
    try:
        plan = Plan(int(parts[0]), float(parts[1]), int(parts[2]))
    except (ValueError, IndexError):
        raise ValueError(f"{text!r}: write COUNT/WINDOW_SECONDS/PER_DAY, e.g. 5/10/100") from None
    if plan.limit < 1 or plan.window <= 0 or plan.per_day < 1:
        raise ValueError(f"{text!r}: counts of at least 1 and a positive window")
    return plan


def _instant(text: str) -> float:
    moment = datetime.fromisoformat(text)
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def settings_from(argv: list[str] | None) -> tuple[str, int, Settings]:
    parser = argparse.ArgumentParser(
        prog=f"python -m tests.upstream.{NAME}", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080, help="0 picks a free port")
    parser.add_argument("--key", action="append", default=[], metavar="KEY=PLAN")
    parser.add_argument("--plan", action="append", default=[], metavar="NAME=N/SECONDS/PER_DAY")
    parser.add_argument("--pets", type=int, default=9)
    parser.add_argument("--sunset", default=SUNSET.isoformat(), help="getPet's removal")
    parser.add_argument("--maintenance", metavar="FROM/UNTIL", help="the store's window")
    parser.add_argument("--latency-scale", type=float, default=1.0)
    args = parser.parse_args(argv)
    plans = dict(PLANS)
    for text in args.plan:
        name, _, figures = text.partition("=")
        try:
            plans[name] = parse_plan(figures)
        except ValueError as exc:
            parser.error(f"--plan {exc}")
    keys: dict[str, Plan] = {}
    for text in args.key:
        key, _, plan = text.partition("=")
        if not TOKEN.match(key) or plan not in plans:
            parser.error(f"--key {text!r}: KEY=PLAN, a bearer token and one of {sorted(plans)}")
        keys[key] = plans[plan]
    try:
        sunset = datetime.fromtimestamp(_instant(args.sunset), UTC)
        window = None
        if args.maintenance:
            begins, _, ends = args.maintenance.partition("/")
            window = (_instant(begins), _instant(ends))
            if window[1] <= window[0]:
                raise ValueError("the maintenance window must end after it begins")
    except ValueError as exc:
        parser.error(str(exc))
    if args.pets < 0 or args.latency_scale < 0:
        parser.error("--pets and --latency-scale must not be negative")
    return args.host, args.port, Settings(keys, args.pets, sunset, window, args.latency_scale)


def main(argv: list[str] | None = None) -> None:
    host, port, settings = settings_from(argv)
    listener = socket.create_server((host, port), backlog=2048)
    bound_host, bound_port = listener.getsockname()[:2]
    config = uvicorn.Config(
        Corral(settings),
        log_level="warning",
        access_log=False,
        server_header=False,
        proxy_headers=False,
        lifespan="off",
    )
    print(f"{NAME} listening on http://{bound_host}:{bound_port}{BASE}", flush=True)
    uvicorn.Server(config).run(sockets=[listener])


if __name__ == "__main__":
    main()
