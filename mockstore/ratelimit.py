"""Rate limits by plan: two fixed windows per bucket, and temporary bans.

A bucket is whatever the caller is counted as (an API key, or the anonymous
bucket of one client address). Each bucket has a minute window aligned to the
clock's minute and a day window aligned to UTC midnight, or (a scenario's
``ratelimit_windows: first_request``) windows that start at the bucket's first
request after the last one ended. This module knows nothing of HTTP or of key
strings: the caller passes a bucket id and a plan.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, NamedTuple, Protocol

from mockstore.clock import ARITHMETIC

MINUTE = 60
DAY = 86_400
# The day allowance of a plan that has none (a scenario's plan without per_day): never reached.
NO_DAY = 10**15


@dataclass(frozen=True, slots=True)
class Plan:
    """An account plan's allowance: requests per minute and per day.

    ``minute_seconds`` and ``day_seconds``: the length of the window each allowance
    is counted in where the plan has one of its own (a scenario's
    ``plans.<name>.minute_seconds``); 0: the scenario's (``ratelimit.minute.seconds``).
    Only the general limiter (``mockstore.limiter``) counts a plan with one.
    """

    name: str
    per_minute: int
    per_day: int = NO_DAY  # NO_DAY: no day allowance
    minute_seconds: int = 0
    day_seconds: int = 0

    @property
    def has_day(self) -> bool:
        return self.per_day < NO_DAY

    @property
    def day(self) -> int | None:
        """``per_day`` as a document shows it: None for a plan without a day allowance."""
        return self.per_day if self.per_day < NO_DAY else None


# The spec's table. Enterprise is "custom": the built-in figure is ours
# (documented in the README) and a scenario sets its own.
BUILTIN_PLANS: dict[str, Plan] = {
    "free": Plan("free", 60, 1_000),
    "pro": Plan("pro", 300, 10_000),
    "business": Plan("business", 1_000, 100_000),
    "enterprise": Plan("enterprise", 5_000, 1_000_000),
}


@dataclass(frozen=True, slots=True)
class BanPolicy:
    """When a bucket that keeps sending after 429 gets banned, and for how long.

    No defaults here: a scenario's ``ban:`` settings (defaults in the scenario
    schema) decide them.
    """

    after_rejections: int
    within_seconds: float
    duration_seconds: float
    status: int = 429
    # within: after_rejections within within_seconds; consecutive: with no admitted
    # request between them.
    trigger: str = "within"


Verdict = Literal["allowed", "rate_limited", "key_banned"]


class Decision(NamedTuple):
    """What the limiter decided for one request, and every figure a response states.

    ``limit``, ``remaining`` and ``reset`` are the ``X-RateLimit-*`` values.
    ``retry_at`` is the exact instant from which a new request can be allowed
    (0.0 when this one was), and ``retry_after`` the whole seconds until then,
    rounded up: a client that waits as told is never early. The per-window
    figures feed the draft ``RateLimit`` header; during a ban both windows
    say 0 remaining until the ban ends, as ``X-RateLimit-*`` do, so every
    header of one response tells the same story.

    A NamedTuple rather than a frozen dataclass: one is made per request, and
    a frozen dataclass sets each of its 11 fields through ``object.__setattr__``
    (about 17,000 instructions; this costs a tenth of that). Immutable all the
    same; the hidden cost is that it also compares equal to a plain tuple of
    the same values, which nothing here does.
    """

    verdict: Verdict
    limit: int
    remaining: int
    reset: int
    retry_after: int
    retry_at: float
    window: Literal["minute", "day"]
    minute_remaining: int
    day_remaining: int
    minute_reset: int
    day_reset: int
    # The window that refused a request (``window`` may name the described one instead):
    # a scenario may give each window its own refusal (``mockstore.limiter.refusals``).
    blocking: str = "minute"

    @property
    def allowed(self) -> bool:
        return self.verdict == "allowed"


# Decision(...) without the Python frame of the generated ``__new__`` (the
# fields in order, as one tuple: every field, defaults too): the allowed path
# makes one per request.
_new_decision = tuple.__new__


@dataclass(frozen=True, slots=True)
class Usage:
    """A bucket's standing, for the control API (nothing is consumed)."""

    minute_used: int
    minute_remaining: int
    minute_reset: int
    day_used: int
    day_remaining: int
    day_reset: int
    banned_until: float | None
    recent_rejections: int


