"""The documentation is part of the product: its tables must match the code they describe.

The site's pages are ``docs/`` (built by ``mkdocs build --strict`` in ``.ci/run``, which fails
on a broken link or a page left out); the README is the front page that links into them.
"""

from __future__ import annotations

import html
import importlib.util
import re
import sys
from types import ModuleType

import pytest
import yaml

from mockstore.errors import ERROR_CODES
from mockstore.memory import parse_size
from mockstore.scenario import bundled_names, read_scenario_source
from tests.docs_pages import (
    DOCS,
    EXAMPLES,
    README,
    ROOT,
    example_files,
    included,
    page,
    pages,
    section,
)

MAX_README_LINES = 200


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_generate", DOCS / "generate.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _table_cells(line: str) -> list[str]:
    cells = re.split(r"(?<!\\)\|", line.strip())[1:-1]
    return [html.unescape(c.strip().replace("\\|", "|")) for c in cells]


# --- what the reference says equals what the code does --------------------------------


def test_the_generated_reference_is_what_the_code_says() -> None:
    stale = _generator().stale()
    names = ", ".join(str(p.relative_to(ROOT)) for p in stale)
    assert not stale, f"{names}: out of date; run `python docs/generate.py`"


def test_error_code_table_matches_the_codes_the_server_emits() -> None:
    text = page("reference/error-codes.md")
    rows = re.findall(r"^\| (\d{3}) \| `([a-z_]+)` \| (.+?) \|$", text, re.MULTILINE)
    documented = {code: (int(status), html.unescape(when)) for status, code, when in rows}
    expected = {e.code: (e.status, e.when) for e in ERROR_CODES.values()}
    assert documented == expected


def test_every_bundled_scenario_is_documented_with_its_own_description() -> None:
    table = section(page("scenarios.md"), "## Bundled scenarios")
    documented = {}
    for line in table.splitlines():
        cells = _table_cells(line) if line.startswith("| `") else []
        if len(cells) == 2:
            documented[cells[0].strip("`")] = cells[1]
    for name in bundled_names():
        text, _ = read_scenario_source(name)
        assert documented.get(name) == yaml.safe_load(text)["description"], name
    assert set(documented) == set(bundled_names())


def test_assumptions_page_lists_one_choice_per_line() -> None:
    body = page("reference/assumptions.md").split("\n\n", 2)[2]  # after the title and intro
    lines = [line for line in body.splitlines() if line.strip()]
    assert len(lines) >= 10
    continued = [line for line in lines if not line.startswith("- ")]
    assert not continued, f"an assumption spans more than one line: {continued[:3]}"


def test_every_environment_variable_is_documented_and_exists() -> None:
    source = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "mockstore").rglob("*.py"))
    read = set(re.findall(r"MOCKSTORE_[A-Z_]+[A-Z]", source))
    parser = _generator().cli_parser()
    commands = [parser, *_generator()._commands(parser).values()]
    helps = " ".join(a.help or "" for p in commands for a in p._actions)
    read |= set(re.findall(r"env (MOCKSTORE_[A-Z_]+[A-Z])", helps))
    text = page("reference/environment.md")
    documented = set(re.findall(r"^\| `(MOCKSTORE_[A-Z_]+)` \|", text, re.MULTILINE))
    assert documented == read


def test_the_security_limits_state_the_defaults_serve_has() -> None:
    parser = _generator().cli_parser()
    serve = _generator()._commands(parser)["serve"]
    defaults = {a.option_strings[0]: a.default for a in serve._actions if a.option_strings}
    table = section(page("security.md"), "## Limits on every client")
    rows = re.findall(r"^\| `(--[a-z-]+)` \(`(MOCKSTORE_[A-Z_]+)`\) \| (\d+)", table, re.M)
    assert len(rows) == 7
    for flag, variable, default in rows:
        if flag == "--memory-budget":  # a size, documented in MiB
            assert parse_size(defaults[flag]) == int(default) * 2**20
            continue
        assert float(defaults[flag]) == float(default), flag
        assert variable == "MOCKSTORE_" + flag[2:].upper().replace("-", "_")


