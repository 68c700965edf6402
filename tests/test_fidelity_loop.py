"""The loop closes: record a client through the real service, calibrate from it, drift says nothing.

Everything runs as a user runs it: the stand-in Pet Store and ``mockstore
record`` as processes on loopback, a client speaking HTTP through the
recorder, then ``mockstore drift`` and ``mockstore calibrate`` as commands.
Before calibration, drift lists the stand-in's every choice that differs from
mockstore's defaults, each with the setting that decides it; after, nothing
but what the calibrated scenario itself accepts as inexpressible.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from mockstore.cli.main import build_parser
from mockstore.keys import key_alias
from tests.upstream import new_key, recorder, standin

ROOT = Path(__file__).resolve().parent.parent
STARTER, TRIAL = new_key(), new_key()
WAIT = 30.0


def _mockstore(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mockstore", *args], capture_output=True, text=True, timeout=300
    )


def client_session(api: str) -> None:
    """What a client's test suite sends: every operation, its mistakes, and a 429."""
    starter = {"Authorization": f"Bearer {STARTER}"}
    with httpx.Client(base_url=api, timeout=WAIT) as http:
        assert http.get("/pets?limit=2", headers=starter).status_code == 200
        created = http.post("/pets", json={"name": "Nala", "categoryId": 7}, headers=starter)
        assert created.status_code == 201
        http.post("/pets", json={"name": "Rex", "categoryId": 3, "nickname": "R"}, headers=starter)
        http.get(f"/pets/{created.json()['id']}", headers=starter)
        http.get("/pets/101", headers=starter)
        http.get("/pets/999999", headers=starter)
        http.get("/pets/abc", headers=starter)
        http.get("/pets?limit=0", headers=starter)
        http.get("/pets?status=lost", headers=starter)
        http.get("/pets?status=available&limit=5", headers=starter)
        http.post("/pets", json={"name": 5}, headers=starter)
        big = b'{"name": "' + b"a" * 70_000 + b'", "categoryId": 1}'
        oversize = http.post(
            "/pets", content=big, headers={**starter, "Content-Type": "application/json"}
        )
        assert oversize.status_code == 413
        http.get("/pets")
        http.get("/pets", headers={"Authorization": "Bearer not-a-key-of-theirs"})
        http.get("/nowhere")
        http.get("/nowhere", headers=starter)
        http.head("/pets", headers=starter)
        trial = {"Authorization": f"Bearer {TRIAL}"}
        statuses = []
        for _ in range(12):  # 5 a minute: the 6th in one minute is refused
            statuses.append(http.get("/pets?limit=1", headers=trial).status_code)
            if statuses[-1] == 429:
                break
        assert statuses[-1] == 429, statuses


