"""What every report reads from the journal, and what a finding is.

A report looks at thousands of exchanges, each several times, so the journal's
raw entries (header lists, body bytes) are read once into a compact ``Fact``:
who was counted (the rate-limit bucket), when (scenario and wall time, and
the run), what came back (status, Error code, the instants the answer said to
wait until, headroom). The rules then work on facts only. Nothing here knows
HTTP frameworks.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any

from mockstore.journal import Entry, mask
from mockstore.keys import client_bucket, key_bucket, parse_authorization
from mockstore.runs import Run
from mockstore.scenario.loader import schema_default
from mockstore.validation import loads_bounded

SEVERITIES: tuple[str, ...] = ("info", "warning", "error")
FAIL_ON: tuple[str, ...] = (*SEVERITIES, "never")


def severity_rank(severity: str) -> int:
    """0 for info, 1 for warning, 2 for error; ``never`` ranks above every severity."""
    return FAIL_ON.index(severity)


@dataclass(frozen=True, slots=True)
class Rule:
    """One etiquette rule: a stable id, what it checks, and how strictly."""

    id: str
    name: str
    severity: str
    title: str
    threshold: str

    def to_dict(self) -> dict[str, str]:
        return {
            "id": self.id,
            "name": self.name,
            "severity": self.severity,
            "title": self.title,
            "threshold": self.threshold,
        }


# Evidence lists are capped so a client that hammered 10,000 times does not
# produce a 10,000-item finding; ``count`` always says how many there were.
EVIDENCE_CAP = 200


@dataclass(slots=True)
class Finding:
    """A rule broken by one subject (a key, an anonymous client, an operation)."""

    rule: Rule
    subject: str
    message: str
    seqs: list[int]
    request_ids: list[str]
    details: dict[str, Any] = field(default_factory=dict)
    tenant: str | None = None  # whose journal its evidence is in (None: the server's own)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.rule.id,
            "rule": self.rule.name,
            "severity": self.rule.severity,
            "title": self.rule.title,
            "threshold": self.rule.threshold,
            "subject": self.subject,
            "message": self.message,
            "count": len(self.seqs),
            "seqs": self.seqs[:EVIDENCE_CAP],
            "request_ids": self.request_ids[:EVIDENCE_CAP],
            "tenant": self.tenant,
            "details": self.details,
        }


@dataclass(frozen=True, slots=True)
class ReportContext:
    """What the reports need to know about the server beyond the journal.

    Its defaults are a scenario's that says nothing (the scenario schema's).
    """

    scenario: str = ""
    base_path: str = schema_default("base_path")
    ban_after_rejections: int | None = schema_default("ban", "after_rejections")
    ban_within_seconds: float = schema_default("ban", "within_seconds")
    journal_size: int = schema_default("journal", "size")
    journal_enabled: bool = True
    dropped: int = 0
    since: int | None = None
    run: int | None = None  # the one run judged; None: every run


@dataclass(slots=True)
class Fact:
    """One exchange as the rules see it."""

    seq: int
    request_id: str
    time: float
    bucket: str  # "key:<key>" or "anon:<client address>": what the limiter counted
    subject: str  # the bucket as a report may show it (keys masked)
    operation: str | None
    method: str
    path: str
    status: int
    code: str | None  # the Error ``code`` of an error response
    message: str | None
    # The instant the answer allowed a new request from, on the scenario clock: the
    # earliest its Retry-After (and, beside it, a spent window's reset) allows.
    wait_until: float | None
    retry_after: str | None  # the header as sent
    remaining: int | None
    limit: int | None
    auth: str  # "bearer", "missing" or "malformed"
    auth_scheme: str  # the scheme word as sent ("" when missing)
    latency: float  # seconds between the request's arrival and its response
    outcome: str
    sunset: float | None  # from a Sunset header (deprecated operations)
    run: int = 0
    wall: float | None = None  # the wall clock when it was answered (None: not recorded)
    tenant: str | None = None  # the tenant whose journal it came from (None: the server's)
    arrived_after: int = -1  # the last seq answered when it arrived (-1: not known)
    # What the mock's limiter decided (``Entry.refused_until``): refused until that
    # instant, 0.0 admitted, -1.0 not decided.
    refused_until: float = -1.0
    # Its run's clock mode ("running", "manual"; "" when the run is not known), and
    # whether its wait was read from an instant written on the wall clock (an
    # HTTP-date Retry-After, a Unix-time X-RateLimit-Reset, under clock.headers: wall):
    # a client computes that one from its own clock, which goes on while it waits.
    clock: str = ""
    wall_instant: bool = False


def subject_of(key: str | None, client: str, tenant: str | None = None) -> tuple[str, str]:
    """(bucket, subject) for a request: its key's bucket, or its address's anonymous one."""
    where = f" in tenant {tenant}" if tenant is not None else ""
    if key:
        return key_bucket(key), mask(key) + where
    return client_bucket(client), f"anonymous ({client}){where}"


_SECONDS = re.compile(r"[0-9]+(\.[0-9]+)?")


def parse_http_date(text: str) -> float | None:
    """An HTTP-date (RFC 9110 section 5.6.7) as Unix seconds; None if unreadable."""
    try:
        return parsedate_to_datetime(text.strip()).timestamp()
    except (TypeError, ValueError, IndexError):
        return None


# A wait, in seconds after the answer, and whether it was read from an instant on the
# wall clock (see Fact.wall_instant).
Wait = tuple[float, bool]


def _wait(
    value: bytes, now: float, wall: float | None, date: float | None, header_clock: str | None
) -> Wait | None:
    """The wait a ``Retry-After`` (seconds or HTTP-date) asks for, from the answer."""
    text = value.decode("latin-1").strip()
    if _SECONDS.fullmatch(text):
        return float(text), False
    instant = parse_http_date(text)
    if instant is None:
        return None
    reference = _reference(now, wall, date, header_clock=header_clock)
    return instant - reference, _on_wall(reference, wall, header_clock)


def _on_wall(reference: float, wall: float | None, header_clock: str | None) -> bool:
    """Whether an instant read against ``reference`` was written on the wall clock.

    The run's ``clock.headers`` says, when the journal knows it: an instant
    written on the wall clock is one even when the two clocks showed the same
    time at the answer (a manual clock started at the wall's now), for its
    client reaches it by the wall time that passes plus the scenario time it
    moves. Otherwise: read against the wall clock (when both clocks agree, the
    reading that favours the client).
    """
    if wall is None:
        return False
    if header_clock is not None:
        return header_clock == "wall"
    return reference == wall


def _reference(
    now: float,
    wall: float | None,
    date: float | None,
    header_clock: str | None = None,
) -> float:
    """The "now" a wait's instant in this answer's headers counts from.

    mockstore writes those instants on the wall clock, or on the scenario clock
    (``clock.headers``): ``header_clock``, from the run, when the journal knows
    it. Otherwise the answer's ``Date`` says which: it is the second its "now"
    fell in; when both clocks fall in that second, the reading that favours the
    client is taken: the later "now". A recording's wall and scenario clocks are
    one. (Announced dates, ``Sunset``, are the scenario's calendar: read as they are.)
    """
    if wall is None:
        return now
    if header_clock is not None:
        return wall if header_clock == "wall" else now
    candidates = [now, wall]
    if date is not None:
        fitting = [r for r in candidates if date - 0.001 <= r < date + 1.001]
        # None fits: a Date written by something else (a scripted answer): the nearer clock.
        candidates = fitting or [min(candidates, key=lambda r: abs(r - date))]
    return max(candidates)


_DRAFT_WINDOW = re.compile(rb";r=([0-9]+);t=([0-9]+)")


def _told(
    e: Entry,
    retry_after: bytes | None,
    reset: bytes | None,
    remaining: bytes | None,
    draft: bytes | None,
    date: bytes | None,
    header_clock: str | None,
) -> Wait | None:
    """The wait after the answer that it allowed a new request from; None if it did not say.

    Its ``Retry-After``; and, on a 429 that said one, the reset of a spent
    window (``X-RateLimit-Reset`` with ``X-RateLimit-Remaining: 0``, or the
    draft ``RateLimit`` header's spent windows) when that comes sooner: the
    headers round to whole seconds on different clocks, and a client that
    waited for any of them did as it was told.
    """
    if retry_after is None:
        return None
    sent = parse_http_date(date.decode("latin-1")) if date is not None else None
    wait = _wait(retry_after, e.time, e.wall, sent, header_clock)
    if wait is None:
        return None
    if e.status == 429:
        if reset is not None and remaining is not None and remaining.strip() == b"0":
            value = _seconds(reset)  # whole, or with decimals (ratelimit.headers)
            if value is not None:
                # A Unix time is > 10**9 (2001); anything less is a delta.
                if value > 10**9:
                    reference = _reference(e.time, e.wall, sent, header_clock=header_clock)
                    from_reset = value - reference, _on_wall(reference, e.wall, header_clock)
                else:
                    from_reset = float(value), False
                wait = min(wait, from_reset, key=_sooner)
        if draft is not None:
            spent = [int(t) for r, t in _DRAFT_WINDOW.findall(draft) if int(r) == 0]
            if spent:
                wait = min(wait, (float(max(spent)), False), key=_sooner)
    return wait


def _sooner(wait: Wait) -> tuple[float, bool]:
    """The order of two readings of a wait: the sooner; of equal ones, an instant on the
    wall clock (on a manual clock its client reaches it by the wall time that passed
    *plus* the scenario time moved, so it is done whenever the same seconds are)."""
    return wait[0], not wait[1]


def _seconds(value: bytes) -> float | None:
    text = value.strip()
    if not _SECONDS.fullmatch(text.decode("latin-1")):
        return None
    return float(text)


def _int(value: bytes | None) -> int | None:
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        return None


def facts_of(
    entries: Iterable[Entry],
    tenant: str | None = None,
    runs: Iterable[Run] = (),
) -> list[Fact]:
    """One ``Fact`` per entry, in journal order. Reads every entry's headers once.

    ``tenant`` names the tenant whose journal the entries come from; ``runs``
    where its runs began, each with the clock its headers' instants were
    written on and its clock's mode.
    """
    known = {run.number: run for run in runs}
    header_clocks = {number: run.header_clock for number, run in known.items()}
    modes = {number: run.clock_mode for number, run in known.items()}
    facts: list[Fact] = []
    sunsets: dict[bytes, float | None] = {}
    masks: dict[tuple[str | None, str], tuple[str, str]] = {}
    for e in entries:
        authorization = None
        for name, value in e.request_headers:
            if name.lower() == b"authorization":
                authorization = value
                break
        credentials = parse_authorization(authorization)
        scheme = ""
        if authorization is not None:
            scheme = authorization.strip().partition(b" ")[0].decode("latin-1")

        retry_after = remaining = limit = sunset_raw = reset = draft = date = None
        for name, value in e.response_headers:
            lowered = name.lower()
            if lowered == b"retry-after":
                retry_after = value
            elif lowered == b"x-ratelimit-remaining":
                remaining = value
            elif lowered == b"x-ratelimit-limit":
                limit = value
            elif lowered == b"x-ratelimit-reset":
                reset = value
            elif lowered == b"ratelimit":
                draft = value
            elif lowered == b"date":
                date = value
            elif lowered == b"sunset":
                sunset_raw = value

        code = message = None
        if e.status >= 400 and e.response_body[:1] == b"{":
            try:
                body = loads_bounded(e.response_body)
            except ValueError:
                body = None
            if isinstance(body, dict):
                code = body.get("code") if isinstance(body.get("code"), str) else None
                message = body.get("message") if isinstance(body.get("message"), str) else None

        sunset = None
        if sunset_raw is not None:
            if sunset_raw not in sunsets:
                sunsets[sunset_raw] = parse_http_date(sunset_raw.decode("latin-1"))
            # A date announced, on the scenario's calendar whatever the headers' clock.
            sunset = sunsets[sunset_raw]

        ident = (e.key, e.client)
        who = masks.get(ident)
        if who is None:
            who = masks[ident] = subject_of(e.key, e.client, tenant)
        told = _told(e, retry_after, reset, remaining, draft, date, header_clocks.get(e.run))
        wait, wall_instant = (None, False) if told is None else told
        facts.append(
            Fact(
                seq=e.seq,
                request_id=e.request_id,
                time=e.time,
                bucket=who[0],
                subject=who[1],
                operation=e.operation,
                method=e.method,
                path=e.path,
                status=e.status,
                code=code,
                message=message,
                wait_until=None if wait is None else e.time + wait,
                retry_after=retry_after.decode("latin-1") if retry_after is not None else None,
                remaining=_int(remaining),
                limit=_int(limit),
                auth=credentials.kind,
                auth_scheme=scheme,
                latency=e.latency_ms / 1000,
                outcome=e.outcome,
                sunset=sunset,
                run=e.run,
                wall=e.wall,
                tenant=tenant,
                arrived_after=e.arrived_after,
                refused_until=e.refused_until,
                clock=modes.get(e.run, ""),
                wall_instant=wall_instant,
            )
        )
    return facts
