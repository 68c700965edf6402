"""``calibrate``'s part for the limiter: the windows and the forms that reproduce a recording.

A gateway's limiter shows itself in what each answer says: how many requests
are left, when the window is whole again, when to come back. For each of a
plan's two windows (the minute's allowance and the day's), every candidate
rule (each algorithm, each window length the figures point to, each time zone
a reset on the clock's grid points to, served requests or every attempt
counted) is replayed over the recorded request instants of every caller,
counting what the recording shows was let through (or every attempt), with
mockstore's own rules (``mockstore.limiter``): the rule kept is the first, in
the order of ``_VARIANTS`` (mockstore's own first), that reproduces every
recorded verdict, remaining count, reset and ``Retry-After`` of its window.
Figures are compared within the precision the provider wrote them at, and a
quarter of a second for the time between the recorder's clock and the
provider's. What no recorded figure tells apart (a token bucket from a GCRA,
a window that slides from one that starts at the first request, over one
burst) is listed as open; the exchange that settled each setting is cited.

The forms are read off the headers: which ``X-RateLimit-*`` figures are sent
(``Used``, ``Resource``), Kong's per-window ones, the reset's decimals, a
decimal ``Retry-After``, the draft headers under the provider's policy names
and on which answers, and whether callers without a key are limited at all.
A setting that the older ``behaviour`` settings cannot say replaces the one
``learn`` wrote there (a scenario says each thing once).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo, available_timezones

from mockstore.fidelity.calibrate.result import Calibration
from mockstore.fidelity.evidence import Seen
from mockstore.fidelity.formats import decimals, http_date, reset_kind, retry_after_kind, sf_list
from mockstore.limiter.limiter import Rule, rule_for
from mockstore.limiter.model import DAY_SECONDS, Window
from mockstore.ratelimit import BUILTIN_PLANS

# Between the recorder's instant and the provider's: the figures may differ by this much.
SKEW = 0.25
# The candidates, in the order of preference when several fit (mockstore's own first).
_VARIANTS = (
    ("fixed", "clock"),
    ("fixed", "first_request"),
    ("sliding_log", "clock"),
    ("sliding_window", "clock"),
    ("token_bucket", "clock"),
    ("leaky_bucket", "clock"),
)
_DEFAULT_SECONDS = {"minute": 60, "day": DAY_SECONDS}
_DIVISORS = tuple(n for n in range(1, DAY_SECONDS + 1) if DAY_SECONDS % n == 0)
_PER_WINDOW = re.compile(r"x-ratelimit-(limit|remaining)-([a-z0-9]+)")


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


@dataclass
class Fit:
    """A candidate rule for one window, and how far it is from the recording."""

    window: Window
    zone: str
    counts: str
    misfits: int
    first: Sample | None  # the first answer it did not reproduce
    shown: int  # the answers whose figures it was held to


def learn_limiter(seen: list[Seen], result: Calibration, cite: Any) -> None:
    """Settle the ``ratelimit:`` settings ``seen`` shows on ``result`` (``cite`` cites one)."""
    quotas = _quotas(result)
    samples = _samples(seen, quotas)
    _forms(seen, samples, result, cite)
    # What counts is one choice for both windows: each fitted under each, the fewer
    # misfits kept (served, mockstore's own, on a tie).
    chosen: dict[str, Fit] = {}
    for counts in ("served", "attempts"):
        fits = {name: _fit(name, samples, quotas, counts) for name in ("minute", "day")}
        found = {name: fit for name, fit in fits.items() if fit is not None}
        if not chosen or sum(f.misfits for f in found.values()) < sum(
            f.misfits for f in chosen.values()
        ):
            chosen = found
    _write(chosen, samples, quotas, result, cite)


# -- reading the recording ---------------------------------------------------------------


def _plan_figures(value: Any) -> tuple[int, int | None] | None:
    if isinstance(value, str) and value in BUILTIN_PLANS:
        plan = BUILTIN_PLANS[value]
        return plan.per_minute, plan.day
    if isinstance(value, dict) and isinstance(value.get("per_minute"), int):
        return value["per_minute"], value.get("per_day")
    return None


def _quotas(result: Calibration) -> dict[str, tuple[int, int | None]]:
    """Each bucket's (per_minute, per_day) as ``learn`` settled them (anonymous: ``None`` key)."""
    quotas: dict[str, tuple[int, int | None]] = {}
    for key in result.keys:
        figures = _plan_figures(key.plan)
        if figures is not None:
            quotas[key.alias] = figures
    if result.anonymous is not None:
        figures = _plan_figures(result.anonymous.value)
        if figures is not None:
            quotas[""] = figures
    return quotas


