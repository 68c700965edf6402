"""Request validation against the OpenAPI document, with messages that name the field.

Pure functions over bytes and strings that raise ``ApiError`` (400 or 415)
naming what was wrong. Query strings repeat a lot (a test suite asks for
``?limit=20`` thousands of times), so their outcome is cached, within a byte
budget (``budget.py``).

An integer in a path or a query may have any number of digits: Python refuses
to convert more than 4,300 (a guard against slow conversions), and no int64
has more than 19 significant ones, so a longer number is refused for its
length before any conversion, with the parameter's own bounds in the message.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import parse_qsl

from mockstore import schemas
from mockstore.budget import ByteBudget
from mockstore.errors import ABOVE_MAXIMUM_CONDITIONS, PARAMETER_CONDITIONS, ApiError, FieldProblem

_INTEGER = re.compile(r"-?[0-9]+")
# Beyond any int64: 19 digits hold 9,223,372,036,854,775,807.
_MAX_DIGITS = 19
# Per validator: 1 MiB of cached query outcomes, none from a query over 2 KiB.
QUERY_CACHE_BYTES = 1024 * 1024
QUERY_CACHE_ITEM = 2048


def _invalid_parameter(
    name: str,
    message: str,
    above: bool = False,
    *,
    location: str = "query",
    reason: str = "type",
    value: str | None = None,
) -> ApiError:
    # The condition names the parameter (bad_limit, bad_pet_id, ...): a
    # provider may give each its own Error code (behaviour.error_codes), and a
    # value above the parameter's maximum its own (limit_above_maximum).
    condition = ABOVE_MAXIMUM_CONDITIONS.get(name) if above else None
    # What is at fault, for a scenario's Error messages and details (error_bodies.py).
    problem = FieldProblem(location, (name,), reason, message, value, value is not None)
    return ApiError(
        "invalid_parameter",
        message,
        condition=condition or PARAMETER_CONDITIONS[name],
        value=value,
        parameter=name,
        details=(problem,),
    )


def above_maximum(parameter: schemas.Parameter, raw: str) -> bool:
    """True when ``raw`` is an integer above the parameter's stated maximum."""
    maximum = parameter.schema.get("maximum")
    if maximum is None or not _INTEGER.fullmatch(raw) or raw.startswith("-"):
        return False
    significant = raw.lstrip("0") or "0"
    return len(significant) > _MAX_DIGITS or int(significant) > maximum


def _convert(parameter: schemas.Parameter, raw: str) -> Any:
    """A raw string as the parameter's schema type; raises ApiError."""
    where = f"{parameter.location} parameter '{parameter.name}'"
    sent = {"location": parameter.location, "value": raw}
    if parameter.type == "integer":
        if not _INTEGER.fullmatch(raw):
            raise _invalid_parameter(
                parameter.name, f"{where} must be an integer (got {_shown(raw)})", **sent
            )
        negative = raw.startswith("-")
        significant = raw.lstrip("-").lstrip("0") or "0"  # limit=01 is 1
        if len(significant) > _MAX_DIGITS:
            raise _invalid_parameter(
                parameter.name,
                f"{where} is out of range: a {len(significant)}-digit integer{_bounds(parameter)}",
                above=not negative,
                reason="maximum" if not negative else "minimum",
                **sent,
            )
        value: Any = -int(significant) if negative else int(significant)
    else:
        value = raw
    check = parameter.check
    if check is not None and check(value):
        return value  # jsonschema's verdict, without compiling (or importing) it
    for error in schemas.errors_of(parameter.validator, value):
        raise _invalid_parameter(
            parameter.name,
            schemas.describe(error, where),
            above=error.validator == "maximum",
            reason=str(error.validator),
            **sent,
        )
    return value


def _shown(raw: str, keep: int = 40) -> str:
    """A value as a message quotes it: cut short, so an answer never echoes kilobytes."""
    if len(raw) <= keep:
        return repr(raw)
    return f"{raw[:keep]!r}... ({len(raw)} characters)"


