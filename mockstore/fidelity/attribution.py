"""Why a difference ``drift`` finds exists: the setting that removes it, or why none can.

Every difference has a cause (``Cause``): a scenario ``setting`` (named as the
schema names it, ``behaviour.error_codes.bad_limit``), with the value that
removes it when the recording shows it (``set_to``); or a ``reason`` why the
scenario format cannot express it, one of ``NOT_EXPRESSIBLE`` (the docs'
Fidelity page lists them, from this table). ``drift`` adds a third, ``accepted``,
for a difference a scenario's ``drift.accept`` rule hides.

Every setting named here is checked against the scenario schema when this
module loads (``_named``): drift cannot name a setting the scenario format does
not have. The functions read the request's ``Facts`` and its recorded condition
(``evidence``), the mock's answer and the scenario; they are pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from mockstore.clock import format_time
from mockstore.errors import VALIDATION_CONDITIONS
from mockstore.fidelity import collection_causes, rate_advice, reasons
from mockstore.fidelity.conditions import Facts
from mockstore.fidelity.evidence import Seen
from mockstore.fidelity.formats import (
    deprecation_instant,
    deprecation_kind,
    http_date,
    id_form,
    reset_kind,
    retry_after_kind,
)
from mockstore.fidelity.listings import link_shape, repeated_choice
from mockstore.fidelity.rebase import Base
from mockstore.ratelimit import Plan
from mockstore.scenario import Scenario, scenario_schema
from mockstore.scenario.model import HEAD_OPERATIONS, Behaviour

# Every reason a difference can have no setting (``reasons``), re-exported: a difference's
# reason is a key of it.
NOT_EXPRESSIBLE = reasons.NOT_EXPRESSIBLE


@dataclass(frozen=True)
class Cause:
    """A difference's cause: ``setting`` (and ``value``, which removes it), or a ``reason``.

    ``value`` is empty when drift cannot tell the value, else a 1-tuple (a value
    may be null). ``reason`` is a key of ``NOT_EXPRESSIBLE``.
    """

    setting: str | None = None
    value: tuple[Any, ...] = ()
    reason: str | None = None

    def __post_init__(self) -> None:
        assert (self.setting is None) != (self.reason is None), "a setting or a reason"
        assert self.reason is None or self.reason in NOT_EXPRESSIBLE, self.reason


def setting(name: str, *value: Any) -> Cause:
    """The setting ``name`` decides it; ``value`` (if given) removes it."""
    assert len(value) <= 1
    return Cause(name, tuple(value))


def cannot(reason: str) -> Cause:
    """No setting can: ``reason`` (a key of ``NOT_EXPRESSIBLE``) says why."""
    return Cause(reason=reason)


# -- the settings drift names ---------------------------------------------------------


def _in_schema(path: str) -> bool:
    """True when ``path`` (``behaviour.serve_head``, ``keys[].plan``) is a scenario setting."""
    node: Any = scenario_schema()
    for part in path.split("."):
        many = part.endswith("[]")
        node = (node.get("properties") or {}).get(part.removesuffix("[]"))
        if node is None:
            return False
        if many:
            node = node.get("items", {})
    return True


def _named(path: str) -> str:
    """``path``, once it is known to be one of the scenario schema's settings."""
    if not _in_schema(path):
        raise LookupError(f"drift names {path!r}, which the scenario schema does not have")
    return path


# For the modules that name settings of their own sections (``attribution_http``).
named = _named


def _each(section: str) -> dict[str, str]:
    """``behaviour.<section>.<entry>`` for every entry the schema lists."""
    entries = scenario_schema()["properties"]["behaviour"]["properties"][section]["properties"]
    return {name: _named(f"behaviour.{section}.{name}") for name in entries}


