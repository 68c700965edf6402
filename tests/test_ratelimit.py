"""Rate limits by plan, the X-RateLimit-* headers, 429s and temporary bans.

Nothing here sleeps: the in-process tests move a manual clock, and the one
end-to-end test serves a scenario whose clock is manual and moves it through
``POST /__mockstore/clock``. ``RateLimiter`` is a pure module, so its rules are
also checked on it directly.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from mockstore.app import create_app
from mockstore.ratelimit import BUILTIN_PLANS, DAY, MINUTE, Plan, RateLimiter
from mockstore.scenario import load_scenario
from mockstore.scenario.model import default_ban_policy
from tests.support import assert_conforms, auth, examples, mock_server

FREE = BUILTIN_PLANS["free"]
START = datetime(2026, 3, 1, 12, 0, 30, tzinfo=UTC).timestamp()  # the conftest manual clock
NEXT_MINUTE = datetime(2026, 3, 1, 12, 1, tzinfo=UTC).timestamp()
MIDNIGHT = datetime(2026, 3, 2, tzinfo=UTC).timestamp()
DEFAULT_BAN = default_ban_policy()

SCENARIO = """\
version: 1
name: limits
description: Manual clock mid-minute; keys with allowance already spent.
# The windows are read off X-RateLimit-Reset as the scenario clock names them.
clock: {start: "2026-03-01T12:00:30Z", mode: manual, headers: scenario}
keys:
  - {key: free-key, plan: free}
  - {key: pro-key, plan: pro}
  - {key: tiny-key, plan: {per_minute: 2, per_day: 50}}
  - {key: day-heavy, plan: free, used: {minute: 0, day: 995}}
  - {key: tie-key, plan: free, used: {minute: 0, day: 940}}
  - {key: day-spent, plan: free, used: {minute: 0, day: 1000}}
