"""An ETag's form and comparison: ``behaviour.etag_digest``, ``http.conditional.comparison``.

A client may check a validator's form (Aviary's clients expect the SHA-1 of the body,
40 hex digits, as nginx-fronted services and many frameworks write it). For every
digest and any pet the mock's ETag is that digest of the body it sends; calibrate
learns the digest that gives every recorded tag from its body. And some servers
compare ``If-None-Match`` strongly (a ``W/`` tag never matches), against RFC 9110's
weak comparison: served either way, and learned from a recording that shows it.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from mockstore.app import create_app
from mockstore.scenario import load_scenario
from tests.fidelity_support import START, record_mock

KEY = "etag-key"
DIGESTS = {
    "sha256-128": lambda body: hashlib.sha256(body).hexdigest()[:32],
    "sha256": lambda body: hashlib.sha256(body).hexdigest(),
    "sha1": lambda body: hashlib.sha1(body, usedforsecurity=False).hexdigest(),
    "md5": lambda body: hashlib.md5(body, usedforsecurity=False).hexdigest(),
}


def _scenario(digest: str | None, name: str = "Rex", comparison: str = "weak") -> str:
    behaviour: dict = {"etag": {"getPet": "strong"}}
    if digest is not None:
        behaviour["etag_digest"] = digest
    return yaml.safe_dump(
        {
            "version": 1,
            "keys": [{"key": KEY, "plan": "pro"}],
            "behaviour": behaviour,
            "http": {"conditional": {"operations": ["getPet"], "comparison": comparison}},
            "pets": [{"id": 1, "name": name, "categoryId": 2, "status": "available"}],
        }
    )


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(digest=st.sampled_from(sorted(DIGESTS)), name=st.text(min_size=1, max_size=30))
def test_the_etag_is_the_digest_of_the_body_sent(digest: str, name: str) -> None:
    auth = {"Authorization": f"Bearer {KEY}"}
    with TestClient(create_app(load_scenario(_scenario(digest, name)))) as client:
        answer = client.get("/v1/pets/1", headers=auth)
        again = client.get("/v1/pets/1", headers={**auth, "If-None-Match": answer.headers["etag"]})
    assert answer.status_code == 200 and answer.json()["name"] == name
    assert answer.headers["etag"] == f'"{DIGESTS[digest](answer.content)}"'
    assert again.status_code == 304


def test_the_default_is_the_first_128_bits_of_sha_256() -> None:
    with TestClient(create_app(load_scenario(_scenario(None)))) as client:
        answer = client.get("/v1/pets/1", headers={"Authorization": f"Bearer {KEY}"})
    assert answer.headers["etag"] == f'"{DIGESTS["sha256-128"](answer.content)}"'


def test_calibrate_learns_the_digest_that_gives_every_recorded_tag(tmp_path: Path) -> None:
    auth = [("authorization", f"Bearer {KEY}")]
    har = record_mock(_scenario("sha1"), [("GET", "/v1/pets/1", "", auth, b"", 0.0)] * 2, START)
    path = tmp_path / "recording.har"
    path.write_text(json.dumps(har), encoding="utf-8")
    out = tmp_path / "calibrated.yaml"
    done = subprocess.run(
        [sys.executable, "-m", "mockstore", "calibrate", "--from", str(path), "--out", str(out)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert yaml.safe_load(out.read_text(encoding="utf-8"))["behaviour"]["etag_digest"] == "sha1"


@pytest.mark.parametrize("comparison", ["weak", "strong"])
def test_a_weak_form_of_the_tag_matches_only_under_weak_comparison(comparison: str) -> None:
    auth = {"Authorization": f"Bearer {KEY}"}
    scenario = load_scenario(_scenario(None, comparison=comparison))
    with TestClient(create_app(scenario)) as client:
        tag = client.get("/v1/pets/1", headers=auth).headers["etag"]
        exact = client.get("/v1/pets/1", headers={**auth, "If-None-Match": tag})
        weak = client.get("/v1/pets/1", headers={**auth, "If-None-Match": "W/" + tag})
        listed = client.get("/v1/pets/1", headers={**auth, "If-None-Match": f'"x", {tag}'})
    assert exact.status_code == 304 and listed.status_code == 304
    assert weak.status_code == (304 if comparison == "weak" else 200)


def test_calibrate_learns_a_strong_comparison(tmp_path: Path) -> None:
    scenario = _scenario(None, comparison="strong")
    auth = [("authorization", f"Bearer {KEY}")]
    with TestClient(create_app(load_scenario(scenario))) as client:
        tag = client.get("/v1/pets/1", headers=dict(auth)).headers["etag"]
    steps = [
        ("GET", "/v1/pets/1", "", auth, b"", 0.0),
        ("GET", "/v1/pets/1", "", [*auth, ("if-none-match", tag)], b"", 0.0),
        ("GET", "/v1/pets/1", "", [*auth, ("if-none-match", "W/" + tag)], b"", 0.0),
        ("GET", "/v1/pets/1", "", [*auth, ("if-none-match", "*")], b"", 0.0),
    ]
    har = record_mock(scenario, steps, START)
    assert [e["response"]["status"] for e in har["log"]["entries"]] == [200, 304, 200, 304]
    path = tmp_path / "recording.har"
    path.write_text(json.dumps(har), encoding="utf-8")
    out = tmp_path / "calibrated.yaml"
    done = subprocess.run(
        [sys.executable, "-m", "mockstore", "calibrate", "--from", str(path), "--out", str(out)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    learned = yaml.safe_load(out.read_text(encoding="utf-8"))["http"]["conditional"]
    assert learned["comparison"] == "strong" and learned["operations"] == ["getPet"]
