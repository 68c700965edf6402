"""``mockstore.Control``: a typed Python client for the control API under ``/__mockstore``.

Everything a test needs to steer a running mock (load a scenario, reset, move the
clock, issue and revoke keys, lift bans, read and verify the request journal, the
report, tenants) is a method here, so a test suite never hand-builds control
requests. Each method is one HTTP call through ``httpx.Client``; it returns one of
the dataclasses of ``mockstore.control_types`` and raises ``ControlError``.
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

How the two clients share one definition: each method builds a ``Call`` (method,
path, body, how to read the answer) with the functions below, which do no I/O;
``Control`` sends it with ``httpx.Client``, ``AsyncControl`` with ``httpx.AsyncClient``.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Generic, Self, TypeVar
from urllib.parse import quote

import httpx

from mockstore import urls
from mockstore.control_types import (
    ClockState,
    ControlError,
    Health,
    JournalEntry,
    KeyInfo,
    Report,
    ResetResult,
    ScenarioInfo,
    TenantInfo,
    Verification,
    VerificationError,
    decode,
)

__all__ = ["Control", "ControlError", "VerificationError"]

T = TypeVar("T")
log = logging.getLogger("mockstore.control")

# Sent on every call: the control API's CSRF rule accepts requests that carry it,
# which a browser page cannot send cross-origin without a preflight.
CLIENT_HEADER = {"X-Mockstore-Client": "python"}
DEFAULT_URL = "http://127.0.0.1:8080"  # where `mockstore serve` listens by default
IN_PROCESS_URL = "http://mockstore"  # the host name used with an in-process transport


@dataclass(frozen=True, slots=True)
class Call(Generic[T]):
    """One control API request and how to read its answer; no I/O."""

    method: str
    path: str
    read: Callable[[httpx.Response], T]
    expect: tuple[int, ...] = (200,)
    params: dict[str, Any] | None = None
    json_body: Any = None
    content: bytes | None = None
    headers: dict[str, str] | None = None


def _reader(kind: type[T]) -> Callable[[httpx.Response], T]:
    return lambda response: decode(kind, _json(response))


def _json(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        request = response.request
        raise ControlError(
            response.status_code,
            "unexpected_answer",
            f"{request.method} {request.url.path} did not answer JSON: {response.text[:200]!r}",
        ) from None


def _nothing(response: httpx.Response) -> None:
    return None


def _params(**values: Any) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


# -- every call, built without I/O (shared by Control and AsyncControl) ----------------


class Calls:
    """The requests behind each method, in the order of the README's control API table."""

    @staticmethod
    def health() -> Call[Health]:
        return Call("GET", "/health", _reader(Health))

    @staticmethod
    def scenario() -> Call[ScenarioInfo]:
        return Call("GET", "/scenario", _reader(ScenarioInfo))

    @staticmethod
    def load_scenario(scenario: Any, file: str | None) -> Call[ScenarioInfo]:
        from mockstore.scenario.loader import ScenarioError
        from mockstore.scenario.source import ScenarioNotFound, resolve_scenario

        if isinstance(scenario, Mapping):
            body = json.dumps(scenario).encode()
            media = "application/json"
        else:
            try:
                source = resolve_scenario(scenario, label=file)
            except ScenarioNotFound as exc:
                raise ControlError(None, "scenario_not_found", str(exc)) from None
            except ScenarioError as exc:
                raise ControlError(
                    None,
                    "invalid_scenario",
                    "the scenario cannot be read",
                    [str(p) for p in exc.problems],
                ) from None
            body = source.text.encode("utf-8")
            media = "application/yaml"
            # A file or a bundled scenario names itself; ``file`` names only text.
            file = source.file if source.kind != "text" else file
        return Call(
            "PUT",
            "/scenario",
            _reader(ScenarioInfo),
            params=_params(file=file),
            content=body,
            headers={"Content-Type": media},
        )

    @staticmethod
    def reset() -> Call[ResetResult]:
        return Call("POST", "/reset", _reader(ResetResult), json_body={})

    @staticmethod
    def clock() -> Call[ClockState]:
        return Call("GET", "/clock", _reader(ClockState))

    @staticmethod
    def advance(seconds: float) -> Call[ClockState]:
        return Call("POST", "/clock", _reader(ClockState), json_body={"advance_seconds": seconds})

    @staticmethod
    def set_time(when: str | datetime) -> Call[ClockState]:
        if isinstance(when, datetime):
            if when.tzinfo is None:
                when = when.replace(tzinfo=UTC)
            when = when.astimezone(UTC).isoformat().replace("+00:00", "Z")
        return Call("POST", "/clock", _reader(ClockState), json_body={"set": when})

    @staticmethod
    def keys() -> Call[list[KeyInfo]]:
        return Call("GET", "/keys", _reader(list[KeyInfo]))  # type: ignore[arg-type]

    @staticmethod
    def issue_key(
        plan: str | Mapping[str, int], key: str | None, tenant: str | None
    ) -> Call[KeyInfo]:
        body: dict[str, Any] = {"plan": dict(plan) if isinstance(plan, Mapping) else plan}
        body.update(_params(key=key, tenant=tenant))
        return Call("POST", "/keys", _reader(KeyInfo), expect=(201,), json_body=body)

    @staticmethod
    def revoke_key(key: str) -> Call[None]:
        return Call("DELETE", "/keys/" + _segment(key), _nothing, expect=(204,))

    @staticmethod
    def lift_ban(key: str) -> Call[bool]:
        return Call("DELETE", "/bans/" + _segment(key), lambda r: bool(_json(r)["lifted"]))

    @staticmethod
    def pets(tenant: str | None) -> Call[list[dict[str, Any]]]:
        return Call("GET", "/pets", _reader(list[dict[str, Any]]), params=_params(tenant=tenant))  # type: ignore[arg-type]

    @staticmethod
    def requests(
        operation: str | None, key: str | None, status: int | None, since: int | None
    ) -> Call[list[JournalEntry]]:
        def read(response: httpx.Response) -> list[JournalEntry]:
            return decode(list[JournalEntry], _json(response).get("entries"))  # type: ignore[arg-type]

        params = _params(operation=operation, key=key, status=status, since=since)
        return Call("GET", "/requests", read, params=params)

    @staticmethod
    def clear_requests() -> Call[None]:
        return Call("DELETE", "/requests", _nothing, expect=(200, 204))

    @staticmethod
    def verify(operation: str | None, criteria: dict[str, Any]) -> Call[Verification]:
        if all(criteria.get(n) is None for n in ("count", "at_least", "at_most")):
            criteria["at_least"] = 1
        body = _params(operation=operation, **criteria)

        def read(response: httpx.Response) -> Verification:
            verification = decode(Verification, _json(response))
            if not verification.ok:
                raise VerificationError(verification)
            return verification

        return Call("POST", "/verify", read, json_body=body)

    @staticmethod
    def report(since: int | None, timeline: bool) -> Call[Report]:
        def read(response: httpx.Response) -> Report:
            raw = _json(response)
            report = decode(Report, raw)
            return Report(
                report.summary,
                report.findings,
                report.rules,
                report.coverage,
                report.timeline,
                raw,
            )

        params = _params(since=since, include="timeline" if timeline else None)
        return Call("GET", "/report", read, params=params)

    @staticmethod
    def har(since: int | None, mask: bool) -> Call[dict[str, Any]]:
        params = _params(since=since, mask="true" if mask else "false")
        return Call("GET", "/requests.har", _json, params=params)

    @staticmethod
    def tenants() -> Call[list[TenantInfo]]:
        return Call("GET", "/tenants", _reader(list[TenantInfo]))  # type: ignore[arg-type]

    @staticmethod
    def create_tenant(tenant_id: str | None) -> Call[TenantInfo]:
        return Call(
            "POST", "/tenants", _reader(TenantInfo), expect=(201,), json_body=_params(id=tenant_id)
        )

    @staticmethod
    def delete_tenant(tenant_id: str) -> Call[None]:
        return Call("DELETE", "/tenants/" + _segment(tenant_id), _nothing, expect=(204,))


