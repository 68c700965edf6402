"""Which ``ratelimit:`` setting removes a rate-limit header's difference, and to what value.

``drift`` (``mockstore.fidelity.attribution``) asks here first about a
difference in a header of the limiter's: ``X-RateLimit-Used`` and
``-Resource``, Kong's per-window ones, the draft ``RateLimit-Policy`` and
``RateLimit``, a reset or a ``Retry-After`` written with decimals, the figures
on a caller without a key. Where the scenario says a thing in its
``ratelimit:`` section, the advice names that place; where it says it with an
older ``behaviour`` setting (or not at all, and the older one can say it), the
older one, so that applying the advice never makes the file say a thing twice.
Answers are ``(setting, value)`` pairs, the value a 1-tuple (empty when the
recording does not tell it), or None when the difference is not the limiter's.
Pure: functions of the scenario and the two header values.
"""

from __future__ import annotations

import re
from typing import Any

from mockstore.fidelity.formats import decimals, reset_kind, retry_after_kind, sf_list
from mockstore.limiter.model import FIGURES, Announcement, a_success
from mockstore.ratelimit import Plan
from mockstore.scenario.model import Behaviour, Scenario

Advice = tuple[str, tuple[Any, ...]]
_PER_WINDOW = re.compile(r"x-ratelimit-(limit|remaining)-([a-z0-9]+)")
# A second set of figures for one window (``ratelimit.headers.second_set``):
# X-RateLimit-<name>-<figure>, the name never a figure of Kong's per-window headers.
SECOND_SET = re.compile(
    r"x-ratelimit-(?!limit-|remaining-)([a-z0-9]+)-(limit|remaining|reset|used)"
)
_SET_FIGURES = ("limit", "remaining", "reset", "used")


def _old_or_new(scenario: Scenario, old: str, new: str, old_value: Any, new_value: Any) -> Advice:
    """The older setting when it can say the value and the scenario does not say this in
    its ``ratelimit:`` section; else the ``ratelimit:`` one."""
    if old_value is not None and not _in_section(scenario, old, new):
        return old, (old_value,)
    return new, (new_value,)


def _in_section(scenario: Scenario, old: str, new: str) -> bool:
    """Whether ``scenario`` says ``new`` in ``ratelimit:``: its older setting is at its
    default while the ``ratelimit:`` value is not (the older one would have put it there)."""
    older = getattr(scenario.behaviour, old.rsplit(".", 1)[-1])
    newer = getattr(scenario.ratelimit.headers, new.rsplit(".", 1)[-1])
    return older == getattr(Behaviour(), old.rsplit(".", 1)[-1]) and newer != getattr(
        Announcement(), new.rsplit(".", 1)[-1]
    )


def presence(
    name: str,
    was: str | None,
    status: int,
    keyed: bool,
    plan: Plan | None,
    recorded: dict[str, str],
    scenario: Scenario,
) -> Advice | None:
    """The setting behind a limiter's header one answer has and the other has not."""
    headers = scenario.ratelimit.headers
    figure = name.removeprefix("x-ratelimit-")
    if name.startswith("x-ratelimit-") and not keyed and status == 401:
        if was is None and scenario.ratelimit.anonymous == "per_address":
            return "ratelimit.anonymous", ("none",)
        if was is not None and scenario.ratelimit.anonymous == "none":
            return "ratelimit.anonymous", ("per_address",)
    if figure in ("used", "resource"):
        figures = [f for f in headers.figures if f != figure]
        if was is not None:
            figures.append(figure)
        return "ratelimit.headers.figures", (sorted(figures, key=FIGURES.index),)
    second = SECOND_SET.fullmatch(name)
    if second is not None:
        return _second_set(second.group(1), second.group(2), was, plan, recorded, scenario)
    match = _PER_WINDOW.fullmatch(name)
    if match is not None:
        window = _window_of(scenario, match.group(2), plan, recorded)
        if window is None:
            return "ratelimit.headers.per_window", ()
        return f"ratelimit.headers.per_window.{window}", ((match.group(2) if was else None),)
    if name in ("ratelimit", "ratelimit-policy"):
        success = a_success(status)
        if was is not None:
            # A 2xx answer that has them says no more than that 2xx answers do: "all"
            # would add them where the provider may leave them out (an error answer
            # that has them says "all" on its own).
            value = "success" if success else "all"
            if value == "all" and headers.draft != "success":
                return _old_or_new(scenario, "behaviour.ratelimit_draft_headers",
                                   "ratelimit.headers.draft", True, "all")  # fmt: skip
            return "ratelimit.headers.draft", (value,)
        if success:
            return _old_or_new(scenario, "behaviour.ratelimit_draft_headers",
                               "ratelimit.headers.draft", False, "none")  # fmt: skip
        return "ratelimit.headers.draft", ("success",)
    return None


