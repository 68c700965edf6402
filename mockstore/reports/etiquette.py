"""The etiquette report: does the client behave as the Pet Store interface asks?

The spec asks a client to wait for ``Retry-After`` after a 429, to use
exponential backoff, not to keep sending after 429s (or be banned), to move
off the deprecated ``GET /pets/{petId}`` before 5 December 2030, and to send
``Authorization: Bearer <API_KEY>`` on every call. Each rule below turns one
of those sentences into a check over the journal, with a stable id so a team
can track or discuss a finding by its number.

Every rule judges within a *run* (``mockstore.runs``): a reset, a scenario
load, a new tenant or a clock moved back starts the mock's time afresh, and
nothing sent in one run is measured against an answer of another. Rate-limit
rules work per *bucket*: what the limiter counts, i.e. one API key, or one
client address for callers without a valid key (in one tenant).

**Never stricter than the mock.** A finding about a wait needs a request the
mock refused (its limiter refused it, or its answer is a 429 or an error with
``Retry-After``), or would have refused in the state its bucket was in (a
request the limiter did not decide on, while an earlier refusal held): a retry
the mock admitted is never early, whatever a header had said. The journal
keeps what the limiter decided for each request (``Entry.refused_until``), so
the rule holds for any limiter.

**The clock the client read.** A client waits by sleeping (the wall clock
moves) or a test advances the scenario clock instead, or both. A wait in
seconds (or an instant written on the scenario clock, ``clock.headers:
scenario``) is done when *either* clock shows it done. An instant written on
the wall clock (an HTTP-date ``Retry-After``, a Unix-time
``X-RateLimit-Reset``) is read against the client's own clock, which goes on
between the answer and the wait: on a manual scenario clock its wait is the
wall time that passed *plus* the scenario time moved (``Clock.waited``; a
running clock counts both already).

=======  ======================  ========  ==========================================
id       rule                    severity  fires when (threshold)
=======  ======================  ========  ==========================================
ETQ001   retry-after-ignored     error     a request on a bucket that the mock refused
                                           arrives before the ``Retry-After`` of an
                                           earlier response on that bucket has elapsed
                                           on the clock the client read (no tolerance; a
                                           spent window's reset the answer named, if
                                           sooner, counts as its end). A request that
                                           arrived after that response's request but
                                           before the response was sent (in flight on
                                           another connection) is exempt; one the mock
                                           admitted ends every wait before it.
ETQ002   no-exponential-backoff  warning   in a run of retries the mock refused after
                                           consecutive 429s on one bucket, with at least
                                           3 waits not set by a ``Retry-After`` the
                                           client honoured, fewer than half of the
                                           successive waits grow to at least 1.5x the one
                                           before (and above 10 ms), on the client's
                                           clock (the scenario clock; on a manual one,
                                           the wall time plus the scenario time moved). A
                                           wait that honours ``Retry-After`` ends the
                                           run: the server set the pace.
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
from mockstore.reports.waits import BY_CLOCK, Decisions, clock_waits, earliness, in_flight, waited

BACKOFF_MIN_WAITS = 3  # ETQ002 judges runs with at least this many waits
BACKOFF_GROWTH = 1.5  # a wait "grows" when it is at least this times the one before
BACKOFF_FLOOR = 0.010  # ... and longer than this many seconds (no wait is not a wait)
# 422: a provider's validation status (behaviour.validation_status, or a recording).
INVALID_STATUSES = frozenset({400, 413, 415, 422})
EXAMPLES = 20  # pairs of evidence spelled out in a finding's details

RETRY_AFTER_IGNORED = Rule(
    "ETQ001",
    "retry-after-ignored",
    "error",
    "Request sent before Retry-After elapsed",
    "no request on a key (or anonymous client) that the mock refuses until the "
    "Retry-After of its last response has elapsed on the clock the client read (the "
    "scenario clock or the wall clock; for a date on the wall clock under a manual "
    "clock, both together), within one run; tolerance 0 s",
)
NO_BACKOFF = Rule(
    "ETQ002",
    "no-exponential-backoff",
    "warning",
    "Retries after 429 without exponential backoff",
    f"in streaks of >= {BACKOFF_MIN_WAITS} refused retries after consecutive 429s (waits "
    f"not set by Retry-After), at least half the waits grow >= {BACKOFF_GROWTH}x the one "
    f"before and exceed {int(BACKOFF_FLOOR * 1000)} ms, on the client's clock (the "
    "scenario clock; on a manual one, the wall time plus the scenario time moved)",
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


def _early_in_run(items: list[Fact]) -> list[tuple[Fact, Fact]]:
    """(early request, the answer whose wait it broke) pairs within one run.

    Only a request the mock refused can be early: one it admitted did what the
    mock allowed, whatever a header had said (a verdict is never stricter than
    the mock), and every wait told before it is over as far as the mock goes.
    """
    waiting: list[Fact] = []  # answers whose wait is not over on the client's clock
    early: list[tuple[Fact, Fact]] = []
    decisions = Decisions()
    for fact in items:
        if not decisions.refused(fact):
            waiting = []
            continue
        waiting = [told for told in waiting if not waited(fact, told)]
        broken = [told for told in waiting if not in_flight(fact, told)]
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
    assert source.wait_until is not None
    # The scenario clock's figures (the mock's: the same on a loaded machine as on an idle
    # one), and the clock nearer done's beside them when the client waited on another.
    after = first.time - source.time
    too_early = source.wait_until - first.time
    _, nearer, clock = earliness(first, source)
    also = f" ({nearer:.3f} s{BY_CLOCK[clock]})" if clock != "scenario" else ""
    message = (
        f"{_plural(len(early), 'request')} on {first.subject} arrived before the "
        f"Retry-After of an earlier response had elapsed; e.g. #{first.seq} came "
        f"{after:.3f} s after #{source.seq} "
        f"({source.status} {source.code or ''}, Retry-After: {source.retry_after}), "
        f"{too_early:.3f} s too early{also}"
    ).replace(" )", ")")
    examples = [
        {
            "seq": f.seq,
            "after_seq": s.seq,
            "run": f.run,
            "retry_after": s.retry_after,
            "early_by_seconds": round(earliness(f, s)[1], 6),
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

    A retry counts only if the mock refused it too (an admitted one ends the
    streak: the mock let it through). A wait that honoured the Retry-After of
    the 429 before it (on the clock the client read) ends the streak.
    """
    streaks: list[Streak] = []
    current: Streak = []
    previous: Fact | None = None
    decisions = Decisions()
    for fact in items:
        refused = decisions.refused(fact)
        follows_429 = (
            previous is not None
            and (previous.status == 429 or previous.refused_until > 0)
            and refused
        )
        honoured = (
            follows_429
            and previous is not None
            and previous.wait_until is not None
            and waited(fact, previous)
        )
        if follows_429 and not honoured and previous is not None:
            wall = None
            if previous.wall is not None and fact.wall is not None:
                wall = fact.wall - previous.wall
            current.append((fact, fact.time - previous.time, wall))
        elif current:
            streaks.append(current)
            current = []
        previous = fact
    if current:
        streaks.append(current)
    return streaks


