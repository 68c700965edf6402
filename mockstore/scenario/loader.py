"""Reading scenario files: safe YAML with line marks, checked against the schema.

Every problem is collected before anything is refused, and each is reported
as ``file:line:column: json.path: message`` using the position of the YAML
node it is about, so a user can jump straight to it.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

import yaml

from mockstore.clock import outside_range, parse_time
from mockstore.memory import Account

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError

Path = tuple[str | int, ...]

# A document whose aliases expand past this many values, or past this many
# bytes of keys and values, is refused while it is being read: a "billion
# laughs" file, or a 400-byte one that expands to millions of values, must not
# take the server (or the CI) down. Expanded, a scenario may hold what it could
# hold written out (MAX_NODES values; about as many bytes as the largest file).
MAX_VALUES = 300_000
MAX_EXPANDED_BYTES = 16 * 1024 * 1024
# Nothing in a scenario nests deeper than a dozen levels; a document nested
# deeper is refused as soon as the parser gets there (YAML is composed by
# recursion, and 5,000 levels of brackets cost seconds before failing).
MAX_DEPTH = 64
# Nor does a scenario within its bounds hold more than a few hundred thousand
# values (10,000 listed pets are 90,000; 10,000 keys about as many); more is refused while
# it is being read, instead of after seconds of building what would be refused.
MAX_NODES = 300_000
# What one YAML node costs at the peak of a load (composed, built, checked
# against the schema, made into the model), measured on CPython 3.11 with
# bench/scenario_cost.py: charged to the memory budget while the document is
# read, PRICE_EVERY nodes at a time, so a load the budget cannot hold is
# refused before it is built.
NODE_COST = 1024
PRICE_EVERY = 4096
# The share of the memory budget a load in this thread draws on (None: not
# charged, as ``mockstore validate`` loads). Set with ``priced``.
_BUILD_ACCOUNT: ContextVar[Account | None] = ContextVar("mockstore_build_account", default=None)
# A value quoted in a problem is cut to this many characters: a problem names
# what is wrong, it does not copy the file into the log.
QUOTE_LIMIT = 60

_YAML = "tag:yaml.org,2002:"
_MAP_TAG = _YAML + "map"
_SEQ_TAG = _YAML + "seq"
# Plain data only: every other tag (python/object, binary, set, custom !tags)
# is refused, whatever node it is on.
_SCALAR_TAGS = frozenset(_YAML + t for t in ("str", "int", "float", "bool", "null"))


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
    """``("faults", 0, "match")`` -> ``$.faults[0].match``."""
    text = "$"
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text


@contextmanager
def priced(account: Account) -> Iterator[None]:
    """Loads in this thread (and context) draw on ``account`` while they read a document."""
    token = _BUILD_ACCOUNT.set(account)
    try:
        yield
    finally:
        _BUILD_ACCOUNT.reset(token)


class _TooBig(yaml.MarkedYAMLError):
    """A document nested deeper than MAX_DEPTH, or holding (or expanding to) too much."""


class _Mark:
    """Where a node starts: all a problem needs of PyYAML's marks, in a tenth of the memory.

    PyYAML keeps two full marks per node (six attributes each); a 300,000-value
    document held 130 MB of them.
    """

    __slots__ = ("column", "line")
    name = "<scenario>"

    def __init__(self, mark: yaml.Mark) -> None:
        self.line = mark.line
        self.column = mark.column

    def get_snippet(self) -> None:
        return None

    def __str__(self) -> str:
        return f"line {self.line + 1}, column {self.column + 1}"


class _Loader(yaml.SafeLoader):
    """Safe YAML in which times stay strings (the schema checks their format), within bounds.

    While composing, each node learns how many values and bytes it expands to
    (``_size``: aliases followed), so the whole document's expansion is known
    as it is read, and refused as soon as it passes the bounds.
    """

    _depth = 0
    _nodes = 0
    _aliased_values = 0  # values that aliases add beyond the nodes themselves
    _bytes = 0  # bytes of keys and scalar values, aliases followed
    _priced = 0  # nodes charged to the memory budget so far

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        self._depth += 1
        self._nodes += 1
        try:
            if self._depth > MAX_DEPTH:
                problem = f"nested more than {MAX_DEPTH} levels deep"
            elif self._nodes > MAX_NODES:
                problem = f"more than {MAX_NODES:,} values"
            else:
                alias = self.check_event(yaml.AliasEvent)
                node = super().compose_node(parent, index)
                problem = self._measure(node, alias)
                if problem is None:
                    return node  # type: ignore[no-any-return]
            raise _TooBig(problem=problem, problem_mark=self.peek_event().start_mark)
        finally:
            self._depth -= 1

    def _measure(self, node: yaml.Node, alias: bool) -> str | None:
        """Count what ``node`` expands to; the problem if the document passes a bound."""
        if alias:
            # The anchored node was measured when it was composed (unless it
            # contains this alias: a recursive alias, which building reports).
            values, size = getattr(node, "_size", (1, 0))
            self._aliased_values += values - 1
            self._bytes += size
        else:
            if isinstance(node, yaml.ScalarNode):
                values, size = 1, len(node.value)
                self._bytes += size
            else:
                values, size = 1, 0
                for item in node.value:
                    for part in item if isinstance(item, tuple) else (item,):
                        part_values, part_size = getattr(part, "_size", (1, 0))
                        values += part_values
                        size += part_size
            node._size = (values, size)
            node.start_mark = _Mark(node.start_mark)
            node.end_mark = None
        if self._nodes + self._aliased_values > MAX_VALUES:
            return f"the document expands to more than {MAX_VALUES:,} values (aliases?)"
        if self._bytes > MAX_EXPANDED_BYTES:
            return (
                f"the document expands to more than {MAX_EXPANDED_BYTES // 2**20} MiB "
                "of keys and values (aliases?)"
            )
        if self._nodes - self._priced >= PRICE_EVERY:
            account = _BUILD_ACCOUNT.get()
            if account is not None:
                account.take(PRICE_EVERY * NODE_COST, "reading this scenario")
            self._priced += PRICE_EVERY
        return None


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != _YAML + "timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
# YAML 1.1 reads 1e-05 (how JSON writes 0.00001) as a string; YAML 1.2 and JSON
# read it as a number, and so does a scenario, JSON bodies of PUT /scenario included.
_Loader.add_implicit_resolver(
    _YAML + "float",
    re.compile(r"^[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)[eE][-+]?[0-9]+$"),
    list("-+.0123456789"),
)


class Marks:
    """Where each value (and each mapping key) of a document stands in its file."""

    def __init__(self) -> None:
        self.values: dict[Path, tuple[int, int]] = {}
        self.keys: dict[Path, tuple[int, int]] = {}

    def at(self, path: Path, *, key: bool = False) -> tuple[int, int]:
        """The position of ``path``'s value (or key), else of its nearest ancestor."""
        if key and path in self.keys:
            return self.keys[path]
        while path not in self.values and path:
            path = path[:-1]
        return self.values.get(path, (1, 1))


