"""A bounded soak: a hostile mix for about two minutes, resident memory sampled throughout.

Huge headers, huge queries, anonymous floods, creates with large names, huge
numbers, broken uploads, slow-loris and silent connections, all at once
against one real server with its defaults. Its resident memory must stay under
the ceiling the README documents, and it must keep answering. Bounded in time
(120 s) and in requests (200,000), whichever comes first; ``bench/soak.py``
runs the same mix for longer.
"""

from __future__ import annotations

import httpx
import pytest

from tests.hostile_mix import SCENARIO, HostileMix
from tests.support import auth, live_server

CEILING = 160 * 2**20  # the README's ceiling (Security: memory under a hostile mix)


@pytest.mark.slow
def test_memory_stays_under_the_ceiling_under_a_hostile_mix() -> None:
    with live_server(env={"MOCKSTORE_SCENARIO_YAML": SCENARIO}) as server:
        mix = HostileMix(server.url, server.process.pid, seconds=120, max_requests=200_000)
        result = mix.run()
        print("\n" + result.summary())
        # Still serving, and still itself, after the mix.
        health = httpx.get(server.url + "/__mockstore/health", timeout=30)
        listing = httpx.get(server.api + "/pets", headers=auth("soak-key"), timeout=30)
    assert health.status_code == 200
    assert listing.status_code == 200
    assert result.requests > 1000, result.summary()
    assert not {s for s in result.statuses if s.startswith("5") and s != "507"}, result.summary()
    assert result.peak_rss < CEILING, result.summary()
