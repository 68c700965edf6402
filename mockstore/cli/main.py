"""``mockstore``: the parser of every command, and the dispatch to the one named.

Each command is a module of this package with ``NAME``, ``SUMMARY``,
``EXAMPLES``, ``EXIT_CODES``, ``add_arguments(parser)`` and ``run(args)``;
its ``--help`` shows its own options, examples and exit statuses. A command's
module imports what it needs when it runs, so ``mockstore --help`` stays quick.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from types import ModuleType

from mockstore.cli import (
    calibrate,
    drift,
    openapi,
    record,
    replay,
    report,
    scenarios,
    schema,
    serve,
    validate,
)
from mockstore.cli.args import USAGE, epilog, pipe_closed
from mockstore.version import __version__

COMMANDS: tuple[ModuleType, ...] = (
    serve,
    validate,
    schema,
    scenarios,
    openapi,
    report,
    replay,
    record,
    drift,
    calibrate,
)
OVERVIEW = """\
examples:
  mockstore serve                                  # bundled 'default' on 127.0.0.1:8080
  mockstore serve --port 9000 --scenario flaky-create
  MOCKSTORE_SCENARIO=after-sunset mockstore serve --host 0.0.0.0 --control-token s3cret
  mockstore validate scenarios/*.yaml              # exit 1 on any problem
  mockstore report --url http://127.0.0.1:8080 --format junit --fail-on warning
  mockstore COMMAND --help                         # a command's options, examples, exit statuses
"""
EXIT_CODES = ("    0  the command succeeded", f"{USAGE} (unknown command or option)")


def build_parser() -> argparse.ArgumentParser:
    """The ``mockstore`` parser: a short overview, and one sub-parser per command."""
    parser = argparse.ArgumentParser(
        prog="mockstore",
        description="A high-fidelity mock server of the Pet Store service.",
        epilog=epilog(OVERVIEW, EXIT_CODES),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"mockstore {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS:
        child = sub.add_parser(
            command.NAME,
            help=command.SUMMARY,
            description=command.SUMMARY,
            epilog=epilog(command.EXAMPLES, command.EXIT_CODES),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        command.add_arguments(child)
        child.set_defaults(run=command.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        code: int = args.run(args)
        sys.stdout.flush()
    except BrokenPipeError:
        return pipe_closed()
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
