"""What the fidelity tests share: recordings of an in-process mock, and drift's fixes applied.

``record_mock`` runs requests against an in-process mock of a scenario on a
manual clock and returns its journal as a HAR: a recording of a provider whose
every choice a scenario states. ``apply`` writes what drift proposes for a
difference (``setting`` set to ``set_to``) into a scenario's data (a dict, as
YAML loads it), so a test can check the claim: with it applied, the difference
is gone.
"""

from __future__ import annotations

import asyncio
from typing import Any

from mockstore import __version__
from mockstore.app import create_app
from mockstore.clock import Clock
from mockstore.fidelity import proof
from mockstore.fidelity.discrepancy import Discrepancy
from mockstore.fidelity.replayer import call
from mockstore.reports.har import HarMeta, to_har
from mockstore.scenario import load_scenario

START = 1772366430.0  # 2026-03-01T12:00:30Z
KEY = "drift-key"
BASE = f"""\
version: 1
clock: {{start: 2026-03-01T12:00:30Z, mode: manual}}
keys:
  - {{key: {KEY}, plan: {{per_minute: 4, per_day: 50}}}}
  - {{key: other-key, plan: pro}}
pets:
  - {{id: 1, name: Rex, categoryId: 2, status: available}}
  - {{id: 2, name: Bella, categoryId: 1, status: sold}}
ban: {{after_rejections: 3, within_seconds: 60, duration_seconds: 30}}
"""
AUTH = [("authorization", f"Bearer {KEY}")]
JSON_BODY = [*AUTH, ("content-type", "application/json")]

# (method, path, query, headers, body, seconds to wait before it)
Step = tuple[str, str, str, list[tuple[str, str]], bytes, float]

REQUESTS: list[tuple[str, str, str, list[tuple[str, str]], bytes]] = [
    ("GET", "/v1/pets", "", AUTH, b""),
    ("GET", "/v1/pets", "limit=1", AUTH, b""),
    ("GET", "/v1/pets", "limit=0", AUTH, b""),
    ("GET", "/v1/pets", "status=sold", AUTH, b""),
    ("GET", "/v1/pets", "status=lost", AUTH, b""),
    ("GET", "/v1/pets/1", "", AUTH, b""),
    ("GET", "/v1/pets/3", "", AUTH, b""),
    ("GET", "/v1/pets/abc", "", AUTH, b""),
    ("HEAD", "/v1/pets", "", AUTH, b""),
    ("DELETE", "/v1/pets", "", AUTH, b""),
    ("GET", "/v1/nowhere", "", AUTH, b""),
    ("GET", "/v1/nowhere", "", [], b""),
    ("GET", "/v1/pets", "", [], b""),
    ("GET", "/v1/pets", "", [("authorization", "Bearer nobody")], b""),
    ("GET", "/v1/store/orders", "", AUTH, b""),
    ("POST", "/v1/pets", "", JSON_BODY, b'{"name": "Nala", "categoryId": 7}'),
    ("POST", "/v1/pets", "", JSON_BODY, b'{"name": "Max", "categoryId": 3, "status": "sold"}'),
    ("POST", "/v1/pets", "", JSON_BODY, b'{"name": "Kit", "categoryId": 1, "colour": "red"}'),
    ("POST", "/v1/pets", "", JSON_BODY, b'{"name": 7}'),
    ("POST", "/v1/pets", "", JSON_BODY, b"{nope"),
    ("POST", "/v1/pets", "", JSON_BODY, b'{"name": "' + b"x" * 300 + b'", "categoryId": 1}'),
    ("GET", "/v1/pets", "", [("authorization", "Bearer other-key")], b""),
    ("GET", "/v1/pets", "limit=500", AUTH, b""),
    ("HEAD", "/v1/pets/1", "", AUTH, b""),
    ("GET", "/v1/pets/1", "", [], b""),
    ("GET", "/v1/pets", "", [("authorization", "Basic eDp5")], b""),
    # The collection's edges (collections): a filter in capitals, a limit written 1.0, a
    # category as a string and with a fraction, a long name, a category below 0.
    ("GET", "/v1/pets", "status=SOLD", AUTH, b""),
    ("GET", "/v1/pets", "limit=1.0", AUTH, b""),
    ("POST", "/v1/pets", "", JSON_BODY, b'{"name": "Kiwi", "categoryId": "4"}'),
    ("POST", "/v1/pets", "", JSON_BODY, b'{"name": "Pip", "categoryId": 4.0}'),
    ("POST", "/v1/pets", "", JSON_BODY, b'{"name": "' + b"N" * 70 + b'", "categoryId": 4}'),
    ("POST", "/v1/pets", "", JSON_BODY, b'{"name": "Neg", "categoryId": -1}'),
    # A limit given twice: its first value (2) or its last (1) read, or refused.
    ("GET", "/v1/pets", "limit=2&limit=1", AUTH, b""),
    # A filter of several statuses, comma-separated and repeated: read as either, or refused.
    ("GET", "/v1/pets", "status=available,sold", AUTH, b""),
    ("GET", "/v1/pets", "status=sold&status=available", AUTH, b""),
]

