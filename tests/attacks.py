"""The hostile paths of issue 19, as plain functions against a live server.

Shared by the tests that check each finding (``tests/test_memory_budget.py``
and its neighbours), the hostile soak (``tests/hostile_mix.py``) and
``bench/findings.py``, which measures each finding's peak memory. Each attack
is bounded in count and in time, and sends only to 127.0.0.1.

Memory is read from ``/proc/<pid>/status``: ``VmRSS`` (resident now) and
``VmHWM`` (the most it was ever resident: the peak, without sampling).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

import httpx

from tests.rawhttp import address

MiB = 2**20

# A scenario whose key has an allowance no attack spends, a journal that keeps
# whole bodies (so that a few creates fill it), and a default store budget.
BIG_JOURNAL = """\
version: 1
name: big-journal
isolation: {isolation}
keys:
  - {{key: public-key, plan: {{per_minute: 1000000000, per_day: 100000000000}}}}
journal: {{body_bytes: {body_bytes}}}
pets:
  - {{id: 1, name: Rex, categoryId: 1, status: available}}
"""
PUBLIC = {"Authorization": "Bearer public-key"}
# A pet of about 1 MiB, just under the default body limit (1,048,576 bytes).
BIG_NAME = "n" * 1_000_000


def big_journal(isolation: str = "shared", body_bytes: int = 1048576) -> str:
    return BIG_JOURNAL.format(isolation=isolation, body_bytes=body_bytes)


def status_field(pid: int, name: str) -> int:
    """A ``/proc/<pid>/status`` field given in kB, in bytes (``VmRSS``, ``VmHWM``)."""
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(name + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {name} for process {pid}")


def rss(pid: int) -> int:
    return status_field(pid, "VmRSS")


def peak_rss(pid: int) -> int:
    return status_field(pid, "VmHWM")


def mib(size: int) -> str:
    return f"{size / MiB:.0f} MiB"


# -- 1. pipelined heads ------------------------------------------------------------


def pipelined_head(host: str, pad: int, key: str | None = None) -> tuple[bytes, bytes]:
    """A small request plus most of a next head in one write; then that head's end.

    The second head is ``pad`` bytes of one header, and only its final blank
    line comes in a second write: a server that counts a head from the start
    of a read sees 4 bytes.
    """
    auth = f"Authorization: Bearer {key}\r\n" if key else ""
    first = f"GET /v1/pets?limit=1 HTTP/1.1\r\nHost: {host}\r\n{auth}\r\n"
    second = f"GET /v1/pets?limit=1 HTTP/1.1\r\nHost: {host}\r\n{auth}X-Pad: {'p' * pad}\r\n"
    return (first + second).encode(), b"\r\n"


def read_answers(sock: socket.socket, count: int, deadline: float = 30.0) -> list[int]:
    """The statuses of up to ``count`` answers (fewer when the server closes first)."""
    end = time.monotonic() + deadline
    data = b""
    statuses: list[int] = []
    while len(statuses) < count and time.monotonic() < end:
        head_end = data.find(b"\r\n\r\n")
        if head_end >= 0:
            head = data[:head_end].decode("latin-1").split("\r\n")
            length = 0
            for line in head[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            if len(data) >= head_end + 4 + length:
                statuses.append(int(head[0].split()[1]))
                data = data[head_end + 4 + length :]
                continue
        sock.settimeout(max(0.01, end - time.monotonic()))
        try:
            chunk = sock.recv(1 << 20)
        except (TimeoutError, OSError):
            break
        if not chunk:
            break
        data += chunk
    return statuses


def pipeline_once(url: str, pad: int, key: str | None = None) -> list[int]:
    host, port = address(url)
    first, rest = pipelined_head(f"{host}:{port}", pad, key)
    with socket.create_connection((host, port), timeout=30) as sock:
        try:
            sock.sendall(first)
            time.sleep(0.005)  # two writes, as a pipelining client's two reads
            sock.sendall(rest)
        except OSError:
            pass
        return read_answers(sock, 2)


def pipeline_flood(
    url: str, seconds: float, threads: int = 4, pad: int = 100 * 1024
) -> Counter[str]:
    """``threads`` clients sending pipelined heads for ``seconds``; the second answers' statuses."""
    stop = time.monotonic() + seconds
    seen: Counter[str] = Counter()
    lock = threading.Lock()

    def run() -> None:
        while time.monotonic() < stop:
            statuses = pipeline_once(url, pad)
            with lock:
                seen[str(statuses[1]) if len(statuses) > 1 else "closed"] += 1

    workers = [threading.Thread(target=run, daemon=True) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(seconds + 60)
    return seen


# -- 2. slow readers ---------------------------------------------------------------


def create_big_pets(api: str, count: int, headers: dict[str, str] = PUBLIC) -> list[int]:
    """``count`` pets of about 1 MiB each; their statuses."""
    body = json.dumps({"name": BIG_NAME, "categoryId": 1}).encode()
    statuses = []
    with httpx.Client(timeout=60) as client:
        for _ in range(count):
            response = client.post(
                api + "/pets", content=body, headers={**headers, "content-type": "application/json"}
            )
            statuses.append(response.status_code)
    return statuses


@contextlib.contextmanager
def slow_readers(
    url: str, count: int, target: str = "/v1/pets?limit=100", key: str = "public-key"
) -> Iterator[list[socket.socket]]:
    """``count`` connections that ask for ``target`` and never read the answer.

    Yields once the server has begun every answer (or closed the connection).
    """
    host, port = address(url)
    head = (
        f"GET {target} HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer {key}\r\n\r\n"
    ).encode()
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            # A small receive window: the answer backs up in the server, not in our kernel.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.settimeout(30)
            sock.connect((host, port))
            sock.sendall(head)
            sockets.append(sock)
        for sock in sockets:
            # Until the answer has begun (peeked at, not read): the server is writing it.
            with contextlib.suppress(OSError):
                sock.recv(1, socket.MSG_PEEK)
        yield sockets
    finally:
        for sock in sockets:
            sock.close()


def holds_connection(pid: int, sock: socket.socket) -> bool:
    """Whether process ``pid`` still holds the server end of ``sock`` (seen in /proc, not read).

    A client that never reads cannot tell whether the server let go of it; the
    kernel can: the server's socket connected to ``sock``'s port, and whether
    the process still has it among its open files.
    """
    port = sock.getsockname()[1]
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError), open(table, encoding="ascii") as lines:
            next(lines)
            for line in lines:
                fields = line.split()
                if int(fields[2].rsplit(":", 1)[1], 16) == port:
                    inodes.add(f"socket:[{fields[9]}]")
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):
            if os.readlink(f"/proc/{pid}/fd/{fd}") in inodes:
                return True
    return False


