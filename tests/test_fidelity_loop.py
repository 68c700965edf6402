"""The loop closes on every stand-in: record, drift, calibrate from the recording, drift again.

Each provider (``tests/upstream/``: Kennel, Menagerie and the old stand-in, each
written without reading mockstore) runs as a process on loopback; a client's
session goes through ``mockstore record``; ``mockstore drift`` and ``mockstore
calibrate`` run as commands, as a user runs them. Before calibration drift
lists the provider's choices (its module docstring), each with the setting that
removes it; calibrated from the recording (and probes for the rest), drift finds
nothing a setting could remove: what remains is what the scenario format cannot
express, each with its reason, and the docs list every such reason.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from mockstore.cli.main import build_parser
from mockstore.fidelity.attribution import NOT_EXPRESSIBLE
from mockstore.keys import key_alias
from tests.fidelity_session import client_session
from tests.upstream import new_key, provider, recorder

ROOT = Path(__file__).resolve().parent.parent
MAIN, TIGHT = new_key(), new_key()


def _mockstore(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mockstore", *args], capture_output=True, text=True, timeout=300
    )


# Each provider: its keys' plans as its documentation gives them (a roomy one, a small
# one), the callers without a key, the size of a body it refuses for its size, the
# settings drift must name before calibration, and what may stay not expressible.
PROVIDERS: dict[str, dict[str, Any]] = {
    "kennel": {
        "plans": {MAIN: ("pro", 300, 10_000), TIGHT: ("sandbox", 10, 200)},
        "anonymous": (10, 100),
        "oversize": 9_000,
        "named": {
            "behaviour.content_type",
            "behaviour.ratelimit_reset",
            "behaviour.request_id.header",
            "behaviour.error_fields",
            "behaviour.list_order",
            "behaviour.location",
            "behaviour.etag.getPet",
            "behaviour.headers",
            "behaviour.deprecation_on",
            "behaviour.deprecated_since",
            "behaviour.deprecation_link",
            "behaviour.sunset",
            "behaviour.limit_above_maximum",
            "behaviour.unknown_fields",
            "behaviour.max_body_bytes",
            "behaviour.path_check",
            "behaviour.serve_head",
            "behaviour.default_status",
            "behaviour.error_statuses.bad_limit",
            "behaviour.error_statuses.not_implemented",
            "behaviour.www_authenticate.malformed_authorization",
            "behaviour.error_codes.missing_key",
            "behaviour.error_codes.unknown_key",
            "behaviour.error_codes.bad_pet_id",
            "behaviour.error_codes.rate_limited",
            "ban.after_rejections",
        },
        "inexpressible": set(),
    },
    "menagerie": {
        "plans": {MAIN: ("pro", 300, 10_000), TIGHT: ("developer", 12, 40)},
        "anonymous": (5, 25),
        "oversize": 40_000,
        "named": {
            "behaviour.content_type",
            "behaviour.headers",
            "behaviour.request_id.header",
            "behaviour.ratelimit_describes",
            "behaviour.error_fields",
            "behaviour.retry_after",
            "behaviour.deprecation_format",
            "behaviour.deprecation_link",
            "behaviour.sunset",
            "behaviour.list_order",
            "behaviour.unknown_fields",
            "behaviour.serve_head",
            "behaviour.max_body_bytes",
            "behaviour.www_authenticate.missing_key",
            "behaviour.error_codes.pet_not_found",
            "behaviour.error_codes.rate_limited",
            "ratelimit.headers.second_set",
            "routes",
        },
        # A limit that is not an integer (2.0) is 400 InvalidLimit, one below 1 is 422
        # LimitBelowMinimum. (X-RateLimit-Burst-*, the minute's figures under names of its
        # own, is ratelimit.headers.second_set.)
        "inexpressible": {"split-condition"},
    },
    "petstore_standin": {
        "plans": {MAIN: ("starter", 100, 5_000), TIGHT: ("trial", 5, 50)},
        "anonymous": (20, 200),
        "oversize": 70_000,
        "named": {
            "behaviour.ratelimit_draft_headers",
            "behaviour.ratelimit_reset",
            "behaviour.request_id.format",
            "behaviour.retry_after",
            # Its retryAfter field counts down: no constant Error field reproduces it
            # (proven by replay: value-adds-difference).
            "behaviour.default_status",
            "behaviour.deprecated_since",
            "behaviour.sunset",
            "behaviour.unknown_fields",
            "behaviour.validation_status",
            "behaviour.max_body_bytes",
            "behaviour.path_check",
            "behaviour.serve_head",
            "behaviour.error_codes.missing_key",
            "behaviour.error_codes.rate_limited",
            "routes",
        },
        "inexpressible": set(),
    },
}


def _before(spec: dict[str, Any]) -> str:
    """What a team writes from the provider's documentation: its keys and their plans,
    the anonymous allowance, mockstore's defaults for everything else."""
    lines = ["version: 1", "name: before", "plans:"]
    minute, day = spec["anonymous"]
    lines.append(f"  anonymous: {{per_minute: {minute}, per_day: {day}}}")
    lines.append("anonymous_plan: anonymous")
    lines.append("keys:")
    for key, (_, minute, day) in spec["plans"].items():
        lines.append(
            f"  - {{key: {key_alias(key)}, plan: {{per_minute: {minute}, per_day: {day}}}}}"
        )
    return "\n".join(lines) + "\n"


