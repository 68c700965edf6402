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

import httpx

from mockstore.reports.html import render_html
from mockstore.reports.junit import render_junit
from mockstore.reports.report import failing
from mockstore.reports.text import render_text


def fetch_report(
    url: str, token: str | None = None, *, timeline: bool = False, timeout: float = 30.0
) -> dict[str, Any]:
    """GET /__mockstore/report from a running mock; raises ``RuntimeError`` with a reason."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    params = {"include": "timeline"} if timeline else {}
    target = url.rstrip("/") + "/__mockstore/report"
    try:
        response = httpx.get(target, headers=headers, params=params, timeout=timeout)
    except httpx.HTTPError as exc:
        raise RuntimeError(f"cannot reach {target}: {exc}") from exc
    if response.status_code != 200:
        detail = response.text.strip()[:300]
        hint = " (pass --control-token)" if response.status_code == 401 else ""
        raise RuntimeError(f"{target} answered {response.status_code}{hint}: {detail}")
    try:
        report = response.json()
    except ValueError as exc:
        raise RuntimeError(f"{target} did not answer JSON: {exc}") from exc
    if not isinstance(report, dict) or "findings" not in report:
        raise RuntimeError(f"{target} did not answer a mockstore report")
    return report


def render(report: dict[str, Any], fmt: str) -> str:
    if fmt == "json":
        return json.dumps(report, indent=2) + "\n"
    if fmt == "junit":
        return render_junit(report)
    if fmt == "html":
        return render_html(report)
    return render_text(report)


def run_report(args: argparse.Namespace) -> int:
    try:
        report = fetch_report(args.url, args.control_token, timeline=args.format == "html")
    except RuntimeError as exc:
        print(f"mockstore report: {exc}", file=sys.stderr)
        return 2
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
