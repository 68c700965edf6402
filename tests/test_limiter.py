"""Rate limiting as gateways do it (``ratelimit:``), over HTTP against a real server.

Each algorithm and each header form, through ``MockServer`` on a manual clock
moved by the control API: the figures every answer states, the refusal and
its ``Retry-After``, a client that waits as told let in at exactly that
instant. ``MOCKSTORE_TEST_STATE=redis`` runs the same tests with the state in
Redis (``.ci/run``), where the request script decides in Lua what Python
decides in memory. Nothing here sleeps.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import httpx
import pytest

from mockstore.app import create_app
from mockstore.clock import Clock
from mockstore.fidelity.replayer import call
from mockstore.limits import Limits
from mockstore.memory import MiB
from mockstore.scenario import load_scenario
from tests.support import SHARED_STATE, mock_server

NOON = datetime(2026, 3, 1, 12, 0, tzinfo=UTC).timestamp()


def scenario(body: str, start: str = "2026-03-01T12:00:30Z") -> str:
    return (
        "version: 1\n"
        f"clock: {{start: {start!r}, mode: manual, headers: scenario}}\n"
        "keys: [{key: k, plan: {per_minute: 3, per_day: 100}}, {key: roomy, plan: pro}]\n" + body
    )


@pytest.fixture
def serve() -> Iterator[Any]:
    """``serve(text)``: a server of ``text`` and a client of it (closed after the test)."""
    opened: list[Any] = []

    def start(text: str) -> Mock:
        context = mock_server(text)
        server = context.__enter__()
        opened.append(context)
        return Mock(server.url)

    yield start
    for context in reversed(opened):
        context.__exit__(None, None, None)


class Mock:
    """A client of one server: requests with a key, and the scenario clock."""

    def __init__(self, url: str) -> None:
        self.http = httpx.Client(base_url=url, timeout=10)

    def get(self, key: str | None = "k", path: str = "/v1/pets?limit=1") -> httpx.Response:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return self.http.get(path, headers=headers)

    def advance(self, seconds: float) -> None:
        moved = self.http.post("/__mockstore/clock", json={"advance_seconds": seconds})
        assert moved.status_code == 200, moved.text

    def set(self, when: str) -> None:
        moved = self.http.post("/__mockstore/clock", json={"set": when})
        assert moved.status_code == 200, moved.text


def figures(response: httpx.Response) -> tuple[int, int, str]:
    headers = response.headers
    return (
        int(headers["x-ratelimit-limit"]),
        int(headers["x-ratelimit-remaining"]),
        headers["x-ratelimit-reset"],
    )


# -- each algorithm ------------------------------------------------------------------------


def test_a_fixed_window_of_ten_seconds_turns_on_the_clock(serve: Any) -> None:
    mock = serve(scenario("ratelimit: {minute: {seconds: 10}}\n"))
    # 12:00:30 is on the grid of 10 s: the window runs to 12:00:40.
    assert [figures(mock.get()) for _ in range(3)] == [
        (3, 2, "1772366440"),
        (3, 1, "1772366440"),
        (3, 0, "1772366440"),
    ]
    mock.advance(4.5)
    refused = mock.get()
    assert refused.status_code == 429
    assert refused.headers["retry-after"] == "6"  # 5.5 s, rounded up
    mock.advance(5.5)  # exactly at 12:00:40
    assert figures(mock.get()) == (3, 2, "1772366450")


def test_a_fixed_window_from_the_first_request(serve: Any) -> None:
    mock = serve(scenario("ratelimit: {minute: {seconds: 30, align: first_request}}\n"))
    mock.advance(2.25)
    assert figures(mock.get()) == (3, 2, "1772366463")  # 12:00:32.25 + 30, rounded up
    mock.get(), mock.get()
    assert mock.get().headers["retry-after"] == "30"
    mock.advance(30)
    assert figures(mock.get()) == (3, 2, "1772366493")


def test_a_sliding_log_that_counts_attempts_keeps_a_flood_refused(serve: Any) -> None:
    """The issue's gateway: a rolling 60 s, refused attempts counted, Retry-After 60.0."""
    mock = serve(
        scenario(
            "ratelimit:\n"
            "  minute: {algorithm: sliding_log}\n"
            "  counts: attempts\n"
            "  headers: {retry_after: decimal}\n"
        )
    )
    for _ in range(3):
        assert mock.get().status_code == 200
        mock.advance(10)
    # At +30 s: the log holds +0, +10, +20; the attempt is counted, so +10 must leave.
    first = mock.get()
    assert (first.status_code, first.headers["retry-after"]) == (429, "40.0")
    mock.advance(10)  # a client that keeps sending pushes its own wait out
    again = mock.get()
    assert (again.status_code, again.headers["retry-after"]) == (429, "40.0")
    # Three more at once: each counted attempt moves the oldest that matters up to now.
    flood = [mock.get().headers["retry-after"] for _ in range(3)]
    assert flood == ["50.0", "60.0", "60.0"]
    mock.advance(60)  # waited as told
    assert mock.get().status_code == 200


