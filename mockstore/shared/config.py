"""The shared configuration as Redis holds it, read back and checked before it is used.

``mockstore:config`` (a tenant's under its prefix) is a hash of text fields
(``backend`` lists them) and ``mockstore:gen`` its generation. Whatever is read
from Redis is input: anyone who can write to that Redis can write anything
there. So every field is checked here, whole, before any of it is applied: a
configuration that is not one a mockstore process wrote (not a hash, a field
missing, not UTF-8, JSON of the wrong shape, a number out of range) is refused
with ``BadConfig``, and the process starts the mock again from its own scenario
in Redis, as when Redis comes back empty (``SharedState.refresh``), and says so
in its log, rather than answering 500 on every request until someone repairs it.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from mockstore.keys import ApiKey
from mockstore.ratelimit import DAY, Plan
from mockstore.runs import REASONS, Run

# The largest whole number read back (Lua computes with doubles).
MAX_WHOLE = 2**53
# A generation and an epoch: whole numbers, written by the scripts.
_WHOLE = re.compile(r"0|[1-9][0-9]{0,15}")
_DIGEST = re.compile(r"[0-9a-f]{64}")
# What a scenario's text and name may be at most (the loader has its own bounds too).
MAX_TEXT = 64 * 1024 * 1024
MAX_NAME = 4096


class BadConfig(Exception):
    """The configuration read back is not one a mockstore process wrote."""


@dataclass(frozen=True, slots=True)
class SharedClock:
    """The shared clock: ``at`` on it was ``wall`` on the wall clock; moved back ``back``
    times; ``real``: on real time (the wall clock itself in every process)."""

    at: float
    wall: float
    back: int
    real: bool


@dataclass(frozen=True, slots=True)
class Config:
    """The shared configuration, checked."""

    epoch: str
    source: str
    file: str
    digest: str
    clock: SharedClock
    keys: tuple[tuple[str, str, str | None], ...]
    # Each plan beyond the scenario's: (per minute, per day, minute's length, day's length;
    # a length 0: the scenario's).
    plans: dict[str, tuple[int, int, int, int]]
    run: Run | None  # the run the mock is in (None: written before runs were shared)
    journal: int  # the journal's start: the sequence number it starts after


def whole(value: Any) -> int | None:
    """A whole number within 2**53 written as text (``bytes`` or ``str``), or None."""
    if isinstance(value, bytes):
        value = value.decode("ascii", errors="replace")
    if isinstance(value, str) and _WHOLE.fullmatch(value):
        return int(value)
    return None


def is_digest(text: str) -> bool:
    """Whether ``text`` is a scenario digest as a process writes it (64 hex digits)."""
    return _DIGEST.fullmatch(text) is not None


def generation_of(value: Any) -> str | None:
    """A generation read back, as text; None when it is not one (absent, or not a number)."""
    number = whole(value)
    return None if number is None else str(number)


def parse(fields: dict[Any, Any]) -> Config:
    """The configuration from its hash as read (bytes or text); ``BadConfig`` if it is not one."""
    try:
        text = {_text(name): _text(value) for name, value in fields.items()}
        epoch = text["epoch"]
        if whole(epoch) is None:
            raise BadConfig(f"epoch {epoch[:40]!r} is not a whole number")
        source, file, digest = text["source"], text["file"], text["digest"]
        if len(source) > MAX_TEXT or len(file) > MAX_NAME or not _DIGEST.fullmatch(digest):
            raise BadConfig("the scenario's source, file or digest is not one written here")
        return Config(
            epoch=epoch,
            source=source,
            file=file,
            digest=digest,
            clock=_clock(json.loads(text["clock"])),
            keys=_keys(json.loads(text["keys"])),
            plans=_plans(json.loads(text["plans"])),
            run=run_of(json.loads(text["run"])) if "run" in text else None,
            journal=whole(text.get("journal", "0")) or 0,
        )
    except KeyError as exc:
        raise BadConfig(f"the field {exc.args[0]!r} is missing") from None
    except (ValueError, TypeError, RecursionError, UnicodeDecodeError) as exc:
        raise BadConfig(f"{type(exc).__name__}: {str(exc)[:200]}") from None


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, str):
        return value
    raise TypeError("not text")


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{value!r:.40} is not a number")
    number = float(value)
    if not math.isfinite(number) or abs(number) > MAX_WHOLE:
        raise ValueError(f"{value!r:.40} is out of range")
    return number


def _count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_WHOLE:
        raise ValueError(f"{value!r:.40} is not a whole number in range")
    return value


def _clock(raw: Any) -> SharedClock:
    if not isinstance(raw, dict):
        raise TypeError("the clock is not an object")
    real = raw.get("real", False)
    if not isinstance(real, bool):
        raise TypeError("the clock's 'real' is not true or false")
    return SharedClock(_number(raw["at"]), _number(raw["wall"]), _count(raw["back"]), real)


def _name(value: Any) -> str:
    if not isinstance(value, str) or not value or len(value) > MAX_NAME:
        raise TypeError(f"{value!r:.40} is not a name")
    return value


def _keys(raw: Any) -> tuple[tuple[str, str, str | None], ...]:
    if not isinstance(raw, list):
        raise TypeError("the keys are not a list")
    keys = []
    for item in raw:
        if not isinstance(item, list) or len(item) != 3:
            raise TypeError("a key is not [key, plan, tenant]")
        key, plan, tenant = item
        keys.append((_name(key), _name(plan), None if tenant is None else _name(tenant)))
    return tuple(keys)


def _plans(raw: Any) -> dict[str, tuple[int, int, int, int]]:
    if not isinstance(raw, dict):
        raise TypeError("the plans are not an object")
    plans = {}
    for name, figures in raw.items():
        # Two figures: a plan counted over the scenario's windows (as written before
        # plans had lengths of their own); four: with the minute's and the day's length.
        if not isinstance(figures, list) or len(figures) not in (2, 4):
            raise TypeError(
                f"plan {name!r:.40} is not [per minute, per day] "
                "or [per minute, per day, minute seconds, day seconds]"
            )
        minute, day, *lengths = (_count(figure) for figure in figures)
        if any(length > DAY for length in lengths):
            raise ValueError(f"plan {name!r:.40} has a window longer than a day")
        plans[_name(name)] = (minute, day, *lengths, 0, 0)[:4]  # type: ignore[assignment]
    return plans


def run_json(run: Run) -> str:
    """A run as the configuration holds it."""
    return json.dumps(run.to_dict())


def run_of(raw: Any) -> Run:
    """A run from the configuration's JSON, checked (``ValueError``/``TypeError`` if not one)."""
    if not isinstance(raw, dict):
        raise TypeError("the run is not an object")
    reason = raw["reason"]
    if reason not in REASONS:
        raise ValueError(f"{reason!r:.40} is not a reason a run begins for")
    header_clock = raw.get("header_clock", "wall")
    if not isinstance(header_clock, str) or len(header_clock) > MAX_NAME:
        raise TypeError("the run's header clock is not a name")
    number = _count(raw["run"])
    if number < 1:
        raise ValueError("a run number is at least 1")
    return Run(
        number,
        reason,
        _count(raw["first_seq"]),
        _number(raw["time"]),
        _number(raw["wall"]),
        _name(raw["scenario"]),
        header_clock,
    )


