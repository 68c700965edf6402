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

from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo, available_timezones

from mockstore.fidelity.calibrate.rate_figures import (
    Sample,
    plan_figures,
    policy_windows,
    quota_of,
    quotas_of,
    samples_of,
)
from mockstore.fidelity.calibrate.rate_forms import learn_forms
from mockstore.fidelity.calibrate.result import Calibration
from mockstore.fidelity.evidence import Seen
from mockstore.fidelity.formats import sf_list
from mockstore.limiter.model import DAY_SECONDS, Window
from mockstore.limiter.rules import Rule, rule_for

# Between the recorder's instant and the provider's: the figures may differ by this much,
# or by an exchange's latency where it was longer (the provider answered within it).
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


@dataclass
class Fit:
    """A candidate rule for one window, and how far it is from the recording."""

    window: Window
    zone: str
    counts: str
    misfits: int
    first: Sample | None  # the first answer it did not reproduce
    shown: int  # the answers whose figures it was held to
    given_back: tuple[str, ...] = ()  # classes of answers that give back what they took
    # Plans (their group, ``_groups``) that count this window over a length of their own.
    lengths: dict[str, int] = field(default_factory=dict)


def learn_limiter(seen: list[Seen], result: Calibration, cite: Any) -> None:
    """Settle the ``ratelimit:`` settings ``seen`` shows on ``result`` (``cite`` cites one)."""
    quotas = quotas_of(result)
    samples = samples_of(seen, quotas)
    learn_forms(seen, result, cite)
    # What counts is one choice for both windows: each fitted under each, the fewer
    # misfits kept (served, mockstore's own, on a tie).
    # And which answers give back what they took (classes of the statuses admitted).
    classes = sorted(
        {f"{s.seen.status // 100}xx" for members in samples.values() for s in members
         if s.verdict == "allowed" and s.seen.status >= 400}
    )  # fmt: skip
    given_back = [(), *((c,) for c in classes), *([tuple(classes)] if len(classes) > 1 else [])]
    chosen: dict[str, Fit] = {}
    for counts in ("served", "attempts"):
        for back in given_back:
            fits = {
                name: _fit_plans(name, samples, quotas, counts, back) for name in ("minute", "day")
            }
            found = {name: fit for name, fit in fits.items() if fit is not None}
            if not chosen or sum(f.misfits for f in found.values()) < sum(
                f.misfits for f in chosen.values()
            ):
                chosen = found
    _write(chosen, samples, quotas, result, cite)


# -- the candidates --------------------------------------------------------------------------


def _lengths(name: str, samples: dict[str, list[Sample]], quotas: Any) -> list[int]:
    """Window lengths the figures point to (the draft's ``w``, and each algorithm's reading
    of the first resets), mockstore's own first."""
    found = [_DEFAULT_SECONDS[name]]
    stated: list[int] = []
    for bucket, members in samples.items():
        minute, day = quota_of(bucket if members[0].seen.keyed else "", quotas)
        quota = minute if name == "minute" else day
        if quota is None:
            continue
        first = members[0].now
        for sample in members:
            w = _draft_length(sample, name, minute, day)
            if w is not None and w not in stated:
                stated.append(w)
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
    # The draft's w states the window's length: no reading of the figures overrides it
    # (a bucket of 1000 barely drawn reads as full under a 1 s window as under 60 s).
    lengths = []
    for length in stated or found:
        if 1 <= length <= DAY_SECONDS and length not in lengths:
            lengths.append(length)
    return lengths[:60]


