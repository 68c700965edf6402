"""Every header of one answer tells the same story, and none tells a client to come back early.

Found with real retry libraries and RFC parsers: a dated ``Retry-After`` on a
ban was rounded down (ban ends 12:10:55.401, header said 12:10:55), the draft
``RateLimit`` header described the windows while ``X-RateLimit-*`` described
the ban, and an HTTP-date written on the scenario clock made every client
compute a 0 s wait. These tests pin each of those down, through the app and,
for all inputs, through the pure header builder.
"""

from __future__ import annotations

import math
import re
from email.utils import parsedate_to_datetime

from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from mockstore.app import create_app
from mockstore.clock import Clock
from mockstore.headers import ResponseHeaders
from mockstore.ratelimit import BanPolicy, Plan, RateLimiter
from mockstore.scenario import load_scenario
from tests.support import auth, examples

BANNING = """
version: 1
keys: [{key: tight-key, plan: {per_minute: 1, per_day: 100}}]
ban: {after_rejections: 2, within_seconds: 60, duration_seconds: 600.4}
behaviour: {retry_after: %s, ratelimit_draft_headers: true}
"""
START = 1772366430.0  # 2026-03-01T12:00:30Z
# A ban that starts mid-second and lasts 600.4 s ends at 12:10:31.3: a date
# rounded down from there (12:10:31) would send the client back too early.
BAN_START = START + 0.9
BAN_END = BAN_START + 600.4
EPSILON = 1e-6


def _ban(retry_after: str, wall_offset: float = 0.0) -> tuple[dict[str, str], float, float]:
    """Get tight-key banned; the ban's answer's headers, its scenario and wall instants."""
    clock = Clock(start=BAN_START, mode="manual")
    clock = Clock(start=BAN_START, mode="manual", wall=lambda: clock.now() + wall_offset)
    # (A real-time clock is one whose wall clock is its own: wall_offset 0.)
    scenario = load_scenario(BANNING % retry_after, "ban.yaml")
    with TestClient(create_app(scenario, clock=clock)) as client:
        key = auth("tight-key")
        assert client.get("/v1/pets", headers=key).status_code == 200
        for _ in range(2):
            assert client.get("/v1/pets", headers=key).status_code == 429
        banned = client.get("/v1/pets", headers=key)
        assert banned.json()["code"] == "key_banned"
        return dict(banned.headers), clock.now(), clock.now() + wall_offset


def test_a_dated_retry_after_on_a_ban_is_never_before_the_ban_ends() -> None:
    headers, _, _ = _ban("http-date")
    ban_end = BAN_END  # the second 429 started it
    retry = parsedate_to_datetime(headers["retry-after"]).timestamp()
    assert retry >= ban_end, "a client that waits as told must not be refused again"
    assert retry == math.ceil(ban_end)
    assert int(headers["x-ratelimit-reset"]) == retry, "both say the same instant"


def test_seconds_retry_after_on_a_ban_is_rounded_up_too() -> None:
    headers, now, _ = _ban("seconds")
    assert now + int(headers["retry-after"]) >= BAN_END


def test_during_a_ban_every_rate_limit_header_says_nothing_is_left() -> None:
    headers, _, _ = _ban("seconds")
    assert headers["x-ratelimit-remaining"] == "0"
    wait = headers["retry-after"]
    assert headers["ratelimit"] == f'"minute";r=0;t={wait}, "day";r=0;t={wait}'


def test_an_http_date_is_written_on_the_clients_clock() -> None:
    # The scenario clock is a day ahead of the wall clock: the date a client
    # subtracts its own clock from must be the wall clock's.
    headers, now, wall = _ban("http-date", wall_offset=-86_400.0)
    retry = parsedate_to_datetime(headers["retry-after"]).timestamp()
    assert retry == math.ceil(wall + (BAN_END - now))
    assert retry - wall >= BAN_END - now


plans = st.builds(lambda m, d: Plan("p", m, max(m, d)), st.integers(1, 5), st.integers(1, 12))


@settings(max_examples=examples(300), deadline=None, database=None)
@given(
    plan=plans,
    start=st.floats(0, 10**9, allow_nan=False),
    gaps=st.lists(st.floats(0, 90, allow_nan=False), min_size=1, max_size=40),
    offset=st.floats(-(10**8), 10**8, allow_nan=False),
    dated=st.booleans(),
)
def test_for_any_traffic_the_headers_agree_and_are_never_early(
    plan: Plan, start: float, gaps: list[float], offset: float, dated: bool
) -> None:
    mode = "http-date" if dated else "seconds"
    scenario = load_scenario(
        f"version: 1\nbehaviour: {{retry_after: {mode}, ratelimit_draft_headers: true}}\n",
        "any.yaml",
    )
    builder = ResponseHeaders(scenario)
    limiter = RateLimiter(BanPolicy(3, 30, 77.7))
    now = start
    for gap in gaps:
        now += gap
        wall = now + offset
        clock = Clock(start=now, mode="manual", wall=lambda w=wall: w)
        decision = limiter.check("bucket", plan, now)
        headers = dict(
            builder.build(
                2,  # length
                decision,
                plan,
                now,
                clock,
                False,  # deprecated
                True,  # ratelimit
                (),  # extra
                False,  # replaces
                b"req",  # request_id
            )
        )
        state = headers[b"ratelimit"].decode()
        remaining = [int(r) for r in re.findall(r";r=(\d+)", state)]
        if decision.allowed:
            assert b"retry-after" not in headers
            assert int(headers[b"x-ratelimit-remaining"]) in remaining
            continue
        retry_at = decision.retry_at  # the first instant a request can be let through
        value = headers[b"retry-after"].decode()
        # Never before the wait is over (EPSILON: float arithmetic on large times).
        if dated:
            # On the client's clock: the date minus the wall time it was sent at.
            assert parsedate_to_datetime(value).timestamp() - wall >= retry_at - now - EPSILON
        else:
            assert now + int(value) >= retry_at - EPSILON
        # A Unix-time reset is on the client's clock too (clock.headers: wall, the default).
        assert int(headers[b"x-ratelimit-reset"]) - wall >= retry_at - now - EPSILON
        assert headers[b"x-ratelimit-remaining"] == b"0"
        if decision.verdict == "key_banned":
            assert remaining == [0, 0]
            waits = {int(t) for t in re.findall(r";t=(\d+)", state)}
            assert waits == {decision.retry_after}
        else:
            assert 0 in remaining
