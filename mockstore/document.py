"""The OpenAPI document a scenario's mock serves: the package's, as the scenario's provider answers.

``openapi.yaml`` describes mockstore's own answers. A scenario that states a
provider's choices (``behaviour``, ``ban``, ``routes``) makes the mock answer
otherwise, so the document it serves (``/__mockstore/openapi.json``, ``mockstore
openapi --scenario``) says what it answers: each refusal under the status the
scenario gives it, with its Error code; the Error fields it adds; the headers it
sends (the request id under its name, constant headers, ``Location``, ``ETag``,
the deprecation headers on the answers that carry them, ``WWW-Authenticate``);
a ``limit`` above 100 clamped, unknown NewPet fields refused; an operation
scripted by a route answering what the route answers; and every answer a fault
rule can send in an operation's place (``respond``: its status, body and
headers, beside what the operation answers itself). A client generated from it
parses every answer of the mock (a fault that breaks the connection sends none).

A scenario that changes none of it serves the package's document unchanged.
Pure: a function of the scenario and the package's document.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from mockstore import document_collections, document_semantics, schemas
from mockstore.errors import CONDITIONS, ERROR_CODES, VALIDATION_CONDITIONS
from mockstore.limiter.model import DEFAULT_LIMITS
from mockstore.limiter.openapi import describe_limiter
from mockstore.routing import compile_path
from mockstore.scenario.collections import Collections
from mockstore.scenario.model import Behaviour, Scenario

_REF = "#/components/schemas/Error"
# The conditions each operation may refuse, beyond the caller's (its key, its allowance).
_BY_OPERATION = {
    "listPets": ("bad_limit", "limit_above_maximum", "bad_status_filter"),
    "createPet": (
        "malformed_json",
        "missing_body",
        "invalid_body",
        "unknown_field",
        "payload_too_large",
        "unsupported_media_type",
        "store_full",
    ),
    "getPet": ("bad_pet_id", "pet_not_found", "gone"),
    "listOrders": ("not_implemented",),
}
_CALLER = ("missing_key", "malformed_authorization", "unknown_key", "rate_limited", "key_banned")
_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def status_of(condition: str, scenario: Scenario) -> int:
    """The status ``scenario`` answers ``condition`` with."""
    behaviour = scenario.behaviour
    given = dict(behaviour.error_statuses)
    if condition in given:
        return given[condition]
    if condition == "key_banned":
        return scenario.ban.status if scenario.ban is not None else 429
    own = ERROR_CODES[CONDITIONS[condition].code].status
    if condition in VALIDATION_CONDITIONS:
        return behaviour.validation_status
    return own


def _conditions(operation: str, scenario: Scenario) -> list[str]:
    """The conditions ``operation`` may be refused for under ``scenario``."""
    behaviour = scenario.behaviour
    found = []
    added = document_collections.conditions_added(scenario.collections, operation)
    for condition in (*_CALLER, *_BY_OPERATION.get(operation, ()), *added):
        if condition == "unknown_field" and scenario.collections.unknown_fields != "refuse":
            continue
        if condition == "limit_above_maximum" and behaviour.limit_above_maximum == "clamp":
            continue
        if condition == "gone" and behaviour.after_sunset == "keep":
            continue
        if condition == "key_banned" and scenario.ban is None:
            continue
        found.append(condition)
    return found


def changes_the_document(scenario: Scenario) -> bool:
    """Whether ``scenario`` serves another document than the package's."""
    return (
        scenario.behaviour != Behaviour()
        or scenario.collections != Collections()
        or bool(scenario.routes)
        or (scenario.ban is not None and scenario.ban.status != 429)
        or scenario.ratelimit != DEFAULT_LIMITS
        or any(rule.reply is not None for rule in scenario.faults)
        or document_semantics.changes(scenario)
    )


