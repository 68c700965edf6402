"""What a client of Corral depends on, from Corral's documentation (tests/upstream/corral.py).

Keys: ``main`` on ``pro``; ``tight`` and ``hobby-1`` .. ``hobby-8`` on ``hobby`` (5 per 5 s,
100 a day), one per test that spends an allowance. The store holds at least 25 pets.
"""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from tests.client_suites.client import BASE, api, error, fresh_address, until, wait

ORIGIN = "https://app.corral.example"


def links(header: str | None) -> dict[str, str]:
    found = {}
    for part in (header or "").split(","):
        target, _, params = part.partition(";")
        rel = re.search(r'rel="([^"]+)"', params)
        if rel:
            found[rel.group(1)] = target.strip().strip("<>")
    return found


def offset_of(url: str) -> int:
    return int(parse_qs(urlsplit(url).query)["offset"][0])


def spend(client: httpx.Client) -> list[httpx.Response]:
    """Send until refused (the allowance is 5): every answer."""
    return until(lambda: client.get("/pets/500"), lambda a: a.status_code == 429, 15)


# -- the catalogue ----------------------------------------------------------------------


def test_a_list_carries_its_total_count() -> None:
    with api("main") as client:
        answer = client.get("/pets", params={"limit": 5})
    assert answer.status_code == 200 and len(answer.json()) == 5
    assert int(answer.headers["x-total-count"]) >= 25


def test_pages_link_to_first_next_and_last_as_absolute_urls_on_the_called_address() -> None:
    with api("main") as client:
        answer = client.get("/pets", params={"limit": 5})
    found = links(answer.headers.get("link"))
    assert {"first", "next", "last"} <= set(found) and "prev" not in found
    for url in found.values():
        assert url.startswith(BASE + "/pets?"), url
    assert offset_of(found["next"]) == 5


def test_following_next_visits_every_pet_once_by_category_then_id() -> None:
    seen: list[dict] = []
    with api("main") as client:
        answer = client.get("/pets", params={"limit": 7})
        total = int(answer.headers["x-total-count"])
        while True:
            seen += answer.json()
            following = links(answer.headers.get("link")).get("next")
            if following is None:
                break
            answer = client.get(following)
    assert len(seen) == len({pet["id"] for pet in seen}) == total
    order = [(pet["categoryId"], pet["id"]) for pet in seen]
    assert order == sorted(order)


def test_a_second_page_links_back_to_the_first() -> None:
    with api("main") as client:
        answer = client.get("/pets", params={"limit": 5, "offset": 5})
    found = links(answer.headers.get("link"))
    assert offset_of(found["prev"]) == 0 and offset_of(found["first"]) == 0


def test_the_last_link_points_at_the_last_full_step() -> None:
    with api("main") as client:
        answer = client.get("/pets", params={"limit": 10})
        total = int(answer.headers["x-total-count"])
        last = client.get(links(answer.headers["link"])["last"])
    assert 1 <= len(last.json()) <= 10
    assert offset_of(str(last.request.url)) == (total - 1) // 10 * 10


@pytest.mark.parametrize(("name", "value"), [("offset", "-1"), ("offset", "x"), ("limit", "0")])
def test_a_bad_offset_or_limit_is_400_naming_it_in_details(name: str, value: str) -> None:
    with api("main") as client:
        answer = client.get("/pets", params={name: value})
    assert answer.status_code == 400
    body = error(answer)
    assert body["code"] == "invalidParameter"
    assert [d["field"] for d in body["details"]] == [name]


def test_a_limit_above_100_gives_100_with_a_warning() -> None:
    with api("main") as client:
        answer = client.get("/pets", params={"limit": 500})
    assert answer.status_code == 200 and len(answer.json()) <= 100
    assert answer.headers["warning"].startswith("299 ") and "100" in answer.headers["warning"]


