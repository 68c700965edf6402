"""The Pet Store API as a plain ASGI application.

This module only translates: it reads the request, asks the domain modules
(clock, keys, rate limiter, fault engine, validation, store) what to do, and
writes their answer as HTTP. It is plain ASGI rather than Starlette routing
because it is the hot path: the headers that never change are built once per
scenario, and a request allocates little beyond its response.

The order of the steps is part of the contract (see the README):
clock -> route -> caller -> ban -> allowance -> auth -> operation -> rules ->
validation -> store -> headers -> journal.
"""

from __future__ import annotations

import asyncio
import logging
import time
from email.utils import formatdate
from typing import Any
from urllib.parse import parse_qsl

from mockstore import schemas, transport
from mockstore.errors import ERROR_CODES, error_body
from mockstore.faults import Needs, RequestFacts
from mockstore.keys import ApiKey, Credentials, client_bucket, key_bucket, parse_authorization
from mockstore.ratelimit import Decision, Plan
from mockstore.scenario.model import Reply, Scenario
from mockstore.state import MockState, Runtime
from mockstore.store import PetStore, StoreFull
from mockstore.validation import (
    Invalid,
    QueryValidator,
    is_json_media_type,
    parse_json_body,
    path_parameter,
    validate_body,
)

Scope = dict[str, Any]
Headers = list[tuple[bytes, bytes]]
Receive = Any
Send = Any

access_log = logging.getLogger("mockstore.access")

_JSON = (b"content-type", b"application/json")
_CREATE = schemas.operations()["createPet"]
_GET = schemas.operations()["getPet"]
_LIST_QUERY = QueryValidator(schemas.operations()["listPets"])
_WWW_MISSING = (b"www-authenticate", b'Bearer realm="petstore"')
_WWW_INVALID = (b"www-authenticate", b'Bearer realm="petstore", error="invalid_token"')


class HttpConfig:
    """What a scenario fixes about responses, encoded once when it is loaded."""

    def __init__(self, scenario: Scenario) -> None:
        b = scenario.behaviour
        self.scenario = scenario
        self.base = scenario.base_path
        self.pets_path = self.base + "/pets"
        self.pet_prefix = self.base + "/pets/"
        self.orders_path = self.base + "/store/orders"
        self.max_body = b.max_body_bytes
        self.sunset = b.sunset
        self.gone_after_sunset = b.after_sunset == "gone"
        self.retry_after_date = b.retry_after == "http-date"
        self.draft_headers = b.ratelimit_draft_headers
        self.default_status = b.default_status
        self.ban_status = scenario.ban.status if scenario.ban else 429
        self.deprecation: Headers = [
            (b"deprecation", b"@%d" % int(b.deprecated_since)),
            (b"sunset", formatdate(b.sunset, usegmt=True).encode()),
            (b"link", b'<%s>; rel="successor-version"' % self.pets_path.encode()),
        ]
        self._date_second = -1
        self._date_value = b""

    def date(self, now: float) -> bytes:
        """The ``Date`` header from the scenario clock, formatted once per second."""
        second = int(now)
        if second != self._date_second:
            self._date_second = second
            self._date_value = formatdate(second, usegmt=True).encode()
        return self._date_value

    def resolve(self, method: str, path: str) -> tuple[str | None, str | None, bytes]:
        """(operationId, petId as sent, Allow) for a path; Allow is set for a 405."""
        if path == self.pets_path:
            if method == "GET":
                return "listPets", None, b""
            if method == "POST":
                return "createPet", None, b""
            return None, None, b"GET, POST"
        if path.startswith(self.pet_prefix):
            pet_id = path[len(self.pet_prefix) :]
            if pet_id and "/" not in pet_id:
                return ("getPet", pet_id, b"") if method == "GET" else (None, None, b"GET")
            return None, None, b""
        if path == self.orders_path:
            return ("listOrders", None, b"") if method == "GET" else (None, None, b"GET")
        return None, None, b""


class Response:
    """A response being assembled; ``rule`` names the scenario rule(s) that fired."""

    __slots__ = ("body", "extra", "ratelimit", "replaces", "status")

    def __init__(self, status: int, body: bytes, extra: Headers | None = None) -> None:
        self.status = status
        self.body = body
        self.extra = extra or []
        self.ratelimit = True
        self.replaces = False  # True for scripted answers, whose headers win


def error(
    code: str, message: str, status: int | None = None, extra: Headers | None = None
) -> Response:
    """An Error response; the status defaults to the code's own (errors.ERROR_CODES)."""
    status = status or ERROR_CODES[code].status
    return Response(status, error_body(code, message, status), extra)


def scripted(reply: Reply) -> Response:
    """A scenario's scripted answer (a fault's ``respond`` or a route)."""
    response = Response(
        reply.status,
        reply.body or b"",
        [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in reply.headers],
    )
    response.ratelimit = reply.ratelimit_headers
    response.replaces = bool(reply.headers)
    return response


