"""A window length per plan (``plans.<name>.minute_seconds``, ``day_seconds``), over HTTP.

Corral's gateway (Kong with per-consumer configuration) counts its ``hobby`` plan 5
per 5 s while every other plan counts per minute: one scenario, one algorithm, a
length per plan. Through ``MockServer`` on a manual clock; ``MOCKSTORE_TEST_STATE=redis``
runs the same tests with the state in Redis, where the request script counts each
plan over its own length (``tests/test_limiter_twins.py`` holds Python and Lua alike).
Nothing here sleeps.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mockstore.scenario import ScenarioError, load_scenario
from tests.support import mock_server
from tests.test_limiter import Mock, figures

KEYS = (
    "plans: {sandbox: {per_minute: 2, per_day: 50, minute_seconds: 10}}\n"
    "keys:\n"
    "  - {key: hobby, plan: {per_minute: 5, per_day: 100, minute_seconds: 5}}\n"
    "  - {key: k, plan: {per_minute: 3, per_day: 100}}\n"
    "  - {key: sand, plan: sandbox}\n"
)


@pytest.fixture
def serve() -> Iterator[Callable[[str], Mock]]:
    """``serve(text)``: a client of a server of ``text`` (stopped after the test)."""
    opened: list[Any] = []

    def start(text: str) -> Mock:
        context = mock_server(text)
        opened.append(context)
        return Mock(context.__enter__().url)

    yield start
    for context in reversed(opened):
        context.__exit__(None, None, None)


def scenario(body: str = "", start: str = "2026-03-01T12:00:30Z") -> str:
    return (
        f"version: 1\nclock: {{start: {start!r}, mode: manual, headers: scenario}}\n" + KEYS + body
    )


def test_each_plan_counts_its_minute_over_its_own_length(serve: Callable[[str], Mock]) -> None:
    mock = serve(scenario())
    # 12:00:30 lies on the grids of 5 s, 10 s and 60 s: hobby's window ends at 12:00:35,
    # sandbox's at 12:00:40, the scenario's minute at 12:01:00.
    assert [figures(mock.get("hobby"))[1:] for _ in range(5)] == [
        (left, "1772366435") for left in (4, 3, 2, 1, 0)
    ]
    assert figures(mock.get("sand")) == (2, 1, "1772366440")
    assert [figures(mock.get("k"))[1:] for _ in range(3)] == [
        (left, "1772366460") for left in (2, 1, 0)
    ]
    refused = mock.get("hobby")
    assert refused.status_code == 429
    assert refused.headers["retry-after"] == "5"
    mock.advance(5)  # 12:00:35: hobby's next window; the minute still runs
    assert figures(mock.get("hobby")) == (5, 4, "1772366440")
    assert mock.get("k").headers["retry-after"] == "25"
    assert figures(mock.get("sand")) == (2, 0, "1772366440")
    mock.advance(5)  # 12:00:40: sandbox's next window
    assert figures(mock.get("sand")) == (2, 1, "1772366450")


def test_a_plans_own_length_keeps_the_scenarios_algorithm_and_draft_names(
    serve: Callable[[str], Mock],
) -> None:
    mock = serve(
        scenario(
            "ratelimit:\n"
            "  minute: {algorithm: sliding_window}\n"
            "  counts: attempts\n"
            "  headers: {draft: success, policies: {minute: burst, day: daily}}\n"
        )
    )
    ok = mock.get("hobby")
    assert ok.headers["ratelimit-policy"] == '"burst";q=5;w=5, "daily";q=100;w=86400'
    assert mock.get("k").headers["ratelimit-policy"] == '"burst";q=3;w=60, "daily";q=100;w=86400'
    for _ in range(4):
        mock.get("hobby")
    refused = mock.get("hobby")  # the sixth attempt, counted too
    assert refused.status_code == 429
    mock.advance(5)
    # A sliding-window counter over 5 s: at 12:00:35 the previous window (6 attempts)
    # still weighs in whole; a client that keeps sending stays refused.
    assert mock.get("hobby").status_code == 429
    mock.advance(5)  # 12:00:40: the 7 attempts of 12:00:30-35 no longer weigh
    assert mock.get("hobby").status_code == 200


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "plans: {odd: {per_minute: 2, minute_seconds: 7}}\n",
            "limits.yaml:2:46: $.plans.odd.minute_seconds: a fixed window on the clock's grid "
            "divides the day: 7 s does not (try 6 or 8)",
        ),
        (
            "keys: [{key: a, plan: {per_minute: 2, day_seconds: 7000}}]\n",
            "$.keys[0].plan.day_seconds: a fixed window on the clock's grid divides the day: "
            "7000 s does not",
        ),
        (
            "plans: {big: {per_minute: 2, minute_seconds: 90000}}\n",
            "$.plans.big.minute_seconds: must be at most 86400",
        ),
    ],
)
def test_a_length_no_window_can_have_is_refused_where_the_file_says_it(
    text: str, expected: str
) -> None:
    with pytest.raises(ScenarioError) as refused:
        load_scenario("version: 1\n" + text, "limits.yaml")
    found = [str(problem) for problem in refused.value.problems]
    assert any(expected in problem for problem in found), found


def test_a_length_off_the_grid_is_kept_by_windows_that_have_none() -> None:
    limits = load_scenario(
        "version: 1\nplans: {odd: {per_minute: 2, minute_seconds: 7}}\n"
        "ratelimit: {minute: {algorithm: token_bucket}}\n"
    ).ratelimit
    assert limits.lengths_per_plan and limits.classic_windows is None


def test_plans_without_a_length_of_their_own_keep_mockstores_own_limiter() -> None:
    limits = load_scenario(
        "version: 1\nplans: {same: {per_minute: 2, minute_seconds: 60}}\n"
    ).ratelimit
    assert not limits.lengths_per_plan and limits.classic_windows == "clock"
