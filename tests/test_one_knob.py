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

from mockstore.fidelity import attribution, attribution_http
from mockstore.fidelity.calibrate.options import Options
from mockstore.fidelity.calibrate.result import Calibration
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


# Values for the settings whose schema entry does not suggest one (strings, objects, lists).
OTHER_VALUES: dict[str, Any] = {
    "serve_head": ["listPets"],
    "content_type": "application/json; charset=utf-8",
    "request_id": {"header": "X-Trace-Id", "format": "hex", "prefix": ""},
    "headers": [{"name": "X-Api-Version", "value": "2", "status": "4xx"}],
    "etag": {"getPet": "weak"},
    "deprecation_link": None,
    "error_statuses": {"bad_pet_id": 404},
    "error_fields": [{"name": "traceId", "generate": "request_id"}],
    "error_messages": {"bad_limit": "limit {value} is not an integer from 1 to 100"},
    "www_authenticate": {"missing_key": None},
}


def _other_value(name: str, spec: dict[str, Any]) -> Any:
    """A valid value of setting ``name`` other than its default, from its schema entry."""
    if name in OTHER_VALUES:
        return OTHER_VALUES[name]
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
        # A mapping without a default of its own has one per entry (or none at all).
        default = spec.get("default", {})
        if name != "error_codes":
            assert getattr(Behaviour(), name) == behaviour_value(name, default), name
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
    # hand: each property the schema has must be named in build.py, or in the module of
    # its section that build.py calls (scenario/*_section.py: http, maintenance, latency;
    # collections.py;
    # limits.py for ratelimit:).
    scenario = ROOT / "mockstore" / "scenario"
    named = {
        node.value
        for path in [
            scenario / "build.py",
            scenario / "surroundings.py",
            scenario / "collections.py",
            scenario / "limits.py",
            *scenario.glob("*_section.py"),
        ]
        for node in ast.walk(ast.parse(path.read_text()))
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


def _settled_everything() -> Calibration:
    """A calibration that settled every behaviour setting, in the reverse of the schema's order."""
    result = Calibration("https://staging.example.com/v1")
    for name in reversed(BEHAVIOUR_SETTINGS):
        spec = BEHAVIOUR[name]
        if "properties" in spec and spec.get("type") == "object":
            for child in reversed(list(spec["properties"])):
                child_spec = spec["properties"][child]
                value = child_spec.get("default", child_spec.get("enum", [400])[0])
                if child_spec.get("type") == "string" and "default" not in child_spec:
                    value = f"the {child} message"  # a template (error_messages)
                if name == "error_statuses":
                    value = 418 + 4  # any status of a refusal
                result.set(f"behaviour.{name}.{child}", value, f"probe of {name}.{child}")
        elif spec.get("type") == "array":
            for item in _other_value(name, spec):  # a list is settled entry by entry
                result.set(f"behaviour.{name}", item, f"probe of {name}")
        else:
            result.set(f"behaviour.{name}", _other_value(name, spec), f"probe of {name}")
    return result


def test_the_calibrate_writer_writes_settings_in_the_schemas_order() -> None:
    result = _settled_everything()
    text = render_scenario(result, Options(result.target, ()), sent=1)
    section = text.split("\nbehaviour:\n", 1)[1]
    assert _rendered_keys(section, "  ") == list(BEHAVIOUR_SETTINGS)
    assert _rendered_keys(section.split("  error_codes:\n", 1)[1], "    ")[: len(CONDITIONS)] == (
        CONDITIONS
    )
    load_scenario(text, "<calibrated>")  # and it is a valid scenario


def test_calibrate_sets_only_settings_the_schema_has() -> None:
    # Every setting the learner and the probes name, by its path in the schema.
    named = set()
    for module in (
        "learn",
        "probes",
        "learn_http",
        "learn_maintenance",
        "learn_latency",
        "learn_errors",
    ):
        source = (ROOT / "mockstore" / "fidelity" / "calibrate" / f"{module}.py").read_text()
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                named.update(
                    re.findall(r"\b((?:behaviour|ban)\.[a-z_]+(?:\.[a-z_A-Z]+)?)", node.value)
                )
            elif isinstance(node, ast.JoinedStr):
                text = "".join(
                    part.value if isinstance(part, ast.Constant) else "{}" for part in node.values
                )
                if text.startswith("behaviour.") and text.endswith(".{}"):
                    named.add(text.removesuffix(".{}"))
    assert named, "the learner names no setting: this test no longer reads it"
    for path in named:
        assert _in_schema(path), f"calibrate names {path!r}: not in the schema"


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
    for path in (*attribution.SETTINGS, *attribution_http.SETTINGS):
        assert _in_schema(path), f"drift names {path!r}: not in the schema"
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
