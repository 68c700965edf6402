"""Every bundled scenario does what its one-line description says, over HTTP.

Each test reads like the description it proves; the description itself is
asserted first, so a scenario whose behaviour changes cannot keep a stale
promise in ``mockstore scenarios``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from email.utils import parsedate_to_datetime

import httpx
import pytest
from starlette.testclient import TestClient

from mockstore.app import create_app
from mockstore.clock import parse_time
from mockstore.scenario import bundled_names, load_scenario_file
from tests.support import TOOL, assert_conforms, auth, mock_server

BUNDLED = [
    "default",
    "free-tier-exhaustion",
    "daily-quota-exhausted",
    "ban-after-hammering",
    "flaky-create",
    "slow-network",
    "after-sunset",
    "empty-store",
    "large-inventory",
    "chaos",
]
NEW_PET = {"name": "Nova", "categoryId": 3}


@contextmanager
def serving(name: str) -> Iterator[TestClient]:
    """An in-process client on a bundled scenario, with the scenario's own clock."""
    with TestClient(create_app(name), base_url="http://testserver") as client:
        yield client


def epoch(text: str) -> int:
    return int(parse_time(text))


def seconds_after_date(response: httpx.Response, header: str) -> float:
    """How far after the answer's Date an instant in one of its headers lies.

    Instants in headers are written on the wall clock (``clock.headers: wall``,
    the default): far from the scenario's calendar on these manual clocks, they
    lie as far from ``Date`` as the scenario clock says; whole seconds, so one
    second later at most when the wall clock is mid-second.
    """
    date = parsedate_to_datetime(response.headers["date"]).timestamp()
    value = response.headers[header]
    instant = float(value) if value.isdigit() else parsedate_to_datetime(value).timestamp()
    return instant - date


def description(name: str) -> str:
    return load_scenario_file(name).description


def test_the_bundled_set_is_exactly_the_documented_one() -> None:
    assert sorted(bundled_names()) == sorted(BUNDLED)


@pytest.mark.parametrize("name", BUNDLED)
def test_each_bundled_scenario_is_named_and_described_on_one_line(name: str) -> None:
    scenario = load_scenario_file(name)
    assert scenario.name == name
    assert scenario.description
    assert "\n" not in scenario.description
    assert (
        scenario.source.splitlines()[0]
        == "# yaml-language-server: $schema=https://mockstore.dev/schema/scenario-v1.json"
    )


# -- default ------------------------------------------------------------------


def test_default_has_one_key_per_plan_20_pets_and_real_time() -> None:
    assert description("default").startswith("One key per plan")
    limits = {"free": 60, "pro": 300, "business": 1000, "enterprise": 5000}
    with serving("default") as client:
        for plan, per_minute in limits.items():
            response = client.get("/v1/pets", params={"limit": 100}, headers=auth(plan))
            pets = assert_conforms(response)
            assert response.headers["x-ratelimit-limit"] == str(per_minute)
            assert [p["id"] for p in pets] == list(range(1, 21))
        keys = client.get("/__mockstore/keys").json()
        assert sorted((k["key"], k["plan"]) for k in keys) == sorted(
            (f"{plan}-key", plan) for plan in limits
        )
        clock = client.get("/__mockstore/clock").json()
    assert clock["mode"] == "running"
    # Real time: the scenario clock starts at the wall clock (a loose bound, not a timing).
    assert abs(clock["unix"] - time.time()) < 3600


# -- free-tier-exhaustion -----------------------------------------------------


def test_free_tier_exhaustion_third_call_is_rate_limited_until_the_minute_ends() -> None:
    assert "2 requests left this minute" in description("free-tier-exhaustion")
    with serving("free-tier-exhaustion") as client:
        first = client.get("/v1/pets", headers=auth("free"))
        second = client.get("/v1/pets", headers=auth("free"))
        third = client.get("/v1/pets", headers=auth("free"))
        for response, remaining in ((first, "1"), (second, "0")):
            assert response.status_code == 200
            assert_conforms(response)
            assert response.headers["x-ratelimit-limit"] == "60"
            assert response.headers["x-ratelimit-remaining"] == remaining
            assert seconds_after_date(response, "x-ratelimit-reset") in (30, 31)  # 12:01:00Z
        assert third.status_code == 429
        assert assert_conforms(third)["code"] == "rate_limited"
        assert third.headers["retry-after"] == "30"
        assert third.headers["x-ratelimit-remaining"] == "0"
        assert seconds_after_date(third, "x-ratelimit-reset") in (30, 31)

        other = client.get("/v1/pets", headers=auth("pro"))
        assert other.status_code == 200
        assert other.headers["x-ratelimit-remaining"] == "299"

        # The clock is manual: nothing changes until it is moved past the minute.
        assert client.get("/v1/pets", headers=auth("free")).status_code == 429
        client.post("/__mockstore/clock", json={"advance_seconds": 30})
        after = client.get("/v1/pets", headers=auth("free"))
        assert after.status_code == 200
        assert_conforms(after)
        assert after.headers["x-ratelimit-remaining"] == "59"


