"""The fast way to a header block says exactly what the plain way says.

``ResponseHeaders.head`` fills a template kept per second and per everything
``build`` reads but the per-request figures; ``serialize(build(...))`` is the
reference. A template that outlived what it was made for (a window that rolled,
a plan that changed, a clock that moved, another scenario) would send stale
figures, so these tests drive both ways with the same random sequences of
requests, clock moves and key changes, and demand the same bytes every time.

Instants are written on the wall clock by default (``clock.headers: wall``),
shifted by how far the scenario clock is from it: the clocks here read a wall
and a monotonic time the test sets (``Time``), so both ways see the same
offset, for a running clock set apart from the wall (a constant offset, a
fraction of a second included) and a manual one (an offset that grows).
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mockstore.clock import Clock
from mockstore.headers import ResponseHeaders, parse_block, serialize
from mockstore.ratelimit import BanPolicy, Decision, Plan, RateLimiter
from mockstore.scenario import load_scenario
from tests.support import examples

START = 1772366430.25  # 2026-03-01T12:00:30.25Z: mid-second, mid-minute
# Two plans alike but for their daily allowance: only the draft policy tells them apart.
PLANS = (
    Plan("tiny", 3, 5),
    Plan("small", 5, 40),
    Plan("small-day", 5, 41),
    Plan("big", 1000, 100_000),
    Plan("no-day", 4),  # a provider's plan without a day allowance
)
BEHAVIOURS = st.fixed_dictionaries(
    {
        "ratelimit_reset": st.sampled_from(["epoch", "epoch-ms", "delta"]),
        "ratelimit_draft_headers": st.booleans(),
        "retry_after": st.sampled_from(["seconds", "http-date"]),
    },
    # A provider profile's settings of what build() writes.
    optional={
        "content_type": st.sampled_from(["application/json", "application/json; charset=utf-8"]),
        "request_id": st.sampled_from(
            [{"header": "X-Trace-Id", "format": "uuid"}, {"header": None}, {"header": "Request-Id"}]
        ),
        "deprecation_format": st.sampled_from(["sf-date", "http-date", "true", "none"]),
        "sunset_header": st.booleans(),
        "deprecation_link": st.sampled_from([None, '<https://example.test/%d>; rel="deprecation"']),
    },
)
LIMITERS = st.fixed_dictionaries(
    {
        "windows": st.sampled_from(["clock", "first_request"]),
        "describes": st.sampled_from(["tightest", "minute", "day"]),
    }
)
STEP = st.one_of(
    st.tuples(st.just("request"), st.integers(0, 2), st.integers(0, 5000), st.booleans()),
    st.tuples(st.just("advance"), st.floats(-90, 400, allow_nan=False)),
    st.tuples(st.just("replan"), st.integers(0, 2), st.integers(0, len(PLANS) - 1)),
    # Time passes on the wall (a running clock follows it; a manual one does not).
    st.tuples(st.just("wait"), st.floats(0, 3, allow_nan=False)),
)


class Time:
    """A wall and a monotonic clock that move only when told (``pass_``)."""

    def __init__(self, wall: float) -> None:
        self.now_wall = wall
        self.now_monotonic = 1000.0

    def wall(self) -> float:
        return self.now_wall

    def monotonic(self) -> float:
        return self.now_monotonic

    def pass_(self, seconds: float) -> None:
        self.now_wall += seconds
        self.now_monotonic += seconds

    def clock(self, start: float = 0.0, mode: str = "manual") -> Clock:
        return Clock(start, mode, wall=self.wall, monotonic=self.monotonic)  # type: ignore[arg-type]


def headers_for(
    behaviour: dict[str, Any], base_path: str = "/v1", clock_headers: str = "wall"
) -> ResponseHeaders:
    lines = [f"{name}: {json.dumps(value)}" for name, value in behaviour.items()]
    text = f"version: 1\nbase_path: {base_path}\nclock:\n  headers: {clock_headers}\n"
    if lines:
        text += "behaviour:\n" + "".join(f"  {line}\n" for line in lines)
    return ResponseHeaders(load_scenario(text))


def manual_clock() -> Clock:
    """A manual clock at START, on a wall clock a little over a day ahead of it."""
    return Time(START + 86_400 + 12.6).clock(START, "manual")


def plain(
    built: ResponseHeaders,
    length: int,
    decision: Decision,
    plan: Plan,
    clock: Clock,
    deprecated: bool,
    ratelimit: bool = True,
) -> bytes:
    headers = built.build(
        length, decision, plan, clock.now(), clock, deprecated, ratelimit, (), False, b"req-7"
    )
    return serialize(headers)


def fast(
    built: ResponseHeaders,
    length: int,
    decision: Decision,
    plan: Plan,
    clock: Clock,
    deprecated: bool,
    ratelimit: bool = True,
) -> bytes:
    return built.head(length, decision, plan, clock.now(), clock, deprecated, ratelimit, b"req-7")


@settings(max_examples=examples(200), deadline=None)
@given(
    behaviour=BEHAVIOURS,
    limiter_settings=LIMITERS,
    clock_headers=st.sampled_from(["wall", "scenario"]),
    mode=st.sampled_from(["manual", "running"]),
    # How far the wall clock is from the scenario's at the start: none (real
    # time), whole seconds, or a fraction (the Date turns mid-second).
    apart=st.sampled_from([0.0, 3600.0, -86_400.0, 0.4, 7.75, -0.3]),
    steps=st.lists(STEP, min_size=1, max_size=60),
)
def test_the_fast_block_equals_the_plain_one_for_any_sequence(
    behaviour: dict[str, Any],
    limiter_settings: dict[str, str],
    clock_headers: str,
    mode: str,
    apart: float,
    steps: list[tuple[Any, ...]],
) -> None:
    built = headers_for(behaviour, clock_headers=clock_headers)
    time = Time(START + apart)
    clock = time.clock(START, mode)
    limiter = RateLimiter(
        BanPolicy(after_rejections=3, within_seconds=60, duration_seconds=90), **limiter_settings
    )
    plans = [PLANS[0], PLANS[1], PLANS[3]]  # each key's plan, changed by "replan"
    allowed = 0
    for step in steps:
        if step[0] == "advance":
            clock.advance(step[1])
            continue
        if step[0] == "wait":
            time.pass_(step[1])
            continue
        if step[0] == "replan":
            plans[step[1]] = PLANS[step[2]]
            continue
        _, key, length, deprecated = step
        decision = limiter.check(f"key:{key}", plans[key], clock.now())
        if decision.retry_after:  # a refusal: always the plain way
            continue
        allowed += 1
        expected = plain(built, length, decision, plans[key], clock, deprecated)
        assert fast(built, length, decision, plans[key], clock, deprecated) == expected
        # Twice: the second comes from the template made by the first.
        assert fast(built, length, decision, plans[key], clock, deprecated) == expected


def _allowed(limiter: RateLimiter, plan: Plan, clock: Clock, bucket: str = "key:k") -> Decision:
    decision = limiter.check(bucket, plan, clock.now())
    assert decision.verdict == "allowed"
    return decision


def _header(block: bytes, name: bytes) -> bytes:
    return dict(parse_block(block))[name]


def test_the_block_follows_the_remaining_count_the_window_the_plan_and_the_clock() -> None:
    # Instants as the scenario clock names them: a window rolled is a reset a minute on.
    built = headers_for({"ratelimit_draft_headers": True}, clock_headers="scenario")
    clock = manual_clock()
    limiter = RateLimiter(BanPolicy(after_rejections=3, within_seconds=60, duration_seconds=90))
    plan = PLANS[3]
    first = fast(built, 10, _allowed(limiter, plan, clock), plan, clock, False)
    second = fast(built, 10, _allowed(limiter, plan, clock), plan, clock, False)
    # The remaining count falls, in X-RateLimit-Remaining and in the draft header.
    assert _header(first, b"x-ratelimit-remaining") == b"999"
    assert _header(second, b"x-ratelimit-remaining") == b"998"
    assert _header(second, b"ratelimit") != _header(first, b"ratelimit")
    # The window rolls: a new reset instant and a full allowance again.
    clock.advance(60)
    rolled = fast(built, 10, _allowed(limiter, plan, clock), plan, clock, False)
    assert _header(rolled, b"x-ratelimit-reset") == b"%d" % (
        int(_header(first, b"x-ratelimit-reset")) + 60
    )
    assert _header(rolled, b"x-ratelimit-remaining") == b"999"
    # Within the same second, another plan: other figures, not the kept template's.
    other = PLANS[1]
    replanned = fast(built, 10, _allowed(limiter, other, clock, "key:j"), other, clock, False)
    assert _header(replanned, b"x-ratelimit-limit") == b"5"
    assert _header(replanned, b"ratelimit-policy").startswith(b'"minute";q=5;')
    # The clock moves by less than a window: the Date moves with it.
    clock.advance(1)
    moved = fast(built, 10, _allowed(limiter, plan, clock), plan, clock, False)
    assert _header(moved, b"date") != _header(rolled, b"date")


def test_another_scenario_gets_its_own_blocks() -> None:
    clock = manual_clock()
    plan = PLANS[3]
    limiter = RateLimiter(BanPolicy(after_rejections=3, within_seconds=60, duration_seconds=90))
    decision = _allowed(limiter, plan, clock)
    unix = fast(
        headers_for({"ratelimit_reset": "epoch"}, clock_headers="scenario"),
        1,
        decision,
        plan,
        clock,
        True,
    )
    delta = fast(headers_for({"ratelimit_reset": "delta"}, "/v2"), 1, decision, plan, clock, True)
    assert _header(unix, b"x-ratelimit-reset") == b"%d" % decision.reset
    assert _header(delta, b"x-ratelimit-reset") == b"30"  # 12:00:30.25 -> 12:01:00
    assert _header(delta, b"link").startswith(b"</v2/")


def test_a_figure_that_looks_like_a_slot_is_still_sent_right() -> None:
    # A plan whose allowance is one of the template's sentinel numbers: the
    # template cannot tell it from a slot, notices, and the plain way answers.
    built = headers_for({"ratelimit_draft_headers": True})
    clock = manual_clock()
    odd = Plan("odd", 7_304_918_265_517_362_802, 8_196_402_735_881_640_571)
    limiter = RateLimiter(BanPolicy(after_rejections=3, within_seconds=60, duration_seconds=90))
    for _ in range(3):
        decision = _allowed(limiter, odd, clock)
        assert fast(built, 5, decision, odd, clock, False) == plain(
            built, 5, decision, odd, clock, False
        )


def test_a_block_without_rate_limit_headers_is_the_plain_one_too() -> None:
    built = headers_for({"ratelimit_draft_headers": True})
    clock = manual_clock()
    limiter = RateLimiter(BanPolicy(after_rejections=3, within_seconds=60, duration_seconds=90))
    decision = _allowed(limiter, PLANS[3], clock)
    block = fast(built, 3, decision, PLANS[3], clock, False, ratelimit=False)
    assert block == plain(built, 3, decision, PLANS[3], clock, False, ratelimit=False)
    assert b"ratelimit" not in block


def test_plans_alike_but_for_one_figure_get_their_own_blocks() -> None:
    # small and small-day allow 5 a minute; only the day differs, which only
    # the draft RateLimit-Policy header states: each key's block must say its own.
    built = headers_for({"ratelimit_draft_headers": True})
    clock = manual_clock()
    limiter = RateLimiter(BanPolicy(after_rejections=3, within_seconds=60, duration_seconds=90))
    for plan, bucket in ((PLANS[1], "key:a"), (PLANS[2], "key:b"), (PLANS[1], "key:a")):
        decision = _allowed(limiter, plan, clock, bucket)
        block = fast(built, 5, decision, plan, clock, False)
        assert block == plain(built, 5, decision, plan, clock, False)
        assert b'"day";q=%d;' % plan.per_day in _header(block, b"ratelimit-policy")


def test_on_the_wall_clock_a_block_states_the_wall_clocks_instants() -> None:
    # A running clock set to START, on a wall clock an hour and a fraction ahead:
    # every instant is written an hour and a fraction later, rounded as build
    # rounds it, and the Date turns with the wall clock's second, not the scenario's.
    built = headers_for({"ratelimit_draft_headers": True})
    time = Time(START + 3600.6)
    clock = time.clock(START, "running")
    limiter = RateLimiter(BanPolicy(after_rejections=3, within_seconds=60, duration_seconds=90))
    plan = PLANS[3]
    seen = set()
    for _ in range(8):  # a quarter of a second at a time: the wall's second turns at .4
        decision = _allowed(limiter, plan, clock)
        block = fast(built, 1, decision, plan, clock, True)
        assert block == plain(built, 1, decision, plan, clock, True)
        assert _header(block, b"x-ratelimit-reset") == b"%d" % (decision.reset + 3601)
        seen.add(_header(block, b"date"))
        time.pass_(0.25)
    assert len(seen) == 3  # 13:00:30.85 .. 13:00:32.6 on the wall


def test_a_manual_clock_on_the_wall_clock_is_answered_right_as_the_wall_moves() -> None:
    built = headers_for({})
    time = Time(START + 50.5)
    clock = time.clock(START, "manual")
    limiter = RateLimiter(BanPolicy(after_rejections=3, within_seconds=60, duration_seconds=90))
    plan = PLANS[3]
    resets = set()
    for _ in range(4):
        decision = _allowed(limiter, plan, clock)
        block = fast(built, 1, decision, plan, clock, False)
        assert block == plain(built, 1, decision, plan, clock, False)
        resets.add(_header(block, b"x-ratelimit-reset"))
        time.pass_(0.7)  # the scenario clock stands still; the reset comes nearer on the wall
    assert len(resets) > 1
