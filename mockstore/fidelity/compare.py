"""How ``mockstore drift`` compares a recorded answer with the mock's: semantically, by named rules.

Two runs of one request never agree byte for byte: dates, request ids and
remaining allowances move, and ids and list contents depend on the store the
recording started from, which a proxy cannot see. So each part of an answer
is compared the way a client depends on it:

- by value: the status, the Error ``code``, the plan figures, the deprecation
  dates and ``Link``, the data of a pet the client sent, ``Allow``, the
  ``Content-Type``, ``WWW-Authenticate``, every header whose value the recording
  shows constant;
- by unit and format: ``X-RateLimit-Reset`` (Unix seconds, Unix milliseconds or
  seconds from now), ``Retry-After`` (seconds or HTTP-date), ``Deprecation``
  (RFC 9745 ``@`` date, HTTP-date or ``true``), a request id (its prefix, and a
  counter, UUID or hex digits), ``Location`` (a path or a URL), ``ETag`` (weak
  or strong), structured fields (RFC 8941 syntax), integers;
- by presence: every header but the transport's and the infrastructure's;
- by shape: every body against the OpenAPI document's schema for its status;
  lists also by order, by ``limit`` and by the ``status`` filter.

What is compared by kind rather than by value is noted under the rule that
says so (``RULES``), so a report says what it ignored and why. Each
``Discrepancy`` has a cause (``attribution``): the scenario setting that removes
it (and the value, when the recording shows it), or the reason none can. The
header formats are ``formats``'s, shared with ``calibrate``; the bodies' shapes
are checked by ``conformance``.

Pure functions over recorded and replayed exchanges: no HTTP, no I/O.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from mockstore import schemas
from mockstore.fidelity import attribution, attribution_http, collection_causes
from mockstore.fidelity.attribution import Cause, Context, Exchange
from mockstore.fidelity.conformance import conformance, schema_pointer
from mockstore.fidelity.discrepancy import Discrepancy
from mockstore.fidelity.evidence import RELATIVE_HEADERS
from mockstore.fidelity.formats import (
    allowed_methods,
    auth_challenge,
    decimals,
    deprecation_instant,
    deprecation_kind,
    http_date,
    id_form,
    reset_kind,
    retry_after_kind,
    sf_list,
)
from mockstore.fidelity.listings import link_shape, orders_of, same_shape
from mockstore.fidelity.rebase import relative_to_own
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
    "accepted": "differences the scenario lists under drift.accept: reported, not counted as drift",
    "own-address": "are URLs on the service's own address (the recorded upstream's, the "
    "mock's): compared relative to it, as a path under its base",
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
class Comparison:
    """The discrepancies of one exchange, and what rules compared by kind (rule, what)."""

    differences: list[Discrepancy] = field(default_factory=list)
    ignored: list[tuple[str, str]] = field(default_factory=list)

    def differ(self, kind: str, where: str, recorded: Any, mock: Any, cause: Cause) -> None:
        self.differences.append(
            Discrepancy(
                kind,
                where,
                _shown(recorded),
                _shown(mock),
                cause.setting,
                value=cause.value,
                reason=cause.reason,
            )
        )

    def ignore(self, rule: str, what: str) -> None:
        self.ignored.append((rule, what))


def _shown(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def compare(ex: Exchange, sent_body: Any, recorded: Side, mock: Side, ctx: Context) -> Comparison:
    """Every semantic difference between the recorded answer and the mock's."""
    out = Comparison()
    if recorded.status != mock.status:
        cause = attribution_http.status(ex, ctx) or attribution.status(ex, ctx)
        out.differ("status", "status", recorded.status, mock.status, cause)
        same = ex.recorded_condition == ex.mock_condition and ex.mock_condition is not None
        if not same:
            # Two different answers (a 201 and a 413, a 404 and a 401): their headers and
            # bodies answer different things. One condition answered with another status
            # answers the same thing: the rest is compared.
            return out
    _compare_headers(ex, recorded, mock, ctx, out)
    if ex.method != "HEAD":
        _compare_bodies(ex, sent_body, recorded, mock, ctx, out)
    return out


# Headers under an infrastructure prefix that are a signal to the client, not the
# proxy's bookkeeping: Envoy's rate-limit filter marks each answer it refused with
# x-envoy-ratelimited: true, and clients branch on it (a scenario states it as a header).
_CLIENT_SIGNALS = frozenset({"x-envoy-ratelimited"})


