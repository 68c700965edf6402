"""Where two artefacts must agree, they do: one source per rule.

The scenario schema holds every scenario default; the model reads them from
it. The OpenAPI document holds the operations, the Pet's fields and the
sunset the spec announces; the scenario schema and the server derive from it.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from mockstore import schemas
from mockstore.clock import parse_time
from mockstore.errors import ERROR_CODES
from mockstore.scenario import load_scenario, scenario_schema
from mockstore.scenario.loader import schema_default
from mockstore.scenario.model import Behaviour, Scenario, default_ban_policy
from mockstore.service import ROUTER
from mockstore.store import FIELD_ORDER

ROOT = Path(__file__).resolve().parent.parent


def _operation_enums(node: object) -> list[list[str]]:
    """Every ``operation`` enum of the scenario schema (fault matches, routes)."""
    found = []
    if isinstance(node, dict):
        for name, value in node.items():
            if name == "operation" and isinstance(value, dict) and "enum" in value:
                found.append(value["enum"])
            found.extend(_operation_enums(value))
    elif isinstance(node, list):
        for value in node:
            found.extend(_operation_enums(value))
    return found


def test_the_scenario_schema_names_exactly_the_openapi_operations() -> None:
    enums = _operation_enums(scenario_schema())
    assert len(enums) >= 2, "fault matches and routes both name operations"
    for enum in enums:
        assert sorted(enum) == sorted(schemas.operations())


def test_the_route_table_is_the_documents_paths() -> None:
    document = schemas.openapi_document()["paths"]
    assert set(ROUTER.paths) == set(document)
    for path, allow in ROUTER.paths.items():
        methods = {m.upper() for m in document[path] if m in {"get", "post", "put", "delete"}}
        if "GET" in methods:
            methods.add("HEAD")
        assert set(allow.split(", ")) == methods


def test_scenario_defaults_are_the_schemas() -> None:
    empty = load_scenario("version: 1\n")
    assert empty == dataclasses.replace(Scenario(), source="version: 1\n", name=empty.name)
    behaviour = empty.behaviour
    assert behaviour == Behaviour()
    assert behaviour.max_body_bytes == schema_default("behaviour", "max_body_bytes")
    assert behaviour.retry_after == schema_default("behaviour", "retry_after")
    assert behaviour.sunset == parse_time(schema_default("behaviour", "sunset"))
    assert empty.journal_size == schema_default("journal", "size")
    assert empty.journal_body_bytes == schema_default("journal", "body_bytes")
    assert empty.base_path == schema_default("base_path")
    assert empty.ban == default_ban_policy()
    assert empty.ban is not None
    assert empty.ban.after_rejections == schema_default("ban", "after_rejections")


def test_the_sunset_default_is_the_one_the_openapi_document_announces() -> None:
    announced = schemas.operations()["getPet"].extensions["x-sunset"]
    assert parse_time(announced) == parse_time(schema_default("behaviour", "sunset"))


def test_a_pet_has_the_fields_the_document_gives_it() -> None:
    assert set(FIELD_ORDER) == set(schemas.object_fields("Pet"))
    assert FIELD_ORDER[0] == "id"
    assert set(schemas.object_fields("NewPet")) == set(FIELD_ORDER) - {"id"}


def test_no_module_writes_a_default_the_schema_holds() -> None:
    # The literals a default was once written as, outside the two artefacts.
    literals = ("1_048_576", "1048576", 'time("2030-12-05', "removed on 5 December", "10_000, 4")
    for literal in literals:
        for path in (ROOT / "mockstore").rglob("*.py"):
            assert literal not in path.read_text(), f"{literal} is written again in {path}"


def test_every_error_code_the_service_raises_is_in_the_table() -> None:
    source = (ROOT / "mockstore" / "service.py").read_text()
    source += (ROOT / "mockstore" / "validation.py").read_text()
    import re

    raised = set(re.findall(r'ApiError\(\s*"([a-z_]+)"', source))
    assert raised, "the service raises ApiErrors"
    assert raised <= set(ERROR_CODES)
