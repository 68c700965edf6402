"""What every report reads from the journal, and what a finding is.

A report looks at thousands of exchanges, each several times, so the journal's
raw entries (header lists, body bytes) are read once into a compact ``Fact``:
who was counted (the rate-limit bucket), when (scenario time), what came back
(status, Error code, the instant ``Retry-After`` allows, headroom). The rules
then work on facts only. Nothing here knows HTTP frameworks.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any

from mockstore.journal import Entry, mask
from mockstore.keys import client_bucket, key_bucket, parse_authorization
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
    wait_until: float | None  # the scenario instant Retry-After allows a new request
    retry_after: str | None  # the header as sent
    remaining: int | None
    limit: int | None
    auth: str  # "bearer", "missing" or "malformed"
    auth_scheme: str  # the scheme word as sent ("" when missing)
    latency: float  # seconds between the request's arrival and its response
    outcome: str
    sunset: float | None  # from a Sunset header (deprecated operations)


def subject_of(key: str | None, client: str) -> tuple[str, str]:
    """(bucket, subject) for a request: its key's bucket, or its address's anonymous one."""
    if key:
        return key_bucket(key), mask(key)
    return client_bucket(client), f"anonymous ({client})"


_SECONDS = re.compile(r"[0-9]+(\.[0-9]+)?")


def parse_http_date(text: str) -> float | None:
    """An HTTP-date (RFC 9110 section 5.6.7) as Unix seconds; None if unreadable."""
    try:
        return parsedate_to_datetime(text.strip()).timestamp()
    except (TypeError, ValueError, IndexError):
        return None


def parse_retry_after(value: str, now: float, wall: float | None = None) -> float | None:
    """The scenario instant a ``Retry-After`` allows; None if unreadable.

    ``now`` is the scenario time of the response. Delta-seconds count from it.
    An HTTP-date is an instant on the client's (wall) clock, so it counts from
    ``wall``, the wall time the response was sent at (``now`` when not known,
    as in a recording of a real service, whose clock is the wall clock).
    """
    text = value.strip()
    if _SECONDS.fullmatch(text):
        return now + float(text)
    date = parse_http_date(text)
    if date is None:
        return None
    return now + (date - (now if wall is None else wall))


def _int(value: bytes | None) -> int | None:
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        return None


def facts_of(entries: Iterable[Entry]) -> list[Fact]:
    """One ``Fact`` per entry, in journal order. Reads every entry's headers once."""
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

        retry_after = remaining = limit = sunset_raw = None
        for name, value in e.response_headers:
            lowered = name.lower()
            if lowered == b"retry-after":
                retry_after = value
            elif lowered == b"x-ratelimit-remaining":
                remaining = value
            elif lowered == b"x-ratelimit-limit":
                limit = value
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
            sunset = sunsets[sunset_raw]

        ident = (e.key, e.client)
        who = masks.get(ident)
        if who is None:
            who = masks[ident] = subject_of(e.key, e.client)
        ra_text = retry_after.decode("latin-1") if retry_after is not None else None
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
                wait_until=(
                    parse_retry_after(ra_text, e.time, e.wall) if ra_text is not None else None
                ),
                retry_after=ra_text,
                remaining=_int(remaining),
                limit=_int(limit),
                auth=credentials.kind,
                auth_scheme=scheme,
                latency=e.latency_ms / 1000,
                outcome=e.outcome,
                sunset=sunset,
            )
        )
    return facts
