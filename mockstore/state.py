"""The running state of the mock, built from a frozen ``Scenario``.

Reset is "build the state again from the same scenario" and a scenario swap is
"build it from another one and assign it": the request path always reads
``Runtime.state`` once, so a swap is atomic from a request's point of view.
The scenario's pets are built once per scenario (an ``Inventory``) and every
state forks its store from them, so a reset costs the same whatever the
number of pets. A swap can be built in a worker thread (``prepare``) and only
assigned on the event loop (``install``).
The journal is not part of the state: it outlives resets and swaps, so a
report at the end of a test run covers every test. Each reset, swap and
backwards move of the clock begins a new *run* in it (``mockstore.runs``).

**Memory.** A runtime given a share of the process's memory budget
(``mockstore.memory``) charges everything it holds for its callers to it:
the journal, the scenario in service and its pets, and each state's stores
(a per-key store has a share of its own, ``SHARES["key"]``) and issued keys.
What a state or a scenario held is given back the moment it is replaced
(``reset``, ``install``) and a runtime's all at once when it is closed (a
deleted tenant); nothing here is a reference cycle, so the memory itself goes
as soon as the last request that uses it ends.
"""

from __future__ import annotations

import hashlib
import string
import uuid
from typing import Any, NamedTuple

from mockstore.clock import REAL_TIME, Clock, Timebase
from mockstore.faults import FaultEngine, RouteTable
from mockstore.journal import Journal
from mockstore.keys import ApiKey, KeyRing, key_bucket
from mockstore.limiter.limiter import Limiter
from mockstore.memory import SHARES, Account
from mockstore.ordering import Ordering
from mockstore.ratelimit import BanPolicy, Plan, RateLimiter
from mockstore.runs import Run, RunCounter, RunReason
from mockstore.scenario.collections import list_order_of
from mockstore.scenario.model import Scenario
from mockstore.store import _LIST_CACHE_BYTES, PET_OVERHEAD, PetStore

# A ban policy that can never trigger, for scenarios with ``ban: {enabled: false}``.
NO_BAN = BanPolicy(after_rejections=2**62, within_seconds=1, duration_seconds=0)

# What a mock holds whatever it serves, charged when it opens: its service's
# caches of parsed queries (validation.QUERY_CACHE_BYTES) and compiled tables.
MOCK_COST = 2 * 1024 * 1024
# What an issued key holds: the key, its bucket, and its own store when isolated.
KEY_COST = 4 * 1024
# What a scenario in service holds beyond its pets, per byte of its text: the
# text itself (kept for HAR exports) and the model built from it (measured:
# 1.6 bytes per byte for 10,000 listed pets, more for short values; plus
# VALUE_COST per value).
SCENARIO_TEXT_FACTOR = 2
# A generated pet, in the inventory (measured with 200,000: 590 bytes each).
GENERATED_PET_COST = 640


class Stores:
    """One shared store, or one per group of keys (``isolation: per_key``).

    A group is the keys that name the same ``tenant`` in the scenario (each key
    on its own by default). Not to be confused with a server's tenants
    (``mockstore.tenants``), which are whole isolated mocks.

    Given a share of the memory budget, the shared store draws on it and each
    group's store on a share of its own within it (``SHARES["key"]``).
    """

    def __init__(
        self, scenario: Scenario, template: PetStore, account: Account | None = None
    ) -> None:
        self.per_key = scenario.isolation == "per_key"
        self.account = account
        self.shared = template.fork(account)
        # With per_key isolation the shared store is never written: it is the
        # template each group's store is copied from.
        self._stores: dict[str, PetStore] = {}

    def all(self) -> list[PetStore]:
        return [self.shared, *self._stores.values()]

    def store_for(self, group: str | None) -> PetStore:
        """The store of the keys naming ``group`` (their ``tenant``), or the shared one."""
        if not self.per_key or group is None:
            return self.shared
        store = self._stores.get(group)
        if store is None:
            store = self._stores[group] = self.shared.fork(self._key_share(group))
        return store

    def _key_share(self, group: str) -> Account | None:
        if self.account is None:
            return None
        ceiling = int(self.account.root.ceiling * SHARES["key"].ceiling)
        return self.account.share(f"the store of keys {group!r}", ceiling)


