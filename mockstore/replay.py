"""Replay a recorded session against a fresh in-process mock and show what differs.

``mockstore replay FILE.har`` builds the mock from the scenario the HAR carries
(``--scenario`` replays against another) with a *manual* clock, and before each
request sets that clock to the scenario time the request was recorded at (``_mockstore.time``, or
``startedDateTime`` for a HAR from elsewhere). So rate-limit windows, bans,
``Retry-After``, fault time windows and ``Date`` see the same instants as in
the recording, whether it was made on a running or a manual clock. Keys the
session issued through the control API (listed in ``log._mockstore``) are
issued again first. In a masked HAR (the default export) every token is an
alias (``keys.key_alias``): the scenario's keys are found again by
computing their aliases, issued keys are issued afresh under new tokens, and
any other token is replaced by one the mock does not know, so each request
authenticates (or fails to) as it did.

Requests are sent straight to the ASGI app (the same call ``httpx.ASGITransport``
makes) so the header list, raw query string and client address are exactly the
recorded ones: httpx would add its own ``User-Agent``/``Accept`` headers, and a
scenario rule may match on headers.

Compared for each exchange: the status, every response header except
``X-Request-Id`` (a counter that differs when the HAR starts mid-session) and
``Content-Length`` (the body is compared), and the body (as JSON when both
sides are JSON; only the recorded prefix when the journal truncated it). A
recorded connection fault matches a replay that also broke the connection.
Exit status: 0 identical, 1 different, 2 unreadable input.
"""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from mockstore.app import create_app
from mockstore.clock import Clock
from mockstore.keys import key_alias
from mockstore.reports.har import ALIASES, Recorded, har_meta, read_har
from mockstore.scenario import (
    Scenario,
    load_scenario,
    load_scenario_source,
)

IGNORED_HEADERS = frozenset({"x-request-id", "content-length"})
BROKEN = frozenset({"connection_reset", "empty_response", "truncated_body", "connection_error"})
# Headers the server's transport owns; the app never saw them as sent.
_NOT_FORWARDED = frozenset({"content-length", "transfer-encoding", "connection"})
_EXCERPT = 160


