"""Compiled validators for the Pet Store's OpenAPI document.

Everything here is read from ``openapi.yaml`` in this package, once, on first
use: the request validation of the server and the response checks of the tests
use these validators, so a rule lives only in the OpenAPI document. jsonschema
is imported when a validator is first compiled, not with this module: a server
answering valid requests of a scenario it has checked before never needs it
(``parameter_checks``, ``verdicts``; its start, issue 29).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from mockstore import verdicts
from mockstore.parameter_checks import Check, compile_check

if TYPE_CHECKING:
    from jsonschema import FormatChecker
    from jsonschema.exceptions import ValidationError

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1
_DOCUMENT_URI = "urn:mockstore:openapi"


def _in_range(value: object, low: int, high: int) -> bool:
    # The type keyword reports non-numbers; JSON Schema 2020-12 counts 7.0 as
    # an integer, so an integral float is checked against the range too.
    if isinstance(value, bool) or not isinstance(value, int | float):
        return True
    return low <= value <= high


def _is_int64(value: object) -> bool:
    return _in_range(value, INT64_MIN, INT64_MAX)


def _is_int32(value: object) -> bool:
    return _in_range(value, INT32_MIN, INT32_MAX)


@cache
def format_checker() -> FormatChecker:
    """jsonschema's format checker with the document's int32 and int64 ranges."""
    from jsonschema import FormatChecker

    checker = FormatChecker()
    checker.checks("int64")(_is_int64)
    checker.checks("int32")(_is_int32)
    return checker


def validator_class() -> Any:
    """The document's semantics (OpenAPI 3.1 is JSON Schema 2020-12): 7.0 is an integer.

    Whoever stores a value converts it (``as_integers``).
    """
    from jsonschema import Draft202012Validator

    return Draft202012Validator


@cache
def openapi_document() -> dict[str, Any]:
    """The OpenAPI document as a plain dict (parsed once, and kept parsed: ``verdicts``)."""
    source = resources.files("mockstore").joinpath("openapi.yaml").read_bytes()
    document = verdicts.parsed_before("openapi", source)
    if isinstance(document, dict):
        return document
    import yaml

    # libyaml's parser when PyYAML has it: the same safe loader (a test holds the
    # two to the same document), in a tenth of the time of a server's start.
    document = yaml.load(
        source.decode("utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    )
    verdicts.keep_parsed("openapi", source, document)
    return document


@cache
def openapi_json() -> bytes:
    """The OpenAPI document encoded as JSON, as served by the control API."""
    return json.dumps(openapi_document(), indent=2).encode()


@cache
def _registry() -> Any:
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT202012

    resource = Resource.from_contents(openapi_document(), default_specification=DRAFT202012)
    return Registry().with_resource(_DOCUMENT_URI, resource)


def validator_for(pointer: str) -> Any:
    """A compiled validator for the schema at a JSON pointer of the document.

    ``validator_for("#/components/schemas/Pet")`` checks a Pet.
    """
    return _compiled(pointer)


@cache
def _compiled(pointer: str) -> Any:
    return validator_class()(
        {"$ref": _DOCUMENT_URI + pointer},
        registry=_registry(),
        format_checker=format_checker(),
    )


def schema_validator(name: str) -> Any:
    """A compiled validator for ``components/schemas/<name>``."""
    return validator_for(f"#/components/schemas/{name}")


@dataclass(frozen=True, slots=True)
class Parameter:
    """One operation parameter of the document, with its compiled schema.

    ``check`` gives jsonschema's verdict on a value by plain code when the
    schema is one ``parameter_checks`` covers (None: ask ``validator``);
    ``validator`` is compiled on first use, to explain a refusal.
    """

    name: str
    location: str
    required: bool
    schema: dict[str, Any]
    pointer: str  # the schema's JSON pointer in the document
    check: Check | None

    @property
    def validator(self) -> Any:
        return validator_for(self.pointer)

    @property
    def default(self) -> Any:
        return self.schema.get("default")

    @property
    def type(self) -> str | None:
        return self.schema.get("type")


@dataclass(frozen=True, slots=True)
class Operation:
    """One operation of the document: its id, method, path and parameters."""

    operation_id: str
    method: str
    path: str
    deprecated: bool
    parameters: tuple[Parameter, ...]
    body_schema: str | None
    body_required: bool
    responses: tuple[str, ...]
    assumed: frozenset[int]  # statuses the spec does not state (x-assumed responses)
    success_status: int | None  # its 2xx; None for listOrders, which the spec never describes
    extensions: dict[str, Any]  # the operation's x-* keys

    @property
    def replacement(self) -> dict[str, str] | None:
        """A deprecated operation's stated successor (``x-replacement``), if any."""
        return self.extensions.get("x-replacement")

    @property
    def is_read(self) -> bool:
        """GET (and so HEAD, which answers as GET does)."""
        return self.method == "GET"


