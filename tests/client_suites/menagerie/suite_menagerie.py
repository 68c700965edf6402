"""What a client of Menagerie depends on, from its documentation (tests/upstream/menagerie.py).

Keys: ``main`` on ``pro``; ``tight`` and ``developer-1`` .. ``developer-6`` on ``developer``
(12 a clock minute, 40 a UTC day). The store holds at least 25 pets.
"""

from __future__ import annotations

import re
import time
import uuid
from datetime import datetime

import httpx
import pytest

from tests.client_suites.client import BASE, api, error, fresh_address, http_date, until

DOCS = "https://developer.menagerie.example/errors/"
READ_CACHE = "private, max-age=10"


def throttle(client: httpx.Client) -> list[httpx.Response]:
    return until(
        lambda: client.get("/pets", params={"limit": 1}), lambda a: a.status_code != 200, 30
    )


# -- answers ----------------------------------------------------------------------------


def test_every_answer_has_a_correlation_uuid_and_a_valid_one_sent_is_kept() -> None:
    mine = str(uuid.uuid4())
    with api("main", X_Correlation_Id=mine) as client:
        kept = client.get("/pets", params={"limit": 1})
    with api("main", X_Correlation_Id="not-a-uuid") as client:
        fresh = client.get("/pets", params={"limit": 1})
    assert kept.headers["x-correlation-id"] == mine
    assert (
        uuid.UUID(fresh.headers["x-correlation-id"]) and fresh.headers["x-correlation-id"] != mine
    )


def test_bodies_are_json_in_utf_8() -> None:
    with api("main") as client:
        answer = client.get("/pets", params={"limit": 1})
    assert answer.headers["content-type"] == "application/json;charset=UTF-8"


def test_reads_may_be_cached_ten_seconds_and_nothing_else_may() -> None:
    with api("main") as client:
        read = client.get("/pets", params={"limit": 1})
        created = client.post("/pets", json={"name": "Oryx", "categoryId": 1})
        refused = client.get("/pets", params={"limit": 0})
    assert read.headers["cache-control"] == READ_CACHE
    assert created.headers["cache-control"] == "no-store"
    assert refused.headers["cache-control"] == "no-store"


def test_every_error_has_a_timestamp_and_its_documentation() -> None:
    with api("main") as client:
        body = error(client.get("/pets/123"))
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", body["timestamp"])
    assert body["documentation"] == DOCS + body["code"]


# -- the catalogue ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("limit", "status", "code"),
    [
        ("x", 400, "InvalidLimit"),
        ("0", 422, "LimitBelowMinimum"),
        ("101", 422, "LimitAboveMaximum"),
    ],
)
def test_each_bad_limit_has_its_own_refusal(limit: str, status: int, code: str) -> None:
    with api("main") as client:
        answer = client.get("/pets", params={"limit": limit})
    assert answer.status_code == status and error(answer)["code"] == code


def test_an_unknown_status_filter_is_400() -> None:
    with api("main") as client:
        answer = client.get("/pets", params={"status": "lost"})
    assert answer.status_code == 400 and error(answer)["code"] == "InvalidStatus"


def test_a_parameter_given_twice_takes_the_first_value() -> None:
    with api("main") as client:
        answer = client.get("/pets?limit=2&limit=5")
    assert len(answer.json()) == 2


def test_pets_are_listed_in_the_order_they_arrived() -> None:
    with api("main") as client:
        first = client.post("/pets", json={"name": "Saiga", "categoryId": 1}).json()
        second = client.post("/pets", json={"name": "Dik-dik", "categoryId": 1}).json()
        pets = client.get("/pets", params={"limit": 100}).json()
    ids = [pet["id"] for pet in pets]
    assert ids.index(first["id"]) < ids.index(second["id"])
    assert all(0 < pet_id < 2**53 for pet_id in ids)


# -- creating ---------------------------------------------------------------------------