def open_files(pid: int) -> int:
    """How many file descriptors the process holds (one per open connection, and a few more)."""
    return len(os.listdir(f"/proc/{pid}/fd"))


def closed_by_server(sock: socket.socket) -> bool:
    """True once the server has closed (or reset) ``sock``; reads what it sent meanwhile."""
    sock.setblocking(False)
    try:
        while True:
            chunk = sock.recv(1 << 20)
            if not chunk:
                return True
    except BlockingIOError:
        return False
    except OSError:
        return True
    finally:
        sock.setblocking(True)


# -- 3. and 4. tenants and per-key stores ------------------------------------------


def fill_tenant(url: str, tenant: str, pets: int, headers: dict[str, str] = PUBLIC) -> Counter[int]:
    """Create tenant ``tenant`` and fill its store and journal with ``pets`` 1 MiB creates."""
    control = url + "/__mockstore"
    created = httpx.post(control + "/tenants", json={"id": tenant}, timeout=30)
    seen: Counter[int] = Counter({created.status_code: 0})
    if created.status_code != 201:
        seen[created.status_code] += 1
        return seen
    seen.update(create_big_pets(f"{control}/tenants/{tenant}/v1", pets, headers))
    return seen


def issue_keys(url: str, count: int) -> list[str]:
    """``count`` new keys with a large allowance, issued through the control API."""
    keys = []
    for index in range(count):
        key = f"hostile-{index}"
        httpx.post(
            url + "/__mockstore/keys",
            json={"key": key, "plan": {"per_minute": 1000000, "per_day": 100000000}},
            timeout=30,
        )
        keys.append(key)
    return keys


# -- 5. scenarios ------------------------------------------------------------------


def alias_bomb(levels: int = 6, fan: int = 13, top: int = 11) -> str:
    """A few hundred bytes of YAML whose aliases expand to millions of values.

    The defaults expand to about 4.86 million values: just under the 5 million
    that main refused.
    """
    lines = ["version: 1", "x-bomb:", f"  - &l0 [{', '.join(['x'] * fan)}]"]
    for level in range(1, levels):
        count = top if level == levels - 1 else fan
        lines.append(f"  - &l{level} [{', '.join([f'*l{level - 1}'] * count)}]")
    return "\n".join(lines) + "\n"


@dataclass
class Sampler:
    """Samples a process's RSS in a thread until stopped: the RSS at each moment."""

    pid: int
    every: float = 0.25
    samples: list[int] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def __enter__(self) -> Sampler:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(OSError, RuntimeError):
                self.samples.append(rss(self.pid))
            self._stop.wait(self.every)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    @property
    def peak(self) -> int:
        return max(self.samples, default=0)


# What the tests and the soak allow a server's resident memory beyond its
# budget: the interpreter and libraries (about 41 MiB at start), per-request
# working memory beyond what is charged, and the allocator's slack. The docs
# (Security) give the same figure; measured peaks stay well under it.
ALLOWANCE = 160 * MiB
# The budget the memory tests give their servers (through the environment, so
# that a tree without the option still starts and shows what it does).
TEST_BUDGET = 64 * MiB


def budget_env(budget: int = TEST_BUDGET, **extra: str) -> dict[str, str]:
    return {"MOCKSTORE_MEMORY_BUDGET": str(budget), **extra}


def read_all(sock: socket.socket, deadline: float = 30.0) -> list[tuple[int, bytes]]:
    """Every answer on ``sock`` until the server closes it: (status, body) pairs."""
    end = time.monotonic() + deadline
    data = b""
    while time.monotonic() < end:
        sock.settimeout(max(0.01, end - time.monotonic()))
        try:
            chunk = sock.recv(1 << 20)
        except TimeoutError:
            break
        except OSError:
            chunk = b""
        if not chunk:
            break
        data += chunk
    answers = []
    while True:
        head_end = data.find(b"\r\n\r\n")
        if head_end < 0:
            return answers
        head = data[:head_end].decode("latin-1").split("\r\n")
        length = 0
        for line in head[1:]:
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length":
                length = int(value)
        body = data[head_end + 4 : head_end + 4 + length]
        answers.append((int(head[0].split()[1]), body))
        data = data[head_end + 4 + length :]
