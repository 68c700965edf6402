"""How long a control call may wait for Redis, whatever Redis does (a slow or sleeping one).

Each of a control call's round trips to Redis waits at most the pool's socket
timeout (5 s), and a call makes several (the configuration, a barrier, the
change): with Redis slow, ``/health`` and control calls waited 8 to 15 s. The
control API sets one deadline for the whole call (``within``), and every round
trip made under it (``bounded``) gives up once it passes: the call is answered
``503 state_unavailable`` within ``CONTROL_SECONDS``, under the 5 s the docs
promise, and a connection given up on is closed (redis-py drops a connection
whose command was cancelled, so no reply is read by the wrong caller).
Outside a control call (the API's requests, background tasks) nothing changes.

A task copies the context it is started in, so a task a control call starts
(a tenant it makes or joins runs its journal's shipping in the background)
would inherit the call's deadline and, once it passed, fail every round trip
for good: work that outlives the call starts ``outside_any_deadline()``.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import time
from collections.abc import Awaitable, Iterator
from contextvars import ContextVar
from typing import TypeVar

# What a control call may spend waiting for Redis, in all.
CONTROL_SECONDS = 4.0


class StateUnavailable(Exception):
    """Redis cannot be reached, or failed to answer: the mock cannot answer from its state.

    (Defined here, where the deadline raises it; ``mockstore.shared.backend`` exports it.)
    """


class Stale(Exception):
    """The configuration changed since this process read it; it has reloaded: start again.

    (Defined here with ``StateUnavailable``, so an in-memory server's request path can
    name both without importing the Redis backend; ``backend`` exports it.)
    """


_DEADLINE: ContextVar[float | None] = ContextVar("mockstore_shared_deadline", default=None)
T = TypeVar("T")


@contextlib.contextmanager
def within(seconds: float = CONTROL_SECONDS) -> Iterator[None]:
    """Every ``bounded`` round trip in this context ends within ``seconds`` of now."""
    token = _DEADLINE.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def outside_any_deadline() -> contextvars.Context:
    """A copy of the current context with no deadline in force (for a task that outlives
    the call that starts it: ``asyncio.create_task(..., context=outside_any_deadline())``)."""
    context = contextvars.copy_context()
    context.run(_DEADLINE.set, None)
    return context


async def bounded(awaitable: Awaitable[T]) -> T:
    """``await awaitable``, given up (``StateUnavailable``) once the deadline in force passes."""
    end = _DEADLINE.get()
    if end is None:
        return await awaitable
    left = end - time.monotonic()
    try:
        if left <= 0:
            raise TimeoutError
        return await asyncio.wait_for(awaitable, left)
    except TimeoutError:
        if asyncio.iscoroutine(awaitable):
            awaitable.close()  # never started: nothing to wait for
        raise StateUnavailable(
            f"the shared state did not answer within {CONTROL_SECONDS:g} s"
        ) from None


def time_left() -> float | None:
    """Seconds left before the deadline in force (None: no deadline)."""
    end = _DEADLINE.get()
    return None if end is None else end - time.monotonic()
