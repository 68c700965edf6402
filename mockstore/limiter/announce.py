"""What an answer's headers say about the allowance, in the forms a scenario's provider uses.

``mockstore.headers`` writes the classic forms on a path tuned to the
instruction; a scenario whose ``ratelimit.headers`` asks for more (``Used`` and
``Resource``, Kong's per-window figures, a reset or a ``Retry-After`` with
decimals, the draft headers under the provider's policy names or on 2xx
answers only) has its rate-limit headers written here, for every answer,
from the same ``Decision``. For the classic forms both write the same bytes
(``tests/test_limiter_headers.py`` holds them to it).

Every figure is rounded up at its precision, as ``mockstore.headers`` rounds
whole seconds: no header names an instant before the one from which the
client may really retry. Instants are written on the headers' clock
(``offset`` added; see ``mockstore.headers``), waits are the same on any.
A decision that counted nothing (a caller the limiter does not count:
``ratelimit.anonymous: none``) is announced by no header at all, or as an allowance
of nothing (``ratelimit.headers.uncounted: zero``).
"""

from __future__ import annotations

import math

from mockstore.limiter.model import Announcement, Limits, a_success
from mockstore.limiter.rules import plan_lengths
from mockstore.ratelimit import Decision, Plan

Header = tuple[bytes, bytes]

# Rounding an instant first to the microsecond: an offset read from two wall-clock
# readings carries float noise that, rounded up, would move a figure a whole step.
_MICROSECONDS = 6
# What a header can state: an instant from 1970 to the end of the year 9999.
_LATEST_STATED = 253402300799


def rounded_up(value: float, decimals: int) -> bytes:
    """``value`` rounded up to ``decimals`` digits after the point, as a header writes it."""
    scale = 10**decimals
    # To the microsecond first (its noise is no wait), then up at the precision.
    steps = math.ceil(round(round(value, _MICROSECONDS) * scale, _MICROSECONDS))
    if not decimals:
        return b"%d" % steps
    whole, part = divmod(steps, scale)
    return b"%d.%0*d" % (whole, decimals, part)


def _stated(when: float) -> float:
    return min(max(when, 0.0), float(_LATEST_STATED))


def http_date(when: float) -> bytes:
    """An IMF-fixdate for an instant, rounded up to the second."""
    from email.utils import formatdate

    moment = math.ceil(round(_stated(when), _MICROSECONDS))
    return formatdate(moment, usegmt=True).encode()


