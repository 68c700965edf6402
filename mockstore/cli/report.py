"""``mockstore report``: fetch a running mock's report and render it for CI.

Exit status: 0 when no finding is at or above ``--fail-on`` (default
``error``), 1 when one is, 2 when the report could not be fetched. So
``mockstore report --url $MOCK --format junit -o etiquette.xml`` in a CI job
both feeds the test tab and fails the job on a misbehaving client.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from mockstore.cli.args import PIPE

NAME = "report"
SUMMARY = "judge a client from a running server's journal"
EXAMPLES = """\
examples:
  mockstore report --url http://127.0.0.1:8080 --format junit --fail-on warning
  mockstore report --url http://127.0.0.1:8080/v1 --format html -o report.html
  mockstore report --url http://127.0.0.1:8080 --run current
"""
EXIT_CODES = (
    "    0  no finding at or above --fail-on",
    "    1  a finding at or above --fail-on exists",
    "    2  the report cannot be fetched (unreachable, refused, not mockstore), or usage error",
    PIPE,
)
TIMEOUT = 30.0  # seconds: a full journal's report takes a while to build


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--url",
        required=True,
        help="the server: its root (http://127.0.0.1:8080), the API base the banner prints "
        "(.../v1) or a tenant's root",
    )
    parser.add_argument(
        "--format",
        default="text",
        choices=["text", "json", "junit", "html"],
        help="text for a terminal, json as served, junit for CI test tabs, html one page "
        "with charts (default: text)",
    )
    parser.add_argument(
        "--output", "-o", metavar="FILE", help="write to this file instead of stdout"
    )
    parser.add_argument(
        "--fail-on",
        default="error",
        choices=["info", "warning", "error", "never"],
        help="exit 1 when a finding at or above this severity exists (default: error)",
    )
    parser.add_argument(
        "--since",
        type=int,
        metavar="SEQ",
        help="judge only the requests after this journal sequence number (a reset's journal_seq)",
    )
    parser.add_argument(
        "--run",
        type=_run,
        default=None,
        dest="judged_run",  # args.run is the command itself (cli.main)
        metavar="RUN",
        help="judge one run only: its number, or 'current' (default: every run, each judged "
        "on its own; a reset, scenario load, tenant or clock moved back begins a run)",
    )
    parser.add_argument(
        "--control-token",
        default=os.environ.get("MOCKSTORE_CONTROL_TOKEN"),
        metavar="TOKEN",
        help="the server's control token, if it has one (env MOCKSTORE_CONTROL_TOKEN)",
    )


def _run(value: str) -> int | str:
    """``--run``: a run number, ``current``, or ``all`` (the default)."""
    if value in ("current", "all"):
        return value
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"a run number, 'current' or 'all', not {value!r}"
        ) from None


def fetch_report(
    url: str,
    token: str | None = None,
    *,
    since: int | None = None,
    timeline: bool = False,
    timeout: float = TIMEOUT,
    run: int | str | None = None,
) -> tuple[dict[str, Any], str | None]:
    """The report (as served) from a running mock, and a note if the URL was not its root.

    ``run`` judges one run (a number or ``"current"``); by default every run, each on
    its own. Raises ``ControlError`` (``mockstore.Control``'s one error type) with a reason.
    """
    from mockstore.clients import Control

    with Control(url, token, timeout=timeout) as control:
        report = control.report(since=since, timeline=timeline, run=run)
        return report.raw, control.note


def render(report: dict[str, Any], fmt: str) -> str:
    from mockstore.reports.html import render_html
    from mockstore.reports.junit import render_junit
    from mockstore.reports.text import render_text

    if fmt == "json":
        return json.dumps(report, indent=2) + "\n"
    if fmt == "junit":
        return render_junit(report)
    if fmt == "html":
        return render_html(report)
    return render_text(report)


def run(args: argparse.Namespace) -> int:
    from mockstore.clients import ControlError
    from mockstore.reports.report import failing

    try:
        report, note = fetch_report(
            args.url,
            args.control_token,
            since=args.since,
            timeline=args.format == "html",
            run=args.judged_run,
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
