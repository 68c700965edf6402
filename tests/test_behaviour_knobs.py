"""The settings calibration needs: each provider choice the spec leaves open is a scenario knob.

Error codes per condition, 400 or 422 for validation failures, ``X-RateLimit-Reset``
as a Unix time or as seconds from now, HEAD served or not, whether a path is
checked before the key, and unknown NewPet fields kept or dropped. Each is
checked over a real uvicorn process, and each default is mockstore's own.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from email.utils import parsedate_to_datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from mockstore.app import create_app
from mockstore.clock import Clock
from mockstore.errors import CONDITIONS
from mockstore.scenario import load_scenario
from tests.support import TOOL, LiveServer, assert_conforms, examples, live_server

KEY = {"Authorization": "Bearer knob-key"}
# 2026-03-01T12:00:30Z: mid-minute, so the minute window resets 30 s from now.
MANUAL = "clock: {start: 2026-03-01T12:00:30Z, mode: manual}\n"
BASE = f"""\
version: 1
{MANUAL}keys:
  - {{key: knob-key, plan: {{per_minute: 3, per_day: 100}}}}
pets:
  - {{id: 1, name: Rex, categoryId: 2, status: available}}
"""

PROVIDER_CODES = {
    "missing_key": "MISSING_API_KEY",
    "malformed_authorization": "BAD_AUTH_HEADER",
    "unknown_key": "INVALID_API_KEY",
    "malformed_json": "MALFORMED_BODY",
    "missing_body": "EMPTY_BODY",
    "invalid_body": "VALIDATION_ERROR",
    "bad_limit": "INVALID_LIMIT",
    "bad_status_filter": "INVALID_STATUS",
    "bad_pet_id": "INVALID_PET_ID",
    "pet_not_found": "PET_NOT_FOUND",
    "unknown_path": "ROUTE_NOT_FOUND",
    "method_not_allowed": "METHOD_NOT_ALLOWED",
    "payload_too_large": "TOO_LARGE",
    "unsupported_media_type": "WRONG_MEDIA_TYPE",
    "rate_limited": "RATE_LIMIT_EXCEEDED",
}


def _scenario(tmp_path: Path, behaviour: str, name: str = "knobs.yaml") -> str:
    path = tmp_path / name
    path.write_text(BASE + "behaviour:\n" + behaviour)
    return str(path)


@pytest.fixture(scope="module")
def provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """A server whose scenario makes a provider's choices in every knob."""
    codes = "".join(f"    {name}: {code}\n" for name, code in PROVIDER_CODES.items())
    behaviour = (
        "  validation_status: 422\n"
        "  ratelimit_reset: delta\n"
        "  serve_head: false\n"
        "  path_check: before_auth\n"
        "  unknown_fields: keep\n"
        "  max_body_bytes: 200\n"
        "  error_codes:\n" + codes
    )
    with live_server("--scenario", _scenario(tmp_path_factory.mktemp("provider"), behaviour)) as s:
        yield s


def _requests() -> list[tuple[str, str, str, dict[str, str], bytes, int]]:
    """(condition, method, path, headers, body, status) for the provider scenario."""
    json_type = {"Content-Type": "application/json"}
    return [
        ("missing_key", "GET", "/v1/pets", {}, b"", 401),
        ("malformed_authorization", "GET", "/v1/pets", {"Authorization": "Basic eDp5"}, b"", 401),
        ("unknown_key", "GET", "/v1/pets", {"Authorization": "Bearer nobody"}, b"", 401),
        ("malformed_json", "POST", "/v1/pets", {**KEY, **json_type}, b"{nope", 422),
        ("missing_body", "POST", "/v1/pets", {**KEY, **json_type}, b"", 422),
        ("invalid_body", "POST", "/v1/pets", {**KEY, **json_type}, b'{"name": 7}', 422),
        ("bad_limit", "GET", "/v1/pets?limit=0", KEY, b"", 422),
        ("bad_status_filter", "GET", "/v1/pets?status=lost", KEY, b"", 422),
        ("bad_pet_id", "GET", "/v1/pets/abc", KEY, b"", 422),
        ("pet_not_found", "GET", "/v1/pets/999", KEY, b"", 404),
        ("unknown_path", "GET", "/v1/nowhere", KEY, b"", 404),
        ("method_not_allowed", "DELETE", "/v1/pets", KEY, b"", 405),
        ("payload_too_large", "POST", "/v1/pets", {**KEY, **json_type}, b"{}" + b" " * 300, 413),
        ("unsupported_media_type", "POST", "/v1/pets", KEY, b'{"name": "x"}', 415),
    ]


