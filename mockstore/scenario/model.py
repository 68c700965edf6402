"""The scenario model: plain frozen types saying how the mock behaves.

Nothing here reads a file or checks one: ``mockstore.scenario.build`` turns a
file's text into a ``Scenario`` (or every problem at once). Each default is
the scenario schema's own (``scenario.schema.json``): the ``Behaviour`` fields
are the schema's ``behaviour`` settings, in its order, and a test holds the two
together.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any

from mockstore import schemas
from mockstore.clock import parse_time
from mockstore.limiter.model import DEFAULT_LIMITS, Limits
from mockstore.ratelimit import BUILTIN_PLANS, BanPolicy, Plan
from mockstore.scenario.collections import Collections
from mockstore.scenario.http_section import HttpSettings
from mockstore.scenario.latency_section import LatencyRule
from mockstore.scenario.loader import scenario_schema, schema_default
from mockstore.scenario.maintenance_section import Window


def _behaviour_schema() -> dict[str, Any]:
    node: dict[str, Any] = scenario_schema()["properties"]["behaviour"]["properties"]
    return node


def _default_error_codes() -> tuple[tuple[str, str], ...]:
    """Every condition's Error code as the schema's defaults give it (mockstore's own)."""
    node = _behaviour_schema()["error_codes"]
    return tuple((name, spec["default"]) for name, spec in node["properties"].items())


DEFAULT_ERROR_CODES = _default_error_codes()


@dataclass(frozen=True, slots=True)
class RequestIdFormat:
    """``behaviour.request_id``: the header carrying each answer's request id, and its form."""

    header: str | None
    format: str  # counter | uuid | hex | alphanumeric
    prefix: str
    echo: str | None = None  # a pattern: a request's own id that matches it is answered back
    length: int = 24  # an alphanumeric id's letters and digits


@dataclass(frozen=True, slots=True)
class HeaderRule:
    """One of ``behaviour.headers``: a constant header, on the answers it matches.

    ``status`` is an exact status, ``status_class`` a hundred (4 for 4xx); None
    matches any. The first rule of a name that matches an answer decides it.
    """

    name: str
    value: str
    status: int | None = None
    status_class: int | None = None
    operation: str | None = None

    def matches(self, operation: str | None, status: int) -> bool:
        return (
            (self.status is None or self.status == status)
            and (self.status_class is None or self.status_class == status // 100)
            and (self.operation is None or self.operation == operation)
        )


@dataclass(frozen=True, slots=True)
class ErrorField:
    """One of ``behaviour.error_fields``: a field every (or some) Error body carries.

    ``value`` is the constant (when ``generate`` and ``template`` are None);
    ``conditions`` the conditions whose Error bodies carry it (None: every Error
    body). ``item`` is the shape of each entry of a ``details`` field, as
    (name, template) pairs.
    """

    name: str
    value: Any = None
    # uuid | request_id | timestamp | retry_after_s | retry_after_ms | value | parameter | details
    generate: str | None = None
    conditions: frozenset[str] | None = None
    template: str | None = None
    item: tuple[tuple[str, str], ...] = ()


# The read operations HEAD may be served on (the GET operations of the document).
HEAD_OPERATIONS: tuple[str, ...] = tuple(
    _behaviour_schema()["serve_head"]["oneOf"][1]["items"]["enum"]
)


def _object_defaults(name: str) -> dict[str, Any]:
    """The per-property defaults of an object setting, e.g. ``behaviour.request_id``."""
    return {
        child: spec["default"]
        for child, spec in _behaviour_schema()[name]["properties"].items()
        if "default" in spec
    }


def behaviour_value(name: str, value: Any) -> Any:
    """A ``behaviour`` setting as the scenario file gives it, as ``Behaviour`` holds it.

    Instants (the schema's ``date-time``) become Unix seconds, ``default_status:
    omit`` becomes ``None``, ``error_codes`` a ``(condition, code)`` pair for
    every condition (``www_authenticate`` likewise), ``error_statuses`` and
    ``etag`` the pairs given, ``serve_head`` the operations that serve HEAD,
    and the lists and objects their frozen types; every other value is kept
    as it is.
    """
    if name == "error_codes":
        given = value if isinstance(value, dict) else {}
        return tuple(
            (condition, given.get(condition, code)) for condition, code in DEFAULT_ERROR_CODES
        )
    if name in ("www_authenticate", "request_id"):
        filled = {**_object_defaults(name), **(value if isinstance(value, dict) else {})}
        if name == "request_id":
            return RequestIdFormat(
                filled["header"],
                filled["format"],
                filled["prefix"],
                filled["echo"],
                filled["length"],
            )
        return tuple(filled.items())
    if name in ("error_statuses", "etag", "error_messages"):
        given = value if isinstance(value, dict) else {}
        order = list(_behaviour_schema()[name]["properties"])
        return tuple(sorted(given.items(), key=lambda item: order.index(item[0])))
    if name == "serve_head":
        if value is True:
            return frozenset(HEAD_OPERATIONS)
        return frozenset(value or ())
    if name == "headers":
        return tuple(_header_rule(rule) for rule in value or ())
    if name == "error_fields":
        return tuple(_error_field(field) for field in value or ())
    if name == "default_status":
        return None if value == "omit" else value
    if _behaviour_schema()[name].get("format") == "date-time":
        return parse_time(value)
    return value


def _error_field(raw: dict[str, Any]) -> ErrorField:
    item = raw.get("item")
    if raw.get("generate") == "details" and item is None:
        item = _behaviour_schema()["error_fields"]["items"]["properties"]["item"]["default"]
    return ErrorField(
        raw["name"],
        raw.get("value"),
        raw.get("generate"),
        frozenset(raw["conditions"]) if "conditions" in raw else None,
        raw.get("template"),
        tuple((item or {}).items()),
    )


def _header_rule(raw: dict[str, Any]) -> HeaderRule:
    status = raw.get("status")
    return HeaderRule(
        raw["name"],
        raw["value"],
        status if isinstance(status, int) else None,
        int(status[0]) if isinstance(status, str) else None,
        raw.get("operation"),
    )


def _default(name: str) -> Any:
    """The schema's default of ``behaviour.<name>``, as ``Behaviour`` holds it."""
    return behaviour_value(name, _behaviour_schema()[name].get("default"))


SUNSET: float = _default("sunset")
DEPRECATED_SINCE: float = _default("deprecated_since")
REQUEST_ID: RequestIdFormat = _default("request_id")


@dataclass(frozen=True, slots=True)
class Behaviour:
    """The knobs for what the spec leaves open: the schema's ``behaviour``, in its order."""

    default_status: str | None = _default("default_status")  # None: the schema's "omit"
    retry_after: str = _default("retry_after")
    after_sunset: str = _default("after_sunset")
    ratelimit_draft_headers: bool = _default("ratelimit_draft_headers")
    max_body_bytes: int = _default("max_body_bytes")
    max_store_bytes: int = _default("max_store_bytes")
    deprecated_since: float = DEPRECATED_SINCE
    sunset: float = SUNSET
    validation_status: int = _default("validation_status")
    # (condition, code) for every condition, in the schema's order.
    error_codes: tuple[tuple[str, str], ...] = DEFAULT_ERROR_CODES
    ratelimit_reset: str = _default("ratelimit_reset")
    # The read operations that serve HEAD.
    serve_head: frozenset[str] = _default("serve_head")
    path_check: str = _default("path_check")
    unknown_fields: str = _default("unknown_fields")
    content_type: str = _default("content_type")
    missing_content_type: str = _default("missing_content_type")
    request_id: RequestIdFormat = REQUEST_ID
    headers: tuple[HeaderRule, ...] = ()
    location: str = _default("location")
    # (operation, strong | weak) for the reads that carry an ETag.
    etag: tuple[tuple[str, str], ...] = ()
    etag_digest: str = _default("etag_digest")
    etag_digits: int = _default("etag_digits")
    deprecation_format: str = _default("deprecation_format")
    sunset_header: bool = _default("sunset_header")
    deprecation_link: str | None = _default("deprecation_link")
    deprecation_on: str = _default("deprecation_on")
    # (condition, status) for the conditions a scenario answers with another status.
    error_statuses: tuple[tuple[str, int], ...] = ()
    error_fields: tuple[ErrorField, ...] = ()
    # (condition, message template) for the conditions a scenario words otherwise.
    error_messages: tuple[tuple[str, str], ...] = ()
    # (condition, header value or None) for each 401 condition.
    www_authenticate: tuple[tuple[str, str | None], ...] = _default("www_authenticate")
    ratelimit_windows: str = _default("ratelimit_windows")
    ratelimit_describes: str = _default("ratelimit_describes")
    ratelimit_describes_refusals: str = _default("ratelimit_describes_refusals")
    retry_after_banned: str = _default("retry_after_banned")
    limit_above_maximum: str = _default("limit_above_maximum")
    list_order: str = _default("list_order")


@dataclass(frozen=True, slots=True)
class KeySpec:
    key: str
    plan: str
    tenant: str
    used_minute: int = 0
    used_day: int = 0
    recorded_as: str | None = None  # the alias recordings show for it


@dataclass(frozen=True, slots=True)
class Delay:
    kind: str  # fixed | uniform | lognormal
    first: float  # fixed: ms; uniform: low ms; lognormal: median ms
    second: float = 0.0  # uniform: high ms; lognormal: sigma

    def draw_ms(self, u: float, v: float) -> float:
        """The delay for two uniform draws in [0, 1) (``mockstore.faults.draw``)."""
        if self.kind == "fixed":
            return self.first
        if self.kind == "uniform":
            return self.first + (self.second - self.first) * u
        # Box-Muller: a standard normal from two uniforms; 1 - u is never 0.
        normal = math.sqrt(-2.0 * math.log(1.0 - u)) * math.cos(2.0 * math.pi * v)
        return self.first * math.exp(self.second * normal)


@dataclass(frozen=True, slots=True)
class Reply:
    """A scripted answer, encoded once at load time."""

    status: int
    body: bytes | None
    headers: tuple[tuple[str, str], ...] = ()
    ratelimit_headers: bool = True


@dataclass(frozen=True, slots=True)
class Match:
    operation: str | None = None
    method: str | None = None
    path: str | None = None
    key: str | None = None
    plan: str | None = None
    query: tuple[tuple[str, str], ...] = ()
    headers: tuple[tuple[str, str], ...] = ()
    body: tuple[tuple[str, Any], ...] = ()
    calls: frozenset[int] = frozenset()
    from_call: int | None = None
    until_call: int | None = None
    every: int | None = None
    probability: float | None = None
    between_seconds: tuple[float, float] | None = None


@dataclass(frozen=True, slots=True)
class FaultRule:
    index: int
    name: str
    match: Match
    reply: Reply | None = None
    delay: Delay | None = None
    fault: str | None = None


@dataclass(frozen=True, slots=True)
class Route:
    index: int
    operation: str | None
    method: str | None
    path: str | None
    reply: Reply


@dataclass(frozen=True, slots=True)
class DriftAccept:
    """A difference from the real service the scenario cannot reproduce (``drift.accept``)."""

    kind: str  # the schema's "class"
    where: str
    reason: str
    status: int | None = None
    operation: str | None = None


@dataclass(frozen=True)
class Scenario:
    """One loaded, valid scenario. Immutable: running state is built from it."""

    name: str = "default"
    description: str = ""
    seed: int = schema_default("seed")
    base_path: str = schema_default("base_path")
    isolation: str = schema_default("isolation")
    clock_start: float | None = None
    clock_mode: str = schema_default("clock", "mode")
    clock_headers: str = schema_default("clock", "headers")
    plans: dict[str, Plan] = field(default_factory=lambda: dict(BUILTIN_PLANS))
    anonymous_plan: str = schema_default("anonymous_plan")
    keys: tuple[KeySpec, ...] = ()
    ban: BanPolicy | None = field(default_factory=lambda: default_ban_policy())
    pets: tuple[dict[str, Any], ...] = ()
    generate_pets: int = 0
    behaviour: Behaviour = Behaviour()
    collections: Collections = field(default_factory=Collections)
    faults: tuple[FaultRule, ...] = ()
    routes: tuple[Route, ...] = ()
    # HTTP semantics, maintenance windows, answer times (``http``, ``maintenance``, ``latency``).
    http: HttpSettings = field(default_factory=HttpSettings)
    maintenance: tuple[Window, ...] = ()
    latency: tuple[LatencyRule, ...] = ()
    journal_size: int = schema_default("journal", "size")
    journal_body_bytes: int = schema_default("journal", "body_bytes")
    drift_accept: tuple[DriftAccept, ...] = ()
    journal_max_bytes: int = schema_default("journal", "max_bytes")
    journal_header_bytes: int = schema_default("journal", "header_bytes")
    source: str = ""
    file: str = "<scenario>"
    # The limiter (``ratelimit:``, with the older behaviour settings read into it).
    ratelimit: Limits = DEFAULT_LIMITS

    def initial_pets(self) -> list[dict[str, Any]]:
        """The listed pets plus the seeded generated ones, in id order."""
        pets = [dict(p) for p in self.pets]
        if self.generate_pets:
            pets.extend(generate_pets(self.generate_pets, self.seed, pets))
        return pets

    def to_json(self) -> dict[str, Any]:
        """A summary for ``GET /__mockstore/scenario``."""
        return {
            "name": self.name,
            "description": self.description,
            "file": self.file,
            "seed": self.seed,
            "base_path": self.base_path,
            "isolation": self.isolation,
            "clock": {
                "start": self.clock_start,
                "mode": self.clock_mode,
                "headers": self.clock_headers,
            },
            "plans": {
                n: {"per_minute": p.per_minute, "per_day": p.day} for n, p in self.plans.items()
            },
            "keys": [{"key": k.key, "plan": k.plan, "tenant": k.tenant} for k in self.keys],
            "faults": len(self.faults),
            "routes": len(self.routes),
            "pets": len(self.pets) + self.generate_pets,
            "source": self.source,
        }


_NAMES = (
    *("Rex", "Bella", "Max", "Luna", "Charlie", "Lucy", "Cooper", "Daisy", "Milo", "Bailey"),
    *("Rocky", "Sadie", "Buddy", "Molly", "Bear", "Maggie", "Duke", "Sophie", "Tucker", "Chloe"),
    *("Oliver", "Lola", "Jack", "Zoe", "Toby", "Stella", "Leo", "Coco", "Bruno", "Nala"),
)
_STATUSES = tuple(schemas.openapi_document()["components"]["schemas"]["PetStatus"]["enum"])


def generate_pets(count: int, seed: int, existing: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``count`` schema-valid pets, the same for the same seed, after the listed ids."""
    rng = random.Random(f"mockstore-generate-{seed}")
    next_id = max((p["id"] for p in existing), default=0) + 1
    pets = []
    for offset in range(count):
        pets.append(
            {
                "id": next_id + offset,
                "name": f"{rng.choice(_NAMES)} {rng.randrange(1, 1000)}",
                "categoryId": rng.randrange(1, 21),
                "status": rng.choice(_STATUSES),
            }
        )
    return pets


def default_ban_policy() -> BanPolicy:
    """The ban a scenario gets when it says nothing of bans (the schema's defaults)."""
    return BanPolicy(
        after_rejections=schema_default("ban", "after_rejections"),
        within_seconds=schema_default("ban", "within_seconds"),
        duration_seconds=schema_default("ban", "duration_seconds"),
        status=schema_default("ban", "status"),
        trigger=schema_default("ban", "trigger"),
    )


__all__ = [
    "Behaviour",
    "Delay",
    "DriftAccept",
    "ErrorField",
    "FaultRule",
    "HeaderRule",
    "KeySpec",
    "Match",
    "Reply",
    "RequestIdFormat",
    "Route",
    "Scenario",
    "default_ban_policy",
    "generate_pets",
]