# -- daily-quota-exhausted ----------------------------------------------------


def test_daily_quota_exhausted_refuses_every_call_until_utc_midnight() -> None:
    assert "all 1,000 of today's requests" in description("daily-quota-exhausted")
    midnight = epoch("2026-03-02T00:00:00Z")
    with serving("daily-quota-exhausted") as client:
        for path in ("/v1/pets", "/v1/pets/1"):
            refused = client.get(path, headers=auth("free"))
            assert refused.status_code == 429
            body = assert_conforms(refused)
            assert body["code"] == "rate_limited"
            assert "per-day" in body["message"]
            assert refused.headers["retry-after"] == str(9 * 3600)
            assert refused.headers["x-ratelimit-limit"] == "1000"
            assert refused.headers["x-ratelimit-remaining"] == "0"
            assert seconds_after_date(refused, "x-ratelimit-reset") in (9 * 3600, 9 * 3600 + 1)
        created = client.post("/v1/pets", json=NEW_PET, headers=auth("free"))
        assert created.status_code == 429

        (free,) = [k for k in client.get("/__mockstore/keys").json() if k["key"] == "free-key"]
        assert free["day"] == {"used": 1000, "remaining": 0, "reset": midnight}
        assert client.get("/v1/pets", headers=auth("pro")).status_code == 200

        # One second before midnight it is still refused; at midnight the day is new.
        client.post("/__mockstore/clock", json={"set": "2026-03-01T23:59:59Z"})
        late = client.get("/v1/pets", headers=auth("free"))
        assert late.status_code == 429
        assert late.headers["retry-after"] == "1"
        client.post("/__mockstore/clock", json={"advance_seconds": 1})
        fresh = client.get("/v1/pets", headers=auth("free"))
        assert fresh.status_code == 200
        assert_conforms(fresh)


# -- ban-after-hammering ------------------------------------------------------


def test_ban_after_hammering_bans_on_the_third_429_for_300_seconds() -> None:
    assert "3rd 429 within 60 s bans it for 300 s" in description("ban-after-hammering")
    with serving("ban-after-hammering") as client:
        for _ in range(3):
            limited = client.get("/v1/pets", headers=auth("free"))
            assert limited.status_code == 429
            assert assert_conforms(limited)["code"] == "rate_limited"
            assert limited.headers["retry-after"] == "60"
        banned = client.get("/v1/pets", headers=auth("free"))
        assert banned.status_code == 429
        assert assert_conforms(banned)["code"] == "key_banned"
        assert banned.headers["retry-after"] == "300"
        assert seconds_after_date(banned, "x-ratelimit-reset") in (300, 301)  # 12:05:00Z

        (free,) = [k for k in client.get("/__mockstore/keys").json() if k["key"] == "free-key"]
        assert free["banned"] is True
        assert free["banned_until"] == "2026-03-01T12:05:00Z"
        assert client.get("/v1/pets", headers=auth("pro")).status_code == 200

        # A new minute does not lift the ban: only its 300 s do.
        client.post("/__mockstore/clock", json={"advance_seconds": 60})
        still = client.get("/v1/pets", headers=auth("free"))
        assert assert_conforms(still)["code"] == "key_banned"
        assert still.headers["retry-after"] == "240"
        client.post("/__mockstore/clock", json={"set": "2026-03-01T12:05:00Z"})
        free_again = client.get("/v1/pets", headers=auth("free"))
        assert free_again.status_code == 200
        assert_conforms(free_again)


def test_ban_after_hammering_two_rejections_do_not_ban() -> None:
    with serving("ban-after-hammering") as client:
        for _ in range(2):
            assert client.get("/v1/pets", headers=auth("free")).status_code == 429
        client.post("/__mockstore/clock", json={"advance_seconds": 60})
        response = client.get("/v1/pets", headers=auth("free"))
        assert response.status_code == 200
        assert_conforms(response)


# -- flaky-create -------------------------------------------------------------


