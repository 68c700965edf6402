"""What every command shares: argument types that name their source, and exit statuses.

The types check a value whether it comes from a flag or from the environment
variable that is its default (argparse runs string defaults through ``type``),
and say which it was. Each command lists its exit statuses (``EXIT_CODES``);
``epilog`` shows them under its own examples in ``--help``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Sequence
from typing import Any

# 141 is what a shell reports for a command killed by SIGPIPE (128 + 13): the
# reader of its output went away.
PIPE_CLOSED = 141
USAGE = "    2  usage error"
PIPE = f"  {PIPE_CLOSED}  its output pipe closed early (e.g. `| head`); nothing more is written"


def epilog(examples: str, exit_codes: Sequence[str]) -> str:
    """A command's examples (if any), then its exit statuses."""
    text = "exit status:\n" + "\n".join(exit_codes)
    return f"{examples.rstrip()}\n\n{text}" if examples else text


def pipe_closed() -> int:
    """The reader of our output went away: stop writing, quietly, as `cat | head` does."""
    # Python flushes stdout once more at exit; point it at /dev/null so that last
    # flush cannot raise again and print a traceback.
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            os.dup2(devnull, stream.fileno())
    os.close(devnull)
    return PIPE_CLOSED


def port(text: str) -> int:
    """A TCP port from --port or MOCKSTORE_PORT (argparse also runs string defaults through it)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not a port number: {text!r} (from --port or MOCKSTORE_PORT)"
        ) from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(
            f"{value} is not a TCP port: use 1-65535, or 0 to pick a free one"
        )
    return value


def positive(kind: type, env: str | None = None) -> Any:
    """A number above zero, from a flag or from ``env`` (argparse also checks string defaults)."""
    source = f" (from the flag or {env})" if env else ""

    def check(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}{source}") from None
        if not value > 0 or value != value or value == float("inf"):
            raise argparse.ArgumentTypeError(f"must be above 0, got {text}{source}")
        return value

    check.__name__ = env or kind.__name__
    return check


def size(env: str) -> Any:
    """A size such as 256MiB or 1GiB, at least the smallest memory budget a server runs on."""
    from mockstore.memory import MIN_MEMORY_BUDGET, format_size, parse_size

    def check(text: str) -> int:
        try:
            value = parse_size(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"{exc} (from the flag or {env})") from None
        if value < MIN_MEMORY_BUDGET:
            raise argparse.ArgumentTypeError(
                f"{text} is below the smallest budget a server runs on, "
                f"{format_size(MIN_MEMORY_BUDGET)} (from the flag or {env})"
            )
        return value

    check.__name__ = env
    return check


def one_of(env: str, *allowed: str) -> Any:
    """Like ``choices=``, but also applied to the default taken from ``env``."""

    def check(text: str) -> str:
        value = text.strip().lower()
        if value not in allowed:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not one of {', '.join(allowed)} (from the flag or {env})"
            )
        return value

    check.__name__ = env
    return check


def env_list(env: str) -> list[str]:
    """A comma-separated environment variable as a list (empty when unset)."""
    return [name.strip() for name in os.environ.get(env, "").split(",") if name.strip()]
