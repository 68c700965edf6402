"""The one replay engine: recorded requests re-sent to a fresh mock at their recorded instants.

``mockstore replay`` and ``mockstore drift`` both build a ``Replayer`` from a
scenario and a recording: an in-process mock on a *manual* clock that starts
where the recording started, and before each request is set to the scenario
time it was recorded at (``_mockstore.time``, or ``startedDateTime`` for a HAR
from elsewhere), the wall clock to its recorded wall time. So rate-limit
windows, bans, ``Retry-After``, fault time windows and ``Date`` see the same
instants as in the recording, whether it was made on a running or a manual
clock. Keys the session issued through the control API (``log._mockstore``)
are issued again first.

Recorded tokens are translated by ``Tokens``: in a recording whose tokens are
aliases (``keys.key_alias``: a masked HAR, or ``mockstore record``'s), the
scenario's keys are found again by their aliases, issued keys are issued afresh
under new tokens, and any other token becomes one the mock does not know, so
each request authenticates (or fails to) as it did.

Requests go straight to the ASGI app (the call ``httpx.ASGITransport`` makes),
so the header list, raw query string and client address are exactly the
recorded ones: httpx would add its own ``User-Agent``/``Accept`` headers, and a
scenario rule may match on headers.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from mockstore import encoding
from mockstore.app import MockstoreApp, create_app
from mockstore.clock import Clock, Timebase, no_wait
from mockstore.keys import key_alias
from mockstore.reports.har import Recorded
from mockstore.scenario import Scenario

# Headers the server's transport owns; the app never saw them as sent.
_NOT_FORWARDED = frozenset({"content-length", "transfer-encoding", "connection"})


@dataclass
class Replayed:
    """What the fresh mock answered (``error`` when the connection broke)."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes
    error: str | None = None


async def call(
    app: Any,
    method: str,
    path: str,
    query: str,
    headers: list[tuple[str, str]],
    body: bytes,
    client: str,
    declared: int | None = None,
) -> Replayed:
    """One request to an ASGI app, with exactly these headers and this client address.

    ``declared``: the Content-Length to send instead of the body's own (a body
    the app refuses by its length, which it never reads).
    """
    raw_headers = [
        (_octets(name.lower()), _octets(value))
        for name, value in headers
        if name.lower() not in _NOT_FORWARDED
    ]
    if body or declared is not None:
        length = len(body) if declared is None else declared
        raw_headers.append((b"content-length", b"%d" % length))
    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode("utf-8"),
        "query_string": _octets(query),
        "root_path": "",
        "headers": raw_headers,
        "client": (client, 50000),
        "server": ("mockstore-replay", 80),
    }
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return {"type": "http.disconnect"}

    status, out_headers, chunks = 0, [], []

    async def send(message: dict[str, Any]) -> None:
        nonlocal status, out_headers
        if message["type"] == "http.response.start":
            status = message["status"]
            out_headers = [
                (k.decode("latin-1"), v.decode("latin-1")) for k, v in message.get("headers", [])
            ]
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    try:
        await app(scope, receive, send)
    except Exception as exc:  # a connection fault surfaces as an exception in-process
        return Replayed(status, out_headers, b"".join(chunks), f"{type(exc).__name__}: {exc}")
    return Replayed(status, out_headers, _content(out_headers, b"".join(chunks)))


def _content(headers: list[tuple[str, str]], body: bytes) -> bytes:
    """The body as its content: a coded one (``http.compression``) decoded, as a recording keeps
    the provider's (the recorder journals content, not coded bytes)."""
    coding = next((v.strip().lower() for k, v in headers if k.lower() == "content-encoding"), "")
    if coding in ("gzip", "deflate") and body:
        try:
            return encoding.decode(coding, body)
        except (OSError, EOFError, zlib.error):
            return body
    return body


def _octets(text: str) -> bytes:
    """Header or query text as the bytes a client sent: Latin-1, else (a HAR from a
    browser may hold decoded text) UTF-8."""
    try:
        return text.encode("latin-1")
    except UnicodeEncodeError:
        return text.encode("utf-8")


def bearer(headers: list[tuple[str, str]]) -> str | None:
    """The token of a ``Bearer`` Authorization header, if the request has one."""
    for name, value in headers:
        if name.lower() == "authorization":
            scheme, _, token = value.strip().partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                return token.strip()
    return None


