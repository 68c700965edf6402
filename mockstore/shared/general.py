"""The general limiter (``mockstore.limiter``) in Redis: its keys, arguments, preloads, standing.

``backend.SharedState`` runs ``scripts.GENERAL_REQUEST`` for a scenario whose
limiter is not the classic one: the request script's arguments are the
limiter's (``limiter.script_arguments``: each window's rule, allowance and
grid), and each window's sliding log, if it has one, is a list of its own at
``<epoch>l:<bucket>:m`` and ``:d`` beside the bucket's hash. A bucket that
starts with allowance spent is written as the Python limiter would hold it
(``limiter.stored``), and a bucket's standing is read back (``limiter.restored``:
anything that is not a finite number reads as absent).
"""

from __future__ import annotations

from typing import Any

from mockstore.limiter.limiter import (
    Limiter,
    reply_figures,
    restored,
    script_arguments,
    stored,
)
from mockstore.ratelimit import Decision, Plan, Usage


def request(
    limiter: Limiter, keys: list[str], epoch: str, bucket: str, plan: Plan | None, now: float
) -> tuple[list[str], list[Any]]:
    """The request script's keys (``keys`` and the logs') and the limiter's arguments."""
    counted, logs = script_arguments(limiter, plan, now)
    return [*keys, *(epoch + "l:" + bucket + suffix for suffix in logs)], counted


def decision(limiter: Limiter, reply: list[Any], plan: Plan, now: float) -> Decision:
    """The ``Decision`` of the general script's reply, as in memory."""
    verdict, retry_at, blocking, figures = reply_figures(reply)
    return limiter.decision(verdict, plan, now, retry_at, blocking, figures)


def preload(
    limiter: Limiter, bucket: str, now: float, minute_used: int, day_used: int, plan: Plan
) -> list[Any]:
    """The control script's preload of a bucket: ``[bucket, "g", fields, minute log, day log]``."""
    fields, logs = stored(limiter, limiter.new_bucket(now, minute_used, day_used, plan))
    return [bucket, "g", fields, *logs]


async def usage(
    client: Any, limiter: Limiter, epoch: str, bucket_id: str, plan: Plan, now: float
) -> Usage:
    """A bucket's standing read from Redis, counting nothing."""
    async with client.pipeline(transaction=True) as pipe:
        pipe.hgetall(epoch + "b:" + bucket_id)
        pipe.lrange(epoch + "l:" + bucket_id + ":m", 0, -1)
        pipe.lrange(epoch + "l:" + bucket_id + ":d", 0, -1)
        pipe.llen(epoch + "r:" + bucket_id)
        fields, minute_log, day_log, rejections = await pipe.execute()
    if not fields:
        return limiter.standing(None, plan, now)
    named = {name.decode("latin-1"): value for name, value in fields.items()}
    bucket = restored(limiter, named, [minute_log, day_log])
    bucket.rejections.extend([now] * rejections)  # only their number is shown
    return limiter.standing(bucket, plan, now)
