"""One time model: what every header that names an instant or a wait makes a client do.

Two kinds of client compute a wait from a header: one subtracts its own clock
(urllib3 does, for an HTTP-date ``Retry-After``; most readers of a Unix-time
``X-RateLimit-Reset`` do), the other subtracts the answer's ``Date``. On a
scenario clock far from the wall clock, running or manual, both must wait the
scenario's remaining time. The table in the docs ("Rate limits and time") is
pinned here: each row, each clock kind, each choice of ``clock.headers``.

The instants are exact only with a wall clock the test controls, so most of
these run in process with an injected wall clock; the clients that really
sleep run against a real server.
"""

from __future__ import annotations

import math
import re
from email.utils import parsedate_to_datetime

import httpx
import pytest
import urllib3
from starlette.testclient import TestClient

from mockstore import Control
from mockstore.app import create_app
from mockstore.clock import Clock, parse_time
from mockstore.scenario import load_scenario
from tests.support import auth, mock_server

WALL = 1_800_000_000.25  # 2027-01-15T08:00:00.25Z: the client's clock, frozen
FAR = "2030-12-04T23:59:30Z"  # the scenario's: years from the wall clock, 30 s before the sunset


def _scenario(mode: str, headers: str | None = None, **behaviour: str) -> str:
    settings = ", ".join(f"{name}: {value}" for name, value in behaviour.items())
    clock = f"{{start: '{FAR}', mode: {mode}" + (f", headers: {headers}" if headers else "") + "}"
    return f"""
version: 1
clock: {clock}
keys: [{{key: tight-key, plan: {{per_minute: 1, per_day: 100}}}}]
behaviour: {{ratelimit_draft_headers: true{", " + settings if settings else ""}}}
"""


def _app(text: str, mode: str, wall: list[float]) -> TestClient:
    """The app on a clock whose wall clock is ``wall[0]`` (and whose time runs with it)."""
    scenario = load_scenario(text, "time-model.yaml")
    start = parse_time(FAR)
    if mode == "manual":
        clock = Clock(start=start, mode="manual", wall=lambda: wall[0])
    else:
        origin = wall[0]
        clock = Clock(start=start, wall=lambda: wall[0], monotonic=lambda: wall[0] - origin)
    return TestClient(create_app(scenario, clock=clock))


def _refused(client: TestClient) -> httpx.Response:
    assert client.get("/v1/pets", headers=auth("tight-key")).status_code == 200
    limited = client.get("/v1/pets/1", headers=auth("tight-key"))
    assert limited.status_code == 429
    return limited


def _date(value: str) -> float:
    return parsedate_to_datetime(value).timestamp()


@pytest.mark.parametrize("mode", ["running", "manual"])
def test_instants_far_from_the_wall_clock_give_both_readers_the_remaining_time(
    mode: str,
) -> None:
    wall = [WALL]
    with _app(_scenario(mode, retry_after="http-date"), mode, wall) as client:
        headers = _refused(client).headers
    remaining = 30.0  # to the minute's end, the sunset too: 2030-12-05T00:00:00Z
    date = _date(headers["date"])
    own_clock = wall[0]
    # Date is the client's now, to the second.
    assert 0 <= own_clock - date < 1
    # Whole seconds: an instant to wait for is rounded up and Date down, so a
    # reader of Date waits at most 2 s more than it must; never less.
    # X-RateLimit-Reset (Unix time): reset - now is the remaining time, by either clock.
    reset = int(headers["x-ratelimit-reset"])
    assert remaining <= reset - own_clock < remaining + 1
    assert remaining <= reset - date < remaining + 2
    # Retry-After as an HTTP-date: the same.
    retry = _date(headers["retry-after"])
    assert remaining <= retry - own_clock < remaining + 1
    assert remaining <= retry - date < remaining + 2
    # Sunset: a date announced, not a wait: the scenario's calendar, on any clock.
    assert headers["sunset"] == "Thu, 05 Dec 2030 00:00:00 GMT"


