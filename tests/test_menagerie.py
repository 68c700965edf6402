"""Menagerie's own choices (``tests/upstream/menagerie.py``'s docstring), each over real HTTP.

The spec's stated behaviour is checked for every stand-in in ``test_providers.py``;
here every point of Menagerie's list of choices is held to what it says. Its
windows are aligned to the clock, so a test that spends one runs within one
window (``within_one_window``: run again, with fresh keys, when a boundary fell
in between); nothing waits.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import httpx
import pytest

from tests import upstream
from tests.provider_support import client, error_of, fresh_address, http_date, within_one_window

PRO = "mg-pro-main"
REFUSALS = "mg-pro-refusals"
DEVELOPER = [f"mg-dev-{n:02d}" for n in range(12)]
TINY_DAY = [f"mg-tiny-{n}" for n in range(3)]
ENTERPRISE = "mg-enterprise"
DOCS = "https://developer.menagerie.example/errors/"
CONTENT_TYPE = "application/json;charset=UTF-8"
DEPRECATION = {
    "Deprecation": "Mon, 03 Mar 2025 00:00:00 GMT",
    "Sunset": "Thu, 05 Dec 2030 09:00:00 GMT",
    "Link": '</v1/pets>; rel="alternate", '
    '<https://developer.menagerie.example/policies/sunset>; rel="sunset"',
}
MINUTE, DAY = 60, 86_400
ABSENT = 9_007_199_254_740_993  # above 2^53: never an id Menagerie gives


@pytest.fixture(scope="module")
def menagerie() -> Iterator[str]:
    keys = {
        PRO: "pro",
        REFUSALS: "pro",
        **dict.fromkeys(DEVELOPER, "developer"),
        **dict.fromkeys(TINY_DAY, "tinyday"),
        ENTERPRISE: "enterprise",
        "mg-free": "free",
        "mg-business": "business",
    }
    args = ("--plan", "tinyday=50/3", "--plan", "enterprise=2500/900000")
    with upstream.provider("menagerie", keys, *args) as process:
        yield process.url


WITHIN = [f"mg-within-{n}" for n in range(6)]


@pytest.fixture(scope="module")
def removed() -> Iterator[str]:
    """Menagerie after getPet's removal, counting refusals toward a suspension over 1 s."""
    keys = {PRO: "pro", **dict.fromkeys(WITHIN, "developer")}
    args = ("--sunset", "2020-01-01T09:00:00Z", "--ban-within", "1")
    with upstream.provider("menagerie", keys, *args) as process:
        yield process.url


class Keys:
    """Hands out the developer keys, one per attempt, never twice."""

    def __init__(self, keys: list[str]) -> None:
        self.left = iter(keys)

    def __call__(self) -> str:
        return next(self.left)


DEVELOPER_KEYS = Keys(DEVELOPER)


# --- headers ----------------------------------------------------------------------------


def test_constant_headers_on_every_answer(menagerie: str) -> None:
    with client(menagerie, PRO) as c, client(menagerie) as anonymous:
        answers = [
            c.get("/pets"),
            c.post("/pets", json={"name": "Header", "categoryId": 1}),
            c.get("/nowhere"),
            c.delete("/pets"),
            c.get("/pets", params={"limit": 0}),
            anonymous.get("/pets"),
        ]
    assert [a.status_code for a in answers] == [200, 201, 404, 405, 422, 401]
    for answer in answers:
        assert answer.headers["Vary"] == "Authorization"
        assert answer.headers["X-Content-Type-Options"] == "nosniff"
        assert answer.headers["Content-Type"] == CONTENT_TYPE
        assert not {"Server", "X-Request-Id", "ETag", "WWW-Authenticate"} & set(answer.headers)


def test_a_correlation_id_is_echoed_when_valid_else_new(menagerie: str) -> None:
    sent = uuid.uuid4()
    with client(menagerie, PRO) as c:
        fresh = [c.get("/pets", params={"limit": 1}) for _ in range(2)]
        echoed = c.get("/pets", headers={"X-Correlation-Id": str(sent).upper()})
        replaced = c.get("/pets", headers={"X-Correlation-Id": "not-a-uuid"})
    ids = [uuid.UUID(a.headers["X-Correlation-Id"]) for a in (*fresh, replaced)]
    assert {i.version for i in ids} == {4}
    assert len(set(ids)) == 3
    assert echoed.headers["X-Correlation-Id"] == str(sent)


