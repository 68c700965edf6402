"""The served OpenAPI document's account of a scenario's HTTP semantics.

``document.py`` makes the document a scenario's mock serves; for a scenario
with an ``http`` section, maintenance windows, a request-id echo or computed
Error fields, this module adds what those answers are, so a client generated
from the document parses every answer: the 304 of a conditional read (and its
``If-None-Match``/``If-Modified-Since`` parameters, ``ETag``, ``Last-Modified``),
``Content-Encoding`` and ``Vary``, an ``OPTIONS`` operation for a CORS preflight
or a plain ``OPTIONS`` (204 or 200, with the ``Access-Control-*`` or ``Allow``
headers), ``Access-Control-Allow-Origin`` on every cross-origin answer, the
redirect of a path with a trailing slash (308 and ``Location``), a maintenance
window's refusal (503 and ``Retry-After``), the request-id header a client may
send, the advisory headers of a create and of a clamped limit, and the computed Error fields' types.

Pure: a function of the scenario and the document being made.
"""

from __future__ import annotations

from typing import Any

from mockstore.cors import CorsPolicy
from mockstore.scenario.model import Scenario

_REF = "#/components/schemas/Error"
_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
_STRING = {"type": "string"}


def changes(scenario: Scenario) -> bool:
    """Whether the scenario's semantics change the document."""
    return bool(
        scenario.http.active
        or scenario.maintenance
        or scenario.behaviour.request_id.echo is not None
    )


def add_semantics(document: dict[str, Any], scenario: Scenario) -> None:
    """Add to ``document`` (the scenario's own copy) what its semantics answer."""
    http = scenario.http
    paths = document["paths"]
    for path, item in list(paths.items()):
        methods = [m for m in _METHODS if m in item]
        for method in methods:
            spec = item[method]
            operation = spec.get("operationId")
            responses = spec["responses"]
            _conditional(spec, responses, operation, scenario)
            _request_id(spec, scenario)
            for window in scenario.maintenance:
                if window.methods is not None and method.upper() not in window.methods:
                    continue
                if any(_under(path, prefix) for prefix in window.paths):
                    _maintenance(responses, window)
            for status, answer in responses.items():
                _answer_headers(answer, operation, int(status), scenario)
        _options(item, path, methods, scenario)
        if http.trailing_slash.answer == "redirect" and path != "/":
            _redirect(paths, path, methods, scenario)
    _error_fields(document["components"]["schemas"]["Error"], scenario)


def _under(path: str, prefix: str) -> bool:
    if prefix == "/":
        return True
    prefix = prefix.rstrip("/")
    return path == prefix or path.startswith(prefix + "/")


def _conditional(
    spec: dict[str, Any], responses: dict[str, Any], operation: str | None, scenario: Scenario
) -> None:
    conditional = scenario.http.conditional
    if operation not in conditional.operations:
        return
    parameters = spec.setdefault("parameters", [])
    for name, description in (
        ("If-None-Match", "ETags of representations the client holds: 304 if one is current."),
        (
            "If-Modified-Since",
            "304 if the representation has not changed since (no If-None-Match).",
        ),
    ):
        parameters.append(
            {"name": name, "in": "header", "required": False, "description": description,
             "schema": _STRING}
        )  # fmt: skip
    headers: dict[str, Any] = {}
    if operation in dict(scenario.behaviour.etag):
        headers["ETag"] = {"schema": _STRING}
    if operation in conditional.last_modified:
        headers["Last-Modified"] = {"schema": _STRING}
    responses["304"] = {
        "description": "Not Modified: the representation the request's validators name is "
        "current (no body).",
        "headers": headers,
    }


def _request_id(spec: dict[str, Any], scenario: Scenario) -> None:
    form = scenario.behaviour.request_id
    if form.echo is None or form.header is None:
        return
    spec.setdefault("parameters", []).append(
        {
            "name": form.header,
            "in": "header",
            "required": False,
            "description": "The client's own request id: answered back when it matches.",
            "schema": {"type": "string", "pattern": f"^(?:{form.echo})$"},
        }
    )


def _answer_headers(
    answer: dict[str, Any], operation: str | None, status: int, scenario: Scenario
) -> None:
    http = scenario.http
    headers: dict[str, Any] = answer.setdefault("headers", {})
    if status == 200 and operation in http.conditional.last_modified:
        headers.setdefault("Last-Modified", {"schema": _STRING})
    if http.compression.encodings and status not in (204, 304):
        headers["Content-Encoding"] = {
            "description": "The content coding of the body, when the request accepts one.",
            "schema": {"type": "string", "enum": list(http.compression.encodings)},
        }
        if http.compression.vary:
            headers["Vary"] = {"schema": _STRING}
    if http.cors is not None:
        headers["Access-Control-Allow-Origin"] = {
            "description": "On answers to a request with an allowed Origin.",
            "schema": _STRING,
        }
        if http.cors.expose_headers:
            headers["Access-Control-Expose-Headers"] = {"schema": _STRING}
    if http.unknown_fields is not None and operation == "createPet" and status == 201:
        headers[http.unknown_fields.header] = {
            "description": "When the body had fields NewPet does not name.",
            "schema": _STRING,
        }
    if http.clamped_limit is not None and operation == "listPets" and status == 200:
        headers[http.clamped_limit.header] = {
            "description": "When limit was above its maximum and taken as it.",
            "schema": _STRING,
        }


