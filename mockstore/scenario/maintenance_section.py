"""The ``maintenance`` section of a scenario: its windows, as frozen types.

Each window covers path prefixes (relative to the base path; ``/store`` covers
``/store/orders``), optionally some methods, and a stretch of scenario time,
given one of three ways, like a fault rule's time window: ``between_seconds``
(seconds since the clock's start, ``[from, until)``), ``from`` and ``until``
(instants of the scenario clock; no ``until``: until further notice), or
``daily`` (a time of day to another in a named time zone, past midnight when
``until`` is the earlier one). ``windows_of`` builds them from a checked file;
``check_windows`` reports what the schema cannot say. ``mockstore.maintenance``
refuses the requests of an open window.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from mockstore.clock import parse_time
from mockstore.scenario.loader import scenario_schema
from mockstore.templates import unknown

Report = Callable[[tuple[str | int, ...], str], None]
_ITEM = scenario_schema()["properties"]["maintenance"]["items"]["properties"]
# What a message template may name (see the schema's ``message``).
MESSAGE_FIELDS = frozenset({"path", "method", "until"})


def _default(name: str) -> Any:
    return _ITEM[name]["default"]


@dataclass(frozen=True, slots=True)
class Daily:
    """A window open every day from one minute of the day to another, in ``time_zone``."""

    start_minute: int
    end_minute: int
    time_zone: str = "UTC"

    def bounds(self, now: float) -> tuple[float, float] | None:
        """The (start, end) instants of the opening that holds ``now``, or None."""
        zone = time_zone(self.time_zone)
        local = datetime.fromtimestamp(now, zone)
        minute = local.hour * 60 + local.minute + local.second / 60 + local.microsecond / 6e7
        midnight = local.replace(hour=0, minute=0, second=0, microsecond=0)
        start, end = self.start_minute, self.end_minute
        if start < end:
            if not start <= minute < end:
                return None
            opened, closes = midnight, midnight
        elif minute >= start:  # past midnight: opened today, closes tomorrow
            opened, closes = midnight, midnight + timedelta(days=1)
        elif minute < end:  # opened yesterday, closes today
            opened, closes = midnight - timedelta(days=1), midnight
        else:
            return None
        return (
            _instant(opened, start, zone),
            _instant(closes, end, zone),
        )


def time_zone(name: str) -> tzinfo:
    """The IANA time zone ``name``; UTC needs no time zone database."""
    return UTC if name == "UTC" else ZoneInfo(name)


def _instant(day: datetime, minute: int, zone: tzinfo) -> float:
    """The instant of ``minute`` of the local ``day`` (a wall time a DST jump skips is
    taken as the instant after it)."""
    naive = day.replace(tzinfo=None) + timedelta(minutes=minute)
    return naive.replace(tzinfo=zone).timestamp()


@dataclass(frozen=True, slots=True)
class Window:
    """One maintenance window, as the scenario gives it (checked)."""

    index: int
    name: str
    paths: tuple[str, ...] = tuple(_default("paths"))
    methods: frozenset[str] | None = None
    between: tuple[float, float] | None = None  # seconds since the clock's start
    start: float | None = None  # an instant of the scenario clock
    end: float | None = None  # None with start: until further notice
    daily: Daily | None = None
    status: int = _default("status")
    code: str = _default("code")
    message: str = _default("message")
    retry_after: str = _default("retry_after")
    stage: str = _default("stage")

    def covers(self, method: str, path: str) -> bool:
        """Whether a request (``path`` relative to the base path) is in the window's scope."""
        if self.methods is not None and method not in self.methods:
            return False
        return any(_under(path, prefix) for prefix in self.paths)

    def open_until(self, now: float, elapsed: float) -> tuple[bool, float | None]:
        """(open, its end or None for no end) at scenario instant ``now``."""
        if self.between is not None:
            low, high = self.between
            if low <= elapsed < high:
                return True, now + (high - elapsed)
            return False, None
        if self.daily is not None:
            bounds = self.daily.bounds(now)
            return (True, bounds[1]) if bounds is not None else (False, None)
        assert self.start is not None
        if now < self.start or (self.end is not None and now >= self.end):
            return False, None
        return True, self.end


