"""Runs: a report judges each stretch of one scenario's time on its own.

A run begins at every reset, scenario load, tenant creation and backwards
clock move; every etiquette rule judges within a run, so a suite of correct
tests that each reset the mock is never accused of the time the resets moved.
Users' suites run as they would: a separate pytest process with the plugin,
against one shared server, judged by ``mockstore report`` as a subprocess.
"""

from __future__ import annotations

import json
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


@pytest.mark.slow  # seconds of CPU for one test (.ci/run's slow step)
def test_a_report_after_an_xdist_run_covers_every_workers_traffic(
    pytester: pytest.Pytester,
) -> None:
    with mock_server() as shared:
        _suite(pytester, 4)
        result = pytester.runpytest_subprocess(
            "-p", "xdist", "-n", "2", "--mockstore-url", shared.url
        )
        result.assert_outcomes(passed=4)
        with Control(shared.url) as control:
            assert control.tenants() == [], "the workers' tenants are gone"
            report = control.report().raw
        judged = _report(shared.url)
    assert report["summary"]["requests"] == 16, "each worker's journal was kept for the report"
    assert report["findings"] == []
    assert judged.returncode == 0, judged.stdout + judged.stderr
    assert "16 request(s)" in judged.stdout


def test_a_deleted_tenants_journal_is_kept_for_reports_and_readable(
    fresh_server: LiveServer,
) -> None:
    with fresh_server.client(headers=TOOL) as http:
        made = http.post("/__mockstore/tenants", json={"id": "gw7"}).json()
        first = http.get("/__mockstore/health").json()["run"]
        tenant_run = http.get(made["path"] + "/__mockstore/health").json()["run"]
        assert tenant_run > first, "a tenant begins a run of its own"
        http.get(made["path"] + "/v1/pets/1", headers=auth("pro"))  # ETQ004 in the tenant
        assert http.delete(made["path"]).status_code == 204
        report = http.get("/__mockstore/report").json()
        alone = http.get("/__mockstore/report", params={"tenants": "none"}).json()
        kept = http.get("/__mockstore/requests", params={"tenant": "gw7"}).json()["entries"]
        evidence = http.get(f"/__mockstore/requests/{kept[0]['seq']}", params={"tenant": "gw7"})
        unknown = http.get("/__mockstore/requests", params={"tenant": "gw8"})
        assert http.delete("/__mockstore/requests").status_code == 204
        forgotten = http.get("/__mockstore/requests", params={"tenant": "gw7"})
    (finding,) = report["findings"]
    assert finding["id"] == "ETQ004" and finding["tenant"] == "gw7"
    assert finding["subject"] == "getPet in tenant gw7"
    assert report["summary"]["journals"] == [
        {"tenant": None, "deleted": False, "requests": 0, "first_seq": None, "last_seq": None},
        {"tenant": "gw7", "deleted": True, "requests": 1, "first_seq": 1, "last_seq": 1},
    ]
    assert alone["findings"] == [] and "journals" not in alone["summary"]
    assert [e["request"]["path"] for e in kept] == ["/v1/pets/1"]
    assert evidence.status_code == 200 and evidence.json()["run"] == tenant_run
    assert unknown.status_code == 404
    assert forgotten.status_code == 404, "clearing the journal forgets the kept ones too"