# Each knob (a scenario's behaviour beyond BASE), the requests that show it, and the
# setting drift must name for it when the scenario lacks it.
R = REQUESTS
SHOWN_BY: dict[str, tuple[list[tuple[str, str, str, list[tuple[str, str]], bytes]], str]] = {
    "behaviour: {validation_status: 422}": ([R[2]], "behaviour.validation_status"),
    "behaviour: {ratelimit_reset: delta}": ([R[0]], "behaviour.ratelimit_reset"),
    "behaviour: {ratelimit_reset: epoch-ms}": ([R[0]], "behaviour.ratelimit_reset"),
    "behaviour: {serve_head: false}": ([R[8]], "behaviour.serve_head"),
    "behaviour: {serve_head: [listPets]}": ([R[23]], "behaviour.serve_head"),
    "behaviour: {path_check: before_auth}": ([R[11]], "behaviour.path_check"),
    "behaviour: {unknown_fields: keep}": ([R[17]], "behaviour.unknown_fields"),
    "behaviour: {unknown_fields: refuse}": ([R[17]], "behaviour.unknown_fields"),
    "behaviour: {default_status: pending}": ([R[15]], "behaviour.default_status"),
    "behaviour: {max_body_bytes: 200}": ([R[20]], "behaviour.max_body_bytes"),
    "behaviour: {retry_after: http-date}": ([R[0]] * 5, "behaviour.retry_after"),
    # On an error answer too (a 2xx answer alone says ratelimit.headers.draft: success).
    "behaviour: {ratelimit_draft_headers: true}": (
        [R[0], R[2]],
        "behaviour.ratelimit_draft_headers",
    ),
    "behaviour: {error_codes: {bad_limit: BAD_LIMIT, rate_limited: SLOW_DOWN}}": (
        [R[2]],
        "behaviour.error_codes.bad_limit",
    ),
    "behaviour: {deprecated_since: 2025-06-01T00:00:00Z, sunset: 2030-12-05T23:59:59Z}": (
        [R[5]],
        "behaviour.deprecated_since",
    ),
    "behaviour: {content_type: application/json; charset=utf-8}": (
        [R[0]],
        "behaviour.content_type",
    ),
    "behaviour: {request_id: {header: X-Trace-Id, format: hex, prefix: ''}}": (
        [R[0], R[1]],
        "behaviour.request_id.header",
    ),
    "behaviour: {request_id: {format: uuid}}": ([R[0], R[1]], "behaviour.request_id.format"),
    # Stripe's form: req_ and random letters and digits, under another header name.
    "behaviour: {request_id: {header: Request-Id, format: alphanumeric,"
    " prefix: req_, length: 14}}": (
        [R[0], R[1]],
        "behaviour.request_id.header",
    ),
    "behaviour: {headers: [{name: X-Api-Version, value: '2'}]}": ([R[0]], "behaviour.headers"),
    "behaviour: {headers: [{name: X-Error-Source, value: gateway, status: 4xx}]}": (
        [R[0], R[2]],
        "behaviour.headers",
    ),
    "behaviour: {location: path}": ([R[15]], "behaviour.location"),
    "behaviour: {location: url}": ([R[15]], "behaviour.location"),
    "behaviour: {etag: {getPet: weak}}": ([R[5]], "behaviour.etag.getPet"),
    "behaviour: {deprecation_format: http-date}": ([R[5]], "behaviour.deprecation_format"),
    "behaviour: {deprecation_format: none}": ([R[5]], "behaviour.deprecation_format"),
    "behaviour: {sunset_header: false}": ([R[5]], "behaviour.sunset_header"),
    "behaviour: {deprecation_link: null}": ([R[5]], "behaviour.deprecation_link"),
    "behaviour: {deprecation_link: '<https://example.com/sunset>; rel=\"sunset\"'}": (
        [R[5]],
        "behaviour.deprecation_link",
    ),
    "behaviour: {deprecation_on: all}": ([R[24]], "behaviour.deprecation_on"),
    "behaviour: {deprecation_on: success}": ([R[5], R[6]], "behaviour.deprecation_on"),
    "behaviour: {error_statuses: {bad_pet_id: 404, not_implemented: 403}}": (
        [R[7], R[14]],
        "behaviour.error_statuses.bad_pet_id",
    ),
    "behaviour: {error_fields: [{name: traceId, generate: request_id}]}": (
        [R[2]],
        "behaviour.error_fields",
    ),
    "behaviour: {error_fields: [{name: docs, value: 'https://example.com/e'}]}": (
        [R[12]],
        "behaviour.error_fields",
    ),
    "behaviour: {www_authenticate: {missing_key: null}}": (
        [R[12]],
        "behaviour.www_authenticate.missing_key",
    ),
    "behaviour: {www_authenticate: {malformed_authorization: "
    '\'Bearer realm="api", error="invalid_request"\'}}': (
        [R[25]],
        "behaviour.www_authenticate.malformed_authorization",
    ),
    "behaviour: {ratelimit_describes: day}": ([R[0]], "behaviour.ratelimit_describes"),
    "behaviour: {limit_above_maximum: clamp}": ([R[22]], "behaviour.limit_above_maximum"),
    "behaviour: {list_order: descending}": ([R[0]], "behaviour.list_order"),
    "behaviour: {retry_after_banned: http-date}": ([R[0]] * 9, "behaviour.retry_after_banned"),
    "ban: {after_rejections: 2, within_seconds: 60, duration_seconds: 300}": (
        [R[0]] * 8,
        "ban.after_rejections",
    ),
    # The limiter's (ratelimit:): its headers' forms, and how its windows count.
    "ratelimit: {headers: {figures: [limit, remaining, reset, used, resource], resource: pets}}": (
        [R[0]],
        "ratelimit.headers.figures",
    ),
    "ratelimit: {headers: {per_window: {minute: Minute, day: Day}}}": (
        [R[0]],
        "ratelimit.headers.per_window.minute",
    ),
    "ratelimit: {headers: {reset_decimals: 3}}": ([R[0]], "ratelimit.headers.reset_decimals"),
    "ratelimit: {headers: {retry_after: decimal, retry_after_decimals: 2}}": (
        [R[0]] * 5,
        "ratelimit.headers.retry_after",
    ),
    "ratelimit: {headers: {draft: success, policies: {minute: burst, day: daily}}}": (
        [R[0], R[2]],
        "ratelimit.headers.draft",
    ),
    "ratelimit: {anonymous: none}": ([R[12]], "ratelimit.anonymous"),
    "collections: {filters: {status_case: insensitive}}": (
        [R[26]],
        "collections.filters.status_case",
    ),
    "collections: {numbers: {query: lenient}}": ([R[27]], "collections.numbers.query"),
    "collections: {filters: {several_statuses: comma}}": (
        [R[33]],
        "collections.filters.several_statuses",
    ),
    "collections: {filters: {several_statuses: both}}": (
        [R[33], R[34]],
        "collections.filters.several_statuses",
    ),
    "collections: {numbers: {body: lenient}}": ([R[28]], "collections.numbers.body"),
    "collections: {numbers: {body: strict}}": ([R[29]], "collections.numbers.body"),
    "collections: {constraints: {name: {max_length: 64}}}": (
        [R[18], R[30]],
        "collections.constraints.name.max_length",
    ),
    "collections: {constraints: {categoryId: {minimum: 0}}}": (
        [R[15], R[31]],
        "collections.constraints.categoryId.minimum",
    ),
    "collections: {pagination: {style: cursor, links: [next], total_header: X-Total-Count}}": (
        [R[1]],
        "collections.pagination",
    ),
    "collections: {repeated_parameters: first}": ([R[32]], "collections.repeated_parameters"),
    "collections: {repeated_parameters: last}": ([R[32]], "collections.repeated_parameters"),
    # Rex (1) and Bella (2) by name are in descending id too: the older spelling says it.
    "collections: {order: {by: name}}": ([R[0]], "behaviour.list_order"),
}
KNOBS = list(SHOWN_BY)


