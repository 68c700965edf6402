"""``mockstore.AsyncControl``: ``Control``'s twin on ``httpx.AsyncClient``.

Same methods, same arguments, same typed answers, same ``ControlError``; every
method is awaited. With ``httpx.ASGITransport`` it drives an app in the same
process, with no server and no port::

    import httpx
    from mockstore import AsyncControl, create_app

    app = create_app("flaky-create")
    async with AsyncControl(transport=httpx.ASGITransport(app=app)) as mock:
        await mock.reset()
        key = (await mock.issue_key("pro")).key

Each method builds its request with ``mockstore.clients.calls.Calls`` (shared
with ``Control``), so the two clients cannot drift apart; a test checks that
their signatures are equal.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Self, TypeVar

import httpx

from mockstore import urls
from mockstore.clients.calls import DEFAULT_TIMEOUT, Call, Calls, ClientBase, unreachable
from mockstore.clients.types import (
    ClockState,
    Health,
    JournalEntry,
    KeyInfo,
    Report,
    ResetResult,
    ScenarioInfo,
    TenantInfo,
    Verification,
)

__all__ = ["AsyncControl"]

T = TypeVar("T")


class AsyncControl(ClientBase):
    """An async client of one mockstore server's control API; see ``Control``.

    ``transport`` may be ``httpx.ASGITransport(app=create_app())`` to drive an
    app in process (``url`` then defaults to ``http://mockstore``).
    """

    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(url, token, transport is not None)
        self._timeout = timeout
        self._transport = transport
        self._http = httpx.AsyncClient(timeout=timeout, transport=transport)

    async def _run(self, call: Call[T]) -> T:
        if self._candidates:
            await self._find_root()
        try:
            response = await self._http.request(**self._request_args(call))
        except httpx.TransportError as exc:
            raise unreachable(self.url, exc) from exc
        return self._read(call, response)

    async def _find_root(self) -> None:
        for candidate in self._candidates:
            try:
                response = await self._http.get(
                    candidate + urls.HEALTH_PATH, headers=self._headers, timeout=self._timeout
                )
            except httpx.TransportError:
                break
            if urls.is_health(response.status_code, response.content):
                self._found(candidate)
                return
        self._found(None)

    # -- server and scenario --------------------------------------------------

    async def health(self) -> Health:
        """Status, version, running scenario and scenario time; needs no token."""
        return await self._run(Calls.health())

    async def scenario(self) -> ScenarioInfo:
        """The running scenario: its summary and its YAML ``source``."""
        return await self._run(Calls.scenario())

    async def load_scenario(
        self, scenario: str | os.PathLike[str] | Mapping[str, Any], *, file: str | None = None
    ) -> ScenarioInfo:
        """Replace the running scenario (a bundled name, a path, YAML text or a mapping)."""
        return await self._run(Calls.load_scenario(scenario, file))

    async def reset(self) -> ResetResult:
        """Back to the scenario's initial state; ``journal_seq`` marks the reset."""
        return await self._run(Calls.reset())

    # -- clock ----------------------------------------------------------------

    async def clock(self) -> ClockState:
        """The scenario clock."""
        return await self._run(Calls.clock())

    async def advance(self, seconds: float) -> ClockState:
        """Move the scenario clock forward by ``seconds`` (back, if negative)."""
        return await self._run(Calls.advance(seconds))

    async def set_time(self, when: str | datetime) -> ClockState:
        """Set the scenario clock to ``when`` (ISO 8601 text, or a datetime; naive means UTC)."""
        return await self._run(Calls.set_time(when))

    # -- keys and bans --------------------------------------------------------

    async def keys(self) -> list[KeyInfo]:
        """Every key with its plan, used and remaining allowance, and ban state."""
        return await self._run(Calls.keys())

    async def issue_key(
        self,
        plan: str | Mapping[str, int] = "free",
        *,
        key: str | None = None,
        tenant: str | None = None,
    ) -> KeyInfo:
        """Issue a key on a named plan or ``{"per_minute": N, "per_day": M}``."""
        return await self._run(Calls.issue_key(plan, key, tenant))

    async def revoke_key(self, key: str) -> None:
        """Revoke ``key``: its next API request is answered 401 ``invalid_token``."""
        return await self._run(Calls.revoke_key(key))

    async def lift_ban(self, key: str) -> bool:
        """Lift ``key``'s ban; ``True`` if it was banned."""
        return await self._run(Calls.lift_ban(key))

    async def pets(self, *, tenant: str | None = None) -> list[dict[str, Any]]:
        """Every pet of the store (or of an ``isolation: per_key`` tenant), in id order."""
        return await self._run(Calls.pets(tenant))

    # -- the journal ----------------------------------------------------------

    async def requests(
        self,
        *,
        operation: str | None = None,
        key: str | None = None,
        status: int | None = None,
        since: int | None = None,
        run: int | str | None = None,
    ) -> list[JournalEntry]:
        """Journal entries, oldest first, filtered; ``key`` is the full key; ``run`` one run's."""
        return await self._run(Calls.requests(operation, key, status, since, run))

    async def clear_requests(self) -> None:
        """Empty the journal (sequence numbers keep growing)."""
        return await self._run(Calls.clear_requests())

    async def verify(
        self,
        operation: str | None = None,
        *,
        count: int | None = None,
        at_least: int | None = None,
        at_most: int | None = None,
        method: str | None = None,
        path: str | None = None,
        key: str | None = None,
        status: int | None = None,
        body_contains: dict[str, Any] | None = None,
        since: int | None = None,
    ) -> Verification:
        """Assert how many journaled requests match (``VerificationError`` otherwise)."""
        criteria = {
            "count": count, "at_least": at_least, "at_most": at_most, "method": method,
            "path": path, "key": key, "status": status, "body_contains": body_contains,
            "since": since,
        }  # fmt: skip
        return await self._run(Calls.verify(operation, criteria))

    async def report(
        self, *, since: int | None = None, timeline: bool = False, run: int | str | None = None
    ) -> Report:
        """Coverage, etiquette findings and summary; ``run`` judges one run only."""
        return await self._run(Calls.report(since, timeline, run))

    async def har(self, *, since: int | None = None, mask: bool = True) -> dict[str, Any]:
        """The journal as a HAR 1.2 document; keys masked unless ``mask=False``."""
        return await self._run(Calls.har(since, mask))

    # -- tenants --------------------------------------------------------------

    async def tenants(self) -> list[TenantInfo]:
        """The tenants of this server."""
        return [self._with_url(t) for t in await self._run(Calls.tenants())]

    async def create_tenant(self, tenant_id: str | None = None) -> TenantInfo:
        """Create an isolated tenant starting from this server's running scenario."""
        return self._with_url(await self._run(Calls.create_tenant(tenant_id)))

    async def delete_tenant(self, tenant_id: str) -> None:
        """Delete a tenant and everything it holds."""
        return await self._run(Calls.delete_tenant(tenant_id))

    def for_tenant(self, tenant: str | TenantInfo) -> AsyncControl:
        """An ``AsyncControl`` of one tenant (its own client; close it when done)."""
        root = tenant.url if isinstance(tenant, TenantInfo) else self._tenant_url(tenant)
        return AsyncControl(root, self.token, timeout=self._timeout, transport=self._transport)

    # -- lifetime -------------------------------------------------------------

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
