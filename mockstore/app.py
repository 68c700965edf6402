"""The app shell of every mockstore server: the control API under ``/__mockstore``, an API else.

``AppShell`` routes each request by path prefix and runs the server's
background tasks through the ASGI lifespan. ``MockstoreApp`` is the shell with
the Pet Store API, the whole control API and tenants (``mockstore serve``,
``MockServer``, ``create_app``); ``mockstore record`` runs the same shell with
its recording proxy and a narrower control API (``mockstore.fidelity.recorder``).
So both get the same path checks, the same control API guard and token, and
(through ``mockstore.server``) the same uvicorn settings and serving limits.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from starlette.types import ASGIApp

from mockstore.api import PetStoreAPI
from mockstore.body_reserve import BodyReserve
from mockstore.clock import REAL_TIME, Clock, Timebase
from mockstore.control import ControlAPI
from mockstore.errors import error_body
from mockstore.kept_journals import KeptJournals
from mockstore.limits import Limits
from mockstore.memory import Account, MemoryBudget
from mockstore.runs import RunCounter
from mockstore.scenario import Scenario, ScenarioSpec, load_scenario_source
from mockstore.shared.deadline import outside_any_deadline
from mockstore.state import Runtime
from mockstore.store import PetStore
from mockstore.tenants import TenantRegistry
from mockstore.urls import CONTROL_PREFIX as PREFIX
from mockstore.urls import TENANTS_PREFIX, is_control_path, is_disguised_control_path

log = logging.getLogger("mockstore.app")
# How long stopping waits for background tasks, then for each close, before going on.
_CLOSE_TIMEOUT = 5.0

Background = Callable[[], Awaitable[None]]


class AppShell:
    """Routes each request by path prefix; everything outside ``/__mockstore`` is ``api``'s.

    Every path outside ``/__mockstore`` goes to ``api`` (the Pet Store's
    pipeline answers an unknown path without a key 401, not 404: a caller
    without a valid key learns nothing about what exists). Under
    ``/__mockstore/tenants/<id>/`` is a tenant, when the server has tenants
    (see ``mockstore.tenants``). The prefix is matched on the decoded,
    normalised path, and served only when it is also spelled literally: a proxy
    that guards ``/__mockstore`` by its raw path cannot be walked around with
    ``/%5F_mockstore`` or ``/v1/../__mockstore``, which are refused (404).

    ``limits`` are what the server allows a client (``mockstore.server`` reads
    them); ``graceful_shutdown`` is how long requests in flight may take to
    finish once the server is told to stop. ``budget`` is the server's one
    memory budget (``mockstore.memory``; made from ``limits.memory_budget``
    when not given), which its connections draw on too.
    """

    graceful_shutdown = 1.0

    def __init__(
        self,
        api: ASGIApp,
        control: ControlAPI | None,
        *,
        tenants: TenantRegistry | None = None,
        limits: Limits | None = None,
        budget: MemoryBudget | None = None,
    ) -> None:
        self.api = api
        self.control = control
        self.tenants = tenants
        self.limits = limits or Limits()
        self.budget = budget if budget is not None else MemoryBudget(self.limits.memory_budget)
        # Tasks that run while the server serves (``serve --watch``), started and
        # stopped by the ASGI lifespan, and what to close once it stops.
        self._background: list[Background] = []
        self._tasks: list[asyncio.Task[None]] = []
        self._shutdown: list[Background] = []
        self._startup: list[Background] = []

    def run_in_background(self, task: Background) -> None:
        """Run ``task()`` from the server's start to its stop (needs the ASGI lifespan)."""
        self._background.append(task)

    def on_startup(self, step: Background) -> None:
        """Await ``step()`` before the server serves (needs the ASGI lifespan)."""
        self._startup.append(step)

    def on_shutdown(self, close: Background) -> None:
        """Await ``close()`` once the server has stopped serving (needs the ASGI lifespan)."""
        self._shutdown.append(close)

    @property
    def needs_lifespan(self) -> bool:
        """True when background tasks or closing need the ASGI lifespan to run them."""
        return bool(self._background or self._shutdown or self._startup)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        kind = scope["type"]
        if kind == "http":
            path: str = scope["path"]
            # Only a path under the prefix, or one with dot or empty segments,
            # can be a disguised spelling of it: an ordinary API path costs two
            # substring searches.
            control = path.startswith(PREFIX) and is_control_path(path)
            if (control or "//" in path or "/." in path) and is_disguised_control_path(
                path, scope.get("raw_path")
            ):
                await _not_found(
                    send,
                    f"no such path: {path} (the control API answers only under {PREFIX}, "
                    "spelled literally: no percent-encoding, dot segments or doubled slashes)",
                )
                return
            if control:
                if self.tenants is not None and path.startswith(TENANTS_PREFIX):
                    # Checked before the tenant is looked up: ids cannot be probed.
                    refusal = self.control.tenant_refusal(scope, path) if self.control else None
                    if refusal is not None:
                        await refusal(scope, receive, send)
                        return
                    if await self.tenants.dispatch(scope, receive, send):
                        return
                if self.control is None:
                    await _not_found(send, f"no such path: {path} (the control API is off)")
                    return
                inner = dict(scope)
                inner["path"] = path[len(PREFIX) :] or "/"
                inner["root_path"] = scope.get("root_path", "") + PREFIX
                await self.control(inner, receive, send)
                return
            await self.api(scope, receive, send)
        elif kind == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await self.start()
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await self.stop_background()
                    await send({"type": "lifespan.shutdown.complete"})
                    return

    async def start(self) -> None:
        """The start-up steps (bounded: one that cannot finish is said and left to the
        background tasks), then the background tasks (the lifespan's start; a tenant's)."""
        for step in self._startup:
            try:
                await asyncio.wait_for(step(), _CLOSE_TIMEOUT)
            except Exception as exc:  # Redis away: the background tasks try again
                log.warning("a start-up step did not finish: %r", exc)
        self.start_background()

    def start_background(self) -> None:
        """Start the background tasks (the lifespan's start; a tenant's, when it is made).

        They outlive whatever starts them: a control call's deadline (a tenant made
        or joined by one) is not theirs."""
        self._tasks = [
            asyncio.create_task(task(), context=outside_any_deadline()) for task in self._background
        ]

    async def stop_background(self) -> None:
        """Stop the background tasks, then close (the lifespan's end; a deleted tenant's)."""
        tasks, self._tasks = self._tasks, []
        for running in tasks:
            running.cancel()
        # Bounded: a task or a close stuck on a connection (a Redis gone
        # half-way) must not keep the server from stopping.
        if tasks:
            await asyncio.wait(tasks, timeout=_CLOSE_TIMEOUT)
        for close in self._shutdown:
            try:
                await asyncio.wait_for(close(), _CLOSE_TIMEOUT)
            except Exception as exc:  # stopping anyway: say so, never hang
                log.warning("closing on shutdown did not finish: %r", exc)


