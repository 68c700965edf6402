"""``mockstore drift FILE.har --scenario S``: how far a scenario is from a recorded service.

The recorded requests are re-sent, in order, by the one replay engine
(``replayer``, as ``mockstore replay`` does): a fresh in-process mock built
from ``S`` on a manual clock set to each request's recorded instant (and the
wall clock to its recorded wall time). Each answer is then compared with the
recorded one *semantically*, by the rules of ``compare``: every
``Discrepancy`` names the request that shows it and the scenario setting that
decides it; every value compared by kind rather than by value is counted
under the rule that says so.

What a proxy cannot see is reconstructed, and the report says so:

- keys: a recording carries each key's alias (``keys.key_alias``); a
  scenario key whose alias it is (or that is the alias) stands in for it;
- the store: pets the recording shows existed before it (in listings and
  fetches, but never created during it) are added to the mock's store, and
  the id a created pet got upstream is mapped to the id the mock gave it;
- spent allowance: a key's first recorded answer says how much of its
  minute (and, with the draft ``RateLimit`` header, its day) was already
  spent; the mock's counters start there.

Differences the scenario lists under ``drift.accept`` are reported as
accepted and do not count. Exit status: 0 no drift, 1 drift, 2 unreadable
input.
"""

from __future__ import annotations

import asyncio
import dataclasses
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qsl

from mockstore.fidelity.compare import RULES, Discrepancy, Request, Side, compare
from mockstore.fidelity.formats import sf_list
from mockstore.fidelity.recording import Recording, recording_of
from mockstore.fidelity.replayer import Replayed, Replayer, Tokens, bearer
from mockstore.keys import is_alias, key_alias, key_bucket
from mockstore.reports.har import Recorded
from mockstore.routing import Router
from mockstore.scenario import Scenario
from mockstore.schemas import errors_of, operations, schema_validator
from mockstore.validation import loads_bounded

ROUTER = Router(operations().values())
# Exchanges the upstream never answered (the recorder did, or the client left): not
# replayed. One it began to answer (upstream_broke) is replayed for its effects only.
NOT_ANSWERED = frozenset(
    {
        "upstream_refused",
        "upstream_timeout",
        "upstream_tls_error",
        "upstream_error",
        "client_disconnected",
        "request_timeout",
        "not_forwarded",
    }
)

# Answers that depend on what a body holds, not only on its size.
_READ_THE_BODY = frozenset({400, 415, 422})


@dataclass
class DriftReport:
    source: str
    scenario: str
    exchanges: int
    compared: int = 0
    differences: list[Discrepancy] = field(default_factory=list)
    accepted: list[Discrepancy] = field(default_factory=list)
    ignored: Counter[tuple[str, str]] = field(default_factory=Counter)
    skipped: list[tuple[int, str, str]] = field(default_factory=list)
    reconstructed: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # (entry, request, operation) of every compared exchange, in order.
    cases: list[tuple[int, str, str | None]] = field(default_factory=list)

    @property
    def drift(self) -> bool:
        return bool(self.differences)

    def summary(self) -> list[tuple[tuple[str, str, str | None], int]]:
        """How often each (kind, where, setting) differs, most frequent first."""
        counts = Counter((d.kind, d.where, d.setting) for d in self.differences)
        return sorted(counts.items(), key=lambda item: (-item[1], item[0][0], item[0][1]))

    def to_json(self) -> dict[str, Any]:
        return {
            "har": self.source,
            "scenario": self.scenario,
            "drift": self.drift,
            "exchanges": self.exchanges,
            "compared": self.compared,
            "differences": [d.to_dict() for d in self.differences],
            "summary": [
                {"kind": kind, "where": where, "setting": setting, "count": count}
                for (kind, where, setting), count in self.summary()
            ],
            "accepted": [d.to_dict() for d in self.accepted],
            "ignored": [
                {"rule": rule, "what": what, "why": RULES[rule], "count": count}
                for (rule, what), count in sorted(self.ignored.items())
            ],
            "skipped": [
                {"entry": entry, "request": request, "reason": reason}
                for entry, request, reason in self.skipped
            ],
            "reconstructed": self.reconstructed,
            "warnings": self.warnings,
        }


