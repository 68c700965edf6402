"""The Collections page's examples run: its scenario loads, its client suite passes.

``examples/scenarios/collections.yaml`` and ``examples/collections/`` are included
by ``docs/collections.md``; the suite runs here as a user runs it (pytest with the
plugin, in a fresh process).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from mockstore.scenario import load_scenario
from tests.docs_pages import included

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def test_the_page_includes_the_scenario_and_the_suite() -> None:
    shown = included()
    assert "collections.md" in shown["examples/scenarios/collections.yaml"]
    assert "collections.md" in shown["examples/collections/test_collections_example.py"]
    scenario = load_scenario((EXAMPLES / "scenarios" / "collections.yaml").read_text())
    assert scenario.collections.pagination.style == "cursor"


def test_the_suite_passes(tmp_path: Path) -> None:
    target = tmp_path / "examples"
    shutil.copytree(EXAMPLES / "collections", target / "collections")
    shutil.copytree(EXAMPLES / "scenarios", target / "scenarios")
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("MOCKSTORE_", "PYTEST_XDIST_", "PYTEST_ADDOPTS"))
    }
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
               "-p", "no:schemathesis", "collections"]  # fmt: skip
    done = subprocess.run(command, cwd=target, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "6 passed" in done.stdout
