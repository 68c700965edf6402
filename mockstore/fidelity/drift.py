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
import re
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from mockstore.errors import VALIDATION_CONDITIONS
from mockstore.fidelity import attribution, proof
from mockstore.fidelity.attribution import Context, Exchange
from mockstore.fidelity.compare import RULES, Discrepancy, Side, compare
from mockstore.fidelity.evidence import (
    CALLER_STATUSES,
    RELATIVE_HEADERS,
    Seen,
    pets_before,
    read,
    rebased,
    recorded_base,
    request_base,
    upstream_base,
)
from mockstore.fidelity.formats import is_id, sf_list
from mockstore.fidelity.listings import page_pairs, read_default, recorded_total, rewrite_query
from mockstore.fidelity.rebase import relative_to_own
from mockstore.fidelity.recording import InputError, Recording, recording_of
from mockstore.fidelity.replayer import Replayed, Replayer, Tokens, bearer
from mockstore.keys import is_alias, key_alias, key_bucket
from mockstore.reports.har import Recorded
from mockstore.routing import Router
from mockstore.scenario import Scenario
from mockstore.schemas import operations
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
# Header names that say they carry a request id, when a recording has one answer only.
_ID_NAME = re.compile(r"(request|trace|correlation|span)[-_]?id|-id$")

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

    rules: list[tuple[str, str]] = field(default_factory=list)  # (drift.accept[i], reason)
    replays: int = 0  # of the recording with a suggestion applied, to prove it

    @property
    def drift(self) -> bool:
        return bool(self.differences)

    def nothing_compared(self) -> str | None:
        """Why no exchange was compared (a sentence), or None when one was."""
        if self.compared:
            return None
        if not self.exchanges:
            return f"{self.source} holds no exchange: nothing to compare"
        reasons = Counter(reason for _, _, reason in self.skipped)
        shown = "; ".join(f"{count} {reason}" for reason, count in reasons.most_common())
        return (
            f"none of the {self.exchanges} exchange(s) of {self.source} could be compared"
            + (f" ({shown})" if shown else "")
            + ": a recording made while the upstream was down, or cut short, says nothing "
            "about it"
        )

    def causes(self) -> Counter[str]:
        """How many differences each cause has (accepted ones included)."""
        return Counter(d.cause for d in [*self.differences, *self.accepted])

    def summary(self) -> list[tuple[tuple[str, str, str, str | None, str | None], int]]:
        """How often each (kind, where, cause, setting, reason) differs, most frequent first."""
        counts = Counter((d.kind, d.where, d.cause, d.setting, d.reason) for d in self.differences)
        return sorted(counts.items(), key=lambda item: (-item[1], item[0][0], item[0][1]))

    def hidden(self) -> list[tuple[str, str, list[Discrepancy]]]:
        """Each accept rule of the scenario, its reason, and what it hid."""
        return [
            (rule, reason, [d for d in self.accepted if d.accepted_by == rule])
            for rule, reason in self.rules
        ]

    def to_json(self) -> dict[str, Any]:
        return {
            "har": self.source,
            "scenario": self.scenario,
            "drift": self.drift,
            "exchanges": self.exchanges,
            "compared": self.compared,
            "differences": [d.to_dict() for d in self.differences],
            "causes": dict(sorted(self.causes().items())),
            "summary": [
                {
                    "kind": kind,
                    "where": where,
                    "cause": cause,
                    "setting": setting,
                    "reason": reason,
                    "count": count,
                }
                for (kind, where, cause, setting, reason), count in self.summary()
            ],
            "accepted": [d.to_dict() for d in self.accepted],
            "accept_rules": [
                {"rule": rule, "reason": reason, "hid": [d.entry for d in hid], "count": len(hid)}
                for rule, reason, hid in self.hidden()
            ],
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
            "proof_replays": self.replays,
        }


# -- what the proxy could not see -----------------------------------------------


