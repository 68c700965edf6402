"""``mockstore calibrate``: probe a real deployment and write a scenario that reproduces it."""

from __future__ import annotations

import argparse
import sys

from mockstore.cli.args import PIPE, positive
from mockstore.fidelity.calibrate.options import BUDGET, TIMEOUT, Options

NAME = "calibrate"
SUMMARY = "probe a real deployment and write a scenario that reproduces it"
EXAMPLES = """\
examples:
  mockstore calibrate --target https://staging.example.com/v1 --key "$KEY" --out staging.yaml
  mockstore calibrate --target https://staging.example.com/v1 --key "$KEY" --allow-writes
"""
EXIT_CODES = (
    "    0  the scenario is written (what could not be settled is listed)",
    "    1  the target could not be probed",
    "    2  a bad --target or --key, or usage error",
    PIPE,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--target", required=True, help="base address ending in /v1")
    parser.add_argument(
        "--key", action="append", required=True, help="an API key of the target (repeatable)"
    )
    parser.add_argument(
        "--allow-writes",
        action="store_true",
        help="create one pet and search for the largest accepted body",
    )
    parser.add_argument(
        "--allow-rate-limit",
        action="store_true",
        help="spend one key's minute allowance to observe a 429",
    )
    parser.add_argument(
        "--budget",
        type=positive(int),
        default=BUDGET,
        help=f"most requests to send (default {BUDGET})",
    )
    parser.add_argument("--out", metavar="FILE.yaml", help="write the scenario here")
    parser.add_argument(
        "--timeout",
        type=positive(float),
        default=TIMEOUT,
        help=f"seconds per probe (default {TIMEOUT:g})",
    )


def run(args: argparse.Namespace) -> int:
    """0 written, 1 the target could not be probed, 2 bad arguments."""
    from mockstore.fidelity.calibrate.probes import Calibrator
    from mockstore.fidelity.calibrate.writer import render_scenario
    from mockstore.fidelity.upstream import UpstreamError
    from mockstore.scenario import ScenarioError, load_scenario

    def say(text: str) -> None:
        print(text, file=sys.stderr)

    options = Options(
        target=args.target,
        keys=tuple(args.key),
        budget=args.budget,
        timeout=args.timeout,
        allow_writes=args.allow_writes,
        allow_rate_limit=args.allow_rate_limit,
    )
    try:
        calibrator = Calibrator(options)
    except UpstreamError as exc:
        say(f"mockstore calibrate: {str(exc).replace('--upstream', '--target')}")
        return 2
    result = calibrator.run()
    probes = calibrator.prober.probes
    if not probes or all(p.error is not None for p in probes):
        reason = probes[0].error if probes else "no probe was sent"
        say(f"mockstore calibrate: could not probe {result.target}: {reason}")
        return 1
    text = render_scenario(result, options, len(probes))
    try:
        load_scenario(text, args.out or "<calibrated>")
    except ScenarioError as exc:  # a bug here, not the target's: say so plainly
        say("mockstore calibrate: the scenario written does not validate (a bug):")
        for problem in exc.problems:
            say(f"  {problem}")
        return 1
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write(text)
    else:
        sys.stdout.write(text)
    settled = len(result.behaviour) + len(result.error_codes) + len(result.keys)
    say(
        f"mockstore calibrate: {len(probes)} request(s) of {args.budget}; {settled} setting(s) "
        f"settled, {len(result.inexpressible)} not expressible, {len(result.unsettled)} "
        f"open{'; wrote ' + args.out if args.out else ''}"
    )
    for text_line in result.inexpressible:
        say(f"  not expressible: {text_line}")
    for text_line in result.unsettled:
        say(f"  not settled: {text_line}")
    return 0
