"""Which rule counts a window: the scenario's, or the same over a plan's own length.

A window of a scenario's ``ratelimit:`` (its length, algorithm and alignment) is
counted by one rule of ``counters``, ``log`` or ``buckets``. A gateway may give
each plan a window of its own length (Kong's per-consumer configuration: a
sandbox plan counting 5 per 5 s beside plans counting per minute); such a plan
(``Plan.minute_seconds``, ``day_seconds``) is counted by the same algorithm,
alignment and time zone over its length. A rule holds its length and grid, never
a caller's state, so both rule sets share one bucket state shape, and the Lua
twin of every rule takes the length and the grid as arguments
(``mockstore.limiter.limiter.script_arguments``): the plan's rules are the only
thing that changes, in Python and in Redis alike.
"""

from __future__ import annotations

from dataclasses import replace

from mockstore.limiter.buckets import LeakyBucket, TokenBucket
from mockstore.limiter.counters import FixedWindow, SlidingWindow
from mockstore.limiter.grid import Grid
from mockstore.limiter.log import SlidingLog
from mockstore.limiter.model import (
    DAY_SECONDS,
    FIXED,
    LEAKY_BUCKET,
    SLIDING_LOG,
    SLIDING_WINDOW,
    TOKEN_BUCKET,
    Limits,
    Window,
)
from mockstore.ratelimit import Plan

Rule = FixedWindow | SlidingWindow | SlidingLog | TokenBucket | LeakyBucket


def rule_for(window: Window, time_zone: str) -> Rule:
    """The rule that counts ``window`` (its grid in ``time_zone`` where it lies on the clock)."""
    seconds = window.seconds
    if window.algorithm == FIXED:
        return FixedWindow(seconds, Grid(seconds, time_zone) if window.gridded else None)
    if window.algorithm == SLIDING_WINDOW:
        return SlidingWindow(seconds, Grid(seconds, time_zone))
    if window.algorithm == SLIDING_LOG:
        return SlidingLog(seconds)
    if window.algorithm == TOKEN_BUCKET:
        return TokenBucket(seconds)
    assert window.algorithm == LEAKY_BUCKET, window.algorithm
    return LeakyBucket(seconds)


def plan_lengths(limits: Limits, plan: Plan) -> tuple[int, int]:
    """The lengths of ``plan``'s minute and day windows under ``limits``."""
    return (
        plan.minute_seconds or limits.minute.seconds,
        plan.day_seconds or limits.day.seconds,
    )


def length_problem(limits: Limits, plan: Plan) -> str | None:
    """Why ``plan``'s own window lengths cannot be counted under ``limits`` (None: they can).

    A key issued at run time may bring a plan of its own (the control API's inline
    plan): its lengths obey what a scenario's plans obey (``mockstore.scenario.limits``
    checks those with the file's positions), and need the general limiter, which
    a scenario whose plans all count the scenario's windows may not have.
    """
    for name, window, seconds in (
        ("minute", limits.minute, plan.minute_seconds),
        ("day", limits.day, plan.day_seconds),
    ):
        if not seconds or seconds == window.seconds:
            continue
        if window.gridded and DAY_SECONDS % seconds:
            return (
                f"{name}_seconds: a {window.algorithm} window on the clock's grid divides "
                f"the day: {seconds} s does not"
            )
        if limits.classic_windows is not None:
            return (
                f"{name}_seconds: this scenario is counted by mockstore's own fixed windows, "
                "which have no length per plan: give a plan of the scenario a length of its "
                f"own (plans.<name>.{name}_seconds), or choose another ratelimit: setting"
            )
    return None


class PlanRules:
    """Each plan's two rules: the scenario's, or built once for each pair of own lengths."""

    __slots__ = ("_built", "_limits", "_per_plan", "_rules")

    def __init__(self, limits: Limits, rules: tuple[Rule, Rule]) -> None:
        self._limits = limits
        self._rules = rules
        # Off the default path: a scenario whose plans have no length of their own
        # takes the scenario's rules at the first test.
        self._per_plan = limits.lengths_per_plan
        self._built: dict[tuple[int, int], tuple[Rule, Rule]] = {}

    def of(self, plan: Plan | None) -> tuple[Rule, Rule]:
        """The rules of ``plan``'s windows (None: a caller counted nowhere, the scenario's)."""
        if not self._per_plan or plan is None or not (plan.minute_seconds or plan.day_seconds):
            return self._rules
        lengths = plan_lengths(self._limits, plan)
        rules = self._built.get(lengths)
        if rules is None:
            limits = self._limits
            rules = self._built[lengths] = (
                rule_for(replace(limits.minute, seconds=lengths[0]), limits.time_zone),
                rule_for(replace(limits.day, seconds=lengths[1]), limits.time_zone),
            )
        return rules

    def admit(self, plan: Plan) -> None:
        """Count ``plan`` (one issued at run time) over its own lengths from now on."""
        if plan.minute_seconds or plan.day_seconds:
            self._per_plan = True