def is_infrastructure(name: str) -> bool:
    if name in _CLIENT_SIGNALS:
        return False
    return name in INFRASTRUCTURE_HEADERS or name.startswith(_INFRASTRUCTURE_PREFIXES)


def _compare_headers(
    ex: Exchange, recorded: Side, mock: Side, ctx: Context, out: Comparison
) -> None:
    for name in sorted(recorded.headers.keys() | mock.headers.keys()):
        if name in TRANSPORT_HEADERS:
            out.ignore("transport", f"header {name}")
            continue
        if is_infrastructure(name):
            out.ignore("infrastructure", f"header {name}")
            continue
        was, now = recorded.header(name), mock.header(name)
        if name in RELATIVE_HEADERS:
            # URLs on the service's own address, relative to it: the recording's upstream
            # and the mock, on whatever hosts and ports, write the same.
            shown = (was, now)
            was = was and relative_to_own(name, was, ctx.recorded_base or ex.own)
            now = now and relative_to_own(name, now, ex.own)
            if (was, now) != shown:
                out.ignore("own-address", f"header {name} (URLs on the service's own address)")
        if was is None or now is None:
            shown_was = f"present ({was})" if was is not None else "absent"
            shown_now = f"present ({now})" if now is not None else "absent"
            out.differ(
                "header-presence",
                f"header {name}",
                shown_was,
                shown_now,
                attribution_http.header_presence(name, ex, was, now, ctx)
                or attribution.header_presence(name, ex, was, now, ctx),
            )
            continue
        _compare_header(name, was, now, ex, ctx, out)


def _compare_header(
    name: str, was: str, now: str, ex: Exchange, ctx: Context, out: Comparison
) -> None:
    where = f"header {name}"

    def differ(kind: str, shown_was: str = was, shown_now: str = now) -> None:
        cause = attribution_http.header_value(name, ex, was, now, ctx) or attribution.header_value(
            name, ex, was, now, ctx
        )
        out.differ(kind, where, shown_was, shown_now, cause)

    if name == "date":
        out.ignore("per-run-values", "header date (compared as an HTTP-date)")
        if (http_date(was) is None) != (http_date(now) is None):
            out.differ("header-format", where, was, now, attribution.cannot("header-format"))
    elif name in ctx.request_ids or name == (ctx.behaviour.request_id.header or "").lower():
        out.ignore("per-run-values", f"header {name} (a request id: compared by its form)")
        if id_form(was) != id_form(now):
            differ("header-format", f"{was} {id_form(was)}", f"{now} {id_form(now)}")
    elif name in ("x-ratelimit-limit", "x-ratelimit-remaining"):
        if not (was.strip().isdigit() and now.strip().isdigit()):
            out.differ("header-format", where, was, now, attribution.cannot("header-format"))
        elif name == "x-ratelimit-limit" and int(was) != int(now):
            differ("header-value")
        elif name == "x-ratelimit-remaining":
            out.ignore("rate-limit-state", "header x-ratelimit-remaining (compared as an integer)")
    elif name == "x-ratelimit-reset":
        out.ignore("rate-limit-state", "header x-ratelimit-reset (compared by unit)")
        if reset_kind(was) != reset_kind(now):
            differ("header-format", f"{was} ({reset_kind(was)})", f"{now} ({reset_kind(now)})")
        elif decimals(was) != decimals(now):  # a client reading a whole number fails on 60.5
            differ("header-format", f"{was} ({decimals(was)} decimals)", f"{now} ({decimals(now)})")
    elif name == "retry-after":
        out.ignore("rate-limit-state", "header retry-after (compared by format)")
        if retry_after_kind(was) != retry_after_kind(now):
            differ(
                "header-format",
                f"{was} ({retry_after_kind(was)})",
                f"{now} ({retry_after_kind(now)})",
            )
    elif name in ("ratelimit", "ratelimit-policy"):
        _compare_structured(name, was, now, ex, ctx, out)
    elif name == "deprecation":
        if deprecation_kind(was) != deprecation_kind(now):
            differ(
                "header-format",
                f"{was} ({deprecation_kind(was)})",
                f"{now} ({deprecation_kind(now)})",
            )
        elif deprecation_instant(was) != deprecation_instant(now):
            differ("header-value")
    elif name == "sunset":
        if (http_date(was) is None) != (http_date(now) is None):
            out.differ("header-format", where, was, now, attribution.cannot("header-format"))
        elif http_date(was) != http_date(now):
            differ("header-value")
    elif name == "allow":
        if allowed_methods(was) != allowed_methods(now):
            head = "HEAD" in allowed_methods(was) ^ allowed_methods(now)
            cause = (
                attribution_http.header_value(name, ex, was, now, ctx)
                or attribution.header_value(name, ex, was, now, ctx)
                if not head
                else attribution.setting(attribution.SERVE_HEAD)
            )
            out.differ("header-value", where, was, now, cause)
    elif name == "content-type":
        if _normal(was).lower() != _normal(now).lower():
            differ("header-value")
    elif name == "www-authenticate":
        if auth_challenge(was) != auth_challenge(now):
            differ("header-value")
    elif name == "location":
        out.ignore("store-dependent", "header location (compared as a path or a URL)")
        if bool(re.match(r"https?://", was)) != bool(re.match(r"https?://", now)):
            differ("header-format")
    elif name == "etag":
        out.ignore("per-run-values", "header etag (compared as weak or strong)")
        if was.strip().startswith("W/") != now.strip().startswith("W/"):
            differ("header-format")
    elif name == "link" and ex.operation == "listPets":
        # A listing's pages: which exist around it depends on the store.
        out.ignore("store-dependent", "header link (compared by relations, URL form, parameter)")
        shapes = link_shape(was), link_shape(now)
        if not same_shape(*shapes):
            cause = collection_causes.link_cause(*shapes, ctx.scenario)
            out.differ("header-value", where, was, now, Cause(*cause))
    elif name == "link":
        if _normal(was) != _normal(now):
            differ("header-value")
    elif name == "last-modified":
        out.ignore("store-dependent", "header last-modified (compared as an HTTP-date)")
        if (http_date(was) is None) != (http_date(now) is None):
            out.differ("header-format", where, was, now, attribution.cannot("header-format"))
    elif name not in ctx.constants or ctx.constants[name] is None:
        out.ignore("per-run-values", f"header {name} (its value changes: compared by presence)")
    elif was != now:
        differ("header-value")


