"""``mockstore calibrate``: learn a deployment from a recording and probes, write a scenario."""

from __future__ import annotations

import argparse
import sys

from mockstore.cli.args import PIPE, positive
from mockstore.fidelity.calibrate.options import BUDGET, TIMEOUT, WAIT, KeyOption, Options

NAME = "calibrate"
SUMMARY = "learn a real deployment from a recording (and probes) and write a scenario"
EXAMPLES = """\
examples:
  mockstore calibrate --from session.har --out staging.yaml
  mockstore calibrate --from session.har --target https://staging.example.com/v1 \\
      --key "$KEY=ci-key" --out staging.yaml
  mockstore calibrate --target https://staging.example.com/v1 --key "$KEY" --allow-writes
"""
EXIT_CODES = (
    "    0  the scenario is written (what could not be settled is listed)",
    "    1  the target could not be probed",
    "    2  a bad --target, --key or --from, or usage error",
    PIPE,
)


def _key(text: str) -> KeyOption:
    """``KEY`` or ``KEY=NAME`` (the name the scenario gives the key)."""
    key, separator, name = text.rpartition("=")
    if separator and key and name and "=" not in name and name.strip() == name:
        return KeyOption(key, name)
    return KeyOption(text)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--from",
        dest="recording",
        metavar="FILE.har",
        help="learn every setting this recording shows first (mockstore record --out)",
    )
    parser.add_argument("--target", help="probe this base address (ending in /v1) for the rest")
    parser.add_argument(
        "--key",
        action="append",
        default=[],
        type=_key,
        metavar="KEY[=NAME]",
        help="an API key of the target (its alias, key-xxxxxxxx, with --from alone), and the "
        "name the scenario gives it (repeatable)",
    )
    parser.add_argument(
        "--allow-writes",
        action="store_true",
        help="create pets and send createPet's refusals and a body-size search (POSTs)",
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
    parser.add_argument(
        "--wait",
        type=float,
        default=WAIT,
        metavar="SECONDS",
        help=f"wait out an allowance spent before calibration, up to this long (default {WAIT:g})",
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
    from mockstore.fidelity.calibrate.learn import learn
    from mockstore.fidelity.calibrate.probes import Calibrator, check_key, key_names
    from mockstore.fidelity.calibrate.result import Calibration, merged
    from mockstore.fidelity.calibrate.writer import render_scenario
    from mockstore.fidelity.recording import InputError, read_recording
    from mockstore.fidelity.upstream import UpstreamError
    from mockstore.scenario import ScenarioError, load_scenario

    def say(text: str) -> None:
        print(text, file=sys.stderr)

    if args.recording is None and args.target is None:
        say("mockstore calibrate: give --from FILE.har, --target URL, or both")
        return 2
    if args.target is not None and not args.key:
        say("mockstore calibrate: --target needs at least one --key")
        return 2
    if args.wait < 0:
        say("mockstore calibrate: --wait must be 0 or more seconds")
        return 2
    options = Options(
        target=args.target,
        keys=tuple(args.key),
        recording=args.recording,
        budget=args.budget,
        timeout=args.timeout,
        allow_writes=args.allow_writes,
        allow_rate_limit=args.allow_rate_limit,
        wait=args.wait,
    )
    try:
        for option in options.keys:
            check_key(option.key)
    except UpstreamError as exc:
        say(f"mockstore calibrate: {exc}")
        return 2
    names = key_names(options.keys)
    result = Calibration(args.target or "")
    if args.recording is not None:
        try:
            result = learn(read_recording(args.recording), names)
        except InputError as exc:
            say(f"mockstore calibrate: {exc.message}")
            for problem in exc.problems:
                say(f"  {problem}")
            return 2
    sent = 0
    if args.target is not None:
        try:
            calibrator = Calibrator(options, result)
        except UpstreamError as exc:
            say(f"mockstore calibrate: {str(exc).replace('--upstream', '--target')}")
            return 2
        probed = calibrator.run()
        probes = calibrator.prober.probes
        sent = len(probes)
        if not probes or all(p.error is not None for p in probes):
            reason = probes[0].error if probes else "no probe was sent"
            say(f"mockstore calibrate: could not probe {calibrator.shown}: {reason}")
            return 1
        result = merged(result, probed) if args.recording is not None else probed
    text = render_scenario(result, options, sent)
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
    budget = f" of {args.budget}" if args.target is not None else ""
    say(
        f"mockstore calibrate: {sent} request(s){budget}; {result.count} setting(s) settled, "
        f"{len(result.inexpressible)} not expressible, {len(result.unsettled)} open"
        f"{'; wrote ' + args.out if args.out else ''}"
    )
    for text_line in result.inexpressible:
        say(f"  not expressible: {text_line}")
    for text_line in result.unsettled:
        say(f"  not settled: {text_line}")
    for text_line in result.estimated.values():
        say(f"  guessed: {text_line}")
    return 0
