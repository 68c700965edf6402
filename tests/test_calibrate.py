"""``mockstore calibrate`` against the stand-in: budgeted probes, a scenario citing its evidence.

The stand-in Pet Store (tests/upstream/petstore_standin.py) runs as its own
process on loopback; its access log (one line per request: method, target,
status) is what the tests read to prove what calibrate sent and did not send.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from mockstore.keys import key_alias
from mockstore.scenario import load_scenario
from tests.upstream import Process, new_key, standin
from tests.upstream.echo import refused_upstream

STARTER, TRIAL = new_key(), new_key()


@pytest.fixture
def upstream() -> Iterator[Process]:
    with standin({STARTER: "starter", TRIAL: "trial"}) as running:
        yield running


def _calibrate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mockstore", "calibrate", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


def _requests(upstream: Process) -> list[tuple[str, str, int]]:
    """(method, target, status) of every request the stand-in logged."""
    lines = [line.split(" ") for line in upstream.output if re.match(r"[A-Z]+ /", line)]
    return [(m, t, int(s)) for m, t, s in lines]


def _settings_cite_their_evidence(text: str) -> None:
    """Every setting line of the written scenario follows a comment citing a probe."""
    lines = text.splitlines()
    in_accept = False
    for number, line in enumerate(lines):
        stripped = line.strip()
        if stripped == "accept:":
            in_accept = True
        if in_accept or not stripped or stripped.startswith("#") or stripped.endswith(":"):
            continue
        if re.match(r"(version|name|description|anonymous_plan): ", stripped):
            continue
        before = lines[number - 1].strip()
        assert re.match(r"# probe \d+: ", before), f"{line!r} cites nothing (after {before!r})"


def test_without_opt_ins_nothing_is_written_and_no_allowance_is_spent(
    upstream: Process, tmp_path: Path
) -> None:
    pets_before = httpx.get(
        upstream.url + "/pets?limit=100", headers={"Authorization": f"Bearer {STARTER}"}
    ).json()
    out = tmp_path / "calibrated.yaml"
    done = _calibrate("--target", upstream.url, "--key", STARTER, "--key", TRIAL, "--out", str(out))
    assert done.returncode == 0, done.stderr
    sent = _requests(upstream)[1:]  # the first is this test's own listing
    assert 0 < len(sent) <= 40  # the default budget
    assert not [r for r in sent if r[0] == "POST" and r[2] < 300], "a POST was stored"
    assert not [r for r in sent if r[2] == 429], "an allowance was exhausted"
    pets_after = httpx.get(
        upstream.url + "/pets?limit=100", headers={"Authorization": f"Bearer {STARTER}"}
    ).json()
    assert pets_after == pets_before

    text = out.read_text()
    scenario = load_scenario(text, str(out))
    assert STARTER not in text and TRIAL not in text
    assert {k.key for k in scenario.keys} == {key_alias(STARTER), key_alias(TRIAL)}
    plans = {k.key: scenario.plans[k.plan] for k in scenario.keys}
    assert (plans[key_alias(STARTER)].per_minute, plans[key_alias(STARTER)].per_day) == (100, 5000)
    assert (plans[key_alias(TRIAL)].per_minute, plans[key_alias(TRIAL)].per_day) == (5, 50)
    assert scenario.plans[scenario.anonymous_plan].per_minute == 20
    behaviour = scenario.behaviour
    assert behaviour.validation_status == 422
    assert behaviour.ratelimit_reset == "delta"
    assert behaviour.serve_head is False
    assert behaviour.path_check == "before_auth"
    assert behaviour.ratelimit_draft_headers is True
    codes = dict(behaviour.error_codes)
    assert codes["missing_key"] == "MISSING_API_KEY"
    assert codes["unknown_key"] == "INVALID_API_KEY"
    assert codes["invalid_body"] == "VALIDATION_ERROR"
    assert codes["bad_limit"] == codes["bad_status_filter"] == "INVALID_QUERY_PARAMETER"
    assert codes["bad_pet_id"] == "INVALID_PATH_PARAMETER"
    assert codes["pet_not_found"] == "PET_NOT_FOUND"
    assert codes["unknown_path"] == "ROUTE_NOT_FOUND"
    assert codes["rate_limited"] == "rate_limited"  # not observed: the default stays
    assert behaviour.deprecated_since == 1748736000
    assert behaviour.sunset == datetime(2030, 12, 5, 23, 59, 59, tzinfo=UTC).timestamp()
    # What needs an opt-in is named as open, with the opt-in.
    assert "need --allow-writes" in text and "need --allow-rate-limit" in text
    _settings_cite_their_evidence(text)
    # The written file passes mockstore validate.
    valid = subprocess.run(
        [sys.executable, "-m", "mockstore", "validate", str(out)], capture_output=True, text=True
    )
    assert valid.returncode == 0, valid.stderr


def test_with_opt_ins_writes_and_the_rate_limit_settle_the_rest(
    upstream: Process, tmp_path: Path
) -> None:
    out = tmp_path / "calibrated.yaml"
    done = _calibrate(
        "--target",
        upstream.url,
        "--key",
        STARTER,
        "--key",
        TRIAL,
        "--allow-writes",
        "--allow-rate-limit",
        "--budget",
        "80",
        "--out",
        str(out),
    )
    assert done.returncode == 0, done.stderr
    sent = _requests(upstream)
    assert len(sent) <= 80
    assert len([r for r in sent if r[0] == "POST" and r[2] == 201]) == 1  # one pet, no more
    assert len([r for r in sent if r[2] == 429]) == 1  # one key's minute, spent once
    text = out.read_text()
    scenario = load_scenario(text)
    behaviour = scenario.behaviour
    assert behaviour.default_status == "available"
    assert behaviour.unknown_fields == "keep"
    assert behaviour.max_body_bytes == 64 * 1024
    assert behaviour.retry_after == "http-date"
    codes = dict(behaviour.error_codes)
    assert codes["rate_limited"] == "RATE_LIMIT_EXCEEDED"
    assert codes["payload_too_large"] == "PAYLOAD_TOO_LARGE"
    # The 429 body's extra field cannot be expressed: listed, and accepted for drift.
    assert "Not expressible in the scenario format" in text
    assert "'retryAfter'" in text
    (accepted,) = scenario.drift_accept
    assert (accepted.kind, accepted.where, accepted.status) == (
        "body-field",
        "body.retryAfter",
        429,
    )
    assert "not expressible: rate_limited: the Error body carries" in done.stderr
    _settings_cite_their_evidence(text)


def test_the_budget_bounds_what_is_sent(upstream: Process) -> None:
    done = _calibrate("--target", upstream.url, "--key", STARTER, "--budget", "6")
    assert done.returncode == 0, done.stderr
    assert len(_requests(upstream)) == 6
    assert "not sent, the budget of 6 is spent" in done.stdout
    load_scenario(done.stdout)  # what it could settle is still a valid scenario


def test_a_key_with_one_request_left_is_not_spent(tmp_path: Path) -> None:
    tight = new_key()
    with standin({tight: "trial"}) as upstream:
        auth = {"Authorization": f"Bearer {tight}"}
        for _ in range(3):  # 2 of its 5 left this minute, or a fresh minute's 5
            httpx.get(upstream.url + "/pets", headers=auth)
        done = _calibrate("--target", upstream.url, "--key", tight)
        statuses = [status for _, _, status in _requests(upstream)]
    assert done.returncode == 0, done.stderr
    assert 429 not in statuses
    assert f"it would spend the last request of {key_alias(tight)}" in done.stdout


def test_an_unreachable_target_exits_1_and_a_bad_one_2() -> None:
    unreachable = _calibrate("--target", refused_upstream(), "--key", STARTER)
    assert unreachable.returncode == 1
    assert "could not probe" in unreachable.stderr and "ConnectError" in unreachable.stderr
    bad = _calibrate("--target", "staging.example.com/v1", "--key", STARTER)
    assert bad.returncode == 2
    assert "--target must be an http:// or https:// URL" in bad.stderr
    spaced = _calibrate("--target", refused_upstream(), "--key", "sk live 123")
    assert spaced.returncode == 2
    assert "--key must be a bearer token" in spaced.stderr
    assert "sk live 123" not in spaced.stderr
