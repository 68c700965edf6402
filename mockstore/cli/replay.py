"""``mockstore replay``: re-send a HAR recording to a fresh mock and show what differs."""

from __future__ import annotations

import argparse
import json
import sys

from mockstore.cli.args import PIPE

NAME = "replay"
SUMMARY = "re-send a HAR recording to a fresh mock and diff"
EXAMPLES = """\
examples:
  mockstore replay session.har                     # against the scenario it carries
  mockstore replay session.har --scenario flaky-create
"""
EXIT_CODES = (
    "    0  every response matches the recording",
    "    1  some responses differ (each difference is printed)",
    "    2  the HAR or the scenario cannot be read, or usage error",
    PIPE,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "har", metavar="FILE.har", help="a HAR file, as GET /__mockstore/requests.har exports it"
    )
    parser.add_argument(
        "--scenario",
        default=None,
        metavar="NAME_OR_PATH",
        help="replay against this scenario instead of the one the HAR carries "
        "(a bundled name, a YAML file or YAML text)",
    )


def run(args: argparse.Namespace) -> int:
    from mockstore.replay import render, replay, scenario_for
    from mockstore.reports.har import HarError
    from mockstore.scenario import ScenarioError, ScenarioNotFound

    try:
        with open(args.har, encoding="utf-8") as handle:
            document = json.load(handle)
    except OSError as exc:
        print(f"mockstore replay: cannot read {args.har}: {exc.strerror}", file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"mockstore replay: {args.har} is not JSON: {exc}", file=sys.stderr)
        return 2
    try:
        scenario, note = scenario_for(document, args.scenario)
    except ScenarioNotFound as exc:
        print(f"mockstore replay: {exc}", file=sys.stderr)
        return 2
    except ScenarioError as exc:
        which = repr(args.scenario) if args.scenario else "the HAR carries"
        print(f"mockstore replay: the scenario {which} is not usable:", file=sys.stderr)
        for problem in exc.problems:
            print(f"  {problem}", file=sys.stderr)
        return 2
    if note:
        print(f"mockstore replay: {note}", file=sys.stderr)
    try:
        result = replay(document, scenario)
    except HarError as exc:
        print(f"mockstore replay: {args.har}: {exc}", file=sys.stderr)
        return 2
    print(render(result, args.har))
    return 0 if result.identical else 1
