"""The query caches are bounded by bytes, not only by entries.

The issue measured about 0.5 GB held by 4,096 cached 60 KB queries. Here the
journal is off, so what the server keeps of 3,000 different long queries is
what its caches keep; the server's resident memory must barely move.
"""

from __future__ import annotations

import secrets

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mockstore.budget import ITEM_OVERHEAD, ByteBudget
from tests.support import live_server

SCENARIO = """\
version: 1
name: no-journal
keys:
  - {key: big-key, plan: {per_minute: 1000000, per_day: 10000000}}
faults:
  - match: {operation: listPets, query: {never: "matches"}}
    respond: {status: 503, body: {code: unavailable, message: never, status: 503}}
journal: {size: 0}
"""
QUERIES = 3000
QUERY_BYTES = 12 * 1024


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


@pytest.mark.slow  # seconds of CPU for one test (.ci/run's slow step)
def test_thousands_of_long_distinct_queries_leave_memory_flat() -> None:
    with live_server(env={"MOCKSTORE_SCENARIO_YAML": SCENARIO}) as server:
        headers = {"Authorization": "Bearer big-key"}
        with server.client(headers=headers) as client:
            for _ in range(50):  # warm up: the first requests allocate what every one needs
                assert client.get("/v1/pets?limit=1").status_code == 200
            before = rss_bytes(server.process.pid)
            for _ in range(QUERIES):
                pad = secrets.token_hex(QUERY_BYTES // 2)
                # Both caches see it: the listPets validator's and the fault rule's.
                response = client.get(f"/v1/pets?limit=1&pad={pad}")
                assert response.status_code == 200, response.text
            after = rss_bytes(server.process.pid)
        health = httpx.get(server.url + "/__mockstore/health", timeout=10)
        assert health.status_code == 200
    grown = after - before
    held = QUERIES * QUERY_BYTES  # what caching every query would hold: 36 MiB
    assert grown < held / 3, f"RSS grew {grown / 2**20:.1f} MiB over {QUERIES} distinct queries"


@given(st.lists(st.binary(max_size=5000), max_size=300))
def test_a_budgeted_cache_never_holds_more_than_its_budget(keys: list[bytes]) -> None:
    cache: dict[bytes, int] = {}
    budget = ByteBudget(max_bytes=64 * 1024, max_item=2048)
    for key in keys:
        if key not in cache and budget.admit(cache, len(key)):
            cache[key] = len(key)
        held = sum(len(k) + ITEM_OVERHEAD for k in cache)
        assert held <= budget.used <= budget.max_bytes
        assert all(len(k) <= 2048 for k in cache)
