"""``mockstore drift``: semantic differences between a recording and a scenario, by named rules.

A mock compared with itself never drifts, whatever the requests and the
scenario's knobs (a hypothesis property); a mock recorded under one knob and
compared with a scenario that lacks it drifts exactly there, naming the knob;
the formats drift reads are classified alike for every value; and the CLI's
outputs and exit statuses are the documented ones.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from email.utils import formatdate
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mockstore import __version__
from mockstore.app import create_app
from mockstore.clock import Clock
from mockstore.fidelity.compare import CLASSES
from mockstore.fidelity.drift import drift
from mockstore.fidelity.formats import reset_kind, retry_after_kind, sf_list
from mockstore.fidelity.replayer import call
from mockstore.keys import key_alias
from mockstore.reports.har import HarMeta, to_har
from mockstore.scenario import load_scenario, scenario_schema

START = 1772366430.0  # 2026-03-01T12:00:30Z
KEY = "drift-key"
BASE = f"""\
version: 1
clock: {{start: 2026-03-01T12:00:30Z, mode: manual}}
keys:
  - {{key: {KEY}, plan: {{per_minute: 4, per_day: 50}}}}
  - {{key: other-key, plan: pro}}
pets:
  - {{id: 1, name: Rex, categoryId: 2, status: available}}
  - {{id: 2, name: Bella, categoryId: 1, status: sold}}
