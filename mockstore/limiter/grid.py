"""Where windows aligned to the clock lie: every ``seconds`` from each midnight of a time zone.

A provider's day turns at midnight where it is (``ratelimit.time_zone``, an
IANA name such as ``America/New_York``), and its shorter aligned windows start
on the same grid: an hour-long window in India starts at :30 past each UTC
hour. A window length divides the day (the scenario builder refuses others),
so in UTC the grid is every multiple of the length since the epoch, as it has
always been; elsewhere each local day is cut from its own midnight, and a day
of 23 or 25 hours (daylight saving time) ends its last window at the next
midnight. A midnight that does not exist (a zone that moves its clocks at
midnight) is the first instant of the date.

The zones are the IANA database's, as ``zoneinfo`` reads it (the ``tzdata``
package where the system has none). Only Python knows them: the instants a window starts and ends at
are worked out here for each request and handed to whichever keeps the
counters (the Lua request script, for a shared state, takes them as arguments).
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from mockstore.limiter.model import DAY_SECONDS


def zone_problem(name: str) -> str | None:
    """Why ``name`` is not a time zone this machine knows (None when it is one)."""
    if name == "UTC":
        return None  # no database needed: the grid counts from the epoch
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        return (
            f"{name!r} is not an IANA time zone this machine knows "
            "(write it as Area/City, e.g. America/New_York, or UTC)"
        )
    return None


class Grid:
    """The aligned windows of one length in one time zone: ``at(now)`` gives the one holding now.

    The local day is kept between calls, so a request costs a subtraction and a
    floor division unless it falls in another day.
    """

    __slots__ = ("_day_end", "_day_start", "_seconds", "_utc", "_zone")

    def __init__(self, seconds: int, zone: str = "UTC") -> None:
        if DAY_SECONDS % seconds:
            raise ValueError(f"a window aligned to the clock divides the day: {seconds} s does not")
        self._seconds = float(seconds)
        self._utc = zone == "UTC"
        self._zone = None if self._utc else ZoneInfo(zone)
        self._day_start = self._day_end = 0.0

    def at(self, now: float) -> tuple[float, float, float]:
        """``(start, end, next_end)``: the window holding ``now``, and the end of the one after."""
        length = self._seconds
        if self._utc:
            start = now // length * length
            return start, start + length, start + 2 * length
        if not self._day_start <= now < self._day_end:
            self._day_start, self._day_end = self._day(now)
        day_start, day_end = self._day_start, self._day_end
        start = day_start + (now - day_start) // length * length
        end = start + length
        if end < day_end:
            return start, end, min(end + length, day_end)
        # The day's last window: the one after it is the next day's first.
        following = self._midnight_after(day_end)
        return start, day_end, min(day_end + length, following)

    def _day(self, now: float) -> tuple[float, float]:
        """The local day holding ``now``: its first instant, and the next day's."""
        zone = self._zone
        assert zone is not None
        today = datetime.fromtimestamp(now, zone).date()
        start = _midnight(today, zone)
        if now < start:  # a midnight counted twice: the instant lies in the day before
            today -= timedelta(days=1)
            start = _midnight(today, zone)
        end = _midnight(today + timedelta(days=1), zone)
        while now >= end:
            today += timedelta(days=1)
            start, end = end, _midnight(today + timedelta(days=1), zone)
        return start, end

    def _midnight_after(self, midnight: float) -> float:
        zone = self._zone
        assert zone is not None
        day = datetime.fromtimestamp(midnight, zone).date()
        return _midnight(day + timedelta(days=1), zone)


def _midnight(day: date, zone: ZoneInfo) -> float:
    """The first instant of ``day`` in ``zone``, as Unix seconds.

    A midnight in a gap (clocks moved forward at 00:00) is read with the offset
    before the move (PEP 495's ``fold=0``), which names the instant of the move:
    the date's first.
    """
    return datetime(day.year, day.month, day.day, tzinfo=zone).timestamp()
