"""``mockstore scenarios``: list the bundled scenarios, each with its description."""

from __future__ import annotations

import argparse

from mockstore.cli.args import PIPE, USAGE

NAME = "scenarios"
SUMMARY = "list the bundled scenarios"
EXAMPLES = """\
examples:
  mockstore scenarios                              # name and description of each
"""
EXIT_CODES = ("    0  printed", USAGE, PIPE)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    pass


def run(args: argparse.Namespace) -> int:
    from mockstore.scenario import bundled_names, read_scenario_source
    from mockstore.scenario.loader import parse_yaml

    for name in bundled_names():
        text, file = read_scenario_source(name)
        data, _ = parse_yaml(text, file)
        print(f"{name:<24} {data.get('description', '').strip()}")
    return 0
