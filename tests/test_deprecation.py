"""The deprecation of ``GET /pets/{petId}``: RFC 9745, RFC 8594, and 410 after the sunset.

The spec announces removal on 5 December 2030 and names ``GET /pets`` (with
the status filter) as the replacement; it gives no deprecation date, so the
mock's choice (``DEPRECATED_SINCE``) is read from the one place it lives.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient

from mockstore.scenario.model import DEPRECATED_SINCE, SUNSET
from tests.support import LiveServer, assert_conforms, auth, mock_server

SUNSET_HEADER = "Thu, 05 Dec 2030 00:00:00 GMT"
SUCCESSOR = '</v1/pets>; rel="successor-version"'
DEPRECATION_HEADERS = ("deprecation", "sunset", "link")


def assert_deprecation_headers(response: Any) -> None:
    deprecation = response.headers["deprecation"]
    # RFC 9745: an sf-date, "@" then integer Unix seconds (not the old "true").
    assert re.fullmatch(r"@-?[0-9]+", deprecation), deprecation
    since = int(deprecation[1:])
    assert since == DEPRECATED_SINCE
    assert since <= SUNSET, "deprecation must not come after the sunset"
    assert response.headers["sunset"] == SUNSET_HEADER
    # RFC 8594 uses an HTTP-date, always GMT; it names the same instant.
    assert parsedate_to_datetime(response.headers["sunset"]) == datetime(2030, 12, 5, tzinfo=UTC)
    assert parsedate_to_datetime(response.headers["sunset"]).timestamp() == SUNSET
    assert response.headers["link"] == SUCCESSOR
    assert len(response.headers.get_list("deprecation")) == 1


def assert_no_deprecation_headers(response: Any) -> None:
    for header in DEPRECATION_HEADERS:
        assert header not in response.headers, (header, response.request.url)


@pytest.mark.parametrize("path", ["/v1/pets/1", "/v1/pets/0", "/v1/pets/-1", "/v1/pets/abc"])
def test_every_get_pet_answer_carries_the_headers(client: TestClient, path: str) -> None:
    response = client.get(path, headers=auth("pro"))
    assert response.status_code in {200, 400, 404}
    assert_conforms(response)
    assert_deprecation_headers(response)


def test_other_operations_carry_none_of_them(client: TestClient) -> None:
    key = auth("pro")
    responses = [
        client.get("/v1/pets", headers=key),
        client.get("/v1/pets", params={"status": "sold"}, headers=key),
        client.post("/v1/pets", json={"name": "A", "categoryId": 1}, headers=key),
        client.post("/v1/pets", json={"name": "A"}, headers=key),
        client.get("/v1/store/orders", headers=key),
        client.get("/v1/nothing", headers=key),
        client.delete("/v1/pets", headers=key),
        client.get("/v1/pets"),
    ]
    for response in responses:
        assert_conforms(response)
        assert_no_deprecation_headers(response)


def _set_clock(client: TestClient, when: str) -> None:
    assert client.post("/__mockstore/clock", json={"set": when}).status_code == 200


def test_get_pet_is_gone_after_the_sunset(client: TestClient) -> None:
    _set_clock(client, "2030-12-04T23:59:59Z")
    before = client.get("/v1/pets/1", headers=auth("pro"))
    assert before.status_code == 200
    assert_deprecation_headers(before)
    # The manual clock moves by advance; one second takes it to the sunset instant.
    assert client.post("/__mockstore/clock", json={"advance_seconds": 1}).status_code == 200
    for path in ("/v1/pets/1", "/v1/pets/987654"):
        gone = client.get(path, headers=auth("pro"))
        assert gone.status_code == 410
        body = assert_conforms(gone)
        assert body["code"] == "gone"
        assert "/pets" in body["message"]
        assert_deprecation_headers(gone)
    # The replacement still works and still carries no deprecation headers.
    listed = client.get("/v1/pets", params={"status": "available"}, headers=auth("pro"))
    assert listed.status_code == 200
    assert_conforms(listed)
    assert_no_deprecation_headers(listed)


def test_gone_long_after_the_sunset_too(client: TestClient) -> None:
    _set_clock(client, "2031-06-01T00:00:00Z")
    gone = client.get("/v1/pets/1", headers=auth("pro"))
    assert gone.status_code == 410
    assert_conforms(gone)
    assert_deprecation_headers(gone)


def test_headers_then_gone_over_real_http(fresh_server: LiveServer) -> None:
    with fresh_server.client(headers=auth("pro")) as http:
        found = http.get("/v1/pets/1")
        missing = http.get("/v1/pets/987654")
        assert found.status_code == 200
        assert assert_conforms(found)["id"] == 1
        assert_deprecation_headers(found)
        assert missing.status_code == 404
        assert assert_conforms(missing)["code"] == "not_found"
        assert_deprecation_headers(missing)
        moved = http.post("/__mockstore/clock", json={"set": "2030-12-05T00:00:01Z"})
        assert moved.status_code == 200
        gone = http.get("/v1/pets/1")
    assert gone.status_code == 410
    assert assert_conforms(gone)["code"] == "gone"
    # The clock was set years ahead of the wall clock: Date is the wall clock's now
    # (clock.headers: wall), the sunset the date announced, as the message says it.
    assert_deprecation_headers(gone)
    assert "removed on 5 December 2030" in gone.json()["message"]


def test_the_410_names_the_scenarios_sunset_as_the_sunset_header_does() -> None:
    from mockstore.app import create_app
    from mockstore.clock import Clock
    from mockstore.scenario import load_scenario

    text = """
