"""The request journal: what it records, its filters, its bounds, and what it hides.

Most tests drive the in-process app (TestClient, manual clock) and read the
journal back through ``GET /__mockstore/requests``; the ring buffer's rule is
checked for all sizes with hypothesis on ``Journal`` itself.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from email.utils import parsedate_to_datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from mockstore.app import create_app
from mockstore.clock import Clock
from mockstore.journal import Entry, Journal, mask
from mockstore.scenario import load_scenario
from tests.support import TOOL, assert_conforms, auth, examples

START = 1772366430.0  # 2026-03-01T12:00:30Z


def _app(yaml_text: str) -> TestClient:
    scenario = load_scenario(yaml_text, "test.yaml")
    return TestClient(create_app(scenario, clock=Clock(start=START, mode="manual")))


@pytest.fixture
def tiny() -> Iterator[TestClient]:
    """A journal of 5 entries that keeps 12 bytes of each body."""
    text = """
version: 1
keys: [{key: pro-key, plan: pro}]
journal: {size: 5, body_bytes: 12}
"""
    with _app(text) as client:
        yield client


def _entries(client: TestClient, **params: object) -> dict:
    response = client.get("/__mockstore/requests", params=params)
    assert response.status_code == 200, response.text
    return response.json()


def test_each_exchange_is_recorded_with_its_request_id(client: TestClient) -> None:
    response = client.get("/v1/pets", params={"limit": 2}, headers=auth("pro"))
    assert_conforms(response)
    created = client.post("/v1/pets", json={"name": "Nala", "categoryId": 7}, headers=auth("pro"))
    assert_conforms(created)

    listed = _entries(client)
    first, second = listed["entries"]
    assert first["request_id"] == response.headers["x-request-id"]
    assert second["request_id"] == created.headers["x-request-id"]
    assert second["seq"] == first["seq"] + 1 == listed["last_seq"]
    assert first["operation"] == "listPets" and second["operation"] == "createPet"
    assert first["request"]["query"] == {"limit": "2"}
    assert first["response"]["status"] == 200
    assert json.loads(second["request"]["body"]) == {"name": "Nala", "categoryId": 7}
    assert json.loads(second["response"]["body"]) == created.json()
    headers = dict(second["response"]["headers"])
    assert headers["x-ratelimit-remaining"] == created.headers["x-ratelimit-remaining"]
    assert first["time"] == START and first["elapsed"] == 0
    assert first["plan"] == "pro" and first["outcome"] == "response"


def test_the_bearer_token_never_leaves_in_clear(client: TestClient) -> None:
    assert_conforms(client.get("/v1/pets", headers=auth("enterprise")))
    text = client.get("/__mockstore/requests").text
    assert "enterprise-key" not in text
    entry = json.loads(text)["entries"][0]
    assert entry["key"] == mask("enterprise-key") == "ente*** (key-f8bb19ef)"
    assert dict(entry["request"]["headers"])["authorization"] == f"Bearer {mask('enterprise-key')}"


def test_scenario_time_and_the_rule_that_fired_are_recorded() -> None:
    text = """
version: 1
keys: [{key: pro-key, plan: pro}]
faults:
  - name: second-list-fails
    match: {operation: listPets, calls: [2]}
    respond: {status: 503, body: {code: unavailable, message: down, status: 503}}
