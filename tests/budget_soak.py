"""Issue 19's hostile soak: every finding at once, and one client that behaves.

Used by ``tests/test_budget_soak.py`` (about ninety seconds, in the slow step)
and ``bench/budget_soak.py`` (ten minutes or more, with the latency bound).
On top of ``HostileMix`` (huge heads and queries, anonymous floods, creates
until the store's budget answers, huge numbers, broken uploads, slow-loris
and silent connections) it runs, each in a thread of its own:

* ``pipelined``: a small request and a 100 KiB next head in one write (finding 1);
* ``slow_readers``: ten connections asking for a 16.6 MB listing, never reading (2);
* ``tenant_churn``: tenants made, filled with 1 MiB pets until 507, deleted (3, 4);
* ``per_key``: a tenant with ``isolation: per_key``, keys issued without end,
  each filling a store of its own (3);
* ``scenario_loads``: a 400-byte alias bomb and a heavy valid scenario, put to
  tenants (5);
* ``clock_abuse``: the clock set and advanced out of range (6);
* ``raw_hars``: HARs with the raw keys (10).

The well-behaved client works in a tenant of its own: it reads a pet and a
listing, creates a small pet and reads it back, and checks each answer in
full; its latencies are kept. The server's resident memory is sampled, and
its peak (VmHWM) read at the end.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx

from tests.attacks import (
    BIG_NAME,
    alias_bomb,
    peak_rss,
    pipeline_once,
    rss,
    slow_readers,
)
from tests.hostile_mix import SOAK_KEY, HostileMix, SoakResult

# The server's scenario: the soak key that no attack can spend, a journal that
# keeps whole bodies (so creates weigh on it), and a pet the good client reads.
SCENARIO = """\
version: 1
name: budget-soak
description: Issue 19's hostile soak.
keys:
  - {key: free-key, plan: free}
  - {key: soak-key, plan: {per_minute: 1000000000, per_day: 100000000000}}
  - {key: good-key, plan: {per_minute: 1000000000, per_day: 100000000000}}
journal: {body_bytes: 262144}
pets:
  - {id: 1, name: Rex, categoryId: 1, status: available}
