"""How ``mockstore drift`` compares a recorded answer with the mock's: semantically, by named rules.

Two runs of one request never agree byte for byte: dates, request ids and
remaining allowances move, and ids and list contents depend on the store the
recording started from, which a proxy cannot see. So each part of an answer
is compared the way a client depends on it:

- by value: the status, the Error ``code``, the plan figures, the deprecation
  dates, the data of a pet the client sent, ``Allow``, the media type;
- by format: ``X-RateLimit-Reset`` (Unix time or seconds from now),
  ``Retry-After`` (seconds or HTTP-date), ``Deprecation`` (RFC 9745 ``@`` date,
  HTTP-date or ``true``), structured fields (RFC 8941 syntax), integers;
- by presence: every header but the transport's and the infrastructure's;
- by shape: every body against the OpenAPI document's schema for its status;
  lists also by order, by ``limit`` and by the ``status`` filter.

What is compared by kind rather than by value is noted under the rule that
says so (``RULES``), so a report says what it ignored and why. Each
``Discrepancy`` names the scenario setting that decides it (``setting``, see
``attribution``), when one does. The header formats are ``formats``'s, shared
with ``calibrate``; the bodies' shapes are checked by ``conformance``.

Pure functions over recorded and replayed exchanges: no HTTP, no I/O.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from mockstore import schemas
from mockstore.fidelity import attribution
from mockstore.fidelity.conformance import conformance, schema_pointer
from mockstore.fidelity.formats import (
    allowed_methods,
    auth_challenge,
    deprecation_instant,
    deprecation_kind,
    http_date,
    media_type,
    reset_kind,
    retry_after_kind,
    sf_list,
)
from mockstore.validation import loads_bounded

# The kinds of difference, as ``drift.accept`` entries name them.
CLASSES = (
    "status",
    "header-presence",
    "header-format",
    "header-value",
    "error-code",
    "body-shape",
    "body-field",
    "list-order",
    "list-limit",
    "list-filter",
    "connection",
)

# The rules that compare something by kind rather than by value, or not at all.
RULES: dict[str, str] = {
    "per-run-values": "differ between any two runs (dates, request ids, Error messages): "
    "compared by kind",
    "store-dependent": "depend on the store the recording started from, which a proxy "
    "cannot see (pet ids, list contents): compared by kind",
    "rate-limit-state": "depend on the allowance spent before each request (remaining "
    "counts, the instants of resets): compared by format",
    "transport": "belong to the connection, not the answer (the body is compared "
    "decoded): not compared",
    "infrastructure": "are added by servers, proxies and CDNs in front of the service: "
    "not compared",
    "auth-realm": "WWW-Authenticate parameters other than the scheme and error are "
    "informative: not compared",
    "accepted": "differences the scenario lists under drift.accept (the format cannot "
    "express them): reported, not counted as drift",
}

TRANSPORT_HEADERS = frozenset(
    {
        "content-length",
        "transfer-encoding",
        "connection",
        "keep-alive",
        "content-encoding",
        "vary",
        "accept-ranges",
    }
)
INFRASTRUCTURE_HEADERS = frozenset(
    {
        "server",
        "via",
        "alt-svc",
        "strict-transport-security",
        "x-powered-by",
        "age",
        "x-cache",
        "x-cache-hits",
        "x-served-by",
        "x-timer",
        "report-to",
        "nel",
        "cf-ray",
        "cf-cache-status",
        "x-amz-cf-id",
        "x-amz-cf-pop",
        "x-amzn-trace-id",
        "x-envoy-upstream-service-time",
    }
)
_INFRASTRUCTURE_PREFIXES = ("cf-", "x-amz-", "x-envoy-", "x-azure-", "x-goog-")

_PET_FIELDS = frozenset(schemas.object_fields("Pet"))
_OPERATIONS = schemas.operations()
_LIST_LIMIT_DEFAULT = next(
    p.default for p in _OPERATIONS["listPets"].parameters if p.name == "limit"
)


# -- one exchange ---------------------------------------------------------------


@dataclass
class Side:
    """One answer to compare: what the recording shows, or what the mock sent."""

    status: int
    headers: dict[str, list[str]]
    body: bytes
    truncated: bool = False

    def header(self, name: str) -> str | None:
        values = self.headers.get(name)
        return values[0] if values else None

    def json(self) -> tuple[bool, Any]:
        try:
            return True, loads_bounded(self.body)
        except ValueError:
            return False, None


@dataclass
class Request:
    """What was asked, as the rules need it."""

    method: str
    path: str
    query: dict[str, list[str]]
    operation: str | None
    sent_body: Any
    has_authorization: bool


@dataclass
class Discrepancy:
    """One semantic difference between a recorded answer and the mock's.

    ``kind`` is one of ``CLASSES``, ``where`` the part of the answer, ``setting``
    the scenario setting that decides it (None when none does). ``compare``
    fills those; ``drift`` adds the exchange that shows it (``entry`` onwards).
    """

    kind: str
    where: str
    recorded: str
    mock: str
    setting: str | None = None
    entry: int = 0  # 1-based position in the HAR
    request: str = ""
    request_id: str | None = None
    key: str | None = None
    operation: str | None = None
    status: int = 0  # the recorded status
    accepted_by: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "entry": self.entry,
            "request": self.request,
            "request_id": self.request_id,
            "key": self.key,
            "operation": self.operation,
            "status": self.status,
            "kind": self.kind,
            "where": self.where,
            "recorded": self.recorded,
            "mock": self.mock,
            "setting": self.setting,
            "accepted_by": self.accepted_by,
        }


@dataclass
class Comparison:
    """The discrepancies of one exchange, and what rules compared by kind (rule, what)."""

    differences: list[Discrepancy] = field(default_factory=list)
    ignored: list[tuple[str, str]] = field(default_factory=list)

    def differ(
        self, kind: str, where: str, recorded: Any, mock: Any, setting: str | None = None
    ) -> None:
        self.differences.append(Discrepancy(kind, where, _shown(recorded), _shown(mock), setting))

    def ignore(self, rule: str, what: str) -> None:
        self.ignored.append((rule, what))


def _shown(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def compare(
    request: Request, recorded: Side, mock: Side, error_codes: dict[str, str]
) -> Comparison:
    """Every semantic difference between the recorded answer and the mock's."""
    out = Comparison()
    if recorded.status != mock.status:
        setting = attribution.status_setting(request.method, recorded.status, mock.status)
        out.differ("status", "status", recorded.status, mock.status, setting)
        if setting != attribution.VALIDATION_STATUS:
            # Two different answers (a 201 and a 413, a 404 and a 401): their headers and
            # bodies answer different things. Only 400 and 422 answer the same thing.
            return out
    _compare_headers(request, recorded, mock, out)
    if request.method != "HEAD":
        _compare_bodies(request, recorded, mock, error_codes, out)
    return out