VALIDATION_STATUS = _named("behaviour.validation_status")
SERVE_HEAD = _named("behaviour.serve_head")
PATH_CHECK = _named("behaviour.path_check")
MAX_BODY_BYTES = _named("behaviour.max_body_bytes")
AFTER_SUNSET = _named("behaviour.after_sunset")
KEY_PLAN = _named("keys[].plan")
ANONYMOUS_PLAN = _named("anonymous_plan")
KEYS = _named("keys")
PETS = _named("pets")
ROUTES = _named("routes")
RATELIMIT_RESET = _named("behaviour.ratelimit_reset")
RATELIMIT_WINDOWS = _named("behaviour.ratelimit_windows")
RATELIMIT_DESCRIBES = _named("behaviour.ratelimit_describes")
RATELIMIT_DESCRIBES_REFUSALS = _named("behaviour.ratelimit_describes_refusals")
RETRY_AFTER = _named("behaviour.retry_after")
RETRY_AFTER_BANNED = _named("behaviour.retry_after_banned")
RATELIMIT_DRAFT = _named("behaviour.ratelimit_draft_headers")
DEPRECATED_SINCE = _named("behaviour.deprecated_since")
SUNSET = _named("behaviour.sunset")
DEPRECATION_FORMAT = _named("behaviour.deprecation_format")
SUNSET_HEADER = _named("behaviour.sunset_header")
DEPRECATION_LINK = _named("behaviour.deprecation_link")
DEPRECATION_ON = _named("behaviour.deprecation_on")
DEFAULT_STATUS = _named("behaviour.default_status")
UNKNOWN_FIELDS = _named("behaviour.unknown_fields")
LIMIT_ABOVE_MAXIMUM = _named("behaviour.limit_above_maximum")
REPEATED_PARAMETERS = _named("collections.repeated_parameters")
LIST_ORDER = _named("behaviour.list_order")
CONTENT_TYPE = _named("behaviour.content_type")
HEADERS = _named("behaviour.headers")
LOCATION = _named("behaviour.location")
ERROR_FIELDS = _named("behaviour.error_fields")
BAN_AFTER = _named("ban.after_rejections")
BAN_TRIGGER = _named("ban.trigger")
BAN_STATUS = _named("ban.status")
BAN_DURATION = _named("ban.duration_seconds")
BAN_ENABLED = _named("ban.enabled")
ERROR_CODE = _each("error_codes")
ERROR_STATUS = _each("error_statuses")
WWW_AUTHENTICATE = _each("www_authenticate")
REQUEST_ID = _each("request_id")
ETAG = _each("etag")

# Every setting drift can name, for a reader (and a test) to see at once.
SETTINGS: tuple[str, ...] = (
    VALIDATION_STATUS,
    SERVE_HEAD,
    PATH_CHECK,
    MAX_BODY_BYTES,
    AFTER_SUNSET,
    KEY_PLAN,
    ANONYMOUS_PLAN,
    KEYS,
    PETS,
    ROUTES,
    RATELIMIT_RESET,
    RATELIMIT_WINDOWS,
    RATELIMIT_DESCRIBES,
    RATELIMIT_DESCRIBES_REFUSALS,
    RETRY_AFTER,
    RETRY_AFTER_BANNED,
    RATELIMIT_DRAFT,
    DEPRECATED_SINCE,
    SUNSET,
    DEPRECATION_FORMAT,
    SUNSET_HEADER,
    DEPRECATION_LINK,
    DEPRECATION_ON,
    DEFAULT_STATUS,
    UNKNOWN_FIELDS,
    LIMIT_ABOVE_MAXIMUM,
    LIST_ORDER,
    CONTENT_TYPE,
    HEADERS,
    LOCATION,
    ERROR_FIELDS,
    BAN_AFTER,
    BAN_TRIGGER,
    BAN_STATUS,
    BAN_DURATION,
    BAN_ENABLED,
    *ERROR_CODE.values(),
    *ERROR_STATUS.values(),
    *WWW_AUTHENTICATE.values(),
    *REQUEST_ID.values(),
    *ETAG.values(),
    *collection_causes.SETTINGS,
)

AUTH_CONDITIONS = ("missing_key", "malformed_authorization", "unknown_key")
# Header names that carry rate-limit figures (they change with time and traffic).
_RATE_FIGURE = re.compile(r"rate-?limit|-remaining$|-reset$|retry", re.IGNORECASE)
RATE_CONDITIONS = ("rate_limited", "key_banned")


# -- what drift knows when it attributes ------------------------------------------


