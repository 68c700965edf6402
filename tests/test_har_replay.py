"""HAR export and ``mockstore replay``: a recorded session replays with no differences.

The recording is made on a real server with a *running* clock, so the
recorded times are whatever they happened to be; the replay drives a manual
clock to each of them. The session exercises what makes a mock stateful:
seeded random faults, call-count faults, a connection reset, ids assigned on
creation, minute windows, a ban, a key issued through the control API.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient

from mockstore.app import create_app
from mockstore.clock import Clock, parse_time
from mockstore.fidelity.replay import replay
from mockstore.keys import key_alias
from mockstore.scenario import load_scenario
from tests.support import LiveServer, assert_conforms, auth, mock_server

SCENARIO = """
version: 1
name: replayable
seed: 42
keys:
  - {key: pro-key, plan: pro}
  - {key: tight-key, plan: {per_minute: 2, per_day: 1000}}
ban: {after_rejections: 3, within_seconds: 60, duration_seconds: 600}
pets:
  - {id: 1, name: Rex, categoryId: 1, status: available}
  - {id: 2, name: Bella, categoryId: 2, status: pending}
  - {id: 3, name: Max, categoryId: 1}
faults:
  - name: coin
    match: {operation: listPets, key: pro-key, probability: 0.5}
    respond: {status: 503, body: {code: unavailable, message: the coin says no, status: 503}}
  - name: reset-third-get
    match: {operation: getPet, calls: [3]}
    fault: connection_reset
  - name: garbled-fourth-get
    match: {operation: getPet, calls: [4]}
    fault: malformed_json
"""


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Record a session on a live server; keep its HAR, journal and scenario file."""
    tmp = tmp_path_factory.mktemp("replay")
    scenario_file = tmp / "replayable.yaml"
    scenario_file.write_text(SCENARIO)
    with mock_server(str(scenario_file)) as server:
        _session(server)
        control = server.url + "/__mockstore"
        har = httpx.get(control + "/requests.har").json()  # masked: the default
        masked = httpx.get(control + "/requests.har", params={"mask": "true"}).json()
        unmasked = httpx.get(control + "/requests.har", params={"mask": "false"}).json()
        entries = httpx.get(control + "/requests").json()["entries"]
    har_file = tmp / "session.har"
    har_file.write_text(json.dumps(har))
    unmasked_file = tmp / "unmasked.har"
    unmasked_file.write_text(json.dumps(unmasked))
    return {
        "tmp": tmp,
        "scenario": scenario_file,
        "har": har,
        "har_file": har_file,
        "masked": masked,
        "unmasked": unmasked,
        "unmasked_file": unmasked_file,
        "entries": entries,
    }


def _session(server: LiveServer) -> None:
    with server.client() as http:
        for _ in range(6):
            http.get("/v1/pets", params={"limit": 2}, headers=auth("pro"))
        for name in ("Nala", "Milo"):
            created = http.post(
                "/v1/pets", json={"name": name, "categoryId": 4}, headers=auth("pro")
            )
            assert_conforms(created)
        assert_conforms(http.post("/v1/pets", json={"name": "Nobody"}, headers=auth("pro")))
        assert_conforms(http.get("/v1/pets/1", headers=auth("pro")))
        assert_conforms(http.get("/v1/pets/99", headers=auth("pro")))
        with pytest.raises(httpx.TransportError):
            http.get("/v1/pets/2", headers=auth("pro"))  # the third getPet: connection reset
        garbled = http.get("/v1/pets/3", headers=auth("pro"))
        assert garbled.status_code == 200
        for _ in range(6):
            assert_conforms(http.get("/v1/pets", headers=auth("tight-key")))
        assert_conforms(http.get("/v1/pets"))
        assert_conforms(http.get("/v1/pets", params={"limit": "many"}, headers=auth("pro")))
        issued = http.post("/__mockstore/keys", json={"plan": {"per_minute": 1, "per_day": 5}})
        assert issued.status_code == 201
        new_key = issued.json()["key"]
        assert_conforms(http.get("/v1/pets", headers=auth(new_key)))
        assert_conforms(http.get("/v1/pets", headers=auth(new_key)))


def _replay(har_file: Path, scenario: str | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "mockstore", "replay", str(har_file)]
    if scenario is not None:
        command += ["--scenario", scenario]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


