"""What a client of Tollgate depends on, from Tollgate's documentation (tests/upstream/tollgate.py).

Keys: ``main`` on ``pro``; ``starter-1`` .. ``starter-8`` on ``starter`` (5 tokens, one back
every 2 s), one per test that empties a bucket. The store holds at least 25 pets.
"""

from __future__ import annotations

import gzip
import re
import time
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.client_suites.client import api, error, http_date, until, wait

REQUEST_ID = re.compile(r"^req_[A-Za-z0-9]{24}$")
DOCS = "https://docs.tollgate.example/errors/"


def next_link(header: str | None) -> str | None:
    for part in (header or "").split(","):
        target, _, params = part.partition(";")
        if 'rel="next"' in params.replace(" ", ""):
            return target.strip().strip("<>")
    return None


def new_pet(**fields: object) -> dict[str, object]:
    return {"name": "Pip", "categoryId": 3, **fields}


# -- the catalogue ----------------------------------------------------------------------


def test_the_list_is_a_json_array_of_at_most_20_pets() -> None:
    with api("main") as client:
        answer = client.get("/pets")
    assert answer.status_code == 200
    pets = answer.json()
    assert isinstance(pets, list) and 1 <= len(pets) <= 20
    assert all({"id", "name", "categoryId", "status"} <= set(pet) for pet in pets)


def test_a_page_with_more_after_it_links_to_the_next_by_path() -> None:
    with api("main") as client:
        answer = client.get("/pets", params={"limit": 2})
    assert len(answer.json()) == 2
    link = next_link(answer.headers.get("link"))
    assert link is not None and link.startswith("/v1/pets?"), answer.headers.get("link")
    assert "cursor" in parse_qs(urlsplit(link).query)


def test_following_next_visits_every_pet_once_in_name_order() -> None:
    seen: list[dict[str, object]] = []
    with api("main") as client:
        answer = client.get("/pets", params={"limit": 7})
        while True:
            seen += answer.json()
            link = next_link(answer.headers.get("link"))
            if link is None:
                break
            answer = client.get(link.removeprefix("/v1"))
            assert answer.status_code == 200
    ids = [pet["id"] for pet in seen]
    assert len(ids) == len(set(ids)) >= 25
    names = [str(pet["name"]).casefold() for pet in seen]
    assert names == sorted(names)


def test_the_last_page_has_no_next_link() -> None:
    with api("main") as client:
        answer = client.get("/pets", params={"limit": 100})
    assert answer.status_code == 200 and next_link(answer.headers.get("link")) is None


def test_the_next_link_keeps_the_status_filter() -> None:
    with api("main") as client:
        answer = client.get("/pets", params={"limit": 1, "status": "available"})
        link = next_link(answer.headers.get("link"))
        assert link is not None
        assert parse_qs(urlsplit(link).query)["status"] == ["available"]
        following = client.get(link.removeprefix("/v1"))
    assert [pet["status"] for pet in following.json()] == ["available"]


def test_a_cursor_tollgate_did_not_write_is_400_naming_the_cursor() -> None:
    with api("main") as client:
        answer = client.get("/pets", params={"cursor": "not-a-cursor"})
    assert answer.status_code == 400
    body = error(answer)
    assert body["code"] == "invalid-parameter" and body["param"] == "cursor"


def test_names_are_ordered_without_regard_to_case() -> None:
    with api("main") as client:
        pets = client.get("/pets", params={"limit": 100}).json()
    names = [pet["name"] for pet in pets]
    assert names == sorted(names, key=str.casefold)
    assert names != sorted(names), "the seeded names mix cases"


def test_the_status_filter_ignores_case() -> None:
    with api("main") as client:
        upper = client.get("/pets", params={"status": "SOLD", "limit": 100})
        lower = client.get("/pets", params={"status": "sold", "limit": 100})
    assert upper.status_code == 200
    assert upper.json() == lower.json() and upper.json()
    assert {pet["status"] for pet in upper.json()} == {"sold"}


