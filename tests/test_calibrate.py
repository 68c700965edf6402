"""``mockstore calibrate``: safe by default, budgeted, learning each setting from its own evidence.

The stand-ins (``tests/upstream/``) run behind a counter (``counting.py``) that
sees every request by method and status, so the tests prove what calibrate
sent and did not: no POST, PUT, PATCH or DELETE without ``--allow-writes``, no
429 without ``--allow-rate-limit``, nothing at all with ``--from`` alone. With
the opt-ins, the default budget settles everything they open.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from mockstore.keys import key_alias
from mockstore.scenario import load_scenario
from tests.fidelity_session import client_session
from tests.fidelity_support import record_mock
from tests.upstream import new_key, recorder
from tests.upstream.counting import counted
from tests.upstream.echo import refused_upstream
from tests.upstream.profiled import Plan, Profile, RateLimits
from tests.upstream.profiles import GATEWAY

MAIN, TIGHT = new_key(), new_key()
# A provider with one small plan (3 a minute, no day) and mockstore's other choices.
_SMALL = Profile(rate_limits=RateLimits(plans=(("free", Plan(3)),), anonymous=Plan(3)))


def _calibrate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mockstore", "calibrate", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


# Each stand-in: its module, the keys' plans (a roomy one and a small one), the
# profile (for profiled), and what calibrate must learn with the opt-ins.
PROVIDERS: dict[str, dict[str, Any]] = {
    "kennel": {
        "keys": {MAIN: "pro", TIGHT: "sandbox"},
        "writes": {"max_body_bytes": 8192, "default_status": "pending"},
        "codes": {"rate_limited": "rate.limit_exceeded", "invalid_body": "body.invalid"},
    },
    "menagerie": {
        "keys": {MAIN: "pro", TIGHT: "developer"},
        "writes": {"max_body_bytes": 32768, "unknown_fields": "keep"},
        "codes": {"rate_limited": "TooManyRequests", "invalid_body": "ValidationFailed"},
    },
    "petstore_standin": {
        "keys": {MAIN: "starter", TIGHT: "trial"},
        "writes": {"max_body_bytes": 65536, "default_status": "available"},
        "codes": {"rate_limited": "RATE_LIMIT_EXCEEDED", "invalid_body": "VALIDATION_ERROR"},
    },
    "profiled": {
        "keys": {MAIN: "roomy", TIGHT: "starter"},
        # The gateway's own plans (5 and 6 a minute), and one a tester is given for probing.
        "profile": replace(
            GATEWAY,
            rate_limits=replace(
                GATEWAY.rate_limits,
                plans=(*GATEWAY.rate_limits.plans, ("roomy", Plan(300, 10_000))),
            ),
        ),
        "writes": {"max_body_bytes": 16384, "default_status": "available"},
        "codes": {"rate_limited": "TOO_MANY_REQUESTS", "invalid_body": "VALIDATION_ERROR"},
    },
}


def _settings_cite_their_evidence(text: str) -> None:
    """Every setting line of the written scenario follows a comment citing an exchange."""
    lines = text.splitlines()
    for number, line in enumerate(lines):
        stripped = line.strip()
        if not stripped or stripped.startswith("#") or stripped.endswith(":"):
            continue
        if re.match(r"(version|name|description|anonymous_plan): ", stripped):
            continue
        if stripped.startswith('- {"id"'):
            continue  # the pets, cited once above the list
        before = lines[number - 1].strip()
        assert re.match(r"# (probe|recorded) #\d+ ", before), f"{line!r} cites nothing ({before!r})"


@pytest.mark.parametrize("module", list(PROVIDERS))
def test_without_opt_ins_nothing_is_written_and_no_429_is_caused(
    module: str, tmp_path: Path
) -> None:
    spec = PROVIDERS[module]
    out = tmp_path / "calibrated.yaml"
    with counted(module, spec["keys"], profile=spec.get("profile")) as served:
        done = _calibrate("--target", served.url, "--key", MAIN, "--key", TIGHT, "--out", str(out))
        counts = dict(served.counting.counts)
        writes, refused = served.counting.writes, served.counting.by_status(429)
    assert done.returncode == 0, done.stderr
    assert writes == 0, counts
    assert refused == 0, counts
    text = out.read_text()
    assert MAIN not in text and TIGHT not in text
    scenario = load_scenario(text, str(out))
    assert {k.key for k in scenario.keys} == {key_alias(MAIN), key_alias(TIGHT)}
    # What a GET settles is settled; what needs a POST is named as open, with the opt-in.
    codes = dict(scenario.behaviour.error_codes)
    assert codes["bad_limit"] != "invalid_parameter" or module == "profiled"
    assert "needs --allow-writes" in text
    _settings_cite_their_evidence(text)
    # The pets the provider lists are the scenario's (read-only).
    assert scenario.pets, "the listed pets were not seeded"


@pytest.mark.parametrize("module", list(PROVIDERS))
def test_with_the_opt_ins_the_default_budget_settles_everything_they_open(
    module: str, tmp_path: Path
) -> None:
    spec = PROVIDERS[module]
    out = tmp_path / "calibrated.yaml"
    with counted(module, spec["keys"], profile=spec.get("profile")) as served:
        done = _calibrate(
            "--target", served.url, "--key", MAIN, "--key", TIGHT,
            "--allow-writes", "--allow-rate-limit", "--out", str(out),
        )  # fmt: skip
        counts = dict(served.counting.counts)
        refused, total = served.counting.by_status(429), served.counting.total
    assert done.returncode == 0, done.stderr
    assert total <= 80, counts  # the default budget
    assert refused == 1, counts  # one key's minute, spent to its first 429 and no further
    scenario = load_scenario(out.read_text())
    behaviour = scenario.behaviour
    for name, value in spec["writes"].items():
        assert getattr(behaviour, name) == value, (name, done.stderr)
    codes = dict(behaviour.error_codes)
    for condition, code in spec["codes"].items():
        assert codes[condition] == code, condition
    assert "need" not in "\n".join(
        line for line in out.read_text().splitlines() if "allow-" in line
    ), "an opt-in was given, yet something still needs it"
    _settings_cite_their_evidence(out.read_text())


def test_the_budget_bounds_what_is_sent() -> None:
    with counted("petstore_standin", {MAIN: "starter"}) as served:
        done = _calibrate("--target", served.url, "--key", MAIN, "--budget", "6")
        total = served.counting.total
    assert done.returncode == 0, done.stderr
    assert total == 6
    assert "not sent, the budget of 6 is spent" in done.stderr
    load_scenario(done.stdout)  # what it could settle is still a valid scenario


def test_a_key_with_one_request_left_is_not_spent() -> None:
    tight = new_key()
    with counted("petstore_standin", {tight: "trial"}) as served:
        auth = {"Authorization": f"Bearer {tight}"}
        for _ in range(3):  # 2 of its 5 left this minute, or a fresh minute's 5
            httpx.get(served.url + "/pets", headers=auth)
        done = _calibrate("--target", served.url, "--key", tight)
        refused = served.counting.by_status(429)
    assert done.returncode == 0, done.stderr
    assert refused == 0
    assert f"it would spend the last request of {key_alias(tight)}" in done.stderr


class Clock:
    """The profiled stand-in's clock, moved by the test (or by calibrate's wait)."""

    def __init__(self) -> None:
        self.now = 1_772_366_430.0  # 2026-03-01T12:00:30Z

    def __call__(self) -> float:
        return self.now


def _spend(url: str, key: str) -> None:
    auth = {"Authorization": f"Bearer {key}"}
    for _ in range(50):
        if httpx.get(url + "/pets", headers=auth).status_code == 429:
            return
    raise AssertionError("no 429")


def test_an_allowance_spent_before_calibration_is_reported() -> None:
    tight = new_key()
    clock = Clock()  # it never moves: the allowance stays spent
    with counted("profiled", {tight: "free"}, profile=_SMALL, clock=clock) as served:
        _spend(served.url, tight)
        done = _calibrate("--target", served.url, "--key", tight, "--wait", "0")
    assert done.returncode == 0, done.stderr
    assert "spent (or it was banned) when calibration began" in done.stderr
    assert "left out, not waited for (--wait 0)" in done.stderr


def test_an_allowance_spent_before_calibration_is_waited_out(monkeypatch: Any) -> None:
    from mockstore.fidelity.calibrate import probes
    from mockstore.fidelity.calibrate.options import KeyOption, Options

    tight = new_key()
    clock = Clock()
    waited: list[float] = []

    def sleep(seconds: float) -> None:  # calibrate's wait, on the stand-in's clock
        waited.append(seconds)
        clock.now += seconds

    monkeypatch.setattr(probes.time, "sleep", sleep)
    monkeypatch.setattr(probes.time, "time", clock)
    with counted("profiled", {tight: "free"}, profile=_SMALL, clock=clock) as served:
        _spend(served.url, tight)
        options = Options(served.url, (KeyOption(tight),), wait=120)
        result = probes.Calibrator(options).run()
    assert waited and 0 < waited[0] <= 60
    assert any("waited" in note for note in result.unsettled)
    (key,) = result.keys
    assert key.plan == {"per_minute": 3}  # learned once the minute came back


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A client session through ``mockstore record`` in front of Kennel, counted."""
    work = tmp_path_factory.mktemp("recorded")
    har = work / "session.har"
    with counted("kennel", {MAIN: "pro", TIGHT: "sandbox"}) as served:
        with recorder(served.url, "--out", str(har)) as proxy:
            client_session(proxy.url, MAIN, TIGHT, oversize=9000)
            assert proxy.stop() == 0
        before = served.counting.total
        out = work / "learned.yaml"
        done = _calibrate("--from", str(har), "--key", f"{MAIN}=ci-key", "--out", str(out))
        after = served.counting.total
    return {"har": har, "out": out, "done": done, "sent": after - before}


