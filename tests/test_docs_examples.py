"""The docs' examples run as written: the files they name exist, the walk-throughs pass.

``examples/control_walkthrough.py`` (the Python control clients' walk-through, included
in "Python test suites") runs against a fresh server; every shell line of the docs
that loads a scenario file with ``curl --data-binary @FILE`` names a file of this
checkout and loads it with a real ``curl``; a file that is missing is explained.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pytest

from tests.docs_pages import ROOT, pages
from tests.support import LiveServer

CURL = shutil.which("curl")
# A curl line that loads a scenario from a file, in a page or a recipe of examples/.
_LOADS = re.compile(r"curl -fsS -X PUT --data-binary @(\S+)\s+(?:\\\s*)?(\S+/__mockstore/scenario)")


def _loading_lines() -> list[tuple[str, str]]:
    found = []
    texts = [(f"docs/{name}", text) for name, text in pages().items()]
    texts += [(str(p.relative_to(ROOT)), p.read_text()) for p in (ROOT / "examples").glob("*.yml")]
    for where, text in texts:
        for match in _LOADS.finditer(text):
            found.append((where, match.group(1)))
    return found


def test_the_control_walkthrough_runs_as_written(fresh_server: LiveServer) -> None:
    script = ROOT / "examples" / "control_walkthrough.py"
    for _ in range(2):  # a second time on the same server too (a test suite's next test)
        done = subprocess.run(
            [sys.executable, str(script), fresh_server.url],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stdout + done.stderr


def test_every_scenario_file_the_docs_load_exists_and_loads(fresh_server: LiveServer) -> None:
    lines = _loading_lines()
    assert len(lines) >= 3, lines  # docs/control-api.md, docs/ci.md, the GitHub recipe
    assert CURL is not None, "curl is what the docs run"
    for where, name in lines:
        assert (ROOT / name).is_file(), f"{where} loads {name}, which this checkout has not"
        done = subprocess.run(
            [CURL, "-fsS", "-X", "PUT", "--data-binary", f"@{name}",
             fresh_server.url + "/__mockstore/scenario"],
            capture_output=True, text=True, timeout=60, cwd=ROOT,
        )  # fmt: skip
        assert done.returncode == 0, f"{where}: {done.stderr}"


@pytest.mark.skipif(CURL is None, reason="needs curl")
def test_a_missing_file_sent_with_curl_is_explained(fresh_server: LiveServer) -> None:
    done = subprocess.run(
        [CURL, "-sS", "-X", "PUT", "--data-binary", "@tests/scenarios/missing.yaml",
         fresh_server.url + "/__mockstore/scenario"],
        capture_output=True, text=True, timeout=60, cwd=ROOT,
    )  # fmt: skip
    assert '"code":"invalid_scenario"' in done.stdout
    assert "the body is empty" in done.stdout and "does not exist" in done.stdout


TOOL_CACHES = (".schemathesis", ".hypothesis", ".pytest_cache", ".ruff_cache", ".mypy_cache")


def test_tool_caches_are_ignored_not_committed() -> None:
    # A run of schemathesis, Hypothesis, pytest or ruff in the checkout writes its cache
    # there: none is part of the project, and none shows as a change to commit.
    tracked = subprocess.run(
        ["git", "ls-files", *TOOL_CACHES], capture_output=True, text=True, cwd=ROOT, check=True
    ).stdout.split()
    assert tracked == [], tracked
    for cache in TOOL_CACHES:
        probe = f"{cache}/some/file"
        ignored = subprocess.run(
            ["git", "check-ignore", "--no-index", "-q", probe], cwd=ROOT, check=False
        )
        assert ignored.returncode == 0, f"{cache}/ is not ignored"
