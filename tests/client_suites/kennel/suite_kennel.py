"""What a client of Kennel depends on, from Kennel's documentation (tests/upstream/kennel.py).

Keys: ``main`` on ``pro``; ``tight`` and ``sandbox-1`` .. ``sandbox-8`` on ``sandbox`` (10 a
minute from the first request, 200 a day), one per test that spends an allowance. The store
holds at least 25 pets.
"""

from __future__ import annotations

import re
import time

import httpx
import pytest

from tests.client_suites.client import api, error, fresh_address, http_date, until

TRACE = re.compile(r"^[0-9a-f]{32}$")
REALM = 'Bearer realm="kennel-api"'


def refused(client: httpx.Client) -> list[httpx.Response]:
    return until(lambda: client.get("/pets/1"), lambda a: a.status_code == 429, 15)


# -- the catalogue ----------------------------------------------------------------------


def test_pets_are_listed_newest_first_20_at_a_time() -> None:
    with api("main") as client:
        pets = client.get("/pets").json()
    ids = [pet["id"] for pet in pets]
    assert len(ids) == 20 and ids == sorted(ids, reverse=True)


def test_a_limit_above_100_is_clamped() -> None:
    with api("main") as client:
        answer = client.get("/pets", params={"limit": 500})
    assert answer.status_code == 200 and len(answer.json()) <= 100


@pytest.mark.parametrize("limit", ["0", "abc", "-3"])
def test_a_limit_that_is_not_a_positive_integer_is_422(limit: str) -> None:
    with api("main") as client:
        answer = client.get("/pets", params={"limit": limit})
    assert answer.status_code == 422 and error(answer)["code"] == "query.limit_invalid"


@pytest.mark.parametrize("status", ["lost", ""])
def test_a_status_outside_the_enumeration_is_422(status: str) -> None:
    with api("main") as client:
        answer = client.get("/pets", params={"status": status})
    assert answer.status_code == 422 and error(answer)["code"] == "query.status_invalid"


def test_a_parameter_given_twice_takes_the_last_value() -> None:
    with api("main") as client:
        answer = client.get("/pets?limit=1&limit=3")
    assert len(answer.json()) == 3


# -- creating ---------------------------------------------------------------------------


def test_a_created_pet_waits_as_pending_and_its_location_is_a_path() -> None:
    with api("main") as client:
        answer = client.post("/pets", json={"name": "Rolo", "categoryId": 2})
    pet = answer.json()
    assert answer.status_code == 201 and pet["status"] == "pending"
    assert answer.headers["location"] == f"/v1/pets/{pet['id']}"


@pytest.mark.parametrize("extra", [{"nickname": "R"}, {"id": 7}])
def test_a_field_newpet_does_not_name_is_refused_422(extra: dict) -> None:
    with api("main") as client:
        answer = client.post("/pets", json={"name": "Rolo", "categoryId": 2, **extra})
    assert answer.status_code == 422 and error(answer)["code"] == "body.field_unknown"


@pytest.mark.parametrize("category", [7.0, True, "7"])
def test_integers_are_strict(category: object) -> None:
    with api("main") as client:
        answer = client.post("/pets", json={"name": "Rolo", "categoryId": category})
    assert answer.status_code == 400 and error(answer)["code"] == "body.invalid"


@pytest.mark.parametrize(
    ("content", "media", "status", "code"),
    [
        (b"", "application/json", 400, "body.empty"),
        (b'{"name": "Rolo", "categoryId": 1}', "text/plain", 415, "body.media_type_unsupported"),
        (b"{nope", "application/json", 400, "body.json_malformed"),
        (b'{"name": "Rolo", "categoryId": NaN}', "application/json", 400, "body.json_malformed"),
    ],
)
def test_bodies_are_refused_in_the_documented_order(
    content: bytes, media: str, status: int, code: str
) -> None:
    with api("main") as client:
        answer = client.post("/pets", content=content, headers={"Content-Type": media})
    assert answer.status_code == status and error(answer)["code"] == code


def test_a_body_over_8_kib_is_413() -> None:
    big = b'{"name": "' + b"a" * 9000 + b'", "categoryId": 1}'
    with api("main") as client:
        answer = client.post("/pets", content=big, headers={"Content-Type": "application/json"})
    assert answer.status_code == 413 and error(answer)["code"] == "body.too_large"


# -- one pet ----------------------------------------------------------------------------


def test_a_pet_has_an_etag_and_a_match_or_a_star_is_304() -> None:
    with api("main") as client:
        first = client.get("/pets/1")
        tag = first.headers["etag"]
        again = client.get("/pets/1", headers={"If-None-Match": tag})
        star = client.get("/pets/1", headers={"If-None-Match": "*"})
    assert re.fullmatch(r'"[0-9a-f]{16}"', tag)
    assert first.headers["cache-control"] == "private, no-cache"
    assert again.status_code == 304 and star.status_code == 304
    assert again.headers["etag"] == tag and again.content == b""


def test_get_pet_announces_its_deprecation_on_200_and_304_only() -> None:
    with api("main") as client:
        ok = client.get("/pets/1")
        missing = client.get("/pets/999999")
        not_modified = client.get("/pets/1", headers={"If-None-Match": ok.headers["etag"]})
    for answer in (ok, not_modified):
        assert answer.headers["deprecation"] == "@1726358400"
        assert answer.headers["sunset"] == "Thu, 05 Dec 2030 12:00:00 GMT"
        assert 'rel="deprecation"' in answer.headers["link"]
    assert "deprecation" not in missing.headers and "sunset" not in missing.headers