def test_a_sliding_log_of_served_requests_lets_a_patient_client_in(serve: Any) -> None:
    mock = serve(scenario("ratelimit: {minute: {algorithm: sliding_log}}\n"))
    for _ in range(3):
        assert mock.get().status_code == 200
        mock.advance(10)
    refused = mock.get()  # at +30: the first request leaves at +60
    assert (refused.status_code, refused.headers["retry-after"]) == (429, "30")
    assert figures(refused) == (3, 0, "1772366510")  # the last leaves at +80
    mock.advance(30)  # at +60 the first has left: let in, and the last leaves at +120
    assert figures(mock.get()) == (3, 0, "1772366550")


def test_a_sliding_window_counter_weighs_the_previous_window(serve: Any) -> None:
    mock = serve(
        scenario(
            "plans: {tenth: {per_minute: 10}}\n"
            "keys: [{key: t, plan: tenth}]\n"
            "ratelimit: {minute: {algorithm: sliding_window}}\n",
            start="2026-03-01T12:00:50Z",
        ).replace(
            "keys: [{key: k, plan: {per_minute: 3, per_day: 100}}, {key: roomy, plan: pro}]\n", ""
        )
    )
    assert [mock.get("t").status_code for _ in range(10)] == [200] * 10
    refused = mock.get("t")
    # 10 in 12:00-12:01: the next minute lets one in once 10 * (1 - 6/60) + 1 <= 10.
    assert (refused.status_code, refused.headers["retry-after"]) == (429, "16")
    mock.advance(16)
    assert mock.get("t").status_code == 200
    again = mock.get("t")
    # 9.0 weighted + 1 counted: 10 * (60 - 12) / 60 + 1 + 1 <= 10 from 12:01:12.
    assert (again.status_code, again.headers["retry-after"]) == (429, "6")


def test_a_token_bucket_refills_one_request_at_a_time(serve: Any) -> None:
    mock = serve(
        scenario(
            "ratelimit:\n"
            "  minute: {algorithm: token_bucket, seconds: 10}\n"
            "  headers: {reset: delta, reset_decimals: 1, retry_after: decimal}\n"
        ).replace("per_minute: 3", "per_minute: 5")
    )
    # 5 tokens, one back every 2 s: full again 2 s per token spent.
    assert [figures(mock.get()) for _ in range(5)] == [
        (5, 4, "2.0"),
        (5, 3, "4.0"),
        (5, 2, "6.0"),
        (5, 1, "8.0"),
        (5, 0, "10.0"),
    ]
    refused = mock.get()
    assert (refused.status_code, refused.headers["retry-after"]) == (429, "2.0")
    mock.advance(2)
    assert figures(mock.get()) == (5, 0, "10.0")
    mock.advance(5)  # 2.5 tokens back, one taken: 1.5 left, full 7 s on
    assert figures(mock.get()) == (5, 1, "7.0")


def test_a_leaky_bucket_decides_as_the_token_bucket_and_keeps_one_instant(serve: Any) -> None:
    mock = serve(
        scenario(
            "ratelimit:\n"
            "  minute: {algorithm: leaky_bucket, seconds: 10}\n"
            "  headers: {reset: epoch-ms}\n"
        ).replace("per_minute: 3", "per_minute: 5")
    )
    resets = [figures(mock.get())[2] for _ in range(5)]
    assert resets == ["1772366432000", "1772366434000", "1772366436000",
                      "1772366438000", "1772366440000"]  # fmt: skip
    refused = mock.get()
    assert (refused.status_code, refused.headers["retry-after"]) == (429, "2")
    mock.advance(1.999)
    assert mock.get().status_code == 429
    mock.advance(0.001)
    assert mock.get().status_code == 200