@pytest.mark.parametrize("form", ["seconds", "http-date"])
def test_urllib3_sleeping_as_told_on_a_manual_clock_is_not_flagged(form: str) -> None:
    """The issue's case: urllib3 reads the Retry-After, sleeps it (wall time), retries.

    The manual clock did not move, so the retry is refused again; but the
    client did as it was told, and the report must say so.
    """
    text = f"""
version: 1
clock: {{start: "2026-03-01T12:00:58.5Z", mode: manual}}
keys: [{{key: tight-key, plan: {{per_minute: 1, per_day: 100}}}}]
behaviour: {{retry_after: {form}}}
"""
    retry = urllib3.Retry(
        total=1,
        status_forcelist=[429],
        respect_retry_after_header=True,
        backoff_factor=0,
        raise_on_status=False,
    )
    with mock_server(text) as server, urllib3.PoolManager(retries=retry) as http:
        first = http.request("GET", server.api + "/pets", headers=auth("tight-key"), retries=False)
        assert first.status == 200
        last = http.request("GET", server.api + "/pets", headers=auth("tight-key"))
        assert last.status == 429  # the clock did not move: still refused
        with Control(server.url) as control:
            entries = control.requests()
            report = control.report().raw
    assert [e.response.status for e in entries] == [200, 429, 429], "urllib3 retried once"
    assert report["findings"] == [], report["findings"]


def test_moving_the_clock_back_after_a_ban_never_asks_for_a_wait_of_years() -> None:
    text = """
version: 1
clock: {start: "2026-03-01T12:00:00Z", mode: manual}
ban: {after_rejections: 2, within_seconds: 60, duration_seconds: 300}
keys: [{key: tight-key, plan: {per_minute: 1, per_day: 100}}]
"""
    with mock_server(text) as server, Control(server.url) as control:
        control.set_time("2030-01-01T00:00:00Z")
        with httpx.Client(base_url=server.api, headers=auth("tight-key")) as http:
            codes = [http.get("/pets").status_code for _ in range(3)]
            banned = http.get("/pets")
            assert codes == [200, 429, 429]
            assert banned.json()["code"] == "key_banned"
            control.set_time("2026-03-01T12:00:00Z")
            after = http.get("/pets")
        keys = control.keys()
        (key,) = [k for k in keys if k.key == "tight-key"]
        report = control.report().raw
    if after.status_code == 429:
        # The ban was carried over to the new instant: at most what was left of it.
        assert int(after.headers["retry-after"]) <= 300
        assert int(after.headers["x-ratelimit-reset"]) - _date(after.headers["date"]) <= 301
    assert key.banned_until is None or (
        parse_time(key.banned_until) - parse_time("2026-03-01T12:00:00Z") <= 300
    )
    # The move back began a new run: nothing sent after it is measured against the 2030
    # answers (the hammering before it is early, and is said to be).
    assert report["summary"]["runs"]["count"] >= 2
    after_seq = report["summary"]["last_seq"]
    for finding in report["findings"]:
        assert after_seq not in finding["seqs"] or finding["id"] == "ETQ003", finding


def test_a_request_after_the_clock_moved_back_is_not_early() -> None:
    text = """
version: 1
clock: {start: "2030-01-01T00:00:30Z", mode: manual}
keys: [{key: tight-key, plan: {per_minute: 1, per_day: 100}}]
"""
    with mock_server(text) as server, Control(server.url) as control:
        with httpx.Client(base_url=server.api, headers=auth("tight-key")) as http:
            assert [http.get("/pets").status_code for _ in range(2)] == [200, 429]
            # Back 10 s, then on 15 s: 00:00:35, "5 s after" the 429 that said 30 s, by
            # scenario time alone; but the requests counted in the future of the new
            # instant are not counted at it, and the move began a new run.
            control.set_time("2030-01-01T00:00:20Z")
            control.advance(15)
            assert http.get("/pets").status_code == 200
        findings = control.report().raw["findings"]
    assert findings == []


def test_the_wait_told_is_never_a_negative_or_absurd_number() -> None:
    # Guard against any header computed across clocks: every figure is 0..one day.
    wall = [WALL]
    with _app(_scenario("manual"), "manual", wall) as client:
        headers = _refused(client).headers
    assert 1 <= int(headers["retry-after"]) <= 86400
    (minute_t,) = re.findall(r'"minute";r=\d+;t=(\d+)', headers["ratelimit"])
    assert 0 <= int(minute_t) <= 60
    assert math.isclose(int(headers["retry-after"]), 30)
