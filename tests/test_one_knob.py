"""A scenario setting lives in one place: the schema names it, and the rest follows from there.

Adding a ``behaviour`` setting means its entry in ``scenario.schema.json``, the
code that uses it (a ``Behaviour`` field and what reads it) and, if calibrate
can learn it, its probe. The builder builds it, the calibrate writer orders
it, and drift names it, from the schema; these tests hold each of them to the
schema, so a setting added (or renamed) in one place and not the others fails
here, naming the place.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from mockstore.fidelity import attribution
from mockstore.fidelity.calibrate.options import Options
from mockstore.fidelity.calibrate.probes import Calibration, Setting
from mockstore.fidelity.calibrate.writer import render_scenario
from mockstore.scenario import load_scenario, scenario_schema
from mockstore.scenario.build import BEHAVIOUR_SETTINGS
from mockstore.scenario.model import Behaviour, behaviour_value

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = scenario_schema()
BEHAVIOUR = SCHEMA["properties"]["behaviour"]["properties"]
CONDITIONS = list(BEHAVIOUR["error_codes"]["properties"])
# What the schema alone checks, and no builder reads: the format's version.
SCHEMA_ONLY = {"version"}


def _other_value(name: str, spec: dict[str, Any]) -> Any:
    """A valid value of setting ``name`` other than its default, from its schema entry."""
    default = spec.get("default")
    if "enum" in spec:
        return next(value for value in spec["enum"] if value != default)
    if spec.get("type") == "boolean":
        return not default
    if spec.get("type") == "integer":
        return default + 1 if default + 1 <= spec.get("maximum", default + 1) else default - 1
    if spec.get("format") == "date-time":
        return "2027-06-01T00:00:00Z"
    if name == "error_codes":
        return {CONDITIONS[0]: "a_code_of_its_own"}
    raise AssertionError(f"teach this test a value for behaviour.{name}: {spec}")


def test_behaviour_has_a_field_for_each_setting_of_the_schema_in_its_order() -> None:
    fields = [field.name for field in dataclasses.fields(Behaviour)]
    assert fields == list(BEHAVIOUR) == list(BEHAVIOUR_SETTINGS)


def test_the_defaults_of_behaviour_are_the_schemas() -> None:
    assert load_scenario("version: 1\n").behaviour == Behaviour()
    for name, spec in BEHAVIOUR.items():
        if name != "error_codes":
            assert getattr(Behaviour(), name) == behaviour_value(name, spec["default"]), name
    assert dict(Behaviour().error_codes) == {
        condition: spec["default"]
        for condition, spec in BEHAVIOUR["error_codes"]["properties"].items()
    }


@pytest.mark.parametrize("name", list(BEHAVIOUR))
def test_the_builder_builds_every_setting_of_the_schema(name: str) -> None:
    value = _other_value(name, BEHAVIOUR[name])
    text = yaml.safe_dump({"version": 1, "behaviour": {name: value}})
    built = getattr(load_scenario(text).behaviour, name)
    assert built == behaviour_value(name, value)
    assert built != getattr(Behaviour(), name), f"behaviour.{name} was not read"


def test_every_other_setting_of_the_schema_is_read_by_the_builder() -> None:
    # The sections outside behaviour (keys, plans, faults, journal, ...) are built by
    # hand: each property the schema has must be named in build.py.
    source = ast.parse((ROOT / "mockstore" / "scenario" / "build.py").read_text())
    named = {
        node.value
        for node in ast.walk(source)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }
    missing = []
    for name, spec in SCHEMA["properties"].items():
        if name in SCHEMA_ONLY or name == "behaviour":
            continue
        if name not in named:
            missing.append(name)
        for child in spec.get("properties", {}):
            if child not in named:
                missing.append(f"{name}.{child}")
    assert not missing, f"build.py never reads {missing}"


def _rendered_keys(text: str, indent: str) -> list[str]:
    return [
        match.group(1)
        for line in text.splitlines()
        if (match := re.fullmatch(rf"{indent}([a-z_]+):.*", line))
    ]


def test_the_calibrate_writer_writes_settings_in_the_schemas_order() -> None:
    result = Calibration("https://staging.example.com/v1")
    # Settled in the reverse order, written in the schema's.
    for name in reversed(BEHAVIOUR_SETTINGS):
        if name != "error_codes":
            result.set(name, BEHAVIOUR[name]["default"], f"probe of {name}")
    for condition in reversed(CONDITIONS):
        code = BEHAVIOUR["error_codes"]["properties"][condition]["default"]
        result.error_codes[condition] = Setting(code, [f"probe of {condition}"])
    text = render_scenario(result, Options(result.target, ("key",)), sent=1)
    section = text.split("\nbehaviour:\n", 1)[1]
    assert _rendered_keys(section, "  ") == list(BEHAVIOUR_SETTINGS)
    assert _rendered_keys(section, "    ") == CONDITIONS
    load_scenario(text, "<calibrated>")  # and it is a valid scenario


def test_calibrate_sets_only_settings_the_schema_has() -> None:
    source = (ROOT / "mockstore" / "fidelity" / "calibrate" / "probes.py").read_text()
    tree = ast.parse(source)
    set_names, conditions = set(), set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        first = node.args[0] if node.args else None
        if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
            continue
        if node.func.attr == "set":
            set_names.add(first.value)
        elif node.func.attr == "_error":
            conditions.add(first.value)
    assert set_names, "the probes set no setting: this test no longer reads them"
    assert set_names <= set(BEHAVIOUR) - {"error_codes"}, set_names - set(BEHAVIOUR)
    assert conditions <= set(CONDITIONS), conditions - set(CONDITIONS)


def _in_schema(path: str) -> bool:
    node: Any = SCHEMA
    for part in path.split("."):
        node = node.get("properties", {}).get(part.removesuffix("[]"))
        if node is None:
            return False
        if part.endswith("[]"):
            node = node["items"]
    return True


def test_every_setting_drift_can_name_is_in_the_schema() -> None:
    assert attribution.SETTINGS
    for text in attribution.SETTINGS:
        for path in attribution.settings_named(text):
            assert _in_schema(path), f"drift names {path!r} ({text!r}): not in the schema"
    assert {f"behaviour.error_codes.{c}" for c in CONDITIONS} <= set(attribution.SETTINGS)


def test_drift_names_settings_only_through_attribution() -> None:
    # A setting's name written anywhere else in drift's code would escape the check above.
    for module in ("compare", "drift", "conformance", "formats", "replayer", "recording"):
        source = ast.parse((ROOT / "mockstore" / "fidelity" / f"{module}.py").read_text())
        written = [
            node.value
            for node in ast.walk(source)
            if isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and re.search(r"\bbehaviour\.[a-z_]+", node.value)
        ]
        assert not written, f"fidelity/{module}.py names settings itself: {written}"
