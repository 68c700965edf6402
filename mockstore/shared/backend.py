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
    mockstore:journals, mockstore:journal:<process>  every process's journal entries
                                          (``mockstore.shared.journal``)

A tenant's mock has the same keys under a prefix of its own in place of
``mockstore:`` (``mockstore.shared.tenants``).

A reset or a new scenario starts a new *epoch*: one increment, so it is atomic
whatever the data holds; the old epoch's keys are swept in the background. The
scenario's own pets are not copied into Redis: every process builds the same
inventory from the scenario (it is deterministic, seeded), and Redis holds only
what was created since.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from mockstore.faults import SharedRules
from mockstore.keys import ApiKey, KeyRing, key_bucket
from mockstore.ratelimit import DAY, MINUTE, Bucket, Decision, Plan, RateLimiter, Usage
from mockstore.shared.batching import ScriptBatcher
from mockstore.shared.channel import ReplyError, ScriptChannel, channel_for
from mockstore.shared.scripts import CONTROL, REQUEST
from mockstore.state import NO_BAN, Prepared, Runtime, release
from mockstore.store import PetStore

log = logging.getLogger("mockstore.shared")

PREFIX = "mockstore:"
# The root mock's (``SharedState.generation_key`` and ``config_key`` are each state's own).
GENERATION = PREFIX + "gen"
CONFIG = PREFIX + "config"
# The largest int64 and the text the id sequence holds once it is spent.
MAX_ID = str(PetStore.MAX_ID)
PAST_MAX_ID = str(PetStore.MAX_ID + 1)
# A control call's change, built against the configuration as this process has it.
Build = Callable[[], tuple[dict[str, str], dict[str, Any]]]
# No fault rule to count or fire: no counters, the seed unused, no rules.
_NO_RULES = (0, "", 0)
# How often one request may find the configuration changed under it before it
# is answered 503 (a storm of control calls).
MAX_RELOADS = 8


class StateUnavailable(Exception):
    """Redis cannot be reached, or failed to answer: the mock cannot answer from its state."""


class Stale(Exception):
    """The configuration changed since this process read it; it has reloaded: start again."""


class _InService(Exception):
    """The scenario to install is the one in service already (``install_unless_serving``)."""