"""


@contextmanager
def scenario_client(text: str = SCENARIO, address: str = "testclient") -> Iterator[TestClient]:
    app = create_app(load_scenario(text, "limits.yaml"))
    with TestClient(app, client=(address, 50000)) as client:
        yield client


@pytest.fixture
def limits() -> Iterator[TestClient]:
    with scenario_client() as client:
        yield client


def advance(client: Any, seconds: float) -> None:
    response = client.post("/__mockstore/clock", json={"advance_seconds": seconds})
    assert response.status_code == 200, response.text


def figures(response: Any) -> tuple[int, int, int]:
    """(limit, remaining, reset) from the X-RateLimit-* headers, checked for shape."""
    assert_conforms(response)
    limit = int(response.headers["x-ratelimit-limit"])
    remaining = int(response.headers["x-ratelimit-remaining"])
    reset = int(response.headers["x-ratelimit-reset"])
    assert 0 <= remaining <= limit
    return limit, remaining, reset


def retry_after(response: Any) -> int:
    value = response.headers["retry-after"]
    assert value.isdigit(), f"Retry-After must be integer seconds, got {value!r}"
    assert int(value) >= 1
    return int(value)


def status_of(response: Any) -> int:
    """The status of an API response, once its body and headers are checked."""
    assert_conforms(response)
    return response.status_code


def spend(client: Any, key: str, count: int) -> None:
    for _ in range(count):
        response = client.get("/v1/pets", params={"limit": 1}, headers=auth(key))
        assert status_of(response) == 200, response.text


# -- the pure limiter -----------------------------------------------------


def test_minute_window_is_aligned_to_the_clock_minute() -> None:
    limiter = RateLimiter(DEFAULT_BAN)
    plan = Plan("p", 3, 100)
    decisions = [limiter.check("b", plan, START + i) for i in range(3)]
    assert [d.verdict for d in decisions] == ["allowed"] * 3
    assert [d.remaining for d in decisions] == [2, 1, 0]
    assert {d.reset for d in decisions} == {int(NEXT_MINUTE)}
    refused = limiter.check("b", plan, START + 3)
    assert (refused.verdict, refused.window, refused.remaining) == ("rate_limited", "minute", 0)
    assert refused.retry_after == NEXT_MINUTE - (START + 3)
    # Just before the minute turns: still refused, and Retry-After rounds up to 1.
    assert limiter.check("b", plan, NEXT_MINUTE - 0.2).retry_after == 1
    # At the clock minute (not 60 s after the first request) the window is new.
    fresh = limiter.check("b", plan, NEXT_MINUTE)
    assert (fresh.verdict, fresh.remaining, fresh.reset) == ("allowed", 2, NEXT_MINUTE + MINUTE)


def test_day_window_is_aligned_to_utc_midnight() -> None:
    limiter = RateLimiter(DEFAULT_BAN)
    plan = Plan("p", 100, 2)
    late = MIDNIGHT - 0.5
    assert limiter.check("b", plan, late - 3600).verdict == "allowed"
    second = limiter.check("b", plan, late - 60)
    assert (second.window, second.remaining, second.reset) == ("day", 0, MIDNIGHT)
    refused = limiter.check("b", plan, late)
    assert (refused.verdict, refused.window, refused.retry_after) == ("rate_limited", "day", 1)
    assert refused.limit == 2 and refused.reset == MIDNIGHT
    assert limiter.check("b", plan, MIDNIGHT).verdict == "allowed"


def test_a_spent_day_is_waited_out_even_when_the_minute_is_fresh() -> None:
    limiter = RateLimiter(DEFAULT_BAN)
    plan = Plan("p", 5, 1)
    limiter.check("b", plan, START)
    refused = limiter.check("b", plan, START + 120)
    assert refused.window == "day"
    assert refused.retry_after == math.ceil(MIDNIGHT - (START + 120))


def test_rejected_requests_consume_nothing() -> None:
    limiter = RateLimiter(replace(default_ban_policy(), after_rejections=1000))
    plan = Plan("p", 2, 10)
    for _ in range(2):
        limiter.check("b", plan, START)
    for _ in range(20):
        assert limiter.check("b", plan, START).verdict == "rate_limited"
    usage = limiter.usage("b", plan, START)
    assert (usage.minute_used, usage.day_used) == (2, 2)
    # The next minute starts with the full minute allowance and 8 left for the day.
    decision = limiter.check("b", plan, NEXT_MINUTE)
    assert (decision.minute_remaining, decision.day_remaining) == (1, 7)


def test_headers_report_the_window_closest_to_exhaustion() -> None:
    limiter = RateLimiter(DEFAULT_BAN)
    plan = Plan("p", 10, 30)
    limiter.preload("day", START, 0, 25)  # day: 5 left < minute: 10 left
    decision = limiter.check("day", plan, START)
    assert (decision.window, decision.limit, decision.remaining) == ("day", 30, 4)
    assert decision.reset == MIDNIGHT
    limiter.preload("tie", START, 0, 20)  # after one request: 9 and 9
    decision = limiter.check("tie", plan, START)
    assert (decision.window, decision.limit, decision.remaining) == ("minute", 10, 9)
    assert decision.reset == NEXT_MINUTE


def test_buckets_are_independent() -> None:
    limiter = RateLimiter(DEFAULT_BAN)
    plan = Plan("p", 1, 10)
    assert limiter.check("a", plan, START).allowed
    assert not limiter.check("a", plan, START).allowed
    assert limiter.check("b", plan, START).allowed


def test_ban_after_ten_rejections_within_a_minute() -> None:
    limiter = RateLimiter(DEFAULT_BAN)
    plan = Plan("p", 1, 1)  # the day is spent after one request: every later one is refused
    assert limiter.check("b", plan, START).allowed
    t0 = START + 1
    for _ in range(DEFAULT_BAN.after_rejections - 1):
        assert limiter.check("b", plan, t0).verdict == "rate_limited"
    # Those nine leave the 60 s horizon; nine more later are still not ten within a minute.
    t1 = t0 + DEFAULT_BAN.within_seconds
    for _ in range(DEFAULT_BAN.after_rejections - 1):
        assert limiter.check("b", plan, t1).verdict == "rate_limited"
    assert limiter.usage("b", plan, t1).banned_until is None
    # The tenth within the minute is still a 429 rate_limited, and it bans the bucket.
    assert limiter.check("b", plan, t1).verdict == "rate_limited"
    banned = limiter.check("b", plan, t1 + 0.25)
    assert banned.verdict == "key_banned"
    assert banned.retry_after == math.ceil(DEFAULT_BAN.duration_seconds - 0.25)
    assert banned.remaining == 0
    later = limiter.check("b", plan, t1 + 100)
    assert later.retry_after == DEFAULT_BAN.duration_seconds - 100
    # The ban ends after its duration; the day is still spent, so a plain 429 again.
    after = limiter.check("b", plan, t1 + DEFAULT_BAN.duration_seconds)
    assert after.verdict == "rate_limited"


def test_lift_ban_and_forget() -> None:
    limiter = RateLimiter(replace(default_ban_policy(), after_rejections=2))
    plan = Plan("p", 1, 100)
    limiter.check("b", plan, START)
    limiter.check("b", plan, START)
    limiter.check("b", plan, START)
    assert limiter.check("b", plan, START).verdict == "key_banned"
    assert limiter.lift_ban("b") is True
    assert limiter.lift_ban("b") is False
    assert limiter.check("b", plan, START).verdict == "rate_limited"
    limiter.forget("b")
    assert limiter.check("b", plan, START).verdict == "allowed"


def test_a_client_that_waited_as_told_on_a_standing_clock_is_not_banned() -> None:
    """A manual scenario clock stands still while the client sleeps the wait it was
    told: its retry is refused again, but it did not send on after 429."""
    wall = [1_800_000_000.0]
    limiter = RateLimiter(replace(default_ban_policy(), after_rejections=2), wall=lambda: wall[0])
    plan = Plan("p", 1, 100)
    assert limiter.check("b", plan, START).allowed
    told = limiter.check("b", plan, START)  # 30 s to the minute's end
    assert told.verdict == "rate_limited"
    for _ in range(5):
        wall[0] += told.retry_after  # slept as told; the scenario clock did not move
        assert limiter.check("b", plan, START).verdict == "rate_limited"
    # One that does not wait is counted: the second refusal within the minute bans it.
    assert limiter.check("b", plan, START).verdict == "rate_limited"
    assert limiter.check("b", plan, START).verdict == "key_banned"


def test_moving_the_clock_back_recounts_windows_and_keeps_what_is_left_of_a_ban() -> None:
    limiter = RateLimiter(replace(default_ban_policy(), after_rejections=2, duration_seconds=300))
    plan = Plan("p", 1, 100)
    later = START + 4 * 365 * DAY  # years ahead
    limiter.check("b", plan, later)
    limiter.check("b", plan, later)
    limiter.check("b", plan, later)
    assert limiter.check("b", plan, later + 100).verdict == "key_banned"
    limiter.rebase(later + 100, START)
    banned = limiter.check("b", plan, START)
    assert banned.verdict == "key_banned"
    assert banned.retry_after == 200  # what was left, never years
    # Once the ban is over, the windows hold nothing counted "in the future".
    assert limiter.check("b", plan, START + 200).allowed
    other = RateLimiter(default_ban_policy())
    other.check("c", plan, START + 50)
    other.rebase(START + 50, START + 10)  # back within the same minute
    assert other.check("c", plan, START + 10).allowed


def test_moved_back_a_bucket_states_the_windows_of_the_new_instant() -> None:
    # A bucket remembers its windows' ends to skip the roll while an instant is
    # inside them; moved back, it must work them out again (not keep the later ones).
    plan = Plan("p", 5, 50)
    limiter = RateLimiter(default_ban_policy())
    later = START + 3 * DAY + 30
    assert limiter.check("d", plan, later).reset == (later // MINUTE + 1) * MINUTE
    limiter.rebase(later, START)
    moved = limiter.check("d", plan, START)
    assert moved.minute_reset == (START // MINUTE + 1) * MINUTE
    assert moved.day_reset == (START // DAY + 1) * DAY
    assert moved.minute_remaining == 4 and moved.day_remaining == 49


# -- over HTTP, in process ------------------------------------------------


def _statuses(client: TestClient) -> dict[int, Any]:
    """One response of every status the API can give, for the header checks."""
    key = auth("pro")
    found: dict[int, Any] = {
        200: client.get("/v1/pets", headers=key),
        201: client.post("/v1/pets", headers=key, json={"name": "A", "categoryId": 1}),
        400: client.get("/v1/pets", params={"limit": "0"}, headers=key),
        401: client.get("/v1/pets"),
        404: client.get("/v1/pets/4242", headers=key),
        405: client.delete("/v1/pets", headers=key),
        413: client.post(
            "/v1/pets",
            headers={**key, "Content-Type": "application/json"},
            content=b" " * (1024 * 1024 + 1),
        ),
        415: client.post("/v1/pets", headers={**key, "Content-Type": "text/plain"}, content=b"{}"),
        501: client.get("/v1/store/orders", headers=key),
    }
    spend(client, "tiny-key", 2)
    found[429] = client.get("/v1/pets", headers=auth("tiny-key"))
    client.post("/__mockstore/clock", json={"set": "2030-12-05T00:00:00Z"})
    found[410] = client.get("/v1/pets/1", headers=key)
    return found


def test_every_status_carries_the_ratelimit_headers(limits: TestClient) -> None:
    for status, response in _statuses(limits).items():
        assert response.status_code == status, (status, response.text)
        limit, _, reset = figures(response)
        assert limit in {FREE.per_minute, 300, 2}, (status, limit)
        assert reset > START
        assert ("retry-after" in response.headers) == (status == 429), status


def test_429_until_the_minute_turns_then_the_full_minute_again(limits: TestClient) -> None:
    spend(limits, "free-key", FREE.per_minute - 1)
    last = limits.get("/v1/pets", headers=auth("free"))
    assert figures(last) == (FREE.per_minute, 0, NEXT_MINUTE)
    refused = limits.get("/v1/pets", headers=auth("free"))
    assert refused.status_code == 429
    assert assert_conforms(refused)["code"] == "rate_limited"
    assert figures(refused) == (FREE.per_minute, 0, NEXT_MINUTE)
    assert retry_after(refused) == NEXT_MINUTE - START == 30
    advance(limits, 29.5)
    refused = limits.get("/v1/pets", headers=auth("free"))
    assert refused.status_code == 429
    assert retry_after(refused) == 1
    advance(limits, 0.5)
    allowed = limits.get("/v1/pets", headers=auth("free"))
    assert allowed.status_code == 200
    assert figures(allowed) == (FREE.per_minute, FREE.per_minute - 1, NEXT_MINUTE + MINUTE)


def test_429_rejections_consume_no_allowance(limits: TestClient) -> None:
    spend(limits, "free-key", FREE.per_minute)
    for _ in range(5):
        assert status_of(limits.get("/v1/pets", headers=auth("free"))) == 429
    keys = {k["key"]: k for k in limits.get("/__mockstore/keys").json()}
    assert keys["free-key"]["day"]["used"] == FREE.per_minute
    advance(limits, NEXT_MINUTE - START)
    spend(limits, "free-key", 1)
    keys = {k["key"]: k for k in limits.get("/__mockstore/keys").json()}
    assert keys["free-key"]["minute"]["used"] == 1
    assert keys["free-key"]["day"]["used"] == FREE.per_minute + 1


def test_headers_show_the_day_when_it_is_closer_to_exhaustion(limits: TestClient) -> None:
    response = limits.get("/v1/pets", headers=auth("day-heavy"))
    assert response.status_code == 200
    assert figures(response) == (FREE.per_day, 4, MIDNIGHT)


def test_headers_show_the_minute_on_a_tie(limits: TestClient) -> None:
    response = limits.get("/v1/pets", headers=auth("tie-key"))
    # 59 left in the minute and 59 in the day.
    assert figures(response) == (FREE.per_minute, 59, NEXT_MINUTE)


def test_a_spent_day_is_429_until_utc_midnight(limits: TestClient) -> None:
    refused = limits.get("/v1/pets", headers=auth("day-spent"))
    assert refused.status_code == 429
    assert assert_conforms(refused)["code"] == "rate_limited"
    assert figures(refused) == (FREE.per_day, 0, MIDNIGHT)
    assert retry_after(refused) == MIDNIGHT - START
    advance(limits, MIDNIGHT - START - 1)
    assert status_of(limits.get("/v1/pets", headers=auth("day-spent"))) == 429
    advance(limits, 1)
    allowed = limits.get("/v1/pets", headers=auth("day-spent"))
    assert allowed.status_code == 200
    assert figures(allowed) == (FREE.per_minute, FREE.per_minute - 1, MIDNIGHT + MINUTE)


def test_anonymous_callers_share_a_free_bucket_per_address() -> None:
    with scenario_client(address="10.0.0.1") as first:
        second = TestClient(first.app, client=("10.0.0.2", 50000))
        for expected in range(FREE.per_minute - 1, -1, -1):
            response = first.get("/v1/pets")  # no key
            assert response.status_code == 401
            assert figures(response) == (FREE.per_minute, expected, NEXT_MINUTE)
        # The address's bucket is spent: missing and unknown keys alike get 429 now.
        for headers in ({}, {"Authorization": "Bearer nope"}):
            refused = first.get("/v1/pets", headers=headers)
            assert refused.status_code == 429
            assert assert_conforms(refused)["code"] == "rate_limited"
            assert retry_after(refused) == 30
        # Another address has its own bucket; a valid key is counted on its own.
        other = second.get("/v1/pets", headers={"Authorization": "Bearer nope"})
        assert other.status_code == 401
        assert figures(other) == (FREE.per_minute, FREE.per_minute - 1, NEXT_MINUTE)
        keyed = first.get("/v1/pets", headers=auth("free"))
        assert keyed.status_code == 200
        assert figures(keyed)[1] == FREE.per_minute - 1


def test_a_key_that_keeps_sending_after_429_is_banned(limits: TestClient) -> None:
    spend(limits, "free-key", FREE.per_minute)
    for _ in range(DEFAULT_BAN.after_rejections):
        refused = limits.get("/v1/pets", headers=auth("free"))
        assert refused.status_code == 429
        assert assert_conforms(refused)["code"] == "rate_limited"
    banned = limits.get("/v1/pets", headers=auth("free"))
    assert banned.status_code == 429
    assert assert_conforms(banned)["code"] == "key_banned"
    assert retry_after(banned) == DEFAULT_BAN.duration_seconds
    # During a ban nothing is left, and the reset is the ban's end.
    assert figures(banned) == (FREE.per_minute, 0, START + DEFAULT_BAN.duration_seconds)
    # A new minute does not end the ban, and the ban covers every request with the key.
    advance(limits, 100)
    for path in ("/v1/pets", "/v1/pets/1", "/v1/nothing", "/v1/store/orders"):
        banned = limits.get(path, headers=auth("free"))
        assert banned.status_code == 429, path
        assert assert_conforms(banned)["code"] == "key_banned"
        assert retry_after(banned) == DEFAULT_BAN.duration_seconds - 100
    # Other keys are untouched.
    assert status_of(limits.get("/v1/pets", headers=auth("pro"))) == 200
    # The ban expires on time.
    advance(limits, DEFAULT_BAN.duration_seconds - 100 - 1)
    assert status_of(limits.get("/v1/pets", headers=auth("free"))) == 429
    advance(limits, 1)
    back = limits.get("/v1/pets", headers=auth("free"))
    assert back.status_code == 200
    assert figures(back)[1] == FREE.per_minute - 1


# -- over real HTTP -------------------------------------------------------


def test_limits_end_to_end_with_a_manual_clock(tmp_path: Path) -> None:
    scenario = tmp_path / "limits.yaml"
    scenario.write_text(SCENARIO, encoding="utf-8")
    with mock_server(str(scenario)) as server, server.client() as http:
        pro, tiny = auth("pro"), auth("tiny-key")
        responses = {
            200: http.get("/v1/pets", headers=pro),
            201: http.post("/v1/pets", headers=pro, json={"name": "A", "categoryId": 1}),
            400: http.post("/v1/pets", headers=pro, json={"name": "A"}),
            401: http.get("/v1/pets"),
            404: http.get("/v1/pets/999", headers=pro),
            405: http.put("/v1/pets/1", headers=pro),
            501: http.get("/v1/store/orders", headers=pro),
        }
        for status, response in responses.items():
            assert response.status_code == status
            assert figures(response)[2] == NEXT_MINUTE
        assert [figures(http.get("/v1/pets", headers=tiny))[1] for _ in range(2)] == [1, 0]
        refused = http.get("/v1/pets", headers=tiny)
        assert refused.status_code == 429
        assert assert_conforms(refused)["code"] == "rate_limited"
        assert figures(refused) == (2, 0, NEXT_MINUTE)
        assert retry_after(refused) == 30
        moved = httpx.post(
            server.url + "/__mockstore/clock", json={"advance_seconds": 30}, timeout=10
        )
        assert moved.status_code == 200
        allowed = http.get("/v1/pets", headers=tiny)
        assert allowed.status_code == 200
        assert figures(allowed) == (2, 1, NEXT_MINUTE + MINUTE)


def test_builtin_plans_match_the_spec() -> None:
    """The spec's table; Enterprise is 'custom', so only its existence is fixed."""
    assert (FREE.per_minute, FREE.per_day) == (60, 1_000)
    assert (BUILTIN_PLANS["pro"].per_minute, BUILTIN_PLANS["pro"].per_day) == (300, 10_000)
    business = BUILTIN_PLANS["business"]
    assert (business.per_minute, business.per_day) == (1_000, 100_000)
    assert "enterprise" in BUILTIN_PLANS
    assert DAY == 86_400 and MINUTE == 60


