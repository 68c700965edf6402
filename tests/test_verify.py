"""Verification: POST /__mockstore/verify counts matching requests and explains misses."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from mockstore.clients import Control, VerificationError
from mockstore.reports.verify import Expectation, InvalidExpectation, contains
from tests.support import TOOL, assert_conforms, auth, examples, mock_server

JSON_BODY = {"Content-Type": "application/json"}


def _verify(client: TestClient, **fields: Any) -> dict[str, Any]:
    response = client.post("/__mockstore/verify", json=fields)
    assert response.status_code == 200, response.text
    return response.json()


def _create(client: TestClient, pet: dict[str, Any], key: str = "pro") -> None:
    assert_conforms(client.post("/v1/pets", json=pet, headers=auth(key)))


@pytest.fixture
def session(client: TestClient) -> TestClient:
    """Two Rexes, one Max, a list and a deprecated fetch."""
    _create(client, {"name": "Rex", "categoryId": 1, "status": "available"})
    _create(client, {"name": "Max", "categoryId": 2})
    _create(client, {"name": "Rex", "categoryId": 3}, key="free")
    assert_conforms(client.get("/v1/pets", params={"limit": 3}, headers=auth("pro")))
    assert_conforms(client.get("/v1/pets/2", headers=auth("pro")))
    return client


def test_exact_count_with_a_body_subset(session: TestClient) -> None:
    result = _verify(session, operation="createPet", count=2, body_contains={"name": "Rex"})
    assert result["ok"] is True and result["count"] == 2
    assert len(result["matched"]) == 2


def test_a_failure_names_the_closest_requests_and_why_they_missed(session: TestClient) -> None:
    result = _verify(
        session, operation="createPet", count=1, body_contains={"name": "Rex", "categoryId": 2}
    )
    assert result["ok"] is False and result["count"] == 0
    message = result["message"]
    assert message.startswith(
        'expected exactly 1 request matching operation=createPet and body_contains={"name": '
        '"Rex", "categoryId": 2}; 0 matched (of 5 requests in the journal)'
    )
    assert "closest requests that did not match" in message
    # Every createPet meets 1 of the 2 conditions: the newest come first.
    assert [c["request"]["body"] for c in result["closest"]] == [
        '{"name":"Rex","categoryId":3}',
        '{"name":"Max","categoryId":2}',
        '{"name":"Rex","categoryId":1,"status":"available"}',
    ]
    assert result["closest"][0]["unmet"] == ["body.categoryId is 3, expected 2"]
    assert result["closest"][1]["unmet"] == ['body.name is "Max", expected "Rex"']
    assert "body.categoryId is 3, expected 2" in message
    assert "POST /v1/pets -> 201 [createPet]" in message


def test_closest_ranks_by_conditions_met(session: TestClient) -> None:
    result = _verify(session, method="GET", path="/pets/{petId}", status=404, key="pro-key")
    assert result["ok"] is False
    best = result["closest"][0]
    assert best["request"]["path"] == "/v1/pets/2"
    assert best["unmet"] == ["status is 200, expected 404"]
    assert "met 3 of 4" in result["message"]


def test_too_many_shows_what_matched(session: TestClient) -> None:
    result = _verify(session, operation="createPet", at_most=1)
    assert result["ok"] is False and result["count"] == 3
    assert result["message"].startswith("expected at most 1 request matching operation=createPet")
    assert result["message"].count("[createPet]") == 3
    assert "closest" not in result["message"]


@pytest.mark.parametrize(
    ("fields", "count", "ok"),
    [
        ({"operation": "getPet"}, 1, True),  # no count: at least one
        ({"operation": "listOrders"}, 0, False),
        ({"operation": "createPet", "at_least": 3}, 3, True),
        ({"operation": "createPet", "at_least": 4}, 3, False),
        ({"operation": "createPet", "at_least": 1, "at_most": 3}, 3, True),
        ({"operation": "listOrders", "at_most": 0}, 0, True),
        ({"operation": "createPet", "count": 0}, 3, False),
        ({"path": "/v1/pets", "method": "post"}, 3, True),
        ({"path": "/pets", "method": "GET", "status": 200}, 1, True),
        ({"key": "free-key"}, 1, True),
        ({"body_contains": {"status": "available"}}, 1, True),
        ({"body_contains": {"name": "Rex", "nickname": "R"}}, 0, False),
    ],
)
def test_counts_and_conditions(
    session: TestClient, fields: dict[str, Any], count: int, ok: bool
) -> None:
    result = _verify(session, **fields)
    assert (result["count"], result["ok"]) == (count, ok)


def test_since_limits_the_window(session: TestClient) -> None:
    reset = session.post("/__mockstore/reset", headers=TOOL).json()
    assert _verify(session, operation="createPet", count=0, since=reset["journal_seq"])["ok"]
    _create(session, {"name": "Rex", "categoryId": 9})
    result = _verify(session, operation="createPet", count=2, since=reset["journal_seq"])
    assert result["ok"] is False
    assert f"; 1 matched (of 1 request after seq {reset['journal_seq']})" in result["message"]


def test_an_empty_window_says_so(client: TestClient) -> None:
    result = _verify(client, operation="createPet")
    assert result["ok"] is False
    assert "the journal holds no request in that window" in result["message"]


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"operation": "createPet", "cuont": 1}, "unknown field(s): cuont"),
        ({"count": 1, "at_least": 1}, "not both"),
        ({"count": -1}, "non-negative"),
        ({"at_least": 3, "at_most": 1}, "more than at_most"),
        ({"status": "404"}, "status must be an integer"),
        ({"since": "yesterday"}, "since must be an integer"),
        ({"operation": 3}, "operation must be a string"),
    ],
)
def test_a_wrong_expectation_is_a_400(client: TestClient, body: dict[str, Any], words: str) -> None:
    response = client.post("/__mockstore/verify", json=body)
    assert response.status_code == 400
    assert response.json()["code"] == "invalid_request"
    assert words in response.json()["message"]


def test_a_body_that_is_not_json_is_a_400(client: TestClient) -> None:
    response = client.post("/__mockstore/verify", content=b"{oops", headers=JSON_BODY)
    assert response.status_code == 400 and response.json()["code"] == "malformed_json"


# -- the subset rule, for all JSON values -------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=12,
)


@settings(max_examples=examples(200), deadline=None)
@given(value=json_values)
def test_every_value_contains_itself(value: Any) -> None:
    assert contains(value, value) is None


@settings(max_examples=examples(200), deadline=None)
@given(
    body=st.dictionaries(st.text(max_size=4), json_values, min_size=1, max_size=5), data=st.data()
)
def test_any_part_of_an_object_matches_and_a_changed_member_does_not(
    body: dict[str, Any], data: st.DataObject
) -> None:
    names = data.draw(st.lists(st.sampled_from(sorted(body)), unique=True))
    part = {name: body[name] for name in names}
    assert contains(body, part) is None
    name = data.draw(st.sampled_from(sorted(body)))
    changed = {name: ["not", "the", "same", body[name]]}
    reason = contains(body, changed)
    assert reason is not None and reason.startswith(f"body.{name}")


def test_scalars_keep_their_json_type() -> None:
    assert contains(1, 1.0) is None
    assert contains(True, 1) is not None
    assert contains(1, True) is not None
    assert contains("1", 1) == 'body is "1", expected 1'
    assert contains([1, 2], [1]) == "body has 2 items, expected 1"


@settings(max_examples=examples(100), deadline=None)
@given(
    count=st.none() | st.integers(0, 5),
    at_least=st.none() | st.integers(0, 5),
    at_most=st.none() | st.integers(0, 5),
    seen=st.integers(0, 8),
)
def test_count_bounds_mean_what_they_say(
    count: int | None, at_least: int | None, at_most: int | None, seen: int
) -> None:
    try:
        expectation = Expectation(count=count, at_least=at_least, at_most=at_most)
    except InvalidExpectation:
        assert (count is not None and (at_least is not None or at_most is not None)) or (
            at_least is not None and at_most is not None and at_least > at_most
        )
        return
    if count is not None:
        expected = seen == count
    elif at_least is None and at_most is None:
        expected = seen >= 1
    else:
        expected = (at_least is None or seen >= at_least) and (at_most is None or seen <= at_most)
    assert expectation.accepts(seen) is expected


# -- the example, through the control client over real HTTP -----------


def test_control_verify_over_http() -> None:
    with mock_server() as server, Control(server.url) as control:
        with server.client(headers=auth("pro")) as http:
            for name in ("Rex", "Rex", "Max"):
                assert_conforms(http.post("/v1/pets", json={"name": name, "categoryId": 1}))
        assert (
            control.verify(operation="createPet", count=2, body_contains={"name": "Rex"}).count == 2
        )
        with pytest.raises(VerificationError) as failed:
            control.verify(operation="createPet", count=3, body_contains={"name": "Rex"})
    assert failed.value.count == 2
    assert str(failed.value).startswith("expected exactly 3 requests matching operation=createPet")
    assert 'body.name is "Max", expected "Rex"' in str(failed.value)
    assert [c.unmet for c in failed.value.closest] == [['body.name is "Max", expected "Rex"']]
