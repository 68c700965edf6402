"""The running state of the mock, built from a frozen ``Scenario``.

Reset is "build the state again from the same scenario" and a scenario swap is
"build it from another one and assign it": the request path always reads
``Runtime.state`` once, so a swap is atomic from a request's point of view.
The scenario's pets are built once per scenario (an ``Inventory``) and every
state forks its store from them, so a reset costs the same whatever the
number of pets. A swap can be built in a worker thread (``prepare``) and only
assigned on the event loop (``install``).
The journal is not part of the state: it outlives resets and swaps, so a
report at the end of a test run covers every test.
"""

from __future__ import annotations

import random
from typing import NamedTuple

from mockstore.clock import Clock
from mockstore.faults import FaultEngine, RouteTable
from mockstore.journal import Journal
from mockstore.keys import ApiKey, KeyRing, key_bucket
from mockstore.ratelimit import BanPolicy, Plan, RateLimiter
from mockstore.scenario.model import Scenario
from mockstore.store import PetStore

# A ban policy that can never trigger, for scenarios with ``ban: {enabled: false}``.
NO_BAN = BanPolicy(after_rejections=2**62, within_seconds=1, duration_seconds=0)


class Tenants:
    """One shared store, or one store per tenant (``isolation: per_key``)."""

    def __init__(self, scenario: Scenario, template: PetStore) -> None:
        self.per_key = scenario.isolation == "per_key"
        self.shared = template.fork()
        # With per_key isolation the shared store is never written: it is the
        # template each tenant's store is copied from.
        self._stores: dict[str, PetStore] = {}

    def stores(self) -> list[PetStore]:
        return [self.shared, *self._stores.values()]

    def store_for(self, tenant: str | None) -> PetStore:
        if not self.per_key or tenant is None:
            return self.shared
        store = self._stores.get(tenant)
        if store is None:
            store = self._stores[tenant] = self.shared.fork()
        return store


class MockState:
    """Everything that changes while the mock serves: store, counters, bans, clock."""

    def __init__(
        self,
        scenario: Scenario,
        clock: Clock | None = None,
        template: PetStore | None = None,
        keys: KeyRing | None = None,
    ) -> None:
        self.scenario = scenario
        self.clock = clock or Clock(scenario.clock_start, scenario.clock_mode)  # type: ignore[arg-type]
        self.plans: dict[str, Plan] = dict(scenario.plans)
        # ``keys``: the scenario's ring, copied (hashing every key again cost
        # half of a reset); built here when not given.
        self.keys = keys.copy() if keys is not None else scenario_keys(scenario)
        self.limiter = RateLimiter(scenario.ban or NO_BAN)
        self.tenants = Tenants(scenario, template or PetStore(scenario.initial_pets()))
        # One seeded generator for every random choice made while serving.
        self.rng = random.Random(scenario.seed)
        self.faults = FaultEngine(scenario.faults, self.rng)
        self.routes = RouteTable(scenario.routes)
        self.requests_served = 0
        now = self.clock.now()
        for spec in scenario.keys:
            if spec.used_minute or spec.used_day:
                self.limiter.preload(key_bucket(spec.key), now, spec.used_minute, spec.used_day)

    def next_request_id(self) -> bytes:
        """The next ``X-Request-Id``, ``req-000001`` on: bytes, as the header sends it.

        The journal keeps these bytes and makes them text when it is read.
        """
        self.requests_served += 1
        return b"req-%06d" % self.requests_served


def scenario_keys(scenario: Scenario) -> KeyRing:
    """The key ring a scenario declares."""
    return KeyRing([ApiKey(k.key, k.plan, k.tenant) for k in scenario.keys])


class Runtime:
    """Holds the current state, the journal, and what the control API may change."""

    def __init__(
        self, scenario: Scenario, clock: Clock | None = None, *, template: PetStore | None = None
    ) -> None:
        self._clock_override = clock
        # The scenario's pets, built once: every state forks its store from them
        # (generating and encoding 100,000 pets again would take most of a second).
        self._template = template or PetStore(scenario.initial_pets())
        self._keys = scenario_keys(scenario)  # every reset copies it
        self.state = MockState(scenario, clock, self._template, self._keys)
        self.journal = Journal(
            scenario.journal_size,
            scenario.journal_body_bytes,
            max_bytes=scenario.journal_max_bytes,
            header_bytes=scenario.journal_header_bytes,
        )

    @property
    def template(self) -> PetStore:
        """The scenario's pets, which every state's store is forked from (never written)."""
        return self._template

    @property
    def scenario(self) -> Scenario:
        return self.state.scenario

    def reset(self) -> MockState:
        """Back to the scenario's initial state: pets, counters, bans, clock, call counts."""
        clock = self._clock_override
        if clock is not None:
            clock.set(clock.start)
        self.state = MockState(self.state.scenario, clock, self._template, self._keys)
        return self.state

    def swap(self, scenario: Scenario) -> MockState:
        """Replace the scenario; the new state is built before it is swapped in."""
        prepared = self.prepare(scenario)
        self.install(prepared)
        return prepared.state

    @staticmethod
    def prepare(scenario: Scenario) -> Prepared:
        """Build the state of ``scenario`` without touching the running one.

        Safe in a worker thread: it only makes new objects, so the slow part
        of a swap (generating and encoding the pets) can run off the event loop.
        """
        template = PetStore(scenario.initial_pets())
        return Prepared(scenario, template, MockState(scenario, None, template))

    def install(self, prepared: Prepared) -> Prepared:
        """Swap a prepared state in: on the event loop, one assignment, so atomic.

        Returns the state it replaced, for ``release`` to free off the loop.
        """
        replaced = Prepared(self.state.scenario, self._template, self.state)
        scenario = prepared.scenario
        self._clock_override = None
        self._template = prepared.template
        self._keys = scenario_keys(scenario)
        self.state = prepared.state
        self.journal.resize(
            scenario.journal_size,
            scenario.journal_body_bytes,
            max_bytes=scenario.journal_max_bytes,
            header_bytes=scenario.journal_header_bytes,
        )
        return replaced


class Prepared(NamedTuple):
    """A scenario's state, built and ready to swap in (or just swapped out)."""

    scenario: Scenario
    template: PetStore
    state: MockState


def release(box: list[Prepared]) -> None:
    """Free a replaced state (the one item of ``box``) a slice at a time; for a worker thread.

    Freeing 200,000 pets is one long stretch of C code wherever the last
    reference goes, during which no other thread runs, the event loop
    included. So the pets are first gathered into a list, the state's
    containers are dropped (which then only decrements counts), and the pets
    themselves are freed a few thousand at a time: between slices the
    interpreter lets the event loop run. ``box`` is emptied so that no caller
    keeps the state alive.
    """
    replaced = box.pop()
    held: list[object] = replaced.template.inventory.held()
    for store in (replaced.template, *replaced.state.tenants.stores()):
        held.extend(store.held())
    del replaced
    while held:
        del held[-4096:]
