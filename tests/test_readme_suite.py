"""The user test suite the docs show, run as a user runs it.

``examples/user_suite/`` holds the examples of the docs' "Python test suites" page as
files, which the page includes (a test checks it includes each, rather than a copy):
the pytest plugin, ``MockServer`` in a unittest test, ``AsyncControl`` in process. They
must pass with plain ``pytest``, with ``python -m unittest``, and under pytest-xdist on
ONE shared server.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mockstore import Control
from tests.docs_pages import included
from tests.support import mock_server

ROOT = Path(__file__).resolve().parent.parent
SUITE = ROOT / "examples" / "user_suite"
FILES = sorted(p.name for p in SUITE.glob("test_*.py"))


def _env() -> dict[str, str]:
    # A user's shell: no MOCKSTORE_* variables, no xdist variables of an outer run.
    return {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("MOCKSTORE_", "PYTEST_XDIST_", "PYTEST_ADDOPTS"))
    }


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    target = tmp_path / "suite"
    shutil.copytree(SUITE, target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


def _pytest(suite: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # Without the schemathesis plugin this suite's environment has and the user's suite
    # does not use: it costs over a second of CPU in every pytest process (5 under -n 4).
    options = ["-p", "no:cacheprovider", "-p", "no:schemathesis"]
    command = [sys.executable, "-m", "pytest", "-q", *options, *args]
    return subprocess.run(
        command, cwd=suite, env=_env(), capture_output=True, text=True, timeout=300
    )


@pytest.mark.parametrize("name", FILES)
def test_the_docs_include_each_file_of_the_suite(name: str) -> None:
    pages = included().get(f"examples/user_suite/{name}", [])
    assert "testing.md" in pages, f"docs/testing.md does not include examples/user_suite/{name}"


def test_the_suite_passes_with_pytest(suite: Path) -> None:
    result = _pytest(suite)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "5 passed" in result.stdout


def test_the_unittest_file_passes_with_unittest(suite: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "unittest", "-v", "test_with_unittest"],
        cwd=suite,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "Ran 2 tests" in result.stderr and "OK" in result.stderr


@pytest.mark.slow  # seconds of CPU for one test (.ci/run's slow step)
def test_the_suite_passes_under_xdist_on_one_shared_server(suite: Path) -> None:
    with mock_server() as shared:
        result = _pytest(suite, "-p", "xdist", "-n", "4", "--mockstore-url", shared.url)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "5 passed" in result.stdout
        with Control(shared.url) as root:
            assert root.tenants() == []
            assert root.requests() == [], "the workers worked in tenants of their own"