@dataclass
class Replayed:
    """What the fresh mock answered (``error`` when the connection broke)."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes
    error: str | None = None


@dataclass
class Difference:
    recorded: Recorded
    problems: list[str]


@dataclass
class ReplayResult:
    scenario: str
    total: int
    differences: list[Difference] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def identical(self) -> bool:
        return not self.differences


async def call(
    app: Any,
    method: str,
    path: str,
    query: str,
    headers: list[tuple[str, str]],
    body: bytes,
    client: str,
) -> Replayed:
    """One request to an ASGI app, with exactly these headers and this client address."""
    raw_headers = [
        (name.lower().encode("latin-1"), value.encode("latin-1"))
        for name, value in headers
        if name.lower() not in _NOT_FORWARDED
    ]
    if body:
        raw_headers.append((b"content-length", b"%d" % len(body)))
    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode("utf-8"),
        "query_string": query.encode("latin-1"),
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
    return Replayed(status, out_headers, b"".join(chunks))


def _grouped(headers: list[tuple[str, str]]) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = defaultdict(list)
    for name, value in headers:
        grouped[name.lower()].append(value)
    return grouped


def _excerpt(body: bytes, at: int) -> str:
    start = max(0, at - 40)
    text = body[start : start + _EXCERPT].decode("utf-8", errors="replace")
    return ("..." if start else "") + text + ("..." if start + _EXCERPT < len(body) else "")


def compare(recorded: Recorded, replayed: Replayed) -> list[str]:
    """Where the replayed answer differs from the recorded one (empty when identical)."""
    if recorded.outcome in BROKEN or recorded.status == 0:
        if replayed.error is not None:
            return []
        return [
            f"connection: recorded a broken connection ({recorded.outcome}), "
            f"replayed a complete {replayed.status} response"
        ]
    if replayed.error is not None:
        return [
            f"connection: recorded a {recorded.status} response, "
            f"replayed a broken connection ({replayed.error})"
        ]
    problems = []
    if recorded.status != replayed.status:
        problems.append(f"status: recorded {recorded.status}, replayed {replayed.status}")
    before, after = _grouped(recorded.response_headers), _grouped(replayed.headers)
    for name in sorted((before.keys() | after.keys()) - IGNORED_HEADERS):
        was, now = before.get(name), after.get(name)
        if was != now:
            shown_was = ", ".join(repr(v) for v in was) if was else "absent"
            shown_now = ", ".join(repr(v) for v in now) if now else "absent"
            problems.append(f"header {name}: recorded {shown_was}, replayed {shown_now}")
    body = replayed.body
    expected = recorded.response_body
    if recorded.response_truncated:
        body = body[: len(expected)]
    if body != expected and not _same_json(body, expected, recorded.response_truncated):
        at = next(
            (i for i, (a, b) in enumerate(zip(expected, body, strict=False)) if a != b),
            min(len(expected), len(body)),
        )
        problems.append(
            f"body differs at byte {at}: recorded {_excerpt(expected, at)!r}, "
            f"replayed {_excerpt(body, at)!r}"
        )
    return problems


def _same_json(a: bytes, b: bytes, truncated: bool) -> bool:
    if truncated:
        return False
    try:
        return bool(json.loads(a) == json.loads(b))
    except ValueError:
        return False


def _plan_for(key: dict[str, Any], scenario: Scenario) -> str | dict[str, int]:
    name = key.get("plan")
    plan = scenario.plans.get(name) if isinstance(name, str) else None
    minute, day = key.get("per_minute"), key.get("per_day")
    if plan is not None and (minute is None or (plan.per_minute, plan.per_day) == (minute, day)):
        return plan.name
    return {"per_minute": int(minute or 60), "per_day": int(day or 1000)}


class Unmasking:
    """Aliases of a masked HAR back to tokens the fresh mock answers as it did then."""

    def __init__(self, scenario: Scenario) -> None:
        self.tokens = {key_alias(k.key): k.key for k in scenario.keys}
        self._fresh = 0

    def issued(self, alias: str) -> str:
        """A new token for a key the session issued (its alias in the HAR)."""
        self._fresh += 1
        token = self.tokens[alias] = f"replay-issued-{self._fresh}"
        return token

    def header(self, value: str) -> str:
        scheme, _, alias = value.partition(" ")
        if not alias or scheme.lower() != "bearer":
            return value  # malformed then, malformed now, whatever the token was
        token = self.tokens.get(alias)
        if token is None:
            # A token the mock did not know: one it does not know now either.
            self._fresh += 1
            token = self.tokens[alias] = f"replay-unknown-{self._fresh}"
        return f"{scheme} {token}"

    def headers(self, headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
        return [
            (name, self.header(value) if name.lower() == "authorization" else value)
            for name, value in headers
        ]


async def replay_async(
    recorded: list[Recorded],
    scenario: Scenario,
    issued_keys: list[dict[str, Any]],
    unmasking: Unmasking | None = None,
) -> tuple[list[Replayed], list[str]]:
    """Send every recorded request, in order, each at its recorded scenario time."""
    warnings: list[str] = []
    first = recorded[0] if recorded else None
    start = first.time - (first.elapsed or 0.0) if first else 0.0
    # The wall clock too is set to the recorded one, so an HTTP-date
    # Retry-After (written on the wall clock) comes out as recorded.
    wall = [first.wall if first else 0.0]
    clock = Clock(start=start, mode="manual", wall=lambda: wall[0])
    app = create_app(scenario, clock=clock)
    for key in issued_keys:
        token = str(key.get("key"))
        if unmasking is not None:
            token = unmasking.issued(token)
        body = {"key": token, "plan": _plan_for(key, scenario)}
        if key.get("tenant"):
            body["tenant"] = str(key["tenant"]).replace("*", "_").replace("~", "-")
        answer = await call(
            app,
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
    replies = []
    for item in recorded:
        clock.set(item.time)
        wall[0] = item.wall
        headers = unmasking.headers(item.headers) if unmasking is not None else item.headers
        replies.append(
            await call(app, item.method, item.path, item.query, headers, item.body, item.client)
        )
    return replies, warnings


def replay(document: dict[str, Any], scenario: Scenario) -> ReplayResult:
    """Replay a HAR document against ``scenario``; raises ``HarError`` for a bad document."""
    recorded = read_har(document)
    # A request the client abandoned before its body was complete changed
    # nothing and got no answer: there is nothing to re-send or compare.
    aborted = [r for r in recorded if r.outcome == "aborted"]
    recorded = [r for r in recorded if r.outcome != "aborted"]
    meta = har_meta(document)
    result = ReplayResult(scenario.name, len(recorded))
    unmasking = None
    if aborted:
        result.warnings.append(
            f"{len(aborted)} aborted request(s) (the client left before the body was "
            "complete) are not re-sent: they changed nothing"
        )
    if meta.get("masked"):
        if meta.get("aliases") == ALIASES:
            unmasking = Unmasking(scenario)
        else:
            result.warnings.append(
                "the HAR's bearer tokens are masked: requests will not authenticate as recorded"
            )
    if meta.get("dropped"):
        result.warnings.append(
            f"the journal had dropped {meta['dropped']} older exchanges before this export: "
            "the replay starts mid-session and may differ"
        )
    recorded_with = meta.get("scenario")
    if recorded_with and recorded_with != scenario.name:
        result.warnings.append(
            f"recorded with scenario {recorded_with!r}, replayed with {scenario.name!r}"
        )
    truncated = [r.describe() for r in recorded if r.request_truncated]
    if truncated:
        result.warnings.append(
            f"{len(truncated)} request bodies were truncated by the journal "
            f"(journal.body_bytes) and cannot be re-sent as recorded: {', '.join(truncated[:5])}"
        )
    keys = meta.get("issued_keys") or []
    replies, warnings = asyncio.run(replay_async(recorded, scenario, list(keys), unmasking))
    result.warnings.extend(warnings)
    for item, reply in zip(recorded, replies, strict=True):
        problems = compare(item, reply)
        if problems:
            result.differences.append(Difference(item, problems))
    return result


def render(result: ReplayResult, source: str) -> str:
    lines = [
        f"replayed {result.total} request(s) from {source} against scenario "
        f"{result.scenario!r} (manual clock at each recorded scenario time)"
    ]
    lines.extend(f"warning: {w}" for w in result.warnings)
    for difference in result.differences:
        lines.append(difference.recorded.describe())
        lines.extend(f"  {problem}" for problem in difference.problems)
    if result.identical:
        lines.append("no differences: every response matches the recording")
    else:
        lines.append(f"{len(result.differences)} of {result.total} response(s) differ")
    return "\n".join(lines)


def scenario_for(document: Any, spec: str | None) -> tuple[Scenario, str | None]:
    """The scenario to replay against: ``spec`` if given, else the one the HAR carries.

    Returns it with a note when neither says (an old or foreign HAR: ``default``).
    """
    if spec is not None:
        return load_scenario_source(spec), None
    meta = har_meta(document)
    source = meta.get("scenario_source")
    if isinstance(source, str) and source.strip():
        file = f"{meta.get('scenario_file') or meta.get('scenario') or 'scenario'} (from the HAR)"
        return load_scenario(source, file), None
    note = "the HAR carries no scenario source; replaying against 'default' (use --scenario)"
    return load_scenario_source("default"), note
