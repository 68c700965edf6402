"""The Pet Store API as a plain ASGI application: HTTP in, HTTP out.

This module only translates. It takes the request apart (path, headers, body),
asks ``service.py`` what the answer is, and writes it with the headers
``headers.py`` builds, journaling each exchange. The rules themselves (who may
call, what each operation answers, every refusal) are the service's; the
scenario's faults decide *how* an answer is delivered, and that is the one
thing decided here. It is plain ASGI rather than Starlette routing because it
is the hot path: what never changes is built once per scenario, and a request
allocates little beyond its response.

The order of the steps is part of the contract (see the README):
clock -> route -> caller -> ban -> allowance -> auth -> operation -> rules ->
validation -> store -> headers -> journal.

A request that breaks halfway changes nothing: a body the client stops
sending (it leaves, or its chunks break) is an aborted request, journaled as
such with no answer, before any fault rule counts it or the store sees it;
one that comes too slowly is answered 408. Anything unexpected is logged with
its traceback and answered 500 with an Error body that still carries the
rate-limit headers and an ``X-Request-Id``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

import anyio.to_thread
from starlette.types import Receive, Scope, Send

from mockstore import shaping, transport
from mockstore.body_reserve import BodyReserve
from mockstore.errors import ApiError
from mockstore.faults import Needs, Outcome, RequestFacts, parse_query, rule_header_names
from mockstore.headers import Header, ResponseHeaders
from mockstore.http_semantics import HttpSemantics, Made
from mockstore.json_array import JsonArray
from mockstore.keys import ApiKey, client_bucket, parse_authorization
from mockstore.limits import HEAD_BYTES, RESPONSE, WRITE_CHUNK, Limits
from mockstore.memory import Account, format_size
from mockstore.profile import AnswerProfile
from mockstore.routing import Resolved
from mockstore.scenario.model import Reply, Route, Scenario
from mockstore.service import Caller, PetStoreService
from mockstore.sharing_errors import Restart, Unavailable
from mockstore.state import MockState, Runtime
from mockstore.validation import parse_json_body

if TYPE_CHECKING:
    from mockstore.shared.store import RequestStore

access_log = logging.getLogger("mockstore.access")
log = logging.getLogger("mockstore.api")
# Read on every request: a module global is one lookup where ``time.perf_counter`` is two.
_perf_counter = time.perf_counter
_INFO = logging.INFO

_NOWHERE = Resolved(None, {}, "")
# An answer larger than this is charged to the connections' share of the memory
# budget while it is being written (a slow reader can keep it for the write
# timeout), and sent in pieces; a smaller one goes to the socket's buffer at once.
HELD_ANSWER_BYTES = WRITE_CHUNK
# An answer after which the rest of the request may still be on its way.
_CLOSE: tuple[Header, ...] = ((b"connection", b"close"),)


class RequestAborted(Exception):
    """The client stopped sending the body (it left, or broke the framing)."""


class Answer:
    """A response on its way out: status, body, and headers beyond the standard ones."""

    __slots__ = ("body", "error", "extra", "held", "ratelimit", "replaces", "status", "unmade")

    def __init__(self, status: int, body: bytes, extra: tuple[Header, ...] = ()) -> None:
        self.status = status
        self.body = body
        # Bytes reserved from the connections' share before the body was made (a
        # large listing: ``_made``), given back once it is written.
        self.held = 0
        # A large listing charged and not yet made (``_made``): ``made_off_loop`` makes it.
        self.unmade: JsonArray | None = None
        self.extra: tuple[Header, ...] | list[Header] = extra
        # Falsy: no rate-limit figures; else the status, for headers sent on some statuses
        # only (the draft headers on 2xx: ratelimit.headers.draft).
        self.ratelimit: int | bool = status
        self.replaces = False  # True for scripted answers, whose headers win
        self.error: ApiError | None = None  # a refusal's, for a profile's Error fields

    @classmethod
    def refusal(cls, error: ApiError) -> Answer:
        answer = cls(error.status, error.body(), error.headers)
        answer.error = error.kept()
        return answer

    @classmethod
    def made(cls, made: Made, ratelimit: bool = True) -> Answer:
        """An answer the scenario's HTTP semantics made in the API's place (``shaping``)."""
        if made.error is not None:
            answer = cls(made.status, made.error.body(), (*made.error.headers, *made.headers))
            answer.error = made.error.kept()
        else:
            answer = cls(made.status, b"", tuple(made.headers))
        answer.ratelimit = ratelimit
        return answer

    @classmethod
    def scripted(cls, reply: Reply) -> Answer:
        """A scenario's scripted answer (a fault's ``respond`` or a route)."""
        answer = cls(
            reply.status,
            reply.body or b"",
            tuple((k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in reply.headers),
        )
        answer.ratelimit = reply.status if reply.ratelimit_headers else False
        answer.replaces = bool(reply.headers)
        return answer


# Where the request headers the pipeline reads land, by name: see Compiled.slots.
_AUTHORIZATION, _CONTENT_TYPE, _CONTENT_LENGTH, _RULE_HEADER = range(4)


class Compiled:
    """What one scenario fixes for the HTTP layer, built once when it is first served.

    ``slots`` names the request headers the pipeline reads, each with its place:
    the three it always reads, and every header a fault rule compares (all in
    one place: its presence is all the pipeline notes). One dict lookup per
    request header finds them all, for what three comparisons cost, and a
    request without any rule's header is screened without a second pass over
    its headers.
    """

    __slots__ = (
        "base",
        "deprecation_on",
        "gives_back",
        "headers",
        "profile",
        "scenario",
        "semantics",
        "service",
        "slots",
    )

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.base = scenario.base_path
        self.service = PetStoreService(scenario)
        self.headers = ResponseHeaders(scenario)
        # Some answers give back what their request took (ratelimit.not_counted).
        self.gives_back = bool(scenario.ratelimit.not_counted)
        # What the scenario's answers carry beyond mockstore's own (None: nothing).
        self.profile = AnswerProfile.of(scenario)
        # Its HTTP semantics, maintenance windows and latency (None: none of them).
        self.semantics = HttpSemantics.of(scenario)
        # Which answers to a deprecated operation announce it (behaviour.deprecation_on).
        self.deprecation_on = scenario.behaviour.deprecation_on
        self.slots = dict.fromkeys(rule_header_names(scenario.faults), _RULE_HEADER)
        self.slots.update(
            {
                b"authorization": _AUTHORIZATION,
                b"content-type": _CONTENT_TYPE,
                b"content-length": _CONTENT_LENGTH,
            }
        )


class Exchange:
    """One request on its way through the pipeline, and what was decided for it."""

    __slots__ = (
        "answer_headers",
        "arrived_after",
        "caller",
        "compiled",
        "content_type",
        "dropped",
        "now",
        "number",
        "operation",
        "outcome",
        "params",
        "query",
        "request",
        "request_body",
        "resolved",
        "rule",
        "scope",
        "shared",
        "started",
        "state",
        "wall",
    )

    def __init__(self, scope: Scope, state: MockState, compiled: Compiled) -> None:
        self.started = _perf_counter()
        self.scope = scope
        self.state = state
        self.compiled = compiled
        clock = state.clock
        self.now = clock.now()  # read once: every step sees the same instant
        # The wall clock's instant of it (the headers' "now"), read here with it: read
        # when the answer is journaled, after it is sent, a manual clock's wall has moved
        # on as far as the client went meanwhile (it may have slept, or sent again).
        self.wall = self.now + clock.wall_offset()
        self.operation: str | None = None
        self.resolved: Resolved
        self.caller: Caller
        # What the operation reads (service.Call): the exchange is its own input.
        self.query: bytes = scope["query_string"]
        self.params: dict[str, str] = {}
        self.request_body = b""
        self.content_type: bytes | None = None
        self.rule: str | None = None
        # The request's view of a store in Redis, its number there and the rules
        # that fired (``mockstore.sharing``); None in memory.
        self.shared: RequestStore | None = None
        self.number: int | None = None
        self.outcome: Outcome | None = None
        # The request as the scenario's HTTP semantics read it (``shaping``; None without).
        self.request: shaping.Request | None = None
        # What the operation adds to its answer (service.Call): a page's headers, and
        # the NewPet fields a create dropped.
        self.answer_headers: tuple[Header, ...] = ()
        self.dropped: tuple[str, ...] = ()

    def link_path(self) -> str:
        """The path the client asked for, under the server's root (a tenant's prefix too)."""
        scope = self.scope
        return scope.get("root_path", "") + scope["path"]

    def origin(self) -> str | None:
        """``scheme://host`` the client addressed: the mock's own address, from its Host."""
        return _origin(self.scope)


