"""What the random provider profiles found (``tests/test_fidelity_property.py``), each held.

Each test is the smallest recording of a drawn provider that broke the loop (record,
calibrate, drift), made with an in-process mock whose scenario states the provider's
choice (``tests/fidelity_support.record_mock``): what calibrate learns from it must be
a scenario that validates, and drift from it must find nothing a setting could remove.
"""

from __future__ import annotations

import json

from mockstore.fidelity.calibrate.learn import learn
from mockstore.fidelity.calibrate.options import Options
from mockstore.fidelity.calibrate.writer import render_scenario
from mockstore.fidelity.drift import drift
from mockstore.fidelity.recording import recording_of
from mockstore.scenario import load_scenario
from tests.fidelity_support import AUTH, JSON_BODY, KEY, record_mock

PROVIDER = f"""\
version: 1
clock: {{start: 2026-03-01T12:00:30Z, mode: manual}}
keys:
  - {{key: {KEY}, plan: {{per_minute: 4, per_day: 50}}}}
"""


def _calibrated(provider: str, steps: list) -> tuple[dict, str]:
    har = record_mock(provider, steps)
    learned = learn(recording_of(har, "drawn.har"))
    return har, render_scenario(learned, Options(None, (), recording="drawn.har"), sent=0)


def test_a_refusal_without_retry_after_from_a_provider_that_never_bans() -> None:
    # Drawn: a gateway refusing with 403 and no Retry-After, and no ban however long a
    # client sends on. Calibrate wrote retry_after: none and left the ban's form "same",
    # so the unseen ban (mockstore's 429) had none either: the scenario did not validate.
    provider = PROVIDER + (
        "ban: {enabled: false}\nratelimit: {refusal: {status: 403}, headers: {retry_after: none}}\n"
    )
    har, text = _calibrated(provider, [("GET", "/v1/pets", "", AUTH, b"", 0.5)] * 13)
    statuses = [e["response"]["status"] for e in har["log"]["entries"]]
    assert statuses == [200] * 4 + [403] * 9
    scenario = load_scenario(text, "<learned>")
    assert scenario.ratelimit.headers.retry_after == "none"
    assert [d.to_dict() for d in drift(har, scenario).differences] == []


def test_names_refused_for_their_bytes_with_no_body_refused_for_its_size() -> None:
    # Drawn: names limited to 32 UTF-8 bytes, and the session's oversized body lost to the
    # provider's reset. The largest name refused was taken for a field's limit (no body
    # that small is refused for its size), but the smaller ones answered alike were taken
    # for the body's size: the mock accepted 30 'é' (drift: behaviour.max_body_bytes 85).
    provider = PROVIDER + (
        "collections: {constraints: {name: {max_length: 32, unit: bytes}}}\n"
        "behaviour: {error_codes: {field_constraint: OUT_OF_RANGE}}\n"
    )
    bodies = [
        {"name": "Sir Reginald Fluffington", "categoryId": 4},
        {"name": "N" * 70, "categoryId": 4},
        {"name": "\u00e9" * 30, "categoryId": 2},
        {"name": "\u00e9" * 45, "categoryId": 2},
    ]
    steps = [
        ("POST", "/v1/pets", "", JSON_BODY, json.dumps(body, ensure_ascii=False).encode(), 16.0)
        for body in bodies
    ]
    har, text = _calibrated(provider, steps)
    assert [e["response"]["status"] for e in har["log"]["entries"]] == [201, 400, 400, 400]
    scenario = load_scenario(text, "<learned>")
    assert [d.to_dict() for d in drift(har, scenario).differences] == []


def test_cors_on_some_paths_only_is_learned() -> None:
    # Drawn: CORS on /pets only. A preflight to /store/orders was answered as any OPTIONS
    # (Allow, no Access-Control-*); calibrate wrote CORS for every path, and drift called
    # each header the mock added "value-not-shown", though http.cors.paths states it.
    provider = PROVIDER + (
        "http:\n"
        "  cors: {paths: [/pets], origins: ['https://app.example.com'], methods: [GET, POST]}\n"
        "  options: {serve: true}\n"
    )
    preflight = [
        *AUTH,
        ("origin", "https://app.example.com"),
        ("access-control-request-method", "GET"),
    ]
    steps = [
        ("OPTIONS", "/v1/pets", "", preflight, b"", 1.0),
        ("OPTIONS", "/v1/store/orders", "", preflight, b"", 1.0),
        ("GET", "/v1/store/orders", "", [*AUTH, ("origin", "https://app.example.com")], b"", 1.0),
    ]
    har, text = _calibrated(provider, steps)
    answers = [e["response"] for e in har["log"]["entries"]]
    told = [{h["name"].lower() for h in a["headers"]} for a in answers]
    assert ["access-control-allow-origin" in names for names in told] == [True, False, False]
    scenario = load_scenario(text, "<learned>")
    assert [d.to_dict() for d in drift(har, scenario).differences] == []