# -- the fields as a process writes them (read back by ``parse`` above) ----------


def clock_json(at: float, wall: float, back: int, real: bool = False) -> str:
    """The shared clock: ``at`` on it is ``wall`` on the wall clock; ``real``: real time."""
    return json.dumps({"at": at, "wall": wall, "back": back, "real": real})


def digest_of(source: str, file: str) -> str:
    """What tells one scenario from another (its file and its text)."""
    return hashlib.sha256(f"{file}\0{source}".encode()).hexdigest()


def keys_json(keys: Iterable[ApiKey]) -> str:
    """The keys as the configuration holds them."""
    return json.dumps([[k.key, k.plan, k.tenant] for k in keys])


def custom_plans_json(scenario: Any, plans: dict[str, Plan]) -> str:
    """The plans beyond the scenario's (a key issued with a plan of its own)."""
    return json.dumps(
        {name: _figures(plan) for name, plan in plans.items() if scenario.plans.get(name) != plan}
    )


def _figures(plan: Plan) -> list[int]:
    """A plan as the configuration holds it: its lengths only where it has its own."""
    figures = [plan.per_minute, plan.per_day]
    if plan.minute_seconds or plan.day_seconds:
        figures += [plan.minute_seconds, plan.day_seconds]
    return figures


def plans_of(raw: dict[str, Any]) -> dict[str, Plan]:
    """The plans a checked configuration holds, as the limiter takes them."""
    return {name: Plan(name, *figures) for name, figures in raw.items()}
