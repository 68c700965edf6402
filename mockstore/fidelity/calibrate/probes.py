"""The probes of ``mockstore calibrate``: the open questions of the spec, asked of a live service.

A small, budgeted set of requests asks the service each question the spec
leaves open: the status and Error ``code`` of every refusal a client meets,
400 or 422, each key's plan as its ``X-RateLimit-*`` (and draft
``RateLimit-Policy``) headers reveal it, the format of ``X-RateLimit-Reset``,
the deprecation headers of ``getPet``, whether HEAD is served and whether a
path is checked before the key. With ``allow_writes`` it creates one pet (the
default ``status``, unknown fields kept or not) and searches for the largest
accepted body; with ``allow_rate_limit`` it spends one key's minute allowance
to see a 429 (``Retry-After``, its body).

Without the opt-ins nothing is written and no allowance is exhausted: the
only POSTs are bodies no conforming service can store (``{"name": 7}``, not
JSON, empty), and a key (or the anonymous allowance) with one request left
is not used again (``prober``). Each answer becomes a setting with its
evidence (``Calibration``); what the format cannot express and what was not
settled are noted with the reason. ``writer`` writes the scenario.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field
from typing import Any

from mockstore.clock import format_time
from mockstore.errors import CONDITIONS, ERROR_CODES
from mockstore.fidelity.calibrate.options import Options
from mockstore.fidelity.calibrate.prober import Probe, Prober, one_line
from mockstore.fidelity.formats import (
    deprecation_instant,
    deprecation_kind,
    http_date,
    reset_kind,
    retry_after_kind,
    sf_list,
)
from mockstore.fidelity.upstream import UpstreamError, parse_upstream
from mockstore.keys import key_alias
from mockstore.ratelimit import BUILTIN_PLANS

UNKNOWN_PET = 2**63 - 1  # the largest int64: no store that counts up from 1 has it
BODY_SEARCH_START = 1024
BODY_SEARCH_CAP = 16 * 1024 * 1024
_ROUTE_BODY_LIMIT = 8192  # a scripted answer is one line of the scenario file
_EXCERPT = 120


@dataclass
class Setting:
    value: Any
    evidence: list[str]


@dataclass
class Calibration:
    """What the probes settled, what the format cannot say, and what stayed open."""

    target: str
    behaviour: dict[str, Setting] = field(default_factory=dict)
    error_codes: dict[str, Setting] = field(default_factory=dict)
    keys: list[tuple[str, Any, list[str]]] = field(default_factory=list)
    anonymous: tuple[Any, list[str]] | None = None
    routes: list[tuple[dict[str, Any], list[str]]] = field(default_factory=list)
    inexpressible: list[str] = field(default_factory=list)
    accept: list[tuple[dict[str, Any], str]] = field(default_factory=list)
    unsettled: list[str] = field(default_factory=list)

    def cannot(self, text: str, accept: dict[str, Any] | None = None) -> None:
        self.inexpressible.append(one_line(text))
        if accept is not None:
            self.accept.append((accept, one_line(text)))

    def set(self, name: str, value: Any, *evidence: str) -> None:
        self.behaviour[name] = Setting(value, list(evidence))


def _plan_figures(probe: Probe) -> tuple[int | None, int | None, list[str]]:
    """(per_minute, per_day) as a probe's headers reveal them, and how."""
    policy = sf_list(probe.headers.get("ratelimit-policy", "")) or []
    minute = day = None
    for _name, params in policy:
        q, w = params.get("q", ""), params.get("w", "")
        if q.isdigit() and w == "60":
            minute = int(q)
        elif q.isdigit() and w == "86400":
            day = int(q)
    limit = probe.headers.get("x-ratelimit-limit", "")
    notes = []
    if minute is None and limit.isdigit():
        minute = int(limit)
        notes.append("X-RateLimit-Limit read as the minute's allowance")
    if day is None and minute is not None:
        for plan in BUILTIN_PLANS.values():
            if plan.per_minute == minute:
                day = plan.per_day
                notes.append(f"per_day not shown: the spec's {plan.name} plan has {minute}/min")
                break
    return minute, day, notes


