"""The control API under /__mockstore: health, scenario, reset, clock, keys, bans, token, off."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import yaml
from starlette.testclient import TestClient

from mockstore.app import create_app
from mockstore.clock import parse_time
from mockstore.scenario import ScenarioError, load_scenario
from tests.support import TOOL, assert_conforms, auth, live_server, mock_server

JSON_BODY = {"Content-Type": "application/json"}

START = "2026-03-01T12:00:30Z"
SCENARIO = f"""\
version: 1
name: control-test
description: Two keys, one pet, a scripted second create; manual clock.
seed: 3
clock: {{start: "{START}", mode: manual, headers: scenario}}  # dates in headers read as written
ban: {{after_rejections: 2, within_seconds: 60, duration_seconds: 120}}
keys:
  - {{key: tight-key, plan: {{per_minute: 3, per_day: 5}}}}
  - {{key: pro-key, plan: pro}}
pets:
  - {{id: 1, name: Rex, categoryId: 1, status: available}}
faults:
  - name: second-create
    match: {{operation: createPet, calls: [2]}}
    respond: {{status: 503, body: {{code: unavailable, message: later, status: 503}}}}
"""
OTHER = """\
version: 1
name: other
description: A different store.
clock: {start: "2030-01-01T00:00:00Z", mode: manual}
keys:
  - {key: other-key, plan: business}
pets:
  - {id: 40, name: Nova, categoryId: 9, status: sold}
"""
NEW_PET = {"name": "Nova", "categoryId": 3}


@pytest.fixture
def client() -> Iterator[TestClient]:
    with TestClient(create_app(load_scenario(SCENARIO, "control.yaml"))) as test_client:
        yield test_client


def keys_by_name(client: TestClient) -> dict[str, dict[str, Any]]:
    response = client.get("/__mockstore/keys")
    assert response.status_code == 200
    return {entry["key"]: entry for entry in response.json()}


def pet_names(client: TestClient, key: str = "pro-key") -> list[str]:
    response = client.get("/v1/pets", headers=auth(key))
    return [p["name"] for p in assert_conforms(response)]


def assert_error(response: Any, status: int, code: str) -> dict[str, Any]:
    """A control API error: the same Error shape as the API's."""
    assert response.status_code == status, response.text
    body = response.json()
    assert body["code"] == code
    assert body["status"] == status
    assert isinstance(body["message"], str) and body["message"]
    return body


# -- health and scenario ------------------------------------------------------


def test_health_reports_the_scenario_and_its_clock(client: TestClient) -> None:
    response = client.get("/__mockstore/health")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["scenario"] == "control-test"
    assert body["time"] == START
    assert body["version"]


def test_get_scenario_describes_the_running_one(client: TestClient) -> None:
    body = client.get("/__mockstore/scenario").json()
    assert body["name"] == "control-test"
    assert body["description"] == "Two keys, one pet, a scripted second create; manual clock."
    assert body["source"] == SCENARIO
    assert body["faults"] == 1
    assert {k["key"] for k in body["keys"]} == {"tight-key", "pro-key"}


def test_control_calls_need_no_api_key_and_spend_no_allowance(client: TestClient) -> None:
    for _ in range(5):
        assert client.get("/__mockstore/keys").status_code == 200
    response = client.get("/v1/pets", headers=auth("tight-key"))
    assert response.headers["x-ratelimit-remaining"] == "2"


def test_the_control_api_is_not_under_the_base_path(client: TestClient) -> None:
    response = client.get("/v1/__mockstore/health", headers=auth("pro-key"))
    assert assert_conforms(response)["code"] == "not_found"


@pytest.mark.parametrize("encode", [lambda t: t, lambda t: json.dumps(yaml.safe_load(t))])
def test_put_scenario_swaps_in_a_yaml_or_json_scenario(client: TestClient, encode: Any) -> None:
    response = client.put("/__mockstore/scenario", content=encode(OTHER))
    assert response.status_code == 200, response.text
    assert response.json()["name"] == "other"
    health = client.get("/__mockstore/health").json()
    assert (health["scenario"], health["time"]) == ("other", "2030-01-01T00:00:00Z")
    assert pet_names(client, "other-key") == ["Nova"]
    gone_with_the_old_scenario = client.get("/v1/pets", headers=auth("pro-key"))
    assert assert_conforms(gone_with_the_old_scenario)["code"] == "invalid_token"


