"""What the spec states, checked on every Pet Store provider stand-in over real HTTP.

Each stand-in (``tests/upstream/``) makes its own choices where the spec is
silent; these tests hold them all to what it does say: the ``/v1`` base, bearer
keys, Error bodies, ``limit`` 1..100 default 20, the ``status`` filter, ``201``
with the new id, ``404`` for a missing pet, ``401`` for a missing or invalid key,
``X-RateLimit-*`` on every answer (every client checks it), ``429`` with
``Retry-After``, a ban for a client that keeps going, and ``getPet``'s removal on
5 December 2030. Each stand-in's own choices are checked in its own test module
(Kennel, Menagerie) or by the suite its clients wrote (``tests/client_suites/``, run
by ``tests/test_verdict_agreement.py``). Where one of the three gateway stand-ins
goes past the spec on purpose, as the gateway it copies does, its ``Profile`` says so.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

import httpx
import pytest

from tests import upstream
from tests.provider_support import client, error_of, http_date, is_pet, until

ROOMY = "conformance-roomy-key"
TIGHT = [f"conformance-tight-key-{n}" for n in range(2)]


@dataclass(frozen=True)
class Profile:
    module: str
    roomy_plan: str  # a plan no test here exhausts
    tight_plan: str  # a small one, for 429s and bans
    bans: bool = True  # the spec says a key that keeps going "may" be banned
    # Where a stand-in goes past the spec on purpose, as the gateway it copies does (its
    # docstring says so): a string of digits read as an integer, getPet announced by a
    # Warning header rather than Deprecation, the store's maintenance answered before
    # the key is checked.
    digits_as_integers: bool = False
    deprecation_header: bool = True
    orders_without_a_key: int = 401
    args: tuple[str, ...] = ()  # the provider's own options (a roomy custom plan)


PROFILES = [
    Profile("kennel", "pro", "sandbox"),
    Profile("menagerie", "pro", "developer"),
    # No ban in 115 requests sent after its allowance was spent: it answers each 429.
    Profile("petstore_standin", "starter", "trial", bans=False),
    # The gateways' plans are rates (a bucket, a sliding window counting every attempt, GCRA):
    # the roomy key is a custom enterprise plan no burst of these tests reaches.
    Profile(
        "tollgate", "enterprise", "starter", bans=False, digits_as_integers=True,
        args=("--plan", "enterprise=100000/1000"),
    ),
    Profile(
        "corral", "enterprise", "hobby", bans=False, digits_as_integers=True,
        orders_without_a_key=503, args=("--plan", "enterprise=100000/60/10000000"),
    ),
    # Its burst plan refuses with 503 first; "fledgling" spends its hour before its burst.
    Profile(
        "aviary", "enterprise", "fledgling", deprecation_header=False,
        args=("--plan", "enterprise=1000/5000/10000000"),
    ),
]  # fmt: skip


@pytest.fixture(scope="module", params=PROFILES, ids=lambda profile: profile.module)
def provider(request: pytest.FixtureRequest) -> Iterator[tuple[Profile, str]]:
    profile: Profile = request.param
    keys = {ROOMY: profile.roomy_plan, **dict.fromkeys(TIGHT, profile.tight_plan)}
    with upstream.provider(profile.module, keys, *profile.args) as process:
        with client(process.url, ROOMY) as c:
            # Enough pets that the default page (20) is a real limit.
            while len(c.get("/pets", params={"limit": 100}).json()) < 25:
                created = c.post("/pets", json={"name": "Stock", "categoryId": 1})
                assert created.status_code == 201, created.text
        yield profile, process.url


@pytest.fixture
def base(provider: tuple[Profile, str]) -> str:
    return provider[1]


def test_the_api_lives_under_v1(base: str) -> None:
    with client(base, ROOMY) as c:
        answer = c.get("/pets")
        assert answer.status_code == 200
        assert answer.headers["content-type"].split(";")[0].strip() == "application/json"
        assert all(is_pet(pet) for pet in answer.json())
    with client(upstream.origin(base), ROOMY) as c:
        error_of(c.get("/pets"), 404)


def test_limit_defaults_to_20_and_takes_1_to_100(base: str) -> None:
    with client(base, ROOMY) as c:
        assert len(c.get("/pets").json()) == 20
        assert len(c.get("/pets", params={"limit": 1}).json()) == 1
        assert 25 <= len(c.get("/pets", params={"limit": 100}).json()) <= 100


@pytest.mark.parametrize("limit", ["0", "-1", "abc"])
def test_a_limit_that_is_not_1_to_100_is_refused(base: str, limit: str) -> None:
    with client(base, ROOMY) as c:
        error_of(c.get("/pets", params={"limit": limit}), {400, 422})


def test_the_status_filter_keeps_only_that_status(base: str) -> None:
    with client(base, ROOMY) as c:
        for status in ("available", "pending", "sold"):
            created = c.post("/pets", json={"name": "Filtered", "categoryId": 2, "status": status})
            assert created.status_code == 201
            listed = c.get("/pets", params={"status": status, "limit": 100}).json()
            assert listed and {pet["status"] for pet in listed} == {status}
        error_of(c.get("/pets", params={"status": "lost"}), {400, 422})


def test_create_answers_201_with_the_assigned_id(base: str) -> None:
    with client(base, ROOMY) as c:
        created = c.post("/pets", json={"name": "Conformance", "categoryId": 7, "status": "sold"})
        assert created.status_code == 201
        pet = created.json()
        assert is_pet(pet)
        assert (pet["name"], pet["categoryId"], pet["status"]) == ("Conformance", 7, "sold")
        fetched = c.get(f"/pets/{pet['id']}")
        assert fetched.status_code == 200
        assert fetched.json() == pet


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"name": "No category"},
        {"categoryId": 3},
        {"name": 7, "categoryId": 3},
        {"name": "String id", "categoryId": "3"},
        {"name": "Lost", "categoryId": 3, "status": "lost"},
    ],
)
def test_create_refuses_a_body_missing_fields_or_with_invalid_values(
    provider: tuple[Profile, str], body: dict[str, object]
) -> None:
    profile, base = provider
    if profile.digits_as_integers and body.get("categoryId") == "3" and "name" in body:
        body = {**body, "categoryId": "three"}  # a string of digits is read as an integer
    with client(base, ROOMY) as c:
        before = c.get("/pets", params={"limit": 100}).json()
        error_of(c.post("/pets", json=body), {400, 422})
        assert c.get("/pets", params={"limit": 100}).json() == before


def test_a_missing_pet_is_404(base: str) -> None:
    with client(base, ROOMY) as c:
        error_of(c.get("/pets/9007199254740993"), 404)


@pytest.mark.parametrize(
    "authorization", [None, "Bearer never-issued-key-7f3a9c", "Basic dXNlcjpwYXNz", "Bearer"]
)
@pytest.mark.parametrize("method, path", [("GET", "/pets"), ("POST", "/pets"), ("GET", "/pets/1")])
def test_a_missing_or_invalid_key_is_401(
    base: str, authorization: str | None, method: str, path: str
) -> None:
    headers = {"Authorization": authorization} if authorization else {}
    body = {"name": "Nobody's", "categoryId": 1} if method == "POST" else None
    with client(base) as c:
        error_of(c.request(method, path, headers=headers, json=body), 401)


def test_over_the_limit_is_429_with_retry_after(base: str) -> None:
    with client(base, TIGHT[0]) as c:
        answers = until(lambda: c.get("/pets", params={"limit": 1}), _refused, bound=400)
    assert {a.status_code for a in answers[:-1]} == {200}
    refused = answers[-1]
    error_of(refused, 429)
    _check_retry_after(refused)


def test_a_client_that_keeps_going_after_429_is_banned(provider: tuple[Profile, str]) -> None:
    profile, base = provider
    if not profile.bans:
        pytest.skip(f"{profile.module} bans nobody (the spec: a key 'may' be banned)")
    with client(base, TIGHT[1]) as c:
        first = until(lambda: c.get("/pets", params={"limit": 1}), _refused, bound=400)[-1]
        limited = error_of(first, 429)["code"]
        banned = until(
            lambda: c.get("/pets", params={"limit": 1}),
            lambda answer: answer.status_code != 429 or answer.json()["code"] != limited,
            bound=50,
        )[-1]
        code = error_of(banned, {403, 429})["code"]
        _check_retry_after(banned)
        assert error_of(c.get("/pets", params={"limit": 1}), banned.status_code)["code"] == code


def test_get_pet_is_deprecated_and_removed_on_5_december_2030(
    provider: tuple[Profile, str],
) -> None:
    profile, base = provider
    with client(base, ROOMY) as c:
        pet_id = c.get("/pets", params={"limit": 1}).json()[0]["id"]
        answer = c.get(f"/pets/{pet_id}")
    assert answer.status_code == 200
    if profile.deprecation_header:
        assert answer.headers.get("Deprecation")
    else:
        assert "deprecated" in answer.headers["Warning"]
    sunset = datetime.fromtimestamp(http_date(answer.headers["Sunset"]), UTC)
    assert sunset.date().isoformat() == "2030-12-05"


def test_store_orders_exists(provider: tuple[Profile, str]) -> None:
    profile, base = provider
    with client(base, ROOMY) as c:
        answer = c.get("/store/orders")
    assert answer.status_code not in (404, 405)
    if answer.status_code >= 400:
        error_of(answer, answer.status_code)
    with client(base) as c:
        error_of(c.get("/store/orders"), profile.orders_without_a_key)


def _refused(answer: httpx.Response) -> bool:
    return answer.status_code == 429


def _check_retry_after(answer: httpx.Response) -> None:
    # The spec leaves its unit and format open: seconds (whole or decimal) or an HTTP-date.
    value = answer.headers["Retry-After"]
    assert re.fullmatch(r"\d+(\.\d+)?", value) or http_date(value) > 0, value