def _quota_of(bucket: str, quotas: dict[str, tuple[int, int | None]]) -> tuple[int, int | None]:
    return quotas.get(bucket) or quotas.get("") or (60, 1000)


def _number(text: str | None) -> float | None:
    if text is None or not re.fullmatch(r"[0-9]+(\.[0-9]+)?", text.strip()):
        return None
    return float(text)


def _samples(
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
        _read_figures(sample, _quota_of(bucket, quotas))
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
    windows = _policy_windows(policy, minute, day)
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


def _policy_windows(
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


def _read_per_window(sample: Sample, minute: int, day: int | None) -> None:
    headers = sample.seen.headers
    limits: dict[str, int] = {}
    for name, value in headers.items():
        match = _PER_WINDOW.fullmatch(name)
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


# -- the candidates --------------------------------------------------------------------------


def _lengths(name: str, samples: dict[str, list[Sample]], quotas: Any) -> list[int]:
    """Window lengths the figures point to (the draft's ``w``, and each algorithm's reading
    of the first resets), mockstore's own first."""
    found = [_DEFAULT_SECONDS[name]]
    for bucket, members in samples.items():
        minute, day = _quota_of(bucket if members[0].seen.keyed else "", quotas)
        quota = minute if name == "minute" else day
        if quota is None:
            continue
        first = members[0].now
        for sample in members:
            w = _draft_length(sample, name, minute, day)
            if w is not None:
                found.append(w)
        for sample in [m for m in members if m.verdict == "allowed" and name in m.windows][:3]:
            shown = sample.windows[name]
            if shown.reset is None or shown.remaining is None:
                continue
            ahead = shown.reset - sample.now
            used = quota - shown.remaining
            found.append(round(ahead))  # a log: the newest instant is now
            found.append(round(shown.reset - first))  # a window from the first request
            if used > 0:
                found.append(round(ahead * quota / used))  # a bucket refills used intervals
            # On the grid: a window (or, sliding, two) ends at the reset.
            found.extend(d for d in _DIVISORS if ahead - 1 <= d <= 2 * ahead + 1)
    lengths = []
    for length in found:
        if 1 <= length <= DAY_SECONDS and length not in lengths:
            lengths.append(length)
    return lengths[:60]


def _draft_length(sample: Sample, name: str, minute: int, day: int | None) -> int | None:
    policy = sf_list(sample.seen.headers.get("ratelimit-policy", "")) or []
    windows = _policy_windows(policy, minute, day)
    for policy_name, params in policy:
        if windows.get(policy_name) == name and params.get("w", "").isdigit():
            return int(params["w"])
    return None


def _zones(name: str, samples: dict[str, list[Sample]], length: int) -> list[str]:
    """UTC, and a zone whose midnight puts a recorded reset on the grid of ``length``."""
    zones = ["UTC"]
    if length < 3600:
        return zones
    for members in samples.values():
        for sample in members:
            shown = sample.windows.get(name)
            if shown is None or shown.reset is None:
                continue
            # Zones are offset by whole quarter hours: the rounding of the figure goes.
            instant = round(shown.reset / 900) * 900
            offset = (-instant) % length
            if offset > length / 2:
                offset -= length
            zone = zone_with_offset(int(offset), instant, length)
            if zone is not None and zone not in zones:
                zones.append(zone)
            break
    return zones


def zone_with_offset(offset: int, instant: float, length: int = DAY_SECONDS) -> str | None:
    """A time zone whose offset at ``instant`` is ``offset`` seconds east of UTC, modulo
    ``length``: an ``Etc/GMT`` zone for whole hours (no daylight saving time), else the
    first IANA zone of that offset (the recording tells no more)."""
    for hours in range(-12, 15):
        if (hours * 3600 - offset) % length == 0:
            return "UTC" if hours == 0 else f"Etc/GMT{'-' if hours > 0 else '+'}{abs(hours)}"
    moment = datetime.fromtimestamp(instant, UTC)
    for zone in sorted(available_timezones()):
        if zone.startswith(("posix/", "right/")):
            continue
        shift = ZoneInfo(zone).utcoffset(moment)
        if shift is not None and (int(shift.total_seconds()) - offset) % length == 0:
            return zone
    return None


def _fit(
    name: str,
    samples: dict[str, list[Sample]],
    quotas: dict[str, tuple[int, int | None]],
    counts: str,
) -> Fit | None:
    """The first candidate for window ``name`` that reproduces the most answers."""
    shown = sum(1 for members in samples.values() for s in members if name in s.windows)
    if not shown:
        return None
    best: Fit | None = None
    for length in _lengths(name, samples, quotas):
        for algorithm, align in _VARIANTS:
            window = Window(length, algorithm, align)
            if window.gridded and DAY_SECONDS % length:
                continue
            for zone in _zones(name, samples, length) if window.gridded else ["UTC"]:
                fit = _replay(name, window, zone, counts, samples, quotas)
                if best is None or fit.misfits < best.misfits:
                    best = fit
                if best.misfits == 0:
                    return best
    return best


def _replay(
    name: str,
    window: Window,
    zone: str,
    counts: str,
    samples: dict[str, list[Sample]],
    quotas: dict[str, tuple[int, int | None]],
) -> Fit:
    """How many answers ``window`` (in ``zone``, counting ``counts``) does not reproduce."""
    rule: Rule = rule_for(window, zone)
    misfits, first, held = 0, None, 0
    for bucket, members in samples.items():
        minute, day = _quota_of(bucket if members[0].seen.keyed else "", quotas)
        quota = minute if name == "minute" else day
        if quota is None:
            continue
        state = rule.new()
        for sample in members:
            now = sample.now
            grid = rule.grid
            rule.roll(state, now, grid.at(now) if grid is not None else None)
            if sample.verdict == "key_banned":
                continue  # nothing counts during a ban
            wrong = False
            if sample.verdict == "allowed":
                wrong = rule.at(state, now, quota) > now + SKEW
                rule.count(state, now, quota)
            else:
                if counts == "attempts":
                    rule.count(state, now, quota)
                shown = sample.windows.get(name)
                if shown is not None and shown.blocking:
                    at = rule.at(state, now, quota)
                    wrong = at <= now - SKEW or not _near(at, sample.retry, sample, name)
            shown = sample.windows.get(name)
            if shown is not None:
                held += 1
                left, reset = rule.figures(state, now, quota)
                if shown.remaining is not None and shown.remaining != left:
                    wrong = True
                if shown.reset is not None and not (
                    shown.reset - shown.precision - SKEW <= reset <= shown.reset + SKEW
                ):
                    wrong = True
            if wrong:
                misfits += 1
                first = first or sample
    return Fit(window, zone, counts, misfits, first, held)


def _near(at: float, retry: float | None, sample: Sample, name: str) -> bool:
    """Whether ``Retry-After`` (when it is this window's to say) names ``at``."""
    if retry is None:
        return True
    others = [w for w, shown in sample.windows.items() if w != name and shown.blocking]
    if others:
        return True  # another window may hold out longer: its wait is the one told
    return retry - sample.retry_precision - SKEW <= at <= retry + SKEW


# -- the forms ------------------------------------------------------------------------------


def _forms(
    seen: list[Seen], samples: dict[str, list[Sample]], result: Calibration, cite: Any
) -> None:
    figured = [s for s in seen if "x-ratelimit-limit" in s.headers]
    if figured:
        figures = ["limit", "remaining", "reset"]
        for figure in ("used", "resource"):
            if any(f"x-ratelimit-{figure}" in s.headers for s in figured):
                figures.append(figure)
        if len(figures) > 3:
            example = next(s for s in figured if len(_extra_figures(s)) == len(figures) - 3)
            result.set(
                "ratelimit.headers.figures",
                figures,
                cite(example, "X-RateLimit-Used", "X-RateLimit-Resource", code=False),
            )
        resources = {
            s.headers["x-ratelimit-resource"]
            for s in figured
            if "x-ratelimit-resource" in s.headers
        }
        if len(resources) == 1:
            value = next(iter(resources))
            example = next(s for s in figured if "x-ratelimit-resource" in s.headers)
            result.set(
                "ratelimit.headers.resource",
                value,
                cite(example, "X-RateLimit-Resource", code=False),
            )
        elif len(resources) > 1:
            result.cannot(f"X-RateLimit-Resource names more than one resource: {sorted(resources)}")
    _anonymous(seen, result, cite)
    _per_window(seen, result, cite)
    _reset_decimals(seen, result, cite)
    _retry_forms(seen, result, cite)
    _draft(seen, result, cite)


def _extra_figures(s: Seen) -> list[str]:
    return [f for f in ("used", "resource") if f"x-ratelimit-{f}" in s.headers]


def _anonymous(seen: list[Seen], result: Calibration, cite: Any) -> None:
    keyless = [s for s in seen if not s.keyed and s.status == 401]
    figured = any("x-ratelimit-limit" in s.headers for s in seen)
    if keyless and figured and all("x-ratelimit-limit" not in s.headers for s in keyless):
        result.set(
            "ratelimit.anonymous",
            "none",
            cite(keyless[0], code=False, note="no X-RateLimit-* to a caller without a key"),
        )
        result.anonymous = None


def _per_window(seen: list[Seen], result: Calibration, cite: Any) -> None:
    """Kong's per-window headers: each name's window, by its allowance (one name each)."""
    quotas = _quotas(result)
    named: dict[str, str] = {}  # suffix -> window
    for s in seen:
        minute, day = _quota_of(s.bucket if s.keyed else "", quotas)
        for header, value in s.item.response_headers:
            match = _PER_WINDOW.fullmatch(header.lower())
            if not match or match.group(1) != "limit" or not value.strip().isdigit():
                continue
            suffix, limit = match.group(2), int(value)
            if suffix in named or minute == day:
                continue
            window = "minute" if limit == minute else "day" if limit == day else None
            path = f"ratelimit.headers.per_window.{window}"
            if window is None or result.settled(path):
                continue
            named[suffix] = window
            result.set(path, header[len("x-ratelimit-limit-") :], cite(s, header, code=False))


def _reset_decimals(seen: list[Seen], result: Calibration, cite: Any) -> None:
    resets = [s for s in seen if "x-ratelimit-reset" in s.headers]
    places = {decimals(s.headers["x-ratelimit-reset"]) for s in resets}
    places.discard(0)
    if places:
        digits = max(places)
        example = next(s for s in resets if decimals(s.headers["x-ratelimit-reset"]) == digits)
        result.set(
            "ratelimit.headers.reset_decimals",
            digits,
            cite(example, "X-RateLimit-Reset", code=False),
        )
        _migrate(result, "behaviour.ratelimit_reset", "ratelimit.headers.reset")


def _retry_forms(seen: list[Seen], result: Calibration, cite: Any) -> None:
    refused = [s for s in seen if s.condition == "rate_limited"]
    banned = [s for s in seen if s.condition == "key_banned"]
    forms: dict[str, str] = {}
    for condition, answers in (("rate_limited", refused), ("key_banned", banned)):
        if not answers:
            continue
        value = answers[0].headers.get("retry-after")
        forms[condition] = "none" if value is None else retry_after_kind(value)
    digits = 0
    for s in [*refused, *banned]:
        value = s.headers.get("retry-after")
        if value is not None and retry_after_kind(value) == "decimal":
            digits = max(digits, decimals(value))
    refusal_form = forms.get("rate_limited")
    if refusal_form in ("decimal", "none"):
        _migrate(result, "behaviour.retry_after", "ratelimit.headers.retry_after")
        result.set(
            "ratelimit.headers.retry_after",
            refusal_form,
            cite(
                refused[0], "Retry-After", note="no Retry-After" if refusal_form == "none" else ""
            ),
        )
    banned_form = forms.get("key_banned")
    if banned_form is not None and (
        banned_form == "decimal" or refusal_form in ("decimal", "none")
    ):
        # A ban's form beside a decimal one: said in ratelimit.headers, as its own.
        _migrate(result, "behaviour.retry_after_banned", "ratelimit.headers.retry_after_banned")
        same = banned_form == (refusal_form or "seconds")
        result.set(
            "ratelimit.headers.retry_after_banned",
            "same" if same else banned_form,
            cite(banned[0], "Retry-After", note="no Retry-After" if banned_form == "none" else ""),
        )
    if digits:
        example = next(
            s for s in [*refused, *banned]
            if retry_after_kind(s.headers.get("retry-after", "")) == "decimal"
        )  # fmt: skip
        result.set("ratelimit.headers.retry_after_decimals", digits, cite(example, "Retry-After"))


def _draft(seen: list[Seen], result: Calibration, cite: Any) -> None:
    drafted = [s for s in seen if "ratelimit-policy" in s.headers]
    if not drafted:
        return
    figured = [
        s for s in seen if "x-ratelimit-limit" in s.headers or "ratelimit-policy" in s.headers
    ]
    bare = [s for s in figured if "ratelimit-policy" not in s.headers]
    if (
        bare
        and all(200 <= s.status < 300 for s in drafted)
        and all(not 200 <= s.status < 300 for s in bare)
    ):
        _migrate(result, "behaviour.ratelimit_draft_headers", "ratelimit.headers.draft")
        result.set(
            "ratelimit.headers.draft",
            "success",
            cite(bare[0], code=False, note="no RateLimit-Policy on an answer other than 2xx"),
        )
    quotas = _quotas(result)
    found: dict[str, tuple[str, Seen]] = {}
    for s in drafted:
        minute, day = _quota_of(s.bucket if s.keyed else "", quotas)
        policy = sf_list(s.headers["ratelimit-policy"]) or []
        for name, window in _policy_windows(policy, minute, day).items():
            found.setdefault(window, (name, s))
    for window, (name, s) in sorted(found.items()):
        if name != window:
            result.set(
                f"ratelimit.headers.policies.{window}",
                name,
                cite(s, "RateLimit-Policy", code=False),
            )


def _migrate(result: Calibration, old: str, new: str) -> None:
    """Move an older setting ``learn`` wrote to its ``ratelimit:`` place (said once)."""
    setting = result.settings.pop(old, None)
    if setting is None or result.settled(new):
        return
    value = setting.value
    if old == "behaviour.ratelimit_draft_headers":
        value = "all" if value else "none"
    result.settings[new] = setting.__class__(value, setting.evidence)


# -- writing ----------------------------------------------------------------------------------


def _write(
    chosen: dict[str, Fit],
    samples: dict[str, list[Sample]],
    quotas: dict[str, tuple[int, int | None]],
    result: Calibration,
    cite: Any,
) -> None:
    for name in ("minute", "day"):
        if name not in chosen:
            result.open(
                f"ratelimit.{name}: no answer shows this window's figures; mockstore's "
                f"{'clock minute' if name == 'minute' else 'UTC day'} kept"
            )
    aligns = {fit.window.align for fit in chosen.values()}
    classic = len(aligns) <= 1 and all(
        fit.window.seconds == _DEFAULT_SECONDS[name]
        and fit.window.algorithm == "fixed"
        and fit.zone == "UTC"
        and fit.counts == "served"
        for name, fit in chosen.items()
    )
    if classic:
        return  # the older settings say it all (learn's behaviour.ratelimit_windows)
    # behaviour.ratelimit_windows said both windows' alignment: ratelimit: says it now.
    result.settings.pop("behaviour.ratelimit_windows", None)
    for name, fit in chosen.items():
        evidence = _evidence(fit, samples, name, cite)
        window = fit.window
        if window.seconds != _DEFAULT_SECONDS[name]:
            result.set(f"ratelimit.{name}.seconds", window.seconds, evidence)
        if window.algorithm != "fixed":
            result.set(f"ratelimit.{name}.algorithm", window.algorithm, evidence)
        else:
            result.set(f"ratelimit.{name}.align", window.align, evidence)
        if fit.counts == "attempts":
            result.set("ratelimit.counts", "attempts", evidence)
        _alternatives(fit, samples, quotas, name, result)
    zones = sorted({fit.zone for fit in chosen.values() if fit.window.gridded} - {"UTC"})
    if zones:
        name, fit = next((n, f) for n, f in chosen.items() if f.zone == zones[0])
        result.set("ratelimit.time_zone", zones[0], _evidence(fit, samples, name, cite))
        result.open(
            f"ratelimit.time_zone: the recording shows {zones[0]}'s offset on one day; a zone "
            "with daylight saving time would turn its day at another hour part of the year"
        )


def _evidence(fit: Fit, samples: dict[str, list[Sample]], name: str, cite: Any) -> str:
    """A citation: an answer of this window whose figures the rule reproduces."""
    example = fit.first or next(
        s for members in samples.values() for s in members if name in s.windows
    )
    what = fit.window.algorithm.replace("_", " ")
    if fit.window.algorithm == "fixed":
        what += f" window from {'the clock' if fit.window.align == 'clock' else 'a first request'}"
    note = (
        f"a {what} of {fit.window.seconds} s, {fit.counts} counted, reproduces "
        f"{fit.shown - fit.misfits} of {fit.shown} answers showing the {name}'s figures"
    )
    return cite(
        example.seen, "X-RateLimit-Remaining", "X-RateLimit-Reset", "Retry-After",
        code=False, note=note,
    )  # fmt: skip


def _alternatives(
    fit: Fit,
    samples: dict[str, list[Sample]],
    quotas: dict[str, tuple[int, int | None]],
    name: str,
    result: Calibration,
) -> None:
    """Rules of another kind that reproduce the recording as well are listed as open."""
    if fit.misfits:
        result.open(
            f"ratelimit.{name}: no rule reproduces every answer of this window; the closest "
            f"misses {fit.misfits} of {fit.shown}"
        )
        return
    alike = []
    for algorithm, align in _VARIANTS:
        window = Window(fit.window.seconds, algorithm, align)
        if window == fit.window or (window.gridded and DAY_SECONDS % window.seconds):
            continue
        other = _replay(name, window, fit.zone, fit.counts, samples, quotas)
        if other.misfits == 0:
            alike.append(algorithm if algorithm != "fixed" else f"fixed ({align})")
    if alike:
        result.open(
            f"ratelimit.{name}.algorithm: {', '.join(alike)} reproduce the recording as well "
            f"(written: {fit.window.algorithm}); a longer recording would tell them apart"
        )