@pytest.mark.parametrize("limit", ["0", "101", "ten"])
def test_a_limit_outside_1_to_100_is_400_quoting_it(limit: str) -> None:
    with api("main") as client:
        answer = client.get("/pets", params={"limit": limit})
    assert answer.status_code == 400
    body = error(answer)
    assert body["code"] == "invalid-parameter" and body["param"] == "limit"
    assert f'"{limit}"' in body["message"]


def test_an_unknown_status_filter_is_400() -> None:
    with api("main") as client:
        answer = client.get("/pets", params={"status": "lost"})
    assert answer.status_code == 400
    assert error(answer)["param"] == "status"


# -- creating ---------------------------------------------------------------------------


def test_a_created_pet_has_no_status_until_read_then_it_is_available() -> None:
    with api("main") as client:
        created = client.post("/pets", json=new_pet(name="Noodle"))
        assert created.status_code == 201
        pet = created.json()
        assert "status" not in pet and isinstance(pet["id"], int)
        read = client.get(f"/pets/{pet['id']}")
    assert read.json()["status"] == "available"


def test_a_category_given_as_a_string_of_digits_is_read_as_a_number() -> None:
    with api("main") as client:
        created = client.post("/pets", json=new_pet(categoryId="7"))
    assert created.status_code == 201 and created.json()["categoryId"] == 7


def test_a_category_of_7_0_is_refused_naming_the_field() -> None:
    with api("main") as client:
        answer = client.post("/pets", json=new_pet(categoryId=7.0))
    assert answer.status_code == 400
    body = error(answer)
    assert body["code"] == "invalid-field" and body["param"] == "categoryId"


def test_names_may_have_64_characters_and_no_more() -> None:
    with api("main") as client:
        fits = client.post("/pets", json=new_pet(name="n" * 64))
        over = client.post("/pets", json=new_pet(name="n" * 65))
    assert fits.status_code == 201
    assert over.status_code == 400 and error(over)["param"] == "name"


def test_unknown_fields_are_dropped_with_a_warning_naming_them() -> None:
    with api("main") as client:
        answer = client.post("/pets", json=new_pet(nickname="P"))
    assert answer.status_code == 201 and "nickname" not in answer.json()
    assert answer.headers["warning"].startswith("299 tollgate ")
    assert "nickname" in answer.headers["warning"]


def test_a_body_that_is_not_json_typed_is_415() -> None:
    with api("main") as client:
        answer = client.post(
            "/pets",
            content=b'{"name": "Pip", "categoryId": 1}',
            headers={"Content-Type": "text/plain"},
        )
    assert answer.status_code == 415 and error(answer)["code"] == "unsupported-media-type"


def test_a_body_that_is_not_json_is_400_invalid_body() -> None:
    with api("main") as client:
        answer = client.post(
            "/pets", content=b"{nope", headers={"Content-Type": "application/json"}
        )
    assert answer.status_code == 400 and error(answer)["code"] == "invalid-body"


def test_a_body_over_16_kib_is_413() -> None:
    big = b'{"name": "' + b"a" * 17_000 + b'", "categoryId": 1}'
    with api("main") as client:
        answer = client.post("/pets", content=big, headers={"Content-Type": "application/json"})
    assert answer.status_code == 413 and error(answer)["code"] == "body-too-large"


# -- reading one pet, conditionally -----------------------------------------------------


def test_a_pet_carries_a_weak_etag_and_304_answers_a_match() -> None:
    with api("main") as client:
        first = client.get("/pets/1")
        tag = first.headers["etag"]
        assert tag.startswith('W/"')
        again = client.get("/pets/1", headers={"If-None-Match": tag})
    assert again.status_code == 304 and again.content == b""
    assert again.headers["etag"] == tag


def test_the_list_is_revalidated_with_its_etag_too() -> None:
    with api("main") as client:
        first = client.get("/pets", params={"limit": 3})
        again = client.get(
            "/pets", params={"limit": 3}, headers={"If-None-Match": first.headers["etag"]}
        )
    assert again.status_code == 304


def test_a_304_costs_no_token() -> None:
    with api("starter-1") as client:
        first = client.get("/pets/1")
        left = int(first.headers["x-ratelimit-remaining"])
        again = client.get("/pets/1", headers={"If-None-Match": first.headers["etag"]})
    assert again.status_code == 304
    assert int(again.headers["x-ratelimit-remaining"]) == left


