"""A Pet Store provider whose every "not shown" choice comes from a ``Profile``.

The fidelity tests need many Pet Store services, each faithful to the spec and
each with its own choices where the spec says "not shown". This module is one
provider that can be any of them: a ``Profile`` (a frozen dataclass, stored as
JSON) decides every such choice, and the rules the spec states are always kept:

- every path under ``/v1``; ``Authorization: Bearer <key>`` on every operation;
  a missing or invalid key is ``401``, a missing pet ``404``, a request over the
  allowance ``429`` with ``Retry-After``; every refusal an Error body whose
  ``status`` is the HTTP status;
- ``limit`` from 1 to 100, default 20; the ``status`` filter; ``201`` with the
  assigned ``id``;
- ``X-RateLimit-Limit``, ``-Remaining`` and ``-Reset`` on every answer; a key that
  keeps sending after ``429`` is banned for a while;
- ``GET /pets/{petId}`` deprecated, removed on 5 December 2030 (the profile picks
  the instant of that day and the answer after it).

It imports nothing of mockstore: it is written as a provider's team would write
it, on Starlette and uvicorn. ``Profile()`` is mockstore's documented default
behaviour (README.md), so a profile file states only where a provider differs.
``tests/upstream/profiles.py`` draws profiles from the whole space (Hypothesis).

Two fields are test conveniences, not provider choices: ``rate_limits.minute_seconds``
and ``day_seconds`` shorten the windows (a 2-second "minute" lets a test watch a
window end), and ``clock_offset_seconds`` moves the service's clock (to live
after the sunset). Otherwise the service runs on the wall clock, as a real one.

Run it::

    python -m tests.upstream.profiled --port 0 --profile FILE.json --key sk_test_abc=free

It prints ``profiled listening on http://HOST:PORT/v1`` and one access-log line
per request (method, target, status). A profile that does not hold is refused
before the server starts (exit 2) with the file, and the line and column or the
JSON path of each problem.

Choices this provider makes that the profile does not vary, so a test can rely
on them:

- rate limiting comes first (the ban, then the allowance), before routing and
  the key; a refused request consumes no allowance;
- a window starts at the clock's multiple of its length (``windows: clock``) or
  at the first request after the previous one ended (``first_request``);
- the rejection that reaches a ban threshold is itself answered
  ``rate_limited``; the ban starts with it; during a ban
  ``X-RateLimit-Remaining`` is 0 and ``X-RateLimit-Reset`` is the ban's end;
- on a ``429`` the ``X-RateLimit-*`` headers describe the window that blocks:
  the one that resets last, the day if both reset at once;
- a createPet body is judged in this order: size (``Content-Length``, then the
  bytes read), empty, media type, JSON, NewPet, unknown fields; a NewPet integer
  is a JSON integer (``7.0`` is refused); an empty ``name`` is a name;
- a query parameter given twice takes its last value; a path with a trailing
  slash is unknown;
- ``ETag`` is informational (``If-None-Match`` is not honoured);
- at most 100,000 pets are stored (then ``507 store_full``).
"""

from __future__ import annotations

import argparse
import calendar
import dataclasses
import functools
import hashlib
import json
import math
import re
import secrets
import socket
import string
import sys
import time
import types
import typing
import uuid
from collections import deque
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from datetime import time as dt_time
from email.utils import formatdate
from pathlib import Path
from typing import Any, Literal, Union
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import uvicorn
from starlette.requests import ClientDisconnect, Request
from starlette.types import Receive, Scope, Send

from tests.upstream import profiled_collections as collection
from tests.upstream.profiled_collections import Collections
from tests.upstream.profiled_http import Front, HttpChoices, Made, served
from tests.upstream.profiled_http import problems as http_problems

BASE = "/v1"
LIMIT_DEFAULT = 20
LIMIT_MAX = 100
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
MAX_PETS = 100_000
SUNSET_DAY = calendar.timegm((2030, 12, 5, 0, 0, 0))  # the spec's removal date, 00:00Z
DAY = 86_400

PetStatus = Literal["available", "pending", "sold"]
Algorithm = Literal["fixed", "sliding_log", "sliding_window", "token_bucket", "leaky_bucket"]
Figure = Literal["limit", "remaining", "reset", "used", "resource"]
Operation = Literal["listPets", "createPet", "getPet", "listOrders"]
ReadOperation = Literal["listPets", "getPet", "listOrders"]
Condition = Literal[
    "missing_key",
    "malformed_authorization",
    "unknown_key",
    "malformed_json",
    "missing_body",
    "invalid_body",
    "unknown_field",
    "unsupported_media_type",
    "payload_too_large",
    "bad_limit",
    "limit_above_maximum",
    "bad_status_filter",
    "bad_pet_id",
    "pet_not_found",
    "unknown_path",
    "method_not_allowed",
    "rate_limited",
    "key_banned",
    "gone",
    "list_orders",
    "bad_page",
    "field_constraint",
]
STATUSES: tuple[str, ...] = typing.get_args(PetStatus)
OPERATIONS: tuple[str, ...] = typing.get_args(Operation)
READS: tuple[str, ...] = typing.get_args(ReadOperation)
CONDITIONS: tuple[str, ...] = typing.get_args(Condition)

# The statuses a provider may plausibly answer for each condition. Where the spec
# states one (401, 404 for a missing pet, 429) it is the only one. 422 for a body
# is the one departure from the spec's letter the space allows: it says 400, and
# many frameworks answer 422 (and mockstore's `validation_status: 422` exists for them).
PLAUSIBLE_STATUSES: dict[str, tuple[int, ...]] = {
    "missing_key": (401,),
    "malformed_authorization": (401,),
    "unknown_key": (401,),
    "malformed_json": (400, 422),
    "missing_body": (400, 422),
    "invalid_body": (400, 422),
    "unknown_field": (400, 422),
    "unsupported_media_type": (415, 400, 422),
    "payload_too_large": (413, 400),
    "bad_limit": (400, 422),
    "limit_above_maximum": (400, 422),
    "bad_status_filter": (400, 422),
    "bad_pet_id": (400, 404, 422),
    "pet_not_found": (404,),
    "unknown_path": (404, 403),
    "method_not_allowed": (405, 404),
    "rate_limited": (429, 403, 503),
    "key_banned": (429, 403, 503),
    "gone": (410, 404),
    "list_orders": (403, 404, 501),
    "bad_page": (400, 422),
    "field_constraint": (400, 422),
}
CODE = re.compile(r"[A-Za-z][A-Za-z0-9_.\-]{0,63}")
TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # RFC 9110 token (a header name)
BEARER_TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*")  # RFC 6750 b64token
HEADER_VALUE = re.compile(r"[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?")
PLAN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,31}")
# Headers the stand-in writes itself; a constant header must not name one.
MANAGED_HEADERS = frozenset(
    {
        "allow",
        "cache-control",
        "connection",
        "content-length",
        "content-type",
        "date",
        "deprecation",
        "etag",
        "link",
        "location",
        "retry-after",
        "sunset",
        "transfer-encoding",
        "www-authenticate",
        "x-ratelimit-limit",
        "x-ratelimit-remaining",
        "x-ratelimit-reset",
        "x-ratelimit-used",
        "x-ratelimit-resource",
        "ratelimit",
        "ratelimit-policy",
    }
)

HeaderMap = tuple[tuple[str, str], ...]


# ---------------------------------------------------------------------------
# The profile


@dataclass(frozen=True)
class Refusal:
    """The answer to one condition: its HTTP status and its Error ``code``."""

    status: int
    code: str


@dataclass(frozen=True)
class ExtraField:
    """A field an Error body carries beside ``code``, ``message`` and ``status``.

    ``kind`` is ``constant`` (``value``), or generated per answer: ``uuid`` (a new
    UUID4), ``request_id`` (the answer's request id), ``timestamp`` (RFC 3339 UTC
    with milliseconds), ``retry_after_s`` / ``retry_after_ms`` (the wait of a 429 or
    a ban), ``value`` / ``parameter`` (what the request got wrong, and where),
    ``details`` (one ``{"field", "issue"}`` per invalid field of a body). ``only``
    limits it to some conditions (empty: every Error).
    """

    name: str
    kind: Literal[
        "constant",
        "uuid",
        "request_id",
        "timestamp",
        "retry_after_s",
        "retry_after_ms",
        "value",
        "parameter",
        "details",
    ] = "constant"
    value: str | int | bool | None = None
    only: tuple[Condition, ...] = ()


@dataclass(frozen=True)
class WwwAuthenticate:
    """The challenge on a ``401``: ``Bearer``, with ``realm`` if given, and
    ``error="invalid_token"`` for an unknown key if ``invalid_token_error``."""

    realm: str | None = "petstore"
    invalid_token_error: bool = True


@dataclass(frozen=True)
class Refusals:
    """Status and code per condition, extra Error fields, the challenge, routing order."""

    missing_key: Refusal = Refusal(401, "unauthorized")
    malformed_authorization: Refusal = Refusal(401, "unauthorized")
    unknown_key: Refusal = Refusal(401, "invalid_token")
    malformed_json: Refusal = Refusal(400, "malformed_json")
    missing_body: Refusal = Refusal(400, "missing_body")
    invalid_body: Refusal = Refusal(400, "validation_failed")
    unknown_field: Refusal = Refusal(400, "validation_failed")
    unsupported_media_type: Refusal = Refusal(415, "unsupported_media_type")
    payload_too_large: Refusal = Refusal(413, "payload_too_large")
    bad_limit: Refusal = Refusal(400, "invalid_parameter")
    limit_above_maximum: Refusal = Refusal(400, "invalid_parameter")
    bad_status_filter: Refusal = Refusal(400, "invalid_parameter")
    bad_pet_id: Refusal = Refusal(400, "invalid_parameter")
    pet_not_found: Refusal = Refusal(404, "not_found")
    unknown_path: Refusal = Refusal(404, "not_found")
    method_not_allowed: Refusal = Refusal(405, "method_not_allowed")
    rate_limited: Refusal = Refusal(429, "rate_limited")
    key_banned: Refusal = Refusal(429, "key_banned")
    gone: Refusal = Refusal(410, "gone")
    # GET /store/orders; None serves it: 200 and an empty list.
    list_orders: Refusal | None = Refusal(501, "not_implemented")
    # A page parameter that names no page; a NewPet past collections' own limits.
    bad_page: Refusal = Refusal(400, "invalid_parameter")
    field_constraint: Refusal = Refusal(400, "validation_failed")
    extra_fields: tuple[ExtraField, ...] = ()
    # None: a 401 carries no WWW-Authenticate.
    www_authenticate: WwwAuthenticate | None = WwwAuthenticate()
    # before_auth: an unknown path (404) or method (405) is answered before the key
    # is checked; after_auth: a caller without a valid key gets 401 on any path.
    routing: Literal["after_auth", "before_auth"] = "after_auth"
    # The shape of each ``details`` item: {"field", "issue"}, or {"pointer", "reason"}
    # (a JSON Pointer into the body, as RFC 9457's validation extensions write it).
    details_item: Literal["field_issue", "pointer_reason"] = "field_issue"

    def of(self, condition: str) -> Refusal:
        refusal = getattr(self, condition)
        assert isinstance(refusal, Refusal), condition
        return refusal


