"""``mockstore schema``: print the scenario JSON Schema (for editors and CI checks)."""

from __future__ import annotations

import argparse
import json

from mockstore.cli.args import PIPE, USAGE

NAME = "schema"
SUMMARY = "print the scenario JSON Schema"
EXAMPLES = """\
examples:
  mockstore schema > scenario.schema.json          # for editor autocompletion
"""
EXIT_CODES = ("    0  printed", USAGE, PIPE)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    pass


def run(args: argparse.Namespace) -> int:
    from mockstore.scenario import scenario_schema

    print(json.dumps(scenario_schema(), indent=2))
    return 0
