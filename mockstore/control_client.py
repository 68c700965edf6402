"""``mockstore.Control``: a typed Python client for the control API under ``/__mockstore``.

Everything a test needs to steer a running mock (load a scenario, reset, move the
clock, issue and revoke keys, lift bans, read and verify the request journal) is a
method here, so a test suite never hand-builds control requests. It is a thin layer
over ``httpx.Client``: each method is one HTTP call, and a failed call raises
``ControlError`` carrying the server's own error code and message.

    from mockstore import Control

    with Control("http://127.0.0.1:8080") as mock:
        mock.reset()
        key = mock.issue_key("free")["key"]
        ...  # exercise the client under test against http://127.0.0.1:8080/v1
        mock.verify("createPet", count=1, body_contains={"name": "Rex"})
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from typing import Any, Self
from urllib.parse import quote

import httpx

from mockstore.urls import CONTROL_PREFIX as PREFIX

__all__ = ["Control", "ControlError", "VerificationError"]


class ControlError(Exception):
    """A control API call failed.

    ``status`` is the HTTP status (``None`` when the server could not be reached),
    ``code`` and ``message`` come from the server's error body, and ``problems``
    lists every ``file:line:column: path: message`` of a refused scenario.
    """

    def __init__(
        self,
        status: int | None,
        code: str,
        message: str,
        problems: list[str] | None = None,
    ) -> None:
        self.status = status
        self.code = code
        self.message = message
        self.problems = list(problems or [])
        super().__init__(self._text())

    def _text(self) -> str:
        head = (
            f"{self.code}: {self.message}"
            if self.status is None
            else (f"{self.status} {self.code}: {self.message}")
        )
        # The problems are the useful part of a refused scenario: show them in the
        # traceback a failing test prints, one per line, as `mockstore validate` does.
        return "\n".join([head, *(f"  {p}" for p in self.problems)])


class VerificationError(AssertionError):
    """``Control.verify`` found the wrong number of matching requests.

    An ``AssertionError`` so pytest reports it as a test failure, not an error;
    ``str()`` is the server's explanation, including the closest requests that did
    not match. ``count`` is how many matched; ``closest`` holds those entries.
    """

    def __init__(self, message: str, count: int, closest: list[dict[str, Any]]) -> None:
        self.count = count
        self.closest = closest
        super().__init__(message)


class Control:
    """A client of one mockstore server's control API.

    ``url`` is the server's base address (``http://host:port``), not the API's
    ``/v1`` base path. ``token`` is the server's ``--control-token``, if it has one.
    ``transport`` replaces the network (for example ``httpx.MockTransport`` in
    tests of code that uses this client).
    """

    def __init__(
        self,
        url: str,
        token: str | None = None,
        *,
        timeout: float = 10.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        # The server refuses a POST that a web page could send cross-site (no
        # JSON body, no custom header); naming the client lets body-less calls
        # such as reset() through.
        headers = {"X-Mockstore-Client": "mockstore.Control"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self._http = httpx.Client(
            base_url=self.url + PREFIX,
            headers=headers,
            timeout=timeout,
            transport=transport,
        )

    def __repr__(self) -> str:
        return f"Control({self.url!r})"

    # -- plumbing -------------------------------------------------------------

    def _call(
        self,
        method: str,
        path: str,
        *,
        expect: tuple[int, ...] = (200,),
        params: dict[str, Any] | None = None,
        json_body: Any = None,
        content: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> httpx.Response:
        if params is not None:
            params = {k: v for k, v in params.items() if v is not None}
        try:
            response = self._http.request(
                method,
                path,
                params=params,
                json=json_body,
                content=content.encode("utf-8") if content is not None else None,
                headers=headers,
            )
        except httpx.TransportError as exc:
            raise ControlError(
                None, "unreachable", f"cannot reach mockstore at {self.url}: {exc!r}"
            ) from exc
        if response.status_code not in expect:
            raise _error_from(response)
        return response

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        return self._call(method, path, **kwargs).json()

    # -- server and scenario --------------------------------------------------

    def health(self) -> dict[str, Any]:
        """``{"status": "ok", "version", "scenario", "time"}``; needs no token."""
        return self._json("GET", "/health")

    def scenario(self) -> dict[str, Any]:
        """A summary of the running scenario, including its YAML ``source``."""
        return self._json("GET", "/scenario")

    def load_scenario(
        self, scenario: str | os.PathLike[str] | dict[str, Any], *, file: str | None = None
    ) -> dict[str, Any]:
        """Replace the running scenario; the state starts afresh from it.

        A ``str`` is the scenario's YAML text, a path (``pathlib.Path``) is read,
        a ``dict`` is sent as JSON. ``file`` names the source in error messages
        (a path names itself). A scenario that fails validation raises
        ``ControlError`` with every problem in ``problems``, and the running
        scenario stays as it was.
        """
        if isinstance(scenario, dict):
            body = json.dumps(scenario)
            media = "application/json"
        elif isinstance(scenario, str):
            body, media = scenario, "application/yaml"
        else:
            path = os.fspath(scenario)
            with open(path, encoding="utf-8") as handle:
                body = handle.read()
            media = "application/yaml"
            file = file or path
        return self._json(
            "PUT",
            "/scenario",
            params={"file": file},
            content=body,
            headers={"Content-Type": media},
        )

    def reset(self) -> dict[str, Any]:
        """Back to the scenario's initial state: pets, counters, bans, clock, call counts.

        The answer's ``journal_seq`` is the journal's last sequence number, so
        ``requests(since=...)`` can ask for what came after the reset.
        """
        return self._json("POST", "/reset")

    # -- clock ----------------------------------------------------------------

    def clock(self) -> dict[str, Any]:
        """``{"now", "unix", "mode", "start", "elapsed_seconds"}`` of the scenario clock."""
        return self._json("GET", "/clock")

    def advance(self, seconds: float) -> dict[str, Any]:
        """Move the scenario clock forward by ``seconds`` (back, if negative)."""
        return self._json("POST", "/clock", json_body={"advance_seconds": seconds})

    def set_time(self, when: str | datetime) -> dict[str, Any]:
        """Set the scenario clock to ``when`` (ISO 8601 text, or a datetime; naive means UTC)."""
        if isinstance(when, datetime):
            if when.tzinfo is None:
                when = when.replace(tzinfo=UTC)
            when = when.astimezone(UTC).isoformat().replace("+00:00", "Z")
        return self._json("POST", "/clock", json_body={"set": when})

    # -- keys and bans --------------------------------------------------------

    def keys(self) -> list[dict[str, Any]]:
        """Every key with its plan, used and remaining allowance, and ban state."""
        return self._json("GET", "/keys")

    def issue_key(
        self,
        plan: str | dict[str, int] = "free",
        *,
        key: str | None = None,
        tenant: str | None = None,
    ) -> dict[str, Any]:
        """Issue a key on a named plan or ``{"per_minute": N, "per_day": M}``.

        Returns the key's description; its ``"key"`` is the bearer token to send.
        A fresh generated key has counters of its own, which is what keeps tests
        from sharing an allowance.
        """
        body: dict[str, Any] = {"plan": plan}
        if key is not None:
            body["key"] = key
        if tenant is not None:
            body["tenant"] = tenant
        return self._json("POST", "/keys", json_body=body, expect=(201,))

    def revoke_key(self, key: str) -> None:
        """Revoke ``key``: its next API request is answered 401 ``invalid_token``."""
        self._call("DELETE", "/keys/" + _segment(key), expect=(204,))

    def lift_ban(self, key: str) -> bool:
        """Lift ``key``'s ban; ``True`` if it was banned."""
        return bool(self._json("DELETE", "/bans/" + _segment(key))["lifted"])

    # -- the journal ----------------------------------------------------------

    def requests(
        self,
        *,
        operation: str | None = None,
        key: str | None = None,
        status: int | None = None,
        since: int | None = None,
    ) -> list[dict[str, Any]]:
        """Journal entries, oldest first, filtered; ``key`` is the full key.

        ``since`` keeps entries after that sequence number (see ``reset``).
        """
        params = {"operation": operation, "key": key, "status": status, "since": since}
        return self._json("GET", "/requests", params=params)["entries"]

    def clear_requests(self) -> None:
        """Empty the journal (sequence numbers keep growing)."""
        self._call("DELETE", "/requests", expect=(200, 204))

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
    ) -> int:
        """Assert how many journaled requests match; return that number.

        With none of ``count``, ``at_least``, ``at_most`` it asserts at least one.
        Raises ``VerificationError`` (an ``AssertionError``) with the server's
        message, which shows the closest requests that did not match.
        """
        if count is None and at_least is None and at_most is None:
            at_least = 1
        fields = {
            "operation": operation,
            "count": count,
            "at_least": at_least,
            "at_most": at_most,
            "method": method,
            "path": path,
            "key": key,
            "status": status,
            "body_contains": body_contains,
            "since": since,
        }
        answer = self._json(
            "POST", "/verify", json_body={k: v for k, v in fields.items() if v is not None}
        )
        if not answer.get("ok"):
            raise VerificationError(
                str(answer.get("message") or "verification failed"),
                int(answer.get("count", 0)),
                list(answer.get("closest") or []),
            )
        return int(answer["count"])

    def report(self) -> dict[str, Any]:
        """The coverage and etiquette report: ``{"coverage", "findings", "summary"}``."""
        return self._json("GET", "/report")

    def har(self) -> dict[str, Any]:
        """The journal as a HAR 1.2 document."""
        return self._json("GET", "/requests.har")

    # -- lifetime -------------------------------------------------------------

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _segment(value: str) -> str:
    """``value`` as one path segment: ``/``, ``?``, ``%`` and dots cannot change the path."""
    quoted = quote(value, safe="")
    # "." and ".." are unreserved, so quote() keeps them, but as whole segments they
    # would be read as the current or parent directory.
    return quoted.replace(".", "%2E") if quoted.strip(".") == "" else quoted


def _error_from(response: httpx.Response) -> ControlError:
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