def test_every_condition_answers_with_the_scenarios_code_and_status(provider: LiveServer) -> None:
    with provider.client() as http:
        for condition, method, path, headers, body, status in _requests():
            assert (
                http.post("/__mockstore/reset", headers=TOOL).status_code == 200
            )  # a fresh allowance for each
            response = http.request(method, path, headers=headers, content=body)
            assert response.status_code == status, (condition, response.text)
            answer = assert_conforms(response)
            assert answer["code"] == PROVIDER_CODES[condition], condition
            assert answer["status"] == status


def test_a_rate_limited_request_carries_the_scenarios_code(provider: LiveServer) -> None:
    with provider.client(headers=KEY) as http:
        assert http.post("/__mockstore/reset", headers=TOOL).status_code == 200
        statuses = [http.get("/v1/pets").status_code for _ in range(4)]
        refused = http.get("/v1/pets")
    assert statuses == [200, 200, 200, 429]
    assert refused.json()["code"] == "RATE_LIMIT_EXCEEDED"
    # Reset as seconds from now: the manual clock stands 30 s before the minute ends.
    assert refused.headers["x-ratelimit-reset"] == "30"
    assert refused.headers["retry-after"] == "30"


def test_reset_is_seconds_from_now_on_every_answer(provider: LiveServer) -> None:
    with provider.client(headers=KEY) as http:
        assert http.post("/__mockstore/reset", headers=TOOL).status_code == 200
        assert http.get("/v1/pets").headers["x-ratelimit-reset"] == "30"
        http.post("/__mockstore/clock", json={"advance_seconds": 12.5})
        # 17.5 s left, rounded up: never a moment before the window really resets.
        assert http.get("/v1/pets").headers["x-ratelimit-reset"] == "18"


def test_head_can_be_refused_as_405_without_head_in_allow(provider: LiveServer) -> None:
    with provider.client(headers=KEY) as http:
        assert http.post("/__mockstore/reset", headers=TOOL).status_code == 200
        head = http.head("/v1/pets")
        wrong = http.delete("/v1/pets/1")
    assert head.status_code == 405
    assert head.content == b""
    assert head.headers["allow"] == "GET, POST"
    assert wrong.headers["allow"] == "GET"


def test_paths_can_be_checked_before_the_key(provider: LiveServer) -> None:
    with provider.client() as http:
        assert http.post("/__mockstore/reset", headers=TOOL).status_code == 200
        unknown = http.get("/v1/nowhere")
        wrong_method = http.delete("/v1/pets")
        known = http.get("/v1/pets")
    assert (unknown.status_code, unknown.json()["code"]) == (404, "ROUTE_NOT_FOUND")
    assert wrong_method.status_code == 405
    assert (known.status_code, known.json()["code"]) == (401, "MISSING_API_KEY")
    # Still counted per client address, with every rate-limit header.
    assert_conforms(unknown)
    assert int(known.headers["x-ratelimit-remaining"]) < int(
        unknown.headers["x-ratelimit-remaining"]
    )


def test_unknown_fields_can_be_kept(provider: LiveServer) -> None:
    sent = {"name": "Nala", "categoryId": 7, "nickname": "N", "tags": ["a", {"b": 1}]}
    with provider.client(headers=KEY) as http:
        assert http.post("/__mockstore/reset", headers=TOOL).status_code == 200
        created = http.post("/v1/pets", json=sent)
        assert created.status_code == 201
        pet = assert_conforms(created)
        fetched = http.get(f"/v1/pets/{pet['id']}").json()
        listed = http.get("/v1/pets").json()
    assert pet == {"id": pet["id"], **sent}
    assert list(pet)[:3] == ["id", "name", "categoryId"]
    assert fetched == pet
    assert listed[-1] == pet


