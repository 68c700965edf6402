"""CORS, a plain OPTIONS, Allow per path and a trailing slash (``http.cors``, ``http.options``,
``http.allow``, ``http.trailing_slash``), each answered at the stage the scenario says.

Issue 25 found the mock answering a CORS preflight 401 (a provider answered 204
with ``Access-Control-*``) and a trailing slash 404 (the provider redirected with
308). By default both stay as they were. Over a real uvicorn process (in Redis
too under ``MOCKSTORE_TEST_STATE=redis``).
"""

from __future__ import annotations

import httpx
import pytest

from mockstore.scenario import ScenarioError, load_scenario
from tests.support import LiveServer, mock_server

APP = "https://app.example.com"
PREFLIGHT = {"Origin": APP, "Access-Control-Request-Method": "POST"}
KEY = {"Authorization": "Bearer cors-key"}
BASE = """\
version: 1
clock: {start: 2026-03-01T12:00:00Z, mode: manual}
keys: [{key: cors-key, plan: {per_minute: 5, per_day: 100}}]
"""


def _client(api: LiveServer, **headers: str) -> httpx.Client:
    return httpx.Client(base_url=api.api, headers=headers, follow_redirects=False)


def test_without_the_section_a_preflight_is_a_401_as_before() -> None:
    with mock_server(BASE) as api, _client(api) as http:
        answer = http.options("/pets", headers=PREFLIGHT)
        keyed = http.options("/pets", headers={**PREFLIGHT, **KEY})
        slashed = http.get("/pets/", headers=KEY)
    assert answer.status_code == 401
    assert "access-control-allow-origin" not in answer.headers
    assert keyed.status_code == 405
    assert "OPTIONS" not in keyed.headers["allow"]
    assert slashed.status_code == 404


def test_a_preflight_at_the_gateway_needs_no_key_and_counts_nothing() -> None:
    scenario = BASE + f"http:\n  cors: {{origins: [{APP}], max_age: 600}}\n"
    with mock_server(scenario) as api, _client(api) as http:
        answer = http.options(
            "/pets", headers={**PREFLIGHT, "Access-Control-Request-Headers": "authorization"}
        )
        listed = http.get("/pets", headers={**KEY, "Origin": APP})
        foreign = http.get("/pets", headers={**KEY, "Origin": "https://evil.example"})
    assert answer.status_code == 204
    assert answer.content == b"" and "content-type" not in answer.headers
    assert answer.headers["access-control-allow-origin"] == APP
    assert answer.headers["access-control-allow-methods"] == "GET, HEAD, POST"
    assert answer.headers["access-control-allow-headers"] == "Authorization, Content-Type"
    assert answer.headers["access-control-max-age"] == "600"
    assert answer.headers["vary"] == "Origin"
    assert "x-ratelimit-remaining" not in answer.headers  # the limiter never saw it
    assert answer.headers["x-request-id"] == "req-000001"
    # The first request the limiter saw: nothing was spent by the preflight.
    assert listed.headers["x-ratelimit-remaining"] == "4"
    assert listed.headers["access-control-allow-origin"] == APP
    assert "access-control-allow-origin" not in foreign.headers


def test_a_preflight_not_allowed_gets_no_allow_headers_or_a_refusal() -> None:
    quiet = BASE + f"http:\n  cors: {{origins: [{APP}]}}\n"
    loud = BASE + f"http:\n  cors: {{origins: [{APP}], rejected_status: 403}}\n"
    evil = {**PREFLIGHT, "Origin": "https://evil.example"}
    with mock_server(quiet) as api, _client(api) as http:
        silent = http.options("/pets", headers=evil)
        wrong_method = http.options(
            "/pets", headers={**PREFLIGHT, "Access-Control-Request-Method": "PUT"}
        )
        wrong_header = http.options(
            "/pets", headers={**PREFLIGHT, "Access-Control-Request-Headers": "X-Secret"}
        )
    with mock_server(loud) as api, _client(api) as http:
        refused = http.options("/pets", headers=evil)
    for answer in (silent, wrong_method, wrong_header):
        assert answer.status_code == 204
        assert not any(h.startswith("access-control-allow") for h in answer.headers)
    assert refused.status_code == 403
    assert refused.json() == {
        "code": "cors_rejected",
        "message": "the CORS preflight from https://evil.example for POST is not allowed",
        "status": 403,
    }


def test_with_credentials_the_origin_is_named_and_any_header_echoed() -> None:
    scenario = BASE + (
        "http:\n  cors: {origins: ['*'], credentials: true, headers: ['*'],"
        " expose_headers: [X-Request-Id, X-RateLimit-Remaining]}\n"
    )
    with mock_server(scenario) as api, _client(api) as http:
        answer = http.options(
            "/pets/7",
            headers={**PREFLIGHT, "Access-Control-Request-Headers": "x-trace, authorization"},
        )
        got = http.get("/pets", headers={**KEY, "Origin": "https://other.example"})
    assert answer.headers["access-control-allow-origin"] == APP
    assert answer.headers["access-control-allow-credentials"] == "true"
    assert answer.headers["access-control-allow-headers"] == "x-trace, authorization"
    assert got.headers["access-control-allow-origin"] == "https://other.example"
    assert got.headers["access-control-expose-headers"] == "X-Request-Id, X-RateLimit-Remaining"


