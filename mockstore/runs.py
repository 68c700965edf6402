"""Runs: the stretches of one scenario's time that the verdicts judge one at a time.

A run begins when the server starts, and at every reset, scenario load,
tenant creation and backwards move of the clock: each of these puts the
mock's time, counters and bans somewhere new, so a request in one run says
nothing about the waits an answer of another run asked for. The journal
numbers every entry with its run; every etiquette rule judges within a run.

Run numbers are plain integers drawn from one ``RunCounter`` per server,
shared with its tenants, so they never repeat within a server, and a report
over the server and its tenants can tell every run apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

RunReason = Literal["start", "reset", "scenario", "tenant", "clock"]

# What began a run, as a report says it ("run 7, begun by a reset").
REASONS: dict[str, str] = {
    "start": "the server's start",
    "reset": "a reset",
    "scenario": "a scenario load",
    "tenant": "the tenant's creation",
    "clock": "moving the clock back",
}


@dataclass(frozen=True, slots=True)
class Run:
    """Where one run began: its number, why, the first sequence number it may hold, when."""

    number: int
    reason: RunReason
    first_seq: int
    time: float  # the scenario clock when it began
    wall: float  # the wall clock when it began
    scenario: str
    header_clock: str = "wall"  # its scenario's clock.headers: its answers' instants
    # Its scenario clock's mode: on a manual clock a client's wait is the wall time that
    # passed plus the scenario time moved (``Clock.waited``).
    clock_mode: str = "running"

    def to_dict(self) -> dict[str, Any]:
        return {
            "run": self.number,
            "reason": self.reason,
            "first_seq": self.first_seq,
            "time": self.time,
            "wall": self.wall,
            "scenario": self.scenario,
            "header_clock": self.header_clock,
            "clock_mode": self.clock_mode,
        }


class RunCounter:
    """Run numbers for one server and its tenants: each is used once."""

    __slots__ = ("last",)

    def __init__(self) -> None:
        self.last = 0

    def next(self) -> int:
        self.last += 1
        return self.last
