"""Calibrate's ``http.cors``: the preflights a provider allows, on which paths, from which origins.

A preflight (``OPTIONS`` with ``Origin`` and ``Access-Control-Request-Method``) is
allowed by a 2xx with ``Access-Control-Allow-Origin``; the rest are refused. From
the allowed ones: the origins (``*``, or each preflight's own named back from more
than one origin and none refused for its origin: any origin; else the ones shown),
methods, headers, max-age, credentials, the preflight's status; from the refused:
a loud refusal's status (and whether other requests from an origin not allowed get it
too), and the paths CORS stops at (a preflight on another path of
the API answered as a method it does not serve: the allowed paths, exactly); the
stage from whether a caller without a key was answered and counted.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from mockstore.fidelity.calibrate.result import Calibration
from mockstore.fidelity.evidence import Seen
from mockstore.routing import Router, compile_path
from mockstore.schemas import operations

Cite = Callable[..., str]
# An Error code a scenario can state (the schema's $defs/error_code).
_CODE = re.compile(r"[!-~]+( [!-~]+)*")
Stage = Callable[[list[Seen], list[Seen]], tuple[str, Seen] | None]
_TEMPLATES = [(t, compile_path(t)) for t in Router(operations().values()).paths]


def _request_header(s: Seen, name: str) -> str | None:
    for header, value in s.item.headers:
        if header.lower() == name:
            return value
    return None


def _template(relative: str) -> str | None:
    return next((t for t, pattern in _TEMPLATES if pattern.match(relative)), None)


def learn_cors(
    preflights: list[Seen], seen: list[Seen], result: Calibration, cite: Cite, stage: Stage
) -> set[int]:
    """Settles ``http.cors`` from a recording's ``preflights`` (of all it holds, ``seen``);
    the indexes of the exchanges it explains that calibrate said it did not. ``stage``
    tells where a provider makes an answer (``learn_http``'s rule for every part)."""
    explained: set[int] = set()
    # A preflight is allowed by a 2xx: a gateway that writes Access-Control-Allow-Origin
    # on its refusals too (a 429 from the limiter) has not allowed that one.
    allowed = [
        s
        for s in preflights
        if 200 <= s.status < 300 and "access-control-allow-origin" in s.headers
    ]
    refused = [s for s in preflights if s not in allowed]
    if not allowed:
        if all(s.status in (401, 404, 405) for s in refused):
            result.confirm("http.cors")
        else:
            result.cannot(
                "every preflight of the recording was refused: which ones the provider "
                "allows is not shown: " + cite(refused[0])
            )
        return explained
    shown = allowed[0]
    value: dict[str, Any] = {}
    origin_said = {s.headers["access-control-allow-origin"].strip() for s in allowed}
    credentials = shown.headers.get("access-control-allow-credentials", "").lower() == "true"
    reflected = {
        s.headers["access-control-allow-origin"].strip()
        for s in allowed
        if s.headers["access-control-allow-origin"].strip() == _request_header(s, "origin")
    }
    if "*" in origin_said or _reflects_any(reflected, origin_said, refused):
        # Any origin: "*", or each preflight's own origin named back (more than one,
        # none refused for its origin): with credentials the mock names it too.
        value["origins"] = ["*"]
    else:
        value["origins"] = sorted(origin_said)
        if len(origin_said) > 1 or credentials:
            result.estimate(
                "http.cors",
                "http.cors.origins: the origins the recording shows allowed; any other "
                "the provider allows is not shown",
            )
    methods = [m.strip() for m in shown.headers.get("access-control-allow-methods", "").split(",")]
    if [m for m in methods if m]:
        value["methods"] = [m for m in methods if m]
    allow_headers = shown.headers.get("access-control-allow-headers")
    if allow_headers is not None:
        names = [h.strip() for h in allow_headers.split(",") if h.strip()]
        echoed = all(
            s.headers.get("access-control-allow-headers", "").strip()
            == (_request_header(s, "access-control-request-headers") or "").strip()
            for s in allowed
        )
        distinct = {_request_header(s, "access-control-request-headers") for s in allowed}
        value["headers"] = ["*"] if names == ["*"] or (echoed and len(distinct) > 1) else names
    else:
        value["headers"] = []
    age = shown.headers.get("access-control-max-age", "").strip()
    value["max_age"] = int(age) if age.isdigit() else None
    value["credentials"] = credentials
    value["preflight_status"] = shown.status
    loud = [s for s in refused if s.condition == "cors_rejected"]
    if loud:
        value["rejected_status"] = loud[0].status
        if loud[0].code is not None and _CODE.fullmatch(loud[0].code):
            value["code"] = loud[0].code
        explained.update(s.index for s in loud)
        enforced = _refused_requests(seen, loud[0], value["origins"])
        if enforced:
            value["refuse_origins"] = True
            explained.update(s.index for s in enforced)
    exposed = next(
        (
            s.headers["access-control-expose-headers"]
            for s in seen
            if s.item.method != "OPTIONS" and "access-control-expose-headers" in s.headers
        ),
        None,
    )
    if exposed is not None:
        value["expose_headers"] = [h.strip() for h in exposed.split(",") if h.strip()]
    paths = _cors_paths(allowed, refused)
    if paths is not None:
        value["paths"], value["match"] = paths, "exact"
        result.estimate(
            "http.cors",
            "http.cors.paths: the paths the recording shows preflights allowed on (exact); "
            "any other path the provider allows is not shown",
        )
    made = stage(allowed, [s for s in preflights if s.status == 401 and not s.keyed])
    if made is not None:
        value["stage"] = made[0]
    result.set(
        "http.cors",
        value,
        cite(shown, "Access-Control-Allow-Origin", "Access-Control-Allow-Methods", code=False),
        *([cite(refused[0], code=False, note="a preflight not allowed")] if refused else []),
    )
    return explained


def _refused_requests(seen: list[Seen], loud: Seen, origins: list[str]) -> list[Seen]:
    """Requests other than preflights, from an origin not allowed, refused as a preflight from
    one is (its status and code): a gateway that enforces its origin list on every request."""
    if "*" in origins:
        return []
    refused = []
    for s in seen:
        origin = _request_header(s, "origin")
        if s.item.method == "OPTIONS" or origin is None or origin in origins:
            continue
        if s.status == loud.status and s.code is not None and s.code == loud.code:
            refused.append(s)
    return refused


def _reflects_any(reflected: set[str], said: set[str], refused: list[Seen]) -> bool:
    """Whether a provider allows any origin: it named back each preflight's own, more than
    one, and refused none that may have been for its origin (a 400 or 403, or a 2xx without
    Access-Control-Allow-Origin, to an origin it never allowed)."""
    if len(reflected) < 2 or reflected != said:
        return False
    return not any(
        (s.status in (400, 403) or 200 <= s.status < 300)
        and _request_header(s, "origin") not in reflected
        for s in refused
    )


def _cors_paths(allowed: list[Seen], refused: list[Seen]) -> list[str] | None:
    """The paths CORS applies to, exactly, where a preflight on another path of the API was
    answered as a method it does not serve (404 or 405) though one on these was allowed;
    None: the recording shows no such boundary (mockstore's default, every path, stays)."""
    on = {_template(s.path) for s in allowed}
    # (Or as a plain OPTIONS: a 2xx naming the path's methods in Allow, no Access-Control-*.)
    off = {
        _template(s.path)
        for s in refused
        if (s.status in (404, 405) or (200 <= s.status < 300 and "allow" in s.headers))
        and not s.path.endswith("/")
    }
    on.discard(None)
    off.discard(None)
    if not on or not (off - on):
        return None
    return sorted(t for t in on if t is not None)


__all__ = ["learn_cors"]