def test_the_status_filter_is_exact() -> None:
    with api("main") as client:
        upper = client.get("/pets", params={"status": "SOLD"})
        lower = client.get("/pets", params={"status": "sold", "limit": 100})
    assert upper.status_code == 400 and error(upper)["details"][0]["field"] == "status"
    assert {pet["status"] for pet in lower.json()} == {"sold"}
    assert int(lower.headers["x-total-count"]) == len(lower.json())


# -- creating ---------------------------------------------------------------------------


def test_a_created_pet_has_no_status_until_read_then_it_is_pending() -> None:
    with api("main") as client:
        created = client.post("/pets", json={"name": "Natto", "categoryId": 2})
        assert created.status_code == 201 and "status" not in created.json()
        read = client.get(f"/pets/{created.json()['id']}")
    assert read.json()["status"] == "pending"


@pytest.mark.parametrize("category", ["7", 7.0])
def test_a_category_of_7_0_or_7_as_text_is_7(category: object) -> None:
    with api("main") as client:
        created = client.post("/pets", json={"name": "Nori", "categoryId": category})
    assert created.status_code == 201 and created.json()["categoryId"] == 7


def test_a_name_of_33_characters_is_422_naming_the_field() -> None:
    with api("main") as client:
        fits = client.post("/pets", json={"name": "n" * 32, "categoryId": 1})
        over = client.post("/pets", json={"name": "n" * 33, "categoryId": 1})
    assert fits.status_code == 201
    assert over.status_code == 422
    body = error(over)
    assert body["code"] == "validationFailed"
    assert [d["field"] for d in body["details"]] == ["name"]


def test_every_problem_of_a_body_is_listed() -> None:
    with api("main") as client:
        answer = client.post("/pets", json={"name": 5, "categoryId": 1, "nickname": "x"})
    body = error(answer)
    assert answer.status_code == 422
    assert {d["field"] for d in body["details"]} == {"name", "nickname"}
    assert body["message"].startswith("2 problem(s)")


def test_a_body_without_content_type_is_read_as_json() -> None:
    with api("main") as client:
        answer = client.post("/pets", content=b'{"name": "Miso", "categoryId": 3}')
    assert answer.status_code == 201


def test_a_body_of_another_media_type_is_415() -> None:
    with api("main") as client:
        answer = client.post("/pets", content=b"x", headers={"Content-Type": "text/plain"})
    assert answer.status_code == 415 and error(answer)["code"] == "unsupportedMediaType"


def test_a_body_that_is_not_json_is_400() -> None:
    with api("main") as client:
        answer = client.post(
            "/pets", content=b"{nope", headers={"Content-Type": "application/json"}
        )
    assert answer.status_code == 400 and error(answer)["code"] == "malformedJson"


def test_a_body_over_4_kib_is_413() -> None:
    big = b'{"name": "' + b"a" * 5000 + b'", "categoryId": 1}'
    with api("main") as client:
        answer = client.post("/pets", content=big, headers={"Content-Type": "application/json"})
    assert answer.status_code == 413 and error(answer)["code"] == "payloadTooLarge"


# -- one pet, conditionally -------------------------------------------------------------


def test_a_pet_is_revalidated_with_if_modified_since() -> None:
    with api("main") as client:
        first = client.get("/pets/500")
        stamp = first.headers["last-modified"]
        again = client.get("/pets/500", headers={"If-Modified-Since": stamp})
        older = client.get(
            "/pets/500", headers={"If-Modified-Since": "Mon, 01 Jan 2001 00:00:00 GMT"}
        )
    assert again.status_code == 304 and again.content == b""
    assert older.status_code == 200 and "etag" not in first.headers


@pytest.mark.parametrize("path", ["/pets/500", "/pets/987654"])
def test_every_get_pet_answer_announces_the_deprecation(path: str) -> None:
    with api("main") as client:
        answer = client.get(path)
    assert answer.headers["deprecation"] == "true"
    assert answer.headers["sunset"] == "Thu, 05 Dec 2030 18:00:00 GMT"
    assert 'rel="sunset"' in answer.headers["link"]