def test_get_pet_announces_its_deprecation_and_sunset() -> None:
    with api("main") as client:
        answer = client.get("/pets/1")
    assert answer.headers["deprecation"] == "@1740787200"
    assert http_date(answer.headers["sunset"]) == 1922659200.0  # 2030-12-05T00:00:00Z
    assert 'rel="deprecation"' in answer.headers["link"]


def test_a_missing_pet_is_404_and_a_bad_id_400() -> None:
    with api("main") as client:
        missing = client.get("/pets/987654")
        bad = client.get("/pets/abc")
    assert missing.status_code == 404 and error(missing)["code"] == "pet-not-found"
    assert bad.status_code == 400 and error(bad)["code"] == "invalid-pet-id"


# -- keys and errors --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("authorization", "code"),
    [
        (None, "key-missing"),
        ("Basic dXNlcjpwYXNz", "authorization-malformed"),
        ("Bearer sk_nobody_1234567", "key-invalid"),
    ],
)
def test_a_caller_without_a_valid_key_is_401_with_a_bearer_challenge(
    authorization: str | None, code: str
) -> None:
    headers = {"Authorization": authorization} if authorization else {}
    with api(**headers) as client:
        answer = client.get("/pets")
    assert answer.status_code == 401 and error(answer)["code"] == code
    assert answer.headers["www-authenticate"].startswith("Bearer")
    assert answer.headers["x-ratelimit-limit"] == "0"


def test_callers_without_a_key_are_never_throttled() -> None:
    with api() as client:
        statuses = {client.get("/pets").status_code for _ in range(30)}
    assert statuses == {401}


def test_every_answer_has_a_request_id_that_the_error_repeats() -> None:
    with api("main") as client:
        answer = client.get("/pets", params={"limit": 0})
    assert REQUEST_ID.match(answer.headers["request-id"])
    assert error(answer)["requestId"] == answer.headers["request-id"]


def test_a_request_id_the_client_sends_is_not_echoed() -> None:
    with api("main", Request_Id="req_mine", X_Request_Id="mine-1234") as client:
        answer = client.get("/pets", params={"limit": 1})
    assert REQUEST_ID.match(answer.headers["request-id"])


def test_errors_link_to_their_documentation() -> None:
    with api("main") as client:
        body = error(client.get("/pets/987654"))
    assert body["docUrl"] == DOCS + body["code"]


# -- the bucket -------------------------------------------------------------------------


def test_the_limit_is_the_buckets_capacity_and_remaining_counts_down() -> None:
    with api("starter-2") as client:
        first = client.get("/pets/1")
        second = client.get("/pets/1")
    assert first.headers["x-ratelimit-limit"] == "5"
    assert (
        int(second.headers["x-ratelimit-remaining"])
        == int(first.headers["x-ratelimit-remaining"]) - 1
    )


def test_the_reset_is_a_unix_time_with_milliseconds_when_the_bucket_is_full() -> None:
    with api("starter-3") as client:
        answer = client.get("/pets/1")
    reset = answer.headers["x-ratelimit-reset"]
    assert re.fullmatch(r"\d{10}\.\d{3}", reset), reset
    assert time.time() - 1 < float(reset) <= time.time() + 3  # one token spent: 2 s to refill


def test_an_empty_bucket_is_429_with_a_decimal_retry_after() -> None:
    with api("starter-4") as client:
        answers = until(lambda: client.get("/pets/1"), lambda a: a.status_code == 429, 12)
    refused = answers[-1]
    assert len(answers) >= 6 and error(refused)["code"] == "rate-limited"
    assert re.fullmatch(r"\d+\.\d{3}", refused.headers["retry-after"]), refused.headers[
        "retry-after"
    ]
    assert 0 < float(refused.headers["retry-after"]) <= 2.0
    assert refused.headers["x-envoy-ratelimited"] == "true"


def test_waiting_retry_after_is_enough_to_be_served_again() -> None:
    with api("starter-5") as client:
        refused = until(lambda: client.get("/pets/1"), lambda a: a.status_code == 429, 12)[-1]
        wait(float(refused.headers["retry-after"]), 2.0)
        assert client.get("/pets/1").status_code == 200