ban: {{after_rejections: 3, within_seconds: 60, duration_seconds: 30}}
"""
AUTH = [("authorization", f"Bearer {KEY}")]
JSON_BODY = [*AUTH, ("content-type", "application/json")]

Step = tuple[str, str, str, list[tuple[str, str]], bytes, float]

REQUESTS: list[tuple[str, str, str, list[tuple[str, str]], bytes]] = [
    ("GET", "/v1/pets", "", AUTH, b""),
    ("GET", "/v1/pets", "limit=1", AUTH, b""),
    ("GET", "/v1/pets", "limit=0", AUTH, b""),
    ("GET", "/v1/pets", "status=sold", AUTH, b""),
    ("GET", "/v1/pets", "status=lost", AUTH, b""),
    ("GET", "/v1/pets/1", "", AUTH, b""),
    ("GET", "/v1/pets/3", "", AUTH, b""),
    ("GET", "/v1/pets/abc", "", AUTH, b""),
    ("HEAD", "/v1/pets", "", AUTH, b""),
    ("DELETE", "/v1/pets", "", AUTH, b""),
    ("GET", "/v1/nowhere", "", AUTH, b""),
    ("GET", "/v1/nowhere", "", [], b""),
    ("GET", "/v1/pets", "", [], b""),
    ("GET", "/v1/pets", "", [("authorization", "Bearer nobody")], b""),
    ("GET", "/v1/store/orders", "", AUTH, b""),
    ("POST", "/v1/pets", "", JSON_BODY, b'{"name": "Nala", "categoryId": 7}'),
    ("POST", "/v1/pets", "", JSON_BODY, b'{"name": "Max", "categoryId": 3, "status": "sold"}'),
    ("POST", "/v1/pets", "", JSON_BODY, b'{"name": "Kit", "categoryId": 1, "colour": "red"}'),
    ("POST", "/v1/pets", "", JSON_BODY, b'{"name": 7}'),
    ("POST", "/v1/pets", "", JSON_BODY, b"{nope"),
    ("POST", "/v1/pets", "", JSON_BODY, b'{"name": "' + b"x" * 300 + b'", "categoryId": 1}'),
    ("GET", "/v1/pets", "", [("authorization", "Bearer other-key")], b""),
]

KNOBS = [
    "behaviour: {validation_status: 422}",
    "behaviour: {ratelimit_reset: delta}",
    "behaviour: {serve_head: false}",
    "behaviour: {path_check: before_auth}",
    "behaviour: {unknown_fields: keep}",
    "behaviour: {default_status: pending}",
    "behaviour: {max_body_bytes: 200}",
    "behaviour: {retry_after: http-date}",
    "behaviour: {ratelimit_draft_headers: true}",
    "behaviour: {error_codes: {bad_limit: BAD_LIMIT, rate_limited: SLOW_DOWN}}",
    "behaviour: {deprecated_since: 2025-06-01T00:00:00Z, sunset: 2030-12-05T23:59:59Z}",
]


def record(scenario_text: str, steps: list[Step]) -> dict[str, Any]:
    """Run ``steps`` against an in-process mock of ``scenario_text``; its journal as HAR."""
    scenario = load_scenario(scenario_text)
    clock = Clock(start=START, mode="manual", wall=lambda: START + 7200)
    app = create_app(scenario, clock=clock)

    async def send_all() -> None:
        for method, path, query, headers, body, wait in steps:
            clock.advance(wait)
            await call(app, method, path, query, headers, body, "127.0.0.1")

    asyncio.run(send_all())
    meta = HarMeta(creator_version=__version__, scenario=scenario.name, base_path="/v1")
    return to_har(app.runtime.journal.select(), meta)


request_steps = st.lists(
    st.tuples(st.sampled_from(REQUESTS), st.sampled_from([0.0, 0.0, 0.5, 3.0, 20.0, 61.0])),
    min_size=1,
    max_size=25,
).map(lambda items: [(*request, wait) for request, wait in items])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=request_steps, knobs=st.lists(st.sampled_from(KNOBS), max_size=1))
def test_a_mock_compared_with_itself_never_drifts(steps: list[Step], knobs: list[str]) -> None:
    text = BASE + "".join(k + "\n" for k in knobs)
    report = drift(record(text, steps), load_scenario(text))
    assert report.differences == [], [d.to_dict() for d in report.differences]
    assert report.compared == len(steps)


# Requests that show each knob, and the setting drift must name for it.
SHOWN_BY = {
    "behaviour: {validation_status: 422}": ([REQUESTS[2]], "behaviour.validation_status"),
    "behaviour: {ratelimit_reset: delta}": ([REQUESTS[0]], "behaviour.ratelimit_reset"),
    "behaviour: {serve_head: false}": ([REQUESTS[8]], "behaviour.serve_head"),
    "behaviour: {path_check: before_auth}": ([REQUESTS[11]], "behaviour.path_check"),
    "behaviour: {unknown_fields: keep}": ([REQUESTS[17]], "behaviour.unknown_fields"),
    "behaviour: {default_status: pending}": ([REQUESTS[15]], "behaviour.default_status"),
    "behaviour: {max_body_bytes: 200}": ([REQUESTS[20]], "behaviour.max_body_bytes"),
    "behaviour: {retry_after: http-date}": ([REQUESTS[0]] * 5, "behaviour.retry_after"),
    "behaviour: {ratelimit_draft_headers: true}": (
        [REQUESTS[0]],
        "behaviour.ratelimit_draft_headers",
    ),
    "behaviour: {error_codes: {bad_limit: BAD_LIMIT, rate_limited: SLOW_DOWN}}": (
        [REQUESTS[2]],
        "behaviour.error_codes.bad_limit",
    ),
    "behaviour: {deprecated_since: 2025-06-01T00:00:00Z, sunset: 2030-12-05T23:59:59Z}": (
        [REQUESTS[5]],
        "behaviour.deprecated_since",
    ),
}


@pytest.mark.parametrize("knob", KNOBS)
def test_a_knob_the_scenario_lacks_is_drift_that_names_it(knob: str) -> None:
    requests, setting = SHOWN_BY[knob]
    har = record(BASE + knob + "\n", [(*r, 0.0) for r in requests])
    report = drift(har, load_scenario(BASE))
    assert report.drift
    assert setting in {d.setting for d in report.differences}, [
        d.to_dict() for d in report.differences
    ]
    # And the scenario that has it does not drift.
    assert not drift(har, load_scenario(BASE + knob + "\n")).drift


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
    assert ("per-run-values", "header x-request-id (compared by presence)") in rules
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
    assert "status status: recorded 422, mock 400  [behaviour.validation_status]" in drifted.stdout


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
    assert report["summary"] == [
        {
            "kind": "status",
            "where": "status",
            "setting": "behaviour.validation_status",
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
