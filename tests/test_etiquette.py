"""The etiquette report: each rule, its threshold, and the sample clients.

Rules are driven through the in-process app on a manual clock (the test moves
scenario time exactly), and read back from ``GET /__mockstore/report``. The
issue's "done when" runs the two sample clients of ``examples/clients`` as
real processes against a real server on a running clock.
"""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from collections.abc import Iterator
from email.utils import formatdate, parsedate_to_datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from mockstore.app import create_app
from mockstore.clock import Clock
from mockstore.journal import mask
from mockstore.reports import etiquette
from mockstore.reports.etiquette import BACKOFF_FLOOR, BACKOFF_GROWTH, RULES, grows, judge
from mockstore.reports.model import Fact, Finding, ReportContext
from mockstore.scenario import load_scenario
from tests.support import TOOL, assert_conforms, auth, examples, mock_server

ROOT = Path(__file__).resolve().parent.parent
CLIENTS = ROOT / "examples" / "clients"
RUDE_BAN = 40  # rejections before the rude sample client is banned (its manual-clock run)
START = 1772366430.0  # 2026-03-01T12:00:30Z
# The wall clock of the module's app, frozen: every wait is the scenario time the test
# advanced, never the milliseconds a loaded machine takes between two requests.
WALL = 1_800_000_000.0

SCENARIO = """
version: 1
keys:
  - {key: pro-key, plan: pro}
  - {key: tight-key, plan: {per_minute: 2, per_day: 1000}}
ban: {after_rejections: 3, within_seconds: 60, duration_seconds: 600}
faults:
  - name: told-to-wait
    match: {operation: listPets, key: pro-key, from_call: 1, until_call: 6}
    respond:
      status: 429
      headers: {Retry-After: "5"}
      body: {code: rate_limited, message: wait 5 s, status: 429}
  - name: not-told
    match: {operation: createPet, key: pro-key, from_call: 1, until_call: 6}
    respond: {status: 429, body: {code: rate_limited, message: slow down, status: 429}}
"""


def _app(text: str = SCENARIO) -> TestClient:
    scenario = load_scenario(text, "etiquette-test.yaml")
    clock = Clock(start=START, mode="manual", wall=lambda: WALL)
    return TestClient(create_app(scenario, clock=clock))


@pytest.fixture(scope="module")
def shared() -> Iterator[TestClient]:
    with _app() as client:
        yield client


@pytest.fixture
def mock(shared: TestClient) -> TestClient:
    """The module's app, reset: fresh counters, clock at START, empty journal."""
    assert shared.post("/__mockstore/reset", headers=TOOL).status_code == 200
    assert shared.delete("/__mockstore/requests").status_code == 204
    return shared


def _report(client: TestClient) -> dict[str, Any]:
    response = client.get("/__mockstore/report")
    assert response.status_code == 200
    return response.json()


def _findings(client: TestClient, rule_id: str | None = None) -> list[dict[str, Any]]:
    found = _report(client)["findings"]
    return [f for f in found if rule_id is None or f["id"] == rule_id]


def _seqs(client: TestClient) -> list[int]:
    return [e["seq"] for e in client.get("/__mockstore/requests").json()["entries"]]


def _advance(client: TestClient, seconds: float) -> None:
    if seconds:
        assert (
            client.post("/__mockstore/clock", json={"advance_seconds": seconds}).status_code == 200
        )


def test_the_docstring_table_lists_the_rules_in_code() -> None:
    doc = etiquette.__doc__ or ""
    rows = re.findall(r"^(ETQ\d{3})\s+(\S+)\s+(info|warning|error)\s", doc, re.MULTILINE)
    assert rows == [(r.id, r.name, r.severity) for r in RULES]
    assert len({r.id for r in RULES}) == len(RULES)


def test_a_well_behaved_session_has_no_findings(mock: TestClient) -> None:
    assert_conforms(mock.get("/v1/pets", params={"status": "sold"}, headers=auth("tight-key")))
    _advance(mock, 60)
    assert_conforms(mock.get("/v1/pets", headers=auth("tight-key")))
    report = _report(mock)
    assert report["findings"] == []
    assert report["summary"]["rules_passed"] == [r.id for r in RULES]


# -- ETQ001 ---------------------------------------------------------------------


