"""Tenants kept in Redis: every process knows every tenant, and each tenant's state is shared.

A tenant (``mockstore.tenants``) is a whole mock of its own; with a shared
state each tenant's mock keeps its state in Redis like the server's, under a
prefix of its own, and the registry of tenants is in Redis too::

    mockstore:tenants                 hash: tenant id -> its incarnation
    mockstore:tenants:serial          the last incarnation handed out
    mockstore:tenants:auto            the last n of an id chosen as ``tenant-<n>``
    mockstore:t:<id>:<incarnation>:   the tenant's mock: the keys a server's mock has
                                      under ``mockstore:`` (gen, config, epochs, journals)

An *incarnation* is a number no tenant had before: a tenant deleted and made
again under the same id starts afresh under a new prefix, so the sweep of the
old one's keys (off the request path) never touches the new one's.

Creating a tenant writes its mock's state under a fresh incarnation first (no
process knows of it yet), then registers it in one atomic step that checks the
id is free and the limit (``MAX_TENANTS``) is not reached, across every
process. Deleting it unregisters it and removes its generation and
configuration in one atomic step: a process that still holds the tenant finds
its generation gone on the tenant's next request (the request script checks it
anyway) and answers 404 (``TenantGone``), or follows the tenant if it was made
again meanwhile, as after a reset.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from mockstore.shared.backend import (
    MAX_RELOADS,
    PREFIX,
    SharedState,
    StateUnavailable,
    key_pages,
)
from mockstore.shared.config import digest_of, is_digest, whole
from mockstore.shared.deadline import bounded
from mockstore.state import Runtime
from mockstore.urls import TENANT_ID

log = logging.getLogger("mockstore.shared")

TENANTS = PREFIX + "tenants"
SERIAL = PREFIX + "tenants:serial"
AUTO = PREFIX + "tenants:auto"
TENANT_PREFIX = PREFIX + "t:"

# KEYS: 1 the registry. ARGV: 1 tenant id, 2 its incarnation, 3 the limit.
# Returns {'ok'}, {'exists'} or {'full', ids...}.
REGISTER = r"""
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind ~= 'hash' and kind ~= 'none' then redis.call('DEL', KEYS[1]) end
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then return {'exists'} end
if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[3]) then
  local full = redis.call('HKEYS', KEYS[1])
  table.insert(full, 1, 'full')
  return full
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return {'ok'}
"""

# KEYS: 1 the registry. ARGV: 1 tenant id, 2 ``mockstore:t:``.
# Unregisters the tenant and removes what makes it answer (its generation and
# configuration); the rest of its keys are swept afterwards. Returns its incarnation, or nil.
UNREGISTER = r"""
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind ~= 'hash' and kind ~= 'none' then redis.call('DEL', KEYS[1]) end
local incarnation = redis.call('HGET', KEYS[1], ARGV[1])
if not incarnation then return nil end
redis.call('HDEL', KEYS[1], ARGV[1])
local prefix = ARGV[2] .. ARGV[1] .. ':' .. incarnation .. ':'
redis.call('DEL', prefix .. 'gen', prefix .. 'config')
return incarnation
"""


def tenant_prefix(tenant_id: str, incarnation: int) -> str:
    """Where a tenant's mock keeps its state: ``mockstore:t:<id>:<incarnation>:``."""
    return f"{TENANT_PREFIX}{tenant_id}:{incarnation}:"


class TenantGone(StateUnavailable):
    """The tenant was deleted (through this process or another): its requests are 404."""

    def __init__(self, tenant_id: str) -> None:
        super().__init__(f"no tenant {tenant_id!r} on this server")
        self.tenant_id = tenant_id


