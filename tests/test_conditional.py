"""Conditional requests (``http.conditional``): ETag and Last-Modified, If-None-Match and
If-Modified-Since answered 304, as RFC 9110 section 13 has a server do.

Issue 25 found the mock answering ``If-None-Match`` with a 200 in full where the
provider answered 304; these tests fail on a mock without the section (it refuses
the scenario). Everything goes over a real uvicorn process (``mock_server``; in
Redis too under ``MOCKSTORE_TEST_STATE=redis``), on a manual clock.
"""

from __future__ import annotations

import socket
from datetime import UTC, datetime
from email.utils import format_datetime, parsedate_to_datetime

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mockstore.conditional import CreationSeconds, none_match, not_modified
from tests.support import LiveServer, mock_server

KEY = {"Authorization": "Bearer cond-key"}
SCENARIO = """\
version: 1
clock: {start: 2026-03-01T12:00:00Z, mode: manual, headers: scenario}
keys: [{key: cond-key, plan: {per_minute: 50, per_day: 500}}]
pets:
  - {id: 1, name: Rex, categoryId: 1, status: available}
  - {id: 2, name: Bella, categoryId: 2, status: sold}
behaviour:
  etag: {getPet: strong, listPets: weak}
http:
  conditional:
    operations: [getPet, listPets]
    last_modified: [getPet, listPets]
    pets_modified: 2026-02-01T08:30:00Z
"""


def _date(text: str) -> datetime:
    return parsedate_to_datetime(text)


@pytest.fixture
def api() -> LiveServer:
    with mock_server(SCENARIO) as running:
        yield running


def test_if_none_match_with_the_current_etag_is_304_without_a_body(api: LiveServer) -> None:
    with httpx.Client(base_url=api.api, headers=KEY) as http:
        first = http.get("/pets/1")
        again = http.get("/pets/1", headers={"If-None-Match": first.headers["etag"]})
    assert first.status_code == 200 and first.headers["etag"].startswith('"')
    assert again.status_code == 304
    assert again.content == b""
    assert "content-length" not in again.headers and "content-type" not in again.headers
    # A 304 carries the validators the 200 would have (RFC 9110 section 15.4.5).
    assert again.headers["etag"] == first.headers["etag"]
    assert again.headers["last-modified"] == first.headers["last-modified"]
    # It is counted like any answer the limiter sees.
    assert (
        int(again.headers["x-ratelimit-remaining"])
        == int(first.headers["x-ratelimit-remaining"]) - 1
    )


def test_weak_comparison_and_a_list_of_tags_and_a_star(api: LiveServer) -> None:
    with httpx.Client(base_url=api.api, headers=KEY) as http:
        listed = http.get("/pets")
        tag = listed.headers["etag"]
        assert tag.startswith('W/"')
        strong_form = tag[2:]
        statuses = [
            http.get("/pets", headers={"If-None-Match": value}).status_code
            for value in (strong_form, f'"other", {tag}', "*", '"other"', 'W/"nope"')
        ]
    assert statuses == [304, 304, 304, 200, 200]


def test_last_modified_of_the_scenarios_pets_and_if_modified_since(api: LiveServer) -> None:
    with httpx.Client(base_url=api.api, headers=KEY) as http:
        got = http.get("/pets/2")
        modified = _date(got.headers["last-modified"])
        assert modified == datetime(2026, 2, 1, 8, 30, tzinfo=UTC)
        same = http.get("/pets/2", headers={"If-Modified-Since": got.headers["last-modified"]})
        before = format_datetime(datetime(2026, 2, 1, 8, 29, 59, tzinfo=UTC), usegmt=True)
        older = http.get("/pets/2", headers={"If-Modified-Since": before})
        unreadable = http.get("/pets/2", headers={"If-Modified-Since": "yesterday"})
    assert (same.status_code, older.status_code, unreadable.status_code) == (304, 200, 200)


def test_if_none_match_decides_over_if_modified_since(api: LiveServer) -> None:
    with httpx.Client(base_url=api.api, headers=KEY) as http:
        got = http.get("/pets/1")
        answer = http.get(
            "/pets/1",
            headers={"If-None-Match": '"stale"', "If-Modified-Since": got.headers["last-modified"]},
        )
    assert answer.status_code == 200


def test_a_listing_changes_when_a_pet_it_shows_is_created(api: LiveServer) -> None:
    with httpx.Client(base_url=api.api, headers=KEY) as http:
        listed = http.get("/pets")
        api.mock.control.advance(90)
        created = http.post("/pets", json={"name": "Nala", "categoryId": 3})
        assert created.status_code == 201
        after = http.get("/pets", headers={"If-None-Match": listed.headers["etag"]})
        since = http.get("/pets", headers={"If-Modified-Since": listed.headers["last-modified"]})
        pet = http.get(f"/pets/{created.json()['id']}")
        # A page that does not show the new pet has not changed.
        page = http.get("/pets?limit=1", headers={"If-Modified-Since": listed.headers["date"]})
    assert (after.status_code, since.status_code, page.status_code) == (200, 200, 304)
    created_at = datetime(2026, 3, 1, 12, 1, 30, tzinfo=UTC)
    assert _date(after.headers["last-modified"]) == created_at
    assert _date(pet.headers["last-modified"]) == created_at


def test_head_is_conditional_too_and_other_methods_are_not(api: LiveServer) -> None:
    with httpx.Client(base_url=api.api, headers=KEY) as http:
        tag = http.get("/pets/1").headers["etag"]
        head = http.head("/pets/1", headers={"If-None-Match": tag})
        post = http.post("/pets", json={"name": "Max", "categoryId": 1},
                         headers={"If-None-Match": "*"})  # fmt: skip
    assert head.status_code == 304
    assert post.status_code == 201


