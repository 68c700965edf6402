"""``mockstore validate``: check scenarios and print every problem as file:line:column."""

from __future__ import annotations

import argparse
import sys

from mockstore.cli.args import PIPE, USAGE

NAME = "validate"
SUMMARY = "check scenarios; print every problem as file:line:column"
EXAMPLES = """\
examples:
  mockstore validate scenarios/*.yaml              # exit 1 on any problem
  mockstore validate flaky-create ./mine.yaml      # bundled names and files together
"""
EXIT_CODES = (
    "    0  every scenario is valid",
    "    1  a scenario is not found or not valid (every problem is printed)",
    USAGE,
    PIPE,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "files",
        nargs="+",
        metavar="SCENARIO",
        help="a YAML file, a bundled scenario name, or YAML text; several at once",
    )


def run(args: argparse.Namespace) -> int:
    from mockstore.scenario import ScenarioError, ScenarioNotFound, resolve_scenario

    failed = 0
    for spec in args.files:
        try:
            source = resolve_scenario(spec)
            source.load()
        except ScenarioNotFound as exc:
            print(f"{spec}: {exc}", file=sys.stderr)
            failed += 1
            continue
        except ScenarioError as exc:
            failed += 1
            for problem in exc.problems:
                print(problem, file=sys.stderr)
            continue
        print(f"{source.file}: ok")
    return 1 if failed else 0
