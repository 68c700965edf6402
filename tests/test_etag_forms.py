"""An ETag's form and comparison: ``behaviour.etag_digest`` and ``etag_digits``,
``http.conditional.comparison``.

A client may check a validator's form (Aviary's clients expect the SHA-1 of the body,
40 hex digits, as nginx-fronted services and many frameworks write it; Kennel's are 16
digits of SHA-256). For every digest, every length it has and any pet the mock's ETag is
that many hex digits of that digest of the body it sends; a length past the digest's own
is refused at load, with file, line and column; calibrate learns the digest that gives
every recorded tag from its body, and falls back to the tags' length. And some servers
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
from mockstore.profile import ETAG_DIGESTS
from mockstore.scenario import ScenarioError, load_scenario, scenario_schema
from tests.fidelity_support import START, record_mock
from tests.support import examples

KEY = "etag-key"
DIGESTS = {
    "sha256": lambda body: hashlib.sha256(body).hexdigest(),
    "sha1": lambda body: hashlib.sha1(body, usedforsecurity=False).hexdigest(),
    "md5": lambda body: hashlib.md5(body, usedforsecurity=False).hexdigest(),
}


def _scenario(
    digest: str | None,
    name: str = "Rex",
    comparison: str = "weak",
    digits: int | None = None,
) -> str:
    behaviour: dict = {"etag": {"getPet": "strong"}}
    if digest is not None:
        behaviour["etag_digest"] = digest
    if digits is not None:
        behaviour["etag_digits"] = digits
    return yaml.safe_dump(
        {
            "version": 1,
            "keys": [{"key": KEY, "plan": "pro"}],
            "behaviour": behaviour,
            "http": {"conditional": {"operations": ["getPet"], "comparison": comparison}},
            "pets": [{"id": 1, "name": name, "categoryId": 2, "status": "available"}],
        }
    )


@st.composite
def _forms(draw: st.DrawFn) -> tuple[str, int | None]:
    digest = draw(st.sampled_from(sorted(DIGESTS)))
    length = len(DIGESTS[digest](b""))
    return digest, draw(st.none() | st.integers(8, length))


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(form=_forms(), name=st.text(min_size=1, max_size=30))
def test_the_etag_is_the_digits_of_the_digest_of_the_body_sent(
    form: tuple[str, int | None], name: str
) -> None:
    digest, digits = form
    auth = {"Authorization": f"Bearer {KEY}"}
    with TestClient(create_app(load_scenario(_scenario(digest, name, digits=digits)))) as client:
        answer = client.get("/v1/pets/1", headers=auth)
        again = client.get("/v1/pets/1", headers={**auth, "If-None-Match": answer.headers["etag"]})
    assert answer.status_code == 200 and answer.json()["name"] == name
    kept = 32 if digits is None else digits
    assert answer.headers["etag"] == f'"{DIGESTS[digest](answer.content)[:kept]}"'
    assert again.status_code == 304


def test_the_default_is_the_first_128_bits_of_sha_256() -> None:
    # Byte-identical to the tags mockstore wrote before the digest was a setting.
    with TestClient(create_app(load_scenario(_scenario(None)))) as client:
        answer = client.get("/v1/pets/1", headers={"Authorization": f"Bearer {KEY}"})
    assert answer.headers["etag"] == f'"{hashlib.sha256(answer.content).hexdigest()[:32]}"'


@pytest.mark.parametrize(("digest", "digits"), [("md5", 33), ("md5", 64), ("sha1", 41)])
def test_more_digits_than_the_digest_has_are_refused_at_load(digest: str, digits: int) -> None:
    text = (
        f"version: 1\nkeys: [{{key: {KEY}, plan: pro}}]\n"
        f"behaviour:\n  etag: {{getPet: strong}}\n  etag_digest: {digest}\n"
        f"  etag_digits: {digits}\n"
    )
    with pytest.raises(ScenarioError) as caught:
        load_scenario(text, "etag.yaml")
    (problem,) = caught.value.problems
    assert (problem.file, problem.line, problem.column) == ("etag.yaml", 6, 16)
    assert problem.path == "$.behaviour.etag_digits"
    assert f"only {len(DIGESTS[digest](b''))}" in problem.message


def test_each_digest_the_schema_names_is_served_and_bounded_by_its_own_length() -> None:
    # The schema's names, the digests the mock computes and the bound the loader checks
    # are one list: every digest takes all its digits and is refused one more.
    names = scenario_schema()["properties"]["behaviour"]["properties"]["etag_digest"]["enum"]
    assert sorted(names) == sorted(ETAG_DIGESTS) == sorted(DIGESTS)
    for name in names:
        length = len(ETAG_DIGESTS[name](b""))
        assert ETAG_DIGESTS[name](b"pet") == DIGESTS[name](b"pet")
        load_scenario(_scenario(name, digits=length))
        if length < 64:
            with pytest.raises(ScenarioError):
                load_scenario(_scenario(name, digits=length + 1))


def _calibrate(har: dict, tmp_path: Path) -> dict:
    path = tmp_path / "recording.har"
    path.write_text(json.dumps(har), encoding="utf-8")
    out = tmp_path / "calibrated.yaml"
    done = subprocess.run(
        [sys.executable, "-m", "mockstore", "calibrate", "--from", str(path), "--out", str(out)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return yaml.safe_load(out.read_text(encoding="utf-8"))


def test_calibrate_learns_the_digest_that_gives_every_recorded_tag(tmp_path: Path) -> None:
    auth = [("authorization", f"Bearer {KEY}")]
    har = record_mock(
        _scenario("sha1", digits=40), [("GET", "/v1/pets/1", "", auth, b"", 0.0)] * 2, START
    )
    learned = _calibrate(har, tmp_path)
    behaviour = learned["behaviour"]
    assert (behaviour["etag_digest"], behaviour["etag_digits"]) == ("sha1", 40)
    assert load_scenario(yaml.safe_dump(learned)).behaviour.etag_digest == "sha1"


def test_calibrate_falls_back_to_the_tags_length(tmp_path: Path) -> None:
    # Tags of 20 hex digits that no digest of the recorded bodies gives (a provider that
    # hashes something else): the mock takes their form, 20 digits of its own digest.
    auth = [("authorization", f"Bearer {KEY}")]
    har = record_mock(_scenario(None), [("GET", "/v1/pets/1", "", auth, b"", 0.0)] * 2, START)
    for entry in har["log"]["entries"]:
        for header in entry["response"]["headers"]:
            if header["name"].lower() == "etag":
                header["value"] = '"0123456789abcdef0123"'
    behaviour = _calibrate(har, tmp_path)["behaviour"]
    assert behaviour["etag_digits"] == 20
    assert behaviour.get("etag_digest", "sha256") == "sha256"


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
