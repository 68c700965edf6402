"""Several limits at once, each refusing in its own way (``ratelimit.refusal``), over HTTP.

Aviary's gateway stacks two policies, as nginx does: a GCRA burst (``limit_req``)
refused ``503 E5031`` with no ``Retry-After``, checked first, beside an hourly quota
refused ``429 E4291`` with ``Retry-After`` as an HTTP-date. Through ``MockServer`` on a
manual clock; ``MOCKSTORE_TEST_STATE=redis`` runs the same tests with the state in
Redis (``tests/test_limiter_twins.py`` holds the rule's Python and Lua twins alike).
Nothing here sleeps.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from mockstore.scenario import ScenarioError, load_scenario
from tests.redis_server import RedisServer
from tests.support import mock_server
from tests.test_limiter import Mock

# 12:00:30: three at once spend the burst (3 per 3 s, one a second) and the hour's 3.
SCENARIO = """\
version: 1
clock: {{start: "2026-03-01T12:00:30Z", mode: manual, headers: scenario}}
keys: [{{key: k, plan: {{per_minute: 3, per_day: 3}}}}]
ratelimit:
  minute: {{algorithm: leaky_bucket, seconds: 3}}
  day: {{seconds: 3600}}
  refusal:
    precedence: {precedence}
    minute: {{status: 503, code: E5031, retry_after: none}}
    day: {{status: 429, code: E4291, retry_after: http-date}}
"""
HOUR_END = "Sun, 01 Mar 2026 13:00:00 GMT"


@pytest.fixture
def serve() -> Iterator[Callable[..., Mock]]:
    opened: list[Any] = []

    def start(text: str, **options: Any) -> Mock:
        context = mock_server(text, **options)
        opened.append(context)
        return Mock(context.__enter__().url)

    yield start
    for context in reversed(opened):
        context.__exit__(None, None, None)


def refusal(answer: httpx.Response) -> tuple[int, str, str | None]:
    body = answer.json()
    assert body["status"] == answer.status_code and body["message"]
    return answer.status_code, body["code"], answer.headers.get("retry-after")


@pytest.mark.parametrize(
    ("precedence", "both_block"),
    [
        ("minute", (503, "E5031", None)),  # the burst is checked first, as nginx does
        ("longest", (429, "E4291", HOUR_END)),  # the hour holds out longest
        ("day", (429, "E4291", HOUR_END)),
    ],
)
def test_each_window_refuses_with_its_own_status_code_and_retry_after(
    serve: Callable[..., Mock], precedence: str, both_block: tuple[int, str, str | None]
) -> None:
    mock = serve(SCENARIO.format(precedence=precedence))
    assert [mock.get().status_code for _ in range(3)] == [200, 200, 200]
    # The burst and the hour both block: the precedence names the refusing window.
    assert refusal(mock.get()) == both_block
    mock.advance(1)  # the bucket lets one through again; the hour is still spent
    assert refusal(mock.get()) == (429, "E4291", HOUR_END)


def test_the_burst_alone_refuses_with_503_and_no_retry_after(
    serve: Callable[..., Mock],
) -> None:
    mock = serve(SCENARIO.format(precedence="minute").replace("per_day: 3", "per_day: 50"))
    assert [mock.get().status_code for _ in range(3)] == [200, 200, 200]
    refused = mock.get()
    assert refusal(refused) == (503, "E5031", None)
    assert refused.headers["x-ratelimit-remaining"] is not None
    mock.advance(1)
    assert mock.get().status_code == 200


def test_each_window_refuses_alike_through_two_processes_on_redis(
    serve: Callable[..., Mock], redis_server: RedisServer
) -> None:
    text = SCENARIO.format(precedence="minute")
    a = serve(text, state=redis_server.url)
    b = serve(text, state=redis_server.url)
    assert [process.get().status_code for process in (a, b, a)] == [200, 200, 200]
    assert refusal(b.get()) == (503, "E5031", None)
    a.advance(1)
    assert refusal(b.get()) == (429, "E4291", HOUR_END)


def test_a_window_refused_429_without_retry_after_is_refused_where_the_file_says_it() -> None:
    text = (
        "version: 1\nratelimit:\n  refusal:\n"
        "    minute: {status: 429, code: E4291, retry_after: none}\n"
    )
    with pytest.raises(ScenarioError) as refused:
        load_scenario(text, "limits.yaml")
    found = [str(problem) for problem in refused.value.problems]
    assert any(
        "limits.yaml:4:" in problem
        and "$.ratelimit.refusal.minute.retry_after: a 429 carries Retry-After" in problem
        for problem in found
    ), found


def test_a_scenario_without_own_refusals_keeps_mockstores_own_limiter() -> None:
    limits = load_scenario("version: 1\nratelimit: {refusal: {precedence: longest}}\n").ratelimit
    assert limits.classic
    stacked = load_scenario("version: 1\nratelimit: {refusal: {precedence: minute}}\n")
    assert not stacked.ratelimit.classic


def test_the_served_document_lists_each_windows_refusal(serve: Callable[..., Mock]) -> None:
    mock = serve(SCENARIO.format(precedence="minute"))
    document = mock.http.get("/__mockstore/openapi.json").json()
    responses = document["paths"]["/pets"]["get"]["responses"]
    assert "rate_limited by the minute window (code E5031)" in responses["503"]["description"]
    assert "rate_limited by the day window (code E4291)" in responses["429"]["description"]
    assert "Retry-After" not in responses["503"].get("headers", {})
