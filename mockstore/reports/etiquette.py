"""The etiquette report: does the client behave as the Pet Store interface asks?

The spec asks a client to wait for ``Retry-After`` after a 429, to use
exponential backoff, not to keep sending after 429s (or be banned), to move
off the deprecated ``GET /pets/{petId}`` before 5 December 2030, and to send
``Authorization: Bearer <API_KEY>`` on every call. Each rule below turns one
of those sentences into a check over the journal, with a stable id so a team
can track or discuss a finding by its number.

Every rule judges within a *run* (``mockstore.runs``): a reset, a scenario
load, a new tenant or a clock moved back starts the mock's time afresh, and
nothing sent in one run is measured against an answer of another. Time is
read on two clocks: the scenario clock (the mock's, when each request
arrived), which a test moves, and the wall clock, which a client that sleeps
moves. A wait counts as done when *either* clock shows it done: a client may
sleep, a test may advance the clock instead. Rate-limit rules work per
*bucket*: what the limiter counts, i.e. one API key, or one client address for
callers without a valid key (in one tenant).

=======  ======================  ========  ==========================================
id       rule                    severity  fires when (threshold)
=======  ======================  ========  ==========================================
ETQ001   retry-after-ignored     error     a request on a bucket arrives before the
                                           ``Retry-After`` of an earlier response on that
                                           bucket has elapsed, by both clocks (no
                                           tolerance; a spent window's reset the answer
                                           named, if sooner, counts as its end). A request
                                           that arrived after that response's request
                                           but before the response was sent (in flight
                                           on another connection) is exempt.
ETQ002   no-exponential-backoff  warning   in a run of retries after consecutive 429s
                                           on one bucket, with at least 3 waits not set
                                           by a ``Retry-After`` the client honoured,
                                           fewer than half of the successive waits grow
                                           to at least 1.5x the one before (and above
                                           10 ms), by the scenario clock and by the wall
                                           clock alike. A wait that honours
                                           ``Retry-After`` ends the run: the server set
                                           the pace.
ETQ003   key-banned              error     a response says ``key_banned``. Evidence: the
                                           429 ``rate_limited`` rejections within the
                                           scenario's ban window before the ban, and
                                           every request answered ``key_banned``.
ETQ004   deprecated-operation    warning   any call of a deprecated operation (``getPet``)
                                           before its sunset (from the ``Sunset`` header).
ETQ005   removed-operation       error     any call of a deprecated operation at or after
                                           its sunset (``410 gone``, or answered anyway
                                           when a scenario keeps it).
ETQ006   invalid-request         warning   any request refused as invalid (400, 413,
                                           415, 422); one finding per operation, Error
                                           code and message.
ETQ007   bad-authorization       warning   a request without an ``Authorization`` header
                                           (one finding), or with one that is not
                                           ``Bearer <token>`` (another finding).
=======  ======================  ========  ==========================================

The thresholds are the module constants below; ``RULES`` is the table in
code, and ``tests/test_etiquette.py`` checks that this docstring lists the
same ids, names and severities.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from email.utils import formatdate
from itertools import pairwise

from mockstore import schemas
from mockstore.reports.model import Fact, Finding, ReportContext, Rule, severity_rank

BACKOFF_MIN_WAITS = 3  # ETQ002 judges runs with at least this many waits
BACKOFF_GROWTH = 1.5  # a wait "grows" when it is at least this times the one before
BACKOFF_FLOOR = 0.010  # ... and longer than this many seconds (no wait is not a wait)
# 422: a provider's validation status (behaviour.validation_status, or a recording).
INVALID_STATUSES = frozenset({400, 413, 415, 422})
EXAMPLES = 20  # pairs of evidence spelled out in a finding's details
# ETQ001's tolerance is 0 s; this much is floating-point arithmetic on Unix times
# (a second is 2**-22 of one near 2030), not time.
ARITHMETIC = 1e-6

RETRY_AFTER_IGNORED = Rule(
    "ETQ001",
    "retry-after-ignored",
    "error",
    "Request sent before Retry-After elapsed",
    "no request on a key (or anonymous client) until the Retry-After of its last "
    "response has elapsed by the scenario clock or the wall clock, within one run; "
    "tolerance 0 s",
)
NO_BACKOFF = Rule(
    "ETQ002",
    "no-exponential-backoff",
    "warning",
    "Retries after 429 without exponential backoff",
    f"in streaks of >= {BACKOFF_MIN_WAITS} retries after consecutive 429s (waits not set "
    f"by Retry-After), at least half the waits grow >= {BACKOFF_GROWTH}x the one before "
    f"and exceed {int(BACKOFF_FLOOR * 1000)} ms, by the scenario clock or the wall clock",
)
KEY_BANNED = Rule(
    "ETQ003",
    "key-banned",
    "error",
    "Requests that led to a ban",
    "no key banned (the scenario's ban policy: N rejections within S seconds)",
)
DEPRECATED = Rule(
    "ETQ004",
    "deprecated-operation",
    "warning",
    "Calls of a deprecated operation",
    "no call of a deprecated operation (getPet) before its sunset",
)
REMOVED = Rule(
    "ETQ005",
    "removed-operation",
    "error",
    "Calls of an operation after its sunset",
    "no call of a deprecated operation at or after its sunset",
)
INVALID = Rule(
    "ETQ006",
    "invalid-request",
    "warning",
    "Requests refused as invalid",
    "no request answered 400, 413, 415 or 422",
)
BAD_AUTHORIZATION = Rule(
    "ETQ007",
    "bad-authorization",
    "warning",
    "Missing or malformed Authorization header",
    "every request sends Authorization: Bearer <API_KEY>",
)

RULES: tuple[Rule, ...] = (
    RETRY_AFTER_IGNORED,
    NO_BACKOFF,
    KEY_BANNED,
    DEPRECATED,
    REMOVED,
    INVALID,
    BAD_AUTHORIZATION,
)

# The spec's stated replacement for each deprecated operation (the OpenAPI
# document's x-replacement).
REPLACEMENTS: dict[str, str] = {
    name: op.replacement["description"]
    for name, op in schemas.operations().items()
    if op.replacement is not None
}


def judge(facts: list[Fact], context: ReportContext | None = None) -> list[Finding]:
    """Every finding for these facts, most severe first, then by rule id and subject.

    Facts are judged within their run and their tenant's journal: rules over a
    bucket's requests see one run at a time; the others group per tenant.
    """
    context = context or ReportContext()
    buckets: dict[tuple[str | None, str], dict[int, list[Fact]]] = defaultdict(
        lambda: defaultdict(list)
    )
    journals: dict[str | None, list[Fact]] = defaultdict(list)
    for fact in facts:
        buckets[fact.tenant, fact.bucket][fact.run].append(fact)
        journals[fact.tenant].append(fact)
    findings: list[Finding] = []
    for by_run in buckets.values():
        runs = [sorted(items, key=lambda f: (f.time, f.seq)) for _, items in sorted(by_run.items())]
        findings.extend(_retry_after_ignored(runs))
        findings.extend(_no_backoff(runs))
        findings.extend(_bans(runs, context))
    for items in journals.values():
        findings.extend(_deprecated(items))
        findings.extend(_invalid(items))
        findings.extend(_bad_authorization(items))
    findings.sort(key=lambda f: (-severity_rank(f.rule.severity), f.rule.id, f.subject))
    return findings


def _finding(
    rule: Rule, subject: str, message: str, evidence: Iterable[Fact], **details: object
) -> Finding:
    ordered = sorted({f.seq: f for f in evidence}.values(), key=lambda f: f.seq)
    tenant = ordered[0].tenant if ordered else None
    where = f" in tenant {tenant}"
    if tenant is not None and not subject.endswith(where):
        subject += where
    return Finding(
        rule,
        subject,
        message,
        [f.seq for f in ordered],
        [f.request_id for f in ordered],
        dict(details),
        tenant,
    )


def _plural(count: int, word: str, plural: str | None = None) -> str:
    if word == "time":
        return {1: "once", 2: "twice"}.get(count, f"{count} times")
    return f"{count} {word}" if count == 1 else f"{count} {plural or word + 's'}"


# -- ETQ001 ---------------------------------------------------------------------


def _late_enough(fact: Fact, told: Fact) -> bool:
    """Whether ``fact`` came once ``told``'s wait was over, by either clock."""
    assert told.wait_until is not None
    if fact.time >= told.wait_until - ARITHMETIC:
        return True
    return (
        told.wall_until is not None
        and fact.wall is not None
        and fact.wall >= told.wall_until - ARITHMETIC
    )


