"""The control API's OpenAPI document: valid, equal to the routes, and true of every answer.

The document is written from the route table the server mounts and each
endpoint's own description (``mockstore/control/operations.py``). These tests
hold it to the code both ways: every route and method is in it; every Error
code an endpoint writes is listed for it; every answer a real server gives a
client's session (each operation, successes and refusals) validates against
it with every object closed, so a field added to a body without its
description fails here; every request example it shows is sent and accepted;
and the Python ``Control`` sends only what it describes.
"""

from __future__ import annotations

import ast
import copy
import inspect
import json
import re
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import MISSING, fields, is_dataclass
from types import UnionType
from typing import Any, Union, get_args, get_origin, get_type_hints

import httpx
import pytest
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012
from starlette.routing import Route

from mockstore.app import create_app
from mockstore.clients import calls as client_calls
from mockstore.control import journal_bodies
from mockstore.control.openapi import COMMON_ERRORS, STATE_CHANGING_ERRORS, control_document
from mockstore.control.operations import ControlRoute, operation_of
from mockstore.reports.verify import COUNTS, FIELDS
from tests.support import TOOL, auth, mock_server

CONTROL = "/__mockstore"
_URN = "urn:mockstore:control-document"


# -- the document and its checker ---------------------------------------------------


def mounted_routes() -> list[Route]:
    app = create_app("default")
    assert app.control is not None
    return app.control.app.routes  # type: ignore[return-value]


