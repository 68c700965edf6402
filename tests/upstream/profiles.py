"""Provider profiles for ``tests/upstream/profiled.py``: a Hypothesis strategy and named ones.

``profiles()`` draws a ``Profile`` from the whole space: every choice is drawn
on its own, except where two depend on each other (a ban answered 429 must carry
``Retry-After``; a header appears once per answer; page headers need pages by
number; a 429's figures of the described window only with 429s). The space spans
each section of the scenario schema a provider can differ in: the limiter
(algorithms, clock or first-request windows, a time zone, what counts, refunds by
class, anonymous callers limited or told figures of 0, refusal statuses, every
header form, bans or none), HTTP semantics (ETags by digest and length, weak or
strong comparison, ``Last-Modified``, codings, CORS on some paths, ``OPTIONS``,
trailing slashes, request ids of every form and their echo, advisory headers),
collections (pages, links, totals, page headers, order, filters, defaults,
numbers, name and category constraints, repeated parameters, a create without
``Content-Type``), maintenance, latency and Error bodies (codes, statuses,
templates, computed fields, ``details[]`` shapes). Error codes are identifiers
in the profile's case (lower or upper), picked from words providers use or made
up; each status is one a provider plausibly answers for its condition
(``PLAUSIBLE_STATUSES``). Allowances are small (at most 6 a minute, 30 a day) so
a test reaches a 429 and a ban within a few dozen requests.

The named profiles:

- ``MOCKSTORE_LIKE``: mockstore's documented defaults (README.md), with its
  default scenario's 20 pets (the first two as the README shows them; the other
  names are ours);
- ``GATEWAY``: a provider behind an API gateway, far from mockstore in every
  class (upper-case codes, 422, 403 bans after consecutive 429s, epoch-ms resets,
  windows from the first request, a sliding-window day in New York that counts
  every attempt, callers without a key never limited, the draft headers on 2xx
  answers under its own policy names, cursor pages by name in any case, ...);
- ``LEGACY``: an older provider, far from both (no request id, ``Deprecation:
  true``, 503 bans, seconds-from-now resets with a decimal, unknown fields kept,
  a token bucket, a GCRA day in India, Kong's per-window headers, ...).

``clock_offset_seconds`` is never drawn (it stays 0): it moves the service in
time for a test, it is no provider's choice.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import strategies as st

from tests.upstream.profiled import (
    CONDITIONS,
    DAY,
    MANAGED_HEADERS,
    PLAUSIBLE_STATUSES,
    READS,
    STATUSES,
    SUNSET_DAY,
    BanPolicy,
    DeprecationHeaders,
    ExtraField,
    Gateway,
    Headers,
    Plan,
    Profile,
    RateLimits,
    Refusal,
    Refusals,
    RequestIdHeader,
    SeedPet,
    Semantics,
    WwwAuthenticate,
)
from tests.upstream.profiled_collections import Collections
from tests.upstream.profiled_http import (
    ECHO_PATTERNS,
    CorsChoice,
    HttpChoices,
    LatencyChoice,
    MaintenanceChoice,
)

# Words providers use for each condition (lower case; the profile's case applies).
CODE_WORDS: dict[str, tuple[str, ...]] = {
    "missing_key": ("unauthorized", "missing_api_key", "authentication_required", "no_api_key"),
    "malformed_authorization": ("unauthorized", "malformed_authorization", "invalid_auth_header"),
    "unknown_key": ("unauthorized", "invalid_api_key", "invalid_token", "unknown_api_key"),
    "malformed_json": ("malformed_json", "invalid_json", "bad_request", "parse_error"),
    "missing_body": ("missing_body", "empty_body", "body_required", "bad_request"),
    "invalid_body": ("validation_failed", "validation_error", "invalid_body", "invalid_request"),
    "unknown_field": ("unknown_field", "unexpected_field", "additional_properties"),
    "unsupported_media_type": ("unsupported_media_type", "invalid_content_type", "bad_request"),
    "payload_too_large": ("payload_too_large", "request_too_large", "body_too_large"),
    "bad_limit": ("invalid_parameter", "invalid_limit", "invalid_query_parameter"),
    "limit_above_maximum": ("invalid_parameter", "limit_too_large", "limit_out_of_range"),
    "bad_status_filter": ("invalid_parameter", "invalid_status", "invalid_enum_value"),
    "bad_pet_id": ("invalid_parameter", "invalid_pet_id", "invalid_path_parameter", "not_found"),
    "pet_not_found": ("not_found", "pet_not_found", "resource_not_found", "no_such_pet"),
    "unknown_path": ("not_found", "route_not_found", "unknown_endpoint"),
    "method_not_allowed": ("method_not_allowed", "unsupported_method", "not_found"),
    "rate_limited": ("rate_limited", "too_many_requests", "rate_limit_exceeded", "throttled"),
    "key_banned": ("key_banned", "temporarily_banned", "api_key_suspended", "abuse_detected"),
    "gone": ("gone", "endpoint_removed", "operation_removed", "sunset"),
    "list_orders": ("forbidden", "not_implemented", "not_found", "insufficient_scope"),
    "bad_page": ("invalid_parameter", "invalid_cursor", "invalid_page", "bad_request"),
    "field_constraint": ("validation_failed", "invalid_field", "name_too_long", "out_of_range"),
}
HEADER_NAMES = (
    "X-Api-Version",
    "X-Frame-Options",
    "X-Content-Type-Options",
    "Strict-Transport-Security",
    "Vary",
    "X-Region",
    "X-Served-From",
    "X-Error-Source",
    "X-Deprecated-Api",
    "X-Idempotency-Supported",
    "Access-Control-Allow-Origin",
    "Referrer-Policy",
)
REQUEST_ID_NAMES = (
    "X-Request-Id",
    "X-Request-ID",
    "Request-Id",
    "X-Correlation-Id",
    "X-Trace-Id",
    "X-Amzn-RequestId",
)
CONTENT_TYPES = (
    "application/json",
    "application/json; charset=utf-8",
    "application/json;charset=UTF-8",
    "application/json; charset=UTF-8",
)
CACHE_CONTROLS = (
    "no-store",
    "no-cache",
    "private, max-age=0",
    "max-age=30",
    "public, max-age=60, stale-while-revalidate=30",
)
LINKS = (
    '</v1/pets>; rel="successor-version"',
    '<https://api.example.com/v1/pets>; rel="successor-version"',
    '<https://developer.example.com/deprecations/get-pet>; rel="deprecation"; type="text/html"',
    '<https://developer.example.com/sunset-policy>; rel="sunset"',
    '</v1/pets?status=available>; rel="alternate"',
)
EXTRA_FIELD_NAMES = (
    "traceId",
    "trace_id",
    "requestId",
    "request_id",
    "timestamp",
    "time",
    "documentation_url",
    "type",
    "errorId",
    "retryable",
)
ETAG_DIGITS = (16, 32, 40, 64)
DIGEST_DIGITS = {"sha256": 64, "sha1": 40, "md5": 32}
PLAN_NAMES = ("free", "pro", "business", "enterprise", "starter", "trial", "basic", "team")
ALGORITHMS = ("fixed", "sliding_log", "sliding_window", "token_bucket", "leaky_bucket")
FIGURES = ("limit", "remaining", "reset", "used", "resource")
# Zones whose offsets are whole hours, half hours and quarter hours, with and without DST.
TIME_ZONES = (
    "UTC",
    "America/New_York",
    "Europe/Berlin",
    "Asia/Kolkata",
    "Australia/Adelaide",
    "Asia/Kathmandu",
    "Pacific/Auckland",
)
RESOURCES = ("core", "search", "pets", "graphql")
WINDOW_NAMES = {"minute": ("Minute", "Second", "Burst"), "day": ("Day", "Hour", "Quota")}
POLICY_NAMES = {
    "minute": ("minute", "burst", "default", "per-min"),
    "day": ("day", "daily", "quota"),
}
DEPRECATED_FROM = 1704067200  # 2024-01-01T00:00:00Z
DEPRECATED_UNTIL = 1798761599  # 2026-12-31T23:59:59Z

# Made-up codes, names and values, built from parts (faster to draw than from a regex).
_PARTS = (
    "invalid", "request", "error", "denied", "auth", "quota", "limit", "pet", "body", "field",
    "param", "missing", "unknown", "bad", "not", "found", "api", "key", "e4", "v2",
)  # fmt: skip
_words = st.lists(st.sampled_from(_PARTS), min_size=1, max_size=3).map("_".join)
_header_values = st.one_of(
    st.lists(st.sampled_from(_PARTS), min_size=1, max_size=3).map("-".join),
    st.integers(0, 10**6).map(str),
    st.sampled_from(["nosniff", "DENY", "max-age=63072000", "*", "no-referrer", "eu-west-1"]),
)
_made_up_headers = st.lists(st.sampled_from(_PARTS[:18]), min_size=1, max_size=2, unique=True).map(
    lambda parts: "X-" + "-".join(part.capitalize() for part in parts)
)


def _code(condition: str, upper: bool) -> st.SearchStrategy[str]:
    words = st.one_of(st.sampled_from(CODE_WORDS[condition]), _words)
    return words.map(str.upper if upper else str)


@st.composite
def _refusals(draw: st.DrawFn) -> Refusals:
    upper = draw(st.booleans())
    chosen: dict[str, object] = {}
    for condition in CONDITIONS:
        status = draw(st.sampled_from(PLAUSIBLE_STATUSES[condition]))
        chosen[condition] = Refusal(status, draw(_code(condition, upper)))
    if draw(st.booleans()):
        chosen["list_orders"] = None
    extras = draw(
        st.lists(
            st.one_of(
                st.builds(
                    lambda name, kind, value, only: ExtraField(
                        name, kind, value if kind == "constant" else None, tuple(only)
                    ),
                    st.sampled_from(EXTRA_FIELD_NAMES),
                    st.sampled_from(["constant", "uuid", "request_id", "timestamp"]),
                    st.one_of(st.text(max_size=12), st.integers(-1000, 1000), st.booleans()),
                    st.one_of(
                        st.just([]), st.lists(st.sampled_from(CONDITIONS), unique=True, min_size=1)
                    ),
                ),
                # Values of the answer's own (issue 25): the wait, what the request got wrong.
                st.builds(
                    lambda name, kind: ExtraField(name, kind, None, COMPUTED_ON[kind]),
                    st.sampled_from(COMPUTED_NAMES),
                    st.sampled_from(sorted(COMPUTED_ON)),
                ),
            ),
            max_size=3,
            unique_by=lambda extra: extra.name,
        )
    )
    challenge = draw(
        st.one_of(
            st.none(),
            st.builds(
                WwwAuthenticate,
                st.one_of(st.none(), st.sampled_from(["petstore", "api", "Pet Store API"])),
                st.booleans(),
            ),
        )
    )
    return Refusals(
        **chosen,  # type: ignore[arg-type]
        extra_fields=tuple(extras),
        www_authenticate=challenge,
        routing=draw(st.sampled_from(["after_auth", "before_auth"])),
        details_item=draw(st.sampled_from(["field_issue", "pointer_reason"])),
    )


@st.composite
def _headers(draw: st.DrawFn) -> Headers:
    request_id = draw(
        st.one_of(
            st.none(),
            st.builds(
                RequestIdHeader,
                st.sampled_from(REQUEST_ID_NAMES),
                st.sampled_from(["counter", "uuid", "hex", "alphanumeric"]),
                st.sampled_from(["", "req-", "req_", "r-"]),
                st.sampled_from([14, 24, 32]),
            ),
        )
    )
    taken = set(MANAGED_HEADERS) | ({request_id.name.lower()} if request_id else set())
    names = draw(
        st.lists(
            st.one_of(st.sampled_from(HEADER_NAMES), _made_up_headers).filter(
                lambda name: name.lower() not in taken
            ),
            max_size=6,
            unique_by=str.lower,
        )
    )
    # Each name goes to one place: every answer, some status classes, or some operations.
    always: list[tuple[str, str]] = []
    by_class: dict[str, list[tuple[str, str]]] = {}
    by_operation: dict[str, list[tuple[str, str]]] = {}
    for name in names:
        place = draw(st.sampled_from(["always", "class", "operation"]))
        if place == "always":
            always.append((name, draw(_header_values)))
            continue
        targets = (
            ["2xx", "4xx", "5xx"]
            if place == "class"
            else ["listPets", "createPet", "getPet", "listOrders"]
        )
        chosen = draw(st.lists(st.sampled_from(targets), min_size=1, unique=True))
        for target in chosen:
            (by_class if place == "class" else by_operation).setdefault(target, []).append(
                (name, draw(_header_values))
            )
    etag = draw(st.dictionaries(st.sampled_from(READS), st.sampled_from(["strong", "weak"])))
    digest = draw(st.sampled_from(["sha256", "sha1", "md5"]))
    digits = draw(st.sampled_from([d for d in ETAG_DIGITS if d <= DIGEST_DIGITS[digest]]))
    cache_control = draw(st.dictionaries(st.sampled_from(READS), st.sampled_from(CACHE_CONTROLS)))
    links = draw(st.lists(st.sampled_from(LINKS), max_size=3, unique=True))
    deprecation = DeprecationHeaders(
        since=draw(st.integers(DEPRECATED_FROM, DEPRECATED_UNTIL)),
        deprecation=draw(st.sampled_from(["epoch", "http-date", "true", "none"])),
        sunset=draw(
            st.one_of(
                st.just(SUNSET_DAY),
                st.just(SUNSET_DAY + DAY - 1),
                st.integers(SUNSET_DAY, SUNSET_DAY + DAY - 1),
            )
        ),
        sunset_header=draw(st.booleans()),
        link=", ".join(links) or None,
        answers=draw(st.sampled_from(["all", "authenticated", "success"])),
    )
    return Headers(
        always=tuple(always),
        by_status_class=tuple((name, tuple(values)) for name, values in by_class.items()),
        by_operation=tuple((name, tuple(values)) for name, values in by_operation.items()),  # type: ignore[misc]
        request_id=request_id,
        content_type=draw(st.sampled_from(CONTENT_TYPES)),
        location=draw(st.sampled_from(["none", "path", "url"])),
        etag=tuple(etag.items()),  # type: ignore[arg-type]
        cache_control=tuple(cache_control.items()),  # type: ignore[arg-type]
        deprecation=deprecation,
        etag_digest=digest,  # type: ignore[arg-type]
        etag_digits=digits,
    )


@st.composite
def _plans(draw: st.DrawFn) -> Plan:
    """A small allowance: 1-6 a minute, and none or up to 30 a day."""
    per_minute = draw(st.integers(1, 6))
    per_day = draw(st.one_of(st.none(), st.integers(per_minute, min(30, per_minute * 5))))
    return Plan(per_minute, per_day)


@st.composite
def _gateway(draw: st.DrawFn, reset: str) -> Gateway:
    """The gateway's algorithms, time zone, what counts, and how it announces them."""
    extra = draw(st.lists(st.sampled_from(["used", "resource"]), unique=True))
    windows = draw(st.lists(st.sampled_from(["minute", "day"]), unique=True))
    return Gateway(
        minute_algorithm=draw(st.sampled_from(ALGORITHMS)),
        day_algorithm=draw(st.sampled_from(ALGORITHMS)),
        time_zone=draw(st.sampled_from(TIME_ZONES)),
        counts=draw(st.sampled_from(["served", "attempts"])),
        anonymous_limited=draw(st.booleans()),
        figures=("limit", "remaining", "reset", *sorted(extra, key=FIGURES.index)),
        resource=draw(st.sampled_from(RESOURCES)),
        per_window=tuple(
            (window, draw(st.sampled_from(WINDOW_NAMES[window]))) for window in windows
        ),
        reset_decimals=0 if reset == "epoch_ms" else draw(st.sampled_from([0, 0, 1, 3])),
        retry_after_decimals=draw(st.integers(1, 3)),
        draft=draw(st.sampled_from(["none", "all", "success"])),
        policies=(
            ("minute", draw(st.sampled_from(POLICY_NAMES["minute"]))),
            ("day", draw(st.sampled_from(POLICY_NAMES["day"]))),
        ),
        not_counted=draw(st.sampled_from([(), (), ("4xx",), ("5xx",), ("4xx", "5xx")])),
        uncounted=draw(st.sampled_from(["none", "zero"])),
        day_windows=draw(st.sampled_from(["same", "same", "clock", "first_request"])),
        second_set=draw(st.sampled_from([None, None, "Burst", "Minute"])),
        second_set_figures=draw(
            st.sampled_from([("limit", "remaining", "reset"), ("limit", "remaining", "used")])
        ),
        second_set_reset=draw(st.sampled_from(["epoch", "epoch_ms", "delta"])),
    )