def test_the_code_layout_names_every_module_and_nothing_else() -> None:
    body = section(page("contributing/index.md"), "## How the code is laid out")
    named = set()
    for line in body.splitlines():
        if line.startswith("| `"):
            named |= set(re.findall(r"`([\w./]+)`", _table_cells(line)[0]))
    package = ROOT / "mockstore"
    entries = {
        p.name + ("/" if p.is_dir() else "")
        for p in package.iterdir()
        if p.name not in ("__init__.py", "py.typed", "__pycache__")
    }
    assert entries <= named, f"not in the code layout: {sorted(entries - named)}"
    missing = [name for name in named if not (package / name).exists()]
    assert not missing, f"the code layout names what is not there: {missing}"


# --- examples are included, not copied ---------------------------------------------------


def test_every_example_file_is_included_in_the_docs() -> None:
    shown = included()
    assert set(example_files()) <= set(shown), set(example_files()) - set(shown)
    for path in shown:
        assert (ROOT / path).is_file(), f"a page includes {path}, which does not exist"


def test_every_include_line_is_one_the_docs_build_reads() -> None:
    # A formatter that reads `--8<-- "x.py"` as Python rewrites it to `--8 < --"x.py"`,
    # which the site shows as text instead of the file.
    for name, text in pages().items():
        for line in text.splitlines():
            if re.search(r"-\s*8\s*<", line) and "`" not in line:
                assert re.fullmatch(r'\s*--8<-- "[^"]+"', line), f"{name}: {line.strip()}"


@pytest.mark.parametrize(
    "name",
    [
        "github-actions.yml",
        "gitlab-ci.yml",
        "docker-compose.yml",
        "testcontainers_conftest.py",
        "nightly-drift.yml",
        "github-actions-other-languages.yml",
        "typescript/src/control.test.ts",
        "go/mockstore_test.go",
    ],
)
def test_the_ci_recipes_are_included_from_the_tested_files_not_pasted(name: str) -> None:
    # tests/test_dockerfile.py and tests/test_fidelity_loop.py run these files; a page
    # shows exactly them only if it includes them.
    assert f"examples/{name}" in included(), f"no page includes examples/{name}"
    lines = [line for line in (EXAMPLES / name).read_text().splitlines() if line.strip()]
    windows = {"\n".join(lines[i : i + 3]) for i in range(len(lines) - 2)}
    for where, text in {**pages(), "README.md": README.read_text(encoding="utf-8")}.items():
        pasted = [w for w in windows if w in text]
        assert not pasted, f"{where} pastes lines of examples/{name}: {pasted[0]!r}"


def test_the_dashboard_page_shows_committed_screenshots() -> None:
    shown = re.findall(r"\]\((dashboard/[\w-]+\.png)\)", page("dashboard.md"))
    assert len(shown) >= 5
    for path in shown:
        assert (DOCS / path).is_file(), path


# --- the README is a front page ----------------------------------------------------------

_README = README.read_text(encoding="utf-8")


def test_the_readme_is_a_front_page() -> None:
    assert len(_README.splitlines()) <= MAX_README_LINES


def test_ci_runs_the_readme_test_command() -> None:
    command = re.search(r"pip install -e '\.\[test\]' && (python -m pytest[^\n`]*)", _README)
    assert command, "the README shows no test command"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert command.group(1) in ci


def test_the_readme_links_into_pages_that_exist() -> None:
    links = re.findall(r"\]\((docs/[^)#]+)(?:#[^)]*)?\)", _README)
    assert len(links) >= 15
    for link in links:
        assert (ROOT / link).is_file(), link
    linked = {link.removeprefix("docs/") for link in links}
    assert set(pages()) <= linked, f"pages the README does not link: {set(pages()) - linked}"


def test_the_readme_example_is_tested_code() -> None:
    (example,) = re.findall(r"```python\n(.*?)```", _README, re.DOTALL)
    suite = (EXAMPLES / "user_suite" / "test_with_the_plugin.py").read_text(encoding="utf-8")
    assert example in suite, "the README's example is not an excerpt of the plugin example"


def test_no_install_instruction_names_a_package_index_that_has_no_mockstore() -> None:
    # mockstore is on no package index: `pip install mockstore` fails as written.
    texts = {**pages(), "README.md": _README}
    texts |= {path: (ROOT / path).read_text(encoding="utf-8") for path in example_files()}
    for where, text in texts.items():
        assert not re.search(r"pip install (-U |--upgrade )?mockstore\b(?![-@\w])", text), where
