"""A small request is read whoever holds the connections' share (``mockstore.body_reserve``).

In ``bench/held_mix.py`` the well-behaved client's 40-byte creates were
answered 507 ``memory_budget`` ("20 bytes left of 32 MiB") while hostile
connections held the connections' share. Each connection now has the first
bytes of its request body kept for it (a share of their own, split between
``--max-connections``): with the connections' share full to its last byte, a
small create is served, and a larger body is still refused, so the budget
holds.

Against a real ``mockstore serve``: uploads that never finish fill the share,
each step waiting until the server says (``GET /__mockstore/memory``) it
holds every byte sent, never on time. And the rule for every interleaving of
charges, in process, with Hypothesis.
"""

from __future__ import annotations

import contextlib
import json
import socket
import time

import httpx
from hypothesis import given
from hypothesis import strategies as st

from mockstore.body_reserve import BodyReserve
from mockstore.memory import MemoryBudget, MiB
from tests.attacks import PUBLIC, TEST_BUDGET, big_journal, budget_env
from tests.rawhttp import address
from tests.support import LiveServer, live_server

LIMIT = 1_048_576  # the scenario's max_body_bytes (the default)


def _memory(client: httpx.Client, server: LiveServer) -> dict:
    return client.get(server.url + "/__mockstore/memory").json()


def _held(memory: dict) -> int:
    """What connections hold: their share and (where there is one) the first bytes' share."""
    return memory["connections"]["used"] + memory.get("bodies", {}).get("used", 0)


def _upload(server: LiveServer) -> socket.socket:
    """A create promising a 1 MiB body, its head sent: the body follows a piece at a time."""
    host, port = address(server.url)
    sock = socket.create_connection((host, port), timeout=30)
    sock.sendall(
        (
            f"POST /v1/pets HTTP/1.1\r\nHost: {host}:{port}\r\n"
            f"Authorization: {PUBLIC['Authorization']}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {LIMIT}\r\n\r\n"
        ).encode()
    )
    return sock


def _until(condition: object, deadline: float = 120.0) -> bool:
    end = time.monotonic() + deadline
    while not condition():  # type: ignore[operator]
        if time.monotonic() > end:
            return False
        time.sleep(0.05)
    return True


def test_a_small_create_is_served_while_uploads_hold_the_connections_share() -> None:
    env = budget_env(
        TEST_BUDGET, MOCKSTORE_SCENARIO_YAML=big_journal(), MOCKSTORE_TIMEOUT_BODY="600"
    )
    with (
        live_server(env=env) as server,
        httpx.Client(timeout=60) as client,
        contextlib.ExitStack() as uploads,
    ):
        held = _held(_memory(client, server))
        sock, on = None, LIMIT
        # Uploads that never finish take the connections' share to its last byte.
        while (left := _memory(client, server)["connections"]["available"]) > 0:
            if on + left >= LIMIT:
                sock, on = uploads.enter_context(_upload(server)), 0
            piece = min(left, LIMIT - 1 - on)
            sock.sendall(b"x" * piece)  # type: ignore[union-attr]
            on += piece
            held += piece
            assert _until(lambda held=held: _held(_memory(client, server)) == held), (
                held,
                _memory(client, server),
            )
        full = _memory(client, server)
        pet = {"name": "small", "categoryId": 2}
        small = client.post(server.api + "/pets", json=pet, headers=PUBLIC)
        large = client.post(
            server.api + "/pets", json={"name": "n" * 64 * 1024, "categoryId": 2}, headers=PUBLIC
        )
        after = _memory(client, server)
    assert full["connections"]["available"] == 0
    assert small.status_code == 201, small.text
    assert {k: v for k, v in small.json().items() if k != "id"} == pet
    # The budget still holds: what is beyond a connection's first bytes is refused.
    assert large.status_code == 507, large.text
    assert large.json()["code"] == "memory_budget"
    assert json.loads(large.text)["status"] == 507
    assert after["connections"]["used"] <= after["connections"]["ceiling"]


@given(
    connections=st.integers(min_value=1, max_value=64),
    takes=st.lists(
        st.tuples(st.integers(min_value=0, max_value=63), st.integers(0, 96 * 1024)),
        max_size=60,
    ),
)
def test_a_body_within_its_first_bytes_is_never_refused(
    connections: int, takes: list[tuple[int, int]]
) -> None:
    budget = MemoryBudget(64 * MiB)
    reserve = BodyReserve(budget.connections, budget.bodies, connections)
    # Others hold the connections' share to its last byte.
    hog = budget.connections.available
    assert budget.connections.reserve(hog)
    charges = [reserve.charge() for _ in range(connections)]
    totals = [0] * connections
    for which, size in takes:
        index = which % connections
        taken = charges[index].take(size)
        if totals[index] + size <= reserve.each:
            assert taken  # within what is kept for it: never refused
        else:
            assert not taken or size == 0  # beyond it, the full share says no
        if taken:
            totals[index] += size
        assert budget.used <= budget.ceiling
        assert budget.bodies.used <= budget.bodies.ceiling
        assert budget.connections.used <= budget.connections.ceiling
    for charge in charges:
        charge.release()
    assert budget.bodies.used == 0
    assert budget.connections.used == hog
