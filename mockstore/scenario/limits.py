"""A scenario's ``ratelimit:`` section, with the older settings that say part of it: one ``Limits``.

The limiter used to be described by ``behaviour`` knobs (``ratelimit_windows``,
``ratelimit_describes``, ``ratelimit_describes_refusals``, ``ratelimit_reset``,
``ratelimit_draft_headers``, ``retry_after``, ``retry_after_banned``) and by
the refusal's status and code (``error_statuses.rate_limited``,
``error_codes.rate_limited``). They keep working: each is read into the one
model, ``mockstore.limiter.model.Limits``, where its ``ratelimit:``
counterpart would be; where a file states one thing in both places, the
``ratelimit:`` section's word is the one kept (so that a setting ``drift``
proposes there takes effect in any file). What the schema cannot check is checked here, with
the file's positions: a time zone this machine knows, a window on the clock's
grid that divides the day, a sliding log's allowance, a 429 that carries
``Retry-After``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Protocol

from mockstore.limiter.grid import zone_problem
from mockstore.limiter.log import MAX_LOG
from mockstore.limiter.model import (
    DAY_SECONDS,
    SLIDING_LOG,
    Announcement,
    Limits,
    SecondSet,
    Window,
)
from mockstore.limiter.refusals import NO_REFUSALS, Refusal, Refusals
from mockstore.ratelimit import NO_DAY, Plan
from mockstore.scenario.model import Behaviour, behaviour_value

Path = tuple[str | int, ...]

# Each older setting, and where the ratelimit: section says the same.
ALIASES: dict[Path, tuple[Path, ...]] = {
    ("behaviour", "ratelimit_windows"): (
        ("ratelimit", "minute", "align"),
        ("ratelimit", "day", "align"),
    ),
    ("behaviour", "ratelimit_describes"): (("ratelimit", "headers", "describes"),),
    ("behaviour", "ratelimit_describes_refusals"): (("ratelimit", "headers", "refusals"),),
    ("behaviour", "ratelimit_reset"): (("ratelimit", "headers", "reset"),),
    ("behaviour", "ratelimit_draft_headers"): (("ratelimit", "headers", "draft"),),
    ("behaviour", "retry_after"): (("ratelimit", "headers", "retry_after"),),
    ("behaviour", "retry_after_banned"): (("ratelimit", "headers", "retry_after_banned"),),
    ("behaviour", "error_statuses", "rate_limited"): (("ratelimit", "refusal", "status"),),
    ("behaviour", "error_codes", "rate_limited"): (("ratelimit", "refusal", "code"),),
}


class Reader(Protocol):
    """What of the scenario builder this reads: the file's data, its positions, its problems."""

    data: dict[str, Any]

    def get(self, path: Path, default: Any = ...) -> Any: ...

    def problem(self, path: Path, message: str, *, key: bool = False) -> None: ...

    def clean(self, path: Path) -> bool: ...


def given(data: dict[str, Any], path: Path) -> bool:
    """Whether the file itself states ``path`` (not the schema's default)."""
    node: Any = data
    for part in path:
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def _value(reader: Reader, path: Path) -> Any:
    """The setting at ``path`` of the ratelimit: section, or what an older one says of it."""
    for old, news in ALIASES.items():
        if path in news and not given(reader.data, path) and given(reader.data, old):
            value = reader.get(old)
            if old[-1] == "ratelimit_draft_headers":
                return "all" if value else "none"
            return value
    return reader.get(path)


def plan_of(name: str, raw: dict[str, Any]) -> Plan:
    """A plan as a scenario states it (under ``plans``, or inline in a key), checked."""
    return Plan(
        name,
        raw["per_minute"],
        raw.get("per_day", NO_DAY),
        raw.get("minute_seconds", 0),
        raw.get("day_seconds", 0),
    )


