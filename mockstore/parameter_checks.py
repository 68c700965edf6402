"""A parameter's small schema checked by plain code: jsonschema's verdict, without jsonschema.

The document's parameters have schemas of a few keywords (``type``, ``minimum``,
``maximum``, ``enum``, ``format: int64``). Checking a query or path value
against them with jsonschema costs its import on a server's first request (most
of a start, issue 29) and a validator's walk on every path parameter. A schema
made only of the keywords below is compiled here to a function giving the same
verdict; any other schema gets None, and its values go to jsonschema as before.
A refusal is always explained by jsonschema (``schemas.describe``), so its
message stays the one it was: this module only says "valid" sooner.
``tests/test_parameter_checks.py`` holds the verdicts to jsonschema's for every
value and every schema of this grammar.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# A verdict: True when the value is valid against the schema it was compiled from.
Check = Callable[[Any], bool]

# Keywords that say nothing about validity (annotations).
_ANNOTATIONS = frozenset(
    {
        "default",
        "description",
        "title",
        "example",
        "examples",
        "deprecated",
        "readOnly",
        "writeOnly",
    }
)
_BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
_KNOWN = _ANNOTATIONS | {"type", "enum", "format", *_BOUNDS}
_TYPES = frozenset({"integer", "number", "string", "boolean"})
# The document's own formats (``schemas.format_checker``); other names: jsonschema.
_FORMAT_RANGES = {"int64": (-(2**63), 2**63 - 1), "int32": (-(2**31), 2**31 - 1)}


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _has_type(value: object, name: str) -> bool:
    if name == "string":
        return isinstance(value, str)
    if name == "boolean":
        return isinstance(value, bool)
    if name == "number":
        return _is_number(value)
    # JSON Schema 2020-12: an integral float is an integer (the document's semantics).
    return _is_number(value) and (isinstance(value, int) or float(value).is_integer())


def _same(a: object, b: object) -> bool:
    """JSON equality of scalars: true and 1 differ, 1 and 1.0 do not."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if _is_number(a) and _is_number(b):
        return a == b
    return type(a) is type(b) and a == b


def _number(bound: object) -> bool:
    return _is_number(bound)


def compile_check(schema: object) -> Check | None:
    """The verdict of ``schema`` on a value as plain code, or None if it is not covered."""
    if not isinstance(schema, dict) or not set(schema) <= _KNOWN:
        return None
    kind = schema.get("type")
    if kind is not None and (not isinstance(kind, str) or kind not in _TYPES):
        return None
    bounds = {key: schema[key] for key in _BOUNDS if key in schema}
    if not all(_number(bound) for bound in bounds.values()):
        return None
    allowed = schema.get("enum")
    if allowed is not None and (
        not isinstance(allowed, list)
        or not all(v is None or isinstance(v, str | int | float | bool) for v in allowed)
    ):
        return None
    name = schema.get("format")
    if name is not None and name not in _FORMAT_RANGES:
        return None
    low_high = _FORMAT_RANGES.get(name) if name is not None else None

    def check(value: Any) -> bool:
        if kind is not None and not _has_type(value, kind):
            return False
        if allowed is not None and not any(_same(value, option) for option in allowed):
            return False
        if _is_number(value):
            if "minimum" in bounds and value < bounds["minimum"]:
                return False
            if "maximum" in bounds and value > bounds["maximum"]:
                return False
            if "exclusiveMinimum" in bounds and value <= bounds["exclusiveMinimum"]:
                return False
            if "exclusiveMaximum" in bounds and value >= bounds["exclusiveMaximum"]:
                return False
            if low_high is not None and not low_high[0] <= value <= low_high[1]:
                return False
        return True

    return check
