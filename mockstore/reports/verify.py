"""Verification for test assertions: "the client sent exactly 2 createPets for Rex".

An ``Expectation`` is a set of conditions (operation, method, path, key,
status, body_contains) and a count (exactly ``count``, or between ``at_least``
and ``at_most``; neither means "at least one"). ``verify`` counts the journal
entries that meet every condition. When the count is wrong, the message shows
what did match and the *closest* requests that did not — ranked by how many
conditions they meet — with the reason each unmet condition failed, so a test
failure says "you sent Max, not Rex" rather than "0 != 1".
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from mockstore.journal import Entry, mask
from mockstore.memory import Account, OverBudget
from mockstore.validation import json_parse_cost, loads_bounded

CLOSEST = 3  # near misses shown in a failure message
SHOWN = 5  # matched requests shown in a failure message


FIELDS = ("operation", "method", "path", "key", "status", "body_contains")
COUNTS = ("count", "at_least", "at_most")


class InvalidExpectation(ValueError):
    """The expectation itself is wrong (a negative count, count with at_least...)."""


@dataclass(frozen=True)
class Expectation:
    """What to look for. ``None`` means "any"."""

    operation: str | None = None
    method: str | None = None
    path: str | None = None
    key: str | None = None
    status: int | None = None
    body_contains: Any = None
    count: int | None = None
    at_least: int | None = None
    at_most: int | None = None

    def __post_init__(self) -> None:
        for name in COUNTS:
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 0
            ):
                raise InvalidExpectation(f"{name} must be a non-negative integer, got {value!r}")
        if self.count is not None and (self.at_least is not None or self.at_most is not None):
            raise InvalidExpectation("give count, or at_least/at_most, not both")
        if self.at_least is not None and self.at_most is not None and self.at_least > self.at_most:
            raise InvalidExpectation(
                f"at_least ({self.at_least}) is more than at_most ({self.at_most})"
            )
        if self.status is not None and (
            isinstance(self.status, bool) or not isinstance(self.status, int)
        ):
            raise InvalidExpectation(f"status must be an integer, got {self.status!r}")
        for name in ("operation", "method", "path", "key"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise InvalidExpectation(f"{name} must be a string, got {value!r}")

    def describe_count(self) -> str:
        if self.count is not None:
            return f"exactly {_requests(self.count)}"
        if self.at_least is not None and self.at_most is not None:
            return f"between {self.at_least} and {self.at_most} requests"
        if self.at_most is not None:
            return f"at most {_requests(self.at_most)}"
        return f"at least {_requests(self.at_least if self.at_least is not None else 1)}"

    def lowest(self) -> int:
        """The fewest matches accepted."""
        if self.count is not None:
            return self.count
        if self.at_least is not None:
            return self.at_least
        return 0 if self.at_most is not None else 1

    def accepts(self, count: int) -> bool:
        if self.count is not None:
            return count == self.count
        return count >= self.lowest() and (self.at_most is None or count <= self.at_most)


def _requests(n: int) -> str:
    return "1 request" if n == 1 else f"{n} requests"


# A condition checks one entry and says why it failed (None when it holds).
Check = Callable[[Entry], "str | None"]


@dataclass
class Condition:
    label: str
    check: Check


@dataclass
class Verification:
    """The outcome: ``ok``, the matched count, a readable message, and the near misses."""

    ok: bool
    count: int
    message: str
    matched: list[Entry] = field(default_factory=list)
    closest: list[tuple[Entry, list[str]]] = field(default_factory=list)


def _path_pattern(template: str) -> re.Pattern[str]:
    parts = re.split(r"(\{[^/{}]+\})", template)
    return re.compile("".join("[^/]+" if p.startswith("{") else re.escape(p) for p in parts))


def _bearer(entry: Entry) -> str | None:
    header = entry.header("authorization")
    if header is None:
        return None
    scheme, _, token = header.strip().partition(" ")
    return token.strip() if scheme.lower() == "bearer" else None


def conditions(
    expectation: Expectation, base_path: str = "", scratch: Account | None = None
) -> list[Condition]:
    """The conditions of an expectation, each with a check that explains a mismatch."""
    found: list[Condition] = []
    e = expectation
    if e.operation is not None:
        want_op = e.operation

        def check_operation(entry: Entry) -> str | None:
            if entry.operation == want_op:
                return None
            return f"operation is {entry.operation or 'none'}, expected {want_op}"

        found.append(Condition(f"operation={want_op}", check_operation))
    if e.method is not None:
        want_method = e.method.upper()

        def check_method(entry: Entry) -> str | None:
            if entry.method == want_method:
                return None
            return f"method is {entry.method}, expected {want_method}"

        found.append(Condition(f"method={want_method}", check_method))
    if e.path is not None:
        want_path = e.path
        pattern = _path_pattern(want_path)

        def check_path(entry: Entry) -> str | None:
            relative = entry.path
            if base_path and relative.startswith(base_path):
                relative = relative[len(base_path) :] or "/"
            if pattern.fullmatch(entry.path) or pattern.fullmatch(relative):
                return None
            return f"path is {entry.path}, expected {want_path}"

        found.append(Condition(f"path={want_path}", check_path))
    if e.key is not None:
        want_key = e.key

        def check_key(entry: Entry) -> str | None:
            if entry.key == want_key or (entry.key is None and _bearer(entry) == want_key):
                return None
            sent = entry.key or _bearer(entry)
            return f"key is {mask(sent) if sent else 'none'}, expected {mask(want_key)}"

        found.append(Condition(f"key={mask(want_key)}", check_key))
    if e.status is not None:
        want_status = e.status

        def check_status(entry: Entry) -> str | None:
            if entry.status == want_status:
                return None
            return f"status is {entry.status}, expected {want_status}"

        found.append(Condition(f"status={want_status}", check_status))
    if e.body_contains is not None:
        want_body = e.body_contains

        def check_body(entry: Entry) -> str | None:
            raw = entry.request_body
            if not raw:
                return "there is no request body"
            # One body parsed at a time, charged its most before it is parsed.
            cost = json_parse_cost(raw)
            if scratch is not None and not scratch.reserve(cost):
                raise OverBudget(f"body_contains over a body of {len(raw)} bytes", cost, scratch)
            try:
                body = loads_bounded(raw)
            except ValueError:
                return "the request body is not JSON"
            finally:
                if scratch is not None:
                    scratch.release(cost)
            return contains(body, want_body)

        found.append(
            Condition(f"body_contains={json.dumps(want_body, ensure_ascii=False)}", check_body)
        )
    return found


def contains(actual: Any, expected: Any, where: str = "body") -> str | None:
    """None when ``expected`` is a subset of ``actual``, else why not.

    Objects match when every expected member matches (extra members are fine);
    arrays match element by element and must have the same length; scalars
    must be equal (and of the same JSON type: 1 is not true, 1 is not 1.5).
    """
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return f"{where} is {_show(actual)}, expected an object"
        for name, value in expected.items():
            if name not in actual:
                return f"{where}.{name} is missing (expected {_show(value)})"
            reason = contains(actual[name], value, f"{where}.{name}")
            if reason:
                return reason
        return None
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return f"{where} is {_show(actual)}, expected an array"
        if len(actual) != len(expected):
            return f"{where} has {len(actual)} items, expected {len(expected)}"
        for index, (got, want) in enumerate(zip(actual, expected, strict=True)):
            reason = contains(got, want, f"{where}[{index}]")
            if reason:
                return reason
        return None
    if type(actual) is not type(expected) and not (
        isinstance(actual, int | float)
        and isinstance(expected, int | float)
        and not isinstance(actual, bool)
        and not isinstance(expected, bool)
    ):
        return f"{where} is {_show(actual)}, expected {_show(expected)}"
    if actual != expected:
        return f"{where} is {_show(actual)}, expected {_show(expected)}"
    return None


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def line(entry: Entry) -> str:
    """One exchange on one line, as a failure message shows it."""
    query = entry.query.decode("latin-1")
    target = entry.path + (f"?{query}" if query else "")
    op = f" [{entry.operation}]" if entry.operation else ""
    key = f" key {mask(entry.key)}" if entry.key else ""
    return f"#{entry.seq} {entry.method} {target} -> {entry.status}{op}{key} ({entry.request_id})"


def verify(
    entries: Sequence[Entry],
    expectation: Expectation,
    base_path: str = "",
    since: int | None = None,
    scratch: Account | None = None,
) -> Verification:
    """Count the entries meeting every condition and judge the count.

    ``scratch`` is the share of the memory budget a ``body_contains`` check
    parses each body within (``OverBudget`` when a body does not fit).
    """
    checks = conditions(expectation, base_path, scratch)
    matched: list[Entry] = []
    misses: list[tuple[int, int, Entry, list[str]]] = []
    for entry in entries:
        reasons = [r for c in checks if (r := c.check(entry)) is not None]
        if not reasons:
            matched.append(entry)
        else:
            misses.append((len(checks) - len(reasons), entry.seq, entry, reasons))
    count = len(matched)
    ok = expectation.accepts(count)
    misses.sort(key=lambda m: (-m[0], -m[1]))
    closest = [(entry, reasons) for met, _, entry, reasons in misses[:CLOSEST] if met > 0]
    if not closest:
        closest = [(entry, reasons) for _, _, entry, reasons in misses[:CLOSEST]]
    where = " and ".join(c.label for c in checks) or "any request"
    window = f"after seq {since}" if since is not None else "in the journal"
    head = (
        f"expected {expectation.describe_count()} matching {where}; "
        f"{count} matched (of {_requests(len(entries))} {window})"
    )
    if ok:
        return Verification(True, count, head, matched, closest)
    lines = [head]
    if matched:
        lines.append("matched:")
        lines.extend(f"  {line(e)}" for e in matched[:SHOWN])
        if count > SHOWN:
            lines.append(f"  ... and {count - SHOWN} more")
    if closest and count < expectation.lowest():
        lines.append(
            f"closest requests that did not match (conditions met, of {len(checks)}):"
            if checks
            else "requests:"
        )
        for entry, reasons in closest:
            met = len(checks) - len(reasons)
            lines.append(f"  {line(entry)}: met {met} of {len(checks)}")
            lines.extend(f"      - {reason}" for reason in reasons)
    elif not entries:
        lines.append("the journal holds no request in that window")
    return Verification(False, count, "\n".join(lines), matched, closest)