def _json(body: bytes) -> Any:
    try:
        return loads_bounded(body)
    except ValueError:
        return None


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
    recording: Recording | dict[str, Any],
    scenario: Scenario,
    source: str = "<har>",
    *,
    prove: bool = True,
) -> DriftReport:
    """Compare a recording (or a HAR document) with ``scenario``.

    With ``prove``, every setting a difference names is checked by replaying the
    recording with it applied (``proof``): a difference keeps its setting only when
    that removes it and adds none. Raises ``HarError`` for a document that is not a
    HAR, ``InputError`` for one whose paths name no operation under any base path.
    """
    if not isinstance(recording, Recording):
        recording = recording_of(recording, source)
    memo = _Memo() if prove else None
    report = _drift(recording, scenario, memo)
    if memo is not None:
        memo.filling = False
        report.replays = proof.prove(
            report.differences,
            scenario,
            lambda applied, fresh: _drift(recording, applied, memo, fresh).differences,
        )
    return report


@dataclass
class _Memo:
    """Each exchange's first comparison, by the mock's answer (status, headers, body).

    A proof replays the whole recording once per suggestion; an exchange whose answer
    comes out byte for byte as in the first replay has the differences it had then, so
    they are reused rather than compared again (most answers: a setting changes a few),
    but for the exchanges the suggestion is about, whose causes the new scenario decides
    anew (``fresh``); and what the recording alone says is read once.
    """

    answers: dict[int, tuple[Any, list[Discrepancy]]] = field(default_factory=dict)
    filling: bool = True
    # What the recording alone says, read once: the pets before it, each exchange read.
    before: dict[int, dict[str, Any]] | None = None
    seen: dict[int, Seen] = field(default_factory=dict)
    context: Context | None = None
    known: frozenset[str] = frozenset()


def _drift(
    recording: Recording,
    scenario: Scenario,
    memo: _Memo | None,
    fresh: frozenset[int] = frozenset(),
) -> DriftReport:
    recorded, meta = recording.exchanges, recording.meta
    report = DriftReport(recording.source, scenario.name, len(recorded))
    report.rules = [
        (f"drift.accept[{index}]", accept.reason)
        for index, accept in enumerate(scenario.drift_accept)
    ]
    if meta.get("dropped"):
        report.warnings.append(
            f"the recording had dropped {meta['dropped']} older exchanges: it starts mid-session"
        )
    base = scenario.base_path
    found = recorded_base(recording) if recorded else base
    if found is None:
        raise InputError(
            f"{recording.source}: no path of its {len(recorded)} exchange(s) names an operation "
            "of the Pet Store under any base path: not a recording of this API"
        )
    paths, moved = rebased(recording, base)
    report.warnings.extend(moved)
    operation_of = [_operation(r.method, p, base)[0] for r, p in zip(recorded, paths, strict=True)]

    tokens = Tokens(scenario)
    # Keys the upstream accepted (some answer about the request, not about the caller's
    # key or allowance) that the scenario lacks.
    unknown = sorted(
        {
            t
            for r in recorded
            if (t := bearer(r.headers))
            and is_alias(t)
            and t not in tokens.known
            and r.status not in CALLER_STATUSES
            and r.status != 0
        }
    )
    for alias in unknown:
        report.warnings.append(
            f"{alias}: the upstream accepted this key, but no key of the scenario has this "
            f"alias, so the mock answers its requests 401; name it under keys "
            f"(- {{key: {alias}, plan: ...}})"
        )

    if memo is None or memo.before is None:
        before = pets_before(recorded, operation_of)
        if memo is not None:
            memo.before = before
    else:
        before = memo.before  # the recording's: the same for every replay of it
    replayed = scenario
    if before:
        # The scenario's own pets (generated ones included, at their own ids), then the
        # recording's: generating after the recording's ids would shift the generated ones.
        kept = [p for p in scenario.initial_pets() if p["id"] not in before]
        pets = tuple(sorted([*kept, *before.values()], key=lambda p: p["id"]))
        if scenario.behaviour.list_order == "insertion":
            # The recording's pets in the order it first listed them, then the scenario's.
            pets = (*before.values(), *kept)
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
    answers, created = asyncio.run(_replay(replayer, recorded, paths, operation_of, report, meta))

    known = frozenset(alias for alias in tokens.known if is_alias(alias))
    if memo is not None and memo.context is not None and memo.known == known:
        seen, first = memo.seen, memo.context  # what the recording says does not change
        context = dataclasses.replace(first, scenario=scenario)
    else:
        seen = {s.index: s for s in read(recording, found, known)}
        context = _context(scenario, list(seen.values()), recording)
        if memo is not None:
            memo.seen, memo.context, memo.known = seen, context, known
    context.ids = {int(was): int(now) for was, now in created.items()}
    for index, (item, operation) in enumerate(zip(recorded, operation_of, strict=True)):
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
                    reason="connection",
                    **where,
                )
            )
            continue
        shown = (answer.status, tuple(answer.headers), answer.body)
        if (
            memo is not None
            and not memo.filling
            and index + 1 not in fresh
            and memo.answers.get(index, (None,))[0] == shown
        ):
            found = memo.answers[index][1]
            report.differences.extend(dataclasses.replace(d) for d in found)
            continue
        exchange = _attributed(seen[index], answer, scenario, tokens)
        was = Side(
            item.status,
            _grouped(item.response_headers),
            item.response_body,
            item.response_truncated,
        )
        now = Side(answer.status, _grouped(answer.headers), answer.body)
        outcome = compare(exchange, _json(item.body) if item.body else None, was, now, context)
        report.ignored.update(outcome.ignored)
        kept: list[Discrepancy] = []
        for found_difference in outcome.differences:
            discrepancy = dataclasses.replace(found_difference, **where)
            accepted = _accepted(scenario, discrepancy)
            if accepted is not None:
                discrepancy.accepted_by = accepted
                report.accepted.append(discrepancy)
                report.ignored[("accepted", f"{discrepancy.kind} {discrepancy.where}")] += 1
            else:
                kept.append(discrepancy)
        report.differences.extend(kept)
        if memo is not None and memo.filling:
            memo.answers[index] = (shown, [dataclasses.replace(d) for d in kept])
    return report