@st.composite
def _rate_limits(draw: st.DrawFn, banned_status: int, refused_status: int) -> RateLimits:
    names = draw(st.lists(st.sampled_from(PLAN_NAMES), min_size=1, max_size=3, unique=True))
    minute = draw(st.sampled_from([2, 3, 5, 10, 60]))
    banned_forms = ["seconds", "decimal", "http-date"] + (["none"] if banned_status != 429 else [])
    refused_forms = ["seconds", "decimal", "http-date"] + (
        ["none"] if refused_status != 429 else []
    )
    reset = draw(st.sampled_from(["epoch", "epoch_ms", "delta"]))
    return RateLimits(
        plans=tuple((name, draw(_plans())) for name in names),
        anonymous=draw(_plans()),
        reset=reset,  # type: ignore[arg-type]
        windows=draw(st.sampled_from(["clock", "first_request"])),
        describe=draw(st.sampled_from(["minute", "day", "tightest"])),
        retry_after=draw(st.sampled_from(refused_forms)),
        retry_after_banned=draw(st.sampled_from(banned_forms)),
        gateway=draw(_gateway(reset)),
        ban=BanPolicy(
            trigger=draw(st.sampled_from(["within", "consecutive"])),
            rejections=draw(st.integers(2, 5)),
            within_seconds=draw(st.sampled_from([1, 5, 10, 30, 60, 120])),
            duration_seconds=draw(st.sampled_from([1, 5, 30, 60, 300, 600])),
            enabled=draw(st.sampled_from([True, True, True, False])),
        ),
        # A 403 or 503 that says requests are left (the described window's) is told from
        # a maintenance page or a ban by nothing a recording shows: described with 429s only.
        refusal_figures=draw(
            st.sampled_from(["blocking", "described"] if refused_status == 429 else ["blocking"])
        ),
        minute_seconds=minute,
        day_seconds=draw(st.one_of(st.just(DAY), st.integers(2, 30).map(lambda k: k * minute))),
    )


