"""Scenario rules: which fault or scripted route answers a request.

Pure Python: a request is described by ``RequestFacts`` and the engine says
which rule fires. Call counts live here; a rule's random choices (``probability``,
a random ``delay``) are ``draw``s that depend on nothing but the scenario's
seed, the rule and its call count, so the same request sequence fires the same
rules every time, and a shared state (``mockstore.shared``) draws the same
numbers in Redis that one process draws here.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple
from urllib.parse import parse_qsl

from mockstore.budget import ByteBudget
from mockstore.routing import allow_header, compile_path
from mockstore.scenario.model import FaultRule, Match, Route


class RequestFacts:
    """What a rule may look at. ``path`` is relative to the base path.

    A plain class rather than a dataclass: one is built per request that a
    rule could apply to, and a dataclass's default factories cost more.
    """

    __slots__ = (
        "body",
        "elapsed",
        "headers",
        "key",
        "method",
        "operation",
        "path",
        "plan",
        "query",
    )

    def __init__(
        self,
        operation: str | None,
        method: str,
        path: str,
        key: str | None,
        plan: str | None,
        elapsed: float,
        query: dict[str, list[str]] | None = None,
        headers: dict[str, str] | None = None,
        body: Any = None,
    ) -> None:
        self.operation = operation
        self.method = method
        self.path = path
        self.key = key
        self.plan = plan
        self.elapsed = elapsed
        self.query = {} if query is None else query
        self.headers = {} if headers is None else headers
        self.body = body


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the rules decided: extra delay, and at most one answering rule."""

    delay_ms: float = 0.0
    rule: FaultRule | None = None
    fired: tuple[str, ...] = ()


NOTHING = Outcome()  # most requests: immutable, so one instance serves them all


Check = Callable[[RequestFacts], bool]
_NO_LIMIT = 2**63


class _CompiledRule:
    """A rule reduced to what evaluation needs; ``static`` holds only the checks it has."""

    __slots__ = (
        "calls",
        "every",
        "first",
        "index",
        "last",
        "probability",
        "rule",
        "scope",
        "static",
        "window",
    )

    def __init__(self, index: int, rule: FaultRule) -> None:
        m = rule.match
        self.index = index
        self.rule = rule
        self.static = _static_check(m)
        # The first and last counts at which the rule can fire, so most count
        # conditions are two integer comparisons.
        self.first = max(m.from_call or 1, min(m.calls, default=1), m.every or 1)
        self.last = min(m.until_call or _NO_LIMIT, max(m.calls, default=_NO_LIMIT))
        self.calls = m.calls or None
        self.every = m.every
        self.window = m.between_seconds
        self.probability = m.probability
        self.scope: int | None = None  # the shared counter of a rule with no static check


def _static_check(m: Match) -> Check | None:
    """One callable for the request conditions beyond operation and key (the index's)."""
    checks = _static_checks(m)
    if not checks:
        return None
    if len(checks) == 1:
        return checks[0]

    def every_check(facts: RequestFacts) -> bool:
        # A plain loop: all() with a generator costs more than the checks themselves.
        for check in checks:  # noqa: SIM110
            if not check(facts):
                return False
        return True

    return every_check


def _static_checks(m: Match) -> tuple[Check, ...]:
    checks: list[Check] = []
    if m.method is not None:
        method = m.method
        checks.append(lambda f: f.method == method)
    if m.path is not None:
        pattern = compile_path(m.path)
        checks.append(lambda f: pattern.match(f.path) is not None)
    if m.plan is not None:
        plan = m.plan
        checks.append(lambda f: f.plan == plan)
    for name, value in m.query:
        checks.append(lambda f, n=name, v=value: v in f.query.get(n, ()))
    for name, value in m.headers:
        checks.append(lambda f, n=name, v=value: f.headers.get(n) == v)
    if m.body:
        wanted = m.body
        checks.append(
            lambda f: (
                isinstance(f.body, dict) and all(n in f.body and f.body[n] == v for n, v in wanted)
            )
        )
    return tuple(checks)