class MockState:
    """Everything that changes while the mock serves: store, counters, bans, clock."""

    def __init__(
        self,
        scenario: Scenario,
        clock: Clock | None = None,
        template: PetStore | None = None,
        account: Account | None = None,
        timebase: Timebase = REAL_TIME,
        keys: KeyRing | None = None,
    ) -> None:
        self.scenario = scenario
        # What this state holds (its stores and issued keys), given back when it is replaced.
        self.account = account
        self.clock = clock or timebase.clock(scenario.clock_start, scenario.clock_mode)  # type: ignore[arg-type]
        self.plans: dict[str, Plan] = dict(scenario.plans)
        # ``keys``: the scenario's ring, copied (hashing every key again cost
        # half of a reset); built here when not given.
        self.keys = keys.copy() if keys is not None else scenario_keys(scenario)
        self.limiter = make_limiter(scenario, self.clock, account)
        self.stores = Stores(scenario, template or template_store(scenario), account)
        self.faults = FaultEngine(scenario.faults, scenario.seed)
        self.routes = RouteTable(scenario.routes)
        self.requests_served = 0
        now = self.clock.now()
        for spec in scenario.keys:
            if spec.used_minute or spec.used_day:
                self.limiter.preload(
                    key_bucket(spec.key),
                    now,
                    spec.used_minute,
                    spec.used_day,
                    self.plans[spec.plan],
                )

        form = scenario.behaviour.request_id
        if form.format != "counter" or form.prefix != "req-":
            ids = RequestIds(form.prefix, form.format, scenario.seed, form.length)
            self.next_request_id = ids
            self.request_id = ids.at

    def next_request_id(self) -> bytes:
        """The next ``X-Request-Id``, ``req-000001`` on: bytes, as the header sends it.

        The journal keeps these bytes and makes them text when it is read.
        """
        self.requests_served += 1
        return b"req-%06d" % self.requests_served

    def request_id(self, number: int) -> bytes:
        """The ``number``-th request's id (a shared state numbers requests in Redis)."""
        return b"req-%06d" % number

    def close(self) -> None:
        """Give back what this state held to the memory budget (it is being replaced)."""
        if self.account is not None:
            self.account.close()


def make_limiter(
    scenario: Scenario, clock: Clock, account: Account | None = None
) -> RateLimiter | Limiter:
    """The limiter of ``scenario``: mockstore's own fixed windows where they count exactly what it
    says (``Limits.classic_windows``), else the general one (``mockstore.limiter``)."""
    limits = scenario.ratelimit
    windows = limits.classic_windows
    if windows is not None:
        return RateLimiter(
            scenario.ban or NO_BAN,
            windows,
            limits.headers.describes,
            limits.headers.refusals,
            wall=clock.waited,
        )
    return Limiter(limits, scenario.ban or NO_BAN, wall=clock.waited, account=account)


def scenario_keys(scenario: Scenario) -> KeyRing:
    """The key ring a scenario declares."""
    return KeyRing([ApiKey(k.key, k.plan, k.tenant) for k in scenario.keys])


_BASE62 = string.digits + string.ascii_uppercase + string.ascii_lowercase


