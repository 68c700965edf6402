"""What a recording's answers show of each of a plan's two windows, caller by caller.

``calibrate``'s limiter learner (``mockstore.fidelity.calibrate.limiter``) holds
each candidate rule to what the provider's answers said: the requests left and
when the window is whole again, from ``X-RateLimit-*`` (the window they describe
told by its allowance), the draft ``RateLimit`` header (each policy's window by
its quota or its length) and Kong's per-window headers, and when to come back
(``Retry-After``). Every instant is brought back to the service's clock and
kept with the precision it was written at (a figure is rounded up).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from mockstore.fidelity.calibrate.result import Calibration
from mockstore.fidelity.evidence import Seen
from mockstore.fidelity.formats import decimals, http_date, reset_kind, retry_after_kind, sf_list
from mockstore.fidelity.rate_advice import SECOND_SET
from mockstore.ratelimit import BUILTIN_PLANS

PER_WINDOW = re.compile(r"x-ratelimit-(limit|remaining)-([a-z0-9]+)")


def second_sets(headers: dict[str, str]) -> dict[str, dict[str, str]]:
    """Each second set an answer's headers (lower-case names) carry: name -> figure -> value."""
    found: dict[str, dict[str, str]] = {}
    for name, value in headers.items():
        match = SECOND_SET.fullmatch(name)
        if match is not None:
            found.setdefault(match.group(1), {})[match.group(2)] = value.strip()
    return found


def window_of(limit: str | None, minute: int, day: int | None) -> str | None:
    """The window whose allowance ``limit`` states (None: neither, or both)."""
    if limit is None or not limit.isdigit() or minute == day:
        return None
    return "minute" if int(limit) == minute else "day" if int(limit) == day else None


@dataclass
class Shown:
    """What one answer shows of one window: requests left, and when it is whole again."""

    remaining: int | None = None
    reset: float | None = None  # the instant, as written (rounded up)
    precision: float = 1.0  # how far the provider rounded ``reset`` up, at most
    blocking: bool = False  # a refusal that says this window has nothing left


@dataclass
class Sample:
    """One recorded answer to one caller, as the limiter saw it."""

    seen: Seen
    now: float
    verdict: str  # allowed, rate_limited or key_banned
    windows: dict[str, Shown] = field(default_factory=dict)
    retry: float | None = None  # the instant Retry-After names
    retry_precision: float = 1.0


def plan_figures(value: Any) -> tuple[int, int | None] | None:
    if isinstance(value, str) and value in BUILTIN_PLANS:
        plan = BUILTIN_PLANS[value]
        return plan.per_minute, plan.day
    # Only figures a plan may hold (a recorded X-RateLimit-Limit of 0 is none: no window
    # counts to a quota of nothing).
    if isinstance(value, dict) and _allowance(value.get("per_minute")):
        day = value.get("per_day")
        return value["per_minute"], day if _allowance(day) else None
    return None


