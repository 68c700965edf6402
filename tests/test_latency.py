"""Answer times as recorded (``latency``): a delay per answer drawn from the rule's quantiles,
deterministic under the seed, waited without holding the event loop.

The server is given a timebase whose ``wait`` records each delay asked for (and,
in one test, holds it until the test lets it go), so nothing here depends on how
fast the machine is: what is checked is which delay each answer waits, and that
other requests are answered meanwhile. Over a real uvicorn process (in Redis too
under ``MOCKSTORE_TEST_STATE=redis``).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mockstore.clock import Timebase
from mockstore.latency import Latency, draw
from mockstore.scenario import ScenarioError, load_scenario
from mockstore.scenario.latency_section import LatencyRule
from tests.support import LiveServer, mock_server

KEY = {"Authorization": "Bearer slow-key"}
SCENARIO = """\
version: 1
seed: 7
keys: [{key: slow-key, plan: {per_minute: 1000, per_day: 10000}}]
generate: {pets: 5}
latency:
  - {operation: listPets, status: 200, quantiles_ms: {p0: 20, p50: 40, p90: 120, p100: 300}}
  - {status: 4xx, quantiles_ms: {p0: 2, p100: 2}}
  - {operation: listPets, quantiles_ms: {p0: 999, p100: 999}}
"""


class Waits:
    """A timebase's ``wait`` that records what it is asked to wait, and waits nothing."""

    def __init__(self) -> None:
        self.asked: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.asked.append(seconds)


@pytest.fixture
def waits() -> Waits:
    return Waits()


@pytest.fixture
def api(waits: Waits) -> Iterator[LiveServer]:
    with mock_server(SCENARIO, timebase=Timebase(wait=waits)) as running:
        yield running


def _expected(request_ids: list[str], operation: str, status: int) -> list[float]:
    latency = Latency(load_scenario(SCENARIO).latency, 7)
    return [latency.delay_ms(operation, status, rid.encode()) / 1000 for rid in request_ids]


def test_each_answer_waits_its_draw_from_the_first_rule_that_matches(
    api: LiveServer, waits: Waits
) -> None:
    with httpx.Client(base_url=api.api, headers=KEY) as http:
        listed = [http.get("/pets?limit=1") for _ in range(20)]
        refused = http.get("/pets?limit=0")
        fetched = http.get("/pets/1")  # no rule: not waited
    ids = [answer.headers["x-request-id"] for answer in listed]
    assert waits.asked[:20] == pytest.approx(_expected(ids, "listPets", 200))
    assert all(0.020 <= w <= 0.300 for w in waits.asked[:20])
    assert len(set(waits.asked[:20])) > 10  # a spread, not a constant
    assert waits.asked[20] == pytest.approx(0.002)  # the 4xx rule before the catch-all
    assert len(waits.asked) == 21
    assert (refused.status_code, fetched.status_code) == (400, 200)


def test_the_same_requests_wait_the_same_delays(waits: Waits) -> None:
    other = Waits()
    for wait in (waits, other):
        with (
            mock_server(SCENARIO, timebase=Timebase(wait=wait)) as api,
            httpx.Client(base_url=api.api, headers=KEY) as http,
        ):
            for _ in range(10):
                http.get("/pets?limit=2")
    assert waits.asked == other.asked


def test_a_wait_holds_no_other_request() -> None:
    released = threading.Event()
    started = threading.Event()

    async def held(seconds: float) -> None:
        started.set()
        while not released.is_set():
            await asyncio.sleep(0.005)

    with (
        mock_server(SCENARIO, timebase=Timebase(wait=held)) as api,
        ThreadPoolExecutor(1) as pool,
        httpx.Client(base_url=api.api, headers=KEY) as http,
    ):
        slow = pool.submit(http.get, "/pets?limit=1")
        assert started.wait(10)
        fetched = http.get("/pets/1")  # no latency rule: answered while the list waits
        assert fetched.status_code == 200
        assert not slow.done()
        released.set()
        assert slow.result(timeout=10).status_code == 200


def test_quantiles_that_decrease_are_refused_with_their_place() -> None:
    text = "version: 1\nlatency:\n  - {quantiles_ms: {p0: 5, p50: 40, p90: 30, p100: 50}}\n"
    with pytest.raises(ScenarioError) as refused:
        load_scenario(text, "l.yaml")
    assert str(refused.value) == (
        "l.yaml:3:42: $.latency[0].quantiles_ms.p90: p90 (30 ms) is below p50 (40 ms): "
        "quantiles never decrease"
    )


def test_a_rule_needs_its_fastest_and_slowest() -> None:
    with pytest.raises(ScenarioError) as refused:
        load_scenario("version: 1\nlatency:\n  - {quantiles_ms: {p50: 40}}\n", "l.yaml")
    assert "'p0' is required" in str(refused.value)


@st.composite
def _rules(draw_: st.DrawFn) -> LatencyRule:
    inner = sorted(draw_(st.lists(st.floats(0.001, 0.999), max_size=5, unique=True)))
    values = sorted(
        draw_(st.lists(st.floats(0, 600_000), min_size=len(inner) + 2, max_size=len(inner) + 2))
    )
    points = tuple(zip([0.0, *inner, 1.0], values, strict=True))
    return LatencyRule(0, points)


@given(rule=_rules(), u=st.floats(0, 1, exclude_max=True), v=st.floats(0, 1, exclude_max=True))
def test_a_delay_is_within_the_bounds_and_grows_with_its_draw(
    rule: LatencyRule, u: float, v: float
) -> None:
    low, high = rule.points[0][1], rule.points[-1][1]
    assert low <= rule.delay_ms(u) <= high
    if u <= v:
        assert rule.delay_ms(u) <= rule.delay_ms(v) + 1e-6


@given(rule=_rules())
def test_each_given_quantile_is_met(rule: LatencyRule) -> None:
    for q, value in rule.points[:-1]:
        assert rule.delay_ms(q) == pytest.approx(value)


@given(seed=st.integers(0, 2**31), rule=st.integers(0, 200), rid=st.binary(max_size=40))
def test_a_draw_is_uniform_in_its_range_and_a_function_of_its_inputs(
    seed: int, rule: int, rid: bytes
) -> None:
    u = draw(seed, rule, rid)
    assert 0.0 <= u < 1.0
    assert draw(seed, rule, rid) == u