def _drift(har: Path, scenario: Path) -> tuple[int, dict[str, Any]]:
    done = _mockstore("drift", str(har), "--scenario", str(scenario), "--format", "json")
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)


@pytest.fixture(scope="module", params=list(PROVIDERS))
def loop(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    name = request.param
    spec = PROVIDERS[name]
    work = tmp_path_factory.mktemp(name)
    har = work / "session.har"
    keys = {key: plan for key, (plan, _, _) in spec["plans"].items()}
    with provider(name, keys) as upstream:
        with recorder(upstream.url, "--out", str(har)) as proxy:
            session = client_session(proxy.url, MAIN, TIGHT, oversize=spec["oversize"])
            assert proxy.stop() == 0
        calibrated = work / "calibrated.yaml"
        calibration = _mockstore(
            "calibrate", "--from", str(har), "--target", upstream.url,
            "--key", f"{MAIN}=ci-key", "--key", TIGHT, "--allow-writes", "--wait", "0",
            "--out", str(calibrated),
        )  # fmt: skip
    before = work / "before.yaml"
    before.write_text(_before(spec))
    yield {
        "name": name,
        "spec": spec,
        "har": har,
        "session": session,
        "before": _drift(har, before),
        "calibration": calibration,
        "calibrated": calibrated,
        "after": _drift(har, calibrated) if calibration.returncode == 0 else (None, {}),
    }


def test_the_recording_holds_every_exchange_and_no_key(loop: dict[str, Any]) -> None:
    text = loop["har"].read_text()
    assert MAIN not in text and TIGHT not in text
    entries = json.loads(text)["log"]["entries"]
    assert len(entries) == len(loop["session"].seen)
    assert 429 in [entry["response"]["status"] for entry in entries]


def test_before_calibration_drift_lists_the_providers_choices(loop: dict[str, Any]) -> None:
    status, report = loop["before"]
    assert status == 1
    named = {d["setting"] for d in report["differences"] if d["cause"] == "setting"}
    expected = loop["spec"]["named"]
    assert expected <= named, sorted(expected - named)
    for difference in report["differences"]:
        assert re.fullmatch(r"(GET|POST|HEAD|DELETE|OPTIONS) /v1/\S+", difference["request"]), (
            difference
        )
        assert difference["cause"] in ("setting", "not_expressible")
        if difference["cause"] == "not_expressible":
            assert difference["reason"] in NOT_EXPRESSIBLE, difference


def test_calibration_learns_from_the_recording_and_probes_the_rest(loop: dict[str, Any]) -> None:
    calibration = loop["calibration"]
    assert calibration.returncode == 0, calibration.stderr
    text = loop["calibrated"].read_text()
    assert MAIN not in text and TIGHT not in text
    assert _mockstore("validate", str(loop["calibrated"])).returncode == 0
    assert "# recorded #" in text  # settings cite the recorded exchanges
    scenario = yaml.safe_load(text)
    names = {entry["key"] for entry in scenario["keys"]}
    assert "ci-key" in names  # --key KEY=NAME


def test_after_calibration_no_difference_a_setting_could_remove(loop: dict[str, Any]) -> None:
    status, report = loop["after"]
    causes = Counter(d["cause"] for d in report["differences"])
    assert causes["setting"] == 0, [d for d in report["differences"] if d["cause"] == "setting"][:5]
    reasons = {d["reason"] for d in report["differences"] if d["cause"] == "not_expressible"}
    assert reasons == loop["spec"]["inexpressible"], reasons
    assert status == (1 if reasons else 0)
    assert report["compared"] == len(loop["session"].seen)


def test_every_reason_a_difference_cannot_be_expressed_is_in_the_docs() -> None:
    page = (ROOT / "docs" / "fidelity.md").read_text(encoding="utf-8")
    for reason, _why in NOT_EXPRESSIBLE.items():
        assert f"`{reason}`" in page, f"docs/fidelity.md does not list {reason!r}"


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