def test_get_pet_announces_it_to_a_caller_without_a_key_too() -> None:
    with api() as client:
        answer = client.get("/pets/500")
    assert answer.status_code == 401 and answer.headers["deprecation"] == "true"


def test_a_missing_pet_is_404_and_an_id_that_is_no_number_400() -> None:
    with api("main") as client:
        missing = client.get("/pets/987654")
        bad = client.get("/pets/abc")
    assert missing.status_code == 404 and error(missing)["code"] == "petNotFound"
    assert bad.status_code == 400 and error(bad)["details"][0]["field"] == "petId"


# -- keys, errors, ids ------------------------------------------------------------------


def test_no_key_is_401_with_a_challenge_and_an_unknown_key_401_without() -> None:
    with api() as client:
        missing = client.get("/pets")
    with api(Authorization="Bearer ck_nobody_123456") as client:
        unknown = client.get("/pets")
    assert error(missing)["code"] == "missingCredentials"
    assert missing.headers["www-authenticate"] == 'Bearer realm="corral"'
    assert error(unknown)["code"] == "invalidApiKey" and "www-authenticate" not in unknown.headers


def test_every_error_names_its_path_and_lists_details() -> None:
    with api("main") as client:
        body = error(client.get("/pets/987654"))
    assert body["path"] == "/v1/pets/987654" and body["details"] == []


def test_a_well_formed_request_id_is_echoed_and_another_replaced_by_a_uuid() -> None:
    with api("main", X_Request_Id="order-flow-42") as client:
        echoed = client.get("/pets", params={"limit": 1})
    with api("main", X_Request_Id="x!") as client:
        replaced = client.get("/pets", params={"limit": 1})
    assert echoed.headers["x-request-id"] == "order-flow-42"
    assert uuid.UUID(replaced.headers["x-request-id"])


# -- rate limits ------------------------------------------------------------------------


def test_the_short_window_and_the_day_are_both_shown() -> None:
    with api("hobby-1") as client:
        first = client.get("/pets/500")
        second = client.get("/pets/500")
    assert first.headers["x-ratelimit-limit"] == "5"
    assert first.headers["x-ratelimit-limit-day"] == "100"
    assert (
        int(second.headers["x-ratelimit-remaining-day"])
        == int(first.headers["x-ratelimit-remaining-day"]) - 1
    )
    assert 1 <= int(first.headers["x-ratelimit-reset"]) <= 5


def test_successes_carry_the_draft_headers_under_corrals_policy_names() -> None:
    with api("hobby-2") as client:
        answer = client.get("/pets/500")
    assert answer.headers["ratelimit-policy"] == '"burst";q=5;w=5, "daily";q=100;w=86400'
    burst = re.search(r'"burst";r=(\d+);t=(\d+)', answer.headers["ratelimit"])
    assert burst and burst.group(1) == answer.headers["x-ratelimit-remaining"]


def test_refusals_carry_no_draft_headers() -> None:
    with api("main") as client:
        answer = client.get("/pets/987654")
    assert answer.status_code == 404
    assert "ratelimit" not in answer.headers and "ratelimit-policy" not in answer.headers


def test_the_day_turns_at_midnight_in_tokyo() -> None:
    with api("main") as client:
        answer = client.get("/pets", params={"limit": 1})
    daily = re.search(r'"daily";r=\d+;t=(\d+)', answer.headers["ratelimit"])
    now = datetime.now(UTC)
    turn = now.replace(hour=15, minute=0, second=0, microsecond=0)
    if turn <= now:
        turn += timedelta(days=1)
    assert daily and abs(int(daily.group(1)) - (turn - now).total_seconds()) <= 3