def _waits(streak: Streak) -> list[list[float]]:
    """The streak's waits on each clock its client may have read (``waits.clock_waits``)."""
    walls = [w for _, _, w in streak]
    return clock_waits(
        [s for _, s, _ in streak],
        [w or 0.0 for w in walls] if all(w is not None for w in walls) else None,
        streak[0][0].clock,
    )


def _backs_off(streak: Streak) -> bool:
    """Whether the waits back off on a clock the client may have read (see ``_waits``)."""
    return any(grows(waits) for waits in _waits(streak))


def _shown_waits(streak: Streak) -> list[float]:
    """The waits of a streak on the clock that moved more (what the finding quotes)."""
    return max(_waits(streak), key=sum)


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
                    led.extend(_led_to_ban(items[:index], context.ban_within_seconds))
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


def _led_to_ban(before: list[Fact], within: float) -> list[Fact]:
    """The rejections that led to a ban first answered after ``before``.

    The mock bans at the refusal that tips its count (answered ``rate_limited``
    itself), counting the rejections within ``within`` seconds before *that*
    refusal, not before the first ``key_banned`` answer, which may come a
    minute later (a client that waited as that refusal told it). As the
    mock's window, one exactly ``within`` seconds older has left it.
    """
    led: list[Fact] = []
    horizon: float | None = None
    for earlier in reversed(before):
        if earlier.code == "key_banned":
            break
        if earlier.code != "rate_limited":
            continue
        if horizon is None:
            horizon = earlier.time - within  # the refusal that tipped the count
        elif earlier.time <= horizon:
            break
        led.append(earlier)
    return led


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