class SharedState:
    """A runtime's state in Redis at ``url`` (``redis://host:port/db``).

    Connections are made on first use in the event loop that uses them, so a
    process may ``open`` in one loop (at start, before serving or forking) and
    serve in another.
    """

    def __init__(self, url: str, runtime: Runtime, prefix: str = PREFIX) -> None:
        self.url = url
        self.runtime = runtime
        # Every key of this mock starts with it (a tenant's: ``mockstore.shared.tenants``).
        self.prefix = prefix
        self.generation_key = prefix + "gen"
        self.config_key = prefix + "config"
        self.generation = ""
        self.epoch = ""
        self.digest = ""
        self.clock_moves_back = 0
        self._client: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._request: Any = None
        self._control: Any = None
        self._reloading: asyncio.Lock | None = None
        self._sweeps: set[asyncio.Task[None]] = set()
        # The process's ``JournalSharing`` (``mockstore.shared.journal``), once its app runs one.
        self.journal: Any = None

    # -- connection ----------------------------------------------------------

    def client(self) -> Any:
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            import redis.asyncio as redis
            from redis.asyncio.retry import Retry
            from redis.backoff import NoBackoff

            # No retries: a request finds Redis gone at once and is answered 503;
            # the next one connects again (the pool reconnects by itself).
            # A request waits for a connection rather than fail when all are busy.
            pool = redis.BlockingConnectionPool.from_url(
                self.url,
                socket_connect_timeout=2,
                socket_timeout=5,
                retry=Retry(NoBackoff(), 0),
                max_connections=64,
                timeout=5,
            )
            self._client = redis.Redis(connection_pool=pool)
            self._loop = loop
            # The request script's own line (``channel``); redis-py's for a URL it cannot take.
            self._request = channel_for(self.url, REQUEST) or ScriptBatcher(
                self._client, self._client.register_script(REQUEST)
            )
            self._control = self._client.register_script(CONTROL)
            self._reloading = asyncio.Lock()
        return self._client

    async def close(self) -> None:
        """Close this loop's connections (before the loop ends, or the process forks)."""
        client, self._client, self._loop = self._client, None, None
        for task in self._sweeps:
            task.cancel()
        if isinstance(self._request, ScriptChannel):
            self._request.close()
        if client is not None:
            await client.aclose()
            await client.connection_pool.disconnect()

    async def _call(self, script_of: str, keys: Sequence[str], args: Sequence[Any]) -> Any:
        import redis.exceptions

        self.client()
        try:
            if script_of == "request":
                return await self._request.call(keys, args)
            return await self._control(keys=keys, args=args)
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError) as exc:
            await self._connections_lost()
            raise StateUnavailable(self._unreachable(exc)) from exc
        except (redis.exceptions.RedisError, ReplyError) as exc:
            raise StateUnavailable(f"the shared state at {self.url} failed: {exc}") from exc

    async def _connections_lost(self) -> None:
        """Close every pooled connection: Redis went away, and a connection made before
        would fail one more request once it is back (each request tries once)."""
        if self._client is not None:
            with contextlib.suppress(Exception):
                await self._client.connection_pool.disconnect()

    def _unreachable(self, exc: BaseException) -> str:
        return f"the shared state at {self.url} cannot be reached: {exc}"

    async def ping(self) -> bool:
        """True when Redis answers (for ``/health``)."""
        try:
            await self.client().ping()
        except Exception:
            await self._connections_lost()
            return False
        return True

    # -- start ---------------------------------------------------------------

    async def open(self) -> None:
        """Join the mock in Redis, or start it there from this process's scenario.

        A process whose scenario is the one in service joins it (its clock, its
        keys, what was created); one with another scenario puts its own in
        service, as ``PUT /__mockstore/scenario`` would. ``StateUnavailable``
        when Redis cannot be reached.
        """
        try:
            await self.client().ping()
        except Exception as exc:
            raise StateUnavailable(f"cannot reach the shared state at {self.url}: {exc}") from None
        fields, generation = await self._read()
        scenario = self.runtime.scenario
        ours = _digest(scenario.source, scenario.file)
        if generation is not None and fields.get("digest") == ours:
            await self._apply(fields, generation)
            return
        if not await self._start_over(expected=generation or "", new_run=False):
            await self.refresh()  # another process started it first: join theirs

    async def _start_over(self, expected: str, new_run: bool) -> bool:
        """Put this process's scenario in service in Redis, from its start (a new epoch)."""
        runtime = self.runtime
        if new_run:
            runtime.reset()
        fields, change = self._start(runtime.state)
        reply = await self._control_call(expected, fields, change)
        if reply is None:  # someone else got there first
            return False
        self._adopt(fields, reply)
        return True

    # -- requests ------------------------------------------------------------

    async def request(
        self,
        bucket: str,
        plan: Plan,
        now: float,
        wall: float,
        operation: Operation | None,
        rules: SharedRules | None = None,
    ) -> list[Any]:
        """Count the caller, number the request, fire ``rules`` and run ``operation``: one
        round trip.

        Returns the script's reply: ``[b"ok", verdict, minute used, day used,
        minute start, day start, retry at, request number, operation's result,
        rules fired]`` (``scripts.REQUEST``). ``Stale`` after reloading,
        ``StateUnavailable`` when Redis is out of reach.
        """
        epoch = self.prefix + self.epoch + ":"
        scenario = self.runtime.state.scenario
        ban = scenario.ban or NO_BAN
        keys = [self.generation_key, epoch + "b:" + bucket, epoch + "r:" + bucket, epoch + "n"]
        first_request = scenario.behaviour.ratelimit_windows == "first_request"
        args: list[Any] = [
            self.generation,
            repr(now),
            repr(wall),
            "f" if first_request else int(now // MINUTE) * MINUTE,
            "f" if first_request else int(now // DAY) * DAY,
            plan.per_minute,
            plan.per_day,
            ban.after_rejections,
            "c" if ban.trigger == "consecutive" else repr(float(ban.within_seconds)),
            repr(float(ban.duration_seconds)),
        ]
        if rules is None:
            args += _NO_RULES
        else:
            keys.extend([epoch + counter for counter in rules.counters])
            args += [len(rules.counters), scenario.seed, rules.rules, *rules.args]
        if operation is None:
            args.append("")
        else:
            keys.extend(operation.keys(epoch))
            args.extend(operation.args)
        reply = await self._call("request", keys, args)
        if reply[0] == b"stale":
            await self.refresh(reply[1].decode())
            raise Stale
        if reply[0] == b"resize":
            raise Resize(int(reply[1]))
        return reply

    # -- the configuration -----------------------------------------------------

    async def _read(self) -> tuple[dict[str, str], str | None]:
        client = self.client()
        try:
            async with client.pipeline(transaction=True) as pipe:
                pipe.get(self.generation_key)
                pipe.hgetall(self.config_key)
                generation, fields = await pipe.execute()
        except Exception as exc:
            await self._connections_lost()
            raise StateUnavailable(self._unreachable(exc)) from exc
        decoded = {k.decode(): v.decode() for k, v in fields.items()}
        return decoded, generation.decode() if generation is not None else None

    async def refresh(self, seen: str | None = None) -> None:
        """Reload the configuration if it changed; start it again if Redis lost it.

        ``seen``: the generation a request found in Redis; when this process has
        reloaded to it meanwhile (another request did), nothing is read again.
        """
        self.client()
        assert self._reloading is not None
        async with self._reloading:
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
                if generation != self.generation:
                    await self._apply(fields, generation)
                return
            raise StateUnavailable("the shared state kept changing while this process read it")

    async def _apply(self, fields: dict[str, str], generation: str) -> None:
        """Make this process's state the configuration's (another process changed it)."""
        runtime = self.runtime
        if fields["digest"] != self.digest:
            from mockstore.scenario import load_scenario

            scenario = await asyncio.to_thread(load_scenario, fields["source"], fields["file"])
            prepared = await asyncio.to_thread(runtime.prepare, scenario)
            replaced = runtime.install(prepared)
            await asyncio.to_thread(release, [replaced])
        elif fields["epoch"] != self.epoch and self.epoch:
            runtime.reset()
        clock = json.loads(fields["clock"])
        moved_back = clock["back"] > self.clock_moves_back and self.epoch == fields["epoch"]
        state = runtime.state
        target = clock["at"]
        wall_now = state.clock.wall()
        if clock.get("real") and state.clock.mode != "manual":
            # Real time: the wall clock itself, in every process (an offset carried
            # over from another process's readings would be off by their gap).
            target = wall_now
        elif state.clock.mode != "manual":
            target += wall_now - clock["wall"]
        if moved_back:
            runtime.move_clock(min(target, state.clock.now()))
        state.clock.set(target, wall_now=wall_now)
        state.keys = KeyRing([ApiKey(*key) for key in json.loads(fields["keys"])])
        state.plans = {**state.scenario.plans, **_plans(json.loads(fields["plans"]))}
        self.generation = generation
        self.epoch = fields["epoch"]
        self.digest = fields["digest"]
        self.clock_moves_back = clock["back"]

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
            async for keys in _pages(client, f"{self.prefix}{epoch}:*"):
                await client.unlink(*keys)
        except Exception as exc:  # the next sweep, or Redis's own eviction, takes the rest
            log.warning("could not sweep epoch %s of the shared state: %s", epoch, exc)

    def _fresh_fields(
        self, scenario: Any, keys: Any, now: float, real_time: bool = False
    ) -> dict[str, str]:
        return {
            "source": scenario.source,
            "file": scenario.file,
            "digest": _digest(scenario.source, scenario.file),
            "clock": self._clock_json(now, self.clock_moves_back, real_time),
            "keys": _keys_json(keys),
            "plans": "{}",
        }

    def _clock_json(self, at: float, back: int, real: bool = False) -> str:
        """The shared clock: ``at`` on it is ``wall`` on the wall clock; ``real``: real time."""
        wall = self.runtime.state.clock.wall()
        return json.dumps({"at": at, "wall": wall, "back": back, "real": real})

    def _preloads(self, scenario: Any, now: float) -> list[list[str]]:
        """The scenario's keys that start with allowance spent (``used:``)."""
        first_request = scenario.behaviour.ratelimit_windows == "first_request"
        return [
            _preload(key_bucket(spec.key), now, spec.used_minute, spec.used_day, first_request)
            for spec in scenario.keys
            if spec.used_minute or spec.used_day
        ]

    async def _control_call(
        self, expected: str, fields: dict[str, str], change: dict[str, Any]
    ) -> list[Any] | None:
        """Run a control change if the generation is still ``expected``; None if it is not."""
        change = {"prefix_base": self.prefix, **change}
        reply = await self._call(
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

        def build() -> tuple[dict[str, str], dict[str, Any]]:
            # Reset here first: the fresh clock and keys are what every process takes.
            runtime.reset()
            return self._start(runtime.state)

        fields, reply = await self._change(build)
        self._adopt(fields, reply)

    async def install(self, prepared: Prepared) -> Prepared:
        """Put a prepared scenario in service everywhere; returns the state it replaced."""
        fields, reply = await self._change(lambda: self._start(prepared.state))
        replaced = self.runtime.install(prepared)
        self._adopt(fields, reply)
        return replaced

    async def install_unless_serving(self, prepared: Prepared) -> Prepared | None:
        """``install``, unless the scenario in service is this one already (same file, same
        text): then None, and nothing changes. Decided against the configuration the
        change is made on, so of replicas that each see one edit (``--watch`` on a
        ConfigMap) the first puts it in service, once, and the others join it."""
        digest = _digest(prepared.scenario.source, prepared.scenario.file)

        def build() -> tuple[dict[str, str], dict[str, Any]]:
            if self.digest == digest:  # read again just before (``_change``)
                raise _InService
            return self._start(prepared.state)

        try:
            fields, reply = await self._change(build)
        except _InService:
            return None
        replaced = self.runtime.install(prepared)
        self._adopt(fields, reply)
        return replaced

    def _start(self, state: Any) -> tuple[dict[str, str], dict[str, Any]]:
        """A new epoch that starts ``state`` (a reset's, or a new scenario's)."""
        scenario = state.scenario
        now = state.clock.now()
        # A clock on real time (no start chosen, never moved) is the wall clock everywhere.
        real_time = state.clock.mode != "manual" and state.clock.wall_offset() == 0.0
        fields = self._fresh_fields(scenario, state.keys, now, real_time)
        return fields, {"epoch": True, "preload": self._preloads(scenario, now)}

    async def move_clock(self, when: float) -> None:
        runtime = self.runtime

        def build() -> tuple[dict[str, str], dict[str, Any]]:
            now = runtime.state.clock.now()
            change: dict[str, Any] = {}
            if when < now:
                change["rebase"] = {"now": repr(now), "to": repr(when)}
            back = self.clock_moves_back + (1 if when < now else 0)
            return {"clock": self._clock_json(when, back)}, change

        fields, reply = await self._change(build)
        runtime.move_clock(when)
        self._adopt(fields, reply)

    async def issue_key(self, key: ApiKey, plan: Plan, used: dict[str, int]) -> None:
        def build() -> tuple[dict[str, str], dict[str, Any]]:
            state = self.runtime.state
            plans = {**state.plans, plan.name: plan}
            fields = {
                "keys": _keys_json([*(k for k in state.keys if k.key != key.key), key]),
                "plans": _custom_plans_json(state.scenario, plans),
            }
            change: dict[str, Any] = {}
            if used:
                minute = used.get("minute", 0)
                first_request = state.scenario.behaviour.ratelimit_windows == "first_request"
                day = used.get("day", minute)
                change["preload"] = [
                    _preload(key_bucket(key.key), state.clock.now(), minute, day, first_request)
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
            return {"keys": _keys_json([k for k in keys if k.key != key])}, {
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
        keys = Operation("list", group, None, []).keys(self.prefix + self.epoch + ":")
        client = self.client()
        try:
            ids = await client.lrange(keys[3], 0, -1)
            return await client.hmget(keys[2], ids) if ids else []
        except Exception as exc:
            raise StateUnavailable(self._unreachable(exc)) from exc

    async def usage(self, bucket_id: str, plan: Plan, now: float) -> Usage:
        """A bucket's standing (the control API's keys), read without counting anything."""
        epoch = self.prefix + self.epoch + ":"
        client = self.client()
        try:
            async with client.pipeline(transaction=True) as pipe:
                pipe.hmget(epoch + "b:" + bucket_id, "ms", "mu", "ds", "du", "bu")
                pipe.llen(epoch + "r:" + bucket_id)
                (ms, mu, ds, du, bu), rejections = await pipe.execute()
        except Exception as exc:
            raise StateUnavailable(self._unreachable(exc)) from exc
        limiter = self.runtime.state.limiter
        if ms is None:
            return limiter.standing(None, plan, now)
        bucket = Bucket()
        start = float if limiter._fractional else int
        bucket.minute_start = start(float(ms))  # type: ignore[assignment]
        bucket.minute_used = int(float(mu))
        bucket.day_start = start(float(ds))  # type: ignore[assignment]
        bucket.day_used = int(float(du))
        bucket.minute_end = bucket.minute_start + MINUTE
        bucket.day_end = bucket.day_start + DAY
        bucket.banned_until = float(bu) if bu is not None else None
        bucket.rejections.extend([now] * rejections)  # only their number is shown
        return limiter.standing(bucket, plan, now)


class Operation:
    """A store operation for the request script: its keys (after the epoch's) and arguments.

    ``ordered``: the scenario's listings page (``mockstore.pages``), so the store keeps
    its created pets' members too (two more keys).
    """

    __slots__ = ("args", "group", "kind", "ordered", "query", "status")

    def __init__(
        self,
        kind: str,
        group: str | None,
        status: str | None,
        args: list[Any],
        ordered: bool = False,
    ) -> None:
        self.kind = kind
        self.group = group
        self.status = status
        self.args = [kind, *args]
        self.ordered = ordered
        self.query: Any = None  # a page's (mockstore.pages.Query)

    def keys(self, epoch: str) -> list[str]:
        group = self.group or ""
        store = f"{epoch}s:{len(group)}:{group}:"
        ids = store + "ids"
        keys = [
            store + "next",
            store + "bytes",
            store + "pets",
            ids,
            ids + ":" + self.status if self.status else ids,
        ]
        if self.ordered:
            members = store + "ord"
            keys += [members, members + ":" + self.status if self.status else members]
        return keys


class Resize(Exception):
    """A page's search window was sized for fewer created pets than there are (``size``)."""

    def __init__(self, size: int) -> None:
        self.size = size


def decision_of(limiter: RateLimiter, reply: list[Any], plan: Plan, now: float) -> Decision:
    """The limiter's ``Decision`` from the request script's reply, figures as in memory."""
    bucket = Bucket()
    bucket.minute_used = int(reply[2])
    bucket.day_used = int(reply[3])
    # Windows from a first request start at any instant (a float, as in memory).
    start = float if limiter._fractional else int
    bucket.minute_start = start(float(reply[4]))  # type: ignore[assignment]
    bucket.day_start = start(float(reply[5]))  # type: ignore[assignment]
    bucket.minute_end = bucket.minute_start + MINUTE
    bucket.day_end = bucket.day_start + DAY
    verdict = reply[1].decode()
    if verdict == "allowed":
        retry_at: float = 0.0
    elif verdict == "key_banned":
        retry_at = float(reply[6])
    elif plan.per_day - bucket.day_used <= 0:
        retry_at = bucket.day_start + DAY
    else:
        retry_at = bucket.minute_start + MINUTE
    return limiter._decision(verdict, plan, bucket, now, retry_at)  # type: ignore[arg-type]


def _preload(
    bucket: str, now: float, minute_used: int, day_used: int, first_request: bool
) -> list[str]:
    """A bucket that starts with allowance spent, its windows begun at ``now`` (as in memory)."""
    if first_request:
        minute_start = day_start = repr(now)
    else:
        minute_start, day_start = str(int(now // MINUTE) * MINUTE), str(int(now // DAY) * DAY)
    return [bucket, minute_start, str(minute_used), day_start, str(max(day_used, minute_used))]


def _digest(source: str, file: str) -> str:
    return hashlib.sha256(f"{file}\0{source}".encode()).hexdigest()


def _keys_json(keys: Iterable[ApiKey]) -> str:
    return json.dumps([[k.key, k.plan, k.tenant] for k in keys])


def _custom_plans_json(scenario: Any, plans: dict[str, Plan]) -> str:
    """The plans beyond the scenario's (a key issued with a plan of its own)."""
    return json.dumps(
        {
            name: [plan.per_minute, plan.per_day]
            for name, plan in plans.items()
            if scenario.plans.get(name) != plan
        }
    )


def _plans(raw: dict[str, list[int]]) -> dict[str, Plan]:
    return {name: Plan(name, minute, day) for name, (minute, day) in raw.items()}


async def _pages(client: Any, pattern: str):  # type: ignore[no-untyped-def]
    cursor = 0
    while True:
        cursor, keys = await client.scan(cursor, match=pattern, count=1000)
        if keys:
            yield keys
        if cursor == 0:
            return
