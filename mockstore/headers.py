"""What the headers of an API answer say, under one scenario: one story per response.

Every answer carries ``Date`` and, unless a scripted answer turns them off,
the rate-limit figures of the limiter's ``Decision``; a refusal adds
``Retry-After``; a deprecated operation adds ``Deprecation``, ``Sunset`` and
``Link`` for an authenticated caller. All of them describe the same decision,
rounded the same way: no header names an instant before the one from which
the client may really retry, nor a sunset after the one it really comes at.

**Whose clock.** A client computes a wait from a header by subtracting either
its own clock or the answer's ``Date``. Waits written as seconds
(``Retry-After: 30``, ``X-RateLimit-Reset`` as a delta, the draft ``RateLimit``
header's ``t``) need neither. For the instants a wait ends at, the scenario's
``clock.headers`` chooses: ``wall`` (the default) writes every such instant as
far from the wall clock's now as it lies from the scenario clock's now
(``t + offset``, where ``offset`` is ``Clock.wall_offset()``), and ``Date`` as
the wall clock's now, so both kinds of client wait the scenario's remaining
time, on any clock; ``scenario`` writes them as the scenario clock names them
(``offset`` 0), for clients and tests that read the dates themselves. On a
clock that runs in real time the two are the same.

**Announced dates are facts.** ``Deprecation`` and ``Sunset`` state the
scenario's calendar dates (5 December 2030 by default), on any clock and under
either ``clock.headers``, as the 410's message does: one answer never states
two dates for one fact. Only waits and window ends follow the headers' clock.

Pure Python over bytes: no Starlette, no ASGI. The parts that never change are
encoded once per scenario.

**Two ways to the same bytes.** ``build`` makes the header list of any answer:
the plain way, the reference. ``head`` makes the header *block* (the lines as
sent on the wire) of the most common answers (no headers of the answer's own,
no ``Retry-After``) the fast way: from a template derived from ``build`` itself,
kept per second and per everything else the headers read, with slots where the
figures that change from one request to the next go (body length, remaining
counts, request id). So a header added to ``build`` (a provider profile's, say)
reaches the fast way with no second copy of it, as long as it reads the
per-request figures only to print them; one that reads them otherwise (a
warning below some remaining count) must add itself to the template's key.
``tests/test_fast_headers.py`` checks that both ways agree for random sequences
of requests, clock moves, plans and scenarios.
"""

from __future__ import annotations

import math
from email.utils import formatdate
from operator import itemgetter

from mockstore import schemas
from mockstore.clock import Clock
from mockstore.limiter.announce import Announcer
from mockstore.ratelimit import Decision, Plan
from mockstore.scenario.model import Scenario

Header = tuple[bytes, bytes]

JSON_CONTENT_TYPE: Header = (b"content-type", b"application/json")

# The figures a header block's template leaves open, in the order ``head``
# passes them. Each has a sentinel that ``build`` prints where the figure goes:
# no real header holds a 19-digit number, and ``_template`` checks that anyway.
_SLOTS = ("length", "remaining", "minute_remaining", "day_remaining", "request_id")
_PROBES = (
    (7_304_918_265_517_362_801, 7_304_918_265_517_362_802, 7_304_918_265_517_362_803,
     7_304_918_265_517_362_804, b"<request-id 7304918265517362805>"),
    (8_196_402_735_881_640_571, 8_196_402_735_881_640_572, 8_196_402_735_881_640_573,
     8_196_402_735_881_640_574, b"<request-id 8196402735881640575>"),
)  # fmt: skip
# Templates kept at once: one per plan, window and deprecation in use this second.
_MAX_TEMPLATES = 256


def serialize(headers: list[Header] | tuple[Header, ...]) -> bytes:
    """Header lines as HTTP/1.1 sends them: ``name: value`` and CRLF each."""
    return b"".join([b"%b: %b\r\n" % (name, value) for name, value in headers])


def parse_block(block: bytes) -> tuple[Header, ...]:
    """The (name, value) pairs of a header block (``serialize``'s inverse)."""
    pairs = []
    for line in block.split(b"\r\n"):
        if line:
            name, _, value = line.partition(b": ")
            pairs.append((name, value))
    return tuple(pairs)


