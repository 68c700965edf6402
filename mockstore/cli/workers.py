"""``mockstore serve --workers N``: N processes serving one port, one mock in Redis.

The parent binds the socket and opens the shared state, then forks N workers
that each serve the socket with their own event loop (the kernel spreads the
connections among them); their state is the one in Redis, so they answer as
one mock. The parent only waits: a stop signal (SIGTERM, Ctrl-C) is passed on
to every worker, which finishes its requests in flight and exits.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import sys
from typing import Any

from mockstore.cli.serving import run_until_stopped

log = logging.getLogger("mockstore")


def run_workers(app: Any, sock: socket.socket, log_level: str, count: int) -> int:
    """Serve ``app`` on ``sock`` from ``count`` forked processes; 0 once all stopped cleanly."""
    workers: list[int] = []
    for _ in range(count):
        pid = os.fork()
        if pid == 0:  # a worker: serve until stopped, never return into the parent's code
            code = 1
            try:
                code = run_until_stopped(app, sock, log_level)
            except BaseException:
                log.exception("a worker stopped unexpectedly")
            finally:
                sys.stderr.flush()
                os._exit(code)
        workers.append(pid)
    sock.close()

    def stop(signum: int, frame: object) -> None:
        for pid in workers:
            with contextlib.suppress(ProcessLookupError):  # it has stopped already
                os.kill(pid, signal.SIGTERM)

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    worst = 0
    for pid in workers:
        _, status = os.waitpid(pid, 0)  # retried by Python when a signal interrupts it
        code = os.waitstatus_to_exitcode(status)
        if code != 0:
            log.error("worker %d ended with %d", pid, code)
            worst = worst or (code if code > 0 else 1)
    return worst
