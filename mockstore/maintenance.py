"""Maintenance windows: paths that answer "under maintenance" for a while, on the scenario clock.

A scenario's ``maintenance`` section lists windows. Each covers path prefixes
(relative to the base path; ``/store`` covers ``/store/orders``), optionally some
methods, and a stretch of scenario time, given one of three ways, like a fault
rule's time window:

- ``between_seconds: [from, until)``, seconds since the clock's start;
- ``from`` (and ``until``, or until further notice), instants of the scenario clock;
- ``daily``, a time of day to another in a named time zone (past midnight when
  ``until`` is the earlier one), every day.

While a window is open, a request it covers is refused with the window's
status, Error code and message, and ``Retry-After`` to the window's end in the
window's form: whole seconds rounded up, seconds with a decimal (``60.0``), an
HTTP-date, or none (never for a window with no end: there is no end to state).
Nothing here knows HTTP: ``Maintenance.refusal`` is an ``ApiError`` whose
``retry_at`` is the end, and ``retry_after`` writes the header's value.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from mockstore.clock import format_time
from mockstore.errors import ApiError
from mockstore.scenario.maintenance_section import Window
from mockstore.templates import fill


class Maintenance:
    """A scenario's windows, asked for the one that refuses a request, stage by stage."""

    def __init__(self, windows: tuple[Window, ...]) -> None:
        self.windows = windows
        self.stages = frozenset(window.stage for window in windows)

    def refusal(
        self, stage: str, method: str, relative: str, path: str, now: float, elapsed: float
    ) -> tuple[Window, ApiError] | None:
        """The first open window of ``stage`` covering the request, and its refusal."""
        for window in self.windows:
            if window.stage != stage or not window.covers(method, relative):
                continue
            is_open, end = window.open_until(now, elapsed)
            if not is_open:
                continue
            message = fill(
                window.message,
                {
                    "path": path,
                    "method": method,
                    "until": format_time(end) if end is not None else "further notice",
                },
            )
            error = ApiError(
                "maintenance", message, status=window.status, condition="maintenance", retry_at=end
            )
            error.code = window.code
            return window, error
        return None


def retry_after(
    form: str, end: float | None, now: float, date: Callable[[float], bytes]
) -> bytes | None:
    """``Retry-After`` for a window closing at ``end`` (scenario time), or None for none.

    ``date(instant)`` writes an HTTP-date on the headers' clock. Never early: whole
    seconds and the date are rounded up, the decimal form to the tenth.
    """
    if end is None or form == "none":
        return None
    wait = max(0.0, end - now)
    if form == "seconds":
        return b"%d" % math.ceil(round(wait, 6))
    if form == "decimal":
        return b"%.1f" % (math.ceil(round(wait * 10, 6)) / 10)
    return date(end)


__all__ = ["Maintenance", "retry_after"]
