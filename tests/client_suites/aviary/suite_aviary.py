"""What a client of Aviary depends on, from Aviary's documentation (tests/upstream/aviary.py).

Keys: ``main`` on ``business``; ``tight`` and ``nestling-1`` .. ``nestling-6`` on ``nestling``
(2/s, burst 3, 60 an hour); ``fledgling-1`` .. ``fledgling-4`` on ``fledgling`` (10 an hour).
The store holds at least 25 pets.
"""

from __future__ import annotations

import math
import re
import time

import httpx
import pytest

from tests.client_suites.client import BASE, api, error, fresh_address, http_date, until, wait

TRACEPARENT = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-01$")
TEMPLATE = re.compile(r"^Invalid value '.*' for (parameter|field|header|path|method)( '.+')?")


def burst(client: httpx.Client) -> list[httpx.Response]:
    """Requests as fast as the client can send them, until the front end refuses one."""
    return until(lambda: client.get("/pets/9001"), lambda a: a.status_code != 200, 12)


# -- the catalogue ----------------------------------------------------------------------


def test_a_list_carries_the_page_headers_and_no_link() -> None:
    with api("main") as client:
        answer = client.get("/pets", params={"limit": 5})
    assert answer.status_code == 200 and len(answer.json()) == 5
    assert int(answer.headers["x-total-count"]) >= 25
    assert answer.headers["x-page"] == "1" and answer.headers["x-per-page"] == "5"
    assert answer.headers["x-next-page"] == "2" and answer.headers["x-prev-page"] == ""
    assert int(answer.headers["x-total-pages"]) == math.ceil(
        int(answer.headers["x-total-count"]) / 5
    )
    assert "link" not in answer.headers


def test_walking_the_pages_visits_every_pet_once_by_name_with_case() -> None:
    seen: list[dict] = []
    with api("main") as client:
        page = "1"
        while page:
            answer = client.get("/pets", params={"limit": 7, "page": page})
            seen += answer.json()
            page = answer.headers["x-next-page"]
        total = int(answer.headers["x-total-count"])
    assert len(seen) == len({pet["id"] for pet in seen}) == total
    keys = [(pet["name"], pet["id"]) for pet in seen]
    assert keys == sorted(keys)  # code-point order: "Zazu" before "apple"


def test_a_page_past_the_first_points_back() -> None:
    with api("main") as client:
        answer = client.get("/pets", params={"limit": 5, "page": 2})
    assert answer.headers["x-prev-page"] == "1" and answer.headers["x-page"] == "2"


@pytest.mark.parametrize(("name", "value"), [("page", "0"), ("limit", "0"), ("limit", "101")])
def test_a_bad_page_or_limit_is_400_in_the_template(name: str, value: str) -> None:
    with api("main") as client:
        answer = client.get("/pets", params={name: value})
    body = error(answer)
    assert answer.status_code == 400 and body["code"] == "E4001" and body["field"] == name
    assert body["message"] == f"Invalid value '{value}' for parameter '{name}'"


@pytest.mark.parametrize("limit", ["5.0", " 5", "+5"])
def test_a_limit_written_loosely_is_read(limit: str) -> None:
    with api("main") as client:
        answer = client.get("/pets", params={"limit": limit})
    assert answer.status_code == 200 and len(answer.json()) == 5


def test_several_statuses_may_be_asked_for_at_once_each_exact() -> None:
    with api("main") as client:
        both = client.get("/pets", params={"status": "available,pending", "limit": 100})
        wrong = client.get("/pets", params={"status": "Sold"})
    assert {pet["status"] for pet in both.json()} == {"available", "pending"}
    assert wrong.status_code == 400 and error(wrong)["field"] == "status"


# -- creating ---------------------------------------------------------------------------


def test_a_created_pet_is_available_unless_told() -> None:
    with api("main") as client:
        answer = client.post("/pets", json={"name": "Tui", "categoryId": 4})
    assert answer.status_code == 201 and answer.json()["status"] == "available"


