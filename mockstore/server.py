"""Running a mockstore server: the listening socket, the uvicorn settings, ``MockServer``.

Every server mockstore starts runs an ``AppShell`` (``mockstore.app``) with the
settings of ``uvicorn_config``: ``mockstore serve`` and ``mockstore record`` in
the foreground (``mockstore.cli.serving``), ``MockServer`` in a background
thread, for any Python code. The way in for unittest, scripts, notebooks and
any test runner (as moto's ``ThreadedMotoServer`` and WireMock's
``WireMockServer`` are for theirs)::

    from mockstore import MockServer

    with MockServer(scenario="flaky-create") as server:
        requests.get(server.url + "/pets", headers={"Authorization": "Bearer pro-key"})
        server.control.verify("listPets", count=1)

``MockServer`` binds its socket itself, so port 0 gives a free port without
reading any output. ``start()`` returns once uvicorn accepts connections;
``stop()`` shuts it down gracefully (a request in flight finishes) and joins
the thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import errno
import socket
import threading
import time
from typing import TYPE_CHECKING, Any, Self

from mockstore.clock import REAL_TIME, Timebase
from mockstore.scenario import Scenario, ScenarioSpec, resolve_scenario
from mockstore.urls import CONTROL_PREFIX

if TYPE_CHECKING:
    from mockstore.app import AppShell

START_TIMEOUT = 30.0
# glibc's mallopt parameters (malloc.h).
_M_MMAP_THRESHOLD = -3
_M_ARENA_MAX = -8


class ServerError(RuntimeError):
    """The server could not start (the address is taken, or uvicorn failed)."""


def listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (0: a free port); ``ServerError`` says why not."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ServerError(
                f"port {port} on {host} is already in use; "
                f"stop what holds it or pick another with --port (0 picks a free one)"
            ) from None
        raise ServerError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def tune_allocator() -> bool:
    """Ask glibc's malloc to give freed memory back: for a server process, at its start.

    glibc raises its threshold for mapping a block on its own each time one is
    freed, so after the first 1 MiB body, 1 MiB blocks come from the heap, and a
    heap with anything live above them is not given back: under issue 19's
    soak RSS stayed about 130 MiB above what the memory budget held. Blocks of
    128 KiB and more are mapped on their own (returned to the system when
    freed), and two arenas serve every thread instead of eight per core.
    Measured on the soak: peak 405 MiB before, 339 MiB after, with the same
    budget. False where there is no glibc (musl, macOS): nothing is changed.
    Not done for ``MockServer``, which runs in its caller's process.

    ``mallopt`` is looked up among the symbols the interpreter itself links
    (``CDLL(None)``): ``ctypes.util.find_library`` ran ``ldconfig -p`` in a
    child process, about 10 ms of every start (issue 29).
    """
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, 128 * 1024)) and bool(mallopt(_M_ARENA_MAX, 2))


def freeze_startup() -> None:
    """Leave what the server built at its start out of every garbage collection.

    A collection of the oldest generation walks every container object the
    process tracks, on the event loop's thread: with the app, its OpenAPI
    document, schemas and scenario built (about 48,000 objects), each took
    20 to 70 ms on a loaded machine under ``bench/held_mix.py``, several
    times a minute, and every client waited for it. What exists at the start
    lives as long as the server (or, replaced by a scenario load, is freed by
    its reference counts; only a cycle in it would stay), so it is moved to
    the permanent generation (``gc.freeze``) and collections walk only what
    came later. Not done for ``MockServer``, which runs in its caller's process.

    ``mockstore serve`` starts with collections off (``cli.main``): then the start
    is frozen as it is, garbage included (about 560 objects, 120 KB on the
    bench's scenario: mostly the classes ``dataclass(slots=True)`` replaces),
    rather than walked once more by a full collection (10 to 20 ms of the start,
    issue 29), and collections are turned on. Started with them on (``record``),
    the garbage is collected first, as before.
    """
    import gc

    if gc.isenabled():
        gc.collect()  # what the start left as garbage is not kept for ever
    gc.freeze()
    gc.enable()
    # (Not ``gc.get_freeze_count()``: it walks every frozen object, 3.6 ms of a start.)


def uvicorn_config(app: AppShell, *, log_level: str | None = None) -> Any:
    """The uvicorn settings of every mockstore server: ``serve``, ``record`` and ``MockServer``.

    The HTTP protocol is httptools with the app's ``Limits`` (heads, bodies,
    time and connections; see ``mockstore.protocol``). The ASGI lifespan runs
    only when the app has something to start or close (``--watch``, the
    recorder's upstream client). uvicorn adds no ``Server`` or ``Date`` header:
    the mock writes its own, and a recording passes the upstream's through.
    No WebSocket protocol: mockstore serves none, so a request asking to
    upgrade is answered as the HTTP request it also is (uvicorn would hand it
    to the app as a WebSocket nothing accepts, a text/plain 500), and serving
    never imports ``websockets`` (part of the start, issue 29).
    """
    import uvicorn

    from mockstore.protocol import protocol_class

    limits = app.limits
    return uvicorn.Config(
        app,
        loop="auto",
        http=protocol_class(limits, app.budget),
        ws="none",
        timeout_keep_alive=limits.keep_alive_timeout,
        lifespan="on" if app.needs_lifespan else "off",
        access_log=False,
        server_header=False,
        date_header=False,
        log_config=None,
        log_level=log_level,
        timeout_graceful_shutdown=app.graceful_shutdown,
    )


class MockServer:
    """A mockstore server on ``host:port`` in a background thread.

    ``scenario`` is a bundled name, a path, YAML text, a mapping or a loaded
    ``Scenario``; a bad one raises (``ScenarioNotFound``, ``ScenarioError``) here,
    before anything starts. ``port=0`` picks a free port. ``watch=True`` reloads a
    scenario *file* when it changes (as ``mockstore serve --watch``). ``timebase``
    is where its clocks read the time: a test may pass its own wall and monotonic
    clocks to simulate waiting without spending it.

    ``state="redis://host:port/db"`` keeps the mock's state in that Redis, shared
    with every server given the same (``mockstore serve --state``); it raises
    ``StateUnavailable`` here when Redis cannot be reached.

    ``url`` is the API base (``http://127.0.0.1:41234/v1``), ``base_url`` the
    server root, ``control_url`` the control API, ``control`` a ``Control`` on it.
    """

    def __init__(
        self,
        scenario: Scenario | ScenarioSpec = "default",
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        control: bool = True,
        control_token: str | None = None,
        watch: bool = False,
        start_timeout: float = START_TIMEOUT,
        timebase: Timebase = REAL_TIME,
        state: str | None = None,
    ) -> None:
        from mockstore.app import MockstoreApp

        source = None
        if not isinstance(scenario, Scenario):
            source = resolve_scenario(scenario)
            scenario = source.load()
        if watch and (source is None or source.path is None):
            raise ValueError("watch=True needs a scenario file (a path), not a name or text")
        self.app = MockstoreApp(
            scenario, control=control, control_token=control_token, timebase=timebase, state=state
        )
        if self.app.runtime.shared is not None:
            from mockstore.shared import open_state

            open_state(self.app.runtime.shared)
        if watch:
            from mockstore.watch import ScenarioWatcher

            assert source is not None and source.path is not None
            self.watcher: Any = ScenarioWatcher(self.app.runtime, source.path)
            self.app.run_in_background(self.watcher.run)
        else:
            self.watcher = None
        self.host = host
        self._port = port
        self._token = control_token
        self._start_timeout = start_timeout
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self._failure: BaseException | None = None
        self._control: Any = None

    # -- addresses ---------------------------------------------------------------

    @property
    def port(self) -> int:
        """The port it listens on (the one chosen, once started with port 0)."""
        return self._port

    @property
    def base_url(self) -> str:
        """The server root, e.g. ``http://127.0.0.1:41234``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self._port}"

    @property
    def url(self) -> str:
        """The API base: the root and the running scenario's base path (``…/v1``)."""
        return self.base_url + self.app.runtime.scenario.base_path

    @property
    def control_url(self) -> str:
        """The control API, ``<root>/__mockstore``."""
        return self.base_url + CONTROL_PREFIX

    @property
    def runtime(self) -> Any:
        """The running state (store, keys, clock) and journal, for in-process inspection."""
        return self.app.runtime

    @property
    def control(self) -> Any:
        """A ``mockstore.Control`` on this server (closed by ``stop()``)."""
        if self._control is None:
            from mockstore.clients.control import Control

            self._control = Control(self.base_url, self._token)
        return self._control

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    # -- lifetime ----------------------------------------------------------------

    def start(self) -> Self:
        """Bind, start uvicorn in a thread, and return once it accepts connections."""
        if self._thread is not None:
            raise RuntimeError(f"{self!r} was already started")
        import uvicorn

        sock = listen(self.host, self._port)
        self._port = sock.getsockname()[1]
        self._server = uvicorn.Server(uvicorn_config(self.app))
        self._thread = threading.Thread(
            target=self._serve, args=(sock,), name=f"mockstore-{self._port}", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + self._start_timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                reason = self._failure or "it did not accept connections in time"
                raise ServerError(f"mockstore did not start on {self.base_url}: {reason!r}")
            time.sleep(0.002)
        return self

    def reset(self, timeout: float = 10.0) -> Any:
        """Reset the running state, in process: what ``POST /__mockstore/reset`` does.

        Runs ``Runtime.reset()`` on the server's own event loop, between its
        requests, and returns the same ``ResetResult``; no HTTP request is made,
        so it costs about an eighth of ``control.reset()`` (``bench/reset_paths.py``;
        the ``mockstore`` fixture resets this way before every test on a server
        it started).
        """
        from mockstore.clients.types import ResetResult

        if self._server is None or not self._server.started or not self.running:
            raise RuntimeError(f"{self!r} is not running")
        loop = self._server.servers[0].get_loop()
        runtime = self.app.runtime
        if runtime.shared is not None:
            # Every process's mock, and a journal_seq every process numbers alike.
            return asyncio.run_coroutine_threadsafe(_shared_reset(runtime), loop).result(timeout)
        done: concurrent.futures.Future[ResetResult] = concurrent.futures.Future()

        def reset() -> None:
            try:
                runtime = self.app.runtime
                runtime.reset()
                done.set_result(
                    ResetResult(
                        "reset", runtime.scenario.name, runtime.journal.last_seq, runtime.run
                    )
                )
            except BaseException as exc:  # handed to the caller's thread
                done.set_exception(exc)

        loop.call_soon_threadsafe(reset)
        return done.result(timeout)

    def _serve(self, sock: socket.socket) -> None:
        try:
            self._server.run(sockets=[sock])
        except BaseException as exc:  # reported by start(); a thread has nowhere else to
            self._failure = exc
        finally:
            sock.close()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop gracefully (requests in flight finish) and wait for the thread."""
        if self._control is not None:
            self._control.close()
            self._control = None
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive() and self._server is not None:
                self._server.force_exit = True
                self._thread.join(timeout)

    def __enter__(self) -> Self:
        return self.start() if self._thread is None else self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"<MockServer {self.base_url} {self.app.runtime.scenario.name!r} {state}>"


async def _shared_reset(runtime: Any) -> Any:
    """``MockServer.reset`` with a shared state: through Redis, after a journal barrier."""
    from mockstore.clients.types import ResetResult
    from mockstore.shared.deadline import within

    with within():
        await runtime.shared.reset()
        if runtime.shared.journal is not None:
            await runtime.shared.journal.barrier()
    return ResetResult("reset", runtime.scenario.name, runtime.journal.last_seq, runtime.run)
