"""The README is part of the product: its tables must match the code they describe."""

from __future__ import annotations

import re
from pathlib import Path

from mockstore.errors import ERROR_CODES
from mockstore.scenario import bundled_names

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_error_code_table_matches_the_codes_the_server_emits():
    rows = re.findall(r"^\| (\d{3}) \| `([a-z_]+)` \| (.+?) \|$", README, re.MULTILINE)
    documented = {code: (int(status), when) for status, code, when in rows}
    expected = {e.code: (e.status, e.when) for e in ERROR_CODES.values()}
    assert documented == expected


def test_every_bundled_scenario_is_documented():
    for name in bundled_names():
        assert f"`{name}`" in README, f"bundled scenario {name!r} is not in the README"


def test_ci_runs_the_readme_test_command():
    command = re.search(r"pip install -e '\.\[test\]' && (python -m pytest[^\n`]*)", README)
    assert command, "the README shows no test command"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert command.group(1) in ci


def test_assumptions_section_lists_one_choice_per_line():
    section = README.split("## Assumptions", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("- ")]
    assert len(lines) >= 10


def test_the_ci_recipes_in_the_readme_are_the_tested_example_files():
    # tests/test_dockerfile.py runs these files against the image; the README must
    # show exactly them, so a copied recipe is a tested one.
    for name in (
        "github-actions.yml",
        "gitlab-ci.yml",
        "docker-compose.yml",
        "testcontainers_conftest.py",
    ):
        text = (ROOT / "examples" / name).read_text(encoding="utf-8").rstrip("\n")
        assert text in README, f"examples/{name} differs from the README's copy"
