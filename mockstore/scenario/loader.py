"""Reading scenario files: safe YAML with line marks, checked against the schema.

Every problem is collected before anything is refused, and each is reported
as ``file:line:column: json.path: message`` using the position of the YAML
node it is about, so a user can jump straight to it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import yaml
from jsonschema import Draft202012Validator, FormatChecker
from jsonschema.exceptions import ValidationError

from mockstore.clock import parse_time

Path = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with a scenario, and where."""

    file: str
    line: int
    column: int
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}: {self.path}: {self.message}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "path": self.path,
            "message": self.message,
        }


class ScenarioError(Exception):
    """A scenario that cannot be used, with every problem found in it."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


def json_path(path: Path) -> str:
    text = "$"
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text


class _Loader(yaml.SafeLoader):
    """Safe YAML in which times stay strings: the schema checks their format."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


class Marks:
    """Where each value (and each mapping key) of a document stands in its file."""

    def __init__(self) -> None:
        self.values: dict[Path, tuple[int, int]] = {}
        self.keys: dict[Path, tuple[int, int]] = {}

    def at(self, path: Path, *, key: bool = False) -> tuple[int, int]:
        if key and path in self.keys:
            return self.keys[path]
        while path not in self.values and path:
            path = path[:-1]
        return self.values.get(path, (1, 1))


def _position(mark: yaml.Mark | None) -> tuple[int, int]:
    return (mark.line + 1, mark.column + 1) if mark else (1, 1)


def parse_yaml(text: str, file: str) -> tuple[Any, Marks]:
    """Parse one YAML document into plain data and the marks of its nodes.

    Raises ScenarioError for syntax errors, unsafe tags and duplicate keys.
    """
    loader = _Loader(text)
    marks = Marks()
    problems: list[Problem] = []
    try:
        node = loader.get_single_node()
        if node is None:
            raise ScenarioError([Problem(file, 1, 1, "$", "the file is empty")])
        data = _build(loader, node, (), marks, problems, file)
    except yaml.MarkedYAMLError as exc:
        line, column = _position(exc.problem_mark or exc.context_mark)
        message = " ".join(str(p) for p in (exc.context, exc.problem) if p)
        raise ScenarioError([Problem(file, line, column, "$", f"YAML: {message}")]) from None
    except yaml.YAMLError as exc:
        raise ScenarioError([Problem(file, 1, 1, "$", f"YAML: {exc}")]) from None
    finally:
        loader.dispose()
    if problems:
        raise ScenarioError(problems)
    return data, marks


def _build(
    loader: _Loader,
    node: yaml.Node,
    path: Path,
    marks: Marks,
    problems: list[Problem],
    file: str,
) -> Any:
    marks.values[path] = _position(node.start_mark)
    if isinstance(node, yaml.MappingNode):
        loader.flatten_mapping(node)
        result: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            if not isinstance(key, str):
                key = str(key)
            child = (*path, key)
            if key in result:
                line, column = _position(key_node.start_mark)
                problems.append(
                    Problem(file, line, column, json_path(child), f"duplicate key {key!r}")
                )
            marks.keys[child] = _position(key_node.start_mark)
            result[key] = _build(loader, value_node, child, marks, problems, file)
        return result
    if isinstance(node, yaml.SequenceNode):
        return [
            _build(loader, item, (*path, index), marks, problems, file)
            for index, item in enumerate(node.value)
        ]
    return loader.construct_object(node, deep=True)


_formats = FormatChecker(formats=())


@_formats.checks("date-time", raises=ValueError)
def _is_time(value: object) -> bool:
    if isinstance(value, str):
        if "T" not in value.upper() and " " not in value:
            raise ValueError("not a date-time: it needs a date and a time, e.g. 2026-03-01T12:00:00Z")
        parse_time(value)
    return True


@cache
def scenario_schema() -> dict[str, Any]:
    """The scenario format's JSON Schema (the one ``mockstore schema`` prints)."""
    text = resources.files("mockstore.scenario").joinpath("scenario.schema.json").read_text()
    return json.loads(text)


@cache
def _validator() -> Draft202012Validator:
    return Draft202012Validator(scenario_schema(), format_checker=_formats)


def schema_problems(data: Any, marks: Marks, file: str) -> list[Problem]:
    """Every way ``data`` breaks the scenario JSON Schema, in file order."""
    problems = []
    for error in _validator().iter_errors(data):
        problems.extend(_explain(error, marks, file))
    return sorted(problems, key=lambda p: (p.line, p.column, p.path, p.message))


def _explain(error: ValidationError, marks: Marks, file: str) -> list[Problem]:
    path: Path = tuple(error.absolute_path)
    custom = error.schema.get("x-error") if isinstance(error.schema, dict) else None
    if isinstance(custom, dict) and error.validator in custom:
        return [_problem(file, marks, path, custom[error.validator])]
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        known = set(error.schema.get("properties", {}))
        out = []
        for extra in sorted(k for k in error.instance if k not in known):
            hint = _closest(extra, known)
            message = f"unknown key {extra!r}" + (f" (did you mean {hint!r}?)" if hint else "")
            if not known:
                message = f"unknown key {extra!r}"
            out.append(_problem(file, marks, (*path, extra), message, key=True))
        if out:
            return out
    if error.validator in ("oneOf", "anyOf") and error.context:
        # Report the branch that came closest rather than "is not valid under any".
        best = max(error.context, key=lambda e: (len(e.absolute_path), -len(e.message)))
        if best.validator != "type":
            return _explain(best, marks, file)
        types = sorted({str(e.validator_value) for e in error.context if e.validator == "type"})
        return [_problem(file, marks, path, f"must be {' or '.join(types)}, got {_kind(error.instance)}")]
    return [_problem(file, marks, path, _message(error))]


def _message(error: ValidationError) -> str:
    if error.validator == "type":
        return f"must be {error.validator_value}, got {_kind(error.instance)}"
    if error.validator == "enum":
        allowed = ", ".join(json.dumps(v) for v in error.validator_value)
        return f"must be one of {allowed}, got {json.dumps(error.instance)}"
    if error.validator == "const":
        return f"must be {json.dumps(error.validator_value)}, got {json.dumps(error.instance)}"
    if error.validator == "required":
        return error.message.replace("is a required property", "is required")
    if error.validator == "format":
        cause = error.cause
        return str(cause) if cause and "needs" in str(cause) else f"not a valid {error.validator_value}: {error.instance!r}"
    if error.validator == "minimum":
        return f"must be at least {error.validator_value}, got {error.instance}"
    if error.validator == "maximum":
        return f"must be at most {error.validator_value}, got {error.instance}"
    return error.message


def _problem(file: str, marks: Marks, path: Path, message: str, key: bool = False) -> Problem:
    line, column = marks.at(path, key=key)
    return Problem(file, line, column, json_path(path), message)


def problem_at(file: str, marks: Marks, path: Path, message: str) -> Problem:
    return _problem(file, marks, path, message)


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return f"string {value!r}"
    if isinstance(value, list):
        return "array"
    return "object"


def _closest(word: str, candidates: set[str]) -> str | None:
    import difflib

    found = difflib.get_close_matches(word, sorted(candidates), n=1, cutoff=0.6)
    return found[0] if found else None