def _resolve(node: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if not ref:
        return node
    target: Any = openapi_document()
    for part in ref.removeprefix("#/").split("/"):
        target = target[part]
    return target


@cache
def operations() -> dict[str, Operation]:
    """Every operation of the document, by operationId."""
    found: dict[str, Operation] = {}
    for path, item in openapi_document()["paths"].items():
        for method, spec in item.items():
            if method not in {"get", "put", "post", "delete", "patch", "head", "options"}:
                continue
            params = []
            for index, raw in enumerate(spec.get("parameters", [])):
                pointer = f"#/paths/{_escape(path)}/{method}/parameters/{index}/schema"
                params.append(
                    Parameter(
                        name=raw["name"],
                        location=raw["in"],
                        required=bool(raw.get("required", False)),
                        schema=_resolve(raw["schema"]),
                        pointer=pointer,
                        check=compile_check(_resolve(raw["schema"])),
                    )
                )
            body = spec.get("requestBody")
            body_schema = None
            if body:
                body_schema = body["content"]["application/json"]["schema"]["$ref"]
            statuses = tuple(spec.get("responses", {}))
            success = next((int(s) for s in statuses if s.startswith("2")), None)
            found[spec["operationId"]] = Operation(
                operation_id=spec["operationId"],
                method=method.upper(),
                path=path,
                deprecated=bool(spec.get("deprecated", False)),
                parameters=tuple(params),
                body_schema=body_schema,
                body_required=bool(body and body.get("required", False)),
                responses=statuses,
                assumed=frozenset(
                    int(status)
                    for status, answer in spec.get("responses", {}).items()
                    if _resolve(answer).get("x-assumed")
                ),
                success_status=success,
                extensions={k: v for k, v in spec.items() if k.startswith("x-")},
            )
    return found


def _escape(path: str) -> str:
    return path.replace("~", "~0").replace("/", "~1")


def describe(error: ValidationError, root: str) -> str:
    """A one-line message naming the offending field, for an Error body."""
    field = root
    for part in error.absolute_path:
        field += f"[{part}]" if isinstance(part, int) else f".{part}" if field else str(part)
    if error.validator == "required":
        missing = error.message.split("'")[1] if "'" in error.message else error.message
        where = f"{field}." if field else ""
        return f"{where}{missing} is required"
    if error.validator == "type":
        expected = error.validator_value
        return f"{field or 'body'} must be of type {expected}, got {_json_type(error.instance)}"
    if error.validator == "enum":
        allowed = ", ".join(str(v) for v in error.validator_value)
        return f"{field} must be one of: {allowed} (got {json.dumps(error.instance)})"
    if error.validator == "format":
        return f"{field} is out of the {error.validator_value} range (got {error.instance})"
    return f"{field or 'body'}: {error.message}"


def errors_of(validator: Any, instance: Any) -> Iterator[ValidationError]:
    """The errors of ``instance``, most relevant first and in a stable order."""
    return iter(sorted(validator.iter_errors(instance), key=_error_order))


def _error_order(error: ValidationError) -> tuple[Any, ...]:
    return (len(error.absolute_path), [str(p) for p in error.absolute_path], error.validator)


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


@cache
def object_fields(name: str) -> tuple[str, ...]:
    """The property names of a component schema, through its ``allOf`` parts.

    A schema's own properties come first, then those it takes from the schemas
    it refers to: a Pet is ``id`` then the NewPet fields. The OpenAPI document
    is the one source of what a Pet holds; the store, the service and the
    scenario checks read this rather than keep a copy.
    """
    schema = openapi_document()["components"]["schemas"][name]
    fields: list[str] = list(schema.get("properties", {}))
    parts = schema.get("allOf", [])
    for part in [p for p in parts if "$ref" not in p] + [p for p in parts if "$ref" in p]:
        if "$ref" in part:
            inherited = object_fields(part["$ref"].rsplit("/", 1)[-1])
        else:
            inherited = tuple(part.get("properties", {}))
        fields.extend(f for f in inherited if f not in fields)
    return tuple(fields)


@cache
def integer_fields(name: str) -> frozenset[str]:
    """The properties of a component schema (through ``allOf``) typed integer."""
    components = openapi_document()["components"]["schemas"]
    found: set[str] = set()
    stack = [components[name]]
    while stack:
        schema = stack.pop()
        for field, spec in schema.get("properties", {}).items():
            if _resolve(spec).get("type") == "integer":
                found.add(field)
        for part in schema.get("allOf", []):
            stack.append(_resolve(part))
    return frozenset(found)


def as_integers(value: dict[str, Any], fields: frozenset[str]) -> dict[str, Any]:
    """``value`` with the integral floats of integer ``fields`` stored as ints (7.0 -> 7)."""
    for field in fields:
        number = value.get(field)
        if isinstance(number, float):
            value[field] = int(number)
    return value