class TenantState(SharedState):
    """A tenant's mock's state in Redis, under the tenant's prefix.

    Unlike a server's, a tenant's state is never started again from this
    process's scenario: when its generation is gone, the tenant was deleted
    (``TenantGone``) or made again under a new incarnation (this state follows it).
    """

    def __init__(self, url: str, runtime: Runtime, tenant_id: str, incarnation: int) -> None:
        super().__init__(url, runtime, tenant_prefix(tenant_id, incarnation))
        self.tenant_id = tenant_id
        self.incarnation = incarnation
        self.gone = False
        self.first_run = "tenant"
        # The runtime was built on this scenario (the server's): joining a tenant
        # that still serves it reads no scenario again.
        self.digest = digest_of(runtime.scenario.source, runtime.scenario.file)

    async def create(self) -> None:
        """Write this tenant's mock to Redis from this process's (its first: a new incarnation)."""
        if not await self._start_over(expected="", new_run=False):
            raise StateUnavailable(f"tenant {self.tenant_id!r} was made twice at once")

    async def join(self) -> None:
        """Take the tenant's mock as Redis has it (another process made it)."""
        await self.refresh()

    async def refresh(self, seen: str | None = None) -> None:
        if self.gone:
            raise TenantGone(self.tenant_id)
        await super().refresh(seen)

    async def _read(self) -> tuple[dict[str, str], str | None]:
        """The tenant's configuration, as ``SharedState``'s; ``TenantGone`` when it was deleted.

        No generation means the tenant was deleted (or Redis lost everything),
        never that this process should start it again from its own scenario;
        made again since under the same id, this state follows the new one.
        """
        for _ in range(MAX_RELOADS):
            fields, generation = await super()._read()
            if generation is not None:
                return fields, generation
            incarnation = await self._registered()
            if incarnation is None or incarnation <= self.incarnation:
                self.gone = True
                raise TenantGone(self.tenant_id)
            self._follow(incarnation)
        raise StateUnavailable(f"tenant {self.tenant_id!r} kept being made again")

    def _follow(self, incarnation: int) -> None:
        """Be the tenant made again under this id: a fresh mock, as after a reset."""
        self.incarnation = incarnation
        self.prefix = tenant_prefix(self.tenant_id, incarnation)
        self.generation_key = self.prefix + "gen"
        self.config_key = self.prefix + "config"
        self.generation = self.epoch = ""
        self.clock_moves_back = 0
        self.runtime.reset()

    async def _registered(self) -> int | None:
        try:
            found = await self.client().hget(TENANTS, self.tenant_id)
        except Exception as exc:
            await self.connections_lost()
            raise StateUnavailable(self.unreachable(exc)) from exc
        return whole(found) if found is not None else None


