"""``mockstore drift``: replay a recording against a scenario and report semantic differences."""

from __future__ import annotations

import argparse
import json
import sys

from mockstore.cli.args import PIPE

NAME = "drift"
SUMMARY = "replay a recording against a scenario and report semantic differences"
EXAMPLES = """\
examples:
  mockstore drift session.har --scenario staging.yaml
  mockstore drift session.har --scenario staging.yaml --format junit -o drift.xml
"""
EXIT_CODES = (
    "    0  no drift: every difference is ignored by a rule or accepted by the scenario",
    "    1  drift (each difference is listed with the request that shows it and its cause)",
    "    2  the HAR or the scenario cannot be read, nothing could be compared, or usage error",
    PIPE,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "har", metavar="FILE.har", help="a recording (mockstore record --out, or any HAR)"
    )
    parser.add_argument("--scenario", required=True, help="bundled name or YAML file")
    parser.add_argument(
        "--format",
        default="text",
        choices=["text", "json", "junit"],
        help="text, JSON, or JUnit XML (one test per exchange) (default: text)",
    )
    parser.add_argument("--output", "-o", help="write to this file instead of stdout")


def run(args: argparse.Namespace) -> int:
    from mockstore.fidelity.drift import drift, render_junit, render_text
    from mockstore.fidelity.recording import InputError, load_scenario_for, read_recording

    try:
        recording = read_recording(args.har)
        scenario, _ = load_scenario_for(recording, args.scenario)
        report = drift(recording, scenario)
    except InputError as exc:
        print(f"mockstore drift: {exc.message}", file=sys.stderr)
        for problem in exc.problems:
            print(f"  {problem}", file=sys.stderr)
        return 2
    nothing = report.nothing_compared()
    if nothing is not None:
        # A verdict on nothing is no verdict: a nightly job must not pass on it.
        print(f"mockstore drift: {nothing}", file=sys.stderr)
        return 2
    for warning in report.warnings:
        print(f"mockstore drift: warning: {warning}", file=sys.stderr)
    if args.format == "json":
        text = json.dumps(report.to_json(), indent=2) + "\n"
    elif args.format == "junit":
        text = render_junit(report)
    else:
        text = render_text(report)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as handle:
            handle.write(text)
        print(
            f"mockstore drift: {'drift' if report.drift else 'no drift'} "
            f"({len(report.differences)} difference(s)); wrote {args.output}",
            file=sys.stderr,
        )
    else:
        sys.stdout.write(text)
    return 1 if report.drift else 0