def _second_set(
    name: str,
    figure: str,
    was: str | None,
    plan: Plan | None,
    recorded: dict[str, str],
    scenario: Scenario,
) -> Advice:
    """The second set of headers (``X-RateLimit-Burst-*``) one side writes: its figures where
    the scenario has the set, else the whole set as the recorded answer shows it (its
    window told by its limit, its reset's form by its value)."""
    mine = scenario.ratelimit.headers.second
    prefix = f"x-ratelimit-{name}-"
    shown = [f for f in _SET_FIGURES if prefix + f in recorded]
    if mine is not None and mine.name.lower() == name:
        figures = [f for f in mine.figures if f != figure]
        if was is not None:
            figures.append(figure)
        figures = sorted(figures, key=_SET_FIGURES.index)
        return "ratelimit.headers.second_set.figures", ((figures,) if figures else ())
    limit = recorded.get(prefix + "limit", "").strip()
    window = None
    if plan is not None and limit.isdigit() and plan.per_minute != plan.per_day:
        window = {plan.per_minute: "minute", plan.day: "day"}.get(int(limit))
    if was is None or window is None:
        return "ratelimit.headers.second_set", ()
    value: dict[str, Any] = {"name": name.capitalize(), "window": window}
    if shown != ["limit", "remaining", "reset"]:
        value["figures"] = shown
    reset = reset_kind(recorded.get(prefix + "reset", ""))
    if reset in ("epoch", "epoch-ms"):
        value["reset"] = reset
    return "ratelimit.headers.second_set", (value,)


def _window_of(
    scenario: Scenario, suffix: str, plan: Plan | None, recorded: dict[str, str]
) -> str | None:
    """The window a per-window header's name stands for: the scenario's, else the one whose
    allowance the recorded ``X-RateLimit-Limit-<name>`` states."""
    for window, name in scenario.ratelimit.headers.per_window:
        if name.lower() == suffix:
            return window
    limit = recorded.get(f"x-ratelimit-limit-{suffix}", "").strip()
    if plan is not None and limit.isdigit() and plan.per_minute != plan.per_day:
        if int(limit) == plan.per_minute:
            return "minute"
        if plan.has_day and int(limit) == plan.per_day:
            return "day"
    taken = {window for window, _ in scenario.ratelimit.headers.per_window}
    free = [window for window in ("minute", "day") if window not in taken]
    return free[0] if len(free) == 1 else None


def value(
    name: str, was: str, now: str, banned: bool, plan: Plan | None, scenario: Scenario
) -> Advice | None:
    """The setting behind a limiter's header both answers carry, with values that differ."""
    if name == "x-ratelimit-reset":
        digits = decimals(was)
        if digits != decimals(now) and reset_kind(was) == reset_kind(now):
            return "ratelimit.headers.reset_decimals", (digits,)
        kind = reset_kind(was)
        if kind != "invalid" and kind != reset_kind(now):
            return _old_or_new(scenario, "behaviour.ratelimit_reset", "ratelimit.headers.reset",
                               kind, kind)  # fmt: skip
        return None
    if name == "retry-after":
        kind = retry_after_kind(was)
        field = "retry_after_banned" if banned else "retry_after"
        if kind == "decimal":
            if retry_after_kind(now) == "decimal":
                return "ratelimit.headers.retry_after_decimals", (max(1, decimals(was)),)
            return f"ratelimit.headers.{field}", ("decimal",)
        if kind in ("seconds", "http-date"):
            return _old_or_new(scenario, f"behaviour.{field}", f"ratelimit.headers.{field}",
                               kind, kind)  # fmt: skip
        return None
    if name == "x-ratelimit-resource":
        return "ratelimit.headers.resource", (was.strip(),)
    if name == "ratelimit-policy":
        named = _names(was, plan)
        mine = dict(scenario.ratelimit.headers.policies)
        for window, policy in named.items():
            if mine.get(window) != policy:
                return f"ratelimit.headers.policies.{window}", (policy,)
    return None


