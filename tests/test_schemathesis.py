"""schemathesis, with every check, against the OpenAPI document the server serves.

Positive and negative data, the coverage and fuzzing phases, and the stateful
phase (createPet's link to getPet): the document is the truth both ways, so
whatever it allows the server accepts, whatever it forbids the server refuses
with a documented status and an Error body, and no input gets a 5xx. The seed
is fixed, so a failure reproduces run after run; ``st replay`` shows it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support import mock_server

HERE = Path(__file__).resolve().parent / "schemathesis"


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
