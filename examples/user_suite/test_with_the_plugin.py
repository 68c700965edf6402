"""A pytest suite that uses the mockstore plugin: install mockstore, then run `pytest`."""

import httpx
import pytest


def auth(key):
    return {"Authorization": f"Bearer {key}"}


def test_lists_pets(mockstore):
    key = mockstore.key("free")  # a fresh key: its counters are its own
    response = httpx.get(mockstore.url + "/pets", headers=auth(key))
    assert response.status_code == 200
    assert mockstore.verify("listPets", count=1).count == 1  # only this test's requests


@pytest.mark.mockstore_scenario("flaky-create")  # a bundled name, a path, or YAML text
def test_retries_a_failed_create(mockstore):
    statuses = []
    for name in ("Rex", "Bella", "Max"):
        response = httpx.post(
            mockstore.url + "/pets", json={"name": name, "categoryId": 1}, headers=auth("pro-key")
        )
        statuses.append(response.status_code)
    assert statuses == [201, 201, 503]  # every third create fails
    assert response.headers["Retry-After"] == "2"
    mockstore.advance(2)  # the scenario clock, not a sleep
    retried = httpx.post(
        mockstore.url + "/pets", json={"name": "Max", "categoryId": 1}, headers=auth("pro-key")
    )
    assert retried.status_code == 201
