"""``mockstore openapi``: print the OpenAPI document mockstore serves (JSON)."""

from __future__ import annotations

import argparse
import json
import sys

from mockstore.cli.args import PIPE

NAME = "openapi"
SUMMARY = "print the OpenAPI document mockstore serves"
EXAMPLES = """\
examples:
  mockstore openapi > petstore.json                # for a client generator or a linter
  mockstore openapi --scenario staging.yaml        # as a calibrated scenario's mock answers
"""
EXIT_CODES = ("    0  printed", "    2  the scenario cannot be read, or usage error", PIPE)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--scenario",
        help="the document a mock of this scenario serves (bundled name or YAML file)",
    )


def run(args: argparse.Namespace) -> int:
    from mockstore.document import openapi_for
    from mockstore.scenario import ScenarioError, ScenarioNotFound, load_scenario_source
    from mockstore.schemas import openapi_json

    if args.scenario is None:
        print(openapi_json().decode())
        return 0
    try:
        scenario = load_scenario_source(args.scenario)
    except ScenarioNotFound as exc:
        print(f"mockstore openapi: {exc}", file=sys.stderr)
        return 2
    except ScenarioError as exc:
        print(f"mockstore openapi: the scenario {args.scenario!r} is not valid:", file=sys.stderr)
        for problem in exc.problems:
            print(f"  {problem}", file=sys.stderr)
        return 2
    print(json.dumps(openapi_for(scenario), indent=2))
    return 0