def test_a_retry_before_retry_after_is_an_error(mock: TestClient) -> None:
    told = mock.get("/v1/pets", headers=auth("pro"))
    assert told.status_code == 429 and told.headers["retry-after"] == "5"
    assert_conforms(told)
    _advance(mock, 4.5)
    mock.get("/v1/pets", headers=auth("pro"))
    first, early = _seqs(mock)
    run = mock.get("/__mockstore/requests").json()["entries"][-1]["run"]

    (finding,) = _findings(mock, "ETQ001")
    assert finding["severity"] == "error" and finding["subject"] == mask("pro-key")
    assert finding["seqs"] == [first, early]
    assert finding["details"]["examples"] == [
        {"seq": early, "after_seq": first, "run": run, "retry_after": "5", "early_by_seconds": 0.5}
    ]
    assert finding["details"]["runs"] == [run]
    assert f"#{early} came 4.500 s after #{first}" in finding["message"]
    assert "0.500 s too early" in finding["message"]


def test_waiting_exactly_retry_after_is_fine(mock: TestClient) -> None:
    mock.get("/v1/pets", headers=auth("pro"))
    _advance(mock, 5)
    mock.get("/v1/pets", headers=auth("pro"))
    assert _findings(mock, "ETQ001") == []


@settings(max_examples=examples(25), deadline=None)
@given(waits=st.lists(st.sampled_from([0, 1, 4.9, 5, 6, 30]), min_size=1, max_size=5))
def test_etq001_fires_exactly_when_a_wait_is_shorter_than_retry_after(
    shared: TestClient, waits: list[float]
) -> None:
    shared.post("/__mockstore/reset", headers=TOOL)
    shared.delete("/__mockstore/requests")
    shared.get("/v1/pets", headers=auth("pro"))
    for wait in waits:
        _advance(shared, wait)
        shared.get("/v1/pets", headers=auth("pro"))  # every answer is a 429, Retry-After: 5
    findings = _findings(shared, "ETQ001")
    early = sum(1 for w in waits if w < 5)
    assert bool(findings) is (early > 0)
    if findings:
        assert findings[0]["details"]["early_requests"] == early


def test_an_http_date_retry_after_is_a_wall_clock_instant_and_is_understood() -> None:
    # The scenario clock is months away from the wall clock. A client computes
    # its wait as the HTTP-date minus its own clock (urllib3 does exactly
    # that), so the date is written on the wall clock; the report reads it
    # back against the wall time journaled with the response.
    wall = [1_800_000_000.25]  # the wall clock, frozen for the test
    text = """
version: 1
keys: [{key: tight-key, plan: {per_minute: 1, per_day: 100}}]
behaviour: {retry_after: http-date}
"""
    scenario = load_scenario(text, "etiquette-test.yaml")
    clock = Clock(start=START, mode="manual", wall=lambda: wall[0])
    with TestClient(create_app(scenario, clock=clock)) as client:
        client.get("/v1/pets", headers=auth("tight-key"))
        limited = client.get("/v1/pets", headers=auth("tight-key"))
        assert limited.status_code == 429
        # 30 s to the next minute, from a wall clock at .25: rounded up, never early.
        assert limited.headers["retry-after"] == formatdate(1_800_000_031, usegmt=True)
        wait = parsedate_to_datetime(limited.headers["retry-after"]).timestamp() - wall[0]
        assert wait >= 30
        _advance(client, 29)
        client.get("/v1/pets", headers=auth("tight-key"))
        (finding,) = _findings(client, "ETQ001")
        assert finding["count"] == 2  # the 429 that said when, and the request before then
        assert finding["details"]["examples"][0]["early_by_seconds"] == 1.75
        _advance(client, 2)
        assert client.get("/v1/pets", headers=auth("tight-key")).status_code == 200
        (finding,) = _findings(client, "ETQ001")
        assert finding["count"] == 2  # waiting as the date says is not early


def _fact(seq: int, time: float, status: int = 200, **extra: Any) -> Fact:
    values: dict[str, Any] = {
        "seq": seq,
        "request_id": f"req-{seq}",
        "time": time,
        "bucket": "key:k",
        "subject": "k***",
        "operation": "listPets",
        "method": "GET",
        "path": "/v1/pets",
        "status": status,
        "code": None,
        "message": None,
        "wait_until": None,
        "retry_after": None,
        "remaining": 1,
        "limit": 2,
        "auth": "bearer",
        "auth_scheme": "Bearer",
        "latency": 0.001,
        "outcome": "response",
        "sunset": None,
    }
    values.update(extra)
    return Fact(**values)


