"""The coverage report: documented responses met and never met, per operation."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

from mockstore import schemas
from mockstore.app import create_app
from mockstore.clock import Clock
from mockstore.errors import ERROR_CODES
from mockstore.reports.coverage import APPLIES, NOT_PER_OPERATION, expected_responses
from mockstore.scenario import load_scenario
from tests.support import assert_conforms, auth

START = 1772366430.0  # 2026-03-01T12:00:30Z


def _coverage(client: TestClient) -> dict[str, Any]:
    response = client.get("/__mockstore/report")
    assert response.status_code == 200
    return response.json()["coverage"]


def _responses(coverage: dict[str, Any], operation: str) -> dict[int, dict[str, Any]]:
    (op,) = [o for o in coverage["operations"] if o["operation"] == operation]
    return {r["status"]: r for r in op["responses"]}


def test_every_error_code_is_placed() -> None:
    assert set(APPLIES) | set(NOT_PER_OPERATION) == set(ERROR_CODES)
    assert not set(APPLIES) & set(NOT_PER_OPERATION)


def test_documented_statuses_come_from_the_openapi_document() -> None:
    document = schemas.openapi_document()["paths"]
    for op in schemas.operations().values():
        listed = {int(s) for s in document[op.path][op.method.lower()]["responses"] if s.isdigit()}
        expected = expected_responses(op)
        assert {s for s, spec in expected.items() if spec["documented"]} == listed - op.assumed
        assert listed <= set(expected), "every status the document lists is expected"
        # Every status the mock adds is an ERROR_CODES status, with its codes named.
        for status, spec in expected.items():
            for code in spec["codes"]:
                assert ERROR_CODES[code].status == status
            if not spec["documented"]:
                assert spec["codes"], f"{op.operation_id} {status} has no reason to be listed"


def test_what_the_mock_adds_per_operation() -> None:
    ops = schemas.operations()
    list_pets = expected_responses(ops["listPets"])
    assert list_pets[400] == {"documented": False, "codes": ["invalid_parameter"]}
    assert 410 not in list_pets and 413 not in list_pets
    get_pet = expected_responses(ops["getPet"])
    assert get_pet[410]["codes"] == ["gone"] and get_pet[400]["codes"] == ["invalid_parameter"]
    create = expected_responses(ops["createPet"])
    assert set(create[400]["codes"]) == {"malformed_json", "missing_body", "validation_failed"}
    assert create[429]["documented"] and set(create[429]["codes"]) == {"rate_limited", "key_banned"}


def test_a_fresh_journal_met_nothing(client: TestClient) -> None:
    coverage = _coverage(client)
    assert coverage["documented"]["met"] == 0
    assert "createPet 429" in coverage["never_met"]
    assert len(coverage["never_met"]) == coverage["documented"]["total"]


def test_met_and_never_met_follow_the_traffic(client: TestClient) -> None:
    assert_conforms(client.get("/v1/pets", headers=auth("pro")))
    assert_conforms(client.get("/v1/pets", params={"limit": 0}, headers=auth("pro")))
    assert_conforms(
        client.post("/v1/pets", json={"name": "A", "categoryId": 1}, headers=auth("pro"))
    )
    assert_conforms(client.post("/v1/pets", json={"name": "A"}, headers=auth("pro")))
    assert_conforms(
        client.post(
            "/v1/pets", content=b"{", headers={**auth("pro"), "content-type": "application/json"}
        )
    )
    assert_conforms(client.get("/v1/pets/77", headers=auth("pro")))
    assert_conforms(client.get("/v1/pets/1"))

    coverage = _coverage(client)
    listing = _responses(coverage, "listPets")
    assert listing[200]["met"] == 1
    assert listing[400] == {
        "status": 400,
        "documented": False,
        "met": 1,
        "codes": {"invalid_parameter": 1},
        "codes_never_met": [],
    }
    create = _responses(coverage, "createPet")
    assert create[201]["met"] == 1
    assert create[400]["codes"] == {"validation_failed": 1, "malformed_json": 1}
    assert create[400]["codes_never_met"] == ["missing_body"]
    assert create[429]["met"] == 0
    get_pet = _responses(coverage, "getPet")
    assert get_pet[404]["met"] == 1 and get_pet[401]["met"] == 1
    assert "createPet 429" in coverage["never_met"]
    assert "getPet 404" not in coverage["never_met"]
    assert "listPets 401" in coverage["never_met"]
    assert "getPet 410" in coverage["possible_never_met"]


@pytest.fixture
def tight() -> Iterator[TestClient]:
    text = """
version: 1
keys: [{key: tight-key, plan: {per_minute: 1, per_day: 100}}]
faults:
  - match: {operation: listPets, calls: [1]}
    respond: {status: 503, body: {code: unavailable, message: down, status: 503}}
routes:
  - method: GET
    path: /health
    respond: {status: 200, body: {ok: true}}
"""
    scenario = load_scenario(text, "tight.yaml")
    app = create_app(scenario, clock=Clock(start=START, mode="manual"))
    with TestClient(app) as client:
        yield client


def test_a_429_on_create_and_410_after_sunset_are_counted(tight: TestClient) -> None:
    key = auth("tight-key")
    assert_conforms(tight.post("/v1/pets", json={"name": "A", "categoryId": 1}, headers=key))
    limited = tight.post("/v1/pets", json={"name": "B", "categoryId": 1}, headers=key)
    assert limited.status_code == 429
    assert_conforms(limited)
    assert tight.post("/__mockstore/clock", json={"set": "2030-12-05T00:00:01Z"}).status_code == 200
    gone = tight.get("/v1/pets/1", headers=key)
    assert gone.status_code == 410
    assert_conforms(gone)

    coverage = _coverage(tight)
    assert _responses(coverage, "createPet")[429]["codes"] == {"rate_limited": 1}
    assert "createPet 429" not in coverage["never_met"]
    assert _responses(coverage, "getPet")[410]["met"] == 1


def test_unexpected_statuses_and_other_operations_are_listed(tight: TestClient) -> None:
    key = auth("tight-key")
    failed = tight.get("/v1/pets", headers=key)
    assert failed.status_code == 503
    assert_conforms(failed)
    tight.post("/__mockstore/clock", json={"advance_seconds": 60})
    assert tight.get("/v1/health", headers=key).status_code == 200
    tight.post("/__mockstore/clock", json={"advance_seconds": 60})
    orders = tight.get("/v1/store/orders", headers=key)
    assert orders.status_code == 501
    assert_conforms(orders)

    coverage = _coverage(tight)
    (listing,) = [o for o in coverage["operations"] if o["operation"] == "listPets"]
    assert listing["unexpected"] == [{"status": 503, "met": 1, "codes": {"unavailable": 1}}]
    assert listing["requests"] == 1
    other = {o["operation"]: o["statuses"] for o in coverage["other"]}
    assert other == {"GET /health": {"200": 1}}
    (orders_coverage,) = [o for o in coverage["operations"] if o["operation"] == "listOrders"]
    assert {r["status"]: r["met"] for r in orders_coverage["responses"]}[501] == 1