def test_a_day_turns_at_midnight_in_the_providers_time_zone(serve: Any) -> None:
    mock = serve(
        scenario(
            "ratelimit: {time_zone: America/New_York}\n", start="2026-03-01T12:00:00Z"
        ).replace("per_day: 100", "per_day: 2")
    )
    mock.get()
    second = mock.get()
    # 07:00 in New York: the day ends at 05:00 UTC the next day.
    assert figures(second) == (2, 0, str(int(datetime(2026, 3, 2, 5, tzinfo=UTC).timestamp())))
    refused = mock.get()
    assert (refused.status_code, refused.headers["retry-after"]) == (429, "61200")
    mock.set("2026-03-02T04:59:59Z")
    assert mock.get().status_code == 429
    mock.set("2026-03-02T05:00:00Z")
    assert mock.get().status_code == 200


def test_a_day_of_twenty_three_hours_when_the_clocks_move_forward(serve: Any) -> None:
    mock = serve(
        scenario(
            "ratelimit: {time_zone: America/New_York}\n", start="2026-03-08T04:59:00Z"
        ).replace("per_day: 100", "per_day: 1")
    )
    first = mock.get()  # 23:59 on the 7th in New York: the day ends at 05:00 UTC
    assert first.headers["x-ratelimit-reset"] == str(
        int(datetime(2026, 3, 8, 5, tzinfo=UTC).timestamp())
    )
    mock.set("2026-03-08T05:00:00Z")
    second = mock.get()  # the 8th, which has 23 hours: it ends at 04:00 UTC on the 9th
    assert second.status_code == 200
    assert second.headers["x-ratelimit-reset"] == str(
        int(datetime(2026, 3, 9, 4, tzinfo=UTC).timestamp())
    )


def test_answers_that_do_not_count_give_back_what_they_took(serve: Any) -> None:
    mock = serve(scenario("ratelimit: {minute: {algorithm: sliding_log}, not_counted: [4xx]}\n"))
    for _ in range(5):  # refused for their query: counted nowhere
        bad = mock.get(path="/v1/pets?limit=0")
        assert bad.status_code == 400
    # The answer still states the figures its request met; the next one has it back.
    assert figures(bad)[1] == 2
    assert [mock.get().status_code for _ in range(4)] == [200, 200, 200, 429]
    keys = {key["key"]: key for key in mock.http.get("/__mockstore/keys").json()}
    assert keys["k"]["minute"]["remaining"] == 0


# -- callers, refusals, headers ----------------------------------------------------------------


def test_callers_without_a_key_limited_nowhere_get_a_plain_401(serve: Any) -> None:
    mock = serve(
        scenario(
            "anonymous_plan: tiny\nplans: {tiny: {per_minute: 1}}\nratelimit: {anonymous: none}\n"
        )
    )
    answers = [mock.get(None) for _ in range(5)]
    assert {answer.status_code for answer in answers} == {401}
    for answer in answers:
        assert not [name for name in answer.headers if "ratelimit" in name or name == "retry-after"]
    assert figures(mock.get("k"))[:2] == (3, 2)  # keys are limited as ever


def test_a_refusal_answered_503_without_retry_after(serve: Any) -> None:
    mock = serve(
        scenario(
            "ratelimit:\n"
            "  refusal: {status: 503, code: slow_down}\n"
            "  headers: {retry_after: none, retry_after_banned: seconds}\n"
        )
    )
    for _ in range(3):
        mock.get()
    refused = mock.get()
    assert refused.status_code == 503
    assert refused.json()["code"] == "slow_down" and refused.json()["status"] == 503
    assert "retry-after" not in refused.headers
    assert figures(refused)[1] == 0


def test_used_resource_and_kongs_per_window_figures(serve: Any) -> None:
    mock = serve(
        scenario(
            "ratelimit:\n"
            "  headers:\n"
            "    figures: [limit, remaining, reset, used, resource]\n"
            "    resource: core\n"
            "    per_window: {minute: Minute, day: Day}\n"
        )
    )
    mock.get()
    headers = mock.get().headers
    assert (headers["x-ratelimit-used"], headers["x-ratelimit-resource"]) == ("2", "core")
    assert headers["x-ratelimit-limit-minute"] == "3"
    assert headers["x-ratelimit-remaining-minute"] == "1"
    assert (headers["x-ratelimit-limit-day"], headers["x-ratelimit-remaining-day"]) == ("100", "98")


