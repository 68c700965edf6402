"""What the two server commands share: the serving options, and running until a signal.

``serve`` and ``record`` run on the same app shell and the same uvicorn
settings (``mockstore.server``), so they take the same options for them: the
address, the serving limits (the README's Security section), the control
token and the names the control API answers to, and the logs. Each option has
one environment variable.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import ipaddress
import logging
import os
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from mockstore.cli.args import env_list, one_of, pipe_closed, port, positive, size
from mockstore.cli.logs import log_handler
from mockstore.limits import Limits

log = logging.getLogger("mockstore")


def add_address(parser: argparse.ArgumentParser, host_help: str, port_help: str) -> None:
    parser.add_argument(
        "--host", default=os.environ.get("MOCKSTORE_HOST", "127.0.0.1"), help=host_help
    )
    parser.add_argument(
        "--port", type=port, default=os.environ.get("MOCKSTORE_PORT", "8080"), help=port_help
    )


def add_control(parser: argparse.ArgumentParser) -> None:
    """--control-token and --allowed-host: who may use the control API."""
    parser.add_argument(
        "--control-token",
        default=os.environ.get("MOCKSTORE_CONTROL_TOKEN") or None,
        metavar="TOKEN",
        help="require this bearer token on /__mockstore (env MOCKSTORE_CONTROL_TOKEN)",
    )
    parser.add_argument(
        "--insecure-control-api",
        action="store_true",
        default=os.environ.get("MOCKSTORE_INSECURE_CONTROL_API", "").strip().lower()
        in ("1", "true", "yes", "on"),
        help="listen beyond loopback with a control API open to anyone who can reach it "
        "(no --control-token): they can reset the mock, issue keys, move its clock and read "
        "every recorded request. Without a token or this flag, such a server does not start "
        "(env MOCKSTORE_INSECURE_CONTROL_API=1)",
    )
    parser.add_argument(
        "--allowed-host",
        action="append",
        default=env_list("MOCKSTORE_ALLOWED_HOSTS"),
        metavar="NAME",
        help="a host name the control API answers to, besides loopback names and IP "
        "addresses (repeatable; '*' for any; env MOCKSTORE_ALLOWED_HOSTS, comma-separated)",
    )


# The serving limits (README, Security): (flag, type, Limits field, metavar, help).
LIMIT_OPTIONS = (
    ("--max-header-bytes", int, "max_header_bytes", "BYTES",
     "request line and headers together; more is answered 431"),
    ("--timeout-keep-alive", float, "keep_alive_timeout", "SECONDS",
     "close a connection with no request under way after this long"),
    ("--timeout-headers", float, "header_timeout", "SECONDS",
     "a request's line and headers must arrive within this long of its first byte; else 408"),
    ("--timeout-body", float, "body_timeout", "SECONDS",
     "a request's body must arrive within this long of its headers; else 408"),
    ("--max-connections", int, "max_connections", "N",
     "open connections; past it the one idle longest is closed, or 503"),
    ("--timeout-write", float, "write_timeout", "SECONDS",
     "a client that stops reading its answer is dropped after this long"),
)  # fmt: skip


def add_limits(parser: argparse.ArgumentParser) -> None:
    """One option and one variable for each serving limit, defaulting to ``Limits``'s."""
    limits = Limits()
    for flag, kind, field, metavar, text in LIMIT_OPTIONS:
        env = "MOCKSTORE_" + flag[2:].upper().replace("-", "_")
        default = getattr(limits, field)
        parser.add_argument(
            flag,
            type=positive(kind, env),
            default=os.environ.get(env, str(default)),
            metavar=metavar,
            help=f"{text} (default {default:g}; env {env})",
        )
    parser.add_argument(
        "--memory-budget",
        type=size("MOCKSTORE_MEMORY_BUDGET"),
        default=os.environ.get("MOCKSTORE_MEMORY_BUDGET", "256MiB"),
        metavar="SIZE",
        help="every byte held for callers (journals, stores, tenants, scenarios being built, "
        "bodies and answers in flight) draws on this one budget; past it, 507 memory_budget "
        "(default 256MiB, which fits a 512 MiB container; env MOCKSTORE_MEMORY_BUDGET)",
    )


