"""Windows that count requests: a fixed window, and a sliding-window counter (Kong Advanced).

Each rule is written twice, side by side: in Python for a state in memory, and
in Lua for the request script of a shared state in Redis
(``mockstore.limiter.limiter``). Both do the same operations on doubles in the
same order, so they decide alike to the last bit; ``tests/test_limiter_twins.py``
drives both with the same requests and compares every figure.

The contract every rule keeps (``log`` and ``buckets`` hold the others to it):
``at`` is the instant from which a request is allowed (at or before ``now``:
allowed now), computed from the stored state alone, so a client that comes
back at exactly that instant is allowed; ``count`` counts one request
(admitted, or a refused attempt where attempts count), ``uncount`` gives one
counted at an instant back (an answer that does not count); ``figures``
gives the requests left and the instant the whole allowance is back (the
reset).

**Fixed window.** ``used`` requests from ``start`` to ``end``. On the clock's
grid (``mockstore.limiter.grid``) a window only moves forward: a process whose
clock reads a hair behind another's counts into the newer window rather than
start an old one again. From a first request, a window starts at the first
request after the last one ended.

**Sliding-window counter.** Windows on the grid; the count is the current
window's plus the previous window's weighted by the share of it that the
sliding window still covers: ``prev * (end - now) / (end - start) + cur``. A
request is allowed while that plus one stays within the allowance, which is
worked out as the instant the weight has fallen far enough, so that the
instant told is the one allowed.
"""

from __future__ import annotations

import math
from typing import Any

from mockstore.limiter.grid import Grid


class FixedState:
    __slots__ = ("end", "start", "used")

    def __init__(self) -> None:
        self.start = self.end = -1.0
        self.used = 0.0


class FixedWindow:
    """A fixed window of ``seconds``, on the clock's grid or from a first request."""

    kind = "f"  # the Lua rule's name; ``r`` from a first request
    fields = ("s", "e", "u")

    def __init__(self, seconds: int, grid: Grid | None) -> None:
        self.seconds = seconds
        self.grid = grid
        if grid is None:
            self.kind = "r"

    def new(self) -> FixedState:
        return FixedState()

    def roll(self, state: FixedState, now: float, at: tuple[float, float, float] | None) -> None:
        if at is None:
            if not (state.start <= now < state.end):
                state.start, state.end, state.used = now, now + self.seconds, 0.0
        elif at[0] > state.start:
            state.start, state.end, state.used = at[0], at[1], 0.0

    def at(self, state: FixedState, now: float, quota: int) -> float:
        return state.end if state.used >= quota else now

    def count(self, state: FixedState, now: float, quota: int) -> None:
        state.used += 1

    def figures(self, state: FixedState, now: float, quota: int) -> tuple[int, float]:
        return max(0, int(quota - state.used)), state.end

    def uncount(self, state: FixedState, now: float, quota: int) -> None:
        """Give back one request counted at ``now`` (while its window lasts)."""
        if state.start <= now < state.end and state.used > 0:
            state.used -= 1

    def preload(self, state: FixedState, now: float, quota: int, used: int) -> None:
        state.used = float(used)

    def dump(self, state: FixedState) -> list[Any]:
        return [state.start, state.end, state.used]

    def load(self, state: FixedState, values: list[Any]) -> None:
        state.start, state.end, state.used = values


FIXED_LUA = r"""
A.f = {}
function A.f.roll(st, now)
  if st.gs > st.s then st.s = st.gs; st.e = st.ge; st.u = 0 end
end
A.r = {}
function A.r.roll(st, now)
  if not (st.s <= now and now < st.e) then st.s = now; st.e = now + st.L; st.u = 0 end
end
function A.f.at(st, now)
  if st.u >= st.q then return st.e end
  return now
end
function A.f.count(st, now) st.u = st.u + 1 end
function A.f.figures(st, now)
  local left = st.q - st.u
  if left < 0 then left = 0 end
  return left, st.e
end
function A.f.uncount(st, now)
  if st.s <= now and now < st.e and st.u > 0 then st.u = st.u - 1 end
end
A.r.at = A.f.at; A.r.count = A.f.count; A.r.figures = A.f.figures; A.r.uncount = A.f.uncount
"""


