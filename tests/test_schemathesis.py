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

from tests.support import mock_server

HERE = Path(__file__).resolve().parent / "schemathesis"
# `--checks all` includes max_response_time, 10 s by default: a verdict on how loaded
# the machine is. A limit above the run's own timeout can never be met first. (The
# control document's run needs it: validating a generated 10,000-key scenario took
# 16 s on a loaded machine.)
NO_TIME_LIMIT = ("--max-response-time", "1000")


def test_schemathesis_finds_nothing_with_every_check(tmp_path: Path) -> None:
    with mock_server(str(HERE / "scenario.yaml")) as server:
        command = [
            *(sys.executable, "-m", "schemathesis.cli"),
            *("--config-file", str(HERE / "schemathesis.toml")),
            *("run", server.url + "/__mockstore/openapi.json"),
            *("--checks", "all", "--mode", "all"),
            *("--header", "Authorization: Bearer st-key"),
            *("--max-examples", "60", "--seed", "20261123"),
            *("--generation-database", "none", "--workers", "1", "--no-color"),
        ]
        done = subprocess.run(
            command, cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False
        )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    assert "No issues found" in output, output[-6000:]
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
            # Any answer within a minute, on a loaded machine; loadScenario is given
            # longer in control.toml (building the largest scenarios takes a while).
            *("--request-timeout", "60"),
            *NO_TIME_LIMIT,
            *("--max-examples", "20", "--seed", "20261123"),
            *("--generation-database", "none", "--workers", "1", "--no-color"),
        ]
        done = subprocess.run(
            command, cwd=tmp_path, capture_output=True, text=True, timeout=1800, check=False
        )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    assert "No issues found" in output or " passed" in output, output[-6000:]
    assert re.search(r"Failures:|Errors:", output) is None, output[-6000:]
    selected = re.search(r"(\d+) selected / (\d+) total", output)
    assert selected is not None, output[-3000:]
    assert int(selected.group(1)) == int(selected.group(2)) - 1  # all but dashboardEvents
    assert "Stateful" in output
