"""A real Redis for the shared-state tests: Debian's ``redis-server`` on a free loopback port.

Never a fake: the scripts' atomicity and Lua arithmetic are what is tested.
Each server runs in a temporary directory with persistence off (``--save ''
--appendonly no``); ``stop`` and ``start`` again on the same port model Redis
lost and back mid-run. ``.ci/run`` installs ``redis-server`` when it is missing;
elsewhere the tests that need it are skipped with the reason, unless
``MOCKSTORE_REQUIRE_REDIS`` is set (CI), when they fail.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


def redis_available() -> bool:
    return Path(REDIS_SERVER).exists()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class RedisServer:
    """One ``redis-server`` process; ``url`` is ``redis://127.0.0.1:PORT/0``."""

    def __init__(self, databases: int = 16, debug: bool = False) -> None:
        self.databases = databases
        # ``DEBUG SLEEP`` (a slow Redis) needs the command allowed (Redis 7: off by default).
        self.debug = debug
        self.port = _free_port()
        self.directory = tempfile.mkdtemp(prefix="mockstore-redis-")
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 20.0) -> RedisServer:
        command = [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1"]
        command += ["--save", "", "--appendonly", "no", "--dir", self.directory]
        command += ["--databases", str(self.databases)]
        if self.debug:
            command += ["--enable-debug-command", "local"]
        self.process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=self.directory
        )
        deadline = time.monotonic() + timeout
        while not self.ping():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"redis-server did not start on port {self.port}")
            time.sleep(0.02)
        return self

    def ping(self) -> bool:
        """True when the server answers PING (RESP spoken by hand: no client needed)."""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as conn:
                conn.sendall(b"PING\r\n")
                return conn.recv(64).startswith(b"+PONG")
        except OSError:
            return False

    def command(self, *args: str) -> bytes:
        """One command's raw reply (for INFO and the like in tests and benchmarks)."""
        request = b"*%d\r\n" % len(args) + b"".join(
            b"$%d\r\n%s\r\n" % (len(a.encode()), a.encode()) for a in args
        )
        with socket.create_connection(("127.0.0.1", self.port), timeout=5) as conn:
            conn.sendall(request)
            chunks = []
            conn.settimeout(1)
            while True:
                try:
                    chunk = conn.recv(65536)
                except TimeoutError:
                    break
                if not chunk:
                    break
                chunks.append(chunk)
                if chunk.endswith(b"\r\n") and _complete(b"".join(chunks)):
                    break
            return b"".join(chunks)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self.process = None

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _complete(reply: bytes) -> bool:
    """True when ``reply`` is one whole simple, integer, error or bulk reply."""
    if reply[:1] in (b"+", b"-", b":"):
        return True
    if reply[:1] == b"$":
        header, _, rest = reply.partition(b"\r\n")
        size = int(header[1:])
        return size < 0 or len(rest) >= size + 2
    return True


def required() -> bool:
    return bool(os.environ.get("MOCKSTORE_REQUIRE_REDIS"))