# -- what the proxy could not see -----------------------------------------------


def _json(body: bytes) -> Any:
    try:
        return loads_bounded(body)
    except ValueError:
        return None


def pets_before(recorded: list[Recorded], operation_of: list[str | None]) -> dict[int, dict]:
    """Pets the recording shows existed before it: listed or fetched, never created in it."""
    created = set()
    for item, operation in zip(recorded, operation_of, strict=True):
        if operation == "createPet" and 200 <= item.status < 300:
            body = _json(item.response_body)
            if isinstance(body, dict) and isinstance(body.get("id"), int):
                created.add(body["id"])
    validator = schema_validator("Pet")
    seen: dict[int, dict] = {}
    for item, operation in zip(recorded, operation_of, strict=True):
        if not 200 <= item.status < 300 or item.response_truncated:
            continue
        body = _json(item.response_body)
        if operation == "listPets" and isinstance(body, list):
            found = body
        elif operation == "getPet" and isinstance(body, dict):
            found = [body]
        else:
            continue
        for pet in found:
            if not isinstance(pet, dict) or not isinstance(pet.get("id"), int):
                continue
            if pet["id"] in created or pet["id"] in seen:
                continue
            if next(errors_of(validator, pet), None) is None:
                seen[pet["id"]] = pet
    return seen


def spent_before(item: Recorded, per_minute: int, per_day: int) -> tuple[int, int] | None:
    """(minute, day) allowance a key had spent before its first recorded request, if shown."""
    headers = {name.lower(): value for name, value in item.response_headers}
    limit, remaining = (
        headers.get("x-ratelimit-limit", ""),
        headers.get("x-ratelimit-remaining", ""),
    )
    if not (limit.isdigit() and remaining.isdigit()) or int(limit) != per_minute:
        return None  # another window, or another plan: drift reports the plan instead
    refused = item.status == 429
    minute = per_minute if refused else max(0, per_minute - int(remaining) - 1)
    day = minute
    state = sf_list(headers.get("ratelimit", "")) or []
    for name, params in state:
        if name == "day" and params.get("r", "").isdigit():
            left = int(params["r"])
            day = per_day if refused and left == 0 else max(0, per_day - left - 1)
    day = min(per_day, max(day, minute))
    return min(minute, per_minute), day


# -- the replay -------------------------------------------------------------------


def _operation(method: str, path: str, base: str) -> tuple[str | None, dict[str, str]]:
    if not path.startswith(base + "/"):
        return None, {}
    resolved = ROUTER.resolve(method, path[len(base) :])
    if resolved.operation is None:
        return None, {}
    return resolved.operation.operation_id, resolved.params


def _describe(item: Recorded) -> str:
    return f"{item.method} {item.path}" + (f"?{item.query}" if item.query else "")