@dataclass(frozen=True)
class RequestIdHeader:
    """The request-id header: its name and how its value is made (after ``prefix``):
    ``counter`` (six digits and up, from 1), ``uuid`` (UUID4), ``hex`` (32 hex digits),
    ``alphanumeric`` (``length`` random letters and digits, as Stripe's ``req_`` ids)."""

    name: str = "X-Request-Id"
    format: Literal["counter", "uuid", "hex", "alphanumeric"] = "counter"
    prefix: str = "req-"
    length: int = 24


@dataclass(frozen=True)
class DeprecationHeaders:
    """The deprecation of ``getPet``: dates, which headers, and on which answers.

    ``deprecation`` is the ``Deprecation`` header's form: ``epoch`` (RFC 9745,
    ``@<since>``), ``http-date`` (the older draft), ``true`` (older still) or
    ``none``. ``sunset`` is the removal instant, on 5 December 2030 (UTC), as the
    spec says; ``getPet`` answers ``gone`` from then on. ``answers``: ``all``
    (every answer to getPet, 401 included), ``authenticated`` (every answer to a
    caller with a valid key) or ``success`` (2xx only).
    """

    since: int = 1767225600  # 2026-01-01T00:00:00Z
    deprecation: Literal["epoch", "http-date", "true", "none"] = "epoch"
    sunset: int = SUNSET_DAY
    sunset_header: bool = True
    link: str | None = '</v1/pets>; rel="successor-version"'
    answers: Literal["all", "authenticated", "success"] = "authenticated"


@dataclass(frozen=True)
class Headers:
    """Headers beyond the spec's: constants, request id, media type, caching, deprecation.

    ``always`` go on every answer; ``by_status_class`` on answers of a class
    (``2xx``, ``4xx``, ``5xx``); ``by_operation`` on answers to an operation
    (whatever their status). ``location`` on 201: ``none``, ``path``
    (``/v1/pets/7``) or ``url`` (absolute). ``etag`` and ``cache_control`` map a
    read operation to its ``ETag`` kind (``strong``/``weak``) and its
    ``Cache-Control`` value, sent on its 200 answers. An ETag is the first
    ``etag_digits`` hex digits of the body's ``etag_digest``.
    """

    always: HeaderMap = ()
    by_status_class: tuple[tuple[str, HeaderMap], ...] = ()
    by_operation: tuple[tuple[Operation, HeaderMap], ...] = ()
    request_id: RequestIdHeader | None = RequestIdHeader()
    content_type: str = "application/json"
    location: Literal["none", "path", "url"] = "none"
    etag: tuple[tuple[ReadOperation, Literal["strong", "weak"]], ...] = ()
    cache_control: tuple[tuple[ReadOperation, str], ...] = ()
    deprecation: DeprecationHeaders = DeprecationHeaders()
    etag_digest: Literal["sha256", "sha1", "md5"] = "sha256"
    etag_digits: int = 32


@dataclass(frozen=True)
class Plan:
    """An allowance: requests per minute and, if the provider has one, per day."""

    per_minute: int
    per_day: int | None = None


@dataclass(frozen=True)
class BanPolicy:
    """When a bucket that keeps sending after 429 is banned, and for how long.

    ``within``: ``rejections`` 429s within ``within_seconds``; ``consecutive``:
    ``rejections`` 429s with no admitted request between them. ``enabled`` false:
    never banned (refused for as long as it sends over the allowance).
    """

    trigger: Literal["within", "consecutive"] = "within"
    rejections: int = 10
    within_seconds: int = 60
    duration_seconds: int = 600
    enabled: bool = True


@dataclass(frozen=True)
class Gateway:
    """How the gateway in front of the service counts requests and announces the figures.

    Each window's algorithm (``fixed``: per window;
    ``sliding_log``: the requests of the last window's length; ``sliding_window``:
    a counter on the clock's windows adding the previous window's count weighted
    by the share of it still in the last length; ``token_bucket``: the
    allowance refilled continuously over the length; ``leaky_bucket``: a GCRA of
    the same), the ``time_zone`` whose midnight starts the clock's windows,
    what ``counts`` (``served`` requests or all ``attempts``, refused ones too;
    a bucket refusing one is emptied), whether callers without a valid key are
    limited at all (``anonymous_limited``: if not, a plain 401 with no
    rate-limit headers), the ``figures`` sent (``limit``, ``remaining``,
    ``reset``, ``used``, ``resource``), Kong's per-window headers
    (``per_window``: ``X-RateLimit-Limit-<name>``, ``-Remaining-<name>``), the
    reset's decimals, and the IETF draft ``RateLimit-Policy``/``RateLimit``
    headers (``draft``: on ``all`` answers or 2xx ones only, ``policies`` naming
    each window). X-RateLimit-Reset is when the described window is whole again.
    ``not_counted``: the classes of answers that give back what their request took
    (after the answer is written: its own figures still count it). ``uncounted``:
    what a caller the gateway does not limit is told (``anonymous_limited`` false):
    ``none``, no figures; ``zero``, an allowance of nothing (limit and remaining 0,
    the reset now).
    """

    minute_algorithm: Algorithm = "fixed"
    day_algorithm: Algorithm = "fixed"
    time_zone: str = "UTC"
    counts: Literal["served", "attempts"] = "served"
    anonymous_limited: bool = True
    figures: tuple[Figure, ...] = ("limit", "remaining", "reset")
    resource: str = "core"
    per_window: tuple[tuple[Literal["minute", "day"], str], ...] = ()
    reset_decimals: int = 0
    retry_after_decimals: int = 1
    draft: Literal["none", "all", "success"] = "none"
    policies: tuple[tuple[Literal["minute", "day"], str], ...] = (
        ("minute", "minute"),
        ("day", "day"),
    )
    not_counted: tuple[Literal["4xx", "5xx"], ...] = ()
    uncounted: Literal["none", "zero"] = "none"
    # The day's fixed windows: as the minute's (RateLimits.windows), or their own.
    day_windows: Literal["same", "clock", "first_request"] = "same"
    # A second set of headers, X-RateLimit-<name>-Limit/-Remaining/-Reset/-Used, for the
    # minute whatever the others describe (Menagerie's Burst); None: no such set.
    second_set: str | None = None
    second_set_figures: tuple[Literal["limit", "remaining", "reset", "used"], ...] = (
        "limit",
        "remaining",
        "reset",
    )
    second_set_reset: Literal["epoch", "epoch_ms", "delta"] = "delta"

    def gives_back(self, status: int) -> bool:
        return f"{status // 100}xx" in self.not_counted


@dataclass(frozen=True)
class RateLimits:
    """Plans, the anonymous allowance, windows, the headers that report them, bans.

    Callers without a valid key share one bucket per client address on
    ``anonymous``. ``reset``: ``X-RateLimit-Reset`` as ``epoch`` seconds,
    ``epoch_ms`` or ``delta`` (seconds from now). ``windows``: ``clock`` (aligned
    to multiples of their length: the minute, UTC midnight) or ``first_request``
    (each starts at the bucket's first request after the last one ended).
    ``describe``: which window ``X-RateLimit-*`` report on an admitted request
    (``minute``, ``day`` or ``tightest``: fewest remaining, the minute on a tie).
    ``retry_after`` / ``retry_after_banned``: ``seconds`` (whole, rounded up),
    ``decimal`` (``retry_after_decimals`` digits, rounded up), ``http-date`` or
    ``none`` (only where the refusal is not answered 429). ``refusal_figures``: the
    window a 429's ``X-RateLimit-*`` describe, the one that blocks (``blocking``) or the
    one ``describe`` names (``described``; with ``tightest``, the one that blocks).

    ``gateway``: how the gateway in front of the service counts and announces them.

    ``minute_seconds`` and ``day_seconds`` are a test convenience: a 2-second
    "minute" lets a test see a whole window pass. A real provider has 60 and 86,400.
    """

    plans: tuple[tuple[str, Plan], ...] = (
        ("free", Plan(60, 1_000)),
        ("pro", Plan(300, 10_000)),
        ("business", Plan(1_000, 100_000)),
        ("enterprise", Plan(5_000, 1_000_000)),
    )
    anonymous: Plan = Plan(60, 1_000)
    reset: Literal["epoch", "epoch_ms", "delta"] = "epoch"
    windows: Literal["clock", "first_request"] = "clock"
    describe: Literal["minute", "day", "tightest"] = "tightest"
    retry_after: Literal["seconds", "decimal", "http-date", "none"] = "seconds"
    retry_after_banned: Literal["seconds", "decimal", "http-date", "none"] = "seconds"
    ban: BanPolicy = BanPolicy()
    refusal_figures: Literal["blocking", "described"] = "blocking"
    minute_seconds: int = 60
    day_seconds: int = DAY
    gateway: Gateway = Gateway()

    def plan(self, name: str) -> Plan | None:
        return dict(self.plans).get(name)

    def aligned(self, window: Literal["minute", "day"]) -> bool:
        """Whether ``window``'s fixed windows start on the clock (else at a first request)."""
        form = self.gateway.day_windows if window == "day" else "same"
        return (self.windows if form == "same" else form) == "clock"


@dataclass(frozen=True)
class SeedPet:
    """A pet the store holds when the service starts."""

    id: int
    name: str
    category_id: int = field(metadata={"json": "categoryId"})
    status: PetStatus | None = None

    def as_json(self) -> dict[str, Any]:
        pet: dict[str, Any] = {"id": self.id, "name": self.name, "categoryId": self.category_id}
        if self.status is not None:
            pet["status"] = self.status
        return pet


