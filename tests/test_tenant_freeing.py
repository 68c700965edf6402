"""Issue 19, finding 4: a deleted tenant, or a replaced scenario, is freed at once.

On main a tenant was a set of reference cycles (Starlette's router, the
service's bound handlers): deleting it freed nothing until the cyclic
collector ran, RSS stayed at 1.07 GB after DELETE and refilling reached 2.14
GB. Checked in process, with the collector off (a weak reference dies the
moment the last strong one goes, and ``gc.collect()`` then finds nothing of
mockstore's), and through a real server's memory.
"""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

from mockstore.app import MockstoreApp
from tests.attacks import MiB, big_journal, budget_env, fill_tenant, mib, rss
from tests.support import live_server

PRO = {"Authorization": "Bearer pro-key"}
TOOL = {"X-Mockstore-Client": "tests"}


@contextmanager
def collector_off() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _servers_garbage() -> Counter[str]:
    """What ``gc.collect()`` finds that the server made (not the test's own client)."""
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        gc.collect()
        kinds = Counter(
            f"{type(o).__module__}.{type(o).__qualname__}"
            for o in gc.garbage
            if type(o).__module__.startswith(("mockstore", "starlette"))
        )
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    return kinds


async def _use_a_tenant(app: MockstoreApp) -> dict[str, weakref.ref[Any]]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        root = "/__mockstore/tenants/gone"
        assert (await client.post("/__mockstore/tenants", json={"id": "gone"})).status_code == 201
        tenant = app.tenants.get("gone")  # type: ignore[union-attr]
        assert tenant is not None
        runtime = tenant.app.runtime
        alive = {
            "runtime": weakref.ref(runtime),
            "journal": weakref.ref(runtime.journal),
            "store": weakref.ref(runtime.state.stores.shared),
        }
        del tenant, runtime
        pet = {"name": "Rex", "categoryId": 1}
        assert (await client.post(root + "/v1/pets", json=pet, headers=PRO)).status_code == 201
        assert (await client.get(root + "/v1/pets", headers=PRO)).status_code == 200
        assert (await client.get(root + "/__mockstore/requests")).status_code == 200
        assert (await client.get(root + "/__mockstore/requests.har")).status_code == 200
        scenario = "version: 1\nname: its-own\nkeys: [{key: pro-key, plan: pro}]\n"
        assert (
            await client.put(root + "/__mockstore/scenario", content=scenario)
        ).status_code == 200
        assert (await client.post(root + "/__mockstore/reset", headers=TOOL)).status_code == 200
        assert (await client.delete(root)).status_code == 204
    return alive


def test_a_deleted_tenant_is_freed_at_once_with_no_cycle_left() -> None:
    app = MockstoreApp("default")
    assert app.tenants is not None
    with collector_off():
        alive = asyncio.run(_use_a_tenant(app))
        still = sorted(name for name, ref in alive.items() if ref() is not None)
        # Only its journal stays, kept for the server's report and charged to the
        # kept journals' share, not to the deleted tenant's.
        assert still == ["journal"], f"still alive after DELETE: {still}"
        assert app.tenants.kept.get("gone") is alive["journal"]()
        kept = app.tenants.kept.account
        assert kept is not None and kept.used >= alive["journal"]().bytes > 0
        app.tenants.kept.clear()
        assert kept.used == 0
        assert alive["journal"]() is None, "a kept journal outlives its clearing"
        assert not _servers_garbage()


def test_a_replaced_scenario_and_a_reset_state_are_freed_at_once() -> None:
    app = MockstoreApp("default")

    async def swap() -> dict[str, weakref.ref[Any]]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            assert (await client.get("/v1/pets", headers=PRO)).status_code == 200
            alive = {
                "scenario": weakref.ref(app.runtime.scenario),
                "state": weakref.ref(app.runtime.state),
                "pets": weakref.ref(app.runtime.template),
            }
            scenario = "version: 1\nname: two\nkeys: [{key: pro-key, plan: pro}]\n"
            assert (await client.put("/__mockstore/scenario", content=scenario)).status_code == 200
            assert (await client.get("/v1/pets", headers=PRO)).status_code == 200
            alive["reset"] = weakref.ref(app.runtime.state)
            assert (await client.post("/__mockstore/reset", headers=TOOL)).status_code == 200
        return alive

    with collector_off():
        alive = asyncio.run(swap())
        still = sorted(name for name, ref in alive.items() if ref() is not None)
        assert not still, f"still alive (waiting for the collector): {still}"
        assert not _servers_garbage()


def test_a_state_with_request_ids_in_a_providers_form_is_freed_at_once() -> None:
    scenario = (
        "version: 1\nname: ids\nkeys: [{key: pro-key, plan: pro}]\n"
        "behaviour: {request_id: {format: uuid, prefix: trace-}}\n"
    )
    app = MockstoreApp(scenario)

    async def reset() -> weakref.ref[Any]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            answer = await client.get("/v1/pets", headers=PRO)
            assert answer.headers["x-request-id"].startswith("trace-")
            state = weakref.ref(app.runtime.state)
            assert (await client.post("/__mockstore/reset", headers=TOOL)).status_code == 200
        return state

    with collector_off():
        state = asyncio.run(reset())
        assert state() is None, "the replaced state waits for the cyclic collector"
        assert not _servers_garbage()


def test_deleting_gives_the_budget_back() -> None:
    app = MockstoreApp("default")
    budget = app.budget
    before = budget.used
    asyncio.run(_use_a_tenant(app))
    # All but the kept journal, which its own share holds until the journals are cleared.
    assert app.tenants is not None and app.tenants.kept.account is not None
    assert budget.used == before + app.tenants.kept.account.used
    app.tenants.kept.clear()
    assert budget.used == before


@pytest.mark.slow
def test_refilling_deleted_tenants_does_not_grow_the_server() -> None:
    # The measurement, smaller: fill four tenants, delete them, fill
    # four more. Main's memory doubled; here the second fill reuses the first's.
    env = budget_env(256 * MiB, MOCKSTORE_SCENARIO_YAML=big_journal(body_bytes=4096))
    with live_server(env=env) as server:
        assert server.process is not None
        pid = server.process.pid
        control = server.url + "/__mockstore"
        used = httpx.get(control + "/memory", timeout=30).json().get("used")
        first: Counter[int] = Counter()
        for index in range(4):
            first.update(fill_tenant(server.url, f"a{index}", 16))
        filled = rss(pid)
        for index in range(4):
            assert httpx.delete(f"{control}/tenants/a{index}", timeout=30).status_code == 204
        # Their journals are kept for the report until the journal is cleared.
        assert httpx.delete(control + "/requests", timeout=30).status_code == 204
        after_delete = httpx.get(control + "/memory", timeout=30).json().get("used")
        second: Counter[int] = Counter()
        for index in range(4):
            second.update(fill_tenant(server.url, f"b{index}", 16))
        refilled = rss(pid)
    assert refilled <= filled + 24 * MiB, f"filled {mib(filled)}, refilled {mib(refilled)}"
    assert first == second == Counter({201: 64}), (first, second)
    assert used is not None and after_delete == used, "the budget did not get back all it lent"
