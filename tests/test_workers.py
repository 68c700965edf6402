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
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.redis_server import RedisServer, redis_available, required
from tests.support import PATIENT, LiveServer, live_server

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
        assert server.process.wait(PATIENT) == 0, server.log()
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
        assert server.process.wait(PATIENT) == 0, server.log()


def test_a_stop_after_a_worker_died_exits_0_and_leaves_no_child(
    redis_server: RedisServer,
) -> None:
    with live_server(
        "--state", redis_server.url, "--workers", "3", "--log-level", "info"
    ) as server:
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
        assert server.process.wait(PATIENT) == 0, server.log()
        for child in children:
            _until(lambda child=child: _state(child) is None, f"worker {child} is gone")


# Runs the CLI with a hook in every process it forks from the moment the test creates
# ``hold``: the new worker notes its pid in ``forked`` and waits, right after the fork and
# before any code of its own has run, until the test creates ``release``. A stop sent in
# that wait is one sent at once after a restart, however slow or fast the machine is.
HELD_FORK = """\
import os
import sys
import time
from pathlib import Path

from mockstore.cli.main import main

folder = Path(sys.argv[1])


def hold() -> None:
    if not (folder / "hold").exists():
        return
    (folder / "forked").write_text(str(os.getpid()))
    while not (folder / "release").exists():
        time.sleep(0.01)


os.register_at_fork(after_in_child=hold)
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stop_sent_at_once_after_a_restart_reaches_the_new_worker_and_exits_0(
    redis_server: RedisServer, tmp_path: Path, stop: signal.Signals
) -> None:
    """The stop reaches the restarted worker before it has any handler of its own: the
    worker must end cleanly (not run the parent's code, stop its siblings and serve on)."""
    launcher = [sys.executable, "-c", HELD_FORK, str(tmp_path)]
    with live_server("--state", redis_server.url, "--workers", "2", launcher=launcher) as server:
        assert server.process is not None
        parent = server.process.pid
        _until(lambda: len(_alive_children(parent)) == 2, "two workers")
        sibling, victim = _alive_children(parent)
        (tmp_path / "hold").touch()
        os.kill(victim, signal.SIGKILL)
        forked = tmp_path / "forked"
        _until(lambda: forked.exists() and forked.read_text() != "", "a worker in its place")
        replacement = int(forked.read_text())
        server.process.send_signal(stop)
        # The parent passed the stop on to every worker: the sibling ends, and the
        # replacement has been sent it too (still held, before its own code runs).
        _until(lambda: _state(sibling) is None, "the sibling stopped and was reaped")
        (tmp_path / "release").touch()
        assert server.process.wait(PATIENT) == 0, server.log()
        assert _state(replacement) is None, "the replacement stopped and was reaped"
        assert "ended with" not in server.log().split("starting it again")[-1], server.log()


# The same CLI with the parent's grace for a worker told to stop cut to 1 s.
SHORT_GRACE = """\
import sys

from mockstore.cli import serving
from mockstore.cli.main import main

serving.STOP_GRACE = 1.0
sys.exit(main(sys.argv[1:]))
"""


def test_a_worker_that_does_not_stop_when_told_is_killed_after_the_grace_and_said(
    redis_server: RedisServer,
) -> None:
    launcher = [sys.executable, "-c", SHORT_GRACE]
    with live_server("--state", redis_server.url, "--workers", "2", launcher=launcher) as server:
        assert server.process is not None
        parent = server.process.pid
        _until(lambda: len(_alive_children(parent)) == 2, "two workers")
        stuck, other = _alive_children(parent)
        os.kill(stuck, signal.SIGSTOP)  # a stopped process leaves every signal pending
        server.process.send_signal(signal.SIGTERM)
        assert server.process.wait(PATIENT) == 1, server.log()
        assert _state(stuck) is None and _state(other) is None
        said = f"(pid {stuck}) did not stop within 1 s of being told to; killed (SIGKILL)"
        server.drained(PATIENT)
        assert said in server.log()
        assert f"(pid {other}) did not stop" not in server.log()


# Runs the CLI with a hook in every worker it forks: at the first garbage collection of a
# worker's main thread once its own stop handler is in force and the stop signals are let
# in (``_serve_as_worker``), the collector's callback (in the first worker to get there)
# asks the parent to stop the server and runs on, as Python code, until the stop passed on
# to this worker has been handled. So the worker's stop handler runs inside a callback of
# the garbage collector, where an exception is swallowed ("Exception ignored"), whatever
# the machine's speed. The worker notes in the folder that its handler ran there.
STOP_IN_GC_CALLBACK = """\
import gc
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from mockstore.cli.main import main

folder = Path(sys.argv[1])


def arm() -> None:
    armed = [True]

    def callback(phase: str, info: dict) -> None:
        handler = signal.getsignal(signal.SIGTERM)
        if (
            not armed[0]
            or phase != "start"
            or threading.current_thread() is not threading.main_thread()
            or not callable(handler)
            or signal.SIGTERM in signal.pthread_sigmask(signal.SIG_BLOCK, [])
        ):
            return
        armed[0] = False
        try:  # one worker asks (the parent passes one stop on), the others take it as it comes
            (folder / "asked").open("x").close()
        except FileExistsError:
            return
        handled = []

        def noting(signum: int, frame: object) -> None:
            handled.append(signum)
            (folder / f"handled-in-gc-{os.getpid()}").touch()
            handler(signum, frame)

        signal.signal(signal.SIGTERM, noting)
        os.kill(os.getppid(), signal.SIGTERM)  # the parent passes it on to every worker
        deadline = time.monotonic() + 60
        while not handled and time.monotonic() < deadline:
            pass  # Python code: the handler runs here, inside this callback

    gc.callbacks.append(callback)


os.register_at_fork(after_in_child=arm)
sys.exit(main(sys.argv[2:]))
"""


def test_a_stop_handled_inside_a_garbage_collector_callback_still_stops_the_worker(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    """A worker's stop handler that raised (``SystemExit``) lost the stop when the signal
    came during a garbage collection: the collector swallowed the exception, the worker
    served on and was killed ``STOP_GRACE`` seconds later (exit 1). The stop is noted, so
    the server still stops cleanly."""
    command = [sys.executable, "-c", STOP_IN_GC_CALLBACK, str(tmp_path)]
    command += ["serve", "--port", "0", "--state", redis_server.url, "--workers", "2"]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        log, _ = process.communicate(timeout=PATIENT)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert list(tmp_path.glob("handled-in-gc-*")), log  # the stop did come in a callback
    assert process.returncode == 0, log
    assert "did not stop" not in log and "Exception ignored" not in log, log
