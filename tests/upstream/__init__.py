"""Upstreams for the fidelity tests: Pet Store stand-ins, and processes on loopback.

``standin(keys)`` runs ``tests/upstream/petstore_standin.py`` under uvicorn on
127.0.0.1 and yields its base address; ``provider(module, keys, *args)`` does the
same for any stand-in module (``kennel``, ``menagerie``, ...);
``profiled_standin(profile, keys)`` runs ``tests/upstream/profiled.py`` serving a
``Profile``; ``recorder(upstream, ...)`` runs ``mockstore record`` in front of any
upstream. All are real processes, so the tests talk real HTTP through real sockets.
"""

from __future__ import annotations

import os
import re
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import httpx

if TYPE_CHECKING:
    from tests.upstream.profiled import Profile

ROOT = Path(__file__).resolve().parent.parent.parent


@dataclass
class Process:
    """A process that printed the address it serves."""

    url: str
    process: subprocess.Popen[str]
    output: list[str] = field(default_factory=list)

    def log(self) -> str:
        return "\n".join(self.output)

    def stop(self) -> int:
        """SIGTERM, and the exit status (killed after a generous deadline)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        return self.process.returncode


@contextmanager
def running(command: list[str], address: str, timeout: float = 30.0) -> Iterator[Process]:
    """Start ``command`` and yield it once a line of its output matches ``address``."""
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    output: list[str] = []
    found: list[str] = []
    ready = threading.Event()

    def drain() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            output.append(line.rstrip("\n"))
            match = re.search(address, line)
            if match and not found:
                found.append(match.group(1))
                ready.set()

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    deadline = time.monotonic() + timeout
    while not ready.is_set():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            reader.join(2)
            raise RuntimeError(f"{command[:4]} did not start:\n" + "\n".join(output))
        ready.wait(0.05)
    started = Process(found[0], process, output)
    try:
        yield started
    finally:
        started.stop()
        reader.join(5)


def new_key() -> str:
    """A key shaped like a real provider's: long and random."""
    return "sk_test_" + secrets.token_hex(16)


@contextmanager
def provider(module: str, keys: dict[str, str], *args: str) -> Iterator[Process]:
    """A Pet Store provider stand-in, ``tests/upstream/MODULE.py``, on a free port.

    ``keys`` maps each key to its plan (``--key KEY=PLAN``); ``args`` are more of
    the module's own options (``--window-seconds 2``). ``url`` is its base (``…/v1``).
    """
    command = [sys.executable, "-m", f"tests.upstream.{module}", "--port", "0"]
    for key, plan in keys.items():
        command += ["--key", f"{key}={plan}"]
    with running([*command, *args], r"listening on (http://\S+)") as upstream:
        yield upstream


@contextmanager
def standin(keys: dict[str, str]) -> Iterator[Process]:
    """The stand-in Pet Store on a free port; ``keys`` maps each key to its plan."""
    with provider("petstore_standin", keys) as upstream:
        yield upstream


@contextmanager
def recorder(upstream: str, *args: str) -> Iterator[Process]:
    """``mockstore record --upstream URL --port 0 ARGS``; ``url`` is its API base (…/v1)."""
    command = [sys.executable, "-m", "mockstore", "record", "--upstream", upstream, "--port", "0"]
    with running([*command, *args], r"recording (http://\S+)") as proxy:
        _wait_for(proxy.url.rsplit("/", 1)[0] + "/__mockstore/health")
        yield proxy


def _wait_for(url: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            httpx.get(url, timeout=2)
            return
        except httpx.TransportError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing answered {url}")


def origin(url: str) -> str:
    """``http://127.0.0.1:8080/v1`` -> ``http://127.0.0.1:8080``."""
    return url.rsplit("/", 1)[0]


@contextmanager
def profiled_standin(profile: Profile, keys: dict[str, str]) -> Iterator[Process]:
    """``tests/upstream/profiled.py`` serving ``profile``; ``keys`` maps each key to a plan."""
    with tempfile.TemporaryDirectory(prefix="profiled-") as directory:
        path = Path(directory) / "profile.json"
        path.write_text(profile.to_json(), encoding="utf-8")
        with provider("profiled", keys, "--profile", str(path)) as upstream:
            yield upstream