def test_non_ascii_is_escaped(menagerie: str) -> None:
    with client(menagerie, PRO) as c:
        created = c.post("/pets", json={"name": "Ñandú", "categoryId": 2})
    assert b"\\u00d1and\\u00fa" in created.content
    assert created.json()["name"] == "Ñandú"


def test_201_has_an_absolute_location(menagerie: str) -> None:
    with client(menagerie, PRO) as c:
        created = c.post("/pets", json={"name": "Located", "categoryId": 3})
        pet = created.json()
        assert created.headers["Location"] == f"{menagerie}/pets/{pet['id']}"
        assert c.get(created.headers["Location"]).json() == pet


def test_reads_are_cacheable_for_10_s_and_nothing_else_is(menagerie: str) -> None:
    with client(menagerie, PRO) as c, client(menagerie) as anonymous:
        pet_id = c.get("/pets", params={"limit": 1}).json()[0]["id"]
        reads = [c.get("/pets"), c.get(f"/pets/{pet_id}"), c.get("/store/orders")]
        others = [
            c.post("/pets", json={"name": "Uncached", "categoryId": 1}),
            c.get(f"/pets/{ABSENT}"),
            c.get("/pets", params={"status": "lost"}),
            anonymous.get("/pets"),
        ]
    assert [a.status_code for a in reads] == [200, 200, 200]
    assert {a.headers["Cache-Control"] for a in reads} == {"private, max-age=10"}
    assert [a.status_code for a in others] == [201, 404, 400, 401]
    assert {a.headers["Cache-Control"] for a in others} == {"no-store"}


def test_every_answer_on_the_get_pet_path_is_deprecated(menagerie: str) -> None:
    with client(menagerie, PRO) as c, client(menagerie) as anonymous:
        pet_id = c.get("/pets", params={"limit": 1}).json()[0]["id"]
        on_path = [
            c.get(f"/pets/{pet_id}"),
            c.head(f"/pets/{pet_id}"),
            c.get(f"/pets/{ABSENT}"),
            c.get("/pets/abc"),
            c.post(f"/pets/{pet_id}"),
            anonymous.get(f"/pets/{pet_id}"),
        ]
        elsewhere = [c.get("/pets"), c.get("/store/orders")]
    assert [a.status_code for a in on_path] == [200, 200, 404, 400, 405, 401]
    for answer in on_path:
        for name, value in DEPRECATION.items():
            assert answer.headers[name] == value
    for answer in elsewhere:
        assert not {"Deprecation", "Sunset", "Link"} & set(answer.headers)


def test_after_its_sunset_get_pet_is_gone_like_an_unknown_path(removed: str) -> None:
    with client(removed, PRO) as c:
        answer = c.get("/pets/1")
    assert error_of(answer, 404)["code"] == "ResourceNotFound"
    assert not {"Deprecation", "Sunset", "Link"} & set(answer.headers)


# --- refusals ---------------------------------------------------------------------------

NEW = {"name": "Valid", "categoryId": 1}


def _json(document: Any) -> dict[str, Any]:
    return {"content": json.dumps(document), "headers": {"Content-Type": "application/json"}}


def _chunks() -> Iterator[bytes]:
    yield b'{"name": "'
    for _ in range(40):
        yield b"x" * 1024
    yield b'", "categoryId": 1}'