class MockstoreApp(AppShell):
    """The shell with the Pet Store API, the whole control API and tenants: one mock.

    ``account`` is this mock's share of the memory budget (the server's own
    share when not given; a tenant's is opened by ``_new_tenant``). ``state``:
    the URL of a Redis that holds the mock's state, shared with every process
    given the same (``mockstore.shared``; it must be ``open``ed before serving);
    its tenants are kept there too (``mockstore.shared.tenants``).
    """

    def __init__(
        self,
        scenario: Scenario | ScenarioSpec = "default",
        *,
        control: bool = True,
        control_token: str | None = None,
        clock: Clock | None = None,
        tenants: bool = True,
        template: PetStore | None = None,
        limits: Limits | None = None,
        allowed_hosts: Iterable[str] = (),
        budget: MemoryBudget | None = None,
        account: Account | None = None,
        timebase: Timebase = REAL_TIME,
        runs: RunCounter | None = None,
        state: str | None = None,
    ) -> None:
        if not isinstance(scenario, Scenario):
            scenario = load_scenario_source(scenario)
        limits = limits or Limits()
        budget = budget if budget is not None else MemoryBudget(limits.memory_budget)
        if account is None:
            account = budget.open_share("server", "the server's mock")
        self.allowed_hosts = tuple(allowed_hosts)
        # A tenant's runs are numbered by its server's counter (``runs``).
        self.runtime = Runtime(
            scenario,
            clock,
            template=template,
            account=account,
            timebase=timebase,
            runs=runs,
            first_run="start" if runs is None else "tenant",
        )
        self.control_token = control_token
        shared = None
        if state is not None:
            from mockstore.shared import SharedState

            shared = self.runtime.shared = SharedState(state, self.runtime)
        # Tenants are made and reached through the control API: off with it.
        registry = None
        if control and tenants:
            registry = TenantRegistry(
                self._new_tenant,
                kept=KeptJournals(account=budget.open_share("kept", "kept journals")),
                shared=_shared_tenants(shared),
            )
        super().__init__(
            PetStoreAPI(
                self.runtime,
                body_timeout=limits.body_timeout,
                connections=budget.connections,
                bodies=BodyReserve(budget.connections, budget.bodies, limits.max_connections),
            ),
            ControlAPI(
                self.runtime,
                control_token,
                tenants=registry,
                limits=limits,
                allowed_hosts=self.allowed_hosts,
            )
            if control
            else None,
            tenants=registry,
            limits=limits,
            budget=budget,
        )
        if shared is not None:
            self.share(shared)
            if registry is not None:
                # Every process builds every tenant, whichever process made it.
                self.run_in_background(registry.follow)

    def share(self, shared: Any) -> None:
        """Keep this mock's state in Redis (``shared``, a ``SharedState``; not yet opened)."""
        from mockstore.shared.journal import JournalSharing

        self.runtime.shared = shared
        # One journal for the mock: every process's traffic, numbered alike everywhere.
        sharing = JournalSharing(shared, self.runtime)
        # Registered before it serves: a read through another process waits for it.
        self.on_startup(sharing.register)
        self.run_in_background(sharing.run)
        self.on_shutdown(sharing.close)
        self.on_shutdown(shared.close)

    def _new_tenant(self, tenant_id: str) -> MockstoreApp:
        """A tenant on the running scenario, sharing its pets (copy on write).

        It has a share of the memory budget of its own (``OverBudget`` when the
        budget cannot give its floor), and its runs are numbered by this server's
        counter.
        """
        account = self.budget.open_share("tenant", f"tenant {tenant_id!r}")
        try:
            return MockstoreApp(
                self.runtime.scenario,
                control_token=self.control_token,
                tenants=False,
                template=self.runtime.template,
                limits=self.limits,
                allowed_hosts=self.allowed_hosts,
                budget=self.budget,
                account=account,
                timebase=self.runtime.timebase,
                runs=self.runtime.runs,
            )
        except BaseException:
            account.close()
            raise

    def close(self) -> None:
        """Give back everything this app's mock holds to the memory budget (a deleted tenant).

        Nothing of it is left in a reference cycle: its memory goes when the
        last request that uses it ends, not at the next cyclic collection.
        """
        self.runtime.close()
        if self.control is not None:
            self.control.close()


