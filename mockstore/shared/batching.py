"""One write to Redis for every request that reached it in the same turn of the event loop.

Each API request makes one script call (one round trip, ``backend.REQUEST``);
under concurrent load many of them start within one turn of the loop. Sent
one by one, each costs a write, a wait and a read of its own on the Redis
client. ``ScriptBatcher`` holds the calls of one turn and sends them as one
pipeline (not a transaction: each script is atomic on its own, and calls of
one turn are concurrent requests, which have no order to keep), then hands
each request its own reply or its own error. A request still waits for one
round trip, never for another request's.

The request script takes its own lean line (``channel``) wherever it can;
this is its way through redis-py for a URL only redis-py can honour (TLS,
options in the query string).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any


class ScriptBatcher:
    """Script calls (``script``: a registered redis-py ``AsyncScript``) batched per loop turn."""

    def __init__(self, client: Any, script: Any) -> None:
        self.client = client
        self.script = script
        self._waiting: list[tuple[Sequence[Any], Sequence[Any], asyncio.Future[Any]]] = []
        self._sending: set[asyncio.Task[None]] = set()

    async def call(self, keys: Sequence[Any], args: Sequence[Any]) -> Any:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self._waiting.append((keys, args, future))
        if len(self._waiting) == 1:
            loop.call_soon(self._flush)
        return await future

    def _flush(self) -> None:
        batch, self._waiting = self._waiting, []
        task = asyncio.get_running_loop().create_task(self._send(batch))
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    async def _send(
        self, batch: list[tuple[Sequence[Any], Sequence[Any], asyncio.Future[Any]]]
    ) -> None:
        from redis.exceptions import NoScriptError

        try:
            if len(batch) == 1:
                keys, args, _ = batch[0]
                replies: list[Any] = [await self._one(keys, args)]
            else:
                pipe = self.client.pipeline(transaction=False)
                for keys, args, _ in batch:
                    pipe.evalsha(self.script.sha, len(keys), *keys, *args)
                replies = await pipe.execute(raise_on_error=False)
        except Exception as exc:  # the connection: every call of the batch failed alike
            for _, _, future in batch:
                if not future.done():
                    future.set_exception(exc)
            return
        for (keys, args, future), reply in zip(batch, replies, strict=True):
            if isinstance(reply, NoScriptError):  # Redis restarted: load it, and again
                try:
                    reply = await self._one(keys, args)
                except Exception as exc:
                    reply = exc
            if future.done():
                continue
            if isinstance(reply, Exception):
                future.set_exception(reply)
            else:
                future.set_result(reply)

    async def _one(self, keys: Sequence[Any], args: Sequence[Any]) -> Any:
        return await self.script(keys=keys, args=args)
