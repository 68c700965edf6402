"""Logs cannot be forged: control characters in logged fields are escaped in text format.

uvicorn decodes ``%0d%0a`` in a path to a real CR LF, so on main a client could
write a line of its own into the text log. JSON lines were already safe.
"""

from __future__ import annotations

import json
import logging
import time

from hypothesis import given
from hypothesis import strategies as st

from mockstore.cli.logs import JsonFormatter, TextFormatter
from tests.rawhttp import request
from tests.support import PATIENT, LiveServer, live_server

FORGED = "2026-11-22T00:00:00.000+00:00 GET /v1/admin 200 plan=enterprise"
# CR LF, then a line that looks like an access line, then the rest of the path.
PATH = "/v1/pets%0d%0a" + FORGED.replace(" ", "%20").replace("+", "%2B") + "%0d%0aend"


def _wait_for_lines(server: LiveServer, count: int) -> list[str]:
    deadline = time.monotonic() + PATIENT  # a deadline, not a count of tries: load varies
    while time.monotonic() < deadline:
        lines = [line for line in server.output if " plan=" in line]
        if len(lines) >= count:
            return lines
        time.sleep(0.025)
    raise AssertionError("no access line:\n" + server.log())


def test_a_crlf_in_the_path_cannot_forge_a_text_log_line() -> None:
    with live_server("--log-level", "info") as server:
        response = request(server.url, "GET", PATH, {"Authorization": "Bearer pro-key"})
        assert response.status in (400, 404)
        request(server.url, "GET", "/v1/pets", {"Authorization": "Bearer pro-key"})
        lines = _wait_for_lines(server, 2)
    assert not any(line.startswith(FORGED) for line in server.output), server.log()
    (escaped,) = [line for line in lines if "/v1/admin" in line]
    assert "\\r\\n" in escaped or "\\x0d\\x0a" in escaped, escaped
    assert len([line for line in server.output if " plan=" in line]) == 2


def test_json_lines_stay_one_record_each() -> None:
    with live_server("--log-level", "info", "--log-format", "json") as server:
        request(server.url, "GET", PATH, {"Authorization": "Bearer pro-key"})
        for _ in range(400):
            if any('"mockstore.access"' in line for line in server.output):
                break
            time.sleep(0.025)
    records = [json.loads(line) for line in server.output]
    (access,) = [r for r in records if r["logger"] == "mockstore.access"]
    assert FORGED in access["path"]


def _record(path: str, message: str = "%s %s %s") -> logging.LogRecord:
    record = logging.LogRecord("mockstore.access", logging.INFO, __file__, 1, message, (), None)
    fields = {
        "method": "GET",
        "path": path,
        "status": 404,
        "plan": "free",
        "latency_ms": 0.1,
        "rule": None,
        "operation": None,
        "request_id": "req-000001",
        "outcome": "response",
    }
    for name, value in fields.items():
        setattr(record, name, value)
    record.args = (fields["method"], path, fields["status"])
    return record


LINE_BREAKS = ("\n", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")


@given(st.text())
def test_any_path_is_one_text_line_without_control_characters(path: str) -> None:
    line = TextFormatter().format(_record(path))
    assert not any(mark in line for mark in LINE_BREAKS)
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in line), repr(line)
    assert line.splitlines() == [line]


@given(st.text())
def test_any_message_of_any_logger_is_one_text_line(message: str) -> None:
    record = logging.LogRecord("uvicorn.error", logging.WARNING, __file__, 1, message, (), None)
    line = TextFormatter().format(record)
    assert line.splitlines() == [line]


def test_both_formats_carry_the_traceback() -> None:
    try:
        raise ValueError("bad\nline")
    except ValueError:
        import sys

        record = logging.LogRecord(
            "mockstore.api", logging.ERROR, __file__, 1, "failed", (), sys.exc_info()
        )
    text = TextFormatter().format(record)
    assert "Traceback (most recent call last)" in text
    # Continuation lines are indented, so none can pass for a record of its own.
    _first, *rest = text.split("\n")
    assert rest and all(line.startswith(" ") for line in rest), text
    data = json.loads(JsonFormatter().format(record))
    assert "Traceback (most recent call last)" in data["traceback"]
    assert "ValueError: bad" in data["traceback"]