def _position(mark: yaml.Mark | None) -> tuple[int, int]:
    return (mark.line + 1, mark.column + 1) if mark else (1, 1)


def parse_yaml(text: str, file: str) -> tuple[Any, Marks]:
    """Parse one YAML document into plain data and the marks of its nodes.

    Raises ScenarioError for syntax errors, refused tags, recursive aliases
    and duplicate keys, with every such problem of the document at once.
    """
    try:
        loader = _Loader(text)
    except yaml.reader.ReaderError as exc:
        raise ScenarioError([_reader_problem(exc, text, file)]) from None
    try:
        node = loader.get_single_node()
    except yaml.reader.ReaderError as exc:
        raise ScenarioError([_reader_problem(exc, text, file)]) from None
    except _TooBig as exc:
        line, column = _position(exc.problem_mark)
        message = f"YAML: {exc.problem}; a scenario within its bounds needs far fewer"
        raise ScenarioError([Problem(file, line, column, "$", message)]) from None
    except yaml.MarkedYAMLError as exc:
        raise ScenarioError([_syntax_problem(exc, file)]) from None
    except yaml.YAMLError as exc:
        raise ScenarioError([Problem(file, 1, 1, "$", f"YAML: {exc}")]) from None
    except RecursionError:
        raise ScenarioError([Problem(file, 1, 1, "$", "YAML: nested too deeply")]) from None
    finally:
        loader.dispose()
    if node is None:
        raise ScenarioError(
            [Problem(file, 1, 1, "$", "the file is empty: a scenario needs at least 'version: 1'")]
        )
    builder = _TreeBuilder(loader, file)
    try:
        data = builder.build(node, ())
    except RecursionError:
        raise ScenarioError([Problem(file, 1, 1, "$", "YAML: nested too deeply")]) from None
    if builder.problems:
        raise ScenarioError(sorted(builder.problems, key=_order))
    return data, builder.marks


def _reader_problem(exc: yaml.reader.ReaderError, text: str, file: str) -> Problem:
    """A character YAML does not accept (a control character, say), at its position."""
    before = text[: exc.position]
    line = before.count("\n") + 1
    column = exc.position - (before.rfind("\n") + 1) + 1
    character = exc.character
    shown = f"#x{character:04x}" if isinstance(character, int) else repr(character)
    return Problem(file, line, column, "$", f"YAML: the character {shown} is not allowed")


