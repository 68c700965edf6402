"""Where a server command's logs go and how they read: text lines or JSON lines, on stderr.

Both formats are safe to read line by line: nothing a client sends can start a
line or pass for a field (see ``TextFormatter``). ``PipeAwareHandler`` notices
when nobody reads the log any more (``mockstore serve | head``), so the command
can stop as every other command does.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any


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


def log_handler() -> PipeAwareHandler:
    """The handler ``configure_logging`` installed (a fresh one if it has not run)."""
    for handler in logging.getLogger("mockstore").handlers:
        if isinstance(handler, PipeAwareHandler):
            return handler
    return PipeAwareHandler(sys.stderr)


def configure_logging(level: str, fmt: str) -> None:
    """mockstore's and uvicorn's records to stderr, as ``text`` or ``json`` lines."""
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
