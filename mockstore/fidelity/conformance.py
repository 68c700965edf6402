"""Whether an answer's body matches the OpenAPI document's schema for its status.

``drift`` checks thousands of bodies, most of them alike (a listing repeats
the pets of the one before), so each outcome is cached by the body's bytes
and each schema is compiled once with its ``$ref``s inlined.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from mockstore import schemas

_OPERATIONS = schemas.operations()


def schema_pointer(operation: str | None, status: int) -> str | None:
    """The OpenAPI schema an answer's body should match, as ``assert_conforms`` reads it."""
    if (
        operation is not None
        and operation in _OPERATIONS
        and str(status) in _OPERATIONS[operation].responses
    ):
        op = _OPERATIONS[operation]
        spec = schemas.openapi_document()["paths"][op.path][op.method.lower()]
        answer = spec["responses"][str(status)]
        if "$ref" in answer:
            name = answer["$ref"].rsplit("/", 1)[-1]
            answer = schemas.openapi_document()["components"]["responses"][name]
        content = answer.get("content", {}).get("application/json")
        if content:
            return str(content["schema"]["$ref"])
    if status >= 400:
        return "#/components/schemas/Error"
    return None


_conformance_cache: dict[tuple[str, bytes], str | None] = {}
_CACHE_LIMIT = 50_000


def conformance(pointer: str, body: bytes, value: Any) -> str | None:
    """None when ``value`` matches the schema, else the first problem (cached by body).

    An array schema whose items are a ``$ref`` (``Pets``) is checked item by
    item, each item's outcome cached by its JSON: a listing repeats the pets of
    the one before, and one ``Pet`` costs a fraction of a ``$ref``-resolving
    pass over twenty.
    """
    cache_key = (pointer, body)
    if cache_key in _conformance_cache:
        return _conformance_cache[cache_key]
    split = _array_of_refs(pointer)
    if split is not None and isinstance(value, list):
        outer, items = split
        problem = _first_problem(outer, value, "")
        for index, item in enumerate(value):
            if problem is not None:
                break
            text = json.dumps(item, sort_keys=True).encode()
            found = conformance(items, text, item)
            problem = f"[{index}] {found}" if found else None
    else:
        problem = _first_problem(inlined(pointer), value, "")
    if len(_conformance_cache) > _CACHE_LIMIT:
        _conformance_cache.clear()
    _conformance_cache[cache_key] = problem
    return problem


def _first_problem(validator: Any, value: Any, root: str) -> str | None:
    for error in schemas.errors_of(validator, value):
        return schemas.describe(error, root)
    return None


@lru_cache(maxsize=64)
def inlined(pointer: str) -> Any:
    """A validator for the document's schema at ``pointer`` with every ``$ref`` inlined.

    The same schema, compiled without references: resolving them is most of
    what a check costs, and drift checks thousands of bodies.
    """
    document = schemas.openapi_document()

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            if set(node) == {"$ref"}:
                target: Any = document
                for part in node["$ref"].removeprefix("#/").split("/"):
                    target = target[part]
                return resolve(target)
            return {key: resolve(value) for key, value in node.items()}
        if isinstance(node, list):
            return [resolve(value) for value in node]
        return node

    target: Any = document
    for part in pointer.removeprefix("#/").split("/"):
        target = target[part]
    return schemas.validator_class()(resolve(target), format_checker=schemas.format_checker())


_arrays: dict[str, tuple[Any, str] | None] = {}


def _array_of_refs(pointer: str) -> tuple[Any, str] | None:
    """(validator of the array's own keywords, the items' pointer), for ``items: {$ref}``."""
    if pointer not in _arrays:
        node: Any = schemas.openapi_document()
        for part in pointer.removeprefix("#/").split("/"):
            node = node[part]
        items = node.get("items") if isinstance(node, dict) else None
        rest = {k: v for k, v in node.items() if k != "items"} if items else {}
        if isinstance(items, dict) and set(items) == {"$ref"} and "$ref" not in json.dumps(rest):
            _arrays[pointer] = (schemas.validator_class()(rest), items["$ref"])
        else:
            _arrays[pointer] = None
    return _arrays[pointer]
