"""Issue 19, finding 2: clients that ask for large answers and never read them.

On main an answer went to the connection's buffer whole (asyncio copies what
the socket does not take), and nothing ever dropped a client that stopped
reading: thirty readers of a 16.6 MB listing held 581 MiB. Now an answer goes
out a piece at a time, a connection holds at most 128 KiB unsent, a client
that stops reading is dropped after ``--timeout-write``, and large answers in
flight draw on the memory budget (507 past it).
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.attacks import (
    ALLOWANCE,
    PUBLIC,
    MiB,
    big_journal,
    budget_env,
    create_big_pets,
    holds_connection,
    mib,
    peak_rss,
    slow_readers,
)
from tests.support import LiveServer, live_server

# Room for the 16 pets (32 MiB) and, in the connections' quarter, one listing.
BUDGET = 128 * MiB


@pytest.fixture(scope="module")
def stocked() -> Iterator[LiveServer]:
    """A server whose listing of 100 is 16.6 MB, that drops non-readers after 2 s."""
    scenario = big_journal(body_bytes=4096)
    env = budget_env(BUDGET, MOCKSTORE_SCENARIO_YAML=scenario, MOCKSTORE_TIMEOUT_WRITE="2")
    with live_server(env=env) as running:
        assert create_big_pets(running.api, 16) == [201] * 16
        yield running


def _dropped(server: LiveServer, sockets: list[socket.socket], seconds: float) -> bool:
    """Whether the server let go of every reader's connection within ``seconds`` (polled).

    Seen from the server's side (``holds_connection``): a reader cannot tell
    without reading.
    """
    assert server.process is not None
    pid = server.process.pid
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not any(holds_connection(pid, sock) for sock in sockets):
            return True
        time.sleep(0.2)
    return False


def test_a_client_that_stops_reading_is_dropped(stocked: LiveServer) -> None:
    with slow_readers(stocked.url, 1) as sockets:
        assert stocked.process is not None
        assert holds_connection(stocked.process.pid, sockets[0])
        assert _dropped(stocked, sockets, 60), "the server still holds the reader's connection"


def test_thirty_readers_that_never_read_hold_no_more_than_the_budget(stocked: LiveServer) -> None:
    assert stocked.process is not None
    with slow_readers(stocked.url, 30) as sockets:
        dropped = _dropped(stocked, sockets, 90)
        peak = peak_rss(stocked.process.pid)
    assert peak <= BUDGET + ALLOWANCE, f"peak {mib(peak)}"
    assert dropped, "the server still holds some of the readers' connections"
    # And the server still answers, the large listing included.
    listing = httpx.get(stocked.api + "/pets?limit=100", headers=PUBLIC, timeout=60)
    assert listing.status_code in (200, 507), listing.text[:200]
    assert len(httpx.get(stocked.api + "/pets?limit=2", headers=PUBLIC, timeout=30).json()) == 2


def test_an_answer_the_budget_cannot_hold_is_a_507_error_body(stocked: LiveServer) -> None:
    # Readers that hold more large answers than the connections' share (a
    # quarter of 128 MiB: one 16.6 MB listing), then one more: refused with an
    # Error body instead of growing.
    with slow_readers(stocked.url, 3):
        time.sleep(0.5)
        answer = httpx.get(stocked.api + "/pets?limit=100", headers=PUBLIC, timeout=60)
    assert answer.status_code == 507, answer.status_code
    body = answer.json()
    assert body["code"] == "memory_budget" and body["status"] == 507
    assert "--memory-budget" in body["message"]
    assert "x-ratelimit-limit" in answer.headers


def test_slow_readers_do_not_shut_others_out_at_the_connection_limit() -> None:
    env = {"MOCKSTORE_SCENARIO_YAML": big_journal()}
    with live_server("--max-connections", "10", env=env) as running:
        assert create_big_pets(running.api, 16) == [201] * 16
        with slow_readers(running.url, 10):
            time.sleep(1)
            answers = [
                httpx.get(running.api + "/pets/1", headers=PUBLIC, timeout=30).status_code
                for _ in range(3)
            ]
    assert answers == [200, 200, 200]