def test_a_reset_dates_the_store_again(api: LiveServer) -> None:
    with httpx.Client(base_url=api.api, headers=KEY) as http:
        http.post("/pets", json={"name": "Nala", "categoryId": 3})
        before = http.get("/pets").headers["last-modified"]
        api.mock.control.reset()
        after = http.get("/pets").headers["last-modified"]
    assert _date(before) == datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    assert _date(after) == datetime(2026, 2, 1, 8, 30, tzinfo=UTC)


def test_last_modified_is_never_after_the_answers_date() -> None:
    early = SCENARIO.replace("2026-03-01T12:00:00Z", "2025-06-01T00:00:00Z")
    with mock_server(early) as api, httpx.Client(base_url=api.api, headers=KEY) as http:
        got = http.get("/pets/1")
    assert _date(got.headers["last-modified"]) == _date(got.headers["date"])


def test_a_304_on_the_wire_has_no_body_and_the_connection_goes_on(api: LiveServer) -> None:
    with httpx.Client(base_url=api.api, headers=KEY) as http:
        tag = http.get("/pets/1").headers["etag"]
    host, port = api.url.removeprefix("http://").split(":")
    request = (
        f"GET /v1/pets/1 HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer cond-key\r\n"
        f"If-None-Match: {tag}\r\n\r\n"
        f"GET /v1/pets/2 HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer cond-key\r\n"
        "Connection: close\r\n\r\n"
    ).encode()
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(request)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    first, _, rest = data.partition(b"\r\n\r\n")
    assert first.startswith(b"HTTP/1.1 304 ")
    assert rest.startswith(b"HTTP/1.1 200 "), rest[:80]  # nothing sent between the two


def test_a_read_without_a_validator_cannot_be_conditional() -> None:
    from mockstore.scenario import ScenarioError, load_scenario

    with pytest.raises(ScenarioError) as refused:
        load_scenario("version: 1\nhttp:\n  conditional:\n    operations: [getPet]\n", "c.yaml")
    assert str(refused.value).startswith("c.yaml:4:18: $.http.conditional.operations[0]:")
    assert "getPet has no validator" in str(refused.value)


def test_a_wrong_entry_of_last_modified_is_refused_not_a_crash() -> None:
    # schemathesis sent a mapping where an operation's name goes: a 500 on PUT /scenario.
    from mockstore.scenario import ScenarioError, load_scenario

    text = "version: 1\nhttp:\n  conditional:\n    operations: [getPet]\n    last_modified: [{}]\n"
    with pytest.raises(ScenarioError) as refused:
        load_scenario(text, "c.yaml")
    assert "$.http.conditional.last_modified[0]" in str(refused.value)


def test_a_routes_body_with_a_lone_surrogate_is_served_escaped() -> None:
    # JSON text may escape a lone surrogate; it has no UTF-8 form (a 500 on PUT /scenario).
    text = (
        '{"version": 1, "keys": [{"key": "cond-key", "plan": "pro"}], '
        '"routes": [{"operation": "listOrders", "respond": '
        '{"status": 200, "body": {"note": "\\ud800x"}}}, {"method": "GET", "path": "/raw", '
        '"respond": '
        '{"status": 200, "raw": true, "body": "\\udc00y"}}]}'
    )
    with mock_server(text) as running, httpx.Client(base_url=running.api, headers=KEY) as http:
        orders = http.get("/store/orders")
        raw = http.get("/raw")
    assert orders.json() == {"note": "\ud800x"}
    assert raw.content == b"?y"


# -- the rules themselves, for every input ------------------------------------------------

_tags = st.text(st.sampled_from("abcdef0123"), min_size=1, max_size=6)


@given(tag=_tags, others=st.lists(_tags, max_size=3), weak=st.booleans(), sent_weak=st.booleans())
def test_if_none_match_compares_weakly(
    tag: str, others: list[str], weak: bool, sent_weak: bool
) -> None:
    etag = f'{"W/" if weak else ""}"{tag}"'.encode()
    sent = ", ".join([*(f'"{o}"' for o in others), f'{"W/" if sent_weak else ""}"{tag}"'])
    assert none_match(sent.encode(), etag)
    assert none_match(b"*", etag)
    assert none_match(", ".join(f'"{o}"' for o in others).encode(), etag) == (tag in others)


@given(modified=st.integers(0, 2**33), delta=st.integers(-(10**6), 10**6))
def test_if_modified_since_is_304_exactly_when_not_modified_since(
    modified: int, delta: int
) -> None:
    since = format_datetime(datetime.fromtimestamp(modified + delta, UTC), usegmt=True)
    assert not_modified(None, since.encode(), None, modified) == (delta >= 0)
    # If-None-Match, when given, decides alone.
    assert not not_modified(b'"x"', since.encode(), b'"y"', modified)


@given(
    creates=st.lists(st.tuples(st.integers(1, 5), st.floats(0, 10_000)), max_size=30),
    pets_modified=st.floats(0, 10_000),
)
def test_creation_seconds_are_each_pets_own(
    creates: list[tuple[int, float]], pets_modified: float
) -> None:
    # Pets are created with growing ids and instants; each is dated by its own second.
    seconds = CreationSeconds(pets_modified)
    pet_id, now, expected = 100, 0.0, {}
    for step, wait in creates:
        pet_id += step
        now += wait
        seconds.note(pet_id, now)
        expected[pet_id] = int(now)
    for created_id, second in expected.items():
        assert seconds.of(created_id) == second
    assert seconds.of(1) == int(pets_modified)
