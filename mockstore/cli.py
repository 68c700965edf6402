"""The ``mockstore`` command: serve, validate, schema, scenarios, report, replay."""

from __future__ import annotations

import argparse
import errno
import ipaddress
import json
import logging
import os
import signal
import socket
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from mockstore import __version__
from mockstore.limits import Limits

EXAMPLES = """\
examples:
  mockstore serve                                  # bundled 'default' on 127.0.0.1:8080
  mockstore serve --port 9000 --scenario flaky-create
  mockstore serve --scenario ./my-scenario.yaml --control-token s3cret
  MOCKSTORE_SCENARIO=after-sunset mockstore serve --host 0.0.0.0
  mockstore validate scenarios/*.yaml              # exit 1 on any problem
  mockstore scenarios                              # the bundled scenarios
  mockstore schema > scenario.schema.json          # for editor autocompletion
  mockstore report --url http://127.0.0.1:8080 --format junit --fail-on warning
  mockstore replay session.har --scenario default
"""

log = logging.getLogger("mockstore")


class JsonFormatter(logging.Formatter):
    """One JSON object per line, for CI log search; a traceback goes in ``traceback``."""

    FIELDS = (
        "method",
        "path",
        "status",
        "plan",
        "latency_ms",
        "rule",
        "operation",
        "request_id",
        "outcome",
    )

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
        }
        if record.name == "mockstore.access":
            for name in self.FIELDS:
                data[name] = getattr(record, name, None)
        else:
            data["message"] = record.getMessage()
            # A problem about one request names it, with the access line's fields.
            data.update((n, getattr(record, n)) for n in self.FIELDS if hasattr(record, n))
        if record.exc_info:
            data["traceback"] = self.formatException(record.exc_info)
        return json.dumps(data)


# Text logs are read line by line, so nothing a client sends may start a line
# or pass for a field: control characters (C0, DEL, C1) and the Unicode line
# separators are written as escapes. In the space-separated fields of an access
# line, a space and a backslash are escaped too, so every field is one token
# and the escaping can be read back.
_CONTROLS = {c: f"\\x{c:02x}" for c in (*range(0x20), *range(0x7F, 0xA0))}
_CONTROLS.update({0x2028: "\\u2028", 0x2029: "\\u2029"})
_FIELD = {**_CONTROLS, ord(" "): "\\x20", ord("\\"): "\\\\"}


def escape_text(text: str) -> str:
    """Free text on one line: control characters as escapes."""
    return text.translate(_CONTROLS)


def escape_field(value: object) -> str:
    """One field of an access line: a single token, control characters and spaces escaped."""
    return str(value).translate(_FIELD)


class TextFormatter(logging.Formatter):
    """One line per record; a traceback follows on lines of its own, each indented.

    The indentation is what makes a traceback unforgeable: an exception message
    may hold a line break a client sent, but every line after a record's first
    starts with spaces, and no record does.
    """

    def format(self, record: logging.LogRecord) -> str:
        stamp = datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")
        if record.name == "mockstore.access":
            r: Any = record
            rule = escape_field(r.rule) if r.rule else "-"
            # A connection fault or an aborted request has no status worth the
            # name: say which it was.
            fault = ""
            if r.outcome != "response":
                label = "outcome" if r.outcome == "aborted" else "fault"
                fault = f" {label}={escape_field(r.outcome)}"
            line = (
                f"{stamp} {escape_field(r.method)} {escape_field(r.path)} {r.status} "
                f"plan={escape_field(r.plan)} latency={r.latency_ms}ms rule={rule} "
                f"id={escape_field(r.request_id)}{fault}"
            )
        else:
            line = f"{stamp} {record.levelname.lower()} {escape_text(record.getMessage())}"
        if record.exc_info:
            trace = self.formatException(record.exc_info)
            line += "".join(f"\n    {escape_text(part)}" for part in trace.splitlines())
        return line


