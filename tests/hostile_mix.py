"""A hostile mix of clients, run against a live server while its memory is sampled.

Used by ``tests/test_soak.py`` (about two minutes, bounded in time and in
requests) and by ``bench/soak.py`` (ten minutes or more). Each kind of client
runs in its own thread, as fast as the server answers it:

* ``big_headers``: heads of 15 KiB (served and journaled) and of 100 KiB (431);
* ``long_queries``: listPets with a different 12 KiB query every time;
* ``anonymous``: callers without a key, on many paths (401, then 429);
* ``creates``: createPet with 64 KiB names, until the store's budget answers 507;
* ``big_numbers``: petIds of 5,000 digits;
* ``broken_uploads``: creates that promise 10 KB and leave after 5;
* ``slow_clients``: 100 slow-loris heads and 100 silent connections, renewed as the
  server closes them.

The server's resident memory (VmRSS) is sampled every ``sample_every`` seconds.
"""

from __future__ import annotations

import contextlib
import secrets
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx

SCENARIO = """\
version: 1
name: soak
description: The default keys plus one whose allowance a soak cannot spend.
keys:
  - {key: free-key, plan: free}
  - {key: soak-key, plan: {per_minute: 1000000000, per_day: 100000000000}}
pets:
  - {id: 1, name: Rex, categoryId: 1, status: available}
"""
SOAK_KEY = {"Authorization": "Bearer soak-key"}


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


@dataclass
class SoakResult:
    seconds: float
    requests: int
    statuses: Counter[str] = field(default_factory=Counter)
    samples: list[tuple[float, int]] = field(default_factory=list)  # (seconds, RSS bytes)
    errors: Counter[str] = field(default_factory=Counter)

    @property
    def peak_rss(self) -> int:
        return max(rss for _, rss in self.samples)

    def summary(self) -> str:
        statuses = ", ".join(f"{k}: {v}" for k, v in sorted(self.statuses.items()))
        return (
            f"{self.requests} requests in {self.seconds:.0f} s; peak RSS "
            f"{self.peak_rss / 2**20:.1f} MiB (first {self.samples[0][1] / 2**20:.1f} MiB, "
            f"last {self.samples[-1][1] / 2**20:.1f} MiB); answers {statuses}"
        )


class HostileMix:
    """Runs the clients until ``seconds`` pass or ``max_requests`` were sent."""

    def __init__(self, url: str, pid: int, seconds: float, max_requests: int) -> None:
        self.url = url
        self.api = url + "/v1"
        self.pid = pid
        self.seconds = seconds
        self.max_requests = max_requests
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.result = SoakResult(0.0, 0)

    # -- bookkeeping ----------------------------------------------------------

    def _count(self, what: str) -> bool:
        with self.lock:
            self.result.requests += 1
            self.result.statuses[what] += 1
            if self.result.requests >= self.max_requests:
                self.stop.set()
        return not self.stop.is_set()

    def _error(self, kind: str) -> None:
        with self.lock:
            self.result.errors[kind] += 1

    def _loop(self, step: Callable[[httpx.Client], str]) -> None:
        with httpx.Client(timeout=30) as client:
            while not self.stop.is_set():
                try:
                    status = step(client)
                except httpx.HTTPError as exc:
                    self._error(type(exc).__name__)
                    time.sleep(0.05)
                    continue
                if not self._count(status):
                    return

    # -- the clients ----------------------------------------------------------

    def big_headers(self, client: httpx.Client) -> str:
        size = 15 * 1024 if secrets.randbelow(2) else 100 * 1024
        headers = {**SOAK_KEY, "X-Pad": "h" * size}
        return str(client.get(self.api + "/pets", headers=headers).status_code)

    def long_queries(self, client: httpx.Client) -> str:
        pad = secrets.token_hex(6 * 1024)
        return str(client.get(f"{self.api}/pets?limit=5&pad={pad}", headers=SOAK_KEY).status_code)

    def anonymous(self, client: httpx.Client) -> str:
        path = secrets.choice(["/pets", "/pets/1", "/store/orders", "/nowhere", "/pets?limit=5"])
        return str(client.get(self.api + path).status_code)

    def creates(self, client: httpx.Client) -> str:
        body = {"name": secrets.token_hex(32 * 1024), "categoryId": 1}
        return str(client.post(self.api + "/pets", json=body, headers=SOAK_KEY).status_code)

    def big_numbers(self, client: httpx.Client) -> str:
        return str(client.get(f"{self.api}/pets/{'7' * 5000}", headers=SOAK_KEY).status_code)

    def broken_uploads(self, client: httpx.Client) -> str:
        host, port = self.url.split("//")[1].rsplit(":", 1)
        head = (
            f"POST /v1/pets HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer soak-key\r\n"
            "Content-Type: application/json\r\nContent-Length: 10000\r\n\r\n"
        ).encode()
        with contextlib.suppress(OSError), socket.create_connection((host, int(port)), 10) as sock:
            sock.sendall(head + b'{"name":')
        time.sleep(0.01)
        return "aborted"

    def slow_clients(self) -> None:
        host, port = self.url.split("//")[1].rsplit(":", 1)
        loris: list[socket.socket] = []  # a head that never ends, a byte a second
        idle: list[socket.socket] = []  # connected, silent
        try:
            while not self.stop.is_set():
                loris, idle = _still_open(loris), _still_open(idle)
                for group, first in ((loris, b"GET /v1/pets HTTP/1.1\r\nX-Slow: "), (idle, b"")):
                    while len(group) < 100 and not self.stop.is_set():
                        try:
                            sock = socket.create_connection((host, int(port)), 10)
                            if first:
                                sock.sendall(first)
                        except OSError:
                            self._error("connect")
                            break
                        group.append(sock)
                for sock in loris:
                    with contextlib.suppress(OSError):
                        sock.send(b"s")
                self.stop.wait(1.0)
        finally:
            for sock in loris + idle:
                sock.close()

    # -- running --------------------------------------------------------------

    def run(self, sample_every: float = 1.0) -> SoakResult:
        steps = [
            self.big_headers,
            self.long_queries,
            self.anonymous,
            self.creates,
            self.big_numbers,
            self.broken_uploads,
        ]
        threads = [threading.Thread(target=self._loop, args=(s,), daemon=True) for s in steps]
        threads.append(threading.Thread(target=self.slow_clients, daemon=True))
        started = time.monotonic()
        for thread in threads:
            thread.start()
        end = started + self.seconds
        while not self.stop.is_set():
            self.result.samples.append((time.monotonic() - started, rss_bytes(self.pid)))
            if time.monotonic() >= end:
                self.stop.set()
            self.stop.wait(sample_every)
        for thread in threads:
            thread.join(60)
        self.result.seconds = time.monotonic() - started
        self.result.samples.append((self.result.seconds, rss_bytes(self.pid)))
        return self.result


def _still_open(sockets: list[socket.socket]) -> list[socket.socket]:
    """The sockets the server has not closed (the others are closed here)."""
    alive = []
    for sock in sockets:
        try:
            sock.settimeout(0)
            gone = sock.recv(65536) == b""
        except BlockingIOError:
            gone = False
        except OSError:
            gone = True
        if gone:
            sock.close()
        else:
            alive.append(sock)
    return alive
