"""What one calibration is asked to do: the target, its keys, the budget and the opt-ins."""

from __future__ import annotations

from dataclasses import dataclass

BUDGET = 40  # requests: enough for every probe without the opt-ins, and a body search
TIMEOUT = 10.0  # seconds per probe


@dataclass(frozen=True)
class Options:
    """A calibration's inputs (``mockstore calibrate``'s options, or a caller's).

    ``target`` is the base address ending in the version segment, ``keys`` the
    target's API keys. Nothing is written to the target without
    ``allow_writes``, and no allowance is spent to its end without
    ``allow_rate_limit``.
    """

    target: str
    keys: tuple[str, ...]
    budget: int = BUDGET
    timeout: float = TIMEOUT
    allow_writes: bool = False
    allow_rate_limit: bool = False