# -- the HAR ---------------------------------------------------------------------

REQUEST_FIELDS = {
    "method",
    "url",
    "httpVersion",
    "headers",
    "queryString",
    "headersSize",
    "bodySize",
    "cookies",
}
RESPONSE_FIELDS = {
    "status",
    "statusText",
    "httpVersion",
    "headers",
    "content",
    "redirectURL",
    "headersSize",
    "bodySize",
    "cookies",
}


def test_the_har_is_har_1_2(recorded: dict[str, Any]) -> None:
    log = recorded["har"]["log"]
    assert log["version"] == "1.2"
    assert log["creator"]["name"] == "mockstore" and log["creator"]["version"]
    entries = log["entries"]
    journal = recorded["entries"]
    assert len(entries) == len(journal) == 23
    for har_entry, entry in zip(entries, journal, strict=True):
        assert {"startedDateTime", "time", "request", "response", "cache", "timings"} <= set(
            har_entry
        )
        started = datetime.fromisoformat(har_entry["startedDateTime"].replace("Z", "+00:00"))
        assert abs(started.timestamp() - entry["time"]) < 0.001
        timings = har_entry["timings"]
        assert {"send", "wait", "receive"} <= set(timings)
        assert har_entry["time"] == sum(v for v in timings.values() if v >= 0)
        request, response = har_entry["request"], har_entry["response"]
        assert set(request) >= REQUEST_FIELDS and set(response) >= RESPONSE_FIELDS
        assert request["method"] == entry["request"]["method"]
        assert request["url"].endswith(
            entry["request"]["path"]
            + (f"?{entry['request']['query_string']}" if entry["request"]["query_string"] else "")
        )
        assert {q["name"]: q["value"] for q in request["queryString"]} == entry["request"]["query"]
        assert all(set(h) == {"name", "value"} for h in request["headers"] + response["headers"])
        assert response["status"] == entry["response"]["status"]
        content = response["content"]
        assert {"size", "mimeType", "text"} <= set(content)
        if entry["request"]["body"]:
            assert request["postData"]["text"] == entry["request"]["body"]
            assert request["postData"]["mimeType"] == "application/json"
        assert har_entry["_mockstore"]["seq"] == entry["seq"]


def test_a_connection_fault_is_recorded_as_no_response(recorded: dict[str, Any]) -> None:
    (broken,) = [e for e in recorded["har"]["log"]["entries"] if e["response"]["status"] == 0]
    assert broken["_mockstore"]["outcome"] == "connection_reset"
    assert broken["_mockstore"]["rule"] == "reset-third-get"
    assert broken["response"]["_error"] == "connection_reset"
    assert broken["request"]["url"].endswith("/v1/pets/2")


def _authorizations(har: dict[str, Any]) -> set[str]:
    return {
        h["value"]
        for e in har["log"]["entries"]
        for h in e["request"]["headers"]
        if h["name"].lower() == "authorization"
    }


def test_keys_are_masked_by_default_with_stable_aliases(recorded: dict[str, Any]) -> None:
    har = recorded["har"]
    text = json.dumps(har["log"]["entries"]) + json.dumps(har["log"]["_mockstore"]["issued_keys"])
    for secret in ("pro-key", "tight-key"):
        assert f"Bearer {secret}" not in text
    shown = _authorizations(har)
    assert f"Bearer {key_alias('pro-key')}" in shown
    assert f"Bearer {key_alias('tight-key')}" in shown
    assert key_alias("pro-key") == "key-" + hashlib.sha256(b"pro-key").hexdigest()[:8]
    assert key_alias("pro-key") != key_alias("pro-kez"), "two keys never share an alias"
    assert _authorizations(recorded["masked"]) == shown, "the same alias in every export"
    meta = har["log"]["_mockstore"]
    assert meta["masked"] is True
    (issued,) = meta["issued_keys"]
    (real,) = recorded["unmasked"]["log"]["_mockstore"]["issued_keys"]
    assert issued["key"] == key_alias(real["key"]) and real["key"] not in text
    assert (issued["per_minute"], issued["per_day"]) == (1, 5)


