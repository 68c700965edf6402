"""Maintenance windows (``maintenance``): paths refused for a while on the scenario clock, with
``Retry-After`` to the window's end in the form the provider writes it.

Issue 25 found a provider answering ``/v1/store/*`` 503 with ``Retry-After`` as an
HTTP-date; the mock had no way to say so. Every window here is opened and closed
by moving the manual clock, never by waiting. Over a real uvicorn process (in
Redis too under ``MOCKSTORE_TEST_STATE=redis``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mockstore.scenario import ScenarioError, load_scenario
from mockstore.scenario.maintenance_section import Daily
from tests.support import LiveServer, mock_server

KEY = {"Authorization": "Bearer main-key"}
BASE = """\
version: 1
clock: {start: 2026-03-01T12:00:00Z, mode: manual, headers: scenario}
keys: [{key: main-key, plan: {per_minute: 10, per_day: 100}}]
"""


def _client(api: LiveServer, **headers: str) -> httpx.Client:
    return httpx.Client(base_url=api.api, headers=headers)


def test_a_window_of_the_store_at_the_gateway_with_an_http_date() -> None:
    scenario = BASE + (
        "maintenance:\n"
        "  - {name: store-upgrade, paths: [/store], between_seconds: [60, 660],"
        " retry_after: http-date}\n"
    )
    with mock_server(scenario) as api, _client(api, **KEY) as http:
        before = http.get("/store/orders")
        api.mock.control.advance(90)
        during = http.get("/store/orders")
        anonymous = http.get("/store/orders", headers={"Authorization": ""})
        pets = http.get("/pets")
        api.mock.control.advance(570)
        after = http.get("/store/orders")
        entry = api.mock.control.requests()[-4]
    assert before.status_code == 501 and after.status_code == 501
    assert during.status_code == anonymous.status_code == 503
    assert during.json() == {
        "code": "maintenance",
        "message": "/v1/store/orders is under maintenance until 2026-03-01T12:11:00Z",
        "status": 503,
    }
    assert parsedate_to_datetime(during.headers["retry-after"]) == datetime(
        2026, 3, 1, 12, 11, tzinfo=UTC
    )
    assert "x-ratelimit-remaining" not in during.headers  # at the gateway: not counted
    # The first request of the new minute the limiter sees: the refusals counted nothing.
    assert pets.status_code == 200 and pets.headers["x-ratelimit-remaining"] == "9"
    assert entry.rule == "store-upgrade"


@pytest.mark.parametrize(
    ("form", "header"), [("seconds", "571"), ("decimal", "570.5"), ("none", None)]
)
def test_retry_after_in_each_form(form: str, header: str | None) -> None:
    scenario = BASE + (f"maintenance:\n  - {{between_seconds: [0, 600.5], retry_after: {form}}}\n")
    with mock_server(scenario) as api, _client(api, **KEY) as http:
        api.mock.control.advance(30)
        answer = http.get("/pets")
    assert answer.status_code == 503
    assert answer.headers.get("retry-after") == header


def test_a_window_between_instants_with_its_own_status_code_and_message() -> None:
    scenario = BASE + (
        "maintenance:\n"
        "  - from: 2026-03-01T12:05:00Z\n"
        "    until: 2026-03-01T12:35:00Z\n"
        "    methods: [POST]\n"
        "    status: 502\n"
        "    code: SERVICE_DOWN\n"
        "    message: '{method} {path} is down until {until}'\n"
        "    stage: authenticated\n"
    )
    with mock_server(scenario) as api, _client(api, **KEY) as http:
        api.mock.control.advance(600)
        read = http.get("/pets")
        anonymous = http.post(
            "/pets", json={"name": "Rex", "categoryId": 1}, headers={"Authorization": ""}
        )
        write = http.post("/pets", json={"name": "Rex", "categoryId": 1})
        stored = api.mock.control.pets()
    assert read.status_code == 200
    assert anonymous.status_code == 401  # authenticated: the key first
    assert write.status_code == 502
    assert write.json()["code"] == "SERVICE_DOWN"
    assert write.json()["message"] == "POST /v1/pets is down until 2026-03-01T12:35:00Z"
    assert write.headers["retry-after"] == "1500"
    assert write.headers["x-ratelimit-remaining"] == "8"  # counted, as any request of a key
    assert all(pet["name"] != "Rex" for pet in stored)  # refused: nothing was stored


def test_until_further_notice() -> None:
    scenario = BASE + "maintenance:\n  - {from: 2026-03-01T11:00:00Z, retry_after: none}\n"
    with mock_server(scenario) as api, _client(api, **KEY) as http:
        answer = http.get("/pets")
    assert answer.status_code == 503
    assert "retry-after" not in answer.headers
    assert answer.json()["message"] == "/v1/pets is under maintenance until further notice"


def test_a_daily_window_in_a_time_zone() -> None:
    # 02:00-02:30 in Paris is 01:00-01:30 UTC in March (UTC+1).
    scenario = BASE.replace("12:00:00Z", "00:59:00Z") + (
        "maintenance:\n  - daily: {from: '02:00', until: '02:30', time_zone: Europe/Paris}\n"
    )
    with mock_server(scenario) as api, _client(api, **KEY) as http:
        before = http.get("/pets").status_code
        api.mock.control.advance(120)
        during = http.get("/pets")
        api.mock.control.advance(30 * 60)
        after = http.get("/pets").status_code
        api.mock.control.advance(86_400 - 31 * 60)
        next_day = http.get("/pets").status_code
    assert (before, during.status_code, after, next_day) == (200, 503, 200, 503)
    assert during.headers["retry-after"] == str(29 * 60)


def test_the_first_open_window_that_covers_a_request_decides() -> None:
    scenario = BASE + (
        "maintenance:\n"
        "  - {name: later, between_seconds: [100, 200], paths: [/pets]}\n"
        "  - {name: pets, between_seconds: [0, 200], paths: [/pets], status: 504}\n"
        "  - {name: store, between_seconds: [0, 200], paths: [/store, /pets/7]}\n"
    )
    with mock_server(scenario) as api, _client(api, **KEY) as http:
        pet = http.get("/pets/7").status_code
        listing = http.get("/pets").status_code
        orders = http.get("/store/orders").status_code
        petsy = http.get("/petsy").status_code  # a prefix covers whole segments only
    assert (pet, listing, orders, petsy) == (504, 504, 503, 404)


@pytest.mark.parametrize(
    ("window", "said"),
    [
        ("{between_seconds: [10, 5]}", "the start must be before the end"),
        ("{from: 2026-03-01T12:00:00Z, until: 2026-03-01T11:00:00Z}", "until must be after from"),
        ("{until: 2026-03-01T11:00:00Z, between_seconds: [0, 1]}", "until needs from"),
        ("{daily: {from: '02:00', until: '02:00'}}", "the same time of day"),
        ("{daily: {from: '02:00', until: '03:00', time_zone: Mars/Olympus}}", "not a time zone"),
        ("{from: 2026-03-01T12:00:00Z}", "no end to retry after"),
        ("{between_seconds: [0, 1], message: 'down {for}'}", "{for} names nothing"),
        ("{between_seconds: [0, 1], paths: [/v1/store]}", "write '/store'"),
        ("{paths: [/store]}", "a window needs one of between_seconds"),
    ],
)
def test_windows_that_cannot_be_are_refused_with_their_place(window: str, said: str) -> None:
    with pytest.raises(ScenarioError) as refused:
        load_scenario(f"version: 1\nmaintenance:\n  - {window}\n", "m.yaml")
    text = str(refused.value)
    assert said in text and text.startswith("m.yaml:3:"), text


@given(
    start=st.integers(0, 1439),
    length=st.integers(1, 1439),
    at=st.integers(0, 3 * 86_400),
)
def test_a_daily_window_is_open_exactly_in_its_minutes(start: int, length: int, at: int) -> None:
    end = (start + length) % 1440
    daily = Daily(start, end, "UTC")
    now = 1_767_225_600 + at  # a midnight UTC
    minute = (at // 60) % 1440
    inside = (start <= minute < end) if start < end else (minute >= start or minute < end)
    bounds = daily.bounds(now)
    assert (bounds is not None) == inside
    if bounds is not None:
        opened, closes = bounds
        assert opened <= now < closes
        assert closes - opened == length * 60


def test_a_refusal_after_the_key_runs_no_operation_and_fires_no_rule() -> None:
    scenario = BASE + (
        "maintenance:\n  - {paths: [/pets], between_seconds: [0, 10], stage: authenticated}\n"
        "faults:\n"
        "  - match: {operation: createPet, calls: [1]}\n"
        "    respond: {status: 503, body: {code: first_create, message: m, status: 503}}\n"
    )
    with mock_server(scenario) as api, _client(api, **KEY) as http:
        refused = http.post("/pets", json={"name": "Rex", "categoryId": 1})
        api.mock.control.advance(10)
        first = http.post("/pets", json={"name": "Rex", "categoryId": 1})
        second = http.post("/pets", json={"name": "Rex", "categoryId": 1})
        stored = [pet["id"] for pet in api.mock.control.pets()]
    assert refused.status_code == 503 and refused.json()["code"] == "maintenance"
    assert first.json()["code"] == "first_create"  # the rule's first call came after
    assert second.status_code == 201
    assert stored == [second.json()["id"]]  # only the create that was answered 201