BAD_REQUESTS = [
    # createPet, in the order checked
    ("over 32 KiB", "POST", "/pets", {"content": b"{" * 32769}, 413, "PayloadTooLarge"),
    (
        "over 32 KiB, text/plain",
        "POST",
        "/pets",
        {"content": b"{" * 32769, "headers": {"Content-Type": "text/plain"}},
        413,
        "PayloadTooLarge",
    ),
    ("over 32 KiB, chunked", "POST", "/pets", {"content": _chunks}, 413, "PayloadTooLarge"),
    (
        "text/plain, empty",
        "POST",
        "/pets",
        {"headers": {"Content-Type": "text/plain"}},
        415,
        "UnsupportedMediaType",
    ),
    ("empty", "POST", "/pets", _json(NEW) | {"content": b""}, 400, "EmptyRequestBody"),
    ("no JSON", "POST", "/pets", _json(NEW) | {"content": b'{"name":'}, 400, "MalformedJson"),
    ("NaN", "POST", "/pets", _json(NEW) | {"content": b'{"categoryId":NaN}'}, 400, "MalformedJson"),
    ("a list", "POST", "/pets", _json([NEW]), 400, "ValidationFailed"),
    ("no name", "POST", "/pets", _json({"categoryId": 1}), 400, "ValidationFailed"),
    ("7.5", "POST", "/pets", _json({"name": "a", "categoryId": 7.5}), 400, "ValidationFailed"),
    ("true", "POST", "/pets", _json({"name": "a", "categoryId": True}), 400, "ValidationFailed"),
    ("'7'", "POST", "/pets", _json({"name": "a", "categoryId": "7"}), 400, "ValidationFailed"),
    ("2^63", "POST", "/pets", _json({"name": "a", "categoryId": 2**63}), 400, "ValidationFailed"),
    ("lost", "POST", "/pets", _json({**NEW, "status": "lost"}), 400, "ValidationFailed"),
    # listPets
    *[
        (f"limit={v!r}", "GET", "/pets", {"params": {"limit": v}}, 400, "InvalidLimit")
        for v in ("abc", "1.5", "")
    ],
    *[
        (f"limit={v}", "GET", "/pets", {"params": {"limit": v}}, 422, "LimitBelowMinimum")
        for v in ("0", "-3")
    ],
    *[
        (f"limit={v}", "GET", "/pets", {"params": {"limit": v}}, 422, "LimitAboveMaximum")
        for v in ("101", "99999999999999999999999")
    ],
    *[
        (f"status={v!r}", "GET", "/pets", {"params": {"status": v}}, 400, "InvalidStatus")
        for v in ("lost", "", "Sold")
    ],
    # getPet
    ("petId abc", "GET", "/pets/abc", {}, 400, "InvalidPetId"),
    ("petId 2^63", "GET", "/pets/9223372036854775808", {}, 400, "InvalidPetId"),
    ("missing pet", "GET", f"/pets/{ABSENT}", {}, 404, "PetNotFound"),
    # routing
    ("unknown path", "GET", "/nowhere", {}, 404, "ResourceNotFound"),
    ("trailing slash", "GET", "/pets/", {}, 404, "ResourceNotFound"),
    ("DELETE /pets", "DELETE", "/pets", {}, 405, "MethodNotAllowed"),
    ("POST getPet", "POST", "/pets/1", {}, 405, "MethodNotAllowed"),
]


@pytest.mark.parametrize(
    "method, path, request_args, status, code",
    [case[1:] for case in BAD_REQUESTS],
    ids=[case[0] for case in BAD_REQUESTS],
)
def test_each_refusal_has_its_own_status_and_code(
    menagerie: str, method: str, path: str, request_args: dict[str, Any], status: int, code: str
) -> None:
    args = dict(request_args)
    if callable(args.get("content")):
        args["content"] = args["content"]()
    with client(menagerie, REFUSALS) as c:
        before = time.time()
        answer = c.request(method, path, **args)
        after = time.time()
    _check_error(answer, status, code, before, after)


@pytest.mark.parametrize(
    "authorization, code",
    [
        (None, "MissingApiKey"),
        ("Basic dXNlcjpwYXNz", "MalformedAuthorization"),
        ("Bearer", "MalformedAuthorization"),
        ("Bearer mg-never-issued", "InvalidApiKey"),
    ],
)
@pytest.mark.parametrize("path", ["/pets", "/nowhere"])
def test_the_key_is_checked_before_the_path_with_no_challenge(
    menagerie: str, authorization: str | None, code: str, path: str
) -> None:
    headers = {"Authorization": authorization} if authorization else {}
    with client(menagerie) as c:
        before = time.time()
        answer = c.get(path, headers=headers)
        after = time.time()
    _check_error(answer, 401, code, before, after)
    assert "WWW-Authenticate" not in answer.headers