@pytest.fixture(scope="module")
def defaults(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    path = tmp_path_factory.mktemp("defaults") / "defaults.yaml"
    path.write_text(BASE)
    with live_server("--scenario", str(path)) as running:
        yield running


def test_the_defaults_are_mockstores_own_choices(defaults: LiveServer) -> None:
    with defaults.client(headers=KEY) as http:
        assert http.get("/v1/pets?limit=0").json()["code"] == "invalid_parameter"
        assert http.get("/v1/pets?limit=0").status_code == 400
        listed = http.get("/v1/pets")
        reset = int(listed.headers["x-ratelimit-reset"])
        # A Unix time (12:01:00Z on the scenario clock, 30 s on), written on the
        # wall clock as the answer's Date is (clock.headers: wall).
        date = parsedate_to_datetime(listed.headers["date"]).timestamp()
        assert 30 <= reset - date <= 31
        assert http.head("/v1/pets").status_code == 429  # served (and counted) like GET
        assert http.post("/__mockstore/reset", headers=TOOL).status_code == 200
        assert http.head("/v1/pets").status_code == 200
        created = http.post("/v1/pets", json={"name": "N", "categoryId": 1, "x": 1}).json()
        assert "x" not in created
    with defaults.client() as http:
        assert http.get("/v1/nowhere").status_code == 401


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    condition=st.sampled_from(["bad_limit", "unknown_key", "pet_not_found", "invalid_body"]),
    code=st.from_regex(r"[!-~]{1,20}( [!-~]{1,10})?", fullmatch=True),
)
def test_any_code_a_scenario_names_is_the_one_sent(condition: str, code: str) -> None:
    quoted = code.replace("'", "''")
    scenario = load_scenario(BASE + f"behaviour:\n  error_codes:\n    {condition}: '{quoted}'\n")
    requests = {r[0]: r for r in _requests()}
    _, method, path, headers, body, status = requests[condition]
    app = create_app(scenario, clock=Clock(start=1772366430.0, mode="manual"))
    with TestClient(app, base_url="http://testserver") as http:
        response = http.request(method, path, headers=headers, content=body)
    assert response.status_code == (400 if status == 422 else status)
    assert response.json()["code"] == code


def test_the_schema_lists_exactly_the_conditions_with_their_default_codes() -> None:
    from mockstore.scenario import scenario_schema

    node = scenario_schema()["properties"]["behaviour"]["properties"]["error_codes"]
    assert set(node["properties"]) == set(CONDITIONS)
    for name, condition in CONDITIONS.items():
        assert node["properties"][name]["default"] == condition.code


def test_bad_knob_values_are_refused_with_file_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(
        "version: 1\n"
        "behaviour:\n"
        "  validation_status: 418\n"
        "  ratelimit_reset: relative\n"
        "  serve_head: maybe\n"
        "  error_codes: {missing_kye: X, unknown_key: ''}\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "mockstore", "validate", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert any(
        re.match(rf"{re.escape(str(path))}:3:22: \$\.behaviour\.validation_status", x)
        for x in lines
    ), lines
    assert any(":4:20: $.behaviour.ratelimit_reset" in line for line in lines), lines
    assert any(":5:15: $.behaviour.serve_head" in line for line in lines), lines
    assert any("missing_kye" in line and "did you mean 'missing_key'" in line for line in lines)
    assert any("$.behaviour.error_codes.unknown_key" in line for line in lines), lines


def test_scenario_pets_may_carry_unknown_fields_only_when_they_are_kept() -> None:
    pets = "pets:\n  - {id: 1, name: Rex, categoryId: 2, colour: red}\n"
    with pytest.raises(Exception, match="unknown Pet field 'colour'"):
        load_scenario("version: 1\n" + pets)
    kept = load_scenario("version: 1\nbehaviour: {unknown_fields: keep}\n" + pets)
    app = create_app(kept)
    with TestClient(app, base_url="http://testserver") as http:
        http.post("/__mockstore/keys", json={"key": "k", "plan": "pro"})
        got = http.get("/v1/pets/1", headers={"Authorization": "Bearer k"})
    assert got.json() == {"id": 1, "name": "Rex", "categoryId": 2, "colour": "red"}
