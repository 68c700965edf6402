"""A stand-in behind a counter: every request it got, by method and by status.

``counted(module, keys)`` serves one of the stand-ins (``kennel``, ``menagerie``,
``petstore_standin``, or ``profiled`` with a ``Profile``) under uvicorn in a
thread of the test process, on a free loopback port, behind ``Counting``: an
ASGI middleware that counts each answer by (method, status) as the stand-in
sent it. A test reads ``counting.counts`` to prove what a client (calibrate)
did and did not send: no POST without ``--allow-writes``, no 429 without
``--allow-rate-limit``. The stand-ins themselves are unchanged: each is built
by its own constructor, as its command line builds it.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import uvicorn
from starlette.types import ASGIApp, Message, Receive, Scope, Send

WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})


class Counting:
    """ASGI middleware: counts each answer by (method, status)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.counts: Counter[tuple[str, int]] = Counter()
        self._lock = threading.Lock()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def counted(message: Message) -> None:
            if message["type"] == "http.response.start":
                with self._lock:
                    self.counts[(scope["method"], message["status"])] += 1
            await send(message)

        await self.app(scope, receive, counted)

    def by_method(self, *methods: str) -> int:
        return sum(n for (method, _), n in self.counts.items() if method in methods)

    def by_status(self, *statuses: int) -> int:
        return sum(n for (_, status), n in self.counts.items() if status in statuses)

    @property
    def writes(self) -> int:
        return self.by_method(*WRITES)

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def build(
    module: str,
    keys: dict[str, str],
    profile: Any = None,
    args: tuple[str, ...] = (),
    clock: Callable[[], float] | None = None,
) -> ASGIApp:
    """The stand-in ``module``'s application, built as its command line builds it.

    ``args`` are more of its options (``--window-seconds 2``, for kennel and menagerie);
    ``clock`` the profiled stand-in's (the wall clock by default).
    """
    argv = [arg for key, plan in keys.items() for arg in ("--key", f"{key}={plan}")]
    if module == "kennel":
        from tests.upstream import kennel

        return kennel.build_app(kennel.parse_settings([*argv, *args])[1])
    if module == "menagerie":
        from tests.upstream import menagerie

        return menagerie.create_app(menagerie.options_from([*argv, *args])[2])
    if module == "petstore_standin":
        from tests.upstream import petstore_standin

        return petstore_standin.PetStore(keys)
    if module == "profiled":
        from tests.upstream.profiled import Profile, ProfiledPetStore

        if clock is not None:
            return ProfiledPetStore(profile or Profile(), keys, clock=clock)
        return ProfiledPetStore(profile or Profile(), keys)
    raise ValueError(f"no stand-in {module!r}")


@dataclass
class Served:
    url: str  # the API's base, …/v1
    counting: Counting


@contextmanager
def counted(
    module: str,
    keys: dict[str, str],
    *args: str,
    profile: Any = None,
    clock: Callable[[], float] | None = None,
) -> Iterator[Served]:
    """Stand-in ``module`` behind a ``Counting`` middleware, served on a free loopback port."""
    counting = Counting(build(module, keys, profile, args, clock))
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    port = listener.getsockname()[1]
    config = uvicorn.Config(
        counting, log_level="warning", access_log=False, lifespan="off", loop="asyncio"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(
        target=lambda: asyncio.run(server.serve(sockets=[listener])), daemon=True
    )
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"{module} did not start")
        time.sleep(0.01)
    try:
        yield Served(f"http://127.0.0.1:{port}/v1", counting)
    finally:
        server.should_exit = True
        thread.join(10)
        listener.close()
