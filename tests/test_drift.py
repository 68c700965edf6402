"""``mockstore drift``: semantic differences between a recording and a scenario, by named rules.

A mock compared with itself never drifts, whatever the requests and the
scenario's knobs (a hypothesis property); a mock recorded under one knob and
compared with a scenario that lacks it drifts exactly there, naming the knob;
the formats drift reads are classified alike for every value; and the CLI's
outputs and exit statuses are the documented ones.
"""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from email.utils import formatdate
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mockstore.fidelity.compare import CLASSES
from mockstore.fidelity.drift import drift
from mockstore.fidelity.formats import reset_kind, retry_after_kind, sf_list
from mockstore.keys import key_alias
from mockstore.scenario import load_scenario, scenario_schema
from tests.fidelity_support import (
    BASE,
    KEY,
    KNOBS,
    REQUESTS,
    SHOWN_BY,
    START,
    Step,
    apply,
    record_mock,
    with_knob,
)
from tests.support import examples


def record(scenario_text: str, steps: list[Step]) -> dict[str, Any]:
    """Run ``steps`` against an in-process mock of ``scenario_text``; its journal as HAR."""
    return record_mock(scenario_text, steps, START)


request_steps = st.lists(
    st.tuples(st.sampled_from(REQUESTS), st.sampled_from([0.0, 0.0, 0.5, 3.0, 20.0, 61.0])),
    min_size=1,
    max_size=25,
).map(lambda items: [(*request, wait) for request, wait in items])


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=request_steps, knobs=st.lists(st.sampled_from(KNOBS), max_size=1))
def test_a_mock_compared_with_itself_never_drifts(steps: list[Step], knobs: list[str]) -> None:
    text = with_knob(knobs[0]) if knobs else BASE
    report = drift(record(text, steps), load_scenario(text))
    assert report.differences == [], [d.to_dict() for d in report.differences]
    assert report.compared == len(steps)


@pytest.mark.parametrize("knob", KNOBS)
def test_a_knob_the_scenario_lacks_is_drift_that_names_it(knob: str) -> None:
    requests, setting = SHOWN_BY[knob]
    har = record(with_knob(knob), [(*r, 0.0) for r in requests])
    report = drift(har, load_scenario(BASE))
    assert report.drift
    assert setting in {d.setting for d in report.differences}, [
        d.to_dict() for d in report.differences
    ]
    # Every difference a knob makes is one a setting removes.
    assert {d.cause for d in report.differences} == {"setting"}, [
        d.to_dict() for d in report.differences
    ]
    # And the scenario that has it does not drift.
    assert not drift(har, load_scenario(with_knob(knob))).drift


@pytest.mark.parametrize("knob", KNOBS)
def test_each_setting_drift_names_removes_its_difference(knob: str) -> None:
    """Drift's claim, checked: set each named setting as it says, and its difference goes."""
    requests, _ = SHOWN_BY[knob]
    har = record(with_knob(knob), [(*r, 0.0) for r in requests])
    base = yaml.safe_load(BASE)
    report = drift(har, load_scenario(BASE))
    proposed = [d for d in report.differences if d.value]
    assert proposed, [d.to_dict() for d in report.differences]
    for difference in proposed:
        fixed = drift(har, load_scenario(yaml.safe_dump(apply(base, difference))))
        still = [
            d.to_dict()
            for d in fixed.differences
            if (d.entry, d.kind, d.where) == (difference.entry, difference.kind, difference.where)
        ]
        assert not still, (difference.to_dict(), still)
    # All of them, round after round (a header's name first, then its value's form):
    # no drift is left.
    data = base
    for _ in range(4):
        left = drift(har, load_scenario(yaml.safe_dump(data))).differences
        if not left:
            break
        assert all(d.value for d in left), [d.to_dict() for d in left]
        for difference in left:
            data = apply(data, difference)
    assert [d.to_dict() for d in drift(har, load_scenario(yaml.safe_dump(data))).differences] == []


def test_a_recording_that_names_keys_by_alias_is_matched_to_the_scenarios_keys() -> None:
    har = record(BASE, [(*REQUESTS[0], 0.0), (*REQUESTS[15], 0.0)])
    for entry in har["log"]["entries"]:
        for header in entry["request"]["headers"]:
            if header["name"] == "authorization":
                header["value"] = f"Bearer {key_alias(KEY)}"
    assert f"Bearer {KEY}" not in json.dumps(har)
    report = drift(har, load_scenario(BASE))
    assert not report.drift and report.compared == 2
    # A scenario that names the alias itself (as calibrate writes it) matches too.
    aliased = BASE.replace(f"key: {KEY}", f"key: {key_alias(KEY)}")
    assert not drift(har, load_scenario(aliased)).drift


