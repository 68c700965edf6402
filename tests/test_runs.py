"""Runs: a report judges each stretch of one scenario's time on its own.

A run begins at every reset, scenario load, tenant creation and backwards
clock move; every etiquette rule judges within a run, so a suite of correct
tests that each reset the mock is never accused of the time the resets moved.
Users' suites run as they would: a separate pytest process with the plugin,
against one shared server, judged by ``mockstore report`` as a subprocess.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from mockstore import Control
from tests.support import TOOL, LiveServer, auth, mock_server

pytest_plugins = ["pytester"]

# The README's correct test: meet the 429, advance the clock as Retry-After says, retry.
CORRECT_TEST = """
@pytest.mark.mockstore_scenario("free-tier-exhaustion")
def test_waits_as_told_{n}(mockstore):
    headers = {{"Authorization": "Bearer free-key"}}
    for _ in range(2):
        assert httpx.get(mockstore.url + "/pets", headers=headers).status_code == 200
    limited = httpx.get(mockstore.url + "/pets", headers=headers)
    assert limited.status_code == 429 and limited.headers["retry-after"] == "30"
    mockstore.advance(30)
    assert httpx.get(mockstore.url + "/pets", headers=headers).status_code == 200
"""


def _report(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "mockstore", "report", "--url", url, *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


def _suite(pytester: pytest.Pytester, copies: int) -> None:
    body = "\n".join(CORRECT_TEST.format(n=n) for n in range(copies))
    pytester.makepyfile(test_user="import httpx\nimport pytest\n" + body)


def test_five_correct_tests_on_one_shared_server_are_not_accused(
    pytester: pytest.Pytester,
) -> None:
    with mock_server() as shared:
        _suite(pytester, 5)
        result = pytester.runpytest_subprocess("--mockstore-url", shared.url)
        result.assert_outcomes(passed=5)
        judged = _report(shared.url)
        assert judged.returncode == 0, judged.stdout + judged.stderr
        assert "retry-after-ignored" not in judged.stdout
        with Control(shared.url) as control:
            report = control.report().raw
    summary = report["summary"]
    assert summary["requests"] == 20, "every test's requests were judged"
    assert report["findings"] == []
    # Each test reset (and loaded) the mock: at least one run per test.
    assert summary["runs"]["count"] >= 5


def test_an_early_retry_is_still_caught_within_its_run(pytester: pytest.Pytester) -> None:
    with mock_server() as shared:
        _suite(pytester, 2)
        pytester.makepyfile(
            test_rude="""
import httpx
import pytest


@pytest.mark.mockstore_scenario("free-tier-exhaustion")
def test_retries_at_once(mockstore):
    headers = {"Authorization": "Bearer free-key"}
    codes = [httpx.get(mockstore.url + "/pets", headers=headers).status_code for _ in range(4)]
    assert codes == [200, 200, 429, 429]
"""
        )
        result = pytester.runpytest_subprocess("--mockstore-url", shared.url)
        result.assert_outcomes(passed=3)
        judged = _report(shared.url)
    assert judged.returncode == 1
    assert "ETQ001" in judged.stdout
    # The retry is measured against its own 429, in its own run: 0 s after it, 30 s early.
    assert "30.000 s too early" in judged.stdout


def test_each_entry_carries_its_run_and_both_clocks(fresh_server: LiveServer) -> None:
    with fresh_server.client(headers=TOOL) as http:
        http.get("/v1/pets", headers=auth("pro"))
        first = http.get("/__mockstore/requests").json()["entries"][-1]
        assert http.post("/__mockstore/reset").status_code == 200
        http.get("/v1/pets", headers=auth("pro"))
        second = http.get("/__mockstore/requests").json()["entries"][-1]
    assert second["run"] > first["run"]
    for entry in (first, second):
        assert isinstance(entry["time"], float) and isinstance(entry["wall"], float)


def test_a_report_of_one_run_says_which(fresh_server: LiveServer) -> None:
    with fresh_server.client(headers=TOOL) as http:
        http.get("/v1/pets", headers=auth("pro"))
        run = http.post("/__mockstore/reset").json()["run"]
        http.get("/v1/pets", headers=auth("pro"))
        http.get("/v1/pets", headers=auth("pro"))
        every = http.get("/__mockstore/report").json()["summary"]
        one = http.get("/__mockstore/report", params={"run": run}).json()["summary"]
        latest = http.get("/__mockstore/report", params={"run": "current"}).json()["summary"]
        unknown = http.get("/__mockstore/report", params={"run": "soon"})
    assert every["requests"] == 3 and every["runs"]["selected"] == "all"
    assert one["requests"] == 2 and one["runs"]["selected"] == run
    assert latest["runs"]["selected"] == run and latest["requests"] == 2
    assert unknown.status_code == 400
    assert "run" in unknown.json()["message"]


def test_a_report_after_an_xdist_run_covers_every_workers_traffic(
    pytester: pytest.Pytester,
) -> None:
    with mock_server() as shared:
        _suite(pytester, 6)
        result = pytester.runpytest_subprocess(
            "-p", "xdist", "-n", "2", "--mockstore-url", shared.url
        )
        result.assert_outcomes(passed=6)
        with Control(shared.url) as control:
            assert control.tenants() == [], "the workers' tenants are gone"
            report = control.report().raw
        judged = _report(shared.url)
    assert report["summary"]["requests"] == 24, "each worker's journal was kept for the report"
    assert report["findings"] == []
    assert judged.returncode == 0, judged.stdout + judged.stderr
    assert "24 request(s)" in judged.stdout