def with_knob(knob: str) -> str:
    """BASE with ``knob`` (a ban of its own replaces BASE's)."""
    base = BASE
    if knob.startswith("ban:"):
        base = "".join(line + "\n" for line in BASE.splitlines() if not line.startswith("ban:"))
    return base + knob + "\n"


def record_mock(scenario_text: str, steps: list[Step], start: float = START) -> dict[str, Any]:
    """Run ``steps`` against an in-process mock of ``scenario_text``; its journal as HAR."""
    scenario = load_scenario(scenario_text)
    clock = Clock(start=start, mode="manual", wall=lambda: start + 7200)
    app = create_app(scenario, clock=clock)

    async def send_all() -> None:
        for method, path, query, headers, body, wait in steps:
            clock.advance(wait)
            await call(app, method, path, query, headers, body, "127.0.0.1")

    asyncio.run(send_all())
    meta = HarMeta(creator_version=__version__, scenario=scenario.name, base_path="/v1")
    return to_har(app.runtime.journal.select(), meta)


def apply(data: dict[str, Any], difference: Discrepancy) -> dict[str, Any]:
    """``data`` with ``difference``'s setting set to its ``set_to`` (a new dict), as drift's
    proof applies it (``mockstore.fidelity.proof.apply``)."""
    assert difference.setting is not None and difference.value, difference.to_dict()
    return proof.apply(data, difference.setting, difference.value[0], difference.key)
