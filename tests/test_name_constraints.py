"""``collections.constraints.name.unit`` and ``blank``: a name's length in bytes, blank names.

Aviary limits names to 100 bytes of UTF-8 (50 ``é`` fit, 51 do not) and refuses a
name of spaces. For any name, under either unit, the mock refuses exactly the names
over the limit (a Hypothesis property over a real app), and calibrate learns both
from a recording of a mock that states them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from mockstore.app import create_app
from mockstore.scenario import load_scenario
from tests.fidelity_support import START, record_mock

KEY = "names-key"
AUTH = {"Authorization": f"Bearer {KEY}"}


def _scenario(unit: str, blank: str = "allow", most: int = 20) -> str:
    return yaml.safe_dump(
        {
            "version": 1,
            "keys": [{"key": KEY, "plan": "pro"}],
            "collections": {
                "constraints": {"name": {"max_length": most, "unit": unit, "blank": blank}}
            },
        }
    )


APPS = {
    unit: create_app(load_scenario(_scenario(unit, "refuse"))) for unit in ("characters", "bytes")
}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    unit=st.sampled_from(["characters", "bytes"]),
    name=st.text(st.characters(codec="utf-8"), min_size=1, max_size=30),
)
def test_a_name_is_refused_exactly_when_it_is_over_the_limit_or_blank(unit: str, name: str) -> None:
    with TestClient(APPS[unit]) as client:
        answer = client.post("/v1/pets", json={"name": name, "categoryId": 1}, headers=AUTH)
    size = len(name.encode()) if unit == "bytes" else len(name)
    refused = size > 20 or not name.strip()
    assert answer.status_code == (400 if refused else 201), answer.text
    if refused:
        assert answer.json()["code"] == "validation_failed"


def test_calibrate_learns_bytes_and_blank_names(tmp_path: Path) -> None:
    auth = [("authorization", f"Bearer {KEY}"), ("content-type", "application/json")]
    bodies = [{"name": "é" * 50}, {"name": "a" * 90}, {"name": "é" * 51}, {"name": "   "}]
    steps = [("POST", "/v1/pets", "", auth, json.dumps({**b, "categoryId": 1}).encode(), 0.0)
             for b in bodies]  # fmt: skip
    har = record_mock(_scenario("bytes", "refuse", 100), steps, START)
    assert [e["response"]["status"] for e in har["log"]["entries"]] == [201, 201, 400, 400]
    path = tmp_path / "recording.har"
    path.write_text(json.dumps(har), encoding="utf-8")
    out = tmp_path / "calibrated.yaml"
    done = subprocess.run(
        [sys.executable, "-m", "mockstore", "calibrate", "--from", str(path), "--out", str(out)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    name = yaml.safe_load(out.read_text(encoding="utf-8"))["collections"]["constraints"]["name"]
    assert name["unit"] == "bytes" and name["blank"] == "refuse"
    assert name["max_length"] in (100, 101)
