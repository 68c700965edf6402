"""The Go recipe (``examples/go/``), run as a Go team runs it: ``go vet``, then ``go test``.

Against ``mockstore serve`` on a free port (``MOCKSTORE_URL``), with the standard
library only (no module to download). Skipped without ``go`` unless
``MOCKSTORE_REQUIRE_GO=1`` (as in CI, which installs Debian's golang-go).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.support import live_server

# A long run, in .ci/run's slow step (same MOCKSTORE_REQUIRE_* settings):
# another language's toolchain (go build).
pytestmark = pytest.mark.slow

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
RECIPE = EXAMPLES / "go"
# What a team's CI runs (examples/github-actions-other-languages.yml too).
VET = "go vet ./..."
TEST = "go test -v -count=1 ./..."


def _go() -> str:
    go = shutil.which("go")
    if go is None:
        if os.environ.get("MOCKSTORE_REQUIRE_GO"):
            pytest.fail("go is required (MOCKSTORE_REQUIRE_GO=1)")
        pytest.skip("go is not installed")
    return go


def test_the_go_recipe_passes_against_mockstore_serve(tmp_path: Path) -> None:
    go = _go()
    project = tmp_path / "go"
    shutil.copytree(RECIPE, project)
    reports = tmp_path / "reports"
    env = {
        **os.environ,
        "GOFLAGS": "-mod=mod",
        "GOPROXY": "off",  # the standard library only: nothing to fetch
        "GOCACHE": str(tmp_path / "cache"),
        "MOCKSTORE_REPORT_DIR": str(reports),
    }
    vetted = subprocess.run(
        [go, *VET.split()[1:]], cwd=project, env=env, capture_output=True, text=True, timeout=600
    )
    assert vetted.returncode == 0, vetted.stdout + vetted.stderr
    with live_server() as server:
        env["MOCKSTORE_URL"] = server.url
        done = subprocess.run(
            [go, *TEST.split()[1:]],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    assert "--- PASS: TestAKeyOfThreeAMinuteWaitsForTheClock" in output, output
    assert "--- PASS: TestTheControlAPIRefusesWithErrorBodies" in output, output
    assert "--- FAIL" not in output
    report = json.loads((reports / "mockstore-report.json").read_text())
    assert report["summary"]["requests"] >= 5
    assert (reports / "mockstore-report.html").read_text().startswith("<!DOCTYPE html>")


def test_the_ci_workflow_runs_the_recipe_as_this_test_does() -> None:
    workflow = yaml.safe_load((EXAMPLES / "github-actions-other-languages.yml").read_text())
    job = workflow["jobs"]["go"]
    assert job["defaults"]["run"]["working-directory"] == "examples/go"
    assert [step["run"] for step in job["steps"] if "run" in step] == [VET, TEST]
    assert job["env"]["MOCKSTORE_URL"] == "http://localhost:8080"
    assert "/__mockstore/health" in job["services"]["mockstore"]["options"]
