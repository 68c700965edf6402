"""What the server prints: a start-up block, then one line per API request (text or JSON)."""

from __future__ import annotations

import json
import re
import signal
import time
from collections.abc import Callable
from datetime import datetime

import httpx
import pytest

from tests.support import LiveServer, assert_conforms, live_server

# A scenario in which each kind of request leaves a different trace in the log.
TRACED = """\
version: 1
name: traced
keys:
  - {key: pro-key, plan: pro}
  - {key: tiny-key, plan: {per_minute: 1, per_day: 10}}
pets:
  - {id: 1, name: Rex, categoryId: 1, status: available}
faults:
  - name: first-create-fails
    match: {operation: createPet, calls: [1]}
    respond: {status: 503, body: {code: unavailable, message: later, status: 503}}
  - name: slow-get
    match: {operation: getPet}
    delay: {fixed_ms: 60}
routes:
  - operation: listOrders
    respond: {status: 200, body: []}
"""

PRO = {"Authorization": "Bearer pro-key"}
TINY = {"Authorization": "Bearer tiny-key"}

# (method, path, headers, json body, expected status, expected plan, expected rule)
REQUESTS: list[tuple[str, str, dict[str, str], dict | None, int, str, str | None]] = [
    ("POST", "/v1/pets", PRO, {"name": "Nova", "categoryId": 2}, 503, "pro", "first-create-fails"),
    ("POST", "/v1/pets", PRO, {"name": "Nova", "categoryId": 2}, 201, "pro", None),
    ("GET", "/v1/pets/1", PRO, None, 200, "pro", "slow-get"),
    ("GET", "/v1/store/orders", PRO, None, 200, "pro", "routes[0]"),
    ("GET", "/v1/pets", {}, None, 401, "anonymous", None),
    ("GET", "/v1/pets", {"Authorization": "Bearer nobody"}, None, 401, "anonymous", None),
    ("GET", "/v1/pets", TINY, None, 200, "custom:tiny-key", None),
    ("GET", "/v1/pets", TINY, None, 429, "custom:tiny-key", None),
]

TEXT_LINE = re.compile(
    r"^(?P<time>\S+) (?P<method>[A-Z]+) (?P<path>/\S*) (?P<status>\d{3}) "
    r"plan=(?P<plan>\S+) latency=(?P<latency>\d+(\.\d+)?)ms rule=(?P<rule>\S+) "
    r"id=(?P<id>req-\d+)$"
)


def _send_all(server: LiveServer) -> None:
    with server.client() as client:
        for method, path, headers, body, status, _, _ in REQUESTS:
            response = client.request(method, path, headers=headers, json=body)
            assert response.status_code == status, (method, path, response.text)
            if path != "/v1/store/orders":  # a scripted route: its body is the scenario's
                assert_conforms(response)
        # Control API calls are not API requests: they must not appear as access lines.
        client.get("/__mockstore/keys")


def _wait_for(server: LiveServer, predicate: Callable[[list[str]], bool]) -> list[str]:
    """The output once ``predicate`` holds; the server logs after it has answered."""
    deadline = time.monotonic() + 60  # generous: the machine may be loaded
    while time.monotonic() < deadline:
        lines = list(server.output)
        if predicate(lines):
            return lines
        time.sleep(0.025)
    raise AssertionError("expected log lines never came:\n" + server.log())


def _access_text(lines: list[str]) -> list[re.Match[str]]:
    return [m for m in map(TEXT_LINE.match, lines) if m]


def test_text_log_has_one_line_per_request_with_its_facts() -> None:
    with live_server("--log-level", "info", env={"MOCKSTORE_SCENARIO_YAML": TRACED}) as server:
        _send_all(server)
        lines = _wait_for(server, lambda got: len(_access_text(got)) >= len(REQUESTS))
    # After shutdown, nothing more was logged for the control API call.
    assert len(_access_text(server.output)) == len(REQUESTS)
    matches = _access_text(lines)
    ids = []
    for match, (method, path, _, _, status, plan, rule) in zip(matches, REQUESTS, strict=True):
        assert datetime.fromisoformat(match["time"]).tzinfo is not None
        assert match["method"] == method
        assert match["path"] == path
        assert int(match["status"]) == status
        assert match["plan"] == plan
        assert match["rule"] == (rule or "-")
        assert float(match["latency"]) >= 0
        ids.append(match["id"])
    assert len(set(ids)) == len(ids)
    slow = matches[2]
    assert float(slow["latency"]) >= 60, "the delay of the rule that fired is in the latency"


