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
        self.retry_after_date = behaviour.retry_after == "http-date"
        self.reset_delta = behaviour.ratelimit_reset == "delta"
        self.draft = behaviour.ratelimit_draft_headers
        self.deprecation: list[Header] = [
            (b"deprecation", b"@%d" % int(behaviour.deprecated_since)),
            (b"sunset", http_date(behaviour.sunset)),
        ]
        successor = _successor_path(scenario.base_path)
        if successor is not None:
            self.deprecation.append((b"link", b'<%s>; rel="successor-version"' % successor))
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
            JSON_CONTENT_TYPE,
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
            headers.append((b"x-ratelimit-reset", b"%d" % reset))
            if self.draft:
                headers.extend(draft_headers(decision, plan, now))
        if decision.retry_after:
            headers.append((b"retry-after", self.retry_after(decision, now, clock)))
        if deprecated:
            headers.extend(self.deprecation)
        if replaces:
            # A scripted header replaces the default of the same name.
            names = {name for name, _ in extra}
            headers = [h for h in headers if h[0] not in names]
        headers.extend(extra)
        headers.append((b"x-request-id", request_id))
        return headers

    def retry_after(self, decision: Decision, now: float, clock: Clock) -> bytes:
        """``Retry-After`` for a refusal: whole seconds, or an HTTP-date on the wall clock."""
        if not self.retry_after_date:
            return b"%d" % decision.retry_after
        # The wall-clock instant the wait ends, rounded up to the second the
        # HTTP-date can name: never before the client may retry.
        return http_date(math.ceil(clock.wall() + (decision.retry_at - now)))


def draft_headers(decision: Decision, plan: Plan, now: float) -> list[Header]:
    """The IETF draft ``RateLimit-Policy`` / ``RateLimit`` headers (structured fields).

    ``t`` is whole seconds to each window's reset, rounded up; during a ban
    every window says 0 remaining for as long as ``Retry-After`` says.
    """
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


def _successor_path(base_path: str) -> bytes | None:
    """The path of the deprecated operation's stated replacement, under the base path."""
    operations = schemas.operations()
    for operation in operations.values():
        replacement = operation.replacement
        if operation.deprecated and replacement is not None:
            return (base_path + operations[replacement["operationId"]].path).encode()
    return None