def _earliness(fact: Fact, told: Fact) -> tuple[float, float, str]:
    """(seconds after ``told``, seconds too early, which clock) on the clock nearer done."""
    assert told.wait_until is not None
    after, early, clock = fact.time - told.time, told.wait_until - fact.time, "scenario"
    if told.wall_until is not None and fact.wall is not None and told.wall is not None:
        wall_early = told.wall_until - fact.wall
        # The scenario clock's figure, unless the wall clock's is nearer done by more
        # than the time a request takes (a client slept part of its wait).
        if wall_early < early - 0.5:
            after, early, clock = fact.wall - told.wall, wall_early, "wall"
    return after, early, clock


def _in_flight(fact: Fact, told: Fact) -> bool:
    """Whether ``fact`` had already been sent when ``told`` was answered.

    Known exactly from what had been answered when it arrived; for entries that
    do not say (recordings), from the scenario time and ``told``'s latency.
    """
    if fact.arrived_after >= 0:
        return fact.arrived_after < told.seq
    return told.time < fact.time < told.time + told.latency


def _early_in_run(items: list[Fact]) -> list[tuple[Fact, Fact]]:
    """(early request, the answer whose wait it broke) pairs within one run."""
    waiting: list[Fact] = []  # answers whose wait is not over by either clock
    early: list[tuple[Fact, Fact]] = []
    for fact in items:
        waiting = [told for told in waiting if not _late_enough(fact, told)]
        broken = [told for told in waiting if not _in_flight(fact, told)]
        if broken:
            early.append((fact, max(broken, key=lambda told: told.wait_until or 0.0)))
        if fact.wait_until is not None:
            waiting.append(fact)
    return early