def test_over_the_window_is_429_with_a_one_decimal_retry_after_and_its_milliseconds() -> None:
    with api("hobby-3") as client:
        refused = spend(client)[-1]
    body = error(refused)
    assert body["code"] == "rateLimitExceeded"
    retry = refused.headers["retry-after"]
    assert re.fullmatch(r"\d+\.\d", retry) and 0 < float(retry) <= 10.0, (
        retry
    )  # two windows at most
    assert abs(body["retryAfterMs"] - float(retry) * 1000) <= 100


def test_waiting_retry_after_is_enough() -> None:
    with api("hobby-4") as client:
        answers = spend(client)
        wait(float(answers[-1].headers["retry-after"]), 10.0)
        assert client.get("/pets/500").status_code == 200


def test_every_attempt_counts_so_a_client_that_keeps_sending_stays_refused() -> None:
    with api("hobby-5") as client:
        answers = spend(client)
        day_left = int(answers[-1].headers["x-ratelimit-remaining-day"])
        statuses = []
        for _ in range(6):  # two a second: the window is 5 s
            wait(0.5, 0.5)
            statuses.append(client.get("/pets/500"))
    assert {a.status_code for a in statuses} == {429}
    assert int(statuses[-1].headers["x-ratelimit-remaining-day"]) == day_left - 6


def test_nothing_bans_a_key_that_kept_sending() -> None:
    with api("hobby-6") as client:
        spend(client)
        for _ in range(10):
            client.get("/pets/500")
        last = client.get("/pets/500")
        wait(float(last.headers["retry-after"]), 10.0)
        assert client.get("/pets/500").status_code == 200


def test_callers_without_a_key_get_25_a_minute_per_address() -> None:
    with api(source=fresh_address()) as client:
        answers = until(lambda: client.get("/pets"), lambda a: a.status_code == 429, 40)
    assert [a.status_code for a in answers[:-1]] == [401] * 25
    assert answers[-1].headers["x-ratelimit-limit"] == "25"


# -- HTTP around it ---------------------------------------------------------------------


def test_deflate_is_preferred_to_gzip_on_a_tie_and_small_bodies_are_not_coded() -> None:
    with api("main", Accept_Encoding="gzip, deflate") as client:
        big = client.get("/pets", params={"limit": 20})
        small = client.get("/pets", params={"limit": 1})
    assert big.headers["content-encoding"] == "deflate" and isinstance(big.json(), list)
    assert "content-encoding" not in small.headers


def test_gzip_when_only_gzip_is_accepted() -> None:
    with api("main", Accept_Encoding="gzip") as client:
        answer = client.get("/pets", params={"limit": 20})
    assert answer.headers["content-encoding"] == "gzip" and isinstance(answer.json(), list)


def test_the_app_origin_may_preflight() -> None:
    with api(Origin=ORIGIN, Access_Control_Request_Method="POST") as client:
        answer = client.options("/pets")
    assert answer.status_code == 204
    assert answer.headers["access-control-allow-origin"] == ORIGIN
    assert answer.headers["access-control-max-age"] == "3600"
    assert "Origin" in answer.headers["vary"]


def test_another_origin_is_refused_403() -> None:
    with api("main", Origin="https://evil.example") as client:
        answer = client.get("/pets")
    assert answer.status_code == 403 and error(answer)["code"] == "corsOriginDenied"


@pytest.mark.parametrize("method", ["HEAD", "DELETE"])
def test_a_method_a_route_does_not_serve_is_404_not_405(method: str) -> None:
    with api("main") as client:
        answer = client.request(method, "/pets")
    assert answer.status_code == 404 and "allow" not in answer.headers


def test_a_trailing_slash_is_the_same_route() -> None:
    with api("main") as client:
        answer = client.get("/pets/", params={"limit": 2})
    assert answer.status_code == 200 and len(answer.json()) == 2


def test_the_store_is_under_maintenance_before_any_key_is_checked() -> None:
    with api() as client:
        answer = client.get("/store/orders")
    assert answer.status_code == 503 and error(answer)["code"] == "maintenance"
    assert (
        answer.headers["retry-after"].isdigit() and 0 < int(answer.headers["retry-after"]) <= 3600
    )