def test_mask_false_keeps_the_tokens_as_sent(recorded: dict[str, Any]) -> None:
    unmasked = recorded["unmasked"]
    assert "Bearer pro-key" in _authorizations(unmasked)
    assert unmasked["log"]["_mockstore"]["masked"] is False
    (issued,) = unmasked["log"]["_mockstore"]["issued_keys"]
    assert issued["key"].startswith("ms_")


def test_the_har_carries_the_scenario_source(recorded: dict[str, Any]) -> None:
    meta = recorded["har"]["log"]["_mockstore"]
    assert meta["scenario_source"] == SCENARIO
    assert meta["scenario_file"] == str(recorded["scenario"])


def test_a_bad_mask_value_is_refused(recorded: dict[str, Any]) -> None:
    with mock_server() as server:
        answer = httpx.get(server.control_url + "/requests.har", params={"mask": "perhaps"})
    assert answer.status_code == 400
    assert answer.json()["code"] == "invalid_request" and "'mask'" in answer.json()["message"]


# -- replay ----------------------------------------------------------------------


def test_a_masked_har_replays_from_the_file_alone(recorded: dict[str, Any]) -> None:
    result = _replay(recorded["har_file"])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "replayed 23 request(s)" in result.stdout
    assert "against scenario 'replayable'" in result.stdout
    assert "no differences: every response matches the recording" in result.stdout
    assert "warning" not in result.stdout + result.stderr


def test_an_unmasked_har_replays_against_a_named_scenario(recorded: dict[str, Any]) -> None:
    result = _replay(recorded["unmasked_file"], str(recorded["scenario"]))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no differences: every response matches the recording" in result.stdout
    assert "warning" not in result.stdout


def test_a_changed_scenario_shows_where_responses_differ(recorded: dict[str, Any]) -> None:
    changed = recorded["tmp"] / "changed.yaml"
    changed.write_text(
        SCENARIO.replace("per_minute: 2, per_day: 1000", "per_minute: 3, per_day: 1000")
    )
    result = _replay(recorded["har_file"], str(changed))
    assert result.returncode == 1, result.stdout + result.stderr
    out = result.stdout
    tight = [e for e in recorded["entries"] if e["plan"] == "custom:tight-key"]
    third = tight[2]
    assert f"#{third['seq']} GET /v1/pets ({third['request_id']})" in out
    assert "status: recorded 429, replayed 200" in out
    assert "header x-ratelimit-limit: recorded '2', replayed '3'" in out
    assert "header retry-after: recorded " in out and ", replayed absent" in out
    assert "body differs at byte" in out
    assert out.rstrip().endswith("of 23 response(s) differ")


def test_another_seed_flips_other_coins(recorded: dict[str, Any]) -> None:
    changed = recorded["tmp"] / "seed.yaml"
    changed.write_text(SCENARIO.replace("seed: 42", "seed: 7"))
    result = _replay(recorded["har_file"], str(changed))
    assert result.returncode == 1
    assert "status: recorded 503, replayed 200" in result.stdout or (
        "status: recorded 200, replayed 503" in result.stdout
    )
    assert "recorded with scenario 'replayable'" not in result.stdout  # same name, same scenario


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ("{not json", "is not JSON"),
        ('{"log": {"entries": "none"}}', "'log.entries' is not a list"),
        ('{"log": {"entries": [{"request": {}}]}}', "log.entries[0]: missing or invalid"),
    ],
)
def test_an_unreadable_har_is_exit_2(tmp_path: Path, content: str, words: str) -> None:
    bad = tmp_path / "bad.har"
    bad.write_text(content)
    result = _replay(bad, "default")
    assert result.returncode == 2
    assert words in result.stderr


def test_an_unknown_scenario_is_exit_2(recorded: dict[str, Any]) -> None:
    result = _replay(recorded["har_file"], "no-such-scenario")
    assert result.returncode == 2
    assert "scenario 'no-such-scenario' not found" in result.stderr


# -- a HAR from elsewhere: times from startedDateTime only ------------------------


@pytest.fixture
def manual_session() -> Iterator[tuple[TestClient, str]]:
    text = """
version: 1
name: manual
# A real service's HAR has its dates on the clock of its startedDateTime.
clock: {start: "2026-03-01T12:00:00Z", mode: manual, headers: scenario}
keys: [{key: tight-key, plan: {per_minute: 1, per_day: 100}}]
"""
    app = create_app(load_scenario(text, "manual.yaml"))
    with TestClient(app) as client:
        yield client, text


