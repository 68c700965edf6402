"""Concurrent clients over real HTTP: no lost or duplicated pets, no allowance overrun.

Requests are fired together with ``asyncio.gather`` over a bounded connection
pool, so the server really has many requests in flight at once.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

from mockstore.ratelimit import BUILTIN_PLANS
from mockstore.scenario.model import default_ban_policy
from tests.support import assert_conforms, auth, mock_server

CREATES = 500
BURST = 200
FREE_PER_MINUTE = BUILTIN_PLANS["free"].per_minute
# A manual clock that never moves: the whole burst falls in one minute window.
SCENARIO = """\
version: 1
name: burst
description: The free key on a manual clock, so a burst cannot straddle two minutes.
clock: {start: "2026-03-01T12:00:00Z", mode: manual}
keys:
  - {key: free-key, plan: free}
  - {key: business-key, plan: business}
"""


async def _gather(base_url: str, requests: list[dict[str, Any]]) -> list[httpx.Response]:
    limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
    async with httpx.AsyncClient(base_url=base_url, limits=limits, timeout=60) as client:
        return await asyncio.gather(*(client.request(**request) for request in requests))


def test_concurrent_creates_get_distinct_ids_and_are_all_listed() -> None:
    with mock_server() as server:
        before = httpx.get(server.url + "/__mockstore/pets", timeout=10).json()
        requests = [
            {
                "method": "POST",
                "url": "/v1/pets",
                "json": {"name": f"pet-{index}", "categoryId": index},
                "headers": auth("business"),
            }
            for index in range(CREATES)
        ]
        responses = asyncio.run(_gather(server.url, requests))
        assert Counter(r.status_code for r in responses) == {201: CREATES}
        created = [assert_conforms(r) for r in responses]
        ids = [pet["id"] for pet in created]
        assert len(set(ids)) == CREATES
        assert min(ids) > max(p["id"] for p in before)
        # Every request's own pet came back to it (no mixed-up bodies).
        assert {p["name"]: p["categoryId"] for p in created} == {
            f"pet-{i}": i for i in range(CREATES)
        }
        # All of them are stored, once each, in id order after the initial pets.
        after = httpx.get(server.url + "/__mockstore/pets", timeout=10).json()
        assert after[: len(before)] == before
        assert after[len(before) :] == sorted(created, key=lambda p: p["id"])
        # ... and the API lists them: the first page holds the first 100 ids.
        with server.client(headers=auth("business")) as http:
            page = assert_conforms(http.get("/v1/pets", params={"limit": 100}))
        assert page == after[:100]


def test_a_burst_on_a_60_per_minute_key_gives_exactly_60_successes(tmp_path: Path) -> None:
    scenario = tmp_path / "burst.yaml"
    scenario.write_text(SCENARIO, encoding="utf-8")
    with mock_server(str(scenario)) as server:
        requests = [
            {"method": "GET", "url": "/v1/pets", "params": {"limit": 1}, "headers": auth("free")}
            for _ in range(BURST)
        ]
        responses = asyncio.run(_gather(server.url, requests))
        bodies = [assert_conforms(r) for r in responses]
        statuses = Counter(r.status_code for r in responses)
        assert statuses == {200: FREE_PER_MINUTE, 429: BURST - FREE_PER_MINUTE}
        codes = Counter(
            b["code"] for r, b in zip(responses, bodies, strict=True) if r.status_code == 429
        )
        # The first refusals are rate_limited; the default policy bans the key on the
        # tenth, and every later request in the burst meets the ban.
        ban = default_ban_policy()
        assert codes == {
            "rate_limited": ban.after_rejections,
            "key_banned": BURST - FREE_PER_MINUTE - ban.after_rejections,
        }
        remaining = sorted(
            int(r.headers["x-ratelimit-remaining"]) for r in responses if r.status_code == 200
        )
        # Each success saw its own count: 59, 58, ... 0, each exactly once.
        assert remaining == list(range(FREE_PER_MINUTE))
        usage = {k["key"]: k for k in httpx.get(server.url + "/__mockstore/keys").json()}
        assert usage["free-key"]["minute"]["used"] == FREE_PER_MINUTE
        assert usage["free-key"]["banned"] is True
