"""What the control clients return and raise: plain frozen dataclasses, one error type.

``Control`` and ``AsyncControl`` return these instead of the JSON they read, so
an editor completes ``control.clock().elapsed_seconds`` and a type checker
catches ``control.keys()[0].limit``. Each class mirrors one answer of the
control API field for field (the README's control API table); fields the
server adds later are ignored, a field it lacks is a ``ControlError``.

Every failed call raises ``ControlError``; ``VerificationError`` is the
``ControlError`` that ``verify`` raises, and also an ``AssertionError`` so
pytest reports it as a failed test.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from dataclasses import dataclass, field
from functools import cache
from typing import Any, TypeVar, Union

T = TypeVar("T")


class ControlError(Exception):
    """A control API call failed: the one error type of ``Control`` and ``AsyncControl``.

    ``status`` is the HTTP status, or ``None`` when no answer came (the server
    could not be reached, or a scenario named locally was not found). ``code``
    and ``message`` are the server's Error body (``unreachable``,
    ``scenario_not_found`` and ``unexpected_answer`` are the client's own codes);
    ``problems`` lists every ``file:line:column: path: message`` of a refused
    scenario.
    """

    def __init__(
        self,
        status: int | None,
        code: str,
        message: str,
        problems: list[str] | None = None,
    ) -> None:
        self.status = status
        self.code = code
        self.message = message
        self.problems = list(problems or [])
        super().__init__(self._text())

    def _text(self) -> str:
        head = f"{self.code}: {self.message}"
        if self.status is not None:
            head = f"{self.status} {head}"
        # The problems are the useful part of a refused scenario: one per line in
        # the traceback a failing test prints, as `mockstore validate` shows them.
        return "\n".join([head, *(f"  {p}" for p in self.problems)])


# -- the answers ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Health:
    """``run`` is the run the next request joins (0 from a server that does not say)."""

    status: str
    version: str
    scenario: str
    time: str
    run: int = 0


@dataclass(frozen=True, slots=True)
class PlanLimits:
    per_minute: int
    per_day: int | None  # None: the plan has no day allowance


@dataclass(frozen=True, slots=True)
class ScenarioClock:
    start: float | None
    mode: str


@dataclass(frozen=True, slots=True)
class ScenarioKey:
    key: str
    plan: str
    tenant: str


@dataclass(frozen=True, slots=True)
class ScenarioInfo:
    """The running scenario: a summary and its ``source`` (the YAML it was loaded from)."""

    name: str
    description: str
    file: str
    seed: int
    base_path: str
    isolation: str
    clock: ScenarioClock
    plans: dict[str, PlanLimits]
    keys: list[ScenarioKey]
    faults: int
    routes: int
    pets: int
    source: str


@dataclass(frozen=True, slots=True)
class ResetResult:
    """``journal_seq`` is the journal's last sequence number at the reset: ``since=`` it."""

    status: str
    scenario: str
    journal_seq: int
    run: int = 0  # the run the reset began


@dataclass(frozen=True, slots=True)
class ClockState:
    now: str
    unix: float
    mode: str
    start: str
    elapsed_seconds: float


@dataclass(frozen=True, slots=True)
class Window:
    used: int
    remaining: int
    reset: int


