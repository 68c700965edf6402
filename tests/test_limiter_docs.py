"""The rate-limiting examples of the docs (``examples/ratelimit/``) do what the page says.

Each is served as a user would serve it, and held to the behaviour
``docs/rate-limits-and-time.md`` describes for it. ``MOCKSTORE_TEST_STATE=redis``
runs them with the state in Redis too (``.ci/run``).
"""

from __future__ import annotations

from collections.abc import Iterator
from email.utils import parsedate_to_datetime
from pathlib import Path

import httpx
import pytest

from tests.support import mock_server

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "ratelimit"


def date(answer: httpx.Response) -> float:
    return parsedate_to_datetime(answer.headers["date"]).timestamp()


class Served:
    def __init__(self, url: str) -> None:
        self.http = httpx.Client(base_url=url, timeout=10)

    def get(self, key: str | None, path: str = "/v1/pets?limit=1") -> httpx.Response:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return self.http.get(path, headers=headers)

    def advance(self, seconds: float) -> None:
        assert self.http.post("/__mockstore/clock", json={"advance_seconds": seconds}).is_success


@pytest.fixture
def example(request: pytest.FixtureRequest) -> Iterator[Served]:
    with mock_server(str(EXAMPLES / request.param)) as server:
        yield Served(server.url)


@pytest.mark.parametrize("example", ["gateway.yaml"], indirect=True)
def test_the_gateway_counts_every_attempt_of_a_caller_without_a_key(example: Served) -> None:
    answers = [example.get(None) for _ in range(25)]
    assert {a.status_code for a in answers} == {401}
    # A minute from now, in milliseconds (on the wall clock, as Date: clock.headers).
    assert (
        59_000 <= int(answers[0].headers["x-ratelimit-reset"]) - 1000 * date(answers[0]) <= 61_000
    )
    refused = example.get(None)
    assert (refused.status_code, refused.headers["retry-after"]) == (429, "60.0")
    assert "ratelimit-policy" not in refused.headers  # the draft headers: 2xx only
    example.advance(59.9)
    assert example.get(None).headers["retry-after"] == "0.1"  # still refused: counted too
    example.advance(60)
    assert example.get(None).status_code == 401  # waited as told


@pytest.mark.parametrize("example", ["gateway.yaml"], indirect=True)
def test_the_gateways_day_turns_at_midnight_in_new_york(example: Served) -> None:
    ok = example.get("sk_test_starter")
    assert ok.headers["ratelimit-policy"] == '"burst";q=100;w=60, "daily";q=5000;w=86400'
    # 12:00 UTC is 07:00 in New York: 17 hours to its midnight.
    assert ok.headers["ratelimit"] == '"burst";r=99;t=60, "daily";r=4999;t=61200'


@pytest.mark.parametrize("example", ["github.yaml"], indirect=True)
def test_github_states_used_and_resource_and_refuses_with_403(example: Served) -> None:
    ok = example.get("ghp_test")
    headers = ok.headers
    assert (headers["x-ratelimit-limit"], headers["x-ratelimit-used"]) == ("5000", "1")
    assert headers["x-ratelimit-resource"] == "core"
    # 13:00 UTC, the hour's end: an hour after 12:00 (on the wall clock, as Date).
    assert 3599 <= int(headers["x-ratelimit-reset"]) - date(ok) <= 3601
    issued = example.http.post(
        "/__mockstore/keys",
        json={"key": "spent", "plan": "authenticated", "used": {"minute": 5000}},
    )
    assert issued.status_code == 201, issued.text
    refused = example.get("spent")
    assert refused.status_code == 403
    assert refused.json()["code"] == "rate_limited"
    assert refused.headers["retry-after"] == "3600"