_pet_names = st.text(
    st.characters(categories=["L", "N"], max_codepoint=0x2FF), min_size=1, max_size=12
)


TOTAL_HEADERS = ("X-Total-Count", "X-Total", "Total-Count", "X-Result-Count")
PAGE_PARAMETERS = ("", "after", "page_token", "skip", "p")


@st.composite
def _collections(draw: st.DrawFn) -> Collections:
    """How a provider pages, orders, filters and reads its collection: each drawn on its own
    (links only with pages; a page parameter of its own or the style's name)."""
    style = draw(st.sampled_from(["limit", "cursor", "offset", "page"]))
    rels = ("next", "prev", "first", "last")
    links = (
        () if style == "limit" else tuple(draw(st.permutations(rels))[: draw(st.integers(0, 4))])
    )
    return Collections(  # type: ignore[arg-type]
        pagination=style,
        page_parameter="" if style == "limit" else draw(st.sampled_from(PAGE_PARAMETERS)),
        links=links,  # type: ignore[arg-type]
        link_urls=draw(st.sampled_from(["relative", "absolute"])),
        total_header=draw(st.one_of(st.none(), st.sampled_from(TOTAL_HEADERS))),
        order_by=draw(st.sampled_from([None, "name", "categoryId", "status"])),
        order_descending=draw(st.booleans()),
        order_case_insensitive=draw(st.booleans()),
        status_case_insensitive=draw(st.booleans()),
        default_on_read=draw(st.booleans()),
        numbers_body=draw(st.sampled_from(["strict", "schema", "lenient", "digits"])),
        numbers_query=draw(st.sampled_from(["strict", "lenient"])),
        name_max_length=draw(st.sampled_from([None, 32, 50, 64, 100])),
        category_minimum=draw(st.sampled_from([None, 0, 1])),
        name_unit=draw(st.sampled_from(["characters", "bytes"])),
        name_min_length=draw(st.sampled_from([None, None, 2, 3])),
        category_maximum=draw(st.sampled_from([None, None, 1000, 65_535])),
        blank_name=draw(st.sampled_from(["allow", "refuse"])),
        page_headers=draw(_page_headers()) if style == "page" else (),
        repeated=draw(st.sampled_from(["refuse", "first", "last"])),
    )