def is_infrastructure(name: str) -> bool:
    return name in INFRASTRUCTURE_HEADERS or name.startswith(_INFRASTRUCTURE_PREFIXES)


def _compare_headers(request: Request, recorded: Side, mock: Side, out: Comparison) -> None:
    for name in sorted(recorded.headers.keys() | mock.headers.keys()):
        if name in TRANSPORT_HEADERS:
            out.ignore("transport", f"header {name}")
            continue
        if is_infrastructure(name):
            out.ignore("infrastructure", f"header {name}")
            continue
        was, now = recorded.header(name), mock.header(name)
        if was is None or now is None:
            shown_was = f"present ({was})" if was is not None else "absent"
            shown_now = f"present ({now})" if now is not None else "absent"
            out.differ(
                "header-presence",
                f"header {name}",
                shown_was,
                shown_now,
                attribution.header_setting(name),
            )
            continue
        _compare_header(name, was, now, request, out)


def _compare_header(name: str, was: str, now: str, request: Request, out: Comparison) -> None:
    where = f"header {name}"
    if name == "date":
        out.ignore("per-run-values", "header date (compared as an HTTP-date)")
        if (http_date(was) is None) != (http_date(now) is None):
            out.differ("header-format", where, was, now)
    elif name == "x-request-id":
        out.ignore("per-run-values", "header x-request-id (compared by presence)")
    elif name in ("x-ratelimit-limit", "x-ratelimit-remaining"):
        if not (was.strip().isdigit() and now.strip().isdigit()):
            out.differ("header-format", where, was, now)
        elif name == "x-ratelimit-limit" and int(was) != int(now):
            out.differ("header-value", where, was, now, attribution.PLAN)
        elif name == "x-ratelimit-remaining":
            out.ignore("rate-limit-state", "header x-ratelimit-remaining (compared as an integer)")
    elif name == "x-ratelimit-reset":
        out.ignore("rate-limit-state", "header x-ratelimit-reset (compared by format)")
        if reset_kind(was) != reset_kind(now):
            out.differ(
                "header-format",
                where,
                f"{was} ({reset_kind(was)})",
                f"{now} ({reset_kind(now)})",
                attribution.RATELIMIT_RESET,
            )
    elif name == "retry-after":
        out.ignore("rate-limit-state", "header retry-after (compared by format)")
        if retry_after_kind(was) != retry_after_kind(now):
            out.differ(
                "header-format",
                where,
                f"{was} ({retry_after_kind(was)})",
                f"{now} ({retry_after_kind(now)})",
                attribution.RETRY_AFTER,
            )
    elif name in ("ratelimit", "ratelimit-policy"):
        _compare_structured(name, was, now, out)
    elif name == "deprecation":
        if deprecation_kind(was) != deprecation_kind(now):
            out.differ(
                "header-format",
                where,
                f"{was} ({deprecation_kind(was)})",
                f"{now} ({deprecation_kind(now)})",
            )
        elif deprecation_instant(was) != deprecation_instant(now):
            out.differ("header-value", where, was, now, attribution.DEPRECATED_SINCE)
    elif name == "sunset":
        if (http_date(was) is None) != (http_date(now) is None):
            out.differ("header-format", where, was, now)
        elif http_date(was) != http_date(now):
            out.differ("header-value", where, was, now, attribution.SUNSET)
    elif name == "allow":
        if allowed_methods(was) != allowed_methods(now):
            head = "HEAD" in allowed_methods(was) ^ allowed_methods(now)
            out.differ("header-value", where, was, now, attribution.SERVE_HEAD if head else None)
    elif name == "content-type":
        if media_type(was) != media_type(now):
            out.differ("header-value", where, was, now)
    elif name == "www-authenticate":
        out.ignore("auth-realm", "header www-authenticate (scheme and error compared)")
        if auth_challenge(was) != auth_challenge(now):
            out.differ("header-value", where, was, now)
    elif name == "link":
        if _normal(was) != _normal(now):
            out.differ("header-value", where, was, now)
    elif was != now:
        out.differ("header-value", where, was, now)


