"""Reading scenario files: safe YAML with line marks, checked against the schema.

Every problem is collected before anything is refused, and each is reported
as ``file:line:column: json.path: message`` using the position of the YAML
node it is about, so a user can jump straight to it.
"""

from __future__ import annotations

import difflib
import json
import re
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from mockstore.clock import outside_range, parse_time
from mockstore.scenario.problems import (
    MAX_DEPTH,
    MAX_EXPANDED_BYTES,
    MAX_NODES,
    MAX_VALUES,
    NODE_COST,
    PRICE_EVERY,
    QUOTE_LIMIT,
    Marks,
    Path,
    Problem,
    ScenarioError,
    json_path,
    priced,
    problem_order,
    quoted,
)

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError


def parse_yaml(text: str, file: str) -> tuple[Any, Marks]:
    """Parse one YAML document into plain data and the marks of its nodes.

    Raises ScenarioError for syntax errors, refused tags, recursive aliases
    and duplicate keys, with every such problem of the document at once.
    PyYAML is imported on the first parse (``yaml_reader``).
    """
    from mockstore.scenario.yaml_reader import read_yaml

    return read_yaml(text, file)


def _is_time(value: object) -> bool:
    if isinstance(value, str):
        if not re.match(r"^\d{4}-\d\d-\d\d[Tt ]\d\d:\d\d", value.strip()):
            raise ValueError(
                f"not a date-time: {quoted(value)}; write an RFC 3339 instant such as "
                "2026-03-01T12:00:00Z"
            )
        try:
            when = parse_time(value)
        except (ValueError, OverflowError) as exc:
            raise ValueError(f"not a valid date-time: {quoted(value)} ({exc})") from None
        problem = outside_range(when)
        if problem is not None:
            raise ValueError(problem)
    return True


@cache
def scenario_schema() -> dict[str, Any]:
    """The scenario format's JSON Schema (the one ``mockstore schema`` prints).

    Parsed once and shared: the model, the builder and the control API read it
    at import time and on every scenario load, so a caller that changes what it
    reads must copy it first.
    """
    text = resources.files("mockstore.scenario").joinpath("scenario.schema.json").read_text()
    return json.loads(text)


def schema_default(*path: str) -> Any:
    """The ``default`` the scenario schema gives a setting, e.g. ``("behaviour", "sunset")``.

    The schema is the one place a scenario default is written: the model, the
    builder and ``mockstore schema`` (editor autocompletion) all read it here.
    """
    node = scenario_schema()
    for part in path:
        node = node["properties"][part]
    return node["default"]


def _is_strict_integer(checker: object, instance: object) -> bool:
    # JSON Schema counts 60.0 as an integer; a scenario may not, so that a plan
    # of 60.0 requests never turns into "60.0" in a header or a JSON body.
    return isinstance(instance, int) and not isinstance(instance, bool)


@cache
def _validator() -> Any:
    # jsonschema is imported here, on the first check: a start whose scenario was
    # checked before never needs it (``mockstore.verdicts``).
    from jsonschema import Draft202012Validator, FormatChecker, validators

    formats = FormatChecker(formats=())
    formats.checks("date-time", raises=ValueError)(_is_time)
    extended = validators.extend(
        Draft202012Validator,
        type_checker=Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_strict_integer),
    )
    return extended(scenario_schema(), format_checker=formats)


def schema_problems(data: Any, marks: Marks, file: str) -> list[Problem]:
    """Every way ``data`` breaks the scenario JSON Schema, in file order."""
    return [problem for _, problem in check_schema(data, marks, file)]


def check_schema(data: Any, marks: Marks, file: str) -> list[tuple[Path, Problem]]:
    """Like ``schema_problems``, with the document path each problem is about.

    The paths let the semantic checks skip exactly the parts the schema
    already refused, and still check the rest of the file.
    """
    found: list[tuple[Path, Problem]] = []
    for error in _validator().iter_errors(data):
        found.extend(_explain(error, marks, file))
    unique = {(p.line, p.column, p.path, p.message): (path, p) for path, p in found}
    return sorted(unique.values(), key=lambda item: problem_order(item[1]))


def _explain(error: ValidationError, marks: Marks, file: str) -> list[tuple[Path, Problem]]:
    path: Path = tuple(error.absolute_path)
    schema = error.schema if isinstance(error.schema, dict) else {}
    if "propertyNames" in error.relative_schema_path and isinstance(error.instance, str):
        # jsonschema reports a bad key at its mapping; point at the key itself.
        key_path = (*path, error.instance)
        message = schema.get("x-error", {}).get(error.validator) or _message(error)
        return [(key_path, _problem(file, marks, key_path, message, key=True))]
    custom = schema.get("x-error")
    if isinstance(custom, dict) and error.validator in custom:
        return [(path, _problem(file, marks, path, custom[error.validator]))]
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        known = set(schema.get("properties", {}))
        patterns = [re.compile(p) for p in schema.get("patternProperties", {})]
        out = []
        for extra in sorted(k for k in error.instance if k not in known):
            if any(p.search(extra) for p in patterns):
                continue
            message = f"unknown key {quoted(extra)}" + _did_you_mean(extra, known)
            out.append(((*path, extra), _problem(file, marks, (*path, extra), message, key=True)))
        if out:
            return out
    if error.validator in ("oneOf", "anyOf") and error.context:
        # Report the branch that came closest rather than "is not valid under any".
        best = max(error.context, key=lambda e: (len(e.absolute_path), -len(e.message)))
        if best.validator != "type" or len(best.absolute_path) > len(path):
            return _explain(best, marks, file)
        types = sorted({str(e.validator_value) for e in error.context if e.validator == "type"})
        wanted = " or ".join(_TYPE_WORDS.get(t, t) for t in types)
        message = f"must be {wanted}, got {_kind(error.instance)}"
        return [(path, _problem(file, marks, path, message))]
    return [(path, _problem(file, marks, path, _message(error)))]