def build_limits(reader: Reader, plans: dict[str, Plan], ban_status: int | None) -> Limits:
    """The scenario's ``Limits``, noting what the schema cannot check on ``reader``."""
    zone = reader.get(("ratelimit", "time_zone"))
    problem = zone_problem(zone)
    if problem is not None:
        reader.problem(("ratelimit", "time_zone"), problem)
        zone = "UTC"
    windows = []
    for name, allowance in (("minute", "per_minute"), ("day", "per_day")):
        window = Window(
            reader.get(("ratelimit", name, "seconds")),
            reader.get(("ratelimit", name, "algorithm")),
            _value(reader, ("ratelimit", name, "align")),
        )
        if window.gridded and DAY_SECONDS % window.seconds:
            reader.problem(
                ("ratelimit", name, "seconds"),
                f"a {window.algorithm} window on the clock's grid divides the day: "
                f"{window.seconds} s does not (try {_dividing(window.seconds)})",
            )
        if window.algorithm == SLIDING_LOG:
            _check_log(reader, plans, name, allowance)
        _check_plan_lengths(reader, plans, window, name)
        windows.append(window)
    headers = Announcement(
        figures=tuple(reader.get(("ratelimit", "headers", "figures"))),
        resource=reader.get(("ratelimit", "headers", "resource")),
        describes=_value(reader, ("ratelimit", "headers", "describes")),
        refusals=_value(reader, ("ratelimit", "headers", "refusals")),
        per_window=tuple(
            (name, reader.get(("ratelimit", "headers", "per_window", name), None))
            for name in ("minute", "day")
            if reader.get(("ratelimit", "headers", "per_window", name), None) is not None
        ),
        reset=_value(reader, ("ratelimit", "headers", "reset")),
        reset_decimals=reader.get(("ratelimit", "headers", "reset_decimals")),
        retry_after=_value(reader, ("ratelimit", "headers", "retry_after")),
        retry_after_banned=_value(reader, ("ratelimit", "headers", "retry_after_banned")),
        retry_after_decimals=reader.get(("ratelimit", "headers", "retry_after_decimals")),
        uncounted=reader.get(("ratelimit", "headers", "uncounted")),
        draft=_value(reader, ("ratelimit", "headers", "draft")),
        second=_second_set(reader),
        policies=tuple(
            (name, reader.get(("ratelimit", "headers", "policies", name)))
            for name in ("minute", "day")
        ),
    )
    _check_headers(reader, headers, ban_status)
    return Limits(
        minute=windows[0],
        day=windows[1],
        time_zone=zone,
        counts=reader.get(("ratelimit", "counts")),
        anonymous=reader.get(("ratelimit", "anonymous")),
        headers=headers,
        not_counted=tuple(reader.get(("ratelimit", "not_counted"))),
        lengths_per_plan=any(
            own_length(plan, "minute", windows[0]) or own_length(plan, "day", windows[1])
            for plan in plans.values()
        ),
        refusals=_refusals(reader),
    )


def _refusals(reader: Reader) -> Refusals:
    """``ratelimit.refusal``'s precedence and each window's own refusal, checked."""
    where: Path = ("ratelimit", "refusal")
    owns: dict[str, Refusal | None] = {}
    for window in ("minute", "day"):
        raw = reader.get((*where, window), None)
        if not isinstance(raw, dict) or "status" not in raw or "code" not in raw:
            owns[window] = None  # not stated, or refused by the schema
            continue
        owns[window] = Refusal(raw["status"], raw["code"], raw.get("retry_after"))
        if raw["status"] == 429 and raw.get("retry_after") == "none":
            reader.problem(
                (*where, window, "retry_after"),
                "a 429 carries Retry-After: 'none' needs a status other than 429",
            )
    precedence = reader.get((*where, "precedence"))
    if precedence == "longest" and owns["minute"] is None and owns["day"] is None:
        return NO_REFUSALS
    return Refusals(precedence, owns["minute"], owns["day"])


def _second_set(reader: Reader) -> SecondSet | None:
    """``ratelimit.headers.second_set``, where the file states one."""
    where: Path = ("ratelimit", "headers", "second_set")
    name, window = reader.get((*where, "name"), None), reader.get((*where, "window"), None)
    if name is None or window is None:
        return None  # not stated, or refused by the schema
    return SecondSet(
        name,
        window,
        tuple(reader.get((*where, "figures"))),
        reader.get((*where, "reset")),
    )


def own_length(plan: Plan, name: str, window: Window) -> bool:
    """Whether ``plan`` counts window ``name`` over a length other than the scenario's."""
    seconds = plan.minute_seconds if name == "minute" else plan.day_seconds
    return bool(seconds) and seconds != window.seconds


def with_refusal(reader: Reader, behaviour: Behaviour) -> Behaviour:
    """``behaviour`` with ``ratelimit.refusal``'s status and code as its rate_limited's: the
    Error model's one place for them (``behaviour.error_statuses``, ``error_codes``)."""
    status = reader.get(("ratelimit", "refusal", "status"), None)
    code = reader.get(("ratelimit", "refusal", "code"), None)
    if status is not None and status != 429:
        statuses = {**dict(behaviour.error_statuses), "rate_limited": status}
        behaviour = replace(behaviour, error_statuses=behaviour_value("error_statuses", statuses))
    if code is not None:
        codes = {**dict(behaviour.error_codes), "rate_limited": code}
        behaviour = replace(behaviour, error_codes=behaviour_value("error_codes", codes))
    return behaviour


def limiter_headers(reader: Reader) -> dict[str, str]:
    """The headers the limiter writes that a constant header may not name, each with the
    setting that decides it (beyond the three X-RateLimit-* every answer carries)."""
    written = {
        "x-ratelimit-used": "ratelimit.headers.figures",
        "x-ratelimit-resource": "ratelimit.headers.figures",
    }
    for window in ("minute", "day"):
        suffix = reader.get(("ratelimit", "headers", "per_window", window), None)
        if isinstance(suffix, str):
            for figure in ("limit", "remaining"):
                written[f"x-ratelimit-{figure}-{suffix.lower()}"] = "ratelimit.headers.per_window"
    second = _second_set(reader)
    if second is not None:
        for figure in ("limit", "remaining", "reset", "used"):
            written[second.header(figure).lower()] = "ratelimit.headers.second_set"
    return written


