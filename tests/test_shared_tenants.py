"""Tenants with a shared state: made through one process, one isolated mock in every process.

Two ``mockstore serve --state`` processes on one real ``redis-server``
(``tests/redis_server.py``): a tenant made through one is listed, served and
deleted through the other; its allowances are exact across both; the limit on
tenants holds across processes; tenants are isolated from each other and from
the server's own mock in one Redis database; a deleted tenant's keys leave Redis.
"""

from __future__ import annotations

import asyncio
import re
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from mockstore import MockServer
from mockstore.shared.deadline import CONTROL_SECONDS
from mockstore.shared.journal import JournalSharing
from mockstore.tenants import MAX_TENANTS
from tests.redis_server import RedisServer
from tests.support import PATIENT, TOOL, live_server, patient

SCENARIO = """\
version: 1
name: shared-tenants
clock: {start: "2026-03-01T12:00:05Z", mode: manual}
keys:
  - {key: free-key, plan: free}
  - {key: pro-key, plan: pro}
  - {key: tight-key, plan: {per_minute: 20, per_day: 1000}}
"""
FREE = {"Authorization": "Bearer free-key"}
PRO = {"Authorization": "Bearer pro-key"}
TIGHT = {"Authorization": "Bearer tight-key"}


@pytest.fixture
def state(redis_server: RedisServer, tmp_path: Path) -> tuple[str, ...]:
    path = tmp_path / "tenants.yaml"
    path.write_text(SCENARIO)
    return ("--scenario", str(path), "--state", redis_server.url)


def _redis(server: RedisServer) -> Any:
    import redis

    return redis.Redis.from_url(server.url)