def closed(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` with every object schema that names its properties closed to others.

    An ``allOf`` is closed as a whole (``unevaluatedProperties``), its members
    and the components they refer to left open: each names part of one object.
    """
    text = json.dumps(document)
    parts = set(re.findall(r'"allOf": \[\{"\$ref": "#/components/schemas/(\w+)"', text))
    schemas = document["components"]["schemas"]
    return {
        **_closed(document),
        "components": {
            **document["components"],
            "schemas": {
                name: _closed(schema, close=name not in parts) for name, schema in schemas.items()
            },
        },
    }


def _closed(schema: Any, *, close: bool = True) -> Any:
    if isinstance(schema, list):
        return [_closed(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {}
    for key, value in schema.items():
        if key == "allOf":
            out[key] = [_closed(member, close=False) for member in value]
        elif key in ("properties", "patternProperties", "$defs"):
            out[key] = {name: _closed(item) for name, item in value.items()}
        else:
            out[key] = _closed(value)
    if not close or "additionalProperties" in out:
        return out
    if "allOf" in out:
        out["unevaluatedProperties"] = False
    elif "properties" in out:
        out["additionalProperties"] = False
    return out


class DocumentChecker:
    """Validates answers against the document's schema for their operation, status and type."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = closed(document)
        resource = Resource.from_contents(self.document, default_specification=DRAFT202012)
        self.registry = Registry().with_resource(_URN, resource)
        self.met: set[tuple[str, str, int]] = set()
        self.templates = [
            (re.compile("^" + re.sub(r"\{[^}]+\}", "[^/]+", path) + "$"), path)
            for path in document["paths"]
        ]

    def operation(self, method: str, path: str) -> tuple[str, dict[str, Any]]:
        """The document's (path template, operation) for a request under the control root."""
        matches = [template for pattern, template in self.templates if pattern.match(path)]
        # A literal path beats a template (/requests.har, not /requests/{seq}).
        matches.sort(key=lambda template: template.count("{"))
        for template in matches:
            found = self.document["paths"][template].get(method.lower())
            if found is not None:
                return template, found
        raise AssertionError(f"{method} {path}: no operation of the document")

    def check(self, response: httpx.Response) -> None:
        request = response.request
        path = request.url.raw_path.decode().split("?")[0]
        inside = path.rpartition(CONTROL)[2] or "/"
        method = "GET" if request.method == "HEAD" else request.method
        template, operation = self.operation(method, inside)
        status = response.status_code
        responses = operation["responses"]
        where = f"{request.method} {path} -> {status}"
        assert str(status) in responses, f"{where}: status not documented"
        self.met.add((operation["operationId"], template, status))
        content = responses[str(status)].get("content")
        if not content:
            assert not response.content, f"{where}: a body where none is documented"
            return
        media = response.headers["content-type"]
        assert media in content, f"{where}: {media} not documented ({list(content)})"
        if request.method == "HEAD" or media.startswith("text/event-stream"):
            return  # no body, or one that lasts as long as the client listens
        value = response.json() if media.startswith("application/json") else response.text
        pointer = "/".join(
            part.replace("~", "~0").replace("/", "~1")
            for part in ("paths", template, method.lower(), "responses", str(status))
        )
        media_part = media.replace("~", "~0").replace("/", "~1")
        ref = {"$ref": f"{_URN}#/{pointer}/content/{media_part}/schema"}
        errors = list(Draft202012Validator(ref, registry=self.registry).iter_errors(value))
        assert not errors, f"{where}: " + "; ".join(
            f"{'/'.join(map(str, e.absolute_path))}: {e.message[:300]}" for e in errors[:5]
        )


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    with mock_server() as server:
        return httpx.get(server.control_url + "/control.openapi.json").json()


# -- the document itself ------------------------------------------------------------


def test_the_served_document_is_valid_openapi_3_1(document: dict[str, Any]) -> None:
    validate(document)
    assert document["openapi"].startswith("3.1")


def test_its_servers_name_the_control_api_as_reached_a_tenants_too() -> None:
    with mock_server() as server:
        served = httpx.get(server.control_url + "/control.openapi.json").json()
        assert served["servers"][0]["url"] == server.control_url
        tenant = httpx.post(server.control_url + "/tenants", json={"id": "t1"}).json()
        root = server.url + tenant["path"]
        inner = httpx.get(root + CONTROL + "/control.openapi.json").json()
        assert inner["servers"][0]["url"] == root + CONTROL
        assert inner["paths"] == served["paths"]


def test_every_route_and_method_is_in_the_document_and_nothing_else(
    document: dict[str, Any],
) -> None:
    mounted = set()
    for route in mounted_routes():
        assert isinstance(route, ControlRoute), route
        path = re.sub(r"\{([^}:]+)(:[^}]+)?\}", r"{\1}", route.path)
        mounted |= {(path, method.lower()) for method in route.endpoints}
    described = {(path, method) for path, item in document["paths"].items() for method in item}
    assert described == mounted


def test_a_route_without_a_description_cannot_make_a_document() -> None:
    from mockstore.control.openapi import UndescribedEndpoint
    from mockstore.control.routes import route

    async def undescribed(request: Any) -> Any:
        raise NotImplementedError

    with pytest.raises(UndescribedEndpoint, match="GET /nowhere"):
        control_document([*mounted_routes(), route("/nowhere", GET=undescribed)], "http://x")


def test_operation_ids_are_unique_and_every_answer_is_described(
    document: dict[str, Any],
) -> None:
    ids = [op["operationId"] for item in document["paths"].values() for op in item.values()]
    assert len(ids) == len(set(ids))
    for item in document["paths"].values():
        for operation in item.values():
            assert operation["summary"]
            assert any(status.startswith(("2", "3")) for status in operation["responses"])


def test_every_example_fits_its_schema(document: dict[str, Any]) -> None:
    checker = DocumentChecker(document)
    seen = 0
    for path, item in document["paths"].items():
        for method, operation in item.items():
            for media, content in operation.get("requestBody", {}).get("content", {}).items():
                for name, example in content.get("examples", {}).items():
                    pointer = "/".join(
                        p.replace("~", "~0").replace("/", "~1")
                        for p in ("paths", path, method, "requestBody", "content", media)
                    )
                    ref = {"$ref": f"{_URN}#/{pointer}/schema"}
                    validator = Draft202012Validator(ref, registry=checker.registry)
                    assert validator.is_valid(example["value"]), (path, method, name)
                    seen += 1
    error = document["components"]["schemas"]["Error"]
    assert Draft202012Validator(error).is_valid(error["example"])
    assert seen >= 8


def test_verify_takes_what_the_verifier_knows() -> None:
    described = journal_bodies.EXPECTATION.schema["properties"]
    assert set(described) == {*FIELDS, *COUNTS, "since"}


# -- every Error code an endpoint writes is listed for it ---------------------------

_REFUSERS = {"error_response": 0, "ApiError": 0}


def _codes_written(function: Callable[..., Any], seen: set[Any]) -> set[tuple[str, int | None]]:
    """(code, status) of every Error an endpoint builds, in it or in what it calls of ours.

    Read from the source: a call of ``error_response``/``ApiError`` with a literal
    code, and the module-level functions and ``self`` methods it calls, followed.
    """
    function = inspect.unwrap(function)
    if function in seen:
        return set()
    seen.add(function)
    source = textwrap.dedent(inspect.getsource(function))
    tree = ast.parse(source)
    module = sys.modules[function.__module__]
    owner = None
    qualname = function.__qualname__.split(".")
    if len(qualname) > 1:
        owner = getattr(module, qualname[-2], None)
    found: set[tuple[str, int | None]] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        callee = node.func
        name = callee.id if isinstance(callee, ast.Name) else None
        if name in _REFUSERS and node.args and isinstance(node.args[0], ast.Constant):
            status = None
            for keyword in node.keywords:
                if keyword.arg == "status" and isinstance(keyword.value, ast.Constant):
                    status = keyword.value.value
            if len(node.args) >= 3 and isinstance(node.args[2], ast.Constant):
                status = node.args[2].value
            found.add((node.args[0].value, status))
            continue
        target = None
        if name is not None:
            target = getattr(module, name, None)
        elif (
            isinstance(callee, ast.Attribute)
            and isinstance(callee.value, ast.Name)
            and callee.value.id == "self"
            and owner is not None
        ):
            target = getattr(owner, callee.attr, None)
        if inspect.isfunction(target) and target.__module__.startswith("mockstore.control"):
            found |= _codes_written(target, seen)
    return found


def test_every_error_code_an_endpoint_writes_is_documented_for_it(
    document: dict[str, Any],
) -> None:
    unlisted = []
    checked = 0
    for route in mounted_routes():
        assert isinstance(route, ControlRoute)
        for method, endpoint in route.endpoints.items():
            operation = operation_of(endpoint)
            assert operation is not None
            listed = {**COMMON_ERRORS}
            for source in (operation.errors, STATE_CHANGING_ERRORS if method != "GET" else {}):
                for status, codes in source.items():
                    listed[status] = (*listed.get(status, ()), *codes)
            for code, status in _codes_written(endpoint.__func__, set()):  # type: ignore[attr-defined]
                checked += 1
                statuses = [s for s, codes in listed.items() if code in codes]
                if not statuses or (status is not None and status not in statuses):
                    unlisted.append(f"{method} {route.path}: {code} ({status})")
    assert not unlisted, unlisted
    assert checked >= 25  # the scan reads the endpoints, and what they call


def test_the_scan_finds_a_refusal_added_without_its_description() -> None:
    # The check above is only as good as its reading of the source: a refusal
    # the description leaves out is found, in the endpoint or in a helper it calls.
    from mockstore.control.keys import KeyEndpoints
    from mockstore.control.scenario import ScenarioEndpoints

    codes = {code for code, _ in _codes_written(KeyEndpoints.issue, set())}
    assert {"key_exists", "unknown_plan", "memory_budget", "state_unavailable"} <= codes
    assert "malformed_json" in codes  # json_object, a helper of http.py
    codes = {code for code, _ in _codes_written(ScenarioEndpoints.swap, set())}
    assert "invalid_scenario" in codes


# -- real answers validate ------------------------------------------------------------


@pytest.fixture
def checker(document: dict[str, Any]) -> DocumentChecker:
    return DocumentChecker(document)


@pytest.fixture
def session(checker: DocumentChecker) -> Iterator[tuple[str, httpx.Client]]:
    with mock_server() as server:
        client = httpx.Client(
            base_url=server.control_url,
            headers=TOOL,
            timeout=10,
            event_hooks={"response": [lambda r: _read_and_check(checker, r)]},
        )
        with client:
            yield server.url, client


def _read_and_check(checker: DocumentChecker, response: httpx.Response) -> None:
    if not response.headers.get("content-type", "").startswith("text/event-stream"):
        response.read()
    checker.check(response)


def test_every_answer_of_a_client_session_fits_the_document(
    session: tuple[str, httpx.Client], checker: DocumentChecker, document: dict[str, Any]
) -> None:
    root, control = session
    api = httpx.Client(base_url=root + "/v1", timeout=10)
    # The server and its documents.
    for path in ("/health", "/memory", "/openapi.json", "/schema", "/control.openapi.json"):
        assert control.get(path).status_code == 200
    assert control.get("/scenario").status_code == 200
    # Keys: issue, exhaust, ban, read, lift, revoke.
    key = control.post("/keys", json={"plan": {"per_minute": 2}}).json()["key"]
    assert control.post("/keys", json={"key": key}).status_code == 409
    assert control.post("/keys", json={"plan": "platinum"}).status_code == 400
    assert control.post("/keys", json={"plan": 7}).status_code == 400
    broken = control.post("/keys", content=b"{", headers={"content-type": "application/json"})
    assert broken.json()["code"] == "malformed_json"
    # Two allowed, then ten 429s ban it (the default ban policy), then 429 key_banned.
    statuses = [api.get("/pets", headers=auth(key)).status_code for _ in range(13)]
    assert statuses[:2] == [200, 200] and set(statuses[2:]) == {429}
    banned = next(k for k in control.get("/keys").json() if k["key"] == key)
    assert banned["banned"] and banned["banned_until"]
    assert control.delete("/bans/" + key).json() == {"key": key, "lifted": True}
    assert control.delete("/bans/nobody").status_code == 404
    # The clock.
    assert control.get("/clock").status_code == 200
    assert control.post("/clock", json={"advance_seconds": 61}).status_code == 200
    assert control.post("/clock", json={"set": "2030-12-05T00:00:01Z"}).status_code == 200
    assert control.post("/clock", json={"set": "year 12000"}).status_code == 400
    assert control.post("/clock", json={"advance_seconds": 1e300}).status_code == 400
    assert control.post("/clock", json={}).status_code == 400
    # The API after the sunset, so the report has something to say.
    api.post("/pets", json={"name": "Rex", "categoryId": 1}, headers=auth("pro"))
    api.get("/pets/1", headers=auth("pro"))
    # The journal and what is built from it.
    entries = control.get("/requests", params={"status": 429, "run": "current"}).json()
    assert entries["entries"]
    seq = entries["entries"][0]["seq"]
    assert control.get(f"/requests/{seq}").status_code == 200
    assert control.get("/requests/999999").status_code == 404
    assert control.get("/requests", params={"since": "x"}).status_code == 400
    assert control.get("/requests", params={"tenant": "ghost"}).status_code == 404
    assert control.get("/requests.har").status_code == 200
    assert control.get("/requests.har", params={"mask": "false"}).status_code == 200
    verified = control.post("/verify", json={"operation": "createPet", "count": 1}).json()
    assert verified["ok"]
    near = control.post("/verify", json={"operation": "createPet", "status": 429}).json()
    assert not near["ok"] and near["closest"]
    assert control.post("/verify", json={"counted": 1}).status_code == 400
    assert control.post("/verify", json={"count": -1}).status_code == 400
    report = control.get("/report", params={"include": "timeline"}).json()
    assert report["findings"] and report["timeline"]["rows"]
    assert control.get("/report", params={"run": "soon"}).status_code == 400
    assert control.get("/report.html").status_code == 200
    assert control.get("/pets").status_code == 200
    # Tenants: their journals join the server's report.
    tenant = control.post("/tenants", json={"id": "gw0"}).json()
    assert control.post("/tenants", json={"id": "gw0"}).status_code == 409
    assert control.post("/tenants", json={"id": "../x"}).status_code == 400
    assert control.post("/tenants", json={"name": "x"}).status_code == 400
    httpx.get(root + tenant["path"] + "/v1/pets", headers=auth("free"))
    assert control.get("/tenants").status_code == 200
    assert control.get("/report").json()["summary"]["journals"]
    assert control.get("/report", params={"tenants": "some"}).status_code == 400
    assert control.delete("/tenants/gw0").status_code == 204
    assert control.delete("/tenants/gw0").status_code == 404
    # Scenarios: bundled ones, loading, refusals.
    assert control.get("/scenarios").status_code == 200
    assert control.get("/scenarios/default").status_code == 200
    assert control.get("/scenarios/nothing").status_code == 404
    assert control.put("/scenario", content=b"free-tier-exhaustion").status_code == 200
    assert control.put("/scenario", content=b"no-such-scenario").status_code == 400
    refused = control.put("/scenario", content=b"version: 1\nkeys: 7\n")
    assert refused.status_code == 400 and refused.json()["problems"]
    # The dashboard's page and files.
    assert control.get("/", follow_redirects=False).status_code == 307
    assert control.get("/ui/", follow_redirects=False).status_code == 307
    assert control.get("/ui").status_code == 200
    for name in ("main.js", "app.css", "nothing.js"):
        control.get("/ui/" + name)
    with control.stream("GET", "/events") as events:
        assert events.status_code == 200
    # Back to the start; the keys go.
    assert control.delete("/requests").status_code == 204
    assert control.post("/reset").status_code == 200
    assert control.delete("/keys/" + key).status_code in (204, 404)
    assert control.delete("/keys/free-key").status_code == 204
    assert control.delete("/keys/free-key").status_code == 404
    api.close()

    # Every operation of the document was met, and most of their refusals.
    met = {operation for operation, _, _ in checker.met}
    every = {op["operationId"] for item in document["paths"].values() for op in item.values()}
    assert met == every, every - met
    refusals = {(op, status) for op, _, status in checker.met if status >= 400}
    assert len(refusals) >= 15


def test_a_token_servers_refusal_fits_the_document(checker: DocumentChecker) -> None:
    with mock_server(control_token="sekret") as server:
        refused = httpx.get(server.control_url + "/keys")
        assert refused.status_code == 401
        checker.check(refused)
        served = httpx.get(server.control_url + "/keys", headers={"Authorization": "Bearer sekret"})
        checker.check(served)


def test_every_request_example_is_accepted_by_a_server(document: dict[str, Any]) -> None:
    checker = DocumentChecker(document)
    sent = 0
    for path, item in document["paths"].items():
        for method, operation in item.items():
            content = operation.get("requestBody", {}).get("content", {})
            for media, body in content.items():
                for name, example in body.get("examples", {}).items():
                    with mock_server() as server:
                        value = example["value"]
                        data = json.dumps(value) if media == "application/json" else value
                        response = httpx.request(
                            method.upper(),
                            server.control_url + path,
                            content=data.encode(),
                            headers={"content-type": media},
                        )
                        checker.check(response)
                        assert response.is_success, (path, method, name, response.text)
                        sent += 1
    assert sent >= 8


# -- the Python client asks only what the document describes -------------------------


def _client_calls() -> list[tuple[str, client_calls.Call[Any]]]:
    """Each of ``Calls``' requests, built as the client's methods build them."""
    calls = client_calls.Calls
    return [
        ("health", calls.health()),
        ("scenario", calls.scenario()),
        ("load_scenario", calls.load_scenario("default", None)),
        ("load_scenario", calls.load_scenario({"version": 1, "name": "x"}, "mine.yaml")),
        ("reset", calls.reset()),
        ("clock", calls.clock()),
        ("advance", calls.advance(60)),
        ("set_time", calls.set_time("2030-12-05T00:00:00Z")),
        ("keys", calls.keys()),
        ("issue_key", calls.issue_key("pro", "k", "t")),
        ("issue_key", calls.issue_key({"per_minute": 5, "per_day": 9}, None, None)),
        ("revoke_key", calls.revoke_key("a/b")),
        ("lift_ban", calls.lift_ban("k")),
        ("pets", calls.pets("t")),
        ("requests", calls.requests("listPets", "k", 200, 3, "current")),
        ("clear_requests", calls.clear_requests()),
        ("verify", calls.verify("createPet", {"count": 1, "body_contains": {"name": "R"}})),
        ("verify", calls.verify(None, {"at_least": 1, "at_most": 3, "since": 2})),
        ("report", calls.report(1, True, "current")),
        ("har", calls.har(1, False)),
        ("tenants", calls.tenants()),
        ("create_tenant", calls.create_tenant("gw0")),
        ("delete_tenant", calls.delete_tenant("gw0")),
    ]


def test_every_method_of_calls_is_checked() -> None:
    built = {name for name, _ in _client_calls()}
    public = {name for name, _ in inspect.getmembers(client_calls.Calls, inspect.isfunction)}
    assert built == public


@pytest.mark.parametrize(
    "name, call", _client_calls(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_the_python_client_sends_what_the_document_describes(
    document: dict[str, Any], checker: DocumentChecker, name: str, call: client_calls.Call[Any]
) -> None:
    template, operation = checker.operation(call.method, call.path)
    # Its query parameters are the operation's.
    known = {p["name"] for p in operation.get("parameters", []) if p["in"] == "query"}
    assert set(call.params or {}) <= known, (name, call.params, known)
    # What it expects is documented.
    for status in call.expect:
        if status != 200 or "200" in operation["responses"]:
            assert str(status) in operation["responses"], (name, status)
    assert any(str(status) in operation["responses"] for status in call.expect), name
    # Its body fits the request body's schema.
    body = operation.get("requestBody")
    if call.json_body is not None and call.json_body != {}:
        assert body is not None, name
        _assert_fits(checker, template, call.method, "application/json", call.json_body)
    if call.content is not None:
        assert body is not None, name
        media = (call.headers or {}).get("Content-Type", "application/json")
        assert media in body["content"], (name, media)
        value = call.content.decode()
        if media == "application/json":
            value = json.loads(value)
        _assert_fits(checker, template, call.method, media, value)


def _assert_fits(
    checker: DocumentChecker, template: str, method: str, media: str, value: Any
) -> None:
    pointer = "/".join(
        p.replace("~", "~0").replace("/", "~1")
        for p in ("paths", template, method.lower(), "requestBody", "content", media)
    )
    validator = Draft202012Validator(
        {"$ref": f"{_URN}#/{pointer}/schema"}, registry=checker.registry
    )
    errors = [e.message for e in validator.iter_errors(value)]
    assert not errors, (template, method, errors)


_READS = {
    "Health": "Health",
    "ScenarioInfo": "Scenario",
    "ResetResult": "Reset",
    "ClockState": "Clock",
    "KeyInfo": "Key",
    "JournalEntry": "JournalEntry",
    "Verification": "Verification",
    "Report": "Report",
    "TenantInfo": "Tenant",
}


# Fields a client type fills itself, never read from an answer.
_CLIENT_OWN = {
    ("Report", "raw"),  # the answer as served, whole
    ("TenantInfo", "url"),  # the tenant's root: the client's own address and the tenant's path
}


def _resolved(document: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = document["components"]["schemas"][schema["$ref"].rpartition("/")[2]]
    if "anyOf" in schema:
        [schema] = [s for s in schema["anyOf"] if s.get("type") != "null"]
        return _resolved(document, schema)
    if "allOf" in schema:
        merged: dict[str, Any] = {"properties": {}, "required": []}
        for part in schema["allOf"]:
            part = _resolved(document, part)
            merged["properties"].update(part.get("properties", {}))
            merged["required"] += part.get("required", [])
        return merged
    return schema


def _assert_type_fits(
    document: dict[str, Any], kind: Any, schema: dict[str, Any], where: str
) -> None:
    """A client dataclass reads only fields the schema names, requires only required ones."""
    origin = get_origin(kind)
    if origin is list:
        (item,) = get_args(kind)
        _assert_type_fits(document, item, _resolved(document, schema)["items"], where + "[]")
        return
    if origin is dict:
        _, item = get_args(kind)
        values = _resolved(document, schema).get("additionalProperties", {})
        _assert_type_fits(document, item, values, where + "{}")
        return
    if not is_dataclass(kind):
        return
    schema = _resolved(document, schema)
    properties = schema.get("properties", {})
    required = set(schema.get("required", []))
    hints = get_type_hints(kind)
    for spec in fields(kind):
        if (kind.__name__, spec.name) in _CLIENT_OWN:
            continue
        assert spec.name in properties, f"{where}: the client reads {spec.name!r}, undescribed"
        has_default = spec.default is not MISSING or spec.default_factory is not MISSING
        if not has_default:
            assert spec.name in required, f"{where}.{spec.name}: required by the client only"
        hint = hints[spec.name]
        union = get_origin(hint) in (Union, UnionType)
        options = [a for a in get_args(hint) if a is not type(None)] if union else [hint]
        for option in options:
            _assert_type_fits(document, option, properties[spec.name], f"{where}.{spec.name}")


def test_the_python_clients_answer_types_read_what_the_document_describes(
    document: dict[str, Any],
) -> None:
    from mockstore.clients import types

    for type_name, schema_name in _READS.items():
        kind = getattr(types, type_name)
        schema = {"$ref": f"#/components/schemas/{schema_name}"}
        _assert_type_fits(document, kind, schema, type_name)


def test_mockstore_openapi_control_prints_the_served_document(document: dict[str, Any]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mockstore", "openapi", "--control"],
        capture_output=True,
        text=True,
        check=True,
    )
    printed = json.loads(done.stdout)
    validate(printed)
    served = copy.deepcopy(document)
    assert printed["servers"][0]["url"] == "http://127.0.0.1:8080/__mockstore"
    printed.pop("servers")
    served.pop("servers")
    assert printed == served
