"""Where the time of a reset over HTTP goes: the same reset by four paths, interleaved.

    .venv/bin/python bench/reset_paths.py [--rounds 300]

Against one in-process ``MockServer`` (the bundled ``default`` scenario), each round
resets it once by each path, in turn, so a noisy moment hits them all:
``MockServer.reset()`` (in process, on the server's own loop: what the ``mockstore``
fixture does on a server it started), ``POST /__mockstore/reset`` with ``http.client``
(the server's part and the least a client can add), the same with ``httpx.Client``, and
``Control.reset()``. Prints the median and the fastest round of each.
"""

from __future__ import annotations

import argparse
import http.client
import statistics
import sys
import time
from collections.abc import Callable
from urllib.parse import urlsplit

import httpx

from mockstore import MockServer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=300)
    args = parser.parse_args(argv)
    server = MockServer("default").start()
    try:
        where = urlsplit(server.base_url)
        connection = http.client.HTTPConnection(where.hostname or "127.0.0.1", where.port)
        client = httpx.Client(base_url=server.base_url)

        def with_http_client() -> None:
            connection.request(
                "POST", "/__mockstore/reset", b"{}", {"Content-Type": "application/json"}
            )
            answer = connection.getresponse()
            answer.read()
            assert answer.status == 200, answer.status

        def with_httpx() -> None:
            assert client.post("/__mockstore/reset", json={}).status_code == 200

        paths: dict[str, Callable[[], object]] = {
            "MockServer.reset() (in process)": server.reset,
            "POST with http.client": with_http_client,
            "POST with httpx.Client": with_httpx,
            "Control.reset()": server.control.reset,
        }
        samples: dict[str, list[float]] = {name: [] for name in paths}
        for path in paths.values():
            path()
        for _ in range(args.rounds):
            for name, path in paths.items():
                started = time.perf_counter()
                path()
                samples[name].append(time.perf_counter() - started)
        client.close()
        connection.close()
    finally:
        server.stop()
    print("| Reset by | median | fastest |")
    print("|---|---:|---:|")
    for name, values in samples.items():
        print(
            f"| {name} | {statistics.median(values) * 1000:.3f} ms | {min(values) * 1000:.3f} ms |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
