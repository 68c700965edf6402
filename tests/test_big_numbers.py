"""Numbers of any length in a path or a query are a 400 naming the parameter, never a 5xx.

Python refuses to convert integers past 4,300 digits (a guard against slow
conversions); on main that surfaced as a bare text/plain 500 with no rate-limit
headers and no journal entry. Real HTTP against one server.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support import LiveServer, assert_conforms, auth, examples, live_server

SCENARIO = """\
version: 1
name: numbers
keys:
  - {key: num-key, plan: {per_minute: 100000000, per_day: 1000000000}}
pets:
  - {id: 1, name: Rex, categoryId: 1, status: available}
"""
KEY = auth("num-key")


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    with live_server(env={"MOCKSTORE_SCENARIO_YAML": SCENARIO}) as running:
        yield running


def _last_entry(server: LiveServer) -> dict:
    journal = httpx.get(server.url + "/__mockstore/requests", timeout=30).json()
    return journal["entries"][-1]


@pytest.mark.parametrize("digits", [4300, 4301, 5000, 15_000])
def test_a_huge_pet_id_is_a_400_naming_it(server: LiveServer, digits: int) -> None:
    response = httpx.get(f"{server.api}/pets/{'9' * digits}", headers=KEY, timeout=30)
    assert response.status_code == 400, response.text[:200]
    body = assert_conforms(response)  # an Error, with the three X-RateLimit headers
    assert body["code"] == "invalid_parameter"
    assert "petId" in body["message"]
    assert "x-request-id" in response.headers
    entry = _last_entry(server)
    assert entry["request_id"] == response.headers["x-request-id"]
    assert entry["response"]["status"] == 400


@pytest.mark.parametrize("digits", [4300, 4301, 5000, 15_000])
def test_a_huge_limit_is_a_400_naming_it(server: LiveServer, digits: int) -> None:
    response = httpx.get(f"{server.api}/pets?limit={'1' * digits}", headers=KEY, timeout=30)
    assert response.status_code == 400, response.text[:200]
    body = assert_conforms(response)
    assert body["code"] == "invalid_parameter"
    assert "limit" in body["message"]
    assert len(body["message"]) < 300, "the message does not echo the whole number"


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    sign=st.sampled_from(["", "-", "+"]),
    zeros=st.integers(min_value=0, max_value=6000),
    digits=st.text(alphabet="0123456789", min_size=1, max_size=6000),
    where=st.sampled_from(["petId", "limit"]),
)
def test_any_integer_text_is_answered_without_a_5xx(
    server: LiveServer, sign: str, zeros: int, digits: str, where: str
) -> None:
    number = sign + "0" * zeros + digits
    if where == "petId":
        url = f"{server.api}/pets/{number}"
    else:
        url = f"{server.api}/pets?limit={number.replace('+', '%2B')}"
    response = httpx.get(url, headers=KEY, timeout=30)
    assert response.status_code < 500, response.text[:200]
    body = assert_conforms(response)
    # Decimal digits only, an optional minus (README, Assumptions): "+5" is refused.
    significant = number.lstrip("-").lstrip("0") or "0"
    value = None
    if sign != "+" and len(significant) < 30:
        value = -int(significant) if sign == "-" else int(significant)
    if where == "limit":
        if value is not None and 1 <= value <= 100:
            assert response.status_code == 200
        else:
            assert response.status_code == 400 and "limit" in body["message"]
    elif value is not None and -(2**63) <= value < 2**63:
        assert response.status_code in (200, 404)
    else:
        assert response.status_code == 400 and "petId" in body["message"]