"""
    with _app(text) as client:
        assert client.get("/v1/pets", headers=auth("pro")).status_code == 200
        client.post("/__mockstore/clock", json={"advance_seconds": 30})
        failed = client.get("/v1/pets", headers=auth("pro"))
        assert failed.status_code == 503
        assert_conforms(failed)
        first, second = _entries(client)["entries"]
    assert first["rule"] is None and second["rule"] == "second-list-fails"
    assert second["elapsed"] == 30 and second["time"] == START + 30


def test_filters_by_operation_key_status_and_since(client: TestClient) -> None:
    client.get("/v1/pets", headers=auth("pro"))
    client.get("/v1/pets/1", headers=auth("free"))
    client.get("/v1/pets/999", headers=auth("pro"))
    client.get("/v1/pets")  # no key

    assert [e["operation"] for e in _entries(client, operation="getPet")["entries"]] == [
        "getPet",
        "getPet",
    ]
    by_key = _entries(client, key="pro-key")["entries"]
    assert [e["request"]["path"] for e in by_key] == ["/v1/pets", "/v1/pets/999"]
    assert [e["response"]["status"] for e in _entries(client, status=404)["entries"]] == [404]
    assert [e["response"]["status"] for e in _entries(client, status=401)["entries"]] == [401]
    since = _entries(client)["entries"][1]["seq"]
    assert [e["seq"] for e in _entries(client, since=since)["entries"]] == [since + 1, since + 2]
    assert (
        _entries(client, operation="getPet", key="pro-key", status=404)["entries"][0]["request"][
            "path"
        ]
        == "/v1/pets/999"
    )


@pytest.mark.parametrize("name", ["status", "since"])
def test_a_filter_that_is_not_an_integer_is_refused(client: TestClient, name: str) -> None:
    response = client.get("/__mockstore/requests", params={name: "soon"})
    assert response.status_code == 400
    assert response.json()["code"] == "invalid_request" and name in response.json()["message"]


def test_clear_forgets_entries_but_sequence_numbers_keep_growing(client: TestClient) -> None:
    client.get("/v1/pets", headers=auth("pro"))
    client.get("/v1/pets", headers=auth("pro"))
    before = _entries(client)["last_seq"]
    assert client.delete("/__mockstore/requests").status_code == 204
    assert _entries(client)["entries"] == []
    client.get("/v1/pets", headers=auth("pro"))
    (entry,) = _entries(client)["entries"]
    assert entry["seq"] == before + 1


def test_the_journal_outlives_a_reset_and_since_selects_after_it(client: TestClient) -> None:
    client.get("/v1/pets", headers=auth("pro"))
    reset = client.post("/__mockstore/reset", headers=TOOL).json()
    client.get("/v1/pets/2", headers=auth("pro"))
    assert len(_entries(client)["entries"]) == 2
    after = _entries(client, since=reset["journal_seq"])["entries"]
    assert [e["request"]["path"] for e in after] == ["/v1/pets/2"]


def test_a_full_journal_drops_the_oldest_and_counts_them(tiny: TestClient) -> None:
    for pet_id in range(1, 9):
        tiny.get(f"/v1/pets/{pet_id}", headers=auth("pro"))
    listed = _entries(tiny)
    assert [e["request"]["path"] for e in listed["entries"]] == [
        f"/v1/pets/{i}" for i in range(4, 9)
    ]
    assert listed["dropped"] == 3 and listed["size"] == 5 and listed["last_seq"] == 8


def test_bodies_are_kept_up_to_the_cap(tiny: TestClient) -> None:
    created = tiny.post(
        "/v1/pets", json={"name": "A long name indeed", "categoryId": 1}, headers=auth("pro")
    )
    assert_conforms(created)
    (entry,) = _entries(tiny)["entries"]
    assert entry["request"]["body"] == '{"name":"A l'[: len(entry["request"]["body"])]
    assert len(entry["request"]["body"].encode()) == 12
    assert len(entry["response"]["body"].encode()) == 12
    assert created.text.startswith(entry["response"]["body"])


def test_size_zero_turns_the_journal_off_and_a_swap_resizes_it(tiny: TestClient) -> None:
    tiny.get("/v1/pets", headers=auth("pro"))
    off = "version: 1\nkeys: [{key: pro-key, plan: pro}]\njournal: {size: 0}\n"
    assert tiny.put("/__mockstore/scenario", content=off).status_code == 200
    assert_conforms(tiny.get("/v1/pets", headers=auth("pro")))
    listed = _entries(tiny)
    assert listed["enabled"] is False
    assert len(listed["entries"]) == 1, "what was recorded stays; nothing new is added"
    report = tiny.get("/__mockstore/report").json()
    assert report["summary"]["journal"]["enabled"] is False

    on = "version: 1\nkeys: [{key: pro-key, plan: pro}]\njournal: {size: 2}\n"
    assert tiny.put("/__mockstore/scenario", content=on).status_code == 200
    for _ in range(3):
        tiny.get("/v1/pets", headers=auth("pro"))
    listed = _entries(tiny)
    assert listed["enabled"] is True and listed["size"] == 2
    assert len(listed["entries"]) == 2


# -- the ring buffer, for every size and number of appends ---------------------


def _entry(seq: int) -> Entry:
    return Entry(
        seq=seq,
        request_id=f"req-{seq:06d}",
        time=START + seq,
        elapsed=float(seq),
        method="GET",
        path="/v1/pets",
        query=b"",
        request_headers=[],
        request_body=b"",
        client="127.0.0.1",
        operation="listPets",
        key=None,
        plan="free",
        status=200,
        response_headers=[],
        response_body=b"[]",
        latency_ms=0.1,
        rule=None,
    )


@settings(max_examples=examples(200), deadline=None)
@given(size=st.integers(0, 20), appends=st.integers(0, 60), shrink_to=st.integers(0, 20))
def test_the_ring_buffer_keeps_the_newest_and_counts_the_rest(
    size: int, appends: int, shrink_to: int
) -> None:
    journal = Journal(size=size, body_bytes=4096)
    for _ in range(appends):
        journal.append(_entry(journal.next_seq()))
    kept = min(appends, size)
    assert len(journal) == kept
    assert [e.seq for e in journal] == list(range(appends - kept + 1, appends + 1))
    assert journal.dropped == (appends - kept if size else 0)
    assert journal.last_seq == appends

    before = len(journal)
    journal.resize(shrink_to, 100)
    if shrink_to:
        assert len(journal) == min(before, shrink_to)
        assert [e.seq for e in journal][-1:] == ([appends] if before else [])
    assert journal.enabled is (shrink_to > 0)


def test_recorded_exchanges_are_invisible_to_the_cyclic_garbage_collector() -> None:
    # 10,000 recorded exchanges must not make every full collection slower while
    # the server works: the ring buffer holds plain tuples of atoms, which the
    # collector stops tracking after their first collection.
    import gc

    app = create_app("default")
    with TestClient(app) as client:
        for _ in range(5):
            client.get("/v1/pets", headers={"Authorization": "Bearer free-key"})
    # One nesting level is untracked per pass: header pairs, the header tuples, the record.
    for _ in range(3):
        gc.collect()
    records = list(app.runtime.journal._entries)
    assert len(records) == 5
    assert not any(gc.is_tracked(record) for record in records)


def test_every_entry_field_holds_what_its_name_says() -> None:
    # journal.record takes Entry's fields by position (it runs per request):
    # one exchange, every field checked by name.
    from mockstore.clock import Clock

    clock = Clock(start=START, mode="manual", wall=lambda: 1_800_000_000.5)
    app = create_app("default", clock=clock)
    with TestClient(app, client=("10.1.2.3", 5000)) as client:
        client.post("/__mockstore/clock", json={"advance_seconds": 7})
        sent = client.post(
            "/v1/pets?x=1",
            json={"name": "Field", "categoryId": 9},
            headers={"Authorization": "Bearer pro-key"},
        )
    (entry,) = app.runtime.journal.select()
    assert entry.seq == app.runtime.journal.last_seq
    assert entry.request_id == sent.headers["x-request-id"]
    assert (entry.time, entry.elapsed, entry.wall) == (START + 7, 7.0, 1_800_000_000.5)
    assert (entry.method, entry.path, entry.query) == ("POST", "/v1/pets", b"x=1")
    assert (b"authorization", b"Bearer pro-key") in entry.request_headers
    assert json.loads(entry.request_body) == {"name": "Field", "categoryId": 9}
    assert (entry.client, entry.operation) == ("10.1.2.3", "createPet")
    assert (entry.key, entry.plan, entry.status) == ("pro-key", "pro", 201)
    assert dict(entry.response_headers)[b"x-request-id"] == sent.headers["x-request-id"].encode()
    assert entry.response_body == sent.content
    assert entry.latency_ms > 0
    assert (entry.rule, entry.outcome) == (None, "response")
    assert entry.run == app.runtime.run
    assert entry.arrived_after == entry.seq - 1  # nothing else was in flight


def test_the_wall_instant_journaled_is_the_one_the_answer_was_sent_at() -> None:
    # A manual clock's wall instant moves on with the client's own clock. The journal
    # wrote it down after the answer had gone, by when the client may have slept on (it
    # had, under load: a retry then looked too early to the etiquette verdict, which
    # measures a wall-clock wait from the answer's journaled wall instant).
    wall = [1_900_000_000.0]
    clock = Clock(start=START, mode="manual", wall=lambda: wall[0])
    app = create_app("version: 1\nname: walls\nkeys: [{key: pro-key, plan: pro}]\n", clock=clock)

    async def client_sleeps_once_answered(scope: Any, receive: Any, send: Any) -> None:
        async def sent(message: dict[str, Any]) -> None:
            await send(message)
            if message["type"] == "http.response.body" and not message.get("more_body"):
                wall[0] += 30.0  # the client has its answer and sleeps 30 s

        await app(scope, receive, sent if scope["type"] == "http" else send)

    with TestClient(client_sleeps_once_answered, base_url="http://testserver") as client:
        answered = client.get("/v1/pets", headers=auth("pro"))
        assert answered.status_code == 200
        (entry,) = _entries(client)["entries"]
    assert entry["wall"] == 1_900_000_000.0
    assert parsedate_to_datetime(answered.headers["date"]).timestamp() == entry["wall"]
