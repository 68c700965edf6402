"""Bad input to the control API is refused with an Error and changes nothing."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from mockstore.app import create_app
from tests.support import assert_conforms, auth


@pytest.fixture
def control() -> TestClient:
    return TestClient(create_app("default"))


@pytest.mark.parametrize(
    "body",
    [
        b'{"advance_seconds": NaN}',
        b'{"advance_seconds": Infinity}',
        b'{"advance_seconds": 1e309}',
        b'{"advance_seconds": -1e12}',
        b'{"advance_seconds": 1e12}',
        b'{"set": "10000-01-01T00:00:00Z"}',
        b'{"advance_seconds": "60"}',
        b'{"advance_seconds": true}',
    ],
)
def test_a_clock_move_out_of_range_is_refused_and_the_clock_keeps_working(
    control: TestClient, body: bytes
) -> None:
    before = control.get("/__mockstore/clock").json()["unix"]
    response = control.post(
        "/__mockstore/clock", content=body, headers={"content-type": "application/json"}
    )
    assert response.status_code == 400
    assert response.json()["code"] == "invalid_request"
    assert control.get("/__mockstore/clock").json()["unix"] >= before
    assert_conforms(control.get("/v1/pets", headers=auth("pro")))


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"plan": {"per_minute": 0, "per_day": 10}}, "per_minute"),
        ({"plan": {"per_minute": -5, "per_day": 10}}, "per_minute"),
        ({"plan": {"per_minute": "5", "per_day": 10}}, "per_minute"),
        ({"plan": {"per_minute": 5, "per_day": 0}}, "per_day"),
        ({"key": "ünï"}, "key"),
        ({"key": "has space"}, "key"),
        ({"plan": "free", "colour": "red"}, "colour"),
    ],
)
def test_an_invalid_key_request_is_refused_naming_the_field(
    control: TestClient, body: dict, field: str
) -> None:
    before = _standing(control.get("/__mockstore/keys").json())
    response = control.post("/__mockstore/keys", json=body)
    assert response.status_code == 400
    assert field in response.json()["message"]
    assert _standing(control.get("/__mockstore/keys").json()) == before


def _standing(keys: list[dict]) -> list[dict]:
    """The keys as a refused request could change them: not when their windows turn
    (the clock runs, and a minute may turn between the two reads)."""
    return [
        {**key, **{w: {**key[w], "reset": None} for w in ("minute", "day") if key.get(w)}}
        for key in keys
    ]


def test_an_inline_plan_is_named_after_its_key_and_never_overwrites_another(
    control: TestClient,
) -> None:
    first = control.post(
        "/__mockstore/keys", json={"key": "a", "plan": {"per_minute": 2, "per_day": 5}}
    )
    second = control.post(
        "/__mockstore/keys", json={"key": "b", "plan": {"per_minute": 100, "per_day": 500}}
    )
    assert (first.status_code, second.status_code) == (201, 201)
    limits = {k["key"]: k["limits"] for k in control.get("/__mockstore/keys").json()}
    assert limits["a"] == {"per_minute": 2, "per_day": 5}
    assert limits["b"] == {"per_minute": 100, "per_day": 500}


def test_the_control_token_must_be_sent_as_a_bearer_token() -> None:
    guarded = TestClient(create_app("default", control_token="s3cret"))
    assert guarded.get("/__mockstore/keys").status_code == 401
    assert (
        guarded.get("/__mockstore/keys", headers={"Authorization": "Basic s3cret"}).status_code
        == 401
    )
    assert (
        guarded.get("/__mockstore/keys", headers={"Authorization": "Bearer s3cret"}).status_code
        == 200
    )


def test_a_scenario_that_is_not_utf8_is_refused_and_the_running_one_stays(
    control: TestClient,
) -> None:
    response = control.put("/__mockstore/scenario", content=b"version: 1\nname: \xff\xfe\n")
    assert response.status_code == 400
    assert "UTF-8" in response.json()["message"]
    assert control.get("/__mockstore/scenario").json()["name"] == "default"


def test_lifting_the_ban_of_an_unknown_key_is_a_404(control: TestClient) -> None:
    response = control.delete("/__mockstore/bans/nobody")
    assert response.status_code == 404
    assert response.json()["code"] == "unknown_key"


@pytest.mark.parametrize(
    ("path", "allowed"),
    [
        ("/__mockstore/keys", {"GET", "HEAD", "POST"}),
        ("/__mockstore/clock", {"GET", "HEAD", "POST"}),
        ("/__mockstore/scenario", {"GET", "HEAD", "PUT"}),
    ],
)
def test_a_wrong_method_on_the_control_api_names_every_allowed_one(
    control: TestClient, path: str, allowed: set[str]
) -> None:
    response = control.patch(path)
    assert response.status_code == 405
    assert response.json()["code"] == "method_not_allowed"
    assert {m.strip() for m in response.headers["allow"].split(",")} == allowed
