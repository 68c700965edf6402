"""``behaviour.missing_content_type``: a create sent without Content-Type, refused or read.

Menagerie's gateway reads a body sent without ``Content-Type`` as JSON; mockstore
refuses it (415) unless the scenario says ``json``. Served over HTTP by a real
server either way (a typed body of another media type is refused either way, and a
body without a type under ``json`` is validated as any JSON body), and learned by
calibrate from a recording of a mock that reads it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import yaml

from mockstore.scenario import load_scenario
from tests.fidelity_support import START, record_mock
from tests.support import mock_server

KEY = "media-key"


def _scenario(missing: str | None) -> str:
    behaviour = {"missing_content_type": missing} if missing else {}
    return yaml.safe_dump(
        {"version": 1, "keys": [{"key": KEY, "plan": "pro"}], "behaviour": behaviour}
    )


@pytest.mark.parametrize("missing", [None, "refuse", "json"])
def test_a_body_without_content_type_is_read_only_when_the_scenario_says_json(
    missing: str | None,
) -> None:
    with (
        mock_server(load_scenario(_scenario(missing))) as server,
        httpx.Client(base_url=server.api, timeout=30) as client,
    ):
        auth = {"Authorization": f"Bearer {KEY}"}
        untyped = client.post("/pets", content=b'{"name": "Nyala", "categoryId": 1}', headers=auth)
        invalid = client.post("/pets", content=b'{"name": 5, "categoryId": 1}', headers=auth)
        typed = client.post(
            "/pets", content=b'{"name": "Impala", "categoryId": 1}',
            headers={**auth, "Content-Type": "text/plain"},
        )  # fmt: skip
        listed = client.get("/pets", params={"limit": 100}, headers=auth).json()
    assert typed.status_code == 415
    if missing == "json":
        assert untyped.status_code == 201 and untyped.json()["name"] == "Nyala"
        assert invalid.status_code == 400
        assert [pet["name"] for pet in listed if pet["name"] == "Nyala"] == ["Nyala"]
    else:
        assert untyped.status_code == 415 and invalid.status_code == 415
        assert all(pet["name"] != "Nyala" for pet in listed)


def test_calibrate_learns_a_body_without_content_type_read_as_json(tmp_path: Path) -> None:
    auth = [("authorization", f"Bearer {KEY}")]
    steps = [("POST", "/v1/pets", "", auth, b'{"name": "Nyala", "categoryId": 1}', 0.0)]
    har = record_mock(_scenario("json"), steps, START)
    assert har["log"]["entries"][0]["response"]["status"] == 201
    path = tmp_path / "recording.har"
    path.write_text(json.dumps(har), encoding="utf-8")
    out = tmp_path / "calibrated.yaml"
    done = subprocess.run(
        [sys.executable, "-m", "mockstore", "calibrate", "--from", str(path), "--out", str(out)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    learned = yaml.safe_load(out.read_text(encoding="utf-8"))["behaviour"]
    assert learned["missing_content_type"] == "json"