def test_from_a_recording_alone_nothing_is_sent(recorded: dict[str, Any]) -> None:
    assert recorded["done"].returncode == 0, recorded["done"].stderr
    assert recorded["sent"] == 0
    assert "0 request(s)" in recorded["done"].stderr


def test_key_equals_name_names_the_scenario_key_and_keeps_its_alias(
    recorded: dict[str, Any],
) -> None:
    text = recorded["out"].read_text()
    assert MAIN not in text
    scenario = load_scenario(text)
    named = {k.key: k for k in scenario.keys}
    assert named["ci-key"].recorded_as == key_alias(MAIN)
    # Drift matches the recording's alias to the named key: no key is missing.
    done = subprocess.run(
        [sys.executable, "-m", "mockstore", "drift", str(recorded["har"]),
         "--scenario", str(recorded["out"]), "--format", "json"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    report = json.loads(done.stdout)
    assert not [w for w in report["warnings"] if "no key of the scenario" in w], report["warnings"]
    assert report["differences"] == [], report["differences"][:3]


def test_learned_settings_cite_the_recorded_exchanges(recorded: dict[str, Any]) -> None:
    text = recorded["out"].read_text()
    _settings_cite_their_evidence(text)
    scenario = load_scenario(text)
    behaviour = scenario.behaviour
    # The limiter as the scenario's one model has it (ratelimit:, or the older settings).
    assert scenario.ratelimit.headers.reset == "epoch-ms"
    assert scenario.ratelimit.minute.align == "first_request"
    assert behaviour.request_id.header == "x-trace-id"  # as the recorder journals names
    assert behaviour.content_type == "application/json; charset=utf-8"
    assert dict(behaviour.error_codes)["key_banned"] == "rate.key_banned"
    assert scenario.ban is not None and scenario.ban.after_rejections == 4
    assert behaviour.list_order == "descending"
    assert behaviour.limit_above_maximum == "clamp"
    assert behaviour.unknown_fields == "refuse"


def test_a_429_never_teaches_the_code_of_another_condition(tmp_path: Path) -> None:
    # A provider whose anonymous allowance is one a minute: the malformed key's request
    # is refused for the allowance, not for its key.
    provider = (
        "version: 1\nplans: {tiny: {per_minute: 1, per_day: 100}}\nanonymous_plan: tiny\n"
        "behaviour: {error_codes: {missing_key: NO_KEY, malformed_authorization: BAD_AUTH,"
        " rate_limited: SLOW_DOWN}}\n"
    )
    har = record_mock(
        provider,
        [
            ("GET", "/v1/pets", "", [], b"", 0.0),
            ("GET", "/v1/pets", "", [("authorization", "Basic eDp5")], b"", 0.0),
        ],
    )
    path = tmp_path / "session.har"
    path.write_text(json.dumps(har))
    done = _calibrate("--from", str(path))
    assert done.returncode == 0, done.stderr
    codes = dict(load_scenario(done.stdout).behaviour.error_codes)
    assert codes["missing_key"] == "NO_KEY"
    assert codes["rate_limited"] == "SLOW_DOWN"
    assert codes["malformed_authorization"] == "unauthorized"  # not learned: never shown


def test_an_allowance_of_nothing_to_callers_without_a_key_is_none(tmp_path: Path) -> None:
    # Tollgate's: every 401 says X-RateLimit-Limit: 0. No plan holds 0 (the sliding log's
    # replay indexed its log by it and calibrate ended in an IndexError).
    har = record_mock(
        "version: 1\nplans: {tiny: {per_minute: 2, per_day: 100}}\nanonymous_plan: tiny\n",
        [("GET", "/v1/pets", "", [], b"", 0.0)] * 3,
    )
    for entry in har["log"]["entries"]:
        for header in entry["response"]["headers"]:
            if header["name"].lower() == "x-ratelimit-limit":
                header["value"] = "0"
    path = tmp_path / "session.har"
    path.write_text(json.dumps(har))
    done = _calibrate("--from", str(path))
    assert done.returncode == 0, done.stderr
    scenario = load_scenario(done.stdout)
    assert scenario.ratelimit.anonymous == "none"
    # Told an allowance of nothing, as the recording shows (it was left open).
    assert scenario.ratelimit.headers.uncounted == "zero"


def test_bad_arguments_and_an_unreachable_target() -> None:
    unreachable = _calibrate("--target", refused_upstream(), "--key", MAIN)
    assert unreachable.returncode == 1
    assert "could not probe" in unreachable.stderr and "ConnectError" in unreachable.stderr
    bad = _calibrate("--target", "staging.example.com/v1", "--key", MAIN)
    assert bad.returncode == 2
    assert "--target must be an http:// or https:// URL" in bad.stderr
    spaced = _calibrate("--target", refused_upstream(), "--key", "sk live 123")
    assert spaced.returncode == 2
    assert "--key must be a bearer token" in spaced.stderr
    assert "sk live 123" not in spaced.stderr
    neither = _calibrate("--key", MAIN)
    assert neither.returncode == 2 and "give --from FILE.har, --target URL, or both" in (
        neither.stderr
    )
    missing = _calibrate("--from", "/nonexistent/session.har")
    assert missing.returncode == 2 and "cannot read" in missing.stderr
