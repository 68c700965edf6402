"""The ``latency`` section of a scenario: answer times by quantiles, as frozen types.

Per operation and status (or class), the answer time at a few quantiles,
``{p0: 8, p50: 40, p99: 300, p100: 900}`` milliseconds; the distribution between
two given quantiles is linear, so p0 and p100 bound every delay. ``rules_of``
builds the rules from a checked file; ``check_latency`` reports what the schema
cannot say. ``mockstore.latency`` draws each answer's delay.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

Report = Callable[[tuple[str | int, ...], str], None]


@dataclass(frozen=True, slots=True)
class LatencyRule:
    """One rule of the ``latency`` section: where it applies, and its quantiles.

    ``points`` are (quantile from 0 to 1, milliseconds), by quantile, from 0 to 1.
    """

    index: int
    points: tuple[tuple[float, float], ...]
    operation: str | None = None
    status: int | None = None
    status_class: int | None = None

    def matches(self, operation: str | None, status: int) -> bool:
        return (
            (self.operation is None or self.operation == operation)
            and (self.status is None or self.status == status)
            and (self.status_class is None or self.status_class == status // 100)
        )

    def delay_ms(self, u: float) -> float:
        """The delay at quantile ``u`` (a uniform draw in [0, 1))."""
        points = self.points
        at = bisect_right(points, (u, float("inf")))
        if at <= 0:
            return points[0][1]
        if at >= len(points):
            return points[-1][1]
        (q0, v0), (q1, v1) = points[at - 1], points[at]
        if q1 == q0:
            return v1
        return v0 + (v1 - v0) * (u - q0) / (q1 - q0)

    @property
    def quantiles_ms(self) -> dict[str, float]:
        """The rule's quantiles as the scenario writes them (``p50``: milliseconds)."""
        return {quantile_name(q): value for q, value in self.points}


def quantile_name(q: float) -> str:
    """``0.5`` -> ``p50``, ``0.999`` -> ``p99.9``."""
    text = f"{q * 100:.3f}".rstrip("0").rstrip(".")
    return f"p{text}"


def _quantile(name: str) -> float:
    return float(name[1:]) / 100


def rules_of(raw: Any) -> tuple[LatencyRule, ...]:
    """The ``latency`` section as a scenario file gives it (schema-checked)."""
    rules = []
    for index, item in enumerate(raw if isinstance(raw, list) else ()):
        if not isinstance(item, dict) or not isinstance(item.get("quantiles_ms"), dict):
            continue
        status = item.get("status")
        points = sorted(
            (_quantile(name), float(value)) for name, value in item["quantiles_ms"].items()
        )
        rules.append(
            LatencyRule(
                index,
                tuple(points),
                item.get("operation"),
                status if isinstance(status, int) else None,
                int(status[0]) if isinstance(status, str) else None,
            )
        )
    return tuple(rules)


def check_latency(raw: Any, report: Report, clean: Callable[[Any], bool]) -> None:
    """What the schema cannot say: quantiles never decrease."""
    if not isinstance(raw, list):
        return
    for index, item in enumerate(raw):
        where: tuple[str | int, ...] = ("latency", index, "quantiles_ms")
        if not isinstance(item, dict) or not clean(where):
            continue
        given = item.get("quantiles_ms")
        if not isinstance(given, dict):
            continue
        ordered = sorted(given.items(), key=lambda pair: _quantile(pair[0]))
        for (low_name, low), (high_name, high) in pairwise(ordered):
            if high < low:
                report(
                    (*where, high_name),
                    f"{high_name} ({high} ms) is below {low_name} ({low} ms): quantiles never "
                    "decrease",
                )
                break


__all__ = ["LatencyRule", "check_latency", "quantile_name", "rules_of"]