def test_a_created_pet_is_at_an_absolute_url_on_the_called_address() -> None:
    with api("main") as client:
        answer = client.post("/pets", json={"name": "Gerenuk", "categoryId": 2})
        pet = answer.json()
        assert answer.status_code == 201
        assert answer.headers["location"] == f"{BASE}/pets/{pet['id']}"
        fetched = client.get(answer.headers["location"])
    assert fetched.json()["name"] == "Gerenuk"


def test_a_pet_created_without_a_status_has_none() -> None:
    with api("main") as client:
        pet = client.post("/pets", json={"name": "Bongo", "categoryId": 2}).json()
        read = client.get(f"/pets/{pet['id']}").json()
    assert "status" not in pet and "status" not in read


def test_unknown_fields_are_kept_and_an_id_is_ignored() -> None:
    with api("main") as client:
        answer = client.post("/pets", json={"name": "Kudu", "categoryId": 2, "id": 5, "horns": 2})
    pet = answer.json()
    assert pet["horns"] == 2 and pet["id"] != 5


def test_a_category_of_7_0_is_7() -> None:
    with api("main") as client:
        answer = client.post("/pets", json={"name": "Eland", "categoryId": 7.0})
    assert answer.status_code == 201 and answer.json()["categoryId"] == 7


def test_a_body_without_content_type_is_read_as_json() -> None:
    with api("main") as client:
        answer = client.post("/pets", content=b'{"name": "Nyala", "categoryId": 1}')
    assert answer.status_code == 201


@pytest.mark.parametrize(
    ("content", "media", "status", "code"),
    [
        (b'{"name": "Impala", "categoryId": 1}', "text/plain", 415, "UnsupportedMediaType"),
        (b"", "application/json", 400, "EmptyRequestBody"),
        (b"{nope", "application/json", 400, "MalformedJson"),
        (b'{"name": 5, "categoryId": 1}', "application/json", 400, "ValidationFailed"),
    ],
)
def test_bodies_are_refused_each_with_its_code(
    content: bytes, media: str, status: int, code: str
) -> None:
    with api("main") as client:
        answer = client.post("/pets", content=content, headers={"Content-Type": media})
    assert answer.status_code == status and error(answer)["code"] == code


def test_a_body_over_32_kib_is_413() -> None:
    big = b'{"name": "' + b"a" * 40_000 + b'", "categoryId": 1}'
    with api("main") as client:
        answer = client.post("/pets", content=big, headers={"Content-Type": "application/json"})
    assert answer.status_code == 413 and error(answer)["code"] == "PayloadTooLarge"


# -- one pet, the deprecation -----------------------------------------------------------


@pytest.mark.parametrize("role", ["main", None])
def test_every_answer_on_get_pet_announces_the_deprecation(role: str | None) -> None:
    with api(role) as client:
        answer = client.get("/pets/123")
    assert answer.headers["deprecation"] == "Mon, 03 Mar 2025 00:00:00 GMT"
    assert answer.headers["sunset"] == "Thu, 05 Dec 2030 09:00:00 GMT"
    assert '</v1/pets>; rel="alternate"' in answer.headers["link"]


def test_a_missing_pet_is_404_and_a_bad_id_400() -> None:
    with api("main") as client:
        missing = client.get("/pets/123")
        bad = client.get("/pets/abc")
    assert missing.status_code == 404 and error(missing)["code"] == "PetNotFound"
    assert bad.status_code == 400 and error(bad)["code"] == "InvalidPetId"


def test_head_is_served_on_one_pet_and_the_orders_but_not_the_list() -> None:
    with api("main") as client:
        listed = client.get("/pets", params={"limit": 1}).json()
        one = client.head(f"/pets/{listed[0]['id']}")
        orders = client.head("/store/orders")
        collection = client.head("/pets")
    assert one.status_code == 200 and orders.status_code == 200
    assert collection.status_code == 405 and collection.headers["allow"] == "GET, POST"


def test_the_store_has_no_orders_yet() -> None:
    with api("main") as client:
        answer = client.get("/store/orders")
    assert answer.status_code == 200 and answer.json() == []


