"""The general limiter: a plan's two windows, each of any length and algorithm, and bans.

``mockstore.ratelimit.RateLimiter`` counts the classic case (a clock minute
and a UTC day, or both from a first request) on a path tuned to the
instruction; a scenario whose limiter is anything else (``Limits.classic`` is
false) is counted here. Each window is a rule of ``counters``, ``log`` or
``buckets``; a request is allowed when every window of its plan allows it,
and is then counted in each. Where attempts count, a refused request is
counted too. A refusal's wait ends at the latest instant any window allows
again (waiting for the minute is pointless while the day is spent), and the
window that holds out longest is the one that "blocks". Bans escalate as
they always have (``mockstore.ratelimit.escalate``); a banned request counts
nowhere.

The driver is written twice, side by side: ``Limiter.check`` in Python, and
``GENERAL_LIMITER_LUA``, the limiter part of the request script of a shared
state (``mockstore.shared.scripts.GENERAL_REQUEST``), which returns the
figures; ``Limiter.decision`` makes the ``Decision`` of either.
``tests/test_limiter_twins.py`` drives both with the same requests.

Nothing here knows HTTP: the headers that announce a decision are
``mockstore.limiter.announce``'s.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from typing import Any, Literal

from mockstore.limiter.buckets import LEAKY_BUCKET_LUA, TOKEN_BUCKET_LUA
from mockstore.limiter.counters import FIXED_LUA, SLIDING_WINDOW_LUA
from mockstore.limiter.log import LOG_CHUNK, LOG_ENTRY_BYTES, SLIDING_LOG_LUA
from mockstore.limiter.model import Limits
from mockstore.limiter.refusals import PRECEDENCE_LETTERS, REFUSING_LUA, refusing
from mockstore.limiter.rules import PlanRules, Rule, rule_for
from mockstore.memory import Account
from mockstore.ratelimit import (
    BAN_LUA,
    NO_DAY,
    BanPolicy,
    Decision,
    Plan,
    Usage,
    Verdict,
    escalate,
)

# What a bucket costs in memory before any log (its object, its states, its dict slot).
BUCKET_BYTES = 512
_NAMES = ("minute", "day")


class Bucket:
    """One caller's windows (``minute``, ``day``: each its rule's state) and its ban."""

    __slots__ = (
        "admitted",
        "banned_until",
        "charged",
        "day",
        "minute",
        "rejections",
        "told_until",
        "told_until_wall",
    )

    def __init__(self, rules: tuple[Rule, Rule]) -> None:
        self.minute: Any = rules[0].new()
        self.day: Any = rules[1].new()
        # Moved by every admitted request: what ends a run of refusals (ban trigger).
        self.admitted = 0.0
        self.rejections: deque[float] = deque()
        self.banned_until: float | None = None
        self.told_until: float | None = None
        self.told_until_wall = 0.0
        self.charged = 0  # bytes of the memory budget this bucket holds


class Limiter:
    """Counts requests per bucket in a scenario's two windows; bans persistent offenders.

    The same calls as ``RateLimiter`` (``check``, ``peek``, ``usage``,
    ``preload``, ``lift_ban``, ``forget``, ``rebase``). ``account`` is the
    state's share of the memory budget: buckets and their logs are charged to
    it before they are held (``OverBudget`` from ``check`` when it has no room;
    nothing is counted then).
    """

    def __init__(
        self,
        limits: Limits,
        ban: BanPolicy,
        wall: Callable[[], float] | None = None,
        account: Account | None = None,
    ) -> None:
        self.limits = limits
        self.ban = ban
        self.wall = wall
        self.account = account
        self.rules: tuple[Rule, Rule] = (
            rule_for(limits.minute, limits.time_zone),
            rule_for(limits.day, limits.time_zone),
        )
        # The rules of each plan's windows (a plan may count one over a length of its own).
        self._plan_rules = PlanRules(limits, self.rules)
        self.rules_of = self._plan_rules.of
        self.admit = self._plan_rules.admit  # a plan issued at run time
        self.attempts = limits.counts == "attempts"
        self._precedence = limits.refusals.precedence
        self._consecutive = ban.trigger == "consecutive"
        headers = limits.headers
        self._describes = None if headers.describes == "tightest" else headers.describes
        self._refusals_described = headers.refusals == "described" and self._describes is not None
        self._buckets: dict[str, Bucket] = {}

    # -- counting -------------------------------------------------------------

    def check(self, bucket_id: str, plan: Plan, now: float) -> Decision:
        """Decide one request: allow it and count it, or refuse it (counting it if attempts do)."""
        bucket = self._buckets.get(bucket_id)
        if bucket is None:
            self._charge(BUCKET_BYTES)
            bucket = self._buckets[bucket_id] = Bucket(self.rules)
            bucket.charged = BUCKET_BYTES
        slots = self._slots(bucket, plan, now)
        if bucket.banned_until is not None:
            if now < bucket.banned_until:
                return self._banned(bucket, plan, now, slots)
            bucket.banned_until = None
            bucket.rejections.clear()
        allowed = True
        for rule, state, quota in slots:
            if rule.at(state, now, quota) > now:
                allowed = False
        if allowed or self.attempts:
            self._room(bucket, slots)
            for rule, state, quota in slots:
                rule.count(state, now, quota)
        if allowed:
            bucket.admitted += 1
            return self._figures("allowed", plan, now, 0.0, "minute", slots)
        # The wait: until the refusing window allows again (after this attempt, where it
        # counts); by default the one that holds out longest (``refusals.refusing``).
        ats = [rule.at(state, now, quota) for rule, state, quota in slots]
        retry_at, index = refusing(ats, now, self._precedence)
        blocking = _NAMES[index]
        escalate(self.ban, self._consecutive, self.wall, bucket, now, retry_at, bucket.admitted)
        return self._figures("rate_limited", plan, now, retry_at, blocking, slots)

    def refund(self, bucket_id: str, plan: Plan, now: float) -> None:
        """Give back what a request admitted at ``now`` took (its answer does not count:
        ``ratelimit.not_counted``). Its twin is ``GENERAL_REFUND_LUA``."""
        bucket = self._buckets.get(bucket_id)
        if bucket is None:
            return
        minute, day = self.rules_of(plan)
        minute.uncount(bucket.minute, now, plan.per_minute)
        if plan.has_day:
            day.uncount(bucket.day, now, plan.per_day)

    def peek(self, bucket_id: str, plan: Plan, now: float) -> Decision:
        """Where a bucket stands, as a Decision that counts nothing (for a 500's headers)."""
        bucket = self._buckets.get(bucket_id) or Bucket(self.rules)
        slots = self._slots(bucket, plan, now)
        if bucket.banned_until is not None and now < bucket.banned_until:
            return self._banned(bucket, plan, now, slots)
        return self._figures("allowed", plan, now, 0.0, "minute", slots)

    def _slots(self, bucket: Bucket, plan: Plan, now: float) -> list[tuple[Rule, Any, int]]:
        """(rule, state, allowance) of each window the plan has, rolled to ``now``."""
        minute, day = self.rules_of(plan)
        slots: list[tuple[Rule, Any, int]] = [(minute, bucket.minute, plan.per_minute)]
        if plan.has_day:
            slots.append((day, bucket.day, plan.per_day))
        for rule, state, _ in slots:
            grid = rule.grid
            rule.roll(state, now, grid.at(now) if grid is not None else None)
        return slots

    def _room(self, bucket: Bucket, slots: list[tuple[Rule, Any, int]]) -> None:
        """Reserve the memory a log grows into before it holds another instant."""
        for rule, state, _ in slots:
            if rule.kind == "l" and len(state.entries) >= state.charged:
                self._charge(LOG_CHUNK * LOG_ENTRY_BYTES)
                state.charged += LOG_CHUNK
                bucket.charged += LOG_CHUNK * LOG_ENTRY_BYTES

    def _charge(self, size: int) -> None:
        if self.account is not None:
            self.account.take(size, "the rate limiter's counters")

    # -- the decision ---------------------------------------------------------

    def _figures(
        self,
        verdict: Verdict,
        plan: Plan,
        now: float,
        retry_at: float,
        blocking: str,
        slots: list[tuple[Rule, Any, int]],
    ) -> Decision:
        figures: list[float] = []
        for rule, state, quota in slots:
            figures.extend(rule.figures(state, now, quota))
        return self.decision(verdict, plan, now, retry_at, blocking, figures)

    def _banned(
        self, bucket: Bucket, plan: Plan, now: float, slots: list[tuple[Rule, Any, int]]
    ) -> Decision:
        assert bucket.banned_until is not None
        return self._figures("key_banned", plan, now, bucket.banned_until, "minute", slots)

    def decision(
        self,
        verdict: Verdict,
        plan: Plan,
        now: float,
        retry_at: float,
        blocking: str,
        figures: list[float],
    ) -> Decision:
        """The ``Decision`` from each window's (requests left, reset instant), in memory or
        from the request script's reply. Resets are exact instants (the headers round them)."""
        minute_left, minute_reset = int(figures[0]), float(figures[1])
        if len(figures) > 2:
            day_left, day_reset = int(figures[2]), float(figures[3])
        else:  # a plan without a day allowance: a day that never runs out
            day_left, day_reset = NO_DAY, minute_reset
        describes = self._describes
        window: Literal["minute", "day"]
        if verdict == "rate_limited":
            window = describes if self._refusals_described else blocking  # type: ignore[assignment]
        elif describes is not None:
            window = describes if plan.has_day else "minute"  # type: ignore[assignment]
        else:
            window = "day" if day_left < minute_left else "minute"
        if window == "minute":
            limit, remaining, reset = plan.per_minute, minute_left, minute_reset
        else:
            limit, remaining, reset = plan.per_day, day_left, day_reset
        retry_after = 0
        if verdict != "allowed":
            # Rounded up, never down: a client that waits as told is not early.
            retry_after = max(1, math.ceil(retry_at - now))
        if verdict == "key_banned":
            # Nothing is allowed until the ban ends, whatever the windows hold.
            remaining = minute_left = day_left = 0
            reset = minute_reset = day_reset = retry_at
        return Decision(
            verdict,
            limit,
            remaining,
            reset,  # type: ignore[arg-type]
            retry_after,
            retry_at,
            window,
            minute_left,
            day_left,
            minute_reset,  # type: ignore[arg-type]
            day_reset,  # type: ignore[arg-type]
            blocking,
        )

    # -- the control API ------------------------------------------------------

    def usage(self, bucket_id: str, plan: Plan, now: float) -> Usage:
        """A bucket's standing (nothing is counted); during a ban nothing is left."""
        return self.standing(self._buckets.get(bucket_id), plan, now)

    def standing(self, bucket: Bucket | None, plan: Plan, now: float) -> Usage:
        """``usage`` of a bucket's states (one read back from a shared state, say)."""
        decision = self.peek_bucket(bucket or Bucket(self.rules), plan, now)
        banned = decision.retry_at if decision.verdict == "key_banned" else None
        day_left = decision.day_remaining if plan.has_day else plan.per_day
        return Usage(
            minute_used=plan.per_minute - decision.minute_remaining,
            minute_remaining=decision.minute_remaining,
            minute_reset=math.ceil(decision.minute_reset),
            day_used=plan.per_day - day_left if plan.has_day else 0,
            day_remaining=day_left,
            day_reset=math.ceil(decision.day_reset),
            banned_until=banned,
            recent_rejections=len(bucket.rejections) if bucket is not None else 0,
        )

    def peek_bucket(self, bucket: Bucket, plan: Plan, now: float) -> Decision:
        slots = self._slots(bucket, plan, now)
        if bucket.banned_until is not None and now < bucket.banned_until:
            return self._banned(bucket, plan, now, slots)
        return self._figures("allowed", plan, now, 0.0, "minute", slots)

    def preload(
        self, bucket_id: str, now: float, minute_used: int, day_used: int, plan: Plan
    ) -> None:
        """Start a bucket with allowance already spent (a scenario's ``used:``), as of now."""
        bucket = self.new_bucket(now, minute_used, day_used, plan)
        self._charge(bucket.charged)
        old = self._buckets.pop(bucket_id, None)
        if old is not None:
            self._release(old)
        self._buckets[bucket_id] = bucket

    def new_bucket(self, now: float, minute_used: int, day_used: int, plan: Plan) -> Bucket:
        """A bucket whose windows start at ``now`` with ``minute_used`` and ``day_used`` of
        ``plan``'s allowances spent."""
        bucket = Bucket(self.rules)
        day_used = max(day_used, minute_used)
        for rule, state, used, quota in zip(
            self.rules_of(plan),
            (bucket.minute, bucket.day),
            (minute_used, day_used),
            (plan.per_minute, plan.per_day),
            strict=True,
        ):
            grid = rule.grid
            rule.roll(state, now, grid.at(now) if grid is not None else None)
            rule.preload(state, now, quota, used)
            if rule.kind == "l":
                state.charged = len(state.entries)
        bucket.charged = BUCKET_BYTES + LOG_ENTRY_BYTES * (
            getattr(bucket.minute, "charged", 0) + getattr(bucket.day, "charged", 0)
        )
        return bucket

    def lift_ban(self, bucket_id: str) -> bool:
        """End a ban now; True if there was one."""
        bucket = self._buckets.get(bucket_id)
        if bucket is None or bucket.banned_until is None:
            return False
        bucket.banned_until = None
        bucket.rejections.clear()
        return True

    def forget(self, bucket_id: str) -> None:
        bucket = self._buckets.pop(bucket_id, None)
        if bucket is not None:
            self._release(bucket)

    def _release(self, bucket: Bucket) -> None:
        if self.account is not None and bucket.charged:
            self.account.release(bucket.charged)
        bucket.charged = 0

    def rebase(self, now: float, to: float) -> None:
        """The clock moves back from ``now`` to ``to``: every window starts afresh.

        What was counted happened after the new instant, so no window holds it.
        A ban keeps what was left of it, from the new instant, and a told wait is
        forgotten with the run it was told in (as ``RateLimiter.rebase``).
        """
        for bucket in self._buckets.values():
            bucket.minute, bucket.day = self.rules[0].new(), self.rules[1].new()
            bucket.rejections.clear()
            bucket.told_until = None
            if bucket.banned_until is not None:
                left = bucket.banned_until - now
                bucket.banned_until = to + left if left > 0 else None
            # The logs are empty again: what they held is given back.
            self._release(bucket)
            self._charge(BUCKET_BYTES)
            bucket.charged = BUCKET_BYTES


# Each rule's stored fields in the bucket's hash (after the window's letter, m or d).
_FIELDS = ("s", "e", "u", "c", "p", "k", "a", "t")

# The limiter part of ``GENERAL_REQUEST`` (``mockstore.shared.scripts``), ``check`` in Lua.
# KEYS: 2 the bucket's hash, 3 its refusals, 5 and 6 the minute's and the day's log
#       (a sliding log's instants), 7 .. the fault rules' counters (KF = 6).
# ARGV: 4 what counts ('a' attempts, 's' served), then per window (minute from 5, day
#       from 11) its rule's letter (f fixed on the grid, r fixed from a first request,
#       w sliding window, l sliding log, t token bucket, g leaky bucket), its seconds,
#       the plan's allowance ('' for a plan without a day), and the grid's start, end
#       and next end at now ('' off the grid); 17 ban after, 18 ban within ('c': in a
#       row), 19 ban duration (B = 17); the fault rules from ARGV[20] (F = 20).
# Reply head: {'ok', verdict, {each window's requests left and reset}, blocking window
# ('m' or 'd'), '', '', retry at, number, ...}.
# Every rule's Lua, and what each keeps in the bucket's hash (after the window's letter).
_RULES_LUA = (
    r"""
local A = {}
"""
    + FIXED_LUA
    + SLIDING_WINDOW_LUA
    + SLIDING_LOG_LUA
    + TOKEN_BUCKET_LUA
    + LEAKY_BUCKET_LUA
    + r"""
local FIELDS = {f = {'s', 'e', 'u'}, r = {'s', 'e', 'u'}, w = {'s', 'e', 'c', 'p'}, l = {},
  t = {'k', 'a'}, g = {'t'}}
"""
)


def _slots_lua(arguments: int, logs: int, bucket: int) -> str:
    """Lua that reads a bucket's hash (KEYS[bucket]) into ``b``, its ban and admissions,
    and each window the plan has into ``slots``: per window six arguments from
    ARGV[arguments] (rule letter, seconds, allowance or '', the grid's start, end, next
    end), its log at KEYS[logs] and KEYS[logs + 1]. Every value read back is checked."""
    return (
        (
            r"""
local names = {'bu', 'tu', 'tw', 'n'}
for _, w in ipairs({'m', 'd'}) do
  for _, f in ipairs({'s', 'e', 'u', 'c', 'p', 'k', 'a', 't'}) do names[#names + 1] = w .. f end
end
local b = checked(redis.pcall('HMGET', KEYS[@B], unpack(names)), KEYS[@B])
local bu, tu, tw = num(b[1], KEYS[@B]), num(b[2], KEYS[@B]), num(b[3], KEYS[@B]) or 0
local admitted = num(b[4], KEYS[@B], true) or 0
local slots = {}
for i = 0, 1 do
  local a = @A + 6 * i
  if ARGV[a + 2] ~= '' then
    local o = 4 + 8 * i
    slots[#slots + 1] = {w = (i == 0) and 'm' or 'd', kind = ARGV[a], L = tonumber(ARGV[a + 1]),
      q = tonumber(ARGV[a + 2]), gs = tonumber(ARGV[a + 3]), ge = tonumber(ARGV[a + 4]),
      gn = tonumber(ARGV[a + 5]), key = KEYS[@L + i],
      s = num(b[o + 1], KEYS[@B]) or -1, e = num(b[o + 2], KEYS[@B]) or -1,
      u = num(b[o + 3], KEYS[@B], true) or 0, c = num(b[o + 4], KEYS[@B], true) or 0,
      p = num(b[o + 5], KEYS[@B], true) or 0, k = num(b[o + 6], KEYS[@B]),
      a = num(b[o + 7], KEYS[@B]), t = num(b[o + 8], KEYS[@B])}
    if ARGV[a] == 'l' then  -- a log read back: a list of ours, or dropped
      local kind = redis.call('TYPE', KEYS[@L + i])['ok']
      if kind ~= 'list' and kind ~= 'none' then bad(KEYS[@L + i]) end
    end
  end
end
"""
        )
        .replace("@B", str(bucket))
        .replace("@A", str(arguments))
        .replace("@L", str(logs))
    )


# Lua that writes each window's state back into the bucket's hash (``fields``, begun by
# the caller) and, where ``figures`` is a table, each window's requests left and reset.
_SAVE_LUA = r"""
for _, st in ipairs(slots) do
  for _, f in ipairs(FIELDS[st.kind]) do
    if st[f] ~= nil then fields[#fields + 1] = st.w .. f; fields[#fields + 1] = fmt(st[f]) end
  end
  if figures then
    local left, reset = A[st.kind].figures(st, now)
    figures[#figures + 1] = fmt(left); figures[#figures + 1] = fmt(reset)
  end
end
"""

# The limiter part of ``GENERAL_REQUEST`` (``mockstore.shared.scripts``), ``check`` in Lua.
# KEYS: 2 the bucket's hash, 3 its refusals, 5 and 6 the minute's and the day's log
#       (a sliding log's instants), 7 .. the fault rules' counters (KF = 6).
# ARGV: 4 what counts ('a' attempts, 's' served), then per window (minute from 5, day
#       from 11) its rule's letter (f fixed on the grid, r fixed from a first request,
#       w sliding window, l sliding log, t token bucket, g leaky bucket), its seconds,
#       the plan's allowance ('' for a plan without a day), and the grid's start, end
#       and next end at now ('' off the grid); 17 ban after, 18 ban within ('c': in a
#       row), 19 ban duration (B = 17); the fault rules from ARGV[20] (F = 20).
# Reply head: {'ok', verdict, {each window's requests left and reset}, blocking window
# ('m' or 'd'), '', '', retry at, number, ...}.
GENERAL_LIMITER_LUA = (
    r"""
local B, F, KF = 17, 20, 6
local wider = begin(F, KF)  -- the prologue's: before anything is counted
if wider then return wider end
"""
    + _slots_lua(arguments=5, logs=5, bucket=2)
    + BAN_LUA
    + _RULES_LUA
    + REFUSING_LUA
    + r"""
for _, st in ipairs(slots) do A[st.kind].roll(st, now) end
local blocking = 'm'
if bu and now < bu then
  verdict = 'key_banned'; retry_at = bu
else
  if bu then bu = nil; redis.call('DEL', KEYS[3]) end
  local allowed = true
  for _, st in ipairs(slots) do
    if A[st.kind].at(st, now) > now then allowed = false end
  end
  if allowed or string.sub(ARGV[4], 1, 1) == 'a' then
    for _, st in ipairs(slots) do A[st.kind].count(st, now) end
  end
  if allowed then
    admitted = admitted + 1
  else
    verdict = 'rate_limited'
    retry_at, blocking = refusing(slots, now, string.sub(ARGV[4], 2))
    escalate(admitted)
  end
end
local fields = {'tw', fmt(tw), 'n', fmt(admitted)}
local figures = {}
"""
    + _SAVE_LUA
    + r"""
redis.call('HSET', KEYS[2], unpack(fields))
if bu then redis.call('HSET', KEYS[2], 'bu', fmt(bu))
elseif b[1] then redis.call('HDEL', KEYS[2], 'bu') end
if tu then redis.call('HSET', KEYS[2], 'tu', fmt(tu)) end
local head = {'ok', verdict, figures, blocking, '', '', fmt(retry_at), number, {}, {-1}}
"""
)

# ``Limiter.refund`` in Lua: the script ``mockstore.shared.scripts.REFUND`` runs after the
# request checks (``bad``, ``checked``, ``num``, ``fmt``). KEYS: 1 generation, 2 the
# bucket's hash, 3 and 4 its logs. ARGV: 1 the generation, 2 the admission's instant,
# then per window six arguments as ``GENERAL_LIMITER_LUA``'s (from 3). A configuration
# changed since (a reset) gives nothing back: the request was counted in another epoch.
GENERAL_REFUND_LUA = (
    r"""
local generation = redis.pcall('GET', KEYS[1])
if type(generation) == 'table' or generation ~= ARGV[1] then return 'stale' end
local now = tonumber(ARGV[2])
"""
    + _slots_lua(arguments=3, logs=3, bucket=2)
    + _RULES_LUA
    + r"""
for _, st in ipairs(slots) do A[st.kind].uncount(st, now) end
local fields = {'n', fmt(admitted)}
local figures = nil
"""
    + _SAVE_LUA
    + r"""
redis.call('HSET', KEYS[2], unpack(fields))
return 'ok'
"""
)


def script_arguments(
    limiter: Limiter, plan: Plan | None, now: float
) -> tuple[list[str | int | float], list[str]]:
    """``GENERAL_LIMITER_LUA``'s arguments for a request at ``now`` (ARGV 4 to 16), and the
    suffixes of the minute's and the day's log keys (KEYS 5 and 6) after the bucket's name.

    ``plan`` None: a caller the limiter does not count (no window, nothing counted).
    """
    # What counts, and which window refuses when several block (``refusals``).
    args: list[str | int | float] = [
        ("a" if limiter.attempts else "s") + PRECEDENCE_LETTERS[limiter.limits.refusals.precedence]
    ]
    quotas = (None, None) if plan is None else (plan.per_minute, plan.day)
    for rule, quota in zip(limiter.rules_of(plan), quotas, strict=True):
        grid = rule.grid
        args.extend([rule.kind, rule.seconds, "" if quota is None else quota])
        if grid is None:
            args.extend(["", "", ""])
        else:
            args.extend(repr(float(value)) for value in grid.at(now))
    return args, [":m", ":d"]


def reply_figures(reply: list[Any]) -> tuple[Verdict, float, str, list[float]]:
    """(verdict, retry at, blocking window, figures) of the general script's reply."""
    verdict = reply[1].decode()
    figures = [float(value) for value in reply[2]]
    blocking = "day" if reply[3] == b"d" else "minute"
    return verdict, float(reply[6]), blocking, figures  # type: ignore[return-value]


def stored(limiter: Limiter, bucket: Bucket) -> tuple[list[str], list[list[str]]]:
    """A bucket as the request script keeps it: its hash's fields and values (flat), and
    the minute's and the day's log (each instant as text that reads back as the same float)."""
    fields = ["n", repr(float(bucket.admitted))]
    logs: list[list[str]] = [[], []]
    for index, (window, rule, state) in enumerate(
        zip("md", limiter.rules, (bucket.minute, bucket.day), strict=True)
    ):
        values = rule.dump(state)
        if rule.kind == "l":
            logs[index] = [repr(float(value)) for value in values]
            continue
        for name, value in zip(rule.fields, values, strict=True):
            if value is not None:
                fields.extend([window + name, repr(float(value))])
    return fields, logs


# What the request script reads for a field it does not find.
_ABSENT: dict[str, float | None] = {
    "s": -1.0,
    "e": -1.0,
    "u": 0.0,
    "c": 0.0,
    "p": 0.0,
    "k": None,
    "a": None,
    "t": None,
}


def _number(raw: Any, absent: float | None) -> float | None:
    """A stored figure, read back; anything that is not a finite number reads as absent."""
    try:
        value = float(raw)
    except (TypeError, ValueError):
        return absent
    return value if math.isfinite(value) else absent


def restored(limiter: Limiter, fields: dict[str, Any], logs: list[list[Any]]) -> Bucket:
    """The bucket ``stored`` wrote (read back from Redis: ``fields`` by name, ``logs``)."""
    bucket = Bucket(limiter.rules)
    bucket.admitted = _number(fields.get("n"), 0.0) or 0.0
    bucket.banned_until = _number(fields.get("bu"), None)
    for index, (window, rule, state) in enumerate(
        zip("md", limiter.rules, (bucket.minute, bucket.day), strict=True)
    ):
        if rule.kind == "l":
            values = [_number(value, None) for value in logs[index]]
            rule.load(state, [value for value in values if value is not None])
            continue
        values = [_number(fields.get(window + name), _ABSENT[name]) for name in rule.fields]
        if rule.kind == "t" and values[0] is not None and values[1] is None:
            values[0] = None  # a level with no instant: read as a full bucket
        if rule.kind == "t" and values[1] is None:
            values[1] = 0.0
        rule.load(state, values)
    return bucket
