"""The forms a provider's rate-limit headers take, read off a recording (``ratelimit.headers``).

Which ``X-RateLimit-*`` figures are sent (``Used``, ``Resource`` and its
value), Kong's per-window headers and each one's window, the reset's
decimals, ``Retry-After`` as decimal seconds (or none) on a refusal and on a
ban, the draft headers' policy names and whether they are on 2xx answers only,
and whether callers without a key are limited at all. A setting the older
``behaviour`` settings cannot say moves the one ``learn`` wrote there to
``ratelimit:`` (a scenario says each thing once).
"""

from __future__ import annotations

from typing import Any

from mockstore.fidelity.calibrate.rate_figures import (
    PER_WINDOW,
    policy_windows,
    quota_of,
    quotas_of,
    second_sets,
    window_of,
)
from mockstore.fidelity.calibrate.result import Calibration
from mockstore.fidelity.evidence import Seen
from mockstore.fidelity.formats import decimals, reset_kind, retry_after_kind, sf_list
from mockstore.fidelity.rate_advice import SECOND_SET
from mockstore.limiter.model import a_success

_BAN_STATUS = 429  # ban.status's default: a ban no recording showed is answered 429


def learn_forms(seen: list[Seen], result: Calibration, cite: Any) -> None:
    """Settle ``ratelimit.headers`` (and ``ratelimit.anonymous``) as ``seen`` shows them."""
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
    _second_set(seen, result, cite)
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
        return
    # An allowance of nothing (Tollgate: X-RateLimit-Limit: 0 on every 401): callers the
    # limiter does not count, told so in figures of 0.
    told = [s.headers.get("x-ratelimit-limit", "").strip() for s in keyless]
    if keyless and all(limit == "0" for limit in told):
        evidence = cite(keyless[0], "X-RateLimit-Limit", code=False, note="an allowance of 0")
        result.set("ratelimit.anonymous", "none", evidence)
        result.set("ratelimit.headers.uncounted", "zero", evidence)
        result.anonymous = None


def _per_window(seen: list[Seen], result: Calibration, cite: Any) -> None:
    """Kong's per-window headers: each name's window, by its allowance; a name whose
    allowance is both windows' takes the window no other name does."""
    quotas = quotas_of(result)
    named: dict[str, tuple[str, Seen, str]] = {}  # suffix -> (window, example, header)
    ambiguous: dict[str, tuple[Seen, str]] = {}
    for s in seen:
        minute, day = quota_of(s.bucket if s.keyed else "", quotas)
        for header, value in s.item.response_headers:
            match = PER_WINDOW.fullmatch(header.lower())
            if not match or match.group(1) != "limit" or not value.strip().isdigit():
                continue
            suffix, limit = match.group(2), int(value)
            if suffix in named:
                continue
            if minute == day and limit == minute:
                ambiguous.setdefault(suffix, (s, header))
                continue
            window = "minute" if limit == minute else "day" if limit == day else None
            if window is not None:
                named[suffix] = (window, s, header)
    for suffix, (s, header) in ambiguous.items():
        free = {"minute", "day"} - {window for window, _, _ in named.values()}
        if suffix not in named and len(free) == 1:
            named[suffix] = (free.pop(), s, header)
    for window, s, header in named.values():
        path = f"ratelimit.headers.per_window.{window}"
        if not result.settled(path):
            result.set(path, header[len("x-ratelimit-limit-") :], cite(s, header, code=False))


_SET_FIGURES = ("limit", "remaining", "reset", "used")


def _second_set(seen: list[Seen], result: Calibration, cite: Any) -> None:
    """A second set of rate-limit headers (``X-RateLimit-Burst-*``): its name, the window its
    limit states the allowance of, the figures it carries and its reset's form."""
    quotas = quotas_of(result)
    for s in seen:
        minute, day = quota_of(s.bucket if s.keyed else "", quotas)
        for name, figures in second_sets(s.headers).items():
            window = window_of(figures.get("limit"), minute, day)
            if window is None:
                continue
            carried = {
                figure for other in seen for figure in second_sets(other.headers).get(name, {})
            }
            header = next(h for h, _ in s.item.response_headers if SECOND_SET.fullmatch(h.lower())
                          and h.lower().startswith(f"x-ratelimit-{name}-"))  # fmt: skip
            evidence = cite(s, header, code=False)
            where = "ratelimit.headers.second_set"
            written = header.split("-")[2]  # as the provider wrote it, else Capitalised
            result.set(f"{where}.name", written.capitalize() if written.islower() else written,
                       evidence)  # fmt: skip
            result.set(f"{where}.window", window, evidence)
            ordered = [figure for figure in _SET_FIGURES if figure in carried]
            if ordered != ["limit", "remaining", "reset"]:
                result.set(f"{where}.figures", ordered, evidence)
            resets = [
                reset_kind(other.headers[f"x-ratelimit-{name}-reset"])
                for other in seen
                if f"x-ratelimit-{name}-reset" in other.headers
            ]
            if resets and resets[0] not in ("delta", "invalid"):
                result.set(f"{where}.reset", resets[0], evidence)
            return  # one second set: the first whose window the figures tell


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
    elif refusal_form == "none" and result.value("ban.status", _BAN_STATUS) == _BAN_STATUS:
        # No ban seen: "same" would leave the unseen ban's 429 without Retry-After (the
        # spec's 429 carries it); the ban keeps mockstore's form.
        result.set(
            "ratelimit.headers.retry_after_banned",
            "seconds",
            cite(refused[0], "Retry-After", note="no ban seen: a ban's 429 keeps whole seconds"),
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
    # Answers that tell figures in any form (Kong's per-window X-RateLimit-Limit-<name>
    # alone, say), the draft's or not.
    figured = [
        s for s in seen
        if "ratelimit-policy" in s.headers or any(n.startswith("x-ratelimit-") for n in s.headers)
    ]  # fmt: skip
    bare = [s for s in figured if "ratelimit-policy" not in s.headers]
    # Drafted on 2xx answers only, and some other answer told its figures without: the
    # draft on successes. (A 2xx without it too, an answer of the edge's, say, is not
    # told apart by any value: "all" would add the draft to every refusal as well.)
    if all(a_success(s.status) for s in drafted) and any(not a_success(s.status) for s in bare):
        _migrate(result, "behaviour.ratelimit_draft_headers", "ratelimit.headers.draft")
        result.set(
            "ratelimit.headers.draft",
            "success",
            cite(bare[0], code=False, note="no RateLimit-Policy on an answer other than 2xx"),
        )
    quotas = quotas_of(result)
    found: dict[str, tuple[str, Seen]] = {}
    for s in drafted:
        minute, day = quota_of(s.bucket if s.keyed else "", quotas)
        policy = sf_list(s.headers["ratelimit-policy"]) or []
        for name, window in policy_windows(policy, minute, day).items():
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
