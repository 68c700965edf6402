"""A key's rate-limit bucket in Redis: read back, checked, and turned into the limiter's figures.

The request script counts a caller in its bucket (``scripts.REQUEST``) and
replies with the bucket's figures; ``decision_of`` makes them the limiter's
``Decision``, as in memory. ``read_usage`` reads a bucket without counting
(the control API's keys): what it reads is input (anyone who can write to that
Redis can write anything), so a figure that is not a finite number within
2**53 makes that call a 503, said in the log, never a 500. ``preload`` is a
bucket that starts with allowance spent (a key's ``used:``).
"""

from __future__ import annotations

import logging
import math
from typing import Any

from mockstore.keys import key_bucket
from mockstore.limiter.limiter import Limiter
from mockstore.ratelimit import DAY, MINUTE, Bucket, Decision, Plan, RateLimiter, Usage
from mockstore.shared import general
from mockstore.shared.connection import Connection
from mockstore.shared.deadline import StateUnavailable, bounded

log = logging.getLogger("mockstore.shared")


async def read_usage(
    connection: Connection,
    epoch: str,
    bucket_id: str,
    limiter: RateLimiter | Limiter,
    plan: Plan,
    now: float,
) -> Usage:
    """A bucket's standing, read without counting anything (``epoch``: its keys' prefix)."""
    if isinstance(limiter, Limiter):
        try:
            return await bounded(
                general.usage(connection.client(), limiter, epoch, bucket_id, plan, now)
            )
        except StateUnavailable:
            raise
        except Exception as exc:
            raise StateUnavailable(connection.unreachable(exc)) from exc
    client = connection.client()
    try:
        async with client.pipeline(transaction=True) as pipe:
            pipe.hmget(epoch + "b:" + bucket_id, "ms", "mu", "ds", "du", "bu")
            pipe.llen(epoch + "r:" + bucket_id)
            (ms, mu, ds, du, bu), rejections = await bounded(pipe.execute())
    except StateUnavailable:
        raise
    except Exception as exc:
        raise StateUnavailable(connection.unreachable(exc)) from exc
    if ms is None:
        return limiter.standing(None, plan, now)
    figures = [figure(value) for value in (ms, mu, ds, du)]
    banned = figure(bu) if bu is not None else 0.0
    if None in figures or banned is None or not isinstance(rejections, int):
        log.warning("the shared state at %s holds a bucket that is not one", connection.url)
        raise StateUnavailable(f"the bucket of {bucket_id!r} in the shared state is not valid")
    minute_start, minute_used, day_start, day_used = figures
    bucket = Bucket()
    start = float if limiter._fractional else int
    bucket.minute_start = start(minute_start)  # type: ignore[assignment]
    bucket.minute_used = int(minute_used)  # type: ignore[arg-type]
    bucket.day_start = start(day_start)  # type: ignore[assignment]
    bucket.day_used = int(day_used)  # type: ignore[arg-type]
    bucket.minute_end = bucket.minute_start + MINUTE
    bucket.day_end = bucket.day_start + DAY
    bucket.banned_until = banned if bu is not None else None
    bucket.rejections.extend([now] * rejections)  # only their number is shown
    return limiter.standing(bucket, plan, now)


def decision_of(
    limiter: RateLimiter | Limiter, reply: list[Any], plan: Plan, now: float
) -> Decision:
    """The limiter's ``Decision`` from the request script's reply, figures as in memory."""
    if isinstance(limiter, Limiter):
        return general.decision(limiter, reply, plan, now)
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


def figure(value: Any) -> float | None:
    """A bucket's figure read back: a finite number within 2**53, else None."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) and abs(number) <= 2**53 else None


def preload(
    state: Any, bucket: str, now: float, minute_used: int, day_used: int, plan: Plan
) -> list[Any]:
    """A bucket that starts with allowance spent, its windows begun at ``now`` (as in memory).

    For the classic limiter ``[bucket, minute start, used, day start, used]``; for a
    general one ``[bucket, "g", [field, value, ...], minute log, day log]``.
    """
    limiter = state.limiter
    if isinstance(limiter, Limiter):
        return general.preload(limiter, bucket, now, minute_used, day_used, plan)
    if state.scenario.ratelimit.classic_windows == "first_request":
        minute_start = day_start = repr(now)
    else:
        minute_start, day_start = str(int(now // MINUTE) * MINUTE), str(int(now // DAY) * DAY)
    return [bucket, minute_start, str(minute_used), day_start, str(max(day_used, minute_used))]


def preloads(state: Any, now: float) -> list[list[Any]]:
    """The scenario's keys that start with allowance spent (``used:``)."""
    found = []
    for spec in state.scenario.keys:
        if spec.used_minute or spec.used_day:
            bucket, plan = key_bucket(spec.key), state.plans[spec.plan]
            found.append(preload(state, bucket, now, spec.used_minute, spec.used_day, plan))
    return found