def test_unknown_fields_are_kept_with_a_warning() -> None:
    with api("main") as client:
        answer = client.post("/pets", json={"name": "Kea", "categoryId": 4, "wingspan": 90})
    assert answer.status_code == 201 and answer.json()["wingspan"] == 90
    assert answer.headers["warning"].startswith("199 ") and "wingspan" in answer.headers["warning"]


@pytest.mark.parametrize("category", [7.0, "7", True])
def test_a_category_must_be_a_json_integer(category: object) -> None:
    with api("main") as client:
        answer = client.post("/pets", json={"name": "Kaka", "categoryId": category})
    body = error(answer)
    assert answer.status_code == 400 and body["code"] == "E4002" and body["field"] == "categoryId"


def test_names_are_limited_to_100_bytes_of_utf_8_and_may_not_be_blank() -> None:
    with api("main") as client:
        fits = client.post("/pets", json={"name": "é" * 50, "categoryId": 1})
        over = client.post("/pets", json={"name": "é" * 51, "categoryId": 1})
        blank = client.post("/pets", json={"name": "   ", "categoryId": 1})
    assert fits.status_code == 201
    assert over.status_code == 400 and error(over)["field"] == "name"
    assert blank.status_code == 400 and error(blank)["field"] == "name"


@pytest.mark.parametrize("media", ["text/plain", None])
def test_a_body_must_be_sent_as_application_json(media: str | None) -> None:
    headers = {"Content-Type": media} if media else {}
    with api("main") as client:
        answer = client.post("/pets", content=b'{"name": "Moa", "categoryId": 1}', headers=headers)
    assert answer.status_code == 415 and error(answer)["code"] == "E4151"


def test_a_body_that_is_not_json_is_400() -> None:
    with api("main") as client:
        answer = client.post(
            "/pets", content=b"{nope", headers={"Content-Type": "application/json"}
        )
    assert answer.status_code == 400 and error(answer)["code"] == "E4003"


def test_a_body_over_12_kib_is_413() -> None:
    big = b'{"name": "' + b"a" * 13_000 + b'", "categoryId": 1}'
    with api("main") as client:
        answer = client.post("/pets", content=big, headers={"Content-Type": "application/json"})
    assert answer.status_code == 413 and error(answer)["code"] == "E4131"


# -- one pet, conditionally -------------------------------------------------------------


def test_a_pet_has_a_strong_etag_and_a_match_is_304() -> None:
    with api("main") as client:
        first = client.get("/pets/9001")
        tag = first.headers["etag"]
        again = client.get("/pets/9001", headers={"If-None-Match": tag})
        weak = client.get("/pets/9001", headers={"If-None-Match": "W/" + tag})
    assert re.fullmatch(r'"[0-9a-f]{40}"', tag)
    assert again.status_code == 304 and again.content == b""
    assert weak.status_code == 200


def test_if_modified_since_counts_only_without_if_none_match() -> None:
    with api("main") as client:
        stamp = client.get("/pets/9001").headers["last-modified"]
        since = client.get("/pets/9001", headers={"If-Modified-Since": stamp})
        both = client.get(
            "/pets/9001", headers={"If-Modified-Since": stamp, "If-None-Match": '"x"'}
        )
    assert since.status_code == 304 and both.status_code == 200


def test_get_pet_warns_of_its_deprecation_without_a_deprecation_header() -> None:
    with api("main") as client:
        answer = client.get("/pets/9001")
        revalidated = client.get("/pets/9001", headers={"If-None-Match": answer.headers["etag"]})
    for seen in (answer, revalidated):
        assert (
            seen.headers["warning"].startswith("299 ") and "deprecated" in seen.headers["warning"]
        )
        assert http_date(seen.headers["sunset"]) == 1922680800.0  # 2030-12-05T06:00:00Z
        assert "deprecation" not in seen.headers


