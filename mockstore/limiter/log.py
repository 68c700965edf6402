"""A sliding log: the instants of the requests counted in the last ``seconds``.

A request is allowed while fewer than the allowance were counted in the
window that ends now (an instant leaves it ``seconds`` after it was counted).
Only the most recent ``allowance`` instants can ever decide (whether the
allowance-th latest is still in the window), so the log keeps no more than
that: a client that keeps sending where attempts count stays refused, and
the log stays the size of the allowance. The reset is the instant the latest
counted request leaves the window; a refusal's wait ends when the oldest that
matters does.

Written twice, side by side (see ``mockstore.limiter.counters`` for the
contract): the Python rule keeps the log in a deque, the Lua rule in a Redis
list of its own beside the bucket's hash, instants written with ``%.17g``.

In memory the log is the one thing a client can make grow with its requests,
so each bucket's log is charged to the state's share of the memory budget as it
grows (``LOG_ENTRY_BYTES`` an instant, ``LOG_CHUNK`` instants at a time), and a
scenario may give a sliding log at most ``MAX_LOG`` requests per window.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from mockstore.limiter.model import SLIDING_LOG, Limits
from mockstore.ratelimit import NO_DAY, Plan

# What one instant costs in a deque (a float object and its slot), and how many are
# charged at once: nothing on the request path reserves per request.
LOG_ENTRY_BYTES = 32
LOG_CHUNK = 256
# The largest allowance a sliding log counts (the scenario builder refuses more): the
# built-in enterprise plan's day.
MAX_LOG = 1_000_000


class LogState:
    # ``charged``: instants of room reserved from the memory budget for this log.
    __slots__ = ("charged", "entries")

    def __init__(self) -> None:
        self.entries: deque[float] = deque()
        self.charged = 0


class SlidingLog:
    """A sliding log over the last ``seconds``."""

    kind = "l"
    fields = ()

    def __init__(self, seconds: int) -> None:
        self.seconds = seconds
        self.grid = None

    def new(self) -> LogState:
        return LogState()

    def roll(self, state: LogState, now: float, at: tuple[float, float, float] | None) -> None:
        entries, seconds = state.entries, self.seconds
        # ``first + seconds <= now``, the same sum ``at`` tells a client: it is let in then.
        while entries and entries[0] + seconds <= now:
            entries.popleft()

    def at(self, state: LogState, now: float, quota: int) -> float:
        entries = state.entries
        count = len(entries)
        if count < quota:
            return now
        return entries[count - quota] + self.seconds

    def count(self, state: LogState, now: float, quota: int) -> None:
        entries = state.entries
        entries.append(now)
        while len(entries) > quota:
            entries.popleft()

    def figures(self, state: LogState, now: float, quota: int) -> tuple[int, float]:
        entries = state.entries
        reset = entries[-1] + self.seconds if entries else now
        return max(0, quota - len(entries)), reset

    def uncount(self, state: LogState, now: float, quota: int) -> None:
        """Give back the latest request counted at ``now``."""
        entries = state.entries
        for index in range(len(entries) - 1, -1, -1):
            if entries[index] == now:
                del entries[index]
                return

    def preload(self, state: LogState, now: float, quota: int, used: int) -> None:
        state.entries.extend([now] * min(used, quota))

    def dump(self, state: LogState) -> list[Any]:
        return list(state.entries)

    def load(self, state: LogState, values: list[Any]) -> None:
        state.entries.extend(values)


# The log lives in a list of its own (``st.key``); ``st.n`` is its length once rolled;
# every instant read back is checked (``num``: not a number, and the log is dropped).
SLIDING_LOG_LUA = r"""
A.l = {}
function A.l.roll(st, now)
  while true do
    local first = redis.call('LINDEX', st.key, 0)
    if first and num(first, st.key) + st.L <= now then redis.call('LPOP', st.key) else break end
  end
  st.n = redis.call('LLEN', st.key)
end
function A.l.at(st, now)
  if st.n < st.q then return now end
  return num(redis.call('LINDEX', st.key, st.n - st.q), st.key) + st.L
end
function A.l.count(st, now)
  redis.call('RPUSH', st.key, fmt(now))
  st.n = st.n + 1
  if st.n > st.q then redis.call('LTRIM', st.key, st.n - st.q, -1); st.n = st.q end
end
function A.l.uncount(st, now)
  redis.call('LREM', st.key, -1, fmt(now))
  st.n = redis.call('LLEN', st.key)
end
function A.l.figures(st, now)
  local reset = now
  if st.n > 0 then reset = num(redis.call('LINDEX', st.key, -1), st.key) + st.L end
  local left = st.q - st.n
  if left < 0 then left = 0 end
  return left, reset
end
"""


def log_problem(limits: Limits, plan: Plan) -> str | None:
    """Why ``plan`` cannot be counted by ``limits``' sliding logs (None: it can)."""
    for name, window, allowance in (
        ("minute", limits.minute, plan.per_minute),
        ("day", limits.day, plan.per_day),
    ):
        if window.algorithm == SLIDING_LOG and allowance != NO_DAY and allowance > MAX_LOG:
            return (
                f"a sliding log keeps an instant per request: plan {plan.name!r} allows "
                f"{allowance:,} a {name} window, more than the {MAX_LOG:,} a log may hold "
                "(ratelimit.{name}.algorithm: sliding_window counts any allowance)"
            ).replace("{name}", name)
    return None
