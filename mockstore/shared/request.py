"""An API request's one round trip to Redis: the request script's keys and arguments.

Every API request served from a shared state runs ``scripts.REQUEST`` once
(``mockstore.sharing`` decides what it carries): it counts the caller in its
bucket, numbers the request, fires the fault rules and runs the store
operation, atomically, against the generation this process answers from.
"""

from __future__ import annotations

from typing import Any

from mockstore.faults import SharedRules
from mockstore.ratelimit import DAY, MINUTE, Plan
from mockstore.shared.backend import SharedState, Stale
from mockstore.shared.store import Operation, Resize
from mockstore.state import NO_BAN

# No fault rule to count or fire: no counters, the seed unused, no rules.
_NO_RULES = (0, "", 0)


async def run_request(
    shared: SharedState,
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
    epoch = shared.prefix + shared.epoch + ":"
    scenario = shared.runtime.state.scenario
    ban = scenario.ban or NO_BAN
    keys = [shared.generation_key, epoch + "b:" + bucket, epoch + "r:" + bucket, epoch + "n"]
    first_request = scenario.behaviour.ratelimit_windows == "first_request"
    args: list[Any] = [
        shared.generation,
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
    reply = await shared.call("request", keys, args)
    if reply[0] == b"stale":
        await shared.refresh(reply[1].decode("utf-8", "replace"))
        raise Stale
    if reply[0] == b"resize":
        raise Resize(int(reply[1]))
    return reply