def test_a_missing_pet_is_404_and_a_bad_id_400_in_the_template() -> None:
    with api("main") as client:
        missing = client.get("/pets/123456789")
        bad = client.get("/pets/abc")
    assert missing.status_code == 404 and error(missing)["code"] == "E4042"
    assert error(missing)["message"] == "Invalid value '123456789' for parameter 'petId'"
    assert bad.status_code == 400 and error(bad)["field"] == "petId"


# -- keys, errors, traces ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("authorization", "code"),
    [(None, "E4011"), ("Basic dXNlcjpwYXNz", "E4012"), ("Bearer av_nobody_1234", "E4013")],
)
def test_a_caller_without_a_valid_key_is_401_without_a_challenge(
    authorization: str | None, code: str
) -> None:
    headers = {"Authorization": authorization} if authorization else {}
    with api(**headers) as client:
        answer = client.get("/pets")
    assert answer.status_code == 401 and error(answer)["code"] == code
    assert "www-authenticate" not in answer.headers


def test_a_trace_the_client_started_is_continued() -> None:
    trace = "4bf92f3577b34da6a3ce929d0e0e4736"
    with api("main", traceparent=f"00-{trace}-00f067aa0ba902b7-01") as client:
        answer = client.get("/pets/123456789")
    found = TRACEPARENT.match(answer.headers["traceparent"])
    assert found and found.group(1) == trace and found.group(2) != "00f067aa0ba902b7"
    assert error(answer)["traceId"] == trace


def test_without_a_trace_a_new_one_is_started() -> None:
    with api("main") as client:
        answer = client.get("/pets/123456789")
    found = TRACEPARENT.match(answer.headers["traceparent"])
    assert found and error(answer)["traceId"] == found.group(1)


# -- limits -----------------------------------------------------------------------------


def test_the_rate_limit_headers_describe_the_hour_in_milliseconds() -> None:
    with api("nestling-1") as client:
        answer = client.get("/pets/9001")
    assert answer.headers["x-ratelimit-limit"] == "60"
    assert answer.headers["x-ratelimit-remaining"] == "59"
    hour_end = (math.floor(time.time() / 3600) + 1) * 3600 * 1000
    assert abs(int(answer.headers["x-ratelimit-reset"]) - hour_end) <= 3_600_000
    assert int(answer.headers["x-ratelimit-reset"]) % 3_600_000 == 0


def test_a_burst_over_the_bucket_is_503_with_no_retry_after() -> None:
    with api("nestling-2") as client:
        answers = burst(client)
    refused = answers[-1]
    assert refused.status_code == 503 and error(refused)["code"] == "E5031"
    assert "retry-after" not in refused.headers
    assert 4 <= len(answers) <= 7


def test_one_emission_interval_later_a_request_is_admitted() -> None:
    with api("nestling-3") as client:
        burst(client)
        wait(0.6, 0.6)  # the plan's rate is 2/s
        assert client.get("/pets/9001").status_code == 200


def test_a_client_error_counts_against_the_quota_and_a_server_error_does_not() -> None:
    with api("nestling-4") as client:
        before = int(client.get("/pets/9001").headers["x-ratelimit-remaining"])
        wait(0.6, 0.6)
        missing = client.get("/pets/123456789")
        wait(0.6, 0.6)
        down = client.get("/store/orders")
    assert int(missing.headers["x-ratelimit-remaining"]) == before - 1
    assert down.status_code == 503 and int(down.headers["x-ratelimit-remaining"]) == before - 1


def test_a_spent_hour_is_429_until_an_http_date_at_the_hour() -> None:
    with api("fledgling-1") as client:
        answers = until(lambda: client.get("/pets/9001"), lambda a: a.status_code != 200, 12)
    refused = answers[-1]
    assert len(answers) == 11 and refused.status_code == 429 and error(refused)["code"] == "E4291"
    at = http_date(refused.headers["retry-after"])
    assert at % 3600 == 0 and 0 < at - time.time() <= 3600
    assert refused.headers["x-ratelimit-remaining"] == "0"


