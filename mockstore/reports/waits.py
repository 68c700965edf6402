"""Waits: when one is over on the clock the client read, and whether the mock refused.

Every etiquette rule about a wait (``ETQ001`` and its kin) asks the same two
questions of the journal's facts, answered here once:

**Did the mock refuse the request?** A verdict is never stricter than the mock:
a request is early only if the mock refused it (its limiter refused it, or its
answer is a 429 or an error with ``Retry-After``: a fault rule's, a recorded
provider's), or would have refused it in the state its bucket was in (a request
the limiter did not decide on, while an earlier refusal held). The journal
keeps what the limiter decided for each request (``Entry.refused_until``), so
the answer holds for any limiter.

**Was the wait over?** A client waits by sleeping (the wall clock moves), a
test advances the scenario clock instead, or both. A wait in seconds (or an
instant written on the scenario clock) is over when either clock shows it over.
An instant written on the wall clock is read against the client's own clock,
which goes on between the answer and the wait: on a manual scenario clock the
wait is the wall time that passed *plus* the scenario time moved
(``Clock.waited``, which the limiter's bans read too); a running clock counts
both already.
"""

from __future__ import annotations

from mockstore.clock import ARITHMETIC
from mockstore.reports.model import Fact

# A wait's tolerance is 0 s; ``ARITHMETIC`` is floating-point arithmetic on Unix times
# (a second is 2**-22 of one near 2030), not time: the limiter's bans allow the same.

# How a finding names the clock a figure is on (``earliness``).
BY_CLOCK = {
    "scenario": " by the scenario clock",
    "wall": " by the wall clock",
    "both": " by the wall time that passed plus the scenario time moved",
}


class Decisions:
    """Whether the mock refused each request of one bucket's run, taken in order.

    It remembers the latest instant the limiter refused the bucket until, so a
    request the limiter did not decide on is judged by the state it was in.
    """

    __slots__ = ("blocked_until",)

    def __init__(self) -> None:
        self.blocked_until = 0.0

    def refused(self, fact: Fact) -> bool:
        """Whether the mock refused ``fact``, or would have in the state it was in."""
        blocked_until = self.blocked_until
        if fact.refused_until >= 0:
            self.blocked_until = fact.refused_until
        if fact.refused_until > 0 or fact.status == 429:
            return True
        if fact.status >= 400 and fact.wait_until is not None:
            return True
        return fact.refused_until < 0 and fact.time < blocked_until


def waited(fact: Fact, told: Fact) -> bool:
    """Whether ``fact`` came once ``told``'s wait was over, on the clock the client read.

    A wait in seconds (or an instant on the scenario clock) is done when either
    clock shows it done: a client sleeps, or a test advances the clock. An
    instant written on the wall clock is read against the client's own clock,
    which goes on between the answer and the wait: on a manual clock its wait is
    the wall time that passed plus the scenario time moved (``Clock.waited``).
    """
    assert told.wait_until is not None
    wait = told.wait_until - told.time - ARITHMETIC
    scenario = fact.time - told.time
    if scenario >= wait:
        return True
    if fact.wall is None or told.wall is None:
        return False
    wall = fact.wall - told.wall
    if told.clock == "manual" and told.wall_instant:
        return scenario + wall >= wait
    return wall >= wait


def earliness(fact: Fact, told: Fact) -> tuple[float, float, str]:
    """(seconds after ``told``, seconds too early, which clock) on the clock nearer done."""
    assert told.wait_until is not None
    wait = told.wait_until - told.time
    after, clock = fact.time - told.time, "scenario"
    if fact.wall is not None and told.wall is not None:
        wall = fact.wall - told.wall
        if told.clock == "manual" and told.wall_instant:
            # The client's own clock: both together (a wall part worth naming only when
            # it is more than the time a request takes).
            after, clock = after + wall, "both" if wall > 0.5 else "scenario"
        elif wall > after + 0.5:
            # The scenario clock's figure, unless the wall clock's is nearer done by more
            # than the time a request takes (a client slept part of its wait).
            after, clock = wall, "wall"
    return after, wait - after, clock


def in_flight(fact: Fact, told: Fact) -> bool:
    """Whether ``fact`` had already been sent when ``told`` was answered.

    Known exactly from what had been answered when it arrived; for entries that
    do not say (recordings), from the scenario time and ``told``'s latency.
    """
    if fact.arrived_after >= 0:
        return fact.arrived_after < told.seq
    return told.time < fact.time < told.time + told.latency


def clock_waits(scenario: list[float], wall: list[float] | None, clock: str) -> list[list[float]]:
    """Successive waits on each clock their client may have read, given on both clocks.

    ``wall`` is None where the wall clock was not recorded. On a running clock,
    the scenario clock (it runs with the wall clock and moves when a test moves
    it); on a manual one, the wall time that passed plus the scenario time moved
    (a client sleeps, a test advances, or both); where the run's clock is not
    known (``clock`` empty), the scenario clock and the wall clock, each alone.
    """
    if clock == "running" or wall is None:
        return [scenario]
    if clock == "manual":
        return [[s + w for s, w in zip(scenario, wall, strict=True)]]
    return [scenario, wall]