# Page headers under the names of two families of APIs (GitLab's, Yii's and Laravel-style).
PAGE_HEADER_NAMES = (
    {
        "page": "X-Page",
        "per_page": "X-Per-Page",
        "total_pages": "X-Total-Pages",
        "next_page": "X-Next-Page",
        "prev_page": "X-Prev-Page",
    },
    {
        "page": "X-Pagination-Current-Page",
        "per_page": "X-Pagination-Per-Page",
        "total_pages": "X-Pagination-Page-Count",
    },
)


@st.composite
def _page_headers(draw: st.DrawFn) -> tuple[tuple[str, str], ...]:
    """Which page figures a provider that pages by number states, and under which names."""
    names = draw(st.sampled_from(PAGE_HEADER_NAMES))
    figures = draw(st.lists(st.sampled_from(sorted(names)), unique=True))
    return tuple((figure, names[figure]) for figure in figures)


@st.composite
def _semantics(draw: st.DrawFn) -> Semantics:
    pets = draw(
        st.lists(
            st.builds(
                SeedPet,
                st.integers(1, 10_000),
                _pet_names,
                st.integers(0, 1_000),
                st.one_of(st.none(), st.sampled_from(STATUSES)),
            ),
            max_size=25,
            unique_by=lambda pet: pet.id,
        )
    )
    return Semantics(
        limit_above_maximum=draw(st.sampled_from(["refuse", "clamp"])),
        unknown_fields=draw(st.sampled_from(["drop", "keep", "refuse"])),
        list_order=draw(st.sampled_from(["ascending", "descending", "insertion"])),
        head=tuple(draw(st.lists(st.sampled_from(READS), unique=True))),  # type: ignore[arg-type]
        max_body_bytes=draw(
            st.one_of(st.sampled_from([256, 1024, 16_384, 1_048_576]), st.integers(256, 65_536))
        ),
        default_status=draw(st.one_of(st.none(), st.sampled_from(STATUSES))),  # type: ignore[arg-type]
        pets=tuple(pets),
        collections=draw(_collections()),
        missing_content_type=draw(st.sampled_from(["refuse", "json"])),
    )