class Exchange:
    """One request on its way through the pipeline, and what was decided for it."""

    __slots__ = (
        "api_key",
        "config",
        "decision",
        "now",
        "operation",
        "plan",
        "request_body",
        "rule",
        "scope",
        "started",
        "state",
    )

    def __init__(self, scope: Scope, state: MockState, config: HttpConfig) -> None:
        self.started = time.perf_counter()
        self.scope = scope
        self.state = state
        self.config = config
        self.now = state.clock.now()  # read once: every step sees the same instant
        self.operation: str | None = None
        self.api_key: ApiKey | None = None
        self.plan: Plan
        self.decision: Decision
        self.request_body = b""
        self.rule: str | None = None


class PetStoreAPI:
    """The ASGI app serving the Pet Store interface from a ``Runtime``."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._config: HttpConfig | None = None

    def _config_for(self, scenario: Scenario) -> HttpConfig:
        config = self._config
        if config is None or config.scenario is not scenario:
            config = self._config = HttpConfig(scenario)
        return config

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        state = self.runtime.state  # read once: a scenario swap cannot split a request
        ex = Exchange(scope, state, self._config_for(state.scenario))
        authorization = content_type = content_length = None
        for name, value in scope["headers"]:
            if name == b"authorization":
                authorization = value
            elif name == b"content-type":
                content_type = value
            elif name == b"content-length":
                content_length = value

        ex.operation, raw_pet_id, allow = ex.config.resolve(scope["method"], scope["path"])
        credentials = parse_authorization(authorization)
        refusal = self._admit(ex, credentials)
        if refusal is not None:
            await self._respond(send, ex, refusal)
            return
        relative = self._relative(ex)
        route, route_methods = state.routes.for_path(scope["method"], relative)
        if route is not None and ex.operation is None:
            ex.operation = f"{scope['method']} {route.path}"
        if ex.operation is None:
            await self._respond(send, ex, self._no_operation(ex, allow, route_methods))
            return
        if ex.operation == "createPet":
            body = await read_body(receive, ex.config.max_body, content_length)
            if body is None:
                limit = ex.config.max_body
                too_large = error(
                    "payload_too_large", f"the body is over the limit of {limit} bytes"
                )
                await self._respond(send, ex, too_large)
                return
            ex.request_body = body

        assert ex.api_key is not None
        needs = state.faults.applies(ex.operation, ex.api_key.key)
        if needs is not None:
            outcome = state.faults.evaluate(self._facts(ex, needs, relative))
            ex.rule = ",".join(outcome.fired) or None
            if outcome.delay_ms:
                await asyncio.sleep(outcome.delay_ms / 1000)
            rule = outcome.rule
            if rule is not None and rule.fault is not None:
                await self._break(send, ex, rule.fault)
                return
            if rule is not None and rule.reply is not None:
                await self._respond(send, ex, scripted(rule.reply))
                return

        script = route or state.routes.by_operation.get(ex.operation)
        if script is not None:
            ex.rule = ex.rule or f"routes[{script.index}]"
            response = scripted(script.reply)
        else:
            assert ex.api_key is not None
            store = state.tenants.store_for(ex.api_key.tenant)
            response = self._handle(ex, store, raw_pet_id, content_type)
        await self._respond(send, ex, response)

    # -- the steps before the operation --------------------------------------

    def _admit(self, ex: Exchange, credentials: Credentials) -> Response | None:
        """Ban, allowance and authentication, in that order; None lets the request in."""
        state = ex.state
        if credentials.kind == "bearer":
            ex.api_key = state.keys.lookup(credentials.token)
        if ex.api_key is not None:
            ex.plan = state.plans[ex.api_key.plan]
            bucket = key_bucket(ex.api_key.key)
        else:
            # Callers without a valid key share one bucket per client address.
            client = ex.scope.get("client")
            ex.plan = state.plans[state.scenario.anonymous_plan]
            bucket = client_bucket(client[0] if client else "unknown")
        decision = ex.decision = state.limiter.check(bucket, ex.plan, ex.now)

        if decision.verdict == "key_banned":
            message = f"this key is banned for {decision.retry_after} s after repeated 429s"
            return error("key_banned", message, ex.config.ban_status)
        if decision.verdict == "rate_limited":
            window = "per-day" if decision.window == "day" else "per-minute"
            return error(
                "rate_limited",
                f"{window} allowance of {decision.limit} requests used up; "
                f"retry after {decision.retry_after} s",
            )
        if ex.api_key is not None:
            return None
        if credentials.kind == "bearer":
            return error("invalid_token", "the API key is not valid", extra=[_WWW_INVALID])
        if credentials.kind == "missing":
            message = "an API key is required: send Authorization: Bearer <API_KEY>"
        else:
            message = "the Authorization header must be 'Bearer <API_KEY>'"
        return error("unauthorized", message, extra=[_WWW_MISSING])

    @staticmethod
    def _relative(ex: Exchange) -> str:
        path: str = ex.scope["path"]
        base = ex.config.base
        return path[len(base) :] if path.startswith(base) else path

    @staticmethod
    def _no_operation(ex: Exchange, allow: bytes, route_methods: list[str]) -> Response:
        path = ex.scope["path"]
        if allow or route_methods:
            methods = allow or ", ".join(sorted(set(route_methods))).encode()
            return error(
                "method_not_allowed",
                f"{ex.scope['method']} is not allowed on {path}; allowed: {methods.decode()}",
                extra=[(b"allow", methods)],
            )
        return error("not_found", f"no such path: {path}")

    def _facts(self, ex: Exchange, needs: Needs, relative: str) -> RequestFacts:
        """What the fault rules may look at; only the parts they read are parsed."""
        assert ex.api_key is not None
        scope = ex.scope
        facts = RequestFacts(
            operation=ex.operation,
            method=scope["method"],
            path=relative,
            key=ex.api_key.key,
            plan=ex.api_key.plan,
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
            parsed = parse_json_body(ex.request_body)
            facts.body = None if isinstance(parsed, Invalid) else parsed
        return facts

    # -- the operations ------------------------------------------------------

    def _handle(
        self, ex: Exchange, store: PetStore, raw_pet_id: str | None, content_type: bytes | None
    ) -> Response:
        if ex.operation == "listPets":
            query = _LIST_QUERY(ex.scope["query_string"])
            if isinstance(query, Invalid):
                return error(query.code, query.message, query.status)
            return Response(200, store.list_json(query["limit"], query["status"]))
        if ex.operation == "createPet":
            return self._create(ex, store, content_type)
        if ex.operation == "getPet":
            if ex.now >= ex.config.sunset and ex.config.gone_after_sunset:
                return error(
                    "gone",
                    "GET /pets/{petId} was removed on 5 December 2030; "
                    "use GET /pets with the status filter",
                )
            pet_id = path_parameter(_GET, "petId", raw_pet_id or "")
            if isinstance(pet_id, Invalid):
                return error(pet_id.code, pet_id.message, pet_id.status)
            found = store.get_json(pet_id)
            if found is None:
                return error("not_found", f"no pet with id {pet_id}")
            return Response(200, found)
        # listOrders: named by the spec, never described.
        return error(
            "not_implemented",
            "GET /store/orders is named by the spec but not described; script it with a route",
        )

    @staticmethod
    def _create(ex: Exchange, store: PetStore, content_type: bytes | None) -> Response:
        body = ex.request_body
        if not body.strip():
            return error("missing_body", "a request body is required: a JSON NewPet object")
        if not is_json_media_type(content_type):
            sent = content_type.decode("latin-1") if content_type else "none"
            return error(
                "unsupported_media_type",
                f"the body must be sent as application/json (Content-Type was {sent})",
            )
        value = parse_json_body(body)
        if isinstance(value, Invalid):
            return error(value.code, value.message, value.status)
        invalid = validate_body(_CREATE, value)
        if invalid is not None:
            return error(invalid.code, invalid.message, invalid.status)
        # Only the NewPet fields are kept: unknown fields are accepted and dropped.
        new_pet = {"name": value["name"], "categoryId": value["categoryId"]}
        status = value.get("status", ex.config.default_status)
        if status is not None:
            new_pet["status"] = status
        try:
            _, encoded = store.create(new_pet)
        except StoreFull:
            return error("store_full", "no int64 id is left to assign")
        return Response(201, encoded)

    # -- writing the answer --------------------------------------------------

    @staticmethod
    def _headers(ex: Exchange, response: Response, request_id: str, length: int) -> Headers:
        config = ex.config
        decision = ex.decision
        headers: Headers = [
            _JSON,
            (b"content-length", b"%d" % length),
            (b"date", config.date(ex.now)),
        ]
        if response.ratelimit:
            headers.append((b"x-ratelimit-limit", b"%d" % decision.limit))
            headers.append((b"x-ratelimit-remaining", b"%d" % decision.remaining))
            headers.append((b"x-ratelimit-reset", b"%d" % decision.reset))
            if config.draft_headers:
                headers.extend(draft_headers(decision, ex.plan, ex.now))
        if not decision.allowed:
            if config.retry_after_date:
                value = formatdate(int(ex.now) + decision.retry_after, usegmt=True).encode()
            else:
                value = b"%d" % decision.retry_after
            headers.append((b"retry-after", value))
        if ex.operation == "getPet" and ex.api_key is not None:
            # Only for authenticated callers: a 401 must not reveal which paths exist.
            headers.extend(config.deprecation)
        if response.replaces:
            # A scripted header replaces the default of the same name.
            names = {name for name, _ in response.extra}
            headers = [h for h in headers if h[0] not in names]
        headers.extend(response.extra)
        headers.append((b"x-request-id", request_id.encode()))
        return headers

    async def _respond(self, send: Send, ex: Exchange, response: Response) -> None:
        request_id = ex.state.next_request_id()
        body = response.body
        headers = self._headers(ex, response, request_id, len(body))
        await send({"type": "http.response.start", "status": response.status, "headers": headers})
        await send({"type": "http.response.body", "body": body})
        self._record(ex, request_id, response.status, headers, body, "response")

    async def _break(self, send: Send, ex: Exchange, fault: str) -> None:
        """Answer with a connection-level fault instead of a well-formed response."""
        request_id = ex.state.next_request_id()
        status, body, headers = 0, b"", []
        try:
            if fault == "connection_reset":
                transport.reset_connection(send)
            elif fault == "empty_response":
                transport.close_connection(send)
            else:
                status = 200
                if fault == "malformed_json":
                    body = transport.MALFORMED_JSON
                else:
                    tenant = ex.api_key.tenant if ex.api_key else None
                    body = ex.state.tenants.store_for(tenant).list_json(20)
                headers = self._headers(ex, Response(200, body), request_id, len(body))
                if fault == "malformed_json":
                    await send({"type": "http.response.start", "status": 200, "headers": headers})
                    await send({"type": "http.response.body", "body": body})
                elif fault == "truncated_body":
                    await transport.send_truncated(send, 200, headers, body)
                else:
                    await transport.send_slowly(send, 200, headers, body)
        finally:
            # Recorded even where the transport is out of reach and the break raises.
            self._record(ex, request_id, status, headers, body, fault)

    def _record(
        self,
        ex: Exchange,
        request_id: str,
        status: int,
        headers: Headers,
        body: bytes,
        outcome: str,
    ) -> None:
        """Append the exchange to the journal and write the access log line."""
        journal = self.runtime.journal
        latency_ms = (time.perf_counter() - ex.started) * 1000
        scope = ex.scope
        key = ex.api_key.key if ex.api_key else None
        if journal.enabled:
            cap = journal.body_bytes
            client = scope.get("client")
            # A plain tuple, in Entry's field order: see journal.py for why.
            journal.record(
                (
                    journal.next_seq(),
                    request_id,
                    ex.now,
                    ex.now - ex.state.clock.start,
                    scope["method"],
                    scope["path"],
                    scope["query_string"],
                    tuple(scope["headers"]),
                    ex.request_body[:cap],
                    client[0] if client else "unknown",
                    ex.operation,
                    key,
                    ex.plan.name,
                    status,
                    tuple(headers),
                    body[:cap],
                    latency_ms,
                    ex.rule,
                    outcome,
                )
            )
        if access_log.isEnabledFor(logging.INFO):
            access_log.info(
                "%s %s %s",
                scope["method"],
                scope["path"],
                status,
                extra={
                    "method": scope["method"],
                    "path": scope["path"],
                    "status": status,
                    "plan": ex.plan.name if key else "anonymous",
                    "latency_ms": round(latency_ms, 3),
                    "rule": ex.rule,
                    "operation": ex.operation,
                    "request_id": request_id,
                    "outcome": outcome,
                },
            )


_query_cache: dict[bytes, dict[str, list[str]]] = {}


def parse_query(query_string: bytes) -> dict[str, list[str]]:
    """A query string as lists of values per name, cached: clients repeat their queries."""
    parsed = _query_cache.get(query_string)
    if parsed is None:
        parsed = {}
        for name, value in parse_qsl(query_string.decode("latin-1"), keep_blank_values=True):
            parsed.setdefault(name, []).append(value)
        if len(_query_cache) >= 4096:
            _query_cache.clear()
        _query_cache[query_string] = parsed
    return parsed


def draft_headers(decision: Decision, plan: Plan, now: float) -> Headers:
    """The IETF draft RateLimit-Policy / RateLimit headers (structured fields)."""
    policy = b'"minute";q=%d;w=60, "day";q=%d;w=86400' % (plan.per_minute, plan.per_day)
    state = b'"minute";r=%d;t=%d, "day";r=%d;t=%d' % (
        decision.minute_remaining,
        max(0, decision.minute_reset - int(now)),
        decision.day_remaining,
        max(0, decision.day_reset - int(now)),
    )
    return [(b"ratelimit-policy", policy), (b"ratelimit", state)]


async def read_body(receive: Receive, limit: int, declared: bytes | None) -> bytes | None:
    """The request body, or None once it passes ``limit`` (the rest is never read)."""
    if declared is not None and declared.isdigit() and int(declared) > limit:
        return None
    chunks = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)
