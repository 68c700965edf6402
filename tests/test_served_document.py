"""The OpenAPI document a mock serves follows its scenario: a client generated from it parses
every answer of a calibrated mock.

Every knob drift names (``tests/fidelity_support.SHOWN_BY``), each request of the
drift tests: the mock's answer has a status the served document lists for the
operation, and a body its schema for that status accepts. And schemathesis, with
every check, against a mock of a scenario calibrated far from mockstore's own
choices (``tests/schemathesis/calibrated.yaml``).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from mockstore import schemas
from mockstore.app import create_app
from mockstore.clock import Clock
from mockstore.document import openapi_for
from mockstore.fidelity.replayer import call
from mockstore.routing import Router
from mockstore.scenario import load_scenario
from tests.fidelity_support import BASE, KNOBS, REQUESTS, START, with_knob
from tests.support import mock_server

HERE = Path(__file__).resolve().parent / "schemathesis"
ROUTER = Router(schemas.operations().values())


def _answers(text: str) -> list[tuple[tuple[str, str], Any]]:
    """Each request of the drift tests, and the mock's answer to it."""
    scenario = load_scenario(text)
    clock = Clock(start=START, mode="manual", wall=lambda: START + 7200)
    app = create_app(scenario, clock=clock)

    async def send_all() -> list[tuple[tuple[str, str], Any]]:
        out = []
        for method, path, query, headers, body in REQUESTS:
            out.append(
                ((method, path), await call(app, method, path, query, headers, body, "1.2.3.4"))
            )
        return out

    return asyncio.run(send_all())


def _validator(document: dict[str, Any], schema: dict[str, Any]) -> Any:
    uri = "urn:mockstore:served"
    registry = Registry().with_resource(
        uri, Resource.from_contents(document, default_specification=DRAFT202012)
    )
    resolved = json.loads(json.dumps(schema).replace('"#/', f'"{uri}#/'))
    return schemas.validator_class()(resolved, registry=registry)


@pytest.mark.parametrize("knob", ["(none)", *KNOBS])
def test_every_answer_is_one_the_served_document_describes(knob: str) -> None:
    text = BASE if knob == "(none)" else with_knob(knob)
    document = openapi_for(load_scenario(text))
    for (method, path), answer in _answers(text):
        if method == "HEAD":
            continue  # the document describes GET; HEAD answers as GET does, without a body
        resolved = ROUTER.resolve(method, path.removeprefix("/v1"))
        if resolved.operation is None:
            continue  # an unknown path or method: no operation to describe it
        operation = resolved.operation
        spec = document["paths"][operation.path][operation.method.lower()]
        listed = spec["responses"]
        assert str(answer.status) in listed, (knob, method, path, answer.status, sorted(listed))
        described = listed[str(answer.status)]
        if "$ref" in described:
            described = document["components"]["responses"][described["$ref"].rsplit("/", 1)[1]]
        schema = described.get("content", {}).get("application/json", {}).get("schema")
        if schema is None or not answer.body:
            continue
        problems = list(_validator(document, schema).iter_errors(json.loads(answer.body)))
        assert not problems, (knob, method, path, answer.status, problems[0].message)


def test_the_default_scenario_serves_the_package_document() -> None:
    assert openapi_for(load_scenario("version: 1\n")) is schemas.openapi_document()


def test_a_calibrated_document_says_what_the_scenario_changed() -> None:
    document = openapi_for(load_scenario((HERE / "calibrated.yaml").read_text()))
    list_pets = document["paths"]["/pets"]["get"]
    assert "400" not in list_pets["responses"] and "422" in list_pets["responses"]
    limit = next(p for p in list_pets["parameters"] if p["name"] == "limit")
    assert "maximum" not in limit["schema"]  # clamped, not refused
    assert "X-Correlation-Id" in list_pets["responses"]["200"]["headers"]
    body = document["paths"]["/pets"]["post"]["requestBody"]["content"]["application/json"]
    assert body["schema"]["additionalProperties"] is False  # unknown fields refused
    assert "traceId" in document["components"]["schemas"]["Error"]["properties"]
    orders = document["paths"]["/store/orders"]["get"]["responses"]
    assert "501" not in orders and "403" in orders
    created = document["paths"]["/pets"]["post"]["responses"]["201"]
    assert "Location" in created["headers"]


def test_the_command_prints_what_the_server_serves(tmp_path: Path) -> None:
    scenario = HERE / "calibrated.yaml"
    done = subprocess.run(
        [sys.executable, "-m", "mockstore", "openapi", "--scenario", str(scenario)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    with mock_server(str(scenario)) as server:
        import httpx

        served = httpx.get(server.url + "/__mockstore/openapi.json").json()
    served.pop("servers")
    printed.pop("servers")
    assert printed == served


@pytest.mark.slow  # a fuzzer run (.ci/run's slow step)
def test_schemathesis_finds_nothing_against_a_calibrated_mock(tmp_path: Path) -> None:
    with mock_server(str(HERE / "calibrated.yaml")) as server:
        command = [
            *(sys.executable, "-m", "schemathesis.cli"),
            *("--config-file", str(HERE / "calibrated.toml")),
            *("run", server.url + "/__mockstore/openapi.json"),
            *("--checks", "all", "--mode", "all"),
            *("--header", "Authorization: Bearer st-key"),
            *("--max-examples", "25", "--seed", "20261125"),
            *("--generation-database", "none", "--workers", "1", "--no-color"),
        ]
        done = subprocess.run(
            command, cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False
        )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    assert "No issues found" in output, output[-6000:]
    assert "4 selected / 4 total" in output
