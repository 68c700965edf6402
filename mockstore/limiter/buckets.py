"""Buckets: a token bucket (Envoy, AWS API Gateway, Stripe) and a leaky bucket as GCRA
(nginx ``limit_req``, Shopify).

Both hold ``allowance`` requests and refill at ``allowance`` per ``seconds``,
continuously, from full: a bucket of 40 that leaks 2 a second is an allowance
of 40 over 20 seconds. They decide alike (a GCRA is a token bucket kept as one
instant); they differ in what they keep, and so in the last bits of their
figures.

**Token bucket.** ``tokens`` as of ``last``; a request takes one. It is
allowed from the instant the bucket holds one token, worked out from what is
stored (``last + (1 - tokens) * seconds / allowance``), so that the instant
told is the one allowed; refilling happens when a request is counted.

**Leaky bucket (GCRA).** One instant, the theoretical arrival time ``tat``: a
request is allowed from ``tat - seconds + seconds / allowance`` (within a
microsecond: ``tat`` sums rounded intervals, and a burst's last request must
land on its limit as it would in exact arithmetic), and pushes ``tat`` one
emission interval on from itself (or from now, if it lies before).

Where attempts count (``ratelimit.counts: attempts``) a refused request takes a
token too, down to none: the bucket is emptied, and stays empty while a client
keeps sending. Requests left are rounded down (past a billionth, which float
arithmetic on a full bucket can fall short by); the reset is the instant the
bucket is full again.

Written twice, side by side (see ``mockstore.limiter.counters`` for the contract).
"""

from __future__ import annotations

import math
from typing import Any

# Requests left are worked out from instants of about 1.8e9 seconds, each good to a
# quarter of a microsecond: a whole number of requests may come out that much short
# (scaled by the requests per second), and still counts. Both twins add this margin.
_HAIR = 1e-6
# A GCRA's instant is a sum of rounded intervals: one that is due within this many
# seconds of now is due now (both twins).
_SLACK = 1e-6


class TokenState:
    # ``tokens`` is None for a bucket never counted in: a full one.
    __slots__ = ("last", "tokens")

    def __init__(self) -> None:
        self.tokens: float | None = None
        self.last = 0.0


class TokenBucket:
    """A token bucket of ``allowance`` tokens, refilled at ``allowance`` per ``seconds``."""

    kind = "t"
    fields = ("k", "a")

    def __init__(self, seconds: int) -> None:
        self.seconds = seconds
        self.grid = None

    def new(self) -> TokenState:
        return TokenState()

    def roll(self, state: TokenState, now: float, at: tuple[float, float, float] | None) -> None:
        pass  # refilled when a request is counted (see ``at``)

    def at(self, state: TokenState, now: float, quota: int) -> float:
        tokens = state.tokens
        if tokens is None or tokens >= 1:
            return now
        return state.last + (1 - tokens) * self.seconds / quota

    def _level(self, state: TokenState, now: float, quota: int) -> float:
        tokens = state.tokens
        if tokens is None:
            return float(quota)
        if now > state.last:
            return min(quota, tokens + (now - state.last) * quota / self.seconds)
        return tokens

    def count(self, state: TokenState, now: float, quota: int) -> None:
        fresh = state.tokens is None
        tokens = self._level(state, now, quota) - 1
        state.tokens = tokens if tokens > 0 else 0.0
        if fresh or now > state.last:
            state.last = now

    def uncount(self, state: TokenState, now: float, quota: int) -> None:
        if state.tokens is not None:
            state.tokens = min(quota, state.tokens + 1)

    def figures(self, state: TokenState, now: float, quota: int) -> tuple[int, float]:
        level = self._level(state, now, quota)
        left = math.floor(level + _HAIR * quota / self.seconds + 1e-9)
        return max(0, left), now + (quota - level) * self.seconds / quota

    def preload(self, state: TokenState, now: float, quota: int, used: int) -> None:
        state.tokens = float(max(0, quota - used))
        state.last = now

    def dump(self, state: TokenState) -> list[Any]:
        return [state.tokens, state.last]

    def load(self, state: TokenState, values: list[Any]) -> None:
        state.tokens, state.last = values


