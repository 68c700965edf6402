"""What the headers of an API answer say, under one scenario: one story per response.

Every answer carries ``Date`` (the scenario clock) and, unless a scripted
answer turns them off, the rate-limit figures of the limiter's ``Decision``;
a refusal adds ``Retry-After``; a deprecated operation adds ``Deprecation``,
``Sunset`` and ``Link`` for an authenticated caller. All of them describe the
same decision, rounded the same way: no header names an instant before the one
from which the client may really retry.

Times are the scenario clock's, except an HTTP-date ``Retry-After``: it is the
one value a client acts on by *its own* clock (urllib3, requests, httpx-retries,
tenacity, stamina and backoff all subtract ``time.time()`` from it), so it is
written on the wall clock, as ``wall now + the wait``. With a clock that runs
(real time, or a chosen start), the client then waits exactly as long as the
mock will refuse it, and the etiquette report, which reads the wait back with
the wall time journaled beside it, agrees.

Pure Python over bytes: no Starlette, no ASGI. The parts that never change are
encoded once per scenario.
"""

from __future__ import annotations

import math
from email.utils import formatdate

from mockstore import schemas
from mockstore.clock import Clock
from mockstore.ratelimit import Decision, Plan
from mockstore.scenario.model import Scenario

Header = tuple[bytes, bytes]

JSON_CONTENT_TYPE: Header = (b"content-type", b"application/json")


def http_date(when: float) -> bytes:
    """An IMF-fixdate (RFC 9110 section 5.6.7) for a Unix time, whole seconds."""
    return formatdate(when, usegmt=True).encode()


class ResponseHeaders:
    """Builds the header list of every API answer for one scenario."""

    def __init__(self, scenario: Scenario) -> None:
        behaviour = scenario.behaviour
        self.content_type: Header = (
            JSON_CONTENT_TYPE
            if behaviour.content_type == JSON_CONTENT_TYPE[1].decode()
            else (b"content-type", behaviour.content_type.encode("latin-1"))
        )
        self.retry_after_date = behaviour.retry_after == "http-date"
        # A banned key's Retry-After: "same" as retry_after, or a form of its own.
        banned = behaviour.retry_after_banned
        self.banned_retry_after = None if banned == "same" else banned
        self.reset_delta = behaviour.ratelimit_reset == "delta"
        self.reset_ms = behaviour.ratelimit_reset == "epoch-ms"
        self.draft = behaviour.ratelimit_draft_headers
        self.deprecation = deprecation_headers(scenario)
        request_id = behaviour.request_id.header
        self.request_id_name = request_id.lower().encode("latin-1") if request_id else None
        self._date_second = -1
        self._date_value = b""

    def date(self, now: float) -> bytes:
        """The ``Date`` header from the scenario clock, formatted once per second."""
        second = int(now)
        if second != self._date_second:
            self._date_second = second
            self._date_value = http_date(second)
        return self._date_value

    def build(
        self,
        length: int,
        decision: Decision,
        plan: Plan,
        now: float,
        clock: Clock,
        deprecated: bool,
        ratelimit: bool,
        extra: list[Header] | tuple[Header, ...],
        replaces: bool,
        request_id: bytes,
        /,
    ) -> list[Header]:
        """The headers, in a stable order; ``extra`` ones last (they replace if ``replaces``).

        Positional: it runs once per request, and named arguments cost more.
        """
        if int(now) != self._date_second:
            self.date(now)
        headers: list[Header] = [
            self.content_type,
            (b"content-length", b"%d" % length),
            (b"date", self._date_value),
        ]
        if ratelimit:
            headers.append((b"x-ratelimit-limit", b"%d" % decision.limit))
            headers.append((b"x-ratelimit-remaining", b"%d" % decision.remaining))
            reset = decision.reset
            if self.reset_delta:
                # Seconds from now, rounded up like every figure: never early.
                reset = max(0, math.ceil(reset - now))
            elif self.reset_ms:
                reset *= 1000
            headers.append((b"x-ratelimit-reset", b"%d" % reset))
            if self.draft:
                headers.extend(draft_headers(decision, plan, now))
        if decision.retry_after:
            retry_after = self.retry_after(decision, now, clock)
            if retry_after is not None:
                headers.append((b"retry-after", retry_after))
        if deprecated:
            headers.extend(self.deprecation)
        if replaces:
            # A scripted header replaces the default of the same name.
            names = {name for name, _ in extra}
            headers = [h for h in headers if h[0] not in names]
        headers.extend(extra)
        if self.request_id_name is not None:
            headers.append((self.request_id_name, request_id))
        return headers

    def retry_after(self, decision: Decision, now: float, clock: Clock) -> bytes | None:
        """``Retry-After`` for a refusal: whole seconds, or an HTTP-date on the wall clock.

        None for a banned key whose provider sends none (``retry_after_banned: none``).
        """
        as_date = self.retry_after_date
        if self.banned_retry_after is not None and decision.verdict == "key_banned":
            if self.banned_retry_after == "none":
                return None
            as_date = self.banned_retry_after == "http-date"
        if not as_date:
            return b"%d" % decision.retry_after
        # The wall-clock instant the wait ends, rounded up to the second the
        # HTTP-date can name: never before the client may retry.
        return http_date(math.ceil(clock.wall() + (decision.retry_at - now)))