@pytest.mark.parametrize(("stage", "without_key"), [("counted", 204), ("authenticated", 401)])
def test_a_preflight_at_a_later_stage_is_counted(stage: str, without_key: int) -> None:
    scenario = BASE + f"http:\n  cors: {{origins: ['*'], stage: {stage}}}\n"
    with mock_server(scenario) as api, _client(api) as http:
        anonymous = http.options("/pets", headers=PREFLIGHT)
        keyed = http.options("/pets", headers={**PREFLIGHT, **KEY})
        after = http.get("/pets", headers=KEY)
    assert anonymous.status_code == without_key
    assert keyed.status_code == 204
    assert keyed.headers["x-ratelimit-remaining"] == "4"
    assert after.headers["x-ratelimit-remaining"] == "3"


def test_a_preflight_only_on_its_paths() -> None:
    scenario = BASE + "http:\n  cors: {paths: [/store]}\n"
    with mock_server(scenario) as api, _client(api) as http:
        store = http.options(
            "/store/orders", headers={**PREFLIGHT, "Access-Control-Request-Method": "GET"}
        )
        pets = http.options("/pets", headers=PREFLIGHT)
    assert store.status_code == 204
    assert pets.status_code == 401


@pytest.mark.parametrize(
    ("match", "one_pet"), [("prefix", 204), ("exact", 405)], ids=["prefix", "exact"]
)
def test_exact_paths_leave_the_paths_under_them_out(match: str, one_pet: int) -> None:
    # Aviary allows preflights on /v1/pets only; one pet's path is a plain OPTIONS (405).
    scenario = BASE + f"http:\n  cors: {{paths: [/pets, '/store/{{what}}'], match: {match}}}\n"
    with mock_server(scenario) as api, _client(api) as http:
        pets = http.options("/pets", headers=PREFLIGHT)
        pet = http.options("/pets/7", headers={**PREFLIGHT, **KEY})
        listed = http.get("/pets/7", headers={**KEY, "Origin": APP})
        store = http.options(
            "/store/orders", headers={**PREFLIGHT, "Access-Control-Request-Method": "GET"}
        )
    assert pets.status_code == 204 and pets.headers["access-control-allow-origin"] == "*"
    assert pet.status_code == one_pet
    assert ("access-control-allow-origin" in pet.headers) is (one_pet == 204)
    assert ("access-control-allow-origin" in listed.headers) is (match == "prefix")
    # A {name} segment stands for any one segment in exact paths only.
    assert store.status_code == (204 if match == "exact" else 401)


def test_options_served_with_allow_and_in_every_allow() -> None:
    scenario = BASE + "http:\n  options: {serve: true, status: 200}\n"
    with mock_server(scenario) as api, _client(api, **KEY) as http:
        pets = http.options("/pets")
        pet = http.options("/pets/3")
        nowhere = http.options("/nowhere")
        anonymous = http.options("/pets", headers={"Authorization": ""})
        refused = http.delete("/pets")
    assert (pets.status_code, pets.headers["allow"]) == (200, "GET, HEAD, OPTIONS, POST")
    assert pets.headers["x-ratelimit-remaining"] == "4"  # authenticated: counted
    assert pet.headers["allow"] == "GET, HEAD, OPTIONS"
    assert nowhere.status_code == 404
    assert anonymous.status_code == 401
    assert (refused.status_code, refused.headers["allow"]) == (405, "GET, HEAD, OPTIONS, POST")


def test_options_at_the_gateway_with_path_check_before_auth() -> None:
    scenario = BASE + (
        "behaviour: {path_check: before_auth}\nhttp:\n  options: {serve: true, stage: gateway}\n"
    )
    with mock_server(scenario) as api, _client(api) as http:
        answer = http.options("/pets")
    assert answer.status_code == 204
    assert answer.headers["allow"] == "GET, HEAD, OPTIONS, POST"
    assert "x-ratelimit-limit" not in answer.headers


def test_allow_per_path_as_the_provider_names_it() -> None:
    scenario = BASE + "http:\n  allow:\n    /pets: 'GET, POST'\n    /pets/{petId}: GET\n"
    with mock_server(scenario) as api, _client(api, **KEY) as http:
        pets = http.delete("/pets")
        pet = http.put("/pets/3")
        orders = http.post("/store/orders")
    assert pets.headers["allow"] == "GET, POST"
    assert pet.headers["allow"] == "GET"
    assert orders.headers["allow"] == "GET, HEAD"  # the document's