def test_what_is_compared_by_kind_is_counted_under_its_rule() -> None:
    har = record(BASE, [(*REQUESTS[0], 0.0), (*REQUESTS[2], 0.0)])
    report = drift(har, load_scenario(BASE)).to_json()
    rules = {(item["rule"], item["what"]) for item in report["ignored"]}
    assert ("per-run-values", "header date (compared as an HTTP-date)") in rules
    assert ("per-run-values", "header x-request-id (a request id: compared by its form)") in rules
    assert ("rate-limit-state", "header x-ratelimit-remaining (compared as an integer)") in rules
    assert ("store-dependent", "list contents and lengths (compared by shape)") in rules
    assert all(item["why"] for item in report["ignored"])


def test_the_drift_classes_are_the_ones_the_scenario_schema_accepts() -> None:
    accept = scenario_schema()["properties"]["drift"]["properties"]["accept"]
    assert accept["items"]["properties"]["class"]["enum"] == list(CLASSES)


# -- formats -----------------------------------------------------------------------


@given(st.integers(min_value=0, max_value=999_999_999))
def test_any_count_of_seconds_is_a_delta(seconds: int) -> None:
    assert reset_kind(str(seconds)) == "delta"
    assert retry_after_kind(str(seconds)) == "seconds"


@given(st.integers(min_value=1_000_000_000, max_value=32_503_680_000))
def test_any_unix_time_of_this_era_is_an_epoch_and_its_http_date_a_date(when: int) -> None:
    assert reset_kind(str(when)) == "epoch"
    assert retry_after_kind(formatdate(when, usegmt=True)) == "http-date"


@given(
    st.lists(
        st.tuples(
            st.from_regex(r"[a-z][a-z0-9_-]{0,8}", fullmatch=True),
            st.integers(min_value=0, max_value=10**9),
            st.integers(min_value=1, max_value=10**6),
        ),
        min_size=1,
        max_size=4,
    )
)
def test_any_draft_ratelimit_policy_parses_as_a_structured_list(
    policies: list[tuple[str, int, int]],
) -> None:
    text = ", ".join(f'"{name}";q={q};w={w}' for name, q, w in policies)
    parsed = sf_list(text)
    assert parsed == [(name, {"q": str(q), "w": str(w)}) for name, q, w in policies]
    assert sf_list(text + ', "broken;q=1') is None


# -- the command ------------------------------------------------------------------


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mockstore", "drift", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path, Path]:
    har = tmp_path / "session.har"
    har.write_text(
        json.dumps(record(BASE + KNOBS[0] + "\n", [(*REQUESTS[2], 0.0), (*REQUESTS[0], 1.0)]))
    )
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(BASE)
    same = tmp_path / "same.yaml"
    same.write_text(BASE + KNOBS[0] + "\n")
    return har, scenario, same


def test_exit_status_is_0_without_drift_and_1_with_it(files: tuple[Path, Path, Path]) -> None:
    har, scenario, same = files
    assert _run(str(har), "--scenario", str(same)).returncode == 0
    drifted = _run(str(har), "--scenario", str(scenario))
    assert drifted.returncode == 1
    assert (
        "status status: recorded 422, mock 400  "
        "[behaviour.validation_status: 422; proven by replay]" in drifted.stdout
    )


def test_json_lists_each_difference_with_the_request_that_shows_it(
    files: tuple[Path, Path, Path],
) -> None:
    har, scenario, _ = files
    done = _run(str(har), "--scenario", str(scenario), "--format", "json")
    report = json.loads(done.stdout)
    assert report["drift"] is True
    (difference,) = report["differences"]
    assert difference["entry"] == 1
    assert difference["request"] == "GET /v1/pets?limit=0"
    assert difference["request_id"] == "req-000001"
    assert difference["key"] == key_alias(KEY)
    assert (difference["recorded"], difference["mock"]) == ("422", "400")
    assert (difference["cause"], difference["set_to"]) == ("setting", 422)
    assert report["summary"] == [
        {
            "kind": "status",
            "where": "status",
            "cause": "setting",
            "setting": "behaviour.validation_status",
            "reason": None,
            "count": 1,
        }
    ]


