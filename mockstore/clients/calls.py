"""What both control clients share: every control API call, built without I/O.

Each method of ``Control`` and ``AsyncControl`` builds a ``Call`` (method, path,
body, how to read the answer) with ``Calls``, which does no I/O; ``Control``
sends it with ``httpx.Client``, ``AsyncControl`` with ``httpx.AsyncClient``, so
the two clients cannot drift apart. ``ClientBase`` holds what they share besides:
the address (the root is found from the API base or a tenant's root, see
``mockstore.urls``), the token and the headers.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx

from mockstore import urls
from mockstore.clients.types import (
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

T = TypeVar("T")
log = logging.getLogger("mockstore.control")

# Sent on every call: the control API's CSRF rule accepts requests that carry it,
# which a browser page cannot send cross-origin without a preflight.
CLIENT_HEADER = {"X-Mockstore-Client": "python"}
DEFAULT_URL = "http://127.0.0.1:8080"  # where `mockstore serve` listens by default
DEFAULT_TIMEOUT = 10.0  # seconds for one control call, either client
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
        # No body: the reset reads none, and a request in one piece is one write and
        # one read of the server (with a body, httpx writes the head and the body apart).
        return Call("POST", "/reset", _reader(ResetResult))

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
        operation: str | None,
        key: str | None,
        status: int | None,
        since: int | None,
        run: int | str | None = None,
    ) -> Call[list[JournalEntry]]:
        def read(response: httpx.Response) -> list[JournalEntry]:
            return decode(list[JournalEntry], _json(response).get("entries"))  # type: ignore[arg-type]

        params = _params(operation=operation, key=key, status=status, since=since, run=run)
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
    def report(since: int | None, timeline: bool, run: int | str | None = None) -> Call[Report]:
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

        params = _params(since=since, include="timeline" if timeline else None, run=run)
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