def _syntax_problem(exc: yaml.MarkedYAMLError, file: str) -> Problem:
    """A YAML syntax error in words a user can act on, at the offending character."""
    line, column = _position(exc.problem_mark or exc.context_mark)
    if exc.context == "expected a single document in the stream":
        return Problem(
            file, line, column, "$", "a scenario file holds one YAML document; a second starts here"
        )
    problem = str(exc.problem or "invalid YAML")
    for said, meant in (
        ("'<stream end>'", "the end of the file"),
        ("unexpected end of stream", "the end of the file"),
        ("<block end>", "the end of the block"),
    ):
        problem = problem.replace(said, meant)
    message = f"YAML syntax error: {problem}"
    if exc.context and exc.context_mark is not None:
        where = _position(exc.context_mark)
        context = exc.context.replace("scalar", "value")
        if context.startswith("while "):
            message += f" ({context} that starts at line {where[0]}, column {where[1]})"
        else:
            message += f" ({context}, line {where[0]})"
    if "'\\t'" in problem:
        message += "; indent with spaces: YAML does not allow tabs"
    elif "mapping values are not allowed here" in problem:
        message += "; check the indentation, or quote a value that holds ': '"
    elif exc.context and "flow" in exc.context and problem.endswith(("'{'", "'['")):
        message += "; inside { } or [ ], quote a value that holds { } [ ] or ,"
    elif "the end of the block" in problem:
        message += "; check the indentation of this line"
    return Problem(file, line, column, "$", message)


class _TreeBuilder:
    """Builds plain data from YAML nodes, noting each node's position.

    Building by hand (rather than ``yaml.safe_load``) is what gives every value
    a mark; it also lets duplicate keys, refused tags and recursive aliases be
    reported with their positions instead of silently resolved.
    """

    def __init__(self, loader: _Loader, file: str) -> None:
        self.loader = loader
        self.file = file
        self.marks = Marks()
        self.problems: list[Problem] = []
        self._active: set[int] = set()
        self._written: dict[int, set[int]] = {}

    def _problem(self, node: yaml.Node, path: Path, message: str) -> None:
        line, column = _position(node.start_mark)
        self.problems.append(Problem(self.file, line, column, json_path(path), message))

    def build(self, node: yaml.Node, path: Path) -> Any:
        self.marks.values[path] = _position(node.start_mark)
        if id(node) in self._active:
            self._problem(node, path, "this alias refers to a node that contains it")
            return None
        if isinstance(node, yaml.MappingNode):
            if node.tag != _MAP_TAG:
                self._refuse_tag(node, path)
                return None
            self._active.add(id(node))
            try:
                return self._mapping(node, path)
            finally:
                self._active.discard(id(node))
        if isinstance(node, yaml.SequenceNode):
            if node.tag != _SEQ_TAG:
                self._refuse_tag(node, path)
                return None
            self._active.add(id(node))
            try:
                return [self.build(item, (*path, i)) for i, item in enumerate(node.value)]
            finally:
                self._active.discard(id(node))
        if node.tag not in _SCALAR_TAGS:
            self._refuse_tag(node, path)
            return None
        try:
            return self.loader.construct_object(node, deep=True)
        except yaml.MarkedYAMLError as exc:
            self._problem(node, path, f"YAML: {exc.problem}")
            return None

    def _refuse_tag(self, node: yaml.Node, path: Path) -> None:
        tag = node.tag.replace(_YAML, "!!", 1) if node.tag.startswith(_YAML) else node.tag
        self._problem(
            node,
            path,
            f"the tag {tag!r} is not allowed: a scenario holds plain YAML data only "
            "(mappings, lists, strings, numbers, booleans, null)",
        )

    def _mapping(self, node: yaml.MappingNode, path: Path) -> dict[str, Any]:
        # Keys written in this mapping (not merged in with <<) may not repeat;
        # a written key may override a merged one, as YAML's merge key intends.
        # Remembered per node: flattening rewrites the node, and an alias
        # builds the same node again.
        written = self._written.get(id(node))
        if written is None:
            written = {id(k) for k, _ in node.value if k.tag != _YAML + "merge"}
            self._written[id(node)] = written
        try:
            self.loader.flatten_mapping(node)
        except yaml.MarkedYAMLError as exc:
            self._problem(node, path, f"YAML: {exc.problem}")
            return {}
        result: dict[str, Any] = {}
        from_merge: set[str] = set()
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag not in _SCALAR_TAGS:
                self._problem(key_node, path, "a mapping key must be a plain string")
                continue
            raw_key = self.loader.construct_object(key_node)
            key = raw_key if isinstance(raw_key, str) else str(key_node.value)
            child = (*path, key)
            is_written = id(key_node) in written
            if key in result and is_written and key not in from_merge:
                first = self.marks.keys[child][0]
                self._problem(
                    key_node, child, f"duplicate key {key!r} (first given on line {first})"
                )
                continue
            if is_written:
                from_merge.discard(key)
                self.marks.keys[child] = _position(key_node.start_mark)
            else:
                from_merge.add(key)
                self.marks.keys.setdefault(child, _position(key_node.start_mark))
            result[key] = self.build(value_node, child)
        return result


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
    return sorted(unique.values(), key=lambda item: _order(item[1]))


def _order(problem: Problem) -> tuple[int, int, str, str]:
    return (problem.line, problem.column, problem.path, problem.message)


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


def quoted(value: object, limit: int = QUOTE_LIMIT) -> str:
    """``repr(value)``, a string cut to ``limit`` characters: a problem quotes, never copies."""
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:limit]!r}... ({len(value):,} characters)"
    return repr(value)


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
