"""``mockstore openapi``: print the OpenAPI document mockstore serves, or its control API's."""

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
  mockstore openapi --control > control.json       # the control API's, for a client generator
"""
EXIT_CODES = ("    0  printed", "    2  the scenario cannot be read, or usage error", PIPE)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--scenario",
        help="the document a mock of this scenario serves (bundled name or YAML file)",
    )
    parser.add_argument(
        "--control",
        action="store_true",
        help="the control API's document instead (servers: http://127.0.0.1:8080/__mockstore)",
    )


def run(args: argparse.Namespace) -> int:
    from mockstore.document import openapi_for
    from mockstore.scenario import ScenarioError, ScenarioNotFound, load_scenario_source
    from mockstore.schemas import openapi_json

    if args.control:
        return _control(args.scenario)
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


def _control(scenario: str | None) -> int:
    """The control document of a server as ``mockstore serve`` starts one by default."""
    if scenario is not None:
        print("mockstore openapi: --control takes no --scenario", file=sys.stderr)
        return 2
    from mockstore.app import create_app
    from mockstore.control.openapi import control_document_json
    from mockstore.urls import CONTROL_PREFIX

    app = create_app("default")
    assert app.control is not None
    url = "http://127.0.0.1:8080" + CONTROL_PREFIX
    print(control_document_json(app.control.app.routes, url).decode())
    return 0