def openapi_for(scenario: Scenario) -> dict[str, Any]:
    """The OpenAPI document ``scenario``'s mock serves."""
    document = schemas.openapi_document()
    if not changes_the_document(scenario):
        return document
    document = copy.deepcopy(document)
    behaviour = scenario.behaviour
    codes = dict(behaviour.error_codes)
    headers = document["components"]["headers"]
    _rate_limit_headers(headers, behaviour)
    _error_schema(document["components"]["schemas"], behaviour)
    _new_pet(document, scenario.collections)
    routed = {route.operation: route for route in scenario.routes if route.operation}
    for _path, item in document["paths"].items():
        for method in [m for m in _METHODS if m in item]:
            spec = item[method]
            operation = spec["operationId"]
            responses = spec["responses"]
            for status in list(responses):
                responses[status] = _resolved(document, responses[status])
            if operation == "listPets":
                _limit(spec, behaviour)
                document_collections.list_pets(spec, scenario.collections, document)
            if operation in routed:
                _scripted(responses, routed[operation].reply, operation)
            _refusals(responses, operation, scenario, codes, routed)
            for status, answer in responses.items():
                _answer_headers(answer, operation, int(status), scenario)
    for route in scenario.routes:
        if route.operation is None and route.method and route.path:
            _route_path(document, route, scenario)
    if scenario.ratelimit != DEFAULT_LIMITS:
        describe_limiter(document, scenario.ratelimit, scenario.plans.values())
    for rule in scenario.faults:
        if rule.reply is not None:
            _fault_answers(document, rule, scenario)
    document_semantics.add_semantics(document, scenario)
    return document


def openapi_json_for(scenario: Scenario, url: str) -> bytes:
    """The document ``scenario`` serves, with ``servers`` naming ``url``, as JSON."""
    servers = [{"url": url, "description": "This mockstore server"}]
    return json.dumps({**openapi_for(scenario), "servers": servers}, indent=2).encode()


