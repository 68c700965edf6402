"""One scenario resolver: every entry point takes a bundled name, a path or YAML text alike,
and a name that names nothing is "not found" with a did-you-mean, never "not valid ... :1:1"."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mockstore import Control, ControlError
from mockstore.scenario import (
    ScenarioNotFound,
    bundled_names,
    load_scenario_source,
    resolve_scenario,
)
from tests.support import examples, mock_server

SMALL = "version: 1\nname: small\nkeys: [{key: small-key, plan: free}]\n"


def _cli(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None):
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MOCKSTORE_")}
    return subprocess.run(
        [sys.executable, "-m", "mockstore", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**clean, **(env or {})},
        cwd=cwd,
    )


def _says_not_found(text: str, typo: str, meant: str) -> None:
    assert "not found" in text, text
    assert f"did you mean '{meant}'?" in text, text
    assert "bundled: " + ", ".join(bundled_names()) in text, text
    assert "not valid" not in text and f"{typo}:1:1" not in text, text


# -- the CLI ----------------------------------------------------------------------


def test_serve_an_unknown_name_is_not_found_with_a_did_you_mean() -> None:
    result = _cli("serve", "--port", "0", "--scenario", "flakey-create")
    assert result.returncode == 1
    _says_not_found(result.stderr, "flakey-create", "flaky-create")


def test_the_environment_variable_resolves_the_same_way() -> None:
    result = _cli("serve", "--port", "0", env={"MOCKSTORE_SCENARIO": "flakey-create"})
    assert result.returncode == 1
    _says_not_found(result.stderr, "flakey-create", "flaky-create")


def test_a_missing_file_is_not_found_and_says_where_it_looked(tmp_path: Path) -> None:
    result = _cli(
        "serve", "--port", "0", "--scenario", "scenarios/flakey-create.yaml", cwd=tmp_path
    )
    assert result.returncode == 1
    assert "scenario file 'scenarios/flakey-create.yaml' not found" in result.stderr
    assert f"looked in {tmp_path}" in result.stderr
    _says_not_found(result.stderr, "scenarios/flakey-create.yaml", "flaky-create")


def test_validate_takes_bundled_names_files_and_names_what_is_missing(tmp_path: Path) -> None:
    (tmp_path / "mine.yaml").write_text(SMALL)
    result = _cli("validate", "default", "mine.yaml", "defualt", cwd=tmp_path)
    assert result.returncode == 1
    assert "default.yaml (bundled): ok" in result.stdout
    assert "mine.yaml: ok" in result.stdout
    assert "cannot read" not in result.stderr
    _says_not_found(result.stderr, "defualt", "default")


def test_validate_of_bundled_names_alone_exits_0() -> None:
    result = _cli("validate", *bundled_names())
    assert result.returncode == 0, result.stderr
    assert result.stdout.count(": ok") == len(bundled_names())


# -- the control client and the server object -------------------------------------


def test_control_load_scenario_takes_a_bundled_name_a_path_and_text(tmp_path: Path) -> None:
    path = tmp_path / "small.yaml"
    path.write_text(SMALL)
    with mock_server() as server, Control(server.url) as control:
        assert control.load_scenario("flaky-create").name == "flaky-create"
        assert control.scenario().file == "flaky-create.yaml (bundled)"
        assert control.load_scenario(str(path)).name == "small"
        assert control.scenario().file == str(path)
        assert control.load_scenario(path).name == "small"
        assert control.load_scenario(SMALL.replace("small", "inline")).name == "inline"
        assert control.load_scenario("{version: 1, name: one-line}").name == "one-line"
        with pytest.raises(ControlError) as refused:
            control.load_scenario("flakey-create")
        assert refused.value.code == "scenario_not_found"
        _says_not_found(str(refused.value), "flakey-create", "flaky-create")
        assert control.health().scenario == "one-line", "a refused name changes nothing"


# -- the resolver itself ------------------------------------------------------------


@pytest.mark.parametrize("name", bundled_names())
def test_every_bundled_name_resolves_with_or_without_its_suffix(name: str) -> None:
    for spec in (name, f"{name}.yaml"):
        source = resolve_scenario(spec)
        assert source.kind == "bundled"
        assert source.file == f"{name}.yaml (bundled)"
        assert source.path is None


def test_a_file_wins_over_a_bundled_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("default").write_text(SMALL)
    source = resolve_scenario("default")
    assert (source.kind, source.path) == ("file", Path("default"))
    assert load_scenario_source("default").name == "small"


def test_text_and_mappings_resolve_to_text() -> None:
    assert resolve_scenario(SMALL).kind == "text"
    assert resolve_scenario("version: 1").kind == "text"
    assert resolve_scenario({"version": 1, "name": "m"}, label="mine").file == "mine"
    assert load_scenario_source({"version": 1, "name": "m"}).name == "m"


def test_a_path_object_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ScenarioNotFound, match="not found"):
        resolve_scenario(tmp_path / "nothing.yaml")
    with pytest.raises(ScenarioNotFound, match="is a directory"):
        resolve_scenario(tmp_path)


_NAME_CHARS = st.characters(whitelist_categories=("Ll", "Lu", "Nd"), whitelist_characters="-_.")


@settings(max_examples=examples(200), deadline=None)
@given(name=st.text(_NAME_CHARS, min_size=1, max_size=30))
def test_any_name_that_names_nothing_is_not_found_never_invalid(name: str) -> None:
    if name in bundled_names() or name.removesuffix(".yaml") in bundled_names():
        return
    if Path(name).exists():
        return
    with pytest.raises(ScenarioNotFound) as missing:
        resolve_scenario(name)
    message = str(missing.value)
    assert "not found" in message
    assert ":1:1" not in message
    assert ", ".join(bundled_names()) in message
