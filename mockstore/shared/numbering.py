"""A request number from Redis for an answer made without the request script.

Every answer's request id is a function of its number (``state.RequestIds``);
with a shared state the request script numbers each request in Redis, so the
processes together hand out the ids one process would. An answer a scenario's
HTTP semantics make before the rate limiter (a CORS preflight, a redirect, a
maintenance refusal at the gateway: ``mockstore.shaping``) never runs that
script, and takes its number here: the same counter, after the same check
that this process serves the configuration in service.
"""

from __future__ import annotations

from typing import Any
from weakref import WeakKeyDictionary

from mockstore.shared.backend import SharedState
from mockstore.shared.deadline import Stale, StateUnavailable

# KEYS: 1 generation, 2 the epoch's request number (the request script's KEYS[4]).
# ARGV: 1 the generation this process serves.
NUMBER = r"""
local generation = redis.call('GET', KEYS[1])
if generation ~= ARGV[1] then return {'stale', generation or ''} end
return {'ok', redis.call('INCR', KEYS[2])}
"""

_scripts: WeakKeyDictionary[Any, Any] = WeakKeyDictionary()


def number_key(shared: SharedState) -> str:
    """The key of the epoch's request number (as ``SharedState.request`` names it)."""
    return shared.prefix + shared.epoch + ":n"


async def next_number(shared: SharedState) -> int:
    """The next request number; ``Stale`` after reloading a changed configuration,
    ``StateUnavailable`` when Redis cannot be reached."""
    client = shared.client()
    script = _scripts.get(client)
    if script is None:
        script = _scripts[client] = client.register_script(NUMBER)
    try:
        reply = await script(
            keys=[shared.generation_key, number_key(shared)], args=[shared.generation]
        )
    except Exception as exc:
        raise StateUnavailable(
            f"the shared state at {shared.url} cannot be reached: {exc}"
        ) from exc
    if reply[0] == b"stale":
        await shared.refresh(reply[1].decode())
        raise Stale
    return int(reply[1])


__all__ = ["NUMBER", "next_number", "number_key"]
