"""``mockstore report``: fetch a running mock's report and render it for CI.

Exit status: 0 when no finding is at or above ``--fail-on`` (default
``error``), 1 when one is, 2 when the report could not be fetched. So
``mockstore report --url $MOCK --format junit -o etiquette.xml`` in a CI job
both feeds the test tab and fails the job on a misbehaving client.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from mockstore.reports.html import render_html
from mockstore.reports.junit import render_junit
from mockstore.reports.report import failing
from mockstore.reports.text import render_text


def fetch_report(
    url: str,
    token: str | None = None,
    *,
    since: int | None = None,
    timeline: bool = False,
    timeout: float = 30.0,
) -> tuple[dict[str, Any], str | None]:
    """The report (as served) from a running mock, and a note if the URL was not its root.

    Raises ``ControlError`` (``mockstore.Control``'s one error type) with a reason.
    """
    from mockstore.clients.control import Control

    with Control(url, token, timeout=timeout) as control:
        report = control.report(since=since, timeline=timeline)
        return report.raw, control.note


def render(report: dict[str, Any], fmt: str) -> str:
    if fmt == "json":
        return json.dumps(report, indent=2) + "\n"
    if fmt == "junit":
        return render_junit(report)
    if fmt == "html":
        return render_html(report)
    return render_text(report)


def run_report(args: argparse.Namespace) -> int:
    from mockstore.clients.types import ControlError

    try:
        report, note = fetch_report(
            args.url, args.control_token, since=args.since, timeline=args.format == "html"
        )
    except ControlError as exc:
        hint = " (pass --control-token)" if exc.status == 401 else ""
        print(f"mockstore report: {args.url}: {exc}{hint}", file=sys.stderr)
        return 2
    if note:
        print(f"mockstore report: {note}", file=sys.stderr)
    output = render(report, args.format)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as handle:
            handle.write(output)
    else:
        sys.stdout.write(output)
    failed = failing(report, args.fail_on)
    if failed:
        ids = ", ".join(sorted({f["id"] for f in failed}))
        print(
            f"mockstore report: {len(failed)} finding(s) at or above {args.fail_on}: {ids}",
            file=sys.stderr,
        )
        return 1
    return 0
