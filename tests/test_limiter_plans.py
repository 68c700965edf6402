"""A window length per plan (``plans.<name>.minute_seconds``, ``day_seconds``), over HTTP.

Corral's gateway (Kong with per-consumer configuration) counts its ``hobby`` plan 5
per 5 s while every other plan counts per minute: one scenario, one algorithm, a
length per plan. Through ``MockServer`` on a manual clock; ``MOCKSTORE_TEST_STATE=redis``
runs the same tests with the state in Redis, where the request script counts each
plan over its own length (``tests/test_limiter_twins.py`` holds Python and Lua alike).
Nothing here sleeps.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from mockstore.scenario import ScenarioError, load_scenario
from tests.redis_server import RedisServer
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


# -- a plan of its own issued at run time (the control API's inline plan) -----------------

LATE = {"key": "late", "plan": {"per_minute": 5, "per_day": 100, "minute_seconds": 5}}


def _issue(mock: Mock, body: dict[str, Any]) -> httpx.Response:
    return mock.http.post("/__mockstore/keys", json=body)


@pytest.mark.parametrize(
    "settings",
    [
        "",  # a plan of the scenario has its own length already
        "ratelimit: {counts: attempts}\n",  # the general limiter, every plan the scenario's
    ],
)
def test_a_key_issued_with_an_inline_plan_counts_it_over_its_own_length(
    serve: Callable[[str], Mock], settings: str
) -> None:
    text = scenario(settings) if settings == "" else scenario().replace(KEYS, "") + settings
    mock = serve(text)
    issued = _issue(mock, LATE)
    assert issued.status_code == 201, issued.text
    # 12:00:30 on the grid of 5 s: the window ends at 12:00:35, not at the minute's end.
    assert [figures(mock.get("late"))[1:] for _ in range(5)] == [
        (left, "1772366435") for left in (4, 3, 2, 1, 0)
    ]
    refused = mock.get("late")
    assert refused.status_code == 429
    assert refused.headers["retry-after"] == "5"
    mock.advance(5)
    assert figures(mock.get("late")) == (5, 4, "1772366440")


@pytest.mark.parametrize(
    ("settings", "plan", "expected"),
    [
        (
            "",
            {"per_minute": 5, "minute_seconds": 7},
            "minute_seconds: a fixed window on the clock's grid divides the day: 7 s does not",
        ),
        (
            "ratelimit: {day: {algorithm: sliding_window}}\n",
            {"per_minute": 5, "day_seconds": 7000},
            "day_seconds: a sliding_window window on the clock's grid divides the day: "
            "7000 s does not",
        ),
        (
            None,  # mockstore's own fixed windows: no length per plan
            {"per_minute": 5, "minute_seconds": 5},
            "minute_seconds: this scenario is counted by mockstore's own fixed windows, "
            "which have no length per plan",
        ),
    ],
)
def test_an_inline_plan_whose_length_cannot_be_counted_is_refused_and_nothing_kept(
    serve: Callable[[str], Mock], settings: str | None, plan: dict[str, int], expected: str
) -> None:
    text = scenario(settings) if settings is not None else scenario().replace(KEYS, "")
    mock = serve(text)
    refused = _issue(mock, {"key": "late", "plan": plan})
    assert refused.status_code == 400, refused.text
    error = refused.json()
    assert error["code"] == "invalid_request" and error["status"] == 400
    assert expected in error["message"], error["message"]
    assert mock.get("late").status_code == 401
    listed = mock.http.get("/__mockstore/keys").json()
    assert "late" not in [key["key"] for key in listed]
    # The key may be issued afresh on a plan that can be counted.
    assert _issue(mock, {"key": "late", "plan": {"per_minute": 5}}).status_code == 201


def test_a_plan_issued_through_one_process_counts_its_own_length_in_another(
    redis_server: RedisServer,
) -> None:
    text = scenario("ratelimit: {counts: attempts}\n").replace(KEYS, "")
    with (
        mock_server(text, state=redis_server.url) as first,
        mock_server(text, state=redis_server.url) as second,
    ):
        a, b = Mock(first.url), Mock(second.url)
        assert _issue(a, LATE).status_code == 201
        # The other process counts first: it starts the key's window, over the plan's 5 s.
        assert [figures(process.get("late"))[1:] for process in (b, a, b, a, b)] == [
            (left, "1772366435") for left in (4, 3, 2, 1, 0)
        ]
        assert b.get("late").headers["retry-after"] == "5"
        a.advance(5)
        assert figures(b.get("late")) == (5, 4, "1772366440")
        listed = b.http.get("/__mockstore/keys").json()
        assert [key["limits"] for key in listed if key["key"] == "late"] == [
            {"per_minute": 5, "per_day": 100}
        ]


def test_the_served_document_states_each_plans_own_length(
    serve: Callable[[str], Mock],
) -> None:
    mock = serve(scenario("ratelimit: {headers: {draft: success}}\n"))
    document = mock.http.get("/__mockstore/openapi.json").json()
    policy = document["components"]["headers"]["RateLimit-Policy"]["description"]
    assert policy == (
        "The IETF draft's policies: "
        '"minute" (60 s; plan sandbox: 10 s; a key\'s own plan: 5 s), "day" (86400 s).'
    )


@pytest.mark.parametrize("figures_", [[5, 100, 7, 0], [5, 100, 0, 90_000], [5, 100, 5]])
def test_a_plan_read_back_from_redis_that_cannot_be_counted_starts_the_state_afresh(
    redis_server: RedisServer, figures_: list[int]
) -> None:
    import redis

    text = scenario()  # fixed windows on the clock's grid: 7 s divides no day
    with mock_server(text, state=redis_server.url) as first:
        mock = Mock(first.url)
        assert mock.get("k").status_code == 200
        store = redis.Redis.from_url(redis_server.url)
        store.hset("mockstore:config", "plans", json.dumps({"custom:x": figures_}))
        store.incr("mockstore:gen")
        # Not one a process wrote: the state starts afresh, the scenario's plans intact.
        answer = mock.get("k")
        assert answer.status_code == 200, answer.text
        assert figures(answer) == (3, 2, "1772366460")
        assert figures(mock.get("hobby")) == (5, 4, "1772366435")
