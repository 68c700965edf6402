"""Run numbers in Redis: one counter for the mock and its tenants, whichever process begins a run.

A run begun by any process (a reset, a new scenario, the clock moved back) is
numbered here, so every process answers the same run number (``mockstore.runs``).
The counter is read back like any other value: one that is not a number in
range (written by something else) is started again, said in the log.
"""

from __future__ import annotations

import json
import logging

from mockstore.runs import Run
from mockstore.shared.config import run_of
from mockstore.shared.connection import Connection
from mockstore.shared.deadline import StateUnavailable, bounded

log = logging.getLogger("mockstore.shared")

# The counter (the root mock's prefix, ``backend.PREFIX``: tenants share it).
RUNS = "mockstore:runs"
# The largest run number taken as valid (beyond it a float cannot count on).
MAX_RUN = 2**53


async def next_run(connection: Connection) -> int:
    """The next run number of the server and its tenants, from Redis."""
    client = connection.client()
    for _ in range(2):
        try:
            number = await bounded(client.incr(RUNS))
        except StateUnavailable:
            raise
        except Exception as exc:
            import redis.exceptions

            if not isinstance(exc, redis.exceptions.ResponseError):
                await connection.connections_lost()
                raise StateUnavailable(connection.unreachable(exc)) from exc
            number = None  # not a number: replaced below
        if isinstance(number, int) and 1 <= number <= MAX_RUN:
            return number
        log.warning("the run counter at %s was not valid: started again", connection.url)
        await bounded(client.delete(RUNS))
    raise StateUnavailable("the run counter could not be read")


def run_in(fields: dict[str, str]) -> Run:
    """The run a change's fields begin (written here: it is read back as it was written)."""
    return run_of(json.loads(fields["run"]))
