"""What one calibration is asked to do: its sources, its keys, the budget and the opt-ins."""

from __future__ import annotations

from dataclasses import dataclass

# Requests: every probe without the opt-ins, the writes and a body search to the byte,
# and one small key's minute spent.
BUDGET = 80
TIMEOUT = 10.0  # seconds per probe
WAIT = 60.0  # seconds calibrate waits out an allowance spent before it began


@dataclass(frozen=True)
class KeyOption:
    """``--key KEY[=NAME]``: a key of the target (or its alias, for ``--from`` alone),
    and the name the scenario gives it (its alias when none)."""

    key: str
    name: str | None = None


@dataclass(frozen=True)
class Options:
    """A calibration's inputs (``mockstore calibrate``'s options, or a caller's).

    ``recording`` is a HAR to learn from first (``--from``); ``target`` the base
    address ending in the version segment, probed for what the recording does not
    settle. Nothing is written to the target (no POST, PUT, PATCH or DELETE) without
    ``allow_writes``, and no allowance is spent to its end without
    ``allow_rate_limit``.
    """

    target: str | None
    keys: tuple[KeyOption, ...]
    recording: str | None = None
    budget: int = BUDGET
    timeout: float = TIMEOUT
    allow_writes: bool = False
    allow_rate_limit: bool = False
    wait: float = WAIT