def test_put_an_invalid_scenario_is_refused_like_validate_and_changes_nothing(
    client: TestClient,
) -> None:
    client.post("/v1/pets", json=NEW_PET, headers=auth("pro-key"))
    before_keys = keys_by_name(client)
    bad = "version: 1\nseed: x\nkeys:\n  - {key: a, plan: gold}\n"
    with pytest.raises(ScenarioError) as expected:
        load_scenario(bad, "mine.yaml")

    response = client.put("/__mockstore/scenario", params={"file": "mine.yaml"}, content=bad)
    body = assert_error(response, 400, "invalid_scenario")
    assert body["problems"] == [str(p) for p in expected.value.problems]
    assert body["problems"] == [
        "mine.yaml:2:7: $.seed: must be an integer, got string 'x'",
        "mine.yaml:4:20: $.keys[0].plan: unknown plan 'gold' (known: business, enterprise, free,"
        " pro)",
    ]
    assert body["details"][0] == {
        "file": "mine.yaml",
        "line": 2,
        "column": 7,
        "path": "$.seed",
        "message": "must be an integer, got string 'x'",
    }
    # The running scenario and its state are untouched: the pet created stays.
    assert client.get("/__mockstore/scenario").json()["name"] == "control-test"
    assert pet_names(client) == ["Rex", "Nova"]
    assert keys_by_name(client)["pro-key"]["minute"]["used"] == (
        before_keys["pro-key"]["minute"]["used"] + 1
    )


def test_put_a_scenario_that_is_not_yaml_at_all_is_refused(client: TestClient) -> None:
    response = client.put("/__mockstore/scenario", content="version: 1\nkeys: [oops\n")
    body = assert_error(response, 400, "invalid_scenario")
    assert body["problems"] == [
        "<PUT /__mockstore/scenario>:3:1: $: YAML syntax error: expected ',' or ']', but got"
        " the end of the file (while parsing a flow sequence that starts at line 2, column 7)"
    ]
    assert client.get("/__mockstore/health").json()["scenario"] == "control-test"


def test_put_scenario_takes_a_bundled_scenarios_name() -> None:
    """``curl -X PUT --data default …/scenario``: no need to fetch the bundled file first."""
    with mock_server(SCENARIO) as server:
        for body in ("default", "free-tier-exhaustion\n"):
            response = httpx.put(server.url + "/__mockstore/scenario", content=body)
            assert response.status_code == 200, response.text
            assert response.json()["name"] == body.strip()
        health = httpx.get(server.url + "/__mockstore/health").json()
        assert health["scenario"] == "free-tier-exhaustion"
        misspelt = httpx.put(server.url + "/__mockstore/scenario", content="defualt")
        assert misspelt.status_code == 400
        error = misspelt.json()
        assert error["code"] == "invalid_scenario"
        assert "default" in " ".join(error["problems"]), "the bundled names are offered"
        assert httpx.get(server.url + "/__mockstore/health").json()["scenario"] == (
            "free-tier-exhaustion"
        )


# -- reset --------------------------------------------------------------------


def test_reset_restores_pets_counters_bans_clock_keys_and_call_counts(
    client: TestClient,
) -> None:
    def first_two_creates() -> list[int]:
        return [
            client.post("/v1/pets", json=NEW_PET, headers=auth("pro-key")).status_code
            for _ in range(2)
        ]

    assert first_two_creates() == [201, 503]
    issued = client.post("/__mockstore/keys", json={"plan": "pro", "key": "extra-key"})
    assert issued.status_code == 201
    for _ in range(6):  # 3 allowed, then 2 rejections ban the key
        client.get("/v1/pets", headers=auth("tight-key"))
    client.post("/__mockstore/clock", json={"advance_seconds": 5})
    assert keys_by_name(client)["tight-key"]["banned"] is True
    assert pet_names(client) == ["Rex", "Nova"]

    response = client.post("/__mockstore/reset", headers=TOOL)
    assert response.status_code == 200
    assert response.json()["status"] == "reset"

    keys = keys_by_name(client)
    assert set(keys) == {"tight-key", "pro-key"}
    assert keys["tight-key"]["banned"] is False
    assert keys["tight-key"]["minute"]["used"] == 0
    assert keys["tight-key"]["day"]["used"] == 0
    assert keys["pro-key"]["day"]["used"] == 0
    assert client.get("/__mockstore/clock").json()["now"] == START
    assert client.get("/v1/pets", headers=auth("extra-key")).status_code == 401
    # The rule's call count starts again, so the second create fails again.
    assert first_two_creates() == [201, 503]
    assert pet_names(client) == ["Rex", "Nova"]