def configure_logging(level: str, fmt: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root = logging.getLogger("mockstore")
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    root.propagate = False
    uvicorn_logger = logging.getLogger("uvicorn")
    uvicorn_logger.handlers[:] = [handler]
    uvicorn_logger.setLevel(max(logging.WARNING, logging.getLevelName(level.upper())))
    uvicorn_logger.propagate = False


def _port(text: str) -> int:
    """A TCP port from --port or MOCKSTORE_PORT (argparse also runs string defaults through it)."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not a port number: {text!r} (from --port or MOCKSTORE_PORT)"
        ) from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(
            f"{port} is not a TCP port: use 1-65535, or 0 to pick a free one"
        )
    return port


def _positive(kind: type, env: str) -> Any:
    """A number above zero, from a flag or from ``env`` (argparse also checks string defaults)."""

    def check(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"not a number: {text!r} (from the flag or {env})"
            ) from None
        if not value > 0 or value != value or value == float("inf"):
            raise argparse.ArgumentTypeError(f"must be above 0, got {text} (flag or {env})")
        return value

    check.__name__ = env
    return check


def _env_list(env: str) -> list[str]:
    return [name.strip() for name in os.environ.get(env, "").split(",") if name.strip()]


def _one_of(env: str, *allowed: str) -> Any:
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


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mockstore",
        description="A high-fidelity mock server of the Pet Store service.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"mockstore {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    serve = sub.add_parser(
        "serve",
        help="run the mock server",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    serve.add_argument(
        "--host",
        default=os.environ.get("MOCKSTORE_HOST", "127.0.0.1"),
        help="address to listen on (env MOCKSTORE_HOST); beyond loopback without "
        "--control-token, start-up warns that the control API is open",
    )
    serve.add_argument(
        "--port",
        type=_port,
        default=os.environ.get("MOCKSTORE_PORT", "8080"),
        help="TCP port (0 picks a free one; the address is printed; env MOCKSTORE_PORT)",
    )
    serve.add_argument(
        "--scenario",
        default=os.environ.get("MOCKSTORE_SCENARIO") or None,
        help="bundled scenario name or YAML file (env MOCKSTORE_SCENARIO; default: default)",
    )
    serve.add_argument(
        "--control-token",
        default=os.environ.get("MOCKSTORE_CONTROL_TOKEN") or None,
        help="require this bearer token on /__mockstore (env MOCKSTORE_CONTROL_TOKEN)",
    )
    serve.add_argument("--no-control", action="store_true", help="turn the control API off (404)")
    serve.add_argument(
        "--allowed-host",
        action="append",
        default=_env_list("MOCKSTORE_ALLOWED_HOSTS"),
        metavar="NAME",
        help="a host name the control API answers to, besides loopback names and IP "
        "addresses (repeatable; '*' for any; env MOCKSTORE_ALLOWED_HOSTS, comma-separated)",
    )
    limits = Limits()
    serve.add_argument(
        "--max-header-bytes",
        type=_positive(int, "MOCKSTORE_MAX_HEADER_BYTES"),
        default=os.environ.get("MOCKSTORE_MAX_HEADER_BYTES", str(limits.max_header_bytes)),
        metavar="BYTES",
        help="request line and headers together; more is answered 431 "
        f"(default {limits.max_header_bytes}; env MOCKSTORE_MAX_HEADER_BYTES)",
    )
    serve.add_argument(
        "--timeout-keep-alive",
        type=_positive(float, "MOCKSTORE_TIMEOUT_KEEP_ALIVE"),
        default=os.environ.get("MOCKSTORE_TIMEOUT_KEEP_ALIVE", str(limits.keep_alive_timeout)),
        metavar="SECONDS",
        help="close a connection with no request under way after this long "
        f"(default {limits.keep_alive_timeout:g}; env MOCKSTORE_TIMEOUT_KEEP_ALIVE)",
    )
    serve.add_argument(
        "--timeout-headers",
        type=_positive(float, "MOCKSTORE_TIMEOUT_HEADERS"),
        default=os.environ.get("MOCKSTORE_TIMEOUT_HEADERS", str(limits.header_timeout)),
        metavar="SECONDS",
        help="a request's line and headers must arrive within this long of its first byte; "
        f"else 408 (default {limits.header_timeout:g}; env MOCKSTORE_TIMEOUT_HEADERS)",
    )
    serve.add_argument(
        "--timeout-body",
        type=_positive(float, "MOCKSTORE_TIMEOUT_BODY"),
        default=os.environ.get("MOCKSTORE_TIMEOUT_BODY", str(limits.body_timeout)),
        metavar="SECONDS",
        help="a request's body must arrive within this long of its headers; else 408 "
        f"(default {limits.body_timeout:g}; env MOCKSTORE_TIMEOUT_BODY)",
    )
    serve.add_argument(
        "--max-connections",
        type=_positive(int, "MOCKSTORE_MAX_CONNECTIONS"),
        default=os.environ.get("MOCKSTORE_MAX_CONNECTIONS", str(limits.max_connections)),
        metavar="N",
        help="open connections; past it the one idle longest is closed, or 503 "
        f"(default {limits.max_connections}; env MOCKSTORE_MAX_CONNECTIONS)",
    )
    serve.add_argument(
        "--log-level",
        type=_one_of("MOCKSTORE_LOG_LEVEL", "debug", "info", "warning", "error"),
        default=os.environ.get("MOCKSTORE_LOG_LEVEL", "info"),
        metavar="{debug,info,warning,error}",
        help="info logs one line per request; warning keeps only problems "
        "(env MOCKSTORE_LOG_LEVEL)",
    )
    serve.add_argument(
        "--log-format",
        type=_one_of("MOCKSTORE_LOG_FORMAT", "text", "json"),
        default=os.environ.get("MOCKSTORE_LOG_FORMAT", "text"),
        metavar="{text,json}",
        help="text, or JSON lines for CI log search (env MOCKSTORE_LOG_FORMAT)",
    )

    validate = sub.add_parser("validate", help="check scenario files; exit 1 on any problem")
    validate.add_argument("files", nargs="+", metavar="FILE")

    sub.add_parser("schema", help="print the scenario JSON Schema")
    sub.add_parser("scenarios", help="list the bundled scenarios")
    sub.add_parser("openapi", help="print the OpenAPI document mockstore serves")

    report = sub.add_parser("report", help="judge a client from a running server's journal")
    report.add_argument("--url", required=True, help="the mock's base URL")
    report.add_argument("--format", default="text", choices=["text", "json", "junit", "html"])
    report.add_argument("--output", "-o", help="write to this file instead of stdout")
    report.add_argument(
        "--fail-on",
        default="error",
        choices=["info", "warning", "error", "never"],
        help="exit 1 when a finding at or above this severity exists",
    )
    report.add_argument("--control-token", default=os.environ.get("MOCKSTORE_CONTROL_TOKEN"))

    replay = sub.add_parser("replay", help="re-send a HAR recording to a fresh mock and diff")
    replay.add_argument("har", metavar="FILE.har")
    replay.add_argument("--scenario", default="default")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    handler = {
        "serve": _serve,
        "validate": _validate,
        "schema": _schema,
        "scenarios": _scenarios,
        "openapi": _openapi,
        "report": _report,
        "replay": _replay,
    }[args.command]
    return handler(args)


def _load_for_serving(args: argparse.Namespace) -> Any:
    from mockstore.scenario import ScenarioError, load_scenario, load_scenario_file

    inline = os.environ.get("MOCKSTORE_SCENARIO_YAML")
    try:
        if inline and not args.scenario:
            return load_scenario(inline, "MOCKSTORE_SCENARIO_YAML")
        return load_scenario_file(args.scenario or "default")
    except ScenarioError as exc:
        print("mockstore: the scenario is not valid; not starting:", file=sys.stderr)
        for problem in exc.problems:
            print(f"  {problem}", file=sys.stderr)
        return None


def _bind(host: str, port: int) -> socket.socket | str:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            return (
                f"port {port} on {host} is already in use; "
                f"stop what holds it or pick another with --port (0 picks a free one)"
            )
        return f"cannot listen on {host}:{port}: {exc.strerror}"
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def _control_state(app: Any) -> str:
    if app.control is None:
        return "off"
    return "on, token required" if app.control.token else "on, no token (test networks only)"


def _is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _warnings(
    args: argparse.Namespace, app: Any, port: int, limits_warning: str | None
) -> list[str]:
    """What the operator should know before trusting this server on a network."""
    warnings = []
    if app.control is not None and not app.control.token and not _is_loopback(args.host):
        warnings.append(
            f"the control API is open to anyone who can reach {args.host}:{port}: without "
            "--control-token (MOCKSTORE_CONTROL_TOKEN) they can reset the mock, issue keys, "
            "move its clock and read every recorded request; set a token, or --no-control"
        )
    if limits_warning:
        warnings.append(limits_warning)
    return warnings


def _banner(app: Any, host: str, port: int, warnings: Sequence[str] = ()) -> str:
    scenario = app.runtime.scenario
    state = app.runtime.state
    shown_host = f"[{host}]" if ":" in host else host
    lines = [
        f"mockstore {__version__} serving http://{shown_host}:{port}{scenario.base_path}",
        f"  scenario: {scenario.name} ({scenario.file})",
    ]
    if scenario.description:
        lines.append(f"  about:    {scenario.description}")
    clock = state.clock
    start = datetime.fromtimestamp(clock.start, UTC).isoformat().replace("+00:00", "Z")
    lines.append(f"  clock:    {clock.mode}, starting {start}")
    control = _control_state(app)
    lines.append(f"  control:  http://{shown_host}:{port}/__mockstore ({control})")
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


def _started_record(app: Any, host: str, port: int, warnings: Sequence[str] = ()) -> dict[str, Any]:
    """The start-up block as one JSON line, so a JSON-lines log parses from its first line."""
    scenario = app.runtime.scenario
    state = app.runtime.state
    first_line = _banner(app, host, port).splitlines()[0]
    return {
        "time": datetime.now(UTC).isoformat(timespec="milliseconds"),
        "level": "info",
        "logger": "mockstore",
        "message": first_line,
        "scenario": scenario.name,
        "file": scenario.file,
        "address": first_line.split("serving ", 1)[1],
        "control": _control_state(app),
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


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from mockstore.app import MockstoreApp
    from mockstore.protocol import protocol_class

    configure_logging(args.log_level, args.log_format)
    scenario = _load_for_serving(args)
    if scenario is None:
        return 1
    limits, limits_warning = Limits(
        max_header_bytes=args.max_header_bytes,
        keep_alive_timeout=args.timeout_keep_alive,
        header_timeout=args.timeout_headers,
        body_timeout=args.timeout_body,
        max_connections=args.max_connections,
    ).within_descriptors()
    app = MockstoreApp(
        scenario,
        control=not args.no_control,
        control_token=args.control_token,
        limits=limits,
        allowed_hosts=args.allowed_host,
    )
    sock = _bind(args.host, args.port)
    if isinstance(sock, str):
        print(f"mockstore: {sock}", file=sys.stderr)
        return 1
    port = sock.getsockname()[1]
    warnings = _warnings(args, app, port, limits_warning)
    if args.log_format == "json":
        print(json.dumps(_started_record(app, args.host, port, warnings)), file=sys.stderr)
        for warning in warnings:
            log.warning(warning)
        sys.stderr.flush()
    else:
        print(_banner(app, args.host, port, warnings), file=sys.stderr, flush=True)
    config = uvicorn.Config(
        app,
        loop="auto",
        # httptools, with mockstore's limits on heads, bodies, time and connections.
        http=protocol_class(limits),
        lifespan="off",
        access_log=False,
        server_header=False,
        date_header=False,
        log_config=None,
        log_level=args.log_level,
        timeout_graceful_shutdown=1,
        timeout_keep_alive=limits.keep_alive_timeout,  # type: ignore[arg-type]
    )
    server = uvicorn.Server(config)
    # uvicorn re-raises the signal that stopped it once it has shut down. With the
    # default handlers that turns a clean stop into death by SIGTERM (exit 143 in a
    # container, which CI runners report as a failure) and Ctrl-C into a
    # KeyboardInterrupt traceback; with this handler either ends in exit 0.
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _exit_cleanly)
    server.run(sockets=[sock])
    return 0


def _exit_cleanly(signum: int, frame: object) -> None:
    raise SystemExit(0)


def _validate(args: argparse.Namespace) -> int:
    from mockstore.scenario import ScenarioError, load_scenario

    failed = 0
    for path in args.files:
        try:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
        except OSError as exc:
            print(f"{path}:1:1: $: cannot read: {exc.strerror}", file=sys.stderr)
            failed += 1
            continue
        try:
            load_scenario(text, path)
        except ScenarioError as exc:
            failed += 1
            for problem in exc.problems:
                print(problem, file=sys.stderr)
            continue
        print(f"{path}: ok")
    return 1 if failed else 0


def _schema(args: argparse.Namespace) -> int:
    from mockstore.scenario import scenario_schema

    print(json.dumps(scenario_schema(), indent=2))
    return 0


def _openapi(args: argparse.Namespace) -> int:
    from mockstore.schemas import openapi_json

    print(openapi_json().decode())
    return 0


def _scenarios(args: argparse.Namespace) -> int:
    from mockstore.scenario import bundled_names, read_scenario_source
    from mockstore.scenario.loader import parse_yaml

    for name in bundled_names():
        text, file = read_scenario_source(name)
        data, _ = parse_yaml(text, file)
        print(f"{name:<24} {data.get('description', '').strip()}")
    return 0


def _report(args: argparse.Namespace) -> int:
    from mockstore.report_command import run_report

    return run_report(args)


def _replay(args: argparse.Namespace) -> int:
    from mockstore.replay import run_replay

    return run_replay(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
