"""``mockstore report`` against a real server: formats, --output, --fail-on, the token."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from mockstore.journal import mask
from tests.support import TOOL, LiveServer, assert_conforms, auth, mock_server

# A manual clock: tight-key's 429s do not depend on when in the minute the test runs.
SCENARIO = """
version: 1
name: report-cli
clock: {start: "2026-03-01T12:00:30Z", mode: manual}
keys:
  - {key: pro-key, plan: pro}
  - {key: tight-key, plan: {per_minute: 1, per_day: 100}}
"""
TOKEN = "s3cret-control"


def _report(
    server: LiveServer, *args: str, token: str | None = None
) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "mockstore", "report", "--url", server.url, *args]
    if token is not None:
        command += ["--control-token", token]
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


@pytest.fixture(scope="module")
def mock() -> Iterator[LiveServer]:
    with mock_server(SCENARIO) as running:
        yield running


@pytest.fixture
def warned(mock: LiveServer) -> LiveServer:
    """A session whose worst finding is a warning (a deprecated call)."""
    assert httpx.post(mock.url + "/__mockstore/reset", headers=TOOL).status_code == 200
    assert httpx.delete(mock.url + "/__mockstore/requests").status_code == 204
    with mock.client(headers=auth("pro")) as http:
        assert_conforms(http.get("/v1/pets", params={"limit": 2}))
        assert_conforms(http.get("/v1/pets/1"))
    return mock


@pytest.fixture
def erred(warned: LiveServer) -> LiveServer:
    """...plus an error: a retry right after a 429 (Retry-After ignored)."""
    with warned.client(headers=auth("tight-key")) as http:
        codes = [http.get("/v1/pets").status_code for _ in range(3)]
    assert codes[1:] == [429, 429]
    return warned


@pytest.mark.parametrize(
    ("fail_on", "code"), [("error", 0), ("warning", 1), ("info", 1), ("never", 0)]
)
def test_fail_on_a_warning(warned: LiveServer, fail_on: str, code: int) -> None:
    result = _report(warned, "--format", "json", "--fail-on", fail_on)
    assert result.returncode == code, result.stderr
    report = json.loads(result.stdout)
    assert [f["id"] for f in report["findings"]] == ["ETQ004"]
    if code:
        assert "1 finding(s) at or above" in result.stderr and "ETQ004" in result.stderr


def test_an_error_fails_by_default(erred: LiveServer) -> None:
    result = _report(erred)
    assert result.returncode == 1
    assert "ETQ001" in result.stderr
    assert _report(erred, "--fail-on", "never").returncode == 0


def test_json_is_the_served_report(warned: LiveServer) -> None:
    served = httpx.get(warned.url + "/__mockstore/report").json()
    printed = json.loads(_report(warned, "--format", "json").stdout)
    assert printed == served
    assert printed["summary"]["scenario"] == "report-cli"
    assert printed["summary"]["requests"] == 2


def test_text_names_findings_evidence_and_coverage_gaps(erred: LiveServer) -> None:
    result = _report(erred, "--format", "text", "--fail-on", "never")
    text = result.stdout
    assert "mockstore report: scenario 'report-cli', 5 request(s)" in text
    assert "Etiquette: 1 error(s), 1 warning(s), 0 info" in text
    assert f"ERROR   ETQ001 retry-after-ignored [{mask('tight-key')}]" in text
    assert "WARNING ETQ004 deprecated-operation [getPet]" in text
    assert "evidence: #" in text
    assert "passed: ETQ002, ETQ003, ETQ005, ETQ006, ETQ007" in text
    assert "getPet     200:never" in text and "404:1" in text  # this scenario has no pets
    assert "never met: " in text and "createPet 429" in text


def test_junit_has_a_failing_case_per_finding_and_a_passing_case_per_quiet_rule(
    erred: LiveServer, tmp_path: Path
) -> None:
    out = tmp_path / "etiquette.xml"
    result = _report(erred, "--format", "junit", "--output", str(out))
    assert result.returncode == 1
    assert result.stdout == ""
    root = ET.parse(out).getroot()
    served = httpx.get(erred.url + "/__mockstore/report").json()
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    etiquette = suites["mockstore.etiquette"]
    failing = [c for c in etiquette.iter("testcase") if c.find("failure") is not None]
    passing = [c for c in etiquette.iter("testcase") if c.find("failure") is None]
    assert len(failing) == len(served["findings"]) == int(etiquette.get("failures", "-1"))
    assert [c.get("classname") for c in failing] == [
        f"mockstore.etiquette.{f['id']}" for f in served["findings"]
    ]
    assert {c.get("classname").rsplit(".", 1)[1] for c in passing} == set(
        served["summary"]["rules_passed"]
    )
    first = failing[0].find("failure")
    assert first is not None and first.get("type") == "error"
    assert "evidence (" in (first.text or "") and "req-" in (first.text or "")
    coverage = suites["mockstore.coverage"]
    skipped = [c for c in coverage.iter("testcase") if c.find("skipped") is not None]
    assert sorted(c.get("name") for c in skipped) == sorted(served["coverage"]["never_met"])
    assert int(root.get("tests", "0")) == sum(int(s.get("tests", "0")) for s in suites.values())


def test_unreachable_server_is_exit_2(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "mockstore", "report", "--url", "http://127.0.0.1:9"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "unreachable: cannot reach mockstore at http://127.0.0.1:9" in result.stderr


def test_the_control_token_is_sent() -> None:
    with mock_server(control_token=TOKEN) as server:
        refused = _report(server)
        assert refused.returncode == 2
        assert "401 unauthorized: the control API needs its token (pass --control-token)" in (
            refused.stderr
        )
        accepted = _report(server, "--format", "json", token=TOKEN)
        assert accepted.returncode == 0, accepted.stderr
        assert json.loads(accepted.stdout)["findings"] == []


def test_the_api_base_the_banner_prints_is_forgiven(warned: LiveServer) -> None:
    """The banner prints ``…/v1``; a user pastes it: the report is fetched, and said so."""
    result = _report_at(warned.api, "--format", "json", "--fail-on", "never")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["summary"]["requests"] == 2
    assert (
        f"{warned.api} is not a mockstore server root; using {warned.url} "
        f"(its control API answers at {warned.url}/__mockstore)"
    ) in result.stderr
    # Finding the root asked nothing of the API: the journal holds the session alone.
    assert json.loads(result.stdout)["summary"]["requests"] == 2


def test_the_api_base_of_a_server_with_a_token(tmp_path: Path) -> None:
    with mock_server(control_token=TOKEN) as server:
        refused = _report_at(server.api)
        assert refused.returncode == 2
        assert "(pass --control-token)" in refused.stderr
        accepted = _report_at(server.api, "--control-token", TOKEN)
        assert accepted.returncode == 0, accepted.stderr


def _report_at(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "mockstore", "report", "--url", url, *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60)