class SlidingState:
    # ``next_end``: the end of the window after the current one, as the grid gave it
    # to ``roll`` for this request (not kept: the grid gives it again).
    __slots__ = ("current", "end", "next_end", "previous", "start")

    def __init__(self) -> None:
        self.start = self.end = self.next_end = -1.0
        self.current = self.previous = 0.0


class SlidingWindow:
    """A sliding-window counter over windows of ``seconds`` on the clock's grid."""

    kind = "w"
    fields = ("s", "e", "c", "p")

    def __init__(self, seconds: int, grid: Grid) -> None:
        self.seconds = seconds
        self.grid = grid

    def new(self) -> SlidingState:
        return SlidingState()

    def roll(self, state: SlidingState, now: float, at: tuple[float, float, float] | None) -> None:
        assert at is not None
        if at[0] > state.start:
            # The window just ended becomes the previous one; after a gap, nothing is.
            state.previous = state.current if at[0] == state.end else 0.0
            state.current = 0.0
            state.start, state.end = at[0], at[1]
        state.next_end = at[2]

    def at(self, state: SlidingState, now: float, quota: int) -> float:
        current, previous = state.current, state.previous
        if current + 1 > quota:
            # Not in this window: in the next, once this one's weight has fallen enough.
            return state.next_end - (state.next_end - state.end) * (quota - 1) / current
        if previous == 0:
            return now
        return state.end - (state.end - state.start) * (quota - 1 - current) / previous

    def count(self, state: SlidingState, now: float, quota: int) -> None:
        state.current += 1

    def figures(self, state: SlidingState, now: float, quota: int) -> tuple[int, float]:
        current, previous = state.current, state.previous
        most = quota - current
        if most <= 0:
            left = 0
        else:
            span = state.end - state.start
            weighted = previous * (state.end - now) / span
            # Instants good to a quarter of a microsecond (see ``buckets``): a margin.
            hair = 1e-6 * previous / span + 1e-9
            left = min(int(most), max(0, math.floor(most - weighted + hair)))
        if current > 0:
            reset = state.next_end
        elif previous > 0:
            reset = state.end
        else:
            reset = now
        return left, reset

    def uncount(self, state: SlidingState, now: float, quota: int) -> None:
        if state.start <= now < state.end and state.current > 0:
            state.current -= 1

    def preload(self, state: SlidingState, now: float, quota: int, used: int) -> None:
        state.current = float(used)

    def dump(self, state: SlidingState) -> list[Any]:
        return [state.start, state.end, state.current, state.previous]

    def load(self, state: SlidingState, values: list[Any]) -> None:
        state.start, state.end, state.current, state.previous = values


SLIDING_WINDOW_LUA = r"""
A.w = {}
function A.w.roll(st, now)
  if st.gs > st.s then
    if st.gs == st.e then st.p = st.c else st.p = 0 end
    st.c = 0; st.s = st.gs; st.e = st.ge
  end
end
function A.w.at(st, now)
  if st.c + 1 > st.q then return st.gn - (st.gn - st.e) * (st.q - 1) / st.c end
  if st.p == 0 then return now end
  return st.e - (st.e - st.s) * (st.q - 1 - st.c) / st.p
end
function A.w.count(st, now) st.c = st.c + 1 end
function A.w.uncount(st, now)
  if st.s <= now and now < st.e and st.c > 0 then st.c = st.c - 1 end
end
function A.w.figures(st, now)
  local most = st.q - st.c
  local left = 0
  if most > 0 then
    local span = st.e - st.s
    local weighted = st.p * (st.e - now) / span
    left = math.floor(most - weighted + (1e-6 * st.p / span + 1e-9))
    if left < 0 then left = 0 end
    if left > most then left = most end
  end
  local reset = now
  if st.c > 0 then reset = st.gn elseif st.p > 0 then reset = st.e end
  return left, reset
end
"""
