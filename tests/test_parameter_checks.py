"""A parameter's schema checked by plain code gives jsonschema's verdict, for every value.

``mockstore.parameter_checks`` says "valid" without jsonschema (a server's first
request no longer imports it, issue 29); a refusal is still explained by
jsonschema. These properties hold the two verdicts equal for the document's own
parameters and for any schema of the grammar the module covers, and check that
a schema outside it is left to jsonschema.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from mockstore import schemas
from mockstore.parameter_checks import compile_check
from tests.support import auth

# Values as a query or path parameter reaches the check (ints, strings) and every
# other JSON scalar, integral floats and the int64 edges included.
values = st.one_of(
    st.integers(),
    st.integers(min_value=-(2**64), max_value=2**64),
    st.sampled_from([2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**31, -(2**31) - 1, 0, 1, 100]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1.0, 100.0, 7.5, -0.0, 2.0**63]),
    st.text(max_size=12),
    st.sampled_from(["available", "pending", "sold", "Sold", ""]),
    st.booleans(),
    st.none(),
)
bounds = st.one_of(st.integers(-(2**64), 2**64), st.floats(allow_nan=False, allow_infinity=False))
schemas_of_the_grammar = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from(["integer", "number", "string", "boolean"]),
        "minimum": bounds,
        "maximum": bounds,
        "exclusiveMinimum": bounds,
        "exclusiveMaximum": bounds,
        "enum": st.lists(
            st.one_of(st.integers(-3, 3), st.sampled_from([1.0, "a", "sold", True, False, None])),
            min_size=1,
            max_size=4,
        ),
        "format": st.sampled_from(["int64", "int32"]),
        "default": st.integers(),
        "description": st.text(max_size=5),
    },
)


def jsonschema_verdict(schema: dict[str, Any], value: object) -> bool:
    validator = Draft202012Validator(schema, format_checker=schemas.format_checker())
    return validator.is_valid(value)


def the_document_parameters() -> list[schemas.Parameter]:
    return [p for op in schemas.operations().values() for p in op.parameters]


def test_every_parameter_of_the_document_is_checked_by_plain_code() -> None:
    # Otherwise the first request of an operation would import jsonschema again.
    uncovered = [p.name for p in the_document_parameters() if p.check is None]
    assert uncovered == []


@given(value=values)
def test_the_document_parameters_get_jsonschema_s_verdict(value: object) -> None:
    for parameter in the_document_parameters():
        assert parameter.check is not None
        assert parameter.check(value) == parameter.validator.is_valid(value), parameter.name


@given(schema=schemas_of_the_grammar, value=values)
def test_any_schema_of_the_grammar_gets_jsonschema_s_verdict(
    schema: dict[str, Any], value: object
) -> None:
    check = compile_check(schema)
    assert check is not None
    assert check(value) == jsonschema_verdict(schema, value)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "string", "pattern": "^a"},
        {"type": "array"},
        {"type": ["integer", "null"]},
        {"$ref": "#/components/schemas/PetStatus"},
        {"enum": [[1]]},
        {"type": "string", "format": "date-time"},
        {"minimum": "1"},
        {"allOf": [{"type": "integer"}]},
        ["not", "a", "schema"],
    ],
)
def test_a_schema_outside_the_grammar_is_left_to_jsonschema(schema: Any) -> None:
    assert compile_check(schema) is None


def test_a_refusal_keeps_jsonschema_s_message(server: Any) -> None:
    answers = {
        query: httpx.get(f"{server.url}/v1/pets?{query}", headers=auth("free"))
        for query in ("limit=0", "limit=101", "status=lost")
    }
    assert {query: answer.status_code for query, answer in answers.items()} == {
        "limit=0": 400,
        "limit=101": 400,
        "status=lost": 400,
    }
    assert answers["limit=0"].json()["message"] == (
        "query parameter 'limit': 0 is less than the minimum of 1"
    )
    assert answers["status=lost"].json()["message"] == (
        "query parameter 'status' must be one of: available, pending, sold (got \"lost\")"
    )
    too_big = httpx.get(f"{server.url}/v1/pets/9223372036854775808", headers=auth("free"))
    assert too_big.status_code in (400, 404)
    assert too_big.json()["status"] == too_big.status_code
