"""The general rate-limit header writer says what the classic one says, where both can.

``mockstore.headers`` writes the classic forms on a path tuned to the
instruction; ``mockstore.limiter.announce`` writes every form a scenario's
``ratelimit.headers`` may ask for. For the settings both can say, and the
decisions of the classic limiter (whole-second resets), both must write the
same bytes: Hypothesis draws the settings, a plan and a sequence of requests
and clock moves, and compares every answer's rate-limit headers. And the
general limiter's decisions, for fixed windows of a clock minute and a UTC day,
are the classic limiter's, figure for figure.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mockstore.clock import Clock
from mockstore.headers import ResponseHeaders
from mockstore.limiter.announce import Announcer, rounded_up
from mockstore.limiter.limiter import Limiter
from mockstore.ratelimit import BanPolicy, Plan, RateLimiter
from mockstore.scenario import load_scenario
from tests.support import examples

START = 1772366430.25  # 2026-03-01T12:00:30.25Z
PLANS = (Plan("tiny", 3, 5), Plan("small", 5, 40), Plan("no-day", 4))
BAN = BanPolicy(after_rejections=3, within_seconds=60, duration_seconds=42.5)

SETTINGS = st.fixed_dictionaries(
    {
        "ratelimit_reset": st.sampled_from(["epoch", "epoch-ms", "delta"]),
        "ratelimit_draft_headers": st.booleans(),
        "retry_after": st.sampled_from(["seconds", "http-date"]),
        "retry_after_banned": st.sampled_from(["same", "seconds", "http-date"]),
        "ratelimit_windows": st.sampled_from(["clock", "first_request"]),
        "ratelimit_describes": st.sampled_from(["tightest", "minute", "day"]),
    }
)
STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("request"), st.integers(0, 2)),
        st.tuples(st.just("advance"), st.floats(0, 200, allow_nan=False)),
    ),
    min_size=1,
    max_size=30,
)
RATE = (b"x-ratelimit-limit", b"x-ratelimit-remaining", b"x-ratelimit-reset", b"retry-after")


def _rate_headers(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    return [h for h in headers if h[0] in RATE or h[0].startswith(b"ratelimit")]


@settings(max_examples=examples(120), deadline=None)
@given(
    chosen=SETTINGS,
    plan=st.sampled_from(PLANS),
    steps=STEPS,
    status=st.sampled_from([200, 404, 429]),
)
def test_the_general_writer_says_what_the_classic_one_says(
    chosen: dict[str, Any], plan: Plan, steps: list[Any], status: int
) -> None:
    behaviour = (
        ", ".join(f"{name}: {value}" for name, value in chosen.items())
        .replace("True", "true")
        .replace("False", "false")
    )
    text = f"version: 1\nclock: {{headers: scenario}}\nbehaviour: {{{behaviour}}}\n"
    scenario = load_scenario(text)
    assert scenario.ratelimit.classic
    classic = ResponseHeaders(scenario)
    general = ResponseHeaders(scenario)
    general.announcer = Announcer(scenario.ratelimit)
    clock = Clock(start=START, mode="manual", wall=lambda: START)
    limiter = RateLimiter(
        BAN, chosen["ratelimit_windows"], chosen["ratelimit_describes"], "blocking"
    )
    for step in steps:
        if step[0] == "advance":
            clock.advance(step[1])
            continue
        now = clock.now()
        decision = limiter.check(f"b{step[1]}", plan, now)
        args = (10, decision, plan, now, clock, False, status, (), False, b"req-1")
        assert _rate_headers(general.build(*args)) == _rate_headers(classic.build(*args))


@settings(max_examples=examples(120), deadline=None)
@given(
    windows=st.sampled_from(["clock", "first_request"]),
    describes=st.sampled_from(["tightest", "minute", "day"]),
    plan=st.sampled_from(PLANS),
    steps=STEPS,
)
def test_the_general_limiter_counts_fixed_windows_as_the_classic_one(
    windows: str, describes: str, plan: Plan, steps: list[Any]
) -> None:
    text = (
        "version: 1\n"
        f"ratelimit: {{minute: {{align: {windows}}}, day: {{align: {windows}}},"
        f" headers: {{describes: {describes}, reset_decimals: 1}}}}\n"
    )
    limits = load_scenario(text).ratelimit
    classic = RateLimiter(BAN, windows, describes, "blocking")
    general = Limiter(limits, BAN)
    now = START
    for step in steps:
        if step[0] == "advance":
            now += step[1]
            continue
        one = classic.check(f"b{step[1]}", plan, now)
        other = general.check(f"b{step[1]}", plan, now)
        # The classic limiter rounds a reset from a first request up to the second.
        up = (lambda x: float(-(-x // 1))) if windows == "first_request" else float
        assert (one.verdict, one.limit, one.remaining, one.window, one.retry_after) == (
            other.verdict,
            other.limit,
            other.remaining,
            other.window,
            other.retry_after,
        )
        assert one.retry_at == other.retry_at
        if one.verdict != "key_banned":
            assert float(one.reset) == up(other.reset)


def test_figures_round_up_at_their_precision() -> None:
    assert rounded_up(59.0, 0) == b"59"
    assert rounded_up(59.0001, 0) == b"60"
    assert rounded_up(0.3, 1) == b"0.3"  # 0.3 * 10 is 3.0000000000000004: not 0.4
    assert rounded_up(59.95, 1) == b"60.0"
    assert rounded_up(1772366450.1234, 3) == b"1772366450.124"
    assert rounded_up(12.0000004, 3) == b"12.000"  # float noise under a microsecond goes
