"""The report as plain text, for a terminal or a CI log."""

from __future__ import annotations

import textwrap
from typing import Any

_WIDTH = 100


def _evidence(finding: dict[str, Any]) -> str:
    seqs = finding["seqs"]
    shown = " ".join(f"#{s}" for s in seqs[:15])
    more = finding["count"] - min(len(seqs), 15)
    return shown + (f" ... (+{more} more)" if more > 0 else "")


def _runs_line(summary: dict[str, Any]) -> str:
    """Which runs were judged: every rule judges within a run."""
    runs = summary.get("runs", {"selected": "all", "count": 0, "latest": []})
    if runs["selected"] != "all":
        listed = runs["latest"][0] if runs["latest"] else None
        why = f", begun by {listed['began_with']}" if listed and listed["began_with"] else ""
        return f"run {runs['selected']} only{why}"
    count = runs["count"]
    return f"all runs ({count}), each judged on its own" if count != 1 else "one run"


def render_text(report: dict[str, Any]) -> str:
    summary = report["summary"]
    counts = summary["findings"]
    journals = summary.get("journals")
    # Each journal numbers its own entries: a range is said per journal when there are several.
    own = not journals and summary["requests"] and summary["first_seq"] is not None
    lines = [
        f"mockstore report: scenario {summary['scenario']!r}, {summary['requests']} request(s)"
        + (f" (seq {summary['first_seq']}-{summary['last_seq']})" if own else ""),
        _runs_line(summary),
    ]
    if journals:
        parts = [
            ("this server" if j["tenant"] is None else f"tenant {j['tenant']}")
            + (" (deleted)" if j["deleted"] else "")
            + f": {j['requests']}"
            + (f" (seq {j['first_seq']}-{j['last_seq']})" if j.get("first_seq") else "")
            for j in journals
        ]
        lines.append("journals: " + ", ".join(parts))
    journal = summary["journal"]
    if journal["dropped"]:
        lines.append(
            f"note: the journal (size {journal['size']}) dropped {journal['dropped']} older "
            "exchange(s); they are not judged"
        )
    if not journal["enabled"]:
        lines.append("note: the journal is off (journal.size 0): new requests are not recorded")
    lines.append("")
    lines.append(
        f"Etiquette: {counts['error']} error(s), {counts['warning']} warning(s), "
        f"{counts['info']} info"
    )
    for finding in report["findings"]:
        lines.append(
            f"  {finding['severity'].upper():<8}{finding['id']} {finding['rule']} "
            f"[{finding['subject']}]"
        )
        for part in textwrap.wrap(finding["message"], _WIDTH - 12):
            lines.append(f"            {part}")
        lines.append(f"            evidence: {_evidence(finding)}")
    passed = summary["rules_passed"]
    if passed:
        lines.append(f"  passed: {', '.join(passed)}")
    coverage = report["coverage"]
    documented = coverage["documented"]
    lines.append("")
    lines.append(f"Coverage: {documented['met']} of {documented['total']} documented responses met")
    for op in coverage["operations"]:
        cells = []
        for response in op["responses"]:
            mark = f"{response['met']}" if response["met"] else "never"
            star = "" if response["documented"] else "*"
            cells.append(f"{response['status']}{star}:{mark}")
        for response in op["unexpected"]:
            cells.append(f"{response['status']}!:{response['met']}")
        lines.append(f"  {op['operation']:<10} {'  '.join(cells)}")
    for other in coverage["other"]:
        statuses = "  ".join(f"{s}:{n}" for s, n in other["statuses"].items())
        lines.append(f"  {other['operation']:<10} {statuses}")
    lines.append("  (* not in the OpenAPI document but mockstore can send it; ! unexpected)")
    if coverage["never_met"]:
        lines.append("  never met: " + ", ".join(coverage["never_met"]))
    return "\n".join(lines) + "\n"