def _refused(seq: int, time: float, until: float = 130.0, **extra: Any) -> Fact:
    """A request the mock's limiter refused until ``until`` (it said nothing of a wait)."""
    return _fact(seq, time, 429, code="rate_limited", refused_until=until, **extra)


def _etq001(facts: list[Fact]) -> list[Finding]:
    return [f for f in judge(facts) if f.rule.id == "ETQ001"]


def test_a_request_already_in_flight_when_the_429_was_sent_is_exempt() -> None:
    limited = _fact(
        1, 100.0, 429, code="rate_limited", wait_until=130.0, retry_after="30", latency=0.050
    )
    in_flight = _refused(2, 100.020)  # arrived while #1 was still being answered
    after = _refused(3, 100.060)  # arrived after #1's answer was sent
    assert not _etq001([limited, in_flight])
    (finding,) = _etq001([limited, in_flight, after])
    assert finding.seqs == [1, 3]


def test_in_flight_is_known_from_what_had_been_answered_when_a_request_arrived() -> None:
    # A simulated clock that stood still while #1 was answered: times cannot tell
    # in flight from sent after; what the journal had answered when each arrived can.
    limited = _fact(
        1, 100.0, 429, code="rate_limited", wait_until=130.0, retry_after="30", arrived_after=0
    )
    sent_before_the_answer = _refused(2, 100.0, arrived_after=0)
    sent_after_it = _refused(3, 100.0, arrived_after=2)
    assert not _etq001([limited, sent_before_the_answer])
    (finding,) = _etq001([limited, sent_after_it])
    assert finding.seqs == [1, 3]


def test_a_wait_is_over_when_either_clock_says_so() -> None:
    told = _fact(
        1,
        100.0,
        429,
        code="rate_limited",
        wait_until=130.0,
        retry_after="30",
        wall=2000.0,
    )
    slept = _refused(2, 100.0, wall=2030.0)  # a manual clock: only the wall clock moved
    advanced = _fact(3, 130.0, wall=2000.5)  # a test moved the clock: only it moved
    early = _refused(4, 129.0, wall=2029.0)
    assert not _etq001([told, slept])
    assert not _etq001([told, advanced])
    (finding,) = _etq001([told, early])
    assert finding.details["examples"][0]["early_by_seconds"] == 1.0


def test_a_date_on_the_wall_clock_is_waited_on_the_clients_clock() -> None:
    # The case: a manual clock, Retry-After as an HTTP-date 30 s after the wall
    # clock's 2000.0. The client read its own clock 0.2 s later and advanced the mock's
    # clock 29.8 s: the wall time that passed plus the scenario time moved is the wait.
    told = _fact(
        1,
        100.0,
        429,
        code="rate_limited",
        wait_until=130.0,
        retry_after="Thu, 01 Jan 1970 00:33:50 GMT",
        wall=2000.0,
        clock="manual",
        wall_instant=True,
    )
    refused_by_the_milliseconds = _refused(2, 129.8, wall=2000.25)
    assert not _etq001([told, refused_by_the_milliseconds])
    early = _refused(2, 129.0, wall=2000.25)  # advanced 29 s: 0.75 s short on any clock
    (finding,) = _etq001([told, early])
    assert finding.details["examples"][0]["early_by_seconds"] == 0.75
    # A wait in seconds is a duration on one clock: a sleep and an advance do not add up.
    seconds = dataclasses.replace(told, retry_after="30", wall_instant=False)
    half_and_half = _refused(2, 115.0, wall=2015.0)
    assert _etq001([seconds, half_and_half])
    # Nor on a running clock, which counts both already (the sleep moved it too).
    running = dataclasses.replace(told, clock="running")
    assert _etq001([running, _refused(2, 129.0, wall=2000.25)])


def test_a_retry_the_mock_admitted_is_never_early() -> None:
    told = _fact(1, 100.0, 429, code="rate_limited", wait_until=130.0, retry_after="30")
    admitted = _fact(2, 101.0, refused_until=0.0)  # a ban lifted, a plan changed: answered
    assert not _etq001([told, admitted])
    # Every wait before an admitted request is over as far as the mock goes.
    assert not _etq001([told, admitted, _refused(3, 102.0, until=160.0)])
    # A request the limiter did not decide on (an answer before its caller was counted)
    # is judged by the state its bucket was in: refused while an earlier refusal held.
    limited = dataclasses.replace(told, refused_until=130.0)
    undecided = _fact(2, 101.0, 500, code="internal_error")
    (finding,) = _etq001([limited, undecided])
    assert finding.seqs == [1, 2]
    assert not _etq001([limited, dataclasses.replace(undecided, time=130.0)])