def test_a_missing_pet_is_404_and_an_id_that_is_no_int64_400() -> None:
    with api("main") as client:
        missing = client.get("/pets/999999")
        bad = client.get("/pets/99999999999999999999")
    assert missing.status_code == 404 and error(missing)["code"] == "pet.not_found"
    assert bad.status_code == 400 and error(bad)["code"] == "path.pet_id_invalid"


# -- keys, routes, traces ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("authorization", "code", "challenge"),
    [
        (None, "auth.key_missing", REALM),
        ("Basic dXNlcjpwYXNz", "auth.scheme_invalid", f'{REALM}, error="invalid_request"'),
        ("Bearer sk_nobody_1234", "auth.key_unknown", f'{REALM}, error="invalid_token"'),
    ],
)
def test_each_way_of_lacking_a_key_has_its_code_and_challenge(
    authorization: str | None, code: str, challenge: str
) -> None:
    headers = {"Authorization": authorization} if authorization else {}
    with api(**headers) as client:
        answer = client.get("/pets")
    assert answer.status_code == 401 and error(answer)["code"] == code
    assert answer.headers["www-authenticate"] == challenge


@pytest.mark.parametrize("path", ["/nowhere", "/pets/"])
def test_an_unknown_path_is_404_even_without_a_key(path: str) -> None:
    with api() as client:
        answer = client.get(path)
    assert answer.status_code == 404 and error(answer)["code"] == "route.not_found"


def test_a_wrong_method_is_405_with_allow_even_without_a_key() -> None:
    with api() as client:
        answer = client.delete("/pets")
    assert answer.status_code == 405 and error(answer)["code"] == "route.method_not_allowed"
    assert {m.strip() for m in answer.headers["allow"].split(",")} >= {"GET", "POST"}


def test_head_is_served_on_the_list_only() -> None:
    with api("main") as client:
        listed = client.head("/pets")
        one = client.head("/pets/1")
    assert listed.status_code == 200 and listed.content == b""
    assert one.status_code == 405 and one.headers["allow"] == "GET"


def test_store_orders_needs_a_scope_no_key_has() -> None:
    with api("main") as client:
        answer = client.get("/store/orders")
    assert answer.status_code == 403 and error(answer)["code"] == "orders.scope_required"


def test_every_answer_has_a_trace_id_and_errors_repeat_it() -> None:
    with api("main") as client:
        answer = client.get("/pets/999999")
    assert TRACE.match(answer.headers["x-trace-id"])
    assert error(answer)["traceId"] == answer.headers["x-trace-id"]


def test_bodies_are_utf_8_json() -> None:
    with api("main") as client:
        answer = client.get("/pets", params={"limit": 1})
    assert answer.headers["content-type"] == "application/json; charset=utf-8"


# -- rate limits ------------------------------------------------------------------------


def test_the_headers_describe_the_minute_that_began_with_the_first_request() -> None:
    started = time.time()
    with api("sandbox-1") as client:
        first = client.get("/pets/1")
        second = client.get("/pets/1")
    assert first.headers["x-ratelimit-limit"] == "10"
    assert (
        first.headers["x-ratelimit-remaining"] == "9"
        and second.headers["x-ratelimit-remaining"] == "8"
    )
    reset = int(first.headers["x-ratelimit-reset"])
    assert second.headers["x-ratelimit-reset"] == first.headers["x-ratelimit-reset"]
    assert started + 58 <= reset / 1000 <= time.time() + 61  # milliseconds, a minute on


def test_the_eleventh_request_of_the_minute_is_429_with_whole_seconds_to_wait() -> None:
    with api("sandbox-2") as client:
        answers = refused(client)
    assert len(answers) == 11
    last = answers[-1]
    assert error(last)["code"] == "rate.limit_exceeded"
    wait = int(last.headers["retry-after"])
    assert 1 <= wait <= 60
    assert abs(int(last.headers["x-ratelimit-reset"]) / 1000 - time.time() - wait) <= 2


def test_a_refused_request_consumes_nothing() -> None:
    with api("sandbox-3") as client:
        last = refused(client)[-1]
        again = client.get("/pets/1")
    assert again.status_code == 429
    assert again.headers["x-ratelimit-reset"] == last.headers["x-ratelimit-reset"]


def test_the_fifth_429_in_a_row_bans_the_key_until_an_http_date() -> None:
    with api("sandbox-4") as client:
        refused(client)
        answers = [client.get("/pets/1") for _ in range(4)]
    codes = [error(a)["code"] for a in answers]
    assert codes == ["rate.limit_exceeded"] * 3 + ["rate.key_banned"]
    banned = answers[-1]
    until_then = http_date(banned.headers["retry-after"]) - time.time()
    assert 290 <= until_then <= 301
    assert banned.headers["x-ratelimit-remaining"] == "0"


def test_a_banned_key_stays_banned_and_the_reset_is_the_bans_end() -> None:
    with api("sandbox-5") as client:
        refused(client)
        for _ in range(4):
            client.get("/pets/1")
        later = client.get("/pets/1")
    assert later.status_code == 429 and error(later)["code"] == "rate.key_banned"
    ends = http_date(later.headers["retry-after"])
    assert abs(int(later.headers["x-ratelimit-reset"]) / 1000 - ends) <= 1


def test_callers_without_a_key_get_ten_a_minute_per_address() -> None:
    with api(source=fresh_address()) as client:
        answers = until(lambda: client.get("/pets"), lambda a: a.status_code == 429, 20)
    assert [a.status_code for a in answers[:-1]] == [401] * 10