@dataclass
class Context:
    """What attribution reads beyond one exchange: the scenario, and the whole recording.

    ``constants`` maps each header name the recording shows (lower case) to its
    one value, or None where its value changes from answer to answer;
    ``names`` keeps each name as the recording spells it; ``rules`` maps a name
    rules can reproduce to the ``behaviour.headers`` rule for each (operation,
    status) that carries it. ``deprecation_seen`` says whether any recorded getPet
    answer carried a Deprecation header.
    """

    scenario: Scenario
    constants: dict[str, str | None] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)
    rules: dict[str, dict[tuple[str | None, int], dict[str, Any]]] = field(default_factory=dict)
    deprecation_seen: bool = False
    request_ids: frozenset[str] = frozenset()  # header names that carry an id per answer
    # The statuses the recording's validation refusals have (one: validation_status decides).
    validation_statuses: frozenset[int] = frozenset()
    # Pet ids the provider gave pets created during the recording -> the mock's.
    ids: dict[int, int] = field(default_factory=dict)
    # The header that says a listing's total (lower case), and the default status that
    # the recording's 201s leave out and later reads show (collections).
    total_header: str | None = None
    read_default: str | None = None
    # Conditions the recording answers more than one way (status or code).
    split: frozenset[str] = frozenset()
    # Where the recorded service's own URLs start (``mockstore record``'s upstream).
    recorded_base: Base | None = None

    @property
    def behaviour(self) -> Behaviour:
        return self.scenario.behaviour


@dataclass
class Exchange:
    """One exchange as attribution reads it: the request's facts, both answers, the caller."""

    method: str
    facts: Facts
    recorded_condition: str | None  # from evidence: what the recorded answer stands for
    mock_condition: str | None
    recorded_status: int
    mock_status: int
    plan: Plan | None = None  # the caller's plan in the scenario
    key: str | None = None  # the scenario key the caller used, if any
    authenticated: bool = False  # the caller's key is valid (upstream and mock)
    run_position: int = 0  # 1-based place in a run of rate refusals (0: not in one)
    run_length: int = 0  # the allowance's refusals in that run, before any ban
    ban_after: int | None = None  # ... when a ban ended the run
    # What the recorded answer's instants were written ahead of its service time: a
    # mock recorded with ``clock.headers: wall`` writes them on the wall clock (0 for
    # a real provider, whose service time is the wall's).
    header_offset: float = 0.0
    recorded_limit: str | None = None  # the recorded answer's X-RateLimit-Limit
    # The recorded answer's headers (lower-case names): what a limiter's header belongs to.
    recorded_headers: dict[str, str] = field(default_factory=dict)
    # The recorded exchange itself (its request's headers, its answer's), for the
    # settings of HTTP semantics (``attribution_http``); and the mock's Error code.
    seen: Any = None
    mock_code: str | None = None
    # The address the client called (its Host): where the mock writes its own URLs.
    own: Base | None = None
    recorded_body: Any = None  # the recorded answer's JSON body, if it had one

    @property
    def operation(self) -> str | None:
        return self.facts.operation


def condition_of_answer(
    facts: Facts, status: int, code: str | None, behaviour: Behaviour, ban_status: int | None
) -> str | None:
    """Which condition the mock's answer stands for (None for an answer refusing nothing)."""
    if status < 400:
        return None
    codes = dict(behaviour.error_codes)
    candidates = [name for name, given in codes.items() if given == code]
    if not candidates:
        return None
    if len(candidates) == 1:
        return candidates[0]
    if status == 401:
        auth = {"missing": "missing_key", "malformed": "malformed_authorization"}
        wanted = auth.get(facts.auth, "unknown_key")
        if wanted in candidates:
            return wanted
    if facts.route in candidates:
        return facts.route
    for problem in facts.problems:
        if problem in candidates:
            return problem
    if "key_banned" in candidates and "rate_limited" in candidates:
        # One code for both: a ban with a status of its own shows which it is.
        return "key_banned" if status == ban_status and status != 429 else "rate_limited"
    if facts.operation == "getPet" and "pet_not_found" in candidates:
        return "pet_not_found"
    return candidates[0]


# -- status --------------------------------------------------------------------------


