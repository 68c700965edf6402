"""Kennel's own choices (``tests/upstream/kennel.py``'s docstring), each over real HTTP.

The spec's stated behaviour is checked for every stand-in in ``test_providers.py``;
here every point of Kennel's list of choices is held to what it says.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests import upstream
from tests.provider_support import client, error_of, http_date, until

REFUSALS = "kn-pro-refusals"
PRO = "kn-pro-main"
SANDBOX = [f"kn-sandbox-{n:02d}" for n in range(6)]
TINY_DAY = "kn-tiny-day"
ENTERPRISE = "kn-enterprise"
REALM = 'Bearer realm="kennel-api"'
CONSTANT = {
    "Server": "kennel/2.3.1",
    "X-Powered-By": "Kennel",
    "Strict-Transport-Security": "max-age=31536000; includeSubDomains",
}
DEPRECATION = {
    "Deprecation": "@1726358400",
    "Sunset": "Thu, 05 Dec 2030 12:00:00 GMT",
    "Link": '<https://developer.kennel.example/deprecations/get-pet>; rel="deprecation"; '
    'type="text/html"',
}
MEDIA_TYPE = "application/json; charset=utf-8"
TRACE = re.compile(r"^[0-9a-f]{32}$")


@pytest.fixture(scope="module")
def kennel() -> Iterator[str]:
    keys = {
        REFUSALS: "pro",
        PRO: "pro",
        **dict.fromkeys(SANDBOX, "sandbox"),
        TINY_DAY: "tinyday",
        ENTERPRISE: "enterprise",
        "kn-free": "free",
        "kn-business": "business",
    }
    args = ("--plan", "tinyday=50/3", "--plan", "enterprise=2000/500000", "--pets", "120")
    with upstream.provider("kennel", keys, *args) as process:
        yield process.url


SHORT = [f"kn-short-{n:02d}" for n in range(4)]
SHORT_WINDOW = 1.0


@pytest.fixture(scope="module")
def short() -> Iterator[str]:
    """Kennel with a one-second 'minute', a tiny day plan, and getPet already removed."""
    keys = {**dict.fromkeys(SHORT[:3], "sandbox"), SHORT[3]: "tiny"}
    args = ("--window-seconds", str(SHORT_WINDOW), "--plan", "tiny=3/6")
    with upstream.provider("kennel", keys, *args, "--sunset", "2020-01-01T00:00:00Z") as process:
        yield process.url


# --- headers ----------------------------------------------------------------------------


def test_constant_headers_and_a_trace_id_on_every_answer(kennel: str) -> None:
    with client(kennel, PRO) as c, client(kennel) as anonymous:
        answers = [
            c.get("/pets"),
            c.post("/pets", json={"name": "Header", "categoryId": 1}),
            c.get("/nowhere"),
            c.delete("/pets"),
            c.post("/pets", json={"name": "Header", "categoryId": 1, "colour": "red"}),
            anonymous.get("/pets"),
        ]
    assert [a.status_code for a in answers] == [200, 201, 404, 405, 422, 401]
    traces = set()
    for answer in answers:
        for name, value in CONSTANT.items():
            assert answer.headers[name] == value
        assert "X-Request-Id" not in answer.headers
        assert TRACE.match(answer.headers["X-Trace-Id"])
        traces.add(answer.headers["X-Trace-Id"])
        if answer.status_code >= 400:
            assert answer.json()["traceId"] == answer.headers["X-Trace-Id"]
    assert len(traces) == len(answers)


def test_bodies_are_utf8_json_with_a_charset(kennel: str) -> None:
    with client(kennel, PRO) as c:
        created = c.post("/pets", json={"name": "Ñandú 🐾", "categoryId": 2})
        refused = c.get("/pets", params={"limit": "x"})
    for answer in (created, refused):
        assert answer.headers["Content-Type"] == MEDIA_TYPE
    assert "Ñandú 🐾".encode() in created.content


def test_201_has_a_location_path(kennel: str) -> None:
    with client(kennel, PRO) as c:
        created = c.post("/pets", json={"name": "Located", "categoryId": 3})
        pet = created.json()
        assert created.headers["Location"] == f"/v1/pets/{pet['id']}"
    with client(upstream.origin(kennel), PRO) as c:
        assert c.get(created.headers["Location"]).json() == pet


def test_get_pet_has_an_etag_and_answers_if_none_match_with_304(kennel: str) -> None:
    with client(kennel, PRO) as c:
        first = c.get("/pets/7")
        etag = first.headers["ETag"]
        assert re.fullmatch(r'"[0-9a-f]{16}"', etag)
        assert first.headers["Cache-Control"] == "private, no-cache"
        assert c.get("/pets/7").headers["ETag"] == etag
        for tags in (etag, f'"other", {etag}', "*"):
            unchanged = c.get("/pets/7", headers={"If-None-Match": tags})
            assert unchanged.status_code == 304
            assert unchanged.content == b""
            assert unchanged.headers["ETag"] == etag
            for name, value in DEPRECATION.items():
                assert unchanged.headers[name] == value
        assert c.get("/pets/7", headers={"If-None-Match": '"other"'}).status_code == 200
        assert "ETag" not in c.get("/pets").headers


def test_deprecation_headers_only_on_get_pet_200_and_304(kennel: str) -> None:
    with client(kennel, PRO) as c, client(kennel) as anonymous:
        ok = c.get("/pets/1")
        others = [
            c.get("/pets/9223372036854775807"),
            c.get("/pets/abc"),
            anonymous.get("/pets/1"),
            c.get("/pets"),
        ]
    assert ok.status_code == 200
    for name, value in DEPRECATION.items():
        assert ok.headers[name] == value
    assert [a.status_code for a in others] == [404, 400, 401, 200]
    for answer in others:
        assert not {"Deprecation", "Sunset", "Link"} & set(answer.headers)


def test_get_pet_after_its_sunset_is_410_without_deprecation_headers(short: str) -> None:
    with client(short, SHORT[0]) as c:
        gone = c.get("/pets/1")
    assert error_of(gone, 410)["code"] == "pet.endpoint_removed"
    assert "Deprecation" not in gone.headers


# --- refusals ---------------------------------------------------------------------------

NEW = {"name": "Valid", "categoryId": 1}


def _json(document: Any) -> dict[str, Any]:
    return {"content": json.dumps(document), "headers": {"Content-Type": "application/json"}}


def _chunks() -> Iterator[bytes]:
    yield b'{"name": "'
    for _ in range(10):
        yield b"x" * 1024
    yield b'", "categoryId": 1}'


BAD_REQUESTS = [
    # createPet bodies, in the order they are checked
    ("over 8 KiB", "POST", "/pets", {"content": b"x" * 8193}, 413, "body.too_large"),
    ("over 8 KiB, chunked", "POST", "/pets", {"content": _chunks}, 413, "body.too_large"),
    ("empty", "POST", "/pets", {"headers": {"Content-Type": "text/plain"}}, 400, "body.empty"),
    (
        "text/plain",
        "POST",
        "/pets",
        {**_json(NEW), "headers": {"Content-Type": "text/plain"}},
        415,
        "body.media_type_unsupported",
    ),
    (
        "text/plain, not JSON",
        "POST",
        "/pets",
        {"content": b"{", "headers": {"Content-Type": "text/plain"}},
        415,
        "body.media_type_unsupported",
    ),
    (
        "no Content-Type",
        "POST",
        "/pets",
        {"content": json.dumps(NEW)},
        415,
        "body.media_type_unsupported",
    ),
    (
        "no JSON",
        "POST",
        "/pets",
        {**_json(NEW), "content": b'{"name":'},
        400,
        "body.json_malformed",
    ),
    (
        "NaN",
        "POST",
        "/pets",
        {**_json(NEW), "content": b'{"name":"a","categoryId":NaN}'},
        400,
        "body.json_malformed",
    ),
    (
        "not UTF-8",
        "POST",
        "/pets",
        {**_json(NEW), "content": b'{"name":"\xff"}'},
        400,
        "body.json_malformed",
    ),
    ("unknown field", "POST", "/pets", _json({**NEW, "colour": "red"}), 422, "body.field_unknown"),
    (
        "unknown field and a bad value",
        "POST",
        "/pets",
        _json({"name": 1, "colour": "red"}),
        422,
        "body.field_unknown",
    ),
    ("an id", "POST", "/pets", _json({**NEW, "id": 5}), 422, "body.field_unknown"),
    ("a list", "POST", "/pets", _json([NEW]), 400, "body.invalid"),
    ("no name", "POST", "/pets", _json({"categoryId": 1}), 400, "body.invalid"),
    ("7.0", "POST", "/pets", _json({"name": "a", "categoryId": 7.0}), 400, "body.invalid"),
    ("true", "POST", "/pets", _json({"name": "a", "categoryId": True}), 400, "body.invalid"),
    ("2^63", "POST", "/pets", _json({"name": "a", "categoryId": 2**63}), 400, "body.invalid"),
    ("lost", "POST", "/pets", _json({**NEW, "status": "lost"}), 400, "body.invalid"),
    # listPets
    *[
        (f"limit={v!r}", "GET", "/pets", {"params": {"limit": v}}, 422, "query.limit_invalid")
        for v in ("abc", "0", "-1", "", "1.5", "+5")
    ],
    *[
        (f"status={v!r}", "GET", "/pets", {"params": {"status": v}}, 422, "query.status_invalid")
        for v in ("lost", "", "AVAILABLE")
    ],
    # getPet
    ("petId abc", "GET", "/pets/abc", {}, 400, "path.pet_id_invalid"),
    ("petId 2^63", "GET", "/pets/9223372036854775808", {}, 400, "path.pet_id_invalid"),
    ("missing pet", "GET", "/pets/9223372036854775807", {}, 404, "pet.not_found"),
    # routing
    ("unknown path", "GET", "/nowhere", {}, 404, "route.not_found"),
    ("trailing slash", "GET", "/pets/", {}, 404, "route.not_found"),
    ("orders", "GET", "/store/orders", {}, 403, "orders.scope_required"),
]


@pytest.mark.parametrize(
    "method, path, request_args, status, code",
    [case[1:] for case in BAD_REQUESTS],
    ids=[case[0] for case in BAD_REQUESTS],
)
def test_each_refusal_has_its_own_status_and_code(
    kennel: str, method: str, path: str, request_args: dict[str, Any], status: int, code: str
) -> None:
    args = dict(request_args)
    if callable(args.get("content")):
        args["content"] = args["content"]()
    with client(kennel, REFUSALS) as c:
        answer = c.request(method, path, **args)
    body = error_of(answer, status)
    assert body["code"] == code
    assert body["traceId"] == answer.headers["X-Trace-Id"]
    assert set(body) == {"code", "message", "status", "traceId"}


def test_unknown_fields_are_named_and_refused_bodies_store_nothing(kennel: str) -> None:
    with client(kennel, PRO) as c:
        newest = c.get("/pets", params={"limit": 1}).json()[0]["id"]
        refused = c.post("/pets", json={**NEW, "colour": "red", "size": 3})
        assert "colour" in refused.json()["message"] and "size" in refused.json()["message"]
        for _, method, path, args, _, _ in BAD_REQUESTS:
            if method == "POST" and not callable(args.get("content")):
                assert c.post(path, **args).status_code >= 400
        assert c.get("/pets", params={"limit": 1}).json()[0]["id"] == newest


def test_exactly_8_kib_is_accepted(kennel: str) -> None:
    prefix, suffix = b'{"name": "', b'", "categoryId": 1}'
    body = prefix + b"k" * (8192 - len(prefix) - len(suffix)) + suffix
    with client(kennel, PRO) as c:
        created = c.post("/pets", content=body, headers={"Content-Type": "application/json"})
    assert created.status_code == 201


@pytest.mark.parametrize(
    "authorization, code, challenge",
    [
        (None, "auth.key_missing", REALM),
        ("Basic dXNlcjpwYXNz", "auth.scheme_invalid", f'{REALM}, error="invalid_request"'),
        ("Bearer", "auth.scheme_invalid", f'{REALM}, error="invalid_request"'),
        ("Bearer kn-never-issued", "auth.key_unknown", f'{REALM}, error="invalid_token"'),
    ],
)
def test_each_key_problem_has_its_code_and_challenge(
    kennel: str, authorization: str | None, code: str, challenge: str
) -> None:
    headers = {"Authorization": authorization} if authorization else {}
    with client(kennel) as c:
        answer = c.get("/pets", headers=headers)
    assert error_of(answer, 401)["code"] == code
    assert answer.headers["WWW-Authenticate"] == challenge


@pytest.mark.parametrize(
    "method, path, allow",
    [
        ("DELETE", "/pets", "GET, HEAD, POST"),
        ("PUT", "/pets/1", "GET"),
        ("HEAD", "/pets/1", "GET"),
        ("POST", "/store/orders", "GET"),
        ("HEAD", "/store/orders", "GET"),
    ],
)
def test_routing_comes_before_the_key(kennel: str, method: str, path: str, allow: str) -> None:
    with client(kennel) as anonymous:
        wrong_method = anonymous.request(method, path)
        unknown = anonymous.get("/nowhere")
    assert wrong_method.status_code == 405
    assert wrong_method.headers["Allow"] == allow
    if method != "HEAD":
        assert wrong_method.json()["code"] == "route.method_not_allowed"
    assert error_of(unknown, 404)["code"] == "route.not_found"


# --- rate limits ------------------------------------------------------------------------


def test_the_minute_starts_at_the_first_request_and_resets_in_epoch_ms(kennel: str) -> None:
    with client(kennel, SANDBOX[0]) as c:
        before = time.time()
        first = c.get("/pets", params={"limit": 1})
        after = time.time()
        second = c.get("/pets", params={"limit": 1})
    reset = int(first.headers["X-RateLimit-Reset"])
    assert before * 1000 + 60_000 <= reset <= math.ceil(after * 1000) + 60_000
    assert int(second.headers["X-RateLimit-Reset"]) == reset
    assert [a.headers["X-RateLimit-Limit"] for a in (first, second)] == ["10", "10"]
    assert [a.headers["X-RateLimit-Remaining"] for a in (first, second)] == ["9", "8"]


def test_a_new_window_starts_at_the_first_request_after_the_last_one_ended(short: str) -> None:
    with client(short, SHORT[0]) as c:
        first = int(c.get("/pets").headers["X-RateLimit-Reset"])
        _sleep_until(first / 1000 + 0.3)
        before = time.time()
        later = c.get("/pets")
        after = time.time()
    reset = int(later.headers["X-RateLimit-Reset"])
    assert before * 1000 + SHORT_WINDOW * 1000 <= reset <= math.ceil(after * 1000) + 1000
    assert reset >= first + 1300  # not the window after the first: a new one began
    assert later.headers["X-RateLimit-Remaining"] == "9"


def test_over_the_minute_is_429_with_retry_after_in_seconds(kennel: str) -> None:
    with client(kennel, SANDBOX[1]) as c:
        answers = [c.get("/pets", params={"limit": 1}) for _ in range(11)]
        after = time.time()
    # Whole seconds, rounded up, from an instant before ``after`` to the window's end.
    assert [a.status_code for a in answers] == [200] * 10 + [429]
    refused = answers[-1]
    assert error_of(refused, 429)["code"] == "rate.limit_exceeded"
    assert refused.headers["X-RateLimit-Remaining"] == "0"
    reset = int(refused.headers["X-RateLimit-Reset"])
    assert reset == int(answers[0].headers["X-RateLimit-Reset"])
    wait = int(refused.headers["Retry-After"])
    assert max(1, math.floor(reset / 1000 - after)) <= wait <= 60


def test_the_day_is_enforced_but_the_headers_show_the_minute(kennel: str) -> None:
    with client(kennel, TINY_DAY) as c:
        started = time.time()
        answers = [c.get("/pets", params={"limit": 1}) for _ in range(4)]
        after = time.time()
    assert [a.status_code for a in answers] == [200, 200, 200, 429]
    refused = answers[-1]
    assert error_of(refused, 429)["code"] == "rate.limit_exceeded"
    assert (refused.headers["X-RateLimit-Limit"], refused.headers["X-RateLimit-Remaining"]) == (
        "50",
        "47",
    )
    assert 86_400 - (after - started) <= int(refused.headers["Retry-After"]) <= 86_400


def test_refused_requests_consume_nothing(short: str) -> None:
    """Plan 3/min, 6/day: however many 429s, exactly six requests are admitted that day."""
    answers: list[httpx.Response] = []
    with client(short, SHORT[3]) as c:
        for _ in range(8):  # windows of one second: the day is spent within a few
            round_ = until(lambda: c.get("/pets"), lambda a: a.status_code == 429, bound=10)
            round_ += [c.get("/pets") for _ in range(2)]  # two more 429s, unless a window ended
            answers += round_
            waits = [int(a.headers["Retry-After"]) for a in round_ if a.status_code == 429]
            if max(waits) > 60:  # the day is spent
                break
            # Fewer than five 429s in a row: the next window's first request ends the run.
            _sleep_until(int(round_[-1].headers["X-RateLimit-Reset"]) / 1000)
    statuses = [a.status_code for a in answers]
    assert statuses.count(200) == 6
    assert statuses.count(429) >= 3


def test_the_fifth_consecutive_429_bans_for_300_s_with_an_http_date(kennel: str) -> None:
    with client(kennel, SANDBOX[2]) as c:
        answers = [c.get("/pets", params={"limit": 1}) for _ in range(14)]
        before_ban = time.time()
        answers.append(c.get("/pets", params={"limit": 1}))
        after_ban = time.time()
        still = c.get("/pets", params={"limit": 1})
    codes = [a.json()["code"] if a.status_code == 429 else a.status_code for a in answers]
    assert codes == [200] * 10 + ["rate.limit_exceeded"] * 4 + ["rate.key_banned"]
    for answer in answers[10:14]:
        assert answer.headers["Retry-After"].isdigit()
    banned = answers[-1]
    ends = http_date(banned.headers["Retry-After"])
    assert before_ban + 300 <= ends <= math.ceil(after_ban + 300)
    assert banned.headers["X-RateLimit-Remaining"] == "0"
    assert abs(int(banned.headers["X-RateLimit-Reset"]) / 1000 - ends) < 1.001
    assert error_of(still, 429)["code"] == "rate.key_banned"
    assert http_date(still.headers["Retry-After"]) == ends


def test_an_admitted_request_ends_a_run_of_429s(short: str) -> None:
    with client(short, SHORT[1]) as c:
        run = _consecutive_refusals(c, 4)
        assert {a.json()["code"] for a in run} == {"rate.limit_exceeded"}
        _sleep_until(int(run[-1].headers["X-RateLimit-Reset"]) / 1000)
        run = _consecutive_refusals(c, 5)
    codes = [a.json()["code"] for a in run]
    assert codes == ["rate.limit_exceeded"] * 4 + ["rate.key_banned"]


def test_callers_without_a_valid_key_share_a_10_per_minute_bucket_per_address(
    kennel: str,
) -> None:
    headers = [{}, {"Authorization": "Bearer kn-unknown"}, {"Authorization": "Token x"}]
    with client(kennel) as c:
        answers = [c.get("/pets", headers=headers[n % 3]) for n in range(11)]
    assert [a.status_code for a in answers] == [401] * 10 + [429]
    assert {a.headers["X-RateLimit-Limit"] for a in answers} == {"10"}
    assert [int(a.headers["X-RateLimit-Remaining"]) for a in answers[:10]] == list(range(9, -1, -1))
    assert error_of(answers[-1], 429)["code"] == "rate.limit_exceeded"


@pytest.mark.parametrize(
    "key, per_minute",
    [("kn-free", "60"), (PRO, "300"), ("kn-business", "1000"), (SANDBOX[5], "10")],
)
def test_each_plan_shows_its_minute(kennel: str, key: str, per_minute: str) -> None:
    with client(kennel, key) as c:
        assert c.get("/pets").headers["X-RateLimit-Limit"] == per_minute


def test_enterprise_is_custom(kennel: str) -> None:
    with client(kennel, ENTERPRISE) as c:
        assert c.get("/pets").headers["X-RateLimit-Limit"] == "2000"
    refused = subprocess.run(
        [sys.executable, "-m", "tests.upstream.kennel", "--port", "0", "--key", "k=enterprise"],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=upstream.ROOT,
    )
    assert refused.returncode == 2
    assert "Enterprise is custom" in refused.stderr


# --- semantics --------------------------------------------------------------------------


@pytest.mark.parametrize("limit", ["101", "500", "99999999999999999999999"])
def test_a_limit_above_100_is_clamped(kennel: str, limit: str) -> None:
    with client(kennel, PRO) as c:
        answer = c.get("/pets", params={"limit": limit})
    assert answer.status_code == 200
    assert len(answer.json()) == 100


def test_pets_are_listed_newest_first_with_growing_ids(kennel: str) -> None:
    with client(kennel, PRO) as c:
        one = c.post("/pets", json={"name": "Older", "categoryId": 4}).json()
        two = c.post("/pets", json={"name": "Newer", "categoryId": 4}).json()
        listed = c.get("/pets", params={"limit": 100}).json()
    assert two["id"] == one["id"] + 1
    assert listed[:2] == [two, one]
    ids = [pet["id"] for pet in listed]
    assert ids == sorted(ids, reverse=True)


def test_status_defaults_to_pending(kennel: str) -> None:
    with client(kennel, PRO) as c:
        pet = c.post("/pets", json={"name": "Unvetted", "categoryId": 5}).json()
    assert pet["status"] == "pending"


def test_head_is_served_on_the_list_only(kennel: str) -> None:
    with client(kennel, PRO) as c:
        got = c.get("/pets", params={"limit": 3})
        head = c.head("/pets", params={"limit": 3})
        assert head.status_code == 200
        assert head.content == b""
        assert head.headers["Content-Length"] == str(len(got.content))
        for path in ("/pets/1", "/store/orders"):
            refused = c.head(path)
            assert (refused.status_code, refused.headers["Allow"]) == (405, "GET")


def test_the_last_value_of_a_repeated_parameter_wins(kennel: str) -> None:
    with client(kennel, PRO) as c:
        assert len(c.get("/pets?limit=1&limit=3").json()) == 3
        assert {p["status"] for p in c.get("/pets?status=sold&status=available").json()} == {
            "available"
        }


def test_the_store_is_seeded_with_ids_from_1_and_statuses_in_turn(kennel: str) -> None:
    with client(kennel, PRO) as c:
        pets = [c.get(f"/pets/{n}").json() for n in (1, 2, 3, 120)]
    assert [p["status"] for p in pets] == ["available", "pending", "sold", "sold"]
    assert pets[0]["name"] == "Biscuit 1"


def _consecutive_refusals(c: httpx.Client, count: int) -> list[httpx.Response]:
    """Send until ``count`` 429s in a row (an admitted answer starts the count over)."""
    run: list[httpx.Response] = []
    for _ in range(100):
        answer = c.get("/pets", params={"limit": 1})
        run = [*run, answer] if answer.status_code == 429 else []
        if len(run) == count:
            return run
    raise AssertionError(f"no {count} consecutive 429s in 100 requests")


def _sleep_until(instant: float) -> None:
    time.sleep(max(0.0, instant - time.time()) + 0.02)
