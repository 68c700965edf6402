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

from mockstore import schemas, transport
from mockstore.errors import ERROR_CODES, error_body
from mockstore.faults import RequestFacts
from mockstore.journal import Entry
from mockstore.keys import parse_authorization
from mockstore.ratelimit import Decision, Plan
from mockstore.scenario.model import Reply, Scenario
from mockstore.state import MockState, Runtime, anonymous_bucket_id, bucket_id
from mockstore.store import StoreFull
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

access_log = logging.getLogger("mockstore.access")

_JSON = (b"content-type", b"application/json")
_OPERATIONS = schemas.operations()
_LIST = _OPERATIONS["listPets"]
_CREATE = _OPERATIONS["createPet"]
_GET = _OPERATIONS["getPet"]
_LIST_QUERY = QueryValidator(_LIST)
_WWW_MISSING = (b"www-authenticate", b'Bearer realm="petstore"')
_WWW_INVALID = (b"www-authenticate", b'Bearer realm="petstore", error="invalid_token"')


class HttpConfig:
    """What a scenario fixes about responses, encoded once when it is loaded."""

    def __init__(self, scenario: Scenario) -> None:
        b = scenario.behaviour
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
        second = int(now)
        if second != self._date_second:
            self._date_second = second
            self._date_value = formatdate(second, usegmt=True).encode()
        return self._date_value

    def resolve(self, method: str, path: str) -> tuple[str | None, str | None, bytes]:
        """(operationId, petId as sent, Allow) for a path; Allow is set on 405."""
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


_configs: dict[int, HttpConfig] = {}


def config_for(state: MockState) -> HttpConfig:
    config = _configs.get(id(state.scenario))
    if config is None or config.base != state.scenario.base_path:
        _configs.clear()
        config = _configs[id(state.scenario)] = HttpConfig(state.scenario)
    return config


class _Response:
    """A response being assembled; ``rule`` names the scenario rule that fired."""

    __slots__ = ("body", "extra", "ratelimit", "rule", "status")

    def __init__(self, status: int, body: bytes, extra: Headers | None = None) -> None:
        self.status = status
        self.body = body
        self.extra = extra or []
        self.ratelimit = True
        self.rule: str | None = None


def _error(
    code: str, message: str, status: int | None = None, extra: Headers | None = None
) -> _Response:
    status = status or ERROR_CODES[code].status
    return _Response(status, error_body(code, message, status), extra)