# -- keys and routes --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("authorization", "code"),
    [
        (None, "MissingApiKey"),
        ("Basic dXNlcjpwYXNz", "MalformedAuthorization"),
        ("Bearer nobody", "InvalidApiKey"),
    ],
)
def test_each_way_of_lacking_a_key_is_401_without_a_challenge(
    authorization: str | None, code: str
) -> None:
    headers = {"Authorization": authorization} if authorization else {}
    with api(**headers) as client:
        answer = client.get("/pets")
    assert answer.status_code == 401 and error(answer)["code"] == code
    assert "www-authenticate" not in answer.headers


def test_without_a_key_even_an_unknown_path_is_401() -> None:
    with api() as client:
        answer = client.get("/nowhere")
    assert answer.status_code == 401


@pytest.mark.parametrize("path", ["/nowhere", "/pets/"])
def test_an_unknown_path_is_404_resource_not_found(path: str) -> None:
    with api("main") as client:
        answer = client.get(path)
    assert answer.status_code == 404 and error(answer)["code"] == "ResourceNotFound"


def test_a_wrong_method_is_405_with_allow() -> None:
    with api("main") as client:
        answer = client.delete("/pets")
    assert answer.status_code == 405 and error(answer)["code"] == "MethodNotAllowed"
    assert answer.headers["allow"] == "GET, POST"


# -- rate limits ------------------------------------------------------------------------


def test_the_rate_limit_headers_describe_the_day_and_the_burst_the_minute() -> None:
    with api("developer-1") as client:
        answer = client.get("/pets", params={"limit": 1})
    assert answer.headers["x-ratelimit-limit"] == "40"
    assert answer.headers["x-ratelimit-remaining"] == "39"
    assert int(answer.headers["x-ratelimit-reset"]) % 86400 == 0  # UTC midnight
    assert answer.headers["x-ratelimit-burst-limit"] == "12"
    assert 1 <= int(answer.headers["x-ratelimit-burst-reset"]) <= 60


def test_over_the_minute_is_429_until_an_http_date_at_the_minute() -> None:
    with api("developer-2") as client:
        refused = throttle(client)[-1]
    assert refused.status_code == 429 and error(refused)["code"] == "TooManyRequests"
    at = http_date(refused.headers["retry-after"])
    assert at % 60 == 0 and 0 < at - time.time() <= 61


def test_a_refused_request_consumes_nothing_of_the_day() -> None:
    with api("developer-3") as client:
        refused = throttle(client)[-1]
        again = client.get("/pets", params={"limit": 1})
    # The day's count moves only for an admitted request (the minute may have turned).
    spent = 1 if again.status_code == 200 else 0
    left = int(refused.headers["x-ratelimit-remaining"])
    assert int(again.headers["x-ratelimit-remaining"]) == left - spent


def test_six_refusals_within_30_seconds_suspend_the_key_403() -> None:
    with api("developer-4") as client:
        answers = until(
            lambda: client.get("/pets", params={"limit": 1}), lambda a: a.status_code == 403, 40
        )
    suspended = answers[-1]
    assert error(suspended)["code"] == "ApiKeySuspended"
    assert [a.status_code for a in answers].count(429) >= 6
    assert (
        suspended.headers["retry-after"].isdigit()
        and 1 <= int(suspended.headers["retry-after"]) <= 90
    )
    assert suspended.headers["x-ratelimit-burst-remaining"] == "0"


def test_callers_without_a_key_get_five_a_minute_per_address() -> None:
    with api(source=fresh_address()) as client:
        answers = until(lambda: client.get("/pets"), lambda a: a.status_code == 429, 20)
    assert set(a.status_code for a in answers[:-1]) == {401}
    assert 5 <= len(answers) - 1 <= 10


def test_the_day_ends_at_utc_midnight() -> None:
    with api("main") as client:
        answer = client.get("/pets", params={"limit": 1})
    reset = datetime.fromtimestamp(int(answer.headers["x-ratelimit-reset"]))
    assert 0 < int(answer.headers["x-ratelimit-reset"]) - time.time() <= 86400
    assert reset.timestamp() % 86400 == 0