def test_flaky_create_fails_every_third_pro_create_only() -> None:
    assert "Every third createPet on the Pro plan" in description("flaky-create")
    with serving("flaky-create") as client:
        statuses, created_ids = [], []
        for number in range(1, 13):
            # Other keys' creates and other operations in between must not shift the count.
            free = client.post("/v1/pets", json=NEW_PET, headers=auth("free"))
            assert free.status_code == 201
            created_ids.append(assert_conforms(free)["id"])
            listing = client.get("/v1/pets", headers=auth("pro"))
            assert listing.status_code == 200
            assert_conforms(listing)

            response = client.post(
                "/v1/pets", json={**NEW_PET, "name": f"pro {number}"}, headers=auth("pro")
            )
            statuses.append(response.status_code)
            body = assert_conforms(response)
            if response.status_code == 503:
                assert body["code"] == "unavailable"
                assert response.headers["retry-after"] == "2"
            else:
                created_ids.append(body["id"])
        assert statuses == [201, 201, 503] * 4
        # A failed create stores nothing: the ids stay consecutive.
        assert created_ids == list(range(4, 4 + len(created_ids)))
        for _ in range(6):
            assert client.get("/v1/pets/1", headers=auth("pro")).status_code == 200


# -- slow-network -------------------------------------------------------------


def _timed(http: httpx.Client, method: str, path: str, **kwargs: object) -> tuple[float, object]:
    started = time.perf_counter()
    response = http.request(method, path, **kwargs)  # type: ignore[arg-type]
    return time.perf_counter() - started, response


def test_slow_network_delays_each_operation_and_keeps_the_answers() -> None:
    """Lower bounds only: a delay can be proven by its minimum, never by a maximum."""
    assert "listPets +300 ms, createPet +200 ms, getPet +100-400 ms" in description("slow-network")
    tolerance = 0.0  # a scenario's delay is a lower bound, never shortened (api.pause)
    with mock_server("slow-network") as server, server.client() as http:
        elapsed, response = _timed(http, "GET", "/v1/pets", headers=auth("pro"))
        assert elapsed >= 0.3 - tolerance
        assert [p["id"] for p in assert_conforms(response)] == [1, 2, 3]

        elapsed, response = _timed(http, "POST", "/v1/pets", json=NEW_PET, headers=auth("pro"))
        assert elapsed >= 0.2 - tolerance
        assert assert_conforms(response) == {"id": 4, **NEW_PET}

        for pet_id in (1, 2, 3):
            elapsed, response = _timed(http, "GET", f"/v1/pets/{pet_id}", headers=auth("pro"))
            assert elapsed >= 0.1 - tolerance
            assert assert_conforms(response)["id"] == pet_id

        # The control API is not part of the network being simulated.
        assert http.get("/__mockstore/health").status_code == 200


# -- after-sunset -------------------------------------------------------------


def test_after_sunset_get_pet_is_gone_and_listing_still_works() -> None:
    assert "410 gone" in description("after-sunset")
    with serving("after-sunset") as client:
        assert client.get("/__mockstore/clock").json()["now"] == "2030-12-06T09:00:00Z"
        gone = client.get("/v1/pets/1", headers=auth("pro"))
        assert gone.status_code == 410
        assert assert_conforms(gone)["code"] == "gone"
        # The sunset was 33 h ago: the date announced, as the message says it (Date is
        # the wall clock's now).
        assert gone.headers["sunset"] == "Thu, 05 Dec 2030 00:00:00 GMT"
        assert "removed on 5 December 2030" in gone.json()["message"]
        assert client.get("/v1/pets/999", headers=auth("pro")).status_code == 410

        listing = client.get("/v1/pets", params={"status": "available"}, headers=auth("pro"))
        assert [p["id"] for p in assert_conforms(listing)] == [1, 2]

        # Before the sunset the same call answers; a reset brings the sunset back.
        client.post("/__mockstore/clock", json={"set": "2030-12-04T23:59:59Z"})
        before = client.get("/v1/pets/1", headers=auth("pro"))
        assert assert_conforms(before)["name"] == "Rex"
        client.post("/__mockstore/reset", headers=TOOL)
        assert client.get("/v1/pets/1", headers=auth("pro")).status_code == 410


# -- empty-store --------------------------------------------------------------


def test_empty_store_lists_nothing_finds_nothing_and_starts_ids_at_one() -> None:
    assert "no pets" in description("empty-store")
    with serving("empty-store") as client:
        for status in (None, "available", "pending", "sold"):
            params = {"status": status} if status else {}
            listing = client.get("/v1/pets", params=params, headers=auth("free"))
            assert assert_conforms(listing) == []
        for pet_id in (1, 2, 100):
            missing = client.get(f"/v1/pets/{pet_id}", headers=auth("free"))
            assert missing.status_code == 404
            assert assert_conforms(missing)["code"] == "not_found"
        for plan in ("free", "pro", "business", "enterprise"):
            assert client.get("/v1/pets", headers=auth(plan)).status_code == 200
        created = client.post("/v1/pets", json=NEW_PET, headers=auth("free"))
        assert created.status_code == 201
        assert assert_conforms(created) == {"id": 1, **NEW_PET}
        listing = client.get("/v1/pets", headers=auth("free"))
        assert assert_conforms(listing) == [{"id": 1, **NEW_PET}]


