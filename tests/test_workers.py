"""``serve --workers N`` supervises its workers: a worker that dies is started again, said in
the log, ``--watch`` goes on whichever worker died, every child is reaped, and a clean stop
exits 0.

The CLI as a subprocess on a real ``redis-server``; workers are found as the parent's
children (``/proc/<pid>/task/<pid>/children``) and killed with SIGKILL, as an OOM killer or
an operator would. Conditions are waited for with deadlines, never for a time.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.redis_server import RedisServer, redis_available, required
from tests.support import LiveServer, live_server

pytestmark = pytest.mark.skipif(
    not redis_available() and not required(), reason="redis-server is not installed"
)

FIRST = """\
version: 1
name: first
keys: [{key: watch-key, plan: pro}]
pets:
  - {id: 1, name: Rex, categoryId: 1, status: available}
"""
SECOND = FIRST.replace("name: first", "name: second").replace("Rex", "Bella")
THIRD = FIRST.replace("name: first", "name: third").replace("Rex", "Max")
KEY = {"Authorization": "Bearer watch-key"}


def _until(condition: Callable[[], bool], what: str, deadline: float = 30.0) -> None:
    end = time.monotonic() + deadline
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"never happened: {what}")
        time.sleep(0.02)


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except FileNotFoundError:
        return []
    return [int(part) for part in text.split()]


def _state(pid: int) -> str | None:
    """A process's state letter (``Z``: a zombie nobody reaped), None once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return None
    return stat.rsplit(")", 1)[1].split()[0]


def _alive_children(pid: int) -> list[int]:
    return [child for child in _children(pid) if _state(child) not in (None, "Z")]


def _names(server: LiveServer) -> list[str]:
    """The pets a fresh connection (so whichever worker the kernel picks) is served."""
    with httpx.Client(timeout=10) as fresh:
        answer = fresh.get(server.url + "/v1/pets", headers=KEY)
    return [pet["name"] for pet in answer.json()] if answer.status_code == 200 else []


def _every_worker_serves(server: LiveServer, name: str) -> bool:
    return all(_names(server) == [name] for _ in range(6))


@pytest.fixture
def watched(tmp_path: Path) -> Path:
    path = tmp_path / "watched.yaml"
    path.write_text(FIRST)
    return path


def test_a_killed_worker_is_started_again_and_watch_goes_on_whichever_died(
    redis_server: RedisServer, watched: Path
) -> None:
    with live_server(
        "--scenario", str(watched), "--state", redis_server.url, "--workers", "2",
        "--watch", "--log-level", "info",
    ) as server:  # fmt: skip
        assert server.process is not None
        parent = server.process.pid
        _until(lambda: server.log().count("Application startup complete") == 2, "two workers")
        original = _alive_children(parent)
        assert len(original) == 2
        # Each of the original workers in turn, the watching one among them.
        for victim in original:
            before = set(_alive_children(parent))
            os.kill(victim, signal.SIGKILL)
            _until(
                lambda before=before, victim=victim: (
                    victim not in _children(parent)
                    and len(_alive_children(parent)) == 2
                    and set(_alive_children(parent)) != before
                ),
                "the killed worker is reaped and another takes its place",
            )
            assert _state(victim) is None, "the killed worker was reaped, not left a zombie"
            said = f"(pid {victim}) ended with signal SIGKILL; starting it again"
            # (The log reaches the test through a pipe and a reader thread: polled.)
            _until(lambda said=said: said in server.log(), "the restart said in the log")
        _until(lambda: server.log().count("Application startup complete") == 4, "replacements")
        _until(lambda: server.log().count(f"watching {watched} for changes") == 2, "watching")
        assert _every_worker_serves(server, "Rex")

        # Both original workers are gone: the watch goes on in the one started in their place.
        watched.write_text(SECOND)
        _until(lambda: _every_worker_serves(server, "Bella"), "the edit, served by every worker")
        said = "now serving scenario 'second' in every process"
        _until(lambda: said in server.log(), "the edit said in the log")
        assert server.log().count(said) == 1

        server.process.send_signal(signal.SIGTERM)
        assert server.process.wait(30) == 0, server.log()
        assert _children(parent) == []
        assert "ended with" not in server.log().split("starting it again")[-1]


def test_an_edit_made_while_the_watching_worker_was_dead_is_served_once_it_is_back(
    redis_server: RedisServer, watched: Path
) -> None:
    """The watching worker is killed, the file edited before its replacement watches: the
    replacement reads the file as it starts and puts the edit in service."""
    with live_server(
        "--scenario", str(watched), "--state", redis_server.url, "--workers", "2",
        "--watch", "--log-level", "info",
    ) as server:  # fmt: skip
        assert server.process is not None
        parent = server.process.pid
        _until(lambda: server.log().count(f"watching {watched} for changes") == 1, "watching")
        # Stop every worker at once (so the watching one too), edit while none runs.
        workers = _alive_children(parent)
        for worker in workers:
            os.kill(worker, signal.SIGSTOP)
        watched.write_text(THIRD)
        for worker in workers:
            os.kill(worker, signal.SIGKILL)
        _until(lambda: _every_worker_serves(server, "Max"), "the edit made while none watched")
        server.process.send_signal(signal.SIGINT)
        assert server.process.wait(30) == 0, server.log()


def test_a_stop_after_a_worker_died_exits_0_and_leaves_no_child(
    redis_server: RedisServer,
) -> None:
    with live_server("--state", redis_server.url, "--workers", "3") as server:
        assert server.process is not None
        parent = server.process.pid
        _until(lambda: len(_alive_children(parent)) == 3, "three workers")
        victim = _alive_children(parent)[-1]  # the last: the parent once waited on the first
        os.kill(victim, signal.SIGKILL)
        _until(
            lambda: victim not in _children(parent) and len(_alive_children(parent)) == 3,
            "a worker in its place",
        )
        assert _state(victim) is None
        children = _children(parent)
        server.process.send_signal(signal.SIGTERM)
        assert server.process.wait(30) == 0, server.log()
        for child in children:
            _until(lambda child=child: _state(child) is None, f"worker {child} is gone")