_STAGES = st.sampled_from(["gateway", "counted", "authenticated"])
APP = "https://app.example.com"


@st.composite
def _http(draw: st.DrawFn, etag: tuple[str, ...], echo: bool) -> HttpChoices:
    """The choices of a provider's gateway and web server (issue 25's HTTP semantics)."""
    reads = ("listPets", "getPet")
    dated = tuple(draw(st.lists(st.sampled_from(reads), unique=True)))
    validated = [op for op in reads if op in etag or op in dated]
    conditional = (
        tuple(draw(st.lists(st.sampled_from(validated), unique=True))) if validated else ()
    )
    cors = draw(
        st.one_of(
            st.none(),
            st.builds(
                CorsChoice,
                origins=st.sampled_from([("*",), (APP,), (APP, "https://admin.example.com")]),
                methods=st.sampled_from([("GET", "HEAD", "POST"), ("GET", "POST", "OPTIONS")]),
                headers=st.sampled_from([("Authorization", "Content-Type"), ("*",)]),
                expose_headers=st.sampled_from([(), ("X-Request-Id",), ("X-RateLimit-Remaining",)]),
                max_age=st.sampled_from([None, 600, 86400]),
                credentials=st.booleans(),
                preflight_status=st.sampled_from([200, 204]),
                rejected_status=st.sampled_from([None, 400, 403]),
                stage=_STAGES,
                paths=st.sampled_from([("/",), ("/pets",)]),
            ),
        )
    )
    maintenance = draw(
        st.one_of(
            st.none(),
            st.builds(
                MaintenanceChoice,
                paths=st.just(("/store",)),
                status=st.sampled_from([503, 502]),
                code=st.sampled_from(["maintenance", "SERVICE_UNAVAILABLE", "under_maintenance"]),
                message=st.sampled_from(
                    [
                        "{path} is under maintenance until {until}",
                        "Down for maintenance",
                        "{method} {path}: back at {until}",
                    ]
                ),
                retry_after=st.sampled_from(["seconds", "decimal", "http-date", "none"]),
                stage=_STAGES,
            ),
        )
    )
    messages = draw(st.dictionaries(st.sampled_from(sorted(MESSAGES)), st.just(""), max_size=4))
    return HttpChoices(
        conditional=conditional,  # type: ignore[arg-type]
        comparison=draw(st.sampled_from(["weak", "strong"])),
        last_modified=dated,  # type: ignore[arg-type]
        pets_modified=draw(st.integers(DEPRECATED_FROM, DEPRECATED_UNTIL)),
        encodings=tuple(draw(st.lists(st.sampled_from(["gzip", "deflate"]), unique=True))),  # type: ignore[arg-type]
        min_bytes=draw(st.sampled_from([64, 256, 1024])),
        vary=draw(st.booleans()),
        cors=cors,
        options=draw(st.sampled_from(["none", "gateway", "counted", "authenticated"])),
        options_status=draw(st.sampled_from([200, 204])),
        trailing_slash=draw(st.sampled_from(["not_found", "redirect", "serve"])),
        trailing_status=draw(st.sampled_from([301, 302, 307, 308])),
        trailing_location=draw(st.sampled_from(["path", "url"])),
        trailing_stage=draw(_STAGES),
        advisory_header=draw(st.sampled_from([None, "Warning", "X-Api-Warning"])),
        echo=draw(st.sampled_from([None, *ECHO_PATTERNS])) if echo else None,
        maintenance=maintenance,
        latency=draw(
            st.one_of(
                st.just(()),
                st.sampled_from([None, "listPets", "createPet"]).map(
                    lambda operation: (
                        LatencyChoice(operation, (("p0", 1), ("p50", 2), ("p100", 4))),
                    )
                ),
            )
        ),
        messages=tuple((condition, MESSAGES[condition]) for condition in sorted(messages)),
    )