def limits_from(args: argparse.Namespace) -> tuple[Limits, str | None]:
    """The limits the options give, fitted to the file descriptors (and a warning if cut)."""
    given = {
        field: getattr(args, flag[2:].replace("-", "_")) for flag, _, field, *_ in LIMIT_OPTIONS
    }
    chosen = Limits(**given, memory_budget=args.memory_budget)
    return chosen.within_descriptors()


def add_logging(parser: argparse.ArgumentParser, info: str) -> None:
    """--log-level and --log-format; ``info`` says what the info level logs."""
    parser.add_argument(
        "--log-level",
        type=one_of("MOCKSTORE_LOG_LEVEL", "debug", "info", "warning", "error"),
        default=os.environ.get("MOCKSTORE_LOG_LEVEL", "info"),
        metavar="{debug,info,warning,error}",
        help=f"{info} (env MOCKSTORE_LOG_LEVEL)",
    )
    parser.add_argument(
        "--log-format",
        type=one_of("MOCKSTORE_LOG_FORMAT", "text", "json"),
        default=os.environ.get("MOCKSTORE_LOG_FORMAT", "text"),
        metavar="{text,json}",
        help="text, or JSON lines for CI log search (env MOCKSTORE_LOG_FORMAT)",
    )


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def open_control_refusal(host: str, token: str | None, insecure: bool) -> str | None:
    """Why a server must not start: its control API would listen beyond loopback, open.

    Started anyway only with ``--insecure-control-api``, the flag naming the risk.
    """
    if token or insecure or is_loopback(host):
        return None
    return (
        f"not starting: the control API would be open to anyone who can reach {host} "
        "(reset the mock, issue keys, move its clock, read every recorded request); give it "
        "a token (--control-token or MOCKSTORE_CONTROL_TOKEN), listen on 127.0.0.1, or say "
        "it is meant to be open with --insecure-control-api (MOCKSTORE_INSECURE_CONTROL_API=1)"
    )


def open_control_warning(
    host: str, port: int, token: str | None, remedy: str = "set a token, or --no-control"
) -> str | None:
    """A warning when the control API listens beyond loopback without a token."""
    if token or is_loopback(host):
        return None
    return (
        f"the control API is open to anyone who can reach {host}:{port}: without "
        "--control-token (MOCKSTORE_CONTROL_TOKEN) they can reset the mock, issue keys, "
        f"move its clock and read every recorded request; {remedy}"
    )


def shown_host(host: str) -> str:
    """``host`` as it goes in a URL (an IPv6 address in brackets)."""
    return f"[{host}]" if ":" in host else host


class StopRequest:
    """A stop signal (SIGTERM, Ctrl-C) noted, never raised: the handler of a process's
    stop signals until uvicorn's own take over, and again once they give them back.

    A handler that raises (``SystemExit``) raises wherever Python happens to be when
    the signal comes, and a weakref callback of the garbage collector swallows it
    ("Exception ignored"): a worker stopped at once after a restart served on until
    the parent killed it 60 s later. Noted here, the stop is the server's
    ``should_exit``, read by its loop (before serving, when it came earlier).
    """

    def __init__(self) -> None:
        self.asked = False
        self.server: Any = None  # the uvicorn server, once there is one

    def __call__(self, signum: int, frame: object) -> None:
        self.asked = True
        if self.server is not None:
            self.server.should_exit = True

    def install(self) -> None:
        """Make this the handler of SIGTERM and SIGINT."""
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, self)