def _allowance(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def quotas_of(result: Calibration) -> dict[str, tuple[int, int | None]]:
    """Each bucket's (per_minute, per_day) as ``learn`` settled them (anonymous: ``None`` key)."""
    quotas: dict[str, tuple[int, int | None]] = {}
    for key in result.keys:
        figures = plan_figures(key.plan)
        if figures is not None:
            quotas[key.alias] = figures
    if result.anonymous is not None:
        figures = plan_figures(result.anonymous.value)
        if figures is not None:
            quotas[""] = figures
    return quotas


def quota_of(bucket: str, quotas: dict[str, tuple[int, int | None]]) -> tuple[int, int | None]:
    return quotas.get(bucket) or quotas.get("") or (60, 1000)


def _number(text: str | None) -> float | None:
    if text is None or not re.fullmatch(r"[0-9]+(\.[0-9]+)?", text.strip()):
        return None
    return float(text)


def samples_of(
    seen: list[Seen], quotas: dict[str, tuple[int, int | None]]
) -> dict[str, list[Sample]]:
    """Every caller's answers in order, with what each shows of each window."""
    buckets: dict[str, list[Sample]] = {}
    for s in seen:
        if s.condition == "key_banned":
            verdict = "key_banned"
        elif s.condition == "rate_limited":
            verdict = "rate_limited"
        else:
            verdict = "allowed"
        bucket = s.bucket if s.keyed else ""
        sample = Sample(s, s.item.time, verdict)
        _read_figures(sample, quota_of(bucket, quotas))
        buckets.setdefault(s.bucket, []).append(sample)
    return buckets


def _read_figures(sample: Sample, quota: tuple[int, int | None]) -> None:
    s, now = sample.seen, sample.now
    headers = s.headers
    minute, day = quota
    limit = _number(headers.get("x-ratelimit-limit"))
    left = _number(headers.get("x-ratelimit-remaining"))
    raw = headers.get("x-ratelimit-reset")
    reset, precision = None, 1.0
    if raw is not None and _number(raw) is not None:
        kind, value = reset_kind(raw), float(raw)
        precision = 10.0 ** -decimals(raw)
        if kind == "epoch":
            reset = value - s.header_offset
        elif kind == "epoch-ms":
            reset, precision = value / 1000 - s.header_offset, 0.001
        elif kind == "delta":
            reset = now + value
    if limit is not None and sample.verdict != "key_banned":
        window = _described(int(limit), reset, now, minute, day)
        if window is not None:
            shown = sample.windows.setdefault(window, Shown())
            shown.remaining = int(left) if left is not None else None
            shown.reset, shown.precision = reset, precision
            shown.blocking = sample.verdict == "rate_limited" and left == 0
    _read_draft(sample, minute, day)
    _read_per_window(sample, minute, day)
    if sample.verdict != "key_banned":
        _read_second_sets(sample, minute, day)
    value = headers.get("retry-after")
    if value is not None:
        kind = retry_after_kind(value)
        if kind in ("seconds", "decimal"):
            sample.retry = now + float(value)
            sample.retry_precision = 10.0 ** -decimals(value)
        elif kind == "http-date":
            sample.retry = (http_date(value) or 0.0) - s.header_offset


def _described(
    limit: int, reset: float | None, now: float, minute: int, day: int | None
) -> str | None:
    """The window an answer's X-RateLimit-* describe: by its limit, else by its reset."""
    if day is None:
        return "minute" if limit == minute else None
    if limit == minute != day:
        return "minute"
    if limit == day != minute:
        return "day"
    if limit != minute or reset is None:
        return None
    # One allowance for both: a minute ends within two of its lengths (a sliding counter).
    return "minute" if reset - now <= 125 else "day"


def _read_draft(sample: Sample, minute: int, day: int | None) -> None:
    headers = sample.seen.headers
    policy = sf_list(headers.get("ratelimit-policy", "")) or []
    state = sf_list(headers.get("ratelimit", "")) or []
    if not policy or not state:
        return
    windows = policy_windows(policy, minute, day)
    for name, params in state:
        window = windows.get(name)
        r, t = params.get("r", ""), params.get("t", "")
        if window is None or not r.isdigit() or not t.isdigit():
            continue
        shown = sample.windows.setdefault(window, Shown())
        if shown.remaining is None:
            shown.remaining = int(r)
        if shown.reset is None and sample.verdict != "key_banned":
            shown.reset, shown.precision = sample.now + int(t), 1.0
        shown.blocking = shown.blocking or (sample.verdict == "rate_limited" and r == "0")


def policy_windows(
    policy: list[tuple[str, dict[str, str]]], minute: int, day: int | None
) -> dict[str, str]:
    """Each draft policy's window: by its quota, else the shorter ``w`` is the minute."""
    named: dict[str, str] = {}
    by_length = sorted(
        (
            (int(params["w"]) if params.get("w", "").isdigit() else 0, name)
            for name, params in policy
        )
    )
    for name, params in policy:
        q = params.get("q", "")
        if q.isdigit() and int(q) == minute != day:
            named[name] = "minute"
        elif q.isdigit() and day is not None and int(q) == day != minute:
            named[name] = "day"
    if len(named) < len(policy):
        for index, (_, name) in enumerate(by_length[:2]):
            named.setdefault(name, ("minute", "day")[index])
    return named


def _read_second_sets(sample: Sample, minute: int, day: int | None) -> None:
    """What a second set of headers (``X-RateLimit-Burst-*``) shows of the window whose
    allowance its limit states: requests left, and when it is whole again."""
    s, now = sample.seen, sample.now
    for figures in second_sets(s.headers).values():
        window = window_of(figures.get("limit"), minute, day)
        if window is None:
            continue
        shown = sample.windows.setdefault(window, Shown())
        left = figures.get("remaining", "")
        if shown.remaining is None and left.isdigit():
            shown.remaining = int(left)
        raw = figures.get("reset")
        if shown.reset is None and raw is not None and _number(raw) is not None:
            kind, value = reset_kind(raw), float(raw)
            precision = 10.0 ** -decimals(raw)
            if kind == "epoch":
                shown.reset, shown.precision = value - s.header_offset, precision
            elif kind == "epoch-ms":
                shown.reset, shown.precision = value / 1000 - s.header_offset, 0.001
            elif kind == "delta":
                shown.reset, shown.precision = now + value, precision
        shown.blocking = shown.blocking or (sample.verdict == "rate_limited" and left == "0")


def _read_per_window(sample: Sample, minute: int, day: int | None) -> None:
    headers = sample.seen.headers
    limits: dict[str, int] = {}
    for name, value in headers.items():
        match = PER_WINDOW.fullmatch(name)
        if match and match.group(1) == "limit" and value.strip().isdigit():
            limits[match.group(2)] = int(value)
    for suffix, limit in limits.items():
        window = "minute" if limit == minute else "day" if limit == day else None
        left = headers.get(f"x-ratelimit-remaining-{suffix}", "").strip()
        if window is None or not left.isdigit():
            continue
        shown = sample.windows.setdefault(window, Shown())
        if shown.remaining is None:
            shown.remaining = int(left)
        shown.blocking = shown.blocking or (sample.verdict == "rate_limited" and left == "0")


def allowances_shown(members: list[Seen]) -> tuple[tuple[int | None, int | None], Seen] | None:
    """A caller's (per_minute, per_day) where headers name both, and the answer that does:
    the draft ``RateLimit-Policy`` (the shorter ``w`` is the minute's; one policy of at most
    two minutes is the minute's) or Kong's two per-window limits (the smaller, the minute's)."""
    for s in members:
        policy = sf_list(s.headers.get("ratelimit-policy", "")) or []
        quotas = sorted(
            (int(params["w"]), int(params["q"]))
            for _, params in policy
            if params.get("w", "").isdigit() and params.get("q", "").isdigit()
        )
        if len(quotas) == 2:
            return (quotas[0][1], quotas[1][1]), s
        if len(quotas) == 1 and quotas[0][0] <= 125:
            return (quotas[0][1], None), s
    for s in members:
        values = sorted(
            {int(value) for name, value in s.headers.items()
             if PER_WINDOW.fullmatch(name) and name.startswith("x-ratelimit-limit-")
             and value.strip().isdigit()}
        )  # fmt: skip
        if len(values) == 2:
            return (values[0], values[1]), s
    # A second set of headers (X-RateLimit-Burst-*) beside X-RateLimit-*: two allowances,
    # the smaller the minute's.
    for s in members:
        main = s.headers.get("x-ratelimit-limit", "").strip()
        for figures in second_sets(s.headers).values():
            other = figures.get("limit", "")
            if main.isdigit() and other.isdigit() and int(main) != int(other):
                low, high = sorted((int(main), int(other)))
                return (low, high), s
    return None


def other_allowance(members: list[Seen], minute: int) -> tuple[int | None, str]:
    """The day's allowance a per-window header states beside the minute's (Kong's
    ``X-RateLimit-Limit-<name>`` of a value other than ``minute``), and a note citing it."""
    for s in members:
        for name, value in s.headers.items():
            if (
                name.startswith("x-ratelimit-limit-")
                and value.strip().isdigit()
                and int(value) != minute
            ):
                return int(value), f"recorded #{s.index + 1}: {name}: {value.strip()}"
    return None, ""
