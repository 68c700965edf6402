"""Scenarios stay within sane bounds, and a file that is not a scenario is not echoed.

Every size a scenario sets has a documented upper bound in the scenario
schema (which ``mockstore schema`` prints and editors check as you type), and
``mockstore validate`` / ``serve`` refuse a file past one, naming it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mockstore.scenario import ScenarioError, load_scenario, scenario_schema


def _validate(tmp_path: Path, text: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "scenario.yaml"
    path.write_text(text)
    return subprocess.run(
        [sys.executable, "-m", "mockstore", "validate", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    ("text", "where", "bound"),
    [
        ("journal: {size: 1000000000}", "$.journal.size", "1000000"),
        ("journal: {body_bytes: 1000000000}", "$.journal.body_bytes", "1048576"),
        ("journal: {max_bytes: 1000000000000}", "$.journal.max_bytes", "1073741824"),
        ("journal: {header_bytes: 1000000000}", "$.journal.header_bytes", "65536"),
        ("behaviour: {max_body_bytes: 1000000000000}", "$.behaviour.max_body_bytes", "67108864"),
        ("generate: {pets: 1000000}", "$.generate.pets", "200000"),
        ("ban: {duration_seconds: 1e300}", "$.ban.duration_seconds", "31536000"),
        ("ban: {within_seconds: 1e300}", "$.ban.within_seconds", "86400"),
        ("ban: {after_rejections: 100000000000}", "$.ban.after_rejections", "1000000"),
        ("seed: 100000000000000000000000000", "$.seed", "9223372036854775807"),
    ],
)
def test_a_size_past_its_bound_is_refused_naming_it(
    tmp_path: Path, text: str, where: str, bound: str
) -> None:
    done = _validate(tmp_path, f"version: 1\n{text}\n")
    assert done.returncode == 1, done.stdout
    (line,) = [line for line in done.stderr.splitlines() if where in line]
    assert f"must be at most {bound}" in line, line


def _sizes(node: Any, path: str = "$") -> list[tuple[str, dict[str, Any]]]:
    """Every integer or number setting of the schema, and every list, with its path."""
    found = []
    if isinstance(node, dict):
        kinds = node.get("type")
        if kinds in ("integer", "number", "array"):
            found.append((path, node))
        for key in ("properties", "patternProperties"):
            for name, child in node.get(key, {}).items():
                found.extend(_sizes(child, f"{path}.{name}"))
        for key in ("items", "additionalProperties"):
            if isinstance(node.get(key), dict):
                found.extend(_sizes(node[key], f"{path}[]"))
        for key in ("oneOf", "anyOf", "allOf"):
            for child in node.get(key, []):
                found.extend(_sizes(child, path))
    return found


def test_every_size_in_the_schema_has_an_upper_bound() -> None:
    sizes = _sizes(scenario_schema())
    assert len(sizes) > 20
    for path, node in sizes:
        if node["type"] == "array":
            assert "maxItems" in node, f"{path} has no maxItems"
        else:
            assert "maximum" in node or "exclusiveMaximum" in node, f"{path} has no maximum"
    # Maps of arbitrary names are bounded too.
    schema = scenario_schema()["properties"]
    assert "maxProperties" in schema["plans"]


@pytest.mark.parametrize("section", ["keys", "faults", "routes"])
def test_lists_past_their_bound_are_refused(section: str) -> None:
    limit = scenario_schema()["properties"][section]["maxItems"]
    items = {
        "keys": lambda i: f"  - {{key: k{i}, plan: free}}",
        "faults": lambda i: f"  - {{match: {{operation: listPets}}, delay: {{fixed_ms: {i}}}}}",
        "routes": lambda i: f"  - {{method: GET, path: /r{i}, respond: {{status: 200}}}}",
    }[section]
    text = f"version: 1\n{section}:\n" + "\n".join(items(i) for i in range(limit + 1)) + "\n"
    with pytest.raises(ScenarioError) as refused:
        load_scenario(text, "many.yaml")
    assert any(
        p.path == f"$.{section}" and f"at most {limit}" in p.message for p in refused.value.problems
    ), [str(p) for p in refused.value.problems][:3]


def test_a_file_that_is_not_a_scenario_is_not_echoed(tmp_path: Path) -> None:
    secret = tmp_path / "passwd"
    secret.write_text(
        "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"
    )
    for command in (["validate", str(secret)], ["serve", "--port", "0", "--scenario", str(secret)]):
        done = subprocess.run(
            [sys.executable, "-m", "mockstore", *command],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 1
        output = done.stdout + done.stderr
        assert "root:" not in output and "/bin/bash" not in output, output
        assert "not a scenario" in output, output


def test_etc_passwd_is_not_echoed() -> None:
    if not Path("/etc/passwd").is_file():
        pytest.skip("no /etc/passwd here")
    done = subprocess.run(
        [sys.executable, "-m", "mockstore", "serve", "--port", "0", "--scenario", "/etc/passwd"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert "root:" not in done.stderr and len(done.stderr) < 1000, done.stderr


def test_a_long_string_in_a_problem_is_cut_short() -> None:
    with pytest.raises(ScenarioError) as refused:
        load_scenario("version: 1\nisolation: " + "Q" * 100_000 + "\n", "long.yaml")
    (problem,) = refused.value.problems
    assert len(str(problem)) < 500