class Screened(NamedTuple):
    """What ``FaultEngine.screen`` found for a request: the rules that could fire."""

    needs: Needs  # the parts of the request they read
    rows: tuple[Row, ...]


@dataclass(frozen=True, slots=True)
class Needs:
    """Which parts of a request the candidate rules read, so the caller parses only those."""

    query: bool = False
    headers: frozenset[str] = frozenset()  # lower-case names of the headers rules compare
    body: bool = False
    header_keys: frozenset[bytes] = frozenset()  # the same names as ASGI spells them


def draw(seed: str, index: int, count: int, which: int = 0) -> float:
    """A uniform number in [0, 1) for rule ``index``'s ``count``-th matching call.

    ``which``: 0 decides its ``probability``, 1 and 2 its random delay. The
    first 52 bits of a SHA-1, exact in a double: the request script in Redis
    (``mockstore.shared.scripts``) computes the same from ``redis.sha1hex``.
    A function of the call rather than a generator's next number, so a rule's
    draws do not move when another rule is added or requests interleave.
    """
    digest = hashlib.sha1(f"{seed}:{index}:{count}:{which}".encode()).hexdigest()
    return int(digest[:13], 16) / _TWO_TO_52


_TWO_TO_52 = float(2**52)


class FaultEngine:
    """Evaluates the scenario's fault rules in order, counting matching calls.

    Rules are indexed by (operation, key): a request that no rule names costs
    one dict lookup however many rules there are, and a rule bound to another
    key is never looked at. A rule's count is the number of requests that met
    its request conditions, whether or not an earlier rule answered them, so
    ``calls: [3]`` means the third such request whatever the rules above it did.
    """

    def __init__(self, rules: tuple[FaultRule, ...], seed: int | str) -> None:
        self.rules = rules  # the scenario's, in order
        self.seed = str(seed)
        self._compiled = [_CompiledRule(i, rule) for i, rule in enumerate(rules)]
        self._counts = [0] * len(rules)
        # A rule with no condition beyond operation and key counts exactly the
        # requests of its (operation, key) scope, so those share one counter per
        # scope, bumped once per request instead of once per rule.
        self._scopes: dict[tuple[str | None, str | None], int] = {}
        for c in self._compiled:
            if c.static is None:
                scope = (c.rule.match.operation, c.rule.match.key)
                c.scope = self._scopes.setdefault(scope, len(self._scopes))
        self._scope_counts = [0] * len(self._scopes)
        self._tables: dict[tuple[str | None, str | None], _Table] = {}
        self._last = _NO_TABLE  # screen()'s last table
        # Every query parameter a rule reads has a bit, the same in every table;
        # the bits of each query string seen (clients repeat theirs) are kept,
        # within a budget: 256 KiB per engine (one per running state), none from
        # a query string over 2 KiB.
        self._query_names = tuple(sorted({n for r in rules for n, _ in r.match.query}))
        self._query_bits: dict[bytes, int] = {}
        self._query_budget = ByteBudget(256 * 1024, 2048)

    def __bool__(self) -> bool:
        return bool(self.rules)

    @property
    def counts(self) -> list[int]:
        """Each rule's count of matching calls, in rule order."""
        return [
            self._counts[c.index] if c.scope is None else self._scope_counts[c.scope]
            for c in self._compiled
        ]

    def candidates(self, operation: str | None) -> list[int]:
        """The indexes of the rules that can apply to an operation, for any key."""
        return [i for i, rule in enumerate(self.rules) if rule.match.operation in (None, operation)]

    def _table(self, operation: str | None, key: str | None) -> _Table:
        table = self._tables.get((operation, key))
        if table is None:
            table = self._tables[(operation, key)] = _Table(
                self._compiled, operation, key, len(self._scopes), self._query_names
            )
            table.scopes = tuple(
                index
                for (op, k), index in self._scopes.items()
                if op in (None, operation) and k in (None, key)
            )
        return table

    def applies(self, operation: str | None, key: str | None) -> Needs | None:
        """None when no rule can apply to this operation and key; else what they read."""
        table = self._table(operation, key)
        return table.needs if table.rows else None

    def screen(
        self,
        operation: str | None,
        key: str | None,
        query: bytes,
        headers: Iterable[tuple[bytes, bytes]],
        elapsed: float,
    ) -> Screened | None:
        """Count a request in its scopes and say which rules could fire for it; None if none.

        The cheap first step of ``evaluate``, from the raw request: on a
        request no rule can fire for (most requests of a scenario with rules)
        nothing is built, and ``RequestFacts`` are made only when this returns
        rows, for ``evaluate(facts, screened)``. ``query`` is the raw query
        string; ``headers`` the ASGI header pairs (names lower-case), or none
        at all when the caller knows the request carries no header any rule
        compares (``rule_header_names``).
        """
        table = self._last
        if operation is not table.operation or key is not table.key:
            # A suite's requests come in runs of one key and operation: the last
            # table is checked by identity before the dict is asked.
            table = self._last = self._tables.get((operation, key)) or self._table(operation, key)
        if not table.rows:
            return None
        # The table's _count and its shape of the raw request, inlined: this runs
        # on every request a rule could apply to, and a call costs a tenth of it.
        scope_counts = self._scope_counts
        stale = not table._from <= elapsed < table._until
        wakes = table._wakes
        for scope in table.scopes:
            count = scope_counts[scope] = scope_counts[scope] + 1
            if count >= wakes[scope]:
                stale = True
        if stale:
            table._forget()
        shape = 0
        if table._query_mask:
            found = self._query_bits.get(query)
            shape = (self._learn_query(query) if found is None else found) & table._query_mask
        wanted = table._header_bits
        if wanted:
            for name, _ in headers:
                bit = wanted.get(name)
                if bit is not None:
                    shape |= bit
        rows = table._live.get(shape)
        if rows is None:
            rows = table._learn(shape, elapsed, scope_counts)
        return Screened(table.needs, rows) if rows else None

    def _learn_query(self, query: bytes) -> int:
        """The bits of the rules' query parameters a raw query string carries (and keep them)."""
        parsed = parse_query(query)
        bits = 0
        for i, name in enumerate(self._query_names):
            if name in parsed:
                bits |= 1 << i
        if self._query_budget.admit(self._query_bits, len(query)):
            self._query_bits[query] = bits
        return bits

    def evaluate(self, facts: RequestFacts, screened: Screened | None = None) -> Outcome:
        """Which rules fire for a request, counting it; ``screened`` if ``screen`` ran already."""
        fired: list[str] = []
        delay_ms = 0.0
        answer: FaultRule | None = None
        counts = self._counts
        scope_counts = self._scope_counts
        elapsed = facts.elapsed
        if screened is None:
            table = self._tables.get((facts.operation, facts.key)) or self._table(
                facts.operation, facts.key
            )
            rows = table.rows_for(facts, scope_counts)
        else:
            rows = screened.rows
        for static, index, scope, first, last, calls, every, window, chance, rule in rows:
            if static is None:
                count = scope_counts[scope]
            elif static(facts):
                count = counts[index] = counts[index] + 1
            else:
                continue
            if answer is not None or count < first or count > last:
                continue
            if calls is not None and count not in calls:
                continue
            if every is not None and count % every:
                continue
            if window is not None and not window[0] <= elapsed < window[1]:
                continue
            if chance is not None and draw(self.seed, index, count) >= chance:
                continue
            fired.append(rule.name)
            if rule.delay is not None:
                delay_ms += self.delay_ms(rule, index, count)
            if rule.reply is not None or rule.fault is not None:
                answer = rule
        if not fired:
            return NOTHING
        return Outcome(delay_ms, answer, tuple(fired))

    def delay_ms(self, rule: FaultRule, index: int, count: int) -> float:
        """The delay rule ``index`` adds on its ``count``-th matching call."""
        assert rule.delay is not None
        if rule.delay.kind == "fixed":
            return rule.delay.first
        seed = self.seed
        return rule.delay.draw_ms(draw(seed, index, count, 1), draw(seed, index, count, 2))