def _eventually(check: Callable[[], bool], what: str, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def _journal(tenant: str, deleted: bool, requests: int) -> dict[str, Any]:
    """A report's line for one tenant's journal: its requests, numbered from 1 across processes."""
    return {
        "tenant": tenant,
        "deleted": deleted,
        "requests": requests,
        "first_seq": 1,
        "last_seq": requests,
    }


def _make(url: str, tenant_id: str | None = None) -> httpx.Response:
    body = {} if tenant_id is None else {"id": tenant_id}
    return patient.post(url + "/__mockstore/tenants", json=body, headers=TOOL, timeout=30)


def test_a_tenant_made_through_one_process_is_served_listed_and_deleted_through_another(
    redis_server: RedisServer, state: tuple[str, ...]
) -> None:
    with live_server(*state) as a, live_server(*state) as b:
        made = _make(a.url, "team")
        assert made.status_code == 201, made.text
        assert made.json() == {
            "id": "team",
            "path": "/__mockstore/tenants/team",
            "scenario": "shared-tenants",
        }
        in_a, in_b = a.url + made.json()["path"], b.url + made.json()["path"]
        # B never heard of it: it looks in Redis before answering.
        assert patient.get(in_b + "/v1/pets", headers=PRO).json() == []
        listed = patient.get(b.url + "/__mockstore/tenants").json()
        assert [t["id"] for t in listed] == ["team"]
        assert patient.get(in_b + "/__mockstore/health").json()["scenario"] == "shared-tenants"
        assert _make(b.url, "team").status_code == 409
        # A 20-per-minute key spread over both processes at once admits exactly 20.
        with httpx.Client(timeout=PATIENT) as http, ThreadPoolExecutor(max_workers=8) as pool:
            statuses = Counter(
                pool.map(
                    lambda i: http.get((in_a, in_b)[i % 2] + "/v1/pets", headers=TIGHT).status_code,
                    range(36),
                )
            )
        assert statuses == Counter({200: 20, 429: 16})
        for url in (in_a, in_b):
            keys = patient.get(url + "/__mockstore/keys").json()
            assert next(k for k in keys if k["key"] == "tight-key")["minute"]["used"] == 20
        remaining = patient.get(b.url + "/v1/pets", headers=TIGHT).headers["x-ratelimit-remaining"]
        assert remaining == "19"
        # A pet made through A is the tenant's, seen through B; not the server's own.
        pet = patient.post(in_a + "/v1/pets", json={"name": "Solo", "categoryId": 1}, headers=PRO)
        assert pet.status_code == 201
        assert patient.get(f"{in_b}/v1/pets/{pet.json()['id']}", headers=PRO).json() == pet.json()
        assert patient.get(f"{b.url}/v1/pets/{pet.json()['id']}", headers=PRO).status_code == 404
        # A key issued and a clock moved through B are the tenant's in A.
        issued = patient.post(
            in_b + "/__mockstore/keys", json={"key": "team-key", "plan": "pro"}, headers=TOOL
        )
        assert issued.status_code == 201
        team = {"Authorization": "Bearer team-key"}
        assert patient.get(in_a + "/v1/pets", headers=team).status_code == 200
        assert patient.get(a.url + "/v1/pets", headers=team).status_code == 401
        moved = patient.post(in_b + "/__mockstore/clock", json={"advance_seconds": 60}).json()
        assert patient.get(in_a + "/__mockstore/clock").json()["now"] == moved["now"]
        assert patient.get(a.url + "/__mockstore/clock").json()["now"] == "2026-03-01T12:00:05Z"
        # Deleted through B: 404 through A, API and control API alike, and gone from lists.
        assert patient.delete(in_b).status_code == 204
        gone = patient.get(in_a + "/v1/pets", headers=PRO)
        assert (
            gone.status_code == 404 and gone.json()["message"] == "no tenant 'team' on this server"
        )
        assert patient.get(in_a + "/__mockstore/health").status_code == 404
        listed_in_a = patient.get(a.url + "/__mockstore/tenants")
        assert listed_in_a.json() == [], (listed_in_a.text, a.log()[-3000:])
        assert patient.delete(in_a).status_code == 404
        # What it kept in Redis goes with it (swept off the request path).
        client = _redis(redis_server)
        _eventually(
            lambda: not client.keys("mockstore:t:team:*"), "the deleted tenant's keys were swept"
        )
        assert client.hgetall("mockstore:tenants") == {}
        # The server's own mock was never touched: a fresh allowance.
        remaining = patient.get(a.url + "/v1/pets", headers=FREE).headers["x-ratelimit-remaining"]
        assert remaining == "59"


def test_the_limit_on_tenants_holds_across_processes(
    redis_server: RedisServer, state: tuple[str, ...]
) -> None:
    with live_server(*state) as a, live_server(*state) as b:
        extra = 4
        with ThreadPoolExecutor(max_workers=8) as pool:
            answers = list(
                pool.map(lambda i: _make((a.url, b.url)[i % 2]), range(MAX_TENANTS + extra))
            )
        assert Counter(r.status_code for r in answers) == Counter({201: MAX_TENANTS, 507: extra})
        # Ids picked for creates that then found no room are not reused: unique, not dense.
        ids = [r.json()["id"] for r in answers if r.status_code == 201]
        assert len(set(ids)) == MAX_TENANTS and all(re.fullmatch(r"tenant-\d+", i) for i in ids)
        refused = next(r.json() for r in answers if r.status_code == 507)
        assert refused["code"] == "too_many_tenants"
        assert f"limit of {MAX_TENANTS} tenants" in refused["message"]
        assert len(patient.get(b.url + "/__mockstore/tenants").json()) == MAX_TENANTS
        # One deleted through A makes room for one through B, and only one.
        assert patient.delete(a.url + "/__mockstore/tenants/tenant-7").status_code == 204
        assert _make(b.url, "late").status_code == 201
        assert _make(a.url, "later").status_code == 507


def test_tenants_in_one_redis_database_are_isolated_from_each_other_and_the_server(
    redis_server: RedisServer, state: tuple[str, ...]
) -> None:
    with live_server(*state) as a, live_server(*state) as b:
        one = a.url + _make(a.url, "one").json()["path"]
        two = b.url + _make(b.url, "two").json()["path"]
        two_in_a = a.url + "/__mockstore/tenants/two"
        # Allowances: spent in one, untouched in two and in the server.
        with httpx.Client(timeout=PATIENT) as http:
            for _ in range(20):
                http.get(one + "/v1/pets", headers=TIGHT)
        assert patient.get(one + "/v1/pets", headers=TIGHT).status_code == 429
        in_two = patient.get(two_in_a + "/v1/pets", headers=TIGHT)
        assert in_two.headers["x-ratelimit-remaining"] == "19"
        remaining = patient.get(b.url + "/v1/pets", headers=TIGHT).headers["x-ratelimit-remaining"]
        assert remaining == "19"
        # Pets: the same next id in each mock, each its own pet.
        names = {}
        for url, name in ((one, "One"), (two_in_a, "Two"), (a.url, "Root")):
            made = patient.post(url + "/v1/pets", json={"name": name, "categoryId": 1}, headers=PRO)
            names[url] = made.json()
        assert len({pet["id"] for pet in names.values()}) == 1
        pet_id = names[one]["id"]
        for url, seen_from in ((one, one), (two, two_in_a), (b.url, a.url)):
            assert patient.get(f"{url}/v1/pets/{pet_id}", headers=PRO).json() == names[seen_from]
        # A scenario, a reset and a clock moved in one tenant stay in it.
        assert patient.put(two + "/__mockstore/scenario", content=b"empty-store").status_code == 200
        assert patient.post(one + "/__mockstore/reset", headers=TOOL).status_code == 200
        assert patient.get(one + "/v1/pets", headers=TIGHT).headers["x-ratelimit-remaining"] == "19"
        assert patient.get(two_in_a + "/__mockstore/scenario").json()["name"] == "empty-store"
        assert patient.get(one + "/__mockstore/scenario").json()["name"] == "shared-tenants"
        assert patient.get(b.url + "/__mockstore/scenario").json()["name"] == "shared-tenants"
        assert patient.get(f"{a.url}/v1/pets/{pet_id}", headers=PRO).json() == names[a.url]
        # The server's reset leaves its tenants as they are (as in memory).
        assert patient.post(a.url + "/__mockstore/reset", headers=TOOL).status_code == 200
        assert patient.get(two + "/__mockstore/scenario").json()["name"] == "empty-store"
        # Each mock's keys are under its own prefix.
        keys = {k.decode() for k in _redis(redis_server).keys("mockstore:t:*")}
        assert {k.split(":")[2] for k in keys} == {"one", "two"}


def test_a_tenant_made_again_under_its_id_is_a_fresh_mock_in_every_process(
    redis_server: RedisServer, state: tuple[str, ...]
) -> None:
    with live_server(*state) as a, live_server(*state) as b:
        in_a, in_b = a.url + "/__mockstore/tenants/again", b.url + "/__mockstore/tenants/again"
        assert _make(a.url, "again").status_code == 201
        for _ in range(3):
            patient.get(in_b + "/v1/pets", headers=FREE)
        # Deleted and made again through A: B, which held the old one, serves the new.
        assert patient.delete(in_a).status_code == 204
        assert _make(a.url, "again").status_code == 201
        fresh = patient.get(in_b + "/v1/pets", headers=FREE)
        assert fresh.status_code == 200 and fresh.headers["x-ratelimit-remaining"] == "59"
        assert patient.get(in_a + "/v1/pets", headers=FREE).headers["x-ratelimit-remaining"] == "58"


def test_a_tenants_traffic_through_every_process_is_in_each_report(
    redis_server: RedisServer, state: tuple[str, ...]
) -> None:
    with live_server(*state) as a, live_server(*state) as b:
        assert _make(a.url, "audit").status_code == 201
        patient.get(a.url + "/__mockstore/tenants/audit/v1/pets", headers=PRO)
        patient.get(b.url + "/__mockstore/tenants/audit/v1/pets/1", headers=PRO)
        patient.get(b.url + "/__mockstore/tenants/audit/v1/pets", headers=PRO)

        def covered(url: str) -> bool:
            journals = patient.get(url + "/__mockstore/report").json()["summary"]["journals"]
            return _journal("audit", False, 3) in journals

        _eventually(lambda: covered(a.url) and covered(b.url), "each report covers all three")
        seen = patient.get(a.url + "/__mockstore/requests", params={"tenant": "audit"}).json()
        assert sorted(e["request"]["path"] for e in seen["entries"]) == [
            "/v1/pets",
            "/v1/pets",
            "/v1/pets/1",
        ]
        # Deleted through B: A keeps the journal it holds for its report, as in memory.
        assert patient.delete(b.url + "/__mockstore/tenants/audit").status_code == 204

        def kept(url: str) -> bool:
            journals = patient.get(url + "/__mockstore/report").json()["summary"]["journals"]
            return _journal("audit", True, 3) in journals

        _eventually(lambda: kept(a.url) and kept(b.url), "each report keeps the deleted journal")


def test_a_tenant_made_by_a_control_call_ships_its_journal_after_the_calls_deadline(
    state: tuple[str, ...],
) -> None:
    # A control call waits for Redis at most CONTROL_SECONDS; the tenant it makes
    # runs background work (its journal's shipping) that must not inherit that
    # deadline: it outlives the call. Once the call's deadline has passed, what A
    # answers for the tenant is still in a journal read through B (read your writes).
    with live_server(*state) as a, live_server(*state) as b:
        assert _make(a.url, "later").status_code == 201
        time.sleep(CONTROL_SECONDS + 1)  # the create's deadline is over (a lower bound)
        in_a = a.url + "/__mockstore/tenants/later"
        assert patient.get(in_a + "/v1/pets", headers=PRO).status_code == 200
        seen = patient.get(b.url + "/__mockstore/tenants/later/__mockstore/requests", timeout=30)
        assert seen.status_code == 200, seen.text
        assert [e["request"]["path"] for e in seen.json()["entries"]] == ["/v1/pets"], (
            seen.text,
            a.log()[-3000:],
        )


def test_a_report_read_while_a_deleted_tenant_stops_still_covers_it(
    redis_server: RedisServer, state: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A deleted tenant leaves the live ones and joins the kept ones in one step: a
    # report read while its background stops (here held open until the report is
    # read) never finds it in neither list. A is a MockServer in this process, so
    # its tenant's close can be held; B a process of its own.
    closing, release = threading.Event(), threading.Event()
    close = JournalSharing.close

    async def held_close(self: JournalSharing) -> None:
        if getattr(self.shared, "tenant_id", None) == "held":
            closing.set()
            await asyncio.to_thread(release.wait, 60)
        await close(self)

    monkeypatch.setattr(JournalSharing, "close", held_close)
    scenario = Path(state[1])
    with MockServer(scenario, state=redis_server.url) as mock, live_server(*state) as b:
        a = mock.base_url
        try:
            assert _make(a, "held").status_code == 201
            in_a = a + "/__mockstore/tenants/held"
            assert patient.get(in_a + "/v1/pets", headers=PRO).status_code == 200
            # Read through A (read your writes): its journal of the tenant holds the answer.
            live = patient.get(a + "/__mockstore/report", timeout=30).json()["summary"]
            assert _journal("held", False, 1) in live["journals"]
            assert patient.delete(b.url + "/__mockstore/tenants/held").status_code == 204
            # A lets it go (its next sync, or this request's look in Redis).
            assert patient.get(in_a + "/v1/pets", headers=PRO, timeout=60).status_code == 404
            assert closing.wait(60), "A never stopped the deleted tenant"
            report = patient.get(a + "/__mockstore/report", timeout=30).json()
            journals = report["summary"].get("journals", [])
            assert _journal("held", True, 1) in journals, report["summary"]
        finally:
            release.set()


def test_a_redis_back_empty_has_no_tenants_and_a_new_one_can_be_made(
    redis_server: RedisServer, state: tuple[str, ...]
) -> None:
    with live_server(*state) as a, live_server(*state) as b:
        assert _make(a.url, "lost").status_code == 201
        in_b = b.url + "/__mockstore/tenants/lost"
        assert patient.get(in_b + "/v1/pets", headers=PRO).status_code == 200
        redis_server.stop()
        away = patient.get(in_b + "/v1/pets", headers=PRO)
        assert away.status_code == 503 and away.json()["code"] == "state_unavailable"
        redis_server.start()
        # Back, but empty (no persistence): the tenant went with the rest of the state.
        # (A process's first request after may still meet a connection from before: 503.)
        for url in (in_b, a.url + "/__mockstore/tenants/lost"):
            _eventually(
                lambda url=url: patient.get(url + "/v1/pets", headers=PRO).status_code == 404,
                "the tenant is gone once Redis is back empty",
            )
        assert patient.get(b.url + "/__mockstore/tenants").json() == []
        # And the registry works again: one made through B is served through A.
        assert _make(b.url, "lost").status_code == 201
        assert patient.get(a.url + "/__mockstore/tenants/lost/v1/pets", headers=PRO).json() == []


# Runs the CLI with every mock's start (a tenant's join ends with it) a second slower, as
# on a loaded machine where each join took 0.1-0.5 s and a sync of many held the registry.
SLOW_JOINS = """\
import asyncio
import sys

from mockstore.app import AppShell
from mockstore.cli.main import main

start = AppShell.start


async def slow_start(self):
    await asyncio.sleep(1.0)
    await start(self)


AppShell.start = slow_start
sys.exit(main(sys.argv[1:]))
"""


def test_a_control_call_never_waits_for_the_joins_under_way_in_the_background(
    redis_server: RedisServer, state: tuple[str, ...]
) -> None:
    """Eight tenants made through A take B eight seconds or more to build: listing them
    through B answers at once from the registry, a request to one waits for its join alone,
    and a tenant deleted through A leaves B's list at once."""
    slow = [sys.executable, "-c", SLOW_JOINS]
    with live_server(*state) as a, live_server(*state, launcher=slow) as b:
        ids = [f"t{n}" for n in range(8)]
        for tenant_id in ids:
            assert _make(a.url, tenant_id).status_code == 201
        listed = patient.get(b.url + "/__mockstore/tenants")
        assert listed.status_code == 200, (listed.text, b.log()[-3000:])
        assert sorted(t["id"] for t in listed.json()) == ids
        assert {t["scenario"] for t in listed.json()} == {"shared-tenants"}
        in_b = b.url + "/__mockstore/tenants/t5"
        assert patient.get(in_b + "/v1/pets", headers=PRO).status_code == 200
        assert patient.get(in_b + "/__mockstore/health").json()["scenario"] == "shared-tenants"
        assert patient.delete(a.url + "/__mockstore/tenants/t0").status_code == 204
        listed = patient.get(b.url + "/__mockstore/tenants")
        assert listed.status_code == 200, (listed.text, b.log()[-3000:])
        assert sorted(t["id"] for t in listed.json()) == ids[1:]
        assert patient.get(b.url + "/__mockstore/tenants/t0/v1/pets").status_code == 404
