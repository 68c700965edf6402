"""Tollgate: a Pet Store provider written from the spec alone, behind an Envoy-style edge.

It imports nothing of mockstore and was written without reading it. Every stated
behaviour of the spec holds (``/v1``, bearer keys, Error bodies, ``limit`` 1..100
default 20, the ``status`` filter, ``201`` with the new id, ``404`` for a missing
pet, ``401`` for a missing or invalid key, ``X-RateLimit-*`` on every answer,
``429`` with ``Retry-After``, ``getPet`` deprecated and removed on 5 December
2030). Where the spec is silent, Tollgate's team (Stripe-like conventions, an
Envoy local rate limit in front) chose:

Rate limits: a token bucket per key (Envoy's local rate limit)
- plans: ``free`` 60 tokens refilled at 1/s, ``pro`` 300 at 5/s, ``business``
  1,000 at 1000/60 per s, ``enterprise`` only with ``--plan enterprise=CAP/PER_S``,
  and Tollgate's own ``starter``: 5 tokens, refilled at 0.5/s (one every 2 s);
  the spec's per-day figures are not enforced (the bucket is the only limit);
- what counts: every request that reaches the service takes one token; an answer
  ``304`` gives its token back (revalidating is free); a refused request takes
  nothing; what the edge answers itself (preflight, redirect, ``404``/``405``)
  takes nothing;
- callers without a valid key have no allowance at all: they get ``401``, never
  ``429``, and their answers say ``X-RateLimit-Limit: 0``, ``Remaining: 0``,
  ``Reset``: now;
- ``X-RateLimit-Limit`` is the bucket's capacity, ``X-RateLimit-Remaining`` the
  whole tokens left, ``X-RateLimit-Reset`` the Unix time at which the bucket is
  full again, **with milliseconds** (``1772366431.250``);
- over it: ``429 rate-limited`` with ``Retry-After`` in **decimal seconds** until
  one token is back, to the millisecond, rounded up (``1.437``), and
  ``x-envoy-ratelimited: true``; no ban, however long a client keeps sending.

HTTP semantics
- ``Request-Id: req_`` + 24 letters and digits on every answer (a client's own id
  is never echoed); Error bodies carry it as ``requestId``;
- ``listPets`` and ``getPet`` ``200`` carry a weak ``ETag`` (``W/"<crc32 hex>"``);
  ``If-None-Match`` (a list, weak comparison, or ``*``) is answered ``304`` with
  the ``ETag`` and no body;
- bodies of 1,024 bytes or more are gzip-coded when ``Accept-Encoding`` accepts
  gzip (q-values read; ``gzip;q=0`` refuses it), with ``Vary: Accept-Encoding``;
- CORS: a preflight (``OPTIONS`` with ``Origin`` and
  ``Access-Control-Request-Method``) on any ``/v1`` path is ``204`` at the edge,
  before authentication, uncounted: ``Access-Control-Allow-Origin: *``,
  ``-Allow-Methods: GET, HEAD, POST, OPTIONS``, ``-Allow-Headers: Authorization,
  Content-Type, If-None-Match, Idempotency-Key``, ``-Max-Age: 600``; any answer to
  a request with ``Origin`` carries ``Access-Control-Allow-Origin: *`` and
  ``Access-Control-Expose-Headers`` naming the headers a client reads;
  ``OPTIONS`` without a preflight is ``204`` with ``Allow``;
- ``Allow`` per path: ``/pets`` ``GET, HEAD, POST, OPTIONS``; ``/pets/{id}`` and
  ``/store/orders`` ``GET, HEAD, OPTIONS``; any other method is ``405
  method-not-allowed`` with it; ``HEAD`` is served wherever ``GET`` is;
- a trailing slash (``/v1/pets/``) is ``308`` to the path without it (``Location``
  a path, the query kept), at the edge, uncounted;
- unknown NewPet fields are dropped, and the ``201`` says so in
  ``Warning: 299 tollgate "dropped unknown field(s): nickname"``.

Collections
- pets are listed by ``name``, **case-insensitively** (``apollo`` before ``Biscuit``),
  then by id; ``limit`` pages them with an opaque ``cursor``: a page with more
  after it carries ``Link: </v1/pets?limit=2&cursor=...>; rel="next"`` (a path;
  the filter kept); no total count; a cursor Tollgate did not write is ``400``;
- the ``status`` filter ignores case (``SOLD`` finds the sold pets);
- ``status`` has no stored default: the ``201`` omits it when it was not sent,
  and every later read says ``available`` (the filter finds them so);
- ``categoryId`` may be a string of digits (``"7"``, returned as ``7``); ``7.0`` and
  ``true`` are refused; ``name`` is 1 to 64 characters;
- the order of checks: edge (preflight, slash), routing (``404``/``405``), the key
  (``401``), the bucket (``429``), then the request.

Refusals: codes in kebab-case; every Error has ``requestId`` and ``docUrl``
(``https://docs.tollgate.example/errors/<code>``), and ``param`` naming the
parameter or field at fault; messages quote the offending value:
``key-missing``, ``authorization-malformed``, ``key-invalid`` (``401``, with
``WWW-Authenticate: Bearer``); ``route-not-found`` (``404``); ``method-not-allowed``
(``405``); ``invalid-parameter`` (``400``: limit, status, cursor);
``unsupported-media-type`` (``415``); ``body-too-large`` (``413``, over 16 KiB);
``invalid-body`` (``400``, not JSON or not an object); ``invalid-field`` (``400``);
``invalid-pet-id`` (``400``); ``pet-not-found`` (``404``); ``rate-limited``
(``429``); ``store-maintenance`` (``503``); ``endpoint-removed`` (``410``, getPet
from its sunset on).

Availability, latency, deprecation
- ``/v1/store/*`` is under maintenance from ``--maintenance FROM/UNTIL`` (ISO 8601;
  by default the hour after start): ``503 store-maintenance`` with ``Retry-After``
  as an **HTTP-date** (the window's end), after authentication and the bucket;
  outside the window ``GET /store/orders`` is ``200 []``;
- ``listPets`` takes 25 to 45 ms (the catalogue is read from a slow store), the
  rest a few ms (``--latency-scale`` scales it; ``x-envoy-upstream-service-time``
  says how long);
- ``getPet`` answers to a valid key carry ``Deprecation: @1740787200`` (1 March
  2025), ``Sunset: Thu, 05 Dec 2030 00:00:00 GMT`` and
  ``Link: <https://docs.tollgate.example/migrations/get-pet>; rel="deprecation"``.

Run it: ``python -m tests.upstream.tollgate --port 0 --key sk_test_abc=starter``.
It prints ``tollgate listening on http://HOST:PORT/v1`` and one access-log line per
request (method, target, status, request id) on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import gzip
import json
import math
import random
import re
import secrets
import socket
import string
import time
import zlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import formatdate
from typing import Any
from urllib.parse import parse_qsl, urlencode

import uvicorn
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

NAME = "tollgate"
BASE = "/v1"
MEDIA_TYPE = "application/json"
MAX_BODY = 16 * 1024
GZIP_FROM = 1024
NAME_MAX = 64
DOCS = "https://docs.tollgate.example/errors/"
DEPRECATED_SINCE = 1740787200  # 2025-03-01T00:00:00Z
SUNSET = datetime(2030, 12, 5, tzinfo=UTC)
DEPRECATION_LINK = '<https://docs.tollgate.example/migrations/get-pet>; rel="deprecation"'
STATUSES = ("available", "pending", "sold")
INT64 = 2**63 - 1
TOKEN = re.compile(r"^[A-Za-z0-9\-._~+/]+=*$")
ALPHABET = string.ascii_letters + string.digits
EXPOSED = (
    "Request-Id, ETag, Link, Retry-After, Warning, X-RateLimit-Limit, "
    "X-RateLimit-Remaining, X-RateLimit-Reset"
)
ALLOW = {
    "pets": "GET, HEAD, POST, OPTIONS",
    "pet": "GET, HEAD, OPTIONS",
    "orders": "GET, HEAD, OPTIONS",
}
PET_PATH = re.compile(r"^/v1/pets/([^/]+)$")


# --- the token bucket ------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    capacity: int
    per_second: float


PLANS = {
    "free": Plan(60, 1.0),
    "pro": Plan(300, 5.0),
    "business": Plan(1000, 1000 / 60),
    "starter": Plan(5, 0.5),
}


@dataclass
class Bucket:
    tokens: float
    updated: float


class Buckets:
    """One token bucket per key, refilled continuously."""

    def __init__(self) -> None:
        self.buckets: dict[str, Bucket] = {}

    def _refilled(self, key: str, plan: Plan, now: float) -> Bucket:
        bucket = self.buckets.setdefault(key, Bucket(float(plan.capacity), now))
        bucket.tokens = min(plan.capacity, bucket.tokens + (now - bucket.updated) * plan.per_second)
        bucket.updated = now
        return bucket

    def take(self, key: str, plan: Plan, now: float) -> float | None:
        """Take a token: None when taken, else the seconds until one is back."""
        bucket = self._refilled(key, plan, now)
        if bucket.tokens >= 1.0:
            bucket.tokens -= 1.0
            return None
        return (1.0 - bucket.tokens) / plan.per_second

    def give_back(self, key: str, plan: Plan) -> None:
        bucket = self.buckets[key]
        bucket.tokens = min(plan.capacity, bucket.tokens + 1.0)

    def headers(self, key: str | None, plan: Plan | None, now: float) -> list[tuple[str, str]]:
        if key is None or plan is None:
            return [
                ("X-RateLimit-Limit", "0"),
                ("X-RateLimit-Remaining", "0"),
                ("X-RateLimit-Reset", _ms(now)),
            ]
        bucket = self._refilled(key, plan, now)
        full_at = now + (plan.capacity - bucket.tokens) / plan.per_second
        return [
            ("X-RateLimit-Limit", str(plan.capacity)),
            ("X-RateLimit-Remaining", str(math.floor(bucket.tokens + 1e-9))),
            ("X-RateLimit-Reset", _ms(full_at)),
        ]


def _ms(instant: float) -> str:
    """A Unix time with milliseconds, rounded up: never before the instant it names."""
    return f"{math.ceil(instant * 1000 - 1e-6) / 1000:.3f}"


# --- answers ---------------------------------------------------------------------------


class Refusal(Exception):
    def __init__(
        self, status: int, code: str, message: str, param: str | None = None, **headers: str
    ) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.param = status, code, message, param
        self.headers = [(name.replace("_", "-"), value) for name, value in headers.items()]


@dataclass
class Answer:
    status: int
    body: bytes = b""
    headers: list[tuple[str, str]] = field(default_factory=list)
    etag: str | None = None


def json_answer(document: Any, status: int = 200, **headers: str) -> Answer:
    body = json.dumps(document, separators=(",", ":")).encode()
    return Answer(status, body, [(k.replace("_", "-"), v) for k, v in headers.items()])


def quoted(value: str) -> str:
    """An offending value as a message shows it: quoted, and never more than 40 characters."""
    return json.dumps(value[:40] + ("..." if len(value) > 40 else ""))


def accepts_gzip(header: str) -> bool:
    best: float | None = None
    for part in header.split(","):
        coding, _, params = part.strip().partition(";")
        coding = coding.strip().lower()
        if coding not in ("gzip", "*"):
            continue
        q = 1.0
        for param in params.split(";"):
            name, _, value = param.strip().partition("=")
            if name.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        if coding == "gzip" or best is None:
            best = q
    return best is not None and best > 0


# --- the store -------------------------------------------------------------------------

SEED_NAMES = (
    "biscuit",
    "Apollo",
    "cleo",
    "Dottie",
    "ember",
    "Fig",
    "ghost",
    "Hazel",
    "iris",
    "Juno",
)


class Store:
    def __init__(self, pets: int) -> None:
        self.pets: dict[int, dict[str, Any]] = {}
        self.next_id = 1
        for index in range(pets):
            pet: dict[str, Any] = {
                "name": SEED_NAMES[index % len(SEED_NAMES)],
                "categoryId": 1 + index % 4,
            }
            if index % 4 != 3:  # every fourth seeded pet was created without a status
                pet["status"] = STATUSES[index % 3]
            self.add(pet)

    def add(self, fields: dict[str, Any]) -> dict[str, Any]:
        pet = {"id": self.next_id, **fields}
        self.pets[self.next_id] = pet
        self.next_id += 1
        return pet

    @staticmethod
    def read(pet: dict[str, Any]) -> dict[str, Any]:
        """A pet as every read shows it: ``available`` where no status was stored."""
        return pet if "status" in pet else {**pet, "status": "available"}

    def listing(self) -> list[dict[str, Any]]:
        shown = [self.read(pet) for pet in self.pets.values()]
        return sorted(shown, key=lambda pet: (pet["name"].casefold(), pet["id"]))


def cursor_of(pet: dict[str, Any]) -> str:
    raw = json.dumps([pet["name"].casefold(), pet["id"]]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def read_cursor(text: str) -> tuple[str, int]:
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        name, pet_id = json.loads(raw)
        if isinstance(name, str) and type(pet_id) is int:
            return name, pet_id
    except (ValueError, TypeError):
        pass
    raise Refusal(
        400, "invalid-parameter", f"cursor {quoted(text)} is not one Tollgate wrote", "cursor"
    )


# --- the service -----------------------------------------------------------------------


@dataclass
class Settings:
    keys: dict[str, Plan] = field(default_factory=dict)
    pets: int = 10
    sunset: datetime = SUNSET
    maintenance: tuple[float, float] | None = None
    latency_scale: float = 1.0


class Tollgate:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.store = Store(settings.pets)
        self.buckets = Buckets()
        start = time.time()
        self.maintenance = settings.maintenance or (start, start + 3600.0)
        self.random = random.Random(7)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        started = time.monotonic()
        request = Request(scope, receive)
        request_id = "req_" + "".join(secrets.choice(ALPHABET) for _ in range(24))
        key, problem = self.caller(request.headers.get("authorization"))
        plan = self.settings.keys.get(key) if key else None
        taken = False
        try:
            answer = self.edge(request)
            if answer is None:
                route = self.route(request)
                if problem is not None:
                    raise problem
                assert key is not None and plan is not None
                wait = self.buckets.take(key, plan, time.time())
                if wait is not None:
                    retry = math.ceil(wait * 1000 - 1e-6) / 1000
                    raise Refusal(
                        429,
                        "rate-limited",
                        f"the {plan.capacity}-token bucket is empty; one is back in {retry:.3f} s",
                        Retry_After=f"{max(retry, 0.001):.3f}",
                        x_envoy_ratelimited="true",
                    )
                taken = True
                answer = await route(request)
        except Refusal as refusal:
            document: dict[str, Any] = {
                "code": refusal.code,
                "message": refusal.message,
                "status": refusal.status,
                "requestId": request_id,
                "docUrl": DOCS + refusal.code,
            }
            if refusal.param is not None:
                document["param"] = refusal.param
            answer = json_answer(document, refusal.status)
            answer.headers += refusal.headers
        if taken and answer.status == 304 and key is not None and plan is not None:
            self.buckets.give_back(key, plan)
        headers = [
            *answer.headers,
            ("Request-Id", request_id),
            *self.buckets.headers(key if plan else None, plan, time.time()),
        ]
        if request.headers.get("origin") and answer.status != 204:
            headers += [
                ("Access-Control-Allow-Origin", "*"),
                ("Access-Control-Expose-Headers", EXPOSED),
            ]
        body = answer.body
        if answer.etag is not None:
            headers.append(("ETag", answer.etag))
        if body:
            headers.append(("Content-Type", MEDIA_TYPE))
            if len(body) >= GZIP_FROM:
                headers.append(("Vary", "Accept-Encoding"))
                if accepts_gzip(request.headers.get("accept-encoding", "")):
                    body = gzip.compress(body, mtime=0)
                    headers.append(("Content-Encoding", "gzip"))
        headers.append(("Content-Length", str(len(body))))
        spent = (time.monotonic() - started) * 1000
        headers.append(("x-envoy-upstream-service-time", str(round(spent))))
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        print(f"{request.method} {target} {answer.status} {request_id}", flush=True)
        await send(
            {
                "type": "http.response.start",
                "status": answer.status,
                "headers": [(k.lower().encode(), v.encode("latin-1")) for k, v in headers],
            }
        )
        await send(
            {"type": "http.response.body", "body": b"" if request.method == "HEAD" else body}
        )

    def caller(self, header: str | None) -> tuple[str | None, Refusal | None]:
        challenge = {"WWW_Authenticate": 'Bearer realm="tollgate"'}
        if header is None:
            return None, Refusal(
                401, "key-missing", "send your key as Authorization: Bearer <key>", **challenge
            )
        scheme, _, token = header.strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not TOKEN.match(token):
            return None, Refusal(
                401,
                "authorization-malformed",
                f"Authorization must be Bearer <key>, got {quoted(header)}",
                **challenge,
            )
        if token not in self.settings.keys:
            masked = token[:7] + "*" * 4 + token[-4:] if len(token) > 11 else "****"
            return None, Refusal(401, "key-invalid", f"no such API key: {masked}", **challenge)
        return token, None

    def edge(self, request: Request) -> Answer | None:
        """What the edge answers itself: preflights, OPTIONS, trailing slashes."""
        path = request.url.path
        if request.method == "OPTIONS" and path.startswith(BASE + "/"):
            if request.headers.get("origin") and request.headers.get(
                "access-control-request-method"
            ):
                return Answer(
                    204,
                    headers=[
                        ("Access-Control-Allow-Origin", "*"),
                        ("Access-Control-Allow-Methods", "GET, HEAD, POST, OPTIONS"),
                        (
                            "Access-Control-Allow-Headers",
                            "Authorization, Content-Type, If-None-Match, Idempotency-Key",
                        ),
                        ("Access-Control-Max-Age", "600"),
                    ],
                )
            kind = self.kind(path.rstrip("/") if path != BASE + "/" else path)
            if kind is not None:
                return Answer(204, headers=[("Allow", ALLOW[kind])])
        if path.endswith("/") and len(path) > len(BASE) + 1 and path.startswith(BASE + "/"):
            location = path.rstrip("/") + (f"?{request.url.query}" if request.url.query else "")
            return Answer(308, headers=[("Location", location)])
        return None

    @staticmethod
    def kind(path: str) -> str | None:
        if path == "/v1/pets":
            return "pets"
        if PET_PATH.match(path):
            return "pet"
        if path == "/v1/store/orders":
            return "orders"
        return None

    def route(self, request: Request) -> Any:
        kind = self.kind(request.url.path)
        if kind is None:
            raise Refusal(404, "route-not-found", f"nothing at {quoted(request.url.path)}")
        method = "GET" if request.method == "HEAD" else request.method
        handlers = {
            ("pets", "GET"): self.list_pets,
            ("pets", "POST"): self.create_pet,
            ("pet", "GET"): self.get_pet,
            ("orders", "GET"): self.orders,
        }
        handler = handlers.get((kind, method))
        if handler is None:
            raise Refusal(
                405,
                "method-not-allowed",
                f"{request.method} is not served at {request.url.path}",
                Allow=ALLOW[kind],
            )
        return handler

    async def pause(self, low: float, high: float) -> None:
        await asyncio.sleep(self.random.uniform(low, high) * self.settings.latency_scale)

    # -- operations -----------------------------------------------------------------

    async def list_pets(self, request: Request) -> Answer:
        await self.pause(0.025, 0.045)
        query = dict(parse_qsl(request.url.query, keep_blank_values=True))
        limit = 20
        if "limit" in query:
            raw = query["limit"]
            if not raw.isdigit() or not 1 <= int(raw) <= 100:
                raise Refusal(
                    400,
                    "invalid-parameter",
                    f"limit must be an integer from 1 to 100, got {quoted(raw)}",
                    "limit",
                )
            limit = int(raw)
        status = query.get("status")
        if status is not None and status.lower() not in STATUSES:
            raise Refusal(
                400,
                "invalid-parameter",
                f"status must be available, pending or sold, got {quoted(status)}",
                "status",
            )
        pets = self.store.listing()
        if status is not None:
            pets = [pet for pet in pets if pet["status"] == status.lower()]
        if "cursor" in query:
            after = read_cursor(query["cursor"])
            pets = [pet for pet in pets if (pet["name"].casefold(), pet["id"]) > after]
        page = pets[:limit]
        answer = json_answer(page)
        if len(pets) > limit:
            params = {
                "limit": str(limit),
                **({"status": status} if status else {}),
                "cursor": cursor_of(page[-1]),
            }
            answer.headers.append(("Link", f'<{BASE}/pets?{urlencode(params)}>; rel="next"'))
        return conditional(request, answer)

    async def create_pet(self, request: Request) -> Answer:
        await self.pause(0.002, 0.004)
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > MAX_BODY:
            raise Refusal(
                413,
                "body-too-large",
                f"bodies are at most {MAX_BODY} bytes, this one is {declared}",
            )
        media = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if media != "application/json":
            raise Refusal(
                415,
                "unsupported-media-type",
                f"send application/json, not {quoted(media or 'nothing')}",
            )
        raw = b""
        async for chunk in request.stream():
            raw += chunk
            if len(raw) > MAX_BODY:
                raise Refusal(413, "body-too-large", f"bodies are at most {MAX_BODY} bytes")
        try:
            document = json.loads(raw)
        except ValueError:
            raise Refusal(400, "invalid-body", "the body is not JSON") from None
        if not isinstance(document, dict):
            raise Refusal(400, "invalid-body", "the body must be a JSON object (a NewPet)")
        pet = new_pet(document)
        dropped = sorted(set(document) - {"name", "categoryId", "status"})
        answer = json_answer(self.store.add(pet), 201)
        if dropped:
            names = ", ".join(name[:40] for name in dropped[:5])
            answer.headers.append(("Warning", f'299 tollgate "dropped unknown field(s): {names}"'))
        return answer

    async def get_pet(self, request: Request) -> Answer:
        await self.pause(0.002, 0.004)
        deprecation = [
            ("Deprecation", f"@{DEPRECATED_SINCE}"),
            ("Sunset", formatdate(self.settings.sunset.timestamp(), usegmt=True)),
            ("Link", DEPRECATION_LINK),
        ]
        if datetime.now(UTC) >= self.settings.sunset:
            raise Refusal(
                410,
                "endpoint-removed",
                "GET /v1/pets/{id} was removed; list with GET /v1/pets?status=",
            )
        raw = PET_PATH.match(request.url.path).group(1)  # type: ignore[union-attr]
        try:
            if not re.fullmatch(r"-?[0-9]{1,19}", raw) or abs(int(raw)) > INT64:
                raise Refusal(
                    400,
                    "invalid-pet-id",
                    f"a pet id is a 64-bit integer, got {quoted(raw)}",
                    "petId",
                )
            pet = self.store.pets.get(int(raw))
            if pet is None:
                raise Refusal(404, "pet-not-found", f"no pet has the id {int(raw)}", "petId")
        except Refusal as refusal:
            refusal.headers += deprecation
            raise
        answer = json_answer(self.store.read(pet))
        answer.headers += deprecation
        return conditional(request, answer)

    async def orders(self, request: Request) -> Answer:
        begins, ends = self.maintenance
        if begins <= time.time() < ends:
            until = formatdate(math.ceil(ends), usegmt=True)
            raise Refusal(
                503,
                "store-maintenance",
                f"the store area is under maintenance until {until}",
                Retry_After=until,
            )
        return json_answer([])


def conditional(request: Request, answer: Answer) -> Answer:
    """The answer with its weak ETag, or ``304`` when the client holds it already."""
    tag = f'W/"{zlib.crc32(answer.body):08x}"'
    answer.etag = tag
    wanted = [
        t.strip().removeprefix("W/")
        for t in request.headers.get("if-none-match", "").split(",")
        if t.strip()
    ]
    if "*" in wanted or tag.removeprefix("W/") in wanted:
        return Answer(304, headers=answer.headers, etag=tag)
    return answer


def new_pet(document: dict[str, Any]) -> dict[str, Any]:
    name = document.get("name")
    if not isinstance(name, str):
        raise Refusal(
            400,
            "invalid-field",
            f"name is required and must be a string, got {json.dumps(name)[:40]}",
            "name",
        )
    if not 1 <= len(name) <= NAME_MAX:
        raise Refusal(
            400,
            "invalid-field",
            f"name must be 1 to {NAME_MAX} characters, got {len(name)}",
            "name",
        )
    category = document.get("categoryId")
    if isinstance(category, str) and re.fullmatch(r"[0-9]{1,19}", category):
        category = int(category)  # a string of digits is read as the number
    if type(category) is not int or abs(category) > INT64:
        raise Refusal(
            400,
            "invalid-field",
            f"categoryId must be a 64-bit integer, got {json.dumps(category)[:40]}",
            "categoryId",
        )
    pet: dict[str, Any] = {"name": name, "categoryId": category}
    if "status" in document:
        if document["status"] not in STATUSES:
            given = json.dumps(document["status"])[:40]
            message = f"status must be available, pending or sold, got {given}"
            raise Refusal(400, "invalid-field", message, "status")
        pet["status"] = document["status"]
    return pet


# --- the command line ------------------------------------------------------------------


def parse_plan(text: str) -> Plan:
    capacity, _, rate = text.partition("/")
    try:
        plan = Plan(int(capacity), float(rate))
    except ValueError:
        raise ValueError(f"{text!r}: write CAPACITY/PER_SECOND, e.g. 5/0.5") from None
    if plan.capacity < 1 or not plan.per_second > 0:
        raise ValueError(f"{text!r}: a capacity of at least 1 and a positive refill")
    return plan


def parse_window(text: str) -> tuple[float, float]:
    begins, _, ends = text.partition("/")
    try:
        window = tuple(_instant(part) for part in (begins, ends))
    except ValueError:
        raise ValueError(f"{text!r}: write FROM/UNTIL as ISO 8601 instants") from None
    if window[1] <= window[0]:
        raise ValueError(f"{text!r}: the window must end after it begins")
    return window  # type: ignore[return-value]


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
    parser.add_argument("--plan", action="append", default=[], metavar="NAME=CAPACITY/PER_SECOND")
    parser.add_argument("--pets", type=int, default=10)
    parser.add_argument("--sunset", default=SUNSET.isoformat(), help="getPet's removal (ISO 8601)")
    parser.add_argument(
        "--maintenance", metavar="FROM/UNTIL", help="the store's maintenance window"
    )
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
            parser.error(
                f"--key {text!r}: KEY=PLAN with a bearer-token key and one of {sorted(plans)}"
            )
        keys[key] = plans[plan]
    try:
        sunset = datetime.fromtimestamp(_instant(args.sunset), UTC)
        window = parse_window(args.maintenance) if args.maintenance else None
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
        Tollgate(settings),
        log_level="warning",
        access_log=False,
        server_header=False,
        date_header=True,
        proxy_headers=False,
        lifespan="off",
    )
    print(f"{NAME} listening on http://{bound_host}:{bound_port}{BASE}", flush=True)
    uvicorn.Server(config).run(sockets=[listener])


if __name__ == "__main__":
    main()
