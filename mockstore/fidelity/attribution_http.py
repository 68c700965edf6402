"""Why a difference of HTTP semantics exists: the ``http``, ``maintenance`` or request-id setting
that removes it, with the value the recorded exchange shows.

``compare`` asks here first, and falls back to ``attribution`` for what is not
about these settings (None): a 304 where the mock answered in full (or the other
way round), a maintenance refusal, a redirect of a trailing slash, a CORS
preflight or a plain ``OPTIONS``, ``Last-Modified``, the ``Access-Control-*``
headers, an advisory header, ``Allow``, and a client's request id answered back.
Each value is the one the recorded answer shows, checked against the scenario
schema as a whole (``http.cors`` is an object a scenario may give as it is).
Pure functions of the exchange (``attribution.Exchange``, whose ``seen`` is the
recorded exchange) and the scenario.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qsl

from mockstore.clock import format_time
from mockstore.cors import CorsPolicy
from mockstore.fidelity.attribution import Cause, Context, Exchange, cannot, named, setting
from mockstore.fidelity.calibrate.learn_http import ECHO_PATTERNS
from mockstore.fidelity.calibrate.learn_maintenance import retry_form
from mockstore.fidelity.formats import http_date
from mockstore.routing import Router, compile_path
from mockstore.scenario.http_section import Cors
from mockstore.schemas import operations
from mockstore.validation import above_maximum

CONDITIONAL = named("http.conditional.operations")
LAST_MODIFIED = named("http.conditional.last_modified")
CORS = named("http.cors")
REJECTED = named("http.cors.rejected_status")
REFUSE_ORIGINS = named("http.cors.refuse_origins")
CORS_CODE = named("http.cors.code")  # named by attribution.error_code
CORS_MATCH = named("http.cors.match")
CORS_PATHS = named("http.cors.paths")
OPTIONS = named("http.options")
ALLOW = named("http.allow")
TRAILING_SLASH = named("http.trailing_slash")
ADVISORY = named("http.advisory.unknown_fields")
CLAMPED = named("http.advisory.clamped_limit")
MAINTENANCE = named("maintenance")
ECHO = named("behaviour.request_id.echo")
ETAG = {name: named(f"behaviour.etag.{name}") for name in ("listPets", "getPet")}

# Every setting this module names (drift's registry reads it with attribution's).
SETTINGS: tuple[str, ...] = (
    CONDITIONAL,
    LAST_MODIFIED,
    CORS,
    REJECTED,
    REFUSE_ORIGINS,
    CORS_CODE,
    CORS_MATCH,
    CORS_PATHS,
    OPTIONS,
    ALLOW,
    TRAILING_SLASH,
    ADVISORY,
    CLAMPED,
    MAINTENANCE,
    ECHO,
    *ETAG.values(),
)

_READS = ("listPets", "getPet")
_ROUTER = Router(operations().values())
_LIMIT = next(p for p in operations()["listPets"].parameters if p.name == "limit")
_TEMPLATES = [(template, compile_path(template)) for template in _ROUTER.paths]


def _request_header(ex: Exchange, name: str) -> str | None:
    if ex.seen is None:
        return None
    for header, value in ex.seen.item.headers:
        if header.lower() == name:
            return value
    return None


def _recorded(ex: Exchange, name: str) -> str | None:
    return ex.seen.headers.get(name) if ex.seen is not None else None


def _relative(ex: Exchange) -> str:
    return ex.seen.path if ex.seen is not None else ""


def _preflight(ex: Exchange) -> bool:
    return (
        ex.method == "OPTIONS"
        and _request_header(ex, "origin") is not None
        and _request_header(ex, "access-control-request-method") is not None
    )


def _template(relative: str) -> str | None:
    return next((t for t, pattern in _TEMPLATES if pattern.match(relative)), None)


# -- status -------------------------------------------------------------------------------


def status(ex: Exchange, ctx: Context) -> Cause | None:
    """The setting behind a status difference of these semantics, or None."""
    was, now = ex.recorded_status, ex.mock_status
    http = ctx.scenario.http
    operation = ex.facts.operation
    if ex.recorded_condition == "maintenance" or _mock_maintenance(ex, ctx):
        return setting(MAINTENANCE, *_window(ex))
    if 304 in (was, now) and operation in _READS and ex.method in ("GET", "HEAD"):
        chosen = set(http.conditional.operations)
        if was == 304:
            if operation not in dict(ctx.behaviour.etag) and operation not in (
                http.conditional.last_modified
            ):
                tag = _recorded(ex, "etag")
                if tag is not None:
                    return setting(ETAG[operation], "weak" if tag.startswith("W/") else "strong")
                return setting(LAST_MODIFIED, sorted({*http.conditional.last_modified, operation}))
            if operation in chosen:
                dated = http.conditional.last_modified
                if (
                    operation not in dated
                    and _request_header(ex, "if-none-match") is None
                    and _request_header(ex, "if-modified-since") is not None
                ):
                    # A 304 by date alone: the mock needs the read's Last-Modified to compare.
                    return setting(LAST_MODIFIED, sorted({*dated, operation}))
                return cannot("representation")  # conditional already: its ETag differs
            chosen.add(operation)
        elif operation not in chosen:
            return cannot("representation")
        else:
            chosen.discard(operation)
        return setting(CONDITIONAL, [op for op in _READS if op in chosen])
    if _preflight(ex):
        if ex.recorded_condition == "cors_rejected":
            return setting(REJECTED, was)
        if ex.mock_code == "cors_rejected" and http.cors is not None:
            return setting(REJECTED, None)
        if 200 <= was < 300 or (_recorded(ex, "access-control-allow-origin") is not None):
            return setting(CORS, _cors(ex))
        exact = _cors_exact(ex, http.cors)
        if exact is not None:
            return exact
        if http.cors is not None and ex.recorded_condition in ("missing_key", "unknown_key"):
            return setting(named("http.cors.stage"), "authenticated")
        if http.cors is not None:
            return _cors_paths(ex, http.cors)
    origin = _request_header(ex, "origin")
    if origin is not None and not _preflight(ex) and http.cors is not None:
        # A gateway that refuses every request from an origin it does not allow, or not.
        cors = CorsPolicy(http.cors)
        if (
            was == http.cors.rejected_status
            and not cors.allows_origin(origin.encode("latin-1"))
            and cors.applies(_relative(ex))
        ):
            return setting(REFUSE_ORIGINS, True)
        if ex.mock_code == "cors_rejected":
            return setting(REFUSE_ORIGINS, False)
    if ex.method == "OPTIONS" and not _preflight(ex):
        if 200 <= was < 300:
            value: dict[str, Any] = {"serve": True, "status": was}
            if not ex.authenticated and _recorded(ex, "x-ratelimit-limit") is None:
                value["stage"] = "gateway"
            return setting(OPTIONS, value)
        if 200 <= now < 300:
            return setting(OPTIONS, {"serve": False})
    relative = _relative(ex)
    if len(relative) > 1 and relative.endswith("/") and _template(relative.rstrip("/")):
        location = _recorded(ex, "location")
        if 300 <= was < 400 and location is not None:
            value = {
                "answer": "redirect",
                "status": was,
                "location": "url" if re.match(r"https?://", location) else "path",
            }
            if _recorded(ex, "x-ratelimit-limit") is None:
                value["stage"] = "gateway"
            return setting(TRAILING_SLASH, value)
        if 200 <= was < 300:
            return setting(TRAILING_SLASH, {"answer": "serve"})
        if was == 404:
            return setting(TRAILING_SLASH, {"answer": "not_found"})
    return None


def _mock_maintenance(ex: Exchange, ctx: Context) -> bool:
    """Whether the mock's answer is one of its maintenance windows' refusals."""
    windows = ctx.scenario.maintenance
    return bool(windows) and any(
        ex.mock_status == window.status and ex.mock_code == window.code for window in windows
    )


def _window(ex: Exchange) -> tuple[Any, ...]:
    """The window a recorded maintenance refusal shows (as of this exchange alone)."""
    if ex.recorded_condition != "maintenance" or ex.seen is None:
        return ()
    seen = ex.seen
    value = seen.headers.get("retry-after", "")
    form = retry_form(value)
    if form is None:
        return ()
    if form == "http-date":
        stated = http_date(value)
        end = (stated or 0) - seen.header_offset
    else:
        end = seen.item.time + float(value)
    segment = "/" + seen.path.lstrip("/").split("/", 1)[0]
    window: dict[str, Any] = {
        "paths": [segment],
        "from": format_time(int(seen.item.time)),
        "until": format_time(end),
        "status": seen.status,
        "retry_after": form,
    }
    if seen.code is not None:
        window["code"] = seen.code
    return (window,)


def _cors_exact(ex: Exchange, cors: Cors | None) -> Cause | None:
    """``match: exact`` for an answer the mock gave CORS on a path only under a configured
    one (a gateway that allows preflights on /v1/pets and not on one pet's path)."""
    if cors is None or cors.match == "exact":
        return None
    relative = _relative(ex)
    policy = CorsPolicy(cors)
    if policy.covering(relative) and not policy.exactly_on(relative):
        return setting(CORS_MATCH, "exact")
    return None


def _cors_paths(ex: Exchange, cors: Cors) -> Cause:
    """A preflight the mock answered as CORS and the provider did not: CORS on the other
    paths, where some are left, else no CORS at all."""
    covering = CorsPolicy(cors).covering(_relative(ex))
    kept = [path for path in cors.paths if path not in covering]
    if covering and kept:
        return setting(CORS_PATHS, kept)
    return setting(CORS, None)


def _cors(ex: Exchange) -> dict[str, Any]:
    """An ``http.cors`` that answers this recorded preflight as the provider did."""
    origin = _recorded(ex, "access-control-allow-origin")
    value: dict[str, Any] = {"origins": ["*"] if origin in (None, "*") else [origin]}
    methods = _recorded(ex, "access-control-allow-methods")
    if methods:
        value["methods"] = [m.strip() for m in methods.split(",") if m.strip()]
    allowed = _recorded(ex, "access-control-allow-headers")
    if allowed is not None:
        value["headers"] = [h.strip() for h in allowed.split(",") if h.strip()]
    age = (_recorded(ex, "access-control-max-age") or "").strip()
    if age.isdigit():
        value["max_age"] = int(age)
    if (_recorded(ex, "access-control-allow-credentials") or "").lower() == "true":
        value["credentials"] = True
    if ex.recorded_status in (200, 204):
        value["preflight_status"] = ex.recorded_status
    if _recorded(ex, "x-ratelimit-limit") is not None:
        value["stage"] = "authenticated" if ex.authenticated else "counted"
    return value


# -- headers ------------------------------------------------------------------------------


def header_presence(
    name: str, ex: Exchange, was: str | None, now: str | None, ctx: Context
) -> Cause | None:
    """The setting behind a header of these semantics one answer has and the other has not."""
    http = ctx.scenario.http
    operation = ex.facts.operation
    if name == "last-modified" and operation in _READS:
        dated = set(http.conditional.last_modified)
        if was is not None:
            dated.add(operation)
        else:
            dated.discard(operation)
        return setting(LAST_MODIFIED, [op for op in _READS if op in dated])
    if name.startswith("access-control-") and (http.cors is not None or _preflight(ex)):
        if was is None:
            if http.cors is None:
                return cannot("unexplained")
            return _cors_exact(ex, http.cors) or setting(CORS)
        if _preflight(ex):
            return setting(CORS, _cors(ex))
        if name == "access-control-expose-headers" and http.cors is not None:
            return setting(named("http.cors.expose_headers"), [
                h.strip() for h in was.split(",") if h.strip()
            ])  # fmt: skip
        return setting(CORS)
    advisory = http.unknown_fields
    if operation == "createPet" and ex.facts.unknown_fields:
        if was is not None and _advises(was, ex.facts.unknown_fields):
            fields = ", ".join(ex.facts.unknown_fields)
            return setting(
                ADVISORY, {"header": _spelled(ex, name), "value": was.replace(fields, "{fields}")}
            )
        if now is not None and advisory is not None and name == advisory.header.lower():
            return setting(ADVISORY, None)
    limit = _clamped_limit(ex)
    if operation == "listPets" and limit is not None:
        if was is not None and limit in was:
            maximum = str(_LIMIT.schema["maximum"])
            template = was.replace(limit, "{limit}").replace(maximum, "{maximum}")
            return setting(CLAMPED, {"header": _spelled(ex, name), "value": template})
        clamped = http.clamped_limit
        if now is not None and clamped is not None and name == clamped.header.lower():
            return setting(CLAMPED, None)
    return None


def _clamped_limit(ex: Exchange) -> str | None:
    """The limit a listing was asked with, where it is above the maximum (as sent)."""
    if ex.seen is None:
        return None
    for name, value in parse_qsl(ex.seen.item.query, keep_blank_values=True):
        if name == "limit" and above_maximum(_LIMIT, value.strip()):
            return value
    return None


def _advises(value: str, fields: tuple[str, ...]) -> bool:
    return ", ".join(fields) in value


def _spelled(ex: Exchange, name: str) -> str:
    if ex.seen is not None:
        for header, _ in ex.seen.item.response_headers:
            if header.lower() == name:
                return header
    return name


def header_value(name: str, ex: Exchange, was: str, now: str, ctx: Context) -> Cause | None:
    """The setting behind a header of these semantics both answers carry, valued otherwise."""
    if name == "allow":
        template = _template(_relative(ex))
        if template is not None:
            allow = dict(ctx.scenario.http.allow)
            allow[template] = ", ".join(m.strip() for m in was.split(",") if m.strip())
            return setting(ALLOW, allow)
        return cannot("allow")
    ids = {*ctx.request_ids, (ctx.behaviour.request_id.header or "").lower()}
    sent = _request_header(ex, name) if name in ids else None
    if sent is not None and was == sent and now != sent:
        # The client's own request id, answered back: the pattern that accepts it.
        fitting = next((p for p in ECHO_PATTERNS if re.fullmatch(p, sent)), None)
        return setting(ECHO, fitting) if fitting is not None else cannot("varying-header")
    if sent is not None and now == sent and was != sent:
        return setting(ECHO, None)
    if name.startswith("access-control-") and _preflight(ex):
        return setting(CORS, _cors(ex))
    return None


__all__ = ["SETTINGS", "header_presence", "header_value", "status"]