@pytest.fixture(scope="module")
def loop(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    work = tmp_path_factory.mktemp("loop")
    har = work / "session.har"
    with standin({STARTER: "starter", TRIAL: "trial"}) as upstream:
        with recorder(upstream.url, "--out", str(har)) as proxy:
            client_session(proxy.url)
            assert proxy.stop() == 0
        calibrated = work / "calibrated.yaml"
        calibration = _mockstore(
            "calibrate",
            "--target",
            upstream.url,
            "--key",
            STARTER,
            "--key",
            TRIAL,
            "--allow-writes",
            "--allow-rate-limit",
            "--budget",
            "200",
            "--out",
            str(calibrated),
        )
    # What a team writes from the provider's documentation: its keys and their plans,
    # mockstore's defaults for everything else.
    before = work / "before.yaml"
    before.write_text(
        "version: 1\nname: before\nkeys:\n"
        f"  - {{key: {key_alias(STARTER)}, plan: {{per_minute: 100, per_day: 5000}}}}\n"
        f"  - {{key: {key_alias(TRIAL)}, plan: {{per_minute: 5, per_day: 50}}}}\n"
    )
    yield {"har": har, "before": before, "calibrated": calibrated, "calibration": calibration}


def test_the_recording_holds_every_exchange_and_no_key(loop: dict[str, Any]) -> None:
    text = loop["har"].read_text()
    assert STARTER not in text and TRIAL not in text
    entries = json.loads(text)["log"]["entries"]
    assert len(entries) >= 23
    assert entries[-1]["response"]["status"] == 429


def test_before_calibration_drift_lists_every_choice_the_provider_made(
    loop: dict[str, Any],
) -> None:
    done = _mockstore(
        "drift", str(loop["har"]), "--scenario", str(loop["before"]), "--format", "json"
    )
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    named = {d["setting"] for d in report["differences"]}
    expected = {
        "behaviour.validation_status",
        "behaviour.path_check",
        "behaviour.serve_head",
        "behaviour.max_body_bytes",
        "behaviour.ratelimit_reset",
        "behaviour.retry_after",
        "behaviour.ratelimit_draft_headers",
        "behaviour.default_status",
        "behaviour.unknown_fields",
        "behaviour.deprecated_since",
        "behaviour.sunset",
        "plans, keys[].plan or anonymous_plan",
        *(
            f"behaviour.error_codes.{condition}"
            for condition in (
                "missing_key",
                "unknown_key",
                "invalid_body",
                "bad_limit",
                "bad_status_filter",
                "bad_pet_id",
                "pet_not_found",
                "unknown_path",
                "rate_limited",
            )
        ),
    }
    assert expected <= named, sorted(expected - named)
    # Every difference names the request that shows it.
    for difference in report["differences"]:
        assert re.fullmatch(r"(GET|POST|HEAD) /v1/\S+", difference["request"]), difference
        assert difference["entry"] >= 1
    by_request = {(d["request"], d["where"]): d for d in report["differences"]}
    status = by_request[("GET /v1/pets?limit=0", "status")]
    assert (status["recorded"], status["mock"]) == ("422", "400")
    code = by_request[("GET /v1/pets/999999", "body.code")]
    assert (code["recorded"], code["mock"]) == ("PET_NOT_FOUND", "not_found")
    extra = by_request[("GET /v1/pets?limit=1", "body.retryAfter")]
    assert extra["setting"] is None and extra["status"] == 429


def test_calibration_settles_every_setting_it_can_and_says_what_it_cannot(
    loop: dict[str, Any],
) -> None:
    calibration = loop["calibration"]
    assert calibration.returncode == 0, calibration.stderr
    text = loop["calibrated"].read_text()
    assert STARTER not in text and TRIAL not in text
    assert _mockstore("validate", str(loop["calibrated"])).returncode == 0
    assert "not expressible: rate_limited: the Error body carries a field" in calibration.stderr


def test_after_calibration_drift_reports_nothing(loop: dict[str, Any]) -> None:
    done = _mockstore(
        "drift", str(loop["har"]), "--scenario", str(loop["calibrated"]), "--format", "json"
    )
    report = json.loads(done.stdout)
    assert report["differences"] == []
    assert done.returncode == 0
    # What the format cannot express is reported as accepted, by the scenario's own list.
    assert [(d["where"], d["accepted_by"]) for d in report["accepted"]] == [
        ("body.retryAfter", "drift.accept[0]")
    ]
    assert report["compared"] >= 23


def test_the_nightly_recipe_commands_are_valid() -> None:
    # docs/fidelity.md includes this file (tests/test_docs.py checks it).
    recipe = (ROOT / "examples" / "nightly-drift.yml").read_text(encoding="utf-8")
    workflow = yaml.safe_load(recipe)
    commands = []
    for job in workflow["jobs"].values():
        for step in job["steps"]:
            for line in step.get("run", "").splitlines():
                if line.strip().startswith("mockstore "):
                    commands.append(line.strip().rstrip("&").strip())
    kinds = {shlex.split(c)[1] for c in commands}
    assert {"record", "drift", "calibrate"} <= kinds
    for command in commands:
        # Shell variables stand for values: any word will do for the parser.
        words = shlex.split(re.sub(r"\$\{?\w+\}?", "VALUE", command))
        args = build_parser().parse_args(words[1:])
        assert args.command in kinds