# Faults that break the connection before the operation runs: nothing is stored.
STOPPING_FAULTS = frozenset({"connection_reset", "empty_response"})


class SharedRules(NamedTuple):
    """A request's rules as the shared state's request script evaluates them.

    ``counters``: the counters the request bumps (``f:s:<scope>``, ``f:r:<rule>``:
    names within the state's epoch); ``args``: nine per rule that could fire, in
    rule order (see ``mockstore.shared.scripts``).
    """

    counters: list[str]
    args: list[str]
    rules: int


def shared_rules(engine: FaultEngine, facts: RequestFacts) -> SharedRules | None:
    """What the request script needs to count and fire ``engine``'s rules for ``facts``.

    The same reading as ``FaultEngine.evaluate``, split where the counts are:
    the request conditions are checked here, the counts and what follows from
    them (call numbers, probability draws, the first answer) in Redis.
    """
    table = engine._table(facts.operation, facts.key)
    if not table.rows:
        return None
    counters = [f"f:s:{scope}" for scope in table.scopes]
    position = {scope: i + 1 for i, scope in enumerate(table.scopes)}
    args: list[str] = []
    rules = 0
    elapsed = facts.elapsed
    for static, index, scope, first, last, calls, every, window, chance, rule in table.rows:
        if static is None:
            assert scope is not None
            counter = position[scope]
        elif static(facts):
            counters.append(f"f:r:{index}")
            counter = len(counters)
        else:
            continue
        if rule.reply is None and rule.fault is None:
            kind = "n"
        else:
            kind = "d" if rule.fault is not None and rule.fault not in STOPPING_FAULTS else "s"
        args += [
            str(counter),
            str(first),
            str(last),
            "" if calls is None else "," + ",".join(map(str, sorted(calls))) + ",",
            "" if every is None else str(every),
            "1" if window is None or window[0] <= elapsed < window[1] else "0",
            "" if chance is None else repr(float(chance)),
            kind,
            str(index),
        ]
        rules += 1
    return SharedRules(counters, args, rules)