def status(ex: Exchange, ctx: Context) -> Cause:
    """The setting behind a status difference."""
    rc, mc = ex.recorded_condition, ex.mock_condition
    was = ex.recorded_status
    facts = ex.facts
    behaviour = ctx.behaviour
    if (
        ex.method == "HEAD"
        and "method_not_allowed" in (rc, mc)
        and rc != mc
        and facts.operation in HEAD_OPERATIONS
    ):
        served = set(behaviour.serve_head)
        if rc == "method_not_allowed":
            served.discard(facts.operation)
        else:
            served.add(facts.operation)
        return setting(SERVE_HEAD, _head_value(served))
    if rc in AUTH_CONDITIONS and mc in ("unknown_path", "method_not_allowed"):
        return setting(PATH_CHECK, "after_auth")
    if mc in AUTH_CONDITIONS and rc in ("unknown_path", "method_not_allowed"):
        return setting(PATH_CHECK, "before_auth")
    if rc == mc and rc in ctx.split and rc not in RATE_CONDITIONS:
        return cannot("split-condition")
    if rc == mc and rc is not None and rc != "unexplained":
        if rc == "key_banned":
            return setting(BAN_STATUS, was)
        if (
            rc in VALIDATION_CONDITIONS
            and ctx.validation_statuses == {was}
            and rc not in dict(behaviour.error_statuses)
        ):
            return setting(VALIDATION_STATUS, was)
        if rc in ERROR_STATUS:
            return setting(ERROR_STATUS[rc], was)
    if rc in RATE_CONDITIONS or mc in RATE_CONDITIONS:
        return _allowance(ex, ctx)
    if mc == "payload_too_large" and rc != "payload_too_large":
        return setting(MAX_BODY_BYTES, facts.body_size)
    if (
        rc == "payload_too_large"
        and mc != "payload_too_large"
        and 0 < facts.body_size <= behaviour.max_body_bytes
    ):
        return setting(MAX_BODY_BYTES, facts.body_size - 1)
    unknown = collection_causes.spelled(UNKNOWN_FIELDS, ctx.scenario)
    if mc == "unknown_field" and rc is None:
        return Cause(unknown, ("drop",))
    if rc == "unknown_field" and mc is None:
        return Cause(unknown, ("refuse",))
    if mc == "limit_above_maximum" and rc is None:
        return setting(LIMIT_ABOVE_MAXIMUM, "clamp")
    if rc == "limit_above_maximum" and mc is None:
        return setting(LIMIT_ABOVE_MAXIMUM, "refuse")
    if "gone" in (rc, mc):
        return setting(AFTER_SUNSET, "keep" if rc is None else "gone")
    if facts.operation == "listOrders" and mc == "not_implemented" and rc is None:
        # A scripted answer: the one the provider gave (its body, when the recording has it).
        respond: dict[str, Any] = {"status": was}
        if ex.recorded_body is not None:
            respond["body"] = ex.recorded_body
        return setting(ROUTES, {"operation": "listOrders", "respond": respond})
    if rc in AUTH_CONDITIONS and mc is None and facts.auth == "bearer":
        return setting(KEYS)
    if mc in AUTH_CONDITIONS and rc is None and facts.auth == "bearer":
        return setting(KEYS)
    if facts.operation == "getPet" and {rc, mc} <= {None, "pet_not_found"}:
        return setting(PETS) if rc == "pet_not_found" else cannot("store")
    found = collection_causes.status_cause(rc, mc, facts, ctx.scenario)
    if found is not None:
        return Cause(found[0], found[1])
    if rc is not None and mc is not None and rc != "unexplained":
        if rc in facts.problems and mc in facts.problems:
            return cannot("check-order")
        if rc in ERROR_STATUS and rc in (facts.problems or ()):
            return setting(ERROR_STATUS[rc], was)
    repeated = _repeated(ex, rc, mc)
    if repeated is not None:
        return setting(REPEATED_PARAMETERS, repeated)
    if (rc is None) != (mc is None) and (rc in facts.problems or mc in facts.problems):
        return cannot("lenient-request")
    return cannot("unexplained")


