"""A second set of rate-limit headers describing another window (``ratelimit.headers.second_set``).

Menagerie's gateway says the day in ``X-RateLimit-*`` and the minute in
``X-RateLimit-Burst-Limit``, ``-Remaining`` and ``-Reset`` (seconds from now); a client
that paces itself reads the burst. Over HTTP against a real server on a manual clock;
``MOCKSTORE_TEST_STATE=redis`` runs the same with the state in Redis. Nothing sleeps.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from mockstore.scenario import ScenarioError, load_scenario
from tests.support import mock_server
from tests.test_limiter import Mock

BURST = (
    "version: 1\n"
    "clock: {start: '2026-03-01T12:00:30Z', mode: manual, headers: scenario}\n"
    "keys: [{key: k, plan: {per_minute: 3, per_day: 10}}, {key: solo, plan: {per_minute: 2}}]\n"
    "ban: {after_rejections: 2, within_seconds: 30, duration_seconds: 90}\n"
    "ratelimit:\n"
    "  headers:\n"
    "    describes: day\n"
    "    refusals: described\n"
    "    second_set: {name: Burst, window: minute}\n"
)


@pytest.fixture
def serve() -> Iterator[Callable[[str], Mock]]:
    opened: list[Any] = []

    def start(text: str) -> Mock:
        context = mock_server(text)
        opened.append(context)
        return Mock(context.__enter__().url)

    yield start
    for context in reversed(opened):
        context.__exit__(None, None, None)


def burst(answer: httpx.Response) -> tuple[str, str, str]:
    headers = answer.headers
    return (
        headers["x-ratelimit-burst-limit"],
        headers["x-ratelimit-burst-remaining"],
        headers["x-ratelimit-burst-reset"],
    )


def test_the_burst_set_describes_the_minute_while_the_figures_describe_the_day(
    serve: Callable[[str], Mock],
) -> None:
    mock = serve(BURST)
    first = mock.get()
    assert (first.headers["x-ratelimit-limit"], first.headers["x-ratelimit-remaining"]) == (
        "10",
        "9",
    )
    assert first.headers["x-ratelimit-reset"] == "1772409600"  # UTC midnight
    assert burst(first) == ("3", "2", "30")  # 30 s to the minute's end
    mock.advance(10.5)
    assert burst(mock.get()) == ("3", "1", "20")  # 19.5 s, rounded up
    mock.get()
    refused = mock.get()
    assert refused.status_code == 429
    assert burst(refused) == ("3", "0", "20")
    assert refused.headers["x-ratelimit-remaining"] == "7"  # the day, as described
    # A second refusal within 30 s: banned for 90 s; nothing is left until the ban ends.
    banned = mock.get()
    assert banned.status_code == 429
    suspended = mock.get()
    # At 12:00:40.5 the ban runs to the instant X-RateLimit-Reset names (12:02:11, the
    # figures of every window during a ban): the burst's reset says the same, from now.
    assert suspended.headers["x-ratelimit-reset"] == "1772366531"
    assert burst(suspended)[1:] == ("0", "91")
    assert "x-ratelimit-burst-used" not in suspended.headers


def test_a_day_set_on_a_plan_without_a_day_is_left_out(serve: Callable[[str], Mock]) -> None:
    mock = serve(BURST.replace("window: minute", "window: day, figures: [limit, used]"))
    answer = mock.get("solo")
    assert answer.status_code == 200
    assert not [name for name in answer.headers if name.startswith("x-ratelimit-burst")]
    dated = mock.get("k")
    assert (dated.headers["x-ratelimit-burst-limit"], dated.headers["x-ratelimit-burst-used"]) == (
        "10",
        "1",
    )


def test_the_served_document_lists_the_second_set(serve: Callable[[str], Mock]) -> None:
    mock = serve(BURST)
    document = mock.http.get("/__mockstore/openapi.json").json()
    listed = document["paths"]["/pets"]["get"]["responses"]["200"]["headers"]
    assert {
        "X-RateLimit-Burst-Limit",
        "X-RateLimit-Burst-Remaining",
        "X-RateLimit-Burst-Reset",
    } <= set(listed)
    assert "seconds from now" in listed["X-RateLimit-Burst-Reset"]["description"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "ratelimit: {headers: {second_set: {name: Burst}}}\n",
            "$.ratelimit.headers.second_set: 'window' is required",
        ),
        (
            "ratelimit: {headers: {second_set: {name: Bur-st, window: minute}}}\n",
            "$.ratelimit.headers.second_set.name: must be letters and digits",
        ),
        (
            "ratelimit: {headers: {per_window: {minute: Remaining}, "
            "second_set: {name: Limit, window: day}}}\n",
            "$.ratelimit.headers.second_set.name: names a header per_window writes too",
        ),
        (
            "ratelimit: {headers: {second_set: {name: Burst, window: minute}}}\n"
            "behaviour: {headers: [{name: X-RateLimit-Burst-Reset, value: '1'}]}\n",
            "mockstore writes X-RateLimit-Burst-Reset itself: set it with "
            "ratelimit.headers.second_set",
        ),
    ],
)
def test_a_second_set_that_cannot_be_is_refused_where_the_file_says_it(
    text: str, expected: str
) -> None:
    with pytest.raises(ScenarioError) as refused:
        load_scenario("version: 1\n" + text, "limits.yaml")
    found = [str(problem) for problem in refused.value.problems]
    assert any(expected in problem for problem in found), found