# -- large-inventory ----------------------------------------------------------


def test_large_inventory_holds_100000_seeded_pets_of_every_status() -> None:
    assert "100,000 seeded generated pets" in description("large-inventory")
    with serving("large-inventory") as client:
        first = client.get("/v1/pets", params={"limit": 100}, headers=auth("business"))
        assert [p["id"] for p in assert_conforms(first)] == list(range(1, 101))
        pages = {}
        for status in ("available", "pending", "sold"):
            page = client.get(
                "/v1/pets", params={"limit": 100, "status": status}, headers=auth("business")
            )
            pets = assert_conforms(page)
            assert len(pets) == 100
            assert {p["status"] for p in pets} == {status}
            ids = [p["id"] for p in pets]
            assert ids == sorted(ids)
            pages[status] = pets
        last = client.get("/v1/pets/100000", headers=auth("business"))
        assert assert_conforms(last)["id"] == 100000
        assert client.get("/v1/pets/100001", headers=auth("business")).status_code == 404
        created = client.post("/v1/pets", json=NEW_PET, headers=auth("business"))
        assert assert_conforms(created)["id"] == 100001
        total = len(client.get("/__mockstore/pets").json())
        assert total == 100001

    # Seeded: a second server generates the very same pets.
    with serving("large-inventory") as again:
        page = again.get(
            "/v1/pets", params={"limit": 100, "status": "sold"}, headers=auth("business")
        )
        assert page.json() == pages["sold"]


# -- chaos --------------------------------------------------------------------

CHAOS_CALLS = 600


def _chaos_outcome(http: httpx.Client, index: int) -> str:
    """One call of a fixed mix, described by what the client saw."""
    kind = index % 3
    try:
        if kind == 0:
            response = http.get("/v1/pets", params={"limit": 5}, headers=auth("business"))
        elif kind == 1:
            response = http.get(f"/v1/pets/{1 + index % 50}", headers=auth("business"))
        else:
            response = http.post("/v1/pets", json=NEW_PET, headers=auth("business"))
    except httpx.ReadError:
        return "reset"
    except httpx.RemoteProtocolError as exc:
        return "truncated" if "complete message body" in str(exc) else "empty"
    try:
        body = response.json()
    except ValueError:
        assert response.status_code == 200
        return "malformed"
    if response.status_code >= 400:
        assert_conforms(response)
        return f"{response.status_code} {body['code']}"
    assert_conforms(response)
    return str(response.status_code)


def test_chaos_fires_each_fault_rarely_and_replays_identically_after_reset() -> None:
    assert description("chaos").startswith("Seeded faults at low odds")
    with mock_server("chaos") as server:
        with server.client() as http:
            first = [_chaos_outcome(http, i) for i in range(CHAOS_CALLS)]
        assert server.client().post("/__mockstore/reset", headers=TOOL).status_code == 200
        with server.client() as http:
            second = [_chaos_outcome(http, i) for i in range(CHAOS_CALLS)]
    counts = {outcome: first.count(outcome) for outcome in set(first)}
    failures = CHAOS_CALLS - counts.get("200", 0) - counts.get("201", 0)
    assert set(counts) <= {
        "200",
        "201",
        "503 unavailable",
        "500 internal_error",
        "reset",
        "empty",
        "truncated",
        "malformed",
    }, counts
    # Every kind of fault the description names shows up ...
    for kind in ("503 unavailable", "500 internal_error", "reset", "empty"):
        assert counts.get(kind, 0) >= 1, counts
    assert counts.get("truncated", 0) + counts.get("malformed", 0) >= 1, counts
    # ... at low odds (about 9% of calls in all; far from a majority) ...
    assert 0.02 * CHAOS_CALLS <= failures <= 0.2 * CHAOS_CALLS, counts
    # ... and the seed decides which calls: the same sequence fails the same way.
    assert second == first


def test_chaos_rules_are_all_seeded_draws() -> None:
    scenario = load_scenario_file("chaos")
    assert scenario.seed == 1234
    assert scenario.clock_start is None
    assert all(rule.match.probability is not None for rule in scenario.faults)
    assert {rule.fault for rule in scenario.faults if rule.fault} == {
        "connection_reset",
        "empty_response",
        "truncated_body",
        "malformed_json",
    }
