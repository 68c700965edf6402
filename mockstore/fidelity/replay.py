"""``mockstore replay``: a recorded session re-sent to a fresh mock, and what differs, exactly.

The replay is the one engine's (``replayer``): the scenario the HAR carries
(``--scenario`` replays against another) on a manual clock set to each
request's recorded instant, the session's keys issued again, the tokens of a
masked HAR found again by their aliases.

Compared for each exchange: the status, every response header except
``X-Request-Id`` (a counter that differs when the HAR starts mid-session) and
``Content-Length`` (the body is compared), and the body (as JSON when both
sides are JSON; only the recorded prefix when the journal truncated it). A
recorded connection fault matches a replay that also broke the connection.
Exit status: 0 identical, 1 different, 2 unreadable input.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from mockstore.fidelity.evidence import rebased
from mockstore.fidelity.recording import Recording, recording_of
from mockstore.fidelity.replayer import Replayed, Replayer, Tokens
from mockstore.reports.har import ALIASES, Recorded
from mockstore.scenario import Scenario
from mockstore.validation import loads_bounded

IGNORED_HEADERS = frozenset({"x-request-id", "content-length"})
BROKEN = frozenset({"connection_reset", "empty_response", "truncated_body", "connection_error"})
_EXCERPT = 160


@dataclass
class Mismatch:
    """A replayed answer that differs from the recorded one: each way it does."""

    recorded: Recorded
    problems: list[str]


@dataclass
class ReplayResult:
    scenario: str
    total: int
    differences: list[Mismatch] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def identical(self) -> bool:
        return not self.differences


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
        return bool(loads_bounded(a) == loads_bounded(b))
    except ValueError:
        return False


async def _replay_all(
    replayer: Replayer, recorded: list[Recorded], keys: list[dict[str, Any]], paths: list[str]
) -> tuple[list[Replayed], list[str]]:
    warnings = await replayer.issue(keys)
    replies = [
        await replayer.send(item, path=path) for item, path in zip(recorded, paths, strict=True)
    ]
    return replies, warnings


def replay(recording: Recording | dict[str, Any], scenario: Scenario) -> ReplayResult:
    """Replay a recording (or a HAR document) against ``scenario``.

    Raises ``HarError`` for a document that is not a HAR.
    """
    if not isinstance(recording, Recording):
        recording = recording_of(recording)
    meta = recording.meta
    # A request the client abandoned before its body was complete changed
    # nothing and got no answer: there is nothing to re-send or compare.
    aborted = [r for r in recording.exchanges if r.outcome == "aborted"]
    recorded = [r for r in recording.exchanges if r.outcome != "aborted"]
    result = ReplayResult(scenario.name, len(recorded))
    tokens = None
    if aborted:
        result.warnings.append(
            f"{len(aborted)} aborted request(s) (the client left before the body was "
            "complete) are not re-sent: they changed nothing"
        )
    if meta.get("masked"):
        if meta.get("aliases") == ALIASES:
            tokens = Tokens(scenario)
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
    keys = list(meta.get("issued_keys") or [])
    # Under the scenario's base path, as drift compares it (the docs: Fidelity).
    paths, moved = rebased(Recording(recording.source, recorded, meta), scenario.base_path)
    result.warnings.extend(moved)
    replayer = Replayer(scenario, recorded, tokens)
    replies, warnings = asyncio.run(_replay_all(replayer, recorded, keys, paths))
    result.warnings.extend(warnings)
    for item, reply in zip(recorded, replies, strict=True):
        problems = compare(item, reply)
        if problems:
            result.differences.append(Mismatch(item, problems))
    return result


def render(result: ReplayResult, source: str) -> str:
    lines = [
        f"replayed {result.total} request(s) from {source} against scenario "
        f"{result.scenario!r} (manual clock at each recorded scenario time)"
    ]
    lines.extend(f"warning: {w}" for w in result.warnings)
    for mismatch in result.differences:
        lines.append(mismatch.recorded.describe())
        lines.extend(f"  {problem}" for problem in mismatch.problems)
    if result.identical:
        lines.append("no differences: every response matches the recording")
    else:
        lines.append(f"{len(result.differences)} of {result.total} response(s) differ")
    return "\n".join(lines)