def drift(
    recording: Recording | dict[str, Any], scenario: Scenario, source: str = "<har>"
) -> DriftReport:
    """Compare a recording (or a HAR document) with ``scenario``.

    Raises ``HarError`` for a document that is not a HAR.
    """
    if not isinstance(recording, Recording):
        recording = recording_of(recording, source)
    recorded, meta = recording.exchanges, recording.meta
    report = DriftReport(recording.source, scenario.name, len(recorded))
    if meta.get("dropped"):
        report.warnings.append(
            f"the recording had dropped {meta['dropped']} older exchanges: it starts mid-session"
        )
    recorded_base = str(meta.get("base_path") or scenario.base_path)
    base = scenario.base_path
    paths = [
        base + item.path[len(recorded_base) :]
        if item.path.startswith(recorded_base + "/")
        else item.path
        for item in recorded
    ]
    operation_of = [_operation(r.method, p, base)[0] for r, p in zip(recorded, paths, strict=True)]

    tokens = Tokens(scenario)
    # Keys the upstream accepted (some answer other than 401) that the scenario lacks.
    unknown = sorted(
        {
            t
            for r in recorded
            if (t := bearer(r.headers))
            and is_alias(t)
            and t not in tokens.known
            and r.status != 401
        }
    )
    for alias in unknown:
        report.warnings.append(
            f"{alias}: the upstream accepted this key, but no key of the scenario has this "
            f"alias, so the mock answers its requests 401; name it under keys "
            f"(- {{key: {alias}, plan: ...}})"
        )

    before = pets_before(recorded, operation_of)
    replayed = scenario
    if before:
        # The scenario's own pets (generated ones included, at their own ids), then the
        # recording's: generating after the recording's ids would shift the generated ones.
        kept = [p for p in scenario.initial_pets() if p["id"] not in before]
        pets = tuple(sorted([*kept, *before.values()], key=lambda p: p["id"]))
        replayed = dataclasses.replace(scenario, pets=pets, generate_pets=0)
        shown = ", ".join(str(i) for i in sorted(before)[:10]) + (
            " ..." if len(before) > 10 else ""
        )
        report.reconstructed.append(
            f"store-dependent: {len(before)} pet(s) the recording shows existed before it "
            f"were added to the mock's store (ids {shown})"
        )
    # The mock's own journal would only cost time: drift reads the answers directly.
    replayed = dataclasses.replace(replayed, journal_size=0)
    replayer = Replayer(replayed, recorded, tokens)
    answers = asyncio.run(_replay(replayer, recorded, paths, operation_of, report, meta))

    error_codes = dict(scenario.behaviour.error_codes)
    for index, (item, path, operation) in enumerate(
        zip(recorded, paths, operation_of, strict=True)
    ):
        answer = answers.get(index)
        if answer is None:
            continue
        report.compared += 1
        report.cases.append((index + 1, _describe(item), operation))
        where = _exchange(index, item, operation)
        if answer.error is not None:
            report.differences.append(
                Discrepancy(
                    "connection",
                    "connection",
                    f"a {item.status} answer",
                    f"broken ({answer.error})",
                    None,
                    **where,
                )
            )
            continue
        query: dict[str, list[str]] = {}
        for name, value in parse_qsl(item.query, keep_blank_values=True):
            query.setdefault(name, []).append(value)
        request = Request(
            method=item.method,
            path=path,
            query=query,
            operation=operation,
            sent_body=_json(item.body) if item.body else None,
            has_authorization=any(n.lower() == "authorization" for n, _ in item.headers),
        )
        was = Side(
            item.status,
            _grouped(item.response_headers),
            item.response_body,
            item.response_truncated,
        )
        now = Side(answer.status, _grouped(answer.headers), answer.body)
        outcome = compare(request, was, now, error_codes)
        report.ignored.update(outcome.ignored)
        for found in outcome.differences:
            discrepancy = dataclasses.replace(found, **where)
            accepted = _accepted(scenario, discrepancy)
            if accepted is not None:
                discrepancy.accepted_by = accepted
                report.accepted.append(discrepancy)
                report.ignored[("accepted", f"{discrepancy.kind} {discrepancy.where}")] += 1
            else:
                report.differences.append(discrepancy)
    return report


def _exchange(index: int, item: Recorded, operation: str | None) -> dict[str, Any]:
    """Where a discrepancy shows: the exchange, as a report names it."""
    token = bearer(item.headers)
    return {
        "entry": index + 1,
        "request": _describe(item),
        "request_id": item.request_id,
        "key": (token if is_alias(token) else key_alias(token)) if token else None,
        "operation": operation,
        "status": item.status,
    }


def _accepted(scenario: Scenario, discrepancy: Discrepancy) -> str | None:
    for index, accept in enumerate(scenario.drift_accept):
        if (
            accept.kind == discrepancy.kind
            and accept.where == discrepancy.where
            and accept.status in (None, discrepancy.status)
            and accept.operation in (None, discrepancy.operation)
        ):
            return f"drift.accept[{index}]"
    return None


def _grouped(headers: list[tuple[str, str]]) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = {}
    for name, value in headers:
        grouped.setdefault(name.lower(), []).append(value)
    return grouped