def test_a_refused_request_takes_no_token_and_nothing_bans_the_key() -> None:
    with api("starter-6") as client:
        refused = until(lambda: client.get("/pets/1"), lambda a: a.status_code == 429, 12)[-1]
        for _ in range(20):
            assert client.get("/pets/1").status_code == 429
        wait(float(refused.headers["retry-after"]) + 0.1, 2.1)
        assert client.get("/pets/1").status_code == 200


def test_a_token_comes_back_every_two_seconds_only() -> None:
    with api("starter-7") as client:
        until(lambda: client.get("/pets/1"), lambda a: a.status_code == 429, 12)
        retry = float(client.get("/pets/1").headers["retry-after"])
        wait(retry, 2.0)
        served = client.get("/pets/1")
        again = client.get("/pets/1")
    assert served.status_code == 200 and again.status_code == 429
    assert 1.5 < float(again.headers["retry-after"]) <= 2.0


# -- HTTP around it ---------------------------------------------------------------------


def test_large_answers_come_gzipped_when_the_client_accepts_it() -> None:
    with api("main", Accept_Encoding="gzip") as client:
        big = client.get("/pets", params={"limit": 100})
        small = client.get("/pets", params={"limit": 1})
    assert big.headers["content-encoding"] == "gzip" and "Accept-Encoding" in big.headers["vary"]
    assert isinstance(big.json(), list)
    assert "content-encoding" not in small.headers


def test_a_client_that_refuses_gzip_gets_identity() -> None:
    with api("main", Accept_Encoding="gzip;q=0, identity") as client:
        answer = client.get("/pets", params={"limit": 100})
    assert "content-encoding" not in answer.headers
    with pytest.raises(OSError):
        gzip.decompress(answer.content)


def test_a_browser_preflight_is_answered_without_a_key() -> None:
    with api(Origin="https://shop.example", Access_Control_Request_Method="POST") as client:
        answer = client.options("/pets")
    assert answer.status_code == 204
    assert answer.headers["access-control-allow-origin"] == "*"
    assert "POST" in answer.headers["access-control-allow-methods"]
    assert "authorization" in answer.headers["access-control-allow-headers"].lower()
    assert answer.headers["access-control-max-age"] == "600"


def test_a_browser_may_read_the_rate_limit_headers() -> None:
    with api("main", Origin="https://shop.example") as client:
        answer = client.get("/pets", params={"limit": 1})
    exposed = {
        h.strip().lower() for h in answer.headers["access-control-expose-headers"].split(",")
    }
    assert answer.headers["access-control-allow-origin"] == "*"
    assert {"x-ratelimit-remaining", "retry-after", "request-id", "link"} <= exposed


def test_a_method_the_path_does_not_serve_is_405_with_allow() -> None:
    with api("main") as client:
        answer = client.delete("/pets")
    assert answer.status_code == 405 and error(answer)["code"] == "method-not-allowed"
    assert {m.strip() for m in answer.headers["allow"].split(",")} == {
        "GET",
        "HEAD",
        "POST",
        "OPTIONS",
    }


def test_head_is_served_with_the_get_headers_and_no_body() -> None:
    with api("main") as client:
        answer = client.head("/pets/1")
    assert answer.status_code == 200 and answer.content == b""
    assert answer.headers["etag"].startswith('W/"')


def test_a_trailing_slash_is_redirected_permanently_keeping_the_query() -> None:
    with api("main") as client:
        answer = client.get("/pets/", params={"limit": 2})
        assert answer.status_code == 308
        assert answer.headers["location"] == "/v1/pets?limit=2"
        followed = client.get(answer.headers["location"].removeprefix("/v1"))
    assert followed.status_code == 200 and len(followed.json()) == 2


def test_the_store_is_under_maintenance_until_an_http_date() -> None:
    with api("main") as client:
        answer = client.get("/store/orders")
    assert answer.status_code == 503 and error(answer)["code"] == "store-maintenance"
    until_then = http_date(answer.headers["retry-after"]) - time.time()
    assert 0 < until_then <= 3601