def _under(path: str, prefix: str) -> bool:
    if prefix == "/":
        return True
    prefix = prefix.rstrip("/")
    return path == prefix or path.startswith(prefix + "/")


def windows_of(raw: Any) -> tuple[Window, ...]:
    """The ``maintenance`` section as a scenario file gives it (schema-checked)."""
    windows = []
    for index, item in enumerate(raw if isinstance(raw, list) else ()):
        if not isinstance(item, dict):
            continue
        between = item.get("between_seconds")
        daily = item.get("daily")
        methods = item.get("methods")
        windows.append(
            Window(
                index=index,
                name=item.get("name", f"maintenance[{index}]"),
                paths=tuple(item.get("paths", _default("paths"))),
                methods=frozenset(methods) if methods is not None else None,
                between=(float(between[0]), float(between[1])) if between else None,
                start=parse_time(item["from"]) if "from" in item else None,
                end=parse_time(item["until"]) if item.get("until") is not None else None,
                daily=Daily(
                    _minute(daily["from"]),
                    _minute(daily["until"]),
                    daily.get("time_zone", "UTC"),
                )
                if isinstance(daily, dict)
                else None,
                status=item.get("status", _default("status")),
                code=item.get("code", _default("code")),
                message=item.get("message", _default("message")),
                retry_after=item.get("retry_after", _default("retry_after")),
                stage=item.get("stage", _default("stage")),
            )
        )
    return tuple(windows)


def _minute(text: str) -> int:
    hours, minutes = text.split(":")
    return int(hours) * 60 + int(minutes)


def check_windows(raw: Any, report: Report, base_path: str, clean: Callable[[Any], bool]) -> None:
    """What the schema cannot say of the ``maintenance`` section; ``report(path, message)``.

    ``clean(path)``: the schema found nothing wrong there (its values have their types).
    """
    if not isinstance(raw, list):
        return
    for index, item in enumerate(raw):
        where: tuple[str | int, ...] = ("maintenance", index)
        if not isinstance(item, dict) or not clean(where):
            continue
        between = item.get("between_seconds")
        if between is not None and between[0] >= between[1]:
            report((*where, "between_seconds"), "the start must be before the end")
        if "until" in item and "from" not in item:
            report((*where, "until"), "until needs from")
        closes = item.get("until")
        if closes is not None and "from" in item and parse_time(closes) <= parse_time(item["from"]):
            report((*where, "until"), "until must be after from")
        daily = item.get("daily")
        if isinstance(daily, dict):
            if daily["from"] == daily["until"]:
                report(
                    (*where, "daily", "until"),
                    "from and until are the same time of day: a window open all day is "
                    "from: with no until",
                )
            zone = daily.get("time_zone", "UTC")
            try:
                time_zone(zone)
            except (ZoneInfoNotFoundError, ValueError):
                report(
                    (*where, "daily", "time_zone"),
                    f"{zone!r} is not a time zone this system knows (an IANA name such as "
                    "Europe/Paris; without the system's time zone data, pip install tzdata)",
                )
        if (
            item.get("retry_after", "seconds") != "none"
            and "from" in item
            and (item.get("until") is None)
        ):
            report(
                (*where, "retry_after"),
                "a window with no until has no end to retry after: give until, or "
                "retry_after: none",
            )
        for position, prefix in enumerate(item.get("paths", ())):
            if base_path and prefix.startswith(base_path + "/"):
                report(
                    (*where, "paths", position),
                    f"paths are relative to base_path {base_path}: "
                    f"write {prefix[len(base_path) :]!r}",
                )
        message = item.get("message")
        if isinstance(message, str):
            strange = unknown(message, MESSAGE_FIELDS)
            if strange:
                report(
                    (*where, "message"),
                    f"{{{strange[0]}}} names nothing: a window's message may name "
                    + ", ".join(f"{{{name}}}" for name in sorted(MESSAGE_FIELDS)),
                )


__all__ = ["MESSAGE_FIELDS", "Daily", "Window", "check_windows", "time_zone", "windows_of"]
