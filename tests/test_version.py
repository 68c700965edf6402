"""The version mockstore names (``serve``'s first line, the control API, HARs) is the installed one.

``mockstore.version`` reads the distribution's ``METADATA`` itself rather than
importing ``importlib.metadata`` (a sixth of ``serve``'s start): it must say
what ``importlib.metadata`` says, and fall back to it where it cannot tell.
"""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

from mockstore import version as version_module


def test_the_version_is_the_installed_distributions() -> None:
    assert version_module.__version__ == version("mockstore")


def test_the_cli_says_the_installed_version() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "mockstore", "--version"], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == f"mockstore {version('mockstore')}"


def _dist_info(root: Path, dirname: str, metadata: str) -> None:
    (root / dirname).mkdir()
    (root / dirname / "METADATA").write_text(metadata)


def test_the_first_mockstore_dist_info_on_the_path_wins(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    _dist_info(
        first,
        "mockstore-2.3.4.dist-info",
        "Metadata-Version: 2.1\nName: mockstore\nVersion: 2.3.4\n\nBody: Version: 9\n",
    )
    _dist_info(second, "mockstore-1.0.0.dist-info", "Name: mockstore\nVersion: 1.0.0\n")
    assert version_module._from_dist_info([str(first), str(second)]) == "2.3.4"


def test_another_distribution_named_alike_is_not_taken(tmp_path: Path) -> None:
    _dist_info(tmp_path, "mockstore-plugin-9.9.dist-info", "Name: mockstore-plugin\nVersion: 9.9\n")
    _dist_info(tmp_path, "mockstore-0.5.dist-info", "Name: mockstore\nVersion: 0.5\n")
    assert version_module._from_dist_info([str(tmp_path)]) == "0.5"


def test_no_metadata_leaves_it_to_importlib_metadata(tmp_path: Path) -> None:
    (tmp_path / "mockstore-1.0.dist-info").mkdir()  # no METADATA file
    (tmp_path / "not-a-dir.zip").write_bytes(b"")
    paths = [str(tmp_path), str(tmp_path / "not-a-dir.zip"), str(tmp_path / "gone")]
    assert version_module._from_dist_info(paths) is None
