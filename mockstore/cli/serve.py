"""``mockstore serve``: run the mock server until SIGTERM or Ctrl-C."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from mockstore.cli.args import PIPE, USAGE, positive
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
    run_workers,
    shown_host,
)
from mockstore.version import __version__

NAME = "serve"
SUMMARY = "run the mock server"
EXAMPLES = """\
examples:
  mockstore serve                                  # bundled 'default' on 127.0.0.1:8080
  mockstore serve --port 9000 --scenario flaky-create
  mockstore serve --scenario ./my-scenario.yaml --control-token s3cret
  mockstore serve --scenario ./my-scenario.yaml --watch   # reload the file when it changes
  MOCKSTORE_SCENARIO=after-sunset mockstore serve --host 0.0.0.0 --control-token s3cret
  mockstore serve --state redis://127.0.0.1:6379/0 --workers 4   # four processes, one mock
  mockstore serve --scenario ./s.yaml --watch --state redis://127.0.0.1:6379/0 --workers 4
"""
EXIT_CODES = (
    "    0  stopped by SIGTERM or Ctrl-C, after requests in flight finished",
    "    1  the scenario is not found or not valid, the address cannot be had, or a worker "
    "kept dying (--workers: 10 restarts within 60 s)",
    f"{USAGE} (a bad option or environment variable, --workers without --state, a control "
    "API open beyond loopback without --control-token or --insecure-control-api)",
    "    3  the shared state (--state) cannot be reached",
    PIPE,
)
# The exit code when the shared state cannot be reached at start.
STATE_UNREACHABLE = 3

log = logging.getLogger("mockstore")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_address(
        parser,
        host_help="address to listen on (0.0.0.0 for every interface; env MOCKSTORE_HOST; "
        "default 127.0.0.1); beyond loopback, give --control-token, or say "
        "--insecure-control-api: an open control API is refused at start-up",
        port_help="TCP port (0 picks a free one; the address is printed; env MOCKSTORE_PORT)",
    )
    parser.add_argument(
        "--scenario",
        default=os.environ.get("MOCKSTORE_SCENARIO") or None,
        metavar="NAME_OR_PATH",
        help="a bundled scenario name, a YAML file or YAML text (env MOCKSTORE_SCENARIO; "
        "a whole scenario inline: MOCKSTORE_SCENARIO_YAML; default: default)",
    )
    parser.add_argument(
        "--watch",
        action="store_true",
        help="reload the --scenario file when it changes; an invalid edit is reported "
        "with file:line:column and the running scenario stays; with --state, each edit "
        "is put in service in every process (--workers: the first worker watches)",
    )
    add_control(parser)
    parser.add_argument("--no-control", action="store_true", help="turn the control API off (404)")
    parser.add_argument(
        "--state",
        default=os.environ.get("MOCKSTORE_STATE") or None,
        metavar="redis://HOST:PORT/DB",
        help="keep the mock's state (limits, bans, pets, keys, clock, scenario) in this Redis, "
        "shared by every process given the same: replicas and --workers behave as one mock "
        "(needs mockstore[redis]; env MOCKSTORE_STATE)",
    )
    parser.add_argument(
        "--workers",
        type=positive(int, "MOCKSTORE_WORKERS"),
        default=os.environ.get("MOCKSTORE_WORKERS", "1"),
        metavar="N",
        help="serve with N processes on one port; needs --state (env MOCKSTORE_WORKERS)",
    )
    add_limits(parser)
    add_logging(parser, "info logs one line per request; warning keeps only problems")


def run(args: argparse.Namespace) -> int:
    from mockstore.app import MockstoreApp
    from mockstore.server import ServerError, listen

    configure_logging(args.log_level, args.log_format)
    loaded = _load(args)
    if loaded is None:
        return 1
    source, scenario = loaded
    if args.watch and source.path is None:
        print(
            f"mockstore: --watch needs a scenario file, and {source.file} is not one "
            "(a bundled name or inline text cannot change)",
            file=sys.stderr,
        )
        return 2
    problem = _state_problem(args)
    if problem is None and not args.no_control:
        problem = open_control_refusal(args.host, args.control_token, args.insecure_control_api)
    if problem is not None:
        print(f"mockstore: {problem}", file=sys.stderr)
        return 2
    limits, limits_warning = limits_from(args)
    from mockstore.memory import OverBudget

    try:
        app = MockstoreApp(
            scenario,
            control=not args.no_control,
            control_token=args.control_token,
            limits=limits,
            allowed_hosts=args.allowed_host,
            state=args.state,
        )
    except OverBudget as exc:
        print(f"mockstore: {exc}; not starting", file=sys.stderr)
        return 1
    if app.runtime.shared is not None:
        from mockstore.shared import StateUnavailable, open_state

        try:
            open_state(app.runtime.shared)
        except StateUnavailable as exc:
            print(f"mockstore: {exc}; not starting", file=sys.stderr)
            return STATE_UNREACHABLE
    watcher = None
    if args.watch:
        from mockstore.watch import ScenarioWatcher

        # With a shared state, an edit is put in service in every process.
        watcher = ScenarioWatcher(app.runtime, source.path, display=source.file).run
    try:
        sock = listen(args.host, args.port)
    except ServerError as exc:
        print(f"mockstore: {exc}", file=sys.stderr)
        return 1
    port = sock.getsockname()[1]
    # What the operator should know before trusting this server on a network.
    open_control = open_control_warning(args.host, port, args.control_token)
    warnings = [w for w in (open_control if app.control else None, limits_warning) if w]
    if args.log_format == "json":
        print(json.dumps(started_record(app, args.host, port, warnings)), file=sys.stderr)
        for warning in warnings:
            log.warning(warning)
        sys.stderr.flush()
    else:
        print(banner(app, args.host, port, warnings), file=sys.stderr, flush=True)
    if args.workers > 1:
        # One watcher, in the first worker: each edit is read, logged and put in
        # service once (every worker takes it from the shared state), not N times.
        return run_workers(app, sock, args.log_level, args.workers, first_only=watcher)
    if watcher is not None:
        app.run_in_background(watcher)
    return run_until_stopped(app, sock, args.log_level)


def _state_problem(args: argparse.Namespace) -> str | None:
    """Why --state and --workers cannot be used as given (a sentence), or None."""
    if args.workers > 1 and not args.state:
        return (
            f"--workers {args.workers} needs --state redis://HOST:PORT/DB: without a shared "
            "state each process would keep its own limits, bans and pets, and behave as "
            f"{args.workers} different mocks behind one port"
        )
    if args.state is None:
        return None
    if not args.state.startswith(("redis://", "rediss://", "unix://")):
        return f"--state must be a Redis URL (redis://HOST:PORT/DB), not {args.state!r}"
    try:
        import redis  # noqa: F401
    except ImportError:
        return "--state needs the redis client: pip install 'mockstore[redis]'"
    return None


def _load(args: argparse.Namespace) -> Any:
    """(source, scenario) from --scenario or MOCKSTORE_SCENARIO_YAML; None, said why, if neither."""
    from mockstore.scenario import ScenarioError, ScenarioNotFound, resolve_scenario

    inline = os.environ.get("MOCKSTORE_SCENARIO_YAML")
    try:
        if inline and not args.scenario:
            source = resolve_scenario(inline, label="MOCKSTORE_SCENARIO_YAML")
        else:
            source = resolve_scenario(args.scenario or "default")
        return source, source.load()
    except ScenarioNotFound as exc:
        print(f"mockstore: {exc}; not starting", file=sys.stderr)
    except ScenarioError as exc:
        print("mockstore: the scenario is not valid; not starting:", file=sys.stderr)
        for problem in exc.problems:
            print(f"  {problem}", file=sys.stderr)
    return None


def _control_state(app: Any) -> str:
    if app.control is None:
        return "off"
    return "on, token required" if app.control.token else "on, no token (test networks only)"


def _dashboard_url(host: str, port: int) -> str:
    return f"http://{shown_host(host)}:{port}/__mockstore/ui"


def banner(app: Any, host: str, port: int, warnings: Sequence[str] = ()) -> str:
    """The start-up block: the address, the scenario, the clock, the control API, the keys."""
    scenario = app.runtime.scenario
    state = app.runtime.state
    lines = [
        f"mockstore {__version__} serving http://{shown_host(host)}:{port}{scenario.base_path}",
        f"  scenario: {scenario.name} ({scenario.file})",
    ]
    if scenario.description:
        lines.append(f"  about:    {scenario.description}")
    clock = state.clock
    start = datetime.fromtimestamp(clock.start, UTC).isoformat().replace("+00:00", "Z")
    lines.append(f"  clock:    {clock.mode}, starting {start}")
    shared = app.runtime.shared
    if shared is not None:
        lines.append(f"  state:    {shared.url} (shared by every process given it)")
    control = _control_state(app)
    lines.append(f"  control:  http://{shown_host(host)}:{port}/__mockstore ({control})")
    if app.control is not None:
        lines.append(f"  dashboard: {_dashboard_url(host, port)}")
    lines.extend(f"  warning:  {warning}" for warning in warnings)
    lines.append("  keys:")
    for key in state.keys:
        plan = state.plans[key.plan]
        lines.append(
            f"    {key.key:<24} plan {key.plan:<12} {plan.per_minute}/min {plan.per_day}/day"
        )
    if not len(state.keys):
        lines.append("    (none: issue one with POST /__mockstore/keys)")
    return "\n".join(lines)


def started_record(app: Any, host: str, port: int, warnings: Sequence[str] = ()) -> dict[str, Any]:
    """The start-up block as one JSON line, so a JSON-lines log parses from its first line."""
    scenario = app.runtime.scenario
    state = app.runtime.state
    first_line = banner(app, host, port).splitlines()[0]
    return {
        "time": datetime.now(UTC).isoformat(timespec="milliseconds"),
        "level": "info",
        "logger": "mockstore",
        "message": first_line,
        "scenario": scenario.name,
        "file": scenario.file,
        "address": first_line.split("serving ", 1)[1],
        "control": _control_state(app),
        "dashboard": _dashboard_url(host, port) if app.control is not None else None,
        "clock": {"mode": state.clock.mode, "start": state.clock.start},
        "keys": [
            {
                "key": key.key,
                "plan": key.plan,
                "per_minute": state.plans[key.plan].per_minute,
                "per_day": state.plans[key.plan].per_day,
            }
            for key in state.keys
        ],
        "warnings": list(warnings),
    }
