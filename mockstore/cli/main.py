"""``mockstore``: the parser of every command, and the dispatch to the one named.

Each command is a module of this package with ``NAME``, ``SUMMARY``,
``EXAMPLES``, ``EXIT_CODES``, ``add_arguments(parser)`` and ``run(args)``;
its ``--help`` shows its own options, examples and exit statuses. A command's
module imports what it needs when it runs, so ``mockstore --help`` stays quick;
and a command line that names a command imports only that command's module
(``mockstore serve`` starts without the argument types of ``record`` or
``calibrate``, which import the fidelity tools).
"""

from __future__ import annotations

import argparse
import gc
import importlib
import sys
from collections.abc import Sequence
from types import ModuleType

from mockstore.cli.args import USAGE, epilog, pipe_closed
from mockstore.version import __version__

# Every command, in the order the overview lists them: each a module of this package.
COMMAND_NAMES: tuple[str, ...] = (
    "serve",
    "validate",
    "schema",
    "scenarios",
    "openapi",
    "report",
    "replay",
    "record",
    "drift",
    "calibrate",
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


def command(name: str) -> ModuleType:
    """The module of the command ``name`` (one of ``COMMAND_NAMES``), imported now."""
    if name not in COMMAND_NAMES:
        raise ValueError(f"no such command: {name!r}")
    return importlib.import_module(f"mockstore.cli.{name}")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The ``mockstore`` parser: a short overview, and one sub-parser per command.

    ``only``: the one command a command line names; the parser has that
    command's sub-parser alone, so only its module is imported (every
    other command line, ``--help`` and mistakes included, gets them all).
    """
    parser = argparse.ArgumentParser(
        prog="mockstore",
        description="A high-fidelity mock server of the Pet Store service.",
        epilog=epilog(OVERVIEW, EXIT_CODES),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"mockstore {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_NAMES if only is None else (only,):
        module = command(name)
        child = sub.add_parser(
            module.NAME,
            help=module.SUMMARY,
            description=module.SUMMARY,
            epilog=epilog(module.EXAMPLES, module.EXIT_CODES),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        module.add_arguments(child)
        child.set_defaults(run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    # The command is the first word (no option of the overview takes a value).
    named = words[0] if words and words[0] in COMMAND_NAMES else None
    if named == "serve" and gc.isenabled():
        # A start allocates some 40,000 objects that live as long as the server: the
        # collections its imports set off walked them all again and again (about a
        # tenth of the start, issue 29). ``serve`` freezes them (server.freeze_startup),
        # which turns collections back on; a ``serve`` that ends before it, too.
        gc.disable()
        try:
            return _run(build_parser(only=named), words)
        finally:
            gc.enable()
    return _run(build_parser(only=named), words)


def _run(parser: argparse.ArgumentParser, words: list[str]) -> int:
    args = parser.parse_args(words)
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
