"""Issue 27, finding 1: a whole answer held for a client that does not read is charged in full.

On main a connection that stopped reading was charged 128 KiB (what may wait
in its buffer), while the server held the whole answer: the request list and
the HAR, each a snapshot of the journal and megabyte batches, took a server
with a 256 MiB budget to 680 MiB under 100 such readers (the issue: 606 and
605 MiB), and no one was answered 507. Now a stream holds the journal's bytes
of the budget's share for reports until it ends, a large control answer its
size of the connections' share, and each goes out 64 KiB at a time.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.attacks import (
    ALLOWANCE,
    MiB,
    big_journal,
    budget_env,
    create_big_pets,
    mib,
    peak_rss,
    slow_readers,
)
from tests.support import LiveServer, live_server

BUDGET = 128 * MiB


@pytest.fixture(scope="module")
def journaled() -> Iterator[LiveServer]:
    """A server whose journal keeps 16 creates of 1 MiB whole: its HAR is about 17 MB."""
    env = budget_env(BUDGET, MOCKSTORE_SCENARIO_YAML=big_journal())
    with live_server(env=env) as running:
        assert create_big_pets(running.api, 16) == [201] * 16
        yield running


@pytest.mark.parametrize("target", ["/__mockstore/requests.har", "/__mockstore/requests"])
def test_readers_of_the_journal_that_never_read_hold_no_more_than_the_budget(
    journaled: LiveServer, target: str
) -> None:
    assert journaled.process is not None
    with slow_readers(journaled.url, 60, target=target):
        refused = httpx.get(journaled.url + target, timeout=60)
        peak = peak_rss(journaled.process.pid)
    assert peak <= BUDGET + ALLOWANCE, f"peak {mib(peak)}"
    # The budget's share for reports is full of the readers' snapshots: an Error body.
    assert refused.status_code == 507, refused.status_code
    body = refused.json()
    assert body["code"] == "memory_budget" and body["status"] == 507
    assert "--memory-budget" in body["message"]
    health = httpx.get(journaled.url + "/__mockstore/health", timeout=30)
    assert health.status_code == 200


def test_a_journal_stream_is_whole_for_a_client_that_reads(journaled: LiveServer) -> None:
    har = httpx.get(journaled.url + "/__mockstore/requests.har", timeout=60)
    assert har.status_code == 200
    entries = har.json()["log"]["entries"]
    creates = [e for e in entries if e["request"]["method"] == "POST"]
    assert len(creates) >= 16
    assert all(len(e["request"]["postData"]["text"]) > 1_000_000 for e in creates[:16])
    listing = httpx.get(journaled.url + "/__mockstore/requests", timeout=60)
    assert listing.status_code == 200
    assert len(listing.json()["entries"]) == len(entries)
