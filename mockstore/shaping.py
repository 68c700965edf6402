"""How a scenario's HTTP semantics shape an exchange: the web side of ``http_semantics``.

``mockstore.api`` calls in only for a scenario whose ``HttpSemantics`` is not
None, at the points of its pipeline where each part applies:

1. before routing, a trailing slash the scenario serves as if absent (``unslashed``);
2. at each stage (``gateway`` before the limiter, ``counted`` after it,
   ``authenticated`` after the key), an answer made in the API's place
   (``staged``): a redirect, a CORS preflight, a maintenance refusal, an
   ``OPTIONS``; a gateway answer in a shared state is numbered in Redis
   (``number``), so its request id is the one a single process would give;
3. on the way out (``finish``): a 304, ``Last-Modified``, the advisory, CORS and
   ``Allow`` headers, the content coding, and the answer's delay, waited on the
   runtime's timebase without holding the event loop.

The request's headers are read once, only those the semantics need
(``HttpSemantics.reads``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from starlette.types import Receive

from mockstore import encoding, maintenance
from mockstore.conditional import POINT_BYTES
from mockstore.error_bodies import ErrorFacts
from mockstore.errors import ApiError
from mockstore.headers import http_date
from mockstore.http_semantics import HttpSemantics, Made, Request, pet_ids
from mockstore.shared.deadline import Stale, StateUnavailable
from mockstore.sharing_errors import Restart, Unavailable

Header = tuple[bytes, bytes]


class Answering(Protocol):
    """What ``finish`` reads and changes of the answer on its way out (``api.Answer``)."""

    status: int
    body: bytes
    error: Any


def request_of(semantics: HttpSemantics, scope: dict[str, Any], relative: str) -> Request:
    """The request as the semantics read it: only the headers they need."""
    wanted = semantics.reads
    headers: dict[bytes, bytes] = {}
    for name, value in scope["headers"]:
        if name in wanted and name not in headers:
            headers[name] = value
    return Request(
        scope["method"],
        scope["path"],
        relative,
        scope["query_string"],
        headers,
        scope.get("scheme", "http"),
    )


def served(ex: Any, relative: str) -> str:
    """``Allow`` of a path under the exchange's scenario ("" for a path nothing serves)."""
    semantics: HttpSemantics = ex.compiled.semantics
    return semantics.served(ex.compiled.service, ex.state.routes, relative)


def resolved(semantics: HttpSemantics, ex: Any, relative: str) -> tuple[str, Any]:
    """The path and its resolution once a trailing slash the scenario serves as absent is
    taken off; ``ex.request`` is the request as the semantics read it from then on."""
    found = semantics.unslashed(relative, lambda path: served(ex, path))
    if found is not None and ex.scope["path"].startswith(ex.compiled.base):
        relative = found
        ex.resolved = ex.compiled.service.router.resolve(ex.scope["method"], relative)
    ex.request = request_of(semantics, ex.scope, relative)
    return relative, ex.resolved


def staged(semantics: HttpSemantics, ex: Any, stage: str) -> Made | None:
    """The answer made at ``stage`` in place of the API's, if any."""
    made = semantics.staged(
        stage,
        ex.request,
        ex.now,
        ex.now - ex.state.clock.start,
        lambda path: served(ex, path),
    )
    if made is not None:
        ex.rule = made.rule
        error = made.error
        if made.retry_after is not None and error is not None:
            clock = ex.state.clock
            offset = ex.compiled.headers.offset(clock)
            value = maintenance.retry_after(
                made.retry_after,
                error.retry_at,
                ex.now,
                lambda end: http_date(math.ceil(round(end + offset, 6))),
            )
            if value is not None:
                made.headers.append((b"retry-after", value))
    return made


async def gateway(ex: Any, runtime: Any, receive: Receive) -> None:
    """Ready an exchange answered at the gateway: its caller as the limiter stands (nothing
    counted) and, in a shared state, its request number from Redis."""
    client = ex.scope.get("client")
    ex.caller = ex.compiled.service.bystander(ex.state, client[0] if client else "unknown", ex.now)
    ex.number = await number(runtime, receive)


async def number(runtime: Any, receive: Receive) -> int | None:
    """A gateway answer's request number in a shared state (None in memory).

    ``Restart`` when the configuration changed (this process reloaded it),
    ``Unavailable`` when Redis is out of reach.
    """
    shared = runtime.shared
    if shared is None:
        return None
    from mockstore.shared import numbering  # a state in Redis only (an in-memory start)

    try:
        return await numbering.next_number(shared)
    except Stale:
        raise Restart(receive) from None
    except StateUnavailable as exc:
        refusal = ApiError(
            "state_unavailable",
            f"the mock's shared state cannot be reached ({exc}); nothing was counted or "
            "stored; retry shortly",
            headers=((b"retry-after", b"1"),),
        )
        raise Unavailable(refusal) from None


def after_limiter(semantics: HttpSemantics, ex: Any) -> Made | None:
    """An answer made once the limiter counted the caller: at the ``counted`` stage (any
    caller within its allowance), then at ``authenticated`` (a valid key)."""
    caller = ex.caller
    if caller.decision.verdict != "allowed":
        return None  # the limiter's refusal comes first
    if "counted" in semantics.stages:
        made = staged(semantics, ex, "counted")
        if made is not None:
            return made
    if caller.admitted and "authenticated" in semantics.stages:
        return staged(semantics, ex, "authenticated")
    return None