class SharedTenants:
    """The registry of tenants in Redis, reached through the server's ``SharedState``."""

    def __init__(self, shared: SharedState) -> None:
        self.shared = shared
        self._scripts_of: Any = None
        self._scripts: dict[str, Any] = {}

    @property
    def url(self) -> str:
        return self.shared.url

    def _script(self, source: str) -> Any:
        """A registered script on this loop's client (EVALSHA, loaded on first use)."""
        client = self.shared.client()
        if self._scripts_of is not client:
            self._scripts_of, self._scripts = client, {}
        script = self._scripts.get(source)
        if script is None:
            script = self._scripts[source] = client.register_script(source)
        return script

    async def _run(self, call: Callable[[Any], Awaitable[Any]], read: bool = False) -> Any:
        """``call(client)``; a read is tried once more on a fresh connection when the one
        it got was made before Redis went away (it cannot have changed anything)."""
        import redis.exceptions

        lost = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError)
        for attempt in range(2 if read else 1):
            try:
                return await bounded(call(self.shared.client()))
            except lost as exc:
                await self.shared.connections_lost()
                if attempt or not read:
                    raise StateUnavailable(self.shared.unreachable(exc)) from exc
            except redis.exceptions.RedisError as exc:
                raise StateUnavailable(f"the shared state at {self.url} failed: {exc}") from exc

    async def listing(self) -> dict[str, int]:
        """Every tenant's id and incarnation (an entry no process wrote is skipped, said)."""
        import redis.exceptions

        try:
            found = await self._run(lambda client: client.hgetall(TENANTS), read=True)
        except StateUnavailable as exc:
            if not isinstance(exc.__cause__, redis.exceptions.ResponseError):
                raise
            found = {}  # not a hash: replaced by the next create (``REGISTER``)
            log.warning("the tenant registry at %s is not one mockstore wrote", self.url)
        tenants = {}
        for name, value in found.items():
            tenant_id = name.decode("utf-8", "replace")
            incarnation = whole(value)
            if TENANT_ID.fullmatch(tenant_id) and incarnation is not None:
                tenants[tenant_id] = incarnation
            else:
                log.warning(
                    "the tenant registry at %s holds an entry no mockstore wrote (%r: %r): skipped",
                    self.url,
                    name[:64],
                    value[:64],
                )
        return tenants

    async def incarnation(self, tenant_id: str) -> int | None:
        """The tenant's incarnation, or None when there is no such tenant (or not a valid one)."""
        try:
            found = await self._run(lambda client: client.hget(TENANTS, tenant_id), read=True)
        except StateUnavailable as exc:
            import redis.exceptions

            if isinstance(exc.__cause__, redis.exceptions.ResponseError):
                return None
            raise
        return whole(found) if found is not None else None

    async def new_incarnation(self) -> int:
        return await self._counter(SERIAL)

    async def next_auto(self) -> int:
        """The n of the next id to try as ``tenant-<n>``."""
        return await self._counter(AUTO)

    async def _counter(self, key: str) -> int:
        """The next number of a counter; one no process wrote starts again from Redis's
        clock in ms (above any number handed out before: an incarnation is never reused)."""
        import redis.exceptions

        for _ in range(2):
            try:
                number = await self._run(lambda client: client.incr(key))
            except StateUnavailable as exc:
                if not isinstance(exc.__cause__, redis.exceptions.ResponseError):
                    raise
                number = None
            if isinstance(number, int) and 0 < number <= 2**53:
                return number
            log.warning("the counter %s at %s was not valid: started again", key, self.url)
            seconds, micros = await self._run(lambda client: client.time())
            fresh = int(seconds) * 1000 + int(micros) // 1000
            await self._run(lambda client, fresh=fresh: client.set(key, fresh))
        raise StateUnavailable(f"the counter {key} could not be read")

    async def register(self, tenant_id: str, incarnation: int, limit: int) -> list[str] | None:
        """Register a tenant atomically: None when done, else why not (``exists``, or
        ``full`` followed by the ids there are)."""
        args = [tenant_id, incarnation, limit]
        reply = await self._run(lambda client: self._script(REGISTER)(keys=[TENANTS], args=args))
        answer = [part.decode() for part in reply]
        return None if answer == ["ok"] else answer

    async def unregister(self, tenant_id: str) -> int | None:
        """Unregister a tenant atomically (it stops answering everywhere); its incarnation."""
        args = [tenant_id, TENANT_PREFIX]
        reply = await self._run(lambda client: self._script(UNREGISTER)(keys=[TENANTS], args=args))
        return whole(reply) if reply is not None else None

    async def sweep(self, tenant_id: str, incarnation: int) -> None:
        """Delete what a deleted tenant left in Redis, a page at a time (off the request path)."""
        client = self.shared.client()
        try:
            async for keys in key_pages(client, tenant_prefix(tenant_id, incarnation) + "*"):
                await client.unlink(*keys)
        except Exception as exc:  # its journal streams expire by themselves; the rest stays
            log.warning("could not sweep tenant %r from the shared state: %s", tenant_id, exc)

    async def digests(self, tenants: dict[str, int]) -> dict[str, str | None]:
        """The digest of each tenant's scenario in service, in one round trip (None: none
        there, or not one a process wrote)."""
        if not tenants:
            return {}
        ids = list(tenants)

        async def read(client: Any) -> list[Any]:
            async with client.pipeline(transaction=False) as pipe:
                for tenant_id in ids:
                    pipe.hget(tenant_prefix(tenant_id, tenants[tenant_id]) + "config", "digest")
                return await pipe.execute(raise_on_error=False)

        found = await self._run(read, read=True)
        digests: dict[str, str | None] = {}
        for tenant_id, value in zip(ids, found, strict=True):
            text = value.decode("ascii", "replace") if isinstance(value, bytes) else None
            digests[tenant_id] = text if text is not None and is_digest(text) else None
        return digests