def _draft_length(sample: Sample, name: str, minute: int, day: int | None) -> int | None:
    policy = sf_list(sample.seen.headers.get("ratelimit-policy", "")) or []
    windows = policy_windows(policy, minute, day)
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
    given_back: tuple[str, ...] = (),
    variant: tuple[str, str] | None = None,
) -> Fit | None:
    """The first candidate for window ``name`` that reproduces the most answers (of one
    algorithm and alignment, ``variant``, where it is given)."""
    shown = sum(1 for members in samples.values() for s in members if name in s.windows)
    if not shown:
        return None
    best: Fit | None = None
    for length in _lengths(name, samples, quotas):
        for algorithm, align in _VARIANTS if variant is None else (variant,):
            window = Window(length, algorithm, align)
            if window.gridded and DAY_SECONDS % length:
                continue
            for zone in _zones(name, samples, length) if window.gridded else ["UTC"]:
                fit = _replay(name, window, zone, counts, samples, quotas, given_back)
                if best is None or fit.misfits < best.misfits:
                    best = fit
                if best.misfits == 0:
                    return best
    return best


def _fit_plans(
    name: str,
    samples: dict[str, list[Sample]],
    quotas: dict[str, tuple[int, int | None]],
    counts: str,
    given_back: tuple[str, ...] = (),
) -> Fit | None:
    """``_fit``'s rule, or, where no one length reproduces every plan's answers, one rule with a
    length per plan (Kong's per-consumer windows: 5 per 5 s for one plan, per minute for the
    others) when that reproduces more of them: the same algorithm, alignment and time zone
    for every plan, each plan's length the one that fits its callers' answers best."""
    whole = _fit(name, samples, quotas, counts, given_back)
    if whole is None or not whole.misfits:
        return whole
    groups = _groups(samples, quotas)
    if len(groups) < 2:
        return whole
    best: dict[str, Fit] | None = None
    for algorithm, align in _VARIANTS:
        fits = {}
        for group, members in groups.items():
            fit = _fit(name, members, quotas, counts, given_back, (algorithm, align))
            if fit is not None:
                fits[group] = fit
        if not fits or len({f.zone for f in fits.values()}) > 1:
            continue  # one time zone for the scenario
        if best is None or _misfits(fits) < _misfits(best):
            best = fits
        if not _misfits(best):
            break
    if best is None or _misfits(best) >= whole.misfits:
        return whole
    # The scenario's length is the one most answers were held to (mockstore's own on a tie).
    held: Counter[int] = Counter()
    for fit in best.values():
        held[fit.window.seconds] += fit.shown
    main = max(held, key=lambda seconds: (held[seconds], seconds == _DEFAULT_SECONDS[name]))
    own = {group: f.window.seconds for group, f in best.items() if f.window.seconds != main}
    if not own:
        return whole
    like = max(best.values(), key=lambda f: (f.window.seconds == main, f.shown))
    first = next((f.first for f in best.values() if f.first is not None), None)
    return Fit(
        like.window,
        like.zone,
        counts,
        _misfits(best),
        first,
        sum(f.shown for f in best.values()),
        given_back,
        own,
    )


def _misfits(fits: dict[str, Fit]) -> int:
    return sum(fit.misfits for fit in fits.values())


ANONYMOUS = "anonymous"


def plan_group(bucket: str, keyed: bool, quotas: dict[str, tuple[int, int | None]]) -> str:
    """The plan a caller is on, as far as calibrate knows plans: callers without a key are
    on the anonymous plan, keys by the allowances learned for them."""
    if not keyed:
        return ANONYMOUS
    minute, day = quota_of(bucket, quotas)
    return f"{minute}/{day}"


def _groups(
    samples: dict[str, list[Sample]], quotas: dict[str, tuple[int, int | None]]
) -> dict[str, dict[str, list[Sample]]]:
    """The callers' answers by the plan they are on."""
    groups: dict[str, dict[str, list[Sample]]] = {}
    for bucket, members in samples.items():
        group = plan_group(bucket, members[0].seen.keyed, quotas)
        groups.setdefault(group, {})[bucket] = members
    return groups