def test_runs_are_judged_apart() -> None:
    told = _fact(1, 100.0, 429, code="rate_limited", wait_until=130.0, retry_after="30", run=1)
    after_a_reset = _refused(2, 100.0, run=2)  # the clock back at its start
    assert not _etq001([told, after_a_reset])
    same_run = _refused(2, 100.5, run=1)
    assert [f.rule.id for f in judge([told, same_run])] == ["ETQ001"]


# -- ETQ002 ---------------------------------------------------------------------


def _retry_creates(client: TestClient, waits: list[float]) -> list[int]:
    pet = {"name": "Rex", "categoryId": 1}
    client.post("/v1/pets", json=pet, headers=auth("pro"))
    for wait in waits:
        _advance(client, wait)
        client.post("/v1/pets", json=pet, headers=auth("pro"))
    return _seqs(client)


def test_doubling_waits_are_backoff(mock: TestClient) -> None:
    _retry_creates(mock, [0.1, 0.2, 0.4, 0.8, 1.6])
    assert _findings(mock, "ETQ002") == []


def test_steady_retries_after_429_are_a_warning(mock: TestClient) -> None:
    seqs = _retry_creates(mock, [0.5, 0.5, 0.5, 0.5])
    (finding,) = _findings(mock, "ETQ002")
    assert finding["severity"] == "warning"
    assert finding["seqs"] == seqs[1:]
    assert finding["details"]["runs"] == [{"seqs": seqs[1:], "waits": [0.5, 0.5, 0.5, 0.5]}]
    assert "[0.5, 0.5, 0.5, 0.5] do not grow" in finding["message"]
    assert _findings(mock, "ETQ001") == [], "no Retry-After was given, so none was ignored"


def test_two_retries_are_too_few_to_judge(mock: TestClient) -> None:
    _retry_creates(mock, [0.5, 0.5])
    assert _findings(mock, "ETQ002") == []


def test_steady_waits_that_honour_retry_after_are_not_a_backoff_problem(mock: TestClient) -> None:
    mock.get("/v1/pets", headers=auth("pro"))
    for _ in range(5):
        _advance(mock, 5)
        mock.get("/v1/pets", headers=auth("pro"))
    assert _findings(mock) == []


@given(
    first=st.floats(BACKOFF_FLOOR * 1.01, 10),
    ratio=st.floats(BACKOFF_GROWTH, 4),
    length=st.integers(3, 8),
)
def test_geometric_waits_grow_and_steady_ones_do_not(
    first: float, ratio: float, length: int
) -> None:
    assert grows([first * ratio**i for i in range(length)])
    assert not grows([first] * length)
    assert not grows([first * ratio**-i for i in range(length)])


# -- ETQ003 ---------------------------------------------------------------------


def test_hammering_until_banned_is_an_error_with_the_requests_that_led_to_it(
    mock: TestClient,
) -> None:
    statuses = [mock.get("/v1/pets", headers=auth("tight-key")).status_code for _ in range(7)]
    assert statuses == [200, 200, 429, 429, 429, 429, 429]
    codes = [e["response"]["body"] for e in mock.get("/__mockstore/requests").json()["entries"]]
    assert sum('"key_banned"' in c for c in codes) == 2
    seqs = _seqs(mock)
    (finding,) = _findings(mock, "ETQ003")
    assert finding["severity"] == "error"
    assert finding["details"]["led_to_ban"] == seqs[2:5]
    assert finding["details"]["while_banned"] == 2 and finding["details"]["bans"] == 1
    assert finding["seqs"] == seqs[2:]
    assert "bans after 3 rejections within 60 s" in finding["message"]
    assert {f["id"] for f in _findings(mock)} == {"ETQ001", "ETQ002", "ETQ003"}


