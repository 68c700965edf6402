"""How long answers take: delays drawn from quantiles, per operation and status.

A real service answers in a spread of times, and a client's timeouts and
retries meet that spread. A scenario's ``latency`` section states it the way a
recording shows it: per operation and status (or class), the answer time at a
few quantiles, ``{p0: 8, p50: 40, p99: 300, p100: 900}`` milliseconds. The
distribution between two given quantiles is linear (the inverse of a piecewise
linear distribution function), so p0 and p100 bound every delay and each given
quantile is met exactly; a rule with one value everywhere is a fixed delay.

Draws are deterministic: an answer's delay is a function of the scenario's
seed, the rule and the answer's request id (itself a function of the request's
number, in memory and in Redis alike), never of a generator's state, so the
same request sequence waits the same delays every run and in every process.
Nothing here sleeps: ``Latency.delay_ms`` says how long, and the web layer
waits without holding the event loop.
"""

from __future__ import annotations

import hashlib

from mockstore.scenario.latency_section import LatencyRule

# Rules found per (operation, status) kept at once: a handful in practice.
_MAX_FOUND = 1024


def draw(seed: int, rule: int, request_id: bytes) -> float:
    """A uniform number in [0, 1) for one answer: a hash, not a generator's next number."""
    digest = hashlib.blake2b(
        b"mockstore-latency-%d:%d:%b" % (seed, rule, request_id), digest_size=8
    ).digest()
    return (int.from_bytes(digest, "big") >> 11) / float(2**53)


class Latency:
    """A scenario's latency rules: the delay of each answer."""

    def __init__(self, rules: tuple[LatencyRule, ...], seed: int) -> None:
        self.rules = rules
        self.seed = seed
        self._found: dict[tuple[str | None, int], LatencyRule | None] = {}

    def rule_for(self, operation: str | None, status: int) -> LatencyRule | None:
        """The first rule that matches an answer (worked out once per operation and status)."""
        where = (operation, status)
        try:
            return self._found[where]
        except KeyError:
            pass
        found = next((rule for rule in self.rules if rule.matches(operation, status)), None)
        if len(self._found) >= _MAX_FOUND:
            self._found.clear()
        self._found[where] = found
        return found

    def delay_ms(self, operation: str | None, status: int, request_id: bytes) -> float:
        """How long the answer waits before it is sent (0: no rule matches)."""
        rule = self.rule_for(operation, status)
        if rule is None:
            return 0.0
        return rule.delay_ms(draw(self.seed, rule.index, request_id))


__all__ = ["Latency", "draw"]