class _Template:
    """A header block with ``%`` slots, and which figures fill them, in order."""

    __slots__ = ("block", "figures")

    def __init__(self, block: bytes, slots: tuple[int, ...]) -> None:
        self.block = block
        # Picks the template's figures, in its order, out of head()'s five.
        picked = itemgetter(*slots)
        self.figures = picked if len(slots) > 1 else (lambda values: (picked(values),))


# What a header can state: an instant from 1970 to the end of the year 9999 (an
# IMF-fixdate has four digits of year). Written on the wall clock, an instant of a
# scenario clock far from it (set to the year 9000, or 1970) can fall outside:
# it is written as the nearest one that can be stated, which is as far in the
# past (or the future) as any client can tell.
_LATEST_STATED = 253402300799  # 9999-12-31T23:59:59Z


def _stated(when: float) -> float:
    return min(max(when, 0), _LATEST_STATED)


def http_date(when: float) -> bytes:
    """An IMF-fixdate (RFC 9110 section 5.6.7) for a Unix time, whole seconds."""
    return formatdate(_stated(when), usegmt=True).encode()


# Rounding an instant to whole seconds, first to the microsecond: an offset read from two
# wall-clock readings (a process joining a shared clock) carries float noise of a few
# tenths of a microsecond, which rounded up would move a window's end a whole second.
_MICROSECONDS = 6


def _after(instant: float, offset: float) -> int:
    """An instant a client must not act before, on the headers' clock: rounded up."""
    return math.ceil(round(_stated(instant + offset), _MICROSECONDS))