def shared_outcome(engine: FaultEngine, fired: Sequence[int]) -> Outcome:
    """The ``Outcome`` of the request script's firing: the answering rule's index (-1:
    none), then each fired rule's index and call count."""
    if len(fired) < 3:
        return NOTHING
    names: list[str] = []
    delay_ms = 0.0
    rules = engine.rules
    for i in range(1, len(fired), 2):
        index, count = int(fired[i]), int(fired[i + 1])
        rule = rules[index]
        names.append(rule.name)
        if rule.delay is not None:
            delay_ms += engine.delay_ms(rule, index, count)
    answer = rules[int(fired[0])] if int(fired[0]) >= 0 else None
    return Outcome(delay_ms, answer, tuple(names))


class Row(NamedTuple):
    """One rule as the evaluation loop reads it (a tuple, so the loop unpacks it)."""

    static: Check | None  # the request conditions beyond operation and key
    index: int
    scope: int | None  # the shared counter of a rule with no static check
    first: int  # the first count at which it can fire
    last: int  # the last count at which it can fire
    calls: frozenset[int] | None
    every: int | None
    window: tuple[float, float] | None
    probability: float | None
    rule: FaultRule


class _Table:
    """The rules that can apply to one (operation, key), as flat rows for a fast loop.

    Two kinds of rule are left out of the loop while they cannot fire, so a
    scenario's many rules cost little on the requests they do not match:

    - a rule that needs a query parameter or header the request does not carry
      (a suite's requests come in few shapes; the rows of each are kept);
    - a rule with no request condition beyond operation and key, whose count
      or time window says "not now": its count lives in a shared scope counter
      that moves anyway, so skipping it changes nothing but the time spent.

    The rows kept for every shape stay good until the earliest instant or
    scope count at which any of them could change (``_from``, ``_until``,
    ``_wakes``); then all are chosen again as requests come. One check for the
    whole table per request, instead of one per shape kept; the cost is
    choosing again the rows of shapes that did not need it, which is rare.
    """

    __slots__ = (
        "_from",
        "_header_bits",
        "_header_names",
        "_live",
        "_query_bit",
        "_query_mask",
        "_query_names",
        "_until",
        "_wakes",
        "key",
        "needs",
        "operation",
        "rows",
        "scopes",
    )

    def __init__(
        self,
        compiled: list[_CompiledRule],
        operation: str | None,
        key: str | None,
        scopes: int = 0,
        all_query_names: tuple[str, ...] = (),
    ) -> None:
        self.operation = operation
        self.key = key
        chosen = [
            c
            for c in compiled
            if c.rule.match.operation in (None, operation) and c.rule.match.key in (None, key)
        ]
        self._query_names = tuple(sorted({n for c in chosen for n, _ in c.rule.match.query}))
        self._header_names = tuple(sorted({n for c in chosen for n, _ in c.rule.match.headers}))
        # A request's shape is which of those names it carries, one bit each in
        # an int: a query parameter's bit is the engine's (all_query_names), the
        # headers' come after those.
        self._query_bit = {
            n: 1 << i for i, n in enumerate(all_query_names) if n in self._query_names
        }
        self._query_mask = sum(self._query_bit.values())
        self._header_bits = {
            n.encode("latin-1"): 1 << (len(all_query_names) + i)
            for i, n in enumerate(self._header_names)
        }
        self.rows: tuple[Row, ...] = tuple(_row(c) for c in chosen)
        self.scopes: tuple[int, ...] = ()
        # The rows worth trying per shape, good while elapsed is in [_from, _until)
        # and no scope count reaches its entry in _wakes (one per scope of the engine).
        self._live: dict[int, tuple[Row, ...]] = {}
        self._from, self._until = -math.inf, math.inf
        self._wakes = [_NO_LIMIT] * scopes
        self.needs = Needs(
            query=bool(self._query_names),
            headers=frozenset(self._header_names),
            body=any(c.rule.match.body for c in chosen),
            header_keys=frozenset(self._header_bits),
        )

    def rows_for(self, facts: RequestFacts, scope_counts: list[int]) -> tuple[Row, ...]:
        """Count a request in the table's scopes; the rows worth trying for it (its facts)."""
        self._count(facts.elapsed, scope_counts)
        shape = self._shape(facts.query, facts.headers)
        rows = self._live.get(shape)
        return rows if rows is not None else self._learn(shape, facts.elapsed, scope_counts)

    def _count(self, elapsed: float, scope_counts: list[int]) -> None:
        """Bump the table's scope counters; forget the rows kept if that or the time says so."""
        stale = not self._from <= elapsed < self._until
        wakes = self._wakes
        for scope in self.scopes:
            count = scope_counts[scope] = scope_counts[scope] + 1
            if count >= wakes[scope]:
                stale = True  # a resting rule is due
        if stale:
            self._forget()

    def _forget(self) -> None:
        """Drop the rows kept for every shape: they are chosen again as requests come."""
        self._live.clear()
        self._from, self._until = -math.inf, math.inf
        self._wakes = [_NO_LIMIT] * len(self._wakes)

    def _shape(self, query: Mapping[str, Any], headers: Mapping[str, Any]) -> int:
        """The bits of the names a request carries, from its parsed query and headers."""
        shape = 0
        for name, bit in self._query_bit.items():
            if name in query:
                shape |= bit
        for name, bit in zip(self._header_names, self._header_bits.values(), strict=True):
            if name in headers:
                shape |= bit
        return shape

    def _learn(self, shape: int, elapsed: float, scope_counts: list[int]) -> tuple[Row, ...]:
        """Choose the rows of a shape and keep them, with how long they stay good."""
        query = {n for n, bit in self._query_bit.items() if shape & bit}
        headers = {
            n
            for n, bit in zip(self._header_names, self._header_bits.values(), strict=True)
            if shape & bit
        }
        rows = []
        wakes = self._wakes
        for row in self.rows:
            scope, first, last, window = row.scope, row.first, row.last, row.window
            match = row.rule.match
            if not all(n in query for n, _ in match.query):
                continue
            if not all(n in headers for n, _ in match.headers):
                continue
            if row.static is not None:
                rows.append(row)
                continue
            assert scope is not None
            count = scope_counts[scope]
            if count > last:
                continue  # counts only grow (until a reset builds a new engine)
            if count < first:
                # Asleep until its scope's count reaches ``first`` (counts are bumped
                # before the rows are chosen, so that request finds it awake).
                wakes[scope] = min(wakes[scope], first)
                continue
            if window is not None:
                if elapsed < window[0]:
                    self._until = min(self._until, window[0])
                    continue
                if elapsed >= window[1]:
                    self._from = max(self._from, window[1])
                    continue
                self._from = max(self._from, window[0])
                self._until = min(self._until, window[1])
            rows.append(row)
        kept = self._live[shape] = tuple(rows)
        return kept


