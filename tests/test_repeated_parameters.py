"""``collections.repeated_parameters``: a listPets parameter given twice.

Menagerie reads the first value of ``limit=2&limit=5``; mockstore refuses a repeated
parameter unless the scenario says ``first`` or ``last``. For any two values each
reading is what the listing answers (a Hypothesis property over a real app), and
calibrate learns the reading from a recording that shows it.
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

KEY = "repeat-key"
AUTH = {"Authorization": f"Bearer {KEY}"}


def _scenario(repeated: str | None) -> str:
    data: dict = {
        "version": 1,
        "keys": [{"key": KEY, "plan": "pro"}],
        "pets": [{"id": n, "name": f"Pet{n}", "categoryId": 1, "status": "sold"}
                 for n in range(1, 13)],
    }  # fmt: skip
    if repeated is not None:
        data["collections"] = {"repeated_parameters": repeated}
    return yaml.safe_dump(data)


APPS = {name: create_app(load_scenario(_scenario(name))) for name in (None, "first", "last")}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    reading=st.sampled_from([None, "first", "last"]),
    first=st.integers(1, 12),
    last=st.integers(1, 12),
)
def test_a_limit_given_twice_is_read_as_the_scenario_says(
    reading: str | None, first: int, last: int
) -> None:
    with TestClient(APPS[reading]) as client:
        answer = client.get(f"/v1/pets?limit={first}&status=sold&limit={last}", headers=AUTH)
    if reading is None:
        assert answer.status_code == 400 and answer.json()["code"] == "invalid_parameter"
        assert "given 2 times" in answer.json()["message"]
    else:
        assert answer.status_code == 200
        assert len(answer.json()) == (first if reading == "first" else last)


def test_calibrate_learns_the_first_value_wins(tmp_path: Path) -> None:
    auth = [("authorization", f"Bearer {KEY}")]
    steps = [("GET", "/v1/pets", "limit=2&limit=5", auth, b"", 0.0)]
    har = record_mock(_scenario("first"), steps, START)
    path = tmp_path / "recording.har"
    path.write_text(json.dumps(har), encoding="utf-8")
    out = tmp_path / "calibrated.yaml"
    done = subprocess.run(
        [sys.executable, "-m", "mockstore", "calibrate", "--from", str(path), "--out", str(out)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    learned = yaml.safe_load(out.read_text(encoding="utf-8"))["collections"]
    assert learned["repeated_parameters"] == "first"