class RequestIds:
    """Request ids in a provider's form (``behaviour.request_id``), for a state to hand out.

    A random id is a hash of the scenario's seed and the request's number: the
    same scenario gives the same ids, and a shared state, which numbers requests
    in Redis, gives each process's answers the ids one process would.
    It counts for itself rather than through its state: holding the state would make
    a reference cycle, and a replaced state would wait for the cyclic collector.
    """

    def __init__(self, prefix: str, form: str, seed: int, length: int = 24) -> None:
        self._prefix = prefix
        self._form = form
        self._length = length
        self._seed = f"mockstore-request-ids-{seed}-"
        self.served = 0

    def __call__(self) -> bytes:
        self.served += 1
        return self.at(self.served)

    def at(self, number: int) -> bytes:
        """The ``number``-th request's id."""
        if self._form == "counter":
            return f"{self._prefix}{number:06d}".encode()
        if self._form == "alphanumeric":
            # 64 bytes of hash, read as one number, written in base 62: 86 digits, so
            # any length up to 64 is uniformly drawn.
            big = hashlib.blake2b(f"{self._seed}{number}".encode(), digest_size=64).digest()
            value, digits = int.from_bytes(big, "big"), []
            for _ in range(self._length):
                value, digit = divmod(value, 62)
                digits.append(_BASE62[digit])
            return (self._prefix + "".join(digits)).encode()
        if self._form == "traceparent":
            # W3C trace context: a trace id and a span id, sampled; no prefix.
            drawn = hashlib.blake2b(f"{self._seed}{number}".encode(), digest_size=24).hexdigest()
            return f"00-{drawn[:32]}-{drawn[32:]}-01".encode()
        digest = hashlib.blake2b(f"{self._seed}{number}".encode(), digest_size=16).digest()
        value = uuid.UUID(bytes=digest, version=4)
        return (self._prefix + (str(value) if self._form == "uuid" else value.hex)).encode()


def template_store(scenario: Scenario) -> PetStore:
    """The store of a scenario's own pets, which every state's store is forked from."""
    collections = scenario.collections
    order = collections.order
    listed = list_order_of(order)
    if collections.plain_listing and listed is not None:
        # mockstore's own listing: the first limit pets of the id lists (O(limit)).
        return PetStore(scenario.initial_pets(), order=listed)
    # Pages, a field's order or a total: the store keeps its pets' members sorted.
    return PetStore(
        scenario.initial_pets(),
        order="insertion" if order.by == "insertion" else "ascending",
        ordering=Ordering(order),
    )