def plan_lengths(was: str, now: str, plan: Plan | None, scenario: Scenario) -> dict | None:
    """A draft ``RateLimit-Policy`` whose policies state the plan's allowances over other
    window lengths (``w``) than the mock's: the plan, inline, with the recorded lengths as
    its own (``minute_seconds``, ``day_seconds``; a gateway whose plans each have a window
    of their own), or None when the lengths agree or the quotas do not."""
    if plan is None:
        return None
    recorded, mine = _lengths_of(was, plan), _lengths_of(now, plan)
    limits = scenario.ratelimit
    figures: dict[str, Any] = {"per_minute": plan.per_minute}
    if plan.has_day:
        figures["per_day"] = plan.per_day
    changed = False
    for window, default, own in (
        ("minute", limits.minute.seconds, plan.minute_seconds),
        ("day", limits.day.seconds, plan.day_seconds),
    ):
        seconds = recorded.get(window)
        if seconds is not None and seconds != mine.get(window) and 1 <= seconds <= 86_400:
            own, changed = seconds, True
        if own and own != default:
            figures[f"{window}_seconds"] = own
    return figures if changed else None


def _lengths_of(policy: str, plan: Plan) -> dict[str, int]:
    """Each window's length (``w``) in a draft policy, the window told by its quota."""
    lengths: dict[str, int] = {}
    for _, params in sf_list(policy) or []:
        q, w = params.get("q", ""), params.get("w", "")
        if not (q.isdigit() and w.isdigit()) or plan.per_minute == plan.per_day:
            continue
        if int(q) == plan.per_minute:
            lengths["minute"] = int(w)
        elif plan.has_day and int(q) == plan.per_day:
            lengths["day"] = int(w)
    return lengths


def _names(policy: str, plan: Plan | None) -> dict[str, str]:
    """Each draft policy's window (by its quota, else the shorter ``w`` is the minute)."""
    items = sf_list(policy) or []
    named: dict[str, str] = {}
    for name, params in items:
        q = params.get("q", "")
        if plan is not None and q.isdigit():
            if int(q) == plan.per_minute != plan.per_day:
                named["minute"] = name
            elif int(q) == plan.per_day != plan.per_minute:
                named["day"] = name
    if len(named) < len(items):
        lengths = sorted(
            (int(params["w"]) if params.get("w", "").isdigit() else 0, name)
            for name, params in items
        )
        for index, (_, name) in enumerate(lengths[:2]):
            window = ("minute", "day")[index]
            named.setdefault(window, name)
    return named


def allowance(recorded_limit: str | None, plan: Plan | None) -> Advice | None:
    """A caller refused by one side and not the other while the allowance itself agrees
    (the refusal's limit is the plan's): how the window counts, not what it allows."""
    if plan is None or recorded_limit is None or not recorded_limit.strip().isdigit():
        return None
    limit = int(recorded_limit)
    if limit == plan.per_minute:
        return "ratelimit.minute.algorithm", ()
    if plan.has_day and limit == plan.per_day:
        return "ratelimit.day.algorithm", ()
    return None


def draft_names(was: str, now: str, scenario: Scenario) -> Advice | None:
    """A draft ``RateLimit`` header whose policies are named otherwise (in the same order:
    the minute's, then the day's): the first name that differs."""
    before, after = sf_list(was) or [], sf_list(now) or []
    if len(before) != len(after):
        return None
    mine = dict(scenario.ratelimit.headers.policies)
    for window, (name, _), (other, _) in zip(("minute", "day"), before, after, strict=False):
        if name != other and mine.get(window) != name:
            return f"ratelimit.headers.policies.{window}", (name,)
    return None
