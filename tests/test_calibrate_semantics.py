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
from mockstore.keys import key_alias
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


# What a team writes from the provider's documentation: its request-id header, and
# mockstore's defaults for everything else.
TEAM = """\
version: 1
behaviour:
  request_id: {header: X-Correlation-Id, format: uuid, prefix: ""}
"""


def _team(main_key: str, tight: str) -> str:
    """``TEAM`` with the provider's keys (as recordings show them) on their documented plans."""
    return TEAM + (
        "keys:\n"
        f"  - {{key: {key_alias(main_key)}, plan: {{per_minute: 1000}}}}\n"
        f"  - {{key: {key_alias(tight)}, plan: {{per_minute: 5, per_day: 20}}}}\n"
    )


# Each difference of HTTP semantics, as drift names its cause before calibration.
NAMED_BEFORE = {
    ("OPTIONS /v1/pets", "status"): {"http.cors", "http.options"},
    ("GET /v1/pets/?limit=1", "status"): {"http.trailing_slash"},
    ("GET /v1/store/orders", "status"): {"maintenance"},
}


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
        team = work / "team.yaml"
        team.write_text(_team(main_key, tight))
        status, before, err = _mockstore(
            "drift", str(har), "--scenario", str(team), "--format", "json"
        )
        assert status == 1, err
        yield {
            "text": out.read_text(),
            "drift": json.loads(report),
            "before": json.loads(before),
        }


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


def test_before_calibration_drift_names_the_settings_that_remove_each_difference(
    calibrated: dict[str, Any],
) -> None:
    differences = calibrated["before"]["differences"]
    by_request: dict[tuple[str, str], set[str]] = {}
    for difference in differences:
        where = (difference["request"], difference["where"])
        by_request.setdefault(where, set()).add(str(difference["setting"]))
    for where, settings in NAMED_BEFORE.items():
        assert by_request.get(where, set()) & settings, (where, by_request.get(where))
    # A 304 where the team's mock answered in full is the conditional setting's, never the
    # store's (issue 25: drift blamed the store though the pet was listed and fetched).
    conditional = [d for d in differences if d["recorded"] == "304" and d["where"] == "status"]
    assert conditional
    for difference in conditional:
        assert difference["cause"] == "setting", difference
        assert difference["setting"] in (
            "http.conditional.operations",
            "http.conditional.last_modified",
            "behaviour.etag.getPet",
        ), difference
    # A client's own id answered back is the echo's, not a header no setting writes.
    echoed = [d for d in differences if d["where"] == "header x-correlation-id"]
    assert echoed and all(d["setting"] == "behaviour.request_id.echo" for d in echoed), echoed


def test_each_suggestion_of_these_settings_validates_applied(calibrated: dict[str, Any]) -> None:
    from mockstore.scenario import load_scenario

    mine = ("http.", "maintenance", "behaviour.request_id.echo")
    suggested = [
        d
        for d in calibrated["before"]["differences"]
        if d["cause"] == "setting" and str(d["setting"]).startswith(mine) and "set_to" in d
    ]
    assert suggested
    for difference in suggested:
        data = yaml.safe_load(TEAM)
        node = data
        path = difference["setting"].split(".")
        for part in path[:-1]:
            node = node.setdefault(part, {})
        value = difference["set_to"]
        if path == ["maintenance"]:
            data["maintenance"] = [value]
        else:
            node[path[-1]] = value
        load_scenario(yaml.safe_dump(data), "applied.yaml")  # raises if it does not validate


def test_probes_settle_what_no_recording_shows_and_write_nothing() -> None:
    from mockstore.scenario import load_scenario
    from tests.upstream.counting import counted

    refusals = replace(GATEWAY.refusals, extra_fields=EXTRA)
    limits = replace(
        GATEWAY.rate_limits, plans=(*GATEWAY.rate_limits.plans, ("tester", Plan(1_000)))
    )
    profile = replace(GATEWAY, http=HTTP, refusals=refusals, rate_limits=limits)
    key = new_key()
    with tempfile.TemporaryDirectory(prefix="probe-semantics-") as directory:
        out = Path(directory) / "probed.yaml"
        with counted("profiled", {key: "tester"}, profile=profile) as served:
            status, _, err = _mockstore(
                "calibrate", "--target", served.url, "--key", key, "--out", str(out)
            )
            writes = served.counting.writes
            refused = served.counting.by_status(429)
        assert status == 0, err
        assert (writes, refused) == (0, 0)  # read-only, no allowance spent to its end
        scenario = load_scenario(out.read_text(), str(out))
    http = scenario.http
    assert http.conditional.operations == frozenset({"getPet", "listPets"})
    assert http.cors is not None and http.cors.origins == ("https://app.example.com",)
    assert http.options.serve and http.trailing_slash.answer == "redirect"
    assert scenario.behaviour.request_id.echo == "[A-Za-z0-9._-]{8,64}"
