"""What a client of the stand-in Pet Store depends on, from its documentation
(tests/upstream/petstore_standin.py).

Keys: ``main`` on ``starter`` (100 a minute); ``tight`` and ``trial-1`` .. ``trial-6`` on
``trial`` (5 a UTC minute, 50 a UTC day). The store starts with pets 101 to 104.
"""

from __future__ import annotations

import re
import time

import httpx
import pytest

from tests.client_suites.client import api, error, fresh_address, http_date, until

REALM = 'Bearer realm="petstore-staging"'


def throttle(client: httpx.Client) -> list[httpx.Response]:
    return until(lambda: client.get("/pets/101"), lambda a: a.status_code == 429, 15)


# -- the catalogue ----------------------------------------------------------------------


def test_pets_are_listed_by_ascending_id() -> None:
    with api("main") as client:
        pets = client.get("/pets").json()
    ids = [pet["id"] for pet in pets]
    assert ids[:4] == [101, 102, 103, 104] and ids == sorted(ids)


@pytest.mark.parametrize(
    "query", ["limit=0", "limit=101", "limit=ten", "status=lost", "limit=1&limit=2"]
)
def test_a_bad_query_is_422_invalid_query_parameter(query: str) -> None:
    with api("main") as client:
        answer = client.get(f"/pets?{query}")
    assert answer.status_code == 422 and error(answer)["code"] == "INVALID_QUERY_PARAMETER"


def test_the_limit_caps_the_page() -> None:
    with api("main") as client:
        answer = client.get("/pets", params={"limit": 2})
    assert answer.status_code == 200 and [pet["id"] for pet in answer.json()] == [101, 102]


def test_the_status_filter_keeps_that_status() -> None:
    with api("main") as client:
        pets = client.get("/pets", params={"status": "sold"}).json()
    assert pets and {pet["status"] for pet in pets} == {"sold"}


# -- creating ---------------------------------------------------------------------------


def test_a_created_pet_is_available_unless_told_and_has_no_location() -> None:
    with api("main") as client:
        answer = client.post("/pets", json={"name": "Mango", "categoryId": 1})
    assert answer.status_code == 201 and answer.json()["status"] == "available"
    assert "location" not in answer.headers


def test_a_created_pet_can_be_fetched_by_its_id() -> None:
    with api("main") as client:
        created = client.post("/pets", json={"name": "Fennel", "categoryId": 4, "status": "sold"})
        fetched = client.get(f"/pets/{created.json()['id']}")
    assert fetched.status_code == 200 and fetched.json() == created.json()


def test_unknown_fields_are_stored_and_returned() -> None:
    with api("main") as client:
        answer = client.post("/pets", json={"name": "Kiwi", "categoryId": 1, "colour": "green"})
        read = client.get(f"/pets/{answer.json()['id']}")
    assert answer.json()["colour"] == "green" and read.json()["colour"] == "green"


@pytest.mark.parametrize(
    ("content", "code"),
    [(b'{"name": 5, "categoryId": 1}', "VALIDATION_ERROR"), (b"{nope", "MALFORMED_JSON")],
)
def test_a_body_that_fails_validation_is_422(content: bytes, code: str) -> None:
    with api("main") as client:
        answer = client.post("/pets", content=content, headers={"Content-Type": "application/json"})
    assert answer.status_code == 422 and error(answer)["code"] == code


def test_a_body_of_another_media_type_is_415() -> None:
    with api("main") as client:
        answer = client.post("/pets", content=b"x", headers={"Content-Type": "text/plain"})
    assert answer.status_code == 415 and error(answer)["code"] == "UNSUPPORTED_MEDIA_TYPE"


def test_a_body_over_64_kib_is_413() -> None:
    big = b'{"name": "' + b"a" * 70_000 + b'", "categoryId": 1}'
    with api("main") as client:
        answer = client.post("/pets", content=big, headers={"Content-Type": "application/json"})
    assert answer.status_code == 413 and error(answer)["code"] == "PAYLOAD_TOO_LARGE"


# -- one pet ----------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/pets/101", "/pets/999", "/pets/abc"])
def test_every_get_pet_answer_announces_the_deprecation(path: str) -> None:
    with api("main") as client:
        answer = client.get(path)
    assert answer.headers["deprecation"] == "@1748736000"
    assert answer.headers["sunset"] == "Thu, 05 Dec 2030 23:59:59 GMT"
    assert answer.headers["link"] == '</v1/pets>; rel="successor-version"'


