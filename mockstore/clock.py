"""The one clock every time-dependent rule reads.

Nothing else in mockstore calls ``time.time()``: rate-limit windows, bans, the
sunset of ``getPet``, fault time windows and the ``Date`` header all ask a
``Clock``. A scenario chooses real time, a virtual time that ticks from a
chosen start, or a manual time that moves only when told to.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

ClockMode = Literal["running", "manual"]


async def wait_at_least(seconds: float) -> None:
    """Wait ``seconds`` without holding the event loop, never less.

    Event loops may wake a timer early (uvloop counts whole milliseconds from a clock
    read at the start of its iteration): what is left is waited again.
    """
    deadline = time.perf_counter() + seconds
    await asyncio.sleep(seconds)
    while (left := deadline - time.perf_counter()) > 0:
        await asyncio.sleep(max(left, 0.001))


async def no_wait(seconds: float) -> None:
    """A wait that takes no time: for a replay, which re-sends a recording as fast as it can."""


@dataclass(frozen=True, slots=True)
class Timebase:
    """Where clocks read the time (a wall clock and a monotonic one), and how answers wait.

    Every clock a server builds (at start, reset, scenario load, for a tenant)
    reads these two, so a test can hand a server its own and simulate hours of
    waiting without spending them (``tests/test_client_populations.py``).
    ``wait`` is how an answer waits the delay a scenario's ``latency`` draws for
    it: really, or not at all where a replay only compares answers.
    """

    wall: Callable[[], float] = time.time
    monotonic: Callable[[], float] = time.monotonic
    wait: Callable[[float], Awaitable[None]] = wait_at_least

    def clock(self, start: float | None = None, mode: ClockMode = "running") -> Clock:
        return Clock(start, mode, wall=self.wall, monotonic=self.monotonic)


REAL_TIME = Timebase()


class Clock:
    """Unix time in seconds (a float), real or virtual.

    ``Clock()`` is real time. ``Clock(start=t)`` starts at ``t`` and ticks with
    wall time; ``Clock(start=t, mode="manual")`` stays at ``t`` until
    ``advance`` or ``set`` moves it.
    """

    __slots__ = ("_base", "_mode", "_monotonic", "_offset", "_started_at", "start", "wall")

    def __init__(
        self,
        start: float | None = None,
        mode: ClockMode = "running",
        *,
        wall: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._monotonic = monotonic
        # The wall clock: the time on the client's side, whatever the scenario's
        # says. Only a value a client compares with its own clock (an HTTP-date
        # Retry-After) is written in it; everything else is scenario time. An
        # attribute, not a method: the journal reads it on every request.
        self.wall: Callable[[], float] = wall
        self._mode: ClockMode = mode
        wall_now = wall()
        self.start: float = wall_now if start is None else float(start)
        self._base = self.start
        self._started_at = monotonic()
        # How far the wall clock is ahead of this one, fixed when it is set (a
        # running clock runs at the wall clock's rate): 0 for real time.
        self._offset = wall_now - self._base

    @property
    def mode(self) -> ClockMode:
        return self._mode

    def now(self) -> float:
        if self._mode == "manual":
            return self._base
        return self._base + (self._monotonic() - self._started_at)

    def elapsed(self) -> float:
        """Scenario time: seconds since the clock's start."""
        return self.now() - self.start

    def advance(self, seconds: float) -> float:
        """Move the clock forward (or back, with a negative number)."""
        return self.set(self.now() + seconds)

    def set(self, when: float, *, wall_now: float | None = None) -> float:
        """Set the clock to ``when``; ``wall_now``: the wall clock's reading that goes with it
        (read here if not given), so a clock that follows another keeps its offset exactly."""
        self._base = float(when)
        self._started_at = self._monotonic()
        self._offset = (self.wall() if wall_now is None else wall_now) - self._base
        return self._base

    def waited(self) -> float:
        """The clock a client that waits as it is told reads, for the time between two readings.

        A client waits by sleeping (the wall clock moves), by moving the scenario
        clock (as the docs tell a test to), or part one way and part the other. A
        running clock already counts both (it runs with the wall clock and moves
        when moved): the wall clock alone adds nothing to it. A manual clock counts
        only its moves, so the client's wait is the wall time that passed *plus* the
        scenario time it was moved: what this reads (its wall clock and its now).
        """
        if self._mode == "manual":
            return self.wall() + self._base
        return self.wall()

    def wall_offset(self) -> float:
        """Seconds from this clock to the wall clock: an instant ``t`` of this
        clock is ``t + wall_offset()`` on the wall clock, as far ahead of the
        wall's now as ``t`` is ahead of this clock's now.

        A running clock keeps the offset it was set with (so an instant maps to
        the same wall instant on every answer); a manual clock's grows as wall
        time passes while it stands still. Real time: 0.
        """
        if self._mode == "manual":
            return self.wall() - self._base
        return self._offset


# How far apart two readings of one instant may be and still be one instant: the
# floating-point arithmetic on Unix times (a float near 2030 holds 2**-22 s, and the mock
# reaches an instant by two paths: the scenario clock's monotonic sum, and the wall
# clock's offset), not time. Both the limiter's bans and the etiquette verdict's waits
# read it, so what one calls "came when told" the other does too.
ARITHMETIC = 1e-6


def parse_time(text: str) -> float:
    """Parse an ISO 8601 / RFC 3339 instant into Unix seconds.

    A time without an offset is taken as UTC. Raises ``ValueError``.
    """
    moment = datetime.fromisoformat(text.strip())
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def format_time(when: float) -> str:
    """Unix seconds as an RFC 3339 UTC instant, e.g. ``2026-03-01T12:00:00Z``."""
    moment = datetime.fromtimestamp(when, UTC)
    text = moment.isoformat(timespec="milliseconds" if when % 1 else "seconds")
    return text.replace("+00:00", "Z")


# The instants a clock may be set to, or a scenario name: from the Unix epoch
# to the start of the year 9000. Every date mockstore writes from the clock
# (RFC 3339 in the journal and HARs, a window's end a day later in
# X-RateLimit-Reset, a ban's end) must stay within what a date can say, the
# year 9999; a running clock started at the latest would need a thousand
# years to get there.
EARLIEST_TIME = 0.0  # 1970-01-01T00:00:00Z
LATEST_TIME = 221845392000.0  # 9000-01-01T00:00:00Z
TIME_RANGE = "between 1970-01-01T00:00:00Z and 9000-01-01T00:00:00Z"


def outside_range(when: float) -> str | None:
    """Why ``when`` cannot be a clock's time (a sentence), or None if it can."""
    if when != when or not EARLIEST_TIME <= when <= LATEST_TIME:
        shown = "not a number" if when != when else format_time_or_number(when)
        return f"a time must be {TIME_RANGE}; {shown} is not"
    return None


def format_time_or_number(when: float) -> str:
    """``format_time(when)``, or the number of seconds where no date can say it."""
    try:
        return format_time(when)
    except (ValueError, OverflowError, OSError):
        return f"{when:g} seconds from 1970"