@settings(max_examples=examples(300), deadline=None)
@given(
    moves=st.lists(
        st.one_of(
            st.floats(-200_000, 200_000, allow_nan=False),
            st.sampled_from([0.0, 59.999999, 60.0, -60.0, 1e-6, -1e-6, 86_400.0]),
        ),
        max_size=40,
    )
)
def test_a_bucket_counts_in_the_windows_of_the_instant_it_is_asked_about(
    moves: list[float],
) -> None:
    # The limiter keeps each bucket's window ends and rolls only when an instant
    # falls outside them: its windows must still be the ones the clock's minute
    # and UTC day give, whichever way and however far the clock moved, and the
    # counts must start again exactly when a window changes.
    plan = Plan("wide", 1_000_000, 10_000_000)
    limiter = RateLimiter(DEFAULT_BAN)
    now = START
    minute = day = None
    used_minute = used_day = 0
    for move in moves:
        now += move
        limiter.check("key:k", plan, now)
        minute_start, day_start = int(now // MINUTE) * MINUTE, int(now // DAY) * DAY
        used_minute = used_minute + 1 if minute_start == minute else 1
        used_day = used_day + 1 if day_start == day else 1
        minute, day = minute_start, day_start
        usage = limiter.usage("key:k", plan, now)
        assert (usage.minute_reset, usage.day_reset) == (minute_start + MINUTE, day_start + DAY)
        assert (usage.minute_used, usage.day_used) == (used_minute, used_day)


@pytest.mark.parametrize("describes", ["tightest", "minute", "day"])
def test_windows_from_a_first_request_state_resets_rounded_up(describes: str) -> None:
    # Such windows start at any instant; every figure an answer states is a
    # whole second no earlier than the window's real end, on the allowed path too.
    limiter = RateLimiter(default_ban_policy(), "first_request", describes)
    plan = Plan("p", 5, 50)
    first = START + 0.25
    for at in (first, first + 10.5, first + 59.9):
        decision = limiter.check("f", plan, at)
        assert decision.allowed
        assert decision.minute_reset == math.ceil(first + MINUTE)
        assert decision.day_reset == math.ceil(first + DAY)
        assert decision.reset in (decision.minute_reset, decision.day_reset)
        assert isinstance(decision.reset, int)
    assert limiter.check("f", plan, first + MINUTE).minute_reset == math.ceil(first + 2 * MINUTE)


FIRST_REQUEST_WINDOWS = """\
version: 1
name: first-request-windows
clock: {start: "2026-03-01T12:00:30Z", mode: manual, headers: scenario}
keys:
  - {key: seen-key, plan: {per_minute: 5, per_day: 50}}
behaviour: {ratelimit_windows: first_request}
"""


def test_looking_at_a_key_does_not_start_its_first_request_window() -> None:
    """A window that starts at a key's first request starts there, not when the key is read.

    Listing the keys (or issuing one) used to roll the bucket it showed, so a
    key read at 12:00:30 and first used at 12:00:50 had a window ending at
    12:01:30; from its first request it ends at 12:01:50.
    """
    app = create_app(load_scenario(FIRST_REQUEST_WINDOWS, "first-request.yaml"))
    tool = {"X-Mockstore-Client": "tests"}
    with TestClient(app) as client:
        listed = client.get("/__mockstore/keys").json()
        assert listed[0]["minute"]["used"] == 0
        client.post("/__mockstore/clock", json={"advance_seconds": 20}, headers=tool)
        first = client.get("/v1/pets", headers={"Authorization": "Bearer seen-key"})
        assert first.status_code == 200
        assert first.headers["x-ratelimit-reset"] == str(math.ceil(START + 20 + MINUTE))