class Tokens:
    """Tokens of an aliased recording -> tokens the fresh mock answers as it did then.

    A scenario key stands for its alias (and for itself); a key the session
    issued gets a new token; any other token becomes one the mock does not know.
    """

    def __init__(self, scenario: Scenario) -> None:
        self.known: dict[str, str] = {}
        for spec in scenario.keys:
            self.known[key_alias(spec.key)] = spec.key
            self.known[spec.key] = spec.key
            if spec.recorded_as is not None:
                self.known[spec.recorded_as] = spec.key
        self.scenario_keys = frozenset(spec.key for spec in scenario.keys)
        self._fresh = 0

    def issued(self, recorded: str) -> str:
        """A new token for a key the session issued (as the recording shows its token)."""
        self._fresh += 1
        token = self.known[recorded] = f"replay-issued-{self._fresh}"
        return token

    def token(self, recorded: str) -> str:
        """The token to send for one the recording shows."""
        token = self.known.get(recorded)
        if token is None:
            # A token the mock did not know: one it does not know now either.
            self._fresh += 1
            token = self.known[recorded] = f"replay-unknown-{self._fresh}"
        return token

    def headers(self, headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """``headers`` with the bearer token of Authorization translated."""
        return [
            (name, self._authorization(value) if name.lower() == "authorization" else value)
            for name, value in headers
        ]

    def _authorization(self, value: str) -> str:
        scheme, _, recorded = value.partition(" ")
        if not recorded or scheme.lower() != "bearer":
            return value  # malformed then, malformed now, whatever the token was
        return f"{scheme} {self.token(recorded)}"


def plan_for(key: dict[str, Any], scenario: Scenario) -> str | dict[str, int]:
    """The plan to issue a recorded key on: its named plan if the figures agree, else them."""
    name = key.get("plan")
    plan = scenario.plans.get(name) if isinstance(name, str) else None
    minute, day = key.get("per_minute"), key.get("per_day")
    if plan is not None and (minute is None or (plan.per_minute, plan.day) == (minute, day)):
        return plan.name
    if minute is not None and day is None:
        return {"per_minute": int(minute)}  # a plan without a day allowance
    return {"per_minute": int(minute or 60), "per_day": int(day or 1000)}


class Replayer:
    """A fresh in-process mock of ``scenario`` on a manual clock, for one recording."""

    def __init__(
        self, scenario: Scenario, recorded: list[Recorded], tokens: Tokens | None = None
    ) -> None:
        first = recorded[0] if recorded else None
        start = first.time - (first.elapsed or 0.0) if first else 0.0
        # The wall clock too is set to the recorded one, so an HTTP-date
        # Retry-After (written on the wall clock) comes out as recorded.
        self._wall = first.wall if first else 0.0
        self.clock = Clock(start=start, mode="manual", wall=lambda: self._wall)
        # A scenario's latency is not waited: a replay compares answers, as fast as it can.
        self.app: MockstoreApp = create_app(
            scenario, clock=self.clock, timebase=Timebase(wait=no_wait)
        )
        self.scenario = scenario
        self.tokens = tokens

    async def issue(self, keys: Iterable[dict[str, Any]]) -> list[str]:
        """Issue the keys the session issued, as it did; a warning for each that fails."""
        warnings = []
        for key in keys:
            token = str(key.get("key"))
            if self.tokens is not None:
                token = self.tokens.issued(token)
            body: dict[str, Any] = {"key": token, "plan": plan_for(key, self.scenario)}
            if key.get("tenant"):
                body["tenant"] = str(key["tenant"]).replace("*", "_").replace("~", "-")
            answer = await call(
                self.app,
                "POST",
                "/__mockstore/keys",
                "",
                [("content-type", "application/json")],
                json.dumps(body).encode(),
                "127.0.0.1",
            )
            if answer.status != 201:
                warnings.append(
                    f"could not issue the recorded key {str(key.get('key'))[:4]}...: "
                    f"{answer.status} {answer.body.decode('utf-8', 'replace')}"
                )
        return warnings

    async def send(
        self,
        item: Recorded,
        *,
        path: str | None = None,
        body: bytes | None = None,
        declared: int | None = None,
        query: str | None = None,
    ) -> Replayed:
        """Re-send ``item`` at its recorded instant (to ``path``, with ``query`` and
        ``body``, if given)."""
        self.clock.set(item.time)
        self._wall = item.wall
        headers = self.tokens.headers(item.headers) if self.tokens is not None else item.headers
        return await call(
            self.app,
            item.method,
            item.path if path is None else path,
            item.query if query is None else query,
            headers,
            item.body if body is None else body,
            item.client,
            declared,
        )