def _normal(value: str) -> str:
    return re.sub(r"\s+", "", value)


def _compare_structured(
    name: str, was: str, now: str, ex: Exchange, ctx: Context, out: Comparison
) -> None:
    where = f"header {name}"
    before, after = sf_list(was), sf_list(now)
    if (before is None) != (after is None):
        out.differ(
            "header-format",
            where,
            f"{was} (structured field: {before is not None})",
            f"{now} (structured field: {after is not None})",
            attribution.cannot("header-format"),
        )
        return
    if before is None or after is None:
        return
    if name == "ratelimit":
        out.ignore("rate-limit-state", "header ratelimit r and t (compared by syntax)")
        shape = [(item, sorted(params)) for item, params in before]
        if shape != [(item, sorted(params)) for item, params in after]:
            out.differ("header-format", where, was, now, attribution.draft_shape(was, now, ctx))
    elif before != after:
        out.differ(
            "header-value", where, was, now, attribution.header_value(name, ex, was, now, ctx)
        )


# -- bodies -----------------------------------------------------------------------


def _compare_bodies(
    ex: Exchange, sent_body: Any, recorded: Side, mock: Side, ctx: Context, out: Comparison
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
            attribution.cannot("error-body-shape")
            if recorded.status >= 400
            else attribution.cannot("unexplained"),
        )
        return
    if not was_json:
        return
    pointer = schema_pointer(ex.operation, recorded.status)
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
                attribution.cannot("error-body-shape" if recorded.status >= 400 else "pet-fields"),
            )
    if isinstance(was, dict) and isinstance(now, dict):
        if recorded.status >= 400 and mock.status >= 400:
            _compare_errors(ex, recorded, mock, was, now, ctx, out)
        elif ex.operation in ("createPet", "getPet"):
            _compare_pet(sent_body, was, now, out, ctx)
    elif isinstance(was, list) and isinstance(now, list) and ex.operation == "listPets":
        _compare_lists(ex, was, now, ctx, out)


