"""Fixtures for mockstore's own tests (the user-facing fixtures live in the plugin)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from mockstore.app import create_app
from mockstore.clock import Clock
from tests.support import LiveServer, mock_server


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
    app = create_app("default", clock=manual_clock)
    with TestClient(app, base_url="http://testserver") as test_client:
        yield test_client
