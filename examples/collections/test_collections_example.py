"""What a client of the provider in examples/scenarios/collections.yaml sees (run with pytest)."""

from pathlib import Path

import httpx
import pytest

SCENARIO = str(Path(__file__).resolve().parent.parent / "scenarios" / "collections.yaml")
KEY = {"Authorization": "Bearer docs-key"}
pytestmark = pytest.mark.mockstore_scenario(SCENARIO)


def names(response):
    return [pet["name"] for pet in response.json()]


def test_pages_follow_the_link_header(mockstore):
    first = httpx.get(mockstore.url + "/pets?limit=2", headers=KEY)
    assert names(first) == ["apollo", "Bella"]  # by name, in any case
    assert first.headers["X-Total-Count"] == "5"
    following = first.links["next"]["url"]  # /v1/pets?limit=2&cursor=...
    assert "/v1/pets?limit=2&cursor=" in following
    second = httpx.get(httpx.URL(mockstore.url).join(following), headers=KEY)
    assert names(second) == ["bob", "rex"]
    assert set(second.links) == {"next", "prev", "first", "last"}


def test_a_cursor_the_mock_did_not_make_is_refused(mockstore):
    refused = httpx.get(mockstore.url + "/pets?cursor=made-up", headers=KEY)
    assert refused.status_code == 422  # behaviour.validation_status
    assert refused.json()["code"] == "invalid_parameter"


def test_the_status_filter_reads_any_case(mockstore):
    sold = httpx.get(mockstore.url + "/pets?status=SOLD", headers=KEY)
    assert names(sold) == ["Bella", "bob"]


def test_a_default_is_applied_when_the_pet_is_read(mockstore):
    created = httpx.post(mockstore.url + "/pets", json={"name": "Nala", "categoryId": "7"},
                         headers=KEY)  # fmt: skip
    assert created.status_code == 201
    assert created.json() == {"id": 6, "name": "Nala", "categoryId": 7}  # "7" read as 7
    read = httpx.get(mockstore.url + "/pets/6", headers=KEY)
    assert read.json()["status"] == "available"


def test_names_are_limited_and_unknown_fields_kept(mockstore):
    long = httpx.post(mockstore.url + "/pets", json={"name": "N" * 65, "categoryId": 1},
                      headers=KEY)  # fmt: skip
    assert (long.status_code, long.json()["code"]) == (422, "NAME_TOO_LONG")
    kept = httpx.post(mockstore.url + "/pets", json={"name": "Kiwi", "categoryId": 1, "age": 3},
                      headers=KEY)  # fmt: skip
    assert kept.json()["age"] == 3


@pytest.mark.mockstore_scenario(
    "version: 1\n"
    "keys: [{key: docs-key, plan: pro}]\n"
    "pets: [{id: 1, name: a, categoryId: 3}, {id: 2, name: b, categoryId: 1},"
    " {id: 3, name: c, categoryId: 2}]\n"
    "collections:\n"
    "  pagination: {style: page, links: [next, last], link_urls: absolute}\n"
    "  order: {by: categoryId, direction: descending}\n"
)
def test_numbered_pages_with_absolute_links(mockstore):
    first = httpx.get(mockstore.url + "/pets?limit=2", headers=KEY)
    assert names(first) == ["a", "c"]
    assert first.links["next"]["url"] == mockstore.url + "/pets?limit=2&page=2"
    assert names(httpx.get(first.links["last"]["url"], headers=KEY)) == ["b"]