@pytest.mark.parametrize("example", ["per-plan.yaml"], indirect=True)
def test_each_plan_counts_over_its_own_window(example: Served) -> None:
    hobby = [example.get("hobby-key") for _ in range(5)]
    assert hobby[0].headers["ratelimit-policy"] == '"burst";q=5;w=5, "daily";q=100;w=86400'
    studio = example.get("studio-key")
    assert studio.headers["ratelimit-policy"] == '"burst";q=300;w=60, "daily";q=10000;w=86400'
    refused = example.get("hobby-key")
    # The window of 5 s turns at 12:00:35; its 5 requests weigh 4 or less from 12:00:36.
    assert (refused.status_code, refused.headers["retry-after"]) == (429, "6")
    example.advance(6)
    assert example.get("hobby-key").status_code == 200
    assert example.get("studio-key").headers["x-ratelimit-remaining"] == "298"


@pytest.mark.parametrize("example", ["kong.yaml"], indirect=True)
def test_kongs_sliding_counter_and_its_per_window_headers(example: Served) -> None:
    answers = [example.get("kong-consumer") for _ in range(10)]
    assert answers[-1].headers["x-ratelimit-remaining-minute"] == "0"
    assert answers[-1].headers["x-ratelimit-limit-hour"] == "100"
    assert answers[-1].headers["x-ratelimit-remaining-hour"] == "90"
    refused = example.get("kong-consumer")
    assert (refused.status_code, refused.headers["retry-after"]) == (429, "16")
    example.advance(16)
    assert example.get("kong-consumer").status_code == 200


@pytest.mark.parametrize("example", ["stripe.yaml"], indirect=True)
def test_a_token_bucket_of_25_a_second(example: Served) -> None:
    answers = [example.get("sk_live_test") for _ in range(25)]
    assert [a.headers["x-ratelimit-reset"] for a in answers[:3]] == ["0.04", "0.08", "0.12"]
    refused = example.get("sk_live_test")
    assert (refused.status_code, refused.headers["retry-after"]) == (429, "0.04")
    example.advance(0.04)
    assert example.get("sk_live_test").status_code == 200


@pytest.mark.parametrize("example", ["shopify.yaml"], indirect=True)
def test_shopifys_leaky_bucket_of_40(example: Served) -> None:
    assert {example.get("shpat_test").status_code for _ in range(40)} == {200}
    refused = example.get("shpat_test")
    assert (refused.status_code, refused.headers["retry-after"]) == (429, "0.5")
    example.advance(0.5)
    assert example.get("shpat_test").status_code == 200


@pytest.mark.parametrize("example", ["nginx.yaml"], indirect=True)
def test_nginx_refuses_with_503_and_leaves_callers_without_a_key_alone(example: Served) -> None:
    assert {example.get("nginx-client").status_code for _ in range(5)} == {200}
    refused = example.get("nginx-client")
    assert refused.status_code == 503 and "retry-after" not in refused.headers
    assert refused.json()["code"] == "service_unavailable"
    anonymous = [example.get(None) for _ in range(20)]
    assert {a.status_code for a in anonymous} == {401}
    assert all("x-ratelimit-limit" not in a.headers for a in anonymous)


@pytest.mark.parametrize("example", ["stacked.yaml"], indirect=True)
def test_a_burst_refused_503_beside_an_hourly_quota_refused_429(example: Served) -> None:
    admitted = [example.get("app-key") for _ in range(3)]
    assert [answer.status_code for answer in admitted] == [200, 200, 200]
    assert admitted[-1].headers["x-ratelimit-remaining"] == "97"  # the hour's
    burst = example.get("app-key")
    assert (burst.status_code, burst.json()["code"]) == (503, "slow_down")
    assert "retry-after" not in burst.headers
    example.advance(1)
    assert example.get("app-key").status_code == 200
    for _ in range(96):  # a request a second spends the rest of the hour
        example.advance(1)
        assert example.get("app-key").status_code == 200
    example.advance(1)
    quota = example.get("app-key")
    assert (quota.status_code, quota.json()["code"]) == (429, "quota_exceeded")
    assert quota.headers["retry-after"] == "Sun, 01 Mar 2026 13:00:00 GMT"
