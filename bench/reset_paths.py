"""Where the time of a reset over HTTP goes: the same reset by four paths, interleaved.

    .venv/bin/python bench/reset_paths.py [--rounds 300]

Against one in-process ``MockServer`` (the bundled ``default`` scenario), each round
resets it once by each path, in turn, so a noisy moment hits them all:
``MockServer.reset()`` (in process, on the server's own loop: what the ``mockstore``
fixture does on a server it started), ``POST /__mockstore/reset`` with ``http.client``
(the server's part and the least a client can add), the same with ``httpx.Client``, and
``Control.reset()``. Prints the median and the fastest round of each.

``--process`` serves from a ``mockstore serve`` subprocess pinned to CPU 0 instead,
the client pinned to CPU 1 (the in-process path is left out): client and server then
share no interpreter lock, so the figure is the call's own, not the two threads
taking turns (on a loaded machine the in-process medians are mostly that). It also
gives each path's CPU time per call, the client's (``time.process_time``) and the
server's (``/proc/PID/stat``), from a block of ``--rounds`` calls of that path alone:
on a loaded machine the wall time is mostly waiting for a turn on a CPU, the CPU time
is what a quiet machine's latency is made of.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from urllib.parse import urlsplit

import httpx

from mockstore import Control, MockServer

_ADDRESS = re.compile(r"serving (http://\S+?:\d+)")
_TICKS = os.sysconf("SC_CLK_TCK")
_server_pid: list[int] = []


def process_cpu(pid: int) -> float:
    """A process's user + system CPU seconds so far (``/proc/PID/stat``)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


@contextlib.contextmanager
def served_in_process() -> Iterator[tuple[str, Callable[[], object] | None]]:
    server = MockServer("default").start()
    try:
        yield server.base_url, server.reset
    finally:
        server.stop()


@contextlib.contextmanager
def served_by_a_process() -> Iterator[tuple[str, Callable[[], object] | None]]:
    command = [sys.executable, "-m", "mockstore", "serve", "--port", "0"]
    process = subprocess.Popen(
        ["taskset", "-c", "0", *command, "--log-level", "warning"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        for line in process.stderr:
            if (found := _ADDRESS.search(line)) is not None:
                break
        else:
            raise SystemExit("mockstore serve printed no address")
        os.sched_setaffinity(0, {1})
        _server_pid.append(process.pid)
        yield found.group(1), None
    finally:
        process.terminate()
        process.wait(30)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--process", action="store_true", help="serve from a subprocess")
    args = parser.parse_args(argv)
    serving = served_by_a_process() if args.process else served_in_process()
    with serving as (url, in_process):
        where = urlsplit(url)
        connection = http.client.HTTPConnection(where.hostname or "127.0.0.1", where.port)
        client = httpx.Client(base_url=url)
        control = Control(url)

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
            "POST with http.client": with_http_client,
            "POST with httpx.Client": with_httpx,
            "Control.reset()": control.reset,
        }
        if in_process is not None:
            paths = {"MockServer.reset() (in process)": in_process, **paths}
        samples: dict[str, list[float]] = {name: [] for name in paths}
        for path in paths.values():
            path()
        for _ in range(args.rounds):
            for name, path in paths.items():
                started = time.perf_counter()
                path()
                samples[name].append(time.perf_counter() - started)
        cpu: dict[str, tuple[float, float]] = {}
        for name, path in paths.items() if _server_pid else ():
            client_cpu, server_cpu = time.process_time(), process_cpu(_server_pid[0])
            for _ in range(args.rounds):
                path()
            cpu[name] = (
                (time.process_time() - client_cpu) / args.rounds,
                (process_cpu(_server_pid[0]) - server_cpu) / args.rounds,
            )
        client.close()
        connection.close()
        control.close()
    print("| Reset by | median | fastest |" + (" client CPU | server CPU |" if cpu else ""))
    print("|---|---:|---:|" + ("---:|---:|" if cpu else ""))
    for name, values in samples.items():
        row = (
            f"| {name} | {statistics.median(values) * 1000:.3f} ms | {min(values) * 1000:.3f} ms |"
        )
        if name in cpu:
            row += f" {cpu[name][0] * 1000:.3f} ms | {cpu[name][1] * 1000:.3f} ms |"
        print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