def _maintenance(responses: dict[str, Any], window: Any) -> None:
    key = str(window.status)
    headers = {} if window.retry_after == "none" else {"Retry-After": {"schema": _STRING}}
    said = f"Under maintenance ({window.name}, code {window.code})."
    if key in responses:
        answer = responses[key]
        answer["description"] = f"{answer.get('description', '').strip()} {said}".strip()
        answer.setdefault("headers", {}).update(headers)
        answer.setdefault("content", {"application/json": {"schema": {"$ref": _REF}}})
        return
    responses[key] = {
        "description": said,
        "headers": headers,
        "content": {"application/json": {"schema": {"$ref": _REF}}},
    }


def _options(item: dict[str, Any], path: str, methods: list[str], scenario: Scenario) -> None:
    """An ``options`` operation where a preflight or a plain OPTIONS is answered."""
    http = scenario.http
    responses: dict[str, Any] = {}
    cors = http.cors
    if cors is not None and CorsPolicy(cors).applies(path):
        names = ["Access-Control-Allow-Origin", "Access-Control-Allow-Methods",
                 "Access-Control-Allow-Headers", "Vary"]  # fmt: skip
        if cors.max_age is not None:
            names.append("Access-Control-Max-Age")
        if cors.credentials:
            names.append("Access-Control-Allow-Credentials")
        responses[str(cors.preflight_status)] = {
            "description": "A CORS preflight (Origin and Access-Control-Request-Method).",
            "headers": {name: {"schema": _STRING} for name in names},
        }
        if cors.rejected_status is not None:
            responses[str(cors.rejected_status)] = {
                "description": "A CORS preflight not allowed (code cors_rejected).",
                "content": {"application/json": {"schema": {"$ref": _REF}}},
            }
    if http.options.serve:
        answer = responses.setdefault(str(http.options.status), {"description": "", "headers": {}})
        answer["description"] = (answer["description"] + " The methods of the path.").strip()
        answer["headers"]["Allow"] = {"schema": _STRING}
    if not responses or "options" in item:
        return
    request_id = scenario.behaviour.request_id.header
    for status, answer in responses.items():
        _answer_headers(answer, None, int(status), scenario)
        if request_id is not None:
            answer["headers"].setdefault(request_id, {"schema": _STRING})
    item["options"] = {
        "operationId": "options"
        + "".join(part.strip("{}").capitalize() for part in path.split("/") if part),
        "summary": "Answered by the scenario's http section (CORS, OPTIONS).",
        "security": [],
        "responses": responses,
    }
    templated = [
        parameter
        for method in methods
        for parameter in item[method].get("parameters", [])
        if parameter.get("in") == "path"
    ]
    if templated:
        unique = {parameter["name"]: parameter for parameter in templated}
        item["options"]["parameters"] = list(unique.values())


def _redirect(paths: dict[str, Any], path: str, methods: list[str], scenario: Scenario) -> None:
    trailing = scenario.http.trailing_slash
    slashed = paths.setdefault(path + "/", {})
    for method in methods:
        if method in slashed:
            continue
        base = paths[path][method]
        slashed[method] = {
            "operationId": f"{base.get('operationId', method)}TrailingSlash",
            "summary": f"Redirected to {path} (the path without its trailing slash).",
            "security": [],
            "responses": {
                str(trailing.status): {
                    "description": "Redirect to the path without the trailing slash.",
                    "headers": {"Location": {"schema": _STRING}},
                }
            },
        }
        if "parameters" in base:
            slashed[method]["parameters"] = [p for p in base["parameters"] if p.get("in") == "path"]


_COMPUTED: dict[str, dict[str, Any]] = {
    "retry_after_s": {"type": "integer", "description": "Seconds to wait (the answer's)."},
    "retry_after_ms": {"type": "integer", "description": "Milliseconds to wait (the answer's)."},
    "value": {"description": "The offending value as sent."},
    "parameter": {"type": "string", "description": "The parameter or field at fault."},
}


def _error_fields(error: dict[str, Any], scenario: Scenario) -> None:
    for item in scenario.behaviour.error_fields:
        schema: dict[str, Any] | None = None
        if item.generate in _COMPUTED:
            schema = dict(_COMPUTED[item.generate])
        elif item.generate == "details":
            schema = {
                "type": "array",
                "description": "One entry per invalid field.",
                "items": {
                    "type": "object",
                    "properties": {name: _STRING for name, _ in item.item},
                },
            }
        elif item.template is not None:
            schema = {"type": "string", "description": "Filled in per answer."}
        if schema is None:
            continue
        if item.conditions is not None:
            schema["description"] = (
                schema.get("description", "")
                + " On "
                + ", ".join(sorted(item.conditions))
                + " only."
            ).strip()
        error["properties"][item.name] = schema


__all__ = ["add_semantics", "changes"]