def test_ten_refusals_within_a_minute_block_the_key_403() -> None:
    with api("fledgling-2") as client:
        answers = until(lambda: client.get("/pets/9001"), lambda a: a.status_code == 403, 30)
    blocked = answers[-1]
    assert error(blocked)["code"] == "E4031"
    assert [a.status_code for a in answers].count(429) == 10
    assert (
        blocked.headers["retry-after"].isdigit() and 0 < int(blocked.headers["retry-after"]) <= 60
    )
    assert blocked.headers["x-ratelimit-remaining"] == "0"


def test_callers_without_a_key_have_a_bucket_of_5_per_address() -> None:
    with api(source=fresh_address()) as client:
        answers = until(lambda: client.get("/pets"), lambda a: a.status_code == 503, 12)
    assert set(a.status_code for a in answers[:-1]) == {401}
    assert 6 <= len(answers) <= 8
    assert answers[0].headers["x-ratelimit-limit"] == "50"


# -- HTTP around it ---------------------------------------------------------------------


def test_bodies_from_20_bytes_are_gzipped_for_a_client_that_accepts_gzip() -> None:
    with api("main", Accept_Encoding="gzip") as client:
        answer = client.get("/pets", params={"limit": 1})
    assert answer.headers["content-encoding"] == "gzip" and len(answer.json()) == 1


def test_a_client_that_accepts_only_deflate_gets_identity() -> None:
    with api("main", Accept_Encoding="deflate") as client:
        answer = client.get("/pets", params={"limit": 5})
    assert "content-encoding" not in answer.headers


def test_a_preflight_on_the_collection_reflects_the_origin_with_credentials() -> None:
    with api(
        Origin="https://aviary.example",
        Access_Control_Request_Method="POST",
        Access_Control_Request_Headers="authorization, x-client",
    ) as client:
        answer = client.options("/pets")
    assert answer.status_code == 204
    assert answer.headers["access-control-allow-origin"] == "https://aviary.example"
    assert answer.headers["access-control-allow-credentials"] == "true"
    assert answer.headers["access-control-allow-headers"] == "authorization, x-client"
    assert answer.headers["access-control-max-age"] == "86400"


def test_a_preflight_on_one_pet_is_405() -> None:
    with api(Origin="https://aviary.example", Access_Control_Request_Method="GET") as client:
        answer = client.options("/pets/9001")
    assert answer.status_code == 405 and answer.headers["allow"] == "GET"
    assert "access-control-allow-methods" not in answer.headers


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [("HEAD", "/pets", "GET, POST, OPTIONS"), ("DELETE", "/pets/9001", "GET")],
)
def test_a_method_a_path_does_not_serve_is_405_with_allow(
    method: str, path: str, allow: str
) -> None:
    with api("main") as client:
        answer = client.request(method, path)
    assert answer.status_code == 405 and answer.headers["allow"] == allow


def test_a_trailing_slash_is_redirected_to_an_absolute_url_on_the_called_address() -> None:
    with api("main") as client:
        answer = client.get("/pets/", params={"limit": 2})
        assert answer.status_code == 301
        assert answer.headers["location"] == f"{BASE}/pets?limit=2"
        followed = client.get(answer.headers["location"])
    assert followed.status_code == 200 and len(followed.json()) == 2


def test_the_store_is_under_maintenance_after_the_key_is_checked() -> None:
    with api("main") as client:
        down = client.get("/store/orders")
    with api() as client:
        anonymous = client.get("/store/orders")
    assert down.status_code == 503 and error(down)["code"] == "E5032"
    assert 0 < http_date(down.headers["retry-after"]) - time.time() <= 3601
    assert anonymous.status_code == 401


def test_every_message_follows_the_template() -> None:
    with api("main") as client:
        answers = [
            client.get("/pets/abc"),
            client.get("/pets", params={"limit": "x"}),
            client.delete("/pets"),
        ]
    for answer in answers:
        assert TEMPLATE.match(error(answer)["message"]), error(answer)["message"]