version: 1
keys: [{key: pro-key, plan: pro}]
behaviour: {sunset: "2027-01-01T00:00:00Z"}
"""
    clock = Clock(start=datetime(2027, 1, 2, tzinfo=UTC).timestamp(), mode="manual")
    clock.wall = clock.now  # the client's clock frozen with the scenario's: dates as written
    with TestClient(create_app(load_scenario(text, "sunset.yaml"), clock=clock)) as client:
        gone = client.get("/v1/pets/1", headers=auth("pro"))
        assert gone.status_code == 410
        assert gone.headers["sunset"] == "Fri, 01 Jan 2027 00:00:00 GMT"
        message = assert_conforms(gone)["message"]
        assert "1 January 2027" in message and "2030" not in message


# -- announced dates are facts, on any clock ------------------------------------------------

CLOCKS = [
    ("real time, set past the sunset", "", "2030-12-05T00:00:01Z"),
    ("manual, started past the sunset", "clock: {start: '2031-06-01T00:00:00Z', mode: manual",
     None),
    ("manual, started before", "clock: {start: '2026-03-01T12:00:00Z', mode: manual",
     "2030-12-05T00:00:00Z"),
    ("running, started before", "clock: {start: '2026-03-01T12:00:00.7Z'",
     "2030-12-06T00:00:00Z"),
    ("running from a start in 2030", "clock: {start: '2030-12-04T23:59:59.5Z'", None),
]  # fmt: skip


@pytest.mark.parametrize("headers", ["wall", "scenario"])
@pytest.mark.parametrize(("name", "clock", "moved_to"), CLOCKS, ids=[c[0] for c in CLOCKS])
def test_announced_dates_are_the_scenarios_calendar_on_any_clock(
    name: str, clock: str, moved_to: str | None, headers: str
) -> None:
    """Deprecation, Sunset and the 410's message state the calendar dates, whatever the
    clock and clock.headers; only waits, window ends and Date follow the headers' clock."""
    if clock:
        clock += f", headers: {headers}}}"
    else:
        clock = f"clock: {{headers: {headers}}}"
    text = f"version: 1\nname: calendar\n{clock}\nkeys: [{{key: pro-key, plan: pro}}]\n"
    with mock_server(text) as server, httpx.Client(base_url=server.api) as http:
        answers = [http.get("/pets/1", headers=auth("pro"))]
        if moved_to is not None:
            moved = http.post(server.control_url + "/clock", json={"set": moved_to})
            assert moved.status_code == 200, moved.text
            answers.append(http.get("/pets/1", headers=auth("pro")))
    for answer in answers:
        assert answer.status_code in (404, 410), answer.text  # (no pets: 404 until then)
        assert_deprecation_headers(answer)
        if answer.status_code == 410:
            message = assert_conforms(answer)["message"]
            # One date for one fact: the message's is the header's.
            assert "removed on 5 December 2030" in message and "2031" not in message
    assert answers[-1].status_code == 410 or moved_to is None


@pytest.mark.parametrize("headers", ["wall", "scenario"])
def test_a_scenarios_own_dates_are_stated_as_written(headers: str) -> None:
    text = f"""
version: 1
clock: {{start: "2027-06-01T12:00:00.25Z", mode: manual, headers: {headers}}}
keys: [{{key: pro-key, plan: pro}}]
behaviour:
  deprecated_since: "2026-07-01T00:00:00Z"
  sunset: "2027-01-01T00:00:00Z"
  deprecation_format: http-date
"""
    with mock_server(text) as server, httpx.Client(base_url=server.api) as http:
        gone = http.get("/pets/1", headers=auth("pro"))
    assert gone.status_code == 410
    assert gone.headers["deprecation"] == "Wed, 01 Jul 2026 00:00:00 GMT"
    assert gone.headers["sunset"] == "Fri, 01 Jan 2027 00:00:00 GMT"
    assert "removed on 1 January 2027" in assert_conforms(gone)["message"]