def run_until_stopped(app: Any, sock: Any, log_level: str, stop: StopRequest | None = None) -> int:
    """Serve ``app`` on ``sock`` until SIGTERM or Ctrl-C (0), or nobody reads the log (141).

    ``stop``: the handler already noting this process's stop signals (a worker's,
    set before it let them in); a stop it noted ends the server before it serves.
    """
    import uvicorn

    from mockstore.server import freeze_startup, tune_allocator, uvicorn_config

    tune_allocator()

    config = uvicorn_config(app, log_level=log_level)
    config.load()  # the protocol, the loop and the app imported and built now: then frozen
    server = uvicorn.Server(config)
    freeze_startup()
    # Once nobody reads the log (`mockstore serve | head`), stop as every command does.
    log_handler().on_pipe_closed = lambda: setattr(server, "should_exit", True)
    # uvicorn re-raises the signal that stopped it once it has shut down. With the
    # default handlers that turns a clean stop into death by SIGTERM (exit 143 in a
    # container, which CI runners report as a failure) and Ctrl-C into a
    # KeyboardInterrupt traceback; with this handler either ends in exit 0.
    stop = stop or StopRequest()
    stop.install()
    stop.server = server
    if stop.asked:
        server.should_exit = True
    server.run(sockets=[sock])
    if log_handler().pipe_closed:
        return pipe_closed()
    return 0


# A worker that keeps dying is not started again forever: past this many restarts
# within RESTART_WINDOW seconds, the server stops (exit 1) and says why.
MAX_RESTARTS = 10
RESTART_WINDOW = 60.0
# How long a worker told to stop may take before the parent kills it (SIGKILL) and says
# so (exit 1). A worker's stop is bounded well within it: its requests in flight
# (``AppShell.graceful_shutdown``), then its background tasks and closes, 5 s each at
# most (``mockstore.app``), even when it was told while still starting.
STOP_GRACE = 60.0
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
# What the parent waits for: a stop signal, or a worker that ended.
_SUPERVISED = (*STOP_SIGNALS, signal.SIGCHLD)