def test_a_ban_counts_the_rejections_before_the_refusal_that_tipped_it() -> None:
    # The journal of tests/test_client_populations.py's failure (seconds after a minute's
    # turn): three refusals within 60 s, the third (#7) tips the ban, and the client
    # comes back when that refusal said, a minute later, to meet key_banned (#8). Counted
    # back from #8 only #7 was within 60 s: "1 rate-limited request led to the ban (the
    # scenario bans after 3 rejections within 60 s)".
    limited = {"code": "rate_limited", "refused_until": 1.0}
    facts = [
        _fact(1, 14.9999998),
        _fact(2, 14.9999998, 429, **limited),
        _fact(3, 39.9999998, 429, **limited),
        _fact(4, 42.7089322),
        _fact(5, 42.7089322, 429, **limited),
        _fact(6, 100.0, 429, code="key_banned", refused_until=1.0),
        _fact(7, 163.0),
        # A later ban: its count starts afresh (and a refusal exactly 60 s older is out).
        _fact(8, 215.0, 429, **limited),
        _fact(9, 260.0, 429, **limited),
        _fact(10, 270.0, 429, **limited),
        _fact(11, 275.0, 429, **limited),
        _fact(12, 290.0, 429, code="key_banned", refused_until=1.0),
    ]
    context = ReportContext(ban_after_rejections=3, ban_within_seconds=60)
    (finding,) = [f for f in judge(facts, context) if f.rule.id == "ETQ003"]
    assert finding.details["led_to_ban"] == [2, 3, 5, 9, 10, 11]
    assert finding.details["bans"] == 2 and finding.details["while_banned"] == 2
    assert "6 rate-limited requests led to the ban" in finding.message


# -- ETQ004 / ETQ005 -------------------------------------------------------------


def test_deprecated_calls_name_the_sunset_and_the_replacement(mock: TestClient) -> None:
    assert_conforms(mock.get("/v1/pets/1", headers=auth("pro")))
    assert_conforms(mock.get("/v1/pets/404", headers=auth("tight-key")))
    (finding,) = _findings(mock)
    assert finding["id"] == "ETQ004" and finding["severity"] == "warning"
    assert finding["subject"] == "getPet" and finding["seqs"] == _seqs(mock)
    assert finding["details"]["sunset"] == "Thu, 05 Dec 2030 00:00:00 GMT"
    assert "GET /pets?status=" in finding["details"]["replacement"]
    assert finding["details"]["callers"] == [mask("pro-key"), mask("tight-key")]
    assert "will be removed on Thu, 05 Dec 2030" in finding["message"]


def test_calls_after_the_sunset_are_an_error(mock: TestClient) -> None:
    mock.get("/v1/pets/1", headers=auth("pro"))
    assert mock.post("/__mockstore/clock", json={"set": "2030-12-05T00:00:00Z"}).status_code == 200
    gone = mock.get("/v1/pets/1", headers=auth("pro"))
    assert gone.status_code == 410
    assert_conforms(gone)
    before, after = _seqs(mock)
    assert [f["seqs"] for f in _findings(mock, "ETQ004")] == [[before]]
    (removed,) = _findings(mock, "ETQ005")
    assert removed["severity"] == "error" and removed["seqs"] == [after]
    assert "after its sunset" in removed["message"] and "answered 410" in removed["message"]


# -- ETQ006 ---------------------------------------------------------------------


def test_invalid_requests_are_grouped_by_code_and_message(mock: TestClient) -> None:
    key = auth("tight-key")
    for _ in range(2):
        assert_conforms(mock.post("/v1/pets", json={"name": "A"}, headers=key))
    _advance(mock, 60)
    assert_conforms(mock.post("/v1/pets", json={"categoryId": 1}, headers=key))
    assert_conforms(mock.get("/v1/pets", params={"limit": 500}, headers=key))
    seqs = _seqs(mock)
    found = {f["subject"]: f for f in _findings(mock, "ETQ006")}
    assert set(found) == {"createPet: validation_failed", "listPets: invalid_parameter"}
    (name_missing,) = [f for f in _findings(mock, "ETQ006") if "name is required" in f["message"]]
    (category_missing,) = [
        f for f in _findings(mock, "ETQ006") if "categoryId is required" in f["message"]
    ]
    assert category_missing["seqs"] == seqs[:2] and category_missing["count"] == 2
    assert name_missing["seqs"] == [seqs[2]]
    assert found["listPets: invalid_parameter"]["details"]["status"] == 400


# -- ETQ007 ---------------------------------------------------------------------