def draft_headers(decision: Decision, plan: Plan, now: float) -> list[Header]:
    """The IETF draft ``RateLimit-Policy`` / ``RateLimit`` headers (structured fields).

    ``t`` is whole seconds to each window's reset, rounded up; during a ban
    every window says 0 remaining for as long as ``Retry-After`` says.
    """
    if not plan.has_day:
        minute_t = max(0, math.ceil(decision.minute_reset - now))
        return [
            (b"ratelimit-policy", b'"minute";q=%d;w=60' % plan.per_minute),
            (b"ratelimit", b'"minute";r=%d;t=%d' % (decision.minute_remaining, minute_t)),
        ]
    policy = b'"minute";q=%d;w=60, "day";q=%d;w=86400' % (plan.per_minute, plan.per_day)
    if decision.verdict == "key_banned":
        minute_t = day_t = decision.retry_after
    else:
        minute_t = max(0, math.ceil(decision.minute_reset - now))
        day_t = max(0, math.ceil(decision.day_reset - now))
    state = b'"minute";r=%d;t=%d, "day";r=%d;t=%d' % (
        decision.minute_remaining,
        minute_t,
        decision.day_remaining,
        day_t,
    )
    return [(b"ratelimit-policy", policy), (b"ratelimit", state)]


def deprecation_headers(scenario: Scenario) -> list[Header]:
    """``Deprecation``, ``Sunset`` and ``Link`` of a deprecated operation, as the scenario says."""
    behaviour = scenario.behaviour
    since = behaviour.deprecated_since
    headers: list[Header] = []
    form = behaviour.deprecation_format
    if form == "sf-date":
        headers.append((b"deprecation", b"@%d" % int(since)))
    elif form == "http-date":
        headers.append((b"deprecation", http_date(since)))
    elif form == "true":
        headers.append((b"deprecation", b"true"))
    if behaviour.sunset_header:
        headers.append((b"sunset", http_date(behaviour.sunset)))
    link = behaviour.deprecation_link
    successor = _successor_path(scenario.base_path)
    if link is not None and (successor is not None or "{successor}" not in link):
        text = link.replace("{successor}", (successor or b"").decode("latin-1"))
        headers.append((b"link", text.encode("latin-1")))
    return headers


def _successor_path(base_path: str) -> bytes | None:
    """The path of the deprecated operation's stated replacement, under the base path."""
    operations = schemas.operations()
    for operation in operations.values():
        replacement = operation.replacement
        if operation.deprecated and replacement is not None:
            return (base_path + operations[replacement["operationId"]].path).encode()
    return None