class Runtime:
    """Holds the current state, the journal, and what the control API may change.

    ``account``: its share of the process's memory budget (None: nothing is
    charged, as for a mock used in process without a server). ``runs``
    numbers the runs (one counter per server, shared with its tenants);
    ``first_run`` says why the first one began. ``timebase`` is where every
    clock this runtime builds reads the time.
    """

    def __init__(
        self,
        scenario: Scenario,
        clock: Clock | None = None,
        *,
        template: PetStore | None = None,
        account: Account | None = None,
        timebase: Timebase = REAL_TIME,
        runs: RunCounter | None = None,
        first_run: RunReason = "start",
    ) -> None:
        self.account = account
        self._clock_override = clock
        self._closed = False
        if account is not None:
            account.take(MOCK_COST, "a mock")
        self.timebase = timebase
        # The scenario's pets, built once: every state forks its store from them
        # (generating and encoding 100,000 pets again would take most of a second).
        # A template given is someone else's (a tenant shares the server's pets).
        self._scenario_share = self._share("the scenario in service")
        if self._scenario_share is not None:
            self._scenario_share.take(_text_cost(scenario), "the scenario in service")
        self._template = template or template_store(scenario)
        if template is None and self._scenario_share is not None:
            self._scenario_share.take(self._template.inventory.cost, "the scenario's pets")
        self._keys = scenario_keys(scenario)  # every reset copies it
        self.state = MockState(
            scenario, clock, self._template, self._state_share(), timebase, self._keys
        )
        self.journal = Journal(
            scenario.journal_size,
            scenario.journal_body_bytes,
            max_bytes=scenario.journal_max_bytes,
            header_bytes=scenario.journal_header_bytes,
            account=account,
        )
        # Where the API records its answers: the journal itself, or with a shared state
        # the entries waiting to be shipped to every process's journal (``open_outbox``).
        self.outbox = self.journal
        self.runs = runs or RunCounter()
        # The state in Redis this runtime answers from (a ``mockstore.shared.SharedState``,
        # which builds on this module: not named here); None: in memory.
        self.shared: Any = None
        self._begin_run(first_run)

    def open_outbox(self) -> Journal:
        """Record answers apart from the journal from now on (a shared state's: the journal
        is every process's, ``mockstore.shared.journal``); the outbox it records into."""
        if self.outbox is self.journal:
            journal = self.journal
            self.outbox = Journal(
                journal.size,
                journal.body_bytes,
                max_bytes=journal.max_bytes,
                header_bytes=journal.header_bytes,
                account=self.account,
            )
            self.outbox.begin_run(journal.runs[-1])
        return self.outbox

    def begin_run(self, reason: RunReason, number: int) -> Run:
        """Begin a run numbered ``number`` (the shared state's: numbered in Redis)."""
        return self._begin_run(reason, number)

    def _begin_run(self, reason: RunReason, number: int | None = None) -> Run:
        """Begin a run: number ``number`` when the shared state numbered it, else the next."""
        clock = self.state.clock
        run = Run(
            self.runs.next() if number is None else number,
            reason,
            self.journal.last_seq + 1,
            clock.now(),
            clock.wall(),
            self.state.scenario.name,
            self.state.scenario.clock_headers,
            clock.mode,
        )
        self.journal.begin_run(run)
        if self.outbox is not self.journal:
            self.outbox.begin_run(run)
        return run

    def adopt_run(self, run: Run) -> None:
        """Make ``run`` the one the next request joins (the shared state's, begun elsewhere)."""
        if not self.journal.runs or self.journal.runs[-1] != run:
            self.journal.begin_run(run)
            if self.outbox is not self.journal:
                self.outbox.begin_run(run)

    @property
    def run(self) -> int:
        """The run the next request belongs to."""
        return self.journal.run

    def move_clock(self, when: float, number: int | None = None) -> bool:
        """Set the scenario clock; True when that moved it back and began a new run
        (numbered ``number``, when the shared state numbered it).

        Moving back, the limits and bans are recomputed for the new instant
        (``RateLimiter.rebase``): no answer names a wait that only makes sense
        at the time the clock came from.
        """
        state = self.state
        now = state.clock.now()
        if when >= now:
            state.clock.set(when)
            return False
        state.limiter.rebase(now, when)
        state.clock.set(when)
        self._begin_run("clock", number)
        return True

    def _share(self, name: str, floor: int = 0) -> Account | None:
        """A share of this runtime's account, closed when what it holds is replaced."""
        if self.account is None:
            return None
        return self.account.share(name, self.account.ceiling, floor)

    def _state_share(self) -> Account | None:
        """A state's share: a quarter of the mock's floor is kept for its stores and keys.

        So a journal filling up cannot leave a client's creates without room:
        the journal lets its oldest entries go instead.
        """
        floor = self.account.floor // 4 if self.account is not None else 0
        return self._share("state", floor)

    @property
    def template(self) -> PetStore:
        """The scenario's pets, which every state's store is forked from (never written)."""
        return self._template

    @property
    def scenario(self) -> Scenario:
        return self.state.scenario

    def reset(self, number: int | None = None) -> MockState:
        """Back to the scenario's initial state: pets, counters, bans, clock, call counts
        (a new run: numbered ``number``, when the shared state numbered it)."""
        clock = self._clock_override
        if clock is not None:
            clock.set(clock.start)
        replaced = self.state
        replaced.close()  # first: its floor goes to the new state
        self.state = MockState(
            replaced.scenario,
            clock,
            self._template,
            self._state_share(),
            self.timebase,
            self._keys,
        )
        self._begin_run("reset", number)
        return self.state

    def swap(self, scenario: Scenario) -> MockState:
        """Replace the scenario; the new state is built before it is swapped in."""
        prepared = self.prepare(scenario)
        self.install(prepared)
        return prepared.state

    def prepare(self, scenario: Scenario) -> Prepared:
        """Build the state of ``scenario`` without touching the running one.

        Safe in a worker thread: it only makes new objects, so the slow part
        of a swap (generating and encoding the pets) can run off the event loop.
        Its cost is charged to the memory budget before the pets are built (an
        estimate, made exact once they are): ``OverBudget`` if it cannot be.
        The ``Prepared`` must be installed, or ``discard``ed.
        """
        share = self._share("a scenario being put in service")
        try:
            estimate = _text_cost(scenario) + _pets_estimate(scenario)
            if share is not None:
                share.take(estimate, f"scenario {scenario.name!r} and its pets")
            template = template_store(scenario)
            if share is not None:
                actual = _text_cost(scenario) + template.inventory.cost
                if actual > estimate:
                    share.take(actual - estimate, f"scenario {scenario.name!r} and its pets")
                else:
                    share.release(estimate - actual)
            state = MockState(scenario, None, template, self._state_share(), self.timebase)
        except BaseException:
            if share is not None:
                share.close()
            raise
        return Prepared(scenario, template, state, share)

    def install(self, prepared: Prepared, number: int | None = None) -> Prepared:
        """Swap a prepared state in: on the event loop, one assignment, so atomic.

        Returns the state it replaced, for ``release`` to free off the loop;
        what it held is given back to the memory budget at once.
        """
        replaced = Prepared(self.state.scenario, self._template, self.state, self._scenario_share)
        scenario = prepared.scenario
        self._clock_override = None
        self._template = prepared.template
        self._scenario_share = prepared.share
        self._keys = scenario_keys(scenario)
        self.state = prepared.state
        for journal in {id(self.journal): self.journal, id(self.outbox): self.outbox}.values():
            journal.resize(
                scenario.journal_size,
                scenario.journal_body_bytes,
                max_bytes=scenario.journal_max_bytes,
                header_bytes=scenario.journal_header_bytes,
            )
        replaced.discard()
        self._begin_run("scenario", number)
        return replaced

    def give_journal(self) -> Journal:
        """Hand the journal over (a deleted tenant's, kept for reports); an empty one stays.

        The journal keeps drawing on this runtime's share until its new holder
        rehomes it (``Journal.rehome``), which ``KeptJournals.keep`` does.
        """
        journal = self.journal
        self.journal = Journal(0, journal.body_bytes)
        if self.outbox is not journal:
            self.outbox.close()  # what was not shipped goes with the mock
        self.outbox = self.journal
        return journal

    def close(self) -> None:
        """Give back everything this runtime holds to the memory budget (its mock is deleted)."""
        self.state.close()
        if self._scenario_share is not None:
            self._scenario_share.close()
        if self.account is not None and not self._closed:
            self.account.release(MOCK_COST)
        self._closed = True
        self.journal.close()
        if self.outbox is not self.journal:
            self.outbox.close()
        if self.account is not None:
            self.account.close()


class Prepared(NamedTuple):
    """A scenario's state, built and ready to swap in (or just swapped out).

    ``share``: what it holds of the memory budget (its pets and scenario).
    """

    scenario: Scenario
    template: PetStore
    state: MockState
    share: Account | None = None

    def discard(self) -> None:
        """Give back what it holds to the memory budget (it will not be, or is no longer, used)."""
        self.state.close()
        if self.share is not None:
            self.share.close()


def _text_cost(scenario: Scenario) -> int:
    return SCENARIO_TEXT_FACTOR * len(scenario.source)


def _pets_estimate(scenario: Scenario) -> int:
    """What the scenario's pets will cost in an inventory, before it is built."""
    listed = sum(PET_OVERHEAD + 2 * (len(str(pet)) + 16) for pet in scenario.pets)
    return _LIST_CACHE_BYTES + listed + GENERATED_PET_COST * scenario.generate_pets


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
    for store in (replaced.template, *replaced.state.stores.all()):
        held.extend(store.held())
    del replaced
    while held:
        del held[-4096:]