def _normal(value: str) -> str:
    return re.sub(r"\s+", "", value)


def _compare_structured(name: str, was: str, now: str, out: Comparison) -> None:
    where = f"header {name}"
    before, after = sf_list(was), sf_list(now)
    if (before is None) != (after is None):
        out.differ(
            "header-format",
            where,
            f"{was} (structured field: {before is not None})",
            f"{now} (structured field: {after is not None})",
        )
        return
    if before is None or after is None:
        return
    if name == "ratelimit":
        out.ignore("rate-limit-state", "header ratelimit r and t (compared by syntax)")
        shape = [(item, sorted(params)) for item, params in before]
        if shape != [(item, sorted(params)) for item, params in after]:
            out.differ("header-format", where, was, now, attribution.RATELIMIT_DRAFT)
    elif before != after:
        out.differ("header-value", where, was, now, attribution.PLAN)


# -- bodies -----------------------------------------------------------------------


def _compare_bodies(
    request: Request, recorded: Side, mock: Side, error_codes: dict[str, str], out: Comparison
) -> None:
    if recorded.truncated:
        out.ignore("transport", "bodies the recording cut short (journal body_bytes)")
        return
    if not recorded.body and not mock.body:
        return
    was_json, was = recorded.json()
    now_json, now = mock.json()
    if was_json != now_json:
        out.differ(
            "body-shape",
            "body",
            "JSON" if was_json else f"not JSON ({recorded.body[:60]!r})",
            "JSON" if now_json else f"not JSON ({mock.body[:60]!r})",
        )
        return
    if not was_json:
        return
    pointer = schema_pointer(request.operation, recorded.status)
    if pointer is not None and recorded.status == mock.status:
        before = conformance(pointer, recorded.body, was)
        after = conformance(pointer, mock.body, now)
        if (before is None) != (after is None):
            schema = pointer.rsplit("/", 1)[-1]
            out.differ(
                "body-shape",
                "body",
                f"{'matches' if before is None else 'does not match'} {schema}"
                + (f": {before}" if before else ""),
                f"{'matches' if after is None else 'does not match'} {schema}"
                + (f": {after}" if after else ""),
            )
    if isinstance(was, dict) and isinstance(now, dict):
        if recorded.status >= 400 and mock.status >= 400:
            _compare_errors(request, recorded, mock, was, now, error_codes, out)
        elif request.operation in ("createPet", "getPet"):
            _compare_pet(request, was, now, out)
    elif isinstance(was, list) and isinstance(now, list) and request.operation == "listPets":
        _compare_lists(request, was, now, out)