def _dividing(seconds: int) -> str:
    """The lengths nearest ``seconds`` that divide the day."""
    below = next(n for n in range(seconds, 0, -1) if DAY_SECONDS % n == 0)
    above = next(n for n in range(seconds, DAY_SECONDS + 1) if DAY_SECONDS % n == 0)
    return f"{below} or {above}"


def _check_log(reader: Reader, plans: dict[str, Plan], window: str, allowance: str) -> None:
    for name, plan in plans.items():
        figure = plan.per_minute if window == "minute" else plan.per_day
        if figure == NO_DAY or figure <= MAX_LOG:
            continue
        where: Path = ("plans", name, allowance)
        if name.startswith("custom:") or not given(reader.data, where):
            where = ("ratelimit", window, "algorithm")
        reader.problem(
            where,
            f"a sliding log keeps an instant per request: plan {name.removeprefix('custom:')!r} "
            f"allows {figure:,} a {window} window, more than the {MAX_LOG:,} a log may hold "
            "(use sliding_window, or a smaller allowance)",
        )


def _check_plan_lengths(reader: Reader, plans: dict[str, Plan], window: Window, name: str) -> None:
    """A plan's own length of a window on the clock's grid divides the day, as the window's."""
    if not window.gridded:
        return
    setting = f"{name}_seconds"
    for plan in plans.values():
        seconds = plan.minute_seconds if name == "minute" else plan.day_seconds
        if not seconds or DAY_SECONDS % seconds == 0:
            continue
        where: Path = ("plans", plan.name, setting)
        if plan.name.startswith("custom:"):
            index = _key_index(reader.data, plan.name.removeprefix("custom:"))
            where = ("keys", index, "plan", setting) if index is not None else ("keys",)
        reader.problem(
            where,
            f"a {window.algorithm} window on the clock's grid divides the day: {seconds} s "
            f"does not (try {_dividing(seconds)})",
        )


def _key_index(data: dict[str, Any], key: str) -> int | None:
    """Where the file lists ``key`` among its keys."""
    keys = data.get("keys")
    if not isinstance(keys, list):
        return None
    return next(
        (i for i, raw in enumerate(keys) if isinstance(raw, dict) and raw.get("key") == key),
        None,
    )


def _check_headers(reader: Reader, headers: Announcement, ban_status: int | None) -> None:
    status = reader.get(("ratelimit", "refusal", "status"), None)
    if status is None:
        status = reader.get(("behaviour", "error_statuses", "rate_limited"), None) or 429
    if headers.retry_after == "none" and status == 429:
        reader.problem(
            _where(reader, ("ratelimit", "headers", "retry_after")),
            "a 429 carries Retry-After: 'none' needs a refusal status other than 429 "
            "(ratelimit.refusal.status)",
        )
    banned = headers.retry_after_banned
    if banned == "same":
        banned = headers.retry_after
    if banned == "none" and ban_status == 429:
        same = " (same as retry_after)" if headers.retry_after_banned == "same" else ""
        reader.problem(
            _where(reader, ("ratelimit", "headers", "retry_after_banned")),
            f"a 429 carries Retry-After: 'none'{same} needs ban.status other than 429",
        )
    if headers.reset == "epoch-ms" and headers.reset_decimals:
        reader.problem(
            ("ratelimit", "headers", "reset_decimals"),
            "a reset in milliseconds has no decimals: write 0, or reset: epoch",
        )
    suffixes = [suffix.lower() for _, suffix in headers.per_window]
    if len(set(suffixes)) < len(suffixes):
        reader.problem(
            ("ratelimit", "headers", "per_window"), "the two windows need different names"
        )
    second = headers.second
    if second is not None and any(
        second.header(figure).lower() == f"x-ratelimit-{kind}-{suffix.lower()}"
        for figure in second.figures
        for kind in ("limit", "remaining")
        for _, suffix in headers.per_window
    ):
        reader.problem(
            ("ratelimit", "headers", "second_set", "name"),
            "names a header per_window writes too: choose another name",
        )
    names = [name for _, name in headers.policies]
    if len(set(names)) < len(names):
        reader.problem(
            ("ratelimit", "headers", "policies"), "the two policies need different names"
        )


def _where(reader: Reader, path: Path) -> Path:
    """``path``, or the older setting it was read from (where the file says it)."""
    if given(reader.data, path):
        return path
    for old, news in ALIASES.items():
        if path in news and given(reader.data, old):
            return old
    return path
