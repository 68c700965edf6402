"""The scenario commands as a user runs them: validate, schema, scenarios, serve --scenario."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mockstore.scenario import bundled_names, load_scenario_file, scenario_schema
from tests.support import assert_conforms, auth, live_server

GOOD = """\
# yaml-language-server: $schema=https://mockstore.dev/schema/scenario-v1.json
version: 1
name: tiny
description: One Pro key and one pet.
keys:
  - {key: tiny-key, plan: pro}
pets:
  - {id: 7, name: Solo, categoryId: 1, status: sold}
"""
BAD_ONE = """\
version: 1
seed: x
faults:
  - match: {operation: getPet, probabilty: 0.5}
    respond: {status: 503}
    fault: connection_reset
"""
BAD_TWO = """\
version: 1
keys:
  - {key: a, plan: gold}
  - {key: a, plan: free}
"""


def mockstore(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mockstore", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    paths = {}
    for name, text in (("good", GOOD), ("bad_one", BAD_ONE), ("bad_two", BAD_TWO)):
        path = tmp_path / f"{name}.yaml"
        path.write_text(text)
        paths[name] = str(path)
    return paths


def test_validate_reports_every_problem_of_every_file_and_exits_1(files: dict[str, str]) -> None:
    result = mockstore("validate", files["good"], files["bad_one"], files["bad_two"])
    assert result.returncode == 1
    assert result.stdout.splitlines() == [f"{files['good']}: ok"]
    one, two = files["bad_one"], files["bad_two"]
    assert result.stderr.splitlines() == [
        f"{one}:2:7: $.seed: must be an integer, got string 'x'",
        f"{one}:4:5: $.faults[0]: a fault rule has either respond or fault, not both",
        f"{one}:4:32: $.faults[0].match.probabilty: unknown key 'probabilty'"
        " (did you mean 'probability'?)",
        f"{one}:5:14: $.faults[0].respond: an error status (503) needs an Error body"
        " {code, message, status: 503} (or raw: true)",
        f"{two}:3:20: $.keys[0].plan: unknown plan 'gold' (known: business, enterprise, free, pro)",
        f"{two}:4:11: $.keys[1].key: key 'a' is defined twice (first on line 3)",
    ]


def test_validate_exits_0_for_good_files(files: dict[str, str]) -> None:
    bundled = [str(Path("scenarios") / f"{name}.yaml") for name in bundled_names()]
    result = mockstore("validate", files["good"], *bundled)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert result.stdout.splitlines() == [f"{path}: ok" for path in [files["good"], *bundled]]


def test_validate_a_missing_file_is_an_error(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope.yaml")
    result = mockstore("validate", missing)
    assert result.returncode == 1
    assert result.stderr.startswith(f"{missing}: scenario file {missing!r} not found")
    assert ":1:1" not in result.stderr


def test_schema_prints_the_json_schema() -> None:
    result = mockstore("schema")
    assert result.returncode == 0
    assert json.loads(result.stdout) == scenario_schema()


def test_scenarios_lists_every_bundled_name_with_its_description() -> None:
    result = mockstore("scenarios")
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    assert len(lines) == len(bundled_names())
    for line, name in zip(lines, bundled_names(), strict=True):
        listed_name, _, listed_description = line.partition(" ")
        assert listed_name == name
        assert listed_description.strip() == load_scenario_file(name).description


def test_serve_refuses_an_invalid_scenario_with_every_problem(files: dict[str, str]) -> None:
    result = mockstore("serve", "--port", "0", "--scenario", files["bad_two"])
    assert result.returncode == 1
    assert "not valid; not starting" in result.stderr
    assert f"{files['bad_two']}:3:20: $.keys[0].plan: unknown plan 'gold'" in result.stderr
    assert f"{files['bad_two']}:4:11: $.keys[1].key: key 'a' is defined twice" in result.stderr
    assert "serving" not in result.stderr


def test_serve_names_the_bundled_scenarios_when_the_name_is_unknown() -> None:
    result = mockstore("serve", "--port", "0", "--scenario", "flaky-creat")
    assert result.returncode == 1
    assert "scenario 'flaky-creat' not found" in result.stderr
    assert "(did you mean 'flaky-create'?)" in result.stderr
    for name in bundled_names():
        assert name in result.stderr


def test_serve_a_scenario_file_by_path(files: dict[str, str]) -> None:
    with live_server("--scenario", files["good"]) as server, server.client() as http:
        assert "scenario: tiny" in server.log()
        response = http.get("/v1/pets", headers=auth("tiny-key"))
        assert assert_conforms(response) == [
            {"id": 7, "name": "Solo", "categoryId": 1, "status": "sold"}
        ]
        assert http.get("/v1/pets", headers=auth("pro")).status_code == 401


def test_serve_a_bundled_scenario_from_the_environment_and_the_flag_wins() -> None:
    with (
        live_server(env={"MOCKSTORE_SCENARIO": "after-sunset"}) as server,
        server.client() as http,
    ):
        gone = http.get("/v1/pets/1", headers=auth("pro"))
        assert gone.status_code == 410
        assert assert_conforms(gone)["code"] == "gone"
    with (
        live_server(
            "--scenario", "empty-store", env={"MOCKSTORE_SCENARIO": "after-sunset"}
        ) as server,
        server.client() as http,
    ):
        assert http.get("/__mockstore/health").json()["scenario"] == "empty-store"
        assert assert_conforms(http.get("/v1/pets", headers=auth("pro"))) == []


def test_serve_an_inline_scenario_from_the_environment() -> None:
    with live_server(env={"MOCKSTORE_SCENARIO_YAML": GOOD}) as server, server.client() as http:
        assert http.get("/__mockstore/health").json()["scenario"] == "tiny"
        assert assert_conforms(http.get("/v1/pets/7", headers=auth("tiny-key")))["name"] == "Solo"