def test_a_missing_pet_is_404_and_a_bad_id_422() -> None:
    with api("main") as client:
        missing = client.get("/pets/999")
        bad = client.get("/pets/abc")
    assert missing.status_code == 404 and error(missing)["code"] == "PET_NOT_FOUND"
    assert bad.status_code == 422 and error(bad)["code"] == "INVALID_PATH_PARAMETER"


def test_head_is_not_served() -> None:
    with api("main") as client:
        answer = client.head("/pets")
    assert answer.status_code == 405 and answer.headers["allow"] == "GET, POST"


def test_store_orders_is_an_empty_list() -> None:
    with api("main") as client:
        answer = client.get("/store/orders")
    assert answer.status_code == 200 and answer.json() == []


# -- keys and routes --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("authorization", "code", "challenge"),
    [
        (None, "MISSING_API_KEY", REALM),
        ("Bearer nobody-at-all", "INVALID_API_KEY", f'{REALM}, error="invalid_token"'),
        ("Basic dXNlcjpwYXNz", "INVALID_API_KEY", f'{REALM}, error="invalid_token"'),
    ],
)
def test_a_caller_without_a_valid_key_is_401(
    authorization: str | None, code: str, challenge: str
) -> None:
    headers = {"Authorization": authorization} if authorization else {}
    with api(**headers) as client:
        answer = client.get("/pets")
    assert answer.status_code == 401 and error(answer)["code"] == code
    assert answer.headers["www-authenticate"] == challenge


def test_routes_are_checked_before_the_key() -> None:
    with api() as client:
        unknown = client.get("/nowhere")
        wrong = client.delete("/pets")
    assert unknown.status_code == 404 and error(unknown)["code"] == "ROUTE_NOT_FOUND"
    assert wrong.status_code == 405 and error(wrong)["code"] == "METHOD_NOT_ALLOWED"


def test_every_answer_has_a_request_id_of_32_hex_digits() -> None:
    with api("main") as client:
        ids = {client.get("/pets", params={"limit": 1}).headers["x-request-id"] for _ in range(3)}
    assert len(ids) == 3 and all(re.fullmatch(r"[0-9a-f]{32}", i) for i in ids)


# -- rate limits ------------------------------------------------------------------------


def test_the_reset_is_in_seconds_from_now() -> None:
    with api("trial-1") as client:
        answer = client.get("/pets/101")
    assert answer.headers["x-ratelimit-limit"] == "5"
    assert 1 <= int(answer.headers["x-ratelimit-reset"]) <= 60


def test_the_remaining_allowance_counts_down() -> None:
    with api("trial-5") as client:
        first = client.get("/pets/101")
        second = client.get("/pets/101")
    left = int(first.headers["x-ratelimit-remaining"])
    # The minute may turn between the two: then the count starts again.
    assert int(second.headers["x-ratelimit-remaining"]) in (left - 1, 4)


def test_every_answer_carries_the_draft_headers_of_both_windows() -> None:
    with api("trial-2") as client:
        ok = client.get("/pets/101")
        missing = client.get("/pets/999")
    for answer in (ok, missing):
        assert answer.headers["ratelimit-policy"] == '"minute";q=5;w=60, "day";q=50;w=86400'
    minute = re.search(r'"minute";r=(\d+);t=(\d+)', missing.headers["ratelimit"])
    assert minute and minute.group(1) == missing.headers["x-ratelimit-remaining"]


def test_over_the_minute_is_429_until_an_http_date_with_the_wait_in_the_body() -> None:
    with api("trial-3") as client:
        refused = throttle(client)[-1]
    body = error(refused)
    assert body["code"] == "RATE_LIMIT_EXCEEDED"
    at = http_date(refused.headers["retry-after"])
    assert at % 60 == 0 and 0 < at - time.time() <= 61
    assert abs(body["retryAfter"] - (at - time.time())) <= 2


def test_a_client_that_keeps_sending_is_refused_but_never_banned() -> None:
    with api("trial-4") as client:
        throttle(client)
        answers = [client.get("/pets/101") for _ in range(12)]
    codes = {error(a)["code"] for a in answers if a.status_code != 200}
    assert codes <= {"RATE_LIMIT_EXCEEDED"} and codes


def test_callers_without_a_key_get_20_a_minute_per_address() -> None:
    with api(source=fresh_address()) as client:
        answers = until(lambda: client.get("/pets"), lambda a: a.status_code == 429, 45)
    assert set(a.status_code for a in answers[:-1]) == {401}
    assert 20 <= len(answers) - 1 <= 40