def test_json_log_lines_carry_the_same_fields() -> None:
    with live_server(
        "--log-level", "info", "--log-format", "json", env={"MOCKSTORE_SCENARIO_YAML": TRACED}
    ) as server:
        _send_all(server)
        _wait_for(server, lambda got: sum('"mockstore.access"' in x for x in got) >= len(REQUESTS))
    records = [json.loads(line) for line in server.output]  # every line is JSON, from the first
    started = records[0]
    assert started["message"].startswith("mockstore ") and "serving http://" in started["message"]
    assert started["scenario"] == "traced"
    assert {k["key"] for k in started["keys"]} >= {"pro-key"}
    access = [r for r in records if r["logger"] == "mockstore.access"]
    assert len(access) == len(REQUESTS)
    for record, (method, path, _, _, status, plan, rule) in zip(access, REQUESTS, strict=True):
        assert {"time", "level", "method", "path", "status", "plan", "latency_ms", "rule"} <= set(
            record
        )
        assert datetime.fromisoformat(record["time"]).tzinfo is not None
        assert record["level"] == "info"
        assert (record["method"], record["path"], record["status"]) == (method, path, status)
        assert record["plan"] == plan
        assert record["rule"] == rule
        assert isinstance(record["latency_ms"], int | float) and record["latency_ms"] >= 0
        assert re.fullmatch(r"req-\d+", record["request_id"])
    assert access[2]["operation"] == "getPet"
    assert access[2]["latency_ms"] >= 60
    others = [r for r in records[1:] if r["logger"] != "mockstore.access"]
    assert all("message" in r for r in others)


def test_log_format_from_the_environment() -> None:
    with live_server("--log-level", "info", env={"MOCKSTORE_LOG_FORMAT": "json"}) as server:
        with server.client() as client:
            client.get("/v1/pets", headers={"Authorization": "Bearer free-key"})
        lines = _wait_for(server, lambda got: any('"mockstore.access"' in x for x in got))
    [line] = [x for x in lines if '"mockstore.access"' in x]
    assert json.loads(line)["plan"] == "free"


def test_warning_level_keeps_requests_out_of_the_log() -> None:
    with live_server("--log-level", "warning") as server:
        with server.client() as client:
            for _ in range(3):
                client.get("/v1/pets", headers={"Authorization": "Bearer free-key"})
        banner = server.log()
    assert not _access_text(list(server.output))
    assert "keys:" in banner  # the start-up block is printed whatever the level


def test_startup_block_shows_scenario_address_keys_and_plans() -> None:
    with live_server() as server:
        with server.client() as client:
            keys = client.get("/__mockstore/keys").json()
        text = server.log()
    port = server.url.rsplit(":", 1)[1]
    first = text.splitlines()[0]
    assert re.fullmatch(rf"mockstore \S+ serving http://127\.0\.0\.1:{port}/v1", first)
    assert "scenario: default (default.yaml (bundled))" in text
    assert f"control:  http://127.0.0.1:{port}/__mockstore (on, no token" in text
    block = text.split("keys:", 1)[1]
    for key in keys:
        limits = key["limits"]
        pattern = (
            rf"{re.escape(key['key'])}\s+plan {re.escape(key['plan'])}\s+"
            rf"{limits['per_minute']}/min {limits['per_day']}/day"
        )
        assert re.search(pattern, block), pattern


def test_startup_block_of_a_scenario_without_keys_says_how_to_get_one() -> None:
    empty = "version: 1\nname: keyless\n"
    with live_server(env={"MOCKSTORE_SCENARIO_YAML": empty}) as server:
        text = server.log()
    assert "scenario: keyless (MOCKSTORE_SCENARIO_YAML)" in text
    assert "(none: issue one with POST /__mockstore/keys)" in text


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_startup_block_never_prints_the_control_token(fmt: str) -> None:
    with live_server("--control-token", "s3cret-t0ken", "--log-format", fmt) as server:
        with httpx.Client(base_url=server.url) as client:
            assert client.get("/__mockstore/keys").status_code == 401
        text = server.log()
    assert "on, token required" in text
    assert "s3cret-t0ken" not in text


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_no_access_line_is_lost_on_a_sigterm_right_after_the_answer(fmt: str) -> None:
    """`docker stop` the moment the client has its answer: the line is still written."""
    for _ in range(3):
        with live_server("--log-level", "info", "--log-format", fmt) as server:
            with server.client() as client:
                for _ in range(5):
                    answer = client.get("/v1/pets", headers={"Authorization": "Bearer pro-key"})
                    assert answer.status_code == 200
            assert server.process is not None
            server.process.send_signal(signal.SIGTERM)
            assert server.process.wait(30) == 0
            server.drained(30)
        ids = [line for line in server.output if "req-00000" in line]
        assert len(ids) == 5, server.log()