async def _replay(
    replayer: Replayer,
    recorded: list[Recorded],
    paths: list[str],
    operation_of: list[str | None],
    report: DriftReport,
    meta: dict[str, Any],
) -> dict[int, Replayed]:
    """Send each request the upstream answered, at its recorded instant; the answers by index."""
    # Keys a mock session issued through its control API (a HAR of mockstore's journal).
    report.warnings.extend(await replayer.issue(meta.get("issued_keys") or []))
    tokens = replayer.tokens
    assert tokens is not None
    scenario = replayer.scenario
    created: dict[str, str] = {}  # recorded pet id -> the mock's
    preloaded: set[str] = set()
    answers: dict[int, Replayed] = {}
    for index, (item, path, operation) in enumerate(
        zip(recorded, paths, operation_of, strict=True)
    ):
        if item.outcome in NOT_ANSWERED:
            report.skipped.append(
                (index + 1, _describe(item), f"the upstream did not answer it ({item.outcome})")
            )
            continue
        body = item.body
        declared = None
        if item.request_truncated:
            size = _declared_size(item)
            if size is None or item.status < 300 or item.status in _READ_THE_BODY:
                report.skipped.append(
                    (index + 1, _describe(item), "its body was cut short by the recording")
                )
                continue
            # Refused before its content mattered (413 for its size, 401, 429, ...):
            # a body of the recorded size gets the same answer, whatever it holds.
            # Past what the scenario accepts, the mock refuses it by its
            # Content-Length before reading a byte: only that is re-sent, never
            # the claimed size itself (a HAR may claim 10**13 bytes).
            if size > scenario.behaviour.max_body_bytes:
                declared = size
            else:
                body = body + b" " * (size - len(body))
            report.ignored[("transport", "a body cut short, re-sent at its recorded size")] += 1
        token = bearer(item.headers)
        key = tokens.known.get(token) if token is not None else None
        if key in tokens.scenario_keys and key not in preloaded:
            preloaded.add(key)
            _preload(replayer, key, item, report)
        if operation is not None and created:
            path = _rewrite_ids(item.method, path, scenario.base_path, created)
        answer = await replayer.send(item, path=path, body=body, declared=declared)
        if item.status == 0 or item.outcome != "response":
            # A broken answer (a mock's connection fault, an upstream that broke off):
            # replayed for its effects, not compared.
            report.skipped.append((index + 1, _describe(item), f"recorded as {item.outcome}"))
            continue
        answers[index] = answer
        if operation == "createPet" and 200 <= item.status < 300 and 200 <= answer.status < 300:
            was, now = _json(item.response_body), _json(answer.body)
            if isinstance(was, dict) and isinstance(now, dict) and "id" in was and "id" in now:
                created[str(was["id"])] = str(now["id"])
    if created:
        report.reconstructed.append(
            f"store-dependent: {len(created)} pet(s) created during the recording got ids of "
            "the mock's own; later requests for them were sent with those ids"
        )
    return answers


def _declared_size(item: Recorded) -> int | None:
    for name, value in item.headers:
        if name.lower() == "content-length" and value.strip().isdigit():
            return int(value)
    return None


def _preload(replayer: Replayer, key: str, item: Recorded, report: DriftReport) -> None:
    """Start ``key``'s counters where its first recorded answer shows them."""
    state = replayer.app.runtime.state
    spec = state.keys.lookup(key)
    if spec is None:
        return
    plan = state.plans[spec.plan]
    spent = spent_before(item, plan.per_minute, plan.per_day)
    if spent is None or spent == (0, 0):
        return
    minute, day = spent
    state.limiter.preload(key_bucket(key), item.time, minute, day)
    report.reconstructed.append(
        f"rate-limit-state: {key_alias(key)} had spent {minute} of its minute and {day} of its "
        "day allowance before the recording (from its first answer's headers); the mock "
        "starts there"
    )


def _rewrite_ids(method: str, path: str, base: str, created: dict[str, str]) -> str:
    """``/v1/pets/105`` -> ``/v1/pets/21`` when the recording's pet 105 is the mock's 21."""
    resolved = ROUTER.resolve(method, path[len(base) :])
    if resolved.operation is None or not resolved.params:
        return path
    template = resolved.operation.path
    for name, value in resolved.params.items():
        template = template.replace("{" + name + "}", created.get(value, value))
    return base + template


