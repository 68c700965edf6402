"""Every operation of the Pet Store over real HTTP, against a uvicorn process.

The server here is this module's own (not the session one), so other test
files cannot change its store or spend its keys' allowance. The tests that
need many pets start a server of their own.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from mockstore import schemas
from tests.support import LiveServer, assert_conforms, auth, mock_server

STATUSES: list[str] = schemas.openapi_document()["components"]["schemas"]["PetStatus"]["enum"]
# The limit's bounds and default, as the OpenAPI document states them.
LIMIT = next(p.schema for p in schemas.operations()["listPets"].parameters if p.name == "limit")


@pytest.fixture(scope="module")
def api() -> Iterator[LiveServer]:
    with mock_server() as running:
        yield running


@pytest.fixture
def http(api: LiveServer) -> Iterator[httpx.Client]:
    with api.client(headers=auth("pro")) as client:
        yield client


def _all_pets(server: LiveServer) -> list[dict[str, Any]]:
    """Every stored pet, through the control API (which spends no allowance)."""
    response = httpx.get(server.url + "/__mockstore/pets", timeout=10)
    assert response.status_code == 200
    return response.json()


def _create(http: httpx.Client, pet: dict[str, Any]) -> dict[str, Any]:
    response = http.post("/v1/pets", json=pet)
    assert response.status_code == 201, response.text
    return assert_conforms(response)


# -- listPets -------------------------------------------------------------


def test_list_pets_is_json_array_of_pets_in_id_order(http: httpx.Client) -> None:
    response = http.get("/v1/pets")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    pets = assert_conforms(response)
    ids = [p["id"] for p in pets]
    assert ids == sorted(ids)
    assert ids[:20] == list(range(1, 21)), "the default scenario's 20 pets come first"


def test_list_pets_honours_limit(http: httpx.Client) -> None:
    for limit in (1, 5, 19):
        response = http.get("/v1/pets", params={"limit": limit})
        pets = assert_conforms(response)
        assert [p["id"] for p in pets] == list(range(1, limit + 1))


@pytest.mark.parametrize("status", STATUSES)
def test_list_pets_filters_by_status(api: LiveServer, http: httpx.Client, status: str) -> None:
    response = http.get("/v1/pets", params={"status": status, "limit": 100})
    pets = assert_conforms(response)
    assert pets, f"the default scenario has {status} pets"
    assert all(p["status"] == status for p in pets)
    expected = [p for p in _all_pets(api) if p.get("status") == status][:100]
    assert pets == expected


def test_list_pets_filter_and_limit_together(api: LiveServer, http: httpx.Client) -> None:
    response = http.get("/v1/pets", params={"status": "available", "limit": 3})
    pets = assert_conforms(response)
    expected = [p for p in _all_pets(api) if p.get("status") == "available"][:3]
    assert pets == expected and len(pets) == 3


def test_default_limit_and_maximum_with_many_pets() -> None:
    """With more than 100 pets: no limit gives the default (20), 100 gives 100, ids ascend."""
    with mock_server() as server, server.client(headers=auth("business")) as http:
        for index in range(90):
            _create(http, {"name": f"pet {index}", "categoryId": index % 7})
        assert len(_all_pets(server)) == 110
        response = http.get("/v1/pets")
        pets = assert_conforms(response)
        assert len(pets) == LIMIT["default"] == 20
        assert [p["id"] for p in pets] == list(range(1, 21))
        response = http.get("/v1/pets", params={"limit": LIMIT["maximum"]})
        pets = assert_conforms(response)
        assert len(pets) == 100
        assert pets == _all_pets(server)[:100]
        response = http.get("/v1/pets", params={"limit": LIMIT["maximum"] + 1})
        assert response.status_code == 400
        assert assert_conforms(response)["code"] == "invalid_parameter"


# -- createPet ------------------------------------------------------------


def test_create_pet_returns_201_with_the_stored_pet(api: LiveServer, http: httpx.Client) -> None:
    before = {p["id"] for p in _all_pets(api)}
    pet = _create(http, {"name": "Nova", "categoryId": 9, "status": "sold"})
    assert pet["id"] not in before
    assert pet["id"] > max(before)
    assert {k: v for k, v in pet.items() if k != "id"} == {
        "name": "Nova",
        "categoryId": 9,
        "status": "sold",
    }
    # Listed afterwards, through the API, exactly as returned.
    listed = assert_conforms(http.get("/v1/pets", params={"status": "sold", "limit": 100}))
    assert pet in listed
    fetched = http.get(f"/v1/pets/{pet['id']}")
    assert assert_conforms(fetched) == pet


def test_create_pet_without_status_has_no_status_field(api: LiveServer, http: httpx.Client) -> None:
    pet = _create(http, {"name": "Plain", "categoryId": 2})
    assert "status" not in pet
    assert set(pet) == {"id", "name", "categoryId"}
    fetched = assert_conforms(http.get(f"/v1/pets/{pet['id']}"))
    assert fetched == pet
    assert pet in _all_pets(api)
    # A pet without status is in no status listing.
    for status in STATUSES:
        listed = assert_conforms(http.get("/v1/pets", params={"status": status, "limit": 100}))
        assert pet["id"] not in {p["id"] for p in listed}


def test_ids_increase_and_are_never_reused(api: LiveServer, http: httpx.Client) -> None:
    ids = [_create(http, {"name": f"n{i}", "categoryId": i})["id"] for i in range(5)]
    assert ids == sorted(set(ids))
    # A refused create in between does not bring an id back.
    refused = http.post("/v1/pets", json={"name": "x"})
    assert refused.status_code == 400
    assert_conforms(refused)
    after = _create(http, {"name": "after", "categoryId": 1})["id"]
    assert after > ids[-1]
    every_id = [p["id"] for p in _all_pets(api)]
    assert len(every_id) == len(set(every_id))


def test_an_integral_number_is_an_integer_and_is_stored_as_one(http: httpx.Client) -> None:
    # OpenAPI 3.1 is JSON Schema 2020-12, where 7.0 is an integer: the document
    # accepts it, so the mock does, and a Pet's categoryId comes back as 7.
    response = http.post(
        "/v1/pets",
        content=b'{"name": "Seven", "categoryId": 7.0, "status": "sold"}',
        headers={"Content-Type": "application/json"},
    )
    assert response.status_code == 201, response.text
    assert b'"categoryId":7,' in response.content
    created = assert_conforms(response)
    fetched = http.get(f"/v1/pets/{created['id']}")
    assert fetched.json()["categoryId"] == 7 and isinstance(fetched.json()["categoryId"], int)


# -- getPet ---------------------------------------------------------------


def test_get_pet_returns_the_pet(http: httpx.Client) -> None:
    response = http.get("/v1/pets/1")
    assert response.status_code == 200
    assert assert_conforms(response) == {
        "id": 1,
        "name": "Rex",
        "categoryId": 1,
        "status": "available",
    }


@pytest.mark.parametrize("pet_id", ["0", "999999", str(schemas.INT64_MAX)])
def test_get_unknown_pet_is_404(http: httpx.Client, pet_id: str) -> None:
    response = http.get(f"/v1/pets/{pet_id}")
    assert response.status_code == 404
    body = assert_conforms(response)
    assert body["code"] == "not_found"
    assert pet_id in body["message"]


# -- the rest of the surface ----------------------------------------------


def test_store_orders_is_501_after_auth(api: LiveServer, http: httpx.Client) -> None:
    response = http.get("/v1/store/orders")
    assert response.status_code == 501
    assert assert_conforms(response)["code"] == "not_implemented"
    with api.client() as anonymous:
        response = anonymous.get("/v1/store/orders")
    assert response.status_code == 401
    assert assert_conforms(response)["code"] == "unauthorized"


@pytest.mark.parametrize("path", ["/v1/nothing", "/v1/pets/1/photos", "/v1/pets/", "/v2/pets", "/"])
def test_unknown_path_is_404(http: httpx.Client, path: str) -> None:
    response = http.get(path)
    assert response.status_code == 404
    assert assert_conforms(response)["code"] == "not_found"


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("DELETE", "/v1/pets", {"GET", "HEAD", "POST"}),
        ("PUT", "/v1/pets", {"GET", "HEAD", "POST"}),
        ("PATCH", "/v1/pets/1", {"GET", "HEAD"}),
        ("DELETE", "/v1/pets/1", {"GET", "HEAD"}),
        ("POST", "/v1/pets/1", {"GET", "HEAD"}),
        ("POST", "/v1/store/orders", {"GET", "HEAD"}),
    ],
)
def test_wrong_method_is_405_with_allow(
    http: httpx.Client, method: str, path: str, allow: set[str]
) -> None:
    response = http.request(method, path)
    assert response.status_code == 405
    assert assert_conforms(response)["code"] == "method_not_allowed"
    assert {m.strip() for m in response.headers["allow"].split(",")} == allow


def test_openapi_document_is_served_without_a_key(api: LiveServer) -> None:
    response = httpx.get(api.url + "/__mockstore/openapi.json", timeout=10)
    assert response.status_code == 200
    served = response.json()
    assert served["servers"] == [{"url": api.api, "description": "This mockstore server"}]
    assert served["paths"] == schemas.openapi_document()["paths"]