def test_junit_has_a_case_per_exchange_failing_with_its_differences(
    files: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    har, scenario, _ = files
    out = tmp_path / "drift.xml"
    done = _run(str(har), "--scenario", str(scenario), "--format", "junit", "-o", str(out))
    assert done.returncode == 1
    suite = ET.parse(out).getroot().find("testsuite")
    assert suite is not None and suite.get("name") == "mockstore.drift"
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == ["#1 GET /v1/pets?limit=0", "#2 GET /v1/pets"]
    failure = cases[0].find("failure")
    assert failure is not None and "recorded 422, mock 400" in (failure.text or "")
    assert cases[1].find("failure") is None


@pytest.mark.parametrize(
    ("har_text", "message"),
    [
        (None, "cannot read"),
        ("{not json", "is not JSON"),
        ('{"log": {"entries": 3}}', "'log.entries' is not a list"),
    ],
)
def test_unreadable_input_exits_2(tmp_path: Path, har_text: str | None, message: str) -> None:
    har = tmp_path / "in.har"
    if har_text is not None:
        har.write_text(har_text)
    done = _run(str(har), "--scenario", "default")
    assert done.returncode == 2
    assert message in done.stderr


def test_an_invalid_scenario_exits_2_with_its_problems(
    files: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    har, _, _ = files
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\nbehaviour: {validation_status: 418}\n")
    done = _run(str(har), "--scenario", str(bad))
    assert done.returncode == 2
    assert f"{bad}:2:32: $.behaviour.validation_status" in done.stderr


@given(st.integers(min_value=1_000_000_000_000, max_value=32_503_680_000_000))
def test_any_unix_time_in_milliseconds_is_epoch_ms(when: int) -> None:
    assert reset_kind(str(when)) == "epoch-ms"


# -- nothing compared, another base path ----------------------------------------------


def _har_file(tmp_path: Path, document: dict[str, Any]) -> Path:
    path = tmp_path / "session.har"
    path.write_text(json.dumps(document))
    return path


def test_an_empty_recording_exits_2_saying_nothing_was_compared(tmp_path: Path) -> None:
    har = record(BASE, [])
    done = _run(str(_har_file(tmp_path, har)), "--scenario", "default")
    assert done.returncode == 2, done.stdout
    assert "holds no exchange: nothing to compare" in done.stderr


def test_a_recording_of_an_upstream_that_was_down_exits_2(tmp_path: Path) -> None:
    har = record(BASE, [(*REQUESTS[0], 0.0), (*REQUESTS[1], 0.0)])
    for entry in har["log"]["entries"]:  # as mockstore record journals an upstream it cannot reach
        entry["_mockstore"]["outcome"] = "upstream_refused"
        entry["response"]["status"] = 502
    done = _run(str(_har_file(tmp_path, har)), "--scenario", "default")
    assert done.returncode == 2, done.stdout
    assert "none of the 2 exchange(s)" in done.stderr
    assert "2 the upstream did not answer it (upstream_refused)" in done.stderr


def test_a_recording_under_another_base_path_is_mapped_with_a_warning(tmp_path: Path) -> None:
    har = record(BASE, [(*REQUESTS[0], 0.0), (*REQUESTS[2], 0.0)])
    har["log"]["_mockstore"].pop("base_path")
    for entry in har["log"]["entries"]:
        entry["request"]["url"] = entry["request"]["url"].replace("/v1/", "/api/v2/")
    report = drift(har, load_scenario(BASE))
    assert report.compared == 2 and not report.drift, [d.to_dict() for d in report.differences]
    assert any("made under the base path /api/v2" in w for w in report.warnings)


def test_a_recording_of_no_pet_store_is_refused(tmp_path: Path) -> None:
    har = record(BASE, [(*REQUESTS[0], 0.0)])
    har["log"]["_mockstore"].pop("base_path")
    for entry in har["log"]["entries"]:
        entry["request"]["url"] = entry["request"]["url"].replace("/v1/pets", "/v1/cats")
    done = _run(str(_har_file(tmp_path, har)), "--scenario", "default")
    assert done.returncode == 2
    assert "names an operation of the Pet Store under any base path" in done.stderr


def test_an_accept_rule_is_narrow_and_the_report_lists_what_it_hid() -> None:
    har = record(BASE + KNOBS[0] + "\n", [(*REQUESTS[2], 0.0), (*REQUESTS[7], 0.0)])
    accepting = BASE + (
        "drift:\n  accept:\n"
        "    - {class: status, where: status, status: 422, operation: listPets, reason: known}\n"
    )
    report = drift(har, load_scenario(accepting))
    # listPets' 422 is accepted; getPet's (another operation) is still drift.
    assert [(d.operation, d.cause) for d in report.accepted] == [("listPets", "accepted")]
    assert {d.operation for d in report.differences if d.kind == "status"} == {"getPet"}
    (rule,) = report.to_json()["accept_rules"]
    assert rule == {"rule": "drift.accept[0]", "reason": "known", "hid": [1], "count": 1}


def test_a_stated_base_path_the_paths_do_not_bear_out_is_found_from_the_paths() -> None:
    # The HAR says /v1 (a recording rewritten, or a tool's default) but every path is under
    # /api/v3: the paths are what was recorded.
    har = record(BASE, [(*REQUESTS[0], 0.0), (*REQUESTS[2], 0.0)])
    for entry in har["log"]["entries"]:
        entry["request"]["url"] = entry["request"]["url"].replace("/v1/", "/api/v3/")
    report = drift(har, load_scenario(BASE))
    assert report.compared == 2 and not report.drift, [d.to_dict() for d in report.differences]
    assert any("made under the base path /api/v3" in w for w in report.warnings)
