"""``mockstore openapi``: print the OpenAPI document mockstore serves (JSON)."""

from __future__ import annotations

import argparse

from mockstore.cli.args import PIPE, USAGE

NAME = "openapi"
SUMMARY = "print the OpenAPI document mockstore serves"
EXAMPLES = """\
examples:
  mockstore openapi > petstore.json                # for a client generator or a linter
"""
EXIT_CODES = ("    0  printed", USAGE, PIPE)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    pass


def run(args: argparse.Namespace) -> int:
    from mockstore.schemas import openapi_json

    print(openapi_json().decode())
    return 0
