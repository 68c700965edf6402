"""``calibrate``'s part for stacked limits: how each window refuses, and which refuses first.

A gateway stacks policies, each refusing in its own way (nginx's ``limit_req`` burst
answered 503 with no ``Retry-After`` beside an hourly quota answered 429 with an
HTTP-date; GitHub's primary and secondary limits). Where the recording shows the
allowance's refusals in more than one shape, each refusal is given to the window its
figures say has nothing left (``rate_figures``: ``Shown.blocking``); a window whose
refusals all have one shape (status, Error code, ``Retry-After`` form) gets
``ratelimit.refusal.<window>``. A window whose refusals vary is written nothing (and
listed as open): nothing is written as a constant the recording shows varying.

``ratelimit.refusal.precedence``: a request the minute refused while the caller's
latest figures of the day said none was left (before the instant they said the day is
whole again) says the minute is checked first (``minute``); the reverse case cannot be
told from mockstore's ``longest`` (the day holds out longer), so it is not written.
"""

from __future__ import annotations

from typing import Any

from mockstore.fidelity.calibrate.rate_figures import Sample, quotas_of, samples_of
from mockstore.fidelity.calibrate.result import Calibration
from mockstore.fidelity.evidence import Seen
from mockstore.fidelity.formats import retry_after_kind

WINDOWS = ("minute", "day")
# (status, code, Retry-After form) of one refusal.
Shape = tuple[int, str, str]


def learn_refusals(seen: list[Seen], result: Calibration, cite: Any) -> None:
    """Settle ``ratelimit.refusal.<window>`` and ``precedence`` where ``seen`` shows them."""
    samples = samples_of(seen, quotas_of(result))
    refusals = [
        sample
        for members in samples.values()
        for sample in members
        if sample.verdict == "rate_limited" and sample.seen.code is not None
    ]
    if len({shape_of(sample) for sample in refusals}) < 2:
        return  # one way of refusing: the scenario-wide settings say it (learn)
    shapes: dict[str, dict[Shape, Sample]] = {name: {} for name in WINDOWS}
    for sample in refusals:
        blocking = [name for name in WINDOWS if _blocks(sample, name)]
        if len(blocking) == 1:
            shapes[blocking[0]].setdefault(shape_of(sample), sample)
    for name in WINDOWS:
        found = shapes[name]
        if len(found) > 1:
            result.open(
                f"ratelimit.refusal.{name}: the window's refusals differ ("
                + "; ".join(f"{status} {code}, Retry-After {form}" for status, code, form in found)
                + "); mockstore's kept"
            )
        elif found:
            (shape, sample), *_ = found.items()
            evidence = f"{cite(sample.seen)}; every refusal of the {name}'s is answered so"
            for field, value in zip(("status", "code", "retry_after"), shape, strict=True):
                result.set(f"ratelimit.refusal.{name}.{field}", value, evidence)
    if all(len(shapes[name]) == 1 for name in WINDOWS):
        _said_by_windows(result)
    first = _minute_first(samples)
    if first is not None:
        result.set(
            "ratelimit.refusal.precedence",
            "minute",
            f"{cite(first.seen)}; the minute refused while the day was spent",
        )


# What ``learn`` wrote of the allowance's refusal for the whole scenario: with each window
# refusing in its own way, it describes no refusal (and a Retry-After form of one window's
# written for both may not even validate: none with a 429).
_SCENARIO_WIDE = (
    "behaviour.error_codes.rate_limited",
    "behaviour.error_statuses.rate_limited",
    "behaviour.retry_after",
    "ratelimit.headers.retry_after",
    "ratelimit.refusal.status",
    "ratelimit.refusal.code",
)


def _said_by_windows(result: Calibration) -> None:
    """Each window has its own refusal: the scenario-wide one and the note that the
    allowance is refused in several ways go (each way is said, per window)."""
    for path in _SCENARIO_WIDE:
        result.settings.pop(path, None)
    result.inexpressible = [
        line for line in result.inexpressible if not line.startswith("rate_limited is answered")
    ]


def shape_of(sample: Sample) -> Shape:
    """A refusal's (status, code, Retry-After form)."""
    retry = sample.seen.headers.get("retry-after")
    form = "none" if retry is None else retry_after_kind(retry)
    return sample.seen.status, sample.seen.code or "", form


def _blocks(sample: Sample, name: str) -> bool:
    shown = sample.windows.get(name)
    return shown is not None and shown.blocking


def _minute_first(samples: dict[str, list[Sample]]) -> Sample | None:
    """A refusal of the minute's while the caller's latest figures of the day said none
    was left and the day was not yet whole again."""
    for members in samples.values():
        spent_until: float | None = None  # the day's reset, while it shows none left
        for sample in members:
            if sample.verdict == "key_banned":
                continue
            if sample.verdict == "rate_limited" and _blocks(sample, "minute"):
                if spent_until is not None and sample.now < spent_until - 1.0:
                    return sample
                continue
            day = sample.windows.get("day")
            if day is not None and day.remaining is not None:
                spent_until = day.reset if day.remaining == 0 else None
    return None