def _shared_tenants(shared: Any) -> Any:
    """The registry of tenants in Redis, with a shared state (else None: in memory)."""
    if shared is None:
        return None
    from mockstore.shared.tenants import SharedTenants

    return SharedTenants(shared)


async def _not_found(send: Any, message: str) -> None:
    body = error_body("not_found", message)
    await send(
        {
            "type": "http.response.start",
            "status": 404,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", b"%d" % len(body)),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def create_app(
    scenario: Scenario | ScenarioSpec = "default",
    *,
    control: bool = True,
    control_token: str | None = None,
    clock: Clock | None = None,
    limits: Limits | None = None,
    allowed_hosts: Iterable[str] = (),
    timebase: Timebase = REAL_TIME,
    state: str | None = None,
) -> MockstoreApp:
    """An ASGI app serving ``scenario``: a bundled name, a path, YAML text, or a loaded Scenario.

    Use it in-process with ``httpx.ASGITransport(app=create_app())``. ``timebase``
    is where every clock it builds reads the time (tests that simulate waiting).
    ``state``: a Redis URL that holds the mock's state (``mockstore.shared``),
    opened here (call it outside a running event loop; ``StateUnavailable``).
    """
    app = MockstoreApp(
        scenario,
        control=control,
        control_token=control_token,
        clock=clock,
        limits=limits,
        allowed_hosts=allowed_hosts,
        timebase=timebase,
        state=state,
    )
    if app.runtime.shared is not None:
        from mockstore.shared import open_state

        open_state(app.runtime.shared)
    return app