def test_a_report_header_counts_what_it_judged_in_each_journal(
    fresh_server: LiveServer,
) -> None:
    # The server's own request, then two workers' tenants of 2 and 3 (one deleted, as an
    # xdist worker's is): each journal numbers its own entries from 1.
    with fresh_server.client(headers=TOOL) as http:
        http.get("/v1/pets", headers=auth("pro"))
        for tenant, count in (("gw0", 2), ("gw1", 3)):
            path = http.post("/__mockstore/tenants", json={"id": tenant}).json()["path"]
            for _ in range(count):
                http.get(path + "/v1/pets", headers=auth("pro"))
        assert http.delete("/__mockstore/tenants/gw1").status_code == 204
        report = http.get("/__mockstore/report").json()
    judged = _report(fresh_server.url)
    summary = report["summary"]
    assert summary["requests"] == 6
    # The sequence numbers a report names are the server's own journal's (what --since means).
    assert (summary["first_seq"], summary["last_seq"]) == (1, 1)
    journals = {
        j["tenant"]: (j["requests"], j["first_seq"], j["last_seq"]) for j in summary["journals"]
    }
    assert journals == {None: (1, 1, 1), "gw0": (2, 1, 2), "gw1": (3, 1, 3)}
    header = judged.stdout.splitlines()
    assert header[0] == "mockstore report: scenario 'default', 6 request(s)", header
    assert "journals: this server: 1 (seq 1-1), " in judged.stdout
    assert "tenant gw0: 2 (seq 1-2)" in judged.stdout
    assert "tenant gw1 (deleted): 3 (seq 1-3)" in judged.stdout


def test_kept_journals_are_bounded_in_bytes_and_in_number() -> None:
    from mockstore.journal import Entry, Journal
    from mockstore.kept_journals import KeptJournals

    def journal(entries: int) -> Journal:
        kept = Journal(100, 4096)
        for seq in range(1, entries + 1):
            kept.append(
                Entry(
                    seq,
                    f"req-{seq}",
                    0.0,
                    0.0,
                    "GET",
                    "/v1/pets",
                    b"",
                    (),
                    b"x" * 1000,
                    "c",
                    "listPets",
                    None,
                    None,
                    200,
                    (),
                    b"",
                    1.0,
                    None,
                )
            )
        return kept

    kept = KeptJournals(max_bytes=20_000, max_journals=3)
    for number in range(5):
        kept.keep(f"t{number}", journal(10))
    assert len(kept) <= 3
    assert kept.bytes <= 20_000
    assert kept.get("t4") is not None and len(kept.get("t4") or []) == 10, "the newest stays whole"
    assert kept.get("t0") is None
    kept.keep("empty", Journal(10, 10))
    assert kept.get("empty") is None, "a journal with nothing in it is not kept"


def test_mockstore_report_judges_one_run_or_all_and_says_which(fresh_server: LiveServer) -> None:
    with fresh_server.client(headers=TOOL) as http:
        http.get("/v1/pets/1", headers=auth("pro"))  # ETQ004, in the first run
        run = http.post("/__mockstore/reset").json()["run"]
        http.get("/v1/pets", headers=auth("pro"))
    every = _report(fresh_server.url)
    current = _report(fresh_server.url, "--run", "current")
    numbered = _report(fresh_server.url, "--run", str(run), "--format", "json")
    wrong = _report(fresh_server.url, "--run", "soon")
    assert "all runs (2), each judged on its own" in every.stdout
    assert "ETQ004" in every.stdout.split("passed:")[0]
    assert f"run {run} only, begun by a reset" in current.stdout
    assert "1 request(s)" in current.stdout and "deprecated-operation" not in current.stdout
    assert json.loads(numbered.stdout)["summary"]["runs"]["selected"] == run
    assert wrong.returncode == 2 and "'soon'" in wrong.stderr


def test_the_python_clients_read_runs(fresh_server: LiveServer) -> None:
    with Control(fresh_server.url) as control:
        started = control.health().run
        reset = control.reset()
        with fresh_server.client() as http:
            http.get("/v1/pets", headers=auth("pro"))
        (entry,) = control.requests(run="current")
        report = control.report(run=reset.run)
        every = control.report()
    assert reset.run > started and entry.run == reset.run and entry.wall is not None
    assert report.summary.runs is not None and report.summary.runs.selected == reset.run
    assert [r.began_with for r in report.summary.runs.latest] == ["a reset"]
    assert every.summary.runs is not None and every.summary.runs.selected == "all"