def test_a_foreign_har_replays_from_its_started_date_times(
    manual_session: tuple[TestClient, str],
) -> None:
    client, text = manual_session
    for seconds in (0, 1, 59, 1):
        client.post("/__mockstore/clock", json={"advance_seconds": seconds})
        assert_conforms(client.get("/v1/pets", headers=auth("tight-key")))
    # A HAR from another tool: the tokens as sent, and no _mockstore fields.
    har = client.get("/__mockstore/requests.har", params={"mask": "false"}).json()
    for entry in har["log"]["entries"]:
        del entry["_mockstore"]
    del har["log"]["_mockstore"]
    statuses = [e["response"]["status"] for e in har["log"]["entries"]]
    assert statuses == [200, 429, 200, 429]  # a new minute at +60 s
    result = replay(har, load_scenario(text, "manual.yaml"))
    assert result.identical, [d.problems for d in result.differences]
    assert result.total == 4


def test_a_dated_retry_after_replays_as_recorded() -> None:
    # The scenario clock starts years away from the wall clock and the
    # Retry-After is an HTTP-date on the wall clock; the HAR carries the wall
    # time of each exchange and the replay sets it, so nothing differs.
    text = """
version: 1
name: dated
clock: {start: "2031-06-01T08:00:00.5Z"}
keys: [{key: tight-key, plan: {per_minute: 1, per_day: 100}}]
behaviour: {retry_after: http-date}
"""
    scenario = load_scenario(text, "dated.yaml")
    assert scenario.clock_start is not None
    # Recorded "in 2020": the replay, today, must still write the recorded dates.
    clock = Clock(start=scenario.clock_start, mode="manual", wall=lambda: 1_600_000_000.5)
    with TestClient(create_app(scenario, clock=clock)) as client:
        for _ in range(3):
            client.get("/v1/pets", headers=auth("tight-key"))
        har = client.get("/__mockstore/requests.har").json()
    entries = har["log"]["entries"]
    assert [e["response"]["status"] for e in entries] == [200, 429, 429]
    assert all(isinstance(e["_mockstore"]["wall"], float) for e in entries)
    result = replay(har, scenario)
    assert result.identical, [d.problems for d in result.differences]


# -- a HAR under another base path ----------------------------------------------------


@pytest.mark.parametrize("stated", [True, False])
def test_a_har_under_another_base_path_is_replayed_mapped_with_a_warning(stated: bool) -> None:
    # Recorded from a provider under /api/v3 (its HAR saying so, or saying nothing); replayed
    # against a scenario under /v1: each path is mapped as drift maps it, and the replay says so.
    text = """
version: 1
name: elsewhere
base_path: /api/v3
clock: {start: "2026-03-01T12:00:00Z", mode: manual}
keys: [{key: tight-key, plan: {per_minute: 2, per_day: 100}}]
"""
    # The wall clock stands still too: a manual clock's headers write instants on the wall
    # clock, read once for the headers and once more for the journal's ``wall``, and a
    # whole second passing between the two readings replayed X-RateLimit-Reset a second
    # later than recorded (forced: a wall clock 0.3 ms a reading from x.997 s). Mapping
    # base paths is what this test is about, not the wall clock.
    clock = Clock(start=parse_time("2026-03-01T12:00:00Z"), mode="manual", wall=lambda: 1.8e9)
    with TestClient(create_app(load_scenario(text, "elsewhere.yaml"), clock=clock)) as client:
        for path in ("/api/v3/pets", "/api/v3/pets?limit=1", "/api/v3/pets", "/api/v3/nowhere"):
            client.get(path, headers=auth("tight-key"))
        har = client.get("/__mockstore/requests.har", params={"mask": "false"}).json()
    if not stated:
        del har["log"]["_mockstore"]["base_path"]
    statuses = [e["response"]["status"] for e in har["log"]["entries"]]
    assert statuses == [200, 200, 429, 429]
    under_v1 = load_scenario(text.replace("base_path: /api/v3\n", ""), "v1.yaml")
    result = replay(har, under_v1)
    assert result.identical, [d.problems for d in result.differences]
    assert any("made under the base path /api/v3" in w and "/v1" in w for w in result.warnings), (
        result.warnings
    )