# Message templates as providers word them, one per condition that embeds what was wrong.
MESSAGES = {
    "bad_limit": "Invalid value '{value}' for query parameter {parameter}",
    "bad_status_filter": "{value} is not a pet status",
    "pet_not_found": "No pet found with id {value}",
    "unknown_key": "Invalid API key provided: {key}",
    "rate_limited": "Too many requests, retry in {retry_after_s} seconds",
    "method_not_allowed": "Method {method} is not allowed",
    "unknown_path": "Unknown endpoint: {path}",
}
COMPUTED_NAMES = ("retryAfterMs", "retryAfter", "rejectedValue", "field", "details", "errors")
# The conditions each value of the answer's own is carried on.
COMPUTED_ON: dict[str, tuple[str, ...]] = {
    "retry_after_ms": ("rate_limited",),
    "retry_after_s": ("rate_limited", "key_banned"),
    "value": ("bad_limit", "bad_pet_id", "pet_not_found"),
    "parameter": ("bad_limit", "bad_status_filter"),
    "details": ("invalid_body",),
}


@st.composite
def profiles(draw: st.DrawFn) -> Profile:
    """A provider profile drawn from the whole space (see the module's docstring)."""
    refusals = draw(_refusals())
    headers = draw(_headers())
    etag = tuple(operation for operation, _ in headers.etag)
    return Profile(
        headers=headers,
        refusals=refusals,
        rate_limits=draw(_rate_limits(refusals.key_banned.status, refusals.rate_limited.status)),
        semantics=draw(_semantics()),
        http=draw(_http(etag, headers.request_id is not None)),
    )


# ---------------------------------------------------------------------------
# Named profiles