def _bounds(parameter: schemas.Parameter) -> str:
    """``; must be from 1 to 100`` from the parameter's schema, or the int64 range."""
    schema = parameter.schema
    low = schema.get("minimum", -(2**63) if schema.get("format") == "int64" else None)
    high = schema.get("maximum", 2**63 - 1 if schema.get("format") == "int64" else None)
    if low is not None and high is not None:
        return f"; must be from {low} to {high}"
    if high is not None:
        return f"; must be at most {high}"
    return ""


class QueryValidator:
    """Validates one operation's query string; outcomes are cached per string."""

    def __init__(self, operation: schemas.Operation, repeated: str = "refuse") -> None:
        self.parameters = [p for p in operation.parameters if p.location == "query"]
        # A parameter given twice: refused, or its first or last value read
        # (collections.repeated_parameters).
        self.repeated = repeated
        # A string's parsed values, or its refusal's parts (see _parts).
        self._cache: dict[bytes, dict[str, Any] | tuple[Any, ...]] = {}
        self._budget = ByteBudget(QUERY_CACHE_BYTES, QUERY_CACHE_ITEM)

    def __call__(self, query_string: bytes) -> dict[str, Any]:
        """The query's values (defaults filled in); raises ApiError when one is invalid."""
        result = self._cache.get(query_string)
        if result is None:
            try:
                result = self._validate(query_string)
            except ApiError as refusal:
                result = _parts(refusal)
            # The message of a refusal can quote the query: counted twice.
            if self._budget.admit(self._cache, 2 * len(query_string)):
                self._cache[query_string] = result
        if isinstance(result, tuple):
            # A new exception each time: a re-raised one would keep growing its traceback.
            code, message, condition, value, parameter, details = result
            raise ApiError(
                code,
                message,
                condition=condition,
                value=value,
                parameter=parameter,
                details=details,
            )
        return result

    def _validate(self, query_string: bytes) -> dict[str, Any]:
        given: dict[str, list[str]] = {}
        text = query_string.decode("latin-1")
        for name, value in parse_qsl(text, keep_blank_values=True):
            given.setdefault(name, []).append(value)
        values: dict[str, Any] = {}
        for parameter in self.parameters:
            name = parameter.name
            raw = given.get(name)
            if not raw:
                if parameter.required:
                    raise _invalid_parameter(
                        name, f"query parameter '{name}' is required", reason="required"
                    )
                values[name] = parameter.default
                continue
            if len(raw) > 1 and self.repeated != "refuse":
                raw = raw[-1:] if self.repeated == "last" else raw[:1]
            if len(raw) > 1:
                raise _invalid_parameter(
                    name,
                    f"query parameter '{name}' is given {len(raw)} times; give it once",
                    reason="repeated",
                    value=raw[-1],
                )
            values[name] = _convert(parameter, raw[0])
        return values


def _parts(refusal: ApiError) -> tuple[Any, ...]:
    """What a cached refusal is raised again from (never the exception itself)."""
    return (
        refusal.code,
        refusal.message,
        refusal.condition,
        refusal.value,
        refusal.parameter,
        refusal.details,
    )


def path_parameters(operation: schemas.Operation, raw: dict[str, str]) -> dict[str, Any]:
    """The path parameters as sent, converted and checked; raises ApiError."""
    return {
        parameter.name: _convert(parameter, raw[parameter.name])
        for parameter in operation.parameters
        if parameter.location == "path"
    }


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


# JSON read from a recording or a journal (a body a client sent, a HAR) may be
# nested at most this deep: Python's parser recurses, and a body of 100,000
# brackets is a RecursionError (a traceback), not a value.
MAX_JSON_DEPTH = 64
# A JSON string, unrolled (runs of plain characters, then one escape) and
# possessive (nothing to backtrack into): a character-by-character alternation
# took 270 ms over a 1 MiB string, holding the GIL throughout, and the engine's
# backtracking stack grew with every escape (450 MB for a string of 4 million
# escapes); this takes 12 ms a MiB, in constant memory.
_JSON_STRING = re.compile(rb'"[^"\\]*+(?:\\.[^"\\]*+)*+"')
_INNERMOST = re.compile(rb"\[\]|\{\}")