@dataclass(frozen=True)
class Semantics:
    """What the operations do where the spec is silent.

    ``limit_above_maximum``: ``refuse`` or ``clamp`` to 100. ``unknown_fields`` in
    a NewPet: ``drop``, ``keep`` (stored and returned after the four known fields;
    an ``id`` is never kept) or ``refuse``. ``list_order``: ``ascending`` or
    ``descending`` by id, or ``insertion`` (seed pets in the profile's order,
    then creations). ``head``: the GET operations that serve HEAD (others: 405).
    ``max_body_bytes``: the largest createPet body accepted (inclusive).
    ``default_status`` of a pet created without one (None: no ``status`` field).
    ``collections``: pages, orders by a field, filters in any case, numbers, limits
    (``tests/upstream/profiled_collections.py``). ``missing_content_type``: a create
    body sent without ``Content-Type`` is ``refuse``d (unsupported_media_type) or read
    as ``json``, as gateways that default the media type do.
    """

    limit_above_maximum: Literal["refuse", "clamp"] = "refuse"
    unknown_fields: Literal["drop", "keep", "refuse"] = "drop"
    list_order: Literal["ascending", "descending", "insertion"] = "ascending"
    head: tuple[ReadOperation, ...] = ("listPets", "getPet", "listOrders")
    max_body_bytes: int = 1_048_576
    default_status: PetStatus | None = None
    pets: tuple[SeedPet, ...] = ()
    collections: Collections = field(default_factory=Collections)
    missing_content_type: Literal["refuse", "json"] = "refuse"


