"""The OpenAPI document: a valid OpenAPI 3.1 transcription of the spec, served without a key."""

from __future__ import annotations

from typing import Any

import pytest
from openapi_spec_validator import validate
from starlette.testclient import TestClient

from mockstore import schemas

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
    assert served == schemas.openapi_document()


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