"""
PER_KEY = SCENARIO.replace("name: budget-soak", "name: per-key\nisolation: per_key")
HEAVY = "version: 1\nname: heavy\nx-data: [" + ", ".join(["1"] * 30_000) + "]\n"
GOOD_KEY = {"Authorization": "Bearer good-key"}
TOOL = {"X-Mockstore-Client": "soak"}
REX = {"id": 1, "name": "Rex", "categoryId": 1, "status": "available"}


@dataclass
class GoodClient:
    """What the well-behaved client saw: latencies (seconds) and every wrong answer."""

    latencies: list[float] = field(default_factory=list)
    wrong: list[str] = field(default_factory=list)

    def summary(self) -> str:
        if not self.latencies:
            return "the well-behaved client sent nothing"
        ordered = sorted(self.latencies)
        p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
        return (
            f"well-behaved client: {len(ordered)} answers, {len(self.wrong)} wrong; latency "
            f"median {statistics.median(ordered) * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms, "
            f"worst {ordered[-1] * 1000:.1f} ms"
        )


class BudgetSoak(HostileMix):
    """``HostileMix`` with issue 19's attacks and one well-behaved client in a tenant."""

    def __init__(self, url: str, pid: int, seconds: float, max_requests: int) -> None:
        super().__init__(url, pid, seconds, max_requests)
        self.control = url + "/__mockstore"
        self.good = GoodClient()
        self.peak = 0
        self.result = SoakResult(0.0, 0)

    # -- issue 19's attacks ---------------------------------------------------------

    def pipelined(self, client: httpx.Client) -> str:
        statuses = pipeline_once(self.url, 100 * 1024, "soak-key")
        return f"pipelined {statuses[-1] if statuses else 'closed'}"

    def tenant_churn(self, client: httpx.Client) -> str:
        name = f"churn-{secrets.randbelow(4)}"
        made = client.post(self.control + "/tenants", json={"id": name})
        if made.status_code == 201:
            body = json.dumps({"name": BIG_NAME, "categoryId": 1})
            headers = {**SOAK_KEY, "content-type": "application/json"}
            for _ in range(40):
                answer = client.post(
                    f"{self.control}/tenants/{name}/v1/pets", content=body, headers=headers
                )
                if answer.status_code != 201 or self.stop.is_set():
                    break
        client.delete(f"{self.control}/tenants/{name}")
        return f"tenant {made.status_code}"

    def per_key(self, client: httpx.Client) -> str:
        root = f"{self.control}/tenants/per-key"
        if client.get(root + "/__mockstore/health").status_code != 200:
            client.post(self.control + "/tenants", json={"id": "per-key"})
            client.put(root + "/__mockstore/scenario", content=PER_KEY)
        key = f"k-{secrets.token_hex(6)}"
        issued = client.post(
            root + "/__mockstore/keys",
            json={"key": key, "plan": {"per_minute": 1000000, "per_day": 100000000}},
        )
        if issued.status_code != 201:
            return f"key {issued.status_code}"
        body = {"name": secrets.token_hex(128 * 1024), "categoryId": 1}
        answer = client.post(
            root + "/v1/pets", json=body, headers={"Authorization": f"Bearer {key}"}
        )
        return f"per-key {answer.status_code}"

    def scenario_loads(self, client: httpx.Client) -> str:
        name = f"loads-{secrets.randbelow(2)}"
        client.post(self.control + "/tenants", json={"id": name})
        text = alias_bomb() if secrets.randbelow(2) else HEAVY
        answer = client.put(f"{self.control}/tenants/{name}/__mockstore/scenario", content=text)
        time.sleep(0.5)
        return f"load {answer.status_code}"

    def clock_abuse(self, client: httpx.Client) -> str:
        move = secrets.choice(
            [{"set": "9999-12-31T23:59:59Z"}, {"advance_seconds": 1e300}, {"set": "1960-01-01"}]
        )
        answer = client.post(f"{self.control}/tenants/loads-0/__mockstore/clock", json=move)
        time.sleep(0.2)
        return f"clock {answer.status_code}"

    def raw_hars(self, client: httpx.Client) -> str:
        answer = client.get(self.control + "/requests.har", params={"mask": "false"})
        time.sleep(1.0)
        return f"har {answer.status_code}"

    def readers(self) -> None:
        while not self.stop.is_set():
            with contextlib.suppress(OSError), slow_readers(self.url, 10, key="soak-key"):
                self.stop.wait(5.0)

    # -- the well-behaved client ------------------------------------------------------

    def well_behaved(self) -> None:
        root = f"{self.control}/tenants/good"
        with httpx.Client(timeout=60) as client:
            client.post(self.control + "/tenants", json={"id": "good"})
            serial = 0
            while not self.stop.is_set():
                serial += 1
                self._check(client, "GET", root + "/v1/pets/1", None, lambda b: b == REX)
                self._check(
                    client,
                    "GET",
                    root + "/v1/pets?limit=5",
                    None,
                    lambda b: isinstance(b, list) and 1 <= len(b) <= 5 and b[0] == REX,
                )
                pet = {"name": f"good-{serial}", "categoryId": 2}
                made = self._check(
                    client,
                    "POST",
                    root + "/v1/pets",
                    pet,
                    lambda b, pet=pet: (
                        b.get("name") == pet["name"] and isinstance(b.get("id"), int)
                    ),
                )
                if made is not None:
                    self._check(client, "GET", f"{root}/v1/pets/{made['id']}", None, made.__eq__)
                self.stop.wait(0.2)

    def _check(
        self, client: httpx.Client, method: str, url: str, body: object, right: object
    ) -> object:
        sent = time.monotonic()
        try:
            answer = client.request(method, url, json=body, headers=GOOD_KEY)
        except httpx.HTTPError as exc:
            self.good.wrong.append(f"{method} {url}: {type(exc).__name__}")
            return None
        self.good.latencies.append(time.monotonic() - sent)
        expected = 201 if method == "POST" else 200
        try:
            parsed = answer.json()
        except ValueError:
            parsed = None
        if answer.status_code != expected or not right(parsed):  # type: ignore[operator]
            self.good.wrong.append(f"{method} {url}: {answer.status_code} {answer.text[:200]}")
            return None
        return parsed

    # -- running ----------------------------------------------------------------------

    def extra_steps(self) -> list[Callable[[httpx.Client], str]]:
        """More clients run as ``_loop`` steps (a subclass's attacks)."""
        return []

    def extra_threads(self) -> list[Callable[[], None]]:
        """More clients run in threads of their own (a subclass's attacks)."""
        return []

    def run(self, sample_every: float = 1.0) -> SoakResult:
        # The large listing the slow readers ask for: 16 pets of 1 MiB.
        with httpx.Client(timeout=60) as client:
            # The good client's tenant, before any attack can fill the tenants' share
            # (made in its thread, it raced the churn, lost, and every answer was a 404).
            made = client.post(self.control + "/tenants", json={"id": "good"})
            assert made.status_code == 201, made.text
            body = json.dumps({"name": BIG_NAME, "categoryId": 1})
            for _ in range(16):
                client.post(
                    self.api + "/pets",
                    content=body,
                    headers={**SOAK_KEY, "content-type": "application/json"},
                )
        steps = [
            self.big_headers,
            self.long_queries,
            self.anonymous,
            self.creates,
            self.big_numbers,
            self.broken_uploads,
            self.pipelined,
            self.tenant_churn,
            self.per_key,
            self.scenario_loads,
            self.clock_abuse,
            self.raw_hars,
            *self.extra_steps(),
        ]
        threads = [threading.Thread(target=self._loop, args=(s,), daemon=True) for s in steps]
        for extra in (self.slow_clients, self.readers, self.well_behaved, *self.extra_threads()):
            threads.append(threading.Thread(target=extra, daemon=True))
        started = time.monotonic()
        for thread in threads:
            thread.start()
        end = started + self.seconds
        while not self.stop.is_set():
            self.result.samples.append((time.monotonic() - started, rss(self.pid)))
            if time.monotonic() >= end:
                self.stop.set()
            self.stop.wait(sample_every)
        for thread in threads:
            thread.join(120)
        self.result.seconds = time.monotonic() - started
        self.result.samples.append((self.result.seconds, rss(self.pid)))
        self.peak = peak_rss(self.pid)
        return self.result