@dataclass(frozen=True, slots=True)
class KeyInfo:
    """A key, its plan and what is left of its allowance; ``key`` is the token to send."""

    key: str
    plan: str
    tenant: str
    limits: PlanLimits
    minute: Window
    day: Window
    banned: bool
    banned_until: str | None
    recent_rejections: int


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    method: str
    path: str
    query: dict[str, str]
    query_string: str
    headers: list[tuple[str, str]]
    body: str

    def header(self, name: str) -> str | None:
        """The first header of that name (the bearer token is masked), or None."""
        wanted = name.lower()
        return next((v for k, v in self.headers if k.lower() == wanted), None)

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass(frozen=True, slots=True)
class RecordedResponse:
    status: int
    headers: list[tuple[str, str]]
    body: str

    def header(self, name: str) -> str | None:
        wanted = name.lower()
        return next((v for k, v in self.headers if k.lower() == wanted), None)

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass(frozen=True, slots=True)
class JournalEntry:
    """One recorded exchange; ``key`` is masked; ``unmet`` says why a near miss did not match.

    ``time`` is the scenario clock and ``wall`` the wall clock when it arrived; ``run``
    the run it belongs to (a reset, scenario load, tenant or clock moved back begins one).
    """

    seq: int
    request_id: str
    time: float
    elapsed: float
    operation: str | None
    key: str | None
    plan: str | None
    client: str
    request: RecordedRequest
    response: RecordedResponse
    latency_ms: float
    rule: str | None
    outcome: str
    unmet: list[str] = field(default_factory=list)
    wall: float | None = None
    run: int = 0


@dataclass(frozen=True, slots=True)
class Verification:
    """What ``verify`` found: ``count`` matching requests (their ``matched`` seqs)."""

    ok: bool
    count: int
    message: str
    matched: list[int]
    closest: list[JournalEntry]


class VerificationError(ControlError, AssertionError):
    """``verify`` found the wrong number of matching requests.

    ``str()`` is the server's explanation, with the closest requests that did
    not match; ``count`` is how many matched, ``closest`` those near misses,
    ``verification`` the whole answer.
    """

    def __init__(self, verification: Verification) -> None:
        self.verification = verification
        self.count = verification.count
        self.closest = verification.closest
        super().__init__(200, "verification_failed", verification.message or "verification failed")

    def _text(self) -> str:
        return self.message


@dataclass(frozen=True, slots=True)
class RuleInfo:
    id: str
    name: str
    severity: str
    title: str
    threshold: str


@dataclass(frozen=True, slots=True)
class Finding:
    """A broken etiquette rule; ``seqs`` and ``request_ids`` are its evidence (capped)."""

    id: str
    rule: str
    severity: str
    title: str
    threshold: str
    subject: str
    message: str
    count: int
    seqs: list[int]
    request_ids: list[str]
    details: dict[str, Any]
    tenant: str | None = None  # whose journal the evidence is in (None: the server's own)


@dataclass(frozen=True, slots=True)
class JournalStatus:
    enabled: bool
    size: int
    dropped: int


@dataclass(frozen=True, slots=True)
class JudgedRun:
    """One run a report judged: why it began (``began_with``), in which tenant, how many
    of its requests."""

    run: int
    tenant: str | None
    requests: int
    reason: str | None
    began_with: str | None
    scenario: str | None
    time: float | None


@dataclass(frozen=True, slots=True)
class JudgedRuns:
    """Which runs a report covers: ``selected`` is a run number or ``"all"`` (each judged
    on its own); ``latest`` the latest of them (100 at most)."""

    selected: int | str
    count: int
    latest: list[JudgedRun]


@dataclass(frozen=True, slots=True)
class ReportSummary:
    scenario: str
    requests: int
    first_seq: int | None
    last_seq: int | None
    since: int | None
    journal: JournalStatus
    findings: dict[str, int]
    highest: str | None
    rules_passed: list[str]
    runs: JudgedRuns | None = None


@dataclass(frozen=True, slots=True)
class ResponseCoverage:
    status: int
    documented: bool
    met: int
    codes: dict[str, int]
    codes_never_met: list[str]


@dataclass(frozen=True, slots=True)
class OperationCoverage:
    operation: str
    method: str
    path: str
    deprecated: bool
    requests: int
    responses: list[ResponseCoverage]
    unexpected: list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class DocumentedCount:
    met: int
    total: int


@dataclass(frozen=True, slots=True)
class Coverage:
    operations: list[OperationCoverage]
    other: list[dict[str, Any]]
    never_met: list[str]
    possible_never_met: list[str]
    documented: DocumentedCount


