"""Aviary: a Pet Store provider written from the spec alone, behind an nginx front end.

It imports nothing of mockstore and was written without reading it. Every stated
behaviour of the spec holds (``/v1``, bearer keys, Error bodies, ``limit`` 1..100
default 20, the ``status`` filter, ``201`` with the new id, ``404`` for a missing
pet, ``401`` for a missing or invalid key, ``X-RateLimit-*`` on every answer,
``429`` with ``Retry-After`` once the quota is spent, temporary bans, ``getPet``
deprecated and removed on 5 December 2030). Where the spec is silent, Aviary's
team (nginx's ``limit_req`` in front, a quota counted by the service) chose:

Rate limits: a leaky bucket (GCRA, as nginx's ``limit_req``) and an hourly quota
- each plan has a rate, a burst and a quota per clock hour: ``free`` 1/s, burst 20,
  600 an hour; ``pro`` 5/s, burst 60, 3,000; ``business`` 17/s, burst 200, 20,000;
  ``enterprise`` only with ``--plan enterprise=RATE/BURST/PER_HOUR``; Aviary's own
  ``nestling`` 2/s, burst 3, 60 an hour, and ``fledgling`` 50/s, burst 50, 10 an hour;
- the bucket (GCRA): a request is admitted while the theoretical arrival time is
  at most ``burst`` emission intervals ahead of now; over it the front end answers
  **``503 E5031``** (nginx's ``limit_req_status``), **with no ``Retry-After``**;
- the quota: the clock hour (aligned to the hour, UTC); once spent, ``429 E4291``
  with ``Retry-After`` as an **HTTP-date** (the hour's end);
- what counts: every admitted request, except those answered ``5xx`` (maintenance,
  the service's own failures): their place in the bucket and the quota is given
  back;
- callers without a valid key are counted per client address: 1/s, burst 5, 50 an
  hour;
- ``X-RateLimit-Limit``/``-Remaining``/``-Reset`` describe the **hour**: its quota,
  what is left, and its end in Unix epoch **milliseconds**;
- a secondary limit, as GitHub's: 10 refusals (``503`` or ``429``) within 60 s
  block the caller for 60 s with **``403 E4031``**, ``Retry-After`` in whole
  seconds, ``X-RateLimit-Remaining: 0``.

HTTP semantics
- W3C trace context: the ``traceparent`` a caller sent (when well formed) keeps its
  trace id with a new span id; else a new one is made; every answer carries
  ``traceparent``, every Error body ``traceId``;
- ``getPet`` ``200`` carries a strong ``ETag`` (``"<sha1 hex>"``) and
  ``Last-Modified``; ``If-None-Match`` (compared strongly: a ``W/`` tag never
  matches) is answered ``304``, else ``If-Modified-Since``; lists carry neither;
- every body of 20 bytes or more is gzip-coded when the client accepts gzip
  (``gzip_min_length 20``), with ``Vary: Accept-Encoding``; deflate is never used;
- CORS on ``/v1/pets`` only: a preflight is ``204`` reflecting the ``Origin`` with
  ``Access-Control-Allow-Credentials: true``, ``-Allow-Methods: GET, POST, OPTIONS``,
  the requested headers allowed, ``-Max-Age: 86400``, counted like a request;
  other answers to a request with ``Origin`` reflect it, with credentials; an
  ``OPTIONS`` anywhere else is ``405``;
- ``HEAD`` is not served: ``405 E4051`` with ``Allow`` (``/pets``: ``GET, POST,
  OPTIONS``; ``/pets/{id}`` and ``/store/orders``: ``GET``);
- a trailing slash is ``301`` to the path without it, as an **absolute URL** on the
  address the client called (nginx's ``absolute_redirect``), before any limit;
- unknown NewPet fields are kept, and the ``201`` says so:
  ``Warning: 199 - "stored unrecognised field(s) as given: nickname"``.

Collections
- ``page`` (from 1) pages the list, ``limit`` per page; every list carries
  ``X-Total-Count``, ``X-Total-Pages``, ``X-Page``, ``X-Per-Page``, ``X-Next-Page``
  and ``X-Prev-Page`` (empty where there is none), as GitLab does; no ``Link``;
- pets are listed by ``name``, **case-sensitively** (``Zazu`` before ``apple``),
  then by id; ``status`` may list several (``available,pending``), each exact;
- ``status`` defaults to ``available``, stored (the ``201`` says it);
- numbers are strict in bodies (``7.0`` and ``"7"`` are refused) and lenient in the
  query (``limit=5.0``, ``limit= 5``); ``name`` is 1 to 100 UTF-8 bytes, not blank.

Refusals: codes are ``E`` + the status + a number; messages follow one template,
``Invalid value '<value>' for parameter '<name>'`` (or field); every Error has
``traceId``, and ``field`` when one is at fault: ``E4001`` (``400``, a parameter),
``E4002`` (``400``, a NewPet field), ``E4003`` (``400``, not JSON), ``E4011``/
``E4012``/``E4013`` (``401``: no key, not Bearer, unknown key; no
``WWW-Authenticate``), ``E4041`` (``404``, no such path), ``E4042`` (``404``, no
such pet), ``E4051`` (``405``), ``E4131`` (``413``, over 12 KiB), ``E4151``
(``415``), ``E4291`` (``429``), ``E4031`` (``403``), ``E4101`` (``410``, getPet
from its sunset on), ``E5031``/``E5032`` (``503``: the bucket, maintenance).

Availability, latency, deprecation
- ``/v1/store/*`` is under maintenance during ``--maintenance FROM/UNTIL`` (by
  default the hour after start): ``503 E5032`` with ``Retry-After`` as an HTTP-date,
  after the key is checked; outside it ``GET /store/orders`` is ``200 []``;
- one ``listPets`` in ten takes 150 ms (a cache miss), the rest 3 to 6 ms;
- ``getPet``'s ``200`` and ``304`` carry no ``Deprecation`` header but
  ``Warning: 299 - "GET /v1/pets/{petId} is deprecated; it goes on 2030-12-05"`` and
  ``Sunset: Thu, 05 Dec 2030 06:00:00 GMT``.
- order of checks: the slash, the preflight, the secondary limit, the bucket, the
  quota; then (the service) routing, the key, maintenance, the request.

Run it: ``python -m tests.upstream.aviary --port 0 --key av_test_abc=nestling``.
It prints ``aviary listening on http://HOST:PORT/v1`` and one access-log line per
request (client, method, target, status, trace id) on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import hashlib
import json
import math
import re
import secrets
import socket
import time
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import formatdate, parsedate_to_datetime
from typing import Any
from urllib.parse import parse_qsl

import uvicorn
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

NAME = "aviary"
BASE = "/v1"
MEDIA_TYPE = "application/json"
MAX_BODY = 12 * 1024
GZIP_FROM = 20
NAME_BYTES = 100
SUNSET = datetime(2030, 12, 5, 6, 0, 0, tzinfo=UTC)
DEPRECATION_WARNING = '299 - "GET /v1/pets/{petId} is deprecated; it goes on 2030-12-05"'
STATUSES = ("available", "pending", "sold")
INT64 = 2**63 - 1
TOKEN = re.compile(r"^[A-Za-z0-9\-._~+/]+=*$")
TRACEPARENT = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")
PET_PATH = re.compile(r"^/v1/pets/([^/]+)$")
ALLOW = {"pets": "GET, POST, OPTIONS", "pet": "GET", "orders": "GET"}
HOUR = 3600


# --- limits ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    rate: float  # requests per second
    burst: int
    per_hour: int


PLANS = {
    "free": Plan(1.0, 20, 600),
    "pro": Plan(5.0, 60, 3_000),
    "business": Plan(17.0, 200, 20_000),
    "nestling": Plan(2.0, 3, 60),
    "fledgling": Plan(50.0, 50, 10),
}
ANONYMOUS = Plan(1.0, 5, 50)
BLOCK_AFTER, BLOCK_WITHIN, BLOCK_FOR = 10, 60.0, 60.0


@dataclass
class Meter:
    tat: float = 0.0  # the theoretical arrival time of GCRA
    hour: int = -1
    used: int = 0
    refusals: deque[float] = field(default_factory=deque)
    blocked_until: float = 0.0


@dataclass
class Pass:
    """A request the limits admitted, and how to give its place back."""

    meter: Meter
    previous_tat: float
    hour: int


class Limits:
    def __init__(self) -> None:
        self.meters: dict[str, Meter] = {}

    def meter(self, caller: str, now: float) -> Meter:
        meter = self.meters.setdefault(caller, Meter(tat=now))
        hour = math.floor(now / HOUR)
        if meter.hour != hour:
            meter.hour, meter.used = hour, 0
        return meter

    def check(self, caller: str, plan: Plan, now: float) -> Pass | Refused:
        meter = self.meter(caller, now)
        if meter.blocked_until > now:
            wait = max(1, math.ceil(meter.blocked_until - now))
            return Refused(403, "E4031", f"secondary rate limit: blocked for {wait} s", wait)
        interval = 1.0 / plan.rate
        tat = max(meter.tat, now)
        refusal: Refused | None = None
        if tat - now > plan.burst * interval - 1e-9:
            refusal = Refused(503, "E5031", "too many requests at once; slow down")
        elif meter.used >= plan.per_hour:
            end = (meter.hour + 1) * HOUR
            refusal = Refused(429, "E4291", f"the hourly quota of {plan.per_hour} is spent")
            refusal.retry_at = end
        if refusal is not None:
            meter.refusals.append(now)
            while meter.refusals and meter.refusals[0] <= now - BLOCK_WITHIN:
                meter.refusals.popleft()
            if len(meter.refusals) >= BLOCK_AFTER:
                meter.refusals.clear()
                meter.blocked_until = now + BLOCK_FOR
            return refusal
        admitted = Pass(meter, meter.tat, meter.hour)
        meter.tat = tat + interval
        meter.used += 1
        return admitted

    @staticmethod
    def give_back(admitted: Pass) -> None:
        admitted.meter.tat = admitted.previous_tat
        if admitted.meter.hour == admitted.hour:
            admitted.meter.used -= 1

    def headers(self, caller: str, plan: Plan, now: float) -> list[tuple[str, str]]:
        meter = self.meter(caller, now)
        left = 0 if meter.blocked_until > now else max(0, plan.per_hour - meter.used)
        return [
            ("X-RateLimit-Limit", str(plan.per_hour)),
            ("X-RateLimit-Remaining", str(left)),
            ("X-RateLimit-Reset", str((meter.hour + 1) * HOUR * 1000)),
        ]


class Refused(Exception):
    def __init__(self, status: int, code: str, message: str, wait: int | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.wait = status, code, message, wait
        self.retry_at: float | None = None


# --- answers ---------------------------------------------------------------------------


class Problem(Exception):
    def __init__(
        self, status: int, code: str, message: str, field: str | None = None, **headers: str
    ) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.field = status, code, message, field
        self.headers = [(name.replace("_", "-"), value) for name, value in headers.items()]


def invalid(status: int, code: str, value: Any, name: str, kind: str = "parameter") -> Problem:
    text = value if isinstance(value, str) else json.dumps(value)
    return Problem(status, code, f"Invalid value '{text[:40]}' for {kind} '{name}'", name)


@dataclass
class Answer:
    status: int
    body: bytes = b""
    headers: list[tuple[str, str]] = field(default_factory=list)


def json_answer(document: Any, status: int = 200) -> Answer:
    return Answer(status, json.dumps(document, separators=(", ", ": ")).encode())


def accepts_gzip(header: str) -> bool:
    """True when Accept-Encoding names gzip (or x-gzip) with a q-value above 0."""
    for part in header.split(","):
        coding, _, params = part.strip().partition(";")
        if coding.strip().lower() not in ("gzip", "x-gzip"):
            continue
        name, _, value = params.strip().partition("=")
        if name.strip().lower() != "q":
            return True
        try:
            return float(value) > 0
        except ValueError:
            return False
    return False


def lenient_integer(raw: str) -> int | None:
    """A query integer as Aviary reads it: ``5``, `` 5``, ``+5``, ``5.0``."""
    text = raw.strip()
    if re.fullmatch(r"\+?[0-9]{1,9}(\.0+)?", text):
        return int(float(text))
    return None


# --- the store -------------------------------------------------------------------------

SEED = ("Zazu", "apple", "Kiwi", "bluebell", "Rio", "echo", "Polly", "sky")


class Store:
    def __init__(self, pets: int) -> None:
        self.pets: dict[int, dict[str, Any]] = {}
        self.changed: dict[int, float] = {}
        self.next_id = 9001
        for index in range(pets):
            self.add(
                {"name": SEED[index % len(SEED)], "categoryId": 20 + index % 2,
                 "status": STATUSES[index % 3]},
                time.time() - 3600,
            )  # fmt: skip

    def add(self, pet: dict[str, Any], now: float) -> dict[str, Any]:
        stored = {"id": self.next_id, **pet}
        self.pets[self.next_id] = stored
        self.changed[self.next_id] = math.floor(now)
        self.next_id += 1
        return stored


# --- the service -----------------------------------------------------------------------


@dataclass
class Settings:
    keys: dict[str, Plan] = field(default_factory=dict)
    pets: int = 8
    sunset: datetime = SUNSET
    maintenance: tuple[float, float] | None = None
    latency_scale: float = 1.0


class Aviary:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.store = Store(settings.pets)
        self.limits = Limits()
        start = time.time()
        self.maintenance = settings.maintenance or (start, start + 3600.0)
        self.lists = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        request = Request(scope, receive)
        now = time.time()
        sent = TRACEPARENT.match(request.headers.get("traceparent", "").strip().lower())
        trace_id = sent.group(1) if sent and set(sent.group(1)) != {"0"} else secrets.token_hex(16)
        traceparent = f"00-{trace_id}-{secrets.token_hex(8)}-01"
        key, problem = self.caller(request.headers.get("authorization"))
        address = request.client.host if request.client else "unknown"
        caller = f"key:{key}" if key else f"address:{address}"
        plan = self.settings.keys[key] if key else ANONYMOUS
        admitted: Pass | None = None
        try:
            answer = self.slash(request)
            if answer is None:
                checked = self.limits.check(caller, plan, now)
                if isinstance(checked, Refused):
                    raise checked
                admitted = checked
                answer = await self.serve(request, problem)
        except Refused as refused:
            answer = json_answer(
                {
                    "code": refused.code,
                    "message": refused.message,
                    "status": refused.status,
                    "traceId": trace_id,
                },
                refused.status,
            )
            if refused.wait is not None:
                answer.headers.append(("Retry-After", str(refused.wait)))
            if refused.retry_at is not None:
                answer.headers.append(("Retry-After", formatdate(refused.retry_at, usegmt=True)))
        except Problem as problem_found:
            document: dict[str, Any] = {
                "code": problem_found.code,
                "message": problem_found.message,
                "status": problem_found.status,
                "traceId": trace_id,
            }
            if problem_found.field is not None:
                document["field"] = problem_found.field
            answer = json_answer(document, problem_found.status)
            answer.headers += problem_found.headers
        if admitted is not None and answer.status >= 500:
            self.limits.give_back(admitted)
        await self.send(request, send, answer, caller, plan, traceparent, trace_id, address)

    async def send(
        self,
        request: Request,
        send: Send,
        answer: Answer,
        caller: str,
        plan: Plan,
        traceparent: str,
        trace_id: str,
        address: str,
    ) -> None:
        headers = [*answer.headers, ("traceparent", traceparent)]
        headers += self.limits.headers(caller, plan, time.time())
        origin = request.headers.get("origin")
        if origin and not any(name == "Access-Control-Allow-Origin" for name, _ in headers):
            headers += [
                ("Access-Control-Allow-Origin", origin),
                ("Access-Control-Allow-Credentials", "true"),
                ("Vary", "Origin"),
            ]
        body = answer.body
        if body:
            headers.append(("Content-Type", MEDIA_TYPE))
            if len(body) >= GZIP_FROM:
                headers.append(("Vary", "Accept-Encoding"))
                if accepts_gzip(request.headers.get("accept-encoding", "")):
                    body = gzip.compress(body, mtime=0)
                    headers.append(("Content-Encoding", "gzip"))
        headers.append(("Content-Length", str(len(body))))
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        print(f"{address} {request.method} {target} {answer.status} {trace_id}", flush=True)
        await send(
            {
                "type": "http.response.start",
                "status": answer.status,
                "headers": [(k.lower().encode(), v.encode("latin-1")) for k, v in headers],
            }
        )
        await send({"type": "http.response.body", "body": body})

    @staticmethod
    def slash(request: Request) -> Answer | None:
        path = request.url.path
        if path.startswith(BASE + "/") and path.endswith("/") and len(path) > len(BASE) + 1:
            host = request.headers.get("host", "localhost")
            query = f"?{request.url.query}" if request.url.query else ""
            return Answer(301, headers=[("Location", f"http://{host}{path.rstrip('/')}{query}")])
        return None

    def caller(self, header: str | None) -> tuple[str | None, Problem | None]:
        if header is None:
            return None, Problem(401, "E4011", "Missing value for header 'Authorization'")
        scheme, _, token = header.strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not TOKEN.match(token):
            return None, invalid(401, "E4012", header, "Authorization", "header")
        if token not in self.settings.keys:
            return None, invalid(401, "E4013", f"{token[:3]}***", "Authorization", "header")
        return token, None

    async def serve(self, request: Request, problem: Problem | None) -> Answer:
        path, method = request.url.path, request.method
        kind = None
        if path == "/v1/pets":
            kind = "pets"
        elif PET_PATH.match(path):
            kind = "pet"
        elif path == "/v1/store/orders":
            kind = "orders"
        if kind == "pets" and method == "OPTIONS" and request.headers.get("origin"):
            asked = request.headers.get("access-control-request-headers", "")
            return Answer(
                204,
                headers=[
                    ("Access-Control-Allow-Origin", request.headers["origin"]),
                    ("Access-Control-Allow-Credentials", "true"),
                    ("Access-Control-Allow-Methods", "GET, POST, OPTIONS"),
                    *([("Access-Control-Allow-Headers", asked)] if asked else []),
                    ("Access-Control-Max-Age", "86400"),
                    ("Vary", "Origin"),
                ],
            )
        if kind is None:
            raise Problem(404, "E4041", f"Invalid value '{path[:60]}' for path")
        handlers = {
            ("pets", "GET"): self.list_pets,
            ("pets", "POST"): self.create_pet,
            ("pet", "GET"): self.get_pet,
            ("orders", "GET"): self.orders,
        }
        handler = handlers.get((kind, method))
        if handler is None:
            raise Problem(405, "E4051", f"Invalid value '{method}' for method", Allow=ALLOW[kind])
        if problem is not None:
            raise problem
        return await handler(request)

    # -- operations -----------------------------------------------------------------

    async def list_pets(self, request: Request) -> Answer:
        self.lists += 1
        slow = self.lists % 10 == 0
        await asyncio.sleep((0.15 if slow else 0.004) * self.settings.latency_scale)
        query = dict(parse_qsl(request.url.query, keep_blank_values=True))
        limit, page = 20, 1
        if "limit" in query:
            found = lenient_integer(query["limit"])
            if found is None or not 1 <= found <= 100:
                raise invalid(400, "E4001", query["limit"], "limit")
            limit = found
        if "page" in query:
            found = lenient_integer(query["page"])
            if found is None or found < 1:
                raise invalid(400, "E4001", query["page"], "page")
            page = found
        wanted: set[str] | None = None
        if "status" in query:
            wanted = set(query["status"].split(","))
            if not wanted <= set(STATUSES):
                raise invalid(400, "E4001", query["status"], "status")
        pets = sorted(self.store.pets.values(), key=lambda pet: (pet["name"], pet["id"]))
        if wanted is not None:
            pets = [pet for pet in pets if pet.get("status") in wanted]
        pages = max(1, math.ceil(len(pets) / limit))
        answer = json_answer(pets[(page - 1) * limit : page * limit])
        answer.headers += [
            ("X-Total-Count", str(len(pets))),
            ("X-Total-Pages", str(pages)),
            ("X-Page", str(page)),
            ("X-Per-Page", str(limit)),
            ("X-Next-Page", str(page + 1) if page < pages else ""),
            ("X-Prev-Page", str(page - 1) if page > 1 else ""),
        ]
        return answer

    async def create_pet(self, request: Request) -> Answer:
        await asyncio.sleep(0.004 * self.settings.latency_scale)
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > MAX_BODY:
            raise Problem(413, "E4131", f"Invalid value '{declared}' for header 'Content-Length'")
        media = request.headers.get("content-type", "")
        if media.split(";")[0].strip().lower() != "application/json":
            raise invalid(415, "E4151", media or "(none)", "Content-Type", "header")
        raw = b""
        async for chunk in request.stream():
            raw += chunk
            if len(raw) > MAX_BODY:
                raise Problem(413, "E4131", "Invalid value '(body)' for header 'Content-Length'")
        try:
            document = json.loads(raw)
        except ValueError:
            raise Problem(400, "E4003", "Invalid value '(body)' for body: not JSON") from None
        if not isinstance(document, dict):
            raise Problem(400, "E4003", "Invalid value '(body)' for body: not an object")
        name = document.get("name")
        if not isinstance(name, str) or not name.strip():
            raise invalid(400, "E4002", name, "name", "field")
        if len(name.encode()) > NAME_BYTES:
            raise invalid(400, "E4002", name, "name", "field")
        category = document.get("categoryId")
        if type(category) is not int or abs(category) > INT64:
            raise invalid(400, "E4002", category, "categoryId", "field")
        status = document.get("status", "available")
        if status not in STATUSES:
            raise invalid(400, "E4002", status, "status", "field")
        kept = {
            k: v for k, v in document.items() if k not in ("id", "name", "categoryId", "status")
        }
        pet = self.store.add(
            {"name": name, "categoryId": category, "status": status, **kept}, time.time()
        )
        answer = json_answer(pet, 201)
        if kept:
            names = ", ".join(sorted(k[:40] for k in kept)[:5])
            answer.headers.append(
                ("Warning", f'199 - "stored unrecognised field(s) as given: {names}"')
            )
        return answer

    async def get_pet(self, request: Request) -> Answer:
        await asyncio.sleep(0.003 * self.settings.latency_scale)
        if datetime.now(UTC) >= self.settings.sunset:
            raise Problem(410, "E4101", "Invalid value 'GET' for path '/v1/pets/{petId}': removed")
        raw = PET_PATH.match(request.url.path).group(1)  # type: ignore[union-attr]
        if not re.fullmatch(r"-?[0-9]{1,19}", raw) or abs(int(raw)) > INT64:
            raise invalid(400, "E4001", raw, "petId")
        pet = self.store.pets.get(int(raw))
        if pet is None:
            raise invalid(404, "E4042", raw, "petId")
        body = json_answer(pet).body
        headers = [
            ("ETag", '"' + hashlib.sha1(body).hexdigest() + '"'),
            ("Last-Modified", formatdate(self.store.changed[pet["id"]], usegmt=True)),
            ("Warning", DEPRECATION_WARNING),
            ("Sunset", formatdate(self.settings.sunset.timestamp(), usegmt=True)),
        ]
        tags = request.headers.get("if-none-match")
        if tags is not None:
            if headers[0][1] in [tag.strip() for tag in tags.split(",")] or tags.strip() == "*":
                return Answer(304, headers=headers)
        elif request.headers.get("if-modified-since"):
            try:
                since = parsedate_to_datetime(request.headers["if-modified-since"]).timestamp()
                if since >= self.store.changed[pet["id"]]:
                    return Answer(304, headers=headers)
            except (TypeError, ValueError):
                pass
        return Answer(200, body, headers)

    async def orders(self, request: Request) -> Answer:
        begins, ends = self.maintenance
        if begins <= time.time() < ends:
            raise Problem(
                503,
                "E5032",
                "Invalid value 'GET' for path '/v1/store/orders': under maintenance",
                Retry_After=formatdate(math.ceil(ends), usegmt=True),
            )
        return json_answer([])


# --- the command line ------------------------------------------------------------------


def parse_plan(text: str) -> Plan:
    parts = text.split("/")
    try:
        plan = Plan(float(parts[0]), int(parts[1]), int(parts[2]))
    except (ValueError, IndexError):
        raise ValueError(f"{text!r}: write RATE/BURST/PER_HOUR, e.g. 2/3/60") from None
    if plan.rate <= 0 or plan.burst < 0 or plan.per_hour < 1:
        raise ValueError(f"{text!r}: a positive rate and quota, a burst from 0")
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
    parser.add_argument("--plan", action="append", default=[], metavar="NAME=RATE/BURST/PER_HOUR")
    parser.add_argument("--pets", type=int, default=8)
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
        Aviary(settings),
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
