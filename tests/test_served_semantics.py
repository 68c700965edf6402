"""The document a mock serves declares what its HTTP semantics answer: 304, 204 preflights,
OPTIONS, 308 redirects, maintenance 503s, the headers and parameters of each.

A client generated from ``/__mockstore/openapi.json`` must parse every answer: each
answer of a mock whose scenario enables every part of ``http``, a maintenance
window and computed Error fields has a status the served document lists for its
path and method, with the headers it carries declared. Over a real uvicorn process.
"""

from __future__ import annotations

import httpx
from openapi_spec_validator import validate

from mockstore.routing import compile_path
from tests.support import mock_server

KEY = {"Authorization": "Bearer doc-key"}
SCENARIO = """\
version: 1
clock: {start: 2026-03-01T12:00:00Z, mode: manual}
keys: [{key: doc-key, plan: {per_minute: 100, per_day: 1000}}]
generate: {pets: 30}
behaviour:
  etag: {getPet: strong, listPets: weak}
  request_id: {echo: '[a-z0-9-]{8,40}'}
  error_fields:
    - {name: details, generate: details, conditions: [invalid_body]}
    - {name: rejected, generate: value, conditions: [bad_limit]}
http:
  conditional: {operations: [getPet, listPets], last_modified: [getPet]}
  compression: {encodings: [gzip], min_bytes: 100}
  cors: {origins: ['https://app.example.com'], rejected_status: 403}
  options: {serve: true}
  trailing_slash: {answer: redirect}
  advisory: {unknown_fields: {}}
maintenance:
  - {paths: [/store], between_seconds: [0, 60], retry_after: http-date}
"""


def _described(document: dict, method: str, path: str) -> dict:
    for template, item in document["paths"].items():
        if compile_path(template).match(path) and method.lower() in item:
            return item[method.lower()]
    raise AssertionError(f"{method} {path} is not in the served document")


def test_every_answer_of_the_semantics_is_described() -> None:
    with mock_server(SCENARIO) as api:
        with httpx.Client(base_url=api.url) as http:
            document = http.get("/__mockstore/openapi.json").json()
        validate(document)
        with httpx.Client(base_url=api.api, headers=KEY, follow_redirects=False) as http:
            tag = http.get("/pets/1").headers["etag"]
            origin = {"Origin": "https://app.example.com", "Access-Control-Request-Method": "GET"}
            sent = [
                ("GET", "/pets/1", http.get("/pets/1", headers={"If-None-Match": tag})),
                ("GET", "/pets", http.get("/pets", headers={"If-None-Match": "*"})),
                ("OPTIONS", "/pets", http.options("/pets", headers=origin)),
                ("OPTIONS", "/pets", http.options("/pets",
                 headers={**origin, "Origin": "https://evil.example"})),
                ("OPTIONS", "/pets/1", http.options("/pets/1")),
                ("GET", "/pets/", http.get("/pets/")),
                ("GET", "/store/orders", http.get("/store/orders")),
                ("POST", "/pets", http.post("/pets", json={"name": 1})),
                ("POST", "/pets", http.post("/pets", json={"name": "a", "categoryId": 1, "x": 2})),
                ("GET", "/pets", http.get("/pets?limit=x", headers={"X-Request-Id": "abcdefgh-1"})),
            ]  # fmt: skip
    for method, path, answer in sent:
        spec = _described(document, method, path)
        listed = spec["responses"]
        assert str(answer.status_code) in listed, (method, path, answer.status_code, list(listed))
        declared = {name.lower() for name in listed[str(answer.status_code)].get("headers", {})}
        for name in ("etag", "last-modified", "location", "retry-after", "allow", "warning",
                     "access-control-allow-origin", "content-encoding"):  # fmt: skip
            if name in answer.headers:
                assert name in declared, (method, path, answer.status_code, name)
    statuses = [answer.status_code for _, _, answer in sent]
    assert statuses == [304, 304, 204, 403, 204, 308, 503, 400, 201, 400]
    parameters = {p["name"] for p in _described(document, "GET", "/pets/1")["parameters"]}
    assert {"If-None-Match", "If-Modified-Since", "X-Request-Id"} <= parameters
    error = document["components"]["schemas"]["Error"]["properties"]
    assert error["details"]["type"] == "array"
