"""Fixtures for mockstore's own tests (the user-facing fixtures live in the plugin)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings
from starlette.testclient import TestClient

from mockstore.app import create_app
from mockstore.clock import Clock
from tests.redis_server import RedisServer, redis_available, required
from tests.support import HYPOTHESIS_PROFILE, LiveServer, examples, mock_server, shared_state_url

# No property test judges speed: a loaded machine makes any example slow (Hypothesis's
# deadline and too_slow health check failed CI runs that were correct). "fast" (the README's
# command) draws a quarter of the examples; "deep" (.ci/run's property step, selected with
# MOCKSTORE_HYPOTHESIS_PROFILE=deep) draws them all. A test's own @settings(max_examples=...)
# wins over a profile: write examples(n) there (tests/support.py) to scale it the same way.
_NO_SPEED_VERDICT = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}
settings.register_profile("fast", max_examples=examples(100), **_NO_SPEED_VERDICT)
settings.register_profile("deep", max_examples=100, **_NO_SPEED_VERDICT)
settings.load_profile(HYPOTHESIS_PROFILE)

# The client suites are data for the verdict-agreement harness (tests/agreement.py), which runs
# each against a provider or a mock in a pytest of its own: never collected here.
collect_ignore = ["client_suites"]


@pytest.fixture(scope="session")
def server() -> Iterator[LiveServer]:
    """One real uvicorn process on the default scenario for read-mostly tests."""
    with mock_server() as running:
        yield running


@pytest.fixture
def fresh_server() -> Iterator[LiveServer]:
    """A real server of its own, for tests that change state."""
    with mock_server() as running:
        yield running


@pytest.fixture
def manual_clock() -> Clock:
    """A manual clock at 2026-03-01T12:00:30Z (mid-minute, so windows are visible).

    Its wall clock is itself, as for a client whose own clock is frozen with
    it (freezegun, time-machine): headers name the scenario's instants as
    they are, so tests can read dates literally.
    """
    clock = Clock(start=1772366430.0, mode="manual")
    clock.wall = clock.now
    return clock


@pytest.fixture
def client(manual_clock: Clock) -> Iterator[TestClient]:
    """An in-process client on the default scenario with a manual clock."""
    app = create_app("default", clock=manual_clock, state=shared_state_url())
    with TestClient(app, base_url="http://testserver") as test_client:
        yield test_client


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    """A real redis-server of its own on a free loopback port (skipped where none is installed).

    In CI (``MOCKSTORE_REQUIRE_REDIS``) a missing redis-server fails instead.
    """
    if not redis_available():
        if required():
            pytest.fail("redis-server is not installed (apt-get install redis-server)")
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    with RedisServer() as server:
        yield server