class Announcer:
    """Writes the rate-limit headers of every answer under one scenario's ``Limits``."""

    def __init__(self, limits: Limits) -> None:
        headers: Announcement = limits.headers
        self.headers = headers
        self._figures = headers.figures
        self._resource = headers.resource.encode("latin-1")
        self._per_window = [
            (window, suffix.lower().encode("latin-1")) for window, suffix in headers.per_window
        ]
        self._limits = limits
        self._seconds = {"minute": limits.minute.seconds, "day": limits.day.seconds}
        self._names = {window: name.encode("latin-1") for window, name in headers.policies}
        banned = headers.retry_after_banned
        self._banned_form = headers.retry_after if banned == "same" else banned
        self._zero = headers.uncounted == "zero"
        # A window's own Retry-After form (ratelimit.refusal.<window>.retry_after), if any.
        self._refusal_forms = {
            window: refusal.retry_after
            for window in ("minute", "day")
            if (refusal := limits.refusals.of(window)) is not None and refusal.retry_after
        }
        self._second = headers.second
        self._second_names = [
            headers.second.header(figure).lower().encode("latin-1")
            for figure in (headers.second.figures if headers.second is not None else ())
        ]

    def write(
        self, decision: Decision, plan: Plan, now: float, offset: float, ratelimit: int | bool
    ) -> list[Header]:
        """The headers for ``decision`` on an answer of status ``ratelimit`` (falsy: an answer
        that states no figures, though a refusal still says when to come back; ``True``: a
        status not told, taken as a success)."""
        if not decision.limit:  # a caller the limiter does not count
            return self._uncounted(now, offset) if ratelimit and self._zero else []
        out: list[Header] = []
        if ratelimit:
            self._write_figures(out, decision, plan, now, offset)
            draft = self.headers.draft
            if draft == "all" or (
                draft == "success" and (ratelimit is True or a_success(ratelimit))
            ):
                out.extend(self.draft(decision, plan, now))
        if decision.retry_after:
            value = self.retry_after(decision, now, offset)
            if value is not None:
                out.append((b"retry-after", value))
        return out

    def _uncounted(self, now: float, offset: float) -> list[Header]:
        """An allowance of nothing (``ratelimit.headers.uncounted: zero``), whole at once."""
        out: list[Header] = []
        for figure in self._figures:
            if figure in ("limit", "remaining", "used"):
                out.append((b"x-ratelimit-" + figure.encode(), b"0"))
            elif figure == "reset":
                out.append((b"x-ratelimit-reset", self.reset(now, now, offset)))
            else:
                out.append((b"x-ratelimit-resource", self._resource))
        return out

    def _write_figures(
        self, out: list[Header], decision: Decision, plan: Plan, now: float, offset: float
    ) -> None:
        for figure in self._figures:
            if figure == "limit":
                out.append((b"x-ratelimit-limit", b"%d" % decision.limit))
            elif figure == "remaining":
                out.append((b"x-ratelimit-remaining", b"%d" % decision.remaining))
            elif figure == "reset":
                out.append((b"x-ratelimit-reset", self.reset(decision.reset, now, offset)))
            elif figure == "used":
                out.append((b"x-ratelimit-used", b"%d" % (decision.limit - decision.remaining)))
            else:
                out.append((b"x-ratelimit-resource", self._resource))
        for window, suffix in self._per_window:
            if window == "minute":
                limit, left = plan.per_minute, decision.minute_remaining
            elif plan.has_day:
                limit, left = plan.per_day, decision.day_remaining
            else:
                continue
            out.append((b"x-ratelimit-limit-" + suffix, b"%d" % limit))
            out.append((b"x-ratelimit-remaining-" + suffix, b"%d" % left))
        if self._second is not None:
            self._write_second(out, decision, plan, now, offset)

    def _write_second(
        self, out: list[Header], decision: Decision, plan: Plan, now: float, offset: float
    ) -> None:
        """The second set of headers (``ratelimit.headers.second_set``): its window's figures
        (during a ban, nothing left until it ends, as every window says then)."""
        second, names = self._second, self._second_names
        assert second is not None
        if second.window == "minute":
            limit, left, reset = plan.per_minute, decision.minute_remaining, decision.minute_reset
        elif plan.has_day:
            limit, left, reset = plan.per_day, decision.day_remaining, decision.day_reset
        else:
            return  # a plan without a day allowance: no day to describe
        for figure, name in zip(second.figures, names, strict=True):
            if figure == "limit":
                out.append((name, b"%d" % limit))
            elif figure == "remaining":
                out.append((name, b"%d" % left))
            elif figure == "used":
                out.append((name, b"%d" % (limit - left)))
            else:
                out.append((name, self._reset(second.reset, 0, reset, now, offset)))

    def reset(self, instant: float, now: float, offset: float) -> bytes:
        """``X-RateLimit-Reset`` for a window that is whole again at ``instant``."""
        return self._reset(self.headers.reset, self.headers.reset_decimals, instant, now, offset)

    @staticmethod
    def _reset(form: str, decimals: int, instant: float, now: float, offset: float) -> bytes:
        """A reset in ``form`` with ``decimals`` for a window whole again at ``instant``."""
        if form == "delta":
            if not decimals:  # two instants of the scenario clock: no wall-clock noise to drop
                return b"%d" % max(0, math.ceil(instant - now))
            return rounded_up(max(0.0, instant - now), decimals)
        stated = _stated(instant + offset)
        if form == "epoch-ms":
            return rounded_up(stated * 1000, 0)
        return rounded_up(stated, decimals)

    def retry_after(self, decision: Decision, now: float, offset: float) -> bytes | None:
        """A refusal's ``Retry-After`` in the scenario's form for its condition (None: none)."""
        form = self._banned_form if decision.verdict == "key_banned" else self.headers.retry_after
        if self._refusal_forms and decision.verdict == "rate_limited":
            form = self._refusal_forms.get(decision.blocking, form)
        if form == "seconds":
            return b"%d" % decision.retry_after
        if form == "decimal":
            decimals = self.headers.retry_after_decimals
            wait = max(decision.retry_at - now, 10.0**-decimals)
            return rounded_up(wait, decimals)
        if form == "http-date":
            return http_date(decision.retry_at + offset)
        return None

    def draft(self, decision: Decision, plan: Plan, now: float) -> list[Header]:
        """The IETF draft ``RateLimit-Policy`` / ``RateLimit`` headers (structured fields).

        ``t`` is whole seconds to each window's reset, rounded up; during a ban
        every window says 0 remaining for as long as ``Retry-After`` says.
        """
        windows = [("minute", plan.per_minute, decision.minute_remaining, decision.minute_reset)]
        if plan.has_day:
            windows.append(("day", plan.per_day, decision.day_remaining, decision.day_reset))
        seconds = self._seconds
        if plan.minute_seconds or plan.day_seconds:  # a plan's own lengths (the policy's w)
            minute, day = plan_lengths(self._limits, plan)
            seconds = {"minute": minute, "day": day}
        policy, state = [], []
        for window, limit, left, reset in windows:
            name = self._names[window]
            if decision.verdict == "key_banned":
                wait = decision.retry_after
            else:
                wait = max(0, math.ceil(reset - now))
            policy.append(b'"%b";q=%d;w=%d' % (name, limit, seconds[window]))
            state.append(b'"%b";r=%d;t=%d' % (name, left, wait))
        return [(b"ratelimit-policy", b", ".join(policy)), (b"ratelimit", b", ".join(state))]
