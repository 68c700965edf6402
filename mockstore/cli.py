"""The ``mockstore`` command: serve, validate, schema, scenarios, report, replay."""

from __future__ import annotations

import argparse
import contextlib
import ipaddress
import json
import logging
import os
import signal
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
  mockstore serve --scenario ./my-scenario.yaml --watch   # reload the file when it changes
  MOCKSTORE_SCENARIO=after-sunset mockstore serve --host 0.0.0.0
  mockstore validate scenarios/*.yaml              # exit 1 on any problem
  mockstore scenarios                              # the bundled scenarios
  mockstore schema > scenario.schema.json          # for editor autocompletion
  mockstore report --url http://127.0.0.1:8080 --format junit --fail-on warning
  mockstore replay session.har                     # against the scenario it carries
  mockstore record --upstream https://staging.example.com/v1 --port 8080 --out session.har
  mockstore calibrate --target https://staging.example.com/v1 --key "$KEY" --out staging.yaml
  mockstore drift session.har --scenario staging.yaml --format junit -o drift.xml
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


class PipeAwareHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """A stream handler that notices when nobody reads its output any more."""

    pipe_closed = False
    on_pipe_closed: Any = None

    def handleError(self, record: logging.LogRecord) -> None:
        if isinstance(sys.exc_info()[1], BrokenPipeError):
            if not self.pipe_closed:
                self.pipe_closed = True
                if self.on_pipe_closed is not None:
                    self.on_pipe_closed()
            return
        super().handleError(record)


def _log_handler() -> PipeAwareHandler:
    for handler in logging.getLogger("mockstore").handlers:
        if isinstance(handler, PipeAwareHandler):
            return handler
    return PipeAwareHandler(sys.stderr)


def configure_logging(level: str, fmt: str) -> None:
    handler = PipeAwareHandler(sys.stderr)
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


def _positive(kind: type, env: str | None = None) -> Any:
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


def _size(env: str) -> Any:
    """A size such as 256MiB or 1GiB, at least the smallest budget a server can run on."""
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


# Each command's exit statuses, shown by its --help. 141 is what a shell reports for
# a command killed by SIGPIPE (128 + 13): the reader of its output went away.
PIPE_CLOSED = 141
_PIPE = f"  {PIPE_CLOSED}  its output pipe closed early (e.g. `| head`); nothing more is written"
EXIT_CODES = {
    "mockstore": ["    0  the command succeeded", "    2  usage error (unknown command or option)"],
    "serve": [
        "    0  stopped by SIGTERM or Ctrl-C, after requests in flight finished",
        "    1  the scenario is not found or not valid, or the address cannot be had",
        "    2  usage error (a bad option or environment variable)",
        _PIPE,
    ],
    "validate": [
        "    0  every scenario is valid",
        "    1  a scenario is not found or not valid (every problem is printed)",
        "    2  usage error",
        _PIPE,
    ],
    "schema": ["    0  printed", "    2  usage error", _PIPE],
    "scenarios": ["    0  printed", "    2  usage error", _PIPE],
    "openapi": ["    0  printed", "    2  usage error", _PIPE],
    "report": [
        "    0  no finding at or above --fail-on",
        "    1  a finding at or above --fail-on exists",
        "    2  the report cannot be fetched (unreachable, refused, not mockstore), or usage error",
        _PIPE,
    ],
    "replay": [
        "    0  every response matches the recording",
        "    1  some responses differ (each difference is printed)",
        "    2  the HAR or the scenario cannot be read, or usage error",
        _PIPE,
    ],
    "record": [
        "    0  stopped by SIGTERM or Ctrl-C (the HAR is written to --out first)",
        "    1  the address cannot be had",
        "    2  a bad --upstream or an unwritable --out, or usage error",
        _PIPE,
    ],
    "drift": [
        "    0  no drift: every difference is ignored by a rule or accepted by the scenario",
        "    1  drift (each difference is listed with the request that shows it)",
        "    2  the HAR or the scenario cannot be read, or usage error",
        _PIPE,
    ],
    "calibrate": [
        "    0  the scenario is written (what could not be settled is listed)",
        "    1  the target could not be probed",
        "    2  a bad --target or --key, or usage error",
        _PIPE,
    ],
}


def _epilog(command: str, examples: str = "") -> str:
    text = "exit status:\n" + "\n".join(EXIT_CODES[command])
    return f"{examples}\n{text}" if examples else text


def _subcommand(sub: Any, name: str, summary: str, examples: str = "") -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        name,
        help=summary,
        description=summary,
        epilog=_epilog(name, examples),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    return parser


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mockstore",
        description="A high-fidelity mock server of the Pet Store service.",
        epilog=_epilog("mockstore", EXAMPLES),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"mockstore {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    serve = _subcommand(sub, "serve", "run the mock server", EXAMPLES)
    serve.add_argument(
        "--host",
        default=os.environ.get("MOCKSTORE_HOST", "127.0.0.1"),
        help="address to listen on (0.0.0.0 for every interface; env MOCKSTORE_HOST; "
        "default 127.0.0.1); beyond loopback without --control-token, start-up warns "
        "that the control API is open",
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
        metavar="NAME_OR_PATH",
        help="a bundled scenario name, a YAML file or YAML text (env MOCKSTORE_SCENARIO; "
        "a whole scenario inline: MOCKSTORE_SCENARIO_YAML; default: default)",
    )
    serve.add_argument(
        "--watch",
        action="store_true",
        help="reload the --scenario file when it changes; an invalid edit is reported "
        "with file:line:column and the running scenario stays",
    )
    serve.add_argument(
        "--control-token",
        default=os.environ.get("MOCKSTORE_CONTROL_TOKEN") or None,
        metavar="TOKEN",
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
    # The serving limits (README, Security): one option and one variable each.
    limits = Limits()
    for flag, kind, field, metavar, text in (
        ("--max-header-bytes", int, "max_header_bytes", "BYTES",
         "request line and headers together; more is answered 431"),
        ("--timeout-keep-alive", float, "keep_alive_timeout", "SECONDS",
         "close a connection with no request under way after this long"),
        ("--timeout-headers", float, "header_timeout", "SECONDS",
         "a request's line and headers must arrive within this long of its first byte; "
         "else 408"),
        ("--timeout-body", float, "body_timeout", "SECONDS",
         "a request's body must arrive within this long of its headers; else 408"),
        ("--max-connections", int, "max_connections", "N",
         "open connections; past it the one idle longest is closed, or 503"),
        ("--timeout-write", float, "write_timeout", "SECONDS",
         "a client that stops reading its answer is dropped after this long"),
    ):  # fmt: skip
        env = "MOCKSTORE_" + flag[2:].upper().replace("-", "_")
        default = getattr(limits, field)
        serve.add_argument(
            flag,
            type=_positive(kind, env),
            default=os.environ.get(env, str(default)),
            metavar=metavar,
            help=f"{text} (default {default:g}; env {env})",
        )
    serve.add_argument(
        "--memory-budget",
        type=_size("MOCKSTORE_MEMORY_BUDGET"),
        default=os.environ.get("MOCKSTORE_MEMORY_BUDGET", "256MiB"),
        metavar="SIZE",
        help="every byte held for callers (journals, stores, tenants, scenarios being built, "
        "bodies and answers in flight) draws on this one budget; past it, 507 memory_budget "
        "(default 256MiB, which fits a 512 MiB container; env MOCKSTORE_MEMORY_BUDGET)",
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

    validate = _subcommand(
        sub, "validate", "check scenarios; print every problem as file:line:column"
    )
    validate.add_argument(
        "files",
        nargs="+",
        metavar="SCENARIO",
        help="a YAML file, a bundled scenario name, or YAML text; several at once",
    )

    _subcommand(sub, "schema", "print the scenario JSON Schema")
    _subcommand(sub, "scenarios", "list the bundled scenarios")
    _subcommand(sub, "openapi", "print the OpenAPI document mockstore serves")

    report = _subcommand(sub, "report", "judge a client from a running server's journal")
    report.add_argument(
        "--url",
        required=True,
        help="the server: its root (http://127.0.0.1:8080), the API base the banner prints "
        "(.../v1) or a tenant's root",
    )
    report.add_argument(
        "--format",
        default="text",
        choices=["text", "json", "junit", "html"],
        help="text for a terminal, json as served, junit for CI test tabs, html one page "
        "with charts (default: text)",
    )
    report.add_argument(
        "--output", "-o", metavar="FILE", help="write to this file instead of stdout"
    )
    report.add_argument(
        "--fail-on",
        default="error",
        choices=["info", "warning", "error", "never"],
        help="exit 1 when a finding at or above this severity exists (default: error)",
    )
    report.add_argument(
        "--since",
        type=int,
        metavar="SEQ",
        help="judge only the requests after this journal sequence number (a reset's journal_seq)",
    )
    report.add_argument(
        "--control-token",
        default=os.environ.get("MOCKSTORE_CONTROL_TOKEN"),
        metavar="TOKEN",
        help="the server's control token, if it has one (env MOCKSTORE_CONTROL_TOKEN)",
    )

    replay = _subcommand(sub, "replay", "re-send a HAR recording to a fresh mock and diff")
    replay.add_argument(
        "har", metavar="FILE.har", help="a HAR file, as GET /__mockstore/requests.har exports it"
    )
    replay.add_argument(
        "--scenario",
        default=None,
        metavar="NAME_OR_PATH",
        help="replay against this scenario instead of the one the HAR carries "
        "(a bundled name, a YAML file or YAML text)",
    )

    record = _subcommand(
        sub, "record", "proxy a real deployment and journal every exchange (keys as aliases)"
    )
    record.add_argument(
        "--upstream",
        required=not os.environ.get("MOCKSTORE_UPSTREAM"),
        default=os.environ.get("MOCKSTORE_UPSTREAM"),
        help="the upstream's base address, ending in its version segment, "
        "e.g. https://staging.example.com/v1 (env MOCKSTORE_UPSTREAM)",
    )
    record.add_argument(
        "--host",
        default=os.environ.get("MOCKSTORE_HOST", "127.0.0.1"),
        help="address to listen on; clients call http://HOST:PORT/v1 (env MOCKSTORE_HOST)",
    )
    record.add_argument(
        "--port",
        type=_port,
        default=os.environ.get("MOCKSTORE_PORT", "8080"),
        help="TCP port (0 picks a free one; env MOCKSTORE_PORT)",
    )
    record.add_argument("--out", metavar="FILE.har", help="write the recording here on shutdown")
    record.add_argument(
        "--timeout",
        type=_positive(float),
        default=30.0,
        help="seconds to wait for the upstream (connect, each read); then 504 (default 30)",
    )
    record.add_argument(
        "--journal-size",
        type=_positive(int),
        default=10_000,
        help="exchanges the recording keeps, the oldest dropped first (default 10000)",
    )
    record.add_argument(
        "--body-bytes",
        type=_positive(int),
        default=32_768,
        help="bytes of each body the recording keeps (default 32768)",
    )
    record.add_argument(
        "--control-token",
        default=os.environ.get("MOCKSTORE_CONTROL_TOKEN"),
        help="require this bearer token on /__mockstore (env MOCKSTORE_CONTROL_TOKEN)",
    )
    record.add_argument(
        "--log-level",
        type=_one_of("MOCKSTORE_LOG_LEVEL", "debug", "info", "warning", "error"),
        default=os.environ.get("MOCKSTORE_LOG_LEVEL", "info"),
        metavar="{debug,info,warning,error}",
        help="info logs one line per exchange (env MOCKSTORE_LOG_LEVEL)",
    )
    record.add_argument(
        "--log-format",
        type=_one_of("MOCKSTORE_LOG_FORMAT", "text", "json"),
        default=os.environ.get("MOCKSTORE_LOG_FORMAT", "text"),
        metavar="{text,json}",
        help="text, or JSON lines for CI log search (env MOCKSTORE_LOG_FORMAT)",
    )

    drift = _subcommand(
        sub, "drift", "replay a recording against a scenario and report semantic differences"
    )
    drift.add_argument(
        "har", metavar="FILE.har", help="a recording (mockstore record --out, or any HAR)"
    )
    drift.add_argument("--scenario", required=True, help="bundled name or YAML file")
    drift.add_argument(
        "--format",
        default="text",
        choices=["text", "json", "junit"],
        help="text, JSON, or JUnit XML (one test per exchange) (default: text)",
    )
    drift.add_argument("--output", "-o", help="write to this file instead of stdout")

    calibrate = _subcommand(
        sub, "calibrate", "probe a real deployment and write a scenario that reproduces it"
    )
    calibrate.add_argument("--target", required=True, help="base address ending in /v1")
    calibrate.add_argument(
        "--key", action="append", required=True, help="an API key of the target (repeatable)"
    )
    calibrate.add_argument(
        "--allow-writes",
        action="store_true",
        help="create one pet and search for the largest accepted body",
    )
    calibrate.add_argument(
        "--allow-rate-limit",
        action="store_true",
        help="spend one key's minute allowance to observe a 429",
    )
    calibrate.add_argument(
        "--budget", type=_positive(int), default=40, help="most requests to send (default 40)"
    )
    calibrate.add_argument("--out", metavar="FILE.yaml", help="write the scenario here")
    calibrate.add_argument(
        "--timeout", type=_positive(float), default=10.0, help="seconds per probe (default 10)"
    )
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
        "record": _record,
        "drift": _drift,
        "calibrate": _calibrate,
    }[args.command]
    try:
        code = handler(args)
        sys.stdout.flush()
    except BrokenPipeError:
        return _pipe_closed()
    return code


def _pipe_closed() -> int:
    """The reader of our output went away: stop writing, quietly, as `cat | head` does."""
    # Python flushes stdout once more at exit; point it at /dev/null so that last
    # flush cannot raise again and print a traceback.
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            os.dup2(devnull, stream.fileno())
    os.close(devnull)
    return PIPE_CLOSED


def _load_for_serving(args: argparse.Namespace) -> Any:
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
    shown_host = f"[{host}]" if ":" in host else host
    return f"http://{shown_host}:{port}/__mockstore/ui"


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


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from mockstore.app import MockstoreApp
    from mockstore.server import ServerError, listen, tune_allocator, uvicorn_config

    tune_allocator()
    configure_logging(args.log_level, args.log_format)
    loaded = _load_for_serving(args)
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
    limits, limits_warning = Limits(
        max_header_bytes=args.max_header_bytes,
        keep_alive_timeout=args.timeout_keep_alive,
        header_timeout=args.timeout_headers,
        body_timeout=args.timeout_body,
        max_connections=args.max_connections,
        write_timeout=args.timeout_write,
        memory_budget=args.memory_budget,
    ).within_descriptors()
    from mockstore.memory import OverBudget

    try:
        app = MockstoreApp(
            scenario,
            control=not args.no_control,
            control_token=args.control_token,
            limits=limits,
            allowed_hosts=args.allowed_host,
        )
    except OverBudget as exc:
        print(f"mockstore: {exc}; not starting", file=sys.stderr)
        return 1
    if args.watch:
        from mockstore.watch import ScenarioWatcher

        app.run_in_background(ScenarioWatcher(app.runtime, source.path, display=source.file).run)
    try:
        sock = listen(args.host, args.port)
    except ServerError as exc:
        print(f"mockstore: {exc}", file=sys.stderr)
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
    server = uvicorn.Server(uvicorn_config(app, log_level=args.log_level))
    # Once nobody reads the log (`mockstore serve | head`), stop as every command does.
    _log_handler().on_pipe_closed = lambda: setattr(server, "should_exit", True)
    # uvicorn re-raises the signal that stopped it once it has shut down. With the
    # default handlers that turns a clean stop into death by SIGTERM (exit 143 in a
    # container, which CI runners report as a failure) and Ctrl-C into a
    # KeyboardInterrupt traceback; with this handler either ends in exit 0.
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _exit_cleanly)
    server.run(sockets=[sock])
    if _log_handler().pipe_closed:
        return _pipe_closed()
    return 0


def _exit_cleanly(signum: int, frame: object) -> None:
    raise SystemExit(0)


def _validate(args: argparse.Namespace) -> int:
    from mockstore.scenario import ScenarioError, ScenarioNotFound, resolve_scenario

    failed = 0
    for spec in args.files:
        try:
            source = resolve_scenario(spec)
            source.load()
        except ScenarioNotFound as exc:
            print(f"{spec}: {exc}", file=sys.stderr)
            failed += 1
            continue
        except ScenarioError as exc:
            failed += 1
            for problem in exc.problems:
                print(problem, file=sys.stderr)
            continue
        print(f"{source.file}: ok")
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


def _record(args: argparse.Namespace) -> int:
    from mockstore.record import run_record

    return run_record(args)


def _drift(args: argparse.Namespace) -> int:
    from mockstore.drift import run_drift

    return run_drift(args)


def _calibrate(args: argparse.Namespace) -> int:
    from mockstore.calibrate import run_calibrate

    return run_calibrate(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
