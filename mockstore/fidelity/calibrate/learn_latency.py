"""Calibrate's latency: the answer times a recording shows, as quantiles per operation and status.

Each recorded answer's time (HAR ``time``; ``mockstore record`` journals the time
from the request's arrival to the end of the upstream's answer) falls in one
group: the operation that answered it (none for a path or method no operation
serves) and its status. A group's rule states its fastest and slowest answers
(``p0``, ``p100``: no delay drawn falls outside them) and, as the group has
answers enough to tell them, its median (3 answers), p90 (10) and p99 (100),
each the recorded answers' own quantile. So a group whose answers vary is
never written as one value; one of a single answer is a fixed delay, noted as
an estimate. Rules for an operation come before the rules for a status alone,
so the first that matches an answer is its group's.
"""

from __future__ import annotations

import math
from typing import Any

from mockstore.fidelity.calibrate.result import Calibration
from mockstore.fidelity.evidence import Seen
from mockstore.scenario.latency_section import quantile_name

# The quantiles a group states, and the answers it needs to state each.
_QUANTILES = ((0.5, 3), (0.9, 10), (0.99, 100))
_OPERATIONS = ("listPets", "createPet", "getPet", "listOrders")


def quantile(values: list[float], q: float) -> float:
    """The ``q`` quantile of sorted ``values``, interpolated between the two nearest."""
    at = q * (len(values) - 1)
    low = math.floor(at)
    high = min(low + 1, len(values) - 1)
    return values[low] + (values[high] - values[low]) * (at - low)


def _ms(value: float) -> float:
    """Milliseconds as a scenario writes them: to the tenth."""
    return round(value, 1)


def learn_latency(seen: list[Seen], result: Calibration, cite: Any) -> None:
    """Settle ``latency`` from the answer times of ``seen``; ``cite`` names an exchange."""
    groups: dict[tuple[str | None, int], list[tuple[float, Seen]]] = {}
    for s in seen:
        duration = s.item.duration_ms
        if duration is None:
            continue
        groups.setdefault((s.operation, s.status), []).append((duration, s))
    if not groups:
        if seen:
            result.open("latency: the recording states no answer times (HAR time)")
        return

    def order(where: tuple[str | None, int]) -> tuple[int, int, int]:
        operation, status = where
        if operation is None:
            return (1, 0, status)
        return (0, _OPERATIONS.index(operation), status)

    for where in sorted(groups, key=order):
        operation, status = where
        members = sorted(groups[where], key=lambda pair: pair[0])
        values = [value for value, _ in members]
        quantiles = {"p0": _ms(values[0])}
        for q, needed in _QUANTILES:
            if len(values) >= needed:
                quantiles[quantile_name(q)] = _ms(quantile(values, q))
        quantiles["p100"] = _ms(values[-1])
        # Rounding must not make them decrease (a scenario refuses that).
        running = 0.0
        for name in list(quantiles):
            running = quantiles[name] = max(running, quantiles[name])
        rule: dict[str, Any] = {"status": status, "quantiles_ms": quantiles}
        if operation is not None:
            rule = {"operation": operation, **rule}
        fastest, slowest = members[0][1], members[-1][1]
        note = f"{len(values)} answer(s) from {values[0]:.1f} to {values[-1]:.1f} ms"
        evidence = [cite(fastest, code=False, note=note)]
        if slowest is not fastest:
            evidence.append(cite(slowest, code=False, note="the slowest"))
        result.set("latency", rule, *evidence)
        if len(values) == 1:
            what = operation or "answers no operation serves"
            result.open(
                f"latency of {what} {status}: one answer in the recording, written as a "
                f"fixed {values[0]:.1f} ms"
            )


__all__ = ["learn_latency", "quantile"]