class PetStoreAPI:
    """The ASGI app serving the Pet Store interface from a ``Runtime``."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        started = time.perf_counter()
        runtime = self.runtime
        state = runtime.state  # read once: a scenario swap cannot split a request
        config = config_for(state)
        now = state.clock.now()
        method: str = scope["method"]
        path: str = scope["path"]

        authorization = content_type = content_length = None
        for name, value in scope["headers"]:
            if name == b"authorization":
                authorization = value
            elif name == b"content-type":
                content_type = value
            elif name == b"content-length":
                content_length = value

        operation, raw_pet_id, allow = config.resolve(method, path)
        credentials = parse_authorization(authorization)
        api_key = state.keys.lookup(credentials.token) if credentials.kind == "bearer" else None
        if api_key is not None:
            plan = state.plans[api_key.plan]
            decision = state.limiter.check(bucket_id(api_key.key), plan, now)
        else:
            client = scope.get("client")
            address = client[0] if client else "unknown"
            plan = state.plans[state.scenario.anonymous_plan]
            decision = state.limiter.check(anonymous_bucket_id(address), plan, now)

        request_body = b""
        outcome_rule: str | None = None
        if decision.verdict == "key_banned":
            response = _error(
                "key_banned",
                f"this key is banned for {decision.retry_after} s after repeated 429s",
                config.ban_status,
            )
        elif decision.verdict == "rate_limited":
            window = "per-day" if decision.window == "day" else "per-minute"
            response = _error(
                "rate_limited",
                f"{window} allowance of {decision.limit} requests used up; "
                f"retry after {decision.retry_after} s",
            )
        elif api_key is None:
            if credentials.kind == "bearer":
                response = _error(
                    "invalid_token", "the API key is not valid", extra=[_WWW_INVALID]
                )
            elif credentials.kind == "missing":
                response = _error(
                    "unauthorized",
                    "an API key is required: send Authorization: Bearer <API_KEY>",
                    extra=[_WWW_MISSING],
                )
            else:
                response = _error(
                    "unauthorized",
                    "the Authorization header must be 'Bearer <API_KEY>'",
                    extra=[_WWW_MISSING],
                )
        else:
            relative = path[len(config.base) :] if path.startswith(config.base) else path
            route, route_methods = state.routes.for_path(method, relative)
            if route is not None:
                operation = operation or f"{method} {route.path}"
            if operation is None:
                if allow or route_methods:
                    methods = allow or ", ".join(sorted(set(route_methods))).encode()
                    response = _error(
                        "method_not_allowed",
                        f"{method} is not allowed on {path}; allowed: {methods.decode()}",
                        extra=[(b"allow", methods)],
                    )
                else:
                    response = _error("not_found", f"no such path: {path}")
            else:
                if operation == "createPet":
                    read = await _read_body(receive, config.max_body, content_length)
                    if read is None:
                        response = _error(
                            "payload_too_large",
                            f"the body is over the limit of {config.max_body} bytes",
                        )
                        await self._finish(
                            send, scope, state, config, now, decision, response, operation,
                            api_key, plan, request_body, started,
                        )
                        return
                    request_body = read
                if state.faults.candidates(operation):
                    facts = RequestFacts(
                        operation=operation,
                        method=method,
                        path=relative,
                        key=api_key.key,
                        plan=api_key.plan,
                        elapsed=now - state.clock.start,
                    )
                    _fill_facts(facts, scope, request_body)
                    outcome = state.faults.evaluate(facts)
                    if outcome.fired:
                        outcome_rule = ",".join(outcome.fired)
                    if outcome.delay_ms:
                        await asyncio.sleep(outcome.delay_ms / 1000)
                    rule = outcome.rule
                    if rule is not None and rule.fault is not None:
                        await self._break(
                            send, scope, state, config, now, decision, rule.fault, operation,
                            api_key, plan, request_body, started, outcome_rule,
                        )
                        return
                    if rule is not None and rule.reply is not None:
                        response = _scripted(rule.reply)
                        response.rule = outcome_rule
                        await self._finish(
                            send, scope, state, config, now, decision, response, operation,
                            api_key, plan, request_body, started,
                        )
                        return
                scripted = route or state.routes.by_operation.get(operation)
                if scripted is not None:
                    response = _scripted(scripted.reply)
                    outcome_rule = outcome_rule or f"routes[{scripted.index}]"
                else:
                    store = state.tenants.store_for(api_key.tenant)
                    response = self._handle(
                        operation, config, store, scope, raw_pet_id, request_body,
                        content_type, now,
                    )
        response.rule = response.rule or outcome_rule
        await self._finish(
            send, scope, state, config, now, decision, response, operation,
            api_key, plan, request_body, started,
        )

    # -- the operations ---------------------------------------------------

    def _handle(
        self,
        operation: str,
        config: HttpConfig,
        store: Any,
        scope: Scope,
        raw_pet_id: str | None,
        body: bytes,
        content_type: bytes | None,
        now: float,
    ) -> _Response:
        if operation == "listPets":
            query = _LIST_QUERY(scope["query_string"])
            if isinstance(query, Invalid):
                return _error(query.code, query.message, query.status)
            return _Response(200, store.list_json(query["limit"], query["status"]))
        if operation == "createPet":
            return self._create(store, config, body, content_type)
        if operation == "getPet":
            if now >= config.sunset and config.gone_after_sunset:
                return _error(
                    "gone",
                    "GET /pets/{petId} was removed on 5 December 2030; "
                    "use GET /pets with the status filter",
                )
            pet_id = path_parameter(_GET, "petId", raw_pet_id or "")
            if isinstance(pet_id, Invalid):
                return _error(pet_id.code, pet_id.message, pet_id.status)
            found = store.get_json(pet_id)
            if found is None:
                return _error("not_found", f"no pet with id {pet_id}")
            return _Response(200, found)
        # listOrders: named by the spec, never described.
        return _error(
            "not_implemented",
            "GET /store/orders is named by the spec but not described; script it with a route",
        )

    def _create(
        self, store: Any, config: HttpConfig, body: bytes, content_type: bytes | None
    ) -> _Response:
        if not body.strip():
            return _error("missing_body", "a request body is required: a JSON NewPet object")
        if not is_json_media_type(content_type):
            sent = content_type.decode("latin-1") if content_type else "none"
            return _error(
                "unsupported_media_type",
                f"the body must be sent as application/json (Content-Type was {sent})",
            )
        value = parse_json_body(body)
        if isinstance(value, Invalid):
            return _error(value.code, value.message, value.status)
        invalid = validate_body(_CREATE, value)
        if invalid is not None:
            return _error(invalid.code, invalid.message, invalid.status)
        new_pet = {"name": value["name"], "categoryId": value["categoryId"]}
        status = value.get("status", config.default_status)
        if status is not None:
            new_pet["status"] = status
        try:
            _, encoded = store.create(new_pet)
        except StoreFull:
            return _error("store_full", "no int64 id is left to assign")
        return _Response(201, encoded)

    # -- writing the response ---------------------------------------------

    def _headers(
        self,
        config: HttpConfig,
        now: float,
        decision: Decision,
        response: _Response,
        operation: str | None,
        request_id: str,
        content_length: int,
        plan: Plan,
    ) -> Headers:
        headers: Headers = [
            _JSON,
            (b"content-length", b"%d" % content_length),
            (b"date", config.date(now)),
        ]
        if response.ratelimit:
            headers.append((b"x-ratelimit-limit", b"%d" % decision.limit))
            headers.append((b"x-ratelimit-remaining", b"%d" % decision.remaining))
            headers.append((b"x-ratelimit-reset", b"%d" % decision.reset))
            if config.draft_headers:
                headers.extend(_draft_headers(decision, plan, now))
        if not decision.allowed:
            if config.retry_after_date:
                value = formatdate(int(now) + decision.retry_after, usegmt=True).encode()
            else:
                value = b"%d" % decision.retry_after
            headers.append((b"retry-after", value))
        if operation == "getPet":
            headers.extend(config.deprecation)
        headers.extend(response.extra)
        headers.append((b"x-request-id", request_id.encode()))
        return headers

    async def _finish(
        self,
        send: Any,
        scope: Scope,
        state: MockState,
        config: HttpConfig,
        now: float,
        decision: Decision,
        response: _Response,
        operation: str | None,
        api_key: Any,
        plan: Plan,
        request_body: bytes,
        started: float,
    ) -> None:
        request_id = state.next_request_id()
        body = response.body
        headers = self._headers(
            config, now, decision, response, operation, request_id, len(body), plan
        )
        await send({"type": "http.response.start", "status": response.status, "headers": headers})
        await send({"type": "http.response.body", "body": body})
        self._record(
            scope, state, now, operation, api_key, plan.name, request_body, response.status,
            headers, body, started, response.rule, "response", request_id,
        )

    async def _break(
        self,
        send: Any,
        scope: Scope,
        state: MockState,
        config: HttpConfig,
        now: float,
        decision: Decision,
        fault: str,
        operation: str | None,
        api_key: Any,
        plan: Plan,
        request_body: bytes,
        started: float,
        rule: str | None,
    ) -> None:
        """Answer with a connection-level fault instead of a response."""
        request_id = state.next_request_id()
        status, body, headers = 0, b"", []
        if fault == "connection_reset":
            transport.reset_connection(send)
        elif fault == "empty_response":
            transport.close_connection(send)
        else:
            ok = _Response(200, b"")
            if fault == "malformed_json":
                status, body = 200, transport.MALFORMED_JSON
                headers = self._headers(
                    config, now, decision, ok, operation, request_id, len(body), plan
                )
                await send({"type": "http.response.start", "status": 200, "headers": headers})
                await send({"type": "http.response.body", "body": body})
            else:
                status, body = 200, state.tenants.store_for(
                    api_key.tenant if api_key else None
                ).list_json(20)
                headers = self._headers(
                    config, now, decision, ok, operation, request_id, len(body), plan
                )
                if fault == "truncated_body":
                    await transport.send_truncated(send, 200, headers, body)
                else:
                    await transport.send_slowly(send, 200, headers, body)
        self._record(
            scope, state, now, operation, api_key, plan.name, request_body, status, headers, body,
            started, rule, fault, request_id,
        )

    def _record(
        self,
        scope: Scope,
        state: MockState,
        now: float,
        operation: str | None,
        api_key: Any,
        plan: str,
        request_body: bytes,
        status: int,
        headers: Headers,
        body: bytes,
        started: float,
        rule: str | None,
        outcome: str,
        request_id: str,
    ) -> None:
        journal = self.runtime.journal
        latency_ms = (time.perf_counter() - started) * 1000
        client = scope.get("client")
        if journal.enabled:
            cap = journal.body_bytes
            journal.append(
                Entry(
                    seq=journal.next_seq(),
                    request_id=request_id,
                    time=now,
                    elapsed=now - state.clock.start,
                    method=scope["method"],
                    path=scope["path"],
                    query=scope["query_string"],
                    request_headers=scope["headers"],
                    request_body=request_body[:cap],
                    client=client[0] if client else "unknown",
                    operation=operation,
                    key=api_key.key if api_key else None,
                    plan=plan,
                    status=status,
                    response_headers=headers,
                    response_body=body[:cap],
                    latency_ms=latency_ms,
                    rule=rule,
                    outcome=outcome,
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
                    "plan": plan if api_key else "anonymous",
                    "latency_ms": round(latency_ms, 3),
                    "rule": rule,
                    "operation": operation,
                    "request_id": request_id,
                    "outcome": outcome,
                },
            )


def _fill_facts(facts: RequestFacts, scope: Scope, body: bytes) -> None:
    from urllib.parse import parse_qsl

    for name, value in parse_qsl(scope["query_string"].decode("latin-1"), keep_blank_values=True):
        facts.query.setdefault(name, []).append(value)
    for name, value in scope["headers"]:
        facts.headers[name.decode("latin-1").lower()] = value.decode("latin-1")
    if body:
        parsed = parse_json_body(body)
        facts.body = None if isinstance(parsed, Invalid) else parsed


def _scripted(reply: Reply) -> _Response:
    response = _Response(
        reply.status,
        reply.body or b"",
        [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in reply.headers],
    )
    response.ratelimit = reply.ratelimit_headers
    return response


def _draft_headers(decision: Decision, plan: Plan, now: float) -> Headers:
    """IETF draft-ietf-httpapi-ratelimit-headers (structured fields)."""
    minute_left = max(0, decision.minute_reset - int(now))
    day_left = max(0, decision.day_reset - int(now))
    policy = b'"minute";q=%d;w=60, "day";q=%d;w=86400' % (plan.per_minute, plan.per_day)
    state = b'"minute";r=%d;t=%d, "day";r=%d;t=%d' % (
        decision.minute_remaining,
        minute_left,
        decision.day_remaining,
        day_left,
    )
    return [(b"ratelimit-policy", policy), (b"ratelimit", state)]


async def _read_body(receive: Any, limit: int, declared: bytes | None) -> bytes | None:
    """The request body, or None once it passes ``limit`` (without reading the rest)."""
    if declared is not None:
        try:
            if int(declared) > limit:
                return None
        except ValueError:
            pass
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
