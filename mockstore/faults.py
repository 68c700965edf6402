"""Scenario rules: which fault or scripted route answers a request.

Pure Python: a request is described by ``RequestFacts`` and the engine says
which rule fires. Call counts and the seeded random choices live here, so the
same request sequence fires the same rules every time.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any

from mockstore.scenario.model import FaultRule, Match, Route


@dataclass(slots=True)
class RequestFacts:
    """What a rule may look at. ``path`` is relative to the base path."""

    operation: str | None
    method: str
    path: str
    key: str | None
    plan: str | None
    elapsed: float
    query: dict[str, list[str]] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None


@dataclass(slots=True)
class Outcome:
    """What the rules decided: extra delay, and at most one answering rule."""

    delay_ms: float = 0.0
    rule: FaultRule | None = None
    fired: list[str] = field(default_factory=list)


def compile_path(template: str) -> re.Pattern[str]:
    """``/pets/{petId}`` -> a pattern matching one segment per ``{name}``."""
    parts = re.split(r"(\{[^/{}]+\})", template)
    regex = "".join("[^/]+" if p.startswith("{") else re.escape(p) for p in parts)
    return re.compile(f"^{regex}$")


class _CompiledMatch:
    __slots__ = ("match", "needs_body", "path_re")

    def __init__(self, match: Match) -> None:
        self.match = match
        self.path_re = compile_path(match.path) if match.path else None
        self.needs_body = bool(match.body)

    def static(self, facts: RequestFacts) -> bool:
        """The conditions that depend on the request alone."""
        m = self.match
        if m.operation is not None and m.operation != facts.operation:
            return False
        if m.method is not None and m.method != facts.method:
            return False
        if self.path_re is not None and not self.path_re.match(facts.path):
            return False
        if m.key is not None and m.key != facts.key:
            return False
        if m.plan is not None and m.plan != facts.plan:
            return False
        for name, value in m.query:
            if value not in facts.query.get(name, ()):
                return False
        for name, value in m.headers:
            if facts.headers.get(name) != value:
                return False
        if m.body:
            if not isinstance(facts.body, dict):
                return False
            for name, value in m.body:
                if name not in facts.body or facts.body[name] != value:
                    return False
        return True


class FaultEngine:
    """Evaluates the scenario's fault rules in order, counting matching calls."""

    def __init__(self, rules: tuple[FaultRule, ...], rng: random.Random) -> None:
        self._rules = rules
        self._compiled = [_CompiledMatch(rule.match) for rule in rules]
        self._rng = rng
        self.counts = [0] * len(rules)
        # Rules bound to one operation are looked up by it, so a request that no
        # rule names costs one dict lookup however many rules there are.
        self._by_operation: dict[str | None, list[int]] = {}
        anywhere = [i for i, r in enumerate(rules) if r.match.operation is None]
        for index, rule in enumerate(rules):
            if rule.match.operation is not None:
                self._by_operation.setdefault(rule.match.operation, []).append(index)
        for operation in list(self._by_operation):
            self._by_operation[operation] = sorted(self._by_operation[operation] + anywhere)
        self._anywhere = anywhere
        self.needs_body = {
            op: any(self._compiled[i].needs_body for i in indexes)
            for op, indexes in self._by_operation.items()
        }
        self.any_needs_body = any(c.needs_body for c in self._compiled)

    def __bool__(self) -> bool:
        return bool(self._rules)

    def candidates(self, operation: str | None) -> list[int]:
        return self._by_operation.get(operation, self._anywhere)

    def evaluate(self, facts: RequestFacts) -> Outcome:
        outcome = Outcome()
        for index in self.candidates(facts.operation):
            rule = self._rules[index]
            if not self._fires(index, facts):
                continue
            outcome.fired.append(rule.name)
            if rule.delay is not None:
                outcome.delay_ms += rule.delay.draw_ms(self._rng)
            if rule.reply is not None or rule.fault is not None:
                outcome.rule = rule
                break
        return outcome

    def _fires(self, index: int, facts: RequestFacts) -> bool:
        compiled = self._compiled[index]
        if not compiled.static(facts):
            return False
        self.counts[index] += 1
        count = self.counts[index]
        m = compiled.match
        if m.calls and count not in m.calls:
            return False
        if m.from_call is not None and count < m.from_call:
            return False
        if m.until_call is not None and count > m.until_call:
            return False
        if m.between_seconds is not None:
            start, end = m.between_seconds
            if not start <= facts.elapsed < end:
                return False
        # Drawn last, and only here, so the random sequence depends on nothing
        # but the requests that reach this rule.
        return m.probability is None or self._rng.random() < m.probability


class RouteTable:
    """Scripted routes: answers for operations the spec leaves open, or new paths."""

    def __init__(self, routes: tuple[Route, ...]) -> None:
        self.by_operation: dict[str, Route] = {}
        self._by_path: list[tuple[str, re.Pattern[str], Route]] = []
        for route in routes:
            if route.operation is not None:
                self.by_operation.setdefault(route.operation, route)
            elif route.method and route.path:
                self._by_path.append((route.method, compile_path(route.path), route))

    def for_path(self, method: str, path: str) -> tuple[Route | None, list[str]]:
        """The route for a method and path, and the methods the path has."""
        allowed: list[str] = []
        found = None
        for route_method, pattern, route in self._by_path:
            if pattern.match(path):
                allowed.append(route_method)
                if route_method == method and found is None:
                    found = route
        return found, allowed