def test_missing_and_malformed_authorization_are_separate_findings(mock: TestClient) -> None:
    assert_conforms(mock.get("/v1/pets"))
    assert_conforms(mock.get("/v1/pets", headers={"Authorization": "Basic dXNlcjpwYXNz"}))
    assert_conforms(mock.get("/v1/pets", headers={"Authorization": "Bearer"}))
    assert_conforms(mock.get("/v1/pets", headers={"Authorization": "Bearer nobody-key"}))
    missing_seq, basic, bare, _unknown = _seqs(mock)
    found = {f["details"]["kind"]: f for f in _findings(mock, "ETQ007")}
    assert found["missing"]["seqs"] == [missing_seq]
    assert found["malformed"]["seqs"] == [basic, bare]
    assert found["malformed"]["details"]["schemes"] == ["Basic", "Bearer"]
    assert "dXNlcjpwYXNz" not in str(found), "credentials are never quoted"


# -- the "done when": the sample clients ------------------------------


def _run_client(script: str, server_api: str, key: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, str(CLIENTS / script), "--url", server_api, "--key", key],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def _cli_report(url: str, fail_on: str) -> int:
    command = [sys.executable, "-m", "mockstore", "report", "--url", url, "--fail-on", fail_on]
    return subprocess.run(command, capture_output=True, text=True, timeout=60).returncode


def test_the_sample_clients_are_judged_as_expected() -> None:
    with mock_server(str(CLIENTS / "etiquette.yaml")) as server:
        control = server.url + "/__mockstore"

        polite = _run_client("well_behaved.py", server.api, "polite-key")
        assert polite.stdout.splitlines() == [
            "GET /pets?status=available -> 200",
            "POST /pets -> 201",
            "GET /pets?limit=5 -> 200",
        ]
        entries = httpx.get(control + "/requests").json()["entries"]
        statuses = [e["response"]["status"] for e in entries]
        assert statuses == [429, 429, 200, 429, 429, 429, 201, 200], "it met the 429s"
        report = httpx.get(control + "/report").json()
        assert report["findings"] == []
        assert _cli_report(server.url, "info") == 0

        assert httpx.delete(control + "/requests").status_code == 204
        # The rude client hammers as fast as it can: on a running clock its waits are
        # whatever the machine's load makes them, and a loaded machine can make them
        # grow (no ETQ002). On a manual clock its scenario waits are 0, but a wait counts
        # on the wall too (the clock the client may have read): a run of four waits could
        # still look like a backoff on a loaded machine. Forty rejections before the ban
        # make the run long enough that load cannot: half of 39 waits would each have to
        # grow 1.5x on the one before (past 10 ms: from there, hours).
        manual = (
            (CLIENTS / "etiquette.yaml")
            .read_text()
            .replace("seed: 0", "seed: 0\nclock: {mode: manual}")
            .replace("ban: {after_rejections: 5,", f"ban: {{after_rejections: {RUDE_BAN},")
        )
        assert "clock: {mode: manual}" in manual
        assert f"after_rejections: {RUDE_BAN}," in manual
        assert httpx.put(control + "/scenario", content=manual).status_code == 200
        rude = _run_client("misbehaving.py", server.api, "rude-key")
        assert rude.stdout.split()[0] == "200"
        entries = httpx.get(control + "/requests").json()["entries"]
        report = httpx.get(control + "/report").json()
        assert _cli_report(server.url, "error") == 1

    by_id = {f["id"]: f for f in report["findings"]}
    assert sorted(by_id) == ["ETQ001", "ETQ002", "ETQ003", "ETQ004"]
    assert len(report["findings"]) == 4
    seq = {e["seq"]: e for e in entries}
    get_pet = [e["seq"] for e in entries if e["operation"] == "getPet"]
    assert by_id["ETQ004"]["seqs"] == get_pet == [entries[0]["seq"]]
    banned = [e["seq"] for e in entries if '"key_banned"' in e["response"]["body"]]
    limited = [e["seq"] for e in entries if '"rate_limited"' in e["response"]["body"]]
    assert banned == [entries[-1]["seq"]], "the client stops at its ban"
    assert by_id["ETQ003"]["details"]["led_to_ban"] == limited[-RUDE_BAN:]
    assert set(by_id["ETQ001"]["seqs"]) >= set(banned)
    assert all(seq[s]["response"]["status"] == 429 for s in by_id["ETQ002"]["seqs"])
    assert {f["subject"] for f in report["findings"]} == {mask("rude-key"), "getPet"}