@pytest.mark.parametrize(
    ("setting", "status", "location"),
    [
        ("{answer: redirect}", 308, "/v1/pets?limit=2&status=sold"),
        ("{answer: redirect, status: 301}", 301, "/v1/pets?limit=2&status=sold"),
        ("{answer: redirect, location: url}", 308, "{root}/v1/pets?limit=2&status=sold"),
    ],
)
def test_a_trailing_slash_redirected(setting: str, status: int, location: str) -> None:
    scenario = BASE + f"http:\n  trailing_slash: {setting}\n"
    with mock_server(scenario) as api, _client(api) as http:
        answer = http.get("/pets/?limit=2&status=sold")
        unknown = http.get("/nowhere/", headers=KEY)
        followed = http.get("/pets/?limit=2&status=sold", headers=KEY, follow_redirects=True)
    assert answer.status_code == status
    assert answer.headers["location"] == location.format(root=api.url)
    assert "x-ratelimit-limit" not in answer.headers  # at the gateway: before the key
    assert unknown.status_code == 404
    assert followed.status_code == 200 and len(followed.json()) <= 2


def test_a_trailing_slash_served_as_without() -> None:
    scenario = (
        BASE
        + "pets: [{id: 3, name: Max, categoryId: 1}]\nhttp:\n  trailing_slash: {answer: serve}\n"
    )
    with mock_server(scenario) as api, _client(api, **KEY) as http:
        pet = http.get("/pets/3/")
        listed = http.get("/pets/")
    assert pet.json()["name"] == "Max"
    assert listed.status_code == 200


def test_scenario_problems_are_refused_with_their_place() -> None:
    from mockstore.scenario import ScenarioError, load_scenario

    text = (
        "version: 1\nbase_path: /v1\nhttp:\n"
        "  allow: {/v1/pets: GET}\n"
        "  cors: {origins: ['*', 'https://a.example'], paths: [/v1/pets]}\n"
    )
    with pytest.raises(ScenarioError) as refused:
        load_scenario(text, "s.yaml")
    lines = str(refused.value).splitlines()
    assert any(
        line.startswith("s.yaml:4:")
        and "'/v1/pets' is not a path of the document" in line
        and "relative to base_path" in line
        for line in lines
    ), lines
    assert any("* allows every origin: give it alone" in line for line in lines), lines
    assert any("write '/pets'" in line for line in lines), lines


def test_a_plain_options_rule_leaves_preflights_to_cors() -> None:
    scenario = BASE + (
        "http:\n  options: {serve: true, stage: gateway}\n"
        "  cors: {origins: ['*'], stage: counted}\n"
    )
    with mock_server(scenario) as api, _client(api) as http:
        preflight = http.options("/pets", headers=PREFLIGHT)
        plain = http.options("/pets")
    assert preflight.status_code == 204
    assert preflight.headers["access-control-allow-origin"] == "*"
    assert "x-ratelimit-remaining" in preflight.headers  # CORS's stage: counted
    assert "allow" not in preflight.headers
    assert plain.headers["allow"] == "GET, HEAD, OPTIONS, POST"
    assert "x-ratelimit-remaining" not in plain.headers  # OPTIONS's: the gateway


def test_a_gateway_that_enforces_its_origins_refuses_other_requests_too() -> None:
    # Corral answers a GET from https://evil.example 403 corsOriginDenied, before the key.
    scenario = BASE + (
        f"http:\n  cors: {{origins: [{APP}], rejected_status: 403, refuse_origins: true,"
        " code: corsOriginDenied}\n"
    )
    with mock_server(scenario) as api, _client(api) as http:
        foreign = http.get("/pets", headers={**KEY, "Origin": "https://evil.example"})
        keyless = http.get("/pets", headers={"Origin": "https://evil.example"})
        allowed = http.get("/pets", headers={**KEY, "Origin": APP})
        same_site = http.get("/pets", headers=KEY)  # no Origin: not a cross-origin request
    for answer in (foreign, keyless):
        assert answer.status_code == 403 and answer.json()["code"] == "corsOriginDenied"
        assert (
            answer.json()["status"] == 403 and "access-control-allow-origin" not in answer.headers
        )
    assert allowed.status_code == 200 and allowed.headers["access-control-allow-origin"] == APP
    assert same_site.status_code == 200
    # At the gateway: the refusals counted nothing.
    assert allowed.headers["x-ratelimit-remaining"] == "4"


def test_refusing_origins_without_a_refusal_status_is_refused_with_its_place() -> None:
    scenario = BASE + "http:\n  cors: {refuse_origins: true}\n"
    with pytest.raises(ScenarioError) as refused:
        load_scenario(scenario)
    assert "refuse_origins" in str(refused.value) and "rejected_status" in str(refused.value)
