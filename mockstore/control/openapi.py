"""The control API's OpenAPI 3.1 document, written from the route table the server mounts.

The paths, their parameters and methods come from the routes themselves
(``ControlRoute``: each method's endpoint); everything else from the
description each endpoint carries (``mockstore.control.operations``). What
every control request may meet whatever the endpoint (the token, the ``Host``
and cross-site checks of ``guard.py``, the bounds on a body, the server's own
refusals of broken HTTP) is added here once, in ``COMMON_ERRORS``. A route
without a description is a bug, refused here, so the document cannot leave
an endpoint out.

Served at ``/__mockstore/control.openapi.json`` (its ``servers`` naming the
control API as the request reached it, a tenant's included) and printed by
``mockstore openapi --control``.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from starlette.routing import BaseRoute

from mockstore import schemas
from mockstore.control.operations import JSON, Answer, ControlRoute, Operation, Schema, operation_of
from mockstore.version import __version__

# Error codes any control request may be answered with, by status, whatever its endpoint.
COMMON_ERRORS: dict[int, tuple[str, ...]] = {
    400: ("bad_request",),  # broken HTTP, answered by the server itself
    401: ("unauthorized",),  # the control token (--control-token), when the server has one
    403: ("host_not_allowed",),  # guard.py: a Host that names no name of this server
    408: ("request_timeout",),  # the head or the body came too slowly
    413: ("payload_too_large",),  # a body over --max-control-body-bytes
    431: ("headers_too_large",),
    500: ("internal_error",),  # a bug in mockstore (logged)
    503: ("server_busy",),  # every connection busy (--max-connections)
}
# ... and those a state-changing request may meet (guard.py's cross-site checks).
STATE_CHANGING_ERRORS: dict[int, tuple[str, ...]] = {403: ("cross_site_request",)}
STATE_CHANGING = ("POST", "PUT", "PATCH", "DELETE")

STATUS_TEXT = {
    400: "Refused: the request is not valid",
    401: "The control token is missing or wrong (a server started with --control-token)",
    403: "Refused by the control API's guard (see the Security page)",
    404: "Not found",
    408: "The request did not arrive in time",
    409: "Conflict: it exists already",
    413: "The body is over the control API's limit",
    431: "The request's head is over the limit",
    500: "A bug in mockstore (the server's log has the traceback)",
    503: "Unavailable for now: retry shortly",
    507: "The memory budget (or a registry) has no room for it",
}
ERROR_HEADERS = {
    401: {"WWW-Authenticate": 'Bearer realm="mockstore-control"'},
    503: {"Retry-After": "Seconds to wait before retrying (state_unavailable)"},
}

TAGS = (
    ("server", "The server itself: health, memory, the documents it serves"),
    ("scenario", "The running scenario: show it, load another"),
    ("state", "Reset, and the store's pets"),
    ("clock", "The scenario clock: read it, move it"),
    ("keys", "API keys and bans"),
    ("journal", "The request journal, verification, the report, HAR"),
    ("tenants", "Isolated mocks inside one server"),
    ("dashboard", "The live dashboard's page and what only it reads"),
)

DESCRIPTION = """\
mockstore's control API, under `/__mockstore` on every mockstore server (and under
`/__mockstore/tenants/<id>/__mockstore` for each tenant). It needs no API key. A server
started with `--control-token TOKEN` requires `Authorization: Bearer TOKEN` on every
endpoint but `/health` and the dashboard's page (a tenant's, on all of them). A request a
web page could send cross-site is refused (`403 cross_site_request`): a `POST` with a form
or `text/plain` body needs the header `X-Mockstore-Client` (any value). Every refusal is an
`Error` body whose `status` is the HTTP status; the codes each answer may carry are listed
with it. Generated from the route table the server mounts, so it describes what this
server answers."""

_PARAMETER = re.compile(r"\{([^}:]+)(?::([^}]+))?\}")


class UndescribedEndpoint(LookupError):
    """A route's endpoint carries no ``Operation``: the document would leave it out."""


def control_document(routes: Iterable[BaseRoute], server_url: str) -> dict[str, Any]:
    """The OpenAPI document of the control API mounted as ``routes``, served at ``server_url``."""
    collected: dict[str, Schema] = {}
    paths: dict[str, Any] = {}
    for route in routes:
        if not isinstance(route, ControlRoute):
            raise UndescribedEndpoint(f"{route!r} is not a ControlRoute: route() makes them")
        path, parameters = _path(route.path)
        item: dict[str, Any] = {}
        for method, endpoint in route.endpoints.items():
            operation = operation_of(endpoint)
            if operation is None:
                name = getattr(endpoint, "__qualname__", repr(endpoint))
                raise UndescribedEndpoint(f"{method} {route.path}: {name} has no @described")
            item[method.lower()] = _operation(operation, method, parameters, collected)
        paths[path] = item
    components: dict[str, Any] = {"schemas": {}}
    # Components refer to components: resolve until nothing new turns up.
    done: set[str] = set()
    while set(collected) - done:
        for name in sorted(set(collected) - done):
            components["schemas"][name] = _resolve(collected[name].schema, collected)
            done.add(name)
    components["schemas"] = dict(sorted(components["schemas"].items()))
    components["securitySchemes"] = {
        "controlToken": {
            "type": "http",
            "scheme": "bearer",
            "description": "The server's --control-token (MOCKSTORE_CONTROL_TOKEN), if any.",
        }
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "mockstore control API",
            "version": __version__,
            "description": DESCRIPTION,
        },
        "servers": [{"url": server_url, "description": "This mockstore server's control API"}],
        # The token only where the server has one: an empty requirement is none.
        "security": [{"controlToken": []}, {}],
        "tags": [{"name": name, "description": text} for name, text in TAGS],
        "paths": paths,
        "components": components,
    }


