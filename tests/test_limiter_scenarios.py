"""The ``ratelimit:`` section as a scenario states it: one model, the older settings read into
it, and every mistake refused before the server starts, with the file's line and column."""

from __future__ import annotations

import pytest

from mockstore.limiter.model import Announcement, Limits, Window
from mockstore.scenario import ScenarioError, load_scenario
from tests.support import mock_server


def problems(text: str) -> list[str]:
    with pytest.raises(ScenarioError) as refused:
        load_scenario(text, "limits.yaml")
    return [str(problem) for problem in refused.value.problems]


def test_a_scenario_that_says_nothing_keeps_mockstores_own_limiter() -> None:
    limits = load_scenario("version: 1\n").ratelimit
    assert limits == Limits()
    assert limits.classic and limits.classic_windows == "clock"


def test_the_older_settings_are_read_into_the_one_model() -> None:
    scenario = load_scenario(
        "version: 1\n"
        "behaviour:\n"
        "  ratelimit_windows: first_request\n"
        "  ratelimit_describes: day\n"
        "  ratelimit_describes_refusals: described\n"
        "  ratelimit_reset: epoch-ms\n"
        "  ratelimit_draft_headers: true\n"
        "  retry_after: http-date\n"
        "  retry_after_banned: seconds\n"
    )
    limits = scenario.ratelimit
    assert (limits.minute, limits.day) == (
        Window(60, "fixed", "first_request"),
        Window(86_400, "fixed", "first_request"),
    )
    assert limits.headers == Announcement(
        describes="day",
        refusals="described",
        reset="epoch-ms",
        retry_after="http-date",
        retry_after_banned="seconds",
        draft="all",
    )
    assert limits.classic  # mockstore's own limiter still counts it


def test_where_both_say_a_thing_the_ratelimit_section_is_kept() -> None:
    limits = load_scenario(
        "version: 1\n"
        "behaviour: {retry_after: http-date, ratelimit_draft_headers: true}\n"
        "ratelimit: {headers: {retry_after: decimal, draft: success}}\n"
    ).ratelimit
    assert (limits.headers.retry_after, limits.headers.draft) == ("decimal", "success")


def test_the_refusal_is_the_error_models_rate_limited() -> None:
    behaviour = load_scenario(
        "version: 1\n"
        "ratelimit: {refusal: {status: 403, code: secondary_rate_limit},"
        " headers: {retry_after: none, retry_after_banned: seconds}}\n"
    ).behaviour
    assert dict(behaviour.error_statuses)["rate_limited"] == 403
    assert dict(behaviour.error_codes)["rate_limited"] == "secondary_rate_limit"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "ratelimit: {time_zone: Europe/Berln}\n",
            "limits.yaml:2:24: $.ratelimit.time_zone: 'Europe/Berln' is not an IANA time zone",
        ),
        (
            "ratelimit: {minute: {seconds: 7}}\n",
            "limits.yaml:2:31: $.ratelimit.minute.seconds: a fixed window on the clock's grid "
            "divides the day: 7 s does not (try 6 or 8)",
        ),
        (
            "ratelimit: {day: {seconds: 7, algorithm: sliding_window}}\n",
            "limits.yaml:2:28: $.ratelimit.day.seconds: a sliding_window window",
        ),
        (
            "plans: {huge: {per_minute: 2000000}}\nratelimit: {minute: {algorithm: sliding_log}}\n",
            "limits.yaml:2:28: $.plans.huge.per_minute: a sliding log keeps an instant per "
            "request: plan 'huge' allows 2,000,000",
        ),
        (
            "ratelimit: {headers: {retry_after: none}}\n",
            "$.ratelimit.headers.retry_after: a 429 carries Retry-After",
        ),
        (
            "ratelimit: {headers: {reset: epoch-ms, reset_decimals: 2}}\n",
            "$.ratelimit.headers.reset_decimals: a reset in milliseconds has no decimals",
        ),
        (
            "ratelimit: {headers: {per_window: {minute: Min, day: min}}}\n",
            "$.ratelimit.headers.per_window: the two windows need different names",
        ),
        (
            "ratelimit: {headers: {policies: {minute: q, day: q}}}\n",
            "$.ratelimit.headers.policies: the two policies need different names",
        ),
        (
            "ratelimit: {minute: {algorithm: bucket}}\n",
            '$.ratelimit.minute.algorithm: must be one of "fixed", "sliding_log"',
        ),
        (
            "ratelimit: {refusal: {status: 500}}\n",
            "$.ratelimit.refusal.status: must be one of 429, 403, 503",
        ),
    ],
)
def test_a_limiter_that_cannot_be_is_refused_where_the_file_says_it(
    text: str, expected: str
) -> None:
    found = problems("version: 1\n" + text)
    assert any(expected in problem for problem in found), found


def test_a_key_whose_plan_no_sliding_log_can_hold_is_not_issued() -> None:
    with mock_server("version: 1\nratelimit: {day: {algorithm: sliding_log}}\n") as server:
        import httpx

        answer = httpx.post(
            server.control_url + "/keys",
            json={"key": "wide", "plan": {"per_minute": 10, "per_day": 5_000_000}},
        )
        assert answer.status_code == 400
        assert "a sliding log keeps an instant per request" in answer.json()["message"]
        assert "wide" not in [k["key"] for k in httpx.get(server.control_url + "/keys").json()]