class Bucket:
    """The counters of one bucket. Mutated only by ``RateLimiter``.

    ``minute_end`` and ``day_end`` are kept beside the starts so that "does
    the current window still hold this instant?" is two comparisons per
    window on every request, instead of working the window starts out again
    (two float floor divisions); ``roll`` does that only when the answer is no.
    """

    __slots__ = (
        "banned_until",
        "day_end",
        "day_start",
        "day_used",
        "minute_end",
        "minute_start",
        "minute_used",
        "rejections",
        "told_until",
        "told_until_wall",
    )

    def __init__(self) -> None:
        self.minute_start = self.minute_end = -1
        self.minute_used = 0
        self.day_start = self.day_end = -1
        self.day_used = 0
        self.rejections: deque[float] = deque()
        self.banned_until: float | None = None
        # The instant the last refusal said to come back at, on the scenario
        # clock and on the wall clock (see ``RateLimiter._record_rejection``).
        self.told_until: float | None = None
        self.told_until_wall = 0.0

    def roll(self, now: float) -> None:
        """Start new windows when the clock has moved past the current ones (or back)."""
        minute_start = int(now // MINUTE) * MINUTE
        if minute_start != self.minute_start:
            self.minute_start = minute_start
            self.minute_end = minute_start + MINUTE
            self.minute_used = 0
        day_start = int(now // DAY) * DAY
        if day_start != self.day_start:
            self.day_start = day_start
            self.day_end = day_start + DAY
            self.day_used = 0


class FirstRequestBucket(Bucket):
    """A bucket whose windows start at its first request after the last one ended."""

    __slots__ = ()

    def roll(self, now: float) -> None:
        # The limiter calls this only when ``now`` is outside a window (see
        # ``RateLimiter.check``): the ends are kept for that test.
        if not self.minute_start <= now < self.minute_end:
            self.minute_start = now  # type: ignore[assignment]
            self.minute_end = now + MINUTE  # type: ignore[assignment]
            self.minute_used = 0
        if not self.day_start <= now < self.day_end:
            self.day_start = now  # type: ignore[assignment]
            self.day_end = now + DAY  # type: ignore[assignment]
            self.day_used = 0


class Offender(Protocol):
    """What ``escalate`` reads and writes of a bucket: its refusals, its ban, its told wait."""

    rejections: deque[float]
    banned_until: float | None
    told_until: float | None
    told_until_wall: float


def escalate(
    ban: BanPolicy,
    consecutive: bool,
    wall: Callable[[], float] | None,
    bucket: Offender,
    now: float,
    retry_at: float,
    admitted: float,
) -> None:
    """Note a refusal of ``bucket`` (told to come back at ``retry_at``); ban it at the threshold.

    ``admitted`` is a count that every admitted request of the bucket moves (a
    run of refusals ``consecutive`` ends when it moves). Its Lua twin is
    ``BAN_LUA``. ``wall`` is read only here: a client that came back when the
    wall clock said it might, while a manual scenario clock stood still, did
    as it was told, and that refusal does not count toward a ban. Nor does one
    that came back at the instant it was told, which the scenario clock (summed
    from a monotonic clock) put an ulp before it: within ``ARITHMETIC`` of it,
    as the etiquette verdict's waits (``reports.waits``) take it.
    """
    if wall is not None:
        wall_now = wall()
        waited = (
            bucket.told_until is not None
            and now < bucket.told_until
            and wall_now >= bucket.told_until_wall - ARITHMETIC
        )
        bucket.told_until = retry_at
        bucket.told_until_wall = wall_now + (retry_at - now)
        if waited:
            return
    rejections = bucket.rejections
    if consecutive:
        # A run of rejections with no admitted request between them: each notes
        # the count (negated, so it is never mistaken for an instant).
        mark = -float(admitted) - 1.0
        if rejections and rejections[0] != mark:
            rejections.clear()
        rejections.append(mark)
    else:
        rejections.append(now)
        horizon = now - ban.within_seconds
        while rejections and rejections[0] <= horizon:
            rejections.popleft()
    if len(rejections) >= ban.after_rejections:
        bucket.banned_until = now + ban.duration_seconds


# ``escalate`` in the request script of a shared state (``mockstore.shared.scripts``):
# KEYS[3] is the bucket's list of refusals; ``bu``, ``tu``, ``tw`` (its ban's end and the
# wait it was told, on both clocks), ``now``, ``wall`` and ``retry_at`` are the script's
# locals, ``num``, ``bad`` and ``fmt`` its checks of values read back and its writing of
# numbers; ARGV[B], [B + 1], [B + 2] the ban's threshold, window ('c': in a row), length.
BAN_LUA = (
    f"\nlocal ARITHMETIC = {ARITHMETIC!r}"
    + r"""
local function escalate(admitted)
  -- The refusals' list, read back: of our type, each entry a number, or dropped (``bad``).
  local kind = redis.call('TYPE', KEYS[3])['ok']
  if kind ~= 'list' and kind ~= 'none' then bad(KEYS[3]) end
  local waited = tu ~= nil and now < tu and wall >= tw - ARITHMETIC
  tu = retry_at; tw = wall + (retry_at - now)
  if waited then return end
  if ARGV[B + 1] == 'c' then
    local mark = -admitted - 1
    local first = redis.call('LINDEX', KEYS[3], 0)
    if first and num(first, KEYS[3]) ~= mark then redis.call('DEL', KEYS[3]) end
    redis.call('RPUSH', KEYS[3], fmt(mark))
  else
    redis.call('RPUSH', KEYS[3], fmt(now))
    local horizon = now - tonumber(ARGV[B + 1])
    while true do
      local first = redis.call('LINDEX', KEYS[3], 0)
      if first and num(first, KEYS[3]) <= horizon then redis.call('LPOP', KEYS[3]) else break end
    end
  end
  if redis.call('LLEN', KEYS[3]) >= tonumber(ARGV[B]) then bu = now + tonumber(ARGV[B + 2]) end
end
"""
)


class RateLimiter:
    """Counts requests per bucket against a plan and bans persistent offenders.

    ``windows`` is ``clock`` (aligned windows) or ``first_request``;
    ``describes`` the window an admitted request's figures state (``tightest``:
    the one with fewer left, the minute on a tie; or always ``minute`` or ``day``),
    and ``refusals`` a 429's: the window that ``blocks``, or the ``described`` one.

    ``wall`` is the clock a waiting client reads (``Clock.waited``: the wall
    clock, plus a manual clock's moves), read only when a request is refused: a
    client that waited as it was told by it (it slept, or slept part of the wait
    and moved the clock the rest), while a manual scenario clock had not got
    there, is refused again but is not "sending on after 429" and is never
    banned for it.
    """

    def __init__(
        self,
        ban: BanPolicy,
        windows: str = "clock",
        describes: str = "tightest",
        refusals: str = "blocking",
        wall: Callable[[], float] | None = None,
    ) -> None:
        self.ban = ban
        self.wall = wall
        self._buckets: dict[str, Bucket] = {}
        self._new_bucket: type[Bucket] = (
            FirstRequestBucket if windows == "first_request" else Bucket
        )
        self._consecutive = ban.trigger == "consecutive"
        self._describes = None if describes == "tightest" else describes
        # A refusal's figures: the window that blocks, or the one always described.
        self._refusals_described = refusals == "described" and self._describes is not None
        # Windows from a first request start at any instant: their resets are rounded up.
        self._fractional = windows == "first_request"

    def _bucket(self, bucket_id: str, now: float) -> Bucket:
        bucket = self._buckets.get(bucket_id)
        if bucket is None:
            bucket = self._buckets[bucket_id] = self._new_bucket()
        # Windows are aligned, so an instant inside both current windows would
        # roll into the same ones: only an instant outside either needs ``roll``.
        if not (
            bucket.minute_start <= now < bucket.minute_end
            and bucket.day_start <= now < bucket.day_end
        ):
            bucket.roll(now)
        return bucket

    def check(self, bucket_id: str, plan: Plan, now: float) -> Decision:
        """Decide one request: allow it (consuming one) or reject it (consuming nothing)."""
        # ``_bucket``, inlined: this runs on every request.
        bucket = self._buckets.get(bucket_id)
        if bucket is None:
            bucket = self._buckets[bucket_id] = self._new_bucket()
        if not (
            bucket.minute_start <= now < bucket.minute_end
            and bucket.day_start <= now < bucket.day_end
        ):
            bucket.roll(now)

        if bucket.banned_until is not None:
            if now < bucket.banned_until:
                return self._decision("key_banned", plan, bucket, now, bucket.banned_until)
            bucket.banned_until = None
            bucket.rejections.clear()

        minute_left = plan.per_minute - bucket.minute_used
        day_left = plan.per_day - bucket.day_used
        if minute_left <= 0 or day_left <= 0:
            # Waiting for the minute window is pointless while the day is spent.
            reset = bucket.day_end if day_left <= 0 else bucket.minute_end
            self._record_rejection(bucket, now, reset)
            return self._decision("rate_limited", plan, bucket, now, reset)

        bucket.minute_used += 1
        bucket.day_used += 1
        return self._decision("allowed", plan, bucket, now, 0.0)

    def peek(self, bucket_id: str, plan: Plan, now: float) -> Decision:
        """Where a bucket stands, as a Decision that counts nothing (for a 500's headers)."""
        bucket = self._bucket(bucket_id, now)
        if bucket.banned_until is not None and now < bucket.banned_until:
            return self._decision("key_banned", plan, bucket, now, bucket.banned_until)
        return self._decision("allowed", plan, bucket, now, 0.0)

    def _record_rejection(self, bucket: Bucket, now: float, retry_at: float) -> None:
        # An admitted request moves the day's count: what breaks a run of refusals.
        escalate(self.ban, self._consecutive, self.wall, bucket, now, retry_at, bucket.day_used)

    def _decision(
        self, verdict: Verdict, plan: Plan, bucket: Bucket, now: float, retry_at: float
    ) -> Decision:
        # Conditionals rather than max(0, ...): a builtin call costs eight times as much.
        minute_left = plan.per_minute - bucket.minute_used
        if minute_left < 0:
            minute_left = 0
        day_left = plan.per_day - bucket.day_used
        if day_left < 0:
            day_left = 0
        minute_reset = bucket.minute_end
        day_reset = bucket.day_end
        if self._fractional:
            minute_reset, day_reset = math.ceil(minute_reset), math.ceil(day_reset)
        describes = self._describes
        if verdict == "allowed" and describes is None:
            # The window nearer to running out is the one the headers state.
            if day_left < minute_left:
                return _new_decision(
                    Decision,
                    (verdict, plan.per_day, day_left, day_reset, 0, retry_at, "day",
                     minute_left, day_left, minute_reset, day_reset, "minute"),
                )  # fmt: skip
            return _new_decision(
                Decision,
                (verdict, plan.per_minute, minute_left, minute_reset, 0, retry_at, "minute",
                 minute_left, day_left, minute_reset, day_reset, "minute"),
            )  # fmt: skip
        window: Literal["minute", "day"]
        if verdict == "rate_limited" and self._refusals_described:
            window = describes  # type: ignore[assignment]
        elif verdict == "rate_limited":
            window = "day" if day_left == 0 else "minute"
        elif describes is not None:
            # A plan without a day allowance has only its minute to describe.
            window = describes if plan.has_day else "minute"  # type: ignore[assignment]
        else:
            window = "day" if day_left < minute_left else "minute"
        if window == "minute":
            limit, remaining, reset = plan.per_minute, minute_left, minute_reset
        else:
            limit, remaining, reset = plan.per_day, day_left, day_reset
        retry_after = 0
        if verdict != "allowed":  # (an allowed one gets here when a window is always described)
            # Rounded up, never down: a client that waits as told is not early.
            retry_after = max(1, math.ceil(retry_at - now))
        if verdict == "key_banned":
            # Nothing is allowed until the ban ends, whatever the windows hold.
            ban_end = math.ceil(retry_at)
            remaining = minute_left = day_left = 0
            reset = minute_reset = day_reset = ban_end
        return Decision(
            verdict,
            limit,
            remaining,
            reset,
            retry_after,
            retry_at,
            window,
            minute_left,
            day_left,
            minute_reset,
            day_reset,
        )

    def usage(self, bucket_id: str, plan: Plan, now: float) -> Usage:
        """A bucket's standing; during a ban nothing is left in either window, as the
        headers of its answers say."""
        return self.standing(self._buckets.get(bucket_id), plan, now)

    def standing(self, stored: Bucket | None, plan: Plan, now: float) -> Usage:
        """``usage`` of a bucket's counters, read on a copy: looking starts no window
        (one that starts at a first request starts at a request)."""
        bucket = self._new_bucket()
        if stored is not None:
            bucket.minute_start, bucket.minute_used = stored.minute_start, stored.minute_used
            bucket.day_start, bucket.day_used = stored.day_start, stored.day_used
            bucket.minute_end, bucket.day_end = stored.minute_end, stored.day_end
            bucket.banned_until, bucket.rejections = stored.banned_until, stored.rejections
        bucket.roll(now)
        banned = bucket.banned_until if bucket.banned_until and now < bucket.banned_until else None
        left = 0 if banned is not None else 1
        return Usage(
            minute_used=bucket.minute_used,
            minute_remaining=left * max(0, plan.per_minute - bucket.minute_used),
            minute_reset=bucket.minute_start + MINUTE,
            day_used=bucket.day_used,
            day_remaining=left * max(0, plan.per_day - bucket.day_used),
            day_reset=bucket.day_start + DAY,
            banned_until=banned,
            recent_rejections=len(bucket.rejections),
        )

    def preload(
        self, bucket_id: str, now: float, minute_used: int, day_used: int, plan: Plan | None = None
    ) -> None:
        """Start a bucket with allowance already spent (a scenario's ``used:``; ``plan``, whose
        allowances they are, is what a general limiter needs too)."""
        bucket = self._bucket(bucket_id, now)
        bucket.minute_used = minute_used
        bucket.day_used = max(day_used, minute_used)

    def lift_ban(self, bucket_id: str) -> bool:
        """End a ban now; True if there was one."""
        bucket = self._buckets.get(bucket_id)
        if bucket is None or bucket.banned_until is None:
            return False
        bucket.banned_until = None
        bucket.rejections.clear()
        return True

    def forget(self, bucket_id: str) -> None:
        self._buckets.pop(bucket_id, None)

    def rebase(self, now: float, to: float) -> None:
        """The clock moves back from ``now`` to ``to``: recount every bucket for the new instant.

        What was counted happened after the new instant, so no window holds it:
        each starts afresh. A ban keeps what was left of it, from the new
        instant (a ban never grows by the clock moving back), and a told wait
        is forgotten with the run it was told in.
        """
        for bucket in self._buckets.values():
            bucket.minute_start = bucket.minute_end = bucket.day_start = bucket.day_end = -1
            bucket.minute_used = bucket.day_used = 0
            bucket.rejections.clear()
            bucket.told_until = None
            if bucket.banned_until is not None:
                left = bucket.banned_until - now
                bucket.banned_until = to + left if left > 0 else None