def json_depth_over(data: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """True if ``data`` (JSON text) nests arrays and objects more than ``limit`` deep.

    Decided before it is parsed, in C-speed passes: strings and everything but
    brackets go, then each pass removes the innermost pairs; what is left
    after ``limit`` passes is deeper than that.
    """
    brackets = _JSON_STRING.sub(b"", data).translate(None, _NOT_BRACKETS)
    for _ in range(limit):
        if not brackets:
            return False
        brackets = _INNERMOST.sub(b"", brackets)
    return bool(brackets)


_NOT_BRACKETS = bytes(c for c in range(256) if c not in b"[]{}")


def json_parse_cost(raw: bytes) -> int:
    """The most parsing ``raw`` (JSON) may hold: a bound counted in C-speed passes.

    Measured with tracemalloc, a parsed value holds 2 to 3 bytes for each byte
    of a string, and up to 29 for small containers in arrays ({"a":[1]} over
    and over): each container, member and item costs tens of bytes whatever its
    text. So 4 a byte (a character is at most 4), and 100 for each bracket,
    comma and colon (counted inside strings too: more, never less).
    """
    marks = raw.count(b"{") + raw.count(b"[") + raw.count(b",") + raw.count(b":")
    return 4 * len(raw) + 100 * marks + 1024


def loads_bounded(data: bytes | str, limit: int = MAX_JSON_DEPTH) -> Any:
    """``json.loads``, refusing (``ValueError``) a document nested more than ``limit`` deep."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if json_depth_over(raw, limit):
        raise ValueError(f"the JSON is nested more than {limit} levels deep")
    return json.loads(data)


def parse_json_body(body: bytes) -> Any:
    """The JSON value of a request body; raises ApiError naming the problem."""
    if not body.strip():
        raise ApiError("missing_body", "a request body is required: a JSON NewPet object")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ApiError("malformed_json", f"the body is not UTF-8 (byte {exc.start})") from None
    try:
        return json.loads(text, parse_constant=_no_constants)
    except json.JSONDecodeError as exc:
        raise ApiError(
            "malformed_json",
            f"the body is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
        ) from None
    except (ValueError, RecursionError) as exc:
        raise ApiError("malformed_json", f"the body is not valid JSON: {exc}") from None


def validate_body(operation: schemas.Operation, value: Any) -> None:
    """Check a parsed body against the operation's request schema; raises ApiError.

    The message names the first problem; ``details`` holds every one, each field
    once (a scenario's Error ``details`` lists them all: ``error_bodies.py``).
    """
    assert operation.body_schema is not None
    validator = schemas.validator_for(operation.body_schema)
    errors = list(schemas.errors_of(validator, value))
    if not errors:
        return
    problems: dict[tuple[str | int, ...], FieldProblem] = {}
    for error in errors:
        problem = _field_problem(error)
        problems.setdefault(problem.field, problem)
    first = errors[0]
    at = problems[_field_problem(first).field]
    raise ApiError(
        "validation_failed",
        schemas.describe(first, ""),
        condition="invalid_body",
        value=at.value if at.sent else None,
        parameter=".".join(str(part) for part in at.field) or None,
        details=tuple(problems.values()),
    )


def _field_problem(error: Any) -> FieldProblem:
    """One JSON Schema error of a body as the field it is about."""
    path = tuple(error.absolute_path)
    if error.validator == "required" and "'" in error.message:
        missing = error.message.split("'")[1]
        return FieldProblem(
            "body", (*path, missing), "required", schemas.describe(error, ""), None, False
        )
    return FieldProblem(
        "body", path, str(error.validator), schemas.describe(error, ""), error.instance, True
    )


def is_json_media_type(content_type: bytes | None) -> bool:
    if content_type is None:
        return False
    media = content_type.split(b";", 1)[0].strip().lower()
    return media == b"application/json"
