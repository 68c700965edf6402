"""The whole report: coverage, etiquette findings, a summary, and a timeline.

``build_report`` is the one function behind ``GET /__mockstore/report`` and
``mockstore report``; every output format (text, JSON, JUnit, HTML) renders
the dict it returns, so they cannot disagree.

A report covers one run or all of them (``ReportContext.run``) and says
which; a server's report may also cover its tenants' journals (the live ones
and those kept after their tenant was deleted), each judged on its own.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any, NamedTuple

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
from mockstore.runs import REASONS, Run

TIMELINE_COLUMNS = (
    "seq",
    "offset",
    "subject",
    "status",
    "remaining",
    "limit",
    "code",
    "operation",
    "run",
)
RUNS_LISTED = 100  # the latest runs a report describes (``count`` says how many there were)


class Journal(NamedTuple):
    """The entries of one journal a report covers, and where it comes from."""

    entries: Sequence[Entry]
    tenant: str | None = None  # None: the server's own
    deleted: bool = False  # a deleted tenant's journal, kept for the report
    runs: Sequence[Run] = ()  # where its runs began, as far as it knows


def build_report(
    entries: Sequence[Entry],
    context: ReportContext | None = None,
    *,
    timeline: bool = False,
    tenants: Sequence[Journal] = (),
    runs: Sequence[Run] = (),
) -> dict[str, Any]:
    """The report over ``entries`` (journal order) as a JSON-ready dict.

    ``tenants`` adds tenants' journals; ``runs`` says where the server's runs
    began (for the summary to describe them).
    """
    context = context or ReportContext()
    journals = [Journal(entries, None, False, runs), *tenants]
    facts = [
        fact
        for journal in journals
        for fact in facts_of(journal.entries, journal.tenant, journal.runs)
    ]
    findings = [f.to_dict() for f in judge(facts, context)]
    by_severity = Counter(f["severity"] for f in findings)
    fired = {f["id"] for f in findings}
    # Each journal numbers its own entries: the sequence numbers judged, per journal
    # (the summary's own are the server's journal's, which ``since`` counts in).
    seqs: dict[str | None, list[int]] = {}
    for fact in facts:
        seqs.setdefault(fact.tenant, []).append(fact.seq)
    first_seq, last_seq = _seq_range(seqs.get(None, []))
    report: dict[str, Any] = {
        "summary": {
            "scenario": context.scenario,
            "requests": len(facts),
            "first_seq": first_seq,
            "last_seq": last_seq,
            "since": context.since,
            "journal": {
                "enabled": context.journal_enabled,
                "size": context.journal_size,
                "dropped": context.dropped,
            },
            "runs": runs_summary(facts, journals, context.run),
            "findings": {severity: by_severity.get(severity, 0) for severity in SEVERITIES},
            "highest": max(by_severity, key=severity_rank) if by_severity else None,
            "rules_passed": [r.id for r in RULES if r.id not in fired],
        },
        "findings": findings,
        "rules": [r.to_dict() for r in RULES],
        "coverage": coverage(facts),
    }
    if tenants:
        report["summary"]["journals"] = [
            {
                "tenant": journal.tenant,
                "deleted": journal.deleted,
                "requests": len(journal.entries),
                "first_seq": (judged := _seq_range(seqs.get(journal.tenant, [])))[0],
                "last_seq": judged[1],
            }
            for journal in journals
        ]
    if timeline:
        report["timeline"] = timeline_of(facts)
    return report


def _seq_range(seqs: list[int]) -> tuple[int | None, int | None]:
    """The first and last of the sequence numbers of one journal's judged entries."""
    return (min(seqs), max(seqs)) if seqs else (None, None)


def runs_summary(
    facts: Sequence[Fact], journals: Sequence[Journal], selected: int | None
) -> dict[str, Any]:
    """Which runs a report covers: ``selected`` (a run number, or "all"), how many, the ``latest``.

    Each listed run says why it began, in which tenant, and how many of its
    requests were judged.
    """
    counts: Counter[tuple[str | None, int]] = Counter((f.tenant, f.run) for f in facts)
    known = {(j.tenant, run.number): run for j in journals for run in j.runs}
    listed = []
    for (tenant, number), requests in sorted(counts.items(), key=lambda item: item[0][1])[
        -RUNS_LISTED:
    ]:
        run = known.get((tenant, number))
        listed.append(
            {
                "run": number,
                "tenant": tenant,
                "requests": requests,
                "reason": run.reason if run else None,
                "began_with": REASONS[run.reason] if run else None,
                "scenario": run.scenario if run else None,
                "time": run.time if run else None,
            }
        )
    return {
        "selected": "all" if selected is None else selected,
        "count": len(counts),
        "latest": listed,
    }


def timeline_of(facts: list[Fact]) -> dict[str, Any]:
    """Compact rows for charts: one per request, time as seconds after the first.

    Within one run, on the scenario clock (the time the scenario tells); across
    runs or tenants, whose scenario times need not follow one another, on the
    wall clock, which does (``clock`` says which).
    """
    several = len({(f.tenant, f.run) for f in facts}) > 1
    on_wall = several and all(f.wall is not None for f in facts)

    def when(fact: Fact) -> float:
        return fact.wall if on_wall and fact.wall is not None else fact.time

    start = min((when(f) for f in facts), default=0.0)
    rows = [
        [
            f.seq,
            round(when(f) - start, 6),
            f.subject,
            f.status,
            f.remaining,
            f.limit,
            f.code,
            f.operation,
            f.run,
        ]
        for f in facts
    ]
    return {
        "start": start,
        "clock": "wall" if on_wall else "scenario",
        "columns": list(TIMELINE_COLUMNS),
        "rows": rows,
    }


def failing(report: dict[str, Any], fail_on: str) -> list[dict[str, Any]]:
    """The findings at or above ``fail_on`` (``never`` selects none)."""
    threshold = severity_rank(fail_on)
    return [f for f in report["findings"] if severity_rank(f["severity"]) >= threshold]