def _retry_after_ignored(runs: list[list[Fact]]) -> list[Finding]:
    early = [pair for items in runs for pair in _early_in_run(items)]
    if not early:
        return []
    first, source = early[0]
    after, too_early, clock = _earliness(first, source)
    by = " by the wall clock" if clock == "wall" else ""
    message = (
        f"{_plural(len(early), 'request')} on {first.subject} arrived before the "
        f"Retry-After of an earlier response had elapsed; e.g. #{first.seq} came "
        f"{after:.3f} s after #{source.seq} "
        f"({source.status} {source.code or ''}, Retry-After: {source.retry_after}), "
        f"{too_early:.3f} s too early{by}"
    ).replace(" )", ")")
    examples = [
        {
            "seq": f.seq,
            "after_seq": s.seq,
            "run": f.run,
            "retry_after": s.retry_after,
            "early_by_seconds": round(_earliness(f, s)[1], 6),
        }
        for f, s in early[:EXAMPLES]
    ]
    evidence = [f for f, _ in early] + [s for _, s in early]
    return [
        _finding(
            RETRY_AFTER_IGNORED,
            first.subject,
            message,
            evidence,
            early_requests=len(early),
            runs=sorted({f.run for f, _ in early}),
            examples=examples,
        )
    ]


# -- ETQ002 ---------------------------------------------------------------------


Streak = list[tuple[Fact, float, float | None]]  # (retry, wait by scenario, wait by wall)


def _streaks(items: list[Fact]) -> list[Streak]:
    """Streaks of (retry, its wait on each clock) after consecutive 429s, in one run.

    A wait that honoured the Retry-After of the 429 before it (by either clock)
    ends the streak.
    """
    streaks: list[Streak] = []
    current: Streak = []
    previous: Fact | None = None
    for fact in items:
        follows_429 = previous is not None and previous.status == 429
        honoured = (
            follows_429
            and previous is not None
            and previous.wait_until is not None
            and _late_enough(fact, previous)
        )
        if follows_429 and not honoured and previous is not None:
            wall = None
            if previous.wall is not None and fact.wall is not None:
                # The client's wait starts when it got the answer, not when it sent the
                # request: on a loaded machine the answers' latency grows and varies, and
                # arrival to arrival would read a hammering client's steady retries as a
                # backoff (a verdict that depended on the load).
                wall = max(0.0, fact.wall - (previous.wall + previous.latency))
            current.append((fact, fact.time - previous.time, wall))
        elif current:
            streaks.append(current)
            current = []
        previous = fact
    if current:
        streaks.append(current)
    return streaks