def control_document_json(routes: Iterable[BaseRoute], server_url: str) -> bytes:
    return json.dumps(control_document(routes, server_url), indent=2).encode()


def _path(starlette_path: str) -> tuple[str, list[dict[str, Any]]]:
    """The OpenAPI path of a Starlette path, and its path parameters (by their convertors)."""
    parameters = []
    for name, convertor in _PARAMETER.findall(starlette_path):
        schema: dict[str, Any] = {"type": "string"}
        if convertor == "int":
            schema = {"type": "integer", "minimum": 0}
        elif convertor == "path":
            # Sent percent-encoded, as one segment, by any client.
            schema = {"type": "string", "minLength": 1}
        parameters.append({"name": name, "in": "path", "required": True, "schema": schema})
    return _PARAMETER.sub(r"{\1}", starlette_path), parameters


def _operation(
    operation: Operation,
    method: str,
    path_parameters: list[dict[str, Any]],
    collected: dict[str, Schema],
) -> dict[str, Any]:
    described: dict[str, Any] = {
        "operationId": operation.id,
        "summary": operation.summary,
        "tags": [operation.tag],
    }
    if operation.description:
        described["description"] = operation.description
    parameters = copy.deepcopy(path_parameters)
    for param in operation.params:
        parameters.append(
            {
                "name": param.name,
                "in": "query",
                "required": False,
                "description": param.description,
                "schema": _resolve(param.schema, collected),
            }
        )
    if parameters:
        described["parameters"] = parameters
    if operation.body is not None:
        body = operation.body
        content: dict[str, Any] = {}
        for media, schema in body.content.items():
            content[media] = {"schema": _resolve(schema, collected)}
            examples = {
                e.name: {"summary": e.summary, "value": e.value}
                for e in body.examples
                if e.media == media
            }
            if examples:
                content[media]["examples"] = examples
        described["requestBody"] = {
            "description": body.description,
            "required": body.required,
            "content": content,
        }
    described["responses"] = _responses(operation, method, collected)
    return described


def _responses(operation: Operation, method: str, collected: dict[str, Schema]) -> dict[str, Any]:
    errors: dict[int, list[str]] = {}
    sources: list[Mapping[int, tuple[str, ...]]] = [COMMON_ERRORS, operation.errors]
    if method in STATE_CHANGING:
        sources.append(STATE_CHANGING_ERRORS)
    for source in sources:
        for status, codes in source.items():
            listed = errors.setdefault(status, [])
            listed.extend(code for code in codes if code not in listed)
    responses: dict[str, Any] = {}
    for status in sorted({*operation.answers, *errors}):
        answer = operation.answers.get(status)
        codes = errors.get(status)
        error_schema = None
        if codes:
            collected.setdefault(ERROR.name, ERROR)
            error_schema = {
                "allOf": [ERROR.ref(), {"type": "object", "properties": {"code": {"enum": codes}}}]
            }
        responses[str(status)] = _response(status, answer, error_schema, codes or [], collected)
    return responses


def _response(
    status: int,
    answer: Answer | None,
    error_schema: dict[str, Any] | None,
    codes: list[str],
    collected: dict[str, Schema],
) -> dict[str, Any]:
    description = answer.description if answer is not None else STATUS_TEXT.get(status, "Refused")
    if codes:
        description += " (Error codes: " + ", ".join(f"`{c}`" for c in codes) + ")"
    response: dict[str, Any] = {"description": description}
    headers = {
        **(answer.headers if answer else {}),
        **(ERROR_HEADERS.get(status, {}) if codes else {}),
    }
    if headers:
        response["headers"] = {
            name: {"description": text, "schema": {"type": "string"}}
            for name, text in headers.items()
        }
    content: dict[str, Any] = {}
    if answer is not None and answer.body is not None:
        for media in (answer.media,) if isinstance(answer.media, str) else answer.media:
            schema = _resolve(answer.body, collected)
            if error_schema is not None and media == JSON:
                schema = {"anyOf": [schema, error_schema]}
            content[media] = {"schema": schema}
    if error_schema is not None and JSON not in content:
        content[JSON] = {"schema": error_schema}
    if content:
        response["content"] = content
    return response


def _resolve(value: Any, collected: dict[str, Schema]) -> Any:
    """``value`` as plain JSON: each ``Schema`` in it a ``$ref``, and collected."""
    if isinstance(value, Schema):
        collected.setdefault(value.name, value)
        if collected[value.name] is not value:
            raise ValueError(f"two schemas are named {value.name!r}")
        return value.ref()
    if isinstance(value, Mapping):
        resolved = {key: _resolve(item, collected) for key, item in value.items()}
        ref = resolved.get("$ref")
        if isinstance(ref, dict):  # doc(Schema, text): the reference, described
            resolved["$ref"] = ref["$ref"]
        return resolved
    if isinstance(value, list | tuple):
        return [_resolve(item, collected) for item in value]
    return value


def _error_schema() -> Schema:
    """The API document's Error, with the fields only the control API adds."""
    error = copy.deepcopy(schemas.openapi_document()["components"]["schemas"]["Error"])
    error["properties"]["problems"] = {
        "type": "array",
        "items": {"type": "string"},
        "description": "invalid_scenario: each problem as `file:line:column: path: message`",
    }
    error["properties"]["details"] = {
        "type": "array",
        "items": {"type": "object"},
        "description": "invalid_scenario: each problem's parts (file, line, column, path, message)",
    }
    error["example"] = {
        "code": "invalid_request",
        "message": 'send {"advance_seconds": N} or {"set": "2030-12-05T00:00:00Z"}',
        "status": 400,
    }
    return Schema("Error", error)


ERROR = _error_schema()
