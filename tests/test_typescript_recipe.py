"""The TypeScript recipe (``examples/typescript/``), run as a TypeScript team runs it.

In a copy of the project: ``npm ci`` from its lock file, types generated from the two
documents a running ``mockstore serve`` serves (the control API's and the Pet Store's)
with openapi-typescript, ``tsc --strict`` over the suite and the generated types, then
node's own test runner: the client team's session through openapi-fetch, and the smoke
test that parses every answer under every bundled scenario against the served document.
Skipped without node and npm unless ``MOCKSTORE_REQUIRE_NODE=1`` (as in CI).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.support import live_server

# A long run, in .ci/run's slow step (same MOCKSTORE_REQUIRE_* settings):
# another language's toolchain (npm ci, tsc).
pytestmark = pytest.mark.slow

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
RECIPE = EXAMPLES / "typescript"
# What a team's CI runs, in order (examples/github-actions-other-languages.yml too).
COMMANDS = ("npm ci", "npm run generate", "npm run typecheck", "npm run build", "npm test")
COPIED = ("package.json", "package-lock.json", "tsconfig.json", "scripts", "src")


def _toolchain() -> tuple[str, str]:
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        if os.environ.get("MOCKSTORE_REQUIRE_NODE"):
            pytest.fail("node and npm are required (MOCKSTORE_REQUIRE_NODE=1)")
        pytest.skip("node and npm are not installed")
    return node, npm


def _run(command: list[str], cwd: Path, env: dict[str, str], timeout: float) -> str:
    done = subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{' '.join(command)} failed:\n{output[-8000:]}"
    return output


def test_the_typescript_recipe_passes_against_mockstore_serve(tmp_path: Path) -> None:
    _, npm = _toolchain()
    project = tmp_path / "typescript"
    project.mkdir()
    for name in COPIED:
        source = RECIPE / name
        if source.is_dir():
            shutil.copytree(source, project / name, ignore=shutil.ignore_patterns("generated"))
        else:
            shutil.copy(source, project / name)
    env = {**os.environ, "npm_config_update_notifier": "false", "npm_config_fund": "false"}
    install, *steps = (command.split() for command in COMMANDS)
    _run([npm, *install[1:], "--no-audit"], project, env, timeout=600)
    outputs = []
    with live_server() as server:
        env["MOCKSTORE_URL"] = server.url
        # generate: types from the running server's documents; typecheck: tsc --strict
        # (tsconfig.json) over the suite and both generated clients; then build, test.
        for command in steps:
            outputs.append(_run([npm, *command[1:]], project, env, timeout=600))
    assert "src/generated/control.ts" in outputs[0]
    output = outputs[-1]
    assert re.search(r"^\S fail 0$", output, re.MULTILINE), output[-6000:]
    passed = re.search(r"^\S pass (\d+)$", output, re.MULTILINE)
    assert passed is not None and int(passed.group(1)) >= 6, output[-6000:]
    # Every bundled scenario's smoke test ran.
    assert output.count("every answer under the bundled scenario") >= 10
    # What each generated client covered: every operation of both documents.
    control = re.search(r"control operations called: (\d+)/(\d+)", output)
    api = re.search(r"api operations called: (\d+)/(\d+)", output)
    assert control is not None and api is not None, output[-6000:]
    assert control.group(1) == control.group(2), control.group(0)
    assert api.group(1) == api.group(2), api.group(0)
    # The report, kept for CI to upload as an artifact.
    report = json.loads((project / "reports" / "mockstore-report.json").read_text())
    assert report["summary"]["requests"] >= 5
    assert (project / "reports" / "mockstore-report.html").read_text().startswith("<!DOCTYPE html>")
    kept = os.environ.get("MOCKSTORE_KEEP_REPORTS")
    if kept:
        shutil.copytree(project / "reports", Path(kept) / "typescript", dirs_exist_ok=True)


def test_the_ci_workflow_runs_the_recipe_as_this_test_does() -> None:
    workflow = yaml.safe_load((EXAMPLES / "github-actions-other-languages.yml").read_text())
    job = workflow["jobs"]["typescript"]
    assert job["defaults"]["run"]["working-directory"] == "examples/typescript"
    assert tuple(step["run"] for step in job["steps"] if "run" in step) == COMMANDS
    assert job["env"]["MOCKSTORE_URL"] == "http://localhost:8080"
    assert "/__mockstore/health" in job["services"]["mockstore"]["options"]
    [upload] = [s for s in job["steps"] if s.get("uses", "").startswith("actions/upload-artifact")]
    assert upload["with"]["path"] == "examples/typescript/reports/"