_MOCKSTORE_NAMES = (
    "Rex Bella Milo Luna Charlie Lucy Max Daisy Oscar Coco Buddy Nala Rocky Lola Toby"
)
_MOCKSTORE_NAMES += " Ruby Jack Molly Leo Zoe"
_MOCKSTORE_PETS = (
    SeedPet(1, "Rex", 1, "available"),
    SeedPet(2, "Bella", 2, "available"),
    *(
        SeedPet(pet_id, name, pet_id % 5 + 1, STATUSES[pet_id % 3])
        for pet_id, name in enumerate(_MOCKSTORE_NAMES.split()[2:], start=3)
    ),
)

MOCKSTORE_LIKE = Profile(semantics=Semantics(pets=_MOCKSTORE_PETS))

GATEWAY = Profile(
    headers=Headers(
        always=(("X-Api-Version", "2024-06-01"),),
        by_status_class=(("4xx", (("X-Error-Source", "gateway"),)),),
        by_operation=(("createPet", (("X-Idempotency-Supported", "false"),)),),
        request_id=RequestIdHeader("X-Correlation-Id", "uuid", ""),
        content_type="application/json; charset=utf-8",
        location="url",
        etag=(("getPet", "strong"),),
        cache_control=(("listPets", "no-store"), ("getPet", "private, max-age=0")),
        deprecation=DeprecationHeaders(
            since=1748736000,  # 2025-06-01T00:00:00Z
            deprecation="http-date",
            sunset=SUNSET_DAY + DAY - 1,
            link='<https://developer.example.com/deprecations/get-pet>; rel="deprecation"',
            answers="success",
        ),
    ),
    refusals=Refusals(
        missing_key=Refusal(401, "MISSING_API_KEY"),
        malformed_authorization=Refusal(401, "MALFORMED_AUTHORIZATION"),
        unknown_key=Refusal(401, "INVALID_API_KEY"),
        malformed_json=Refusal(422, "INVALID_JSON"),
        missing_body=Refusal(422, "BODY_REQUIRED"),
        invalid_body=Refusal(422, "VALIDATION_ERROR"),
        unknown_field=Refusal(422, "UNKNOWN_FIELD"),
        unsupported_media_type=Refusal(415, "UNSUPPORTED_MEDIA_TYPE"),
        payload_too_large=Refusal(413, "REQUEST_TOO_LARGE"),
        bad_limit=Refusal(422, "INVALID_QUERY_PARAMETER"),
        limit_above_maximum=Refusal(422, "INVALID_QUERY_PARAMETER"),
        bad_status_filter=Refusal(422, "INVALID_QUERY_PARAMETER"),
        bad_pet_id=Refusal(422, "INVALID_PATH_PARAMETER"),
        pet_not_found=Refusal(404, "PET_NOT_FOUND"),
        unknown_path=Refusal(404, "ROUTE_NOT_FOUND"),
        method_not_allowed=Refusal(405, "METHOD_NOT_ALLOWED"),
        rate_limited=Refusal(429, "TOO_MANY_REQUESTS"),
        key_banned=Refusal(403, "API_KEY_SUSPENDED"),
        gone=Refusal(404, "ROUTE_NOT_FOUND"),
        list_orders=Refusal(403, "INSUFFICIENT_SCOPE"),
        bad_page=Refusal(422, "INVALID_CURSOR"),
        field_constraint=Refusal(422, "FIELD_TOO_LONG"),
        extra_fields=(ExtraField("traceId", "uuid"), ExtraField("timestamp", "timestamp")),
        www_authenticate=None,
        routing="before_auth",
    ),
    rate_limits=RateLimits(
        plans=(("starter", Plan(5, 20)), ("growth", Plan(6, 30))),
        anonymous=Plan(3, 10),
        reset="epoch_ms",
        windows="first_request",
        describe="minute",
        retry_after="http-date",
        retry_after_banned="http-date",
        ban=BanPolicy("consecutive", 3, 60, 30),
        gateway=Gateway(
            day_algorithm="sliding_window",
            time_zone="America/New_York",
            counts="attempts",
            anonymous_limited=False,
            figures=("limit", "remaining", "reset", "used", "resource"),
            resource="pets",
            per_window=(("minute", "Burst"),),
            retry_after_decimals=2,
            draft="success",
            policies=(("minute", "burst"), ("day", "daily")),
            not_counted=("5xx",),
            uncounted="zero",
        ),
    ),
    semantics=Semantics(
        limit_above_maximum="clamp",
        unknown_fields="refuse",
        list_order="descending",
        head=("listPets",),
        max_body_bytes=16_384,
        default_status="available",
        pets=(
            SeedPet(101, "Biscuit", 3, "available"),
            SeedPet(17, "Pepper", 1, "sold"),
            SeedPet(58, "Nori", 2, "pending"),
        ),
        collections=Collections(
            pagination="cursor",
            page_parameter="after",
            links=("next",),
            total_header="X-Total-Count",
            order_by="name",
            order_case_insensitive=True,
            status_case_insensitive=True,
            default_on_read=True,
            numbers_body="lenient",
            numbers_query="lenient",
            name_max_length=64,
            name_unit="bytes",
            blank_name="refuse",
            repeated="first",
        ),
        missing_content_type="json",
    ),
)