def _resolved(document: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
    """A response object with its ``$ref`` inlined (each operation's own copy to edit)."""
    if "$ref" in answer:
        name = answer["$ref"].rsplit("/", 1)[-1]
        return copy.deepcopy(document["components"]["responses"][name])
    return answer


def _error_answer(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "headers": {
            "X-RateLimit-Limit": {"$ref": "#/components/headers/X-RateLimit-Limit"},
            "X-RateLimit-Remaining": {"$ref": "#/components/headers/X-RateLimit-Remaining"},
            "X-RateLimit-Reset": {"$ref": "#/components/headers/X-RateLimit-Reset"},
        },
        "content": {"application/json": {"schema": {"$ref": _REF}}},
    }


def _refusals(
    responses: dict[str, Any],
    operation: str,
    scenario: Scenario,
    codes: dict[str, str],
    routed: dict[str | None, Any],
) -> None:
    """Each refusal of ``operation`` under the status and code the scenario gives it."""
    conditions = _conditions(operation, scenario)
    if operation in routed:
        conditions = [c for c in conditions if c in _CALLER]
    wanted: dict[int, list[str]] = {}
    for condition in conditions:
        wanted.setdefault(status_of(condition, scenario), []).append(condition)
    # A window with a refusal of its own (ratelimit.refusal.minute, day) refuses with it.
    windows: dict[int, list[str]] = {}
    if "rate_limited" in conditions:
        for window in ("minute", "day"):
            own = scenario.ratelimit.refusals.of(window)
            if own is not None:
                windows.setdefault(own.status, []).append(
                    f"rate_limited by the {window} window (code {own.code})"
                )
                wanted.setdefault(own.status, [])
    moved = {
        ERROR_CODES[CONDITIONS[condition].code].status
        for condition in (*_CALLER, *_BY_OPERATION.get(operation, ()))
    }
    for status in list(responses):
        number = int(status)
        # A refusal's default status no condition of this scenario answers with any more.
        if number >= 400 and number in moved and number not in wanted and number != 408:
            del responses[status]
    for status, conditions_there in sorted(wanted.items()):
        key = str(status)
        said = ", ".join(
            [f"{c} (code {codes[c]})" for c in conditions_there] + windows.get(status, [])
        )
        if key not in responses:
            responses[key] = _error_answer(f"Refused: {said}.")
        else:
            answer = responses[key]
            answer["description"] = f"{answer.get('description', '').strip()} Refused: {said}."
            answer.setdefault("content", {"application/json": {"schema": {"$ref": _REF}}})


def _scripted(responses: dict[str, Any], reply: Any, operation: str) -> None:
    """The answer of a route that scripts ``operation``, in place of its own."""
    for status in list(responses):
        if not 400 <= int(status) < 500 or int(status) == 404:
            del responses[status]
    content: dict[str, Any] = {}
    if reply.body is not None:
        try:
            value = json.loads(reply.body)
        except ValueError:
            content = {"application/json": {}}
        else:
            error = reply.status >= 400 and isinstance(value, dict) and "code" in value
            content = {"application/json": {"schema": {"$ref": _REF} if error else _shape(value)}}
    answer: dict[str, Any] = {"description": f"Scripted by the scenario's route for {operation}."}
    if content:
        answer["content"] = content
    if reply.headers:
        answer["headers"] = {name: {"schema": {"type": "string"}} for name, _ in reply.headers}
    responses[str(reply.status)] = answer


def _reply_schema(reply: Any) -> dict[str, Any] | None:
    """The schema of a scripted answer's body (None: it has none, or not JSON)."""
    if reply.body is None:
        return None
    try:
        value = json.loads(reply.body)
    except ValueError:
        return None
    error = reply.status >= 400 and isinstance(value, dict) and "code" in value
    return {"$ref": _REF} if error else _shape(value)


def _fault_answers(document: dict[str, Any], rule: Any, scenario: Scenario) -> None:
    """What fault rule ``rule`` answers, declared on every operation it can answer for."""
    reply = rule.reply
    match = rule.match
    pattern = compile_path(match.path) if match.path is not None else None
    schema = _reply_schema(reply)
    for path, item in document["paths"].items():
        for method in [m for m in _METHODS if m in item]:
            spec = item[method]
            operation = spec.get("operationId")
            if match.operation is not None and match.operation != operation:
                continue
            if match.method is not None and match.method.lower() != method:
                continue
            if pattern is not None and not (
                # The rule's path names the template, or one path the template holds.
                pattern.match(path) or compile_path(path).match(match.path)
            ):
                continue
            responses = spec["responses"]
            key = str(reply.status)
            said = f"Answered by the scenario's fault rule {rule.name!r} when it fires."
            answer = responses.get(key)
            if answer is None:
                answer = responses[key] = {"description": said}
                if reply.ratelimit_headers:
                    answer["headers"] = copy.deepcopy(_error_answer("")["headers"])
                if schema is not None:
                    answer["content"] = {"application/json": {"schema": schema}}
                _answer_headers(answer, operation, reply.status, scenario)
            else:
                answer["description"] = f"{answer.get('description', '').strip()} {said}".strip()
                if schema is not None:
                    _accept(answer, schema)
            for name, _ in reply.headers:
                answer.setdefault("headers", {}).setdefault(name, {"schema": {"type": "string"}})


def _accept(answer: dict[str, Any], schema: dict[str, Any]) -> None:
    """Widen an answer's body schema to take ``schema``'s bodies too."""
    media = answer.setdefault("content", {}).setdefault("application/json", {})
    present = media.get("schema")
    if present is None or present == schema:
        media["schema"] = schema
    elif "anyOf" in present and schema not in present["anyOf"]:
        present["anyOf"].append(schema)
    elif "anyOf" not in present:
        media["schema"] = {"anyOf": [present, schema]}


def _shape(value: Any) -> dict[str, Any]:
    """A schema every value of ``value``'s kind matches (a scripted body may change)."""
    if isinstance(value, bool):
        return {"type": "boolean"}
    if isinstance(value, int):
        return {"type": "integer"}
    if isinstance(value, float):
        return {"type": "number"}
    if isinstance(value, str):
        return {"type": "string"}
    if isinstance(value, list):
        return {"type": "array"}
    if isinstance(value, dict):
        return {"type": "object"}
    return {}


def _route_path(document: dict[str, Any], route: Any, scenario: Scenario) -> None:
    """A path only a route serves: its method, answering what the route answers."""
    item = document["paths"].setdefault(route.path, {})
    method = route.method.lower()
    if method in item or method not in _METHODS:
        return
    responses: dict[str, Any] = {}
    _scripted(responses, route.reply, f"{route.method} {route.path}")
    item[method] = {
        "operationId": f"route{route.index}",
        "summary": f"Scripted by routes[{route.index}] of the scenario.",
        "responses": responses,
    }
    for status, answer in responses.items():
        _answer_headers(answer, None, int(status), scenario)


def _limit(spec: dict[str, Any], behaviour: Behaviour) -> None:
    if behaviour.limit_above_maximum != "clamp":
        return
    for parameter in spec.get("parameters", []):
        if parameter.get("name") == "limit":
            maximum = parameter["schema"].pop("maximum", None)
            parameter["description"] = (
                f"{parameter.get('description', '')} A limit above {maximum} is taken as {maximum}."
            ).strip()


def _new_pet(document: dict[str, Any], collections: Collections) -> None:
    components = document["components"]["schemas"]
    new_pet = components["NewPet"]
    body = document["paths"]["/pets"]["post"]["requestBody"]["content"]["application/json"]
    if collections.unknown_fields == "refuse" or not collections.strict_intake:
        # createPet's body only: a Pet (a NewPet and its id) stays open.
        body["schema"] = copy.deepcopy(new_pet)
        if collections.unknown_fields == "refuse":
            body["schema"]["additionalProperties"] = False
        document_collections.new_pet_body(body, collections)
    if collections.default_status is not None:
        status = new_pet["properties"]["status"]
        when = (
            " when it is read (the 201 omits it)" if collections.default_applied == "read" else ""
        )
        new_pet["properties"]["status"] = {
            "allOf": [status],
            "description": f"Defaults to {collections.default_status}{when}.",
        }


def _error_schema(components: dict[str, Any], behaviour: Behaviour) -> None:
    error = components["Error"]
    for item in behaviour.error_fields:
        if item.generate is not None:
            schema: dict[str, Any] = {
                "type": "string",
                "description": f"Generated: {item.generate}.",
            }
        else:
            schema = {**_shape(item.value)} if item.value is not None else {}
            schema["description"] = f"For instance {json.dumps(item.value)}."
        if item.conditions is not None:
            schema["description"] += " On " + ", ".join(sorted(item.conditions)) + " only."
        error["properties"][item.name] = schema


def _rate_limit_headers(headers: dict[str, Any], behaviour: Behaviour) -> None:
    reset = headers["X-RateLimit-Reset"]
    reset["description"] = {
        "epoch": "Unix timestamp (seconds) at which the limit resets.",
        "epoch-ms": "Unix timestamp in milliseconds at which the limit resets.",
        "delta": "Seconds until the limit resets.",
    }[behaviour.ratelimit_reset]
    limit = headers["X-RateLimit-Limit"]
    limit["description"] = {
        "tightest": "The allowance of the window with fewer requests left.",
        "minute": "The minute's allowance.",
        "day": "The day's allowance.",
    }[behaviour.ratelimit_describes]


def _answer_headers(
    answer: dict[str, Any], operation: str | None, status: int, scenario: Scenario
) -> None:
    """The headers the scenario's mock sends on this answer, documented on it."""
    behaviour = scenario.behaviour
    headers: dict[str, Any] = answer.setdefault("headers", {})
    name = behaviour.request_id.header
    if name is not None:
        headers.setdefault(
            name, {"description": "The answer's request id.", "schema": {"type": "string"}}
        )
    chosen: set[str] = set()
    for rule in behaviour.headers:
        lowered = rule.name.lower()
        if lowered in chosen or not rule.matches(operation, status):
            continue
        chosen.add(lowered)
        headers[rule.name] = {"schema": {"type": "string", "enum": [rule.value]}}
    if status == 201 and operation == "createPet" and behaviour.location != "none":
        headers["Location"] = {"description": "The new pet.", "schema": {"type": "string"}}
    if status == 200 and operation in dict(behaviour.etag):
        headers["ETag"] = {"schema": {"type": "string"}}
    if status == 401:
        headers.setdefault("WWW-Authenticate", {"schema": {"type": "string"}})
    if operation == "getPet":
        _deprecation(headers, status, behaviour)


def _deprecation(headers: dict[str, Any], status: int, behaviour: Behaviour) -> None:
    carried = (
        behaviour.deprecation_on == "all"
        or (behaviour.deprecation_on == "authenticated" and status != 401)
        or (behaviour.deprecation_on == "success" and 200 <= status < 300)
    )
    for name in ("Deprecation", "Sunset", "Link"):
        headers.pop(name, None)
    if not carried:
        return
    if behaviour.deprecation_format != "none":
        headers["Deprecation"] = {"$ref": "#/components/headers/Deprecation"}
    if behaviour.sunset_header:
        headers["Sunset"] = {"$ref": "#/components/headers/Sunset"}
    if behaviour.deprecation_link is not None:
        headers["Link"] = {"$ref": "#/components/headers/Link"}