def test_the_bearer_scheme_is_case_insensitive(menagerie: str) -> None:
    with client(menagerie) as c:
        assert c.get("/pets", headers={"Authorization": f"bearer {PRO}"}).status_code == 200


def test_405_names_the_allowed_methods(menagerie: str) -> None:
    with client(menagerie, REFUSALS) as c:
        assert c.delete("/pets").headers["Allow"] == "GET, POST"
        assert c.head("/pets").headers["Allow"] == "GET, POST"
        assert c.post("/pets/1").headers["Allow"] == "GET, HEAD"
        assert c.post("/store/orders").headers["Allow"] == "GET, HEAD"


def test_refused_bodies_store_nothing_and_a_missing_content_type_is_json(menagerie: str) -> None:
    with client(menagerie, PRO) as c:
        before = c.get("/pets", params={"limit": 100}).json()
        for _, method, path, args, _, _ in BAD_REQUESTS:
            if method == "POST" and not callable(args.get("content")):
                assert c.post(path, **args).status_code >= 400
        assert c.get("/pets", params={"limit": 100}).json() == before
        untyped = c.post("/pets", content=json.dumps({"name": "Untyped", "categoryId": 7.0}))
    assert untyped.status_code == 201
    assert type(untyped.json()["categoryId"]) is int


def test_store_orders_is_an_empty_list_also_to_head(menagerie: str) -> None:
    with client(menagerie, PRO) as c:
        got, head = c.get("/store/orders"), c.head("/store/orders")
    assert (got.status_code, got.json()) == (200, [])
    assert (head.status_code, head.content) == (200, b"")


# --- rate limits ------------------------------------------------------------------------


def test_the_main_headers_describe_the_day_and_burst_headers_the_minute(menagerie: str) -> None:
    def attempt(n: int) -> tuple[httpx.Response, float, float]:
        with client(menagerie, DEVELOPER_KEYS()) as c:
            before = time.time()
            answer = c.get("/pets", params={"limit": 1})
            return answer, before, time.time()

    answer, before, after = within_one_window(MINUTE, attempt)
    assert answer.headers["X-RateLimit-Limit"] == "40"
    assert answer.headers["X-RateLimit-Remaining"] == "39"
    assert int(answer.headers["X-RateLimit-Reset"]) == (math.floor(before / DAY) + 1) * DAY
    assert answer.headers["X-RateLimit-Burst-Limit"] == "12"
    assert answer.headers["X-RateLimit-Burst-Remaining"] == "11"
    boundary = (math.floor(before / MINUTE) + 1) * MINUTE
    burst_reset = int(answer.headers["X-RateLimit-Burst-Reset"])
    assert max(1, math.ceil(boundary - after)) <= burst_reset <= math.ceil(boundary - before)


