"""Calibrate's Error fields and messages when conditions differ in what they say.

A provider whose Error bodies name the field at fault (Aviary's ``field``: the
parameter of a bad query, ``categoryId`` of a bad body, ``Authorization`` of a bad
key) has no one rule for every condition, but one per condition; and a request a
front end refused before its own condition was judged (a ``DELETE`` nginx's bucket
answered ``503``, not ``405``) says another condition's message. Each is recorded
from a mock that states it (the front end's answer written into the recording, as it
would have answered), calibrated from that recording with the ``mockstore`` command,
and the calibrated scenario must state it again (drift finds no difference in those
bodies).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from mockstore.fidelity.drift import drift
from mockstore.scenario import load_scenario
from tests.fidelity_support import START, record_mock

KEY = "fields-key"
TIGHT = "tight-key"
PROVIDER = f"""\
version: 1
clock: {{start: 2026-03-01T12:00:30Z, mode: manual}}
keys:
  - {{key: {KEY}, plan: pro}}
  - {{key: {TIGHT}, plan: {{per_minute: 2, per_day: 100}}}}
pets:
  - {{id: 1, name: Rex, categoryId: 2, status: available}}
behaviour:
  error_messages:
    method_not_allowed: "Invalid value '{{method}}' for method"
  error_fields:
    - {{name: field, value: Authorization, conditions: [malformed_authorization, unknown_key]}}
    - {{name: field, generate: parameter, conditions: [bad_limit, bad_status_filter, bad_pet_id]}}
"""


def _get(path: str, query: str = "", key: str | None = KEY, method: str = "GET") -> tuple:
    headers = [("authorization", f"Bearer {key}")] if key else []
    return (method, path, query, headers, b"", 0.0)


STEPS = [
    _get("/v1/pets", "limit=0"),
    _get("/v1/pets", "limit=x"),
    _get("/v1/pets", "status=lost"),
    _get("/v1/pets", "status=SOLD"),
    _get("/v1/pets/abc"),
    _get("/v1/pets/-"),
    _get("/v1/pets", key="nobody-1"),
    _get("/v1/pets", key="nobody-2"),
    ("GET", "/v1/pets", "", [("authorization", "Basic dXNlcjpwYXNz")], b"", 0.0),
    ("GET", "/v1/pets", "", [("authorization", "Basic Zm9vOmJhcg==")], b"", 0.0),
    _get("/v1/pets", method="DELETE"),
    _get("/v1/pets/1", method="DELETE"),
    _get("/v1/pets", method="DELETE"),  # the front end refuses this one (FRONT_END)
]
# What an nginx front end's limit_req answers before the service sees the request.
FRONT_END = {"code": "E5031", "message": "too many requests at once; slow down", "status": 503}


def _calibrated(tmp_path: Path) -> tuple[dict[str, Any], dict[str, Any], str]:
    har = record_mock(PROVIDER, STEPS, START)
    refused = har["log"]["entries"][-1]["response"]
    assert refused["status"] == 405
    refused["status"], refused["statusText"] = 503, "Service Unavailable"
    refused["content"]["text"] = json.dumps(FRONT_END)
    refused["content"]["size"] = len(refused["content"]["text"])
    refused["headers"] = [h for h in refused["headers"] if h["name"].lower() != "allow"]
    path = tmp_path / "recording.har"
    path.write_text(json.dumps(har), encoding="utf-8")
    out = tmp_path / "calibrated.yaml"
    done = subprocess.run(
        [sys.executable, "-m", "mockstore", "calibrate", "--from", str(path), "--out", str(out)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    text = out.read_text(encoding="utf-8")
    return har, yaml.safe_load(text), text


def test_a_field_is_learned_per_condition_and_the_preempted_message_is_not_its_own(
    tmp_path: Path,
) -> None:
    har, scenario, text = _calibrated(tmp_path)
    behaviour = scenario["behaviour"]
    fields = [f for f in behaviour["error_fields"] if f["name"] == "field"]
    by_condition = {c: f for f in fields for c in f.get("conditions", [])}
    assert by_condition["bad_limit"]["generate"] == "parameter"
    assert by_condition["bad_status_filter"]["generate"] == "parameter"
    assert by_condition["bad_pet_id"]["generate"] == "parameter"
    assert by_condition["unknown_key"]["value"] == "Authorization"
    assert by_condition["malformed_authorization"]["value"] == "Authorization"
    assert set(by_condition) == {
        "bad_limit", "bad_status_filter", "bad_pet_id", "unknown_key", "malformed_authorization"
    }  # fmt: skip
    # The 503 of a DELETE is the front end's: the 405s' own message is learned.
    learned = behaviour["error_messages"]["method_not_allowed"]
    assert learned == "Invalid value '{method}' for method"
    # Served, the calibrated scenario says what the recording says in every Error body.
    report = drift(har, load_scenario(text))
    bodies = [d.to_dict() for d in report.differences if "body" in json.dumps(d.to_dict())]
    assert not [b for b in bodies if "field" in json.dumps(b) or "message" in json.dumps(b)], bodies
