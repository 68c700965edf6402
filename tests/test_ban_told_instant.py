"""A client that comes back at the very instant it was told is not counted towards a ban.

The mock tells a wait on the wall clock (an HTTP-date ``Retry-After``) and decides on
the scenario clock, which a running clock sums from a monotonic one. The two reach one
instant by different float sums, a few 2**-22 s apart near 2027: a client back at the
announced date found the scenario clock an ulp short of the minute's turn, was refused
(fair: the limiter's windows are exact), and the refusal counted towards its ban, so an
obeying client was banned (``tests/test_client_populations.py``, a FlakyFailure under a
full run). The ban's count now takes "came when told" as the etiquette verdict does
(``clock.ARITHMETIC``), in memory and in the Lua twin on Redis.
"""

from __future__ import annotations

from collections.abc import Iterator
from email.utils import parsedate_to_datetime

import httpx
import pytest

from mockstore import MockServer
from mockstore.clock import Timebase
from tests.redis_server import RedisServer

MINUTE_TURN = 1_800_000_000.0  # 2027-01-15T08:00:00Z, a minute's turn
ULP = 2.0**-22  # a float's step near 1.8e9 s
SCENARIO = """\
version: 1
name: told-instant
clock: {mode: running, headers: wall}
behaviour: {retry_after: http-date}
ban: {after_rejections: 2, within_seconds: 60, duration_seconds: 120}
keys:
  - {key: one-a-minute, plan: {per_minute: 1, per_day: 5000}}
"""
KEY = {"Authorization": "Bearer one-a-minute"}


class Readings:
    """A wall clock and a monotonic one the test sets; the monotonic may lag an ulp."""

    def __init__(self) -> None:
        self.wall_now = MINUTE_TURN
        self.monotonic_now = 0.0

    def at(self, seconds: float, monotonic_lag: float = 0.0) -> None:
        self.wall_now = MINUTE_TURN + seconds
        self.monotonic_now = seconds - monotonic_lag


@pytest.fixture(params=["memory", "redis"])
def state(request: pytest.FixtureRequest) -> Iterator[str | None]:
    if request.param == "memory":
        yield None
    else:
        server: RedisServer = request.getfixturevalue("redis_server")
        yield server.url


def test_a_client_back_at_the_told_instant_is_not_banned(state: str | None) -> None:
    readings = Readings()
    timebase = Timebase(wall=lambda: readings.wall_now, monotonic=lambda: readings.monotonic_now)
    with (
        MockServer(SCENARIO, timebase=timebase, state=state) as server,
        httpx.Client(base_url=server.url, headers=KEY) as http,
    ):
        assert http.get("/pets").status_code == 200
        # The minute's one is spent: rejection 1 of 2, told the wall's instant of the turn
        # through the scenario clock an ulp behind it (so that instant comes out an ulp late).
        readings.at(1, monotonic_lag=ULP)
        refused = http.get("/pets")
        assert refused.status_code == 429 and refused.json()["code"] == "rate_limited"
        told = parsedate_to_datetime(refused.headers["retry-after"]).timestamp()
        assert told == MINUTE_TURN + 60
        # Back at the told instant by the wall clock, which the scenario clock (summed
        # from the monotonic one) puts an ulp before the minute's turn: refused, but it
        # came when told, and that is no rejection towards a ban.
        readings.at(60, monotonic_lag=ULP)
        again = http.get("/pets")
        assert again.status_code == 429 and again.json()["code"] == "rate_limited"
        readings.at(61)
        assert http.get("/pets").status_code == 200  # not key_banned

        # Still counted when it came early by more than arithmetic: banned.
        readings.at(62)
        assert http.get("/pets").json()["code"] == "rate_limited"  # rejection 1
        readings.at(119.9)
        banned = http.get("/pets")
        assert banned.json()["code"] == "rate_limited"  # rejection 2: banned from now
        readings.at(121)
        assert http.get("/pets").json()["code"] == "key_banned"
