"""Issue 19's hostile soak, short: every finding at once, with tenants and per-key stores.

The server runs with its default memory budget (256 MiB); its peak resident
memory must stay within the budget and the documented allowance while a
well-behaved client in a tenant of its own gets every answer right. The
client's latency is printed, not asserted: ``bench/budget_soak.py`` runs
longer and holds it to 100 ms.
"""

from __future__ import annotations

import httpx
import pytest

from tests.attacks import ALLOWANCE, mib
from tests.budget_soak import SCENARIO, BudgetSoak
from tests.support import live_server

BUDGET = 256 * 2**20  # --memory-budget's default


@pytest.mark.slow
def test_the_hostile_soak_stays_within_the_budget_and_the_good_client_is_served() -> None:
    with live_server(env={"MOCKSTORE_SCENARIO_YAML": SCENARIO}) as server:
        assert server.process is not None
        soak = BudgetSoak(server.url, server.process.pid, seconds=90, max_requests=200_000)
        result = soak.run()
        memory = httpx.get(server.url + "/__mockstore/memory", timeout=60).json()
        health = httpx.get(server.url + "/__mockstore/health", timeout=60)
        log = server.log()
    print(f"\n{result.summary()}\npeak (VmHWM) {mib(soak.peak)}\n{soak.good.summary()}")
    assert soak.peak <= BUDGET + ALLOWANCE, f"peak {mib(soak.peak)}; {result.summary()}"
    assert memory["budget"] == BUDGET and memory["used"] <= BUDGET
    assert health.status_code == 200
    assert len(soak.good.latencies) > 100, soak.good.summary()
    assert not soak.good.wrong, soak.good.wrong[:5]
    assert result.statuses.get("507", 0) + sum(
        n for s, n in result.statuses.items() if s.endswith("507")
    ), f"the soak never reached the budget: {result.summary()}"
    assert "Traceback" not in log, log[-3000:]