@dataclass(frozen=True, slots=True)
class Timeline:
    """One row per request (``columns`` name the cells); ``start`` is the first one's time."""

    start: float
    columns: list[str]
    rows: list[list[Any]]


@dataclass(frozen=True, slots=True)
class Report:
    """Coverage, etiquette findings and a summary; ``raw`` is the JSON as served.

    ``raw`` is what ``mockstore report`` renders as text, JUnit or HTML.
    """

    summary: ReportSummary
    findings: list[Finding]
    rules: list[RuleInfo]
    coverage: Coverage
    timeline: Timeline | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def failing(self, fail_on: str = "error") -> list[Finding]:
        """The findings at or above ``fail_on`` (``info``, ``warning``, ``error``; ``never``)."""
        order = {"info": 0, "warning": 1, "error": 2}
        threshold = order.get(fail_on, 3)
        return [f for f in self.findings if order.get(f.severity, 0) >= threshold]


@dataclass(frozen=True, slots=True)
class TenantInfo:
    """An isolated tenant of a shared server; ``url`` is its root (a server of its own)."""

    id: str
    path: str
    scenario: str
    url: str = ""


# -- reading answers into these types ------------------------------------------------


def decode(kind: type[T], value: Any) -> T:
    """``value`` (parsed JSON) as ``kind``; raises ``ControlError`` if it does not fit."""
    try:
        return typing.cast(T, _decode(kind, value, "$"))
    except _Mismatch as exc:
        raise ControlError(None, "unexpected_answer", str(exc)) from None


class _Mismatch(Exception):
    pass


@cache
def _hints(kind: type) -> dict[str, Any]:
    return typing.get_type_hints(kind)


def _decode(kind: Any, value: Any, where: str) -> Any:
    origin = typing.get_origin(kind)
    if kind is Any:
        return value
    if origin in (Union, types.UnionType):
        options = typing.get_args(kind)
        if value is None and type(None) in options:
            return None
        for option in options:
            if option is type(None):
                continue
            try:
                return _decode(option, value, where)
            except _Mismatch:
                continue
        raise _Mismatch(f"{where}: {value!r} is not {kind}")
    if origin is list:
        (item,) = typing.get_args(kind)
        if not isinstance(value, list):
            raise _Mismatch(f"{where}: expected a list, got {value!r}"[:200])
        return [_decode(item, v, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is tuple:
        items = typing.get_args(kind)
        if not isinstance(value, list | tuple) or len(value) != len(items):
            raise _Mismatch(f"{where}: expected {len(items)} items, got {value!r}"[:200])
        return tuple(
            _decode(t, v, f"{where}[{i}]")
            for i, (t, v) in enumerate(zip(items, value, strict=False))
        )
    if origin is dict:
        _, item = typing.get_args(kind)
        if not isinstance(value, dict):
            raise _Mismatch(f"{where}: expected an object, got {value!r}"[:200])
        return {str(k): _decode(item, v, f"{where}.{k}") for k, v in value.items()}
    if dataclasses.is_dataclass(kind):
        if not isinstance(value, dict):
            raise _Mismatch(f"{where}: expected a {kind.__name__} object, got {value!r}"[:200])
        hints = _hints(kind)
        fields = {}
        for spec in dataclasses.fields(kind):
            if spec.name == "raw":
                continue
            if spec.name not in value:
                if spec.default is not dataclasses.MISSING or (
                    spec.default_factory is not dataclasses.MISSING
                ):
                    continue
                raise _Mismatch(f"{where}: {kind.__name__} lacks {spec.name!r}")
            fields[spec.name] = _decode(hints[spec.name], value[spec.name], f"{where}.{spec.name}")
        return kind(**fields)
    if kind is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _Mismatch(f"{where}: expected a number, got {value!r}"[:200])
        return float(value)
    if kind in (int, str, bool):
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise _Mismatch(f"{where}: expected {kind.__name__}, got {value!r}"[:200])
        return value
    raise _Mismatch(f"{where}: cannot read {kind!r}")