# -- clock --------------------------------------------------------------------


def test_clock_advance_and_set_move_the_scenario_time(client: TestClient) -> None:
    moved = client.post("/__mockstore/clock", json={"advance_seconds": 90.5})
    assert moved.status_code == 200
    assert moved.json()["now"] == "2026-03-01T12:02:00.500Z"
    assert moved.json()["elapsed_seconds"] == 90.5
    response = client.get("/v1/pets", headers=auth("pro-key"))
    assert response.headers["date"] == "Sun, 01 Mar 2026 12:02:00 GMT"
    assert response.headers["x-ratelimit-reset"] == str(int(parse_time("2026-03-01T12:03:00Z")))

    back = client.post("/__mockstore/clock", json={"advance_seconds": -30})
    assert back.json()["now"] == "2026-03-01T12:01:30.500Z"
    later = client.post("/__mockstore/clock", json={"set": "2030-12-05T00:00:01Z"})
    assert later.json()["now"] == "2030-12-05T00:00:01Z"
    assert client.get("/__mockstore/clock").json()["unix"] == parse_time("2030-12-05T00:00:01Z")
    gone = client.get("/v1/pets/1", headers=auth("pro-key"))
    assert assert_conforms(gone)["code"] == "gone"


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"{}",
        b'{"advance_seconds": "5"}',
        b'{"advance_seconds": true}',
        b'{"advance_seconds": null}',
        b'{"set": "tomorrow"}',
        b'{"set": 1772366430}',
        b'{"advance_seconds": 1, "set": "2026-03-01T12:00:00Z"}',
        b'{"advance": 1}',
        b"[1]",
        b"not json",
    ],
)
def test_clock_refuses_a_bad_body_and_stays_put(client: TestClient, body: bytes) -> None:
    response = client.post("/__mockstore/clock", content=body, headers=JSON_BODY)
    assert response.status_code == 400
    assert response.json()["code"] in {"invalid_request", "malformed_json"}
    assert response.json()["status"] == 400
    assert client.get("/__mockstore/clock").json()["now"] == START


# -- keys ---------------------------------------------------------------------


def test_get_keys_shows_plan_usage_in_both_windows_and_ban_state(client: TestClient) -> None:
    client.get("/v1/pets", headers=auth("tight-key"))
    client.get("/v1/pets", headers=auth("tight-key"))
    tight = keys_by_name(client)["tight-key"]
    assert tight["plan"] == "custom:tight-key"
    assert tight["limits"] == {"per_minute": 3, "per_day": 5}
    assert tight["minute"] == {
        "used": 2,
        "remaining": 1,
        "reset": int(parse_time("2026-03-01T12:01:00Z")),
    }
    assert tight["day"] == {
        "used": 2,
        "remaining": 3,
        "reset": int(parse_time("2026-03-02T00:00:00Z")),
    }
    assert tight["banned"] is False
    assert tight["banned_until"] is None

    for _ in range(3):  # one allowed, then two rejections: banned for 120 s
        client.get("/v1/pets", headers=auth("tight-key"))
    tight = keys_by_name(client)["tight-key"]
    assert tight["minute"]["remaining"] == 0
    assert tight["banned"] is True
    assert tight["banned_until"] == "2026-03-01T12:02:30Z"
    pro = keys_by_name(client)["pro-key"]
    assert (pro["plan"], pro["minute"]["remaining"], pro["banned"]) == ("pro", 300, False)


def test_post_keys_issues_a_working_key_on_a_plan(client: TestClient) -> None:
    response = client.post("/__mockstore/keys", json={"plan": "business"})
    assert response.status_code == 201
    issued = response.json()
    assert issued["plan"] == "business"
    assert issued["key"] in keys_by_name(client)
    listing = client.get("/v1/pets", headers=auth(issued["key"]))
    assert pet_names(client, issued["key"]) == ["Rex"]
    assert listing.headers["x-ratelimit-limit"] == "1000"

    named = client.post(
        "/__mockstore/keys",
        json={"key": "ci-worker-1", "plan": {"per_minute": 2, "per_day": 9}, "tenant": "ci"},
    )
    assert named.status_code == 201
    assert named.json()["limits"] == {"per_minute": 2, "per_day": 9}
    assert named.json()["tenant"] == "ci"
    first = client.get("/v1/pets", headers=auth("ci-worker-1"))
    assert first.headers["x-ratelimit-limit"] == "2"


