"""schemathesis, with every check, against the OpenAPI document the server serves.

Positive and negative data, the coverage and fuzzing phases, and the stateful
phase (createPet's link to getPet): the document is the truth both ways, so
whatever it allows the server accepts, whatever it forbids the server refuses
with a documented status and an Error body, and no input gets a 5xx. The seed
is fixed, so a failure reproduces run after run; ``st replay`` shows it.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import mock_server

# A long run, in .ci/run's slow step (same MOCKSTORE_REQUIRE_* settings):
# a fuzzer, minutes of CPU.
pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent / "schemathesis"
# No verdict on how loaded the machine is. An answer may take up to 5 minutes
# (schemathesis's default, 10 s, makes a slower one an error; the control
# document's loadScenario gets longer still in control.toml: validating a generated
# 10,000-key scenario took 16 s on a loaded machine).
REQUEST_TIMEOUT = ("--request-timeout", "300")
# The response-time check (on with a limit, or by default in some schemathesis
# versions: 10 s) gets a limit above every request timeout, so it is never met
# first; under 1000 s, which schemathesis would take for milliseconds and warn
# about, turning the closing line into "1 warning" in place of "No issues found".
NO_TIME_LIMIT = ("--max-response-time", "999")
# The closing line of a run in which every check held on every case.
NO_ISSUES = re.compile(r"^=+ No issues found in [^=]+ =+$", re.M)


def test_schemathesis_finds_nothing_with_every_check(tmp_path: Path) -> None:
    with mock_server(str(HERE / "scenario.yaml")) as server:
        command = [
            *(sys.executable, "-m", "schemathesis.cli"),
            *("--config-file", str(HERE / "schemathesis.toml")),
            *("run", server.url + "/__mockstore/openapi.json"),
            *("--checks", "all", "--mode", "all"),
            *("--header", "Authorization: Bearer st-key"),
            *REQUEST_TIMEOUT,
            *NO_TIME_LIMIT,
            *("--max-examples", "60", "--seed", "20261123"),
            *("--generation-database", "none", "--workers", "1", "--no-color"),
        ]
        done = subprocess.run(
            command, cwd=tmp_path, capture_output=True, text=True, timeout=1800, check=False
        )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    assert NO_ISSUES.search(output), output[-6000:]
    assert re.search(r"Failures:|Errors:|Warnings:", output) is None, output[-6000:]
    # Every operation was exercised, and the stateful phase followed the links.
    assert "4 selected / 4 total" in output
    assert "Stateful" in output


def test_schemathesis_finds_nothing_against_the_control_document(tmp_path: Path) -> None:
    # The control API against its own document (/__mockstore/control.openapi.json):
    # every check, both modes, every phase, the stateful one following the links
    # schemathesis infers (issueKey's key to revokeKey, createTenant's id to
    # deleteTenant...). Its allowances are in control.toml, each with its reason.
    # dashboardEvents is left out: its answer is a stream that lasts as long as the
    # client listens (tests/test_dashboard_server.py reads it).
    with mock_server(str(HERE / "scenario.yaml")) as server:
        command = [
            *(sys.executable, "-m", "schemathesis.cli"),
            *("--config-file", str(HERE / "control.toml")),
            *("run", server.control_url + "/control.openapi.json"),
            *("--checks", "all", "--mode", "all"),
            *("--header", "X-Mockstore-Client: schemathesis"),
            *("--exclude-operation-id", "dashboardEvents"),
            *REQUEST_TIMEOUT,
            *NO_TIME_LIMIT,
            *("--max-examples", "20", "--seed", "20261123"),
            *("--generation-database", "none", "--workers", "1", "--no-color"),
        ]
        done = subprocess.run(
            command, cwd=tmp_path, capture_output=True, text=True, timeout=1800, check=False
        )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    # Its warnings (test data it cannot make up, a pattern it cannot use) are no issue.
    assert "No issues found" in output or " passed" in output, output[-6000:]
    assert re.search(r"Failures:|Errors:", output) is None, output[-6000:]
    selected = re.search(r"(\d+) selected / (\d+) total", output)
    assert selected is not None, output[-3000:]
    assert int(selected.group(1)) == int(selected.group(2)) - 1  # all but dashboardEvents
    assert "Stateful" in output
