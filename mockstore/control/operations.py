"""What a control endpoint says of itself, for the control API's OpenAPI document.

Each endpoint method carries its description, written beside it with
``@described(Operation(...))``: its operationId, what it takes (query
parameters, a body and its examples), what it answers (each status, its
media type and JSON Schema) and the Error codes it sends itself.
``ControlRoute`` keeps each method's endpoint, so ``mockstore.control.openapi``
can read the route table the server mounts and write the document from it:
the paths and methods come from the table, the rest from these descriptions.

Body schemas are plain JSON Schema (2020-12, as OpenAPI 3.1 takes it), built
with the helpers below; a ``Schema`` is a named one, a component of the
document, which may stand anywhere in another (the document refers to it).
The tests hold every endpoint's real answers to its description
(``tests/test_control_document.py``), so a body that changes without it fails.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from mockstore import schemas
from mockstore.scenario import scenario_schema

JsonSchema = dict[str, Any]
Endpoint = Callable[[Request], Awaitable[Response]]
JSON = "application/json"

STRING: JsonSchema = {"type": "string"}
INTEGER: JsonSchema = {"type": "integer"}
NUMBER: JsonSchema = {"type": "number"}
BOOLEAN: JsonSchema = {"type": "boolean"}


def obj(
    properties: Mapping[str, Any],
    *,
    optional: Iterable[str] = (),
    description: str = "",
) -> JsonSchema:
    """An object with ``properties``, all required but the ``optional`` ones.

    Open to fields it does not name: a client generated from this document
    keeps working when a later mockstore adds one (the tests close every
    object when they check real answers, so nothing goes undescribed).
    """
    left_out = set(optional)
    schema: JsonSchema = {
        "type": "object",
        "required": [name for name in properties if name not in left_out],
        "properties": dict(properties),
    }
    if description:
        schema["description"] = description
    return schema


def array(items: Any, description: str = "") -> JsonSchema:
    schema: JsonSchema = {"type": "array", "items": items}
    if description:
        schema["description"] = description
    return schema


def nullable(schema: Any) -> JsonSchema:
    """``schema`` or ``null``."""
    return {"anyOf": [schema, {"type": "null"}]}


def doc(schema: Any, description: str) -> JsonSchema:
    """``schema`` with a description (a ``Schema``: the reference, with the description beside)."""
    if isinstance(schema, Schema):
        return {"$ref": schema, "description": description}
    return {**schema, "description": description}


def query_integer() -> JsonSchema:
    """An integer query parameter: digits with an optional sign; empty is as if absent."""
    return {"anyOf": [INTEGER, {"const": ""}]}


def setting(*names: str) -> JsonSchema:
    """The scenario JSON Schema's setting at ``names`` (``setting("clock", "mode")``), a copy.

    What the control API answers of a scenario is described by the one schema
    that defines it.
    """
    schema = scenario_schema()
    for name in names:
        schema = schema["properties"][name]
    return copy.deepcopy(schema)


@dataclass(frozen=True)
class Schema:
    """A named JSON Schema: one component of the document, referred to by ``$ref``."""

    name: str
    schema: JsonSchema

    def ref(self) -> JsonSchema:
        return {"$ref": f"#/components/schemas/{self.name}"}


@dataclass(frozen=True)
class Param:
    """A query parameter (path parameters come from the route's own path)."""

    name: str
    schema: JsonSchema
    description: str


@dataclass(frozen=True)
class Example:
    """A request body example; ``tests/test_control_document.py`` sends each to a server."""

    name: str
    summary: str
    value: Any
    media: str = JSON


@dataclass(frozen=True)
class Body:
    """A request body: its JSON Schema by media type, and examples."""

    description: str
    content: Mapping[str, Any]
    examples: tuple[Example, ...] = ()
    required: bool = False


@dataclass(frozen=True)
class Answer:
    """One documented answer: its description, its body's schema and media types, its headers."""

    description: str
    body: Any = None
    media: str | tuple[str, ...] = JSON
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Operation:
    """Everything the document says of one endpoint but its path and method.

    ``errors`` are the Error codes the endpoint sends itself, by status; the
    ones every control request may meet (the token, the ``Host`` check, the
    bounds on a body) are the document's to add (``mockstore.control.openapi``).
    """

    id: str
    summary: str
    tag: str
    answers: Mapping[int, Answer]
    errors: Mapping[int, tuple[str, ...]] = field(default_factory=dict)
    params: tuple[Param, ...] = ()
    body: Body | None = None
    description: str = ""


_ATTRIBUTE = "control_operation"
F = TypeVar("F", bound=Callable[..., Any])


def described(operation: Operation) -> Callable[[F], F]:
    """Attach ``operation`` to the endpoint it describes."""

    def attach(endpoint: F) -> F:
        setattr(endpoint, _ATTRIBUTE, operation)
        return endpoint

    return attach


def operation_of(endpoint: Callable[..., Any]) -> Operation | None:
    """The description attached to ``endpoint`` (a bound method reads its function's)."""
    found = getattr(endpoint, _ATTRIBUTE, None)
    return found if isinstance(found, Operation) else None


class ControlRoute(Route):
    """A Starlette ``Route`` that keeps the endpoint of each of its methods (``endpoints``)."""

    def __init__(self, path: str, endpoint: Endpoint, endpoints: Mapping[str, Endpoint]) -> None:
        super().__init__(path, endpoint, methods=list(endpoints), name=path)
        self.endpoints = dict(endpoints)


_API_REF = "#/components/schemas/"


@functools.cache
def api_schema(name: str) -> Schema:
    """The Pet Store document's schema ``name`` (``Pet``), its references as ``Schema``."""

    def placed(value: Any) -> Any:
        if isinstance(value, dict):
            ref = value.get("$ref")
            if isinstance(ref, str) and ref.startswith(_API_REF):
                return api_schema(ref.removeprefix(_API_REF))
            return {key: placed(item) for key, item in value.items()}
        if isinstance(value, list):
            return [placed(item) for item in value]
        return value

    return Schema(name, placed(schemas.openapi_document()["components"]["schemas"][name]))
