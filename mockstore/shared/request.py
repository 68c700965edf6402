"""An API request's one round trip to Redis: the request script's keys and arguments.

Every API request served from a shared state runs ``scripts.REQUEST`` once
(``mockstore.sharing`` decides what it carries): it counts the caller in its
bucket, numbers the request, fires the fault rules and runs the store
operation, atomically, against the generation this process answers from.
"""

from __future__ import annotations

from typing import Any

from mockstore.faults import SharedRules
from mockstore.limiter.limiter import Limiter
from mockstore.ratelimit import DAY, MINUTE, Plan
from mockstore.shared import general
from mockstore.shared.backend import SharedState
from mockstore.shared.deadline import Stale
from mockstore.shared.store import Operation, Resize
from mockstore.state import NO_BAN

# No fault rule to count or fire: no counters, the seed unused, no rules.
_NO_RULES = (0, "", 0)


async def run_request(
    shared: SharedState,
    bucket: str,
    plan: Plan | None,
    now: float,
    wall: float,
    operation: Operation | None,
    rules: SharedRules | None = None,
) -> list[Any]:
    """Count the caller, number the request, fire ``rules`` and run ``operation``: one
    round trip.

    Returns the script's reply: ``[b"ok", verdict, minute used, day used,
    minute start, day start, retry at, request number, operation's result,
    rules fired]`` (``scripts.REQUEST``; a general limiter's script has each
    window's figures and the blocking window in place of the used counts and
    starts, ``scripts.GENERAL_REQUEST``). ``plan`` None: a caller the limiter
    does not count. ``Stale`` after reloading, ``StateUnavailable`` when Redis
    is out of reach.
    """
    epoch = shared.prefix + shared.epoch + ":"
    state = shared.runtime.state
    scenario = state.scenario
    ban = scenario.ban or NO_BAN
    keys = [shared.generation_key, epoch + "b:" + bucket, epoch + "r:" + bucket, epoch + "n"]
    within = "c" if ban.trigger == "consecutive" else repr(float(ban.within_seconds))
    limiter = state.limiter
    script = "request"
    if isinstance(limiter, Limiter):
        # The general limiter's script: its windows' rules, and their logs' keys.
        script = "general"
        keys, counted = general.request(limiter, keys, epoch, bucket, plan, now)
        args: list[Any] = [shared.generation, repr(now), repr(wall), *counted]
        args += [ban.after_rejections, within, repr(float(ban.duration_seconds))]
    else:
        assert plan is not None
        first_request = scenario.ratelimit.classic_windows == "first_request"
        args = [
            shared.generation,
            repr(now),
            repr(wall),
            "f" if first_request else int(now // MINUTE) * MINUTE,
            "f" if first_request else int(now // DAY) * DAY,
            plan.per_minute,
            plan.per_day,
            ban.after_rejections,
            within,
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
    reply = await shared.call(script, keys, args)
    if reply[0] == b"stale":
        await shared.refresh(reply[1].decode("utf-8", "replace"))
        raise Stale
    if reply[0] == b"resize":
        raise Resize(int(reply[1]))
    return reply


async def run_refund(shared: SharedState, bucket: str, plan: Plan, now: float) -> None:
    """Give back what a request admitted at ``now`` took (``scripts.REFUND``, a general
    limiter's; nothing when the configuration changed since)."""
    limiter = shared.runtime.state.limiter
    if not isinstance(limiter, Limiter):
        return
    epoch = shared.prefix + shared.epoch + ":"
    keys, counted = general.request(
        limiter, [shared.generation_key, epoch + "b:" + bucket], epoch, bucket, plan, now
    )
    await shared.call("refund", keys, [shared.generation, repr(now), *counted[1:]])