def _replay(
    name: str,
    window: Window,
    zone: str,
    counts: str,
    samples: dict[str, list[Sample]],
    quotas: dict[str, tuple[int, int | None]],
    given_back: tuple[str, ...] = (),
) -> Fit:
    """How many answers ``window`` (in ``zone``, counting ``counts``, the ``given_back``
    classes of answers giving back what they took) does not reproduce."""
    rule: Rule = rule_for(window, zone)
    misfits, first, held = 0, None, 0
    for bucket, members in samples.items():
        minute, day = quota_of(bucket if members[0].seen.keyed else "", quotas)
        quota = minute if name == "minute" else day
        if quota is None or quota < 1:
            continue  # no window counts to a quota of nothing
        state = rule.new()
        # A bucket refills continuously: what the provider's instant (up to SKEW from the
        # recorder's) adds may show as requests left; the other rules count whole requests.
        latest = max((m.seen.item.latency or 0.0 for m in members), default=0.0)
        slack = (
            int(quota * max(SKEW, latest) / window.seconds) + 1 if rule.kind in ("t", "g") else 0
        )
        for sample in members:
            now = sample.now
            grid = rule.grid
            rule.roll(state, now, grid.at(now) if grid is not None else None)
            if sample.verdict == "key_banned":
                continue  # nothing counts during a ban
            if _uncounted(sample, name, rule, state, now, quota, slack):
                held += 1  # its figures are this window's as it stood: reproduced
                continue
            wrong = False
            # The provider's instant lies within the exchange's latency after the recorder's.
            skew = max(SKEW, (sample.seen.item.latency or 0.0) + 0.05)
            if sample.verdict == "allowed":
                wrong = rule.at(state, now, quota) > now + skew
                rule.count(state, now, quota)
            else:
                if counts == "attempts":
                    rule.count(state, now, quota)
                shown = sample.windows.get(name)
                if shown is not None and shown.blocking:
                    at = rule.at(state, now, quota)
                    wrong = at <= now - skew or not _near(at, sample.retry, sample, name, skew)
            shown = sample.windows.get(name)
            if shown is not None:
                held += 1
                left, reset = rule.figures(state, now, quota)
                if shown.remaining is not None and abs(shown.remaining - left) > slack:
                    wrong = True
                if shown.reset is not None and not (
                    shown.reset - shown.precision - skew <= reset <= shown.reset + skew
                ):
                    wrong = True
            if wrong:
                misfits += 1
                first = first or sample
            if sample.verdict == "allowed" and f"{sample.seen.status // 100}xx" in given_back:
                rule.uncount(state, now, quota)  # after its answer, which still counts it
    return Fit(window, zone, counts, misfits, first, held, given_back)


# Answers a gateway may give before its limiter counts (a route it does not serve, a CORS
# refusal, a refusal no rule explains): whether they count is the http section's and the
# routes' to say, not the limiter's, so each is held to what its figures show.
_BEFORE_COUNTING = frozenset({"unknown_path", "method_not_allowed", "cors_rejected", "unexplained"})


def _uncounted(
    sample: Sample, name: str, rule: Rule, state: Any, now: float, quota: int, slack: int
) -> bool:
    """Whether ``sample`` is an answer the provider gave before counting it: one of
    ``_BEFORE_COUNTING`` whose figures show this window as it stood before the request."""
    if sample.verdict != "allowed" or sample.seen.condition not in _BEFORE_COUNTING:
        return False
    shown = sample.windows.get(name)
    if shown is None or shown.remaining is None:
        return False
    left, _ = rule.figures(state, now, quota)
    return abs(shown.remaining - left) <= slack


