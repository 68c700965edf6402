"""The general limiter's two halves decide alike: Python in memory, Lua in Redis.

``mockstore.limiter`` writes each rule twice, side by side: the Python that a state in
memory runs and the Lua of the request script that a shared state (``serve --state
redis://``) runs in one atomic step. Hypothesis draws a limiter (each window's length
and algorithm, the time zone, what counts, the ban, which window refuses a request
both block), two plans (the second may count its windows over lengths of its own) and
a sequence of requests from a few callers at instants that only move forward (some at
once, some a hair apart, some a window apart), and sends each request to both: to
``Limiter.check`` and to the request script on a real ``redis-server`` started on a
free loopback port. Every field of every decision must be the same, to the last bit of
every instant. Some callers start with allowance spent (a scenario's ``used:``),
written to Redis by the control script as a shared state writes them; some admitted
requests are given back (an answer that does not count, ``ratelimit.not_counted``) by
each twin's refund; and at the end what Redis holds, read back, stands as memory
stands.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from mockstore.limiter.limiter import Limiter, restored
from mockstore.limiter.model import ALGORITHMS, Limits, Window
from mockstore.limiter.refusals import PRECEDENCES, Refusals
from mockstore.ratelimit import BanPolicy, Plan
from mockstore.shared import general
from mockstore.shared.scripts import CONTROL, GENERAL_REQUEST, REFUND
from tests.redis_server import RedisServer, redis_available
from tests.support import examples

redis = pytest.importorskip("redis")

pytestmark = pytest.mark.skipif(
    not redis_available(), reason="redis-server is not installed (apt-get install redis-server)"
)

# 2026-03-08T06:59:30Z: the minute before New York's clocks moved forward (an hour
# earlier, 2 a.m. local), and half a minute before a UTC hour.
START = 1772953170.0
ZONES = ("UTC", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe", "Pacific/Chatham")
# Lengths that divide a day (windows on the clock's grid need one).
SHORT = (1, 2, 3, 5, 10, 60)
LONG = (60, 120, 900, 3600, 86_400)


@pytest.fixture(scope="module")
def server() -> Iterator[Any]:
    if not redis_available():
        pytest.skip("redis-server is not installed")
    running = RedisServer().start()
    client = redis.Redis.from_url(running.url)
    try:
        yield (
            client,
            client.register_script(GENERAL_REQUEST),
            client.register_script(CONTROL),
            client.register_script(REFUND),
        )
    finally:
        client.close()
        running.stop()


@st.composite
def windows(draw: st.DrawFn, lengths: tuple[int, ...]) -> Window:
    algorithm = draw(st.sampled_from(ALGORITHMS))
    align = draw(st.sampled_from(["clock", "first_request"]))
    return Window(draw(st.sampled_from(lengths)), algorithm, align)


@st.composite
def limiters(draw: st.DrawFn) -> tuple[Limits, BanPolicy, list[Plan]]:
    # A second plan may count its windows over lengths of its own (plans.<name>.minute_seconds,
    # day_seconds): caller 1 is on it, beside callers on the scenario's lengths.
    own = draw(st.one_of(st.none(), st.tuples(st.sampled_from(SHORT), st.sampled_from(LONG))))
    limits = Limits(
        minute=draw(windows(SHORT)),
        day=draw(windows(LONG)),
        time_zone=draw(st.sampled_from(ZONES)),
        counts=draw(st.sampled_from(["served", "attempts"])),
        lengths_per_plan=own is not None,
        # Which window refuses a request both block (ratelimit.refusal.precedence).
        refusals=Refusals(draw(st.sampled_from(PRECEDENCES))),
    )
    ban = BanPolicy(
        after_rejections=draw(st.integers(1, 6)),
        within_seconds=draw(st.sampled_from([1.0, 5.0, 60.0])),
        duration_seconds=draw(st.sampled_from([0.0, 2.5, 30.0])),
        trigger=draw(st.sampled_from(["within", "consecutive"])),
    )
    plans = []
    for name, lengths in (("p", (0, 0)), ("q", own or (0, 0))):
        minute = draw(st.integers(1, 6))
        day = draw(st.one_of(st.none(), st.integers(1, 20)))
        plans.append(Plan(name, minute, day if day is not None else 10**15, *lengths))
    return limits, ban, plans


# Steps between requests: at once, a hair, a fraction, about a window, a long gap.
_steps = st.one_of(
    st.just(0.0),
    st.sampled_from([1e-6, 0.001, 0.25, 0.5, 0.999, 1.0, 1.5, 2.0, 5.0, 59.9, 60.0, 61.0]),
    st.floats(0, 120, allow_nan=False),
    st.sampled_from([900.0, 3600.0, 86_400.0]),
)
# (caller, step, the wall moves with the clock, its answer gives back what it took)
requests = st.lists(
    st.tuples(st.integers(0, 2), _steps, st.booleans(), st.booleans()), min_size=1, max_size=40
)


# The control script's prefix for the epoch a fresh state starts in (no epoch yet: 0).
PREFIX = "t:0:"


@settings(
    max_examples=examples(150),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    drawn=limiters(),
    sent=requests,
    offset=st.floats(0, 3600, allow_nan=False),
    used=st.lists(st.tuples(st.integers(0, 6), st.integers(0, 20)), max_size=3),
)
def test_python_and_lua_decide_every_request_alike(
    server: Any,
    drawn: tuple[Limits, BanPolicy, list[Plan]],
    sent: list[Any],
    offset: float,
    used: list[tuple[int, int]],
) -> None:
    client, script, control, refund = server
    client.flushdb()
    client.set("g", "1")
    limits, ban, plans = drawn
    wall_clock = [START + offset]
    limiter = Limiter(limits, ban, wall=lambda: wall_clock[0])
    now = START + offset
    # Callers that start with allowance spent: in memory, and through the control script
    # as a shared state writes them (the Python limiter's bucket, stored).
    preloads = []
    for who, (minute, day) in enumerate(used):
        plan = plans[who % 2]
        limiter.preload(f"b{who}", now, min(minute, plan.per_minute), day, plan)
        preloads.append(
            general.preload(limiter, f"b{who}", now, min(minute, plan.per_minute), day, plan)
        )
    change = json.dumps({"prefix_base": "t:", "preload": preloads, "bump": False})
    assert control(keys=["g", "config"], args=["1", "{}", change])[0] == b"ok"
    for index, (who, step, wall_moves, given_back) in enumerate(sent):
        now += step
        if wall_moves:  # a running clock; else a manual one, the wall moving on alone
            wall_clock[0] = now
        else:
            wall_clock[0] += 1.0
        bucket, plan = f"b{who}", plans[who % 2]
        expected = limiter.check(bucket, plan, now)
        keys, args = general.request(
            limiter, [PREFIX + "b:" + bucket, PREFIX + "r:" + bucket], PREFIX, bucket, plan, now
        )
        keys = ["g", keys[0], keys[1], "n", *keys[2:]]
        within = "c" if ban.trigger == "consecutive" else repr(float(ban.within_seconds))
        argv = ["1", repr(now), repr(wall_clock[0]), *args]
        argv += [ban.after_rejections, within, repr(float(ban.duration_seconds)), 0, "", 0, ""]
        reply = script(keys=keys, args=argv)
        got = general.decision(limiter, reply, plan, now)
        note(f"#{index} {bucket} at {now!r}: python {expected} lua {got}")
        assert got == expected
        if given_back and expected.verdict == "allowed":  # an answer that does not count
            limiter.refund(bucket, plan, now)
            back = ["1", repr(now), *args[1:]]
            assert refund(keys=["g", keys[1], keys[4], keys[5]], args=back) == b"ok"
    # What Redis holds reads back as the bucket memory holds: the same standing.
    for who in range(3):
        bucket, plan = f"b{who}", plans[who % 2]
        fields = {
            name.decode(): value for name, value in client.hgetall(PREFIX + "b:" + bucket).items()
        }
        logs = [client.lrange(PREFIX + "l:" + bucket + suffix, 0, -1) for suffix in (":m", ":d")]
        read_back = restored(limiter, fields, logs) if fields else None
        in_memory = limiter.usage(bucket, plan, now)
        stood = limiter.standing(read_back, plan, now)
        assert (stood.minute_remaining, stood.day_remaining, stood.banned_until) == (
            in_memory.minute_remaining,
            in_memory.day_remaining,
            in_memory.banned_until,
        )