def _compare_errors(
    ex: Exchange,
    recorded: Side,
    mock: Side,
    was: dict[str, Any],
    now: dict[str, Any],
    ctx: Context,
    out: Comparison,
) -> None:
    if was.get("code") != now.get("code"):
        out.differ(
            "error-code",
            "body.code",
            was.get("code"),
            now.get("code"),
            attribution.error_code(ex, was.get("code"), ctx),
        )
    if (was.get("status") == recorded.status) != (now.get("status") == mock.status):
        out.differ(
            "body-field",
            "body.status",
            was.get("status"),
            now.get("status"),
            attribution.cannot("error-status-field"),
        )
    if "message" in was and "message" in now:
        out.ignore("per-run-values", "Error message wording (compared as a string)")
        if isinstance(was["message"], str) != isinstance(now["message"], str):
            out.differ(
                "body-field",
                "body.message",
                was["message"],
                now["message"],
                attribution.cannot("message-type"),
            )
    request_id = next(
        (recorded.header(name) for name in ctx.request_ids if recorded.header(name)), None
    )
    for name in sorted((was.keys() | now.keys()) - {"code", "message", "status"}):
        if (name in was) != (name in now):
            out.differ(
                "body-field",
                f"body.{name}",
                "present" if name in was else "absent",
                "present" if name in now else "absent",
                attribution.error_field(name, ex, was.get(name), name in was, request_id, ctx),
            )
        else:
            out.ignore(
                "per-run-values",
                "Error fields beyond code, message and status (compared by presence)",
            )


def _compare_pet(
    sent_body: Any, was: dict[str, Any], now: dict[str, Any], out: Comparison, ctx: Context
) -> None:
    out.ignore("store-dependent", "pet ids (compared as integers)")
    sent = sent_body if isinstance(sent_body, dict) else {}
    for name in sorted((was.keys() | now.keys()) - {"id"}):
        cause = attribution.pet_field(name, sent, was.get(name), _PET_FIELDS)
        if name == "status" and name not in was and ctx.read_default is not None:
            # The 201 leaves the default out; the recording reads it later.
            cause = Cause(collection_causes.APPLIED, ("read",))
        elif cause.setting is not None:
            cause = Cause(collection_causes.spelled(cause.setting, ctx.scenario), cause.value)
        if (name in was) != (name in now):
            out.differ(
                "body-field",
                f"body.{name}",
                json.dumps(was[name]) if name in was else "absent",
                json.dumps(now[name]) if name in now else "absent",
                cause,
            )
        elif was[name] != now[name]:
            out.differ("body-field", f"body.{name}", was[name], now[name], cause)
    if isinstance(was.get("id"), int) != isinstance(now.get("id"), int):
        out.differ(
            "body-field", "body.id", was.get("id"), now.get("id"), attribution.cannot("pet-fields")
        )


def _order(items: list[Any], mapped: dict[int, int] | None = None) -> str:
    ids = [item.get("id") for item in items if isinstance(item, dict)]
    if mapped:
        # The provider's ids of pets created during the recording, as the mock gave them.
        ids = [mapped.get(i, i) if isinstance(i, int) else i for i in ids]
    if len(ids) < 2 or not all(isinstance(i, int) for i in ids):
        return "any"
    if ids == sorted(ids):
        return "ascending id"
    if ids == sorted(ids, reverse=True):
        return "descending id"
    return "unordered"


def _compare_lists(
    ex: Exchange, was: list[Any], now: list[Any], ctx: Context, out: Comparison
) -> None:
    out.ignore("store-dependent", "list contents and lengths (compared by shape)")
    order_was, order_now = _order(was, ctx.ids), _order(now)
    if "any" not in (order_was, order_now) and order_was != order_now:
        mapped = [
            {**p, "id": ctx.ids.get(p["id"], p["id"])} if isinstance(p, dict) and "id" in p else p
            for p in was
        ]
        candidates = orders_of(mapped)
        by_field = order_was == "unordered" or order_now == "unordered"
        if not (by_field and candidates & orders_of(now)):
            # In no order both listings agree with (by a field, ties by id).
            cause = (
                Cause(*collection_causes.order_cause(candidates, ctx.scenario))
                if candidates and (by_field or ctx.scenario.collections.order.by != "id")
                else attribution.list_order(order_was)
            )
            out.differ("list-order", "list order", order_was, order_now, cause)
    limit = _LIST_LIMIT_DEFAULT
    raw = ex.facts.query.get("limit")
    if raw and raw[0].isdigit():
        limit = int(raw[0])
    if (len(was) <= limit) != (len(now) <= limit):
        out.differ(
            "list-limit",
            "list length",
            f"{len(was)} (limit {limit})",
            f"{len(now)} (limit {limit})",
            attribution.list_limit(ex.facts),
        )
    wanted = ex.facts.query.get("status")
    if wanted:
        kept_was = all(isinstance(p, dict) and p.get("status") == wanted[0] for p in was)
        kept_now = all(isinstance(p, dict) and p.get("status") == wanted[0] for p in now)
        if kept_was != kept_now:
            out.differ(
                "list-filter",
                "list status filter",
                "honoured" if kept_was else "not honoured",
                "honoured" if kept_now else "not honoured",
                attribution.cannot("list-filter"),
            )