def _plan_value(minute: int, day: int) -> Any:
    for plan in BUILTIN_PLANS.values():
        if (plan.per_minute, plan.per_day) == (minute, day):
            return plan.name
    return {"per_minute": minute, "per_day": day}


class Calibrator:
    """Runs the probes in order of importance and turns the answers into settings."""

    def __init__(self, options: Options) -> None:
        self.options = options
        for key in options.keys:
            if not key or not all("!" <= char <= "~" for char in key):
                # Never echo it: it is a secret, even when mistyped.
                raise UpstreamError("--key must be a bearer token: printable ASCII, no spaces")
        upstream = parse_upstream(options.target)
        self.base = upstream.base_path
        self.prober = Prober(options.target, options.budget, options.timeout)
        self.result = Calibration(upstream.shown)
        self.keys: list[str] = list(dict.fromkeys(options.keys))
        self.probe_key: str | None = None
        self.pet_id: int | None = None
        self.seen_429: Probe | None = None
        self.seen: dict[str, Probe] = {}  # answers later probes may read instead

    def run(self) -> Calibration:
        try:
            self._plans()
            if self.probe_key is None:
                self.result.unsettled.append(
                    "every refusal that needs a valid key: no --key was accepted by the target"
                )
            self._without_key()
            if self.probe_key is not None:
                self._refusals()
                self._deprecation()
                self._routing()
                self._bodies()
                if self.options.allow_writes:
                    self._writes()
                else:
                    self.result.unsettled.append(
                        "behaviour.default_status, behaviour.unknown_fields, "
                        "behaviour.max_body_bytes: need --allow-writes"
                    )
            self._rate_limit()
        finally:
            self.prober.close()
        self.result.unsettled.extend(self.prober.refused)
        self.result.unsettled.append(
            "ban: not probed (it takes a ban); behaviour.after_sunset: not probed (the sunset "
            "is in the future); method_not_allowed: not probed (another method could write)"
        )
        return self.result

    # -- the probes ---------------------------------------------------------------

    def _plans(self) -> None:
        best = -1
        for key in self.keys:
            probe = self.prober.send("plan", "GET", "/pets?limit=1", key=key)
            if probe is None or probe.error is not None:
                continue
            alias = key_alias(key)
            if probe.status == 401:
                self.result.unsettled.append(
                    f"{alias}: the target refused the key (401): {probe.evidence(code=True)}"
                )
                continue
            if probe.status == 429:
                self.seen_429 = self.seen_429 or probe
            if probe.status == 200:
                body = probe.json()
                if isinstance(body, list) and body and isinstance(body[0], dict):
                    pet_id = body[0].get("id")
                    self.pet_id = pet_id if isinstance(pet_id, int) else self.pet_id
            minute, day, notes = _plan_figures(probe)
            shown = probe.evidence("X-RateLimit-Limit", "RateLimit-Policy", note="; ".join(notes))
            if minute is None:
                self.result.cannot(f"{alias}: no X-RateLimit-Limit on its answer ({shown})")
                continue
            if day is None:
                day = minute * 1440
                self.result.unsettled.append(
                    f"{alias}: per_day not revealed by the headers; written as {day} "
                    "(the minute's allowance all day)"
                )
            self.result.keys.append((alias, _plan_value(minute, day), [shown]))
            remaining = self.prober.remaining.get(alias, 0)
            if remaining > best:
                best, self.probe_key = remaining, key
            self._rate_limit_headers(probe)

    def _rate_limit_headers(self, probe: Probe) -> None:
        if "ratelimit_reset" not in self.result.behaviour and "x-ratelimit-reset" in probe.headers:
            kind = reset_kind(probe.headers["x-ratelimit-reset"])
            if kind == "invalid":
                self.result.cannot(
                    "X-RateLimit-Reset is neither a Unix time nor seconds: "
                    + probe.evidence("X-RateLimit-Reset")
                )
            else:
                self.result.set(
                    "ratelimit_reset", kind, probe.evidence("X-RateLimit-Reset", "Date")
                )
        if "ratelimit_draft_headers" not in self.result.behaviour:
            draft = "ratelimit-policy" in probe.headers and "ratelimit" in probe.headers
            self.result.set(
                "ratelimit_draft_headers",
                draft,
                probe.evidence("RateLimit-Policy", note="" if draft else "no RateLimit-Policy"),
            )
            if draft:
                names = [n for n, _ in sf_list(probe.headers["ratelimit-policy"]) or []]
                if names != ["minute", "day"]:
                    self.result.cannot(
                        f"the draft RateLimit-Policy names its policies {names}; mockstore "
                        f'names them "minute" and "day": ' + probe.evidence("RateLimit-Policy"),
                        {
                            "class": "header-value",
                            "where": "header ratelimit-policy",
                            "reason": "policy names differ",
                        },
                    )

    def _without_key(self) -> None:
        missing = self.prober.send("missing key", "GET", "/pets")
        if missing is not None and missing.error is None:
            self._error("missing_key", missing, 401)
            minute, day, notes = _plan_figures(missing)
            shown = missing.evidence("X-RateLimit-Limit", "RateLimit-Policy", note="; ".join(notes))
            if minute is None or day is None:
                self.result.cannot("answers without a valid key carry no plan figures: " + shown)
                for name in ("limit", "remaining", "reset"):
                    if f"x-ratelimit-{name}" not in missing.headers:
                        self.result.accept.append(
                            (
                                {
                                    "class": "header-presence",
                                    "where": f"header x-ratelimit-{name}",
                                    "status": missing.status,
                                },
                                one_line(f"no X-RateLimit-{name.title()} without a key: {shown}"),
                            )
                        )
            else:
                self.result.anonymous = (_plan_value(minute, day), [shown])
        malformed = self.prober.send(
            "malformed Authorization", "GET", "/pets", authorization="Basic Y2FsaWJyYXRlOm1l"
        )
        if malformed is not None and malformed.error is None:
            self._error("malformed_authorization", malformed, 401)
        unknown = self.prober.send(
            "unknown key",
            "GET",
            "/pets",
            authorization=f"Bearer mockstore-calibrate-{secrets.token_hex(8)}",
        )
        if unknown is not None and unknown.error is None:
            self._error("unknown_key", unknown, 401)
        nowhere = self.prober.send("unknown path, no key", "GET", "/mockstore-calibrate-nowhere")
        if nowhere is not None and nowhere.error is None:
            if nowhere.status == 401:
                self.result.set("path_check", "after_auth", nowhere.evidence(code=True))
            elif nowhere.status in (404, 405):
                self.result.set("path_check", "before_auth", nowhere.evidence(code=True))
            else:
                self.result.cannot(
                    "an unknown path without a key answers neither 401 nor 404: "
                    + nowhere.evidence(code=True)
                )

    def _refusals(self) -> None:
        key = self.probe_key
        checks: list[tuple[str, str, str, int | None]] = [
            ("bad_limit", "GET", "/pets?limit=0", None),
            ("bad_status_filter", "GET", "/pets?status=mockstore-calibrate", None),
            ("bad_pet_id", "GET", "/pets/not-a-number", None),
            ("pet_not_found", "GET", f"/pets/{UNKNOWN_PET}", 404),
            ("unknown_path", "GET", "/mockstore-calibrate-nowhere", 404),
        ]
        for condition, method, path, status in checks:
            probe = self.prober.send(condition.replace("_", " "), method, path, key=key)
            if probe is not None and probe.error is None:
                self._error(condition, probe, status)
                if condition in ("bad_pet_id", "pet_not_found") and "getpet" not in self.seen:
                    self.seen["getpet"] = probe

    def _deprecation(self) -> None:
        probe = None
        if self.pet_id is not None:
            probe = self.prober.send(
                "deprecated getPet", "GET", f"/pets/{self.pet_id}", key=self.probe_key
            )
        probe = probe if probe is not None and probe.error is None else self.seen.get("getpet")
        if probe is None:
            self.result.unsettled.append("deprecation headers: no getPet answer was seen")
            return
        deprecation = probe.headers.get("deprecation")
        if deprecation is None:
            self.result.cannot(
                "getPet carries no Deprecation header: " + probe.evidence(),
                {
                    "class": "header-presence",
                    "where": "header deprecation",
                    "operation": "getPet",
                    "reason": "no Deprecation header",
                },
            )
        else:
            instant = deprecation_instant(deprecation)
            kind = deprecation_kind(deprecation)
            if instant is not None:
                self.result.set(
                    "deprecated_since", format_time(instant), probe.evidence("Deprecation")
                )
            if kind != "sf-date":
                self.result.cannot(
                    f"Deprecation is written as {kind}, mockstore writes an RFC 9745 "
                    "@-date: " + probe.evidence("Deprecation"),
                    {
                        "class": "header-format",
                        "where": "header deprecation",
                        "operation": "getPet",
                        "reason": f"Deprecation as {kind}",
                    },
                )
        sunset = probe.headers.get("sunset")
        instant = http_date(sunset) if sunset else None
        if instant is not None:
            self.result.set("sunset", format_time(instant), probe.evidence("Sunset"))
        else:
            self.result.cannot(
                "getPet carries no Sunset HTTP-date: " + probe.evidence("Sunset"),
                {
                    "class": "header-presence",
                    "where": "header sunset",
                    "operation": "getPet",
                    "reason": "no Sunset header",
                },
            )
        link = probe.headers.get("link")
        expected = f'<{self.base}/pets>; rel="successor-version"'
        if link is not None and "".join(link.split()) != "".join(expected.split()):
            self.result.cannot(
                f"getPet's Link differs from mockstore's {expected}: " + probe.evidence("Link"),
                {
                    "class": "header-value",
                    "where": "header link",
                    "operation": "getPet",
                    "reason": "another successor link",
                },
            )

    def _routing(self) -> None:
        head = self.prober.send("HEAD", "HEAD", "/pets?limit=1", key=self.probe_key)
        if head is not None and head.error is None:
            if head.status == 405:
                self.result.set("serve_head", False, head.evidence("Allow"))
            elif 200 <= head.status < 300:
                self.result.set("serve_head", True, head.evidence())
            else:
                self.result.cannot("HEAD answers neither 2xx nor 405: " + head.evidence())
        orders = self.prober.send("listOrders", "GET", "/store/orders", key=self.probe_key)
        if orders is None or orders.error is not None:
            return
        body = orders.json()
        if orders.status == ERROR_CODES["not_implemented"].status and orders.code() == (
            "not_implemented"
        ):
            return
        if len(orders.body) > _ROUTE_BODY_LIMIT:
            self.result.unsettled.append(
                f"routes (listOrders): its {len(orders.body)}-byte answer is too large to "
                f"script (over {_ROUTE_BODY_LIMIT} bytes): {orders.evidence()}"
            )
            return
        respond: dict[str, Any] = {"status": orders.status}
        if orders.body:
            if body is None:
                respond["body"] = orders.body.decode("utf-8", "replace")
                respond["raw"] = True
            else:
                respond["body"] = body
                if orders.status >= 400 and not _is_error(body, orders.status):
                    respond["raw"] = True
        self.result.routes.append(
            ({"operation": "listOrders", "respond": respond}, [orders.evidence(code=True)])
        )

    def _bodies(self) -> None:
        """POSTs no conforming service can store: they settle 400/422 and three codes."""
        key = self.probe_key
        checks = [
            ("invalid_body", b'{"name": 7}', "application/json"),
            ("malformed_json", b'{"name": ', "application/json"),
            ("missing_body", b"", "application/json"),
            ("unsupported_media_type", b'{"name": 7}', "text/plain"),
        ]
        for condition, body, media in checks:
            probe = self.prober.send(
                condition.replace("_", " "),
                "POST",
                "/pets",
                key=key,
                body=body,
                content_type=media,
            )
            if probe is not None and probe.error is None:
                if 200 <= probe.status < 300:
                    self.result.cannot(
                        f"the target STORED a body no conforming service accepts: "
                        f"{probe.evidence()}"
                    )
                    continue
                status = 415 if condition == "unsupported_media_type" else None
                self._error(condition, probe, status)
        self._validation_status()

    def _writes(self) -> None:
        key = self.probe_key
        sent = {"name": "mockstore-calibrate", "categoryId": 1, "calibrationProbe": True}
        probe = self.prober.send(
            "create a pet",
            "POST",
            "/pets",
            key=key,
            body=json.dumps(sent).encode(),
            content_type="application/json",
        )
        if probe is not None and probe.error is None:
            pet = probe.json()
            if probe.status == 201 and isinstance(pet, dict):
                status = pet.get("status")
                value = status if isinstance(status, str) else "omit"
                self.result.set(
                    "default_status", value, probe.evidence(note=f"sent no status, got {value}")
                )
                kept = "calibrationProbe" in pet
                self.result.set(
                    "unknown_fields",
                    "keep" if kept else "drop",
                    probe.evidence(note=f"sent calibrationProbe, {'kept' if kept else 'dropped'}"),
                )
            else:
                self.result.unsettled.append(
                    "default_status, unknown_fields: the create was refused: " + probe.evidence()
                )
        self._largest_body()

    def _largest_body(self) -> None:
        """The largest body accepted: growing, then bisecting, bodies that cannot be stored."""
        key = self.probe_key

        def refused_for_size(size: int) -> Probe | None:
            filler = b"a" * max(0, size - len(b'{"name":""}'))
            return self.prober.send(
                f"body of {size} bytes",
                "POST",
                "/pets",
                key=key,
                body=b'{"name":"' + filler + b'"}',
                content_type="application/json",
            )

        accepted, refused, refusal = 0, None, None
        size = BODY_SEARCH_START
        while size <= BODY_SEARCH_CAP:
            probe = refused_for_size(size)
            if probe is None or probe.error is not None:
                break
            if probe.status == 413:
                refused, refusal = size, probe
                break
            accepted = size
            size *= 4
        while refused is not None and refused - accepted > 1:
            middle = (accepted + refused) // 2
            probe = refused_for_size(middle)
            if probe is None or probe.error is not None:
                break
            if probe.status == 413:
                refused, refusal = middle, probe
            else:
                accepted = middle
        if refusal is None:
            if accepted:
                self.result.unsettled.append(
                    f"behaviour.max_body_bytes: no 413 up to {accepted} bytes (search stopped)"
                )
            return
        assert refused is not None
        exact = refused - accepted == 1
        note = (
            f"{accepted} bytes refused by validation, {refused} bytes 413"
            if exact
            else f"between {accepted} and {refused} bytes: the budget ended the search"
        )
        self.result.set("max_body_bytes", accepted, refusal.evidence(code=True, note=note))
        if not exact:
            self.result.unsettled.append(f"behaviour.max_body_bytes is only bracketed: {note}")
        self._error("payload_too_large", refusal, 413)

    def _rate_limit(self) -> None:
        probe = self.seen_429
        if probe is None and self.options.allow_rate_limit:
            probe = self._spend_a_minute()
        if probe is None:
            if not self.options.allow_rate_limit:
                self.result.unsettled.append(
                    "behaviour.retry_after, error_codes.rate_limited, the 429 body: need "
                    "--allow-rate-limit"
                )
            return
        if probe.status != 429:
            self.result.cannot("over the allowance the target answers " + probe.evidence())
            return
        retry = probe.headers.get("retry-after")
        if retry is None:
            self.result.cannot(
                "its 429 has no Retry-After: " + probe.evidence(),
                {
                    "class": "header-presence",
                    "where": "header retry-after",
                    "status": 429,
                    "reason": "no Retry-After on 429",
                },
            )
        else:
            kind = retry_after_kind(retry)
            if kind == "invalid":
                self.result.cannot(
                    "its Retry-After is unreadable: " + probe.evidence("Retry-After")
                )
            else:
                self.result.set("retry_after", kind, probe.evidence("Retry-After"))
        self._error("rate_limited", probe, 429)

    def _spend_a_minute(self) -> Probe | None:
        """Spend the minute of the key with the least left; the 429 that follows, or None."""
        candidates = [
            (self.prober.remaining[key_alias(k)], k)
            for k in self.keys
            if key_alias(k) in self.prober.remaining
        ]
        if not candidates:
            self.result.unsettled.append("the 429: no key reported its remaining allowance")
            return None
        remaining, key = min(candidates)
        if remaining + 1 > self.prober.left:
            self.result.unsettled.append(
                f"the 429: {key_alias(key)} has {remaining} requests left this window, more "
                f"than the {self.prober.left} left of the budget (raise --budget)"
            )
            return None
        # Until the first 429: if the window rolls over on the way, its count starts again,
        # and the budget (checked by send) is what stops a key that is never refused.
        while True:
            probe = self.prober.send(
                "spend the allowance", "GET", "/pets?limit=1", key=key, spend=True
            )
            if probe is None or probe.error is not None:
                return None
            if probe.status == 429:
                return probe

    # -- turning answers into settings -----------------------------------------

    def _error(self, condition: str, probe: Probe, status: int | None) -> None:
        """The condition's Error code, and a status the format cannot express, if any."""
        if status is not None and probe.status != status:
            own = ERROR_CODES[CONDITIONS[condition].code].status
            self.result.cannot(
                f"{condition} answers {probe.status}, mockstore {own}: {probe.evidence(code=True)}",
                {
                    "class": "status",
                    "where": "status",
                    "status": probe.status,
                    "reason": f"{condition} answers {probe.status}",
                },
            )
        body = probe.json()
        code = probe.code()
        if code is None:
            self.result.cannot(
                f"{condition}: the answer has no Error code: {probe.evidence()}",
                {
                    "class": "body-shape",
                    "where": "body",
                    "status": probe.status,
                    "reason": f"{condition} without an Error body",
                },
            )
            return
        self.result.error_codes[condition] = Setting(code, [probe.evidence(code=True)])
        if isinstance(body, dict):
            for name in sorted(set(body) - {"code", "message", "status"}):
                self.result.cannot(
                    f"{condition}: the Error body carries a field mockstore's has not, {name!r}: "
                    + probe.evidence(code=True),
                    {
                        "class": "body-field",
                        "where": f"body.{name}",
                        "status": probe.status,
                        "reason": f"the {probe.status} Error body carries {name}",
                    },
                )

    def _validation_status(self) -> None:
        found: dict[int, list[Probe]] = {}
        for probe in self.prober.probes:
            condition = probe.what.replace(" ", "_")
            if (
                condition
                in (
                    "invalid_body",
                    "malformed_json",
                    "missing_body",
                    "bad_limit",
                    "bad_status_filter",
                    "bad_pet_id",
                )
                and probe.error is None
            ):
                found.setdefault(probe.status, []).append(probe)
        if not found:
            return
        expressible = {s: p for s, p in found.items() if s in (400, 422)}
        chosen = None
        if expressible:
            chosen = max(expressible, key=lambda s: (len(expressible[s]), s))
            self.result.set(
                "validation_status", chosen, *(p.evidence() for p in expressible[chosen][:3])
            )
        for status, probes in found.items():
            if status == chosen:
                continue
            for probe in probes:
                if status in (400, 422):
                    self.result.cannot(
                        f"{probe.what} answers {status}, other validation failures "
                        f"{chosen}: {probe.evidence()}",
                        {
                            "class": "status",
                            "where": "status",
                            "status": status,
                            "reason": "validation failures answer different statuses",
                        },
                    )
                else:
                    self.result.cannot(
                        f"{probe.what} answers {status} (not 400 or 422): {probe.evidence()}"
                    )


def _is_error(body: Any, status: int) -> bool:
    return (
        isinstance(body, dict)
        and isinstance(body.get("code"), str)
        and isinstance(body.get("message"), str)
        and body.get("status") == status
    )
