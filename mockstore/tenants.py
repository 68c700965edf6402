"""Tenants: isolated mocks inside one server, so parallel test workers can share a container.

A tenant is a whole mock of its own (a ``Runtime``: pets, counters, keys, bans,
clock, fault call counts, journal) reached under
``/__mockstore/tenants/<id>``: ``<that>/v1/pets`` is its Pet Store API and
``<that>/__mockstore/...`` its control API, so a client pointed at a tenant's
root cannot tell it from a server of its own. It starts from the server's
running scenario (sharing its pets, copy on write: creating one costs the same
for 20 pets as for 100,000) and may load another.

The registry is bounded (``MAX_TENANTS``): each tenant holds its own journal.
Each tenant has a share of the server's memory budget (``mockstore.memory``):
one the budget cannot give its floor is not created (507 ``memory_budget``),
and a deleted one gives everything back at once (nothing of it is a reference
cycle, so its memory goes as soon as the last request that uses it ends) but
its journal: that is kept (``KeptJournals``, bounded in bytes and charged to a
share of its own) so the server's report still covers its traffic. Requests
reach a tenant after one prefix check and one dict lookup; requests outside
``/__mockstore`` never look here.

With a shared state (``serve --state``) the registry is kept in Redis too
(``mockstore.shared.tenants``), and each tenant's mock keeps its state there
under a prefix of its own: a tenant made through one process exists in every
process. Each process builds the tenants it learns of (a background ``sync``
every second, and a request naming a tenant it does not know, which looks in
Redis before answering 404), so its report covers every tenant's traffic; a
tenant deleted through any process answers 404 everywhere from then on.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from starlette.types import ASGIApp, Receive, Scope, Send

from mockstore.errors import ApiError
from mockstore.journal import Journal
from mockstore.kept_journals import KeptJournals
from mockstore.memory import OverBudget
from mockstore.shared.deadline import StateUnavailable, outside_any_deadline, time_left
from mockstore.urls import TENANT_ID, TENANTS_PREFIX, is_control_path

if TYPE_CHECKING:
    from mockstore.shared.tenants import SharedTenants

log = logging.getLogger("mockstore.tenants")

MAX_TENANTS = 32
# How often a process with a shared state reads the registry in Redis (``sync``).
SYNC_EVERY = 1.0


class Tenant:
    """One tenant: its id and the ASGI app that serves it (API and control API)."""

    __slots__ = ("app", "id")

    def __init__(self, tenant_id: str, app: Any) -> None:
        self.id = tenant_id
        self.app = app

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "path": TENANTS_PREFIX + self.id,
            "scenario": self.app.runtime.scenario.name,
        }


class TenantRegistry:
    """The tenants of one server; ``factory(id)`` builds a tenant's app from the server's state.

    An app may have ``close()``, called when its tenant is deleted.
    """

    def __init__(
        self,
        factory: Callable[[str], Any],
        limit: int = MAX_TENANTS,
        kept: KeptJournals | None = None,
        shared: SharedTenants | None = None,
    ) -> None:
        self._factory = factory
        self.limit = limit
        self._tenants: dict[str, Tenant] = {}
        self._serial = 0
        self.kept = kept if kept is not None else KeptJournals()
        # The registry in Redis (``serve --state``): then this one holds the tenants
        # this process has built, and ``add``, ``remove`` and ``sync`` follow Redis.
        self.shared = shared
        # Built off every caller's path, one at a time per id, and shared: the
        # background ``sync``, a request naming the tenant and a control call wait
        # for the same join, none holds anything while it runs, and a caller that
        # gives up (its deadline) leaves it to finish. Nothing here is guarded by a
        # lock: the bookkeeping of ``_tenants`` is done without an await in between.
        self._joining: dict[str, asyncio.Task[Tenant | None]] = {}
        self._making: set[str] = set()  # ids this process is creating (not joined)
        self._background: set[asyncio.Task[Any]] = set()

    def __len__(self) -> int:
        return len(self._tenants)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(list(self._tenants.values()))

    def create(self, tenant_id: str | None = None) -> Tenant:
        """A new tenant (``ApiError`` for a bad or taken id, or when the registry is full)."""
        if tenant_id is None:
            self._serial += 1
            tenant_id = f"tenant-{self._serial}"
            while tenant_id in self._tenants:
                self._serial += 1
                tenant_id = f"tenant-{self._serial}"
        _check_id(tenant_id)
        if tenant_id in self._tenants:
            raise _exists(tenant_id)
        if len(self._tenants) >= self.limit:
            raise self._full(self._tenants)
        tenant = self._tenants[tenant_id] = Tenant(tenant_id, self._build(tenant_id))
        return tenant

    def _build(self, tenant_id: str) -> Any:
        try:
            return self._factory(tenant_id)
        except OverBudget as exc:
            raise ApiError(
                "memory_budget", f"tenant {tenant_id!r} was not created: {exc}", status=507
            ) from None

    def _full(self, ids: Any) -> ApiError:
        existing = ", ".join(sorted(ids))
        return ApiError(
            "too_many_tenants",
            f"this server holds its limit of {self.limit} tenants ({existing}); "
            f"DELETE {TENANTS_PREFIX}<id> the ones no longer used",
            status=507,
        )

    # -- the control API's calls: in memory, or through the registry in Redis ----

    async def add(self, tenant_id: str | None = None) -> Tenant:
        """``create``, in every process when the registry is in Redis."""
        if self.shared is None:
            return self.create(tenant_id)
        if tenant_id is not None:
            _check_id(tenant_id)
        for _ in range(self.limit + 8):  # a chosen id another process took meanwhile: the next
            tenant = await self._add_shared(tenant_id)
            if tenant is not None:
                return tenant
        raise ApiError("tenant_exists", "no free tenant id was found; name one", status=409)

    async def remove(self, tenant_id: str) -> bool:
        """``delete``, in every process when the registry is in Redis; False: no such tenant."""
        if self.shared is None:
            return self.delete(tenant_id) is not None
        built = self._tenants.get(tenant_id)
        if built is not None:
            # Its journal is kept for reports: first every answer any process gave it
            # (read your writes, as a journal read), which the others ship on request.
            sharing = built.app.runtime.shared.journal if built.app.runtime.shared else None
            if sharing is not None:
                await sharing.barrier()
        incarnation = await self.shared.unregister(tenant_id)
        self._forget(tenant_id)
        if incarnation is None:
            return False
        self._in_background(self._sweep(tenant_id, incarnation))
        return True

    def _in_background(self, work: Any) -> None:
        """Run ``work`` off the caller's path and deadline, kept until it ends."""
        task = asyncio.get_running_loop().create_task(work, context=outside_any_deadline())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _sweep(self, tenant_id: str, incarnation: int) -> None:
        """Sweep a deleted tenant's keys now, and once more when every process has let
        it go (``sync``): one that still held it may have written its journal since."""
        assert self.shared is not None
        await self.shared.sweep(tenant_id, incarnation)
        await asyncio.sleep(3 * SYNC_EVERY)
        await self.shared.sweep(tenant_id, incarnation)

    async def sync(self) -> None:
        """Follow the registry in Redis: build the tenants made elsewhere, drop the deleted."""
        if self.shared is None:
            return
        for tenant_id, incarnation in self._follow_listing(await self.shared.listing()).items():
            try:
                await self._joined(tenant_id, incarnation)
            except ApiError as exc:  # the memory budget: served where it fits
                log.warning("tenant %r is not served by this process: %s", tenant_id, exc)

    def _follow_listing(self, listing: dict[str, int]) -> dict[str, int]:
        """Let go of the tenants ``listing`` (the registry as read) no longer has; the
        ones it has that this process has not built (nor is making), to join."""
        for tenant_id, tenant in list(self._tenants.items()):
            registered = listing.get(tenant_id)
            # (One newer than the registry read has followed it since: kept.)
            if registered is None or registered > _incarnation(tenant):
                self._forget(tenant_id, tenant)
        return {
            tenant_id: incarnation
            for tenant_id, incarnation in listing.items()
            if tenant_id not in self._tenants and tenant_id not in self._making
        }

    async def listed(self) -> list[dict[str, Any]]:
        """Every tenant, as ``GET /__mockstore/tenants`` lists them: in Redis, the registry.

        A control call: it reads the registry (and, for the tenants this process has
        not built yet, their scenario's digest) under its deadline, and never waits
        for a join it can do without: a tenant still being built here is listed from
        Redis (its scenario named by its digest, when this process knows that scenario),
        and the joins go on in the background. Only a tenant on a scenario no mock of
        this process serves is waited for (its name is in no other place), as long as
        the call's deadline allows.
        """
        if self.shared is None:
            return [tenant.to_json() for tenant in self]
        listing = await self.shared.listing()
        missing = self._follow_listing(listing)
        joins = {tenant_id: self._join_task(tenant_id, missing[tenant_id]) for tenant_id in missing}
        names = {self.shared.shared.digest: self.shared.shared.runtime.scenario.name}
        for tenant in self:
            names[tenant.app.runtime.shared.digest] = tenant.app.runtime.scenario.name
        digests = await self.shared.digests(missing)
        listed = []
        for tenant_id in listing:
            tenant = self._tenants.get(tenant_id)
            if tenant is None and tenant_id in joins:
                digest = digests.get(tenant_id)
                name = names.get(digest) if digest else None
                if name is not None:
                    listed.append(_listed(tenant_id, name))
                    continue
                tenant = await self._wait_for(joins[tenant_id])
            if tenant is not None:
                listed.append(tenant.to_json())
        return listed

    async def _wait_for(self, join: asyncio.Task[Tenant | None]) -> Tenant | None:
        """A join's tenant, waited for within the call's deadline (the join goes on)."""
        left = time_left()
        done, _ = await asyncio.wait({join}, timeout=None if left is None else max(left, 0))
        if not done:
            raise StateUnavailable("a tenant on another scenario is still being built here")
        try:
            return join.result()
        except ApiError:  # not served here (the memory budget): not listed by this process
            return None

    async def follow(self) -> None:
        """``sync`` every ``SYNC_EVERY`` seconds, until cancelled (the server's background)."""
        warned = -60.0
        while True:
            try:
                await self.sync()
            except asyncio.CancelledError:
                raise
            except StateUnavailable as exc:  # Redis away: the API says so; this tries again
                log.debug("tenants not followed: %s", exc)
            except Exception:  # never silently: said, and tried again
                now = asyncio.get_running_loop().time()
                if now - warned >= 60:
                    warned = now
                    log.exception("following the tenants in the shared state failed")
            await asyncio.sleep(SYNC_EVERY)

    async def _add_shared(self, chosen: str | None) -> Tenant | None:
        """Make a tenant through Redis; None when no id was ``chosen`` and the one
        this picked was taken meanwhile (try again)."""
        if chosen is None:
            return await self._make(None)
        self._making.add(chosen)  # not joined by a sync meanwhile: it is made here
        try:
            return await self._make(chosen)
        finally:
            self._making.discard(chosen)

    async def _make(self, chosen: str | None) -> Tenant | None:
        from mockstore.shared.tenants import TenantState

        assert self.shared is not None
        any_id = chosen is None
        existing = await self.shared.listing()
        if chosen in existing:
            raise _exists(chosen)
        if len(existing) >= self.limit:
            raise self._full(existing)
        # An id is picked once there is room (a refused create takes none, as in memory).
        tenant_id = chosen or f"tenant-{await self.shared.next_auto()}"
        if tenant_id in existing:
            return None
        app = self._build(tenant_id)
        incarnation = await self.shared.new_incarnation()
        state = TenantState(self.shared.url, app.runtime, tenant_id, incarnation)
        app.share(state)
        try:
            await state.create()
            refused = await self.shared.register(tenant_id, incarnation, self.limit)
        except BaseException:
            await _stop(app)
            raise
        if refused is not None:
            await _stop(app)
            await self.shared.sweep(tenant_id, incarnation)
            if refused[0] == "exists":
                if any_id:
                    return None
                raise _exists(tenant_id)
            raise self._full(refused[1:])
        await app.start()  # registered in the journal's streams before it serves
        return self._settle(tenant_id, app)

    def _settle(self, tenant_id: str, app: Any) -> Tenant:
        """Make ``app`` the tenant's here, unless one as new is there already (then that one,
        and ``app`` is stopped); an older one (deleted elsewhere) is let go. No await."""
        existing = self._tenants.get(tenant_id)
        if existing is not None:
            if _incarnation(existing) >= app.runtime.shared.incarnation:
                self._in_background(_stop(app))
                return existing
            self._forget(tenant_id, existing)
        tenant = self._tenants[tenant_id] = Tenant(tenant_id, app)
        return tenant

    async def _joined(self, tenant_id: str, incarnation: int) -> Tenant | None:
        """The tenant, built here by the join under way or a new one (None: it is gone)."""
        return await asyncio.shield(self._join_task(tenant_id, incarnation))

    def _join_task(self, tenant_id: str, incarnation: int) -> asyncio.Task[Tenant | None]:
        """The join of a tenant under way here, or one started (off any deadline)."""
        task = self._joining.get(tenant_id)
        if task is None:
            task = asyncio.get_running_loop().create_task(
                self._join(tenant_id, incarnation), context=outside_any_deadline()
            )
            self._joining[tenant_id] = task

            def done(finished: asyncio.Task[Tenant | None]) -> None:
                if self._joining.get(tenant_id) is finished:
                    del self._joining[tenant_id]
                if not finished.cancelled():
                    finished.exception()  # retrieved: a failed join is said by whoever waits

            task.add_done_callback(done)
        return task

    async def _join(self, tenant_id: str, incarnation: int) -> Tenant | None:
        """Build a tenant another process made (``_join_task``); None if it is gone."""
        from mockstore.shared.tenants import TenantGone, TenantState

        assert self.shared is not None
        app = self._build(tenant_id)
        state = TenantState(self.shared.url, app.runtime, tenant_id, incarnation)
        app.share(state)
        try:
            await state.join()
        except TenantGone:
            await _stop(app)
            return None
        except OverBudget as exc:  # its scenario (another than the server's) does not fit
            await _stop(app)
            raise ApiError(
                "memory_budget", f"tenant {tenant_id!r} cannot be served here: {exc}", status=507
            ) from None
        except BaseException:
            await _stop(app)
            raise
        await app.start()  # registered in the journal's streams before it serves
        return self._settle(tenant_id, app)

    def _forget(self, tenant_id: str, tenant: Tenant | None = None) -> None:
        """Let go of a tenant this process built (``tenant``: that one only, if still
        there): its journal is kept, the rest given back, its background stopped off
        every caller's path.

        Kept in the same step as it leaves the live ones (no await between): a report
        read while its background stops covers it all the same."""
        if tenant is not None and self._tenants.get(tenant_id) is not tenant:
            return
        tenant = self._tenants.pop(tenant_id, None)
        if tenant is not None:
            self.kept.keep(tenant_id, tenant.app.runtime.give_journal())
            self._in_background(_stop(tenant.app))

    async def _lookup(self, tenant_id: str) -> Tenant | None:
        """A tenant this process has not built yet (or was deleted), as Redis has it."""
        assert self.shared is not None
        # Read before the lock: a name no tenant has costs one read and waits for nothing.
        incarnation = await self.shared.incarnation(tenant_id)
        if incarnation is None:
            return None
        tenant = self._tenants.get(tenant_id)
        if tenant is not None:
            if _incarnation(tenant) >= incarnation:  # built meanwhile (or newer still)
                return tenant
            self._forget(tenant_id, tenant)
        return await self._joined(tenant_id, incarnation)

    def get(self, tenant_id: str) -> Tenant | None:
        return self._tenants.get(tenant_id)

    def delete(self, tenant_id: str) -> Tenant | None:
        """Remove a tenant: keep its journal for reports, give back the rest to the budget."""
        tenant = self._tenants.pop(tenant_id, None)
        if tenant is not None:
            self.kept.keep(tenant_id, tenant.app.runtime.give_journal())
            _close(tenant.app)
        return tenant

    def journals(self) -> list[tuple[str, Journal, bool]]:
        """(tenant id, journal, deleted) of every tenant, kept ones first, for reports."""
        kept = [(k.tenant, k.journal, True) for k in self.kept]
        live = [(t.id, t.app.runtime.journal, False) for t in self._tenants.values()]
        return kept + live

    def journal(self, tenant_id: str) -> Journal | None:
        """A live tenant's journal, or a deleted one's if it was kept."""
        tenant = self._tenants.get(tenant_id)
        return tenant.app.runtime.journal if tenant is not None else self.kept.get(tenant_id)

    async def dispatch(self, scope: Scope, receive: Receive, send: Send) -> bool:
        """Serve a request under ``/__mockstore/tenants/<id>/``; False if it is not one."""
        path: str = scope["path"]
        rest = path[len(TENANTS_PREFIX) :]
        tenant_id, slash, inner = rest.partition("/")
        if not slash:
            return False  # /__mockstore/tenants/<id> itself: the server's control API
        tenant = self._tenants.get(tenant_id)
        app: ASGIApp
        if self.shared is not None:
            app = await self._shared_app(tenant_id, tenant, inner)
        else:
            app = _unknown_tenant(tenant_id) if tenant is None else tenant.app
        prefix = TENANTS_PREFIX + tenant_id
        inner_scope = dict(scope)
        inner_scope["path"] = "/" + inner
        raw = scope.get("raw_path")
        if raw is not None:
            # The raw path keeps its own escapes; only the tenant's prefix goes.
            cut = len(prefix.encode())
            inner_scope["raw_path"] = raw[cut:] if raw[:cut] == prefix.encode() else None
        inner_scope["root_path"] = scope.get("root_path", "") + prefix
        await app(inner_scope, receive, send)
        return True

    async def _shared_app(self, tenant_id: str, tenant: Tenant | None, inner: str) -> ASGIApp:
        """What serves a request naming a tenant, as Redis has it (its app, or a refusal)."""
        from mockstore.shared.tenants import TenantGone

        try:
            if tenant is not None and tenant.app.runtime.shared.gone:
                self._forget(tenant_id, tenant)
                tenant = None
            if tenant is None and TENANT_ID.fullmatch(tenant_id):
                # Made through another process (or not at all): Redis says, not this one.
                tenant = await self._lookup(tenant_id)
            elif tenant is not None and is_control_path("/" + inner):
                # A control call reads the tenant's state first anyway (a round trip
                # off the API's path): deleted through another process, it is 404.
                await tenant.app.runtime.shared.refresh()
        except TenantGone:
            if tenant is not None:
                self._forget(tenant_id, tenant)
            tenant = None
        except ApiError as exc:  # the memory budget has no room for it in this process
            return _answer(exc.status, exc.code, exc.message)
        except StateUnavailable as exc:
            return _answer(503, "state_unavailable", f"{exc}; retry shortly")
        return _unknown_tenant(tenant_id) if tenant is None else tenant.app