@pytest.mark.parametrize(
    "body, status, code",
    [
        ({"plan": "gold"}, 400, "unknown_plan"),
        ({"key": "pro-key", "plan": "pro"}, 409, "key_exists"),
        ({"plan": "pro", "colour": "red"}, 400, "invalid_request"),
        ({"key": "has space", "plan": "pro"}, 400, "invalid_request"),
        ({"plan": {"per_minute": 5, "per_day": 0}}, 400, "invalid_request"),
    ],
)
def test_post_keys_refuses_what_it_cannot_issue(
    client: TestClient, body: dict[str, Any], status: int, code: str
) -> None:
    assert_error(client.post("/__mockstore/keys", json=body), status, code)
    assert set(keys_by_name(client)) == {"tight-key", "pro-key"}


def test_delete_key_revokes_it_and_the_next_request_is_invalid_token(client: TestClient) -> None:
    assert client.get("/v1/pets", headers=auth("pro-key")).status_code == 200
    response = client.delete("/__mockstore/keys/pro-key")
    assert response.status_code == 204
    refused = client.get("/v1/pets", headers=auth("pro-key"))
    assert refused.status_code == 401
    assert assert_conforms(refused)["code"] == "invalid_token"
    assert 'error="invalid_token"' in refused.headers["www-authenticate"]
    assert "pro-key" not in keys_by_name(client)
    assert_error(client.delete("/__mockstore/keys/pro-key"), 404, "unknown_key")


def test_delete_ban_lifts_it(client: TestClient) -> None:
    for _ in range(5):  # 3 allowed, 2 rejected: banned
        client.get("/v1/pets", headers=auth("tight-key"))
    banned = client.get("/v1/pets", headers=auth("tight-key"))
    assert assert_conforms(banned)["code"] == "key_banned"

    lifted = client.delete("/__mockstore/bans/tight-key")
    assert lifted.status_code == 200
    assert lifted.json() == {"key": "tight-key", "lifted": True}
    assert keys_by_name(client)["tight-key"]["banned"] is False
    # Lifting a ban gives back no allowance: the minute is still spent.
    assert assert_conforms(client.get("/v1/pets", headers=auth("tight-key")))["code"] == (
        "rate_limited"
    )
    client.post("/__mockstore/clock", json={"advance_seconds": 60})
    assert client.get("/v1/pets", headers=auth("tight-key")).status_code == 200
    assert client.delete("/__mockstore/bans/tight-key").json()["lifted"] is False


def test_unknown_control_paths_and_methods_answer_with_an_error_body(client: TestClient) -> None:
    assert_error(client.get("/__mockstore/nothing"), 404, "not_found")
    assert_error(client.delete("/__mockstore/reset"), 405, "method_not_allowed")


# -- the flags, on a real server ---------------------------------------------


def test_control_token_guards_everything_but_health() -> None:
    with mock_server(control_token="s3cret") as server, server.client() as http:
        assert http.get("/__mockstore/health").status_code == 200
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "s3cret"}):
            refused = http.get("/__mockstore/keys", headers=headers)
            assert_error(refused, 401, "unauthorized")
            assert refused.headers["www-authenticate"].startswith("Bearer")
        assert_error(http.post("/__mockstore/reset"), 401, "unauthorized")
        token = {"Authorization": "Bearer s3cret"}
        assert http.get("/__mockstore/keys", headers=token).status_code == 200
        assert http.post("/__mockstore/reset", headers=token).status_code == 200
        # The API itself keeps using API keys, not the control token.
        assert assert_conforms(http.get("/v1/pets", headers=auth("pro"))) != []
        assert http.get("/v1/pets", headers=token).status_code == 401


def test_no_control_turns_the_control_api_off() -> None:
    # The CLI, whose banner says the control API is off.
    with live_server("--no-control") as server, server.client() as http:
        for method, path in (("GET", "/health"), ("GET", "/keys"), ("POST", "/reset")):
            response = http.request(method, "/__mockstore" + path)
            assert_error(response, 404, "not_found")
        assert "control:  http" in server.log() and "(off)" in server.log()
        assert assert_conforms(http.get("/v1/pets", headers=auth("pro"))) != []