def rule_header_names(rules: Iterable[FaultRule]) -> frozenset[bytes]:
    """Every request header the rules compare, as ASGI spells it (lower-case bytes)."""
    return frozenset(name.encode("latin-1") for rule in rules for name, _ in rule.match.headers)


# Where screen() starts: no rows, and an operation and key no request has
# (strings made here, so never the same objects as a request's).
_NO_TABLE = _Table([], "".join(["(", "none", ")"]), "".join(["(", "none", ")"]))

_query_cache: dict[bytes, dict[str, list[str]]] = {}
# 1 MiB of parsed queries, none from a query over 2 KiB (see budget.py).
_query_budget = ByteBudget(1024 * 1024, 2048)


def parse_query(query_string: bytes) -> dict[str, list[str]]:
    """A query string as lists of values per name, cached: clients repeat their queries."""
    parsed = _query_cache.get(query_string)
    if parsed is None:
        parsed = {}
        for name, value in parse_qsl(query_string.decode("latin-1"), keep_blank_values=True):
            parsed.setdefault(name, []).append(value)
        # The parsed values hold about as many bytes again as the string.
        if _query_budget.admit(_query_cache, 2 * len(query_string)):
            _query_cache[query_string] = parsed
    return parsed


def _row(c: _CompiledRule) -> Row:
    return Row(
        static=c.static,
        index=c.index,
        scope=c.scope,
        first=c.first,
        last=c.last,
        calls=c.calls,
        every=c.every,
        window=c.window,
        probability=c.probability,
        rule=c.rule,
    )


_NO_ROUTE: tuple[None, tuple[str, ...]] = (None, ())


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

    def for_path(
        self, method: str, path: str, head: bool = True
    ) -> tuple[Route | None, Sequence[str]]:
        """The route for a method and path (HEAD finds a GET route if ``head``), and its methods."""
        if not self._by_path:
            return _NO_ROUTE  # most scenarios script no paths: nothing to allocate
        allowed: list[str] = []
        found = None
        wanted = "GET" if method == "HEAD" and head else method
        for route_method, pattern, route in self._by_path:
            if pattern.match(path):
                allowed.append(route_method)
                if found is None and route_method in (method, wanted):
                    found = route
        return found, allowed

    @staticmethod
    def allow(methods: Sequence[str], documented: str, head: bool = True) -> str:
        """``Allow`` for a path: the document's methods and the scripted routes' together."""
        if not methods:
            return documented
        return allow_header([*methods, *filter(None, documented.split(", "))], head)
