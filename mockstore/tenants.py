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
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from mockstore.errors import ApiError
from mockstore.journal import Journal
from mockstore.kept_journals import KeptJournals
from mockstore.memory import OverBudget
from mockstore.urls import TENANT_ID, TENANTS_PREFIX

MAX_TENANTS = 32


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
    ) -> None:
        self._factory = factory
        self.limit = limit
        self._tenants: dict[str, Tenant] = {}
        self._serial = 0
        self.kept = kept if kept is not None else KeptJournals()

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
        if not isinstance(tenant_id, str) or not TENANT_ID.fullmatch(tenant_id):
            raise ApiError(
                "invalid_request",
                f"a tenant id is 1-64 letters, digits, '.', '_' or '-', starting with a "
                f"letter or digit; got {tenant_id!r}",
                status=400,
            )
        if tenant_id in self._tenants:
            raise ApiError("tenant_exists", f"tenant {tenant_id!r} already exists", status=409)
        if len(self._tenants) >= self.limit:
            existing = ", ".join(sorted(self._tenants))
            raise ApiError(
                "too_many_tenants",
                f"this server holds its limit of {self.limit} tenants ({existing}); "
                f"DELETE {TENANTS_PREFIX}<id> the ones no longer used",
                status=507,
            )
        try:
            app = self._factory(tenant_id)
        except OverBudget as exc:
            raise ApiError(
                "memory_budget", f"tenant {tenant_id!r} was not created: {exc}", status=507
            ) from None
        tenant = self._tenants[tenant_id] = Tenant(tenant_id, app)
        return tenant

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


def _close(app: Any) -> None:
    close = getattr(app, "close", None)
    if close is not None:
        close()


def _unknown_tenant(tenant_id: str) -> ASGIApp:
    from mockstore.errors import error_body

    body = error_body("not_found", f"no tenant {tenant_id!r} on this server")

    async def answer(scope: Scope, receive: Receive, send: Send) -> None:
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

    return answer
