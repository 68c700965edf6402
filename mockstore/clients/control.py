"""``mockstore.Control``: a typed Python client for the control API under ``/__mockstore``.

Everything a test needs to steer a running mock (load a scenario, reset, move the
clock, issue and revoke keys, lift bans, read and verify the request journal, the
report, tenants) is a method here, so a test suite never hand-builds control
requests. Each method is one HTTP call through ``httpx.Client``; it returns one of
the dataclasses of ``mockstore.clients.types`` and raises ``ControlError``.
``mockstore.AsyncControl`` has the same methods, awaited.

    from mockstore import Control

    with Control("http://127.0.0.1:8080") as mock:
        mock.reset()
        key = mock.issue_key("free").key
        ...  # exercise the client under test against http://127.0.0.1:8080/v1
        mock.verify("createPet", count=1, body_contains={"name": "Rex"})

The address may be the server root, the API base the banner prints (``…/v1``), or a
tenant's root: the client finds the control API (see ``mockstore.urls``) and says
what it did in ``note`` and on the ``mockstore.control`` logger.
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

__all__ = ["Control"]

T = TypeVar("T")


class Control(ClientBase):
    """A client of one mockstore server's control API (a tenant's, given its root).

    ``url`` is the server's address: its root (``http://host:port``), the API
    base (``…/v1``) or a tenant root; default ``http://127.0.0.1:8080``.
    ``token`` is the server's ``--control-token``, if it has one. ``transport``
    replaces the network (``httpx.MockTransport``, or any ``httpx.BaseTransport``).
    """

    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        super().__init__(url, token, transport is not None)
        self._timeout = timeout
        self._transport = transport
        self._http = httpx.Client(timeout=timeout, transport=transport)

    def _run(self, call: Call[T]) -> T:
        if self._candidates:
            self._find_root()
        try:
            response = self._http.request(**self._request_args(call))
        except httpx.TransportError as exc:
            raise unreachable(self.url, exc) from exc
        return self._read(call, response)

    def _find_root(self) -> None:
        for candidate in self._candidates:
            try:
                response = self._http.get(
                    candidate + urls.HEALTH_PATH, headers=self._headers, timeout=self._timeout
                )
            except httpx.TransportError:
                break
            if urls.is_health(response.status_code, response.content):
                self._found(candidate)
                return
        self._found(None)

    # -- server and scenario --------------------------------------------------

    def health(self) -> Health:
        """Status, version, running scenario and scenario time; needs no token."""
        return self._run(Calls.health())

    def scenario(self) -> ScenarioInfo:
        """The running scenario: its summary and its YAML ``source``."""
        return self._run(Calls.scenario())

    def load_scenario(
        self, scenario: str | os.PathLike[str] | Mapping[str, Any], *, file: str | None = None
    ) -> ScenarioInfo:
        """Replace the running scenario; the state starts afresh from it.

        ``scenario`` is resolved as everywhere in mockstore: a bundled name, a
        path (``str`` or ``pathlib.Path``), YAML text, or a mapping (sent as
        JSON). ``file`` names inline text in error messages. A name that names
        nothing raises ``ControlError`` ``scenario_not_found``; a scenario that
        fails validation raises ``ControlError`` with every problem in
        ``problems``, and the running scenario stays as it was.
        """
        return self._run(Calls.load_scenario(scenario, file))

    def reset(self) -> ResetResult:
        """Back to the scenario's initial state: pets, counters, bans, clock, call counts.

        ``journal_seq`` is the journal's last sequence number, so
        ``requests(since=...)`` can ask for what came after the reset.
        """
        return self._run(Calls.reset())

    # -- clock ----------------------------------------------------------------

    def clock(self) -> ClockState:
        """The scenario clock: ``now``, ``unix``, ``mode``, ``start``, ``elapsed_seconds``."""
        return self._run(Calls.clock())

    def advance(self, seconds: float) -> ClockState:
        """Move the scenario clock forward by ``seconds`` (back, if negative)."""
        return self._run(Calls.advance(seconds))

    def set_time(self, when: str | datetime) -> ClockState:
        """Set the scenario clock to ``when`` (ISO 8601 text, or a datetime; naive means UTC)."""
        return self._run(Calls.set_time(when))

    # -- keys and bans --------------------------------------------------------

    def keys(self) -> list[KeyInfo]:
        """Every key with its plan, used and remaining allowance, and ban state."""
        return self._run(Calls.keys())

    def issue_key(
        self,
        plan: str | Mapping[str, int] = "free",
        *,
        key: str | None = None,
        tenant: str | None = None,
    ) -> KeyInfo:
        """Issue a key on a named plan or ``{"per_minute": N, "per_day": M}``.

        ``.key`` of the answer is the bearer token to send. A fresh generated key
        has counters of its own, which is what keeps tests from sharing an allowance.
        """
        return self._run(Calls.issue_key(plan, key, tenant))

    def revoke_key(self, key: str) -> None:
        """Revoke ``key``: its next API request is answered 401 ``invalid_token``."""
        return self._run(Calls.revoke_key(key))

    def lift_ban(self, key: str) -> bool:
        """Lift ``key``'s ban; ``True`` if it was banned."""
        return self._run(Calls.lift_ban(key))

    def pets(self, *, tenant: str | None = None) -> list[dict[str, Any]]:
        """Every pet of the store (or of an ``isolation: per_key`` tenant), in id order."""
        return self._run(Calls.pets(tenant))

    # -- the journal ----------------------------------------------------------

    def requests(
        self,
        *,
        operation: str | None = None,
        key: str | None = None,
        status: int | None = None,
        since: int | None = None,
        run: int | str | None = None,
    ) -> list[JournalEntry]:
        """Journal entries, oldest first, filtered; ``key`` is the full key.

        ``since`` keeps entries after that sequence number (see ``reset``); ``run``
        one run's (a number, or ``"current"``).
        """
        return self._run(Calls.requests(operation, key, status, since, run))

    def clear_requests(self) -> None:
        """Empty the journal (sequence numbers keep growing)."""
        return self._run(Calls.clear_requests())

    def verify(
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
        """Assert how many journaled requests match; the answer's ``count`` says how many.

        With none of ``count``, ``at_least``, ``at_most`` it asserts at least one.
        Raises ``VerificationError`` (a ``ControlError`` and an ``AssertionError``)
        with the server's message, which shows the closest requests that did not match.
        """
        criteria = {
            "count": count, "at_least": at_least, "at_most": at_most, "method": method,
            "path": path, "key": key, "status": status, "body_contains": body_contains,
            "since": since,
        }  # fmt: skip
        return self._run(Calls.verify(operation, criteria))

    def report(
        self, *, since: int | None = None, timeline: bool = False, run: int | str | None = None
    ) -> Report:
        """Coverage, etiquette findings and summary over the requests after ``since``.

        Every rule judges within a run; ``run`` (a number, or ``"current"``) judges one
        run only, and ``summary.runs`` says which were judged. ``timeline=True`` adds one
        row per request (what the HTML report charts).
        """
        return self._run(Calls.report(since, timeline, run))

    def har(self, *, since: int | None = None, mask: bool = True) -> dict[str, Any]:
        """The journal as a HAR 1.2 document; keys masked unless ``mask=False``."""
        return self._run(Calls.har(since, mask))

    # -- tenants --------------------------------------------------------------

    def tenants(self) -> list[TenantInfo]:
        """The tenants of this server (see ``create_tenant``)."""
        return [self._with_url(t) for t in self._run(Calls.tenants())]

    def create_tenant(self, tenant_id: str | None = None) -> TenantInfo:
        """Create an isolated tenant: a server of its own (pets, counters, keys, clock,
        journal) under ``.url``, starting from this server's running scenario."""
        return self._with_url(self._run(Calls.create_tenant(tenant_id)))

    def delete_tenant(self, tenant_id: str) -> None:
        """Delete a tenant and everything it holds."""
        return self._run(Calls.delete_tenant(tenant_id))

    def for_tenant(self, tenant: str | TenantInfo) -> Control:
        """A ``Control`` of one tenant (its own client; close it when done)."""
        root = tenant.url if isinstance(tenant, TenantInfo) else self._tenant_url(tenant)
        return Control(root, self.token, timeout=self._timeout, transport=self._transport)

    # -- lifetime -------------------------------------------------------------

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