def _backs_off(streak: Streak) -> bool:
    """Whether the waits back off by either clock (a client sleeps; a test moves the clock)."""
    if grows([scenario for _, scenario, _ in streak]):
        return True
    walls = [wall for _, _, wall in streak]
    return all(w is not None for w in walls) and grows([w for w in walls if w is not None])


def _shown_waits(streak: Streak) -> list[float]:
    """The waits of a streak on the clock that moved more (what the finding quotes)."""
    scenario = [s for _, s, _ in streak]
    walls = [w for _, _, w in streak]
    if all(w is not None for w in walls) and sum(w or 0.0 for w in walls) > sum(scenario):
        return [w or 0.0 for w in walls]
    return scenario


def grows(waits: list[float]) -> bool:
    """Whether waits back off: at least half grow by BACKOFF_GROWTH and pass the floor."""
    pairs = list(pairwise(waits))
    growing = sum(1 for a, b in pairs if b >= BACKOFF_GROWTH * a and b > BACKOFF_FLOOR)
    return 2 * growing >= len(pairs)


def _no_backoff(runs: list[list[Fact]]) -> list[Finding]:
    failing = [
        streak
        for items in runs
        for streak in _streaks(items)
        if len(streak) >= BACKOFF_MIN_WAITS and not _backs_off(streak)
    ]
    if not failing:
        return []
    subject = failing[0][0][0].subject
    shown = [round(wait, 3) for wait in _shown_waits(failing[0])[:8]]
    retries = sum(len(streak) for streak in failing)
    message = (
        f"{_plural(len(failing), 'run')} of retries after 429 on {subject} "
        f"({_plural(retries, 'retry', 'retries')}) did not back off: waits in seconds "
        f"{shown}{' ...' if len(failing[0]) > 8 else ''} do not grow "
        f"(expected each about {BACKOFF_GROWTH}x or more the one before)"
    )
    return [
        _finding(
            NO_BACKOFF,
            subject,
            message,
            [fact for streak in failing for fact, _, _ in streak],
            runs=[
                {
                    "seqs": [f.seq for f, _, _ in streak],
                    "waits": [round(w, 6) for w in _shown_waits(streak)],
                }
                for streak in failing[:EXAMPLES]
            ],
        )
    ]


# -- ETQ003 ---------------------------------------------------------------------


def _bans(runs: list[list[Fact]], context: ReportContext) -> list[Finding]:
    bans = 0
    led: list[Fact] = []
    banned: list[Fact] = []
    for items in runs:
        in_ban = False
        for index, fact in enumerate(items):
            if fact.code == "key_banned":
                if not in_ban:
                    bans += 1
                    horizon = fact.time - context.ban_within_seconds
                    for earlier in reversed(items[:index]):
                        if earlier.time < horizon or earlier.code == "key_banned":
                            break
                        if earlier.code == "rate_limited":
                            led.append(earlier)
                in_ban = True
                banned.append(fact)
            else:
                in_ban = False
    if not bans:
        return []
    subject = banned[0].subject
    policy = ""
    if context.ban_after_rejections:
        policy = (
            f" (the scenario bans after {context.ban_after_rejections} rejections "
            f"within {context.ban_within_seconds:g} s)"
        )
    message = (
        f"{subject} was banned {_plural(bans, 'time')} for sending on after 429: "
        f"{_plural(len(led), 'rate-limited request')} led to the ban{policy}; it then sent "
        f"{_plural(len(banned), 'request')} refused as key_banned"
    )
    return [
        _finding(
            KEY_BANNED,
            subject,
            message,
            led + banned,
            bans=bans,
            led_to_ban=[f.seq for f in sorted(led, key=lambda f: f.seq)],
            while_banned=len(banned),
        )
    ]


# -- ETQ004 / ETQ005 -----------------------------------------------------------


