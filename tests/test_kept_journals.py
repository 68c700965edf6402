"""Deleted tenants' kept journals give way before live work is refused.

A deleted tenant's journal is kept for the server's report (``KeptJournals``),
charged to a share of the memory budget. It is the first thing to go when live
work needs the room: a server whose tenants were filled, deleted and filled
again takes as much the second time as the first (main: after deleting 7 full
tenants only 6 could be filled again). In process, on a small budget.
"""

from __future__ import annotations

import asyncio
import json

import httpx

from mockstore.app import MockstoreApp
from mockstore.memory import MemoryBudget, MiB
from tests.attacks import BIG_NAME, PUBLIC, big_journal

TOOL = {"X-Mockstore-Client": "tests"}
BODY = json.dumps({"name": BIG_NAME, "categoryId": 1}).encode()
# A budget of 64 MiB: each tenant may hold a quarter (16 MiB), the kept journals another.
BUDGET = 64 * MiB


async def _fill(client: httpx.AsyncClient, tenant: str) -> int:
    """Make ``tenant`` and create 1 MiB pets in it until refused; how many were stored."""
    made = await client.post("/__mockstore/tenants", json={"id": tenant}, headers=TOOL)
    if made.status_code != 201:
        return -1
    for stored in range(40):
        created = await client.post(
            f"/__mockstore/tenants/{tenant}/v1/pets",
            content=BODY,
            headers={**PUBLIC, "content-type": "application/json"},
        )
        if created.status_code != 201:
            assert created.status_code == 507, created.text
            assert created.json()["code"] == "memory_budget"
            return stored
    raise AssertionError(f"tenant {tenant} never filled")


async def _fill_until_refused(client: httpx.AsyncClient, prefix: str) -> list[int]:
    """Fill tenants one after another until one can store nothing: each one's count."""
    counts: list[int] = []
    for index in range(32):
        stored = await _fill(client, f"{prefix}{index}")
        counts.append(stored)
        if stored <= 0:
            return counts
    raise AssertionError("the budget never ran out")


async def _refill(app: MockstoreApp) -> tuple[list[int], list[int], int]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        first = await _fill_until_refused(client, "a")
        for index in range(len(first)):
            await client.delete(f"/__mockstore/tenants/a{index}", headers=TOOL)
        assert app.tenants is not None
        kept = len(app.tenants.kept)
        second = await _fill_until_refused(client, "b")
    return first, second, kept


def test_kept_journals_give_way_before_live_work_is_refused() -> None:
    app = MockstoreApp(big_journal(), budget=MemoryBudget(BUDGET))
    first, second, kept = asyncio.run(_refill(app))
    assert kept >= 3, "the deleted tenants' journals were kept"
    # As much live work fits the second time as the first: the kept journals made room.
    assert sum(max(n, 0) for n in second) == sum(max(n, 0) for n in first), (first, second)
    assert app.tenants is not None and app.tenants.kept.account is not None
    # What is still kept fits the room live work left.
    assert app.budget.used <= app.budget.ceiling


def test_only_a_full_budget_makes_them_give_way_and_never_to_themselves() -> None:
    budget = MemoryBudget(64 * MiB)
    kept = budget.open_share("kept", "kept journals")
    asked: list[int] = []

    def let_go(size: int) -> int:
        asked.append(size)
        given = min(size, kept.used)
        kept.release(given)
        return given

    budget.give_way_to(kept, let_go)
    assert kept.reserve(16 * MiB)
    tenant = budget.open_share("tenant", "a tenant")
    # Its own ceiling refuses it: the kept journals could not help, and are not asked.
    assert not tenant.reserve(tenant.ceiling + 1)
    assert asked == [] and kept.used == 16 * MiB
    # The whole budget is what refuses: they let go of what is missing, and no more.
    other = budget.open_share("tenant", "another")
    assert other.reserve(other.floor)  # (its floor, held since it opened)
    filler = budget.share("the rest", budget.ceiling)
    assert filler.reserve(budget.available - 2 * MiB)
    assert other.reserve(4 * MiB)
    assert asked == [2 * MiB] and kept.used == 14 * MiB
    # Nor do they give way to their own share, or to a report being built.
    assert not kept.reserve(budget.ceiling)
    assert not budget.reports.reserve(budget.reports.ceiling)
    assert asked == [2 * MiB]
