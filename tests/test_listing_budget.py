"""Issue 27, point 1: a large listing is charged to the budget before it is made.

On main a 16.6 MB listing was joined first and only then charged to the
connections' share: with the share held by readers that never read, each
further request for it still made 16.6 MB before its 507 (100 such readers:
the normal client waited 4.6 s). Now its size is known from its parts
(``mockstore.json_array``) and charged first; a listing the share cannot hold
is refused without being made.

Seen from outside through the server's peak resident memory: ``serve`` maps
every block of 128 KiB or more on its own (``server.tune_allocator``), so a
16.6 MB body made and freed still raises the kernel's high-water mark, which
the test resets (``/proc/PID/clear_refs``) once the readers hold the share.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mockstore.json_array import JsonArray, array_of, join_array
from tests.attacks import (
    PUBLIC,
    MiB,
    big_journal,
    budget_env,
    create_big_pets,
    mib,
    peak_rss,
    slow_readers,
    status_field,
)
from tests.support import LiveServer, live_server

# The connections' share is a quarter of it: 32 MiB, two 16.6 MB listings.
BUDGET = 128 * MiB
LISTING = "/pets?limit=100"


@pytest.fixture(scope="module")
def stocked() -> Iterator[LiveServer]:
    """A server whose listing of 100 is 16.6 MB, and that never drops a reader in this test."""
    env = budget_env(
        BUDGET, MOCKSTORE_SCENARIO_YAML=big_journal(body_bytes=4096), MOCKSTORE_TIMEOUT_WRITE="600"
    )
    with live_server(env=env) as running:
        assert create_big_pets(running.api, 16) == [201] * 16
        yield running


def _reset_peak(pid: int) -> int:
    """Reset the process's peak resident memory to its current value; returns that value."""
    with open(f"/proc/{pid}/clear_refs", "w", encoding="ascii") as clear:
        clear.write("5")
    return status_field(pid, "VmRSS")


def test_a_listing_the_budget_cannot_hold_is_refused_before_it_is_made(
    stocked: LiveServer,
) -> None:
    assert stocked.process is not None
    pid = stocked.process.pid
    with httpx.Client(timeout=120) as client:
        size = len(client.get(stocked.api + LISTING, headers=PUBLIC).content)
        assert size > 16 * 10**6
        # Two readers that never read hold two listings: the share has no room for a third.
        with slow_readers(stocked.url, 2, target="/v1" + LISTING):
            held = client.get(stocked.url + "/__mockstore/memory").json()
            before = _reset_peak(pid)
            answers = [client.get(stocked.api + LISTING, headers=PUBLIC) for _ in range(4)]
            grown = peak_rss(pid) - before
    for answer in answers:
        assert answer.status_code == 507, (answer.status_code, answer.content[:200], held)
        body = answer.json()
        assert body["code"] == "memory_budget" and body["status"] == 507
    # Main made each refused listing (16.6 MB) before refusing it.
    assert grown < size // 2, f"peak grew by {mib(grown)} while refusing 4 listings"
    assert "this listing does not fit" in answers[0].json()["message"]


def test_the_listing_is_answered_again_once_the_readers_are_gone(stocked: LiveServer) -> None:
    # Nothing stays charged: the refusals gave back nothing they did not take, and the
    # readers what they held once the server sees them gone (polled, with a deadline).
    with httpx.Client(timeout=120) as client:
        with slow_readers(stocked.url, 2, target="/v1" + LISTING):
            pass
        deadline = time.monotonic() + 120
        answer = client.get(stocked.api + LISTING, headers=PUBLIC)
        while answer.status_code == 507 and time.monotonic() < deadline:
            time.sleep(0.2)
            answer = client.get(stocked.api + LISTING, headers=PUBLIC)
    assert answer.status_code == 200, answer.content[:200]
    assert len(answer.json()) == 17  # the scenario's pet and the 16 created


def test_a_head_for_a_large_listing_gives_its_length(stocked: LiveServer) -> None:
    with httpx.Client(timeout=120) as client:
        full = client.get(stocked.api + LISTING, headers=PUBLIC)
        head = client.head(stocked.api + LISTING, headers=PUBLIC)
    assert head.status_code == 200 and head.content == b""
    assert int(head.headers["content-length"]) == len(full.content)


parts = st.lists(st.binary(max_size=40), max_size=30)


@given(parts)
def test_a_json_array_knows_its_size_before_it_is_made(values: list[bytes]) -> None:
    array = JsonArray(list(values))
    assert array.size == len(array) == len(b"[" + b",".join(values) + b"]")
    assert array.join() == b"[" + b",".join(values) + b"]"


@given(parts, st.integers(min_value=0, max_value=2000))
def test_an_array_is_made_at_once_only_up_to_its_bound(values: list[bytes], bound: int) -> None:
    made = array_of(list(values), bound)
    joined = join_array(list(values))
    if len(joined) <= bound:
        assert made == joined
    else:
        assert isinstance(made, JsonArray) and made.join() == joined