def _segment(value: str) -> str:
    """``value`` as one path segment: ``/``, ``?``, ``%`` and dots cannot change the path."""
    quoted = quote(value, safe="")
    # "." and ".." are unreserved, so quote() keeps them, but as whole segments they
    # would be read as the current or parent directory.
    return quoted.replace(".", "%2E") if quoted.strip(".") == "" else quoted


def error_from(response: httpx.Response) -> ControlError:
    """The ``ControlError`` for a refused call, from the server's Error body if it sent one."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        return ControlError(
            response.status_code,
            str(body.get("code", f"http_{response.status_code}")),
            str(body.get("message", response.reason_phrase)),
            [str(p) for p in body.get("problems", [])],
        )
    text = response.text.strip() or response.reason_phrase
    request = response.request
    return ControlError(
        response.status_code,
        f"http_{response.status_code}",
        f"{request.method} {request.url.path}: {text[:200]}",
    )


def unreachable(url: str, exc: Exception) -> ControlError:
    return ControlError(None, "unreachable", f"cannot reach mockstore at {url}: {exc!r}")


class ClientBase:
    """What both clients share: the address, the token, the headers, finding the root."""

    def __init__(self, url: str | None, token: str | None, has_transport: bool) -> None:
        given = (url or (IN_PROCESS_URL if has_transport else DEFAULT_URL)).rstrip("/")
        self.given_url = given
        self.url, self._candidates = urls.control_root(given)
        self.note: str | None = None
        self.token = token
        self._headers = dict(CLIENT_HEADER)
        if token:
            self._headers["Authorization"] = f"Bearer {token}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"

    @property
    def control_url(self) -> str:
        """The control API's own address, ``<root>/__mockstore``."""
        return self.url + urls.CONTROL_PREFIX

    def _request_args(self, call: Call[Any]) -> dict[str, Any]:
        headers = dict(self._headers)
        if call.headers:
            headers.update(call.headers)
        return {
            "method": call.method,
            "url": self.control_url + call.path,
            "params": call.params,
            "json": call.json_body,
            "content": call.content,
            "headers": headers,
        }

    def _found(self, root: str | None) -> None:
        """Settle the root after probing (``None``: nothing answered; keep the given URL)."""
        self._candidates = ()
        if root is None or root == self.url:
            return
        self.note = urls.explain_root(self.given_url, root)
        log.info("%s", self.note)
        self.url = root

    def _tenant_url(self, tenant_id: str) -> str:
        return self.url + urls.tenant_path(tenant_id)

    def _with_url(self, tenant: TenantInfo) -> TenantInfo:
        return TenantInfo(tenant.id, tenant.path, tenant.scenario, self.url + tenant.path)

    @staticmethod
    def _read(call: Call[T], response: httpx.Response) -> T:
        if response.status_code not in call.expect:
            raise error_from(response)
        return call.read(response)


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
        timeout: float = 10.0,
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
    ) -> list[JournalEntry]:
        """Journal entries, oldest first, filtered; ``key`` is the full key.

        ``since`` keeps entries after that sequence number (see ``reset``).
        """
        return self._run(Calls.requests(operation, key, status, since))

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

    def report(self, *, since: int | None = None, timeline: bool = False) -> Report:
        """Coverage, etiquette findings and summary over the requests after ``since``.

        ``timeline=True`` adds one row per request (what the HTML report charts).
        """
        return self._run(Calls.report(since, timeline))

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
