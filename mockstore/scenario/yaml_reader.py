"""A scenario's YAML document read into plain data, each value's position noted, within bounds.

Imported on the first parse (``loader.parse_yaml``), with PyYAML: a server whose
scenario was read before starts without either (``mockstore.verdicts``).
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from mockstore.scenario.problems import (
    MAX_DEPTH,
    MAX_EXPANDED_BYTES,
    MAX_NODES,
    MAX_VALUES,
    NODE_COST,
    PRICE_EVERY,
    Marks,
    Path,
    Problem,
    ScenarioError,
    build_account,
    json_path,
    problem_order,
)

_YAML = "tag:yaml.org,2002:"
_MAP_TAG = _YAML + "map"
_SEQ_TAG = _YAML + "seq"
# Plain data only: every other tag (python/object, binary, set, custom !tags)
# is refused, whatever node it is on.
_SCALAR_TAGS = frozenset(_YAML + t for t in ("str", "int", "float", "bool", "null"))


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
            account = build_account()
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


def _position(mark: yaml.Mark | None) -> tuple[int, int]:
    return (mark.line + 1, mark.column + 1) if mark else (1, 1)


def read_yaml(text: str, file: str) -> tuple[Any, Marks]:
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
        raise ScenarioError(sorted(builder.problems, key=problem_order))
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
