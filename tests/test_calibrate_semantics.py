"""Calibrate learns a provider's HTTP semantics, maintenance, latency and Error bodies from a
recording, and drift then finds nothing a setting could remove.

The provider is the profiled stand-in (``tests/upstream/profiled.py``) behind a gateway
(its ``GATEWAY`` profile) whose front does everything issue 25 found a mock unable to
say: 304s, gzip, CORS preflights at the gateway, ``OPTIONS``, 308 for a trailing
slash, the client's ``X-Correlation-Id`` answered back, ``/v1/store`` under
maintenance with an HTTP-date ``Retry-After``, messages that embed the offending
value, ``details[]`` per invalid field and ``retryAfterMs`` from the wait. Recorded
through ``mockstore record``, calibrated from the recording (no probes), the
calibrated mock is run and asked what a client asks.
"""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from mockstore.cli.main import main
from tests.fidelity_session import client_session
from tests.support import mock_server
from tests.upstream import new_key, profiled_standin, recorder
from tests.upstream.profiled import ExtraField, Plan
from tests.upstream.profiled_http import CorsChoice, HttpChoices, LatencyChoice, MaintenanceChoice
from tests.upstream.profiles import GATEWAY

HTTP = HttpChoices(
    conditional=("getPet", "listPets"),
    last_modified=("getPet", "listPets"),
    pets_modified=1735689600,  # 2025-01-01T00:00:00Z
    encodings=("gzip",),
    min_bytes=256,
    cors=CorsChoice(origins=("https://app.example.com",), max_age=600, rejected_status=403),
    options="gateway",
    trailing_slash="redirect",
    trailing_status=308,
    advisory_header="Warning",
    echo="[A-Za-z0-9._-]{8,64}",
    maintenance=MaintenanceChoice(paths=("/store",), retry_after="http-date"),
    latency=(LatencyChoice(None, (("p0", 1), ("p50", 2), ("p100", 4))),),
    messages=(
        ("bad_limit", "Invalid value '{value}' for query parameter {parameter}"),
        ("pet_not_found", "No pet found with id {value}"),
    ),
)
EXTRA = (
    ExtraField("requestId", "request_id"),
    ExtraField("retryAfterMs", "retry_after_ms", None, ("rate_limited",)),
    ExtraField("details", "details", None, ("invalid_body",)),
)


def _mockstore(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(list(args))
    return status, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def calibrated() -> Iterator[dict[str, Any]]:
    refusals = replace(GATEWAY.refusals, extra_fields=EXTRA)
    limits = replace(
        GATEWAY.rate_limits, plans=(*GATEWAY.rate_limits.plans, ("tester", Plan(1_000)))
    )
    semantics = replace(GATEWAY.semantics, unknown_fields="drop")  # and advises it
    profile = replace(
        GATEWAY, http=HTTP, refusals=refusals, rate_limits=limits, semantics=semantics
    )
    main_key, tight = new_key(), new_key()
    with tempfile.TemporaryDirectory(prefix="calibrate-semantics-") as directory:
        work = Path(directory)
        har, out = work / "session.har", work / "calibrated.yaml"
        with (
            profiled_standin(profile, {main_key: "tester", tight: "starter"}) as upstream,
            recorder(upstream.url, "--out", str(har)) as proxy,
        ):
            client_session(proxy.url, main_key, tight, oversize=20_000)
            assert proxy.stop() == 0
        status, _, err = _mockstore(
            "calibrate", "--from", str(har), "--key", f"{main_key}=app-key", "--out", str(out)
        )
        assert status == 0, err
        status, report, err = _mockstore(
            "drift", str(har), "--scenario", str(out), "--format", "json"
        )
        assert status in (0, 1), err
        yield {"text": out.read_text(), "drift": json.loads(report)}


def test_every_part_is_learned_from_the_recording(calibrated: dict[str, Any]) -> None:
    scenario = yaml.safe_load(calibrated["text"])
    http = scenario["http"]
    assert http["conditional"]["operations"] == ["listPets", "getPet"]
    assert http["conditional"]["last_modified"] == ["listPets", "getPet"]
    assert http["compression"]["encodings"] == ["gzip"]
    assert 0 < http["compression"]["min_bytes"] <= 256
    assert http["cors"]["origins"] == ["https://app.example.com"]
    assert http["cors"]["rejected_status"] == 403 and http["cors"]["max_age"] == 600
    assert http["cors"].get("stage", "gateway") == "gateway"
    assert http["options"] == {"serve": True, "status": 204, "stage": "gateway"}
    assert http["trailing_slash"]["answer"] == "redirect"
    assert http["trailing_slash"]["status"] == 308
    assert http["advisory"]["unknown_fields"]["header"].lower() == "warning"
    behaviour = scenario["behaviour"]
    assert behaviour["request_id"]["echo"] == "[A-Za-z0-9._-]{8,64}"
    (window,) = scenario["maintenance"]
    assert window["paths"] == ["/store"] and window["retry_after"] == "http-date"
    assert window["message"] == "{path} is under maintenance until {until}"
    assert all(set(rule["quantiles_ms"]) >= {"p0", "p100"} for rule in scenario["latency"])
    assert behaviour["error_messages"]["bad_limit"] == (
        "Invalid value '{value}' for query parameter {parameter}"
    )
    fields = {field["name"]: field for field in behaviour["error_fields"]}
    assert fields["requestId"]["generate"] == "request_id"  # never one answer's constant
    assert fields["retryAfterMs"]["generate"] == "retry_after_ms"
    assert fields["details"]["generate"] == "details"
    assert fields["details"]["item"] == {"field": "{field}", "issue": "{reason}"}


def test_drift_after_calibration_leaves_no_setting_difference(calibrated: dict[str, Any]) -> None:
    left = [d for d in calibrated["drift"]["differences"] if d["cause"] == "setting"]
    assert not left, left[:3]


def test_the_calibrated_mock_answers_as_the_provider(calibrated: dict[str, Any]) -> None:
    text = calibrated["text"]
    key = {"Authorization": "Bearer app-key"}
    with mock_server(text) as api, httpx.Client(base_url=api.api, headers=key) as http:
        first = http.get("/pets?limit=abc").json()
        second = http.get("/pets?limit=xyz").json()
        echoed = http.get("/pets/999999", headers={"X-Correlation-Id": "checkout-test-7"})
        preflight = http.options(
            "/pets",
            headers={"Authorization": "", "Origin": "https://app.example.com",
                     "Access-Control-Request-Method": "POST"},
        )  # fmt: skip
        slashed = http.get("/pets/", follow_redirects=False)
        invalid = http.post("/pets", json={"name": 5, "categoryId": "x"}).json()
    assert first["requestId"] != second["requestId"]  # each answer its own id
    assert first["message"] == "Invalid value 'abc' for query parameter limit"
    assert echoed.headers["x-correlation-id"] == "checkout-test-7"
    assert echoed.json()["requestId"] == "checkout-test-7"
    assert echoed.json()["message"] == "No pet found with id 999999"
    assert preflight.status_code == 204
    assert slashed.status_code == 308
    assert [d["field"] for d in invalid["details"]] == ["categoryId", "name"]
