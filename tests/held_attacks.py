"""The hostile paths of issue 27, as plain functions against a live server.

Bytes a client makes the server hold without the budget knowing: requests
queued behind one being answered (pipelining), whole answers held for clients
that never read them, ``verify`` scans over large bodies. Shared by the tests
of each finding, ``bench/hostile_mix.py`` (all at once) and
``bench/held_findings.py`` (each alone, with the server's peak memory). Every
attack is bounded in count and in time, and sends only to 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator

import httpx

from tests.attacks import slow_readers
from tests.budget_soak import BudgetSoak
from tests.rawhttp import address


def small_request(host: str, key: str, target: str = "/v1/pets/1") -> bytes:
    """One small keep-alive request: what a pipelining client sends many of in one write."""
    auth = f"Authorization: Bearer {key}\r\n"
    return f"GET {target} HTTP/1.1\r\nHost: {host}\r\n{auth}\r\n".encode()


def pipeline_burst(
    url: str,
    key: str,
    *,
    write_bytes: int = 1 << 20,
    seconds: float = 10.0,
    target: str = "/v1/pets/1",
) -> tuple[int, bool]:
    """One connection that writes small requests without end and never reads an answer.

    Writes ``write_bytes`` at a time for up to ``seconds`` (a write that cannot go
    within a second means the server stopped reading: it keeps trying until the
    time is up). Returns (bytes the server took, whether it closed the connection).
    """
    host, port = address(url)
    burst = small_request(f"{host}:{port}", key, target)
    burst *= max(1, write_bytes // len(burst))
    sent = 0
    closed = False
    end = time.monotonic() + seconds
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    # A small receive window: the answers back up in the server, not in our kernel.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    try:
        sock.settimeout(10)
        sock.connect((host, port))
        view = memoryview(burst)
        offset = 0
        while time.monotonic() < end:
            sock.settimeout(max(0.05, min(1.0, end - time.monotonic())))
            try:
                taken = sock.send(view[offset:])
            except TimeoutError:
                continue  # the server stopped reading; try again until the time is up
            except OSError:
                closed = True
                break
            sent += taken
            offset = (offset + taken) % len(view)
    finally:
        sock.close()
    return sent, closed


@contextlib.contextmanager
def pipelining_clients(
    url: str, key: str, connections: int, seconds: float
) -> Iterator[list[threading.Thread]]:
    """``connections`` threads running ``pipeline_burst`` for ``seconds``, joined on exit."""
    threads = [
        threading.Thread(
            target=pipeline_burst, args=(url, key), kwargs={"seconds": seconds}, daemon=True
        )
        for _ in range(connections)
    ]
    for thread in threads:
        thread.start()
    try:
        yield threads
    finally:
        for thread in threads:
            thread.join(seconds + 30)


class HeldMix(BudgetSoak):
    """Issue 19's soak (``BudgetSoak``) with issue 27's attacks on top, and the good client.

    On top: ``pipeliners`` (four connections at a time writing small requests
    and reading nothing, renewed every 5 s), ``journal_readers`` (twenty
    connections asking for the HAR or the request list and never reading,
    renewed every 5 s) and ``scans`` (``verify`` with ``body_contains`` over
    the journal's 1 MiB bodies, one after another).
    """

    def pipeliners(self) -> None:
        while not self.stop.is_set():
            with contextlib.suppress(OSError), pipelining_clients(self.url, "soak-key", 4, 5.0):
                pass

    def journal_readers(self) -> None:
        targets = ["/__mockstore/requests.har", "/__mockstore/requests"]
        turn = 0
        while not self.stop.is_set():
            turn += 1
            target = targets[turn % 2]
            with contextlib.suppress(OSError), slow_readers(self.url, 20, target, "soak-key"):
                self.stop.wait(5.0)

    def scans(self, client: httpx.Client) -> str:
        answer = client.post(
            self.control + "/verify",
            json={"operation": "createPet", "body_contains": {"name": "nobody"}},
        )
        time.sleep(0.2)
        return f"verify {answer.status_code}"

    def extra_steps(self) -> list[Callable[[httpx.Client], str]]:
        return [self.scans]

    def extra_threads(self) -> list[Callable[[], None]]:
        return [self.pipeliners, self.journal_readers]
