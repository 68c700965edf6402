"""The mock's state in Redis, shared by every process that serves it.

One ``SharedState`` per process, attached to its ``Runtime``. What makes an
answer lives in Redis: every rate-limit window, ban and its escalation, the
pets created and the id sequence, the fault rules' call counts, the request
numbers, the issued and revoked keys with their plans, the clock, and the
scenario in service. Each process keeps a local copy
of the *configuration* (scenario, keys, plans, clock) to answer from, tagged
with the generation it was read at; every API request's one script checks that
generation first, so a process that missed a control call reloads before it
answers (``Stale``) and never answers from a mix of old and new.

Data layout (``PREFIX`` = ``mockstore:``)::

    mockstore:gen                         the generation: +1 on every control call
    mockstore:config                      hash: epoch, source, file, digest,
                                          clock (JSON), keys (JSON), plans (JSON)
    mockstore:<epoch>:b:<bucket>          hash: ms mu ds du (windows), bu (ban end),
                                          tu tw (the last wait told, scenario and wall)
    mockstore:<epoch>:r:<bucket>          list: instants of recent refusals (ban escalation)
    mockstore:<epoch>:n                   the requests numbered so far (their request ids)
    mockstore:<epoch>:f:s:<scope>         a fault rule scope's call count (rules with no
                                          condition beyond operation and key share one)
    mockstore:<epoch>:f:r:<rule>          a fault rule's call count (the others)
    mockstore:<epoch>:s:<n>:<group>:next  the next pet id (absent: the scenario's next)
    mockstore:<epoch>:s:<n>:<group>:bytes the created pets' estimated bytes
    mockstore:<epoch>:s:<n>:<group>:pets  hash: id -> the pet's JSON, as answered
    mockstore:<epoch>:s:<n>:<group>:ids   list: created ids in id order
    mockstore:<epoch>:s:<n>:<group>:ids:<status>  the same, of one status
    mockstore:<epoch>:s:<n>:<group>:ord   sorted set: created pets' members (a scenario
                                          that pages: ``mockstore.ordering``)
    mockstore:<epoch>:s:<n>:<group>:ord:<status>  the same, of one status
    mockstore:runs                        the run counter of the mock and its tenants
                                          (``runs``)
    mockstore:journal, mockstore:journal:*  the mock's one journal stream and its
                                          companions (``streams``, ``journal``)

A tenant's mock has the same keys under a prefix of its own in place of
``mockstore:`` (``mockstore.shared.tenants``).

A reset or a new scenario starts a new *epoch*: one increment, so it is atomic
whatever the data holds; the old epoch's keys are swept in the background. The
scenario's own pets are not copied into Redis: every process builds the same
inventory from the scenario (it is deterministic, seeded), and Redis holds only
what was created since.

Beside this module: ``connection`` (the line to Redis and what a failure
means), ``config`` (the configuration's fields, written and checked as they are
read back), ``runs`` (run numbering), ``request`` (an API request's one round
trip), ``buckets`` (rate-limit buckets read back), ``store`` (the created pets).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from typing import Any

from mockstore.keys import ApiKey, KeyRing, key_bucket
from mockstore.limiter.limiter import Limiter
from mockstore.limiter.model import Limits
from mockstore.limiter.rules import length_problem
from mockstore.ratelimit import Plan, Usage
from mockstore.runs import Run
from mockstore.scenario import ScenarioError
from mockstore.shared.buckets import preload, preloads, read_usage
from mockstore.shared.config import (
    BadConfig,
    Config,
    clock_json,
    custom_plans_json,
    digest_of,
    generation_of,
    keys_json,
    parse,
    plans_of,
    run_json,
    whole,
)
from mockstore.shared.connection import Connection
from mockstore.shared.deadline import StateUnavailable, bounded
from mockstore.shared.runs import next_run, run_in
from mockstore.shared.store import read_created
from mockstore.state import Prepared, Runtime, release

log = logging.getLogger("mockstore.shared")

PREFIX = "mockstore:"
# The root mock's (``SharedState.generation_key`` and ``config_key`` are each state's own).
GENERATION = PREFIX + "gen"
CONFIG = PREFIX + "config"
# After a mock's prefix: the last journal sequence number handed out (``streams``).
JOURNAL_SEQ = "journal:seq"
# A control call's change, built against the configuration as this process has it.
Build = Callable[[], tuple[dict[str, str], dict[str, Any]]]
# How often one request may find the configuration changed under it before it
# is answered 503 (a storm of control calls).
MAX_RELOADS = 8


class _InService(Exception):
    """The scenario to install is the one in service already (``install_unless_serving``)."""


class SharedState(Connection):
    """A runtime's state in Redis at ``url`` (``redis://host:port/db``).

    Its connections are a ``Connection``'s (``mockstore.shared.connection``): made
    on first use in the event loop that uses them, so a process may ``open`` in
    one loop (at start, before serving or forking) and serve in another.
    """

    def __init__(self, url: str, runtime: Runtime, prefix: str = PREFIX) -> None:
        super().__init__(url)
        self.runtime = runtime
        # Every key of this mock starts with it (a tenant's: ``mockstore.shared.tenants``).
        self.prefix = prefix
        self.generation_key = prefix + "gen"
        self.config_key = prefix + "config"
        self.generation = ""
        self.epoch = ""
        self.digest = ""
        self.clock_moves_back = 0
        self._sweeps: set[asyncio.Task[None]] = set()
        # The process's ``JournalSharing`` (``mockstore.shared.journal``), once its app runs one.
        self.journal: Any = None
        # The journal sequence number the mock's journal starts after (its start's).
        self.journal_from = 0
        # A run begun before the mock was joined is this process's alone: forgotten then.
        self._runs_shared = False
        # Why this state's first run begins (a tenant's: its creation).
        self.first_run = "start"

    async def close(self) -> None:
        """Close this loop's connections (before the loop ends, or the process forks)."""
        for task in self._sweeps:
            task.cancel()
        await super().close()

    # -- start ---------------------------------------------------------------

    async def open(self) -> None:
        """Join the mock in Redis, or start it there from this process's scenario.

        A process whose scenario is the one in service joins it (its clock, its
        keys, what was created); one with another scenario puts its own in
        service, as ``PUT /__mockstore/scenario`` would. ``StateUnavailable``
        when Redis cannot be reached.
        """
        try:
            await bounded(self.client().ping())
        except Exception as exc:
            raise StateUnavailable(f"cannot reach the shared state at {self.url}: {exc}") from None
        fields, generation = await self._read()
        scenario = self.runtime.scenario
        ours = digest_of(scenario.source, scenario.file)
        config = self._checked(fields, generation) if generation is not None else None
        if config is not None and generation is not None and config.digest == ours:
            try:
                await self._apply(config, generation)
            except BadConfig as exc:
                self._say_bad(exc)
            else:
                self.journal_from = config.journal
                return
        if not await self._start_over(expected=generation or "", new_run=False):
            await self.refresh()  # another process started it first: join theirs

    async def _start_over(self, expected: str, new_run: bool) -> bool:
        """Put this process's scenario in service in Redis, from its start (a new epoch)."""
        runtime = self.runtime
        number = await next_run(self)
        if new_run:
            runtime.reset(number)
        else:
            runtime.begin_run(self.first_run, number)
        run = runtime.journal.runs[-1]
        journal_from = whole(await self.get(self.prefix + JOURNAL_SEQ)) or 0
        fields, change = self._start(runtime.state)
        fields["run"] = run_json(run)
        fields["journal"] = str(journal_from)
        reply = await self._control_call(expected, fields, change)
        if reply is None:  # someone else got there first
            return False
        self.journal_from = journal_from
        self._adopt_run(run)
        self._adopt(fields, reply)
        return True

    def _adopt_run(self, run: Run) -> None:
        """Make the mock's run this process's (a run of its own from before is forgotten)."""
        if not self._runs_shared:
            self._runs_shared = True
            self.runtime.journal.runs.clear()
        self.runtime.adopt_run(run)

    def _checked(self, fields: dict[Any, Any] | None, generation: str) -> Config | None:
        """The configuration, checked; None (said in the log) when it is not valid."""
        try:
            if generation_of(generation) is None:
                raise BadConfig(f"the generation {generation[:40]!r} is not a whole number")
            if fields is None:
                raise BadConfig("it is not a hash")
            return parse(fields)
        except BadConfig as exc:
            self._say_bad(exc)
            return None

    def _say_bad(self, exc: Exception) -> None:
        log.warning(
            "the shared configuration at %s is not one mockstore wrote (%s); the scenario "
            "starts again from this process's",
            self.url,
            exc,
        )

    # -- the configuration -----------------------------------------------------

    async def _read(self) -> tuple[dict[Any, Any] | None, str | None]:
        """The configuration's hash as read (None: not a hash) and its generation as text
        (None: there is none; "" or another text that is not a number: not a valid one)."""
        import redis.exceptions

        client = self.client()
        try:
            async with client.pipeline(transaction=True) as pipe:
                pipe.get(self.generation_key)
                pipe.hgetall(self.config_key)
                generation, fields = await bounded(pipe.execute(raise_on_error=False))
        except StateUnavailable:
            raise
        except Exception as exc:
            await self.connections_lost()
            raise StateUnavailable(self.unreachable(exc)) from exc
        if isinstance(generation, redis.exceptions.ResponseError):
            generation = b""  # not a string: the control script replaces it
        if isinstance(fields, redis.exceptions.ResponseError) or not isinstance(fields, dict):
            fields = None
        text = generation.decode("utf-8", "replace") if generation is not None else None
        return fields, text

    async def refresh(self, seen: str | None = None) -> None:
        """Reload the configuration if it changed; start it again if Redis lost it.

        ``seen``: the generation a request found in Redis; when this process has
        reloaded to it meanwhile (another request did), nothing is read again.
        """
        self.client()
        assert self.reloading is not None
        async with self.reloading:
            if seen and seen == self.generation:
                return
            for _ in range(MAX_RELOADS):
                fields, generation = await self._read()
                if generation is None:
                    # Redis came back empty (restarted without persistence): the
                    # mock starts again from its scenario, in every process alike.
                    log.warning(
                        "the shared state at %s was lost; the scenario starts again", self.url
                    )
                    if await self._start_over(expected="", new_run=True):
                        return
                    continue
                if generation == self.generation:
                    return
                config = self._checked(fields, generation)
                if config is not None:
                    try:
                        await self._apply(config, generation)
                        return
                    except BadConfig as exc:
                        self._say_bad(exc)
                # Not one a process wrote: started again here (a compare-and-set on
                # that very generation), as when Redis comes back empty.
                if await self._start_over(expected=generation, new_run=True):
                    return
            raise StateUnavailable("the shared state kept changing while this process read it")

    async def _apply(self, config: Config, generation: str) -> None:
        """Make this process's state the configuration's (another process changed it).

        ``BadConfig`` when its scenario does not load here (nothing changed then)."""
        runtime = self.runtime
        number = config.run.number if config.run is not None else None
        plans = plans_of(config.plans)
        if config.digest != self.digest:
            from mockstore.scenario import load_scenario

            try:
                scenario = await asyncio.to_thread(load_scenario, config.source, config.file)
            except ScenarioError as exc:
                raise BadConfig(f"its scenario does not load: {exc}") from None
            _check_plans(plans, scenario.ratelimit)
            prepared = await asyncio.to_thread(runtime.prepare, scenario)
            replaced = runtime.install(prepared, number)
            await asyncio.to_thread(release, [replaced])
        else:
            _check_plans(plans, runtime.state.scenario.ratelimit)
            if config.epoch != self.epoch and self.epoch:
                runtime.reset(number)
        clock = config.clock
        moved_back = clock.back > self.clock_moves_back and self.epoch == config.epoch
        state = runtime.state
        target = clock.at
        wall_now = state.clock.wall()
        if clock.real and state.clock.mode != "manual":
            # Real time: the wall clock itself, in every process (an offset carried
            # over from another process's readings would be off by their gap).
            target = wall_now
        elif state.clock.mode != "manual":
            target += wall_now - clock.wall
        if moved_back:
            runtime.move_clock(min(target, state.clock.now()), number)
        state.clock.set(target, wall_now=wall_now)
        state.keys = KeyRing([ApiKey(*key) for key in config.keys])
        state.plans = {**state.scenario.plans, **plans}
        if isinstance(state.limiter, Limiter):
            for plan in plans.values():  # a key's plan issued through another process
                state.limiter.admit(plan)
        if config.run is not None:
            self._adopt_run(config.run)
        self.generation = generation
        self.epoch = config.epoch
        self.digest = config.digest
        self.clock_moves_back = clock.back

    def _adopt(self, fields: dict[str, str], reply: list[Any]) -> None:
        """This process made the change: its state already is the configuration."""
        old_epoch = self.epoch
        self.generation = reply[1].decode()
        self.epoch = reply[2].decode()
        if "digest" in fields:
            self.digest = fields["digest"]
        if "clock" in fields:
            self.clock_moves_back = json.loads(fields["clock"])["back"]
        if old_epoch and old_epoch != self.epoch:
            task = asyncio.get_running_loop().create_task(self._sweep(old_epoch))
            self._sweeps.add(task)
            task.add_done_callback(self._sweeps.discard)

    async def _sweep(self, epoch: str) -> None:
        """Delete what an old epoch left in Redis, a page at a time (off the request path)."""
        client = self.client()
        try:
            async for keys in key_pages(client, f"{self.prefix}{epoch}:*"):
                await client.unlink(*keys)
        except Exception as exc:  # the next sweep, or Redis's own eviction, takes the rest
            log.warning("could not sweep epoch %s of the shared state: %s", epoch, exc)

    def _fresh_fields(
        self, scenario: Any, keys: Any, now: float, real_time: bool = False
    ) -> dict[str, str]:
        wall = self.runtime.state.clock.wall()
        return {
            "source": scenario.source,
            "file": scenario.file,
            "digest": digest_of(scenario.source, scenario.file),
            "clock": clock_json(now, wall, self.clock_moves_back, real_time),
            "keys": keys_json(keys),
            "plans": "{}",
        }

    async def _control_call(
        self, expected: str, fields: dict[str, str], change: dict[str, Any]
    ) -> list[Any] | None:
        """Run a control change if the generation is still ``expected``; None if it is not."""
        change = {"prefix_base": self.prefix, **change}
        reply = await self.call(
            "control",
            [self.generation_key, self.config_key],
            [expected, json.dumps(fields), json.dumps(change)],
        )
        if reply[0] == b"stale":
            return None
        return reply

    async def _change(self, build: Build) -> tuple[dict[str, str], list[Any]]:
        """A control call's change against the current configuration: ``build()`` says
        what it is, after each reload (another process may have changed something)."""
        for _ in range(MAX_RELOADS):
            await self.refresh()
            fields, change = build()
            reply = await self._control_call(self.generation, fields, change)
            if reply is not None:
                return fields, reply
        raise StateUnavailable("the shared state kept changing under this control call")

    # -- control calls -------------------------------------------------------
    # Each is made in Redis first (a compare-and-set on the generation), then in
    # this process; the others reload when their next request finds it changed.

    async def reset(self) -> None:
        runtime = self.runtime
        number = await next_run(self)

        def build() -> tuple[dict[str, str], dict[str, Any]]:
            # Reset here first: the fresh clock and keys are what every process takes.
            runtime.reset(number)
            fields, change = self._start(runtime.state)
            fields["run"] = run_json(runtime.journal.runs[-1])
            return fields, change

        fields, reply = await self._change(build)
        self._adopt(fields, reply)

    async def install(self, prepared: Prepared) -> Prepared:
        """Put a prepared scenario in service everywhere; returns the state it replaced."""
        number = await next_run(self)
        fields, reply = await self._change(lambda: self._started(prepared.state, number))
        replaced = self.runtime.install(prepared, number)
        self._adopt_run(run_in(fields))
        self._adopt(fields, reply)
        return replaced

    async def install_unless_serving(self, prepared: Prepared) -> Prepared | None:
        """``install``, unless the scenario in service is this one already (same file, same
        text): then None, and nothing changes. Decided against the configuration the
        change is made on, so of replicas that each see one edit (``--watch`` on a
        ConfigMap) the first puts it in service, once, and the others join it."""
        digest = digest_of(prepared.scenario.source, prepared.scenario.file)
        number = await next_run(self)

        def build() -> tuple[dict[str, str], dict[str, Any]]:
            if self.digest == digest:  # read again just before (``_change``)
                raise _InService
            return self._started(prepared.state, number)

        try:
            fields, reply = await self._change(build)
        except _InService:
            return None
        replaced = self.runtime.install(prepared, number)
        self._adopt_run(run_in(fields))
        self._adopt(fields, reply)
        return replaced

    def _started(self, state: Any, number: int) -> tuple[dict[str, str], dict[str, Any]]:
        """``_start``, with the run a new scenario begins (numbered ``number``)."""
        fields, change = self._start(state)
        scenario = state.scenario
        run = Run(
            number,
            "scenario",
            self.runtime.journal.last_seq + 1,
            state.clock.now(),
            state.clock.wall(),
            scenario.name,
            scenario.clock_headers,
        )
        fields["run"] = run_json(run)
        return fields, change

    def _start(self, state: Any) -> tuple[dict[str, str], dict[str, Any]]:
        """A new epoch that starts ``state`` (a reset's, or a new scenario's)."""
        scenario = state.scenario
        now = state.clock.now()
        # A clock on real time (no start chosen, never moved) is the wall clock everywhere.
        real_time = state.clock.mode != "manual" and state.clock.wall_offset() == 0.0
        fields = self._fresh_fields(scenario, state.keys, now, real_time)
        return fields, {"epoch": True, "preload": preloads(state, now)}

    async def move_clock(self, when: float) -> None:
        runtime = self.runtime
        # Moving back begins a run: numbered before, as the change is built.
        number = await next_run(self) if when < runtime.state.clock.now() else None

        def build() -> tuple[dict[str, str], dict[str, Any]]:
            state = runtime.state
            now = state.clock.now()
            change: dict[str, Any] = {}
            fields = {}
            if when < now:
                change["rebase"] = {"now": repr(now), "to": repr(when)}
                run = Run(
                    number or 0,
                    "clock",
                    runtime.journal.last_seq + 1,
                    when,
                    state.clock.wall(),
                    state.scenario.name,
                    state.scenario.clock_headers,
                )
                fields["run"] = run_json(run)
            back = self.clock_moves_back + (1 if when < now else 0)
            fields["clock"] = clock_json(when, state.clock.wall(), back)
            return fields, change

        fields, reply = await self._change(build)
        if "run" in fields and runtime.move_clock(when, number):
            self._adopt_run(run_in(fields))
        else:
            runtime.move_clock(when)
        self._adopt(fields, reply)

    async def issue_key(self, key: ApiKey, plan: Plan, used: dict[str, int]) -> None:
        def build() -> tuple[dict[str, str], dict[str, Any]]:
            state = self.runtime.state
            plans = {**state.plans, plan.name: plan}
            fields = {
                "keys": keys_json([*(k for k in state.keys if k.key != key.key), key]),
                "plans": custom_plans_json(state.scenario, plans),
            }
            change: dict[str, Any] = {}
            if used:
                minute = used.get("minute", 0)
                day = used.get("day", minute)
                change["preload"] = [
                    preload(state, key_bucket(key.key), state.clock.now(), minute, day, plan)
                ]
            return fields, change

        fields, reply = await self._change(build)
        state = self.runtime.state
        state.keys.issue(key)
        state.plans[plan.name] = plan
        self._adopt(fields, reply)

    async def revoke_key(self, key: str) -> ApiKey | None:
        """Revoke ``key`` everywhere; the key, or None when no process knows it."""
        held: list[ApiKey] = []

        def build() -> tuple[dict[str, str], dict[str, Any]]:
            keys = list(self.runtime.state.keys)
            held[:] = [k for k in keys if k.key == key]
            return {"keys": keys_json([k for k in keys if k.key != key])}, {
                "forget": [key_bucket(key)]
            }

        fields, reply = await self._change(build)
        revoked = self.runtime.state.keys.revoke(key)
        self._adopt(fields, reply)
        return revoked or (held[0] if held else None)

    async def lift_ban(self, key: str) -> bool:
        _, reply = await self._change(lambda: ({}, {"lift": key_bucket(key), "bump": False}))
        return reply[3] == b"1"

    async def created_pets(self, group: str | None) -> list[bytes]:
        """The JSON of every pet created in a store (``group``: per-key isolation), in id order."""
        return await read_created(self, self.prefix + self.epoch + ":", group)

    async def usage(self, bucket_id: str, plan: Plan, now: float) -> Usage:
        """A bucket's standing (the control API's keys), read without counting anything."""
        epoch = self.prefix + self.epoch + ":"
        return await read_usage(self, epoch, bucket_id, self.runtime.state.limiter, plan, now)


async def key_pages(client: Any, pattern: str):  # type: ignore[no-untyped-def]
    """Every key matching ``pattern``, a SCAN page at a time."""
    cursor = 0
    while True:
        cursor, keys = await client.scan(cursor, match=pattern, count=1000)
        if keys:
            yield keys
        if cursor == 0:
            return


def _check_plans(plans: dict[str, Plan], limits: Limits) -> None:
    """``BadConfig`` when a plan read back cannot be counted under ``limits`` (the control
    API refuses such a plan; one in Redis was written by something else)."""
    for plan in plans.values():
        problem = length_problem(limits, plan)
        if problem is not None:
            raise BadConfig(f"its plan {plan.name!r:.40} cannot be counted: {problem}")
