"""mockstore's own cost per request, without uvicorn, sockets or wrk.

    .venv/bin/python bench/inprocess.py bench/scenarios/baseline.yaml '/v1/pets?limit=20'

Calls the ASGI app (``mockstore.app.create_app``) directly in a loop and
divides the process's CPU time (``time.process_time``) by the requests. CPU
time, unlike wall time, does not grow when another process takes the core, so
this figure stays usable on a shared machine where wrk's req/s do not; and
without the server stack around it, it shows what a feature costs in
mockstore's own code. It is a companion to run.py's wrk figures, not a
replacement: the issues' targets are about the whole server.

Prints a JSON object: microseconds of CPU per request for each repeat.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Sequence
from typing import Any

BENCH_KEY = "bench-key"
# More than the journal's default 10,000 entries, so the measured requests run
# with the ring buffer full and evicting, as on a long-running server.
WARMUP_REQUESTS = 12_000


def scope_for(target: str, key: str) -> dict[str, Any]:
    """The ASGI scope uvicorn would build for ``GET target`` with a bearer key."""
    path, _, query = target.partition("?")
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query.encode(),
        "root_path": "",
        "headers": [
            (b"host", b"127.0.0.1"),
            (b"authorization", f"Bearer {key}".encode()),
        ],
        "client": ("127.0.0.1", 40000),
        "server": ("127.0.0.1", 8080),
    }


async def cpu_us_per_request(app: Any, target: str, requests: int) -> float:
    """CPU microseconds per request over ``requests`` calls; every answer must be 200."""
    scope = scope_for(target, BENCH_KEY)
    statuses: set[int] = set()

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            statuses.add(message["status"])

    started = time.process_time()
    for _ in range(requests):
        await app(dict(scope), receive, send)
    spent = time.process_time() - started
    if statuses != {200}:
        raise SystemExit(f"bench: GET {target} answered {sorted(statuses)}, not only 200")
    return spent * 1e6 / requests


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="mockstore's CPU cost per request, in process.")
    parser.add_argument("scenario", help="bundled name or YAML file with bench-key")
    parser.add_argument("target", help="request target, e.g. '/v1/pets?limit=20'")
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)

    from mockstore.app import create_app

    app = create_app(args.scenario)

    async def measure() -> list[float]:
        await cpu_us_per_request(app, args.target, WARMUP_REQUESTS)
        return [
            await cpu_us_per_request(app, args.target, args.requests) for _ in range(args.repeats)
        ]

    print(json.dumps({"cpu_us_per_request": asyncio.run(measure())}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