@dataclass(frozen=True)
class Profile:
    """Every choice a Pet Store provider makes where the spec says "not shown".

    ``Profile()`` is mockstore's documented default. ``clock_offset_seconds`` is a
    test convenience: the service's clock runs that far from the wall clock.
    """

    headers: Headers = Headers()
    refusals: Refusals = Refusals()
    rate_limits: RateLimits = RateLimits()
    semantics: Semantics = Semantics()
    clock_offset_seconds: int = 0
    # What the provider's gateway and web server add (``profiled_http``).
    http: HttpChoices = field(default_factory=HttpChoices)

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(_dump(self, Profile), indent=indent)

    @classmethod
    def from_json(cls, text: str, source: str = "<profile>") -> Profile:
        """Read a profile; ``ProfileError`` names every problem with ``source``."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise ProfileError(f"{source}:{error.lineno}:{error.colno}: {error.msg}") from None
        problems: list[str] = []
        profile = _load(data, Profile, "$", problems)
        if not problems:
            problems = profile.problems()
        if problems:
            raise ProfileError("\n".join(f"{source}: {problem}" for problem in problems))
        return profile

    def problems(self) -> list[str]:
        """Every way this profile breaks the spec or cannot be served, as ``path: why``."""
        return [*_problems(self), *http_problems(self.http, dict(self.headers.etag))]


class ProfileError(ValueError):
    """A profile (or a key's plan) that the stand-in refuses to serve."""


def load_profile(path: str | Path) -> Profile:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ProfileError(f"{path}: cannot read: {error}") from None
    return Profile.from_json(text, source=str(path))


# JSON <-> dataclasses, driven by the type hints. A variadic tuple of pairs
# ``tuple[tuple[str, V], ...]`` is a JSON object; any other tuple a JSON array.


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _json_name(item: dataclasses.Field[Any]) -> str:
    return str(item.metadata.get("json", item.name))


def _pair(hint: Any) -> tuple[Any, Any] | None:
    """``(K, V)`` when ``hint`` is ``tuple[tuple[K, V], ...]`` with string keys, else None."""
    if typing.get_origin(hint) is tuple:
        args = typing.get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis and typing.get_origin(args[0]) is tuple:
            pair = typing.get_args(args[0])
            if len(pair) == 2 and (pair[0] is str or typing.get_origin(pair[0]) is Literal):
                return pair[0], pair[1]
    return None


def _dump(value: Any, hint: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        hints = _hints(type(value))
        return {
            _json_name(f): _dump(getattr(value, f.name), hints[f.name])
            for f in dataclasses.fields(value)
        }
    if isinstance(value, tuple):
        pair = _pair(hint)
        if pair is not None:
            return {name: _dump(inner, pair[1]) for name, inner in value}
        (item, _) = typing.get_args(hint)
        return [_dump(inner, item) for inner in value]
    return value


def _describe(hint: Any) -> str:
    origin = typing.get_origin(hint)
    if origin is Literal:
        return " | ".join(json.dumps(arg) for arg in typing.get_args(hint))
    if origin in (Union, types.UnionType):
        return " or ".join(_describe(arg) for arg in typing.get_args(hint))
    if hint is type(None):
        return "null"
    if _pair(hint) is not None:
        return "an object"
    if origin is tuple:
        return "an array"
    if dataclasses.is_dataclass(hint):
        return "an object"
    return {int: "an integer", str: "a string", bool: "a boolean"}.get(hint, str(hint))


def _load(data: Any, hint: Any, path: str, problems: list[str]) -> Any:
    """``data`` as ``hint``; each mismatch is appended to ``problems`` (then None)."""
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        for arm in typing.get_args(hint):
            attempt: list[str] = []
            value = _load(data, arm, path, attempt)
            if not attempt:
                return value
        problems.append(f"{path}: expected {_describe(hint)}, got {_show(data)}")
        return None
    if hint is type(None):
        if data is not None:
            problems.append(f"{path}: expected null, got {_show(data)}")
        return None
    if origin is Literal:
        for arm in typing.get_args(hint):
            if data == arm and type(data) is type(arm):
                return data
        problems.append(f"{path}: expected {_describe(hint)}, got {_show(data)}")
        return None
    pair = _pair(hint)
    if pair is not None:
        if not isinstance(data, dict):
            problems.append(f"{path}: expected an object, got {_show(data)}")
            return ()
        key, item = pair
        return tuple(
            (
                _load(name, key, f"{path}.{name}", problems),
                _load(inner, item, f"{path}.{name}", problems),
            )
            for name, inner in data.items()
        )
    if origin is tuple:
        if not isinstance(data, list):
            problems.append(f"{path}: expected an array, got {_show(data)}")
            return ()
        (item, _) = typing.get_args(hint)
        return tuple(_load(inner, item, f"{path}[{i}]", problems) for i, inner in enumerate(data))
    if dataclasses.is_dataclass(hint):
        assert isinstance(hint, type)
        if not isinstance(data, dict):
            problems.append(f"{path}: expected an object, got {_show(data)}")
            return None
        hints = _hints(hint)
        fields = {_json_name(f): f for f in dataclasses.fields(hint)}
        for name in data:
            if name not in fields:
                problems.append(f"{path}: unknown field {name!r} (known: {', '.join(fields)})")
        values: dict[str, Any] = {}
        for name, item_field in fields.items():
            if name in data:
                values[item_field.name] = _load(
                    data[name], hints[item_field.name], f"{path}.{name}", problems
                )
            elif (
                item_field.default is dataclasses.MISSING
                and item_field.default_factory is dataclasses.MISSING
            ):
                problems.append(f"{path}: missing field {name!r}")
        if problems:
            return None
        return hint(**values)
    expected = {int: int, str: str, bool: bool}.get(hint)
    if expected is None:
        raise TypeError(f"no JSON form for {hint!r}")
    if isinstance(data, expected) and (expected is bool or not isinstance(data, bool)):
        return data
    problems.append(f"{path}: expected {_describe(hint)}, got {_show(data)}")
    return None


def _show(data: Any) -> str:
    text = json.dumps(data)
    return text if len(text) <= 60 else text[:57] + "..."


def _problems(profile: Profile) -> list[str]:
    problems: list[str] = []

    def need(ok: bool, path: str, why: str) -> None:
        if not ok:
            problems.append(f"{path}: {why}")

    def header_map(headers: HeaderMap, path: str, seen: set[str]) -> None:
        for name, value in headers:
            lowered = name.lower()
            need(bool(TOKEN.fullmatch(name)), f"{path}.{name}", "not a header name")
            need(lowered not in MANAGED_HEADERS, f"{path}.{name}", "the stand-in writes it itself")
            need(bool(HEADER_VALUE.fullmatch(value)), f"{path}.{name}", "not a visible ASCII value")
            need(lowered not in seen, f"{path}.{name}", "named more than once")
            seen.add(lowered)

    headers = profile.headers
    request_id = headers.request_id
    managed = {request_id.name.lower()} if request_id else set()
    if request_id:
        need(
            bool(TOKEN.fullmatch(request_id.name)), "$.headers.request_id.name", "not a header name"
        )
        need(
            request_id.name.lower() not in MANAGED_HEADERS,
            "$.headers.request_id.name",
            "the stand-in writes that header for another purpose",
        )
        need(
            request_id.prefix == "" or bool(HEADER_VALUE.fullmatch(request_id.prefix)),
            "$.headers.request_id.prefix",
            "not a visible ASCII value",
        )
        need(8 <= request_id.length <= 64, "$.headers.request_id.length", "from 8 to 64")
    # A name is in `always`, or in classes and operations, never both, so every
    # answer carries each header once.
    always: set[str] = set(managed)
    header_map(headers.always, "$.headers.always", always)
    classes: set[str] = set()
    for status_class, class_headers in headers.by_status_class:
        need(
            status_class in ("2xx", "4xx", "5xx"),
            "$.headers.by_status_class",
            f"{status_class!r} is not 2xx, 4xx or 5xx",
        )
        seen = set(always)
        header_map(class_headers, f"$.headers.by_status_class.{status_class}", seen)
        classes |= seen - always
    for operation, operation_headers in headers.by_operation:
        header_map(operation_headers, f"$.headers.by_operation.{operation}", set(always | classes))
    need(
        headers.content_type.split(";")[0].strip().lower() == "application/json"
        and bool(HEADER_VALUE.fullmatch(headers.content_type)),
        "$.headers.content_type",
        "the spec's bodies are application/json (parameters may follow)",
    )
    for operation, value in headers.cache_control:
        need(
            bool(HEADER_VALUE.fullmatch(value)),
            f"$.headers.cache_control.{operation}",
            "not a visible ASCII value",
        )
    for name, mapping in (("etag", headers.etag), ("cache_control", headers.cache_control)):
        operations = [operation for operation, _ in mapping]
        need(
            len(set(operations)) == len(operations), f"$.headers.{name}", "an operation named twice"
        )
    longest = {"sha256": 64, "sha1": 40, "md5": 32}.get(headers.etag_digest)
    need(longest is not None, "$.headers.etag_digest", "sha256, sha1 or md5")
    need(
        8 <= headers.etag_digits <= (longest or 64),
        "$.headers.etag_digits",
        "from 8 to the digest's own length",
    )
    deprecation = headers.deprecation
    need(
        SUNSET_DAY <= deprecation.sunset < SUNSET_DAY + DAY,
        "$.headers.deprecation.sunset",
        "the spec removes getPet on 5 December 2030 (an instant of that UTC day)",
    )
    need(
        deprecation.since < deprecation.sunset,
        "$.headers.deprecation.since",
        "must come before the sunset",
    )
    if deprecation.link is not None:
        need(
            bool(HEADER_VALUE.fullmatch(deprecation.link)),
            "$.headers.deprecation.link",
            "not a visible ASCII value",
        )

    refusals = profile.refusals
    for condition in CONDITIONS:
        refusal = getattr(refusals, condition)
        if refusal is None:
            continue
        path = f"$.refusals.{condition}"
        allowed = PLAUSIBLE_STATUSES[condition]
        need(refusal.status in allowed, f"{path}.status", f"must be one of {allowed}")
        need(bool(CODE.fullmatch(refusal.code)), f"{path}.code", "not an identifier-like code")
    names: set[str] = set()
    for index, extra in enumerate(refusals.extra_fields):
        path = f"$.refusals.extra_fields[{index}]"
        need(bool(CODE.fullmatch(extra.name)), f"{path}.name", "not an identifier")
        need(
            extra.name not in ("code", "message", "status"),
            f"{path}.name",
            "an Error field of its own",
        )
        need(extra.name not in names, f"{path}.name", "named twice")
        names.add(extra.name)
        need(
            (extra.kind == "constant") == (extra.value is not None),
            f"{path}.value",
            "a constant needs a value; a generated field has none",
        )
    challenge = refusals.www_authenticate
    if challenge is not None and challenge.realm is not None:
        need(
            bool(re.fullmatch(r"[\x20\x21\x23-\x5b\x5d-\x7e]+", challenge.realm)),
            "$.refusals.www_authenticate.realm",
            "a quoted-string without quotes or backslashes",
        )

    problems.extend(
        collection.problems(profile.semantics.collections, TOKEN, MANAGED_HEADERS | managed)
    )
    limits = profile.rate_limits
    need(bool(limits.plans), "$.rate_limits.plans", "at least one plan")
    for name, plan in limits.plans:
        need(bool(PLAN_NAME.fullmatch(name)), f"$.rate_limits.plans.{name}", "not a plan name")
        _plan_problems(plan, f"$.rate_limits.plans.{name}", need)
    _plan_problems(limits.anonymous, "$.rate_limits.anonymous", need)
    ban = limits.ban
    need(ban.rejections >= 1, "$.rate_limits.ban.rejections", "at least 1")
    need(ban.within_seconds >= 1, "$.rate_limits.ban.within_seconds", "at least 1")
    need(ban.duration_seconds >= 1, "$.rate_limits.ban.duration_seconds", "at least 1")
    need(limits.minute_seconds >= 1, "$.rate_limits.minute_seconds", "at least 1")
    need(
        limits.day_seconds >= limits.minute_seconds,
        "$.rate_limits.day_seconds",
        "at least a minute",
    )
    need(
        limits.retry_after_banned != "none" or refusals.key_banned.status != 429,
        "$.rate_limits.retry_after_banned",
        "a 429 carries Retry-After (the spec)",
    )
    need(
        limits.retry_after != "none" or refusals.rate_limited.status != 429,
        "$.rate_limits.retry_after",
        "a 429 carries Retry-After (the spec)",
    )
    try:
        ZoneInfo(limits.gateway.time_zone)
    except (ZoneInfoNotFoundError, ValueError):
        need(False, "$.rate_limits.gateway.time_zone", "an IANA time zone")
    need(
        0 <= limits.gateway.reset_decimals <= 3,
        "$.rate_limits.gateway.reset_decimals",
        "from 0 to 3",
    )
    need(
        limits.reset != "epoch_ms" or not limits.gateway.reset_decimals,
        "$.rate_limits.gateway.reset_decimals",
        "milliseconds have no decimals",
    )
    need(
        1 <= limits.gateway.retry_after_decimals <= 3,
        "$.rate_limits.gateway.retry_after_decimals",
        "from 1 to 3",
    )
    need(
        len(set(limits.gateway.figures)) == len(limits.gateway.figures),
        "$.rate_limits.gateway.figures",
        "one each",
    )
    for window, name in limits.gateway.per_window:
        need(
            bool(re.fullmatch(r"[A-Za-z0-9]+", name)),
            f"$.rate_limits.gateway.per_window.{window}",
            "letters and digits",
        )
    for window, name in limits.gateway.policies:
        need(
            bool(re.fullmatch(r"[A-Za-z0-9_.:/-]+", name)),
            f"$.rate_limits.gateway.policies.{window}",
            "a policy name",
        )

    semantics = profile.semantics
    need(
        len(set(semantics.head)) == len(semantics.head),
        "$.semantics.head",
        "an operation named twice",
    )
    need(
        64 <= semantics.max_body_bytes <= 64 * 1_048_576,
        "$.semantics.max_body_bytes",
        "from 64 bytes to 64 MiB",
    )
    need(len(semantics.pets) <= 10_000, "$.semantics.pets", "at most 10,000 seed pets")
    ids: set[int] = set()
    for index, pet in enumerate(semantics.pets):
        path = f"$.semantics.pets[{index}]"
        need(1 <= pet.id <= INT64_MAX, f"{path}.id", "a positive int64")
        need(pet.id not in ids, f"{path}.id", "two pets with one id")
        ids.add(pet.id)
        need(INT64_MIN <= pet.category_id <= INT64_MAX, f"{path}.categoryId", "an int64")
    return problems


def _plan_problems(plan: Plan, path: str, need: Callable[[bool, str, str], None]) -> None:
    need(plan.per_minute >= 1, f"{path}.per_minute", "at least 1")
    if plan.per_day is not None:
        need(plan.per_day >= plan.per_minute, f"{path}.per_day", "at least per_minute")


# ---------------------------------------------------------------------------
# Rate limiting


def window_at(now: float, length: float, zone: str) -> tuple[float, float]:
    """The window of ``length`` on the clock that holds ``now``: counted from each
    midnight of ``zone`` (the day's last one ends at the next midnight)."""
    if zone == "UTC":
        start = math.floor(now / length) * length
        return start, start + length
    tz = ZoneInfo(zone)
    local = datetime.fromtimestamp(now, tz)
    midnight = datetime(local.year, local.month, local.day, tzinfo=tz)
    following = datetime.combine(midnight.date() + timedelta(days=1), dt_time(), tzinfo=tz)
    day_start, day_end = midnight.timestamp(), following.timestamp()
    start = day_start + math.floor((now - day_start) / length) * length
    return start, min(start + length, day_end)


class FixedWindow:
    """A count per window: on the clock, or from the first request after the last window."""

    def __init__(self, length: float, aligned: bool, zone: str) -> None:
        self.length, self.aligned, self.zone = length, aligned, zone
        self.start: float | None = None
        self.end = 0.0
        self.used = 0

    def _roll(self, now: float) -> None:
        if self.aligned:
            start, end = window_at(now, self.length, self.zone)
            if start != self.start:
                self.start, self.end, self.used = start, end, 0
        elif self.start is None or now >= self.end:
            self.start, self.end, self.used = now, now + self.length, 0

    def check(self, now: float, limit: int) -> tuple[bool, float]:
        self._roll(now)
        return self.used < limit, self.end

    def take(self, now: float, limit: int, refused: bool) -> None:
        self.used += 1

    def left(self, now: float, limit: int) -> int:
        return max(0, limit - self.used)

    def give_back(self, now: float, limit: int) -> None:
        if self.start is not None and self.start <= now < self.end and self.used:
            self.used -= 1

    def full_at(self, now: float, limit: int) -> float:
        return self.end


class SlidingLog:
    """The instants of the requests of the last ``length`` seconds."""

    def __init__(self, length: float) -> None:
        self.length = length
        self.log: deque[float] = deque()

    def check(self, now: float, limit: int) -> tuple[bool, float]:
        while self.log and self.log[0] + self.length <= now:
            self.log.popleft()
        if len(self.log) < limit:
            return True, now
        return False, self.log[len(self.log) - limit] + self.length

    def take(self, now: float, limit: int, refused: bool) -> None:
        self.log.append(now)

    def left(self, now: float, limit: int) -> int:
        return max(0, limit - len(self.log))

    def give_back(self, now: float, limit: int) -> None:
        for index in range(len(self.log) - 1, -1, -1):
            if self.log[index] == now:
                del self.log[index]
                return

    def full_at(self, now: float, limit: int) -> float:
        return self.log[-1] + self.length if self.log else now


class SlidingCounter:
    """Counts per window on the clock, the previous one weighted by how much of it the
    last ``length`` seconds still cover."""

    def __init__(self, length: float, zone: str) -> None:
        self.length, self.zone = length, zone
        self.start: float | None = None
        self.end = 0.0
        self.current = self.previous = 0

    def _roll(self, now: float) -> None:
        start, end = window_at(now, self.length, self.zone)
        if start != self.start:
            self.previous = self.current if start == self.end else 0
            self.current = 0
            self.start, self.end = start, end

    def _estimate(self, now: float) -> float:
        assert self.start is not None
        return self.previous * (self.end - now) / (self.end - self.start) + self.current

    def check(self, now: float, limit: int) -> tuple[bool, float]:
        self._roll(now)
        assert self.start is not None
        if self._estimate(now) + 1 <= limit:
            return True, now
        if self.current + 1 <= limit:
            span = self.end - self.start
            return False, self.end - span * (limit - 1 - self.current) / self.previous
        start, end = window_at(self.end, self.length, self.zone)
        return False, end - (end - start) * (limit - 1) / self.current

    def take(self, now: float, limit: int, refused: bool) -> None:
        self.current += 1

    def left(self, now: float, limit: int) -> int:
        # Instants are good to a quarter of a microsecond: what is a hair short still counts.
        assert self.start is not None
        margin = 1e-6 * self.previous / (self.end - self.start) + 1e-9
        return max(0, math.floor(limit - self._estimate(now) + margin))

    def give_back(self, now: float, limit: int) -> None:
        if self.start is not None and self.start <= now < self.end and self.current:
            self.current -= 1

    def full_at(self, now: float, limit: int) -> float:
        if self.current:
            return window_at(self.end, self.length, self.zone)[1]
        return self.end if self.previous else now


class TokenBucket:
    """``limit`` tokens, refilled continuously at ``limit`` per ``length`` seconds."""

    def __init__(self, length: float) -> None:
        self.length = length
        self.tokens: float | None = None
        self.last = 0.0

    def _refill(self, now: float, limit: int) -> float:
        if self.tokens is None:
            self.tokens, self.last = float(limit), now
        elif now > self.last:
            self.tokens = min(limit, self.tokens + (now - self.last) * limit / self.length)
            self.last = now
        return self.tokens

    def check(self, now: float, limit: int) -> tuple[bool, float]:
        tokens = self._refill(now, limit)
        return tokens >= 1, now + (1 - tokens) * self.length / limit

    def take(self, now: float, limit: int, refused: bool) -> None:
        self.tokens = max(0.0, self._refill(now, limit) - 1)

    def left(self, now: float, limit: int) -> int:
        margin = 1e-6 * limit / self.length + 1e-9
        return max(0, math.floor(self._refill(now, limit) + margin))

    def give_back(self, now: float, limit: int) -> None:
        if self.tokens is not None:
            self.tokens = min(limit, self.tokens + 1)

    def full_at(self, now: float, limit: int) -> float:
        return now + (limit - self._refill(now, limit)) * self.length / limit


class LeakyBucket:
    """A leaky bucket as a meter (GCRA): ``limit`` requests, leaking ``limit`` per ``length``."""

    def __init__(self, length: float) -> None:
        self.length = length
        self.tat: float | None = None

    def check(self, now: float, limit: int) -> tuple[bool, float]:
        interval = self.length / limit
        tat = max(self.tat if self.tat is not None else now, now)
        # A microsecond's slack: the instant is a sum of rounded intervals.
        return tat + interval - now <= self.length + 1e-6, tat + interval - self.length

    def take(self, now: float, limit: int, refused: bool) -> None:
        tat = max(self.tat if self.tat is not None else now, now) + self.length / limit
        self.tat = min(tat, now + self.length)

    def left(self, now: float, limit: int) -> int:
        tat = max(self.tat if self.tat is not None else now, now)
        margin = 1e-6 * limit / self.length + 1e-9
        left = math.floor((now + self.length - tat) * limit / self.length + margin)
        return min(limit, max(0, left))

    def give_back(self, now: float, limit: int) -> None:
        if self.tat is not None:
            self.tat = max(self.tat - self.length / limit, now)

    def full_at(self, now: float, limit: int) -> float:
        return max(self.tat if self.tat is not None else now, now)


Counter = FixedWindow | SlidingLog | SlidingCounter | TokenBucket | LeakyBucket


def new_counter(algorithm: str, length: float, aligned: bool, zone: str) -> Counter:
    if algorithm == "sliding_log":
        return SlidingLog(length)
    if algorithm == "sliding_window":
        return SlidingCounter(length, zone)
    if algorithm == "token_bucket":
        return TokenBucket(length)
    if algorithm == "leaky_bucket":
        return LeakyBucket(length)
    return FixedWindow(length, aligned, zone)


@dataclass
class Bucket:
    """What one key (or one anonymous address) has spent, and its ban state."""

    minute: Counter
    day: Counter
    rejections: deque[float] = field(default_factory=deque)
    consecutive: int = 0
    banned_until: float | None = None


@dataclass(frozen=True)
class WindowState:
    """One window's figures on an answer: its limit, requests left, when it is whole again."""

    name: Literal["minute", "day"]
    limit: int
    left: int
    full_at: float


@dataclass(frozen=True)
class Verdict:
    """The limiter's answer: what the X-RateLimit-* headers say, and when to retry.

    ``resets_at`` is the instant the described window is whole again (or the ban
    ends); ``windows`` every window's figures (for the per-window and draft
    headers). A verdict with ``limit`` 0 is for a caller no limit applies to.
    """

    outcome: Literal["admitted", "rate_limited", "banned"]
    limit: int
    remaining: int
    resets_at: float
    window: Literal["minute", "day", "ban"]
    retry_at: float | None = None
    windows: tuple[WindowState, ...] = ()


UNLIMITED = Verdict("admitted", 0, 0, 0.0, "minute")


class RateLimiter:
    """Each plan's two windows per bucket, and the ban for buckets that keep going after 429."""

    def __init__(self, limits: RateLimits) -> None:
        self._limits = limits
        self._buckets: dict[Hashable, Bucket] = {}

    def _bucket(self, bucket_id: Hashable) -> Bucket:
        bucket = self._buckets.get(bucket_id)
        if bucket is None:
            limits = self._limits
            zone = limits.gateway.time_zone
            minute, day = limits.aligned("minute"), limits.aligned("day")
            bucket = self._buckets[bucket_id] = Bucket(
                new_counter(limits.gateway.minute_algorithm, limits.minute_seconds, minute, zone),
                new_counter(limits.gateway.day_algorithm, limits.day_seconds, day, zone),
            )
        return bucket

    def admit(self, bucket_id: Hashable, plan: Plan, now: float) -> Verdict:
        limits = self._limits
        bucket = self._bucket(bucket_id)
        counters: list[tuple[Literal["minute", "day"], int, Counter]] = [
            ("minute", plan.per_minute, bucket.minute)
        ]
        if plan.per_day is not None:
            counters.append(("day", plan.per_day, bucket.day))
        checks = [
            (name, limit, counter, *counter.check(now, limit)) for name, limit, counter in counters
        ]
        if bucket.banned_until is not None:
            if now < bucket.banned_until:
                limit = (
                    plan.per_day if limits.describe == "day" and plan.per_day else plan.per_minute
                )
                ends = bucket.banned_until
                windows = tuple(WindowState(name, lim, 0, ends) for name, lim, _ in counters)
                return Verdict("banned", limit, 0, ends, "ban", ends, windows)
            bucket.banned_until = None
        if all(allowed for _, _, _, allowed, _ in checks):
            for _, limit, counter in counters:
                counter.take(now, limit, False)
            bucket.consecutive = 0
            windows = self._windows(counters, now)
            described = self._described(windows)
            return Verdict(
                "admitted", described.limit, described.left, described.full_at, described.name,
                None, windows,
            )  # fmt: skip
        if limits.gateway.counts == "attempts":
            # Every attempt counts, the refused ones too.
            for _, limit, counter in counters:
                counter.take(now, limit, True)
            checks = [
                (name, limit, counter, *counter.check(now, limit))
                for name, limit, counter in counters
            ]
        refused = [check for check in checks if not check[3]]
        # Waiting for the minute would not help while the day is spent.
        name, _, _, _, retry_at = max(refused, key=lambda check: (check[4], check[0] == "day"))
        self._reject(bucket, now)
        windows = self._windows(counters, now)
        shown = next(state for state in windows if state.name == name)
        if limits.refusal_figures == "described" and limits.describe != "tightest":
            # The figures of the window the provider always describes, whichever blocks.
            shown = next((state for state in windows if state.name == limits.describe), shown)
        return Verdict(
            "rate_limited", shown.limit, shown.left, shown.full_at, name, retry_at, windows,
        )  # fmt: skip

    def give_back(self, bucket_id: Hashable, plan: Plan, now: float) -> None:
        """An answer that does not count: what its request took goes back."""
        bucket = self._bucket(bucket_id)
        bucket.minute.give_back(now, plan.per_minute)
        if plan.per_day is not None:
            bucket.day.give_back(now, plan.per_day)

    @staticmethod
    def _windows(
        counters: list[tuple[Literal["minute", "day"], int, Counter]], now: float
    ) -> tuple[WindowState, ...]:
        return tuple(
            WindowState(name, limit, counter.left(now, limit), counter.full_at(now, limit))
            for name, limit, counter in counters
        )

    def _described(self, windows: tuple[WindowState, ...]) -> WindowState:
        minute = windows[0]
        day = windows[1] if len(windows) > 1 else None
        if day is None or self._limits.describe == "minute":
            return minute
        if self._limits.describe == "day":
            return day
        return day if day.left < minute.left else minute

    def _reject(self, bucket: Bucket, now: float) -> None:
        ban = self._limits.ban
        if not ban.enabled:
            return
        if ban.trigger == "within":
            bucket.rejections.append(now)
            while bucket.rejections and bucket.rejections[0] <= now - ban.within_seconds:
                bucket.rejections.popleft()
            count = len(bucket.rejections)
        else:
            bucket.consecutive += 1
            count = bucket.consecutive
        if count >= ban.rejections:
            bucket.banned_until = now + ban.duration_seconds
            bucket.rejections.clear()
            bucket.consecutive = 0


# ---------------------------------------------------------------------------
# The store


class PetStore:
    """Pets by id, in the order they arrived."""

    def __init__(self, pets: tuple[SeedPet, ...]) -> None:
        self._pets: dict[int, dict[str, Any]] = {pet.id: pet.as_json() for pet in pets}
        self._next_id = max(self._pets, default=0) + 1
        self._positions = {pet.id: index for index, pet in enumerate(pets)}

    def listing(
        self, status: str | None, order: str, collections: Collections
    ) -> list[dict[str, Any]]:
        """Every pet the filter keeps, in the listing's order."""
        key, reverse = collection.order_key(collections, order, self._positions)
        kept = [p for p in self._pets.values() if status is None or p.get("status") == status]
        return sorted(kept, key=key, reverse=reverse)

    def add(self, fields: dict[str, Any]) -> dict[str, Any] | None:
        if len(self._pets) >= MAX_PETS or self._next_id > INT64_MAX:
            return None
        pet = {"id": self._next_id, **fields}
        self._pets[self._next_id] = pet
        self._next_id += 1
        return pet

    def get(self, pet_id: int) -> dict[str, Any] | None:
        return self._pets.get(pet_id)

    def list(self, status: str | None, limit: int, order: str) -> list[dict[str, Any]]:
        pets: Any = self._pets.values()
        if order == "ascending":
            pets = sorted(pets, key=lambda pet: pet["id"])
        elif order == "descending":
            pets = sorted(pets, key=lambda pet: pet["id"], reverse=True)
        chosen: list[dict[str, Any]] = []
        for pet in pets:
            if len(chosen) == limit:
                break
            if status is None or pet.get("status") == status:
                chosen.append(pet)
        return chosen


# ---------------------------------------------------------------------------
# HTTP


class Refused(Exception):
    """A refusal: the condition decides status and code; the message says what was wrong."""

    def __init__(
        self, condition: str, message: str, headers: list[tuple[str, str]] | None = None
    ) -> None:
        super().__init__(message)
        self.condition = condition
        self.message = message
        self.headers = headers or []


@dataclass(frozen=True)
class Route:
    """What a method and path name: an operation, a known path (``allow``), or nothing."""

    operation: str | None
    allow: str | None
    pet_id: str | None = None


ROUTES: dict[str, dict[str, str]] = {
    "pets": {"GET": "listPets", "POST": "createPet"},
    "pets/{petId}": {"GET": "getPet"},
    "store/orders": {"GET": "listOrders"},
}


@dataclass(frozen=True)
class Caller:
    kind: Literal["key", "missing", "malformed", "unknown"]
    key: str | None = None
    plan: Plan | None = None


@dataclass
class Exchange:
    """One request being answered: what the steps learned on the way."""

    now: float
    request_id: str
    route: Route
    caller: Caller
    verdict: Verdict


@dataclass
class Answer:
    status: int
    body: Any
    headers: list[tuple[str, str]] = field(default_factory=list)
    condition: str | None = None


def http_date(instant: float) -> str:
    return formatdate(math.ceil(instant), usegmt=True)


def rfc3339(instant: float) -> str:
    moment = datetime.fromtimestamp(instant, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


class ProfiledPetStore:
    """The ASGI application: one Pet Store provider, as its profile says.

    ``keys`` maps each API key to a plan of the profile; ``clock`` gives the
    current Unix time (the wall clock unless a test injects its own); ``log``
    receives one access-log line per answer.
    """

    def __init__(
        self,
        profile: Profile,
        keys: Mapping[str, str],
        clock: Callable[[], float] = time.time,
        log: Callable[[str], None] | None = None,
    ) -> None:
        problems = profile.problems()
        for key, plan in keys.items():
            if not BEARER_TOKEN.fullmatch(key):
                problems.append(f"--key {key!r}: not a bearer token (RFC 6750)")
            if profile.rate_limits.plan(plan) is None:
                known = ", ".join(name for name, _ in profile.rate_limits.plans)
                problems.append(f"--key {key}={plan}: no plan {plan!r} (known: {known})")
        if problems:
            raise ProfileError("\n".join(problems))
        self.profile = profile
        self._plans = {key: profile.rate_limits.plan(plan) for key, plan in keys.items()}
        self._clock = clock
        self._log = log
        self._limiter = RateLimiter(profile.rate_limits)
        self._store = PetStore(profile.semantics.pets)
        self._served_head = frozenset(profile.semantics.head)
        self._request_count = 0
        headers = profile.headers
        self._always = list(headers.always)
        self._by_class = {name: list(values) for name, values in headers.by_status_class}
        self._by_operation = {name: list(values) for name, values in headers.by_operation}
        self._etag = dict(headers.etag)
        self._cache_control = dict(headers.cache_control)
        self._deprecation = self._deprecation_headers(headers.deprecation)
        self._front = Front(profile.http, clock() + profile.clock_offset_seconds)
        # The JSON bodies of the creates being answered, by request (for Error details).
        self._sent_bodies: dict[int, Any] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        request = Request(scope, receive)
        now = self._clock() + self.profile.clock_offset_seconds
        try:
            status, headers, body = await self.answer(request, now)
        except ClientDisconnect:
            return  # nothing was stored: a body that never arrived changes nothing
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send(
            {"type": "http.response.body", "body": b"" if request.method == "HEAD" else body}
        )
        if self._log is not None:
            target = scope["path"] + (
                "?" + scope["query_string"].decode("latin-1") if scope["query_string"] else ""
            )
            self._log(f"{request.method} {target} {status}")

    async def answer(
        self, request: Request, now: float
    ) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        """Status, raw headers and body for one request at ``now``."""
        self._request_count += 1
        front = self._front
        sent = {name.lower(): value for name, value in request.headers.items()}
        head = frozenset(self.profile.semantics.head)

        def allow_of(relative: str) -> str | None:
            return self._allow(relative, head)

        path = front.unslashed(request.url.path, allow_of)
        query = request.url.query
        request_id = self._request_id()
        spec = self.profile.headers.request_id
        if spec is not None:
            request_id = front.request_id(sent, spec.name, request_id)
        base_url = str(request.base_url)
        made = front.staged("gateway", request.method, path, query, sent, now, base_url, allow_of)
        route = self._route(request.method, path)
        caller = self._caller(request.headers.getlist("authorization"))
        if made is not None:
            # Before the limiter: nothing counted, no rate-limit figures.
            verdict = Verdict("admitted", 0, 0, now, "minute")
            exchange = Exchange(now, request_id, route, caller, verdict)
            return await self._made(request, exchange, made, rated=False)
        if caller.plan is not None:
            bucket: Hashable = ("key", caller.key)
            plan = caller.plan
        else:
            bucket = ("address", request.client.host if request.client else "")
            plan = self.profile.rate_limits.anonymous
        if caller.plan is None and not self.profile.rate_limits.gateway.anonymous_limited:
            verdict = UNLIMITED  # the gateway limits keys only: a plain 401 follows
        else:
            verdict = self._limiter.admit(bucket, plan, now)
        exchange = Exchange(now, request_id, route, caller, verdict)
        if verdict.outcome == "admitted":
            for stage in ("counted", "authenticated"):
                if stage == "authenticated" and caller.kind != "key":
                    break
                made = front.staged(
                    stage, request.method, path, query, sent, now, base_url, allow_of
                )
                if made is not None:
                    return await self._made(request, exchange, made, rated=True)
        try:
            answer = await self._serve(request, exchange)
        except Refused as refused:
            answer = self._refusal(refused, exchange, request)
        finally:
            sent_body = self._sent_bodies.pop(id(request), None)
        body = (
            b"" if answer.body is None else json.dumps(answer.body, separators=(",", ":")).encode()
        )
        headers = self._headers(request, exchange, answer, body)
        gateway = self.profile.rate_limits.gateway
        if verdict.outcome == "admitted" and verdict.limit and gateway.gives_back(answer.status):
            self._limiter.give_back(bucket, plan, now)
        operation = route.operation if route.operation != "options" else None
        if operation == "createPet" and answer.status == 201:
            front.note_created(answer.body["id"], now)
        status, body = front.shaped(
            operation, request.method, path, answer.status, body, headers, sent,
            answer.body, now, sent_body,
        )  # fmt: skip
        if status in (204, 304):
            headers = [(n, v) for n, v in headers if n.lower() != "content-type"]
        raw = [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers]
        if status not in (204, 304):
            raw.append((b"content-length", str(len(body)).encode()))
        await front.delay(operation)
        return status, raw, body

    async def _made(
        self, request: Request, exchange: Exchange, made: Made, rated: bool
    ) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        """An answer the front made in the service's place (``profiled_http``)."""
        body = b"" if made.body is None else json.dumps(made.body, separators=(",", ":")).encode()
        headers: list[tuple[str, str]] = []
        if made.body is not None:
            headers.append(("Content-Type", self.profile.headers.content_type))
        if rated and not exchange.verdict.limit:
            headers += self._uncounted_headers(exchange.now)
        elif rated:
            # The gateway's figures, in every form it writes them, as on any answer.
            headers += self._rate_headers(exchange.verdict, exchange.now, made.status)
        headers += made.headers
        if self.profile.headers.request_id is not None:
            headers.append((self.profile.headers.request_id.name, exchange.request_id))
        headers.append(("Date", formatdate(math.floor(exchange.now), usegmt=True)))
        raw = [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers]
        if made.status not in (204, 304):
            raw.append((b"content-length", str(len(body)).encode()))
        return made.status, raw, body

    def _allow(self, relative: str, head: frozenset[str]) -> str | None:
        """``Allow`` of a path under /v1 (None: no such path): OPTIONS where it is served."""
        operation = {"/pets": "listPets", "/store/orders": "listOrders"}.get(relative, "getPet")
        allow = served(relative, operation in head)
        if allow is not None and self.profile.http.options != "none":
            allow = ", ".join(sorted([*allow.split(", "), "OPTIONS"]))
        return allow

    # -- the steps, in order

    async def _serve(self, request: Request, exchange: Exchange) -> Answer:
        verdict, route, caller = exchange.verdict, exchange.route, exchange.caller
        if verdict.outcome == "banned":
            who = "API key" if caller.plan is not None else "client address"
            raise Refused(
                "key_banned", f"this {who} is temporarily banned for sending on after 429 answers"
            )
        if verdict.outcome == "rate_limited":
            raise Refused(
                "rate_limited",
                f"the per-{verdict.window} allowance of {verdict.limit} requests is used up",
            )
        if self.profile.refusals.routing == "before_auth":
            self._check_route(request.method, route)
        if caller.kind == "missing":
            raise Refused(
                "missing_key", "an API key is required: send Authorization: Bearer <API_KEY>"
            )
        if caller.kind == "malformed":
            raise Refused(
                "malformed_authorization", "the Authorization header must be 'Bearer <API_KEY>'"
            )
        if caller.kind == "unknown":
            raise Refused("unknown_key", "the API key is not valid")
        self._check_route(request.method, route)
        if route.operation == "listPets":
            return self._list_pets(request)
        if route.operation == "createPet":
            return await self._create_pet(request)
        if route.operation == "getPet":
            return self._get_pet(route.pet_id or "", exchange.now)
        refusal = self.profile.refusals.list_orders
        if refusal is not None:
            raise Refused("list_orders", "orders are not available through this API")
        return Answer(200, [])

    def _route(self, method: str, path: str) -> Route:
        if not path.startswith(BASE + "/"):
            return Route(None, None)
        rest = path[len(BASE) + 1 :]
        pet_id = None
        if rest.startswith("pets/") and rest.count("/") == 1 and len(rest) > len("pets/"):
            pet_id = rest[len("pets/") :]
            rest = "pets/{petId}"
        methods = ROUTES.get(rest)
        if methods is None:
            return Route(None, None)
        served = dict(methods)
        if methods.get("GET") in self._served_head:
            served["HEAD"] = methods["GET"]
        if self.profile.http.options != "none":
            served["OPTIONS"] = "options"  # answered by the front (profiled_http)
        allow = ", ".join(sorted(served))
        return Route(served.get(method), allow, pet_id)

    def _check_route(self, method: str, route: Route) -> None:
        if route.allow is None:
            raise Refused("unknown_path", "no such path in this API")
        if route.operation is None:
            headers = (
                [("Allow", route.allow)]
                if self.profile.refusals.method_not_allowed.status == 405
                else []
            )
            raise Refused(
                "method_not_allowed",
                f"{method} is not allowed here (allowed: {route.allow})",
                headers,
            )

    def _caller(self, authorizations: list[str]) -> Caller:
        if not authorizations:
            return Caller("missing")
        if len(authorizations) > 1:
            return Caller("malformed")
        scheme, _, token = authorizations[0].partition(" ")
        if scheme.lower() != "bearer" or not BEARER_TOKEN.fullmatch(token):
            return Caller("malformed")
        plan = self._plans.get(token)
        if plan is None:
            return Caller("unknown", token)
        return Caller("key", token, plan)

    def _request_id(self) -> str:
        spec = self.profile.headers.request_id
        if spec is None:
            return str(uuid.uuid4())
        if spec.format == "counter":
            return f"{spec.prefix}{self._request_count:06d}"
        if spec.format == "uuid":
            return f"{spec.prefix}{uuid.uuid4()}"
        if spec.format == "alphanumeric":
            letters = string.ascii_letters + string.digits
            return spec.prefix + "".join(secrets.choice(letters) for _ in range(spec.length))
        return f"{spec.prefix}{uuid.uuid4().hex}"

    # -- operations

    def _list_pets(self, request: Request) -> Answer:
        query = request.query_params
        limit = LIMIT_DEFAULT
        collections = self.profile.semantics.collections
        try:
            raw_limit = collection.given(query.getlist("limit"), collections)
        except LookupError:
            raise Refused("bad_limit", "limit given more than once") from None
        try:
            status = collection.given(query.getlist("status"), collections)
        except LookupError:
            raise Refused("bad_status_filter", "status given more than once") from None
        read = collection.number(raw_limit, collections) if raw_limit else None
        if raw_limit is not None and read is not None and read >= 0:
            raw_limit = str(read)
        if raw_limit is not None:
            if not raw_limit.isascii() or not raw_limit.isdigit():
                raise Refused(
                    "bad_limit",
                    f"limit must be an integer from 1 to {LIMIT_MAX}, got {raw_limit[:40]!r}",
                )
            digits = raw_limit.lstrip("0")
            if not digits:
                raise Refused("bad_limit", f"limit must be at least 1, got {raw_limit[:40]!r}")
            if len(digits) > 3 or int(digits) > LIMIT_MAX:
                if self.profile.semantics.limit_above_maximum == "refuse":
                    raise Refused(
                        "limit_above_maximum",
                        f"limit must be at most {LIMIT_MAX}, got {raw_limit[:40]}",
                    )
                limit = LIMIT_MAX
            else:
                limit = int(digits)
        if status is not None and collections.status_case_insensitive:
            status = status.lower()
        if status is not None and status not in STATUSES:
            raise Refused(
                "bad_status_filter",
                f"status must be one of {', '.join(STATUSES)}, got {status[:40]!r}",
            )
        semantics = self.profile.semantics
        if collections == Collections() or (
            collections.pagination == "limit"
            and collections.order_by is None
            and collections.total_header is None
        ):
            return Answer(200, self._store.list(status, limit, semantics.list_order))
        listing = self._store.listing(status, semantics.list_order, collections)
        base = f"{BASE}/pets"
        if collections.link_urls == "absolute":
            base = str(request.base_url).rstrip("/") + base
        shown, headers = collection.page(
            collections, listing, request.url.query, limit, base, Refused
        )
        return Answer(200, shown, headers)

    async def _create_pet(self, request: Request) -> Answer:
        semantics = self.profile.semantics
        limit = semantics.max_body_bytes
        too_large = f"the body is over the {limit}-byte maximum"
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise Refused("payload_too_large", too_large, [("Connection", "close")])
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > limit:
                raise Refused("payload_too_large", too_large, [("Connection", "close")])
        if not body:
            raise Refused("missing_body", "a NewPet JSON body is required")
        media = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if not media and semantics.missing_content_type == "json":
            media = "application/json"  # the gateway defaults the media type
        if media != "application/json":
            raise Refused(
                "unsupported_media_type",
                f"the body must be application/json, not {media[:60] or 'untyped'}",
            )
        try:
            data = json.loads(bytes(body).decode("utf-8"), parse_constant=_refuse_constant)
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise Refused("malformed_json", "the body is not valid JSON") from None
        self._sent_bodies[id(request)] = data
        collections = semantics.collections
        if isinstance(data, dict) and "categoryId" in data:
            data = {**data, "categoryId": collection.category(data["categoryId"], collections)}
        fields = _new_pet(data)
        unknown = [name for name in data if name not in ("name", "categoryId", "status")]
        if unknown and semantics.unknown_fields == "refuse":
            raise Refused("unknown_field", f"unknown field(s): {', '.join(unknown)[:200]}")
        collection.check(fields, collections, Refused)
        defaulted = "status" not in fields and semantics.default_status is not None
        if defaulted:
            fields["status"] = semantics.default_status
        if semantics.unknown_fields == "keep":
            fields.update((name, data[name]) for name in unknown if name != "id")
        pet = self._store.add(fields)
        if pet is None:
            return Answer(
                507, {"code": "store_full", "message": "the store is full", "status": 507}
            )
        if defaulted and collections.default_on_read:
            # Stored with its default; the 201 is the pet as it was sent.
            return Answer(201, {name: value for name, value in pet.items() if name != "status"})
        return Answer(201, pet)

    def _get_pet(self, raw_id: str, now: float) -> Answer:
        deprecation = self.profile.headers.deprecation
        if now >= deprecation.sunset:
            raise Refused(
                "gone",
                f"GET /pets/{{petId}} was removed on {http_date(deprecation.sunset)}; "
                "use GET /pets with the status filter",
            )
        if not re.fullmatch(r"-?[0-9]{1,25}", raw_id) or not INT64_MIN <= int(raw_id) <= INT64_MAX:
            raise Refused("bad_pet_id", f"petId must be an int64, got {raw_id[:40]!r}")
        pet = self._store.get(int(raw_id))
        if pet is None:
            raise Refused("pet_not_found", f"no pet with id {int(raw_id)}")
        return Answer(200, pet)

    # -- answers

    def _refusal(self, refused: Refused, exchange: Exchange, request: Request) -> Answer:
        refusals = self.profile.refusals
        refusal = refusals.of(refused.condition)
        subject = _subject(refused.condition, request, self._sent_bodies.get(id(request)))
        wait = (
            exchange.verdict.retry_at - exchange.now
            if exchange.verdict.retry_at is not None
            and refused.condition in ("rate_limited", "key_banned")
            else None
        )
        message = refused.message
        template = dict(self.profile.http.messages).get(refused.condition)
        if template is not None:
            message = _filled(template, subject, request, wait)
        body: dict[str, Any] = {
            "code": refusal.code,
            "message": message,
            "status": refusal.status,
        }
        for extra in refusals.extra_fields:
            if extra.only and refused.condition not in extra.only:
                continue
            if extra.kind == "constant":
                body[extra.name] = extra.value
            elif extra.kind == "uuid":
                body[extra.name] = str(uuid.uuid4())
            elif extra.kind == "request_id":
                body[extra.name] = exchange.request_id
            elif extra.kind == "timestamp":
                body[extra.name] = rfc3339(exchange.now)
            elif extra.kind in ("retry_after_s", "retry_after_ms"):
                if wait is not None:
                    seconds = max(1, math.ceil(wait))
                    body[extra.name] = seconds if extra.kind == "retry_after_s" else seconds * 1000
            elif extra.kind in ("value", "parameter"):
                given = None if subject is None else subject[0 if extra.kind == "value" else 1]
                if given is not None:
                    body[extra.name] = given
            elif extra.kind == "details":
                items = subject[2] if subject is not None else []
                if refusals.details_item == "pointer_reason":
                    items = [{"pointer": "/" + i["field"], "reason": i["issue"]} for i in items]
                body[extra.name] = items
        return Answer(refusal.status, body, list(refused.headers), refused.condition)

    def _headers(
        self, request: Request, exchange: Exchange, answer: Answer, body: bytes
    ) -> list[tuple[str, str]]:
        profile = self.profile
        limits = profile.rate_limits
        verdict, now, operation = exchange.verdict, exchange.now, exchange.route.operation
        headers = [("Content-Type", profile.headers.content_type)]
        if verdict.limit:
            headers += self._rate_headers(verdict, now, answer.status)
        else:
            headers += self._uncounted_headers(now)
        if verdict.retry_at is not None and answer.condition in ("rate_limited", "key_banned"):
            form = (
                limits.retry_after
                if answer.condition == "rate_limited"
                else limits.retry_after_banned
            )
            wait = verdict.retry_at - now
            if form == "seconds":
                headers.append(("Retry-After", str(max(1, math.ceil(wait)))))
            elif form == "decimal":
                headers.append(("Retry-After", _decimal(wait, limits.gateway.retry_after_decimals)))
            elif form == "http-date":
                headers.append(("Retry-After", http_date(verdict.retry_at)))
        if profile.headers.request_id is not None:
            headers.append((profile.headers.request_id.name, exchange.request_id))
        challenge = profile.refusals.www_authenticate
        if answer.status == 401 and challenge is not None:
            headers.append(("WWW-Authenticate", self._challenge(challenge, answer.condition)))
        headers += answer.headers
        if answer.status == 201 and profile.headers.location != "none":
            path = f"{BASE}/pets/{answer.body['id']}"
            if profile.headers.location == "url":
                path = str(request.base_url).rstrip("/") + path
            headers.append(("Location", path))
        if answer.status == 200 and operation in self._etag:
            digest = hashlib.new(profile.headers.etag_digest, body).hexdigest()
            digest = digest[: profile.headers.etag_digits]
            headers.append(
                ("ETag", f'W/"{digest}"' if self._etag[operation] == "weak" else f'"{digest}"')
            )
        if answer.status == 200 and operation in self._cache_control:
            headers.append(("Cache-Control", self._cache_control[operation]))
        if operation == "getPet" and self._carries_deprecation(exchange, answer):
            headers += self._deprecation
        headers += self._always
        headers += self._by_class.get(f"{answer.status // 100}xx", [])
        if operation is not None:
            headers += self._by_operation.get(operation, [])
        headers.append(("Date", formatdate(math.floor(now), usegmt=True)))
        return headers

    def _rate_headers(self, verdict: Verdict, now: float, status: int) -> list[tuple[str, str]]:
        """The X-RateLimit-* figures the gateway sends, its per-window and draft headers."""
        limits = self.profile.rate_limits
        headers: list[tuple[str, str]] = []
        for figure in limits.gateway.figures:
            if figure == "limit":
                headers.append(("X-RateLimit-Limit", str(verdict.limit)))
            elif figure == "remaining":
                headers.append(("X-RateLimit-Remaining", str(verdict.remaining)))
            elif figure == "reset":
                headers.append(("X-RateLimit-Reset", self._reset(verdict.resets_at, now)))
            elif figure == "used":
                headers.append(("X-RateLimit-Used", str(verdict.limit - verdict.remaining)))
            else:
                headers.append(("X-RateLimit-Resource", limits.gateway.resource))
        states = {state.name: state for state in verdict.windows}
        second = states.get("minute") if limits.gateway.second_set else None
        if second is not None:
            form = limits.gateway.second_set_reset
            reset = {
                "epoch": str(math.ceil(second.full_at)),
                "epoch_ms": str(math.ceil(second.full_at * 1000)),
                "delta": str(max(0, math.ceil(second.full_at - now))),
            }[form]
            told = {
                "limit": str(second.limit),
                "remaining": str(second.left),
                "reset": reset,
                "used": str(second.limit - second.left),
            }
            for figure in limits.gateway.second_set_figures:
                name = f"X-RateLimit-{limits.gateway.second_set}-{figure.capitalize()}"
                headers.append((name, told[figure]))
        for window, name in limits.gateway.per_window:
            state = states.get(window)
            if state is not None:
                headers.append((f"X-RateLimit-Limit-{name}", str(state.limit)))
                headers.append((f"X-RateLimit-Remaining-{name}", str(state.left)))
        if limits.gateway.draft == "all" or (
            limits.gateway.draft == "success" and 200 <= status < 300
        ):
            names = dict(limits.gateway.policies)
            lengths = {"minute": limits.minute_seconds, "day": limits.day_seconds}
            policy, state_text = [], []
            for state in verdict.windows:
                if verdict.outcome == "banned":
                    wait = max(1, math.ceil(state.full_at - now))
                else:
                    wait = max(0, math.ceil(state.full_at - now))
                policy.append(f'"{names[state.name]}";q={state.limit};w={lengths[state.name]}')
                state_text.append(f'"{names[state.name]}";r={state.left};t={wait}')
            headers.append(("RateLimit-Policy", ", ".join(policy)))
            headers.append(("RateLimit", ", ".join(state_text)))
        return headers

    def _uncounted_headers(self, now: float) -> list[tuple[str, str]]:
        """What a caller the gateway does not limit is told: nothing, or an allowance of
        nothing whole at once (``Gateway.uncounted``)."""
        limits = self.profile.rate_limits
        gateway = limits.gateway
        if gateway.uncounted == "none":
            return []
        headers = []
        for figure in gateway.figures:
            if figure == "reset":
                if limits.reset == "delta":
                    decimals = gateway.reset_decimals
                    reset = f"{0:.{decimals}f}"
                else:
                    reset = self._reset(now, now)
                headers.append(("X-RateLimit-Reset", reset))
            elif figure == "resource":
                headers.append(("X-RateLimit-Resource", gateway.resource))
            else:
                headers.append((f"X-RateLimit-{figure.capitalize()}", "0"))
        return headers

    def _reset(self, instant: float, now: float) -> str:
        limits = self.profile.rate_limits
        form = limits.reset
        if form == "epoch":
            if not limits.gateway.reset_decimals:
                return str(math.ceil(instant))
            return _decimal(instant, limits.gateway.reset_decimals)
        if form == "epoch_ms":
            return str(math.ceil(instant * 1000))
        if limits.gateway.reset_decimals:
            return _decimal(max(0.0, instant - now), limits.gateway.reset_decimals)
        return str(max(1, math.ceil(instant - now)))

    @staticmethod
    def _challenge(challenge: WwwAuthenticate, condition: str | None) -> str:
        params = []
        if challenge.realm is not None:
            params.append(f'realm="{challenge.realm}"')
        if challenge.invalid_token_error and condition == "unknown_key":
            params.append('error="invalid_token"')
        return "Bearer" + (" " + ", ".join(params) if params else "")

    def _carries_deprecation(self, exchange: Exchange, answer: Answer) -> bool:
        answers = self.profile.headers.deprecation.answers
        if answers == "success":
            return 200 <= answer.status < 300
        if answers == "authenticated":
            return exchange.caller.kind == "key"
        return True

    @staticmethod
    def _deprecation_headers(deprecation: DeprecationHeaders) -> list[tuple[str, str]]:
        headers = []
        if deprecation.deprecation == "epoch":
            headers.append(("Deprecation", f"@{deprecation.since}"))
        elif deprecation.deprecation == "http-date":
            headers.append(("Deprecation", http_date(deprecation.since)))
        elif deprecation.deprecation == "true":
            headers.append(("Deprecation", "true"))
        if deprecation.sunset_header:
            headers.append(("Sunset", http_date(deprecation.sunset)))
        if deprecation.link is not None:
            headers.append(("Link", deprecation.link))
        return headers


def _decimal(value: float, decimals: int) -> str:
    """``value`` rounded up to ``decimals`` digits (none: a whole number)."""
    scale = 10**decimals
    steps = max(math.ceil(round(value * scale, 6)), 1 if decimals else 0)
    if not decimals:
        return str(steps)
    return f"{steps // scale}.{steps % scale:0{decimals}d}"


def _subject(
    condition: str, request: Request, body: Any
) -> tuple[Any, str | None, list[dict[str, str]]] | None:
    """What the request got wrong for ``condition``: (value as sent, where, every invalid field)."""
    query = request.query_params
    if condition in ("bad_limit", "limit_above_maximum"):
        return query.getlist("limit")[-1], "limit", []
    if condition == "bad_status_filter":
        return query.getlist("status")[-1], "status", []
    if condition in ("bad_pet_id", "pet_not_found"):
        return request.url.path.rsplit("/", 1)[-1], "petId", []
    if condition == "unsupported_media_type":
        return request.headers.get("content-type", "none"), "Content-Type", []
    if condition == "method_not_allowed":
        return request.method, None, []
    if condition == "unknown_path":
        return request.url.path, None, []
    if condition == "unknown_field" and isinstance(body, dict):
        unknown = sorted(n for n in body if n not in ("name", "categoryId", "status"))
        if unknown:
            return unknown[0], unknown[0], [{"field": n, "issue": "unknown"} for n in unknown]
    if condition == "invalid_body" and isinstance(body, dict):
        # A body's validator reports the missing fields first, then each field by name.
        missing = [n for n in ("name", "categoryId") if n not in body]
        wrong = []
        if not isinstance(body.get("name", ""), str):
            wrong.append(("name", "type"))
        category = body.get("categoryId", 0)
        if not isinstance(category, int) or isinstance(category, bool):
            wrong.append(("categoryId", "type"))
        if "status" in body and body["status"] not in STATUSES:
            wrong.append(("status", "enum"))
        found = [(n, "required") for n in missing] + sorted(wrong)
        if found:
            first = found[0][0]
            value = body.get(first) if first not in missing else None
            return value, first, [{"field": n, "issue": issue} for n, issue in found]
    return None


def _filled(
    template: str,
    subject: tuple[Any, str | None, list[dict[str, str]]] | None,
    request: Request,
    wait: float | None,
) -> str:
    """A message template with what the answer knows filled in."""
    token = request.headers.get("authorization", "").partition(" ")[2].strip()
    key = "" if not token else (f"{token[:4]}****{token[-4:]}" if len(token) >= 12 else "****")
    value = subject[0] if subject is not None else None
    shown = "" if value is None else value if isinstance(value, str) else json.dumps(value)
    values = {
        "value": shown[:200],
        "parameter": (subject[1] or "") if subject is not None else "",
        "method": request.method,
        "path": request.url.path,
        "key": key,
        "retry_after_s": str(max(1, math.ceil(wait))) if wait is not None else "",
    }
    for name, filled in values.items():
        template = template.replace("{" + name + "}", filled)
    return template


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _new_pet(data: Any) -> dict[str, Any]:
    """The NewPet fields of ``data``, or ``Refused("invalid_body")`` naming what is wrong."""
    if not isinstance(data, dict):
        raise Refused("invalid_body", "the body must be a JSON object (a NewPet)")
    name, category = data.get("name"), data.get("categoryId")
    if "name" not in data:
        raise Refused("invalid_body", "name is required")
    if not isinstance(name, str):
        raise Refused("invalid_body", "name must be a string")
    if "categoryId" not in data:
        raise Refused("invalid_body", "categoryId is required")
    if not isinstance(category, int) or isinstance(category, bool):
        raise Refused("invalid_body", "categoryId must be an integer")
    if not INT64_MIN <= category <= INT64_MAX:
        raise Refused("invalid_body", "categoryId must be an int64")
    fields: dict[str, Any] = {"name": name, "categoryId": category}
    if "status" in data:
        if data["status"] not in STATUSES:
            raise Refused("invalid_body", f"status must be one of {', '.join(STATUSES)}")
        fields["status"] = data["status"]
    return fields


# ---------------------------------------------------------------------------
# The command


def _key(text: str) -> tuple[str, str]:
    key, separator, plan = text.rpartition("=")
    if not separator or not key or not plan:
        raise argparse.ArgumentTypeError(f"expected KEY=PLAN, got {text!r}")
    return key, plan


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.upstream.profiled",
        description="A Pet Store provider whose choices come from a profile (JSON).",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--profile", help="a profile JSON file (default: mockstore's defaults)")
    parser.add_argument(
        "--key",
        type=_key,
        action="append",
        default=[],
        metavar="KEY=PLAN",
        help="an API key and its plan",
    )
    args = parser.parse_args(argv)
    try:
        profile = load_profile(args.profile) if args.profile else Profile()
        app = ProfiledPetStore(profile, dict(args.key), log=lambda line: print(line, flush=True))
    except ProfileError as error:
        print(f"profiled: not starting:\n{error}", file=sys.stderr)
        return 2
    listener = socket.socket(
        socket.AF_INET6 if ":" in args.host else socket.AF_INET, socket.SOCK_STREAM
    )
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((args.host, args.port))
    listener.listen(128)
    host, port = listener.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="off",
        date_header=False,
        server_header=False,
    )
    print(f"profiled listening on http://{shown}:{port}{BASE}", flush=True)
    uvicorn.Server(config).run(sockets=[listener])
    return 0


if __name__ == "__main__":
    sys.exit(main())