def _deprecated(facts: list[Fact]) -> list[Finding]:
    operations = schemas.operations()
    deprecated = {op for op, spec in operations.items() if spec.deprecated}
    before: dict[str, list[Fact]] = defaultdict(list)
    after: dict[str, list[Fact]] = defaultdict(list)
    for fact in facts:
        if fact.operation in deprecated:
            assert fact.operation is not None
            gone = fact.code == "gone" or (fact.sunset is not None and fact.time >= fact.sunset)
            (after if gone else before)[fact.operation].append(fact)
    findings = []
    for operation, calls in sorted(before.items()):
        spec = operations[operation]
        sunset = next((f.sunset for f in calls if f.sunset is not None), None)
        when = formatdate(sunset, usegmt=True) if sunset is not None else "its sunset"
        subjects = sorted({f.subject for f in calls})
        replacement = REPLACEMENTS.get(operation, "its successor")
        message = (
            f"{operation} ({spec.method} {spec.path}) was called {_plural(len(calls), 'time')} "
            f"by {', '.join(subjects)}; it is deprecated and will be removed on {when}. "
            f"Use {replacement} instead"
        )
        findings.append(
            _finding(
                DEPRECATED,
                operation,
                message,
                calls,
                sunset=when,
                replacement=replacement,
                callers=subjects,
            )
        )
    for operation, calls in sorted(after.items()):
        spec = operations[operation]
        subjects = sorted({f.subject for f in calls})
        replacement = REPLACEMENTS.get(operation, "its successor")
        statuses = sorted({f.status for f in calls})
        message = (
            f"{operation} ({spec.method} {spec.path}) was called "
            f"{_plural(len(calls), 'time')} after its sunset by {', '.join(subjects)} "
            f"(answered {', '.join(str(s) for s in statuses)}); use {replacement}"
        )
        findings.append(
            _finding(REMOVED, operation, message, calls, replacement=replacement, callers=subjects)
        )
    return findings


# -- ETQ006 ---------------------------------------------------------------------


def _invalid(facts: list[Fact]) -> list[Finding]:
    groups: dict[tuple[str, int, str, str], list[Fact]] = defaultdict(list)
    for fact in facts:
        if fact.status in INVALID_STATUSES:
            cause = (
                fact.operation or f"{fact.method} {fact.path}",
                fact.status,
                fact.code or f"HTTP {fact.status}",
                fact.message or "",
            )
            groups[cause].append(fact)
    findings = []
    for (operation, status, code, text), calls in sorted(groups.items()):
        message = (
            f"{_plural(len(calls), 'request')} to {operation} refused with {status} {code}"
            + (f": {text}" if text else "")
        )
        findings.append(
            _finding(
                INVALID,
                f"{operation}: {code}",
                message,
                calls,
                operation=operation,
                status=status,
                code=code,
                error_message=text,
                callers=sorted({f.subject for f in calls}),
            )
        )
    return findings


# -- ETQ007 ---------------------------------------------------------------------


def _bad_authorization(facts: list[Fact]) -> list[Finding]:
    missing = [f for f in facts if f.auth == "missing"]
    malformed = [f for f in facts if f.auth == "malformed"]
    findings = []
    if missing:
        message = (
            f"{_plural(len(missing), 'request')} had no Authorization header "
            f"(every call needs Authorization: Bearer <API_KEY>)"
        )
        findings.append(
            _finding(
                BAD_AUTHORIZATION,
                "missing Authorization",
                message,
                missing,
                kind="missing",
                clients=sorted({f.subject for f in missing}),
            )
        )
    if malformed:
        schemes = sorted({f.auth_scheme or "(empty)" for f in malformed})
        message = (
            f"{_plural(len(malformed), 'request')} sent an Authorization header that is not "
            f"'Bearer <API_KEY>' (schemes sent: {', '.join(schemes)}; a Bearer header needs "
            f"exactly one token)"
        )
        findings.append(
            _finding(
                BAD_AUTHORIZATION,
                "malformed Authorization",
                message,
                malformed,
                kind="malformed",
                schemes=schemes,
                clients=sorted({f.subject for f in malformed}),
            )
        )
    return findings