def _compare_errors(
    request: Request,
    recorded: Side,
    mock: Side,
    was: dict[str, Any],
    now: dict[str, Any],
    error_codes: dict[str, str],
    out: Comparison,
) -> None:
    if was.get("code") != now.get("code"):
        condition = attribution.condition_of(
            request.operation, request.has_authorization, mock.status, now, error_codes
        )
        setting = attribution.error_code_setting(condition)
        out.differ("error-code", "body.code", was.get("code"), now.get("code"), setting)
    if (was.get("status") == recorded.status) != (now.get("status") == mock.status):
        out.differ("body-field", "body.status", was.get("status"), now.get("status"))
    if "message" in was and "message" in now:
        out.ignore("per-run-values", "Error message wording (compared as a string)")
        if isinstance(was["message"], str) != isinstance(now["message"], str):
            out.differ("body-field", "body.message", was["message"], now["message"])
    for name in sorted((was.keys() | now.keys()) - {"code", "message", "status"}):
        if (name in was) != (name in now):
            out.differ(
                "body-field",
                f"body.{name}",
                "present" if name in was else "absent",
                "present" if name in now else "absent",
            )


def _compare_pet(
    request: Request, was: dict[str, Any], now: dict[str, Any], out: Comparison
) -> None:
    out.ignore("store-dependent", "pet ids (compared as integers)")
    sent = request.sent_body if isinstance(request.sent_body, dict) else {}
    for name in sorted((was.keys() | now.keys()) - {"id"}):
        if name == "status" and "status" not in sent:
            setting: str | None = attribution.DEFAULT_STATUS
        elif name not in _PET_FIELDS:
            setting = attribution.UNKNOWN_FIELDS
        else:
            setting = None
        if (name in was) != (name in now):
            out.differ(
                "body-field",
                f"body.{name}",
                json.dumps(was[name]) if name in was else "absent",
                json.dumps(now[name]) if name in now else "absent",
                setting,
            )
        elif was[name] != now[name]:
            out.differ("body-field", f"body.{name}", was[name], now[name], setting)
    if isinstance(was.get("id"), int) != isinstance(now.get("id"), int):
        out.differ("body-field", "body.id", was.get("id"), now.get("id"))


def _order(items: list[Any]) -> str:
    ids = [item.get("id") for item in items if isinstance(item, dict)]
    if len(ids) < 2 or not all(isinstance(i, int) for i in ids):
        return "any"
    if ids == sorted(ids):
        return "ascending id"
    if ids == sorted(ids, reverse=True):
        return "descending id"
    return "unordered"


def _compare_lists(request: Request, was: list[Any], now: list[Any], out: Comparison) -> None:
    out.ignore("store-dependent", "list contents and lengths (compared by shape)")
    order_was, order_now = _order(was), _order(now)
    if "any" not in (order_was, order_now) and order_was != order_now:
        out.differ("list-order", "list order", order_was, order_now)
    limit = _LIST_LIMIT_DEFAULT
    raw = request.query.get("limit")
    if raw and raw[0].isdigit():
        limit = int(raw[0])
    if (len(was) <= limit) != (len(now) <= limit):
        out.differ(
            "list-limit",
            "list length",
            f"{len(was)} (limit {limit})",
            f"{len(now)} (limit {limit})",
        )
    wanted = request.query.get("status")
    if wanted:
        kept_was = all(isinstance(p, dict) and p.get("status") == wanted[0] for p in was)
        kept_now = all(isinstance(p, dict) and p.get("status") == wanted[0] for p in now)
        if kept_was != kept_now:
            out.differ(
                "list-filter",
                "list status filter",
                "honoured" if kept_was else "not honoured",
                "honoured" if kept_now else "not honoured",
            )
