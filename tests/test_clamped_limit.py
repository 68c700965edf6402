"""Issue 25: a listing whose ``limit`` was above the maximum and taken as it may say so.

Corral clamps ``limit=500`` to 100 and adds ``Warning: 299 - "limit 500 is above 100;
100 used"``; the mock clamped silently, so a client that logs the warning passed against
the provider and failed against the mock. ``http.advisory.clamped_limit`` states the
header; over a real uvicorn process (in Redis too under ``MOCKSTORE_TEST_STATE=redis``),
and in the served document.
"""

from __future__ import annotations

import httpx
from hypothesis import given, settings
from hypothesis import strategies as st

from mockstore.http_semantics import HttpSemantics
from mockstore.scenario import load_scenario
from tests.support import mock_server

KEY = {"Authorization": "Bearer clamp-key"}
SCENARIO = """\
version: 1
keys: [{key: clamp-key, plan: pro}]
behaviour: {limit_above_maximum: clamp}
http:
  advisory:
    clamped_limit:
      header: Warning
      value: '299 - "limit {limit} is above {maximum}; {maximum} used"'
"""


def test_a_clamped_limit_carries_the_advisory_header_and_no_other_listing_does() -> None:
    with mock_server(SCENARIO) as api, httpx.Client(base_url=api.api, headers=KEY) as http:
        clamped = http.get("/pets", params={"limit": 500})
        within = http.get("/pets", params={"limit": 100})
        refused = http.get("/pets", params={"limit": 0})
        document = httpx.get(api.url + "/__mockstore/openapi.json").json()
    assert clamped.status_code == 200
    assert clamped.headers["warning"] == '299 - "limit 500 is above 100; 100 used"'
    assert within.status_code == 200 and "warning" not in within.headers
    assert refused.status_code == 400 and "warning" not in refused.headers
    headers = document["paths"]["/pets"]["get"]["responses"]["200"]["headers"]
    assert "Warning" in headers


def test_without_the_setting_a_clamped_limit_is_silent_as_before() -> None:
    plain = SCENARIO.split("http:")[0]
    with mock_server(plain) as api, httpx.Client(base_url=api.api, headers=KEY) as http:
        clamped = http.get("/pets", params={"limit": 500})
    assert clamped.status_code == 200 and "warning" not in clamped.headers


@settings(max_examples=50)
@given(limit=st.integers(min_value=-5, max_value=10**20))
def test_the_header_is_there_exactly_when_the_limit_is_above_the_maximum(limit: int) -> None:
    semantics = HttpSemantics(load_scenario(SCENARIO))
    header = semantics.clamp_header("listPets", 200, f"limit={limit}".encode())
    assert (header is not None) is (limit > 100)
    if header is not None:
        assert header == (b"warning", f'299 - "limit {limit} is above 100; 100 used"'.encode())