def test_a_maintenance_page_without_retry_after_is_a_window() -> None:
    # Drawn: /store under maintenance, refused 503 with no Retry-After, before the gateway
    # answers anything else (an OPTIONS too). Calibrate took the GET's 503 for listOrders'
    # own refusal and the OPTIONS' for nothing it knew: the mock served that OPTIONS (200).
    provider = PROVIDER + (
        "maintenance:\n"
        "  - {paths: [/store], from: '2026-03-01T12:00:00Z', status: 503, code: maintenance,\n"
        "     retry_after: none, message: 'Down for maintenance'}\n"
        "http: {options: {serve: true, status: 200, stage: gateway}}\n"
    )
    steps = [
        ("OPTIONS", "/v1/pets", "", AUTH, b"", 1.0),
        ("GET", "/v1/store/orders", "", AUTH, b"", 1.0),
        ("OPTIONS", "/v1/store/orders", "", AUTH, b"", 1.0),
        ("GET", "/v1/store/orders", "", AUTH, b"", 1.0),
    ]
    har, text = _calibrated(provider, steps)
    answers = [e["response"] for e in har["log"]["entries"]]
    assert [a["status"] for a in answers] == [200, 503, 503, 503]
    assert all("retry-after" not in {h["name"].lower() for h in a["headers"]} for a in answers)
    scenario = load_scenario(text, "<learned>")
    assert [d.to_dict() for d in drift(har, scenario).differences] == []


def test_a_second_set_reset_is_no_request_id() -> None:
    # Drawn: a second set of rate-limit headers named Minute, its reset an epoch second
    # (X-RateLimit-Minute-Reset: 1795969962), beside X-Amzn-RequestId. The reset's numbers
    # looked like a counter's ids: calibrate took it for the request id header.
    provider = PROVIDER + (
        "ratelimit: {headers: {second_set: {name: Minute, window: minute, reset: epoch}}}\n"
        "behaviour: {request_id: {header: X-Amzn-RequestId, format: hex, prefix: r-}}\n"
    )
    har, text = _calibrated(provider, [("GET", "/v1/pets", "", AUTH, b"", 61.0)] * 3)
    names = {h["name"].lower() for h in har["log"]["entries"][0]["response"]["headers"]}
    assert {"x-ratelimit-minute-reset", "x-amzn-requestid"} <= names
    scenario = load_scenario(text, "<learned>")
    assert (scenario.behaviour.request_id.header or "").lower() == "x-amzn-requestid"
    assert [d.to_dict() for d in drift(har, scenario).differences] == []


def test_the_drafts_window_length_is_the_one_written() -> None:
    # Drawn: a token bucket of 1000 a minute and a plan of 3 a minute and 9 an hour, the
    # draft headers stating each window's w. The 1000 barely drawn read as full under a 1 s
    # window too: calibrate wrote minute.seconds 1 and a length per plan, against w=60.
    provider = f"""\
version: 1
clock: {{start: 2026-03-01T12:00:30Z, mode: manual}}
keys:
  - {{key: {KEY}, plan: {{per_minute: 1000}}}}
  - {{key: tight-key, plan: {{per_minute: 3, per_day: 9}}}}
ratelimit:
  minute: {{algorithm: token_bucket}}
  day: {{seconds: 3600}}
  headers: {{draft: all}}
"""
    tight = [("authorization", "Bearer tight-key")]
    steps = [
        *[("GET", "/v1/pets", "", AUTH, b"", 0.2)] * 6,
        *[("GET", "/v1/pets", "", tight, b"", 0.2)] * 5,
        *[("GET", "/v1/pets", "", AUTH, b"", 0.2)] * 3,
    ]
    har, text = _calibrated(provider, steps)
    policies = {
        h["value"]
        for e in har["log"]["entries"]
        for h in e["response"]["headers"]
        if h["name"].lower() == "ratelimit-policy"
    }
    assert any("w=3600" in p for p in policies) and any("w=60" in p for p in policies)
    scenario = load_scenario(text, "<learned>")
    assert [d.to_dict() for d in drift(har, scenario).differences] == []
