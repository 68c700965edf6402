"""Write the reference tables of the docs from the code they describe: one source of truth.

    python docs/generate.py           # rewrite every generated block in docs/
    python docs/generate.py --check   # exit 1, naming the pages, if one is out of date

A generated block sits in a page between two HTML comments (invisible on the site and
on GitHub), and everything outside them is written by hand::

    <!-- generated: cli (python docs/generate.py) -->
    ...
    <!-- end generated: cli -->

``tests/test_docs.py`` fails when a committed block differs from what this script
writes, so a change to the code that does not regenerate the docs cannot be merged.
The sources, each read through the surface a user or the package itself uses:

- ``error-codes``, ``conditions``: ``mockstore.errors.ERROR_CODES`` and ``CONDITIONS``;
- ``not-expressible``: ``mockstore.fidelity.reasons.NOT_EXPRESSIBLE``, what drift
  reports as not expressible, with the reason;
- ``bundled-scenarios``: the bundled scenario files' ``description``;
- ``scenario-settings``: the scenario JSON Schema (``mockstore schema``);
- ``cli``, ``exit-codes``: the ``mockstore`` command's own argparse parsers, found
  through the console script that ``pyproject.toml`` declares, so this script does
  not depend on how the CLI modules are laid out.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import re
import sys
import textwrap
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
COLUMNS = "88"  # the width argparse wraps usage lines at, whatever the terminal


# --- Markdown helpers ---------------------------------------------------------------


def cell(text: object) -> str:
    """``text`` fit for one table cell: HTML-escaped outside code spans, no pipes or breaks."""
    parts = str(text).replace("\n", " ").split("`")
    out = []
    for i, part in enumerate(parts):
        escaped = part.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        if i % 2 == 0:  # outside code spans
            out.append(escaped.replace("|", "\\|"))
        elif "|" in part:  # no Markdown unescapes a pipe inside a code span alike
            out.append("<code>" + escaped.replace("|", "&#124;") + "</code>")
        else:
            out.append(f"`{part}`")
    return "".join(out)


def code(text: object) -> str:
    return f"`{text}`"


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


# --- error codes ----------------------------------------------------------------------


def error_codes() -> str:
    from mockstore.errors import ERROR_CODES

    rows = [[str(e.status), code(e.code), cell(e.when)] for e in ERROR_CODES.values()]
    return table(["Status", "`code`", "When"], rows)


def conditions() -> str:
    from mockstore.errors import CONDITIONS, ERROR_CODES

    schema = _schema()["properties"]["behaviour"]["properties"]["error_codes"]["properties"]
    rows = []
    for condition in CONDITIONS.values():
        setting = code(f"behaviour.error_codes.{condition.name}")
        default = ERROR_CODES[condition.code]
        meaning = schema[condition.name].get("description", "")
        rows.append([setting, code(default.code), cell(meaning)])
    return table(["Setting", "Default `code`", "The condition"], rows)


def not_expressible() -> str:
    from mockstore.fidelity.reasons import NOT_EXPRESSIBLE

    rows = [[code(reason), cell(why)] for reason, why in NOT_EXPRESSIBLE.items()]
    return table(["Reason", "What the provider does that no scenario setting reproduces"], rows)


# --- bundled scenarios ----------------------------------------------------------------


def bundled_scenarios() -> str:
    from mockstore.scenario import bundled_names, read_scenario_source

    rows = []
    for name in bundled_names():
        text, _ = read_scenario_source(name)
        description = yaml.safe_load(text).get("description", "")
        rows.append([code(name), cell(description)])
    return table(["Name", "What it sets up"], rows)


# --- scenario settings ----------------------------------------------------------------


def _schema() -> dict[str, Any]:
    from mockstore.scenario import scenario_schema

    return scenario_schema()


def _resolve(node: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if not ref:
        return node
    target = schema
    for part in ref.removeprefix("#/").split("/"):
        target = target[part]
    # The referring node's own keywords (default, description) win over the target's.
    return {**target, **{k: v for k, v in node.items() if k != "$ref"}}


def _kind(node: dict[str, Any]) -> str:
    if "const" in node:
        return code(node["const"])
    if "enum" in node:
        return " \\| ".join(code(v) for v in node["enum"])
    if "oneOf" in node:
        return " or ".join(_kind(alternative) for alternative in node["oneOf"])
    kind = node.get("type", "any")
    if isinstance(kind, list):
        return " or ".join(_kind({**node, "type": one}) for one in kind)
    if kind == "null":
        return code("null")
    if kind == "array":
        return "list"
    if kind == "object":
        return "mapping"
    if node.get("format") == "date-time":
        return "RFC 3339 date-time"
    return {"integer": "integer", "number": "number", "string": "string"}.get(kind, kind)


def _count(value: int, noun: str) -> str:
    plural = noun[:-1] + "ies" if noun.endswith("y") else noun + "s"
    return f"{value:,} {noun if value == 1 else plural}"


def _rules(node: dict[str, Any]) -> str:
    rules = []
    # A keyword whose failure has its own message (x-error) is said by that message.
    worded = set(node.get("x-error", {}))
    if node.get("minimum") == -(2**63) and node.get("maximum") == 2**63 - 1:
        worded |= {"minimum", "maximum"}
        rules.append("a signed 64-bit integer")
    for keyword, words in (
        ("minimum", "≥ {:,}"),
        ("exclusiveMinimum", "> {:,}"),
        ("maximum", "≤ {:,}"),
    ):
        if keyword in node and keyword not in worded:
            rules.append(words.format(node[keyword]))
    for low, high, noun in (
        ("minLength", "maxLength", "character"),
        ("minItems", "maxItems", "item"),
        ("minProperties", "maxProperties", "entry"),
    ):
        least, most = node.get(low), node.get(high)
        if low in worded or high in worded:
            continue
        if least is not None and least == most:
            rules.append("exactly " + _count(least, noun))
            continue
        if least == 1 and noun == "character":
            rules.append("not empty")
        elif least is not None and least > 0:
            rules.append("at least " + _count(least, noun))
        if most is not None:
            rules.append("at most " + _count(most, noun))
    items = node.get("items")
    if isinstance(items, dict) and "properties" not in items:
        item_rules = _rules(items)
        if item_rules:
            rules.append(f"each {item_rules}")
    # The messages a broken rule is reported with say the rest (a pattern, "not both", ...).
    for rule in [node, *node.get("allOf", [])]:
        for message in rule.get("x-error", {}).values():
            if message not in rules:
                rules.append(message)
    return cell("; ".join(rules))


def _default(node: dict[str, Any]) -> str:
    if "default" not in node:
        return ""
    value = node["default"]
    if value is None:
        return code("null")
    if isinstance(value, bool):
        return code(str(value).lower())
    if isinstance(value, list | dict):
        return code(json.dumps(value))
    if isinstance(value, int):
        return code(value)
    return code(value)


def _settings(
    node: dict[str, Any], path: str, required: bool, schema: dict[str, Any]
) -> Iterator[list[str]]:
    node = _resolve(node, schema)
    description = node.get("description", "")
    if required:
        description = f"Required. {description}".strip()
    yield [code(path), _kind(node), _default(node), _rules(node), cell(description)]
    for child, inner, child_required in _children(node, path):
        yield from _settings(inner, child, child_required, schema)


def _children(node: dict[str, Any], path: str) -> Iterator[tuple[str, dict[str, Any], bool]]:
    container = node
    if node.get("type") == "array" and isinstance(node.get("items"), dict):
        container, path = node["items"], path + "[]"
    required = set(container.get("required", ()))
    for name, inner in container.get("properties", {}).items():
        yield f"{path}.{name}", inner, name in required
    extra = container.get("additionalProperties")
    if isinstance(extra, dict) and extra.get("properties"):
        yield f"{path}.<name>", extra, False


def scenario_settings() -> str:
    """One table of the top-level scalars, then one section per top-level mapping or list."""
    schema = _schema()
    header = ["Setting", "Type", "Default", "Bounds and rules", "What it does"]
    required = set(schema.get("required", ()))
    scalars: list[list[str]] = []
    sections: list[str] = []
    for name, node in schema["properties"].items():
        rows = list(_settings(node, name, name in required, schema))
        if len(rows) == 1 and _resolve(node, schema).get("type") not in ("object", "array"):
            scalars.extend(rows)
            continue
        sections += ["", f"## `{name}`", "", table(header, rows)]
    for pattern, node in schema.get("patternProperties", {}).items():
        name = pattern.removeprefix("^") + "*"
        scalars.append([code(name), "any", "", "", cell(node.get("description", ""))])
    return "\n".join(["## Top level", "", table(header, scalars), *sections])


# --- the command line -----------------------------------------------------------------


class _Captured(Exception):
    def __init__(self, parser: argparse.ArgumentParser) -> None:
        self.parser = parser


def _entry_point() -> Callable[[list[str]], Any]:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    module, _, function = scripts["project"]["scripts"]["mockstore"].partition(":")
    return getattr(importlib.import_module(module), function)


def cli_parser() -> argparse.ArgumentParser:
    """The ``mockstore`` command's parser, as its entry point builds it for ``--help``.

    The entry point is run with ``--help`` and stopped at its first ``parse_args``, so
    the parser is the one users meet, built with no ``MOCKSTORE_*`` variable set (their
    values would become the documented defaults).
    """
    main = _entry_point()
    original = argparse.ArgumentParser.parse_known_args

    def capture(self: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> Any:
        raise _Captured(self)

    saved = {k: v for k, v in os.environ.items() if k.startswith("MOCKSTORE_")}
    try:
        for name in saved:
            del os.environ[name]
        argparse.ArgumentParser.parse_known_args = capture  # type: ignore[method-assign]
        main(["--help"])
    except _Captured as captured:
        return captured.parser
    finally:
        argparse.ArgumentParser.parse_known_args = original  # type: ignore[method-assign]
        os.environ.update(saved)
    raise RuntimeError("the mockstore entry point never parsed its arguments")


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _exit_statuses(parser: argparse.ArgumentParser) -> list[tuple[str, str]]:
    epilog = parser.epilog or ""
    if "exit status:" not in epilog:
        raise RuntimeError(f"{parser.prog} --help states no exit status")
    section = epilog.split("exit status:", 1)[1]
    statuses = re.findall(r"^\s+(\d+)\s+(.+)$", section, re.MULTILINE)
    if not statuses:
        raise RuntimeError(f"{parser.prog} --help: no 'N  meaning' line under exit status")
    return statuses


def _examples(parser: argparse.ArgumentParser) -> str:
    text = (parser.epilog or "").split("exit status:", 1)[0].strip("\n")
    return textwrap.dedent(text.removeprefix("examples:\n")).strip("\n") if text else ""


def _usage(parser: argparse.ArgumentParser) -> str:
    # A fixed width, and no colour (argparse colours help on a terminal from Python 3.14).
    fixed = {"COLUMNS": COLUMNS, "NO_COLOR": "1"}
    previous = {name: os.environ.get(name) for name in fixed}
    os.environ.update(fixed)
    try:
        return parser.format_usage().strip()
    finally:
        for name, value in previous.items():
            if value is None:
                del os.environ[name]
            else:
                os.environ[name] = value


def _argument(action: argparse.Action) -> str:
    if not action.option_strings:
        return code(action.metavar or action.dest)
    metavar = ""
    if action.nargs != 0:
        choices = "{" + ",".join(map(str, action.choices)) + "}" if action.choices else None
        metavar = action.metavar or choices or action.dest.upper()
    return ", ".join(code(f"{flag} {metavar}".strip()) for flag in action.option_strings)


def _argument_default(action: argparse.Action) -> str:
    if action.required:
        return "required"
    default = action.default
    if default in (None, False, [], argparse.SUPPRESS) or action.nargs == 0:
        return ""
    if isinstance(default, str):  # a default read from the environment is text: "5.0"
        with contextlib.suppress(ValueError):
            default = float(default)
    if isinstance(default, float) and default.is_integer():
        default = int(default)
    return code(default)


def _arguments(parser: argparse.ArgumentParser) -> str:
    rows = []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
            continue
        text = action.help or ""
        if "%(" in text:
            text = text % {**vars(action), "prog": parser.prog}
        rows.append([_argument(action), _argument_default(action), cell(text)])
    return table(["Argument", "Default", "What it does"], rows) if rows else ""


def _statuses_table(parser: argparse.ArgumentParser) -> str:
    rows = [[status, cell(meaning)] for status, meaning in _exit_statuses(parser)]
    return table(["Exit status", "Meaning"], rows)


def cli() -> str:
    top = cli_parser()
    commands = _commands(top)
    summaries = [
        [f"[`{name}`](#{top.prog}-{name})", cell(parser.description or "")]
        for name, parser in commands.items()
    ]
    out = [
        f"`{top.prog}` — {cell(top.description or '')}",
        "",
        table(["Command", "What it does"], summaries),
        "",
        "```text",
        _usage(top),
        "```",
        "",
        _arguments(top),
        "",
        _statuses_table(top),
    ]
    for name, parser in commands.items():
        out += ["", f"## `{top.prog} {name}`", ""]
        out += [cell(parser.description or ""), "", "```text", _usage(parser), "```", ""]
        arguments = _arguments(parser)
        if arguments:
            out += [arguments, ""]
        examples = _examples(parser)
        if examples:
            out += ["Examples:", "", "```sh", examples, "```", ""]
        out += [_statuses_table(parser)]
    return "\n".join(out)


def exit_codes() -> str:
    top = cli_parser()
    rows = []
    for parser in [top, *_commands(top).values()]:
        for i, (status, meaning) in enumerate(_exit_statuses(parser)):
            rows.append([code(parser.prog) if i == 0 else "", status, cell(meaning)])
    return table(["Command", "Exit status", "Meaning"], rows)


# --- the pages --------------------------------------------------------------------------

# Block name -> (the page that holds it, what writes it).
BLOCKS: dict[str, tuple[str, Callable[[], str]]] = {
    "error-codes": ("reference/error-codes.md", error_codes),
    "conditions": ("reference/error-codes.md", conditions),
    "not-expressible": ("fidelity.md", not_expressible),
    "bundled-scenarios": ("scenarios.md", bundled_scenarios),
    "scenario-settings": ("reference/scenario-settings.md", scenario_settings),
    "cli": ("reference/cli.md", cli),
    "exit-codes": ("reference/exit-codes.md", exit_codes),
}


def _block(name: str) -> re.Pattern[str]:
    name = re.escape(name)
    return re.compile(
        rf"(<!-- generated: {name} .*?-->\n)(.*?)(<!-- end generated: {name} -->)", re.DOTALL
    )


def rendered() -> dict[Path, str]:
    """Every page that holds a generated block, as this script would write it."""
    pages: dict[Path, str] = {}
    for name, (page, write) in BLOCKS.items():
        path = DOCS / page
        text = pages.get(path) or path.read_text(encoding="utf-8")
        block = _block(name)
        if not block.search(text):
            raise RuntimeError(f"docs/{page} has no '<!-- generated: {name} ... -->' block")
        body = write().strip("\n") + "\n"
        pages[path] = block.sub(lambda m, body=body: m.group(1) + body + m.group(3), text)
    return pages


def stale() -> list[Path]:
    """The pages whose committed text differs from what the code says."""
    return [p for p, text in rendered().items() if p.read_text(encoding="utf-8") != text]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only say which pages are stale")
    args = parser.parse_args(argv)
    with contextlib.redirect_stdout(sys.stderr):  # an entry point printing help stays quiet
        pages = rendered()
    changed = [p for p, text in pages.items() if p.read_text(encoding="utf-8") != text]
    for path in changed:
        if not args.check:
            path.write_text(pages[path], encoding="utf-8")
        print(f"{'stale' if args.check else 'wrote'}: {path.relative_to(ROOT)}")
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
