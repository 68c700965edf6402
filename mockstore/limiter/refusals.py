"""Several limits at once: which one refuses a request, and with what answer.

A gateway stacks policies (Kong: a second, a minute and an hour; GitHub: a primary
limit answered 403/429 beside secondary ones; nginx's ``limit_req`` burst answered
503 beside an hourly quota answered 429). When more than one of a plan's windows
blocks a request, one of them refuses it, and each may refuse in its own way: its
status, its Error code and its ``Retry-After`` form (``ratelimit.refusal.minute``,
``ratelimit.refusal.day``).

``precedence`` says which window refuses when both block: ``longest`` (the one that
holds out longest: waiting for the minute is pointless while the day is spent;
mockstore's own rule), or a named window, checked first as a gateway checks its
policies in order (nginx's burst before its quota): that window refuses whenever it
blocks, and a refusal tells that window's own wait.

The rule is written twice, side by side: ``refusing`` in Python (``Limiter.check``)
and ``REFUSING_LUA`` in the request script of a shared state
(``GENERAL_LIMITER_LUA``); ``tests/test_limiter_twins.py`` drives both.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

PRECEDENCES = ("longest", "minute", "day")
# How the request script is told the precedence (after what counts, in one argument).
PRECEDENCE_LETTERS = {"longest": "", "minute": "m", "day": "d"}


@dataclass(frozen=True, slots=True)
class Refusal:
    """How one window refuses: its status, its Error code, its ``Retry-After`` form
    (None: the scenario's, ``ratelimit.headers.retry_after``)."""

    status: int
    code: str
    retry_after: str | None = None


@dataclass(frozen=True, slots=True)
class Refusals:
    """Which window refuses when several block, and each window's own refusal (None: the
    scenario's, ``ratelimit.refusal.status`` and ``code``)."""

    precedence: str = "longest"
    minute: Refusal | None = None
    day: Refusal | None = None

    def of(self, window: str) -> Refusal | None:
        """``window``'s own refusal, or None."""
        return self.minute if window == "minute" else self.day


NO_REFUSALS = Refusals()


def refusing(ats: list[float], now: float, precedence: str) -> tuple[float, int]:
    """(the instant a new request may be allowed, the index of the refusing window) of a
    refused request, from each window's ``at`` (minute first; a plan without a day has
    one). Its twin is ``REFUSING_LUA``."""
    if precedence == "longest":
        retry_at, index = -math.inf, 0
        for i, at in enumerate(ats):
            if at >= retry_at:
                retry_at, index = at, i
        return retry_at, index
    first = 0 if precedence == "minute" else 1
    for i in (first, 1 - first):
        if i < len(ats) and ats[i] > now:
            return ats[i], i
    raise AssertionError("a refused request has a window that blocks it")


# ``refusing`` in Lua, for ``GENERAL_LIMITER_LUA``: ``slots`` each window the plan has
# (``w`` its letter, 'm' or 'd'), ``A`` the rules, ``precedence`` '' (longest), 'm' or 'd'.
REFUSING_LUA = r"""
local function refusing(slots, now, precedence)
  local retry_at, blocking = -math.huge, 'm'
  if precedence == '' then
    for _, st in ipairs(slots) do
      local at = A[st.kind].at(st, now)
      if at >= retry_at then retry_at = at; blocking = st.w end
    end
    return retry_at, blocking
  end
  for pass = 1, 2 do
    for _, st in ipairs(slots) do
      if (pass == 1) == (st.w == precedence) then
        local at = A[st.kind].at(st, now)
        if at > now then return at, st.w end
      end
    end
  end
  return redis.error_reply('a refused request has a window that blocks it')
end
"""
