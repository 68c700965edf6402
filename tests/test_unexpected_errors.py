"""An unexpected exception is logged with its traceback and answered with an Error body.

mockstore has no known way to fail, so these tests break it on purpose: a real
``mockstore serve`` process is started by a launcher that first replaces one
operation (or one control endpoint) with one that raises, then runs the CLI as
usual. Both log formats must show the traceback; the API's answer must still
carry the rate-limit headers and an ``X-Request-Id``, and be journaled.
"""

from __future__ import annotations

import json
import sys
import time

import httpx
import pytest

from tests.support import PATIENT, LiveServer, assert_conforms, auth, live_server

BREAK = """\
import sys
from mockstore import service
from mockstore.cli.main import main
from mockstore.control import state


def broken(*args, **kwargs):
    raise RuntimeError("deliberately broken for the test")


service.PetStoreService.list_orders = broken
state.StateEndpoints.pets = broken
sys.exit(main(sys.argv[1:]))
"""
LAUNCHER = [sys.executable, "-c", BREAK]


def _wait_for_log(server: LiveServer, needle: str) -> str:
    deadline = time.monotonic() + PATIENT  # a deadline, not a count of tries: load varies
    while time.monotonic() < deadline:
        if needle in server.log():
            return server.log()
        time.sleep(0.025)
    raise AssertionError(f"{needle!r} never logged:\n{server.log()}")


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_an_api_exception_is_an_error_with_rate_limit_headers_and_a_logged_traceback(
    fmt: str,
) -> None:
    with live_server("--log-format", fmt, launcher=LAUNCHER) as server:
        response = httpx.get(server.api + "/store/orders", headers=auth("pro"), timeout=30)
        assert response.status_code == 500, response.text
        body = assert_conforms(response)  # an Error, with the three X-RateLimit headers
        assert body["code"] == "internal_error"
        assert "x-request-id" in response.headers
        assert "deliberately broken" not in body["message"], "internals stay in the log"
        journal = httpx.get(server.url + "/__mockstore/requests", timeout=30).json()
        (entry,) = journal["entries"]
        assert entry["response"]["status"] == 500
        assert entry["request_id"] == response.headers["x-request-id"]
        log = _wait_for_log(server, "deliberately broken for the test")
        # The server keeps serving.
        assert httpx.get(server.api + "/pets", headers=auth("pro")).status_code == 200
    assert "Traceback (most recent call last)" in log
    assert "list_orders" in log or "broken" in log
    if fmt == "json":
        records = [json.loads(line) for line in server.output if line.startswith("{")]
        (failure,) = [r for r in records if "deliberately broken" in json.dumps(r)]
        assert "Traceback (most recent call last)" in failure["traceback"]
        assert failure["request_id"] == response.headers["x-request-id"]


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_a_control_api_exception_logs_its_traceback(fmt: str) -> None:
    with live_server("--log-format", fmt, launcher=LAUNCHER) as server:
        response = httpx.get(server.url + "/__mockstore/pets", timeout=30)
        assert response.status_code == 500
        assert response.json()["code"] == "internal_error"
        log = _wait_for_log(server, "deliberately broken for the test")
    assert "Traceback (most recent call last)" in log
