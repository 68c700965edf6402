"""One process's line to the mock's Redis: its connections, its scripts, and what a failure means.

``SharedState`` (``mockstore.shared.backend``) is a ``Connection``; so are its
helpers' callers (the journal, the tenants' registry), which reach Redis
through it. Connections are made on first use in the event loop that uses
them, so a process may open in one loop (at start, before serving or forking)
and serve in another. Every failure to reach Redis, and every reply that says
a script met a value it did not write, is ``StateUnavailable``: one request's
problem, answered 503, never a 500.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from typing import Any

from mockstore.shared.batching import ScriptBatcher
from mockstore.shared.channel import ReplyError, ScriptChannel, channel_for
from mockstore.shared.deadline import StateUnavailable, bounded
from mockstore.shared.scripts import CONTROL, GENERAL_REQUEST, REFUND, REQUEST

log = logging.getLogger("mockstore.shared")

# What the request script's error says of a value it dropped (``scripts.REQUEST``).
BAD_VALUE = "mockstore-bad-value"


class Connection:
    """Redis at ``url`` (``redis://host:port/db``), reached from the running event loop."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._client: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._request: Any = None
        # The request script of a general limiter (``mockstore.limiter``), made on first use.
        self._general: Any = None
        self._control: Any = None
        self._refund: Any = None
        # This loop's lock for work that must not run twice at once (a reload).
        self.reloading: asyncio.Lock | None = None

    def client(self) -> Any:
        """This event loop's redis-py client (made on first use in the loop)."""
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
            self._refund = self._client.register_script(REFUND)
            self._general = None
            self.reloading = asyncio.Lock()
        return self._client

    def _general_line(self) -> Any:
        """The general request script's line to Redis (this loop's, made on first use)."""
        if self._general is None:
            self._general = channel_for(self.url, GENERAL_REQUEST) or ScriptBatcher(
                self._client, self._client.register_script(GENERAL_REQUEST)
            )
        return self._general

    async def close(self) -> None:
        """Close this loop's connections (before the loop ends, or the process forks)."""
        client, self._client, self._loop = self._client, None, None
        if isinstance(self._request, ScriptChannel):
            self._request.close()
        if isinstance(self._general, ScriptChannel):
            self._general.close()
        self._general = None
        if client is not None:
            await client.aclose()
            await client.connection_pool.disconnect()

    async def call(self, script_of: str, keys: Sequence[str], args: Sequence[Any]) -> Any:
        """Run the ``"request"`` script (``"general"``: a general limiter's) or the
        ``"control"`` one; its reply."""
        import redis.exceptions

        self.client()
        try:
            if script_of == "request":
                return await self._request.call(keys, args)
            if script_of == "general":
                return await self._general_line().call(keys, args)
            if script_of == "refund":
                return await bounded(self._refund(keys=keys, args=args))
            return await bounded(self._control(keys=keys, args=args))
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError) as exc:
            await self.connections_lost()
            raise StateUnavailable(self.unreachable(exc)) from exc
        except (redis.exceptions.RedisError, ReplyError) as exc:
            if BAD_VALUE in str(exc):
                # A value no script wrote: the script dropped it; this request is 503.
                log.warning("the shared state at %s held a value no mockstore wrote: %s",
                            self.url, str(exc)[:300])  # fmt: skip
            raise StateUnavailable(f"the shared state at {self.url} failed: {exc}") from exc

    async def get(self, key: str) -> Any:
        """The string at ``key`` (None: there is none), within the deadline in force."""
        try:
            return await bounded(self.client().get(key))
        except StateUnavailable:
            raise
        except Exception as exc:
            await self.connections_lost()
            raise StateUnavailable(self.unreachable(exc)) from exc

    async def connections_lost(self) -> None:
        """Close every pooled connection: Redis went away, and a connection made before
        would fail one more request once it is back (each request tries once)."""
        if self._client is not None:
            with contextlib.suppress(Exception):
                await self._client.connection_pool.disconnect()

    def unreachable(self, exc: BaseException) -> str:
        """What a request answered 503 says when Redis could not be reached."""
        return f"the shared state at {self.url} cannot be reached: {exc}"

    async def ping(self) -> bool:
        """True when Redis answers (for ``/health``)."""
        try:
            await bounded(self.client().ping())
        except Exception:
            await self.connections_lost()
            return False
        return True