def _context(scenario: Scenario, seen: list[Seen], recording: Recording) -> Context:
    """What the whole recording says, for attribution: constant headers, request ids."""
    values: dict[str, set[str]] = {}
    names: dict[str, str] = {}
    deprecation_seen = False
    recorded_from = upstream_base(recording)
    for s in seen:
        for name, value in s.item.response_headers:
            lowered = name.lower()
            names.setdefault(lowered, name)
            if lowered in RELATIVE_HEADERS:
                value = relative_to_own(lowered, value, recorded_from or request_base(s.item))
            values.setdefault(lowered, set()).add(value)
        if s.facts.operation == "getPet" and "deprecation" in s.headers:
            deprecation_seen = True
    constants = {name: next(iter(v)) if len(v) == 1 else None for name, v in values.items()}
    request_ids = frozenset(
        name
        for name, v in values.items()
        if all(is_id(value) for value in v)
        and (len(v) > 1 or _ID_NAME.search(name))
        and name not in attribution.MANAGED
    )
    rules = {
        name: found
        for name in values
        if name not in attribution.MANAGED and name not in request_ids
        if (found := attribution.header_rules(name, seen)) is not None
    }
    validation = {
        s.status for s in seen if s.condition in VALIDATION_CONDITIONS and s.status in (400, 422)
    }
    context = Context(
        scenario,
        constants,
        names,
        rules,
        deprecation_seen,
        request_ids,
        frozenset(validation),
        recorded_base=recorded_from,
    )
    context.total_header = recorded_total(seen)
    answered: dict[str, set[tuple[int, str | None]]] = {}
    for s in seen:
        if s.condition is not None and s.item.method != "HEAD":
            answered.setdefault(s.condition, set()).add((s.status, s.code))
    context.split = frozenset(
        c for c, ways in answered.items() if len(ways) > 1 and c != "unexplained"
    )
    default = read_default(seen)
    context.read_default = default[0] if default is not None else None
    if context.total_header is not None:
        context.rules.pop(context.total_header, None)  # not a constant: the listing's total
    return context


