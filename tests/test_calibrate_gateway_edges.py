"""What the verdict-agreement loop (issue 25) still found calibrate unable to learn, each from a
small recording of mockstore's own answers (``record_mock``), the provider's setting given to
the recorded mock and asked back of calibrate: CORS on one path only, from any origin named
back (Aviary).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from mockstore.fidelity import proof
from mockstore.fidelity.drift import drift
from mockstore.fidelity.recording import recording_of
from mockstore.scenario import load_scenario
from tests.fidelity_support import record_mock
from tests.upstream import new_key
from tests.upstream.counting import counted
from tests.upstream.profiled_http import CorsChoice, HttpChoices
from tests.upstream.profiles import GATEWAY

KEY = "sk_test_abcdefgh12345678"
AUTH = [("authorization", f"Bearer {KEY}")]
APP = "https://app.example.com"


def _calibrate(har: dict[str, Any], tmp_path: Path) -> str:
    path = tmp_path / "session.har"
    path.write_text(json.dumps(har), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "mockstore", "calibrate", "--from", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _preflight(path: str, origin: str, auth: bool = False) -> Any:
    headers = [("origin", origin), ("access-control-request-method", "POST")]
    return ("OPTIONS", path, "", headers + (AUTH if auth else []), b"", 0.0)


def test_cors_on_one_path_from_any_origin_named_back(tmp_path: Path) -> None:
    provider = (
        f"version: 1\nkeys: [{{key: {KEY}, plan: pro}}]\n"
        "http:\n  cors: {paths: [/pets], match: exact, origins: ['*'], credentials: true}\n"
    )
    har = record_mock(
        provider,
        [
            _preflight("/v1/pets", APP),
            _preflight("/v1/pets", "https://aviary.example"),
            _preflight("/v1/pets/1", APP, auth=True),
        ],
    )
    statuses = [entry["response"]["status"] for entry in har["log"]["entries"]]
    assert statuses == [204, 204, 405]
    cors = load_scenario(_calibrate(har, tmp_path)).http.cors
    assert cors is not None
    assert (cors.origins, cors.credentials) == (("*",), True)
    assert (cors.paths, cors.match) == (("/pets",), "exact")


def test_origins_stay_the_ones_shown_where_another_was_refused(tmp_path: Path) -> None:
    provider = (
        f"version: 1\nkeys: [{{key: {KEY}, plan: pro}}]\n"
        f"http:\n  cors: {{origins: [{APP}, 'https://b.example'], rejected_status: 403}}\n"
    )
    har = record_mock(
        provider,
        [
            _preflight("/v1/pets", APP),
            _preflight("/v1/pets", "https://b.example"),
            _preflight("/v1/pets", "https://evil.example"),
            _preflight("/v1/pets/1", APP),
        ],
    )
    statuses = [entry["response"]["status"] for entry in har["log"]["entries"]]
    assert statuses == [204, 204, 403, 204]
    cors = load_scenario(_calibrate(har, tmp_path)).http.cors
    assert cors is not None and cors.origins == (APP, "https://b.example")
    assert cors.rejected_status == 403
    assert (cors.paths, cors.match) == (("/",), "prefix")  # no path refused: every path


def test_the_advisory_header_of_a_clamped_limit_is_learned_as_a_template(tmp_path: Path) -> None:
    # Corral's Warning on a clamped limit: calibrate called it a header that changes from
    # answer to answer, and the mock clamped silently.
    provider = (
        f"version: 1\nkeys: [{{key: {KEY}, plan: pro}}]\n"
        "behaviour: {limit_above_maximum: clamp}\n"
        "http:\n  advisory:\n    clamped_limit:\n      header: Warning\n"
        "      value: '299 - \"limit {limit} is above {maximum}; {maximum} used\"'\n"
    )
    listing = [("GET", "/v1/pets", f"limit={n}", AUTH, b"", 0.0) for n in (500, 20, 1000)]
    har = record_mock(provider, listing)
    warnings = [
        next((h["value"] for h in e["response"]["headers"] if h["name"] == "warning"), None)
        for e in har["log"]["entries"]
    ]
    assert warnings[1] is None and warnings[2] == '299 - "limit 1000 is above 100; 100 used"'
    learned = load_scenario(_calibrate(har, tmp_path))
    assert learned.behaviour.limit_above_maximum == "clamp"
    clamped = learned.http.clamped_limit
    assert clamped is not None and clamped.header.lower() == "warning"
    assert clamped.value == '299 - "limit {limit} is above {maximum}; {maximum} used"'
    assert not [rule for rule in learned.behaviour.headers if rule.name.lower() == "warning"]


def test_drift_names_the_clamped_limits_header_and_applied_it_removes_the_difference() -> None:
    team = (
        f"version: 1\nkeys: [{{key: {KEY}, plan: pro}}]\n"
        "behaviour: {limit_above_maximum: clamp}\n"
    )
    provider = team + (
        "http:\n  advisory:\n    clamped_limit:\n      header: Warning\n"
        "      value: '299 - \"limit {limit} is above {maximum}; {maximum} used\"'\n"
    )
    recording = recording_of(
        record_mock(provider, [("GET", "/v1/pets", "limit=500", AUTH, b"", 0.0)])
    )
    found = [d for d in drift(recording, load_scenario(team)).differences]
    assert [(d.where, d.setting, d.proven) for d in found] == [
        ("header warning", "http.advisory.clamped_limit", True)
    ]
    applied = yaml.safe_load(team)
    applied = proof.apply(applied, found[0].setting, found[0].value[0], found[0].key)
    assert drift(recording, load_scenario(yaml.safe_dump(applied))).differences == []


def test_a_gateway_that_refuses_every_request_from_another_origin(tmp_path: Path) -> None:
    # Corral answers a GET from https://evil.example as it answers its preflight: 403.
    provider = (
        f"version: 1\nkeys: [{{key: {KEY}, plan: pro}}]\n"
        f"http:\n  cors: {{origins: [{APP}], rejected_status: 403, refuse_origins: true,"
        " code: corsOriginDenied}\n"
    )
    evil = "https://evil.example"
    har = record_mock(
        provider,
        [
            _preflight("/v1/pets", APP),
            _preflight("/v1/pets", evil),
            ("GET", "/v1/pets", "", [*AUTH, ("origin", evil)], b"", 0.0),
            ("GET", "/v1/pets", "", [*AUTH, ("origin", APP)], b"", 0.0),
        ],
    )
    statuses = [entry["response"]["status"] for entry in har["log"]["entries"]]
    assert statuses == [204, 403, 403, 200]
    cors = load_scenario(_calibrate(har, tmp_path)).http.cors
    assert cors is not None and cors.origins == (APP,) and cors.rejected_status == 403
    assert cors.refuse_origins is True and cors.code == "corsOriginDenied"


def test_drift_names_refuse_origins_and_applied_it_removes_the_difference() -> None:
    team = (
        f"version: 1\nkeys: [{{key: {KEY}, plan: pro}}]\n"
        f"http:\n  cors: {{origins: [{APP}], rejected_status: 403}}\n"
    )
    provider = team.replace("rejected_status: 403", "rejected_status: 403, refuse_origins: true")
    steps = [("GET", "/v1/pets", "", [*AUTH, ("origin", "https://evil.example")], b"", 0.0)]
    recording = recording_of(record_mock(provider, steps))
    found = drift(recording, load_scenario(team)).differences
    assert {(d.setting, d.proven) for d in found} == {("http.cors.refuse_origins", True)}
    applied = proof.apply(yaml.safe_load(team), found[0].setting, found[0].value[0], found[0].key)
    assert drift(recording, load_scenario(yaml.safe_dump(applied))).differences == []


def test_a_trace_context_is_learned_as_the_request_id_continued(tmp_path: Path) -> None:
    # Aviary's traceparent: calibrate found no request id header and left traces out.
    echo = "00-(?!0{32})[0-9a-fA-F]{32}-[0-9a-fA-F]{16}-[0-9a-fA-F]{2}"
    provider = (
        f"version: 1\nkeys: [{{key: {KEY}, plan: pro}}]\nbehaviour:\n"
        f"  request_id: {{header: traceparent, format: traceparent, echo: '{echo}'}}\n"
        "  error_fields: [{name: traceId, generate: trace_id}]\n"
    )
    trace = "4bf92f3577b34da6a3ce929d0e0e4736"
    sent = [
        [("traceparent", f"00-{trace}-00f067aa0ba902b7-01")],
        [],
        [("traceparent", "client-test-0001")],
        [("traceparent", f"00-{'0' * 32}-00f067aa0ba902b7-01")],
    ]
    har = record_mock(provider, [("GET", "/v1/pets/987", "", AUTH + h, b"", 0.0) for h in sent])
    learned = load_scenario(_calibrate(har, tmp_path)).behaviour
    form = learned.request_id
    assert (form.header, form.format) == ("traceparent", "traceparent")
    assert form.echo is not None
    assert re.fullmatch(form.echo, f"00-{trace}-00f067aa0ba902b7-01")
    assert not re.fullmatch(form.echo, f"00-{'0' * 32}-00f067aa0ba902b7-01")
    assert [(f.name, f.generate) for f in learned.error_fields] == [("traceId", "trace_id")]


def test_drift_names_the_cors_refusals_own_code() -> None:
    # Corral refuses a preflight from another origin with 403 corsOriginDenied: drift called
    # the code unexplained (cors_rejected had no code setting).
    team = (
        f"version: 1\nkeys: [{{key: {KEY}, plan: pro}}]\n"
        f"http:\n  cors: {{origins: [{APP}], rejected_status: 403}}\n"
    )
    provider = team.replace("rejected_status: 403", "rejected_status: 403, code: corsOriginDenied")
    recording = recording_of(record_mock(provider, [_preflight("/v1/pets", "https://x.example")]))
    found = drift(recording, load_scenario(team)).differences
    assert [(d.where, d.setting, d.proven) for d in found] == [
        ("body.code", "http.cors.code", True)
    ]
    applied = proof.apply(yaml.safe_load(team), found[0].setting, found[0].value[0], found[0].key)
    assert drift(recording, load_scenario(yaml.safe_dump(applied))).differences == []


def test_probes_from_two_origins_show_a_provider_that_allows_any(tmp_path: Path) -> None:
    # With one probe origin, a provider naming back any origin looked like one allowing only
    # https://app.example.com (Aviary's clients call from https://aviary.example).
    cors = CorsChoice(origins=("*",), credentials=True, max_age=600)
    # Keyless callers told no figures (GATEWAY tells them 0s, which calibrate rightly
    # reads as no allowance to spend: it then sends no keyless preflight at all).
    limits = GATEWAY.rate_limits
    limits = replace(limits, gateway=replace(limits.gateway, uncounted="none"))
    profile = replace(GATEWAY, http=HttpChoices(cors=cors), rate_limits=limits)
    key = new_key()
    out = tmp_path / "probed.yaml"
    with counted("profiled", {key: "growth"}, profile=profile) as served:
        done = subprocess.run(
            [sys.executable, "-m", "mockstore", "calibrate", "--target", served.url,
             "--key", key, "--out", str(out)],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        writes = served.counting.writes
    assert done.returncode == 0, done.stderr
    assert writes == 0
    learned = load_scenario(out.read_text(), str(out)).http.cors
    assert learned is not None and (learned.origins, learned.credentials) == (("*",), True)
