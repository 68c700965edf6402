"""``tests.support.live_server`` never leaves a process behind, and says why a server did not start.

A server that cannot start is given up on when it exits, or after its
(generous) start budget: then it and everything it started (its process
group: ``serve --workers``) are killed, and the error quotes its log.
"""

from __future__ import annotations

import os
import re
import sys
import time

import pytest

from tests.support import live_server

# Stands in for ``python -m mockstore``: starts a child of its own (as a worker
# would), says so, then exits (``exit``) or never prints an address (``hang``).
LAUNCHER = """\
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
print(f"launcher started child {child.pid}", flush=True)
if sys.argv[1] == "exit":
    sys.exit(3)
time.sleep(600)
"""


def _gone(pid: int, group: bool = False) -> bool:
    """Whether nothing answers to ``pid`` (a process, or a process group) any more; a
    zombie still answers, so this waits for whoever reaps it."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if group:
                os.killpg(pid, 0)
            else:
                os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_a_server_that_exits_before_it_listens_leaves_no_child_and_its_log_is_said() -> None:
    with (
        pytest.raises(RuntimeError) as failed,
        live_server(launcher=[sys.executable, "-c", LAUNCHER, "exit"]),
    ):
        pass
    message = str(failed.value)
    assert "did not start (printed no address; exited with code 3)" in message
    child = re.search(r"launcher started child (\d+)", message)
    assert child is not None, message  # its log, read to its end
    assert _gone(int(child.group(1))), "the child it started was left running"


def test_a_server_given_up_on_is_killed_with_its_process_group() -> None:
    # A budget of 0 s: given up on at once, however far it got.
    with (
        pytest.raises(RuntimeError) as failed,
        live_server(launcher=[sys.executable, "-c", LAUNCHER, "hang"], timeout=0),
    ):
        pass
    message = str(failed.value)
    assert "still running after 0 s: killed with its process group" in message
    group = re.search(r"\(pid (\d+)\)", message)
    assert group is not None, message
    assert _gone(int(group.group(1)), group=True), "a process of its group was left running"