def run_workers(
    app: Any,
    sock: Any,
    log_level: str,
    count: int,
    first_only: Callable[[], Awaitable[None]] | None = None,
) -> int:
    """``serve --workers N``: serve ``app`` on ``sock`` from ``count`` forked processes.

    The parent has bound the socket and opened the shared state; each worker
    serves the socket with its own event loop (the kernel spreads the
    connections among them), and their state is the one in Redis, so they
    answer as one mock. ``first_only`` is a background task of the first
    worker alone (``--watch``: one watcher, whose reloads reach every worker
    through the shared state).

    The parent supervises: it keeps the socket and reaps every worker that
    ends, whatever the order (no zombie); a worker that ends while the server
    is not stopping (killed, crashed) is said in the log and started again in
    its place, the first worker's background task with it, so ``--watch`` goes on
    whichever worker died. A stop signal (SIGTERM, Ctrl-C) is passed on to every
    worker, which finishes its requests in flight and exits; one still running
    ``STOP_GRACE`` seconds later is killed (SIGKILL), said in the log. 0 once all
    stopped cleanly; 1 when a worker kept dying (``MAX_RESTARTS`` within
    ``RESTART_WINDOW`` seconds) or one did not stop cleanly when told to.

    The parent takes its signals synchronously (``sigtimedwait``), never in a
    handler: they are blocked in it from the start, so a stop can come neither
    between a fork and the note of the new worker nor into a worker before that
    worker has handlers of its own. A forked worker starts with them blocked (a
    forked process keeps the mask) and lets them in only once its own handlers
    are set (``_serve_as_worker``): a stop sent at once after a restart waits
    there, pending, and then ends that worker cleanly. (With a handler in the
    parent, a worker stopped in that window ran the parent's handler: it
    stopped its siblings and went on serving, and the server never exited.)
    """
    workers: dict[int, int] = {}  # pid -> the worker's index
    restarts: list[float] = []
    worst = 0
    kill_at: float | None = None  # set once stopping: when the stragglers are killed
    before = signal.pthread_sigmask(signal.SIG_BLOCK, _SUPERVISED)

    def start(index: int) -> None:
        pid = os.fork()
        if pid == 0:  # a worker: serve until stopped, never return into the parent's code
            _serve_as_worker(app, sock, log_level, first_only if index == 0 else None, before)
        workers[pid] = index

    def stop() -> None:
        nonlocal kill_at
        kill_at = time.monotonic() + STOP_GRACE
        for pid in list(workers):
            with contextlib.suppress(ProcessLookupError):  # it has stopped already
                os.kill(pid, signal.SIGTERM)

    def ended(pid: int, index: int, code: int) -> None:
        nonlocal worst
        if kill_at is not None:
            if code in (-signal.SIGTERM, -signal.SIGINT):
                # Stopped by the signal passed on before its server had taken over the
                # signals (a worker still starting): stopped as asked, not a failure.
                code = 0
            if code != 0:
                log.error("worker %d (pid %d) ended with %s", index, pid, _ending(code))
                worst = worst or (code if code > 0 else 1)
            return
        now = time.monotonic()
        restarts[:] = [at for at in restarts if now - at < RESTART_WINDOW]
        if len(restarts) >= MAX_RESTARTS:
            log.error(
                "worker %d (pid %d) ended with %s; workers ended %d times within %g s, so "
                "the server stops",
                index, pid, _ending(code), len(restarts) + 1, RESTART_WINDOW,
            )  # fmt: skip
            worst = 1
            stop()
            return
        restarts.append(now)
        log.error("worker %d (pid %d) ended with %s; starting it again", index, pid, _ending(code))
        start(index)

    try:
        for index in range(count):
            start(index)
        # The workers forked with collections off freeze their start (freeze_startup);
        # the parent, which only watches them, collects as any process does.
        gc.enable()
        while workers:
            for pid, status in _reaped():
                index = workers.pop(pid, None)
                if index is not None:
                    ended(pid, index, os.waitstatus_to_exitcode(status))
            if not workers:
                break
            wait = 1.0
            if kill_at is not None:
                left = kill_at - time.monotonic()
                if left <= 0:
                    for pid, index in workers.items():
                        log.error(
                            "worker %d (pid %d) did not stop within %g s of being told to; "
                            "killed (SIGKILL)",
                            index, pid, STOP_GRACE,
                        )  # fmt: skip
                        with contextlib.suppress(ProcessLookupError):
                            os.kill(pid, signal.SIGKILL)
                    worst, kill_at = 1, float("inf")  # reaped as they end; no second kill
                    continue
                wait = min(wait, left)
            got = signal.sigtimedwait(_SUPERVISED, wait)
            if got is not None and got.si_signo in STOP_SIGNALS and kill_at is None:
                stop()
    finally:
        # What is left to come (a second Ctrl-C) must not kill the parent on its way out.
        for signum in STOP_SIGNALS:
            signal.signal(signum, signal.SIG_IGN)
        signal.pthread_sigmask(signal.SIG_SETMASK, before)
    sock.close()
    return worst


def _reaped() -> list[tuple[int, int]]:
    """(pid, wait status) of every child that has ended, without waiting."""
    found = []
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:  # none left
            return found
        if pid == 0:
            return found
        found.append((pid, status))


def _serve_as_worker(
    app: Any,
    sock: Any,
    log_level: str,
    background: Callable[[], Awaitable[None]] | None,
    mask: Any,
) -> None:
    """A forked worker's whole life: serve until stopped, then leave the process.

    It starts with the stop signals blocked (``run_workers``): its own handlers
    are set first, then ``mask`` (the signals as the parent had them) lets them
    in, so a stop sent since the fork ends it here, cleanly.
    """
    code = 1
    try:
        stop = StopRequest()
        stop.install()
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        if background is not None:
            app.run_in_background(background)
        code = run_until_stopped(app, sock, log_level, stop)
    except SystemExit as stopped:
        code = stopped.code if isinstance(stopped.code, int) else 0
    except BaseException:
        log.exception("a worker stopped unexpectedly")
    finally:
        sys.stderr.flush()
        os._exit(code)


def _ending(code: int) -> str:
    """How a worker ended, as the log says it: its exit code, or the signal that ended it."""
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"signal {signal.Signals(-code).name}"
        return f"signal {-code}"
    return f"exit code {code}"