def error_facts(ex: Any, request_id: bytes) -> ErrorFacts:
    """What a scenario's Error bodies may state of this answer (``error_bodies``)."""
    scope = ex.scope
    caller = ex.caller
    decision = caller.decision
    return ErrorFacts(
        request_id.decode("latin-1"),
        ex.now,
        scope["method"],
        scope["path"],
        caller.credentials.token if caller.credentials.kind == "bearer" else None,
        decision.retry_at if decision.retry_after else None,
        decision.limit,
    )


async def shaped(
    ex: Any,
    runtime: Any,
    answer: Answering,
    generated: bytes,
    extra_of: Callable[[Any, Any], Sequence[Header]],
) -> tuple[bytes, Sequence[Header], bytes | None]:
    """An answer shaped by the scenario's HTTP semantics: the request id it carries (the
    client's own, if echoed), its headers beyond ``build``'s (``extra_of(ex, answer)``: the
    answer's own and its profile's), and the content the journal keeps when the body is sent
    coded (None: the body as sent)."""
    semantics: HttpSemantics = ex.compiled.semantics
    request = ex.request
    request_id = generated
    if request is not None:
        request_id = semantics.request_id(request.headers, generated)
    profile = ex.compiled.profile
    if profile is not None and answer.error is not None and profile.rewrites_errors:
        answer.body = profile.error_body(answer.error, error_facts(ex, request_id))
    extra = extra_of(ex, answer)
    content = answer.body
    if request is not None:
        extra = await finish(semantics, ex, runtime, answer, extra, generated)
    return request_id, extra, None if content is answer.body else content


def _group(ex: Any) -> str | None:
    key = ex.caller.key
    return key.tenant if key is not None and ex.state.stores.per_key else None


async def _seconds(semantics: HttpSemantics, ex: Any, runtime: Any, body: bytes) -> list[int]:
    """The creation seconds of the pets a read's ``body`` shows, in the caller's store."""
    operation = ex.operation
    if runtime.shared is not None:
        from mockstore.shared import created  # a state in Redis only (an in-memory start)

        ids = pet_ids(operation, body, ex.params)
        return await created.seconds(
            runtime.shared, _group(ex), ids, semantics.conditional.pets_modified
        )
    store = semantics.creation_seconds(ex.state, _group(ex))
    if not store.first_ids:
        return []  # nothing created: every pet dates from pets_modified (no body to parse)
    return [store.of(pet_id) for pet_id in pet_ids(operation, body, ex.params)]


async def _note(semantics: HttpSemantics, ex: Any, runtime: Any, body: bytes) -> None:
    """A create's pet was made now: its creation second, for Last-Modified."""
    ids = pet_ids("createPet", body, {})
    if not ids:
        return
    if runtime.shared is not None:
        from mockstore.shared import created  # a state in Redis only (an in-memory start)

        await created.note(runtime.shared, _group(ex), ids[0], ex.now)
        return
    seconds = semantics.creation_seconds(ex.state, _group(ex))
    if seconds.adds(ids[0], ex.now):
        account = ex.state.account
        if account is not None and not account.reserve(POINT_BYTES):
            return  # no room: the pet dates from the change point before it
        seconds.note(ids[0], ex.now)


def _header(headers: Sequence[Header], name: bytes) -> bytes | None:
    for header, value in headers:
        if header == name:
            return value
    return None


async def finish(
    semantics: HttpSemantics,
    ex: Any,
    runtime: Any,
    answer: Answering,
    extra: Sequence[Header],
    generated: bytes,
) -> list[Header]:
    """What the semantics change of an answer on its way out; its headers beyond build's.

    ``answer`` becomes a 304 (no body) or its body coded; ``generated`` is the
    answer's own request id (the latency draw's, whatever id is answered back).
    """
    request: Request = ex.request
    operation = ex.operation
    status = answer.status
    added = list(extra)
    if semantics.dated and operation == "createPet" and status == 201:
        await _note(semantics, ex, runtime, answer.body)
    modified: int | None = None
    if semantics.wants_dates(operation, status, request.method):
        seconds = await _seconds(semantics, ex, runtime, answer.body)
        # Written on the headers' clock, and compared there with If-Modified-Since.
        modified = math.floor(
            semantics.last_modified(seconds, ex.now) + ex.compiled.headers.offset(ex.state.clock)
        )
        added.append((b"last-modified", http_date(modified)))
    if semantics.not_modified(operation, status, request, _header(added, b"etag"), modified):
        answer.status = status = 304
        answer.body = b""
    advisory = semantics.advisory_header(operation, status, ex.request_body)
    if advisory is not None:
        added.append(advisory)
    clamped = semantics.clamp_header(operation, status, request.query)
    if clamped is not None:
        added.append(clamped)
    added.extend(semantics.cors_headers(request))
    error = answer.error
    if error is not None and error.condition == "method_not_allowed":
        allow = _header(added, b"allow")
        if allow is not None:
            rewritten = semantics.allow_of(request.relative, allow.decode("latin-1"))
            added = [h for h in added if h[0] != b"allow"]
            added.append((b"allow", rewritten.encode("latin-1")))
    coding = semantics.coding(request, status, answer.body)
    if semantics.varies(status, answer.body):
        added.append((b"vary", b"Accept-Encoding"))
    if coding is not None:
        answer.body = encoding.encode(coding, answer.body)
        added.append((b"content-encoding", coding.encode()))
    delay = semantics.delay_ms(operation, status, generated)
    if delay > 0:
        await runtime.timebase.wait(delay / 1000)
    return added


__all__ = [
    "Request",
    "after_limiter",
    "error_facts",
    "finish",
    "gateway",
    "number",
    "request_of",
    "resolved",
    "served",
    "shaped",
    "staged",
]