class PetStoreAPI:
    """The ASGI app serving the Pet Store interface from a ``Runtime``.

    ``body_timeout`` is how long a request body may take to arrive, from the
    first read (the server's ``--timeout-body``). ``connections`` is the share
    of the memory budget that bodies being read and large answers being
    written draw on (507 ``memory_budget`` when it has no room); ``bodies``
    keeps every connection the first bytes of its request body
    (``body_reserve``), the rest drawing on ``connections``.
    """

    def __init__(
        self,
        runtime: Runtime,
        body_timeout: float = Limits().body_timeout,
        connections: Account | None = None,
        bodies: BodyReserve | None = None,
    ) -> None:
        self.runtime = runtime
        self.body_timeout = body_timeout
        self.connections = connections
        self.bodies = bodies
        self._compiled: Compiled | None = None

    def _compiled_for(self, scenario: Scenario) -> Compiled:
        compiled = self._compiled
        if compiled is None or compiled.scenario is not scenario:
            compiled = self._compiled = Compiled(scenario)
        return compiled

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        state = self.runtime.state  # read once: a scenario swap cannot split a request
        compiled = self._compiled
        if compiled is None or compiled.scenario is not state.scenario:  # (a call saved)
            compiled = self._compiled_for(state.scenario)
        ex = Exchange(scope, state, compiled)
        # What had been answered when it arrived: the etiquette report tells a
        # request already in flight when a 429 was sent from one sent after it.
        ex.arrived_after = self.runtime.outbox.last_seq
        # The whole pipeline in one try (free in Python 3.11 until something raises):
        # anything unexpected is still answered, with the caller's headers.
        try:
            service = compiled.service
            found: list[bytes | None] = [None, None, None, None]
            slots = compiled.slots
            headers = scope["headers"]
            for name, value in headers:
                slot = slots.get(name)
                if slot is not None:
                    found[slot] = value
            authorization, content_type, content_length, rule_header = found
            ex.content_type = content_type

            method: str = scope["method"]
            path: str = scope["path"]
            base = compiled.base
            # Outside the base path no operation matches, but the caller is still
            # checked first: a caller without a key learns nothing about paths
            # (unless the scenario's provider checks paths first: path_check).
            if path.startswith(base):
                relative = path[len(base) :]
                resolved = ex.resolved = service.router.resolve(method, relative)
            else:
                relative = path
                resolved = ex.resolved = _NOWHERE
            semantics = compiled.semantics
            if semantics is not None:
                # A trailing slash served as absent, and the answers made at the gateway.
                relative, resolved = shaping.resolved(semantics, ex, relative)
                if "gateway" in semantics.stages:
                    made = shaping.staged(semantics, ex, "gateway")
                    if made is not None:
                        # Before the limiter: nothing counted, no rate-limit figures.
                        await shaping.gateway(ex, self.runtime, receive)
                        await self._respond(send, ex, Answer.made(made, ratelimit=False))
                        return
            operation = resolved.operation
            if operation is not None:
                ex.operation = operation.operation_id
                ex.params = resolved.params
            client = scope.get("client")
            if self.runtime.shared is None:
                caller = ex.caller = service.identify(
                    state,
                    parse_authorization(authorization),
                    client[0] if client else "unknown",
                    ex.now,
                )
            else:  # one round trip to the shared state (Redis) counts it and runs the store
                # Imported with a state in Redis only (an in-memory start never does); the
                # dotted form is the cheaper statement once it is (0.4 against 0.9 us).
                import mockstore.sharing

                receive, caller = await mockstore.sharing.admit(
                    self,
                    ex,
                    parse_authorization(authorization),
                    client[0] if client else "unknown",
                    relative,
                    receive,
                    content_length,
                )
                ex.caller = caller
            try:
                route, route_methods = state.routes.for_path(method, relative, service.serve_head)
                unrouted = None
                if operation is None and route is None:
                    allow = state.routes.allow(route_methods, resolved.allow, service.serve_head)
                    unrouted = service.no_operation(method, path, allow)
                if semantics is not None:
                    if unrouted is not None and semantics.serves_options(method, unrouted):
                        unrouted = None  # OPTIONS is one of the path's methods
                    if semantics.stages - {"gateway"}:
                        made = shaping.after_limiter(semantics, ex)
                        if made is not None:
                            await self._respond(send, ex, Answer.made(made))
                            return
                if not caller.admitted:
                    raise service.refusal(caller, unrouted)
                if route is not None and operation is None:
                    ex.operation = f"{route.method} {route.path}"
                if unrouted is not None:
                    raise unrouted
                if operation is not None and operation.body_schema is not None:
                    await self._read_body(ex, receive, content_length)
            except ApiError as refusal:
                await self._respond(send, ex, Answer.refusal(service.worded(refusal)))
                return

            assert caller.key is not None
            faults = state.faults
            if self.runtime.shared is not None:
                outcome = ex.outcome  # the request's one call to Redis fired the rules
            elif faults.rules and (
                # Screened on the raw request first: RequestFacts are made only for
                # a request some rule could fire for.
                screened := faults.screen(
                    ex.operation,
                    caller.key.key,
                    scope["query_string"],
                    () if rule_header is None else headers,  # none a rule compares: no rescan
                    ex.now - state.clock.start,
                )
            ):
                outcome = faults.evaluate(self._facts(ex, screened.needs, relative), screened)
            else:
                outcome = None
            if outcome is not None:
                ex.rule = ",".join(outcome.fired) or None
                if outcome.delay_ms:
                    await pause(outcome.delay_ms / 1000)
                rule = outcome.rule
                if rule is not None and rule.fault is not None:
                    await self._break(send, ex, rule.fault, route)
                    return
                if rule is not None and rule.reply is not None:
                    await self._respond(send, ex, Answer.scripted(rule.reply))
                    return
            answer = self._answer(ex, route)
            if answer.unmade is not None:
                await self._made_off_loop(answer)
            await self._respond(send, ex, answer)
        except RequestAborted:
            self._record(ex, b"", 0, (), b"", "aborted")
        except transport.ConnectionBroken:
            raise  # a scripted fault, in-process: the server drops the connection
        except Restart as restart:  # the shared configuration changed: again
            await self(scope, restart.receive, send)
        except Unavailable as lost:
            answer = Answer.refusal(lost.error)
            answer.ratelimit = False  # where the caller stands is not known
            await self._respond(send, ex, answer)
        except Exception as exc:
            await self._fail(send, ex, exc)

    async def _read_body(self, ex: Exchange, receive: Receive, declared: bytes | None) -> None:
        """Read the request body into ``ex.request_body``, whole, or raise.

        ApiError 413 once it passes the limit (the rest is never read), 408 when
        it is not complete within ``body_timeout``, RequestAborted when the
        client leaves first: a body cut short is never taken for a whole one.
        """
        service = ex.compiled.service
        limit = service.max_body_bytes
        if declared is not None and (
            len(declared) > 19 or (declared.isdigit() and int(declared) > limit)
        ):
            raise service.body_too_large()
        chunks: list[bytes] = []
        size = 0
        # What the body holds while it arrives is charged to the memory budget
        # (many slow uploads at once would hold their bodies for the body timeout):
        # its first bytes to what is kept for every connection, the rest shared.
        connections = self.connections
        bodies = self.bodies
        charge = None if bodies is None else bodies.charge()
        charged = 0
        try:
            async with asyncio.timeout(self.body_timeout):
                while True:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        raise RequestAborted
                    chunk = message.get("body", b"")
                    size += len(chunk)
                    if size > limit:
                        raise service.body_too_large()
                    if charge is not None:
                        if not charge.take(len(chunk)):
                            raise _over_budget(bodies.connections, "this request body")  # type: ignore[union-attr]
                    elif connections is not None:
                        if not connections.reserve(len(chunk)):
                            raise _over_budget(connections, "this request body")
                        charged += len(chunk)
                    chunks.append(chunk)
                    if not message.get("more_body", False):
                        break
        except TimeoutError:
            raise ApiError(
                "request_timeout",
                f"the request body did not arrive within {self.body_timeout:g} s "
                f"({size} bytes came)",
                headers=_CLOSE,
            ) from None
        finally:
            ex.request_body = b"".join(chunks)
            if charge is not None:
                charge.release()
            if charged:
                connections.release(charged)  # type: ignore[union-attr]

    async def _fail(self, send: Send, ex: Exchange, exc: Exception) -> None:
        """Log an unexpected exception with its traceback and answer 500, if still possible."""
        scope = ex.scope
        method, path = scope["method"], scope["path"]
        if not hasattr(ex, "caller"):
            # It broke before the caller was counted: the headers say where the
            # anonymous caller stands, without counting this request.
            client = scope.get("client")
            ex.caller = ex.compiled.service.bystander(
                ex.state, client[0] if client else "unknown", ex.now
            )
        if not hasattr(ex, "resolved"):
            ex.resolved = _NOWHERE
        refusal = ApiError(
            "internal_error",
            f"mockstore failed unexpectedly while answering {method} {path}; "
            "its log has the traceback (under the X-Request-Id of this answer)",
            headers=_CLOSE,
        )
        request_id: str | None
        try:
            request_id = (await self._respond(send, ex, Answer.refusal(refusal))).decode()
        except Exception:
            # The answer had already begun (the server refuses a second one):
            # the connection is dropped.
            request_id = None
        log.error(
            "unexpected error answering %s %s (%s)", method, path, request_id or "no answer",
            exc_info=exc, extra={"method": method, "path": path, "request_id": request_id},
        )  # fmt: skip

    def _answer(self, ex: Exchange, route: Route | None) -> Answer:
        """What the operation (or the scenario's scripted route for it) answers."""
        state = ex.state
        script = route or state.routes.by_operation.get(ex.operation or "")
        if script is not None:
            ex.rule = ex.rule or f"routes[{script.index}]"
            return Answer.scripted(script.reply)
        operation = ex.resolved.operation
        assert operation is not None and ex.caller.key is not None
        store = ex.shared or state.stores.store_for(ex.caller.key.tenant)
        service = ex.compiled.service
        try:
            body = service.handlers[operation.operation_id](service, store, ex)
        except ApiError as refusal:
            return Answer.refusal(service.worded(refusal))
        assert operation.success_status is not None
        if type(body) is not bytes:
            return self._made(ex, body, operation.success_status)  # type: ignore[arg-type]
        return Answer(operation.success_status, body, ex.answer_headers)

    def _made(self, ex: Exchange, body: JsonArray, status: int) -> Answer:
        """A large listing's answer: its size charged to the connections' share, then made.

        Charged before one byte of it exists (a hundred readers that never read
        asked for a hundred 16.6 MB listings, each made and only then refused);
        507 when the share has no room, and the listing is never made.
        """
        connections = self.connections
        if connections is None or body.size <= HELD_ANSWER_BYTES:
            return Answer(status, body.join(), ex.answer_headers)
        if not connections.reserve(body.size):
            return Answer.refusal(_over_budget(connections, "this listing"))
        answer = Answer(status, b"", ex.answer_headers)
        answer.held = body.size
        answer.unmade = body  # made off the event loop (``_made_off_loop``): it is megabytes
        return answer

    async def _made_off_loop(self, answer: Answer) -> None:
        """Make a charged listing's bytes in a worker thread.

        Joining megabytes (16.6 MB for the hostile mix's listing: a fresh
        allocation, its pages faulted in, and the copy) held the event loop
        for tens of milliseconds a listing; ``bytes.join`` lets go of the GIL
        while it copies a large result, so the loop keeps answering. Its
        charge (``answer.held``) is given back if the request ends here.
        """
        unmade = answer.unmade
        assert unmade is not None
        answer.unmade = None
        try:
            answer.body = await anyio.to_thread.run_sync(unmade.join)
        except BaseException:
            self.connections.release(answer.held)  # type: ignore[union-attr]
            answer.held = 0
            raise

    def _facts(
        self,
        ex: Exchange,
        needs: Needs,
        relative: str,
        key: ApiKey | None = None,
        operation: str | None = None,
    ) -> RequestFacts:
        """What the fault rules may look at; only the parts they read are parsed.

        ``key`` and ``operation``: the caller's and the request's, before the
        pipeline has set them (``mockstore.sharing`` asks before counting).
        """
        key = key or ex.caller.key
        assert key is not None
        scope = ex.scope
        facts = RequestFacts(
            operation=operation or ex.operation,
            method=scope["method"],
            path=relative,
            key=key.key,
            plan=key.plan,
            elapsed=ex.now - ex.state.clock.start,
        )
        if needs.query:
            facts.query = parse_query(scope["query_string"])
        if needs.headers:
            wanted = needs.header_keys
            for name, value in scope["headers"]:
                if name in wanted:  # ASGI header names are lower-case already
                    facts.headers[name.decode("latin-1")] = value.decode("latin-1")
        if needs.body and ex.request_body:
            try:
                facts.body = parse_json_body(ex.request_body)
            except ApiError:
                facts.body = None
        return facts

    # -- writing the answer --------------------------------------------------

    @staticmethod
    def _deprecated(ex: Exchange, answer: Answer) -> bool:
        """Whether the answer carries the deprecation headers."""
        operation = ex.resolved.operation
        if operation is None or not operation.deprecated:
            return False
        on = ex.compiled.deprecation_on
        if on == "all":
            return True
        # Only for authenticated callers (a 401 must not reveal paths), unless the
        # scenario's provider says every answer; or their successes only.
        # A 304 stands for the 200 it saves (RFC 9110 section 15.4.5): a success too.
        success = 200 <= answer.status < 300 or answer.status == 304
        return ex.caller.key is not None and (on == "authenticated" or success)

    @staticmethod
    def _extra(ex: Exchange, answer: Answer) -> Sequence[Header]:
        """The answer's own headers, and those the scenario's provider profile adds to it."""
        profile = ex.compiled.profile
        if profile is None:
            return answer.extra
        operation = ex.resolved.operation
        return profile.headers(
            operation.operation_id if operation is not None else None,
            answer.status,
            answer.body,
            answer.extra,
            _origin(ex.scope),
        )

    def _headers(
        self,
        ex: Exchange,
        answer: Answer,
        request_id: bytes,
        length: int,
        extra: Sequence[Header] | None = None,
    ) -> list[Header]:
        """``build``'s headers for ``answer``; ``extra``: ``_extra``'s, if already known."""
        caller = ex.caller
        return ex.compiled.headers.build(
            length,
            caller.decision,
            caller.plan,
            ex.now,
            ex.state.clock,
            self._deprecated(ex, answer),
            answer.ratelimit,
            self._extra(ex, answer) if extra is None else extra,
            answer.replaces,
            request_id,
        )

    async def _respond(
        self, send: Send, ex: Exchange, answer: Answer, charged: bool = False
    ) -> bytes:
        """Send ``answer`` and journal the exchange; returns the request id it carried.

        Under mockstore's own server (``protocol.py``) an answer with no headers
        beyond mockstore's own (none of the answer's, none a provider profile
        adds), no ``Retry-After`` and a body of at most ``WRITE_CHUNK`` (every
        ordinary success, most refusals) goes out the fast way: its header
        block from ``ResponseHeaders.head``'s template, in one ``RESPONSE``
        message. Anywhere else (in process, another ASGI server), and for every
        other answer, the standard way: ``build``'s list in two messages (a
        large body in pieces, so the client's reading paces it). The bytes on
        the wire are the same.
        """
        if len(answer.body) > HELD_ANSWER_BYTES and not charged and self.connections is not None:
            return await self._respond_held(send, ex, answer, self.connections)
        state = ex.state
        number = ex.number
        request_id = state.next_request_id() if number is None else state.request_id(number)
        compiled = ex.compiled
        if compiled.gives_back:  # ratelimit.not_counted: some answers give back their count
            await self._give_back(ex, answer.status)
        profile = compiled.profile
        semantics = compiled.semantics
        journaled: bytes | None = None  # what the journal keeps of the body, if not what is sent
        if semantics is None:
            if profile is None:
                extra = answer.extra
            else:
                if answer.error is not None and profile.rewrites_errors:
                    answer.body = profile.error_body(
                        answer.error, shaping.error_facts(ex, request_id)
                    )
                extra = self._extra(ex, answer)
        else:
            request_id, extra, journaled = await shaping.shaped(
                ex, self.runtime, answer, request_id, self._extra
            )
        body = answer.body
        scope = ex.scope
        # HEAD: the same status and headers as GET, Content-Length included; no body.
        sent = b"" if scope["method"] == "HEAD" else body
        if journaled is None or not sent:
            journaled = sent
        caller = ex.caller
        decision = caller.decision
        extensions = scope.get("extensions")
        if (
            extensions is not None
            and RESPONSE in extensions
            and not extra
            and not decision.retry_after
            and len(sent) <= WRITE_CHUNK
        ):
            operation = ex.resolved.operation
            head = compiled.headers.head(
                len(body),
                decision,
                caller.plan,
                ex.now,
                state.clock,
                # (the call only for a deprecated operation: it says False for any other)
                operation is not None and operation.deprecated and self._deprecated(ex, answer),
                answer.ratelimit,
                request_id,
            )
            await send({"type": RESPONSE, "status": answer.status, "head": head, "body": sent})
            self._record(ex, request_id, answer.status, head, journaled, "response")
            return request_id
        headers = self._headers(ex, answer, request_id, len(body), extra)
        if semantics is not None and (
            answer.status in (204, 304) or (300 <= answer.status < 400 and not body)
        ):
            # No content, so none of its framing (RFC 9110 sections 8.6, 15.3.5, 15.4.5);
            # a redirect without content keeps its length (0) but has no type.
            framing = (b"content-type",)
            if answer.status in (204, 304):
                framing = (b"content-type", b"content-length")
            headers = [h for h in headers if h[0] not in framing]
        await send({"type": "http.response.start", "status": answer.status, "headers": headers})
        if len(sent) > WRITE_CHUNK:
            await transport.send_in_pieces(send, sent)
        else:
            await send({"type": "http.response.body", "body": sent})
        self._record(ex, request_id, answer.status, tuple(headers), journaled, "response")
        return request_id

    async def _give_back(self, ex: Exchange, status: int) -> None:
        """An answer that does not count (``ratelimit.not_counted``) gives back what the
        limiter counted for its request."""
        caller = ex.caller
        if not PetStoreService.counted(caller) or not ex.compiled.scenario.ratelimit.gives_back(
            status
        ):
            return
        if caller.key is not None:
            bucket = caller.key.bucket
        else:
            client = ex.scope.get("client")
            bucket = client_bucket(client[0] if client else "unknown")
        if self.runtime.shared is None:
            ex.state.limiter.refund(bucket, caller.plan, ex.now)  # type: ignore[union-attr]
        else:
            from mockstore import sharing  # with a state in Redis only (its start)

            await sharing.give_back(self, ex, bucket, caller.plan)

    async def _respond_held(
        self, send: Send, ex: Exchange, answer: Answer, connections: Account
    ) -> bytes:
        """``_respond`` for a large answer: charged to the budget while it is written, or 507."""
        size = answer.held  # charged before it was made (``_made``)
        if not size:
            size = len(answer.body)
            if not connections.reserve(size):
                refusal = _over_budget(connections, "this answer")
                return await self._respond(send, ex, Answer.refusal(refusal))
        try:
            return await self._respond(send, ex, answer, charged=True)
        finally:
            connections.release(size)

    async def _break(self, send: Send, ex: Exchange, fault: str, route: Route | None) -> None:
        """Answer with a connection-level fault instead of a well-formed response.

        ``connection_reset`` and ``empty_response`` break the connection before
        the operation runs, so nothing is stored. The delivery faults run it
        (a create is stored) and damage how its answer reaches the client: cut
        short, malformed, or trickled out slowly.
        """
        number = ex.number
        state = ex.state
        request_id = state.next_request_id() if number is None else state.request_id(number)
        status, body, headers = 0, b"", []
        held = 0
        try:
            if fault == "connection_reset":
                transport.reset_connection(send)
            elif fault == "empty_response":
                transport.close_connection(send)
            else:
                answer = self._answer(ex, route)
                if answer.unmade is not None:
                    await self._made_off_loop(answer)
                status, body, held = answer.status, answer.body, answer.held
                if ex.scope["method"] == "HEAD":
                    body = b""
                if fault == "malformed_json":
                    body = transport.malformed(body)
                headers = self._headers(ex, answer, request_id, len(body))
                if fault == "truncated_body":
                    await transport.send_truncated(send, status, headers, body)
                elif fault == "slow_body":
                    await transport.send_slowly(send, status, headers, body)
                else:
                    await send(
                        {"type": "http.response.start", "status": status, "headers": headers}
                    )
                    await send({"type": "http.response.body", "body": body})
        finally:
            # Recorded even where the transport is out of reach and the break raises.
            self._record(ex, request_id, status, tuple(headers), body, fault)
            if held:
                self.connections.release(held)  # type: ignore[union-attr]

    def _record(
        self,
        ex: Exchange,
        request_id: bytes,
        status: int,
        headers: tuple[Header, ...] | bytes,
        body: bytes,
        outcome: str,
    ) -> None:
        """Append the exchange to the journal and write the access log line.

        ``headers`` are the answer's, as a tuple of pairs or as the header
        block sent the fast way (the journal stores either, see journal.py).
        """
        journal = self.runtime.outbox
        latency_ms = (_perf_counter() - ex.started) * 1000
        scope = ex.scope
        caller = ex.caller
        key = caller.key.key if caller.key else None
        if journal.enabled:
            clock = ex.state.clock
            cap = journal.body_bytes
            # Entry's fields in order, as one tuple (see Journal.add).
            journal.add(
                (
                    next(journal.sequence),
                    request_id,
                    ex.now,
                    ex.now - clock.start,  # elapsed
                    scope["method"],
                    scope["path"],
                    scope["query_string"],
                    tuple(scope["headers"]),
                    ex.request_body,
                    scope.get("client"),  # the journal keeps the host of it
                    ex.operation,
                    key,
                    caller.plan.name,
                    status,
                    headers,
                    # Cut to the journal's size here, where the tuple is made: cutting
                    # it in the journal would mean making the tuple twice.
                    body if len(body) <= cap else body[:cap],
                    latency_ms,
                    ex.rule,
                    outcome,
                    ex.wall,  # the headers' "now", as the request arrived
                    journal.run,
                    ex.arrived_after,
                    caller.refused_until,
                ),
                # The head's size as the server counted it (-1 in process: counted there).
                scope.get(HEAD_BYTES, -1),
            )
        if access_log.isEnabledFor(_INFO):
            access_log.info(
                "%s %s %s",
                scope["method"],
                scope["path"],
                status,
                extra={
                    "method": scope["method"],
                    "path": scope["path"],
                    "status": status,
                    "plan": caller.plan.name if key else "anonymous",
                    "latency_ms": round(latency_ms, 3),
                    "rule": ex.rule,
                    "operation": ex.operation,
                    "request_id": request_id.decode(),
                    "outcome": outcome,
                },
            )


def _origin(scope: Scope) -> str | None:
    """``scheme://host`` of a request, from its ``Host`` header, for an absolute Location."""
    for name, value in scope["headers"]:
        if name == b"host":
            return f"{scope.get('scheme', 'http')}://{value.decode('latin-1')}"
    return None


def _over_budget(connections: Account, what: str) -> ApiError:
    return ApiError(
        "memory_budget",
        f"{what} does not fit in the server's memory budget for connections "
        f"({format_size(connections.available)} left of {format_size(connections.ceiling)}, "
        f"--memory-budget) while other clients hold it; retry shortly",
        headers=_CLOSE,
    )


async def pause(seconds: float) -> None:
    """Wait at least ``seconds``, never less: a scenario's delay is a lower bound.

    Event loops may wake a timer early (uvloop counts whole milliseconds from a clock
    read at the start of its iteration), which made a 60 ms delay last 59.997 ms.
    """
    deadline = time.perf_counter() + seconds
    await asyncio.sleep(seconds)
    while (left := deadline - time.perf_counter()) > 0:
        await asyncio.sleep(max(left, 0.001))
