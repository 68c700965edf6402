"""The OpenAPI document: a valid OpenAPI 3.1 transcription of the spec, served without a key.

Served, its ``servers`` name the address the server listens on; the rest is
the package's document as it is.
"""

from __future__ import annotations

import socket
from typing import Any

import httpx
import pytest
from openapi_spec_validator import validate
from starlette.testclient import TestClient

from mockstore import schemas
from mockstore.control.documents import api_url, openapi_json
from tests.support import mock_server

OPERATIONS = {
    "listPets": ("get", "/pets"),
    "createPet": ("post", "/pets"),
    "getPet": ("get", "/pets/{petId}"),
    "listOrders": ("get", "/store/orders"),
}
RATE_HEADERS = {"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"}


@pytest.fixture
def served(client: TestClient) -> dict[str, Any]:
    response = client.get("/__mockstore/openapi.json")  # no Authorization header
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    return response.json()


def _resolve(document: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        target: Any = document
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = target
    return node


def test_served_document_validates_as_openapi_31(served: dict[str, Any]) -> None:
    assert served["openapi"].startswith("3.1")
    validate(served)  # raises on any violation of the OpenAPI 3.1 schema
    assert served["info"]["version"] == "1.0.0"


def test_served_document_is_the_one_validation_uses(served: dict[str, Any]) -> None:
    served = {**served}
    del served["servers"]
    document = {**schemas.openapi_document()}
    del document["servers"]
    assert served == document


def test_served_document_names_the_address_it_was_reached_on(served: dict[str, Any]) -> None:
    # TestClient's ASGI server address is ("testserver", 80).
    assert [s["url"] for s in served["servers"]] == ["http://testserver:80/v1"]


def test_a_real_server_names_its_own_address_and_the_scenarios_base_path() -> None:
    with mock_server() as running:
        document = httpx.get(running.url + "/__mockstore/openapi.json", timeout=10).json()
        assert [s["url"] for s in document["servers"]] == [running.url + "/v1"]
        swapped = httpx.put(
            running.url + "/__mockstore/scenario",
            content="version: 1\nname: elsewhere\nbase_path: /api/v2\n",
            timeout=10,
        )
        assert swapped.status_code == 200, swapped.text
        document = httpx.get(running.url + "/__mockstore/openapi.json", timeout=10).json()
        assert [s["url"] for s in document["servers"]] == [running.url + "/api/v2"]


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.mark.skipif(not _ipv6_loopback(), reason="no IPv6 loopback on this machine")
def test_a_server_on_ipv6_names_its_address_in_brackets() -> None:
    with mock_server(host="::1") as running:
        assert running.url.startswith("http://[::1]:")
        document = httpx.get(running.url + "/__mockstore/openapi.json", timeout=10).json()
        assert [s["url"] for s in document["servers"]] == [running.url + "/v1"]


@pytest.mark.parametrize(
    ("scope", "base_path", "url"),
    [
        ({"scheme": "http", "server": ("127.0.0.1", 41234)}, "/v1", "http://127.0.0.1:41234/v1"),
        ({"scheme": "https", "server": ("::1", 8443)}, "/v1", "https://[::1]:8443/v1"),
        ({"scheme": "http", "server": ("fe80::1%eth0", 80)}, "", "http://[fe80::1%25eth0]:80"),
        ({"scheme": "http", "server": ("/run/mock.sock", None)}, "/v1", "/v1"),
        ({"scheme": "http", "server": None}, "", "/"),
    ],
)
def test_the_api_url_comes_from_the_asgi_server_address(
    scope: dict[str, Any], base_path: str, url: str
) -> None:
    assert api_url(scope, base_path) == url


def test_the_served_document_is_encoded_once_per_address(client: TestClient) -> None:
    first = client.get("/__mockstore/openapi.json").content
    hits = openapi_json.cache_info().hits
    assert client.get("/__mockstore/openapi.json").content == first
    assert openapi_json.cache_info().hits == hits + 1


def test_it_declares_the_spec_operations(served: dict[str, Any]) -> None:
    found = {
        spec["operationId"]: (method, path)
        for path, item in served["paths"].items()
        for method, spec in item.items()
        if isinstance(spec, dict) and "operationId" in spec
    }
    assert found == OPERATIONS


def test_only_get_pet_is_deprecated(served: dict[str, Any]) -> None:
    for operation, (method, path) in OPERATIONS.items():
        deprecated = served["paths"][path][method].get("deprecated", False)
        assert deprecated is (operation == "getPet"), operation


def test_bearer_security_on_every_operation(served: dict[str, Any]) -> None:
    schemes = served["components"]["securitySchemes"]
    bearer = [
        name for name, s in schemes.items() if (s["type"], s.get("scheme")) == ("http", "bearer")
    ]
    assert bearer
    for method, path in OPERATIONS.values():
        requirements = served["paths"][path][method].get("security", served.get("security"))
        assert requirements, f"{method} {path} has no security"
        # No empty requirement object: that would make the key optional.
        assert all(req and set(req) <= set(bearer) for req in requirements), requirements


def test_schemas_transcribe_the_spec(served: dict[str, Any]) -> None:
    components = served["components"]["schemas"]
    assert {"PetStatus", "NewPet", "Pet", "Error"} <= set(components)
    assert components["PetStatus"]["enum"] == ["available", "pending", "sold"]
    new_pet = components["NewPet"]
    assert set(new_pet["required"]) == {"name", "categoryId"}
    assert new_pet["properties"]["categoryId"]["format"] == "int64"
    assert set(components["Error"]["required"]) == {"code", "message", "status"}
    pet = schemas.schema_validator("Pet")
    assert pet.is_valid({"id": 1, "name": "Rex", "categoryId": 2, "status": "sold"})
    assert not pet.is_valid({"name": "Rex", "categoryId": 2})  # id is required
    limit = next(
        p["schema"] for p in served["paths"]["/pets"]["get"]["parameters"] if p["name"] == "limit"
    )
    assert (limit["minimum"], limit["maximum"], limit["default"]) == (1, 100, 20)


def test_every_operation_declares_401_429_and_the_rate_headers(served: dict[str, Any]) -> None:
    for method, path in OPERATIONS.values():
        responses = served["paths"][path][method]["responses"]
        assert {"401", "429"} <= set(responses), (method, path)
        for status, response in responses.items():
            headers = set(_resolve(served, response).get("headers", {}))
            assert headers >= RATE_HEADERS, (method, path, status)
        too_many = _resolve(served, responses["429"])
        assert "Retry-After" in too_many["headers"]
        error = too_many["content"]["application/json"]["schema"]["$ref"]
        assert error.endswith("/Error")


def test_every_status_the_mock_can_answer_is_listed_with_an_error_body() -> None:
    # The statuses each operation can meet (from the Error codes that apply to
    # it) are all in the document, each error one with the Error schema.
    from mockstore.reports.coverage import expected_responses

    document = schemas.openapi_document()
    for op in schemas.operations().values():
        listed = document["paths"][op.path][op.method.lower()]["responses"]
        for status in expected_responses(op):
            assert str(status) in listed, f"{op.operation_id} can answer {status}"
            if status >= 400:
                answer = _resolve(document, listed[str(status)])
                schema = answer["content"]["application/json"]["schema"]
                assert schema == {"$ref": "#/components/schemas/Error"}


def test_the_created_pet_links_to_get_pet() -> None:
    create = schemas.openapi_document()["paths"]["/pets"]["post"]["responses"]["201"]
    link = create["links"]["GetCreatedPet"]
    assert link["operationId"] == "getPet"
    assert link["parameters"] == {"petId": "$response.body#/id"}
