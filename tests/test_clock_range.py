"""Issue 19, finding 6: the clock stays within what a date can say, and nothing it reaches is a 500.

On main ``POST /__mockstore/clock {"set": "9999-12-31T23:59:59Z"}`` was
accepted; a second later the API, ``/health`` and ``/clock`` answered 500
(the year 10000), and ``requests.har`` stayed 500 after the clock was fixed
and the mock reset. A scenario starting at 9999-12-31T23:59:58Z passed
``validate``. The documented range is 1970-01-01T00:00:00Z to
9000-01-01T00:00:00Z, at the control API and in every scenario date-time.
"""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from mockstore.app import create_app
from tests.support import auth, examples

RANGE = "between 1970-01-01T00:00:00Z and 9000-01-01T00:00:00Z"
TOOL = {"X-Mockstore-Client": "tests"}


@pytest.fixture
def client() -> TestClient:
    return TestClient(create_app("default"), base_url="http://127.0.0.1")


def _everything_answers(client: TestClient) -> None:
    """No answer a client can ask for is a 500, whatever the clock says."""
    for path, headers in (
        ("/v1/pets", auth("pro")),
        ("/v1/pets/1", auth("pro")),
        ("/v1/pets", {}),
        ("/__mockstore/health", {}),
        ("/__mockstore/clock", {}),
        ("/__mockstore/requests", {}),
        ("/__mockstore/requests.har", {}),
        ("/__mockstore/report", {}),
        ("/__mockstore/report.html", {}),
        ("/__mockstore/keys", {}),
    ):
        answer = client.get(path, headers=headers)
        assert answer.status_code < 500, (path, answer.status_code, answer.text[:200])


def test_a_time_past_the_range_is_refused_and_changes_nothing(client: TestClient) -> None:
    before = client.get("/__mockstore/clock").json()["now"]
    answer = client.post("/__mockstore/clock", json={"set": "9999-12-31T23:59:59Z"})
    assert answer.status_code == 400
    body = answer.json()
    assert body["code"] == "invalid_request" and RANGE in body["message"]
    assert client.get("/__mockstore/clock").json()["now"][:16] == before[:16]
    _everything_answers(client)


@pytest.mark.parametrize(
    "move",
    [
        {"set": "1969-12-31T23:59:59Z"},
        {"set": "9000-01-01T00:00:01Z"},
        {"advance_seconds": 1e300},
        {"advance_seconds": -1e12},
        {"advance_seconds": 10**400},
    ],
)
def test_every_move_outside_the_range_is_a_400(client: TestClient, move: dict) -> None:
    answer = client.post("/__mockstore/clock", json=move)
    assert answer.status_code == 400, answer.text
    assert RANGE in answer.json()["message"]


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    st.datetimes(
        min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.just(UTC)
    )
)
def test_no_time_the_clock_accepts_makes_anything_500(client: TestClient, when: datetime) -> None:
    answer = client.post("/__mockstore/clock", json={"set": when.isoformat()})
    assert answer.status_code in (200, 400), answer.text
    _everything_answers(client)
    # Reset puts the running clock back to its start: the journal's entries
    # from any time the clock accepted stay readable.
    assert client.post("/__mockstore/reset", headers=TOOL).status_code == 200
    assert client.get("/__mockstore/requests.har").status_code == 200


def test_the_latest_time_leaves_a_thousand_years_of_room(client: TestClient) -> None:
    answer = client.post("/__mockstore/clock", json={"set": "9000-01-01T00:00:00Z"})
    assert answer.status_code == 200
    # A ban, a day's window, a Retry-After: all still dates.
    for _ in range(3):
        assert client.get("/v1/pets", headers=auth("free")).status_code == 200
    _everything_answers(client)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("clock: {start: '9999-12-31T23:59:58Z'}", "9999-12-31T23:59:58Z"),
        ("clock: {start: '1960-01-01T00:00:00Z'}", "1960-01-01T00:00:00Z"),
        ("behaviour: {sunset: '9500-01-01T00:00:00Z'}", "9500-01-01T00:00:00Z"),
    ],
)
def test_validate_refuses_a_time_outside_the_range(tmp_path: Path, field: str, value: str) -> None:
    path = tmp_path / "late.yaml"
    path.write_text(f"version: 1\n{field}\n")
    done = subprocess.run(
        [sys.executable, "-m", "mockstore", "validate", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert f"{path}:2:" in done.stderr
    assert RANGE in done.stderr and value in done.stderr


def test_a_scenario_may_start_anywhere_in_the_range() -> None:
    latest = (datetime(9000, 1, 1, tzinfo=UTC) - timedelta(seconds=1)).isoformat()
    app = create_app(f"version: 1\nclock: {{start: '{latest}', mode: manual}}\n")
    with TestClient(app, base_url="http://127.0.0.1") as client:
        _everything_answers(client)