def test_over_the_minute_is_429_with_an_http_date_and_consumes_nothing(menagerie: str) -> None:
    def attempt(n: int) -> tuple[list[httpx.Response], float]:
        with client(menagerie, DEVELOPER_KEYS()) as c:
            start = time.time()
            return [c.get("/pets", params={"limit": 1}) for _ in range(14)], start

    answers, start = within_one_window(MINUTE, attempt)
    assert [a.status_code for a in answers] == [200] * 12 + [429, 429]
    for refused in answers[12:]:
        assert error_of(refused, 429)["code"] == "TooManyRequests"
        assert http_date(refused.headers["Retry-After"]) == (start // MINUTE + 1) * MINUTE
        assert refused.headers["X-RateLimit-Remaining"] == "28"  # the day: 40 - 12
        assert refused.headers["X-RateLimit-Burst-Remaining"] == "0"


def test_a_spent_day_is_429_until_utc_midnight(menagerie: str) -> None:
    keys = Keys(TINY_DAY)

    def attempt(n: int) -> list[httpx.Response]:
        with client(menagerie, keys()) as c:
            return [c.get("/pets", params={"limit": 1}) for _ in range(4)]

    answers = within_one_window(DAY, attempt)
    assert [a.status_code for a in answers] == [200, 200, 200, 429]
    refused = answers[-1]
    assert error_of(refused, 429)["code"] == "TooManyRequests"
    assert refused.headers["X-RateLimit-Remaining"] == "0"
    midnight = int(refused.headers["X-RateLimit-Reset"])
    assert midnight % DAY == 0
    assert http_date(refused.headers["Retry-After"]) == midnight


def test_six_refusals_within_30_s_suspend_for_90_s_with_403(menagerie: str) -> None:
    def attempt(n: int) -> tuple[list[httpx.Response], float, float]:
        with client(menagerie, DEVELOPER_KEYS()) as c:
            start = time.time()
            pet_id = c.get("/pets", params={"limit": 1}).json()[0]["id"]
            answers = [c.get(f"/pets/{pet_id}") for _ in range(19)]
            return answers, start, time.time()

    answers, start, end = within_one_window(MINUTE, attempt)
    assert [a.status_code for a in answers] == [200] * 11 + [429] * 6 + [403, 403]
    for answer in answers[11:]:
        for name, value in DEPRECATION.items():
            assert answer.headers[name] == value
    for suspended in answers[-2:]:
        assert error_of(suspended, 403)["code"] == "ApiKeySuspended"
        wait = int(suspended.headers["Retry-After"])
        # The suspension began after ``start`` and is read before ``end``.
        assert max(1, math.ceil(start + 90 - end)) <= wait <= 90
        assert suspended.headers["X-RateLimit-Burst-Remaining"] == "0"
        assert suspended.headers["X-RateLimit-Burst-Reset"] == str(wait)


def test_only_refusals_within_the_span_count_toward_a_suspension(removed: str) -> None:
    """With ``--ban-within 1``: 3 refusals, a pause over 1 s, then 5 more do not suspend."""
    keys = Keys(WITHIN)

    def attempt(n: int) -> tuple[list[httpx.Response], float]:
        with client(removed, keys()) as c:
            spent = [c.get("/pets", params={"limit": 1}) for _ in range(15)]  # 12 + 3 refused
            time.sleep(1.05)
            start = time.monotonic()
            burst = [c.get("/pets", params={"limit": 1}) for _ in range(7)]
            return [*spent, *burst], time.monotonic() - start

    for _ in range(3):
        answers, span = within_one_window(MINUTE, attempt)
        if span < 1.0:  # else the burst itself was not "within 1 s": run it again
            break
    else:
        raise AssertionError("seven requests never took less than a second")
    statuses = [a.status_code for a in answers]
    assert statuses == [200] * 12 + [429] * 3 + [429] * 6 + [403]


def test_callers_without_a_valid_key_share_5_per_minute_per_address(menagerie: str) -> None:
    headers = [{}, {"Authorization": "Bearer mg-unknown"}, {"Authorization": "Token x"}]

    def attempt(n: int) -> list[httpx.Response]:
        with client(menagerie, source=fresh_address()) as c:
            return [c.get("/pets", headers=headers[i % 3]) for i in range(6)]

    answers = within_one_window(MINUTE, attempt)
    assert [a.status_code for a in answers] == [401] * 5 + [429]
    assert {a.headers["X-RateLimit-Limit"] for a in answers} == {"25"}
    assert {a.headers["X-RateLimit-Burst-Limit"] for a in answers} == {"5"}
    assert [a.headers["X-RateLimit-Burst-Remaining"] for a in answers] == list("432100")
    assert error_of(answers[-1], 429)["code"] == "TooManyRequests"


@pytest.mark.parametrize(
    "key, per_day, per_minute",
    [
        ("mg-free", "1000", "60"),
        (PRO, "10000", "300"),
        ("mg-business", "100000", "1000"),
        (DEVELOPER[-1], "40", "12"),
    ],
)
def test_each_plan_shows_its_day_and_minute(
    menagerie: str, key: str, per_day: str, per_minute: str
) -> None:
    with client(menagerie, key) as c:
        answer = c.get("/pets")
    limits = answer.headers["X-RateLimit-Limit"], answer.headers["X-RateLimit-Burst-Limit"]
    assert limits == (per_day, per_minute)


def test_enterprise_is_custom(menagerie: str) -> None:
    with client(menagerie, ENTERPRISE) as c:
        answer = c.get("/pets")
    assert answer.headers["X-RateLimit-Limit"] == "900000"
    assert answer.headers["X-RateLimit-Burst-Limit"] == "2500"
    refused = subprocess.run(
        [sys.executable, "-m", "tests.upstream.menagerie", "--port", "0", "--key", "k=enterprise"],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=upstream.ROOT,
    )
    assert refused.returncode == 2
    assert "Enterprise is custom" in refused.stderr


# --- semantics --------------------------------------------------------------------------


def test_unknown_fields_are_kept_after_the_known_ones_and_an_id_is_ignored(
    menagerie: str,
) -> None:
    body = {"tags": ["shy"], "name": "Kept", "id": 5, "categoryId": 4, "colour": "grey"}
    with client(menagerie, PRO) as c:
        created = c.post("/pets", json=body).json()
        fetched = c.get(f"/pets/{created['id']}").json()
    assert list(created) == ["id", "name", "categoryId", "tags", "colour"]
    assert (created["tags"], created["colour"]) == (["shy"], "grey")
    assert fetched == created


def test_status_has_no_default(menagerie: str) -> None:
    with client(menagerie, PRO) as c:
        pet = c.post("/pets", json={"name": "Undecided", "categoryId": 5}).json()
    assert "status" not in pet


def test_ids_are_random_below_2_53_and_the_list_keeps_insertion_order(menagerie: str) -> None:
    with client(menagerie, PRO) as c:
        made = [c.post("/pets", json={"name": f"Order {n}", "categoryId": 6}).json() for n in "abc"]
        listed = c.get("/pets", params={"limit": 100}).json()
    assert len(listed) < 100
    assert listed[-3:] == made
    assert all(1 <= pet["id"] < 2**53 for pet in listed)


def test_head_is_served_on_get_pet_but_not_on_the_list(menagerie: str) -> None:
    with client(menagerie, PRO) as c:
        pet_id = c.get("/pets", params={"limit": 1}).json()[0]["id"]
        got, head = c.get(f"/pets/{pet_id}"), c.head(f"/pets/{pet_id}")
        listing = c.head("/pets")
    assert (head.status_code, head.content) == (200, b"")
    assert head.headers["Content-Length"] == str(len(got.content))
    assert listing.status_code == 405


def test_the_first_value_of_a_repeated_parameter_wins(menagerie: str) -> None:
    with client(menagerie, PRO) as c:
        assert len(c.get("/pets?limit=1&limit=3").json()) == 1
        assert {p.get("status") for p in c.get("/pets?status=sold&status=available").json()} == {
            "sold"
        }


def test_eight_pets_are_seeded_with_statuses_in_turn(removed: str) -> None:
    with client(removed, PRO) as c:
        pets = c.get("/pets", params={"limit": 100}).json()
    assert [p["name"] for p in pets] == [
        "Okapi",
        "Tapir",
        "Quokka",
        "Axolotl",
        "Capybara",
        "Fennec",
        "Pangolin",
        "Kinkajou",
    ]
    assert [p["status"] for p in pets[:4]] == ["available", "pending", "sold", "available"]


def _check_error(
    answer: httpx.Response, status: int, code: str, before: float, after: float
) -> None:
    body = error_of(answer, status)
    assert body["code"] == code
    assert set(body) == {"code", "message", "status", "timestamp", "documentation"}
    assert body["documentation"] == DOCS + code
    assert body["timestamp"].endswith("Z") and len(body["timestamp"]) == len(
        "2026-01-01T00:00:00.000Z"
    )
    stamp = datetime.fromisoformat(body["timestamp"]).timestamp()
    assert before - 0.001 <= stamp <= after + 0.001
