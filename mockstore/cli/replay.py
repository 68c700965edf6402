"""``mockstore replay``: re-send a HAR recording to a fresh mock and show what differs."""

from __future__ import annotations

import argparse
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
    from mockstore.fidelity.recording import InputError, load_scenario_for, read_recording
    from mockstore.fidelity.replay import render, replay

    try:
        recording = read_recording(args.har)
        scenario, note = load_scenario_for(recording, args.scenario)
    except InputError as exc:
        print(f"mockstore replay: {exc.message}", file=sys.stderr)
        for problem in exc.problems:
            print(f"  {problem}", file=sys.stderr)
        return 2
    if note:
        print(f"mockstore replay: {note}", file=sys.stderr)
    result = replay(recording, scenario)
    print(render(result, args.har))
    return 0 if result.identical else 1