# -- output -------------------------------------------------------------------------


def render_text(report: DriftReport) -> str:
    lines = [
        f"drift of {report.source} ({report.exchanges} exchange(s)) against scenario "
        f"{report.scenario!r}: manual clock at each recorded instant"
    ]
    lines.extend(f"warning: {w}" for w in report.warnings)
    lines.extend(f"reconstructed: {r}" for r in report.reconstructed)
    shown: int | None = None
    for d in report.differences:
        if d.entry != shown:
            shown = d.entry
            who = f"; key {d.key}" if d.key else ""
            rid = f"; {d.request_id}" if d.request_id else ""
            lines.append(f"#{d.entry} {d.request} -> {d.status}{who}{rid}")
        setting = f"  [{d.setting}]" if d.setting else "  [no scenario setting]"
        lines.append(f"  {d.kind} {d.where}: recorded {d.recorded}, mock {d.mock}{setting}")
    if report.accepted:
        lines.append("accepted (the scenario's drift.accept):")
        for d in report.accepted:
            lines.append(
                f"  #{d.entry} {d.request}: {d.kind} {d.where}: recorded {d.recorded}, "
                f"mock {d.mock} ({d.accepted_by})"
            )
    if report.ignored:
        lines.append("compared by kind, not by value:")
        for (rule, what), count in sorted(report.ignored.items()):
            lines.append(f"  {rule}: {what} ({count}x)")
    for entry, request, reason in report.skipped:
        lines.append(f"skipped #{entry} {request}: {reason}")
    if report.differences:
        lines.append("by what differs:")
        for (kind, where, setting), count in report.summary():
            lines.append(f"  {count}x {kind} {where}  [{setting or 'no scenario setting'}]")
    entries = len({d.entry for d in report.differences})
    if report.drift:
        lines.append(
            f"drift: {len(report.differences)} difference(s) in {entries} of "
            f"{report.compared} compared exchange(s)"
        )
    else:
        lines.append(f"no drift: {report.compared} exchange(s) compared")
    return "\n".join(lines) + "\n"


def render_junit(report: DriftReport, now: datetime | None = None) -> str:
    """One test case per compared exchange, failing with its differences; skipped ones skipped."""
    stamp = (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%S")
    root = ET.Element("testsuites", name="mockstore")
    by_entry: dict[int, list[Discrepancy]] = {}
    for d in report.differences:
        by_entry.setdefault(d.entry, []).append(d)
    suite = ET.SubElement(
        root,
        "testsuite",
        name="mockstore.drift",
        tests=str(report.compared + len(report.skipped)),
        failures=str(len(by_entry)),
        errors="0",
        skipped=str(len(report.skipped)),
        timestamp=stamp,
    )
    for entry, request, operation in report.cases:
        case = ET.SubElement(
            suite,
            "testcase",
            classname=f"mockstore.drift.{operation or 'unrouted'}",
            name=f"#{entry} {request}",
            time="0",
        )
        found = by_entry.get(entry)
        if found:
            failure = ET.SubElement(
                case, "failure", message=f"{len(found)} difference(s)", type="drift"
            )
            failure.text = "\n".join(
                f"{d.kind} {d.where}: recorded {d.recorded}, mock {d.mock}"
                + (f" [{d.setting}]" if d.setting else " [no scenario setting]")
                for d in found
            )
    for entry, request, reason in report.skipped:
        case = ET.SubElement(
            suite, "testcase", classname="mockstore.drift.skipped", name=f"#{entry} {request}"
        )
        ET.SubElement(case, "skipped", message=reason)
    out = ET.SubElement(suite, "system-out")
    out.text = "\n".join(
        [
            *(f"reconstructed: {r}" for r in report.reconstructed),
            *(
                f"accepted: #{d.entry} {d.request}: {d.kind} {d.where} ({d.accepted_by})"
                for d in report.accepted
            ),
            *(
                f"{rule}: {what} ({count}x)"
                for (rule, what), count in sorted(report.ignored.items())
            ),
        ]
    )
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
