"""``mockstore record``: proxy a real deployment and journal every exchange (keys as aliases)."""

from __future__ import annotations

import argparse
import os
import sys

from mockstore.cli.args import PIPE, positive
from mockstore.cli.logs import configure_logging
from mockstore.cli.serving import (
    add_address,
    add_control,
    add_limits,
    add_logging,
    limits_from,
    open_control_refusal,
    open_control_warning,
    run_until_stopped,
    shown_host,
)
from mockstore.fidelity.upstream import BODY_BYTES, TIMEOUT
from mockstore.version import __version__

NAME = "record"
SUMMARY = "proxy a real deployment and journal every exchange (keys as aliases)"
EXAMPLES = """\
examples:
  mockstore record --upstream https://staging.example.com/v1 --port 8080 --out session.har
  MOCKSTORE_UPSTREAM=https://staging.example.com/v1 mockstore record --control-token s3cret
"""
EXIT_CODES = (
    "    0  stopped by SIGTERM or Ctrl-C (the HAR is written to --out first)",
    "    1  the address cannot be had",
    "    2  a bad --upstream, an unwritable --out, an unreadable --keys-file, a control API "
    "open beyond loopback "
    "without --control-token or --insecure-control-api, or usage error",
    PIPE,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--upstream",
        required=not os.environ.get("MOCKSTORE_UPSTREAM"),
        default=os.environ.get("MOCKSTORE_UPSTREAM"),
        help="the upstream's base address, ending in its version segment, "
        "e.g. https://staging.example.com/v1 (env MOCKSTORE_UPSTREAM)",
    )
    add_address(
        parser,
        host_help="address to listen on; clients call http://HOST:PORT/v1 (env MOCKSTORE_HOST)",
        port_help="TCP port (0 picks a free one; env MOCKSTORE_PORT)",
    )
    parser.add_argument("--out", metavar="FILE.har", help="write the recording here on shutdown")
    parser.add_argument(
        "--keys-file",
        default=os.environ.get("MOCKSTORE_RECORD_KEYS_FILE") or None,
        metavar="FILE",
        help="the keys your clients send, one a line ('#' comments): each is aliased wherever "
        "it appears, even where nothing names it a key, as in a path (keys in credentials "
        "headers, parameters and body members are learnt anyway; env MOCKSTORE_RECORD_KEYS_FILE)",
    )
    parser.add_argument(
        "--timeout",
        type=positive(float),
        default=TIMEOUT,
        help="seconds to wait for the upstream (connect, each read); then 504 "
        f"(default {TIMEOUT:g})",
    )
    parser.add_argument(
        "--journal-size",
        type=positive(int),
        default=None,
        help="exchanges the recording keeps, the oldest dropped first "
        "(default: a scenario journal's size)",
    )
    parser.add_argument(
        "--body-bytes",
        type=positive(int),
        default=BODY_BYTES,
        help=f"bytes of each body the recording keeps (default {BODY_BYTES})",
    )
    add_control(parser)
    add_limits(parser)
    add_logging(parser, "info logs one line per exchange")


def run(args: argparse.Namespace) -> int:
    """Serve the proxy until stopped, then write ``--out``."""
    from mockstore.fidelity.recorder import RecordApp, write_har
    from mockstore.fidelity.upstream import UpstreamError, parse_upstream
    from mockstore.server import ServerError, listen
    from mockstore.urls import CONTROL_PREFIX

    configure_logging(args.log_level, args.log_format)
    try:
        upstream = parse_upstream(args.upstream)
    except UpstreamError as exc:
        print(f"mockstore record: {exc}", file=sys.stderr)
        return 2
    if args.out:
        # Refused now, not after an hour of recording (and nothing is created yet).
        folder = os.path.dirname(os.path.abspath(args.out))
        if os.path.isdir(args.out) or not os.access(folder, os.W_OK):
            reason = "it is a folder" if os.path.isdir(args.out) else f"{folder} is not writable"
            print(f"mockstore record: cannot write --out {args.out}: {reason}", file=sys.stderr)
            return 2
    refusal = open_control_refusal(args.host, args.control_token, args.insecure_control_api)
    if refusal is not None:
        print(f"mockstore record: {refusal}", file=sys.stderr)
        return 2
    keys: list[str] = []
    if args.keys_file:
        from mockstore.fidelity.aliases import read_keys_file

        try:
            keys = read_keys_file(args.keys_file)
        except ValueError as exc:
            print(f"mockstore record: {exc}", file=sys.stderr)
            return 2
    limits, limits_warning = limits_from(args)
    app = RecordApp(
        upstream,
        timeout=args.timeout,
        journal_size=args.journal_size,
        body_bytes=args.body_bytes,
        control_token=args.control_token,
        limits=limits,
        allowed_hosts=args.allowed_host,
        keys=keys,
    )
    try:
        sock = listen(args.host, args.port)
    except ServerError as exc:
        print(f"mockstore record: {exc}", file=sys.stderr)
        return 1
    bound = sock.getsockname()[1]
    host = shown_host(args.host)
    open_control = open_control_warning(args.host, bound, args.control_token, "set a token")
    warnings = [w for w in (open_control, limits_warning) if w]
    print(
        f"mockstore {__version__} recording http://{host}:{bound}{upstream.base_path} "
        f"-> {upstream.shown}\n"
        f"  control:  http://{host}:{bound}{CONTROL_PREFIX} "
        "(requests, requests.har, report; keys are journaled as aliases)\n"
        f"  out:      {args.out or '(none: fetch /__mockstore/requests.har)'}"
        + "".join(f"\n  warning:  {warning}" for warning in warnings),
        file=sys.stderr,
        flush=True,
    )
    try:
        code = run_until_stopped(app, sock, args.log_level)
    finally:
        if args.out:
            count = write_har(app, args.out)
            print(f"mockstore record: wrote {count} exchange(s) to {args.out}", file=sys.stderr)
    return code