def _attributed(seen: Seen, answer: Replayed, scenario: Scenario, tokens: Tokens) -> Exchange:
    """The exchange as attribution reads it: the request's facts, both answers, the caller."""
    body = _json(answer.body) if answer.body else None
    code = body.get("code") if isinstance(body, dict) else None
    ban_status = scenario.ban.status if scenario.ban else None
    mock_condition = attribution.condition_of_answer(
        seen.facts, answer.status, code if isinstance(code, str) else None, scenario.behaviour,
        ban_status,
    )  # fmt: skip
    if seen.item.method == "HEAD" and answer.status == 405:
        mock_condition = "method_not_allowed"
    token = bearer(seen.item.headers)
    key = tokens.known.get(token) if token is not None else None
    spec = next((k for k in scenario.keys if k.key == key), None)
    if spec is not None:
        plan = scenario.plans.get(spec.plan)
    else:
        plan = scenario.plans.get(scenario.anonymous_plan)
    return Exchange(
        method=seen.item.method,
        facts=seen.facts,
        recorded_condition=seen.condition,
        mock_condition=mock_condition,
        recorded_status=seen.status,
        mock_status=answer.status,
        plan=plan,
        key=spec.key if spec is not None else None,
        authenticated=spec is not None and seen.keyed,
        run_position=seen.run_position,
        run_length=seen.run_length,
        ban_after=seen.ban_after,
        header_offset=seen.header_offset,
        recorded_limit=seen.headers.get("x-ratelimit-limit"),
        recorded_headers=seen.headers,
        seen=seen,
        mock_code=code if isinstance(code, str) else None,
        own=request_base(seen.item),
        recorded_body=seen.body,
    )


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
) -> tuple[dict[int, Replayed], dict[str, str]]:
    """Send each request the upstream answered, at its recorded instant.

    The answers by index, and the ids of the pets created (the recorded one -> the mock's).
    """
    # Keys a mock session issued through its control API (a HAR of mockstore's journal).
    report.warnings.extend(await replayer.issue(meta.get("issued_keys") or []))
    tokens = replayer.tokens
    assert tokens is not None
    scenario = replayer.scenario
    created: dict[str, str] = {}  # recorded pet id -> the mock's
    pages: dict[tuple[str, str], tuple[str, str]] = {}  # a recorded page -> the mock's
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
        # A page the provider's Link named, asked for as the mock's Link names it.
        query = rewrite_query(item.query, pages) if pages and operation == "listPets" else None
        answer = await replayer.send(item, path=path, body=body, declared=declared, query=query)
        if operation == "listPets" and item.status == 200 and answer.status == 200:
            pages.update(page_pairs(_header(item.response_headers), _header(answer.headers)))
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
    return answers, created


def _header(headers: list[tuple[str, str]], name: str = "link") -> str | None:
    return next((value for key, value in headers if key.lower() == name), None)


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
    state.limiter.preload(key_bucket(key), item.time, minute, day, plan)
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
        lines.append(f"  {d.kind} {d.where}: recorded {d.recorded}, mock {d.mock}  {d.explained()}")
    for rule, reason, hid in report.hidden():
        lines.append(f"{rule} ({reason}) hid {len(hid)} difference(s)")
        for d in hid:
            lines.append(
                f"  #{d.entry} {d.request}: {d.kind} {d.where}: recorded {d.recorded}, "
                f"mock {d.mock}"
            )
    if report.ignored:
        lines.append("compared by kind, not by value:")
        for (rule, what), count in sorted(report.ignored.items()):
            lines.append(f"  {rule}: {what} ({count}x)")
    for entry, request, reason in report.skipped:
        lines.append(f"skipped #{entry} {request}: {reason}")
    if report.differences:
        lines.append("by what differs:")
        for (kind, where, _, setting, reason), count in report.summary():
            shown = f"[{setting}]" if setting else f"[not expressible: {reason}]"
            lines.append(f"  {count}x {kind} {where}  {shown}")
    entries = len({d.entry for d in report.differences})
    causes = report.causes()
    by_cause = ", ".join(
        f"{causes[c]} {c}" for c in ("setting", "not_expressible", "accepted") if causes[c]
    )
    if report.drift:
        lines.append(
            f"drift: {len(report.differences)} difference(s) in {entries} of "
            f"{report.compared} compared exchange(s) ({by_cause})"
        )
    else:
        lines.append(
            f"no drift: {report.compared} exchange(s) compared"
            + (f" ({by_cause})" if by_cause else "")
        )
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
                f"{d.kind} {d.where}: recorded {d.recorded}, mock {d.mock} {d.explained()}"
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