TOKEN_BUCKET_LUA = r"""
A.t = {}
function A.t.roll(st, now) end
function A.t.at(st, now)
  if st.k == nil or st.k >= 1 then return now end
  return st.a + (1 - st.k) * st.L / st.q
end
local function level(st, now)
  if st.k == nil then return st.q end
  if now > st.a then return math.min(st.q, st.k + (now - st.a) * st.q / st.L) end
  return st.k
end
function A.t.count(st, now)
  local k = level(st, now) - 1
  if k > 0 then st.k = k else st.k = 0 end
  if st.a == nil or now > st.a then st.a = now end
end
function A.t.uncount(st, now)
  if st.k ~= nil then st.k = math.min(st.q, st.k + 1) end
end
function A.t.figures(st, now)
  local k = level(st, now)
  local left = math.floor(k + 1e-6 * st.q / st.L + 1e-9)
  if left < 0 then left = 0 end
  return left, now + (st.q - k) * st.L / st.q
end
"""


class LeakyState:
    # ``tat`` is None for a bucket never counted in: an empty one (all allowed).
    __slots__ = ("tat",)

    def __init__(self) -> None:
        self.tat: float | None = None


class LeakyBucket:
    """A leaky bucket (GCRA) of ``allowance`` requests, leaking ``allowance`` per ``seconds``."""

    kind = "g"
    fields = ("t",)

    def __init__(self, seconds: int) -> None:
        self.seconds = seconds
        self.grid = None

    def new(self) -> LeakyState:
        return LeakyState()

    def roll(self, state: LeakyState, now: float, at: tuple[float, float, float] | None) -> None:
        pass

    def at(self, state: LeakyState, now: float, quota: int) -> float:
        tat = state.tat
        if tat is None:
            return now
        at = tat - self.seconds + self.seconds / quota
        # ``tat`` is a sum of intervals, each rounded: the last request of a burst lands
        # on its limit give or take a few ulps. Within a microsecond of now is now.
        return now if at <= now + _SLACK else at

    def count(self, state: LeakyState, now: float, quota: int) -> None:
        tat = state.tat
        if tat is None or tat < now:
            tat = now
        tat = tat + self.seconds / quota
        # A refused attempt empties the bucket, no more: the next is allowed one interval on.
        limit = now + self.seconds
        state.tat = tat if tat < limit else limit

    def uncount(self, state: LeakyState, now: float, quota: int) -> None:
        if state.tat is not None:
            tat = state.tat - self.seconds / quota
            state.tat = tat if tat > now else now

    def figures(self, state: LeakyState, now: float, quota: int) -> tuple[int, float]:
        tat = state.tat
        if tat is None or tat < now:
            tat = now
        hair = _HAIR * quota / self.seconds + 1e-9
        left = math.floor((now + self.seconds - tat) * quota / self.seconds + hair)
        return min(quota, max(0, left)), tat

    def preload(self, state: LeakyState, now: float, quota: int, used: int) -> None:
        state.tat = now + min(used, quota) * self.seconds / quota

    def dump(self, state: LeakyState) -> list[Any]:
        return [state.tat]

    def load(self, state: LeakyState, values: list[Any]) -> None:
        (state.tat,) = values


LEAKY_BUCKET_LUA = r"""
A.g = {}
function A.g.roll(st, now) end
function A.g.at(st, now)
  if st.t == nil then return now end
  local at = st.t - st.L + st.L / st.q
  if at <= now + 1e-6 then return now end
  return at
end
function A.g.count(st, now)
  local tat = st.t
  if tat == nil or tat < now then tat = now end
  tat = tat + st.L / st.q
  local limit = now + st.L
  if tat < limit then st.t = tat else st.t = limit end
end
function A.g.uncount(st, now)
  if st.t ~= nil then
    local tat = st.t - st.L / st.q
    if tat > now then st.t = tat else st.t = now end
  end
end
function A.g.figures(st, now)
  local tat = st.t
  if tat == nil or tat < now then tat = now end
  local left = math.floor((now + st.L - tat) * st.q / st.L + (1e-6 * st.q / st.L + 1e-9))
  if left < 0 then left = 0 end
  if left > st.q then left = st.q end
  return left, tat
end
"""