def _near(at: float, retry: float | None, sample: Sample, name: str, skew: float) -> bool:
    """Whether ``Retry-After`` (when it is this window's to say) names ``at``."""
    if retry is None:
        return True
    others = [w for w, shown in sample.windows.items() if w != name and shown.blocking]
    if others:
        return True  # another window may hold out longer: its wait is the one told
    return retry - sample.retry_precision - skew <= at <= retry + skew


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
    back = next((fit.given_back for fit in chosen.values() if fit.given_back), ())
    if back:
        name, fit = next((n, f) for n, f in chosen.items() if f.given_back)
        result.set("ratelimit.not_counted", list(back), _evidence(fit, samples, name, cite))
    classic = (
        not back
        and not any(fit.lengths for fit in chosen.values())
        and len(aligns) <= 1
        and all(
            fit.window.seconds == _DEFAULT_SECONDS[name]
            and fit.window.algorithm == "fixed"
            and fit.zone == "UTC"
            and fit.counts == "served"
            for name, fit in chosen.items()
        )
    )
    # Each window fitted is settled, its settings at mockstore's defaults too (so that what
    # the probes see of a window, fewer answers, does not write over what the recording did).
    for name in chosen:
        for setting in ("seconds", "algorithm", "align"):
            result.confirm(f"ratelimit.{name}.{setting}")
    if chosen:
        for setting in ("counts", "not_counted", "time_zone"):
            result.confirm(f"ratelimit.{setting}")
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
        if fit.lengths:
            _write_lengths(name, fit, quotas, result, evidence)
        _alternatives(fit, samples, quotas, name, result)
    zones = sorted({fit.zone for fit in chosen.values() if fit.window.gridded} - {"UTC"})
    if zones:
        name, fit = next((n, f) for n, f in chosen.items() if f.zone == zones[0])
        result.set("ratelimit.time_zone", zones[0], _evidence(fit, samples, name, cite))
        result.open(
            f"ratelimit.time_zone: the recording shows {zones[0]}'s offset on one day; a zone "
            "with daylight saving time would turn its day at another hour part of the year"
        )


def _write_lengths(
    name: str,
    fit: Fit,
    quotas: dict[str, tuple[int, int | None]],
    result: Calibration,
    evidence: str,
) -> None:
    """Each plan's own length of window ``name`` on its plan: the keys' (an inline plan) and
    the anonymous plan (``plans.anonymous``), written as the allowances learned for them."""
    setting = f"{name}_seconds"
    note = f"{setting}: {{}} s, where the other plans count {fit.window.seconds} s; {evidence}"
    for key in result.keys:
        seconds = fit.lengths.get(plan_group(key.alias, True, quotas))
        if seconds is not None and key.alias in quotas:
            key.plan = {**_inline(key.plan), setting: seconds}
            key.evidence.append(note.format(seconds))
    anonymous = result.anonymous
    seconds = fit.lengths.get(ANONYMOUS)
    if anonymous is not None and seconds is not None and "" in quotas:
        anonymous.value = {**_inline(anonymous.value), setting: seconds}
        anonymous.evidence.append(note.format(seconds))


def _inline(plan: Any) -> dict[str, Any]:
    """A plan as an inline ``{per_minute, per_day}`` (a built-in's figures where it is named)."""
    if isinstance(plan, dict):
        return dict(plan)
    figures = plan_figures(plan)
    assert figures is not None, plan
    minute, day = figures
    return {"per_minute": minute, **({"per_day": day} if day is not None else {})}


def _evidence(fit: Fit, samples: dict[str, list[Sample]], name: str, cite: Any) -> str:
    """A citation: an answer of this window whose figures the rule reproduces."""
    example = fit.first or next(
        s for members in samples.values() for s in members if name in s.windows
    )
    what = fit.window.algorithm.replace("_", " ")
    if fit.window.algorithm == "fixed":
        what += f" window from {'the clock' if fit.window.align == 'clock' else 'a first request'}"
    back = f" ({', '.join(fit.given_back)} given back)" if fit.given_back else ""
    note = (
        f"a {what} of {fit.window.seconds} s, {fit.counts} counted{back}, reproduces "
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
    if fit.lengths:
        return  # each plan's length was the only one of its algorithm tried against the rest
    alike = []
    for algorithm, align in _VARIANTS:
        window = Window(fit.window.seconds, algorithm, align)
        if window == fit.window or (window.gridded and DAY_SECONDS % window.seconds):
            continue
        other = _replay(name, window, fit.zone, fit.counts, samples, quotas, fit.given_back)
        if other.misfits == 0:
            alike.append(algorithm if algorithm != "fixed" else f"fixed ({align})")
    if alike:
        result.open(
            f"ratelimit.{name}.algorithm: {', '.join(alike)} reproduce the recording as well "
            f"(written: {fit.window.algorithm}); a longer recording would tell them apart"
        )