LEGACY = Profile(
    headers=Headers(
        always=(("X-Service", "petstore-legacy"),),
        by_status_class=(("2xx", (("Vary", "Authorization"),)),),
        by_operation=(("getPet", (("X-Deprecated-Api", "true"),)),),
        request_id=None,
        content_type="application/json;charset=UTF-8",
        location="path",
        etag=(("listPets", "weak"),),
        etag_digest="md5",
        etag_digits=16,
        deprecation=DeprecationHeaders(
            since=1704067200,
            deprecation="true",
            sunset_header=False,
            link=None,
            answers="all",
        ),
    ),
    refusals=Refusals(
        missing_key=Refusal(401, "auth_required"),
        malformed_authorization=Refusal(401, "bad_authorization_header"),
        unknown_key=Refusal(401, "bad_api_key"),
        malformed_json=Refusal(400, "json_parse_error"),
        missing_body=Refusal(400, "empty_body"),
        invalid_body=Refusal(400, "invalid_pet"),
        unknown_field=Refusal(400, "invalid_pet"),
        unsupported_media_type=Refusal(400, "bad_content_type"),
        payload_too_large=Refusal(400, "body_too_big"),
        bad_limit=Refusal(400, "bad_limit"),
        limit_above_maximum=Refusal(400, "bad_limit"),
        bad_status_filter=Refusal(400, "bad_status"),
        bad_pet_id=Refusal(404, "no_such_pet"),
        pet_not_found=Refusal(404, "no_such_pet"),
        unknown_path=Refusal(404, "no_route"),
        method_not_allowed=Refusal(404, "no_route"),
        rate_limited=Refusal(429, "slow_down"),
        key_banned=Refusal(503, "temporarily_blocked"),
        gone=Refusal(410, "removed"),
        list_orders=None,
        bad_page=Refusal(400, "bad_page"),
        field_constraint=Refusal(400, "invalid_pet"),
        extra_fields=(
            ExtraField("documentation_url", "constant", "https://legacy.example.com/errors"),
            ExtraField("request_id", "request_id"),
        ),
        www_authenticate=WwwAuthenticate(realm="Pet Store API", invalid_token_error=False),
        routing="after_auth",
    ),
    rate_limits=RateLimits(
        plans=(("basic", Plan(4)), ("premium", Plan(6, 12))),
        anonymous=Plan(2),
        reset="delta",
        windows="clock",
        describe="day",
        retry_after="http-date",
        retry_after_banned="none",
        ban=BanPolicy("within", 4, 20, 45),
        refusal_figures="described",
        gateway=Gateway(
            minute_algorithm="token_bucket",
            day_algorithm="leaky_bucket",
            time_zone="Asia/Kolkata",
            figures=("limit", "remaining", "reset", "used"),
            resource="search",
            per_window=(("minute", "Minute"), ("day", "Day")),
            reset_decimals=1,
            retry_after_decimals=3,
            draft="all",
            policies=(("minute", "default"), ("day", "quota")),
            not_counted=("4xx",),
            second_set="Burst",
            second_set_figures=("limit", "remaining", "used"),
            second_set_reset="epoch_ms",
        ),
    ),
    semantics=Semantics(
        limit_above_maximum="refuse",
        unknown_fields="keep",
        list_order="insertion",
        head=(),
        max_body_bytes=2_048,
        default_status="pending",
        pets=(
            SeedPet(9, "Kiwi", 4, "available"),
            SeedPet(3, "Mango", 2),
            SeedPet(27, "Olive", 4, "sold"),
            SeedPet(12, "Tofu", 1, "available"),
        ),
        collections=Collections(
            pagination="page",
            links=("first", "prev", "next", "last"),
            link_urls="absolute",
            total_header="X-Total",
            page_headers=(("page", "X-Page"), ("total_pages", "X-Total-Pages")),
            numbers_body="strict",
            category_minimum=1,
            repeated="refuse",
        ),
        missing_content_type="json",
    ),
)

NAMED: dict[str, Profile] = {"mockstore-like": MOCKSTORE_LIKE, "gateway": GATEWAY, "legacy": LEGACY}


def with_windows(profile: Profile, minute_seconds: int, day_seconds: int | None = None) -> Profile:
    """``profile`` with shorter windows (a test convenience: see ``RateLimits``)."""
    limits = replace(
        profile.rate_limits,
        minute_seconds=minute_seconds,
        day_seconds=day_seconds or profile.rate_limits.day_seconds,
    )
    return replace(profile, rate_limits=limits)
