"""The whole report: coverage, etiquette findings, a summary, and a timeline.

``build_report`` is the one function behind ``GET /__mockstore/report`` and
``mockstore report``; every output format (text, JSON, JUnit, HTML) renders
the dict it returns, so they cannot disagree.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from mockstore.journal import Entry
from mockstore.reports.coverage import coverage
from mockstore.reports.etiquette import RULES, judge
from mockstore.reports.model import (
    SEVERITIES,
    Fact,
    ReportContext,
    facts_of,
    severity_rank,
)

TIMELINE_COLUMNS = (
    "seq",
    "offset",
    "subject",
    "status",
    "remaining",
    "limit",
    "code",
    "operation",
)


def build_report(
    entries: Sequence[Entry],
    context: ReportContext | None = None,
    *,
    timeline: bool = False,
) -> dict[str, Any]:
    """The report over ``entries`` (journal order) as a JSON-ready dict."""
    context = context or ReportContext()
    facts = facts_of(entries)
    findings = [f.to_dict() for f in judge(facts, context)]
    by_severity = Counter(f["severity"] for f in findings)
    fired = {f["id"] for f in findings}
    report: dict[str, Any] = {
        "summary": {
            "scenario": context.scenario,
            "requests": len(facts),
            "first_seq": facts[0].seq if facts else None,
            "last_seq": facts[-1].seq if facts else None,
            "since": context.since,
            "journal": {
                "enabled": context.journal_enabled,
                "size": context.journal_size,
                "dropped": context.dropped,
            },
            "findings": {severity: by_severity.get(severity, 0) for severity in SEVERITIES},
            "highest": max(by_severity, key=severity_rank) if by_severity else None,
            "rules_passed": [r.id for r in RULES if r.id not in fired],
        },
        "findings": findings,
        "rules": [r.to_dict() for r in RULES],
        "coverage": coverage(facts),
    }
    if timeline:
        report["timeline"] = timeline_of(facts)
    return report


def timeline_of(facts: list[Fact]) -> dict[str, Any]:
    """Compact rows for charts: one per request, time as seconds after the first."""
    start = min((f.time for f in facts), default=0.0)
    rows = [
        [
            f.seq,
            round(f.time - start, 6),
            f.subject,
            f.status,
            f.remaining,
            f.limit,
            f.code,
            f.operation,
        ]
        for f in facts
    ]
    return {"start": start, "columns": list(TIMELINE_COLUMNS), "rows": rows}


def failing(report: dict[str, Any], fail_on: str) -> list[dict[str, Any]]:
    """The findings at or above ``fail_on`` (``never`` selects none)."""
    threshold = severity_rank(fail_on)
    return [f for f in report["findings"] if severity_rank(f["severity"]) >= threshold]
