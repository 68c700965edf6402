"""Run ``mockstore`` with a probe of its event loop: how late a 5 ms tick runs, and GC pauses.

    PROBE_OUTPUT=/tmp/probe.json python bench/loop_probe.py serve --port 0 ...

A launcher for ``tests.support.live_server`` (``bench/held_mix.py --probe``),
never part of the server: a task on the server's loop sleeps 5 ms at a time
and notes how much later than asked it woke (the loop's lag: how long the
work ahead of it held the loop), and ``gc.callbacks`` time every collection
(a collection of the oldest generation walks every object the process holds,
on the loop's thread). At exit (the server is stopped with SIGTERM) the
figures go to ``PROBE_OUTPUT`` as JSON.
"""

from __future__ import annotations

import asyncio
import atexit
import gc
import json
import os
import sys
import time
from pathlib import Path

TICK = 0.005
lags: list[float] = []
pauses: dict[int, list[float]] = {0: [], 1: [], 2: []}
_began: list[float] = [0.0]


def _gc_timer(phase: str, info: dict[str, int]) -> None:
    if phase == "start":
        _began[0] = time.perf_counter()
    else:
        pauses[info["generation"]].append(time.perf_counter() - _began[0])


async def _probe() -> None:
    while True:
        asked = time.perf_counter()
        await asyncio.sleep(TICK)
        lags.append(time.perf_counter() - asked - TICK)


def _summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values) or [0.0]

    def at(share: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(len(ordered) * share))] * 1000, 2)

    return {
        "count": len(values),
        "median_ms": at(0.5),
        "p99_ms": at(0.99),
        "p999_ms": at(0.999),
        "worst_ms": round(ordered[-1] * 1000, 2),
        "total_ms": round(sum(values) * 1000, 1),
        "over_20ms": sum(1 for v in values if v > 0.020),
        "over_50ms": sum(1 for v in values if v > 0.050),
    }


def _write() -> None:
    output = os.environ.get("PROBE_OUTPUT")
    if not output:
        return
    figures = {
        "loop_lag": _summary(lags),
        "gc": {f"gen{generation}": _summary(times) for generation, times in pauses.items()},
    }
    Path(output).write_text(json.dumps(figures, indent=2) + "\n")


def main() -> int:
    import uvicorn

    serve = uvicorn.Server.serve

    async def serve_probed(self: uvicorn.Server, sockets: object = None) -> None:
        probe = asyncio.get_running_loop().create_task(_probe())
        try:
            await serve(self, sockets)  # type: ignore[arg-type]
        finally:
            probe.cancel()

    uvicorn.Server.serve = serve_probed  # type: ignore[method-assign]
    gc.callbacks.append(_gc_timer)
    atexit.register(_write)
    from mockstore.cli.main import main as cli

    return cli(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