class ResponseHeaders:
    """Builds the header list of every API answer for one scenario."""

    def __init__(self, scenario: Scenario) -> None:
        behaviour = scenario.behaviour
        self.content_type: Header = (
            JSON_CONTENT_TYPE
            if behaviour.content_type == JSON_CONTENT_TYPE[1].decode()
            else (b"content-type", behaviour.content_type.encode("latin-1"))
        )
        # The limiter's headers (ratelimit.headers, the older settings read into it).
        limits = scenario.ratelimit
        announce = limits.headers
        self.retry_after_date = announce.retry_after == "http-date"
        # A banned key's Retry-After: "same" as retry_after, or a form of its own.
        banned = announce.retry_after_banned
        self.banned_retry_after = None if banned == "same" else banned
        self.reset_delta = announce.reset == "delta"
        self.reset_ms = announce.reset == "epoch-ms"
        self.draft = announce.draft == "all"
        # Forms the classic ones below cannot write (or a limiter whose resets are exact
        # instants): every answer's rate-limit headers are the general writer's, and the
        # fast way's templates (which key on whole-second resets) are not used.
        self.announcer = None if limits.classic else Announcer(limits)
        if self.announcer is not None:
            self.head = self._plain_head  # type: ignore[method-assign]
        request_id = behaviour.request_id.header
        self.request_id_name = request_id.lower().encode("latin-1") if request_id else None
        # Instants written on the wall clock (see the module docstring).
        self.on_wall_clock = scenario.clock_headers == "wall"
        self._deprecated_since = behaviour.deprecated_since
        self._sunset = behaviour.sunset
        self._deprecation_form = behaviour.deprecation_format
        self._sunset_header = behaviour.sunset_header
        successor = _successor_path(scenario.base_path)
        self._link: list[Header] = []
        link = behaviour.deprecation_link
        if link is not None and (successor is not None or "{successor}" not in link):
            text = link.replace("{successor}", (successor or b"").decode("latin-1"))
            self._link.append((b"link", text.encode("latin-1")))
        # The same on every answer, whatever the clock: built once.
        self.deprecation: tuple[Header, ...] = self._deprecation_headers()
        self._date_second = -1
        self._date_value = b""
        # head()'s templates, for the second they were made in (the Date, a
        # delta reset and the draft headers' ``t`` change with it).
        self._templates: dict[tuple[object, ...], _Template | None] = {}
        self._templates_second = -1

    def offset(self, clock: Clock) -> float:
        """Seconds added to a scenario instant to write it in a header (0: the scenario's)."""
        return clock.wall_offset() if self.on_wall_clock else 0.0

    def date(self, now: float) -> bytes:
        """The ``Date`` header for an instant on the headers' clock, formatted once per second."""
        second = int(now)
        if second != self._date_second:
            self._date_second = second
            self._date_value = http_date(second)
        return self._date_value

    def _deprecation_headers(self) -> tuple[Header, ...]:
        """``Deprecation``, ``Sunset`` and ``Link``: the scenario's calendar dates, as they are.

        Dates a provider announced (RFC 9745, RFC 8594), not waits: they do not
        follow the headers' clock (see the module docstring). A date between
        seconds is stated at the second before (a sunset is never later than it
        is).
        """
        since = math.floor(_stated(self._deprecated_since))
        sunset = math.floor(_stated(self._sunset))
        headers: list[Header] = []
        form = self._deprecation_form
        if form == "sf-date":
            headers.append((b"deprecation", b"@%d" % since))
        elif form == "http-date":
            headers.append((b"deprecation", http_date(since)))
        elif form == "true":
            headers.append((b"deprecation", b"true"))
        if self._sunset_header:
            headers.append((b"sunset", http_date(sunset)))
        headers.extend(self._link)
        return tuple(headers)

    def build(
        self,
        length: int,
        decision: Decision,
        plan: Plan,
        now: float,
        clock: Clock,
        deprecated: bool,
        ratelimit: int | bool,
        extra: list[Header] | tuple[Header, ...],
        replaces: bool,
        request_id: bytes,
        /,
    ) -> list[Header]:
        """The headers, in a stable order; ``extra`` ones last (they replace if ``replaces``).

        ``ratelimit`` is falsy for an answer that states no rate-limit figures, else
        its status (``True``: one not told), for the headers some statuses carry only
        (``ratelimit.headers.draft: success``). Positional: it runs once per request,
        and named arguments cost more.
        """
        offset = clock.wall_offset() if self.on_wall_clock else 0.0
        moment = now + offset
        if int(moment) != self._date_second:
            self.date(moment)
        headers: list[Header] = [
            self.content_type,
            (b"content-length", b"%d" % length),
            (b"date", self._date_value),
        ]
        if self.announcer is not None:
            headers.extend(self.announcer.write(decision, plan, now, offset, ratelimit))
        elif ratelimit:
            headers.append((b"x-ratelimit-limit", b"%d" % decision.limit))
            headers.append((b"x-ratelimit-remaining", b"%d" % decision.remaining))
            reset = decision.reset
            if self.reset_delta:
                # Seconds from now, rounded up like every figure: never early.
                reset = max(0, math.ceil(reset - now))
            elif offset:
                reset = _after(reset, offset)
            if self.reset_ms:
                reset *= 1000
            headers.append((b"x-ratelimit-reset", b"%d" % reset))
            if self.draft:
                headers.extend(draft_headers(decision, plan, now))
        if decision.retry_after and self.announcer is None:
            retry_after = self.retry_after(decision, offset)
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

    def _plain_head(
        self,
        length: int,
        decision: Decision,
        plan: Plan,
        now: float,
        clock: Clock,
        deprecated: bool,
        ratelimit: int | bool,
        request_id: bytes,
        /,
    ) -> bytes:
        """``head`` the plain way, for a scenario whose rate-limit headers are the general
        writer's (``mockstore.limiter.announce``): their figures change with each request."""
        return serialize(
            self.build(
                length, decision, plan, now, clock, deprecated, ratelimit, (), False, request_id
            )
        )

    def head(
        self,
        length: int,
        decision: Decision,
        plan: Plan,
        now: float,
        clock: Clock,
        deprecated: bool,
        ratelimit: int | bool,
        request_id: bytes,
        /,
    ) -> bytes:
        """``serialize(build(...))`` for an answer with no ``extra`` headers and no Retry-After.

        The caller sees to both (``decision.retry_after`` is 0: an allowed
        request); ``tests/test_fast_headers.py`` holds the two ways equal.

        The fast way (see the module docstring): a template per second and per
        everything ``build`` reads but the per-request figures, filled in with
        one ``%``. Made from ``build`` the first time a shape is seen in a
        second (about 30,000 instructions, so a server answering one request a
        second pays more than the plain way; one answering thousands, far less).
        """
        offset = clock.wall_offset() if self.on_wall_clock else 0.0
        if offset and clock.mode == "manual":
            # Instants written on the wall clock from a clock that stands still:
            # the offset grows with every request, so no template would serve
            # twice (``Clock.wall_offset``). The plain way.
            return serialize(
                self.build(
                    length, decision, plan, now, clock, deprecated, ratelimit, (), False, request_id
                )
            )
        second = int(now)
        templates = self._templates
        if second != self._templates_second or len(templates) >= _MAX_TEMPLATES:
            templates.clear()
            self._templates_second = second
        # Everything build() reads, but the slots and the second: see _template.
        # The plan by its figures (all build() reads of it): hashing the Plan
        # itself, a dataclass, would cost more than the rest of the key.
        shape = (
            decision.verdict,
            decision.limit,
            decision.reset,
            decision.minute_reset,
            decision.day_reset,
            plan.per_minute,
            plan.per_day,
            deprecated,
            ratelimit,
        )
        if offset:
            # A running clock set apart from the wall clock (a chosen start): its
            # instants are written shifted by the offset, and the Date's second
            # turns at a fraction of the scenario's second of its own.
            shape = (*shape, offset, int(now + offset))
        try:
            template = templates[shape]
        except KeyError:
            template = templates[shape] = self._template(
                decision, plan, now, clock, deprecated, ratelimit
            )
        values = (
            length,
            decision.remaining,
            decision.minute_remaining,
            decision.day_remaining,
            request_id,
        )
        if template is None:  # the sentinels showed up elsewhere: the plain way, then
            return serialize(
                self.build(
                    length, decision, plan, now, clock, deprecated, ratelimit, (), False, request_id
                )
            )
        return template.block % template.figures(values)

    def _template(
        self,
        decision: Decision,
        plan: Plan,
        now: float,
        clock: Clock,
        deprecated: bool,
        ratelimit: int | bool,
    ) -> _Template | None:
        """``build``'s block for this shape with slots for the figures; None if it cannot be.

        ``build`` prints the first set of sentinel figures; each is replaced by
        a slot. The result must then print ``build``'s block for the second
        set too, or it is not used (a sentinel's digits in a constant value,
        or a header that does more with a figure than print it).
        """
        blocks = []
        for length, remaining, minute, day, request_id in _PROBES:
            probe = decision._replace(
                remaining=remaining, minute_remaining=minute, day_remaining=day
            )
            headers = self.build(
                length, probe, plan, now, clock, deprecated, ratelimit, (), False, request_id
            )
            blocks.append(serialize(headers))
        # Cut the first block at each sentinel, earliest first; ``%`` escaped between.
        texts = [v if isinstance(v, bytes) else b"%d" % v for v in _PROBES[0]]
        block, pieces, slots, at = blocks[0], [], [], 0
        while True:
            hits = [(block.find(text, at), i) for i, text in enumerate(texts)]
            found = min(((where, i) for where, i in hits if where >= 0), default=None)
            if found is None:
                break
            where, index = found
            pieces.append(block[at:where].replace(b"%", b"%%"))
            pieces.append(b"%b" if isinstance(_PROBES[0][index], bytes) else b"%d")
            slots.append(index)
            at = where + len(texts[index])
        pieces.append(block[at:].replace(b"%", b"%%"))
        if not slots:
            return None
        template = _Template(b"".join(pieces), tuple(slots))
        try:
            checked = template.block % template.figures(_PROBES[1])
        except (TypeError, ValueError):
            return None
        return template if checked == blocks[1] else None

    def retry_after(self, decision: Decision, offset: float) -> bytes | None:
        """``Retry-After`` for a refusal: whole seconds, or an HTTP-date on the headers' clock.

        None for a banned key whose provider sends none (``retry_after_banned: none``).
        """
        as_date = self.retry_after_date
        if self.banned_retry_after is not None and decision.verdict == "key_banned":
            if self.banned_retry_after == "none":
                return None
            as_date = self.banned_retry_after == "http-date"
        if not as_date:
            return b"%d" % decision.retry_after
        return http_date(_after(decision.retry_at, offset))


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


def _successor_path(base_path: str) -> bytes | None:
    """The path of the deprecated operation's stated replacement, under the base path."""
    operations = schemas.operations()
    for operation in operations.values():
        replacement = operation.replacement
        if operation.deprecated and replacement is not None:
            return (base_path + operations[replacement["operationId"]].path).encode()
    return None
