"""When each created pet was created, to the second, kept in Redis for Last-Modified.

In memory a store's creation seconds are change points (``conditional.CreationSeconds``):
the first id created in each second. With a shared state the pets are created
in Redis, by any process, so their change points are there too: a sorted set per
store of the epoch, each member ``<first id>:<second>`` scored by its id. A
pet's second is that of the member with the greatest id at or below its own;
the scenario's own pets, below every member, date from ``pets_modified``.

A create is noted after the request script made it, in a second call (only for
a scenario whose reads carry Last-Modified): a member is added only when the
second differs from the one it would otherwise fall under, so two processes
noting pets of the same second, in any order, agree. Should that call fail,
the answer stands (the pet exists) and the pet dates from the change point
before it: a validator a little older than the pet, never a newer one.
"""

from __future__ import annotations

import math
from typing import Any
from weakref import WeakKeyDictionary

from mockstore.shared.backend import SharedState
from mockstore.shared.deadline import StateUnavailable
from mockstore.shared.store import Operation

# KEYS: 1 the store's creation seconds. ARGV: 1 the pet's id, 2 its second.
NOTE = r"""
local last = redis.call('ZREVRANGEBYSCORE', KEYS[1], ARGV[1], '-inf', 'LIMIT', 0, 1)
if last[1] and string.match(last[1], ':(%-?%d+)$') == ARGV[2] then return 0 end
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[1] .. ':' .. ARGV[2])
return 1
"""
# KEYS: 1 the store's creation seconds. ARGV: the pets' ids. Returns each one's second ('' if
# below every member).
SECONDS = r"""
local found = {}
for i = 1, #ARGV do
  local last = redis.call('ZREVRANGEBYSCORE', KEYS[1], ARGV[i], '-inf', 'LIMIT', 0, 1)
  if last[1] then found[i] = string.match(last[1], ':(%-?%d+)$') else found[i] = '' end
end
return found
"""

_scripts: WeakKeyDictionary[Any, tuple[Any, Any]] = WeakKeyDictionary()


def seconds_key(shared: SharedState, group: str | None) -> str:
    """The key of one store's creation seconds, beside the store's own keys."""
    epoch = shared.prefix + shared.epoch + ":"
    store_next = Operation("list", group, None, []).keys(epoch)[0]
    return store_next.removesuffix("next") + "created"


def _loaded(shared: SharedState) -> tuple[Any, Any]:
    client = shared.client()
    scripts = _scripts.get(client)
    if scripts is None:
        scripts = _scripts[client] = (
            client.register_script(NOTE),
            client.register_script(SECONDS),
        )
    return scripts


async def note(shared: SharedState, group: str | None, pet_id: int, now: float) -> None:
    """Pet ``pet_id`` was created at ``now`` (best effort: see the module docstring)."""
    script, _ = _loaded(shared)
    try:
        await script(keys=[seconds_key(shared, group)], args=[pet_id, math.floor(now)])
    except Exception:
        return


async def seconds(
    shared: SharedState, group: str | None, ids: list[int], pets_modified: float
) -> list[int]:
    """The creation second of each pet of ``ids``; ``StateUnavailable`` if Redis is gone."""
    if not ids:
        return []
    _, script = _loaded(shared)
    try:
        found = await script(keys=[seconds_key(shared, group)], args=ids)
    except Exception as exc:
        raise StateUnavailable(
            f"the shared state at {shared.url} cannot be reached: {exc}"
        ) from exc
    base = math.floor(pets_modified)
    return [_second(value, base) for value in found]


def _second(value: Any, base: int) -> int:
    """A second read back from Redis (input like any other: not a number is no point)."""
    try:
        return int(value) if value else base
    except (TypeError, ValueError):
        return base


__all__ = ["NOTE", "SECONDS", "note", "seconds", "seconds_key"]