def test_draft_headers_on_2xx_only_under_the_providers_names(serve: Any) -> None:
    mock = serve(
        scenario(
            "ratelimit:\n"
            "  minute: {algorithm: token_bucket, seconds: 30}\n"
            "  headers: {draft: success, policies: {minute: burst, day: daily}}\n"
        )
    )
    ok = mock.get()
    assert ok.headers["ratelimit-policy"] == '"burst";q=3;w=30, "daily";q=100;w=86400'
    assert ok.headers["ratelimit"] == '"burst";r=2;t=10, "daily";r=99;t=43170'
    refusal = mock.get(path="/v1/pets?limit=0")
    assert refusal.status_code == 400
    assert "ratelimit" not in refusal.headers and "ratelimit-policy" not in refusal.headers
    assert refusal.headers["x-ratelimit-remaining"] == "1"


def test_a_decimal_reset_and_an_http_date_retry_after(serve: Any) -> None:
    mock = serve(
        scenario(
            "ratelimit:\n"
            "  minute: {algorithm: sliding_log, seconds: 20}\n"
            "  headers: {reset_decimals: 3, retry_after: http-date}\n"
        )
    )
    mock.advance(0.1234)
    assert figures(mock.get())[2] == "1772366450.124"  # 12:00:30.1234 + 20, rounded up
    mock.get(), mock.get()
    refused = mock.get()
    assert parsedate_to_datetime(refused.headers["retry-after"]).timestamp() == 1772366451


def test_a_ban_escalates_with_any_algorithm(serve: Any) -> None:
    mock = serve(
        scenario(
            "ban: {after_rejections: 2, within_seconds: 60, duration_seconds: 30.5}\n"
            "ratelimit:\n"
            "  minute: {algorithm: leaky_bucket}\n"
            "  headers: {retry_after: decimal, retry_after_decimals: 2}\n"
        )
    )
    for _ in range(3):
        mock.get()
    assert [mock.get().json()["code"] for _ in range(3)] == [
        "rate_limited",
        "rate_limited",
        "key_banned",
    ]
    banned = mock.get()
    assert banned.headers["retry-after"] == "30.50"
    assert figures(banned)[1] == 0


# -- the control API -----------------------------------------------------------------------------


def test_the_control_api_sees_keys_issues_and_lifts_bans_with_a_general_limiter(
    serve: Any,
) -> None:
    mock = serve(scenario("ratelimit: {minute: {algorithm: sliding_log}, counts: attempts}\n"))
    issued = mock.http.post(
        "/__mockstore/keys",
        json={"key": "late", "plan": {"per_minute": 4, "per_day": 100}, "used": {"minute": 3}},
    )
    assert issued.status_code == 201, issued.text
    assert issued.json()["minute"]["remaining"] == 1
    assert figures(mock.get("late"))[:2] == (4, 0)
    for _ in range(12):
        mock.get("late")
    keys = {key["key"]: key for key in mock.http.get("/__mockstore/keys").json()}
    assert keys["late"]["banned"] is True
    lifted = mock.http.delete("/__mockstore/bans/late")
    assert lifted.json() == {"key": "late", "lifted": True}
    mock.advance(61)  # every attempt counted has left the log
    assert mock.get("late").status_code == 200
    # The clock moved back: every window starts afresh.
    mock.advance(-30)
    assert figures(mock.get("late"))[:2] == (4, 3)


# -- the memory budget -----------------------------------------------------------------------------


@pytest.mark.skipif(SHARED_STATE, reason="Redis holds a shared state's logs, not this process")
def test_sliding_logs_draw_on_the_memory_budget_and_refuse_with_507() -> None:
    """Every caller address holds a log: past the budget, 507 and nothing counted."""
    text = scenario(
        "anonymous_plan: wide\nplans: {wide: {per_minute: 100000}}\n"
        "ratelimit: {minute: {algorithm: sliding_log}}\n"
    )
    app = create_app(
        load_scenario(text),
        clock=Clock(start=NOON, mode="manual"),
        limits=Limits(memory_budget=16 * MiB),
    )

    async def flood() -> list[int]:
        statuses = []
        for address in range(4000):
            answer = await call(
                app, "GET", "/v1/pets", "", [], b"", f"10.0.{address // 250}.{address % 250}"
            )
            statuses.append(answer.status)
            if answer.status == 507:
                assert b"memory_budget" in answer.body
                break
        return statuses

    statuses = asyncio.run(flood())
    assert statuses[-1] == 507, f"{len(statuses)} callers and no 507"
    assert set(statuses[:-1]) == {401}