_TYPE_WORDS = {
    "integer": "an integer",
    "number": "a number",
    "string": "a string",
    "boolean": "true or false",
    "object": "a mapping",
    "array": "a list",
    "null": "null",
}


def _message(error: ValidationError) -> str:
    value = error.validator_value
    instance = error.instance
    if error.validator == "type":
        wanted = _TYPE_WORDS.get(str(value), str(value))
        message = f"must be {wanted}, got {_kind(instance)}"
        if value == "string" and isinstance(instance, bool):
            message += " (YAML reads yes/no/on/off/true/false as booleans: quote it)"
        elif value == "string" and isinstance(instance, int | float):
            message += f" (quote it: '{instance}')"
        return message
    if error.validator == "enum":
        allowed = ", ".join(json.dumps(v) for v in value)
        hint = ""
        if isinstance(instance, str):
            hint = _did_you_mean(instance, {v for v in value if isinstance(v, str)}, 0.75)
        return f"must be one of {allowed}, got {_json_quoted(instance)}{hint}"
    if error.validator == "const":
        return f"must be {json.dumps(value)}, got {_json_quoted(instance)}"
    if error.validator == "required":
        return error.message.replace("is a required property", "is required")
    if error.validator == "format":
        cause = error.cause
        return str(cause) if cause else f"not a valid {value}: {quoted(instance)}"
    if error.validator == "minimum":
        return f"must be at least {value}, got {instance}"
    if error.validator == "maximum":
        return f"must be at most {value}, got {instance}"
    if error.validator == "exclusiveMinimum":
        return f"must be more than {value}, got {instance}"
    if error.validator == "exclusiveMaximum":
        return f"must be less than {value}, got {instance}"
    if error.validator == "minItems":
        return f"must have at least {value} item(s), got {len(instance)}"
    if error.validator == "maxItems":
        return f"must have at most {value} item(s), got {len(instance)}"
    if error.validator == "minLength":
        return "must not be empty" if value == 1 else f"must be at least {value} characters"
    if error.validator == "pattern":
        return f"{_json_quoted(instance)} does not match the pattern {value}"
    if error.validator == "not":
        return "this combination is not allowed"
    return error.message


def _problem(file: str, marks: Marks, path: Path, message: str, key: bool = False) -> Problem:
    line, column = marks.at(path, key=key)
    if len(message) > 8 * QUOTE_LIMIT:  # whatever quoted the file at length, cut it short
        message = message[: 8 * QUOTE_LIMIT] + "... (cut)"
    return Problem(file, line, column, json_path(path), message)


def problem_at(file: str, marks: Marks, path: Path, message: str, key: bool = False) -> Problem:
    """A Problem about ``path``, positioned at its value (or its key) in the file."""
    return _problem(file, marks, path, message, key)


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {json.dumps(value)}"
    if isinstance(value, int | float):
        return f"{'integer' if isinstance(value, int) else 'number'} {value}"
    if isinstance(value, str):
        return f"string {quoted(value)}"
    if isinstance(value, list):
        return "a list"
    return "a mapping"


def _json_quoted(value: object) -> str:
    if isinstance(value, str) and len(value) > QUOTE_LIMIT:
        return f"{json.dumps(value[:QUOTE_LIMIT])}... ({len(value):,} characters)"
    text = json.dumps(value)
    return text if len(text) <= 4 * QUOTE_LIMIT else text[: 4 * QUOTE_LIMIT] + "..."


def describe_document(value: object) -> str:
    """What a document holds, in words, never its content (for a file that is not a scenario)."""
    if isinstance(value, str):
        return f"a string of {len(value):,} character{'s' if len(value) != 1 else ''}"
    if isinstance(value, list):
        return f"a list of {len(value):,} item{'s' if len(value) != 1 else ''}"
    if value is None:
        return "nothing but null"
    return f"a {type(value).__name__}"


def did_you_mean(word: str, candidates: set[str] | list[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest candidate, or an empty string."""
    return _did_you_mean(word, set(candidates))


def _did_you_mean(word: str, candidates: set[str], cutoff: float = 0.6) -> str:
    lowered = {c.lower(): c for c in candidates}
    if word.lower() in lowered and lowered[word.lower()] != word:
        return f" (did you mean {lowered[word.lower()]!r}?)"
    found = difflib.get_close_matches(word, sorted(candidates), n=1, cutoff=cutoff)
    return f" (did you mean {found[0]!r}?)" if found else ""


# Named here too: the loader is where callers have always found them.
__all__ = [
    "MAX_DEPTH",
    "MAX_EXPANDED_BYTES",
    "MAX_NODES",
    "MAX_VALUES",
    "NODE_COST",
    "PRICE_EVERY",
    "Marks",
    "Problem",
    "ScenarioError",
    "check_schema",
    "describe_document",
    "did_you_mean",
    "parse_yaml",
    "priced",
    "problem_at",
    "quoted",
    "scenario_schema",
    "schema_default",
    "schema_problems",
]