def _check_id(tenant_id: Any) -> None:
    if not isinstance(tenant_id, str) or not TENANT_ID.fullmatch(tenant_id):
        raise ApiError(
            "invalid_request",
            f"a tenant id is 1-64 letters, digits, '.', '_' or '-', starting with a "
            f"letter or digit; got {tenant_id!r}",
            status=400,
        )


def _exists(tenant_id: str) -> ApiError:
    return ApiError("tenant_exists", f"tenant {tenant_id!r} already exists", status=409)


def _listed(tenant_id: str, scenario: str) -> dict[str, Any]:
    """A tenant as listed before this process has built it (``Tenant.to_json``'s fields)."""
    return {"id": tenant_id, "path": TENANTS_PREFIX + tenant_id, "scenario": scenario}


def _incarnation(tenant: Tenant) -> int:
    return tenant.app.runtime.shared.incarnation


async def _stop(app: Any) -> None:
    await app.stop_background()
    _close(app)


def _close(app: Any) -> None:
    close = getattr(app, "close", None)
    if close is not None:
        close()


def _unknown_tenant(tenant_id: str) -> ASGIApp:
    return _answer(404, "not_found", f"no tenant {tenant_id!r} on this server")


def _answer(
    status: int, code: str, message: str, headers: tuple[tuple[bytes, bytes], ...] = ()
) -> ASGIApp:
    from mockstore.errors import error_body

    body = error_body(code, message, status)
    if status == 503:
        headers = ((b"retry-after", b"1"), *headers)

    async def answer(scope: Scope, receive: Receive, send: Send) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", b"%d" % len(body)),
                    *headers,
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

    return answer