def _repeated(ex: Exchange, rc: str | None, mc: str | None) -> str | None:
    """``collections.repeated_parameters`` where a listing's repeated ``limit`` is all that
    parts the provider's answer from the mock's: the value its length shows was used, or
    ``refuse`` where the provider refused it."""
    facts = ex.facts
    if facts.operation != "listPets" or len(facts.query.get("limit", [])) < 2:
        return None
    if rc is None and mc == "bad_limit":
        return repeated_choice(facts.query, ex.recorded_body, None)
    if rc == "bad_limit" and mc is None:
        return "refuse"
    return None


def _head_value(served: set[str]) -> Any:
    if served == set(HEAD_OPERATIONS):
        return True
    if not served:
        return False
    return [name for name in HEAD_OPERATIONS if name in served]


def _allowance(ex: Exchange, ctx: Context) -> Cause:
    """A difference in who was refused for the allowance: plans, windows, bans."""
    rc, mc = ex.recorded_condition, ex.mock_condition
    ban = ctx.scenario.ban
    if rc == "key_banned" and mc == "rate_limited":
        if ban is None:
            return setting(BAN_ENABLED, True)
        if ex.ban_after:
            return setting(BAN_AFTER, ex.ban_after)
        return setting(BAN_AFTER)
    if rc == "rate_limited" and mc == "key_banned":
        if ex.ban_after:
            return setting(BAN_AFTER, ex.ban_after)
        if ex.run_length:
            # No ban ended the run: one more refusal than it had does not ban within it.
            return setting(BAN_AFTER, ex.run_length + 1)
        return setting(BAN_TRIGGER)
    if rc == "key_banned" and mc is None:
        return setting(BAN_DURATION)
    if rc is None and mc == "key_banned":
        return setting(BAN_DURATION)
    # The allowance agrees (the recorded figure is the plan's): how its window counts.
    advice = rate_advice.allowance(ex.recorded_limit, ex.plan)
    if advice is not None:
        return setting(_named(advice[0]), *advice[1])
    if ex.key is not None:
        return setting(KEY_PLAN)
    return setting(ANONYMOUS_PLAN)


# -- headers -------------------------------------------------------------------------

MANAGED = frozenset(
    {
        "content-type",
        "date",
        "x-ratelimit-limit",
        "x-ratelimit-remaining",
        "x-ratelimit-reset",
        "retry-after",
        "www-authenticate",
        "deprecation",
        "sunset",
        "link",
        "location",
        "etag",
        "allow",
        "ratelimit",
        "ratelimit-policy",
    }
)


# The rate-limit headers a limiter may write (ratelimit.headers): X-RateLimit-* of any
# figure or window, and the draft ones.
_RATE_HEADER = re.compile(r"x-ratelimit-[a-z0-9-]+|ratelimit|ratelimit-policy")


def rate_header(name: str) -> bool:
    """Whether ``name`` (lower case) is a header of the limiter's (``ratelimit.headers``)."""
    return _RATE_HEADER.fullmatch(name) is not None


def header_presence(
    name: str, ex: Exchange, was: str | None, now: str | None, ctx: Context
) -> Cause:
    """The setting behind a header one answer has and the other has not."""
    behaviour = ctx.behaviour
    mock_id = (behaviour.request_id.header or "").lower()
    if rate_header(name):
        advice = rate_advice.presence(
            name, was, ex.recorded_status, ex.authenticated, ex.plan, ex.recorded_headers,
            ctx.scenario,
        )  # fmt: skip
        if advice is not None:
            return setting(_named(advice[0]), *advice[1])
    if name == mock_id and was is None:
        others = sorted(ctx.request_ids - {name})
        return setting(REQUEST_ID["header"], ctx.names.get(others[0]) if others else None)
    if was is not None and name in ctx.request_ids:
        return setting(REQUEST_ID["header"], ctx.names.get(name, name))
    if name == "www-authenticate":
        condition = _auth_condition(ex)
        return setting(WWW_AUTHENTICATE[condition], was)
    if name == "location":
        if was is None:
            return setting(LOCATION, "none")
        return setting(LOCATION, "url" if re.match(r"https?://", was) else "path")
    if name == "etag" and ex.operation in ETAG:
        return setting(ETAG[ex.operation], _etag_kind(was) if was is not None else None)
    if name in ("deprecation", "sunset", "link") and ex.operation == "getPet":
        return _deprecation_presence(name, ex, was, now, ctx)
    if name == "retry-after" and "key_banned" in (ex.recorded_condition, ex.mock_condition):
        return setting(RETRY_AFTER_BANNED, retry_after_kind(was) if was is not None else "none")
    if name == "allow":
        return cannot("allow")
    if name == "link" and ex.operation == "listPets":
        return Cause(*collection_causes.link_cause(link_shape(was), link_shape(now), ctx.scenario))
    total = (ctx.scenario.collections.pagination.total_header or "").lower()
    if name in (ctx.total_header, total) and ex.operation == "listPets":
        return Cause(*collection_causes.total_cause(ctx.names.get(name, name), was))
    if name in MANAGED:
        return cannot("header-presence" if was is not None else "header-absence")
    if was is not None:
        return _header_rule(name, ex, ctx)
    return setting(HEADERS)


def header_rules(
    name: str, seen: list[Seen]
) -> dict[tuple[str | None, int], dict[str, Any]] | None:
    """The ``behaviour.headers`` rule that puts header ``name`` on each (operation, status).

    The widest that fits the recording: every answer, a status class, an
    operation, or one status of one operation; the value must be the same on
    every answer the rule covers. None when no rules fit (the value changes, or
    the header is on some answers of a group and not on others).
    """
    groups: dict[tuple[str | None, int], set[str | None]] = {}
    shown = name
    for s in seen:
        # As ``evidence`` read it (a URL on the service's own address, relative to it).
        value = s.headers.get(name)
        if value is not None:
            shown = next((h for h, _ in s.item.response_headers if h.lower() == name), shown)
        groups.setdefault((s.operation, s.status), set()).add(value)
    if any(len(v) > 1 for v in groups.values()):
        return None
    value_of = {where: next(iter(v)) for where, v in groups.items()}
    values = {value for value in value_of.values() if value is not None}
    if len(values) > 1 and _RATE_FIGURE.search(name):
        # Another window's figures (X-RateLimit-Burst-Reset): constant for a moment only.
        return None
    present = {where for where, value in value_of.items() if value is not None}

    def fits(members: set[tuple[str | None, int]]) -> str | None:
        """The one value of ``members`` when all carry it, else None."""
        found = {value_of[m] for m in members}
        return next(iter(found)) if len(found) == 1 and None not in found else None

    rules: dict[tuple[str | None, int], dict[str, Any]] = {}
    everything = fits(set(value_of))
    for where in present:
        operation, status = where
        value = value_of[where]
        if everything is not None:
            rule: dict[str, Any] = {"name": shown, "value": value}
        elif fits({w for w in value_of if w[1] // 100 == status // 100}) is not None:
            rule = {"name": shown, "value": value, "status": f"{status // 100}xx"}
        elif operation is not None and fits({w for w in value_of if w[0] == operation}):
            rule = {"name": shown, "value": value, "operation": operation}
        elif fits({w for w in value_of if w[1] == status}) is not None:
            rule = {"name": shown, "value": value, "status": status}
        else:
            rule = {"name": shown, "value": value, "status": status}
            if operation is not None:
                rule["operation"] = operation
        rules[where] = rule
    return rules


def _header_rule(name: str, ex: Exchange, ctx: Context) -> Cause:
    """A constant header: the rule that puts it on this answer (and on its like)."""
    rules = ctx.rules.get(name)
    if rules is None:
        return cannot("varying-header")
    answered = None if ex.recorded_condition == "method_not_allowed" else ex.operation
    rule = rules.get((answered, ex.recorded_status))
    return setting(HEADERS, rule) if rule is not None else setting(HEADERS)


def _auth_condition(ex: Exchange) -> str:
    for condition in (ex.recorded_condition, ex.mock_condition):
        if condition in AUTH_CONDITIONS:
            return condition
    return {"missing": "missing_key", "malformed": "malformed_authorization"}.get(
        ex.facts.auth, "unknown_key"
    )


def _etag_kind(value: str) -> str:
    return "weak" if value.strip().startswith("W/") else "strong"


def _deprecation_presence(
    name: str, ex: Exchange, was: str | None, now: str | None, ctx: Context
) -> Cause:
    behaviour = ctx.behaviour
    if was is None:
        # The mock announces where the provider does not.
        if not 200 <= ex.recorded_status < 300 and behaviour.deprecation_on != "success":
            # A refusal without them: they go on successes only (or nowhere, which a
            # success without them would show).
            return setting(DEPRECATION_ON, "success")
        if ctx.deprecation_seen and not ex.authenticated:
            return setting(DEPRECATION_ON, "authenticated")
        if name == "deprecation":
            return setting(DEPRECATION_FORMAT, "none")
        if name == "sunset":
            return setting(SUNSET_HEADER, False)
        return setting(DEPRECATION_LINK, None)
    # The provider announces where the mock does not.
    if name == "deprecation" and behaviour.deprecation_format == "none":
        return setting(DEPRECATION_FORMAT, deprecation_kind(was))
    if name == "sunset" and not behaviour.sunset_header:
        return setting(SUNSET_HEADER, True)
    if name == "link" and behaviour.deprecation_link is None:
        return setting(DEPRECATION_LINK, was)
    if not 200 <= ex.mock_status < 300 or not ex.authenticated:
        return setting(DEPRECATION_ON, "all" if not ex.authenticated else "authenticated")
    return setting(DEPRECATION_ON, "all")


def announced(instant: float) -> str:
    """The setting behind a date a header announced (``Deprecation``, ``Sunset``).

    The mock states the setting's calendar date, to the second, on any clock (a
    date announced is not a wait): the header's instant is the setting.
    """
    return format_time(instant)


def header_value(name: str, ex: Exchange, was: str, now: str, ctx: Context) -> Cause:
    """The setting behind a header both answers carry, with values that differ."""
    behaviour = ctx.behaviour
    if rate_header(name) or name == "retry-after":
        banned = ex.mock_condition == "key_banned"
        if name == "ratelimit-policy":
            own = rate_advice.plan_lengths(was, now, ex.plan, ctx.scenario)
            if own is not None:  # the plan counts over windows of its own lengths
                return setting(KEY_PLAN if ex.key is not None else ANONYMOUS_PLAN, own)
        advice = rate_advice.value(name, was, now, banned, ex.plan, ctx.scenario)
        if advice is not None:
            return setting(_named(advice[0]), *advice[1])
    if name == "x-ratelimit-reset":
        return setting(RATELIMIT_RESET, reset_kind(was))
    if name == "x-ratelimit-limit":
        return _limit(ex, int(was), int(now), ctx)
    if name == "retry-after":
        kind = retry_after_kind(was)
        if ex.mock_condition == "key_banned":
            return setting(RETRY_AFTER_BANNED, kind)
        return setting(RETRY_AFTER, kind)
    if name == "deprecation":
        if deprecation_kind(was) != deprecation_kind(now):
            return setting(DEPRECATION_FORMAT, deprecation_kind(was))
        instant = deprecation_instant(was)
        return setting(DEPRECATED_SINCE, *([announced(instant)] if instant else []))
    if name == "sunset":
        instant = http_date(was)
        return setting(SUNSET, *([announced(instant)] if instant else []))
    if name == "link":
        return setting(DEPRECATION_LINK, was)
    if name == "content-type":
        return setting(CONTENT_TYPE, was)
    if name == "www-authenticate":
        return setting(WWW_AUTHENTICATE[_auth_condition(ex)], was)
    if name == "location":
        return setting(LOCATION, "url" if re.match(r"https?://", was) else "path")
    if name == "etag" and ex.operation in ETAG:
        return setting(ETAG[ex.operation], _etag_kind(was))
    if name == "allow":
        return cannot("allow")
    if name in ctx.request_ids:
        prefix, kind = id_form(was)
        mine = behaviour.request_id
        if kind is None:
            return cannot("varying-header")
        if kind != mine.format:
            return setting(REQUEST_ID["format"], kind)
        return setting(REQUEST_ID["prefix"], prefix)
    if name in ("ratelimit-policy", "ratelimit"):
        return _limit(ex, None, None, ctx)
    if name in MANAGED:
        return cannot("header-format")
    return _header_rule(name, ex, ctx)


def draft_shape(was: str, now: str, ctx: Context) -> Cause:
    """The setting behind a draft ``RateLimit`` header of another shape: its policies' names
    (``ratelimit.headers.policies``), else the draft headers themselves."""
    advice = rate_advice.draft_names(was, now, ctx.scenario)
    if advice is not None:
        return setting(_named(advice[0]), *advice[1])
    return setting(RATELIMIT_DRAFT)


def _limit(ex: Exchange, was: int | None, now: int | None, ctx: Context) -> Cause:
    """An X-RateLimit-Limit (or draft policy) that differs: the window shown, or the plan."""
    plan = ex.plan
    if plan is not None and was is not None and {was, now} == {plan.per_minute, plan.per_day}:
        shown = "day" if was == plan.per_day else "minute"
        if ex.mock_condition == "rate_limited":
            # A refusal's figures: the window that blocks, or the one always described.
            if ctx.behaviour.ratelimit_describes == shown:
                return setting(RATELIMIT_DESCRIBES_REFUSALS, "described")
            if ctx.behaviour.ratelimit_describes_refusals == "described":
                return setting(RATELIMIT_DESCRIBES_REFUSALS, "blocking")
        return setting(RATELIMIT_DESCRIBES, shown)
    figures: tuple[Any, ...] = ()
    if plan is not None and was is not None and now == plan.per_minute:
        figures = ({"per_minute": was, "per_day": max(plan.per_day, was)},)
    elif plan is not None and was is not None and now == plan.per_day:
        figures = ({"per_minute": min(plan.per_minute, was), "per_day": was},)
    if ex.key is not None:
        return setting(KEY_PLAN, *figures)
    return setting(ANONYMOUS_PLAN, *figures)


# -- bodies --------------------------------------------------------------------------


def error_code(ex: Exchange, was: Any, ctx: Context) -> Cause:
    """The setting behind an Error code that differs."""
    rc, mc = ex.recorded_condition, ex.mock_condition
    if rc == "key_banned" and mc == "rate_limited":
        return _allowance(ex, ctx)
    if rc == "rate_limited" and mc == "key_banned":
        return _allowance(ex, ctx)
    condition = rc if rc in ERROR_CODE else mc
    cors = ctx.scenario.http.cors
    if rc == "cors_rejected" and cors is not None and ex.mock_code == cors.code:
        # A refused preflight's code is the CORS section's own.
        if not isinstance(was, str) or not was:
            return cannot("error-body-shape")
        return setting(named("http.cors.code"), was)
    if condition not in ERROR_CODE:
        return cannot("unexplained")
    if rc == mc and rc in ctx.split:
        return cannot("split-condition")
    if not isinstance(was, str) or not was:
        return cannot("error-body-shape")
    return setting(ERROR_CODE[condition], was)


def error_field(
    name: str, ex: Exchange, was: Any, present: bool, request_id: str | None, ctx: Context
) -> Cause:
    """The setting behind an Error field one body has and the other has not."""
    if not present:
        return setting(ERROR_FIELDS)
    rule: dict[str, Any] = {"name": name}
    if isinstance(was, str) and request_id is not None and was == request_id:
        rule["generate"] = "request_id"
    elif isinstance(was, str) and id_form(was)[1] == "uuid" and not id_form(was)[0]:
        rule["generate"] = "uuid"
    elif isinstance(was, str) and re.fullmatch(
        r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)", was
    ):
        rule["generate"] = "timestamp"
    else:
        rule["value"] = was
    return setting(ERROR_FIELDS, rule)


def pet_field(name: str, sent: dict[str, Any], was: Any, known: frozenset[str]) -> Cause:
    """The setting behind a field of a returned pet that differs."""
    if name == "status" and "status" not in sent:
        return setting(DEFAULT_STATUS, was if isinstance(was, str) else "omit")
    if name not in known:
        return setting(UNKNOWN_FIELDS, "keep" if was is not None else "drop")
    return cannot("pet-fields")


def list_order(recorded: str) -> Cause:
    """The setting behind a list in another order."""
    order = {"ascending id": "ascending", "descending id": "descending"}.get(recorded)
    return setting(LIST_ORDER, order or "insertion")


def list_limit(facts: Facts) -> Cause:
    limit = facts.query.get("limit", [""])[0]
    if limit.isdigit() and int(limit) > 100:
        return setting(LIMIT_ABOVE_MAXIMUM, "clamp")
    return cannot("list-length")
